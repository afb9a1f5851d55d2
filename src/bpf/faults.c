/* SPDX-License-Identifier: MIT */
/* Sidecar feature: user page faults (kernel side: faults.bpf.c).  The
 * tracepoint attaches with the skeleton; the major/minor counters are
 * software perf events, one per CPU and kind, each running a BPF
 * program.  Without them (no perf events) faults are still reported,
 * only not classified. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "src/bpf/features.h"
#include "bpf/faults.skel.h"

#define MAX_CPUS 1024

struct faults {
	struct ps_faults *sk;
	struct bpf_link **links;
	int *fds;
	size_t n;
};

static void faults_destroy(void *p)
{
	struct faults *f = p;

	for (size_t i = 0; i < f->n; i++) {
		bpf_link__destroy(f->links[i]);
		close(f->fds[i]);
	}
	free(f->links);
	free(f->fds);
	ps_faults__destroy(f->sk);
	free(f);
}

/* A software counter @config on @cpu (all processes) running @prog. */
static void attach_counter(struct faults *f, struct bpf_program *prog,
			   unsigned long long config, int cpu)
{
	struct perf_event_attr a;
	struct bpf_link *l;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_ADDR;
	a.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return;
	l = bpf_program__attach_perf_event(prog, fd);
	if (!l) {
		close(fd);
		return;
	}
	f->links[f->n] = l;
	f->fds[f->n] = fd;
	f->n++;
}

static int faults_start(const struct sdc_maps *m, int emit,
			struct sdc_part *part)
{
	static const char what[] = "the page fault events";
	struct faults *f = calloc(1, sizeof(*f));
	int ncpu = libbpf_num_possible_cpus(), r;

	if (!f)
		return sdc_fail(what, -ENOMEM);
	if (ncpu <= 0 || ncpu > MAX_CPUS)
		ncpu = 1;
	f->links = calloc((size_t)ncpu * 2, sizeof(*f->links));
	f->fds = calloc((size_t)ncpu * 2, sizeof(*f->fds));
	f->sk = ps_faults__open();
	if (!f->links || !f->fds || !f->sk) {
		faults_destroy(f);
		return sdc_fail(what, -ENOMEM);
	}
	r = sdc_share_maps(f->sk->obj, m);
	if (!r && (r = ps_faults__load(f->sk)))
		r = sdc_fail(what, r);
	if (!r) {
		f->sk->links.on_fault =
		    bpf_program__attach(f->sk->progs.on_fault);
		if (!f->sk->links.on_fault)
			r = sdc_fail(what, -errno);
	}
	if (r) {
		faults_destroy(f);
		return r;
	}
	for (int cpu = 0; cpu < ncpu; cpu++) {
		attach_counter(f, f->sk->progs.on_major,
			       PERF_COUNT_SW_PAGE_FAULTS_MAJ, cpu);
		attach_counter(f, f->sk->progs.on_minor,
			       PERF_COUNT_SW_PAGE_FAULTS_MIN, cpu);
	}
	part->skel = f;
	part->destroy = faults_destroy;
	return 0;
}

const struct sdc_feature sdc_faults_feature = {.start = faults_start};

/* SPDX-License-Identifier: MIT */
/* bench_latency: the cost of the eBPF call timer behind latency triggers
 * on free-running backends (src/bpf/latency.bpf.c): run samples/slowcall
 * with N calls of handle() natively, then with the uprobe/uretprobe pair
 * on handle() (a threshold no call reaches, so nothing is reported), and
 * print the extra time per timed call.
 *
 *   bench_latency BUILD_DIR [CALLS]     (root: uprobes) */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/bpf/sidecar.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int func_offset(const char *path, const char *name, uint64_t *off,
		       uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	int fd, found = 0;
	size_t nph;
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) &&
			    !strcmp(elf_strptr(e, sh.sh_link, s.st_name),
				    name)) {
				*vaddr = s.st_value;
				found = 1;
				break;
			}
		}
	}
	if (found && !elf_getphdrnum(e, &nph)) {
		found = 0;
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) &&
			    ph.p_type == PT_LOAD && *vaddr >= ph.p_vaddr &&
			    *vaddr < ph.p_vaddr + ph.p_memsz) {
				*off = *vaddr - ph.p_vaddr + ph.p_offset;
				found = 1;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

/* Run slowcall with @calls calls; with @sc, its pid joins the filter
 * first.  Returns seconds. */
static double run(const char *path, const char *calls, struct sidecar *sc)
{
	int p[2], st;
	double t0;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(2);
		if (!freopen("/dev/null", "w", stdout))
			_exit(3);
		execl(path, path, "1", calls, (char *)NULL);
		_exit(4);
	}
	close(p[0]);
	if (sc)
		sdc_add_pid(sc, pid);
	t0 = now();
	if (write(p[1], "g", 1) != 1)
		return -1;
	close(p[1]);
	waitpid(pid, &st, 0);
	return now() - t0;
}

int main(int argc, char **argv)
{
	const char *calls = argc > 2 ? argv[2] : "1000000";
	struct sdc_config cfg = {0};
	struct sidecar *sc = NULL;
	uint64_t off = 0, vaddr = 0;
	double base, timed;
	char path[4096];
	long n = atol(calls);
	int r;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: bench_latency BUILD_DIR [CALLS]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/samples/slowcall", argv[1]);
	if (func_offset(path, "handle", &off, &vaddr)) {
		fprintf(stderr, "bench_latency: no handle() in %s\n", path);
		return 1;
	}
	/* Native first: a uprobe traps in every process running the file,
	 * target or not. */
	base = run(path, calls, NULL);
	r = sdc_open(&cfg, &sc);
	if (!r)
		r = sdc_time_calls(sc, 0, path, off, vaddr, 1000000000ull);
	if (r) {
		fprintf(stderr, "bench_latency: skipped: %s\n",
			ps_err_message(r));
		sdc_close(sc);
		return 0;
	}
	timed = run(path, calls, sc);
	printf("| %ld calls | %.3f s native | %.3f s timed | %.0f ns per "
	       "timed call |\n",
	       n, base, timed, (timed - base) / (double)n * 1e9);
	sdc_close(sc);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* A test double of the kernel for the intel-pt backend (struct ptk_ops):
 * fake perf events whose rings are plain memory the test fills with
 * scripted AUX bytes, heads and records; a fake sysfs tree with what
 * real Intel machines publish; a log of every call, to check sequences.
 * Header-only (static functions) so each test program takes a copy.
 */
#ifndef PTSCOPE_TESTS_PT_FAKE_H
#define PTSCOPE_TESTS_PT_FAKE_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/record/intel-pt/pt_kernel.h"

#define FK_MAX 64
#define FK_FD0 100

struct fk_event {
	int used, closed;
	struct perf_event_attr attr;
	pid_t pid;
	int cpu, group;
	int enabled;
	char filter[512];
	struct perf_event_mmap_page *meta; /* data ring mapping */
	size_t ring_len;
	uint8_t *aux;
	size_t aux_len;
	int aux_prot;
};

struct fake_kernel {
	struct ptk_ops ops;
	struct fk_event ev[FK_MAX];
	int nev;
	char log[16384];
	size_t loglen;
	int pt_open_err;  /* next intel_pt open fails with -this */
	int bp_open_err;  /* breakpoint opens fail with -this */
	int aux_mmap_err; /* the AUX mmap fails with -this */
	int no_aux_pause; /* refuse aux_action like a kernel < 6.13 */
	int fire_bp;	  /* next poll: a sample on the first breakpoint */
	int poll_calls;
	size_t poll_nfds; /* fds in the last poll */
	uint64_t clock;	  /* ns since the fake boot */
	char root[128];	  /* temp dir holding pmu/ and sys/ */
	char pmu_root[192];
	char sysctl_root[192];
};

static void fk_log(struct fake_kernel *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), unused));
static void fk_log(struct fake_kernel *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->log + f->loglen, sizeof(f->log) - f->loglen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(f->log) - f->loglen - 1) {
		f->loglen += (size_t)n;
		f->log[f->loglen++] = '\n';
		f->log[f->loglen] = 0;
	}
}

static struct fk_event *fk_ev(struct fake_kernel *f, int fd)
{
	int i = fd - FK_FD0;

	return i >= 0 && i < f->nev && f->ev[i].used ? &f->ev[i] : NULL;
}

static int fk_open(void *ctx, struct perf_event_attr *a, pid_t pid, int cpu,
		   int group, unsigned long flags)
{
	struct fake_kernel *f = ctx;
	int is_bp = a->type == PERF_TYPE_BREAKPOINT;
	uint32_t act = ptk_attr_aux_action(a);
	struct fk_event *e;

	(void)flags;
	if (is_bp && f->bp_open_err)
		return -f->bp_open_err;
	if (is_bp && act && f->no_aux_pause) {
		fk_log(f, "open bp %d refused aux_pause", (int)pid);
		return -EINVAL;
	}
	if (!is_bp && f->pt_open_err)
		return -f->pt_open_err;
	if (f->nev == FK_MAX)
		return -EMFILE;
	e = &f->ev[f->nev];
	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->attr = *a;
	e->pid = pid;
	e->cpu = cpu;
	e->group = group;
	e->enabled = !a->disabled;
	if (is_bp)
		fk_log(f, "open bp %d 0x%llx group=%d pause=%u -> %d", (int)pid,
		       (unsigned long long)a->bp_addr, group,
		       (act & PTK_AUX_PAUSE) ? 1 : 0, FK_FD0 + f->nev);
	else
		fk_log(f, "open pt %d config=0x%llx -> %d", (int)pid,
		       (unsigned long long)a->config, FK_FD0 + f->nev);
	return FK_FD0 + f->nev++;
}

static int fk_ioctl(void *ctx, int fd, unsigned long req, unsigned long arg)
{
	struct fake_kernel *f = ctx;
	struct fk_event *e = fk_ev(f, fd);

	if (!e || e->closed)
		return -EBADF;
	if (req == PERF_EVENT_IOC_ENABLE) {
		e->enabled = 1;
		fk_log(f, "enable %d", fd);
	} else if (req == PERF_EVENT_IOC_DISABLE) {
		e->enabled = 0;
		fk_log(f, "disable %d", fd);
	} else if (req == PERF_EVENT_IOC_SET_FILTER) {
		snprintf(e->filter, sizeof(e->filter), "%s", (const char *)arg);
		fk_log(f, "filter %d %s", fd, e->filter);
	} else {
		return -ENOTTY;
	}
	return 0;
}

static void *fk_mmap(void *ctx, int fd, size_t len, int prot, off_t off,
		     int *err)
{
	struct fake_kernel *f = ctx;
	struct fk_event *e = fk_ev(f, fd);
	void *p;

	if (!e) {
		*err = -EBADF;
		return NULL;
	}
	if (off == 0) {
		p = aligned_alloc(4096, len);
		memset(p, 0, len);
		e->meta = p;
		e->ring_len = len;
		e->meta->data_offset = 4096;
		e->meta->data_size = len - 4096;
		/* A 3 GHz TSC: 1/3 ns per tick. */
		e->meta->cap_user_time = 1;
		e->meta->time_mult = 341;
		e->meta->time_shift = 10;
		fk_log(f, "mmap %d data %zu", fd, len);
		return p;
	}
	if (f->aux_mmap_err) {
		*err = -f->aux_mmap_err;
		return NULL;
	}
	if (!e->meta || (uint64_t)off != e->meta->aux_offset ||
	    len != e->meta->aux_size) {
		*err = -EINVAL;
		return NULL;
	}
	e->aux = calloc(1, len);
	e->aux_len = len;
	e->aux_prot = prot;
	fk_log(f, "mmap %d aux %zu %s", fd, len,
	       prot == PROT_READ ? "read-only" : "read-write");
	return e->aux;
}

static void fk_munmap(void *ctx, void *addr, size_t len)
{
	(void)ctx;
	(void)len;
	free(addr);
}

static void fk_close(void *ctx, int fd)
{
	struct fake_kernel *f = ctx;
	struct fk_event *e = fk_ev(f, fd);

	if (e) {
		e->closed = 1;
		e->meta = NULL;
		e->aux = NULL;
	}
	fk_log(f, "close %d", fd);
}

static void fk_fire(struct fake_kernel *f, struct pollfd *fds, size_t n);

/* Fake fds are ready when their ring holds records; real fds (the
 * backend's SIGCHLD pipe) are polled for real, with the timeout, when no
 * fake one is ready. */
static int fk_poll(void *ctx, struct pollfd *fds, size_t n, int timeout_ms)
{
	struct fake_kernel *f = ctx;
	struct pollfd real[8];
	size_t nreal = 0;
	int ready = 0, r;

	f->poll_calls++;
	f->poll_nfds = n;
	if (f->fire_bp)
		fk_fire(f, fds, n);
	for (size_t i = 0; i < n; i++) {
		struct fk_event *e = fk_ev(f, fds[i].fd);

		fds[i].revents = 0;
		if (!e && nreal < 8)
			real[nreal++] = fds[i];
		if (e && e->meta && e->meta->data_head != e->meta->data_tail) {
			fds[i].revents = POLLIN;
			ready++;
		}
	}
	if (ready || !nreal)
		return ready;
	r = poll(real, nreal, timeout_ms);
	return r < 0 ? -errno : r;
}

static ssize_t fk_read_file(void *ctx, const char *path, char *buf, size_t size)
{
	FILE *fp = fopen(path, "re");
	size_t n;

	(void)ctx;
	if (!fp)
		return -ENOENT;
	n = fread(buf, 1, size - 1, fp);
	buf[n] = 0;
	fclose(fp);
	return (ssize_t)n;
}

static uint64_t fk_rdtsc(void *ctx)
{
	struct fake_kernel *f = ctx;

	return 3 * f->clock++ + 7;
}

static uint64_t fk_mono(void *ctx)
{
	struct fake_kernel *f = ctx;

	return 1000000000ull + f->clock++;
}

static void fk_write(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "we");
	if (fp) {
		fputs(text, fp);
		fclose(fp);
	}
}

/* The intel_pt directory of a Skylake client (i7-6700) on Linux 5.x:
 * the format fields the kernel's pt.c publishes and the caps that CPU
 * reports (cpuid leaf 0x14). */
static void fk_sysfs_skylake(const char *pmu_root)
{
	char d[400], f2[420], c[420];
	static const char *const fmt[][2] = {
	    {"pt", "config:0\n"},
	    {"cyc", "config:1\n"},
	    {"pwr_evt", "config:4\n"},
	    {"fup_on_ptw", "config:5\n"},
	    {"mtc", "config:9\n"},
	    {"tsc", "config:10\n"},
	    {"noretcomp", "config:11\n"},
	    {"ptw", "config:12\n"},
	    {"branch", "config:13\n"},
	    {"mtc_period", "config:14-17\n"},
	    {"cyc_thresh", "config:19-22\n"},
	    {"psb_period", "config:24-27\n"},
	};
	static const char *const caps[][2] = {
	    {"cr3_filtering", "1\n"},
	    {"psb_cyc", "1\n"},
	    {"ip_filtering", "1\n"},
	    {"mtc", "1\n"},
	    {"ptwrite", "0\n"},
	    {"power_event_trace", "0\n"},
	    {"topa_output", "1\n"},
	    {"topa_multiple_entries", "1\n"},
	    {"single_range_output", "1\n"},
	    {"output_subsys", "0\n"},
	    {"payloads_lip", "0\n"},
	    {"num_address_ranges", "2\n"},
	    {"mtc_periods", "249\n"},
	    {"cycle_thresholds", "3fff\n"},
	    {"psb_periods", "3f\n"},
	};

	mkdir(pmu_root, 0755);
	snprintf(d, sizeof(d), "%s/intel_pt", pmu_root);
	mkdir(d, 0755);
	snprintf(f2, sizeof(f2), "%s/format", d);
	snprintf(c, sizeof(c), "%s/caps", d);
	mkdir(f2, 0755);
	mkdir(c, 0755);
	fk_write(d, "type", "8\n");
	fk_write(d, "max_nonturbo_ratio", "34\n");
	fk_write(d, "tsc_art_ratio", "2:284\n");
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++)
		fk_write(f2, fmt[i][0], fmt[i][1]);
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		fk_write(c, caps[i][0], caps[i][1]);
}

/* A Broadwell (the first PT CPUs): the same format files (they are the
 * kernel's), but no MTC, no CYC, no IP filtering, one PSB period. */
static void __attribute__((unused)) fk_sysfs_broadwell(const char *pmu_root)
{
	char c[420];

	fk_sysfs_skylake(pmu_root);
	snprintf(c, sizeof(c), "%s/intel_pt/caps", pmu_root);
	fk_write(c, "psb_cyc", "0\n");
	fk_write(c, "ip_filtering", "0\n");
	fk_write(c, "mtc", "0\n");
	fk_write(c, "num_address_ranges", "0\n");
	fk_write(c, "mtc_periods", "0\n");
	fk_write(c, "cycle_thresholds", "0\n");
	fk_write(c, "psb_periods", "0\n");
	fk_write(c, "topa_multiple_entries", "0\n");
	fk_write(c, "cr3_filtering", "0\n");
	snprintf(c, sizeof(c), "%s/intel_pt", pmu_root);
	fk_write(c, "max_nonturbo_ratio", "22\n");
}

/* A fresh double with a Skylake tree and perf_event_paranoid 2,
 * perf_event_mlock_kb 516 (the defaults). */
static void fk_init(struct fake_kernel *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/ptscope-fk-XXXXXX");
	if (!mkdtemp(f->root))
		abort();
	snprintf(f->pmu_root, sizeof(f->pmu_root), "%s/pmu", f->root);
	snprintf(f->sysctl_root, sizeof(f->sysctl_root), "%s/sys", f->root);
	fk_sysfs_skylake(f->pmu_root);
	mkdir(f->sysctl_root, 0755);
	fk_write(f->sysctl_root, "perf_event_paranoid", "2\n");
	fk_write(f->sysctl_root, "perf_event_mlock_kb", "516\n");
	f->ops.open = fk_open;
	f->ops.ioctl = fk_ioctl;
	f->ops.mmap = fk_mmap;
	f->ops.munmap = fk_munmap;
	f->ops.close = fk_close;
	f->ops.poll = fk_poll;
	f->ops.read_file = fk_read_file;
	f->ops.rdtsc = fk_rdtsc;
	f->ops.monotonic_ns = fk_mono;
	f->ops.ctx = f;
	f->ops.pmu_root = f->pmu_root;
	f->ops.sysctl_root = f->sysctl_root;
}

static void fk_fini(struct fake_kernel *f)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (system(cmd))
		(void)0;
}

/* Append record @rec (@len bytes, a multiple of 8) to the data ring of
 * event @fd, as the kernel would. */
static void __attribute__((unused))
fk_push(struct fake_kernel *f, int fd, const void *rec, size_t len)
{
	struct fk_event *e = fk_ev(f, fd);
	uint64_t size = e->meta->data_size, head = e->meta->data_head;
	uint8_t *data = (uint8_t *)e->meta + e->meta->data_offset;

	for (size_t i = 0; i < len; i++)
		data[(head + i) & (size - 1)] = ((const uint8_t *)rec)[i];
	__atomic_store_n(&e->meta->data_head, head + len, __ATOMIC_RELEASE);
}

/* Write @len bytes of trace into the AUX area of @fd as the hardware
 * would, from aux_head on, wrapping; aux_head moves on. */
static void __attribute__((unused))
fk_aux_write(struct fake_kernel *f, int fd, const uint8_t *bytes, size_t len)
{
	struct fk_event *e = fk_ev(f, fd);
	uint64_t head = e->meta->aux_head;

	for (size_t i = 0; i < len; i++)
		e->aux[(head + i) % e->aux_len] = bytes[i];
	e->meta->aux_head = (head + len) % e->aux_len;
}

/* A breakpoint hit as the kernel reports it: a SAMPLE (ip, pid/tid,
 * CLOCK_MONOTONIC time, user regs with rdi 0) in the first armed
 * breakpoint's ring among @fds. */
static void fk_fire(struct fake_kernel *f, struct pollfd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fk_event *e = fk_ev(f, fds[i].fd);
		struct perf_event_header h = {PERF_RECORD_SAMPLE,
					      PERF_RECORD_MISC_USER, 48};
		struct timespec ts;
		uint64_t rec[6];

		if (!e || e->closed || e->attr.type != PERF_TYPE_BREAKPOINT ||
		    !e->meta)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		memcpy(&rec[0], &h, 8);
		rec[1] = e->attr.bp_addr;
		rec[2] = (uint64_t)e->pid << 32 | (uint32_t)e->pid;
		rec[3] =
		    (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		rec[4] = 2; /* PERF_SAMPLE_REGS_ABI_64 */
		rec[5] = 0;
		fk_push(f, fds[i].fd, rec, sizeof(rec));
		f->fire_bp = 0;
		fk_log(f, "hit %d", fds[i].fd);
		return;
	}
}

#endif

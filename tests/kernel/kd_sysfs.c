/* SPDX-License-Identifier: MIT */
/* The kernel double's machine (kdouble.h): the files the kernel publishes
 * about the intel_pt PMU and perf's sysctls, in a temporary tree read
 * through ptk_ops.read_file; the clocks; the call log.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/kernel/kdouble.h"

#define TIME_SHIFT 24

void kd_log(struct kd *k, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(k->log + k->loglen, sizeof(k->log) - k->loglen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(k->log) - k->loglen - 1) {
		k->loglen += (size_t)n;
		k->log[k->loglen++] = '\n';
		k->log[k->loglen] = 0;
	}
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "we");
	if (!fp)
		abort();
	fputs(text, fp);
	fclose(fp);
}

/* The format attributes are the kernel's own (PMU_FORMAT_ATTR in
 * arch/x86/events/intel/pt.c), the same on every CPU; the caps are what
 * pt_pmu_hw_init read from CPUID leaf 0x14 and pt_cap_show prints ("%x"). */
static const char *const formats[][2] = {
    {"pt", "config:0\n"},
    {"cyc", "config:1\n"},
    {"pwr_evt", "config:4\n"},
    {"fup_on_ptw", "config:5\n"},
    {"mtc", "config:9\n"},
    {"tsc", "config:10\n"},
    {"noretcomp", "config:11\n"},
    {"ptw", "config:12\n"},
    {"branch", "config:13\n"},
    {"event", "config:31\n"},
    {"notnt", "config:55\n"},
    {"mtc_period", "config:14-17\n"},
    {"cyc_thresh", "config:19-22\n"},
    {"psb_period", "config:24-27\n"},
};

/* An i7-6700 (Skylake client). */
static const char *const skylake_caps[][2] = {
    {"max_subleaf", "1\n"},
    {"cr3_filtering", "1\n"},
    {"psb_cyc", "1\n"},
    {"ip_filtering", "1\n"},
    {"mtc", "1\n"},
    {"ptwrite", "0\n"},
    {"power_event_trace", "0\n"},
    {"event_trace", "0\n"},
    {"tnt_disable", "0\n"},
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

void kd_sysfs_skylake(struct kd *k)
{
	char d[300], sub[320];

	mkdir(k->pmu_root, 0755);
	snprintf(d, sizeof(d), "%s/intel_pt", k->pmu_root);
	mkdir(d, 0755);
	snprintf(sub, sizeof(sub), "%s/format", d);
	mkdir(sub, 0755);
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		put(sub, formats[i][0], formats[i][1]);
	snprintf(sub, sizeof(sub), "%s/caps", d);
	mkdir(sub, 0755);
	for (size_t i = 0; i < sizeof(skylake_caps) / sizeof(skylake_caps[0]);
	     i++)
		put(sub, skylake_caps[i][0], skylake_caps[i][1]);
	/* perf_pmu_register gives dynamic PMUs a type after the fixed
	 * ones; 8 is what these machines show. */
	put(d, "type", "8\n");
	put(d, "max_nonturbo_ratio", "34\n");
	put(d, "tsc_art_ratio", "2:284\n");
}

/* A Broadwell: the first PT CPUs, without MTC, CYC, IP filtering or
 * multiple ToPA entries. */
void kd_sysfs_broadwell(struct kd *k)
{
	static const char *const caps[][2] = {
	    {"psb_cyc", "0\n"},	      {"ip_filtering", "0\n"},
	    {"mtc", "0\n"},	      {"num_address_ranges", "0\n"},
	    {"mtc_periods", "0\n"},   {"cycle_thresholds", "0\n"},
	    {"psb_periods", "0\n"},   {"topa_multiple_entries", "0\n"},
	    {"cr3_filtering", "0\n"},
	};

	kd_sysfs_skylake(k);
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "caps/%s", caps[i][0]);
		kd_sysfs_set(k, rel, caps[i][1]);
	}
	kd_sysfs_set(k, "max_nonturbo_ratio", "22\n");
}

void kd_sysfs_set(struct kd *k, const char *rel, const char *text)
{
	char dir[400];

	if (!strncmp(rel, "sys/", 4)) {
		put(k->sysctl_root, rel + 4, text);
		return;
	}
	snprintf(dir, sizeof(dir), "%s/intel_pt", k->pmu_root);
	put(dir, rel, text);
}

static long long read_num(const char *path, int base)
{
	char buf[64], *end;
	FILE *fp = fopen(path, "re");
	size_t n;
	long long v;

	if (!fp)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	v = strtoll(buf, &end, base);
	return end == buf ? -1 : v;
}

long long kd_pmu_type(struct kd *k)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/intel_pt/type", k->pmu_root);
	return read_num(path, 10);
}

long long kd_cap(struct kd *k, const char *name)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/intel_pt/caps/%s", k->pmu_root, name);
	return read_num(path, 16);
}

long long kd_sysctl(struct kd *k, const char *name)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/%s", k->sysctl_root, name);
	return read_num(path, 10);
}

static ssize_t op_read_file(void *ctx, const char *path, char *buf, size_t size)
{
	FILE *fp = fopen(path, "re");
	size_t n;

	(void)ctx;
	if (!fp)
		return -errno;
	n = fread(buf, 1, size - 1, fp);
	buf[n] = 0;
	fclose(fp);
	return (ssize_t)n;
}

/* ---- clocks ---- */

static uint64_t real_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* True time: the machine's CLOCK_MONOTONIC plus what a test made pass
 * (kd_clock_advance), so that records the double stamps agree with the
 * recorder's own clock unless a test asks otherwise. */
static uint64_t true_now(const struct kd *k)
{
	return real_mono() + k->advanced;
}

/* The perf mmap page's conversion (time_mult, time_shift: the TSC's
 * cyc2ns, which NTP does not adjust) as arch_perf_update_userpage
 * publishes it. */
void kd_time_conv(const struct kd *k, uint32_t *mult, uint16_t *shift)
{
	*shift = TIME_SHIFT;
	*mult = (uint32_t)(((1000000ull << TIME_SHIFT) + k->tsc_khz / 2) /
			   k->tsc_khz);
}

/* The TSC is defined so that the page's conversion of it is exactly the
 * true time: only CLOCK_MONOTONIC's slew separates the two. */
uint64_t kd_tsc(const struct kd *k)
{
	uint32_t mult;
	uint16_t shift;

	kd_time_conv(k, &mult, &shift);
	return (uint64_t)(((unsigned __int128)true_now(k) << shift) / mult);
}

/* CLOCK_MONOTONIC, slewed by NTP at mono_ppm since the double started. */
uint64_t kd_mono(const struct kd *k)
{
	uint64_t t = true_now(k);

	return t + (uint64_t)((double)(t - k->t0) * k->mono_ppm / 1e6);
}

void kd_clock_advance(struct kd *k, uint64_t ns)
{
	k->advanced += ns;
}

static uint64_t op_rdtsc(void *ctx)
{
	return kd_tsc(ctx);
}

static uint64_t op_mono(void *ctx)
{
	return kd_mono(ctx);
}

/* kd_open.c */
int kd_open_op(void *ctx, struct perf_event_attr *a, pid_t pid, int cpu,
	       int group, unsigned long flags);
int kd_ioctl_op(void *ctx, int fd, unsigned long req, unsigned long arg);
void kd_close_op(void *ctx, int fd);

void kd_init(struct kd *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->root, sizeof(k->root), "/tmp/ptscope-kd-XXXXXX");
	if (!mkdtemp(k->root))
		abort();
	snprintf(k->pmu_root, sizeof(k->pmu_root), "%s/pmu", k->root);
	snprintf(k->sysctl_root, sizeof(k->sysctl_root), "%s/sys", k->root);
	kd_sysfs_skylake(k);
	mkdir(k->sysctl_root, 0755);
	put(k->sysctl_root, "perf_event_paranoid", "2\n");
	put(k->sysctl_root, "perf_event_mlock_kb", "516\n");
	k->kernel_minor = 12;
	k->ncpus = 4;
	k->memlock = 8ull << 20;
	k->tsc_khz = 3000000;
	k->t0 = real_mono();
	for (int i = 0; i < KD_MAX_TASKS; i++)
		k->task[i].shadow_fd = -1;
	k->ops.open = kd_open_op;
	k->ops.ioctl = kd_ioctl_op;
	k->ops.mmap = kd_mmap_op;
	k->ops.munmap = kd_munmap_op;
	k->ops.close = kd_close_op;
	k->ops.poll = kd_poll_op;
	k->ops.read_file = op_read_file;
	k->ops.rdtsc = op_rdtsc;
	k->ops.monotonic_ns = op_mono;
	k->ops.ctx = k;
	k->ops.pmu_root = k->pmu_root;
	k->ops.sysctl_root = k->sysctl_root;
}

void kd_fini(struct kd *k)
{
	char cmd[300];

	for (int i = 0; i < k->nev; i++) {
		if (!k->ev[i].closed)
			kd_close_op(k, k->ev[i].fd);
		kd_ring_release(k, &k->ev[i]);
	}
	kd_sync(k); /* closes the real breakpoints behind closed ones */
	for (int i = 0; i < KD_MAX_TASKS; i++)
		if (k->task[i].used)
			kd_task_unwatch(k, &k->task[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", k->root);
	if (system(cmd))
		(void)0;
}

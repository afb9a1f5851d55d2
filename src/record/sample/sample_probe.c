/* SPDX-License-Identifier: MIT */
/* Probing the sampling events this machine offers (sample_probe.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "src/record/sample/sample_probe.h"

static int perf_open(struct perf_event_attr *a)
{
	int fd = (int)syscall(SYS_perf_event_open, a, 0, -1, -1,
			      PERF_FLAG_FD_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : -errno;
}

void sprobe_attr(struct perf_event_attr *a, int cycles, unsigned hz)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	if (cycles) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
		a->freq = 1; /* the kernel adjusts the period to @hz */
		a->sample_freq = hz;
	} else {
		/* cpu-clock counts nanoseconds of CPU time: a fixed period
		 * is the rate exactly, without the kernel's adjusting. */
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CPU_CLOCK;
		a->sample_period = hz ? 1000000000ull / hz : 1000000;
	}
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CALLCHAIN;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->disabled = 1;
}

static int read_int(const char *path, int dflt)
{
	FILE *f = fopen(path, "r");
	int v = dflt;

	if (!f)
		return dflt;
	if (fscanf(f, "%d", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

void sprobe_run(struct sprobe *p)
{
	struct perf_event_attr a;
	int r;

	memset(p, 0, sizeof(*p));
	p->paranoid = read_int("/proc/sys/kernel/perf_event_paranoid", -1000);
	sprobe_attr(&a, 1, 1000);
	p->cycles = perf_open(&a) == 0;
	if (p->cycles) {
		a.sample_type |= PERF_SAMPLE_BRANCH_STACK;
		a.branch_sample_type =
		    PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK;
		p->lbr = perf_open(&a) == 0;
	}
	sprobe_attr(&a, 0, 1000);
	r = perf_open(&a);
	p->cpu_clock = r == 0;
	p->open_errno = r ? -r : 0;
	sprobe_attr(&a, p->cycles, 1000);
	a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = SPROBE_REGS_MASK;
	a.sample_stack_user = 4096;
	p->stack_user = perf_open(&a) == 0;
}

const char *sprobe_event_name(const struct sprobe *p)
{
	if (p->cycles)
		return "cycles";
	return p->cpu_clock ? "cpu-clock" : NULL;
}

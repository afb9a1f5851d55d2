/* SPDX-License-Identifier: MIT */
/* What this machine offers the sample backend (prefix sprobe_), found by
 * opening (and closing at once) events on ptscope itself, never assumed:
 *  - hardware cycles (a PMU: bare metal, or a VM that passes it through),
 *    else the software CPU clock (an hrtimer: works everywhere);
 *  - LBR call stacks (Intel Haswell and later, with a PMU);
 *  - user registers and stack copies (PERF_SAMPLE_REGS_USER and
 *    PERF_SAMPLE_STACK_USER), which DWARF unwinding needs.
 * Frame-pointer call chains (PERF_SAMPLE_CALLCHAIN) come with every
 * event.
 */
#ifndef PTSCOPE_RECORD_SAMPLE_PROBE_H
#define PTSCOPE_RECORD_SAMPLE_PROBE_H

#include <linux/perf_event.h>
#include <stdint.h>

/* The user registers the DWARF unwinder needs: ax, bx, cx, dx, si, di,
 * bp, sp, ip and r8-r15 (PERF_REG_X86_* bits). */
#define SPROBE_REGS_MASK 0xff01ffull
#define SPROBE_NREGS 17

struct sprobe {
	int cycles;	/* 1: PERF_COUNT_HW_CPU_CYCLES can sample */
	int cpu_clock;	/* 1: PERF_COUNT_SW_CPU_CLOCK can sample */
	int lbr;	/* 1: LBR call stacks (branch stack, CALL_STACK) */
	int stack_user; /* 1: user regs + stack copies (DWARF unwinding) */
	int paranoid;	/* /proc/sys/kernel/perf_event_paranoid */
	int open_errno; /* why cpu-clock failed (0: it did not) */
};

/* Try each event on this process.  Never fails: what did not open is 0. */
void sprobe_run(struct sprobe *p);

/* The event the backend samples with: "cycles" or "cpu-clock" (NULL:
 * neither opens). */
const char *sprobe_event_name(const struct sprobe *p);

/* Fill @a for sampling event @cycles (1) or cpu-clock (0) at @hz. */
void sprobe_attr(struct perf_event_attr *a, int cycles, unsigned hz);

#endif /* PTSCOPE_RECORD_SAMPLE_PROBE_H */

/* SPDX-License-Identifier: MIT */
/* The virtual clock of one emulated thread (prefix emu_clock_).
 *
 *   now = base_ns + kernel_ns + steps * EMU_PS_PER_INSN / 1000
 *
 * computed from the running totals rather than accumulated per step, so
 * the half-nanosecond instructions never drift by rounding, and it is
 * monotone: every term only grows. */
#ifndef PTSCOPE_RECORD_EMULATE_CLOCK_H
#define PTSCOPE_RECORD_EMULATE_CLOCK_H

#include <stdint.h>

#include "src/record/emulate/emulate.h"

struct emu_clock {
	uint64_t base_ns;   /* virtual time when tracing began */
	uint64_t steps;	    /* single-steps taken (rep iterations count) */
	uint64_t kernel_ns; /* real time the recorder measured in syscalls */
};

void emu_clock_init(struct emu_clock *c, uint64_t base_ns);

/* One single-step that spent @kernel_ns in the kernel. */
static inline void emu_clock_step(struct emu_clock *c, uint64_t kernel_ns)
{
	c->steps++;
	c->kernel_ns += kernel_ns;
}

/* @n straight-line instructions, no time in the kernel. */
static inline void emu_clock_steps(struct emu_clock *c, uint64_t n)
{
	c->steps += n;
}

static inline uint64_t emu_clock_now(const struct emu_clock *c)
{
	return c->base_ns + c->kernel_ns + c->steps * EMU_PS_PER_INSN / 1000;
}

#endif /* PTSCOPE_RECORD_EMULATE_CLOCK_H */

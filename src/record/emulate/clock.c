/* SPDX-License-Identifier: MIT */
/* The virtual clock (see clock.h). */
#include "src/record/emulate/clock.h"

void emu_clock_init(struct emu_clock *c, uint64_t base_ns)
{
	c->base_ns = base_ns;
	c->steps = 0;
	c->kernel_ns = 0;
}

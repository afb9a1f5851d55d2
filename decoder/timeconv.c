/* SPDX-License-Identifier: MIT */
/* TSC → trace-clock nanoseconds (see timeconv.h). */
#include "decoder/timeconv.h"

uint64_t tc_to_ns(const struct dec_timeconv *tc, uint64_t tsc)
{
	uint64_t t;

	if (tc->has_conv) {
		uint16_t shift = tc->shift < 64 ? tc->shift : 63;
		uint64_t quot = tsc >> shift;
		uint64_t rem = tsc & ((UINT64_C(1) << shift) - 1);

		/* Wrapping arithmetic on purpose: perf's time_zero is
		 * chosen so that the sum wraps to the perf clock. */
		t = tc->zero + quot * tc->mult + ((rem * tc->mult) >> shift);
	} else {
		t = tsc;
	}
	return t + (uint64_t)tc->offset_ns;
}

void tc_from_perf(struct dec_timeconv *tc, uint32_t time_mult,
		  uint16_t time_shift, uint64_t time_zero)
{
	tc->has_conv = 1;
	tc->mult = time_mult;
	tc->shift = time_shift;
	tc->zero = time_zero;
	tc->offset_ns = 0;
}

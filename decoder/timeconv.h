/* SPDX-License-Identifier: MIT */
/* TSC → trace-clock nanoseconds (prefix tc_), per struct dec_timeconv in
 * decoder.h.  Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_TIMECONV_H
#define PTSCOPE_DECODER_TIMECONV_H

#include <stdint.h>

#include "decoder/decoder.h"

/* perf's formula (tools/perf/util/tsc.c, tsc_to_perf_time):
 *   quot = tsc >> shift; rem = tsc & ((1 << shift) - 1);
 *   t = zero + quot * mult + ((rem * mult) >> shift)
 * in wrapping 64-bit arithmetic (zero is often "negative"), then
 * + offset_ns.  With has_conv == 0, t = tsc.  @tc may not be NULL. */
uint64_t tc_to_ns(const struct dec_timeconv *tc, uint64_t tsc);

/* Fill @tc from the values of a perf mmap page; offset_ns = 0. */
void tc_from_perf(struct dec_timeconv *tc, uint32_t time_mult,
		  uint16_t time_shift, uint64_t time_zero);

#endif /* PTSCOPE_DECODER_TIMECONV_H */

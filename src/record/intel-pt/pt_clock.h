/* SPDX-License-Identifier: MIT */
/* TSC → CLOCK_MONOTONIC for the intel-pt backend (prefix ptclk_).
 *
 * PT packets carry the TSC; everything else in a recording (marks,
 * sideband times: the events use use_clockid = CLOCK_MONOTONIC) is on
 * CLOCK_MONOTONIC.  The kernel publishes the TSC scale in each event's
 * mmap page (time_mult, time_shift, with cap_user_time); with
 * use_clockid it leaves time_zero out (it belongs to perf's own clock),
 * so the zero point is measured here: rdtsc between two CLOCK_MONOTONIC
 * reads, the tightest of several pairs.  The result is perf's formula
 * (decoder/timeconv.h) with time_zero chosen so that it yields
 * CLOCK_MONOTONIC nanoseconds.
 */
#ifndef PTSCOPE_RECORD_PT_CLOCK_H
#define PTSCOPE_RECORD_PT_CLOCK_H

#include <linux/perf_event.h>
#include <stdint.h>

#include "src/record/intel-pt/pt_kernel.h"

struct ptclk {
	uint32_t mult;
	uint16_t shift;
	uint64_t zero;
	int measured_scale; /* 1: mult/shift measured (no cap_user_time) */
};

/* Calibrate from @pg (may be NULL: scale measured too).  Returns 0 or
 * PS_ERR_NO_HW (the TSC does not advance: no usable conversion). */
int ptclk_calibrate(const struct ptk_ops *k,
		    const struct perf_event_mmap_page *pg, struct ptclk *c);

/* Pair the clocks again (the scale from @pg when it publishes one):
 * CLOCK_MONOTONIC is slewed by NTP and the page's scale is not, so a zero
 * point drifts (20 ppm: 12 ms in ten minutes); a snapshot's PT is its
 * last moments, so the pairing at the snapshot is the one that fits it. */
void ptclk_repair(const struct ptk_ops *k,
		  const struct perf_event_mmap_page *pg, struct ptclk *c);

/* @tsc in CLOCK_MONOTONIC ns. */
uint64_t ptclk_ns(const struct ptclk *c, uint64_t tsc);

#endif /* PTSCOPE_RECORD_PT_CLOCK_H */

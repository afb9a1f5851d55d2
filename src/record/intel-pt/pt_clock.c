/* SPDX-License-Identifier: MIT */
/* TSC → CLOCK_MONOTONIC calibration (pt_clock.h). */
#include <string.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/pt_clock.h"

#define PAIRS 16

/* perf's tsc_to_perf_time without the zero term. */
static uint64_t scaled(uint32_t mult, uint16_t shift, uint64_t tsc)
{
	uint64_t quot = tsc >> shift;
	uint64_t rem = tsc & ((1ull << shift) - 1);

	return quot * mult + ((rem * mult) >> shift);
}

uint64_t ptclk_ns(const struct ptclk *c, uint64_t tsc)
{
	return c->zero + scaled(c->mult, c->shift, tsc);
}

/* The tightest (rdtsc, CLOCK_MONOTONIC) pair of PAIRS. */
static void pair(const struct ptk_ops *k, uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < PAIRS; i++) {
		uint64_t t0 = k->monotonic_ns(k->ctx);
		uint64_t x = k->rdtsc(k->ctx);
		uint64_t t1 = k->monotonic_ns(k->ctx);

		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = x;
			*ns = t0 + (t1 - t0) / 2;
		}
	}
}

static int read_scale(const struct perf_event_mmap_page *pg, uint32_t *mult,
		      uint16_t *shift)
{
	uint32_t seq;
	int ok;

	do {
		seq = __atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE);
		ok = pg->cap_user_time;
		*mult = pg->time_mult;
		*shift = pg->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (__atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE) != seq ||
		 (seq & 1));
	return ok && *mult && *shift < 64;
}

int ptclk_calibrate(const struct ptk_ops *k,
		    const struct perf_event_mmap_page *pg, struct ptclk *c)
{
	uint64_t tsc0, ns0;

	memset(c, 0, sizeof(*c));
	if (!pg || !read_scale(pg, &c->mult, &c->shift)) {
		/* Measure the scale over at least 2 ms. */
		uint64_t tsc1, ns1, dt, dn;

		pair(k, &tsc0, &ns0);
		do
			pair(k, &tsc1, &ns1);
		while (ns1 - ns0 < 2000000 && ns1 >= ns0);
		dt = tsc1 - tsc0;
		dn = ns1 - ns0;
		if (!dt || tsc1 < tsc0)
			return ps_err_detail(PS_ERR_NO_HW,
					     "the TSC does not advance, so PT "
					     "times cannot be converted");
		c->shift = 22;
		/* ns per tick × 2^22, kept within 32 bits. */
		while (c->shift &&
		       (((unsigned __int128)dn << c->shift) / dt) > UINT32_MAX)
			c->shift--;
		c->mult = (uint32_t)(((unsigned __int128)dn << c->shift) / dt);
		c->measured_scale = 1;
	}
	pair(k, &tsc0, &ns0);
	c->zero = ns0 - scaled(c->mult, c->shift, tsc0);
	return 0;
}

void ptclk_repair(const struct ptk_ops *k,
		  const struct perf_event_mmap_page *pg, struct ptclk *c)
{
	uint64_t tsc, ns;
	uint32_t mult;
	uint16_t shift;

	if (!c->measured_scale && pg && read_scale(pg, &mult, &shift)) {
		c->mult = mult;
		c->shift = shift;
	}
	pair(k, &tsc, &ns);
	c->zero = ns - scaled(c->mult, c->shift, tsc);
}

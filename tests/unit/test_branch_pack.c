/* SPDX-License-Identifier: MIT */
/* Packed branch events (decoder/branch_pack.h): every event comes back
 * exactly as it went in, whether its differences fit the 16-byte form or
 * not, and the usual events of a call-heavy stream take 16 bytes each. */
#include <stdlib.h>
#include <string.h>

#include "decoder/branch_pack.h"
#include "tests/harness.h"

static int same_event(const struct br_event *x, const struct br_event *y)
{
	return x->kind == y->kind && x->from == y->from && x->to == y->to &&
	       x->ret == y->ret && x->ts == y->ts && x->icount == y->icount &&
	       x->err == y->err;
}

/* Pack @n events (by br_pack_add, or by br_pack_put's fields when @put),
 * unpack them with @base added to their counts, compare; the number that
 * differ (or are missing or extra). */
static size_t round_trip_with(struct br_pack *p, const struct br_event *ev,
			      size_t n, int put, uint64_t base)
{
	struct br_unpack u;
	struct br_event got;
	size_t bad = 0, i = 0;

	br_pack_clear(p);
	for (size_t k = 0; k < n; k++)
		if (put ? br_pack_put(p, ev[k].kind, ev[k].from, ev[k].to,
				      ev[k].ret, ev[k].ts, ev[k].icount,
				      ev[k].err)
			: br_pack_add(p, &ev[k]))
			return n;
	br_unpack_init(&u, p, base);
	while (br_unpack_next(&u, &got)) {
		got.icount -= base;
		if (i >= n || !same_event(&got, &ev[i]))
			bad++;
		i++;
	}
	return bad + (i < n ? n - i : 0);
}

/* Both ways of packing, read from 0 and from a base whose additions
 * carry past 16 and 32 bits. */
static size_t round_trip(struct br_pack *p, const struct br_event *ev, size_t n)
{
	return round_trip_with(p, ev, n, 0, 0) +
	       round_trip_with(p, ev, n, 1, 0) +
	       round_trip_with(p, ev, n, 0, 0x1ffffffffull) +
	       round_trip_with(p, ev, n, 1, 0xfffffull);
}

static struct br_event ev(enum br_kind kind, uint64_t from, uint64_t to,
			  uint64_t ret, uint64_t ts, uint64_t icount, int err)
{
	struct br_event e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.from = from;
	e.to = to;
	e.ret = ret;
	e.ts = ts;
	e.icount = icount;
	e.err = err;
	return e;
}

TEST(events_that_do_not_fit_come_back_whole)
{
	const uint64_t kern = 0xffffffff81000000ull;
	struct br_event e[] = {
	    ev(BR_ENABLE, 0, 0x401000, 0, 100, 0, 0),
	    ev(BR_CALL, 0x401005, 0x401100, 0x40100a, 101, 3, 0),
	    /* from behind the last target, far target, kernel address */
	    ev(BR_CALL, 0x400000, kern, 0x400005, 102, 4, 0),
	    ev(BR_RETURN, kern + 7, 0x400005, 0, 103, 9, 0),
	    /* return address far from the call */
	    ev(BR_CALL, 0x400010, 0x400020, 0x400010 + 300, 104, 10, 0),
	    /* time jumps by more than 32 bits, then goes back */
	    ev(BR_RETURN, 0x400030, 0x400040, 0, 105 + (1ull << 40), 11, 0),
	    ev(BR_RETURN, 0x400050, 0x400060, 0, 50, 12, 0),
	    /* a block of more than 65,535 instructions */
	    ev(BR_JUMP, 0x400070, 0x400080, 0, 60, 12 + 70000, 0),
	    ev(BR_ERROR, 0x400090, 0, 0, 61, 70013, -7),
	    ev(BR_PTWRITE, 0x4000a0, UINT64_MAX, 1, 62, 70014, 0),
	    ev(BR_OVERFLOW, 0, 0, 0, UINT64_MAX, UINT64_MAX, 0),
	    ev(BR_END, 0, 0, 0, 0, 0, 0),
	};
	size_t n = sizeof(e) / sizeof(e[0]);
	struct br_pack p = {0};

	CHECK_EQ(round_trip(&p, e, n), 0);
	/* cleared and used again, the same */
	CHECK_EQ(round_trip(&p, e, n), 0);
	free(p.buf);
}

TEST(random_events_round_trip)
{
	enum { N = 200000 };
	struct br_event *e = calloc(N, sizeof(*e));
	struct br_pack p = {0};
	uint64_t x = 0x9e3779b97f4a7c15ull, ts = 1000, ic = 0, ip = 0x401000;

	CHECK(e != NULL);
	for (size_t i = 0; i < N; i++) {
		uint64_t r;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = x;
		/* mostly near steps, now and then anything at all */
		ts += (r & 7) == 0 ? r >> 3 : (r >> 8) & 0xff;
		ic += (r & 15) == 1 ? r >> 20 : (r >> 16) & 0x3f;
		ip = (r & 31) == 2 ? r : ip + ((r >> 24) & 0xfff) - 0x800;
		e[i] = ev((enum br_kind)((r >> 40) % (BR_PTWRITE + 1)), ip,
			  (r & 63) == 3 ? ~r : ip + ((r >> 30) & 0xffff),
			  (r >> 50) & 1 ? ip + ((r >> 51) & 15) : 0, ts, ic,
			  (r & 255) == 4 ? -(int)((r >> 9) & 0x7fff) : 0);
	}
	CHECK_EQ(round_trip(&p, e, N), 0);
	free(p.buf);
	free(e);
}

TEST(usual_events_take_sixteen_bytes)
{
	enum { N = 1000 };
	struct br_event e[N];
	struct br_pack p = {0};
	uint64_t ts = 1ull << 40, ic = 1ull << 33;

	/* call-heavy code: call, call, return, return, ... */
	for (size_t i = 0; i < N; i++) {
		ts += 3;
		ic += 4;
		e[i] = i & 1 ? ev(BR_RETURN, 0x401015, 0x40102a, 0, ts, ic, 0)
			     : ev(BR_CALL, 0x401025, 0x401010, 0x40102a, ts, ic,
				  0);
	}
	CHECK_EQ(round_trip(&p, e, N), 0);
	/* the first event differs from zero by more than fits */
	CHECK(p.at - p.buf <= (N + 4) * 16);
	free(p.buf);
}

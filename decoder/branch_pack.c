/* SPDX-License-Identifier: MIT */
/* Packed branch events (see branch_pack.h).
 *
 * An event is one 16-byte record of differences from the event before
 * (struct br_packed), or, when one of them does not fit, a record of kind
 * BR_PACK_WHOLE followed by the struct br_event as it is.
 */
#include <stdlib.h>
#include <string.h>

#include "decoder/branch_pack.h"
#include "ptscope/error.h"

_Static_assert(sizeof(struct br_packed) == 16, "a packed event is 16 bytes");
_Static_assert(BR_PTWRITE < BR_PACK_WHOLE, "a br_kind is not the marker");
_Static_assert(sizeof(struct br_event) <= 64, "a whole event fits its room");

static inline int add(struct br_pack *p, const struct br_event *ev);

/* The slow way: room first, or an event that does not fit the small
 * form, written whole.  Kept out of br_pack_add so that its usual way
 * is a leaf with nothing to save. */
static __attribute__((noinline)) int add_slow(struct br_pack *p,
					      const struct br_event *ev)
{
	struct br_packed *r;

	if ((size_t)(p->end - p->at) < BR_PACK_MAX) {
		size_t len = (size_t)(p->at - p->buf);
		size_t cap = p->buf ? (size_t)(p->end - p->buf) * 2 : 16384;
		uint8_t *v = realloc(p->buf, cap);

		if (!v)
			return PS_ERR_NOMEM;
		p->buf = v;
		p->at = v + len;
		p->end = v + cap;
		return add(p, ev);
	}
	r = (struct br_packed *)p->at;
	memset(r, 0, sizeof(*r));
	r->kind = BR_PACK_WHOLE;
	memcpy(r + 1, ev, sizeof(*ev));
	p->at += BR_PACK_MAX;
	p->to = ev->to;
	p->ts = ev->ts;
	p->icount = ev->icount;
	return 0;
}

static inline int add(struct br_pack *p, const struct br_event *ev)
{
	struct br_packed *r = (struct br_packed *)p->at;
	uint64_t from = ev->from, d, bad;

	if ((size_t)(p->end - p->at) < BR_PACK_MAX)
		return add_slow(p, ev);
	/* Each field stored as it is worked out, and whether it fits
	 * gathered in @bad (few values live at once: the usual way saves no
	 * register).  An event that does not fit is written whole over
	 * the record by add_slow, which needs no base. */
	d = from - p->to;
	r->from = (uint32_t)d;
	bad = d + 0x80000000u;
	d = ev->to - from;
	r->to = (uint32_t)d;
	bad |= d + 0x80000000u;
	p->to = ev->to;
	d = ev->ts - p->ts;
	r->ts = (uint32_t)d;
	bad |= d;
	p->ts = ev->ts;
	bad >>= 32; /* from, to: signed 32 bits; ts: 32 */
	d = ev->icount - p->icount;
	r->icount = (uint16_t)d;
	bad |= d >> 16;
	p->icount = ev->icount;
	r->kind = (uint8_t)ev->kind;
	d = ev->ret - from; /* 1-255, or no ret */
	r->ret = (uint8_t)d;
	if (ev->ret)
		bad |= (d - 1) >> 8;
	else
		r->ret = 0;
	if (bad | (uint64_t)ev->err)
		return add_slow(p, ev);
	p->at += sizeof(*r);
	return 0;
}

int br_pack_add(struct br_pack *p, const struct br_event *ev)
{
	return add(p, ev);
}

int br_pack_sink(void *ctx, const struct br_event *ev)
{
	return add(ctx, ev);
}

void br_pack_clear(struct br_pack *p)
{
	p->at = p->buf;
	p->to = p->ts = p->icount = 0;
}

void br_unpack_init(struct br_unpack *u, const struct br_pack *p)
{
	u->at = p->buf;
	u->end = p->at;
	u->to = u->ts = u->icount = 0;
}

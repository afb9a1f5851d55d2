/* SPDX-License-Identifier: MIT */
/* Branch events packed for the trip from one thread to another (-j: a
 * segment's events, decoded on one core, are handed to the call stacks on
 * another).  Internal to the decoder library.
 *
 * A struct br_event is 56 bytes; nearly every event packs into 16, its
 * fields as differences from the event before that fit fixed widths (an
 * event that does not fit is kept whole after a marker).  Moving 56 bytes
 * an event through memory from one core to another cost a -j2 decode of
 * call-heavy code a fifth more work than -j1.  Fixed widths, not a
 * variable-length code: its branches on each field's length cost as much
 * as the memory.  Any event packs and unpacks exactly.
 */
#ifndef PTSCOPE_DECODER_BRANCH_PACK_H
#define PTSCOPE_DECODER_BRANCH_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decoder/branch.h"

/* Events in order.  Zeroed, it is empty; free(buf) releases it. */
struct br_pack {
	uint8_t *buf, *at, *end; /* memory, where the next event goes, end */
	uint64_t to, ts, icount; /* the last event's, the base of the next */
};

/* Append @ev; 0 or PS_ERR_NOMEM. */
int br_pack_add(struct br_pack *p, const struct br_event *ev);

/* One packed event: differences from the event before, or, for an event
 * that does not fit, BR_PACK_WHOLE and the struct br_event after it. */
struct br_packed {
	uint32_t from;	 /* from - the event before's to (signed) */
	uint32_t to;	 /* to - from (signed) */
	uint32_t ts;	 /* ts - the event before's ts */
	uint16_t icount; /* icount - the event before's icount */
	uint8_t kind;	 /* enum br_kind, or BR_PACK_WHOLE */
	uint8_t ret;	 /* ret - from (0: ret is 0) */
};

#define BR_PACK_WHOLE 0xff
/* A whole event's bytes: its marker record and the event, rounded up so
 * that records stay 16-byte aligned. */
#define BR_PACK_MAX (sizeof(struct br_packed) + 64)

/* The slow way of br_pack_put: room first, or an event that does not fit
 * the small form, written whole.  0 or PS_ERR_NOMEM. */
int br_pack_put_slow(struct br_pack *p, const struct br_event *ev);

/* Append the event of these fields: what br_pack_add does, inline, for a
 * producer that has them apart (the flow layer's flow_emit, for every
 * event of a -j segment: no struct br_event built, no call).  Each field
 * is stored as it is worked out, and whether it fits gathered in @bad
 * (few values live at once); an event that does not fit is written whole
 * over the record by br_pack_put_slow, which needs no base. */
static inline int br_pack_put(struct br_pack *p, enum br_kind kind,
			      uint64_t from, uint64_t to, uint64_t ret,
			      uint64_t ts, uint64_t icount, int err)
{
	struct br_packed *r = (struct br_packed *)p->at;
	uint64_t d, bad;

	if (__builtin_expect((size_t)(p->end - p->at) < BR_PACK_MAX, 0) || err)
		goto slow;
	d = from - p->to;
	r->from = (uint32_t)d;
	bad = d + 0x80000000u;
	d = to - from;
	r->to = (uint32_t)d;
	bad |= d + 0x80000000u;
	d = ts - p->ts;
	r->ts = (uint32_t)d;
	bad |= d;
	bad >>= 32; /* from, to: signed 32 bits; ts: 32 */
	d = icount - p->icount;
	r->icount = (uint16_t)d;
	bad |= d >> 16;
	r->kind = (uint8_t)kind;
	d = ret - from; /* 1-255, or no ret */
	r->ret = ret ? (uint8_t)d : 0;
	if (ret)
		bad |= (d - 1) >> 8;
	if (__builtin_expect(bad != 0, 0))
		goto slow;
	p->to = to;
	p->ts = ts;
	p->icount = icount;
	p->at += sizeof(*r);
	return 0;
slow : {
	struct br_event ev = {kind, from, to, ret, ts, icount, err};

	return br_pack_put_slow(p, &ev);
}
}

/* br_sink_fn that appends each event to the struct br_pack @ctx. */
int br_pack_sink(void *ctx, const struct br_event *ev);

/* Empty @p, keeping its memory. */
void br_pack_clear(struct br_pack *p);

/* Reading a pack from the start. */
struct br_unpack {
	const uint8_t *at, *end;
	uint64_t to, ts, icount;
	uint64_t base; /* added to every event's instruction count */
};

/* Read @p's events with @base added to their instruction counts (a -j
 * segment's counts go on from the segments before it). */
void br_unpack_init(struct br_unpack *u, const struct br_pack *p,
		    uint64_t base);

/* The next event into @ev: 1, or 0 at the end.  Inline: the joiner's loop
 * runs it for every event of a -j decode. */
static inline int br_unpack_next(struct br_unpack *u, struct br_event *ev)
{
	const struct br_packed *r = (const struct br_packed *)u->at;

	if (u->at == u->end)
		return 0;
	if (r->kind != BR_PACK_WHOLE) {
		ev->kind = (enum br_kind)r->kind;
		ev->from = u->to + (uint64_t)(int64_t)(int32_t)r->from;
		ev->to = ev->from + (uint64_t)(int64_t)(int32_t)r->to;
		/* no branch on whether there is a ret */
		ev->ret = (ev->from + r->ret) & (0 - (uint64_t)(r->ret != 0));
		ev->ts = u->ts + r->ts;
		ev->icount = u->icount + r->icount;
		ev->err = 0;
		u->at += sizeof(*r);
	} else {
		memcpy(ev, r + 1, sizeof(*ev));
		ev->icount += u->base;
		u->at += BR_PACK_MAX;
	}
	u->to = ev->to;
	u->ts = ev->ts;
	u->icount = ev->icount;
	return 1;
}

#endif /* PTSCOPE_DECODER_BRANCH_PACK_H */

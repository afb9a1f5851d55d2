/* SPDX-License-Identifier: MIT */
/* Packed branch events (see branch_pack.h).
 *
 * An event is one 16-byte record of differences from the event before
 * (struct small), or, when one of them does not fit, a record of kind
 * PK_WHOLE followed by the struct br_event as it is.
 */
#include <stdlib.h>
#include <string.h>

#include "decoder/branch_pack.h"
#include "ptscope/error.h"

struct small {
	uint32_t from;	 /* from - the event before's to (signed) */
	uint32_t to;	 /* to - from (signed) */
	uint32_t ts;	 /* ts - the event before's ts */
	uint16_t icount; /* icount - the event before's icount */
	uint8_t kind;	 /* enum br_kind, or PK_WHOLE */
	uint8_t ret;	 /* ret - from (0: ret is 0) */
};

#define PK_WHOLE 0xff
#define PK_MAX (sizeof(struct small) + sizeof(struct br_event))

_Static_assert(sizeof(struct small) == 16, "a packed event is 16 bytes");
_Static_assert(BR_PTWRITE < PK_WHOLE, "a br_kind is not the marker");
_Static_assert(sizeof(struct br_event) % sizeof(struct small) == 8 ||
		   sizeof(struct br_event) % sizeof(struct small) == 0,
	       "records stay 8-byte aligned");

static inline int fits_i32(uint64_t d)
{
	return (uint64_t)((int64_t)(int32_t)(uint32_t)d) == d;
}

int br_pack_add(struct br_pack *p, const struct br_event *ev)
{
	uint64_t dfrom = ev->from - p->to, dto = ev->to - ev->from;
	uint64_t dret = ev->ret - ev->from, dts = ev->ts - p->ts;
	uint64_t dicount = ev->icount - p->icount;
	struct small *r;

	if (p->cap - p->len < PK_MAX) {
		size_t cap = p->cap ? p->cap * 2 : 16384;
		uint8_t *v = realloc(p->buf, cap);

		if (!v)
			return PS_ERR_NOMEM;
		p->buf = v;
		p->cap = cap;
	}
	r = (struct small *)(p->buf + p->len);
	if (fits_i32(dfrom) && fits_i32(dto) && dts <= UINT32_MAX &&
	    dicount <= UINT16_MAX && (ev->ret ? dret - 1 < 255 : 1) &&
	    !ev->err) {
		r->from = (uint32_t)dfrom;
		r->to = (uint32_t)dto;
		r->ts = (uint32_t)dts;
		r->icount = (uint16_t)dicount;
		r->kind = (uint8_t)ev->kind;
		r->ret = ev->ret ? (uint8_t)dret : 0;
		p->len += sizeof(*r);
	} else {
		memset(r, 0, sizeof(*r));
		r->kind = PK_WHOLE;
		memcpy(r + 1, ev, sizeof(*ev));
		p->len += PK_MAX;
	}
	p->n++;
	p->to = ev->to;
	p->ts = ev->ts;
	p->icount = ev->icount;
	return 0;
}

int br_pack_sink(void *ctx, const struct br_event *ev)
{
	return br_pack_add(ctx, ev);
}

void br_pack_clear(struct br_pack *p)
{
	p->len = 0;
	p->n = 0;
	p->to = p->ts = p->icount = 0;
}

void br_unpack_init(struct br_unpack *u, const struct br_pack *p)
{
	u->at = p->buf;
	u->end = p->buf + p->len;
	u->to = u->ts = u->icount = 0;
}

int br_unpack_next(struct br_unpack *u, struct br_event *ev)
{
	const struct small *r = (const struct small *)u->at;

	if (u->at == u->end)
		return 0;
	if (r->kind != PK_WHOLE) {
		ev->kind = (enum br_kind)r->kind;
		ev->from = u->to + (uint64_t)(int64_t)(int32_t)r->from;
		ev->to = ev->from + (uint64_t)(int64_t)(int32_t)r->to;
		ev->ret = r->ret ? ev->from + r->ret : 0;
		ev->ts = u->ts + r->ts;
		ev->icount = u->icount + r->icount;
		ev->err = 0;
		u->at += sizeof(*r);
	} else {
		memcpy(ev, r + 1, sizeof(*ev));
		u->at += PK_MAX;
	}
	u->to = ev->to;
	u->ts = ev->ts;
	u->icount = ev->icount;
	return 1;
}

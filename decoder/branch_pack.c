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

/* Room first, or an event that does not fit the small form, written
 * whole (branch_pack.h). */
int br_pack_put_slow(struct br_pack *p, const struct br_event *ev)
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
		return br_pack_add(p, ev);
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
	return br_pack_put(p, ev->kind, ev->from, ev->to, ev->ret, ev->ts,
			   ev->icount, ev->err);
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

void br_unpack_init(struct br_unpack *u, const struct br_pack *p, uint64_t base)
{
	u->at = p->buf;
	u->end = p->at;
	u->to = u->ts = 0;
	u->icount = u->base = base;
}

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

#include "decoder/branch.h"

/* Events in order.  Zeroed, it is empty; free(buf) releases it. */
struct br_pack {
	uint8_t *buf;
	size_t len, cap;	 /* bytes */
	size_t n;		 /* events */
	uint64_t to, ts, icount; /* the last event's, the base of the next */
};

/* Append @ev; 0 or PS_ERR_NOMEM. */
int br_pack_add(struct br_pack *p, const struct br_event *ev);

/* br_sink_fn that appends each event to the struct br_pack @ctx. */
int br_pack_sink(void *ctx, const struct br_event *ev);

/* Empty @p, keeping its memory. */
void br_pack_clear(struct br_pack *p);

/* Reading a pack from the start. */
struct br_unpack {
	const uint8_t *at, *end;
	uint64_t to, ts, icount;
};

void br_unpack_init(struct br_unpack *u, const struct br_pack *p);

/* The next event into @ev: 1, or 0 at the end. */
int br_unpack_next(struct br_unpack *u, struct br_event *ev);

#endif /* PTSCOPE_DECODER_BRANCH_PACK_H */

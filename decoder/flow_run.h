/* SPDX-License-Identifier: MIT */
/* The state of the flow layer (see flow.h), private to its two files:
 * flow.c drives libipt's block decoder over a stream (sync, steps,
 * resync, the end), flow_branches.c turns what it decodes — blocks and
 * libipt events — into timed branch events for the sink.  flow.c calls
 * flow_branches.c, never the other way round. */
#ifndef PTSCOPE_DECODER_FLOW_RUN_H
#define PTSCOPE_DECODER_FLOW_RUN_H

#include <intel-pt.h>
#include <stddef.h>
#include <stdint.h>

#include "decoder/blockcache.h"
#include "decoder/branch.h"
#include "decoder/decoder.h"

struct br_pack;

struct fr_cache;
struct fr_insn;
struct img_image;
struct insn_decoder;

struct flow_decoder {
	struct dec_config cfg;
	struct img_image *img; /* not owned */
	struct flow_funcs fn;
	struct bc_cache *bc;	   /* owned */
	struct insn_decoder *insn; /* owned */
	uint64_t img_gen;	   /* image generation the cache was built on */
	struct bc_branch *walk;	   /* scratch for learning a block */
	size_t walk_cap;
	flow_block_fn block;   /* NULL unless inline frames are wanted */
	struct fr_cache *runs; /* owned: the fast engine's run cache */
	int fast; /* 1: try the fast engine first (flow_set_fast) */
};

/* A block's last instruction whose report needs the next ip. */
struct flow_pending {
	int valid;
	uint8_t end; /* enum bc_end */
	uint64_t from, ret, end_target;
	uint64_t tick, icount;
	struct bc_block *entry; /* for the indirect-jump memo */
};

/* State of one flow_decode() call. */
struct flow_run {
	struct flow_decoder *fd;
	struct pt_block_decoder *blk;		  /* libipt's, or NULL: */
	int (*time_fn)(void *ctx, uint64_t *tsc); /* the fast engine's */
	void *time_ctx;
	uint64_t emitted; /* events handed to the sink */
	/* a segment that continues another (flow_open_segment): its first
	 * block takes the place of the previous segment's last, with no
	 * BR_ENABLE; anything reported before that block spoils the seam */
	int seg_first, seg_bad;
	uint64_t seg_first_ip;
	uint64_t skip; /* events the sink has had already (a libipt
			* rerun after the fast engine gave up) */
	br_sink_fn sink;
	void *ctx;
	struct br_pack *pack; /* ctx, when the sink is br_pack_sink: written
			       * by flow_emit itself */
	uint64_t icount, blocks, branches;
	uint64_t calls, returns; /* near call and return instructions */
	uint64_t nomap, decode_err, overflow, truncated;
	uint64_t tsc;  /* last raw time from libipt */
	uint64_t tick; /* tsc converted */
	int have_tsc;
	int time_stale;	  /* libipt moved since tick was read */
	uint64_t last_ts; /* time of the last event sent */
	int sent;	  /* events sent so far */
	int need_enable;  /* the next block starts with BR_ENABLE */
	uint64_t last_ip; /* last instruction of the last block */
	int stale;	  /* the rest of the stream is stale data */
	int pause;	  /* the sink asked to pause (FLOW_PAUSE) */
	struct flow_pending pend;
	/* An asynchronous disable not yet reported: if PTW packets and an
	 * enable at the same ip follow, it was an emulator's data window
	 * (src/record/emulate/args.h), which changes nothing. */
	int held, in_window;
	uint64_t held_at, held_tick, held_icount;
	uint64_t still_off;   /* trace offset of the last block */
	uint64_t still_insns; /* instructions walked since it moved */
};

/* Send one branch event to the sink, its time raised to follow the
 * previous event's.  Returns 0 (also when the sink asked to pause: then
 * r->pause is set) or the sink's negative value. */
int flow_emit(struct flow_run *r, enum br_kind kind, uint64_t from, uint64_t to,
	      uint64_t ret, uint64_t tick, uint64_t icount, int err);

/* Read libipt's time into r->tsc and r->tick (no change before the first
 * timing packet). */
void flow_update_time(struct flow_run *r);

/* r->tick as of libipt's current position.  Reading the time costs a
 * call into libipt, so after a block it is read only if the block
 * reports something. */
static inline void flow_time_now(struct flow_run *r)
{
	if (r->time_stale) {
		r->time_stale = 0;
		flow_update_time(r);
	}
}

/* Report the pending block end (r->pend) now that the next ip (@to, 0:
 * unknown) is known.  Returns 0 or flow_emit's error. */
int flow_resolve(struct flow_run *r, uint64_t to);

/* Make sure the block cache knows @b: 0 (*@out: its entry, valid until
 * the cache learns another block), 1 if the walker cannot follow the
 * block (flow_on_block would report an error), PS_ERR_NOMEM.  @insns: the
 * block's instructions as the table decoder gave them (a run of
 * fast_runs.c walked by it), or NULL to decode them from the image. */
int flow_learn_block(struct flow_run *r, const struct pt_block *b,
		     const struct fr_insn *insns, struct bc_block **out);

/* flow_on_block for a block whose entry @e (or a copy of it, whose memo
 * fields then serve this caller) is known. */
int flow_on_known_block_events(struct flow_run *r, const struct pt_block *b,
			       struct bc_block *e);

/* Most blocks report nothing: no jump or call inside, no end that waits
 * for the next ip (flow_block_quiet), nothing pending or held before them,
 * no inline frames (flow_run_quiet).  Only their counts move, as
 * block_enter and block_events (flow_branches.c) move them
 * (flow_count_quiet). */
static inline int flow_block_quiet(const struct bc_block *e)
{
	return !e->nbr && e->end == BC_END_NONE;
}

static inline int flow_run_quiet(const struct flow_run *r)
{
	return !r->pend.valid && !r->held && !r->need_enable && !r->fd->block;
}

static inline void flow_count_quiet(struct flow_run *r, uint32_t ninsn,
				    uint64_t end_ip, const struct bc_block *e)
{
	r->blocks++;
	r->icount += ninsn;
	r->last_ip = end_ip;
	r->calls += e->ncall;
}

static inline int flow_on_known_block(struct flow_run *r,
				      const struct pt_block *b,
				      struct bc_block *e)
{
	if (flow_block_quiet(e) && flow_run_quiet(r)) {
		flow_count_quiet(r, b->ninsn, b->end_ip, e);
		return 0;
	}
	return flow_on_known_block_events(r, b, e);
}

/* One block libipt decoded: the pending end before it, the calls and tail
 * calls inside it (walked once and cached), its own end made pending.
 * Returns 0, PS_ERR_NOMEM or the sink's error. */
int flow_on_block(struct flow_run *r, const struct pt_block *b);

/* Report a held asynchronous disable (BR_INTERRUPT) now.  Returns 0 or
 * the sink's error. */
int flow_release_held(struct flow_run *r);

/* One libipt event (enable, disable, async branch, overflow...).  Returns
 * 0 or the sink's error. */
int flow_on_event(struct flow_run *r, const struct pt_event *ev);

#endif /* PTSCOPE_DECODER_FLOW_RUN_H */

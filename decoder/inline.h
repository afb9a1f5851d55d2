/* SPDX-License-Identifier: MIT */
/* Inlined functions as nested spans (prefix inl_).  Internal to the
 * decoder library; used when dec_config.inline_frames is set.
 *
 * The layer sits around one thread's call-stack builder (stack.c): it is
 * the builder's branch sink and its writer.  Whenever it learns where the
 * thread executes, it asks the symbolizer for the chain of inlined
 * instances (DW_TAG_inlined_subroutine, outermost first) at that address
 * and, when the address lies in the function of the innermost real frame,
 * closes and opens inline spans so that exactly that chain is open above
 * the frame.  Inline spans have category "inline", arg "inlined": true,
 * and (with span info) the module, entry address and the file:line of the
 * inline site.  Before a real frame's END passes through, every inline
 * span opened above it is closed, so inline spans always nest strictly
 * inside the frame that holds them.
 *
 * Precision is per block: the chain is sampled at the first and the last
 * instruction of each libipt block (flow_set_block_fn) and at the source
 * and target of every branch event.  libipt ends a block at every
 * conditional or indirect branch, so an inlined instance is missed only
 * when all of its code runs strictly inside one block without calling
 * anything; a span opened or closed inside a block is stamped with the
 * block's time.
 */
#ifndef PTSCOPE_DECODER_INLINE_H
#define PTSCOPE_DECODER_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/branch.h"
#include "decoder/flow.h"
#include "decoder/stack.h"
#include "decoder/symbols.h"

/* Inline spans nested deeper than this in one frame are not shown. */
#define INL_MAX_CHAIN 32

struct inl;

/* A layer over a new call-stack builder made from @cfg (its writer is
 * cfg->w; its frames' inline chains come from @syms, borrowed).
 * Returns 0, PS_ERR_INVAL (NULL arguments, or what stk_new refuses),
 * PS_ERR_NOMEM. */
int inl_new(const struct stk_config *cfg, struct sym_space *syms,
	    struct inl **out);
void inl_free(struct inl *l); /* accepts NULL; writes nothing */

/* br_sink_fn: feed one branch event (ctx: struct inl).  Returns 0,
 * PS_ERR_NOMEM or the writer's error. */
int inl_sink(void *ctx, const struct br_event *ev);

/* flow_block_fn: a decoded block (ctx: struct inl). */
int inl_block(void *ctx, const struct flow_block *b, int at_end);

/* The call-stack builder inside (owned by the layer). */
struct stk *inl_stk(struct inl *l);

/* Inline spans closed so far. */
uint64_t inl_spans(const struct inl *l);

/* Inline spans open now (for tests). */
unsigned inl_depth(const struct inl *l);

/* dec_decode_thread with inline frames: decode @pt (one thread, @cfg
 * made by the session) with the process's flow decoder @fd through a
 * layer over @syms, and add to @stats (may be NULL): what flow_decode
 * adds, the spans closed and one thread.  The session passes in what the
 * layer needs, so this file never reaches back into it.  Returns what
 * inl_new or flow_decode returns. */
int inl_decode_thread(struct flow_decoder *fd, struct sym_space *syms,
		      const struct stk_config *cfg, const uint8_t *pt,
		      size_t len, struct dec_stats *stats);

#endif /* PTSCOPE_DECODER_INLINE_H */

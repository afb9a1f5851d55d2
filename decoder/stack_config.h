/* SPDX-License-Identifier: MIT */
/* What a call-stack builder (stack.h) is given and what it counts: shared
 * by its public header and its frames (stack_frames.h).  Internal to the
 * decoder library. */
#ifndef PTSCOPE_DECODER_STACK_CONFIG_H
#define PTSCOPE_DECODER_STACK_CONFIG_H

#include <stdint.h>

#include "decoder/params.h"
#include "decoder/symbols.h"
#include "ptscope/writer.h"

/* Calls deeper than this are counted, not shown (runaway recursion). */
#define STK_MAX_DEPTH 10000

/* Resolve @ip to its function; must not return NULL (except on out of
 * memory, which stops the decode with PS_ERR_NOMEM). */
typedef const struct sym_func *(*stk_lookup_fn)(void *ctx, uint64_t ip);

struct stk_config {
	uint64_t pid, tid;
	struct ps_writer *w; /* not owned */
	stk_lookup_fn lookup;
	void *lookup_ctx;
	int span_info; /* 1: BEGIN events carry sym_func.info */
	/* The DWARF parameters of @fn (arguments recorded with --args are
	 * shown by them, on the span's END event); may be NULL. */
	const struct prm_func *(*params)(void *ctx, const struct sym_func *fn);
	unsigned max_depth; /* 0: STK_MAX_DEPTH */
};

/* What one builder saw (added up by the session). */
struct stk_counts {
	uint64_t branches; /* events fed */
	uint64_t spans;	   /* spans closed (END written) */
	uint64_t err_overflow;
	uint64_t err_nomap;
	uint64_t err_decode;
	uint64_t deep_calls; /* calls beyond max_depth, not shown */
	uint64_t last_ts;    /* time of the last event */
};

#endif /* PTSCOPE_DECODER_STACK_CONFIG_H */

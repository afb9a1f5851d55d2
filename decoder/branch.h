/* SPDX-License-Identifier: MIT */
/* Branch events: what the flow layer (flow.c, flow_branches.c: libipt
 * block decoder) hands to the call-stack builder (stack.c) and the inline
 * layer (inline.c), with the hooks around them: the sink's pause, the
 * block hook, and the one question the flow layer asks of the rest of the
 * decoder (is this a function entry?).  Internal to the decoder library.
 *
 * The flow layer reports every control transfer that matters for call
 * stacks, including the direct calls and function-leaving direct jumps that
 * libipt's block decoder runs through inside a block.  Times are trace-clock
 * nanoseconds, already converted, non-decreasing per stream and strictly
 * increasing between events that come from different instructions.
 */
#ifndef PTSCOPE_DECODER_BRANCH_H
#define PTSCOPE_DECODER_BRANCH_H

#include <stddef.h>
#include <stdint.h>

enum br_kind {
	BR_CALL,      /* near call at from; to = target; ret = return address */
	BR_RETURN,    /* near ret at from; to = where it returned */
	BR_JUMP,      /* a jump from one function into another's entry:
		       * a tail call (to = target) */
	BR_SYSCALL,   /* syscall/sysenter/int at from; tracing stops (user-only
		       * tracing) until BR_RESUME */
	BR_INTERRUPT, /* asynchronous transfer at from (interrupt, signal,
		       * exception); to = handler when traced, else 0 */
	BR_FAR_RETURN, /* iret/sysret seen in the trace (to = target) */
	BR_ENABLE,     /* tracing (re)starts at to (first ip of a stream, after
			* a PSB resync, or after the kernel returned) */
	BR_DISABLE,    /* tracing stops after from */
	BR_OVERFLOW,   /* the CPU dropped trace data; resumes at to (0: unknown)
			*/
	BR_ERROR,      /* decode error at from (err: libipt code, negative);
			* nothing is known until the next BR_ENABLE */
	BR_END,	       /* end of the stream; ts is the last known time */
	BR_PTWRITE     /* a PTW packet: to = its payload, from = the ip it
			* binds to (0: unknown); ret = 1 inside an emulator's
			* data window (--args, docs/args.md), 0 for PTWRITE
			* run by the program */
};

struct br_event {
	enum br_kind kind;
	uint64_t from;	 /* ip of the branching instruction (0 if unknown) */
	uint64_t to;	 /* ip control went to (0 if unknown) */
	uint64_t ret;	 /* BR_CALL: the return address (from + insn length) */
	uint64_t ts;	 /* trace clock, ns */
	uint64_t icount; /* instructions executed in this stream so far */
	int err;	 /* BR_ERROR: libipt error code (negative pte_*) */
};

/* The flow layer calls this for each event; a negative return stops the
 * decode and is passed back to the caller. */
typedef int (*br_sink_fn)(void *ctx, const struct br_event *ev);

/* Branch events kept in order, in memory that grows as needed (branch.c):
 * a sink that holds them for later (a -j segment, a CPU's queue, a
 * test).  Zeroed, it is empty; free(ev) releases it. */
struct br_list {
	struct br_event *ev;
	size_t n, cap;
};

/* Append @ev; 0 or PS_ERR_NOMEM. */
int br_list_add(struct br_list *l, const struct br_event *ev);

/* br_sink_fn that appends each event to the struct br_list @ctx. */
int br_list_sink(void *ctx, const struct br_event *ev);

/* A sink's return value meaning "event taken; pause the decode": the
 * stream stops after the current block or libipt event (which may still
 * report a few more events) and flow_step() returns FLOW_PAUSE.
 * flow_decode() simply goes on. */
#define FLOW_PAUSE 1

/* A decoded block as the block hook sees it. */
struct flow_block {
	uint64_t ip, end_ip; /* first and last instruction */
	uint32_t ninsn;
	uint64_t ts; /* trace time of the block (not yet raised to
		      * follow the previous event) */
};

/* Called with the sink's context for each decoded block: with @at_end 0
 * after the events before the block and before the branch events inside
 * it, with @at_end 1 after those.  A negative return stops the decode. */
typedef int (*flow_block_fn)(void *sink_ctx, const struct flow_block *b,
			     int at_end);

/* Callbacks into the rest of the decoder; any may be NULL. */
struct flow_funcs {
	/* 1 if @ip is the first instruction of a function (a symbol's
	 * start), else 0.  Decides whether a jump is a tail call.  Results
	 * for direct jumps are cached per block, so the answer for an
	 * address must not change during a flow decoder's life. */
	int (*is_func_entry)(void *ctx, uint64_t ip);
	void *ctx;
};

#endif /* PTSCOPE_DECODER_BRANCH_H */

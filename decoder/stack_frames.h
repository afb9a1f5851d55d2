/* SPDX-License-Identifier: MIT */
/* The call-stack builder's state (struct stk, see stack.h) and its frames,
 * private to its two files: stack.c (the rules: which event opens or
 * closes which frame) and stack_frames.c (a frame pushed writes its
 * span's BEGIN, one popped its END).  Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_STACK_FRAMES_H
#define PTSCOPE_DECODER_STACK_FRAMES_H

#include <stdint.h>

#include "decoder/args.h"
#include "decoder/stack_config.h"
#include "ptscope/writer.h"

enum stk_kind {
	FR_FUNC,    /* a function */
	FR_SYSCALL, /* "syscall": the kernel runs a system call */
	FR_KERNEL,  /* "[kernel]": interrupted, the kernel is not traced */
	FR_SIGNAL   /* "[signal]": a signal handler runs on top of this */
};

struct stk_frame {
	const struct sym_func *fn; /* FR_FUNC; borrowed from the symbolizer */
	uint64_t ret;		   /* saved return address, 0 if unknown */
	uint64_t resume; /* non-FUNC: ip where the interrupted code goes on */
	struct arg_vals *vals; /* --args: owned, or NULL */
	uint8_t kind;
};

struct stk {
	struct stk_config cfg;
	struct stk_frame *fr; /* owned; grows up to cfg.max_depth */
	unsigned depth, cap;
	unsigned deep;	    /* calls beyond max_depth still open */
	int started;	    /* a stack exists since the last start/error */
	uint64_t first_ts;  /* time of the first ip since the last start */
	unsigned ninferred; /* inferred frames made since the last start */
	uint64_t floor_ts;  /* inferred frames never begin before this */
	uint64_t last_ts;
	/* A "[kernel]" frame not yet begun: tracing stopped asynchronously
	 * (an interrupt, or the end of a snapshot) at kpend_ts.  It becomes a
	 * span only once tracing goes on; if the stream ends first, nothing
	 * is known of what came after and no span is made. */
	int kpend;
	uint64_t kpend_resume, kpend_ts;
	struct arg_rec rec; /* the data window being read */
	struct stk_counts c;
	/* a function's BEGIN and any END, all but ts, name and info set */
	struct ps_event begin_tmpl, end_tmpl;
};

/* The spans' categories (one copy: writers compare them by address). */
extern const char stk_cat_func[], stk_cat_kernel[], stk_cat_signal[],
    stk_cat_error[];

/* Open a frame on top (room for it made by the caller): the part of
 * stk_push the stack builder's short way shares. */
static inline struct stk_frame *stk_frame_open(struct stk *s,
					       enum stk_kind kind,
					       const struct sym_func *fn,
					       uint64_t ret, uint64_t resume)
{
	struct stk_frame *f = &s->fr[s->depth++];

	f->fn = fn;
	f->ret = ret;
	f->resume = resume;
	f->vals = NULL;
	f->kind = kind;
	return f;
}

/* Write @ev as the builder's thread's (stk_emit), or as one whose strings
 * are formatted on the stack, outside the producer's stable-string promise
 * of writer.h (stk_emit_unstable).  The writer's result. */
int stk_emit(struct stk *s, struct ps_event *ev);
int stk_emit_unstable(struct stk *s, struct ps_event *ev);

/* Push a frame that begins at @ts and write its BEGIN (@inferred: a frame
 * whose start the trace did not show); past max_depth it is only counted.
 * 0, PS_ERR_NOMEM or the writer's error. */
int stk_push(struct stk *s, enum stk_kind kind, const struct sym_func *fn,
	     uint64_t ret, uint64_t resume, uint64_t ts, int inferred);

/* Pop the top frame at @ts (its END, with its --args values if any), or
 * frames until @keep remain. */
int stk_pop(struct stk *s, uint64_t ts);
int stk_pop_to(struct stk *s, unsigned keep, uint64_t ts);

#endif /* PTSCOPE_DECODER_STACK_FRAMES_H */

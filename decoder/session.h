/* SPDX-License-Identifier: MIT */
/* Internals of the decoder session shared by session.c and switches.c
 * (prefix dec_, private to the decoder library). */
#ifndef PTSCOPE_DECODER_SESSION_H
#define PTSCOPE_DECODER_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/decoder.h"
#include "decoder/stack.h"

struct dec_crew;
struct img_cache;
struct img_image;
struct flow_decoder;
struct sym_module;
struct sym_space;

/* Symbols of one file, shared by every process that maps it. */
struct dec_module {
	char *path;	      /* owned */
	struct sym_module *m; /* owned */
};

/* A thread of one dec_decode_cpus call: its stack lives across every part
 * of the CPU streams it ran in, closed only at the end. */
struct dec_thread {
	uint64_t tid;
	struct stk *stk; /* owned */
	uint64_t end_ts; /* last switch out or stream end seen for it */
};

/* dec_split's worker threads at most (-j beyond one more is cut). */
#define DEC_SPLIT_WORKERS 64

struct dec_proc {
	uint64_t pid;
	uint32_t epoch;		    /* the process's image (exec epoch) */
	struct img_image *img;	    /* owned; uses the session's cache */
	struct flow_decoder *flow;  /* owned; made on first decode */
	struct sym_space *syms;	    /* owned; borrows the session's modules */
	struct dec_thread *threads; /* owned (per-CPU decoding) */
	size_t nthreads;
	/* owned: the flow decoders of dec_split's workers, kept from one
	 * stream to the next so that each learns the code once */
	struct flow_decoder *split_flow[DEC_SPLIT_WORKERS];
};

struct dec_session {
	struct dec_config cfg;
	struct img_cache *cache; /* owned */
	struct dec_proc *procs;	 /* owned */
	size_t nprocs;
	struct dec_module *mods; /* owned */
	size_t nmods;
	struct dec_stats stats;
	/* owned: dec_split's workers, started with the session (crew.h);
	 * NULL when it does not split (-j1, libipt's flow) */
	struct dec_crew *crew;
};

/* The image of @pid in exec epoch 0 / in @epoch, or NULL. */
struct dec_proc *dec_proc_find(struct dec_session *s, uint64_t pid);
struct dec_proc *dec_proc_find_epoch(struct dec_session *s, uint64_t pid,
				     uint32_t epoch);
/* Find or create; returns 0, PS_ERR_NOMEM. */
int dec_proc_get(struct dec_session *s, uint64_t pid, struct dec_proc **out);
int dec_proc_get_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
		       struct dec_proc **out);
/* Make the process's flow decoder if needed; 0 or PS_ERR_NOMEM. */
int dec_proc_flow(struct dec_session *s, struct dec_proc *p);
/* The stack builder configuration for one thread of @p. */
void dec_stk_config(const struct dec_session *s, const struct dec_proc *p,
		    uint64_t tid, struct ps_writer *w, struct stk_config *cfg);
/* stk_lookup_fn over a struct sym_space. */
const struct sym_func *dec_lookup(void *ctx, uint64_t ip);
/* dec_add_elf_as into image @epoch of @pid. */
int dec_add_elf_in(struct dec_session *s, uint64_t pid, uint32_t epoch,
		   const char *path, const char *name, uint64_t base,
		   uint64_t file_offset, uint64_t size);
/* flow_decode with the flow layer (libipt) on a thread of its own and
 * @sink (the stack builder and writer) on the caller's, fed through a
 * bounded queue of branch events in the same order (pipeline.c). */
int dec_pipeline(struct flow_decoder *fd, const uint8_t *pt, size_t len,
		 br_sink_fn sink, void *ctx, struct dec_stats *stats);

/* Streams decoded by ptscope's flow engine on s->cfg.jobs threads, cut
 * in segments at PSBs, each stream's segments joined for its stack
 * builder in order (split.c): the same events as flow_decode, @done told
 * of each stream's result in order.  Returns 0, @done's error, or
 * DEC_SPLIT_UNCUT, having done nothing, for one stream it cannot cut. */
#define DEC_SPLIT_UNCUT 1
int dec_split(struct dec_session *s, const struct dec_stream *st, size_t n,
	      dec_stream_done_fn done, void *ctx);

/* The flow layer's callbacks for @p (is a symbol's first address). */
struct flow_funcs dec_flow_funcs(struct dec_proc *p);

/* @from's counts added to @to. */
void dec_stats_add(struct dec_stats *to, const struct dec_stats *from);

/* A thread's stream on its way to the stack builder: its builder, and
 * the writer's promise that the strings stay put (*@epoch, for
 * dec_stack_end).  0 or the builder's error. */
int dec_stack_begin(struct dec_session *s, struct dec_proc *p,
		    const struct dec_stream *in, struct stk **stk,
		    uint64_t *epoch);
/* ... and after it: the promise ends, the spans count, @stk is freed. */
void dec_stack_end(struct dec_session *s, const struct dec_stream *in,
		   struct stk *stk, uint64_t epoch);

/* CLOCK_MONOTONIC in seconds, for dec_stats.seconds. */
double dec_now(void);

/* flow_decode's PS_ERR_FORMAT (no PSB) with its user-facing detail. */
int dec_no_psb(int err);

#endif /* PTSCOPE_DECODER_SESSION_H */

/* SPDX-License-Identifier: MIT */
/* A writer that passes everything on to another (prefix ps_filter_), the
 * base of the writers that change or watch some events on their way (the
 * replay's epoch clamp and crash-argument tap, the kernel events' window
 * tap).  Such a writer starts with a struct ps_filter, uses the
 * ps_filter_* functions in its ops table for what it passes on as is,
 * and calls ps_filter_sync_epoch before it passes on an event:
 *
 *   struct my_tap { struct ps_filter f; ... };
 *   static const struct ps_writer_ops my_ops = {
 *       .process = ps_filter_process, .event = my_event, ...};
 *
 * Header-only, like writer.h. */
#ifndef PTSCOPE_WRITER_FILTER_H
#define PTSCOPE_WRITER_FILTER_H

#include <stdint.h>

#include "ptscope/writer.h"

struct ps_filter {
	struct ps_writer base; /* first: a ps_writer */
	struct ps_writer *inner;
	uint64_t outer_epoch; /* the producer's string epoch last seen */
	uint64_t saved;	      /* the inner writer's epoch before ours */
};

static inline void ps_filter_init(struct ps_filter *f,
				  const struct ps_writer_ops *ops,
				  struct ps_writer *inner)
{
	f->base.ops = ops;
	f->inner = inner;
}

/* The producer's string-stability epochs (writer.h) map onto fresh epochs
 * of the inner writer, so the inner writer never mixes them with its
 * own. */
static inline void ps_filter_sync_epoch(struct ps_filter *f)
{
	if (f->base.stable_epoch == f->outer_epoch)
		return;
	if (f->outer_epoch)
		ps_writer_stable_end(f->inner, f->saved);
	f->outer_epoch = f->base.stable_epoch;
	if (f->outer_epoch)
		f->saved = ps_writer_stable_begin(f->inner);
}

/* The producer is done: end its epoch in the inner writer. */
static inline void ps_filter_end(struct ps_filter *f)
{
	if (f->outer_epoch) {
		ps_writer_stable_end(f->inner, f->saved);
		f->outer_epoch = 0;
	}
}

static inline int ps_filter_process(struct ps_writer *w, uint64_t pid,
				    const char *name)
{
	struct ps_filter *f = (struct ps_filter *)w;

	return f->inner->ops->process(f->inner, pid, name);
}

static inline int ps_filter_thread(struct ps_writer *w, uint64_t pid,
				   uint64_t tid, const char *name)
{
	struct ps_filter *f = (struct ps_filter *)w;

	return f->inner->ops->thread(f->inner, pid, tid, name);
}

static inline int ps_filter_parent(struct ps_writer *w, uint64_t pid,
				   uint64_t ppid)
{
	struct ps_filter *f = (struct ps_filter *)w;

	return ps_write_parent(f->inner, pid, ppid);
}

static inline int ps_filter_meta(struct ps_writer *w, const char *key,
				 const char *value)
{
	struct ps_filter *f = (struct ps_filter *)w;

	return f->inner->ops->meta(f->inner, key, value);
}

static inline int ps_filter_sample(struct ps_writer *w,
				   const struct ps_sample *s)
{
	struct ps_filter *f = (struct ps_filter *)w;

	return ps_write_sample(f->inner, s);
}

/* The inner writer is flushed and destroyed by its owner. */
static inline int ps_filter_flush(struct ps_writer *w)
{
	(void)w;
	return 0;
}

static inline void ps_filter_destroy(struct ps_writer *w)
{
	(void)w;
}

#endif /* PTSCOPE_WRITER_FILTER_H */

/* SPDX-License-Identifier: MIT */
/* Progress of a long decode or conversion on a terminal (prefix
 * progress_): one line on standard error, redrawn in place a few times a
 * second, erased when the work ends.  Quiet when standard error is not a
 * terminal, when asked to be (-q), and for work that ends within half a
 * second.
 *
 * A progress writer passes every call on to the real writer and counts
 * the events; the reading side reports bytes through progress_read(),
 * which fits ps_read_progress_fn.
 */
#ifndef PTSCOPE_CLI_PROGRESS_H
#define PTSCOPE_CLI_PROGRESS_H

#include <stdint.h>

#include "ptscope/writer.h"

struct progress {
	struct ps_writer base;	 /* must stay first: a writer to feed */
	struct ps_writer *inner; /* the real writer (borrowed) */
	const char *label;	 /* "ptscope convert" */
	int on;			 /* a terminal, not quiet */
	int shown;		 /* a line is on the screen */
	double start, last;	 /* seconds, CLOCK_MONOTONIC */
	uint64_t events;	 /* events passed on */
	uint64_t done, total;	 /* input bytes read / in all (0: unknown) */
};

/* Start: @inner gets every call made on &p->base.  @quiet: never draw. */
void progress_init(struct progress *p, const char *label,
		   struct ps_writer *inner, int quiet);

/* What to write to: &p->base when it draws, else the real writer itself
 * (for a producer that needs no count, the per-event step costs
 * something on millions of events). */
struct ps_writer *progress_writer(struct progress *p);

/* Input progress: @done of @total bytes (total 0: unknown). */
void progress_read(void *p, uint64_t done, uint64_t total);

/* Erase the line, if one was drawn (before any other message). */
void progress_end(struct progress *p);

#endif /* PTSCOPE_CLI_PROGRESS_H */

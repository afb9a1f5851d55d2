/* SPDX-License-Identifier: MIT */
/* ptscope's normalised text form of a trace (what `ptscope dump` prints).
 *
 * Event form (default): one line per writer call, in the order they come,
 * with a fixed field order, timestamps in ns, args sorted by name and
 * numbers printed canonically, so the same trace read from any format
 * prints the same lines.
 *
 * Slices form: BEGIN/END pairs are matched per thread and every slice,
 * instant, counter and flow is printed sorted by (pid, tid, ts, depth) with
 * its nesting depth and duration; names of processes and threads and the
 * metadata come first, sorted.  This compares two traces by meaning.  It
 * keeps every item until the end to sort it (memory grows with the trace).
 * docs/convert.md describes both forms.
 */
#ifndef PTSCOPE_OUTPUT_TEXT_H
#define PTSCOPE_OUTPUT_TEXT_H

#include "ptscope/writer.h"

struct ps_sink;

struct text_options {
	int slices; /* 1: the sorted slices form, 0: one line per event */
};

/* A text writer on @sink (stored in (*out)->sink; ps_writer_finish commits
 * it).  @opt may be NULL (event form).  Returns 0, PS_ERR_INVAL or
 * PS_ERR_NOMEM. */
int text_writer_new(struct ps_sink *sink, const struct text_options *opt,
		    struct ps_writer **out);

#endif /* PTSCOPE_OUTPUT_TEXT_H */

/* SPDX-License-Identifier: MIT */
/* Spans from call-stack samples (prefix sspan_), the decode side of the
 * sample backend.  Each thread's samples, in time order, become stacks
 * (sample_stacks.h); a function present at the same depth in
 * consecutive stacks is one call, so each span opens where its function
 * first appears and closes where it is gone.  Edges lie halfway between
 * the two samples, but at most half a period away from a sample (a
 * thread that slept in between gets no time it did not run): with period
 * P, a span seen in k consecutive samples lasts about k × P.  After a gap
 * of more than two periods (the thread slept, or waited for a CPU) every
 * span closes: seen on both sides of a gap is not known to be one call,
 * and time shares stay those of the samples.
 *
 * Spans carry the category "sampled at N Hz" and an "unwinder" argument
 * (the unwinder of the sample that opened them); the metadata says the
 * trace was sampled, at what rate, with what event, and how many stacks
 * each unwinder gave.  Every sample also goes to the writer's sample op
 * (Perfetto's callstack samples: its flame graph).
 */
#ifndef PTSCOPE_REPLAY_SAMPLE_SPANS_H
#define PTSCOPE_REPLAY_SAMPLE_SPANS_H

#include "decoder/decoder.h"
#include "ptscope/recording.h"
#include "ptscope/writer.h"

/* How the caller (replay.c) wants the spans. */
struct sspan_opts {
	int span_info; /* 1: spans carry module/address/file:line */
	/* One sentence per damaged SAMPLES section; may be NULL. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* What was written (added to by sspan_replay). */
struct sspan_stats {
	uint64_t threads, spans, samples;
	uint32_t sample_hz;
};

/* The samples of @in: spans to @spans (a window tap may stand between),
 * samples and metadata to @w, through @ds (its modules already added).
 * Adds to @st.  Returns 0, PS_ERR_NOMEM, or a writer's error; a damaged
 * SAMPLES section is warned about and skipped. */
int sspan_replay(const struct recording *in, struct dec_session *ds,
		 struct ps_writer *spans, struct ps_writer *w,
		 const struct sspan_opts *o, struct sspan_stats *st);

#endif /* PTSCOPE_REPLAY_SAMPLE_SPANS_H */

/* SPDX-License-Identifier: MIT */
/* Replay: a recording → decoder session → trace writer (prefix replay_).
 *
 * Modules are added to the decoder per pid (the archived copy when the
 * recording carries one, else the file on this machine; a module that is
 * missing or whose build id differs is reported once through @warn and the
 * rest is decoded), then every thread's PT is decoded into spans, and the
 * recording's trigger hits, signals and exits become instants on the same
 * clock.  Process/thread names and trace metadata (backend, "emulated",
 * ptscope version, command line, snapshot reason) go to the writer.
 *
 * Library code: never prints; warnings go to opts->warn.
 */
#ifndef PTSCOPE_RECORD_REPLAY_H
#define PTSCOPE_RECORD_REPLAY_H

#include <stdint.h>

#include "decoder/decoder.h"
#include "ptscope/recording.h"
#include "ptscope/writer.h"

struct replay_options {
	int inline_frames; /* 1: DWARF inlined functions as nested spans */
	int span_info;	   /* 1: spans carry module/address/file:line args */
	int jobs;	   /* dec_config.jobs (> 1: libipt on its own thread) */
	int libipt_flow;   /* dec_config.libipt_flow */
	/* Called once per problem worth telling the user (missing module,
	 * build id mismatch, a thread that could not be decoded); may be
	 * NULL.  @msg is one sentence, borrowed for the call. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

/* What a replay produced (filled when @stats is not NULL). */
struct replay_stats {
	uint64_t threads;	/* threads decoded */
	uint64_t spans;		/* spans written */
	uint64_t instructions;	/* instructions the decoder walked */
	uint64_t marks;		/* trigger/signal/exit instants written */
	uint64_t decode_errors; /* decode errors (each also an instant) */
	uint64_t kernel_events; /* kernel events written */
	uint64_t kernel_lost;	/* kernel events lost while recording */
	uint64_t samples;	/* call-stack samples (sampled recordings) */
	uint32_t sample_hz;	/* their rate, 0: not sampled */
	struct dec_stats decoder; /* the PT decoder's own counts */
};

/* Trigger marks (REC_MARK_TRIGGER) carry "SYMBOL" or "SYMBOL\nREASON" in
 * their text: the function that was hit, then ptscope_trigger's reason. */

/* Decode @in into @w; @opts and @stats may be NULL.  Returns 0, or
 * PS_ERR_INVAL, PS_ERR_NOMEM, or what the decoder or @w returned.  A
 * thread whose PT cannot be decoded at all is reported through opts->warn
 * and skipped.  Does not finish or abort @w. */
int replay_input(const struct recording *in, struct ps_writer *w,
		 const struct replay_options *opts, struct replay_stats *stats);

/* Decode the recording file at @path into @w.  @opts may be NULL
 * (defaults: no inline frames, span info on, no warnings).
 * Returns 0, or PS_ERR_IO / PS_ERR_FORMAT / PS_ERR_TRUNCATED /
 * PS_ERR_UNSUPPORTED (unreadable recording, detail says why), PS_ERR_NOMEM,
 * or what the decoder or @w returned.  Does not finish or abort @w. */
int replay_recording_file(const char *path, struct ps_writer *w,
			  const struct replay_options *opts);

/* Same, also reporting what was produced into @stats (may be NULL). */
int replay_recording_file_stats(const char *path, struct ps_writer *w,
				const struct replay_options *opts,
				struct replay_stats *stats);

#endif /* PTSCOPE_RECORD_REPLAY_H */

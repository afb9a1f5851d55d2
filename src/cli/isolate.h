/* Decoding and writing a snapshot in a child process (prefix iso_).
 *
 * While ptscope holds a target (single-stepped threads, a stopped
 * process), the work that needs the most memory and parses the most data
 * — decoding the snapshot, writing the trace — runs in a forked child.
 * A fault there, or the OOM killer choosing it (its oom_score_adj is
 * raised to 1000 so it is chosen first), ends only the child: the tracer
 * reports one sentence and goes on to detach as usual.  Temporary output
 * files of a child that died are removed (src/output/tmpfile.h).
 */
#ifndef PTSCOPE_RECORD_ISOLATE_H
#define PTSCOPE_RECORD_ISOLATE_H

#include "src/replay/replay.h"

/* The job: returns 0 or a PS_ERR_* code (with its detail) and fills
 * @stats. */
typedef int (*iso_fn)(void *ctx, struct replay_stats *stats);

/* Run @fn in a child and wait for it.  Returns what @fn returned (its
 * detail message carried over, *@stats filled), or PS_ERR_TARGET when the
 * child died ("decoding the snapshot failed: the decoder process was
 * killed by SIGKILL (out of memory?) ...").  Falls back to running @fn
 * here when no child can be made. */
int iso_run(iso_fn fn, void *ctx, struct replay_stats *stats);

#endif

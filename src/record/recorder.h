/* SPDX-License-Identifier: MIT */
/* The recorder (prefix rec_): runs or attaches to a target, traces every
 * thread with a backend, takes snapshots (trigger hit, exit, crash, Ctrl-C,
 * --duration) and hands each one to the caller, who decodes it into a trace
 * (run, attach) or saves it as a recording file (record).
 *
 * This is the way in for the CLI; recorder.c wires the core
 * (core/core.h), the trigger kinds (triggers/), kernel events (kevents/)
 * and the chosen backend (backend.h) together.
 *
 * Library code: never prints; notices (which backend and why, a trigger
 * that never resolved) go to opts->notice.
 */
#ifndef PTSCOPE_RECORD_RECORDER_H
#define PTSCOPE_RECORD_RECORDER_H

#include "src/record/core/options.h"

/* Run @argv (PATH searched) under the recorder until it exits, a trigger
 * hits (then it continues untraced and ptscope waits for it), it crashes,
 * or rec_request_stop().  Returns 0 (see @res for what happened) or
 * PS_ERR_*: NO_HW (backend), NOT_FOUND (command, trigger symbol with
 * suggestions), PERM, TARGET, or what on_snapshot returned. */
int rec_run(const struct rec_options *o, char *const argv[],
	    struct rec_result *res);

/* Attach to every thread of processes @pids; trace until a trigger,
 * rec_request_stop() (Ctrl-C) or --duration; then detach, leaving the
 * targets running.  Errors as rec_run, NOT_FOUND for a missing pid. */
int rec_attach(const struct rec_options *o, const pid_t *pids, size_t n,
	       struct rec_result *res);

/* Parse "4M", "512K", "1G", "65536" into bytes.  Returns 0 or PS_ERR_INVAL
 * (detail shows the accepted forms). */
int rec_parse_size(const char *s, uint64_t *out);

/* Save @snap as a recording file at @path (atomic).  Returns 0 or the
 * recording writer's error. */
int snapshot_write(const struct rec_snapshot *snap, const char *path);

/* "trace.fxt" + 2 → "trace.2.fxt" (the index goes before the last
 * extension, or at the end).  Returns 0 or PS_ERR_LIMIT. */
int rec_numbered_path(const char *path, unsigned index, char *out, size_t size);

#endif /* PTSCOPE_RECORD_RECORDER_H */

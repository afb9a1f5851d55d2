/* SPDX-License-Identifier: MIT */
/* Private to the step backend: what its control loop (step.c) uses of the
 * stop handlers and thread helpers in step_stops.c.
 */
#ifndef PTSCOPE_RECORD_STEP_STOPS_H
#define PTSCOPE_RECORD_STEP_STOPS_H

#include <stdint.h>
#include <sys/types.h>

#include "src/record/ptrace/tracee.h"

struct rec_session;
struct rec_proc;
struct rec_thr;

/* Options set on every traced thread when children are followed
 * (PTRACE_O_TRACEFORK and _VFORK on top of the tracee's own), else 0. */
extern unsigned long step_tree_opts;
/* A process joins the session with its emulator state. */
int step_proc_add(struct rec_session *s, pid_t pid, struct rec_proc **out);
/* Start tracing @t at its current ip, at trace time @now. */
int step_thr_start(struct rec_session *s, struct rec_thr *t, uint64_t now);
/* Let a stopped @t run on (stepped when traced), delivering @sig. */
int step_resume(struct rec_session *s, struct rec_thr *t, int sig);
void step_thr_stop_tracing(struct rec_session *s, struct rec_thr *t);
/* @t is gone or no longer followed: its tracing and triggers end. */
void step_thr_gone(struct rec_session *s, struct rec_thr *t);
/* Resume threads parked while another one was handled. */
int step_unpark(struct rec_session *s);
/* @t ended (exit status or killing signal @code, per @kind). */
void step_on_gone(struct rec_session *s, struct rec_thr *t, enum trc_stop kind,
		  int code);
/* Answer the stop of @tid reported by waitpid as @status. */
int step_handle(struct rec_session *s, pid_t tid, int status);

#endif /* PTSCOPE_RECORD_STEP_STOPS_H */

/* SPDX-License-Identifier: MIT */
/* What the backends that hold threads with ptrace (step, intel-pt) do the
 * same way (follow.c): seize a process's threads, adopt a thread that
 * appears before its clone event, and wait for the command once it runs
 * untraced.
 */
#ifndef PTSCOPE_RECORD_PTRACE_FOLLOW_H
#define PTSCOPE_RECORD_PTRACE_FOLLOW_H

#include <sys/types.h>

#include "src/record/core/core.h"

/* Seize every thread of @p, including ones created meanwhile, then
 * resolve its triggers for good.  Returns 0 or PS_ERR_*. */
int rec_seize_threads(struct rec_session *s, struct rec_proc *p);

/* A thread that stopped before its creator's clone event was seen: add
 * it to its process (THR_NEW), or detach it if that is not traced.
 * Returns the thread or NULL. */
struct rec_thr *rec_thr_adopt(struct rec_session *s, pid_t tid);

/* Wait for the command that was started (res->pid) once it runs
 * untraced, and fill in how it ended (a stop request cuts it short). */
void rec_wait_target(struct rec_result *res);

#endif /* PTSCOPE_RECORD_PTRACE_FOLLOW_H */

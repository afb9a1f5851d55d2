/* SPDX-License-Identifier: MIT */
/* What the backends that hold threads with ptrace (step, intel-pt) do the
 * same way (follow.c): start the command, seize a process's threads,
 * adopt a thread that appears before its clone event, wait for a thread
 * asked to stop, and wait for the command once it runs untraced.
 */
#ifndef PTSCOPE_RECORD_PTRACE_FOLLOW_H
#define PTSCOPE_RECORD_PTRACE_FOLLOW_H

#include <sys/types.h>

#include "src/record/core/core.h"
#include "src/record/ptrace/tracee.h"

/* The ptrace options that follow the process tree (TRACEFORK, TRACEVFORK
 * with the rest of trc_options(@kill_on_exit)), or 0 when children are
 * not followed. */
unsigned long rec_tree_options(const struct rec_session *s, int kill_on_exit);

/* Start @argv stopped for tracing (s->res->pid set) and, unless the
 * session traces the loader, run it to its entry point.  Returns 0 and
 * *pid, or PS_ERR_TARGET when it ended before its first instruction (the
 * loader failed: s->res says how), or another PS_ERR_* (the command is
 * killed then). */
int rec_spawn_command(struct rec_session *s, char *const argv[], pid_t *pid);

/* How a backend lets go of a thread that is gone: @kind TRC_EXITED or
 * TRC_KILLED with the exit code or signal. */
typedef void (*rec_gone_fn)(struct rec_session *s, struct rec_thr *t,
			    enum trc_stop kind, int code);

/* Wait for @t, asked to stop with PTRACE_INTERRUPT, to be in a ptrace
 * stop (t->state THR_STOPPED) or gone (@gone called); a new thread it
 * reports is added.  @stepping: it may have been single-stepped, and the
 * interrupt can overtake the step's trap, whose SIGTRAP is then let
 * arrive and dropped (it would kill the thread once detached).  Returns
 * the signal to deliver when detaching it (0: none), or -1 when wait(2)
 * cannot see it any more (not our tracee): the caller counts it gone. */
int rec_wait_stopped(struct rec_session *s, struct rec_thr *t, rec_gone_fn gone,
		     int stepping);

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

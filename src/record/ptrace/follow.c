/* SPDX-License-Identifier: MIT */
/* Following a process's threads with ptrace, for the step and intel-pt
 * backends (follow.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "ptscope/error.h"
#include "src/record/ptrace/follow.h"
#include "src/record/ptrace/tracee.h"

unsigned long rec_tree_options(const struct rec_session *s, int kill_on_exit)
{
	if (!rec_follows(s))
		return 0;
	return trc_options(kill_on_exit) | PTRACE_O_TRACEFORK |
	       PTRACE_O_TRACEVFORK;
}

int rec_spawn_command(struct rec_session *s, char *const argv[], pid_t *pid)
{
	struct rec_result *res = s->res;
	int st = 0, r = trc_spawn(argv, pid);

	if (r)
		return r;
	res->pid = *pid;
	if (s->o->trace_loader)
		return 0;
	r = trc_run_to_entry(*pid, &st);
	if (r == 1) {
		/* The loader gave up (a missing library): nothing of the
		 * program ran, so there is nothing to show. */
		res->exited = WIFEXITED(st);
		res->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
		res->killed_by = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		return ps_err_detail(PS_ERR_TARGET,
				     "'%s' ended before its first instruction "
				     "(the dynamic loader failed)",
				     argv[0]);
	}
	if (r) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, __WALL);
	}
	return r;
}

int rec_wait_stopped(struct rec_session *s, struct rec_thr *t, rec_gone_fn gone,
		     int stepping)
{
	int st, sig;

	for (;;) {
		pid_t w = waitpid(t->tid, &st, __WALL);
		enum trc_stop kind;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		kind = trc_classify(st, &sig);
		switch (kind) {
		case TRC_EXITED:
		case TRC_KILLED:
			gone(s, t, kind, sig);
			return 0;
		case TRC_SIGNAL:
			t->state = THR_STOPPED;
			return sig;
		case TRC_CLONE: {
			unsigned long msg = 0;
			struct rec_thr *nt;

			if (!ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) &&
			    msg && !rec_thr_find(s, (pid_t)msg))
				rec_thr_add(s, t->proc, (pid_t)msg, THR_NEW,
					    &nt);
			t->state = THR_STOPPED;
			return 0;
		}
		case TRC_EVSTOP:
			if (stepping && trc_signal_pending(t->tid, SIGTRAP) &&
			    !ptrace(PTRACE_CONT, t->tid, 0, 0))
				continue;
			t->state = THR_STOPPED;
			return 0;
		default:
			t->state = THR_STOPPED;
			return 0;
		}
	}
}

int rec_seize_threads(struct rec_session *s, struct rec_proc *p)
{
	int changed = 1, r;

	/* Threads created while seizing show up in the next listing. */
	while (changed) {
		pid_t *tids;
		int n = trc_threads(p->pid, &tids);

		if (n < 0)
			return n;
		changed = 0;
		for (int i = 0; i < n; i++) {
			struct rec_thr *t;

			if (rec_thr_find(s, tids[i]))
				continue;
			r = trc_seize(tids[i]);
			if (r == PS_ERR_NOT_FOUND)
				continue;
			if (!r)
				r = rec_thr_add(s, p, tids[i], THR_ATTACHED,
						&t);
			if (r) {
				free(tids);
				return r;
			}
			ptrace(PTRACE_INTERRUPT, tids[i], 0, 0);
			changed = 1;
		}
		free(tids);
	}
	return rec_triggers_resolve(s, p, 1);
}

struct rec_thr *rec_thr_adopt(struct rec_session *s, pid_t tid)
{
	pid_t tgid = trc_tgid(tid);
	struct rec_proc *p = tgid > 0 ? rec_proc_find(s, tgid) : NULL;
	struct rec_thr *t;

	if (!p) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return NULL;
	}
	if (rec_thr_add(s, p, tid, THR_NEW, &t))
		return NULL;
	return t;
}

void rec_wait_target(struct rec_result *res)
{
	int st;

	if (res->exited)
		return;
	while (waitpid(res->pid, &st, 0) < 0) {
		if (errno != EINTR || rec_stop_flag)
			return;
	}
	if (WIFEXITED(st)) {
		res->exited = 1;
		res->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->killed_by = WTERMSIG(st);
		res->core_dumped = WCOREDUMP(st) != 0;
	}
}

/* SPDX-License-Identifier: MIT */
/* Following a process's threads with ptrace, for the step and intel-pt
 * backends (follow.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "ptscope/error.h"
#include "src/record/ptrace/follow.h"
#include "src/record/ptrace/tracee.h"

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

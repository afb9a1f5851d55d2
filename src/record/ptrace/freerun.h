/* SPDX-License-Identifier: MIT */
/* The control loop of the backends whose threads run free (intel-pt,
 * sample), prefix rec_freerun_: ptrace reports only clone, fork, exec,
 * exit and signals (it never single-steps), so between those the program
 * runs at full speed while the loop sleeps in the backend's service call.
 * The process tree is followed (unless rec_options.no_follow): fork and vfork
 * children join the core's tree (rec_proc_add_child), an exec starts a
 * new image (rec_proc_exec).
 *
 * The loop starts or seizes the target, tells the backend of every
 * thread to start and end, of a fatal signal before it is delivered (the
 * crash mark and snapshot come first, then the signal does its work as
 * ptscope lets go), takes the final snapshot and detaches.
 */
#ifndef PTSCOPE_RECORD_PTRACE_FREERUN_H
#define PTSCOPE_RECORD_PTRACE_FREERUN_H

#include <stdint.h>
#include <sys/types.h>

#include "src/record/core/core.h"

struct rec_freerun_ops {
	/* Start recording stopped thread @t.  PS_ERR_NOT_FOUND: it is gone
	 * (ignored); PS_ERR_LIMIT on a thread other than the main one: it
	 * runs untraced (a notice says so). */
	int (*thread_start)(struct rec_session *s, struct rec_thr *t);
	/* @t exits, execs or is let go: stop recording it (what it left in
	 * its buffer stays for the snapshot). */
	void (*thread_end)(struct rec_session *s, struct rec_thr *t);
	/* @t's id is gone but its events live on in another task: a thread
	 * other than the main one ran exec, and the kernel gave it the main
	 * thread's id (de_thread) with its events.  Let go of them (keeping
	 * what they recorded of the old image).  NULL: thread_end. */
	void (*thread_retire)(struct rec_session *s, struct rec_thr *t);
	/* @t stopped for fatal signal @sig (fault address @addr when
	 * @has_addr) at @ip: mark it and set s->stop_reason = "signal",
	 * t->inject = @sig. */
	int (*crash)(struct rec_session *s, struct rec_thr *t, int sig,
		     uint64_t addr, int has_addr, uint64_t ip);
	/* Wait up to @timeout_ms for the backend's fds or @wake_fd (readable
	 * when a thread stopped: the loop empties it), then handle what came
	 * (trigger hits, kernel events).  Returns 0 or PS_ERR_*. */
	int (*service)(struct rec_session *s, int wake_fd, int timeout_ms);
	/* The longest wait between two looks at the threads (0: 100 ms). */
	int service_ms;
};

/* What a crash does on a free-running backend once the thread's
 * recording is stopped: a signal mark at @ip (with the fault address when
 * @has_addr) and the signal to deliver (t->inject).  A crash of the
 * command's own process fills the result's fault fields and ends the
 * recording (s->stop_reason = "signal"); one of another process of its
 * tree is a snapshot as for a trigger hit — the end of recording, or with
 * --multi-snapshot a snapshot now and recording goes on — and leaves the
 * command's status alone.  Returns 0 or PS_ERR_*. */
int rec_freerun_crash_mark(struct rec_session *s, struct rec_thr *t, int sig,
			   uint64_t addr, int has_addr, uint64_t ip);

/* Start @argv (past the dynamic loader unless --trace-loader) and record
 * it until it ends or something stops recording; the last snapshot is
 * taken.  Returns 0 or PS_ERR_*. */
int rec_freerun_run(struct rec_session *s, const struct rec_freerun_ops *ops,
		    char *const argv[]);

/* The same for running processes @pids: seize their threads, record,
 * detach (they go on as before). */
int rec_freerun_attach(struct rec_session *s, const struct rec_freerun_ops *ops,
		       const pid_t *pids, size_t n);

#endif /* PTSCOPE_RECORD_PTRACE_FREERUN_H */

/* SPDX-License-Identifier: MIT */
/* The control loop of the free-running backends (freerun.h): threads
 * run free under ptrace, which only reports clone, exec, exit and
 * signals; between those the loop sleeps in the backend's service call
 * (poll(2) on its perf fds) and a SIGCHLD pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/core/core.h"
#include "src/record/ptrace/follow.h"
#include "src/record/ptrace/freerun.h"
#include "src/record/ptrace/tracee.h"

/* The longest sleep between two looks at rec_stop_flag. */
#define SERVICE_MS 100

static int sigchld_w = -1;

/* The running loop's backend and SIGCHLD pipe (one session at a time). */
static const struct rec_freerun_ops *ops;
static int wake[2] = {-1, -1};
/* ptrace options of every thread when the process tree is followed
 * (fork and vfork children too), else 0: the seize options stay. */
static unsigned long tree_opts;

static void on_sigchld(int sig)
{
	int e = errno;

	(void)sig;
	if (sigchld_w >= 0 && write(sigchld_w, "c", 1) < 0)
		(void)0;
	errno = e;
}

int rec_freerun_crash_mark(struct rec_session *s, struct rec_thr *t, int sig,
			   uint64_t addr, int has_addr, uint64_t ip)
{
	/* going on, the process gets its signal when it is continued */
	int r = rec_crash_mark(s, t, rec_clock_ns(), ip, sig, addr, has_addr);

	return r < 0 ? r : 0;
}

static void cont(struct rec_thr *t, int sig)
{
	t->state = THR_RUNNING;
	ptrace(PTRACE_CONT, t->tid, 0, sig);
}

static int start(struct rec_session *s, struct rec_thr *t)
{
	int r;

	trc_ip(t->tid, &t->ip);
	r = ops->thread_start(s, t);
	if (r == PS_ERR_NOT_FOUND)
		return 0; /* gone before we got to it */
	if (r == PS_ERR_LIMIT && t->tid != t->proc->pid) {
		/* Out of locked memory or fds for one more thread: trace the
		 * others rather than give up on everything. */
		rec_notice(s, "thread %d runs untraced: %s", (int)t->tid,
			   ps_err_message(r));
		return 0;
	}
	return r;
}

/* Follow the children @t creates as well (children inherit it). */
static void follow_children(struct rec_thr *t)
{
	if (tree_opts)
		ptrace(PTRACE_SETOPTIONS, t->tid, 0, tree_opts);
}

/* Process @pid, a child of @parent, joins the session; its thread is
 * started at its first stop. */
static int add_child(struct rec_session *s, struct rec_proc *parent, pid_t pid)
{
	struct rec_proc *cp;
	struct rec_thr *nt;
	int r = rec_proc_add_child(s, parent, pid, &cp);

	if (r == PS_ERR_NOT_FOUND)
		return 0; /* gone already */
	return r ? r : rec_thr_add(s, cp, pid, THR_NEW, &nt);
}

static int on_fork(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	int r = 0;

	if (tree_opts && !ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) && msg &&
	    !rec_thr_find(s, (pid_t)msg))
		r = add_child(s, t->proc, (pid_t)msg);
	cont(t, 0);
	return r;
}

/* A stop of a thread not known yet: a child whose first stop came before
 * its parent's fork event joins as a child; others as rec_thr_adopt. */
static struct rec_thr *unknown_thread(struct rec_session *s, pid_t tid)
{
	struct rec_proc *parent;

	if (tree_opts && trc_tgid(tid) == tid && !rec_proc_find(s, tid) &&
	    (parent = rec_proc_find(s, trc_ppid(tid))) &&
	    !add_child(s, parent, tid))
		return rec_thr_find(s, tid);
	return rec_thr_adopt(s, tid);
}

static int on_first_stop(struct rec_session *s, struct rec_thr *t)
{
	int r;

	follow_children(t);
	t->state = THR_STOPPED;
	rec_read_comm(t->proc->pid, t->tid, t->comm, sizeof(t->comm));
	r = start(s, t);
	if (r)
		return r;
	cont(t, 0);
	return 0;
}

static int on_signal(struct rec_session *s, struct rec_thr *t, int sig)
{
	uint64_t addr = 0, ip = 0;
	int code, has_addr, r;

	if (!trc_signal_is_fatal(t->proc->pid, sig)) {
		cont(t, sig);
		return 0;
	}
	/* It would die now: stop its PT here, mark, snapshot, then let the
	 * signal do its work when we detach. */
	t->state = THR_STOPPED;
	trc_siginfo(t->tid, &addr, &code);
	trc_ip(t->tid, &ip);
	t->ip = ip;
	has_addr =
	    sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
	r = ops->crash(s, t, sig, addr, has_addr, ip);
	if (!r && !s->stop_reason) {
		/* Recording goes on (a child's crash, --multi-snapshot):
		 * the signal does its work now. */
		cont(t, t->inject);
		t->inject = 0;
	}
	return r;
}

/* An exec by thread @former_tid of @t's process, reported on @t: the
 * kernel gave the exec'ing task the main thread's id (de_thread) and its
 * perf events went with it, so the old thread is retired with them — a
 * new intel_pt event on the main id would find the task taken (EBUSY:
 * the PMU is exclusive).  The kernel reports no exit for that old id. */
static void retire_exec_thread(struct rec_session *s, struct rec_thr *t,
			       pid_t former_tid)
{
	struct rec_thr *x = rec_thr_find(s, former_tid);

	if (!x || x == t || x->state == THR_GONE)
		return;
	if (ops->thread_retire)
		ops->thread_retire(s, x);
	else
		ops->thread_end(s, x);
	rec_thr_set_gone(s, x);
}

static int on_exec(struct rec_session *s, struct rec_thr *t)
{
	struct rec_proc *p = t->proc;
	unsigned long former = 0;
	int r;

	if (!ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) && former &&
	    (pid_t)former != t->tid)
		retire_exec_thread(s, t, (pid_t)former);
	/* Whatever the main thread's id was doing (it may have reported
	 * its exit in de_thread), it is now the exec'ing task, stopped. */
	t->state = THR_STOPPED;
	/* The old program's code is gone: its recording ends here (the
	 * core keeps what the engine had of it, with its modules, as an
	 * earlier image), and the new one is recorded from its start. */
	ops->thread_end(s, t);
	p->final_checked = 0;
	r = rec_proc_exec(s, p, t, rec_clock_ns(), NULL);
	if (!r)
		r = start(s, t);
	if (r)
		return r;
	cont(t, 0);
	return 0;
}

static int on_exit_event(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	char text[64];
	int st, r;

	ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg);
	st = (int)msg;
	rec_read_comm(t->proc->pid, t->tid, t->comm, sizeof(t->comm));
	ops->thread_end(s, t);
	if (t->tid == t->proc->pid) {
		if (WIFSIGNALED(st))
			snprintf(text, sizeof(text), "killed by %s",
				 ps_signame(WTERMSIG(st)));
		else
			snprintf(text, sizeof(text), "exit status %d",
				 WEXITSTATUS(st));
		r = rec_mark_add(s, REC_MARK_EXIT, t, rec_clock_ns(), t->ip,
				 (uint64_t)st, text);
		if (r)
			return r;
	}
	t->state = THR_EXITING;
	ptrace(PTRACE_CONT, t->tid, 0, 0);
	return 0;
}

static void on_gone(struct rec_session *s, struct rec_thr *t,
		    enum trc_stop kind, int code)
{
	ops->thread_end(s, t);
	rec_thr_ended(s, t, kind == TRC_EXITED, code);
}

/* A PTRACE_EVENT_STOP: with a stopping signal it is a group stop (SIGSTOP,
 * Ctrl-Z of the target): PTRACE_LISTEN keeps it stopped as it would be
 * untraced, and SIGCONT later wakes it (reported as another event stop,
 * with SIGTRAP, then SIGCONT's own delivery).  Otherwise (an interrupt,
 * the end of a group stop) it goes on. */
static int on_event_stop(struct rec_thr *t, int sig)
{
	if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	    sig == SIGTTOU) {
		t->state = THR_RUNNING; /* listening: not a stop we resume */
		ptrace(PTRACE_LISTEN, t->tid, 0, 0);
		return 0;
	}
	cont(t, 0);
	return 0;
}

static int on_clone(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	struct rec_thr *nt;
	int r;

	if (!ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) && msg &&
	    !rec_thr_find(s, (pid_t)msg)) {
		r = rec_thr_add(s, t->proc, (pid_t)msg, THR_NEW, &nt);
		if (r)
			return r;
	}
	cont(t, 0);
	return 0;
}

static int handle(struct rec_session *s, pid_t tid, int status)
{
	struct rec_thr *t = rec_thr_find(s, tid);
	int fresh, sig;
	enum trc_stop kind = trc_classify(status, &sig);

	if (!t) {
		if (kind == TRC_EXITED || kind == TRC_KILLED)
			return 0;
		t = unknown_thread(s, tid);
		if (!t)
			return 0;
	}
	fresh = t->state == THR_NEW || t->state == THR_ATTACHED;
	switch (kind) {
	case TRC_EXITED:
	case TRC_KILLED:
		on_gone(s, t, kind, sig);
		return 0;
	case TRC_EVSTOP:
		if (fresh)
			return on_first_stop(s, t);
		return on_event_stop(t, sig);
	case TRC_STEP: /* a real SIGTRAP: nothing single-steps here */
	case TRC_SIGNAL:
		if (fresh && sig == SIGSTOP)
			return on_first_stop(s, t);
		return on_signal(s, t, sig);
	case TRC_CLONE:
		return on_clone(s, t);
	case TRC_EXEC:
		return on_exec(s, t);
	case TRC_EXIT:
		return on_exit_event(s, t);
	case TRC_FORK:
		return on_fork(s, t);
	case TRC_OTHER:
		cont(t, 0);
		return 0;
	}
	return 0;
}

/* Wait for a thread we asked to stop; returns the signal to deliver when
 * detaching it. */
static int wait_stopped(struct rec_session *s, struct rec_thr *t)
{
	int sig = rec_wait_stopped(s, t, on_gone, 0);

	if (sig < 0) {
		on_gone(s, t, TRC_EXITED, 0);
		sig = 0;
	}
	return sig;
}

/* Let every thread go, untraced; a crashing thread gets its signal. */
static void detach_all(struct rec_session *s)
{
	int again = 1;

	while (again) {
		again = 0;
		for (size_t i = 0; i < s->nthrs; i++) {
			struct rec_thr *t = s->thrs[i];
			int sig = t->inject > 0 ? t->inject : 0;

			if (t->state == THR_GONE)
				continue;
			ops->thread_end(s, t);
			if (t->state == THR_EXITING) {
				rec_thr_set_gone(s, t);
				continue;
			}
			if (t->state != THR_STOPPED) {
				ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
				sig = wait_stopped(s, t);
				if (t->state == THR_GONE)
					continue;
				again = 1;
			}
			ptrace(PTRACE_DETACH, t->tid, 0, sig);
			rec_thr_set_gone(s, t);
		}
	}
	for (size_t i = 0; i < s->nprocs; i++)
		s->procs[i]->gone = 1;
	s->res->detached = 1;
}

struct saved_chld {
	struct sigaction sa;
	int ok;
};

static int pipe_open(struct saved_chld *sv)
{
	struct sigaction sa;

	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK))
		return ps_err_detail(PS_ERR_IO, "pipe: %s", strerror(errno));
	sigchld_w = wake[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	/* No SA_NOCLDSTOP: ptrace stops must wake the loop too. */
	sigaction(SIGCHLD, &sa, &sv->sa);
	sv->ok = 1;
	return 0;
}

static void pipe_close(struct saved_chld *sv)
{
	if (sv->ok)
		sigaction(SIGCHLD, &sv->sa, NULL);
	sigchld_w = -1;
	for (int i = 0; i < 2; i++) {
		if (wake[i] >= 0)
			close(wake[i]);
		wake[i] = -1;
	}
}

/* The backend's wait, then the SIGCHLD pipe emptied. */
static int service(struct rec_session *s, int timeout_ms)
{
	char drain[64];
	int r = ops->service(s, wake[0], timeout_ms);

	while (wake[0] >= 0 && read(wake[0], drain, sizeof(drain)) > 0)
		;
	return r;
}

static int loop(struct rec_session *s)
{
	int st, r;

	while (s->nlive > 0 && !s->stop_reason) {
		pid_t tid;

		if (rec_stop_flag) {
			s->stop_reason =
			    rec_stop_flag == 2 ? "duration" : "interrupt";
			break;
		}
		while (!s->stop_reason &&
		       (tid = waitpid(-1, &st, __WALL | WNOHANG)) > 0) {
			r = handle(s, tid, st);
			if (r)
				return r;
		}
		if (s->stop_reason || s->nlive == 0 || rec_roots_gone(s))
			break;
		r = service(s, ops->service_ms ? ops->service_ms : SERVICE_MS);
		if (r)
			return r;
	}
	return 0;
}

/* The loop, the final snapshot and the detach, for run and attach. */
static int main_loop(struct rec_session *s)
{
	struct rec_saved_timer tv;
	struct saved_chld sv = {0};
	uint64_t t0 = rec_clock_ns();
	int r;

	rec_duration_arm(s->o, &tv);
	r = pipe_open(&sv);
	if (!r)
		r = loop(s);
	s->res->seconds = (double)(rec_clock_ns() - t0) / 1e9;
	rec_duration_disarm(s->o, &tv);
	/* Breakpoint hits and sideband that came in with the last stop. */
	if (!r && !s->stop_reason)
		r = service(s, 0);
	if (!r)
		r = rec_snapshot_final(s);
	if (s->nlive > 0)
		detach_all(s);
	pipe_close(&sv);
	return r;
}

int rec_freerun_run(struct rec_session *s, const struct rec_freerun_ops *o,
		    char *const argv[])
{
	struct rec_result *res = s->res;
	struct rec_proc *p;
	struct rec_thr *t = NULL;
	pid_t pid;
	int r;

	ops = o;
	tree_opts = rec_tree_options(s, 1);
	r = rec_spawn_command(s, argv, &pid);
	if (r)
		return r;
	r = rec_proc_add(s, pid, &p);
	if (!r)
		r = rec_thr_add(s, p, pid, THR_STOPPED, &t);
	if (!r)
		r = rec_triggers_resolve(s, p, !s->o->trace_loader);
	if (!r)
		r = start(s, t);
	if (r)
		goto kill;
	follow_children(t);
	cont(t, 0);
	r = main_loop(s);
	if (r && !res->detached)
		detach_all(s);
	rec_stop_flag = 0;
	rec_wait_target(res);
	return r;
kill:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, __WALL);
	return r;
}

int rec_freerun_attach(struct rec_session *s, const struct rec_freerun_ops *o,
		       const pid_t *pids, size_t n)
{
	int r = 0;

	ops = o;
	tree_opts = rec_tree_options(s, 0);
	if (n)
		s->res->pid = pids[0];
	for (size_t i = 0; i < n && !r; i++) {
		struct rec_proc *p;

		r = trc_check_access(pids[i]);
		if (!r)
			r = rec_proc_add(s, pids[i], &p);
		if (!r)
			r = rec_seize_threads(s, p);
	}
	if (!r)
		r = main_loop(s);
	if (r && !s->res->detached)
		detach_all(s);
	return r;
}

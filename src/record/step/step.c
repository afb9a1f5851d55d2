/* SPDX-License-Identifier: MIT */
/* The single-step backend's control loop: ptrace events of every traced
 * thread → step hooks (step.h), trigger checks, marks and snapshots.
 *
 * Threads run concurrently: the loop resumes each thread as soon as its
 * stop is handled and waits for whichever stops next, so a thread blocked
 * in a system call (futex, read) never holds the others back.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/kevents/kevents.h"
#include "src/record/core/core.h"
#include "src/record/step/step_hooks.h"
#include "src/record/step/step_stops.h"
#include "src/record/ptrace/follow.h"
#include "src/record/ptrace/tracee.h"

static const struct step_hooks *const H = &step_emu_hooks;
/* Wait for a thread we stopped asking to stop; leave it in a ptrace stop
 * (or gone).  Returns the signal to deliver when detaching it. */
static int wait_stopped(struct rec_session *s, struct rec_thr *t)
{
	int sig = rec_wait_stopped(s, t, step_on_gone, 1);

	if (sig < 0) {
		step_thr_gone(s, t);
		sig = 0;
	}
	return sig;
}

/* Let every thread go, untraced.  @t's pending signal (a crash) is
 * delivered as it is released. */
static void detach_all(struct rec_session *s)
{
	int again = 1, stopped_only = 1;

	/* The threads in a ptrace stop go first: a running one may be
	 * unable to stop until one of them moves (a vfork parent waits in
	 * the kernel for its child).  Then the others, newest first: a vfork
	 * child may sit in a stop not yet reaped (a single step) while its
	 * parent cannot stop before the child goes on, so waiting for the
	 * parent first would wait for ever. */
	while (again || stopped_only) {
		again = 0;
		for (size_t k = s->nthrs; k-- > 0;) {
			struct rec_thr *t = s->thrs[k];
			int sig = t->inject > 0 ? t->inject : 0;

			if (t->state == THR_GONE)
				continue;
			if (stopped_only && t->state != THR_STOPPED)
				continue;
			step_thr_stop_tracing(s, t);
			rec_triggers_disarm(s, t);
			if (t->state == THR_EXITING) {
				/* Past its exit event: it is on its way out. */
				rec_thr_set_gone(s, t);
				continue;
			}
			if (t->state != THR_STOPPED) {
				ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
				sig = wait_stopped(s, t);
				if (t->state == THR_GONE)
					continue;
				again = 1; /* a clone may have added one */
			}
			ptrace(PTRACE_DETACH, t->tid, 0, sig);
			rec_thr_set_gone(s, t);
		}
		if (stopped_only) {
			stopped_only = 0;
			again = 1;
		}
	}
	for (size_t i = 0; i < s->nprocs; i++)
		s->procs[i]->gone = 1;
	if (s->res)
		s->res->detached = 1;
}

/* waitpid for at most VCLK_GRACE_NS: the tid, 0 if nothing stopped, or
 * -1 with errno. */
static pid_t wait_grace(int *st)
{
	uint64_t end = rec_clock_ns() + VCLK_GRACE_NS;
	pid_t tid;

	do {
		tid = waitpid(-1, st, __WALL | WNOHANG);
		if (tid)
			return tid;
		sched_yield();
	} while (rec_clock_ns() < end);
	return 0;
}

/* How long parked threads wait for a thread that counts as running. */
#define STALL_NS 20000000ull

/* waitpid for at most @ns, sleeping between looks so the traced threads
 * keep the CPU: the tid, 0 if nothing stopped, or -1 with errno. */
static pid_t wait_upto(int *st, uint64_t ns)
{
	uint64_t end = rec_clock_ns() + ns;
	struct timespec nap = {0, 20000};
	pid_t tid;

	do {
		tid = waitpid(-1, st, __WALL | WNOHANG);
		if (tid)
			return tid;
		nanosleep(&nap, NULL);
	} while (rec_clock_ns() < end);
	return 0;
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
		if (s->vc.n_parked && s->vc.n_parked < s->vc.n_user) {
			/* Parked threads wait for the others to catch up, but
			 * not on a wait that may never end: a thread that
			 * counts as running may be blocked for good (a vfork
			 * parent waits in the kernel for its child, which may
			 * be the parked one). */
			tid = wait_upto(&st, STALL_NS);
			if (tid == 0) {
				r = step_unpark(s);
				if (r)
					return r;
				continue;
			}
		} else if (s->vc.n_parked) {
			/* Only parked threads could step: give the threads
			 * in system calls a moment first (vclk_ in core.h). */
			tid = wait_grace(&st);
			if (tid == 0) {
				r = step_unpark(s);
				if (r)
					return r;
				continue;
			}
		} else if (!s->vc.n_user) {
			/* Only system calls run: time them (vclk_ in core.h).
			 */
			uint64_t t0 = rec_clock_ns();

			tid = waitpid(-1, &st, __WALL);
			vclk_waited(&s->vc, rec_clock_ns() - t0);
		} else {
			tid = waitpid(-1, &st, __WALL);
		}
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			return ps_err_detail(PS_ERR_TARGET, "waitpid: %s",
					     strerror(errno));
		}
		r = step_handle(s, tid, st);
		if (r)
			return r;
		if (rec_roots_gone(s))
			break;
		/* With no unparked thread in user code left, the grace
		 * wait above decides. */
		if (s->vc.n_parked && s->vc.recheck &&
		    s->vc.n_user > s->vc.n_parked) {
			r = step_unpark(s);
			if (r)
				return r;
		}
	}
	return 0;
}

/* The loop, then the final snapshot and the detach shared by run and
 * attach. */
static int step_main(struct rec_session *s)
{
	struct rec_saved_timer sv;
	uint64_t t0 = rec_clock_ns();
	int r;

	rec_duration_arm(s->o, &sv);
	r = loop(s);
	s->res->seconds = (double)(rec_clock_ns() - t0) / 1e9;
	rec_duration_disarm(s->o, &sv);
	if (!r)
		r = rec_snapshot_final(s);
	if (s->nlive > 0)
		detach_all(s);
	return r;
}

static int step_open(struct rec_session *s)
{
	vclk_init(&s->vc);
	return H->open(s, &s->bk);
}

static int step_run(struct rec_session *s, char *const argv[])
{
	const struct rec_options *o = s->o;
	struct rec_result *res = s->res;
	struct rec_proc *p;
	struct rec_thr *t = NULL;
	pid_t pid;
	int r;

	r = step_open(s);
	if (r)
		return r;
	step_tree_opts = rec_tree_options(s, 1);
	r = rec_spawn_command(s, argv, &pid);
	if (r)
		return r;
	r = step_proc_add(s, pid, &p);
	if (!r)
		r = rec_thr_add(s, p, pid, THR_STOPPED, &t);
	if (!r)
		r = rec_triggers_resolve(s, p, 0);
	if (!r && !o->trace_loader)
		r = rec_triggers_resolve(s, p, 1);
	if (!r)
		r = step_thr_start(s, t, s->start_ns);
	if (t)
		t->in_exec = o->trace_loader;
	if (!r)
		r = step_resume(s, t, 0);
	if (r) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		return r;
	}
	r = step_main(s);
	if (r && !res->detached) {
		/* Something failed while tracing: do not leave the command
		 * half-traced. */
		detach_all(s);
	}
	rec_stop_flag = 0;
	rec_wait_target(res);
	return r;
}

static int step_attach(struct rec_session *s, const pid_t *pids, size_t n)
{
	int r;

	r = step_open(s);
	if (r)
		return r;
	step_tree_opts = rec_tree_options(s, 0);
	if (n)
		s->res->pid = pids[0];
	for (size_t i = 0; i < n && !r; i++) {
		struct rec_proc *p;

		r = trc_check_access(pids[i]);
		if (!r)
			r = step_proc_add(s, pids[i], &p);
		if (!r)
			r = rec_seize_threads(s, p);
	}
	if (r) {
		detach_all(s);
		return r;
	}
	r = step_main(s);
	if (r && !s->res->detached)
		detach_all(s);
	return r;
}

static void step_fini(struct rec_session *s)
{
	for (size_t i = 0; i < s->nthrs; i++)
		H->thread_free(s->bk, s->thrs[i]);
	for (size_t i = 0; i < s->nprocs; i++)
		H->proc_free(s->bk, s->procs[i]);
	if (s->bk)
		H->close(s->bk);
	s->bk = NULL;
}

static int step_snapshot(struct rec_session *s, const struct rec_thr *t,
			 struct rec_pt_chunk **chunks, size_t *n)
{
	uint8_t *buf;
	size_t len;
	int r = H->snapshot(s->bk, t, &buf, &len);

	return r ? r : rec_pt_one_chunk(t, buf, len, chunks, n);
}

static uint64_t step_now(struct rec_session *s, const struct rec_thr *t)
{
	return H->now(s->bk, t);
}

const struct rec_backend rec_backend_step = {
    .name = "step",
    .emulated = 1,
    .marks_at_step = 1,
    .hw_breakpoints = 1,
    .kernel_events = 1,
    .run = step_run,
    .attach = step_attach,
    .fini = step_fini,
    .snapshot = step_snapshot,
    .now = step_now,
};

/* SPDX-License-Identifier: MIT */
/* The single-step backend's answer to each ptrace stop of a traced thread
 * (step_handle): a completed step, a signal, a crash, clone, exec and exit,
 * and the thread life-cycle helpers the control loop in step.c shares.
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

unsigned long step_tree_opts;

/* A process joins the session with its emulator state. */
int step_proc_add(struct rec_session *s, pid_t pid, struct rec_proc **out)
{
	int r = rec_proc_add(s, pid, out);

	if (r)
		return r;
	return H->proc_new(s->bk, *out);
}

/* Start tracing @t at its current ip. */
int step_thr_start(struct rec_session *s, struct rec_thr *t, uint64_t now)
{
	int r;

	r = trc_ip(t->tid, &t->ip);
	if (r)
		return r;
	r = H->thread_start(s->bk, t, t->ip, now);
	if (r)
		return r;
	t->traced = 1;
	if (step_tree_opts)
		ptrace(PTRACE_SETOPTIONS, t->tid, 0, step_tree_opts);
	return rec_triggers_arm(s, t);
}

int step_resume(struct rec_session *s, struct rec_thr *t, int sig)
{
	int r;

	t->state = THR_RUNNING;
	t->real_t0 = rec_clock_ns();
	if (t->traced && !t->in_sys)
		vclk_resume(s, t, t->real_t0,
			    !t->entering_handler &&
				H->at_syscall(s->bk, t) == 1);
	r = H->resume(s->bk, t, sig);
	if (r == PS_ERR_TARGET) {
		/* Killed under us (SIGKILL from elsewhere): its exit status
		 * arrives through waitpid. */
		return 0;
	}
	return r;
}

/* Resume with a plain PTRACE_CONT: a thread that only needs to finish
 * (past its exit event) is not stepped. */
static void cont(struct rec_thr *t, int sig)
{
	t->state = THR_EXITING;
	ptrace(PTRACE_CONT, t->tid, 0, sig);
}

void step_thr_stop_tracing(struct rec_session *s, struct rec_thr *t)
{
	vclk_leave(s, t);
	if (!t->traced)
		return;
	H->thread_stop(s->bk, t);
	t->traced = 0;
	if (s->res)
		s->res->instructions += H->instructions(s->bk, t);
}

void step_thr_gone(struct rec_session *s, struct rec_thr *t)
{
	step_thr_stop_tracing(s, t);
	rec_triggers_disarm(s, t);
	rec_thr_set_gone(s, t);
}

/* After a system call: new code may be mapped (dlopen) or unmapped. */
static int after_syscall(struct rec_session *s, struct rec_thr *t)
{
	uint64_t nr, a0, a1;
	int r;

	if (trc_reg(t->tid, offsetof(struct user_regs_struct, orig_rax), &nr))
		return 0;
	if (nr != SYS_mmap && nr != SYS_munmap && nr != SYS_mprotect &&
	    nr != SYS_mremap)
		return 0;
	if (nr != SYS_mmap &&
	    !trc_reg(t->tid, offsetof(struct user_regs_struct, rdi), &a0) &&
	    !trc_reg(t->tid, offsetof(struct user_regs_struct, rsi), &a1))
		H->code_changed(s->bk, t->proc, a0, a1);
	r = rec_proc_refresh_maps(s, t->proc);
	if (r)
		return r == PS_ERR_NOT_FOUND ? 0 : r;
	if (s->triggers_pending)
		return rec_triggers_resolve(s, t->proc, 0);
	return 0;
}

/* @t stopped for a signal that will end the process: mark it, snapshot
 * while everything is intact, then let the signal do its work. */
static int crash(struct rec_session *s, struct rec_thr *t, int sig)
{
	uint64_t addr = 0, now;
	int code, has_addr, r;

	trc_siginfo(t->tid, &addr, &code);
	has_addr =
	    sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
	now = t->traced ? H->now(s->bk, t) : t->proc->now;
	step_thr_stop_tracing(s, t);
	r = rec_crash_mark(s, t, now, t->ip, sig, addr, has_addr);
	if (r == 1) {
		/* another process of the tree, and recording goes on: it
		 * dies of its signal now */
		rec_triggers_disarm(s, t);
		t->inject = 0;
		cont(t, sig);
		r = 0;
	}
	return r;
}

/* @t's system call returned: how much trace time it took (vclk_ in core.h). */
static void syscall_time(struct rec_session *s, struct rec_thr *t)
{
	uint64_t real = rec_clock_ns(), nr = 0, ret = 0;
	int timed = 0;

	if (!trc_reg(t->tid, offsetof(struct user_regs_struct, orig_rax),
		     &nr) &&
	    !trc_reg(t->tid, offsetof(struct user_regs_struct, rax), &ret))
		timed = vclk_timed_out(nr, (int64_t)ret);
	vclk_syscall_end(s, t, real, t->step_ns, timed);
}

/* Resume the parked threads that are no longer ahead. */
int step_unpark(struct rec_session *s)
{
	s->vc.recheck = 0;
	vclk_floor(s);
	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *x = s->thrs[i];
		int r;

		if (!x->parked || !vclk_may_run(s, H->now(s->bk, x)))
			continue;
		x->parked = 0;
		s->vc.n_parked--;
		r = step_resume(s, x, 0);
		if (r)
			return r;
	}
	return 0;
}

static int on_step(struct rec_session *s, struct rec_thr *t)
{
	uint64_t next;
	int r;

	if (trc_ip(t->tid, &next))
		return 0; /* gone; waitpid reports it */
	if (t->state == THR_WARM) {
		t->state = THR_STOPPED;
		r = step_thr_start(s, t, t->proc->now);
		return r ? r : step_resume(s, t, 0);
	}
	if (t->in_exec) {
		t->in_exec = 0;
		if (next == t->ip)
			return step_resume(s, t, 0);
	}
	t->step_ns = H->now(s->bk, t);
	vclk_stepped(&s->vc, t);
	if (t->in_sys) {
		syscall_time(s, t);
	} else if (++t->sample >= VCLK_SAMPLE_EVERY) {
		t->sample = 0;
		vclk_sample(&s->vc, rec_clock_ns() - t->real_t0);
	}
	if (t->entering_handler) {
		t->entering_handler = 0;
		r = H->signal_entered(s->bk, t, next);
	} else {
		r = H->stepped(s->bk, t, next);
	}
	if (r < 0)
		return r;
	t->ip = next;
	t->proc->now = H->now(s->bk, t);
	if (s->kev)
		rkev_step(s, t, t->step_ns, t->proc->now, r == 1, t->sys_r0,
			  r == 1 ? rec_clock_ns() : 0);
	{
		int lr =
		    rec_triggers_step(s, t, next, t->step_ns, t->proc->now);

		if (lr < 0)
			return lr;
	}
	if (r == 1) {
		r = after_syscall(s, t);
		if (r)
			return r;
	}
	if (t->narmed) {
		r = rec_triggers_check(s, t);
		if (r < 0)
			return r;
	}
	if (s->triggers_pending && !t->proc->final_checked &&
	    t->ip >= t->proc->exe_start && t->ip < t->proc->exe_end) {
		/* The program's own code runs: its libraries are loaded, so
		 * a name that still resolves nowhere does not exist. */
		r = rec_triggers_resolve(s, t->proc, 1);
		if (r)
			return r;
	}
	if (s->stop_reason) {
		t->state = THR_STOPPED;
		return 0;
	}
	if (vclk_ahead(s, t, t->proc->now)) {
		t->state = THR_STOPPED;
		vclk_park(s, t);
		return 0;
	}
	return step_resume(s, t, 0);
}

static int on_signal(struct rec_session *s, struct rec_thr *t, int sig)
{
	if (t->state == THR_WARM) {
		H->resume(s->bk, t, sig);
		return 0;
	}
	if (trc_signal_is_fatal(t->proc->pid, sig)) {
		t->state = THR_STOPPED;
		return crash(s, t, sig);
	}
	t->entering_handler =
	    t->traced && trc_signal_is_caught(t->proc->pid, sig);
	return step_resume(s, t, sig);
}

static int on_first_stop(struct rec_session *s, struct rec_thr *t)
{
	int r;

	rec_read_comm(t->proc->pid, t->tid, t->comm, sizeof(t->comm));
	if (t->state == THR_ATTACHED) {
		/* One untraced step first: if the thread sat in a system
		 * call, the call restarts, and tracing starts after it. */
		t->state = THR_WARM;
		t->real_t0 = rec_clock_ns();
		H->resume(s->bk, t, 0);
		return 0;
	}
	t->state = THR_STOPPED;
	if (t->birth_wait) {
		/* Its clone event is still to come: it starts at its
		 * creator's clock then (on_clone). */
		t->birth_wait = 2;
		return 0;
	}
	r = step_thr_start(s, t, t->born ? t->birth_ns : t->proc->now);
	return r ? r : step_resume(s, t, 0);
}

static int on_exec(struct rec_session *s, struct rec_thr *t)
{
	struct rec_proc *p = t->proc;
	uint64_t now = t->traced ? H->now(s->bk, t) : p->now;
	int r;

	/* The old program's code is gone: its PT ends here (the core keeps
	 * it), and the new one is traced from its first instruction. */
	step_thr_stop_tracing(s, t);
	r = rec_proc_exec(s, p, t, now, NULL);
	H->thread_free(s->bk, t);
	H->proc_free(s->bk, p);
	p->bk = NULL;
	if (!r)
		r = H->proc_new(s->bk, p);
	if (!r)
		r = step_thr_start(s, t, now);
	t->in_exec = 1;
	return r ? r : step_resume(s, t, 0);
}

static int on_exit_event(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	uint64_t now;
	char text[64];
	int st, r;

	ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg);
	st = (int)msg;
	rec_read_comm(t->proc->pid, t->tid, t->comm, sizeof(t->comm));
	now = t->traced ? H->now(s->bk, t) : t->proc->now;
	step_thr_stop_tracing(s, t);
	rec_triggers_disarm(s, t);
	if (t->tid == t->proc->pid) {
		if (WIFSIGNALED(st))
			snprintf(text, sizeof(text), "killed by %s",
				 ps_signame(WTERMSIG(st)));
		else
			snprintf(text, sizeof(text), "exit status %d",
				 WEXITSTATUS(st));
		r = rec_mark_add(s, REC_MARK_EXIT, t, now, t->ip, (uint64_t)st,
				 text);
		if (r)
			return r;
	}
	cont(t, 0);
	return 0;
}

void step_on_gone(struct rec_session *s, struct rec_thr *t, enum trc_stop kind,
		  int code)
{
	step_thr_gone(s, t);
	rec_thr_ended(s, t, kind == TRC_EXITED, code);
}

/* Child process @pid of @parent joins the session with its emulator
 * state and its first thread (started at its first stop).  NULL when it
 * is gone already or children are not followed. */
static struct rec_thr *add_child(struct rec_session *s, struct rec_proc *parent,
				 pid_t pid, int *err)
{
	struct rec_proc *cp;
	struct rec_thr *nt = NULL;
	int r;

	*err = 0;
	if (!step_tree_opts)
		return NULL;
	r = rec_proc_add_child(s, parent, pid, &cp);
	if (r == PS_ERR_NOT_FOUND)
		return NULL;
	if (!r)
		r = H->proc_new(s->bk, cp);
	if (!r)
		r = rec_thr_add(s, cp, pid, THR_NEW, &nt);
	*err = r;
	return r ? NULL : nt;
}

/* A clone, fork or vfork event of @t: the new thread or process starts at
 * its creator's clock (the creating instruction's start: the call's own
 * time is the creator's).  A process that is not followed (--no-follow)
 * was detached by the kernel's rules already: it never was ours. */
static int on_new_task(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	struct rec_thr *nt;
	uint64_t birth;
	pid_t id;
	int r = 0;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) || !msg)
		return step_resume(s, t, 0);
	id = (pid_t)msg;
	birth = t->traced ? H->now(s->bk, t) : t->proc->now;
	nt = rec_thr_find(s, id);
	if (!nt && trc_tgid(id) == id)
		nt = add_child(s, t->proc, id, &r);
	else if (!nt)
		r = rec_thr_add(s, t->proc, id, THR_NEW, &nt);
	if (r)
		return r;
	if (!nt)
		return step_resume(s, t, 0);
	if (!nt->born) {
		nt->born = 1;
		nt->birth_ns = birth;
	}
	if (nt->birth_wait == 2) {
		/* Its first stop came first and it waited for this. */
		nt->birth_wait = 0;
		r = step_thr_start(s, nt, birth);
		if (!r)
			r = step_resume(s, nt, 0);
		if (r)
			return r;
	}
	nt->birth_wait = 0;
	return step_resume(s, t, 0);
}

/* A stop of a task not known yet: a thread or child process whose first
 * stop came before its creator's clone or fork event. */
static struct rec_thr *unknown_task(struct rec_session *s, pid_t tid)
{
	struct rec_proc *parent;
	struct rec_thr *t;
	int err;

	if (step_tree_opts && trc_tgid(tid) == tid && !rec_proc_find(s, tid) &&
	    (parent = rec_proc_find(s, trc_ppid(tid))))
		t = add_child(s, parent, tid, &err);
	else
		t = rec_thr_adopt(s, tid);
	if (t)
		t->birth_wait = 1;
	return t;
}

int step_handle(struct rec_session *s, pid_t tid, int status)
{
	struct rec_thr *t = rec_thr_find(s, tid);
	enum trc_stop kind;
	int sig;

	kind = trc_classify(status, &sig);
	if (!t) {
		if (kind == TRC_EXITED || kind == TRC_KILLED)
			return 0;
		t = unknown_task(s, tid);
		if (!t)
			return 0;
	}
	switch (kind) {
	case TRC_EXITED:
	case TRC_KILLED:
		step_on_gone(s, t, kind, sig);
		return 0;
	case TRC_STEP:
		if (t->state == THR_NEW || t->state == THR_ATTACHED)
			return on_first_stop(s, t);
		return on_step(s, t);
	case TRC_EVSTOP:
		if (t->state == THR_NEW || t->state == THR_ATTACHED)
			return on_first_stop(s, t);
		if (t->state == THR_WARM) {
			/* The interrupt landed after the warm-up step. */
			H->resume(s->bk, t, 0);
			return 0;
		}
		return step_resume(s, t, 0);
	case TRC_SIGNAL:
		/* A SIGSTOP that raced with seizing counts as the first
		 * stop. */
		if ((t->state == THR_NEW || t->state == THR_ATTACHED) &&
		    sig == SIGSTOP)
			return on_first_stop(s, t);
		return on_signal(s, t, sig);
	case TRC_CLONE:
	case TRC_FORK:
		return on_new_task(s, t);
	case TRC_EXEC:
		return on_exec(s, t);
	case TRC_EXIT:
		return on_exit_event(s, t);
	case TRC_OTHER:
		return step_resume(s, t, 0);
	}
	return 0;
}

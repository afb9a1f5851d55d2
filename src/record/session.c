/* The recorder's control loop: ptrace events of every traced thread →
 * backend calls, trigger checks, marks and snapshots (see recorder.h).
 *
 * Threads run concurrently: the loop resumes each thread as soon as its
 * stop is handled and waits for whichever stops next, so a thread blocked
 * in a system call (futex, read) never holds the others back.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/bp.h"
#include "src/record/session.h"
#include "src/record/tracee.h"
#include "src/record/vclock.h"

volatile sig_atomic_t rec_stop_flag;

void rec_request_stop(void)
{
	rec_stop_flag = 1;
}

static void on_alarm(int sig)
{
	(void)sig;
	if (!rec_stop_flag)
		rec_stop_flag = 2;
}

uint64_t rec_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void notice(struct rec_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void notice(struct rec_session *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!s->o->notice)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s->o->notice(s->o->ctx, buf);
}

struct rec_thr *rec_thr_find(struct rec_session *s, pid_t tid)
{
	if (s->last && s->last->tid == tid && s->last->state != THR_GONE)
		return s->last;
	/* Newest first: a reused tid belongs to the newest thread. */
	for (size_t i = s->nthrs; i-- > 0;)
		if (s->thrs[i]->tid == tid && s->thrs[i]->state != THR_GONE)
			return s->last = s->thrs[i];
	return NULL;
}

struct rec_proc *rec_proc_find(struct rec_session *s, pid_t pid)
{
	for (size_t i = s->nprocs; i-- > 0;)
		if (s->procs[i]->pid == pid && !s->procs[i]->gone)
			return s->procs[i];
	return NULL;
}

static int grow(void *arrp, size_t n, size_t elem)
{
	void **arr = arrp;
	void *na;

	/* Capacity doubles at powers of two. */
	if (n & (n - 1) || (n && n < 8))
		return 0;
	na = realloc(*arr, (n ? 2 * n : 8) * elem);
	if (!na)
		return PS_ERR_NOMEM;
	*arr = na;
	return 0;
}

int rec_proc_refresh_maps(struct rec_session *s, struct rec_proc *p)
{
	struct mod_list l = {0};
	char exe[4096], link[64];
	ssize_t n;
	int r;

	r = mod_read(p->pid, MOD_EXEC | MOD_FILE, &l);
	if (r)
		return r;
	mod_list_fini(&p->mods);
	p->mods = l;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)p->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		p->exe_start = p->exe_end = 0;
		for (size_t i = 0; i < l.n; i++) {
			if (strcmp(l.maps[i].path, exe))
				continue;
			if (!p->exe_start || l.maps[i].start < p->exe_start)
				p->exe_start = l.maps[i].start;
			if (l.maps[i].end > p->exe_end)
				p->exe_end = l.maps[i].end;
		}
	}
	if (!p->vdso) {
		if (mod_read_vdso(p->pid, &p->vdso, &p->vdso_len,
				  &p->vdso_addr))
			p->vdso = NULL;
	}
	return 0;
}

int rec_proc_add(struct rec_session *s, pid_t pid, struct rec_proc **out)
{
	struct rec_proc *p;
	int r;

	r = grow(&s->procs, s->nprocs, sizeof(*s->procs));
	if (r)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return PS_ERR_NOMEM;
	p->pid = pid;
	p->now = s->start_ns;
	r = rec_proc_refresh_maps(s, p);
	if (!r)
		r = s->ops->proc_new(s->bk, p);
	if (r) {
		mod_list_fini(&p->mods);
		free(p->vdso);
		free(p);
		return r;
	}
	s->procs[s->nprocs++] = p;
	*out = p;
	return 0;
}

int rec_thr_add(struct rec_session *s, struct rec_proc *p, pid_t tid,
		enum rec_thr_state state, struct rec_thr **out)
{
	struct rec_thr *t;
	int r;

	r = grow(&s->thrs, s->nthrs, sizeof(*s->thrs));
	if (r)
		return r;
	t = calloc(1, sizeof(*t));
	if (!t)
		return PS_ERR_NOMEM;
	t->tid = tid;
	t->proc = p;
	t->state = state;
	trc_comm(p->pid, tid, t->comm, sizeof(t->comm));
	s->thrs[s->nthrs++] = t;
	s->nlive++;
	if (s->res)
		s->res->threads++;
	*out = t;
	return 0;
}

int rec_mark_add(struct rec_session *s, enum rec_mark_kind kind,
		 const struct rec_thr *t, uint64_t time_ns, uint64_t address,
		 uint64_t value, const char *text)
{
	struct rec_mark *m;

	if (s->nmarks == s->marks_cap) {
		size_t cap = s->marks_cap ? 2 * s->marks_cap : 16;
		struct rec_mark *nm = realloc(s->marks, cap * sizeof(*nm));

		if (!nm)
			return PS_ERR_NOMEM;
		s->marks = nm;
		s->marks_cap = cap;
	}
	m = &s->marks[s->nmarks];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->pid = t ? (uint64_t)t->proc->pid : 0;
	m->tid = t ? (uint64_t)t->tid : 0;
	m->time_ns = time_ns;
	m->address = address;
	m->value = value;
	m->text = strdup(text ? text : "");
	if (!m->text)
		return PS_ERR_NOMEM;
	s->nmarks++;
	return 0;
}

/* Start tracing @t at its current ip. */
static int thr_start(struct rec_session *s, struct rec_thr *t, uint64_t now)
{
	int r;

	r = trc_ip(t->tid, &t->ip);
	if (r)
		return r;
	r = s->ops->thread_start(s->bk, t, t->ip, now);
	if (r)
		return r;
	t->traced = 1;
	return rec_triggers_arm(s, t);
}

static int resume(struct rec_session *s, struct rec_thr *t, int sig)
{
	int r;

	t->state = THR_RUNNING;
	t->real_t0 = rec_clock_ns();
	if (t->traced && !t->in_sys)
		vclk_resume(s, t, t->real_t0,
			    !t->entering_handler &&
				s->ops->at_syscall(s->bk, t) == 1);
	r = s->ops->resume(s->bk, t, sig);
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

static void thr_stop_tracing(struct rec_session *s, struct rec_thr *t)
{
	vclk_leave(s, t);
	if (!t->traced)
		return;
	s->ops->thread_stop(s->bk, t);
	t->traced = 0;
	if (s->res)
		s->res->instructions += s->ops->instructions(s->bk, t);
}

static void thr_gone(struct rec_session *s, struct rec_thr *t)
{
	thr_stop_tracing(s, t);
	rec_triggers_disarm(t);
	if (t->state != THR_GONE) {
		t->state = THR_GONE;
		s->nlive--;
	}
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
		s->ops->code_changed(s->bk, t->proc, a0, a1);
	r = rec_proc_refresh_maps(s, t->proc);
	if (r)
		return r == PS_ERR_NOT_FOUND ? 0 : r;
	if (s->triggers_pending)
		return rec_triggers_resolve(s, t->proc, 0);
	return 0;
}

static void fault_text(char *buf, size_t size, int sig, uint64_t addr,
		       int has_addr)
{
	if (has_addr)
		snprintf(buf, size, "%s (fault address 0x%llx)",
			 trc_signame(sig), (unsigned long long)addr);
	else
		snprintf(buf, size, "%s", trc_signame(sig));
}

/* @t stopped for a signal that will end the process: mark it, snapshot
 * while everything is intact, then let the signal do its work. */
static int crash(struct rec_session *s, struct rec_thr *t, int sig)
{
	uint64_t addr = 0, now;
	int code, has_addr, r;
	char text[128];

	trc_siginfo(t->tid, &addr, &code);
	has_addr =
	    sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
	now = t->traced ? s->ops->now(s->bk, t) : t->proc->now;
	thr_stop_tracing(s, t);
	fault_text(text, sizeof(text), sig, addr, has_addr);
	r = rec_mark_add(s, REC_MARK_SIGNAL, t, now, t->ip, (uint64_t)sig,
			 text);
	if (r)
		return r;
	if (s->res) {
		s->res->killed_by = sig;
		s->res->fault_addr = addr;
		s->res->fault_ip = t->ip;
		s->res->fault_tid = t->tid;
	}
	t->inject = sig;
	s->stop_reason = "signal";
	return 0;
}

/* @t's system call returned: how much trace time it took (vclock.h). */
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
static int unpark(struct rec_session *s)
{
	s->vc.recheck = 0;
	vclk_floor(s);
	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *x = s->thrs[i];
		int r;

		if (!x->parked || !vclk_may_run(s, s->ops->now(s->bk, x)))
			continue;
		x->parked = 0;
		s->vc.n_parked--;
		r = resume(s, x, 0);
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
		r = thr_start(s, t, t->proc->now);
		return r ? r : resume(s, t, 0);
	}
	if (t->in_exec) {
		t->in_exec = 0;
		if (next == t->ip)
			return resume(s, t, 0);
	}
	t->step_ns = s->ops->now(s->bk, t);
	vclk_stepped(&s->vc, t);
	if (t->in_sys) {
		syscall_time(s, t);
	} else if (++t->sample >= VCLK_SAMPLE_EVERY) {
		t->sample = 0;
		vclk_sample(&s->vc, rec_clock_ns() - t->real_t0);
	}
	if (t->entering_handler) {
		t->entering_handler = 0;
		r = s->ops->signal_entered(s->bk, t, next);
	} else {
		r = s->ops->stepped(s->bk, t, next);
	}
	if (r < 0)
		return r;
	t->ip = next;
	t->proc->now = s->ops->now(s->bk, t);
	if (r == 1) {
		r = after_syscall(s, t);
		if (r)
			return r;
	}
	if (t->nbps) {
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
	return resume(s, t, 0);
}

static int on_signal(struct rec_session *s, struct rec_thr *t, int sig)
{
	if (t->state == THR_WARM) {
		s->ops->resume(s->bk, t, sig);
		return 0;
	}
	if (trc_signal_is_fatal(t->proc->pid, sig)) {
		t->state = THR_STOPPED;
		return crash(s, t, sig);
	}
	t->entering_handler =
	    t->traced && trc_signal_is_caught(t->proc->pid, sig);
	return resume(s, t, sig);
}

static int on_first_stop(struct rec_session *s, struct rec_thr *t)
{
	int r;

	trc_comm(t->proc->pid, t->tid, t->comm, sizeof(t->comm));
	if (t->state == THR_ATTACHED) {
		/* One untraced step first: if the thread sat in a system
		 * call, the call restarts, and tracing starts after it. */
		t->state = THR_WARM;
		t->real_t0 = rec_clock_ns();
		s->ops->resume(s->bk, t, 0);
		return 0;
	}
	t->state = THR_STOPPED;
	if (t->birth_wait) {
		/* Its clone event is still to come: it starts at its
		 * creator's clock then (on_clone). */
		t->birth_wait = 2;
		return 0;
	}
	r = thr_start(s, t, t->born ? t->birth_ns : t->proc->now);
	return r ? r : resume(s, t, 0);
}

static int on_exec(struct rec_session *s, struct rec_thr *t)
{
	struct rec_proc *p = t->proc;
	int r;

	/* The old program's code is gone: trace the new one from here. */
	thr_stop_tracing(s, t);
	s->ops->proc_free(s->bk, p);
	p->bk = NULL;
	rec_triggers_forget(p);
	rec_triggers_disarm(t);
	p->final_checked = 0;
	r = rec_proc_refresh_maps(s, p);
	if (!r)
		r = s->ops->proc_new(s->bk, p);
	if (!r)
		r = thr_start(s, t, p->now);
	if (!r && s->ntrig)
		r = rec_triggers_resolve(s, p, 0);
	t->in_exec = 1;
	return r ? r : resume(s, t, 0);
}

static int on_exit_event(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	uint64_t now;
	char text[64];
	int st, r;

	ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg);
	st = (int)msg;
	trc_comm(t->proc->pid, t->tid, t->comm, sizeof(t->comm));
	now = t->traced ? s->ops->now(s->bk, t) : t->proc->now;
	thr_stop_tracing(s, t);
	rec_triggers_disarm(t);
	if (t->tid == t->proc->pid) {
		if (WIFSIGNALED(st))
			snprintf(text, sizeof(text), "killed by %s",
				 trc_signame(WTERMSIG(st)));
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

static void on_gone(struct rec_session *s, struct rec_thr *t,
		    enum trc_stop kind, int code)
{
	thr_gone(s, t);
	if (t->tid != t->proc->pid)
		return;
	t->proc->gone = 1;
	if (!s->res || t->proc->pid != s->res->pid)
		return;
	if (kind == TRC_EXITED) {
		s->res->exited = 1;
		s->res->exit_code = code;
	} else {
		s->res->killed_by = code;
	}
}

static int on_clone(struct rec_session *s, struct rec_thr *t)
{
	unsigned long msg = 0;
	struct rec_thr *nt;
	uint64_t birth;
	int r;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) || !msg)
		return resume(s, t, 0);
	/* The new thread's time begins at its creator's (the clone
	 * instruction's start: the call's own time is the creator's). */
	birth = t->traced ? s->ops->now(s->bk, t) : t->proc->now;
	nt = rec_thr_find(s, (pid_t)msg);
	if (!nt) {
		r = rec_thr_add(s, t->proc, (pid_t)msg, THR_NEW, &nt);
		if (r)
			return r;
	}
	if (!nt->born) {
		nt->born = 1;
		nt->birth_ns = birth;
	}
	if (nt->birth_wait == 2) {
		/* Its first stop came first and it waited for this. */
		nt->birth_wait = 0;
		r = thr_start(s, nt, birth);
		if (!r)
			r = resume(s, nt, 0);
		if (r)
			return r;
	}
	nt->birth_wait = 0;
	return resume(s, t, 0);
}

/* A stop of a tid we do not know yet: a new thread whose clone event is
 * still to come.  Find its process. */
static struct rec_thr *adopt(struct rec_session *s, pid_t tid)
{
	struct rec_proc *p;
	struct rec_thr *t;
	pid_t tgid = trc_tgid(tid);

	p = tgid > 0 ? rec_proc_find(s, tgid) : NULL;
	if (!p) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return NULL;
	}
	if (rec_thr_add(s, p, tid, THR_NEW, &t))
		return NULL;
	t->birth_wait = 1;
	return t;
}

static int handle(struct rec_session *s, pid_t tid, int status)
{
	struct rec_thr *t = rec_thr_find(s, tid);
	enum trc_stop kind;
	int sig;

	kind = trc_classify(status, &sig);
	if (!t) {
		if (kind == TRC_EXITED || kind == TRC_KILLED)
			return 0;
		t = adopt(s, tid);
		if (!t)
			return 0;
	}
	switch (kind) {
	case TRC_EXITED:
	case TRC_KILLED:
		on_gone(s, t, kind, sig);
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
			s->ops->resume(s->bk, t, 0);
			return 0;
		}
		return resume(s, t, 0);
	case TRC_SIGNAL:
		/* A SIGSTOP that raced with seizing counts as the first
		 * stop. */
		if ((t->state == THR_NEW || t->state == THR_ATTACHED) &&
		    sig == SIGSTOP)
			return on_first_stop(s, t);
		return on_signal(s, t, sig);
	case TRC_CLONE:
		return on_clone(s, t);
	case TRC_EXEC:
		return on_exec(s, t);
	case TRC_EXIT:
		return on_exit_event(s, t);
	case TRC_FORK:
	case TRC_OTHER:
		return resume(s, t, 0);
	}
	return 0;
}

/* Wait for a thread we stopped asking to stop; leave it in a ptrace stop
 * (or gone).  Returns the signal to deliver when detaching it. */
static int wait_stopped(struct rec_session *s, struct rec_thr *t)
{
	int st, sig;

	for (;;) {
		pid_t w = waitpid(t->tid, &st, __WALL);
		enum trc_stop kind;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			thr_gone(s, t);
			return 0;
		}
		kind = trc_classify(st, &sig);
		switch (kind) {
		case TRC_EXITED:
		case TRC_KILLED:
			on_gone(s, t, kind, sig);
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
			/* The interrupt can overtake the trap of the step in
			 * flight, whose SIGTRAP is then still queued and
			 * would kill the detached thread: let it arrive
			 * (nothing runs before a pending signal is taken)
			 * and drop it. */
			if (trc_signal_pending(t->tid, SIGTRAP) &&
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

/* Let every thread go, untraced.  @t's pending signal (a crash) is
 * delivered as it is released. */
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
			thr_stop_tracing(s, t);
			rec_triggers_disarm(t);
			if (t->state == THR_EXITING) {
				/* Past its exit event: it is on its way out. */
				t->state = THR_GONE;
				s->nlive--;
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
			t->state = THR_GONE;
			s->nlive--;
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
		if (s->vc.n_parked && s->vc.n_parked == s->vc.n_user) {
			/* Only parked threads could step: give the threads
			 * in system calls a moment first (vclock.h). */
			tid = wait_grace(&st);
			if (tid == 0) {
				r = unpark(s);
				if (r)
					return r;
				continue;
			}
		} else if (!s->vc.n_user) {
			/* Only system calls run: time them (vclock.h). */
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
		r = handle(s, tid, st);
		if (r)
			return r;
		/* With no unparked thread in user code left, the grace
		 * wait above decides. */
		if (s->vc.n_parked && s->vc.recheck &&
		    s->vc.n_user > s->vc.n_parked) {
			r = unpark(s);
			if (r)
				return r;
		}
	}
	return 0;
}

static void session_fini(struct rec_session *s)
{
	rec_triggers_fini(s);
	for (size_t i = 0; i < s->nthrs; i++) {
		rec_triggers_disarm(s->thrs[i]);
		s->ops->thread_free(s->bk, s->thrs[i]);
		free(s->thrs[i]);
	}
	free(s->thrs);
	for (size_t i = 0; i < s->nprocs; i++) {
		s->ops->proc_free(s->bk, s->procs[i]);
		mod_list_fini(&s->procs[i]->mods);
		free(s->procs[i]->vdso);
		free(s->procs[i]);
	}
	free(s->procs);
	for (size_t i = 0; i < s->nmarks; i++)
		free((char *)s->marks[i].text);
	free(s->marks);
	if (s->bk)
		s->ops->close(s->bk);
}

struct saved_signals {
	struct sigaction alrm;
	struct itimerval timer;
};

static void arm_duration(const struct rec_options *o, struct saved_signals *sv)
{
	struct sigaction sa;
	struct itimerval it = {0};

	if (o->duration <= 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGALRM, &sa, &sv->alrm);
	it.it_value.tv_sec = (time_t)o->duration;
	it.it_value.tv_usec =
	    (suseconds_t)((o->duration - (double)(time_t)o->duration) * 1e6);
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, &sv->timer);
}

static void disarm_duration(const struct rec_options *o,
			    struct saved_signals *sv)
{
	struct itimerval off = {0};

	if (o->duration <= 0)
		return;
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &sv->alrm, NULL);
}

static int session_init(struct rec_session *s, const struct rec_options *o,
			struct rec_result *res)
{
	const char *why = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	memset(res, 0, sizeof(*res));
	vclk_init(&s->vc);
	s->o = o;
	s->res = res;
	r = rec_backend_select(o->backend, &s->ops, &why);
	if (r)
		return r;
	if (why)
		notice(s, "%s", why);
	res->backend = s->ops->name;
	r = rec_triggers_init(s);
	if (r)
		return r;
	s->start_ns = rec_clock_ns();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s->start_real_ns =
		    (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	return s->ops->open(s, &s->bk);
}

/* The loop, then the final snapshot and the detach shared by run and
 * attach. */
static int session_main(struct rec_session *s)
{
	struct saved_signals sv;
	const char *why;
	uint64_t t0 = rec_clock_ns();
	int r;

	rec_stop_flag = 0;
	arm_duration(s->o, &sv);
	r = loop(s);
	s->res->seconds = (double)(rec_clock_ns() - t0) / 1e9;
	disarm_duration(s->o, &sv);
	why = s->stop_reason ? s->stop_reason : "exit";
	/* "limit": --multi-snapshot took its last one already; at exit,
	 * multi-snapshot mode has nothing new to show once a hit was saved. */
	if (!r && strcmp(why, "limit") &&
	    !(!strcmp(why, "exit") && s->o->multi_snapshot &&
	      s->res->snapshots))
		r = rec_snapshot_take(s, why);
	if (s->nlive > 0)
		detach_all(s);
	return r;
}

/* Wait for the target we started once it runs untraced. */
static void wait_target(struct rec_result *res)
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

int rec_run(const struct rec_options *o, char *const argv[],
	    struct rec_result *res)
{
	struct rec_session s;
	struct rec_proc *p;
	struct rec_thr *t = NULL;
	pid_t pid;
	int r;

	r = session_init(&s, o, res);
	if (r)
		goto out;
	r = trc_spawn(argv, &pid);
	if (r)
		goto out;
	res->pid = pid;
	if (!o->trace_loader) {
		int st = 0;

		r = trc_run_to_entry(pid, &st);
		if (r == 1) {
			/* The loader gave up (a missing library): nothing of
			 * the program ran, so there is nothing to show. */
			res->exited = WIFEXITED(st);
			res->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
			res->killed_by = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
			r = ps_err_detail(PS_ERR_TARGET,
					  "'%s' ended before its first "
					  "instruction (the dynamic loader "
					  "failed)",
					  argv[0]);
			goto out;
		}
		if (r) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, __WALL);
			goto out;
		}
	}
	r = rec_proc_add(&s, pid, &p);
	if (!r)
		r = rec_thr_add(&s, p, pid, THR_STOPPED, &t);
	if (!r)
		r = rec_triggers_resolve(&s, p, 0);
	if (!r && !o->trace_loader)
		r = rec_triggers_resolve(&s, p, 1);
	if (!r)
		r = thr_start(&s, t, s.start_ns);
	t->in_exec = o->trace_loader;
	if (!r)
		r = resume(&s, t, 0);
	if (r) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		goto out;
	}
	r = session_main(&s);
	if (r && !res->detached) {
		/* Something failed while tracing: do not leave the command
		 * half-traced. */
		detach_all(&s);
	}
	rec_stop_flag = 0;
	wait_target(res);
out:
	session_fini(&s);
	return r;
}

/* Seize every thread of @pid, including ones created meanwhile. */
static int attach_proc(struct rec_session *s, pid_t pid)
{
	struct rec_proc *p;
	int changed = 1, r;

	r = rec_proc_add(s, pid, &p);
	if (r)
		return r;
	while (changed) {
		pid_t *tids;
		int n = trc_threads(pid, &tids);

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

int rec_attach(const struct rec_options *o, const pid_t *pids, size_t n,
	       struct rec_result *res)
{
	struct rec_session s;
	int r = 0;

	r = session_init(&s, o, res);
	if (r)
		goto out;
	if (n)
		res->pid = pids[0];
	for (size_t i = 0; i < n && !r; i++) {
		r = trc_check_access(pids[i]);
		if (!r)
			r = attach_proc(&s, pids[i]);
	}
	if (r) {
		detach_all(&s);
		goto out;
	}
	r = session_main(&s);
	if (r && !res->detached)
		detach_all(&s);
out:
	session_fini(&s);
	return r;
}

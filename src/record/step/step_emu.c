/* SPDX-License-Identifier: MIT */
/* The single-step backend's hooks: every traced thread is single-stepped with
 * PTRACE_SINGLESTEP; each completed step goes to the emulator core
 * (emulate.h), which writes genuine PT packets into the thread's ring.
 *
 * Per step the cost is one PTRACE_SINGLESTEP, one waitpid and one
 * PTRACE_PEEKUSER of rip.  System calls are told apart by their bytes
 * (0f 05), cached per address, so the recorder can time them; the trace
 * time a call took (t->sys_ns, see vclk_ in core.h) goes to the emulator as
 * kernel_ns, so the virtual clock keeps sleeps and I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "ptscope/error.h"
#include "src/record/args.h"
#include "src/record/emulate/emulate.h"
#include "src/record/core/core.h"
#include "src/record/step/step_hooks.h"

#define SC_CACHE 4096 /* direct-mapped: ip → is it a syscall insn */

struct emb {
	struct rec_session *s;
};

struct emb_proc {
	struct emu_process *emu;
	pid_t pid;
	uint64_t sc_tag[SC_CACHE]; /* ip + 1 (0: empty) */
	uint8_t sc_val[SC_CACHE];
	int args_done; /* --args: the table is set (or cannot be) */
};

static ssize_t read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct emb_proc *ep = ctx;

	return mod_read_mem(ep->pid, addr, buf, len);
}

static int emb_open(struct rec_session *s, void **state)
{
	struct emb *b = calloc(1, sizeof(*b));

	if (!b)
		return PS_ERR_NOMEM;
	b->s = s;
	*state = b;
	return 0;
}

static void emb_close(void *state)
{
	free(state);
}

static int emb_proc_new(void *state, struct rec_proc *p)
{
	struct emb *b = state;
	struct emu_config cfg;
	struct emb_proc *ep = calloc(1, sizeof(*ep));
	int r;

	if (!ep)
		return PS_ERR_NOMEM;
	ep->pid = p->pid;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_size = b->s->o->snapshot_size ? b->s->o->snapshot_size
					       : REC_DEFAULT_SNAPSHOT_SIZE;
	cfg.start_ns = p->now;
	cfg.truth = b->s->o->truth;
	cfg.read_mem = read_target;
	cfg.read_ctx = ep;
	r = emu_process_new(&cfg, p->pid, &ep->emu);
	if (r) {
		free(ep);
		return r;
	}
	p->bk = ep;
	return 0;
}

static void emb_proc_free(void *state, struct rec_proc *p)
{
	struct emb_proc *ep = p->bk;

	if (!ep)
		return;
	emu_process_free(ep->emu);
	free(ep);
	p->bk = NULL;
}

static void emb_code_changed(void *state, struct rec_proc *p, uint64_t addr,
			     uint64_t len)
{
	struct emb_proc *ep = p->bk;

	if (!ep)
		return;
	emu_process_invalidate(ep->emu, addr, len);
	for (size_t i = 0; i < SC_CACHE; i++)
		if (ep->sc_tag[i] && ep->sc_tag[i] - 1 >= addr &&
		    ep->sc_tag[i] - 1 < addr + len)
			ep->sc_tag[i] = 0;
}

/* --args: a thread's registers through ptrace. */
static int read_regs(void *ctx, struct emu_regs *r, int want_xmm)
{
	const struct rec_thr *t = ctx;
	struct user_regs_struct u;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &u) < 0)
		return PS_ERR_TARGET;
	r->rax = u.rax;
	r->rdi = u.rdi;
	r->rsi = u.rsi;
	r->rdx = u.rdx;
	r->rcx = u.rcx;
	r->r8 = u.r8;
	r->r9 = u.r9;
	r->rsp = u.rsp;
	if (want_xmm) {
		struct user_fpregs_struct fp;

		if (ptrace(PTRACE_GETFPREGS, t->tid, 0, &fp) < 0)
			return PS_ERR_TARGET;
		for (int k = 0; k < 8; k++)
			memcpy(&r->xmm[k], &fp.xmm_space[4 * k], 8);
	}
	return 0;
}

/* --args (without it: ptscope_write only), the main program's table, once
 * per image. */
static void args_setup(struct emb *b, struct rec_proc *p, struct emb_proc *ep)
{
	struct emu_fn *fns;
	size_t n;
	char *exe;

	ep->args_done = 1;
	exe = p->path ? strdup(p->path) : rec_exe_path(p->pid);
	if (!exe)
		return;
	if (!p->mods.n)
		rec_proc_refresh_maps(b->s, p);
	if (rec_args_table(&p->mods, exe, b->s->o->args, &fns, &n) == 0) {
		if (emu_process_set_fns(ep->emu, fns, n) == 0 && !n &&
		    b->s->o->args)
			rec_notice(b->s,
				   "--args: %s has no functions with DWARF "
				   "parameters (build it with -g)",
				   exe);
		free(fns);
	}
	free(exe);
}

static int emb_thread_start(void *state, struct rec_thr *t, uint64_t ip,
			    uint64_t now_ns)
{
	struct emb_proc *ep = t->proc->bk;
	struct emu_thread *et;
	int r;

	if (!ep->args_done)
		args_setup(state, t->proc, ep);
	if (t->bk) {
		emu_thread_free(t->bk);
		t->bk = NULL;
	}
	r = emu_thread_new(ep->emu, t->tid, ip, now_ns, &et);
	if (r)
		return r;
	emu_thread_set_regs(et, read_regs, t);
	t->bk = et;
	return 0;
}

static int emb_thread_stop(void *state, struct rec_thr *t)
{
	if (!t->bk)
		return 0;
	return emu_stop(t->bk, t->ip);
}

static void emb_thread_free(void *state, struct rec_thr *t)
{
	emu_thread_free(t->bk);
	t->bk = NULL;
}

static int emb_resume(void *state, struct rec_thr *t, int sig)
{
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, sig) == 0)
		return 0;
	return errno == ESRCH
		   ? PS_ERR_TARGET
		   : ps_err_detail(PS_ERR_TARGET,
				   "cannot single-step thread %d: %s",
				   (int)t->tid, strerror(errno));
}

/* 1 if the instruction at @ip is `syscall` (0f 05). */
static int is_syscall(struct emb_proc *ep, uint64_t ip)
{
	size_t slot = (ip ^ (ip >> 12)) & (SC_CACHE - 1);
	uint8_t b[2];

	if (ep->sc_tag[slot] == ip + 1)
		return ep->sc_val[slot];
	ep->sc_val[slot] = mod_read_mem(ep->pid, ip, b, 2) == 2 &&
			   b[0] == 0x0f && b[1] == 0x05;
	ep->sc_tag[slot] = ip + 1;
	return ep->sc_val[slot];
}

static int emb_stepped(void *state, struct rec_thr *t, uint64_t next_ip)
{
	struct emb_proc *ep = t->proc->bk;
	uint64_t kernel_ns = 0;
	int sc, r;

	sc = is_syscall(ep, t->ip);
	if (sc)
		kernel_ns = t->sys_ns;
	r = emu_step(t->bk, t->ip, next_ip, kernel_ns);
	return r < 0 ? r : sc;
}

static int emb_at_syscall(void *state, const struct rec_thr *t)
{
	(void)state;
	return t->bk ? is_syscall(t->proc->bk, t->ip) : 0;
}

static int emb_signal_entered(void *state, struct rec_thr *t,
			      uint64_t handler_ip)
{
	return emu_async(t->bk, t->ip, handler_ip);
}

static uint64_t emb_now(void *state, const struct rec_thr *t)
{
	return t->bk ? emu_now(t->bk) : t->proc->now;
}

static int emb_snapshot(void *state, const struct rec_thr *t, uint8_t **buf,
			size_t *len)
{
	if (!t->bk)
		return PS_ERR_NOT_FOUND;
	return emu_snapshot(t->bk, buf, len);
}

static uint64_t emb_instructions(void *state, const struct rec_thr *t)
{
	return t->bk ? emu_instructions(t->bk) : 0;
}

const struct step_hooks step_emu_hooks = {
    .open = emb_open,
    .close = emb_close,
    .proc_new = emb_proc_new,
    .proc_free = emb_proc_free,
    .code_changed = emb_code_changed,
    .thread_start = emb_thread_start,
    .thread_stop = emb_thread_stop,
    .thread_free = emb_thread_free,
    .at_syscall = emb_at_syscall,
    .resume = emb_resume,
    .stepped = emb_stepped,
    .signal_entered = emb_signal_entered,
    .now = emb_now,
    .snapshot = emb_snapshot,
    .instructions = emb_instructions,
};

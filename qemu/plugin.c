/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ptscope's QEMU TCG plugin: every executed translated block becomes
 * Intel PT, written by the same encoder, packet rules and snapshot ring as
 * the single-step backend (src/record/emulate/).
 *
 * A block is straight-line code whose last instruction may branch (QEMU
 * ends blocks at every branch, system call and page boundary).  When the
 * next block starts, the previous block's last instruction is complete:
 * its class and where control went give the packets (TNT for jcc, TIP for
 * indirect branches and returns, PGD/PGE around system calls, FUP+TIP for
 * a signal).  Instructions are counted per block for the virtual clock.
 *
 * Loaded by `ptscope run --backend=qemu` as
 *   qemu-x86_64 -plugin libptscope-qemu.so,fd=N|sock=NAME,start=NS,
 *               ring=BYTES,argc=N[,truth=FD][,name=COMM] PROGRAM ARGS...
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <link.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "qemu/plugin.h"
#include "src/record/qemu/qemu_proto.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

struct qpl qpl = {.fd = -1, .handler_lo = UINT64_MAX};
/* Initial-exec: the plugin is also preloaded, so its TLS is static and
 * reading it costs no call into the dynamic linker. */
__thread struct qpl_thread *qpl_self __attribute__((tls_model("initial-exec")));

/* QEMU 7.2's CPUX86State: xmm_regs[] (ZMMReg, 64 bytes each) starts
 * this many bytes in (offsetof(CPUX86State, xmm_regs), found by scanning
 * env for the doubles samples/args passes; tests/e2e/args.sh checks the
 * doubles read here on every run).  The 7.2 plugin API has no register access
 * of its own. */
#define QPL_XMM_OFFSET 0x350
#define QPL_ZMM_SIZE 64
/* and mxcsr just before: checked at the start (its reset value), or the
 * xmm registers are not read at all (another layout) */
#define QPL_MXCSR_OFFSET 0x344

/* x86-64 rt_sigframe: the restorer address at rsp; the interrupted rip
 * in uc_mcontext at rsp + 8 (pretcode) + 40 (uc header) + 128. */
#define FRAME_RIP 176

ssize_t qpl_read_guest(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(addr + qpl.guest_base), len};

	(void)ctx;
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0);
}

int qpl_read_u64(uint64_t addr, uint64_t *v)
{
	return qpl_read_guest(NULL, addr, v, 8) == 8 ? 0 : -1;
}

/* ---- translation ---------------------------------------------------- */

void qpl_tb_exec(unsigned int vcpu, void *udata, uint64_t *env);

/* The exec callback's entry: QEMU's generated code keeps the guest CPU
 * state (env) in rbp (TCG_AREG0 on x86 hosts), a callee-saved register
 * it still holds when generated code calls us; hand it on as the
 * third argument before any compiled code can reuse the register. */
__asm__(".text\n"
	".globl qpl_tb_exec_entry\n"
	".hidden qpl_tb_exec_entry\n"
	".type qpl_tb_exec_entry,@function\n"
	"qpl_tb_exec_entry:\n"
	"\tmovq %rbp, %rdx\n"
	"\tjmp qpl_tb_exec\n"
	".size qpl_tb_exec_entry, .-qpl_tb_exec_entry\n");
void qpl_tb_exec_entry(unsigned int vcpu, void *udata);

void qpl_on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct qemu_plugin_insn *li;
	struct qpl_block *b;

	(void)id;
	if (!n || qpl.untraced)
		return;
	b = calloc(1, sizeof(*b) + n * sizeof(b->ips[0]));
	if (!b)
		return;
	b->start = qemu_plugin_tb_vaddr(tb);
	b->n = (uint32_t)n;
	b->watch_gen = (uint32_t)-1;
	b->watch_at = -1;
	b->timed_which = -1;
	for (size_t i = 0; i < n; i++)
		b->ips[i] =
		    qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
	li = qemu_plugin_tb_get_insn(tb, n - 1);
	if (!qpl.guest_base) {
		uint8_t *h = qemu_plugin_insn_haddr(li);

		if (h)
			qpl.guest_base = (uint64_t)(uintptr_t)h - b->ips[n - 1];
	}
	pthread_mutex_lock(&qpl.send_lock);
	if (emu_insn_decode(qpl.dec, qemu_plugin_insn_data(li),
			    qemu_plugin_insn_size(li), b->ips[n - 1], &b->last))
		memset(&b->last, 0, sizeof(b->last));
	pthread_mutex_unlock(&qpl.send_lock);
	b->last.ip = b->ips[n - 1];
	if (!b->last.len && b->last.cls == EMU_I_OTHER)
		b->last.len = (uint8_t)qemu_plugin_insn_size(li);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, qpl_tb_exec_entry,
					     QEMU_PLUGIN_CB_NO_REGS, b);
}

/* Which instruction of @b (if any) is watched, for the current list. */
static void rescan(struct qpl_block *b)
{
	uint32_t gen = __atomic_load_n(&qpl.watch_gen, __ATOMIC_ACQUIRE);

	b->watch_at = -1;
	b->timed_which = -1;
	for (uint32_t k = 0; k < qpl.ntimed; k++)
		if (qpl.timed[k].addr == b->start)
			b->timed_which = (int32_t)k;
	for (uint32_t i = 0; i < b->n && b->watch_at < 0; i++)
		for (uint32_t k = 0; k < qpl.nwatch; k++)
			if (qpl.watch[k] == b->ips[i]) {
				b->watch_at = (int32_t)i;
				b->watch_which = (int32_t)k;
				break;
			}
	b->watch_gen = gen;
}

/* ---- execution ------------------------------------------------------ */

static int can_reach(const struct emu_insn *in, uint64_t next)
{
	uint64_t fall = in->ip + in->len;

	switch (in->cls) {
	case EMU_I_OTHER:
		return next == fall || !in->len ||
		       (next == in->ip && (in->flags & EMU_IF_REP));
	case EMU_I_JCC:
		return next == fall ||
		       next == fall + (uint64_t)(int64_t)in->disp;
	case EMU_I_CALL:
	case EMU_I_JMP:
		return next == fall + (uint64_t)(int64_t)in->disp;
	default:
		return 1;
	}
}

/* Control arrived at @next as a signal delivery: @next is a handler the
 * guest installed and the stack holds a fresh signal frame.  *from gets
 * the interrupted instruction. */
static int signal_entry(struct qpl_thread *q, uint64_t next, uint64_t *from)
{
	uint64_t rsp, ret, rip;

	if (!qpl.regs_ok || !q->env || next < qpl.handler_lo ||
	    next > qpl.handler_hi)
		return 0;
	for (int s = 1; s < QPL_NSIG; s++) {
		if (qpl.handler[s] != next)
			continue;
		rsp = q->env[R_RSP];
		if (qpl_read_u64(rsp, &ret) ||
		    qpl_read_u64(rsp + FRAME_RIP, &rip))
			return 0;
		if (ret != qpl.restorer[s] || q->env[R_RDX] != rsp + 8)
			continue;
		*from = rip;
		return 1;
	}
	return 0;
}

/* The previous block's last instruction completed and control is at
 * @next. */
static void follow(struct qpl_thread *q, const struct qpl_block *prev,
		   uint64_t next)
{
	const struct emu_insn *in = &prev->last;
	uint64_t ns = q->pending_ns, from;

	/* QEMU ended the block before an instruction that crosses a page
	 * (it retranslates it in a block of its own) after reporting it as
	 * the block's last: it has not run yet. */
	if (next == in->ip && in->cls == EMU_I_OTHER &&
	    !(in->flags & EMU_IF_REP))
		return;
	q->pending_ns = 0;
	if (in->cls != EMU_I_TRAP && signal_entry(q, next, &from)) {
		if (can_reach(in, from))
			emu_step_insn(q->emu, in, from, ns);
		emu_async(q->emu, from, next);
		return;
	}
	emu_step_insn(q->emu, in, next, ns);
}

struct host_ranges {
	struct qp_range *r;
	uint32_t n, cap;
};

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct host_ranges *h = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct qp_range *nr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (h->n == h->cap) {
			h->cap = h->cap ? 2 * h->cap : 64;
			nr = realloc(h->r, h->cap * sizeof(*nr));
			if (!nr)
				return 1;
			h->r = nr;
		}
		h->r[h->n].start = info->dlpi_addr + ph->p_vaddr;
		h->r[h->n].end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		h->n++;
	}
	return 0;
}

/* The first guest instruction is about to run, or a fork child begins:
 * tell ptscope, with the address ranges of QEMU's own objects and the
 * guest program, and wait for its WATCH. */
void qpl_hello(struct qpl_thread *q, int forked, pid_t ppid, uint64_t clock)
{
	struct host_ranges h = {0};
	struct qp_hello m = {
	    QP_VERSION, PTSCOPE_QEMU_PLUGIN_VERSION, qpl.guest_base,
	    (uint32_t)qpl.regs_ok | (uint32_t)qpl.xmm_ok << 1, 0};
	size_t plen = strlen(qpl.exe), rlen;
	uint8_t *buf;

	dl_iterate_phdr(add_object, &h);
	m.nranges = h.n;
	m.pid = (uint32_t)getpid();
	m.ppid = (uint32_t)ppid;
	m.clock = clock;
	m.forked = (uint32_t)forked;
	m.pathlen = (uint32_t)plen;
	rlen = h.n * sizeof(*h.r);
	buf = malloc(sizeof(m) + rlen + plen + 1);
	if (!buf) {
		free(h.r);
		qpl_fail("out of memory");
		return;
	}
	memcpy(buf, &m, sizeof(m));
	if (h.n)
		memcpy(buf + sizeof(m), h.r, rlen);
	memcpy(buf + sizeof(m) + rlen, qpl.exe, plen);
	qpl_notify_wait(q, QP_HELLO, buf, (uint32_t)(sizeof(m) + rlen + plen));
	free(buf);
	free(h.r);
}

static struct qpl_thread *thread_new(uint64_t *env)
{
	struct qpl_thread *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->tid = (pid_t)syscall(SYS_gettid);
	q->env = env;
	q->birth = qpl.threads ? qpl.clone_clock : qpl.start_ns;
	if (!qpl.regs_checked && env) {
		uint64_t argc = 0;

		/* At the loader's first instruction rsp points at argc. */
		qpl.regs_checked = 1;
		qpl.regs_ok =
		    !qpl_read_u64(env[R_RSP], &argc) && argc == qpl.argc;
		/* mxcsr sits just before xmm_regs and starts as 0x1f80 */
		qpl.xmm_ok = qpl.regs_ok &&
			     *(const uint32_t *)((const uint8_t *)env +
						 QPL_MXCSR_OFFSET) == 0x1f80;
	}
	qpl_thread_register(q);
	qpl_self = q;
	if (q->tid == getpid()) {
		qpl_hello(q, 0, getppid(), qpl.start_ns);
	} else if (qpl.want_syscalls) {
		struct qp_tid m = {(uint32_t)q->tid, 0};

		qpl_send(QP_THREAD, &m, sizeof(m), NULL, 0);
	}
	return q;
}

/* --args: the guest's registers at a block's start (env is current
 * there). */
static int guest_regs(void *ctx, struct emu_regs *r, int want_xmm)
{
	const struct qpl_thread *q = ctx;
	const uint64_t *e = q->env;

	if (!qpl.regs_ok || !e)
		return -1;
	r->rax = e[0];
	r->rcx = e[1];
	r->rdx = e[2];
	r->rsp = e[4];
	r->rsi = e[6];
	r->rdi = e[7];
	r->r8 = e[8];
	r->r9 = e[9];
	if (want_xmm && !qpl.xmm_ok)
		return -1;
	if (want_xmm) {
		const uint8_t *x = (const uint8_t *)e + QPL_XMM_OFFSET;

		for (int k = 0; k < 8; k++)
			memcpy(&r->xmm[k], x + k * QPL_ZMM_SIZE, 8);
	}
	return 0;
}

/* Tracing reaches thread @q at block @b. */
static int begin(struct qpl_thread *q, const struct qpl_block *b)
{
	if (qpl.entry) {
		struct qp_tid m = {(uint32_t)q->tid, 0};

		if (b->start != qpl.entry)
			return 0;
		qpl.entry = 0;
		qpl.tracing = 1;
		q->birth = qpl.start_ns;
		qpl_notify_wait(q, QP_ENTRY, &m, sizeof(m));
		if (!qpl.tracing)
			return 0;
	}
	if (emu_thread_new(qpl.proc, q->tid, b->start, q->birth, &q->emu)) {
		qpl_fail("cannot start tracing thread %d", (int)q->tid);
		return 0;
	}
	emu_thread_set_regs(q->emu, guest_regs, q);
	q->prev = NULL;
	return 1;
}

static void watched(struct qpl_thread *q, const struct qpl_block *b)
{
	struct qp_hit h;
	uint32_t k = (uint32_t)b->watch_at;

	emu_block(q->emu, b->start, b->ips[k], k);
	h.tid = (uint32_t)q->tid;
	h.index = (uint32_t)b->watch_which;
	h.ip = b->ips[k];
	h.rdi = qpl.regs_ok && q->env ? q->env[R_RDI] : 0;
	h.now = emu_now(q->emu);
	qpl_notify_wait(q, QP_HIT, &h, sizeof(h));
	if (qpl.tracing)
		emu_block(q->emu, b->ips[k], b->ips[b->n - 1], b->n - 1 - k);
}

/* A timed function begins (latency trigger): note where it returns to,
 * with the stack pointer, and when. */
static void call_enter(struct qpl_thread *q, const struct qpl_block *b)
{
	struct qpl_call *c;
	uint64_t rsp, ret;

	if (!qpl.regs_ok || !q->env || q->ncalls == 64)
		return;
	rsp = q->env[R_RSP];
	if (qpl_read_u64(rsp, &ret))
		return;
	c = &q->calls[q->ncalls++];
	c->ret = ret;
	c->rsp = rsp;
	c->start = emu_now(q->emu);
	c->which = (uint32_t)b->timed_which;
}

/* Control reached @b: a timed call that returned here with its stack
 * back where it was has ended.  Calls left by longjmp or an exception
 * (the stack is above their frame) are forgotten.  Returns 1 if tracing
 * stopped. */
static int call_return(struct qpl_thread *q, const struct qpl_block *b)
{
	uint64_t rsp = q->env[R_RSP], now;
	struct qpl_call *c;

	while (q->ncalls && rsp > q->calls[q->ncalls - 1].rsp + 8)
		q->ncalls--;
	if (!q->ncalls)
		return 0;
	c = &q->calls[q->ncalls - 1];
	if (c->ret != b->start || rsp != c->rsp + 8)
		return 0;
	q->ncalls--;
	now = emu_now(q->emu);
	if (now - c->start > qpl.timed[c->which].ns) {
		struct qp_slow m = {(uint32_t)q->tid, c->which,
				    qpl.timed[c->which].addr, c->start, now};

		qpl_notify_wait(q, QP_SLOW, &m, sizeof(m));
		return !qpl.tracing;
	}
	return 0;
}

static void noop_reset(qemu_plugin_id_t id)
{
	(void)id;
}

__attribute__((visibility("hidden"))) void
qpl_tb_exec(unsigned int vcpu, void *udata, uint64_t *env)
{
	struct qpl_block *b = udata;
	struct qpl_thread *q = qpl_self;

	(void)vcpu;
	if (unlikely(!q)) {
		if (qpl.untraced || !(q = thread_new(env)))
			return;
	}
	q->env = env;
	if (unlikely(qpl.attention)) {
		qpl_world_check(q);
		if (!qpl.tracing) {
			if (qpl.untraced && !qpl.reset_done) {
				/* Run on at QEMU's own speed. */
				qpl.reset_done = 1;
				qemu_plugin_reset(qpl.id, noop_reset);
			}
			if (qpl.untraced || !qpl.entry)
				return;
		}
	}
	if (unlikely(!q->emu)) {
		if (!qpl.tracing && !qpl.entry)
			return;
		if (!begin(q, b))
			return;
	} else if (q->prev) {
		follow(q, q->prev, b->start);
	}
	if (unlikely(b->watch_gen != qpl.watch_gen))
		rescan(b);
	if (unlikely(q->ncalls) && b->start == q->calls[q->ncalls - 1].ret &&
	    call_return(q, b)) {
		q->prev = b;
		return;
	}
	if (unlikely(b->timed_which >= 0))
		call_enter(q, b);
	q->prev = b;
	if (unlikely(b->watch_at >= 0))
		watched(q, b);
	else
		emu_block(q->emu, b->start, b->ips[b->n - 1], b->n - 1);
}

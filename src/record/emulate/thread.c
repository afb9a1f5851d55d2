/* SPDX-License-Identifier: MIT */
/* Per-thread emulation: what PT hardware tracing user space only
 * (BranchEn, User, TSCEn; no OS) would emit for each single-stepped
 * instruction.  Packet policy: docs/emulated-backend.md. */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/emulate/emu.h"
#include "src/record/emulate/truth.h"

#define unlikely(x) __builtin_expect(!!(x), 0)
#define likely(x) __builtin_expect(!!(x), 1)

static void truth(struct emu_thread *t, enum emu_truth_kind kind, uint64_t from,
		  uint64_t to)
{
	FILE *f = t->proc->cfg.truth;

	if (f)
		emu_truth_event(f, t->tid, kind, from, to, t->insns,
				emu_clock_now(&t->clock));
}

static uint64_t psb_distance(const struct emu_thread *t)
{
	return t->ring.head - emu_ring_last_psb(&t->ring);
}

/* Move the packets of this call from the scratch buffer into the ring. */
static void commit(struct emu_thread *t)
{
	size_t n = emu_pkt_used(&t->pkt);

	if (!n)
		return;
	emu_ring_put(&t->ring, t->scratch, n);
	emu_pkt_rewind(&t->pkt);
	if (psb_distance(t) >= t->proc->psb_period)
		t->need_prep = 1;
}

/* A TSC before the next packet when the clock moved enough since the last
 * one, so the decoder's time lags the truth by less than the threshold at
 * every packet. */
static int timing(struct emu_thread *t)
{
	uint64_t now = emu_clock_now(&t->clock);

	if (now - t->last_tsc < EMU_TSC_THRESHOLD_NS)
		return 0;
	t->last_tsc = now;
	return emu_pkt_tsc(&t->pkt, now);
}

/* PSB+ as hardware writes it: TSC, and while tracing MODE.Exec and a FUP
 * with the next instruction, so a decoder can start here. */
static int psb(struct emu_thread *t, uint64_t ip)
{
	uint64_t now = emu_clock_now(&t->clock);
	int rc;

	/* Pending TNT bits belong before the PSB. */
	rc = emu_pkt_tnt_flush(&t->pkt);
	if (rc < 0)
		return rc;
	commit(t);
	emu_ring_mark_psb(&t->ring);
	/* A RET is compressed only for a call made since the last PSB: a
	 * decoder starting here has seen it (Intel SDM vol. 3C, 36.2.1.2). */
	t->retc_n = 0;
	rc = emu_pkt_psb(&t->pkt);
	if (rc == 0)
		rc = emu_pkt_tsc(&t->pkt, now);
	t->last_tsc = now;
	if (rc == 0 && t->enabled)
		rc = emu_pkt_mode64(&t->pkt);
	if (rc == 0 && t->enabled)
		rc = emu_pkt_ip(&t->pkt, ppt_fup, ip);
	if (rc == 0)
		rc = emu_pkt_psbend(&t->pkt);
	return rc;
}

/* Tracing (re)starts at @ip: MODE.Exec + TIP.PGE. */
static int enable(struct emu_thread *t, uint64_t ip)
{
	int rc = timing(t);

	if (rc == 0)
		rc = emu_pkt_mode64(&t->pkt);
	if (rc == 0)
		rc = emu_pkt_ip(&t->pkt, ppt_tip_pge, ip);
	if (rc < 0)
		return rc;
	t->enabled = 1;
	t->cur_ip = ip;
	return 0;
}

/* Control moved from @from (not executed) to @to outside any instruction's
 * semantics: FUP + TIP, which libipt reports as an asynchronous branch. */
static int async_branch(struct emu_thread *t, uint64_t from, uint64_t to,
			enum emu_truth_kind kind)
{
	int rc = timing(t);

	if (rc == 0)
		rc = emu_pkt_ip(&t->pkt, ppt_fup, from);
	if (rc == 0)
		rc = emu_pkt_ip(&t->pkt, ppt_tip, to);
	if (rc < 0)
		return rc;
	truth(t, kind, from, to);
	t->cur_ip = to;
	return 0;
}

/* The slow start of a step: tracing off, a PSB due, or the caller's ip is
 * not where the last step left the thread. */
static int prepare(struct emu_thread *t, uint64_t ip)
{
	int rc = 0;

	if (!t->enabled) {
		if (psb_distance(t) >= t->proc->psb_period)
			rc = psb(t, ip);
		if (rc == 0)
			rc = enable(t, ip);
		if (rc < 0)
			return rc;
		truth(t, EMU_T_START, 0, ip);
	} else if (ip != t->cur_ip) {
		rc = async_branch(t, t->cur_ip, ip, EMU_T_ASYNC);
		if (rc < 0)
			return rc;
	}
	if (psb_distance(t) >= t->proc->psb_period) {
		rc = psb(t, ip);
		if (rc < 0)
			return rc;
	}
	t->need_prep = 0;
	commit(t);
	return 0;
}

static enum emu_truth_kind truth_kind(int cls)
{
	switch (cls) {
	case EMU_I_CALL:
	case EMU_I_CALL_IND:
		return EMU_T_CALL;
	case EMU_I_RET:
		return EMU_T_RET;
	case EMU_I_JMP_IND:
		return EMU_T_JMP;
	case EMU_I_TRAP:
		return EMU_T_SYSCALL;
	default:
		return EMU_T_FAR;
	}
}

/* Branches that emit packets: TIP, or PGD/PGE around the kernel. */
static int step_packet(struct emu_thread *t, const struct emu_insn *in,
		       uint64_t ip, uint64_t next_ip, uint64_t kernel_ns)
{
	int rc = timing(t);

	if (rc < 0)
		return rc;
	truth(t, truth_kind(in->cls), ip, next_ip);
	if (in->cls != EMU_I_TRAP) {
		rc = emu_pkt_ip(&t->pkt, ppt_tip, next_ip);
		emu_clock_step(&t->clock, kernel_ns);
	} else {
		/* User-only tracing: entering ring 0 disables packets with
		 * the IP suppressed; the return re-enables them wherever
		 * the kernel resumed the thread (sigreturn, execve). */
		rc = emu_pkt_pgd(&t->pkt);
		emu_clock_step(&t->clock, kernel_ns);
		if (rc == 0)
			rc = enable(t, next_ip);
	}
	if (rc < 0)
		return rc;
	t->insns++;
	t->cur_ip = next_ip;
	commit(t);
	return 0;
}

/* An instruction that cannot have moved control to @next_ip did: the
 * recorder missed an event.  Keep the trace decodable as an async branch
 * at @ip (not executed). */
static int step_anomaly(struct emu_thread *t, uint64_t ip, uint64_t next_ip,
			uint64_t kernel_ns)
{
	int rc = async_branch(t, ip, next_ip, EMU_T_ASYNC);

	if (rc < 0)
		return rc;
	emu_clock_step(&t->clock, kernel_ns);
	commit(t);
	return 0;
}

/* Return compression as the CPU does it: a near call's return address is
 * kept; a RET to the newest one kept is a taken TNT bit instead of a TIP,
 * and drops it.  A RET elsewhere (longjmp, a return address changed)
 * keeps its TIP and drops nothing: a decoder (libipt's pt_retstack) pops
 * only for a compressed one. */
static inline void retc_push(struct emu_thread *t, uint64_t ret)
{
	t->retc_top = (t->retc_top + 1) % EMU_RETC_DEPTH;
	t->retc[t->retc_top] = ret;
	if (t->retc_n < EMU_RETC_DEPTH)
		t->retc_n++;
}

static inline int retc_pop(struct emu_thread *t, uint64_t to)
{
	if (t->proc->cfg.dis_retc || !t->retc_n || t->retc[t->retc_top] != to)
		return 0;
	t->retc_top = (t->retc_top + EMU_RETC_DEPTH - 1) % EMU_RETC_DEPTH;
	t->retc_n--;
	return 1;
}

static int step_tnt(struct emu_thread *t, int taken)
{
	int rc;

	if (emu_clock_now(&t->clock) - t->last_tsc >= EMU_TSC_THRESHOLD_NS) {
		rc = timing(t);
		if (rc < 0)
			return rc;
		commit(t);
	}
	rc = emu_pkt_tnt(&t->pkt, taken);
	if (unlikely(t->pkt.tnt_bits == 0))
		commit(t); /* the bit filled a TNT-64 */
	return rc;
}

/* The instruction at @ip, decoded once per process. */
static int insn_at(struct emu_thread *t, uint64_t ip,
		   const struct emu_insn **in)
{
	*in = emu_icache_find(&t->proc->cache, ip);
	return *in ? 0 : emu_process_fill(t->proc, ip, in);
}

/* A single step over @in, which does not branch, that stopped past the
 * next instruction: on some hosts the hypervisor emulates an instruction
 * (CPUID under KVM) and drops the trap that ends the step, so the
 * straight-line instructions after it ran in the same step.  Those (at
 * most EMU_SKIPPED_TRAPS) are stepped here, one by one; 1 when they lead
 * to @next_ip, 0 when they do not (a real asynchronous branch: a signal),
 * or a negative error. */
#define EMU_SKIPPED_TRAPS 3
static int skipped_trap(struct emu_thread *t, const struct emu_insn *in,
			uint64_t next_ip, uint64_t kernel_ns)
{
	const struct emu_insn *run[EMU_SKIPPED_TRAPS + 1];
	uint64_t at = in->ip + in->len;
	int n = 0, rc;

	run[n++] = in;
	while (at != next_ip) {
		const struct emu_insn *more;

		if (n > EMU_SKIPPED_TRAPS || insn_at(t, at, &more) < 0 ||
		    more->cls != EMU_I_OTHER || !more->len)
			return 0;
		run[n++] = more;
		at += more->len;
	}
	for (int i = 0; i < n; i++) {
		rc = emu_step_insn(t, run[i], run[i]->ip + run[i]->len,
				   i ? 0 : kernel_ns);
		if (rc < 0)
			return rc;
	}
	return 1;
}

int emu_step(struct emu_thread *t, uint64_t ip, uint64_t next_ip,
	     uint64_t kernel_ns)
{
	const struct emu_insn *in;
	int rc;

	if (unlikely(!t || !ip))
		return PS_ERR_INVAL;
	in = emu_icache_find(&t->proc->cache, ip);
	if (unlikely(!in)) {
		rc = emu_process_fill(t->proc, ip, &in);
		if (rc < 0)
			return rc;
	}
	if (unlikely(in->cls == EMU_I_OTHER && in->len &&
		     next_ip != ip + in->len && next_ip != ip)) {
		rc = skipped_trap(t, in, next_ip, kernel_ns);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return emu_step_insn(t, in, next_ip, kernel_ns);
}

int emu_step_insn(struct emu_thread *t, const struct emu_insn *in,
		  uint64_t next_ip, uint64_t kernel_ns)
{
	uint64_t ip = in->ip, fall;
	int rc;

	if (unlikely(t->need_prep || ip != t->cur_ip)) {
		rc = prepare(t, ip);
		if (rc < 0)
			return rc;
	}
	fall = ip + in->len;
	switch (in->cls) {
	case EMU_I_OTHER:
		if (likely(next_ip == fall || !in->len))
			break;
		if (next_ip == ip && (in->flags & EMU_IF_REP)) {
			/* One iteration of a rep string op. */
			emu_clock_step(&t->clock, kernel_ns);
			return 0;
		}
		return step_anomaly(t, ip, next_ip, kernel_ns);
	case EMU_I_JCC:
		if (unlikely(next_ip != fall &&
			     next_ip != fall + (uint64_t)(int64_t)in->disp))
			return step_anomaly(t, ip, next_ip, kernel_ns);
		rc = step_tnt(t, next_ip != fall);
		if (rc < 0)
			return rc;
		break;
	case EMU_I_CALL:
	case EMU_I_JMP:
		if (unlikely(next_ip != fall + (uint64_t)(int64_t)in->disp))
			return step_anomaly(t, ip, next_ip, kernel_ns);
		if (in->cls == EMU_I_CALL) {
			truth(t, EMU_T_CALL, ip, next_ip);
			retc_push(t, fall);
		}
		break;
	default:
		if (unlikely(t->nframes) && in->cls == EMU_I_RET) {
			rc = emu_args_ret(t, ip, next_ip);
			if (rc < 0)
				return rc;
		}
		if (in->cls == EMU_I_RET && retc_pop(t, next_ip)) {
			truth(t, EMU_T_RET, ip, next_ip);
			rc = step_tnt(t, 1);
			if (rc < 0)
				return rc;
			break;
		}
		if (in->cls == EMU_I_CALL_IND)
			retc_push(t, fall);
		rc = step_packet(t, in, ip, next_ip, kernel_ns);
		if (unlikely(t->proc->nfns) && rc == 0 &&
		    (in->cls == EMU_I_CALL_IND || in->cls == EMU_I_JMP_IND))
			rc = emu_args_entry(
			    t, next_ip, in->cls == EMU_I_CALL_IND ? fall : 0);
		return rc;
	}
	emu_clock_step(&t->clock, kernel_ns);
	t->insns++;
	t->cur_ip = next_ip;
	if (unlikely(t->proc->nfns) &&
	    (in->cls == EMU_I_CALL || in->cls == EMU_I_JMP))
		return emu_args_entry(t, next_ip,
				      in->cls == EMU_I_CALL ? fall : 0);
	return 0;
}

int emu_data(struct emu_thread *t, unsigned kind, uint64_t entry,
	     const uint64_t *v, unsigned n)
{
	struct pt_packet pkt;
	uint64_t ip = t->cur_ip;
	int rc;

	if (!t->enabled || n > EMU_FN_MAXV)
		return 0;
	commit(t);
	/* Tracing pauses at @ip (FUP + TIP.PGD) ...  No TSC: the window takes
	 * no time, and the next branch's packet brings one when due. */
	rc = emu_pkt_ip(&t->pkt, ppt_fup, ip);
	if (rc == 0)
		rc = emu_pkt_pgd(&t->pkt);
	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_ptw;
	pkt.payload.ptw.plc = 0; /* a 4-byte header */
	pkt.payload.ptw.payload = EMU_PTW_MAGIC | (uint64_t)(kind & 0xf) << 8 |
				  (uint64_t)(n & 0xf) << 12 |
				  (entry & 0xffffull) << 16;
	if (rc == 0)
		rc = emu_pkt_raw(&t->pkt, &pkt);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		/* 4 bytes when that holds the value */
		pkt.payload.ptw.plc = v[i] >> 32 ? 1 : 0;
		pkt.payload.ptw.payload = v[i];
		rc = emu_pkt_raw(&t->pkt, &pkt);
	}
	/* ... and resumes there (MODE.Exec + TIP.PGE). */
	if (rc == 0)
		rc = emu_pkt_mode64(&t->pkt);
	if (rc == 0)
		rc = emu_pkt_ip(&t->pkt, ppt_tip_pge, ip);
	if (rc < 0)
		return rc;
	commit(t);
	return 0;
}

int emu_block(struct emu_thread *t, uint64_t start, uint64_t last, uint64_t n)
{
	int rc;

	if (unlikely(t->need_prep || start != t->cur_ip)) {
		rc = prepare(t, start);
		if (rc < 0)
			return rc;
	}
	emu_clock_steps(&t->clock, n);
	t->insns += n;
	t->cur_ip = last;
	return 0;
}

void emu_unrun(struct emu_thread *t, uint64_t ip, uint64_t n)
{
	if (n > t->insns || n > t->clock.steps)
		return;
	t->clock.steps -= n;
	t->insns -= n;
	t->cur_ip = ip;
}

void emu_advance(struct emu_thread *t, uint64_t ns)
{
	t->clock.kernel_ns += ns;
}

int emu_thread_new(struct emu_process *p, pid_t tid, uint64_t ip,
		   uint64_t now_ns, struct emu_thread **out)
{
	struct emu_thread *t;
	int rc;

	if (!p || !out || !ip || tid <= 0)
		return ps_err_detail(PS_ERR_INVAL,
				     "emulated thread needs a process, a tid "
				     "and a start address");
	t = calloc(1, sizeof(*t));
	if (!t)
		return PS_ERR_NOMEM;
	t->proc = p;
	t->tid = tid;
	emu_clock_init(&t->clock, now_ns ? now_ns : p->cfg.start_ns);
	rc = emu_pkt_init(&t->pkt, t->scratch, sizeof(t->scratch));
	if (rc < 0) {
		free(t);
		return rc;
	}
	rc = emu_ring_init(&t->ring, p->cfg.ring_size, p->psb_period);
	if (rc == 0)
		rc = psb(t, ip);
	if (rc == 0)
		rc = enable(t, ip);
	if (rc < 0) {
		emu_thread_free(t);
		return rc;
	}
	commit(t);
	t->need_prep = 0;
	truth(t, EMU_T_START, 0, ip);
	*out = t;
	return 0;
}

void emu_thread_free(struct emu_thread *t)
{
	if (!t)
		return;
	emu_args_thread_fini(t);
	emu_pkt_fini(&t->pkt);
	emu_ring_fini(&t->ring);
	free(t);
}

int emu_async(struct emu_thread *t, uint64_t from_ip, uint64_t handler_ip)
{
	int rc;

	if (!t || !handler_ip)
		return PS_ERR_INVAL;
	if (!t->enabled) {
		rc = enable(t, handler_ip);
		if (rc == 0)
			truth(t, EMU_T_SIGNAL, from_ip, handler_ip);
	} else {
		rc = async_branch(t, from_ip, handler_ip, EMU_T_SIGNAL);
	}
	if (rc < 0)
		return rc;
	commit(t);
	return 0;
}

int emu_stop(struct emu_thread *t, uint64_t ip)
{
	int rc;

	if (!t)
		return PS_ERR_INVAL;
	if (!t->enabled)
		return 0;
	/* FUP + TIP.PGD: disabled at @ip, before it runs. */
	rc = timing(t);
	if (rc == 0)
		rc = emu_pkt_ip(&t->pkt, ppt_fup, ip);
	if (rc == 0)
		rc = emu_pkt_pgd(&t->pkt);
	if (rc < 0)
		return rc;
	truth(t, EMU_T_STOP, ip, 0);
	t->enabled = 0;
	t->need_prep = 1;
	commit(t);
	return 0;
}

uint64_t emu_now(const struct emu_thread *t)
{
	return t ? emu_clock_now(&t->clock) : 0;
}

uint64_t emu_instructions(const struct emu_thread *t)
{
	return t ? t->insns : 0;
}

/* The snapshot ends as if tracing were switched off at the next
 * instruction (FUP + TIP.PGD), so the decoder stops exactly after the last
 * instruction that ran and the last span closes at the current time. */
static int snapshot_tail(const struct emu_thread *t, uint8_t *buf, size_t cap,
			 size_t *used)
{
	struct emu_pkt k;
	uint64_t now = emu_clock_now(&t->clock);
	int rc;

	*used = 0;
	if (!t->enabled)
		return 0;
	rc = emu_pkt_init(&k, buf, cap);
	if (rc < 0)
		return rc;
	k.last_ip = t->pkt.last_ip;
	k.have_ip = t->pkt.have_ip;
	k.tnt = t->pkt.tnt;
	k.tnt_bits = t->pkt.tnt_bits;
	if (now - t->last_tsc >= EMU_TSC_THRESHOLD_NS)
		rc = emu_pkt_tsc(&k, now);
	if (rc == 0)
		rc = emu_pkt_ip(&k, ppt_fup, t->cur_ip);
	if (rc == 0)
		rc = emu_pkt_pgd(&k);
	if (rc == 0)
		*used = emu_pkt_used(&k);
	emu_pkt_fini(&k);
	return rc;
}

int emu_snapshot(const struct emu_thread *t, uint8_t **buf, size_t *len)
{
	uint8_t *out;
	size_t n, tail;
	int rc;

	if (!t || !buf || !len)
		return PS_ERR_INVAL;
	rc = emu_ring_copy(&t->ring, EMU_TAIL_MAX, &out, &n);
	if (rc == PS_ERR_NOT_FOUND)
		return ps_err_detail(rc,
				     "thread %d has no complete PSB in its "
				     "ring yet",
				     (int)t->tid);
	if (rc < 0)
		return rc;
	rc = snapshot_tail(t, out + n, EMU_TAIL_MAX, &tail);
	if (rc < 0) {
		free(out);
		return rc;
	}
	*buf = out;
	*len = n + tail;
	return 0;
}

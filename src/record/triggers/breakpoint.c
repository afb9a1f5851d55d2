/* SPDX-License-Identifier: MIT */
/* The breakpoint trigger kind (kinds.h): -t NAME, NAME@MODULE, FILE:LINE,
 * addr:ADDR or "." → addresses per process (resolve.c, kept as the
 * process's trigger addresses, rec_proc.taddr) → one hardware breakpoint
 * per address on every thread (bp.c) when the backend asks for them → a
 * mark per hit, and a snapshot or the end of recording.  A backend that
 * watches the addresses itself (qemu, intel-pt) reports its hits with
 * rec_trigger_hit.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "ptscope/error.h"
#include "src/record/core/core.h"
#include "src/record/ptrace/tracee.h"
#include "src/record/triggers/bp.h"
#include "src/record/triggers/kinds.h"
#include "src/record/triggers/resolve.h"

struct bpk {
	struct rsv_spec spec[REC_MAX_TRIGGERS];
	unsigned idx[REC_MAX_TRIGGERS]; /* its place in s->o->triggers */
	size_t n;
	unsigned slot; /* rec_thr.trig[slot]: struct bpk_thr */
	int pending;   /* a spec waits for its module in some process */
};

/* The hardware breakpoints of one thread. */
struct bpk_thr {
	struct bp *bps[REC_MAX_TRIGGERS];
	int n;
	/* watched (stepped_watch): the thread stands at trigger address
	 * @at, with @rdi, and its next step runs it */
	int at_trigger;
	uint64_t at, rdi;
};

/* A backend that steps every instruction (marks_at_step) on a machine
 * whose debug registers never fire watches the stepped addresses itself
 * (bpk_step) rather than setting uprobes: a uprobe's int3 and its
 * out-of-line step show in the thread's kernel events (a page fault, a
 * SIGTRAP sent) and split the function it stands in. */
static int stepped_watch(const struct rec_session *s)
{
	return s->be->marks_at_step && bp_hw_fires() == 0;
}

static int bpk_claims(const char *spec)
{
	return 1; /* every spec that no other kind took */
}

static int bpk_init(struct rec_session *s, const unsigned *idx, size_t n,
		    unsigned slot, void **state)
{
	struct bpk *K = calloc(1, sizeof(*K));
	int r;

	if (!K)
		return PS_ERR_NOMEM;
	K->slot = slot;
	*state = K;
	for (size_t i = 0; i < n && i < REC_MAX_TRIGGERS; i++) {
		r = rsv_parse(s->o->triggers[idx[i]], &K->spec[K->n]);
		if (r)
			return r;
		K->idx[K->n++] = idx[i];
	}
	K->pending = K->n > 0;
	return 0;
}

static void bpk_fini(struct rec_session *s, void *state)
{
	struct bpk *K = state;

	if (!K)
		return;
	for (size_t i = 0; i < K->n; i++)
		rsv_spec_fini(&K->spec[i]);
	free(K);
}

static int arm_one(struct bpk_thr *bt, pid_t tid, const struct rec_taddr *ta)
{
	struct bp *bp;
	int r;

	for (int i = 0; i < bt->n; i++)
		if (bp_addr(bt->bps[i]) == ta->addr)
			return 0;
	if (bt->n == REC_MAX_TRIGGERS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "more than %d trigger addresses: a "
				     "thread has only %d debug registers",
				     REC_MAX_TRIGGERS, REC_MAX_TRIGGERS);
	r = bp_open(tid, ta->addr, &bp);
	if (r == PS_ERR_NOT_FOUND)
		return 0; /* the thread is already gone */
	if (r)
		return r;
	bt->bps[bt->n++] = bp;
	return 0;
}

static int bpk_arm(struct rec_session *s, void *state, struct rec_thr *t)
{
	struct bpk *K = state;
	struct bpk_thr *bt = t->trig[K->slot];
	int r;

	if (!s->be->hw_breakpoints || !t->proc->ntaddr)
		return 0;
	if (!bt) {
		bt = calloc(1, sizeof(*bt));
		if (!bt)
			return PS_ERR_NOMEM;
		t->trig[K->slot] = bt;
	}
	if (stepped_watch(s))
		return 0;
	for (size_t i = 0; i < t->proc->ntaddr; i++) {
		int had = bt->n;

		r = arm_one(bt, t->tid, &t->proc->taddr[i]);
		t->narmed += bt->n - had;
		if (r)
			return r;
	}
	return 0;
}

static void bpk_disarm(struct rec_session *s, void *state, struct rec_thr *t)
{
	struct bpk *K = state;
	struct bpk_thr *bt = t->trig[K->slot];

	if (!bt)
		return;
	for (int i = 0; i < bt->n; i++)
		bp_close(bt->bps[i]);
	t->narmed -= bt->n;
	free(bt);
	t->trig[K->slot] = NULL;
}

static int bpk_resolve(struct rec_session *s, void *state, struct rec_proc *p,
		       int final)
{
	struct bpk *K = state;
	int added = 0, r;

	for (size_t i = 0; i < K->n; i++) {
		unsigned bit = 1u << K->idx[i];
		struct rsv_result res = {0};

		if (p->resolved & bit)
			continue;
		/* A backend that filters the mappings itself (qemu: QEMU's own
		 * objects share the process) resolves against its list. */
		r = p->map_flags ? rsv_resolve_maps(&K->spec[i], &p->mods, &res)
				 : rsv_resolve(&K->spec[i], p->pid, &res);
		/* Not there yet: a module to be loaded, or (before the
		 * program's own code runs) a library still to be mapped. */
		if (r == RSV_PENDING || (r == PS_ERR_NOT_FOUND && !final))
			continue;
		if (r && final &&
		    rec_trigger_absent(s, p, K->idx[i], r, res.near_miss))
			continue;
		if (r)
			return r;
		for (size_t k = 0; k < res.n && !r; k++)
			r = rec_taddr_add(p, res.t[k].addr, res.t[k].symbol);
		rsv_result_fini(&res);
		if (r)
			return r;
		p->resolved |= bit;
		added = 1;
	}
	K->pending = 0;
	for (size_t i = 0; i < s->nprocs; i++)
		for (size_t k = 0; k < K->n; k++)
			if (!s->procs[i]->gone &&
			    !((s->procs[i]->resolved | s->procs[i]->absent) &
			      (1u << K->idx[k])))
				K->pending = 1;
	if (!added)
		return 0;
	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *t = s->thrs[i];

		if (t->proc != p || t->state == THR_GONE ||
		    t->state == THR_EXITING)
			continue;
		r = bpk_arm(s, K, t);
		if (r)
			return r;
	}
	return 0;
}

static int bpk_pending(const struct rec_session *s, const void *state)
{
	const struct bpk *K = state;

	return K->pending;
}

struct hit_ctx {
	struct rec_session *s;
	struct rec_thr *t;
	int hits;
	int err;
};

/* The NUL-terminated string at @addr in @pid, into @buf ("" if none). */
static void read_reason(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	ssize_t n;

	buf[0] = 0;
	if (!addr)
		return;
	n = mod_read_mem(pid, addr, buf, size - 1);
	if (n <= 0) {
		buf[0] = 0;
		return;
	}
	buf[n] = 0;
}

static int on_hit(void *ctx, const struct bp_sample *smp)
{
	struct hit_ctx *h = ctx;
	struct rec_session *s = h->s;
	struct rec_thr *t = h->t;
	const struct rec_taddr *ta = rec_taddr_find(t->proc, smp->ip);
	char reason[256];
	uint64_t now;
	int r;

	reason[0] = 0;
	if (ta && ta->is_trigger_fn)
		read_reason(t->proc->pid, smp->rdi, reason, sizeof(reason));
	/* The breakpoint fired as the step ran the function's first
	 * instruction: the mark goes at the start of that step.  A backend
	 * that does not step uses the sample's own time. */
	now = t->traced && s->be->marks_at_step ? t->step_ns : smp->time_ns;
	r = rec_trigger_hit(s, t, smp->ip, now, smp->rdi, ta ? ta->symbol : "",
			    reason);
	if (r < 0) {
		h->err = r;
		return 1;
	}
	h->hits++;
	return r;
}

static int bpk_check(struct rec_session *s, void *state, struct rec_thr *t)
{
	struct bpk *K = state;
	struct bpk_thr *bt = t->trig[K->slot];
	struct hit_ctx h = {s, t, 0, 0};
	int r;

	for (int i = 0; bt && i < bt->n && !s->stop_reason; i++) {
		if (!bp_pending(bt->bps[i]))
			continue;
		r = bp_read(bt->bps[i], on_hit, &h);
		if (h.err)
			return h.err;
		if (r < 0)
			return r;
	}
	return h.hits;
}

/* stepped_watch: the step that ran a trigger's first instruction is a
 * hit, marked at its start with the rdi the thread had there (what a
 * debug register reports); a step that ends at a trigger address makes
 * the next one a hit. */
static int bpk_step(struct rec_session *s, void *state, struct rec_thr *t,
		    uint64_t next_ip, uint64_t v0, uint64_t v1)
{
	struct bpk *K = state;
	struct bpk_thr *bt = t->trig[K->slot];
	int r = 0;

	(void)v1;
	if (!bt || !stepped_watch(s))
		return 0;
	if (bt->at_trigger) {
		struct bp_sample smp = {.pid = (uint32_t)t->proc->pid,
					.tid = (uint32_t)t->tid,
					.time_ns = v0,
					.ip = bt->at,
					.rdi = bt->rdi};
		struct hit_ctx h = {s, t, 0, 0};

		bt->at_trigger = 0;
		r = on_hit(&h, &smp);
		if (h.err)
			return h.err;
		if (r)
			return r;
	}
	if (rec_taddr_find(t->proc, next_ip)) {
		bt->at_trigger = 1;
		bt->at = next_ip;
		if (trc_reg(t->tid, offsetof(struct user_regs_struct, rdi),
			    &bt->rdi))
			bt->rdi = 0;
	}
	return 0;
}

const struct rec_trigger_kind rec_trigger_breakpoint = {
    .name = "breakpoint",
    .claims = bpk_claims,
    .init = bpk_init,
    .fini = bpk_fini,
    .resolve = bpk_resolve,
    .pending = bpk_pending,
    .arm = bpk_arm,
    .disarm = bpk_disarm,
    .check = bpk_check,
    .step = bpk_step,
};

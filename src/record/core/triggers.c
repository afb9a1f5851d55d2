/* SPDX-License-Identifier: MIT */
/* Triggers: -t specs → addresses per process (resolve.c) → one hardware
 * breakpoint per address on every thread (bp.c) → a mark per hit, and a
 * snapshot or the end of recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/triggers/bp.h"
#include "src/record/triggers/latency.h"
#include "src/record/core/core.h"

int rec_triggers_init(struct rec_session *s)
{
	const struct rec_options *o = s->o;
	int r;

	r = rec_latency_init(s); /* the NAME>DURATION specs */
	if (r)
		return r;
	if (o->ntriggers > REC_MAX_TRIGGERS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "%zu triggers given, at most %d fit in "
				     "the debug registers",
				     o->ntriggers, REC_MAX_TRIGGERS);
	for (size_t i = 0; i < o->ntriggers; i++) {
		if (rec_latency_is_spec(o->triggers[i]))
			continue;
		r = rsv_parse(o->triggers[i], &s->trig[s->ntrig]);
		if (r)
			return r;
		s->ntrig++;
	}
	s->triggers_pending = s->ntrig > 0;
	return 0;
}

void rec_triggers_fini(struct rec_session *s)
{
	for (size_t i = 0; i < s->ntrig; i++)
		rsv_spec_fini(&s->trig[i]);
	for (size_t i = 0; i < s->nprocs; i++)
		rec_triggers_forget(s->procs[i]);
	s->ntrig = 0;
}

void rec_triggers_forget(struct rec_proc *p)
{
	for (size_t i = 0; i < p->ntaddr; i++)
		free(p->taddr[i].symbol);
	p->ntaddr = 0;
	p->resolved = 0;
}

static int arm_one(struct rec_thr *t, const struct rec_taddr *ta)
{
	struct bp *bp;
	int r;

	for (int i = 0; i < t->nbps; i++)
		if (bp_addr(t->bps[i]) == ta->addr)
			return 0;
	if (t->nbps == REC_MAX_TRIGGERS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "more than %d trigger addresses: a "
				     "thread has only %d debug registers",
				     REC_MAX_TRIGGERS, REC_MAX_TRIGGERS);
	r = bp_open(t->tid, ta->addr, &bp);
	if (r == PS_ERR_NOT_FOUND)
		return 0; /* the thread is already gone */
	if (r)
		return r;
	t->bps[t->nbps++] = bp;
	return 0;
}

int rec_triggers_arm(struct rec_session *s, struct rec_thr *t)
{
	int r;

	if (!s->be->hw_breakpoints)
		return 0;
	for (size_t i = 0; i < t->proc->ntaddr; i++) {
		r = arm_one(t, &t->proc->taddr[i]);
		if (r)
			return r;
	}
	return 0;
}

void rec_triggers_disarm(struct rec_thr *t)
{
	for (int i = 0; i < t->nbps; i++)
		bp_close(t->bps[i]);
	t->nbps = 0;
}

static int add_addr(struct rec_proc *p, const struct rsv_target *tg)
{
	struct rec_taddr *ta;

	for (size_t i = 0; i < p->ntaddr; i++)
		if (p->taddr[i].addr == tg->addr)
			return 0;
	if (p->ntaddr == REC_MAX_TRIGGERS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "the triggers resolve to more than %d "
				     "addresses; a thread has only %d debug "
				     "registers",
				     REC_MAX_TRIGGERS, REC_MAX_TRIGGERS);
	ta = &p->taddr[p->ntaddr];
	ta->addr = tg->addr;
	ta->symbol = strdup(tg->symbol ? tg->symbol : "");
	if (!ta->symbol)
		return PS_ERR_NOMEM;
	ta->is_trigger_fn = !strcmp(ta->symbol, "ptscope_trigger");
	p->ntaddr++;
	return 0;
}

int rec_triggers_resolve(struct rec_session *s, struct rec_proc *p, int final)
{
	int added = 0, r;

	r = rec_latency_resolve(s, p, final);
	if (r)
		return r;
	for (size_t i = 0; i < s->ntrig; i++) {
		struct rsv_result res = {0};

		if (p->resolved & (1u << i))
			continue;
		/* A backend that filters the mappings itself (qemu: QEMU's own
		 * objects share the process) resolves against its list. */
		r = p->map_flags ? rsv_resolve_maps(&s->trig[i], &p->mods, &res)
				 : rsv_resolve(&s->trig[i], p->pid, &res);
		/* Not there yet: a module to be loaded, or (before the
		 * program's own code runs) a library still to be mapped. */
		if (r == RSV_PENDING || (r == PS_ERR_NOT_FOUND && !final))
			continue;
		if (r)
			return r;
		for (size_t k = 0; k < res.n && !r; k++)
			r = add_addr(p, &res.t[k]);
		rsv_result_fini(&res);
		if (r)
			return r;
		p->resolved |= 1u << i;
		added = 1;
	}
	if (final)
		p->final_checked = 1;
	s->triggers_pending = rec_latency_pending(s);
	for (size_t i = 0; i < s->nprocs; i++)
		if (!s->procs[i]->gone &&
		    s->procs[i]->resolved != (1u << s->ntrig) - 1)
			s->triggers_pending = 1;
	if (!added)
		return 0;
	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *t = s->thrs[i];

		if (t->proc != p || t->state == THR_GONE ||
		    t->state == THR_EXITING)
			continue;
		r = rec_triggers_arm(s, t);
		if (r)
			return r;
	}
	return 0;
}

struct hit_ctx {
	struct rec_session *s;
	struct rec_thr *t;
	int hits;
	int err;
};

static const struct rec_taddr *taddr_of(const struct rec_proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->ntaddr; i++)
		if (p->taddr[i].addr == addr)
			return &p->taddr[i];
	return NULL;
}

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

int rec_trigger_hit(struct rec_session *s, struct rec_thr *t, uint64_t ip,
		    uint64_t now, uint64_t arg, const char *symbol,
		    const char *reason)
{
	char text[512];
	int r;

	snprintf(text, sizeof(text), "%s%s%s", symbol ? symbol : "",
		 reason && reason[0] ? "\n" : "", reason ? reason : "");
	r = rec_mark_add(s, REC_MARK_TRIGGER, t, now, ip, arg, text);
	return r ? r : rec_trigger_snapshot(s, "trigger");
}

int rec_trigger_snapshot(struct rec_session *s, const char *reason)
{
	int r;

	s->res->trigger_hits++;
	if (!s->o->multi_snapshot) {
		s->stop_reason = reason;
		return 1;
	}
	r = rec_snapshot_take(s, reason);
	if (r)
		return r;
	if (s->res->snapshots >= s->o->multi_snapshot) {
		s->stop_reason = "limit";
		return 1;
	}
	return 0;
}

static int on_hit(void *ctx, const struct bp_sample *smp)
{
	struct hit_ctx *h = ctx;
	struct rec_session *s = h->s;
	struct rec_thr *t = h->t;
	const struct rec_taddr *ta = taddr_of(t->proc, smp->ip);
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

int rec_triggers_check(struct rec_session *s, struct rec_thr *t)
{
	struct hit_ctx h = {s, t, 0, 0};
	int r;

	for (int i = 0; i < t->nbps && !s->stop_reason; i++) {
		if (!bp_pending(t->bps[i]))
			continue;
		r = bp_read(t->bps[i], on_hit, &h);
		if (h.err)
			return h.err;
		if (r < 0)
			return r;
	}
	return h.hits;
}

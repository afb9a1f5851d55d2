/* SPDX-License-Identifier: MIT */
/* The trigger registry (core.h): the kinds the recorder registers, each
 * -t spec handed to the kind that claims it, the rec_triggers_* calls
 * dispatched to the kinds, the trigger addresses of each process, and
 * what every hit leads to: a mark, then a snapshot or the end of
 * recording.  It knows no kind by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/core/core.h"

/* Call @op of every kind that has specs, stopping at the first error. */
#define EACH_KIND(s, i) for (size_t i = 0; i < (s)->nkinds; i++)

int rec_triggers_init(struct rec_session *s,
		      const struct rec_trigger_kind *const *kinds,
		      size_t nkinds)
{
	const struct rec_options *o = s->o;
	unsigned idx[REC_MAX_KINDS][REC_MAX_TRIGGERS];
	size_t n[REC_MAX_KINDS] = {0};
	int r;

	if (o->ntriggers > REC_MAX_TRIGGERS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "%zu triggers given, at most %d fit in "
				     "the debug registers",
				     o->ntriggers, REC_MAX_TRIGGERS);
	if (nkinds > REC_MAX_KINDS)
		return ps_err_detail(PS_ERR_LIMIT, "too many trigger kinds");
	for (size_t i = 0; i < o->ntriggers; i++)
		for (size_t k = 0; k < nkinds; k++)
			if (kinds[k]->claims(o->triggers[i])) {
				idx[k][n[k]++] = (unsigned)i;
				break;
			}
	for (size_t k = 0; k < nkinds; k++) {
		void *state = NULL;

		if (!n[k])
			continue;
		s->kinds[s->nkinds] = kinds[k];
		r = kinds[k]->init(s, idx[k], n[k], (unsigned)s->nkinds,
				   &state);
		s->kstate[s->nkinds++] = state;
		if (r)
			return r;
	}
	s->triggers_pending = 0;
	EACH_KIND(s, k)
	if (s->kinds[k]->pending && s->kinds[k]->pending(s, s->kstate[k]))
		s->triggers_pending = 1;
	return 0;
}

void rec_triggers_fini(struct rec_session *s)
{
	for (size_t i = 0; i < s->nthrs; i++)
		rec_triggers_disarm(s, s->thrs[i]);
	for (size_t i = 0; i < s->nprocs; i++)
		rec_triggers_forget(s, s->procs[i]);
	EACH_KIND(s, k)
	if (s->kinds[k]->fini)
		s->kinds[k]->fini(s, s->kstate[k]);
	s->nkinds = 0;
}

int rec_triggers_wanted(const struct rec_session *s)
{
	return s->nkinds > 0;
}

int rec_taddr_add(struct rec_proc *p, uint64_t addr, const char *symbol)
{
	struct rec_taddr *ta;

	if (rec_taddr_find(p, addr))
		return 0;
	if (p->ntaddr == REC_MAX_TRIGGERS)
		return ps_err_detail(PS_ERR_LIMIT,
				     "the triggers resolve to more than %d "
				     "addresses; a thread has only %d debug "
				     "registers",
				     REC_MAX_TRIGGERS, REC_MAX_TRIGGERS);
	ta = &p->taddr[p->ntaddr];
	ta->addr = addr;
	ta->symbol = strdup(symbol ? symbol : "");
	if (!ta->symbol)
		return PS_ERR_NOMEM;
	ta->is_trigger_fn = !strcmp(ta->symbol, "ptscope_trigger");
	p->ntaddr++;
	return 0;
}

const struct rec_taddr *rec_taddr_find(const struct rec_proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->ntaddr; i++)
		if (p->taddr[i].addr == addr)
			return &p->taddr[i];
	return NULL;
}

void rec_triggers_forget(struct rec_session *s, struct rec_proc *p)
{
	for (size_t i = 0; i < p->ntaddr; i++)
		free(p->taddr[i].symbol);
	p->ntaddr = 0;
	p->resolved = 0;
	p->absent = 0;
	p->final_checked = 0;
	EACH_KIND(s, k)
	if (s->kinds[k]->forget)
		s->kinds[k]->forget(s, s->kstate[k], p);
}

int rec_triggers_resolve(struct rec_session *s, struct rec_proc *p, int final)
{
	int r;

	EACH_KIND(s, k)
	{
		if (!s->kinds[k]->resolve)
			continue;
		r = s->kinds[k]->resolve(s, s->kstate[k], p, final);
		if (r)
			return r;
	}
	if (final)
		p->final_checked = 1;
	s->triggers_ever |= p->resolved;
	s->triggers_pending = 0;
	EACH_KIND(s, k)
	if (s->kinds[k]->pending && s->kinds[k]->pending(s, s->kstate[k]))
		s->triggers_pending = 1;
	return 0;
}

int rec_triggers_arm(struct rec_session *s, struct rec_thr *t)
{
	int r;

	EACH_KIND(s, k)
	{
		if (!s->kinds[k]->arm)
			continue;
		r = s->kinds[k]->arm(s, s->kstate[k], t);
		if (r)
			return r;
	}
	return 0;
}

void rec_triggers_disarm(struct rec_session *s, struct rec_thr *t)
{
	EACH_KIND(s, k)
	if (s->kinds[k]->disarm)
		s->kinds[k]->disarm(s, s->kstate[k], t);
}

int rec_triggers_check(struct rec_session *s, struct rec_thr *t)
{
	int hits = 0, r;

	EACH_KIND(s, k)
	{
		if (!s->kinds[k]->check)
			continue;
		r = s->kinds[k]->check(s, s->kstate[k], t);
		if (r < 0)
			return r;
		hits += r;
	}
	return hits;
}

int rec_triggers_step(struct rec_session *s, struct rec_thr *t,
		      uint64_t next_ip, uint64_t v0, uint64_t v1)
{
	int r;

	EACH_KIND(s, k)
	{
		if (!s->kinds[k]->step)
			continue;
		r = s->kinds[k]->step(s, s->kstate[k], t, next_ip, v0, v1);
		if (r)
			return r;
	}
	return 0;
}

/* One kind times calls (latency); its spec numbers are its own. */
size_t rec_triggers_timed(const struct rec_session *s, pid_t pid,
			  struct rec_timed_fn *out, size_t max)
{
	EACH_KIND(s, k)
	if (s->kinds[k]->timed)
		return s->kinds[k]->timed(s, s->kstate[k], pid, out, max);
	return 0;
}

int rec_triggers_slow_call(struct rec_session *s, struct rec_thr *t,
			   unsigned idx, uint64_t addr, uint64_t start,
			   uint64_t end)
{
	EACH_KIND(s, k)
	if (s->kinds[k]->slow_call)
		return s->kinds[k]->slow_call(s, s->kstate[k], t, idx, addr,
					      start, end);
	return 0;
}

int rec_triggers_want_sidecar(const struct rec_session *s)
{
	EACH_KIND(s, k)
	if (s->kinds[k]->wants_sidecar &&
	    s->kinds[k]->wants_sidecar(s, s->kstate[k]))
		return 1;
	return 0;
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

int rec_crash_mark(struct rec_session *s, struct rec_thr *t, uint64_t now,
		   uint64_t ip, int sig, uint64_t addr, int has_addr)
{
	char text[128];
	int r;

	if (has_addr)
		snprintf(text, sizeof(text), "%s (fault address 0x%llx)",
			 ps_signame(sig), (unsigned long long)addr);
	else
		snprintf(text, sizeof(text), "%s", ps_signame(sig));
	r = rec_mark_add(s, REC_MARK_SIGNAL, t, now, ip, (uint64_t)sig, text);
	if (r)
		return r;
	t->inject = sig;
	if (s->res && t->proc->pid != s->res->pid) {
		/* Another process of the command's tree: a snapshot as for
		 * a trigger hit (--multi-snapshot goes on after it), and the
		 * command's status stays its own. */
		if (!s->o->multi_snapshot) {
			s->stop_reason = "signal";
			return 0;
		}
		r = rec_snapshot_take(s, "signal");
		if (!r && s->res->snapshots >= s->o->multi_snapshot)
			s->stop_reason = "limit";
		return r ? r : !s->stop_reason;
	}
	if (s->res) {
		s->res->killed_by = sig;
		s->res->fault_addr = addr;
		s->res->fault_ip = ip;
		s->res->fault_tid = t->tid;
	}
	s->stop_reason = "signal";
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Kernel spans that nest (see kreplay_nest.h).
 *
 * Function spans come from the decoder's clock, kernel spans from the
 * kernel's, mapped onto it; the two can cross by a few nanoseconds (a
 * function's end is known to the next timing packet), and a span that
 * starts inside another and ends after it is one Perfetto cannot show: it
 * cuts the open spans short and counts a misplaced end (data loss).  So
 * each kernel span is kept inside one gap between the thread's function
 * begins and ends (the longest piece of it), never starting or ending
 * at one of them, and kernel spans that overlap are made to nest, a
 * child starting strictly after its parent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/kevents/kreplay_nest.h"

/* Note where @a's string args live among its own strings. */
static void note_strings(struct kspan *k, const struct args *a)
{
	k->a = *a;
	for (size_t i = 0; i < k->a.n; i++) {
		const char *s = a->a[i].v.s;

		k->sidx[i] = -1;
		if (a->a[i].type != PS_ARG_STRING || !s)
			continue;
		for (size_t j = 0; j < 4; j++)
			if (s >= a->str[j] && s < a->str[j] + 128) {
				k->sidx[i] = (signed char)j;
				k->soff[i] = (unsigned char)(s - a->str[j]);
			}
	}
}

/* @k's args, their strings pointing into @k as it is now. */
static void fix_strings(struct kspan *k)
{
	for (size_t i = 0; i < k->a.n; i++)
		if (k->sidx[i] >= 0)
			k->a.a[i].v.s = k->a.str[k->sidx[i]] + k->soff[i];
}

int kspans_add(struct kspans *l, uint64_t pid, uint64_t tid, uint64_t t0,
	       uint64_t dur, const char *name, const char *cat,
	       const struct args *a)
{
	struct kspan *s;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct kspan *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return PS_ERR_NOMEM;
		l->v = nv;
		l->cap = cap;
	}
	s = &l->v[l->n];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->tid = tid;
	s->t0 = t0;
	s->t1 = t0 + dur;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
	s->cat = cat;
	if (a)
		note_strings(s, a);
	s->seq = l->n++;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct kspan *x = a, *y = b;

	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1) /* the longer one is the parent */
		return x->t1 > y->t1 ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int write_span(struct ps_writer *w, struct kspan *s)
{
	struct ps_event ev;

	fix_strings(s);
	memset(&ev, 0, sizeof(ev));
	ev.type = PS_EV_COMPLETE;
	ev.pid = s->pid;
	ev.tid = s->tid;
	ev.ts = s->t0;
	ev.dur = s->t1 - s->t0;
	ev.name = s->name;
	ev.category = s->cat;
	ev.args = s->a.a;
	ev.nargs = s->a.n;
	return w->ops->event(w, &ev);
}

/* The wakeup arrow: from the waking thread at the wakeup to @s's thread
 * as it runs again; only when a span encloses each end (Perfetto binds
 * an arrow to the span open there, and reports one with none). */
static int write_flow(struct ps_writer *w, const struct krp_tap *tap,
		      const struct kspan *s, uint64_t tid)
{
	static uint64_t next_id;
	struct ps_event ev;
	int r;

	if (!krp_tap_open_at(tap, s->flow_tid, s->flow_ts) ||
	    !krp_tap_open_at(tap, tid, s->t1))
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.type = PS_EV_FLOW_BEGIN;
	ev.pid = s->pid;
	ev.tid = s->flow_tid;
	ev.ts = s->flow_ts;
	ev.name = "wakeup";
	ev.category = "sched";
	ev.flow_id = KRP_FLOW_BASE | ++next_id;
	r = w->ops->event(w, &ev);
	if (r)
		return r;
	ev.type = PS_EV_FLOW_END;
	ev.tid = tid;
	ev.ts = s->t1;
	return w->ops->event(w, &ev);
}

int kspans_write(struct kspans *l, struct ps_writer *w,
		 const struct krp_tap *tap, uint64_t tid, uint64_t *written)
{
	struct kspan **stack;
	size_t depth = 0;
	int r = 0;

	for (size_t i = 0; i < l->n; i++)
		krp_tap_clamp(tap, tid, &l->v[i].t0, &l->v[i].t1);
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), by_start);
	stack = malloc((l->n ? l->n : 1) * sizeof(*stack));
	if (!stack)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < l->n && !r; i++) {
		struct kspan *s = &l->v[i];

		while (depth && stack[depth - 1]->t1 <= s->t0)
			depth--;
		if (depth) {
			const struct kspan *p = stack[depth - 1];

			if (s->t0 <= p->t0)
				s->t0 = p->t0 + 1;
			if (s->t1 > p->t1)
				s->t1 = p->t1;
			if (s->t0 > s->t1)
				s->t0 = s->t1;
		}
		if (s->t1 > s->t0)
			stack[depth++] = s;
		r = write_span(w, s);
		if (!r && s->flow)
			r = write_flow(w, tap, s, tid);
		if (!r)
			++*written;
	}
	free(stack);
	l->n = 0;
	return r;
}

void kspans_free(struct kspans *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

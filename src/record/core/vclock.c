/* SPDX-License-Identifier: MIT */
/* One virtual timeline across threads (see core.h). */
#include <errno.h>
#include <sys/syscall.h>

#include "src/record/core/core.h"
#include "src/record/emulate/timed_out.h"

void vclk_init(struct vclk *v)
{
	v->k_ns = 0;
	v->seq = 0;
	v->floor = 0;
	v->step_min = UINT64_MAX;
	v->n_user = 0;
	v->n_parked = 0;
	v->recheck = 0;
}

static void set_user(struct rec_session *s, struct rec_thr *t, int on)
{
	struct vclk *v = &s->vc;

	if (t->user == on)
		return;
	t->user = on;
	if (on) {
		uint64_t now = s->be->now(s, t);

		v->n_user++;
		/* A thread back from the kernel may be behind the others:
		 * the cached floor must not stay above it. */
		if (now < v->floor)
			v->floor = now;
	} else {
		v->n_user--;
		v->recheck = 1; /* the floor may rise */
	}
}

void vclk_resume(struct rec_session *s, struct rec_thr *t, uint64_t real,
		 int in_sys)
{
	struct vclk *v = &s->vc;

	if (t->in_sys)
		return;
	if (!in_sys) {
		set_user(s, t, 1);
		return;
	}
	set_user(s, t, 0);
	t->in_sys = 1;
	t->sys_r0 = real;
	t->sys_k0 = v->k_ns;
	t->sys_seq0 = v->seq;
}

void vclk_leave(struct rec_session *s, struct rec_thr *t)
{
	set_user(s, t, 0);
	t->in_sys = 0;
	if (t->parked) {
		t->parked = 0;
		s->vc.n_parked--;
	}
}

void vclk_sample(struct vclk *v, uint64_t real_cost)
{
	if (real_cost < v->step_min)
		v->step_min = real_cost;
}

int vclk_timed_out(uint64_t nr, int64_t ret)
{
	return emu_timed_out(nr, ret);
}

uint64_t vclk_syscall_end(struct rec_session *s, struct rec_thr *t,
			  uint64_t real, uint64_t before, int timed)
{
	struct vclk *v = &s->vc;
	uint64_t own, latest = 0;

	own = timed ? real - t->sys_r0 : v->k_ns - t->sys_k0;
	/* The step that ran the call cost at least step_min of tracing. */
	if (v->step_min != UINT64_MAX)
		own = own > v->step_min ? own - v->step_min : 0;
	/* Whoever woke it stepped during the call: end after all of them. */
	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *x = s->thrs[i];
		uint64_t now;

		/* Exited threads count: an exit wakes a joiner. */
		if (x == t || x->last_seq <= t->sys_seq0)
			continue;
		now = s->be->now(s, x);
		if (now > latest)
			latest = now;
	}
	if (latest > before + own)
		own = latest - before;
	t->in_sys = 0;
	t->sys_ns = own;
	return own;
}

uint64_t vclk_floor(struct rec_session *s)
{
	uint64_t floor = UINT64_MAX;

	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *x = s->thrs[i];
		uint64_t now;

		if (!x->user || !x->traced || x->state == THR_GONE)
			continue;
		now = s->be->now(s, x);
		if (now < floor)
			floor = now;
	}
	s->vc.floor = floor;
	return floor;
}

/* The latest clock a thread may have while @floor is the slowest. */
static uint64_t limit(uint64_t floor)
{
	return floor > UINT64_MAX - VCLK_WINDOW_NS ? UINT64_MAX
						   : floor + VCLK_WINDOW_NS;
}

int vclk_may_run(const struct rec_session *s, uint64_t now)
{
	return now <= limit(s->vc.floor);
}

int vclk_ahead(struct rec_session *s, struct rec_thr *t, uint64_t now)
{
	(void)t;
	if (now <= limit(s->vc.floor))
		return 0;
	s->vc.recheck = 1; /* the floor is recomputed: it may have risen */
	return now > limit(vclk_floor(s));
}

void vclk_park(struct rec_session *s, struct rec_thr *t)
{
	set_user(s, t, 1);
	t->parked = 1;
	s->vc.n_parked++;
}

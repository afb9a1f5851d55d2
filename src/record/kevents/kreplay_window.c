/* SPDX-License-Identifier: MIT */
/* The window tap of the kernel-event replay (see kevents.h): a writer
 * that passes the decoder's events through and notes each thread's first
 * span time, so kernel events outside the snapshot window are left out. */
#include <stdlib.h>

#include "ptscope/error.h"
#include "src/record/kevents/kevents.h"

struct krp_tap {
	struct ps_writer base; /* first: a ps_writer */
	struct ps_writer *inner;
	uint64_t outer_epoch; /* the producer's epoch last seen */
	uint64_t saved;	      /* inner's epoch before ours */
	struct {
		uint64_t tid, first;
	} * thr;
	size_t nthr;
};

static void note(struct krp_tap *t, uint64_t tid, uint64_t ts)
{
	for (size_t i = 0; i < t->nthr; i++) {
		if (t->thr[i].tid != tid)
			continue;
		if (ts < t->thr[i].first)
			t->thr[i].first = ts;
		return;
	}
	if (!(t->nthr & (t->nthr - 1)) || t->nthr < 8) {
		size_t cap = t->nthr < 8 ? 8 : t->nthr * 2;
		void *n = realloc(t->thr, cap * sizeof(*t->thr));

		if (!n)
			return; /* no window for this thread: all is kept */
		t->thr = n;
	}
	t->thr[t->nthr].tid = tid;
	t->thr[t->nthr].first = ts;
	t->nthr++;
}

/* The producer's string-stability epochs map onto fresh epochs of the
 * inner writer, so the inner writer never mixes them with its own. */
static void sync_epoch(struct krp_tap *t)
{
	if (t->base.stable_epoch == t->outer_epoch)
		return;
	if (t->outer_epoch)
		ps_writer_stable_end(t->inner, t->saved);
	t->outer_epoch = t->base.stable_epoch;
	if (t->outer_epoch)
		t->saved = ps_writer_stable_begin(t->inner);
}

static int tap_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct krp_tap *t = (struct krp_tap *)w;

	return t->inner->ops->process(t->inner, pid, name);
}

static int tap_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		      const char *name)
{
	struct krp_tap *t = (struct krp_tap *)w;

	return t->inner->ops->thread(t->inner, pid, tid, name);
}

static int tap_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct krp_tap *t = (struct krp_tap *)w;

	return ps_write_parent(t->inner, pid, ppid);
}

static int tap_meta(struct ps_writer *w, const char *k, const char *v)
{
	struct krp_tap *t = (struct krp_tap *)w;

	return t->inner->ops->meta(t->inner, k, v);
}

static int tap_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct krp_tap *t = (struct krp_tap *)w;

	sync_epoch(t);
	if (ev->type == PS_EV_BEGIN || ev->type == PS_EV_COMPLETE)
		note(t, ev->tid, ev->ts);
	return t->inner->ops->event(t->inner, ev);
}

static int tap_flush(struct ps_writer *w)
{
	(void)w;
	return 0;
}

static void tap_destroy(struct ps_writer *w)
{
	(void)w;
}

static const struct ps_writer_ops tap_ops = {
    .name = "window tap",
    .process = tap_process,
    .thread = tap_thread,
    .parent = tap_parent,
    .meta = tap_meta,
    .event = tap_event,
    .flush = tap_flush,
    .destroy = tap_destroy,
};

int krp_tap_new(struct ps_writer *inner, struct krp_tap **out)
{
	struct krp_tap *t = calloc(1, sizeof(*t));

	if (!t)
		return PS_ERR_NOMEM;
	t->base.ops = &tap_ops;
	t->inner = inner;
	*out = t;
	return 0;
}

struct ps_writer *krp_tap_writer(struct krp_tap *tap)
{
	return &tap->base;
}

void krp_tap_end(struct krp_tap *tap)
{
	if (tap && tap->outer_epoch) {
		ps_writer_stable_end(tap->inner, tap->saved);
		tap->outer_epoch = 0;
	}
}

void krp_tap_free(struct krp_tap *tap)
{
	if (!tap)
		return;
	krp_tap_end(tap);
	free(tap->thr);
	free(tap);
}

uint64_t krp_tap_first(const struct krp_tap *t, uint64_t tid)
{
	if (!t)
		return 0;
	for (size_t i = 0; i < t->nthr; i++)
		if (t->thr[i].tid == tid)
			return t->thr[i].first;
	return 0;
}

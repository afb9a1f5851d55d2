/* SPDX-License-Identifier: MIT */
/* The window tap of the kernel-event replay (see kevents.h): a writer
 * that passes the decoder's events through and notes each thread's first
 * span time, so kernel events outside the snapshot window are left out. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/writer_filter.h"
#include "src/record/kevents/kevents.h"

struct krp_tap {
	struct ps_filter f; /* first: a ps_writer passing events on */
	struct tap_thr {
		uint64_t tid, first;
		/* Times of the thread's span begins and ends, sorted by
		 * krp_tap_end (the nesting of kernel spans); bad: memory
		 * ran out, nothing is known. */
		struct tap_times {
			uint64_t *t;
			size_t n, cap;
		} begins, ends;
		int bad;
	} * thr;
	size_t nthr;
};

static void add_time(struct tap_thr *th, struct tap_times *v, uint64_t ts)
{
	if (th->bad)
		return;
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		uint64_t *n = realloc(v->t, cap * sizeof(*n));

		if (!n) {
			th->bad = 1;
			return;
		}
		v->t = n;
		v->cap = cap;
	}
	v->t[v->n++] = ts;
}

static struct tap_thr *find_thr(const struct krp_tap *t, uint64_t tid)
{
	for (size_t i = 0; i < t->nthr; i++)
		if (t->thr[i].tid == tid)
			return &t->thr[i];
	return NULL;
}

static void note(struct krp_tap *t, const struct ps_event *ev)
{
	struct tap_thr *th = find_thr(t, ev->tid);

	if (!th) {
		if (!(t->nthr & (t->nthr - 1)) || t->nthr < 8) {
			size_t cap = t->nthr < 8 ? 8 : t->nthr * 2;
			void *n = realloc(t->thr, cap * sizeof(*t->thr));

			if (!n)
				return; /* no window for this thread: all
					 * is kept */
			t->thr = n;
		}
		th = &t->thr[t->nthr++];
		memset(th, 0, sizeof(*th));
		th->tid = ev->tid;
		th->first = ev->ts;
	}
	if (ev->type != PS_EV_END && ev->ts < th->first)
		th->first = ev->ts;
	if (ev->type == PS_EV_BEGIN || ev->type == PS_EV_COMPLETE)
		add_time(th, &th->begins, ev->ts);
	if (ev->type == PS_EV_END)
		add_time(th, &th->ends, ev->ts);
	if (ev->type == PS_EV_COMPLETE)
		add_time(th, &th->ends, ev->ts + ev->dur);
}

static int tap_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct krp_tap *t = (struct krp_tap *)w;

	ps_filter_sync_epoch(&t->f);
	if (ev->type == PS_EV_BEGIN || ev->type == PS_EV_COMPLETE ||
	    (ev->type == PS_EV_END && find_thr(t, ev->tid)))
		note(t, ev);
	return t->f.inner->ops->event(t->f.inner, ev);
}

static const struct ps_writer_ops tap_ops = {
    .name = "window tap",
    .process = ps_filter_process,
    .thread = ps_filter_thread,
    .parent = ps_filter_parent,
    .meta = ps_filter_meta,
    .event = tap_event,
    .flush = ps_filter_flush,
    .destroy = ps_filter_destroy,
};

int krp_tap_new(struct ps_writer *inner, struct krp_tap **out)
{
	struct krp_tap *t = calloc(1, sizeof(*t));

	if (!t)
		return PS_ERR_NOMEM;
	ps_filter_init(&t->f, &tap_ops, inner);
	*out = t;
	return 0;
}

struct ps_writer *krp_tap_writer(struct krp_tap *tap)
{
	return &tap->f.base;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void krp_tap_end(struct krp_tap *tap)
{
	if (!tap)
		return;
	ps_filter_end(&tap->f);
	for (size_t i = 0; i < tap->nthr; i++) {
		struct tap_thr *th = &tap->thr[i];

		if (th->begins.n > 1)
			qsort(th->begins.t, th->begins.n, sizeof(uint64_t),
			      cmp_u64);
		if (th->ends.n > 1)
			qsort(th->ends.t, th->ends.n, sizeof(uint64_t),
			      cmp_u64);
	}
}

void krp_tap_free(struct krp_tap *tap)
{
	if (!tap)
		return;
	krp_tap_end(tap);
	for (size_t i = 0; i < tap->nthr; i++) {
		free(tap->thr[i].begins.t);
		free(tap->thr[i].ends.t);
	}
	free(tap->thr);
	free(tap);
}

uint64_t krp_tap_first(const struct krp_tap *t, uint64_t tid)
{
	const struct tap_thr *th = t ? find_thr(t, tid) : NULL;

	return th ? th->first : 0;
}

/* How many of the sorted @v are <= @ts (< @ts when @strict). */
static size_t count_upto(const struct tap_times *v, uint64_t ts, int strict)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->t[mid] < ts || (!strict && v->t[mid] == ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int krp_tap_open_at(const struct krp_tap *t, uint64_t tid, uint64_t ts)
{
	const struct tap_thr *th = t ? find_thr(t, tid) : NULL;

	if (!t || (th && th->bad))
		return -1;
	if (!th)
		return 0; /* no span at all (not a traced thread) */
	/* Begins at or before ts, minus ends at or before ts: a span that
	 * ends at ts no longer encloses it. */
	return count_upto(&th->begins, ts, 0) > count_upto(&th->ends, ts, 0);
}

/* The smallest begin or end time of @th in (@after, +inf), or UINT64_MAX. */
static uint64_t next_time(const struct tap_thr *th, uint64_t after)
{
	size_t i = count_upto(&th->begins, after, 0),
	       j = count_upto(&th->ends, after, 0);
	uint64_t a = i < th->begins.n ? th->begins.t[i] : UINT64_MAX,
		 b = j < th->ends.n ? th->ends.t[j] : UINT64_MAX;

	return a < b ? a : b;
}

static int is_time(const struct tap_thr *th, uint64_t ts)
{
	return count_upto(&th->begins, ts, 0) !=
		   count_upto(&th->begins, ts, 1) ||
	       count_upto(&th->ends, ts, 0) != count_upto(&th->ends, ts, 1);
}

void krp_tap_clamp(const struct krp_tap *t, uint64_t tid, uint64_t *t0,
		   uint64_t *t1)
{
	const struct tap_thr *th = t ? find_thr(t, tid) : NULL;
	uint64_t best0 = *t0, best1 = *t0, u = *t0;

	if (!th || th->bad || *t1 <= *t0)
		return;
	/* The pieces of [t0, t1] between span begins and ends; keep the
	 * longest, starting just after a begin or end and ending just
	 * before one, never at one.  The kernel spans reach the writer
	 * after the thread's own, and a Perfetto trace gives each as a
	 * begin and an end: at a shared time the function's end (or
	 * begin) comes first and closes (or opens above) the kernel span,
	 * whose own end then closes the wrong span or none. */
	while (u < *t1) {
		uint64_t v = next_time(th, u), s = u, e;

		if (v > *t1)
			v = *t1;
		e = v;
		if (is_time(th, s))
			s++;
		/* v > u, so s <= e here, and stays so */
		if (is_time(th, e) && e > s)
			e--;
		if (e - s > best1 - best0 || best1 == best0) {
			best0 = s;
			best1 = e;
		}
		u = v;
	}
	*t0 = best0;
	*t1 = best1;
}

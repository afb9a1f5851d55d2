/* SPDX-License-Identifier: MIT */
/* The crash's argument (see crash_args.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/replay/crash_args.h"

struct cargs_ptr {
	char *name, *fn; /* owned */
	uint64_t v;
};

struct cargs_thr {
	uint64_t tid, ts; /* the latest END time seen */
	struct cargs_ptr *p;
	size_t n;
};

struct cargs {
	struct ps_writer base; /* first: a ps_writer */
	struct ps_writer *inner;
	uint64_t outer_epoch, saved;
	struct cargs_thr *thr;
	size_t nthr;
};

static void sync_epoch(struct cargs *t)
{
	if (t->base.stable_epoch == t->outer_epoch)
		return;
	if (t->outer_epoch)
		ps_writer_stable_end(t->inner, t->saved);
	t->outer_epoch = t->base.stable_epoch;
	if (t->outer_epoch)
		t->saved = ps_writer_stable_begin(t->inner);
}

static void clear(struct cargs_thr *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->p[i].name);
		free(h->p[i].fn);
	}
	free(h->p);
	h->p = NULL;
	h->n = 0;
}

static struct cargs_thr *thr_of(struct cargs *t, uint64_t tid)
{
	struct cargs_thr *n;

	for (size_t i = 0; i < t->nthr; i++)
		if (t->thr[i].tid == tid)
			return &t->thr[i];
	n = realloc(t->thr, (t->nthr + 1) * sizeof(*n));
	if (!n)
		return NULL;
	t->thr = n;
	memset(&n[t->nthr], 0, sizeof(*n));
	n[t->nthr].tid = tid;
	return &n[t->nthr++];
}

/* An END: the first ones at a thread's latest time are the calls open at
 * its end, innermost first. */
static void note_end(struct cargs *t, const struct ps_event *ev)
{
	struct cargs_thr *h = thr_of(t, ev->tid);

	if (!h || ev->ts < h->ts)
		return;
	if (ev->ts > h->ts) {
		clear(h);
		h->ts = ev->ts;
	}
	for (size_t i = 0; i < ev->nargs; i++) {
		const struct ps_arg *a = &ev->args[i];
		struct cargs_ptr *np;
		uint64_t v;

		if (a->type == PS_ARG_POINTER)
			v = a->v.u;
		else if (a->type == PS_ARG_STRING && a->v.s &&
			 !strcmp(a->v.s, "NULL"))
			v = 0;
		else
			continue;
		if (!a->name || !strcmp(a->name, "return"))
			continue;
		np = realloc(h->p, (h->n + 1) * sizeof(*np));
		if (!np)
			return;
		h->p = np;
		np[h->n].v = v;
		np[h->n].name = strdup(a->name);
		np[h->n].fn = strdup(ev->name ? ev->name : "");
		if (!np[h->n].name || !np[h->n].fn) {
			free(np[h->n].name);
			free(np[h->n].fn);
			return;
		}
		h->n++;
	}
}

const char *cargs_holding(const struct cargs *c, uint64_t tid, uint64_t addr,
			  const char **fn)
{
	for (size_t i = 0; c && i < c->nthr; i++) {
		const struct cargs_thr *h = &c->thr[i];

		if (h->tid != tid)
			continue;
		for (size_t k = 0; k < h->n; k++)
			if (addr >= h->p[k].v && addr - h->p[k].v < 4096) {
				*fn = h->p[k].fn;
				return h->p[k].name;
			}
	}
	return NULL;
}

static int tap_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct cargs *t = (struct cargs *)w;

	return t->inner->ops->process(t->inner, pid, name);
}

static int tap_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		      const char *name)
{
	struct cargs *t = (struct cargs *)w;

	return t->inner->ops->thread(t->inner, pid, tid, name);
}

static int tap_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct cargs *t = (struct cargs *)w;

	return ps_write_parent(t->inner, pid, ppid);
}

static int tap_meta(struct ps_writer *w, const char *k, const char *v)
{
	struct cargs *t = (struct cargs *)w;

	return t->inner->ops->meta(t->inner, k, v);
}

static int tap_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct cargs *t = (struct cargs *)w;

	sync_epoch(t);
	if (ev->type == PS_EV_END)
		note_end(t, ev);
	return t->inner->ops->event(t->inner, ev);
}

static int tap_sample(struct ps_writer *w, const struct ps_sample *s)
{
	struct cargs *t = (struct cargs *)w;

	return ps_write_sample(t->inner, s);
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
    .name = "crash args tap",
    .process = tap_process,
    .thread = tap_thread,
    .parent = tap_parent,
    .meta = tap_meta,
    .event = tap_event,
    .flush = tap_flush,
    .destroy = tap_destroy,
    .sample = tap_sample,
};

int cargs_new(struct ps_writer *inner, struct cargs **out)
{
	struct cargs *t = calloc(1, sizeof(*t));

	if (!t)
		return PS_ERR_NOMEM;
	t->base.ops = &tap_ops;
	t->inner = inner;
	*out = t;
	return 0;
}

struct ps_writer *cargs_writer(struct cargs *c)
{
	return &c->base;
}

void cargs_end(struct cargs *c)
{
	if (c && c->outer_epoch) {
		ps_writer_stable_end(c->inner, c->saved);
		c->outer_epoch = 0;
	}
}

void cargs_free(struct cargs *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nthr; i++)
		clear(&c->thr[i]);
	free(c->thr);
	free(c);
}

/* SPDX-License-Identifier: MIT */
/* The crash's argument (see crash_args.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/writer_filter.h"
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
	struct ps_filter f; /* first: a ps_writer passing events on */
	struct cargs_thr *thr;
	size_t nthr;
};

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

static int tap_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct cargs *t = (struct cargs *)w;

	ps_filter_sync_epoch(&t->f);
	if (ev->type == PS_EV_END)
		note_end(t, ev);
	return t->f.inner->ops->event(t->f.inner, ev);
}

static const struct ps_writer_ops tap_ops = {
    .name = "crash args tap",
    .process = ps_filter_process,
    .thread = ps_filter_thread,
    .parent = ps_filter_parent,
    .meta = ps_filter_meta,
    .event = tap_event,
    .flush = ps_filter_flush,
    .destroy = ps_filter_destroy,
    .sample = ps_filter_sample,
};

int cargs_new(struct ps_writer *inner, struct cargs **out)
{
	struct cargs *t = calloc(1, sizeof(*t));

	if (!t)
		return PS_ERR_NOMEM;
	ps_filter_init(&t->f, &tap_ops, inner);
	*out = t;
	return 0;
}

struct ps_writer *cargs_writer(struct cargs *c)
{
	return &c->f.base;
}

void cargs_end(struct cargs *c)
{
	if (c)
		ps_filter_end(&c->f);
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

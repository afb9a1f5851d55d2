/* SPDX-License-Identifier: MIT */
/* A writer that keeps a thread's events at or before a time limit (see
 * epoch_clamp.h). */
#include <stdlib.h>

#include "ptscope/error.h"
#include "src/replay/epoch_clamp.h"

struct epoch_clamp {
	struct ps_writer base; /* first: a ps_writer */
	struct ps_writer *inner;
	uint64_t limit;
	uint64_t outer_epoch, saved; /* string epochs, as the tap does */
};

static void sync_epoch(struct epoch_clamp *c)
{
	if (c->base.stable_epoch == c->outer_epoch)
		return;
	if (c->outer_epoch)
		ps_writer_stable_end(c->inner, c->saved);
	c->outer_epoch = c->base.stable_epoch;
	if (c->outer_epoch)
		c->saved = ps_writer_stable_begin(c->inner);
}

static int ec_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct epoch_clamp *c = (struct epoch_clamp *)w;

	return c->inner->ops->process(c->inner, pid, name);
}

static int ec_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		     const char *name)
{
	struct epoch_clamp *c = (struct epoch_clamp *)w;

	return c->inner->ops->thread(c->inner, pid, tid, name);
}

static int ec_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct epoch_clamp *c = (struct epoch_clamp *)w;

	return ps_write_parent(c->inner, pid, ppid);
}

static int ec_meta(struct ps_writer *w, const char *k, const char *v)
{
	struct epoch_clamp *c = (struct epoch_clamp *)w;

	return c->inner->ops->meta(c->inner, k, v);
}

static int ec_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct epoch_clamp *c = (struct epoch_clamp *)w;
	struct ps_event e = *ev;

	sync_epoch(c);
	if (e.type == PS_EV_COMPLETE && e.ts + e.dur > c->limit)
		e.dur = e.ts < c->limit ? c->limit - e.ts : 0;
	if (e.ts > c->limit)
		e.ts = c->limit;
	return c->inner->ops->event(c->inner, &e);
}

static int ec_flush(struct ps_writer *w)
{
	(void)w;
	return 0;
}

static void ec_destroy(struct ps_writer *w)
{
	(void)w;
}

static const struct ps_writer_ops ec_ops = {
    .name = "epoch clamp",
    .process = ec_process,
    .thread = ec_thread,
    .parent = ec_parent,
    .meta = ec_meta,
    .event = ec_event,
    .flush = ec_flush,
    .destroy = ec_destroy,
};

int epoch_clamp_new(struct ps_writer *inner, uint64_t limit,
		    struct epoch_clamp **out)
{
	struct epoch_clamp *c = calloc(1, sizeof(*c));

	if (!c)
		return PS_ERR_NOMEM;
	c->base.ops = &ec_ops;
	c->inner = inner;
	c->limit = limit;
	*out = c;
	return 0;
}

struct ps_writer *epoch_clamp_writer(struct epoch_clamp *c)
{
	return &c->base;
}

void epoch_clamp_free(struct epoch_clamp *c)
{
	if (!c)
		return;
	if (c->outer_epoch)
		ps_writer_stable_end(c->inner, c->saved);
	free(c);
}

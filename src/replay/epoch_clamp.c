/* SPDX-License-Identifier: MIT */
/* A writer that keeps a thread's events at or before a time limit (see
 * epoch_clamp.h). */
#include <stdlib.h>

#include "ptscope/error.h"
#include "ptscope/writer_filter.h"
#include "src/replay/epoch_clamp.h"

struct epoch_clamp {
	struct ps_filter f; /* first: a ps_writer passing events on */
	uint64_t limit;
};

static int ec_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct epoch_clamp *c = (struct epoch_clamp *)w;
	struct ps_event e = *ev;

	ps_filter_sync_epoch(&c->f);
	if (e.type == PS_EV_COMPLETE && e.ts + e.dur > c->limit)
		e.dur = e.ts < c->limit ? c->limit - e.ts : 0;
	if (e.ts > c->limit)
		e.ts = c->limit;
	return c->f.inner->ops->event(c->f.inner, &e);
}

static const struct ps_writer_ops ec_ops = {
    .name = "epoch clamp",
    .process = ps_filter_process,
    .thread = ps_filter_thread,
    .parent = ps_filter_parent,
    .meta = ps_filter_meta,
    .event = ec_event,
    .flush = ps_filter_flush,
    .destroy = ps_filter_destroy,
};

int epoch_clamp_new(struct ps_writer *inner, uint64_t limit,
		    struct epoch_clamp **out)
{
	struct epoch_clamp *c = calloc(1, sizeof(*c));

	if (!c)
		return PS_ERR_NOMEM;
	ps_filter_init(&c->f, &ec_ops, inner);
	c->limit = limit;
	*out = c;
	return 0;
}

struct ps_writer *epoch_clamp_writer(struct epoch_clamp *c)
{
	return &c->f.base;
}

void epoch_clamp_free(struct epoch_clamp *c)
{
	if (!c)
		return;
	ps_filter_end(&c->f);
	free(c);
}

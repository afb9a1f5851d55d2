/* SPDX-License-Identifier: MIT */
/* A list of branch events (see branch.h). */
#include <stdlib.h>

#include "decoder/branch.h"
#include "ptscope/error.h"

int br_list_add(struct br_list *l, const struct br_event *ev)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct br_event *v = realloc(l->ev, cap * sizeof(*v));

		if (!v)
			return PS_ERR_NOMEM;
		l->ev = v;
		l->cap = cap;
	}
	l->ev[l->n++] = *ev;
	return 0;
}

int br_list_sink(void *ctx, const struct br_event *ev)
{
	return br_list_add(ctx, ev);
}

/* Replay of Chrome JSON events in the order Perfetto gives them.
 *
 * Perfetto's JSON importer sorts all events by timestamp and, at one
 * timestamp, puts "E" first, then "X" longest first, then everything else
 * in file order.  Chrome writes an "X" when its scope closes, so children
 * usually come before their parents in the file, often at the parent's
 * start time.  Formats whose importers keep file order for ties (FXT,
 * Perfetto protobuf, and our own readers) would then nest a parent inside
 * its child or drop it as overlapping, so the reader keeps every event and
 * hands them on in that same order at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json.h"

#define JO_NONE ((size_t)-1)

struct jo_arg {
	size_t name; /* arena offset */
	enum ps_arg_type type;
	union {
		int b;
		int64_t i;
		uint64_t u;
		double d;
	} v;
	size_t str; /* arena offset for PS_ARG_STRING */
};

struct jo_rec {
	uint64_t ts, dur, pid, tid, flow_id;
	uint64_t seq;  /* arrival order: the last tie-breaker */
	int64_t key;   /* Perfetto's rank among events at one ts */
	uint8_t type;  /* enum ps_event_type */
	uint8_t scope; /* enum ps_scope */
	uint8_t has_info;
	size_t name, cat; /* arena offsets or JO_NONE */
	size_t module, file;
	uint64_t address;
	uint32_t line;
	size_t arg0, nargs; /* range in json_order.args */
};

struct json_order {
	struct jo_rec *recs; /* owned */
	size_t nrecs, recs_cap;
	struct jo_arg *args; /* owned */
	size_t nargs, args_cap;
	char *arena; /* owned; every string of every event */
	size_t alen, acap;
	struct ps_arg *pargs; /* owned, rebuilt per replayed event */
	size_t pargs_cap;
};

int json_order_new(struct json_order **out)
{
	if (!out)
		return ps_err_detail(PS_ERR_INVAL, "json_order_new needs out");
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : PS_ERR_NOMEM;
}

void json_order_free(struct json_order *o)
{
	if (!o)
		return;
	free(o->recs);
	free(o->args);
	free(o->arena);
	free(o->pargs);
	free(o);
}

size_t json_order_count(const struct json_order *o)
{
	return o ? o->nrecs : 0;
}

/* Copy @s into the arena; JO_NONE for NULL or when out of memory (*err). */
static size_t put_str(struct json_order *o, const char *s, int *err)
{
	size_t n, off;

	if (!s || *err)
		return JO_NONE;
	n = strlen(s) + 1;
	if (json_grow((void **)&o->arena, &o->acap, o->alen + n, 1)) {
		*err = PS_ERR_NOMEM;
		return JO_NONE;
	}
	off = o->alen;
	memcpy(o->arena + off, s, n);
	o->alen += n;
	return off;
}

static const char *get_str(const struct json_order *o, size_t off)
{
	return off == JO_NONE ? NULL : o->arena + off;
}

/* Perfetto's tie rank (its trace sorter's key for JSON events). */
static int64_t rank_of(const struct ps_event *e)
{
	if (e->type == PS_EV_END)
		return INT64_MIN;
	if (e->type == PS_EV_COMPLETE)
		return INT64_MAX -
		       (int64_t)(e->dur > INT64_MAX ? INT64_MAX : e->dur);
	return INT64_MAX;
}

int json_order_add(struct json_order *o, const struct ps_event *e,
		   int with_previous)
{
	struct jo_rec *r;
	int err = 0;

	if (!o || !e)
		return ps_err_detail(PS_ERR_INVAL,
				     "json_order_add needs an order and event");
	if (json_grow((void **)&o->recs, &o->recs_cap, o->nrecs + 1,
		      sizeof(*o->recs)) ||
	    json_grow((void **)&o->args, &o->args_cap, o->nargs + e->nargs,
		      sizeof(*o->args)))
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory while sorting JSON events; "
				     "the trace is too large for this machine");
	r = &o->recs[o->nrecs];
	memset(r, 0, sizeof(*r));
	r->ts = e->ts;
	r->dur = e->dur;
	r->pid = e->pid;
	r->tid = e->tid;
	r->flow_id = e->flow_id;
	r->seq = o->nrecs;
	/* A v2 flow rides on its slice: same rank, right after it. */
	r->key = with_previous && o->nrecs ? r[-1].key : rank_of(e);
	r->type = (uint8_t)e->type;
	r->scope = (uint8_t)e->scope;
	r->name = put_str(o, e->name, &err);
	r->cat = put_str(o, e->category, &err);
	r->module = r->file = JO_NONE;
	if (e->info) {
		r->has_info = 1;
		r->module = put_str(o, e->info->module, &err);
		r->file = put_str(o, e->info->file, &err);
		r->address = e->info->address;
		r->line = e->info->line;
	}
	r->arg0 = o->nargs;
	for (size_t i = 0; i < e->nargs; i++) {
		struct jo_arg *a = &o->args[o->nargs + i];

		a->name = put_str(o, e->args[i].name, &err);
		a->type = e->args[i].type;
		a->str = JO_NONE;
		if (a->type == PS_ARG_STRING)
			a->str = put_str(o, e->args[i].v.s, &err);
		else
			memcpy(&a->v, &e->args[i].v, sizeof(a->v));
	}
	if (err)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory while sorting JSON events; "
				     "the trace is too large for this machine");
	r->nargs = e->nargs;
	o->nargs += e->nargs;
	o->nrecs++;
	return 0;
}

static int cmp_rec(const void *pa, const void *pb)
{
	const struct jo_rec *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int json_order_replay(struct json_order *o, struct ps_writer *dst)
{
	if (!o || !dst)
		return ps_err_detail(PS_ERR_INVAL,
				     "json_order_replay needs an order and a "
				     "writer");
	if (o->nrecs > 1) /* qsort wants a non-NULL array, even empty */
		qsort(o->recs, o->nrecs, sizeof(*o->recs), cmp_rec);
	for (size_t k = 0; k < o->nrecs; k++) {
		const struct jo_rec *r = &o->recs[k];
		struct ps_span_info info;
		struct ps_event e;
		int err;

		if (json_grow((void **)&o->pargs, &o->pargs_cap, r->nargs + 1,
			      sizeof(*o->pargs)))
			return PS_ERR_NOMEM;
		for (size_t i = 0; i < r->nargs; i++) {
			const struct jo_arg *a = &o->args[r->arg0 + i];
			struct ps_arg *p = &o->pargs[i];

			p->name = get_str(o, a->name);
			p->type = a->type;
			if (a->type == PS_ARG_STRING)
				p->v.s = get_str(o, a->str);
			else
				memcpy(&p->v, &a->v, sizeof(a->v));
		}
		memset(&e, 0, sizeof(e));
		e.type = (enum ps_event_type)r->type;
		e.scope = (enum ps_scope)r->scope;
		e.pid = r->pid;
		e.tid = r->tid;
		e.ts = r->ts;
		e.dur = r->dur;
		e.flow_id = r->flow_id;
		e.name = get_str(o, r->name);
		e.category = get_str(o, r->cat);
		e.args = o->pargs;
		e.nargs = r->nargs;
		if (r->has_info) {
			info.module = get_str(o, r->module);
			info.file = get_str(o, r->file);
			info.address = r->address;
			info.line = r->line;
			e.info = &info;
		}
		err = dst->ops->event(dst, &e);
		if (err)
			return err;
	}
	return 0;
}

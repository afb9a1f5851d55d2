/* SPDX-License-Identifier: MIT */
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
	/* Set by match_slices(), Perfetto's reading of B/E/X: */
	uint8_t drop;	/* not handed on (an E, a dropped X or instant) */
	uint8_t closed; /* a B that ends: handed on as a complete span */
	size_t end;	/* the E whose args join this B's, or JO_NONE */
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
	r->end = JO_NONE;
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

/*
 * Perfetto's slice tracker, replayed per thread so that every output format
 * shows what Perfetto shows for the JSON itself (its SliceTracker: Begin,
 * End, Scoped and MaybeCloseStack in importers/common/slice_tracker.cc).
 * The rules, on one thread's events in the sorted order:
 *
 * - Before each B, E, X or thread instant, the stack is closed at its ts:
 *   from the top down, a finished slice that ended before ts (or at ts,
 *   unless both are instants) is popped; a finished slice below an
 *   unfinished one that ended before ts cuts those unfinished ones off at
 *   its end and is popped with them.
 * - An X (or instant) that starts inside a finished slice and ends after
 *   it is dropped; otherwise it is pushed.
 * - A B is pushed, unfinished.
 * - An E closes the topmost unfinished slice whose category equals the
 *   E's (when the E has one) and whose name equals the E's (when both have
 *   one); the E's args join that slice.  It is popped only when it is the
 *   top of the stack.  An E that matches nothing is dropped.
 * - A B never closed stays unfinished ("did not end").
 *
 * Every B that ends is then handed on as a complete span at its place, and
 * no E is handed on, so the importer of any output format, however it
 * pairs begins and ends, sees the same slices.
 */
struct jo_slot {
	size_t rec;   /* index into recs */
	uint64_t ts;  /* start */
	uint64_t dur; /* valid when !pending */
	int pending;  /* a B not closed yet */
};

struct jo_stack {
	struct jo_slot *v;
	size_t n, cap;
};

/* Close the stack at @ts for an event lasting @dur (@pending: a B or an
 * E).  Returns 0 when the new X must be dropped as overlapping. */
static int close_stack(struct json_order *o, struct jo_stack *st, uint64_t ts,
		       uint64_t dur, int pending)
{
	int incomplete_below = 0;

	for (size_t k = st->n; k-- > 0;) {
		struct jo_slot *s = &st->v[k];
		uint64_t end;

		if (k >= st->n) /* popped by an earlier step */
			continue;
		if (s->pending) {
			incomplete_below = 1;
			continue;
		}
		end = s->ts + s->dur;
		if (incomplete_below) {
			if (ts <= end)
				continue;
			/* Unfinished slices above end where this one did. */
			for (size_t j = st->n; j-- > k + 1;) {
				struct jo_slot *c = &st->v[j];

				c->dur = end - c->ts;
				c->pending = 0;
				o->recs[c->rec].closed = 1;
				o->recs[c->rec].dur = c->dur;
			}
			st->n = k;
			incomplete_below = 0;
			continue;
		}
		if (end < ts ||
		    (end == ts && !(s->dur == 0 && !pending && dur == 0))) {
			st->n--; /* Perfetto pops the top, whichever it is */
			continue;
		}
		if (pending)
			continue;
		if (ts < end && ts + dur > end)
			return 0;
	}
	return 1;
}

static int push_slot(struct jo_stack *st, size_t rec, uint64_t ts, uint64_t dur,
		     int pending)
{
	if (json_grow((void **)&st->v, &st->cap, st->n + 1, sizeof(*st->v)))
		return PS_ERR_NOMEM;
	st->v[st->n++] = (struct jo_slot){rec, ts, dur, pending};
	return 0;
}

static int same_str(const struct json_order *o, size_t a, size_t b)
{
	return !strcmp(get_str(o, a), get_str(o, b));
}

static int is_empty(const struct json_order *o, size_t off)
{
	return off == JO_NONE || !o->arena[off];
}

/* The E @e closes the topmost unfinished slice it matches, if any. */
static void end_slice(struct json_order *o, struct jo_stack *st, size_t e)
{
	struct jo_rec *er = &o->recs[e];

	er->drop = 1;
	for (size_t k = st->n; k-- > 0;) {
		struct jo_slot *s = &st->v[k];
		struct jo_rec *b = &o->recs[s->rec];

		if (!s->pending)
			continue;
		if (!is_empty(o, er->cat) &&
		    (is_empty(o, b->cat) || !same_str(o, er->cat, b->cat)))
			continue;
		if (!is_empty(o, er->name) && !is_empty(o, b->name) &&
		    !same_str(o, er->name, b->name))
			continue;
		s->pending = 0;
		s->dur = er->ts - s->ts;
		b->closed = 1;
		b->dur = s->dur;
		b->end = e;
		if (k == st->n - 1)
			st->n--;
		return;
	}
}

static int on_thread_track(const struct jo_rec *r)
{
	switch ((enum ps_event_type)r->type) {
	case PS_EV_BEGIN:
	case PS_EV_END:
	case PS_EV_COMPLETE:
		return 1;
	case PS_EV_INSTANT:
		return r->scope == PS_SCOPE_THREAD;
	default:
		return 0;
	}
}

/* One stack per thread, found by (pid, tid) in an open-addressing table. */
struct jo_track {
	uint64_t pid, tid;
	struct jo_stack st;
	int used;
};

struct jo_tracks {
	struct jo_track *v;
	size_t cap, n;	       /* cap: a power of two */
	struct jo_track *last; /* the thread of the previous event */
};

static uint64_t track_hash(uint64_t pid, uint64_t tid)
{
	return (pid * 0x9e3779b97f4a7c15ull) ^ (tid * 0xc2b2ae3d27d4eb4full);
}

static struct jo_track *track_slot(struct jo_track *v, size_t cap, uint64_t pid,
				   uint64_t tid)
{
	size_t i = (size_t)track_hash(pid, tid) & (cap - 1);

	while (v[i].used && (v[i].pid != pid || v[i].tid != tid))
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static struct jo_track *track_of(struct jo_tracks *t, uint64_t pid,
				 uint64_t tid)
{
	struct jo_track *k;

	if (t->last && t->last->pid == pid && t->last->tid == tid)
		return t->last;
	if (2 * (t->n + 1) > t->cap) { /* keep it at most half full */
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct jo_track *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t i = 0; i < t->cap; i++)
			if (t->v[i].used)
				*track_slot(v, cap, t->v[i].pid, t->v[i].tid) =
				    t->v[i];
		free(t->v);
		t->v = v;
		t->cap = cap;
	}
	k = track_slot(t->v, t->cap, pid, tid);
	if (!k->used) {
		*k = (struct jo_track){.pid = pid, .tid = tid, .used = 1};
		t->n++;
	}
	t->last = k;
	return k;
}

static int match_slices(struct json_order *o)
{
	struct jo_tracks t = {0};
	int err = 0;

	for (size_t k = 0; k < o->nrecs && !err; k++) {
		struct jo_rec *r = &o->recs[k];
		struct jo_track *tr;

		if (!on_thread_track(r))
			continue;
		tr = track_of(&t, r->pid, r->tid);
		if (!tr) {
			err = PS_ERR_NOMEM;
			break;
		}
		switch ((enum ps_event_type)r->type) {
		case PS_EV_BEGIN:
			close_stack(o, &tr->st, r->ts, 0, 1);
			err = push_slot(&tr->st, k, r->ts, 0, 1);
			break;
		case PS_EV_END:
			close_stack(o, &tr->st, r->ts, 0, 1);
			end_slice(o, &tr->st, k);
			break;
		default: /* X and thread instants (dur 0) */
			if (!close_stack(o, &tr->st, r->ts, r->dur, 0))
				r->drop = 1;
			else
				err = push_slot(&tr->st, k, r->ts, r->dur, 0);
			break;
		}
	}
	for (size_t i = 0; i < t.cap; i++)
		free(t.v[i].st.v);
	free(t.v);
	return err;
}

/* Append the arg records of @r to the replay buffer from @at on. */
static int replay_args(struct json_order *o, const struct jo_rec *r, size_t at)
{
	if (json_grow((void **)&o->pargs, &o->pargs_cap, at + r->nargs + 1,
		      sizeof(*o->pargs)))
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < r->nargs; i++) {
		const struct jo_arg *a = &o->args[r->arg0 + i];
		struct ps_arg *p = &o->pargs[at + i];

		p->name = get_str(o, a->name);
		p->type = a->type;
		if (a->type == PS_ARG_STRING)
			p->v.s = get_str(o, a->str);
		else
			memcpy(&p->v, &a->v, sizeof(a->v));
	}
	return 0;
}

int json_order_replay(struct json_order *o, struct ps_writer *dst)
{
	if (!o || !dst)
		return ps_err_detail(PS_ERR_INVAL,
				     "json_order_replay needs an order and a "
				     "writer");
	if (o->nrecs > 1) /* qsort wants a non-NULL array, even empty */
		qsort(o->recs, o->nrecs, sizeof(*o->recs), cmp_rec);
	if (match_slices(o))
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory while pairing JSON begin "
				     "and end events");
	for (size_t k = 0; k < o->nrecs; k++) {
		const struct jo_rec *r = &o->recs[k];
		const struct jo_rec *end =
		    r->end == JO_NONE ? NULL : &o->recs[r->end];
		struct ps_span_info info;
		struct ps_event e;
		int err;

		if (r->drop)
			continue;
		if (replay_args(o, r, 0) ||
		    (end && replay_args(o, end, r->nargs)))
			return PS_ERR_NOMEM;
		memset(&e, 0, sizeof(e));
		e.type =
		    r->closed ? PS_EV_COMPLETE : (enum ps_event_type)r->type;
		e.scope = (enum ps_scope)r->scope;
		e.pid = r->pid;
		e.tid = r->tid;
		e.ts = r->ts;
		e.dur = r->dur;
		e.flow_id = r->flow_id;
		e.name = get_str(o, r->name);
		e.category = get_str(o, r->cat);
		e.args = o->pargs;
		e.nargs = r->nargs + (end ? end->nargs : 0);
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

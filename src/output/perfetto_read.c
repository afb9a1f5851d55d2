/* SPDX-License-Identifier: MIT */
/* Perfetto protobuf reader: a Trace in memory → ptscope events.
 *
 * The Trace's top-level packet fields are walked one at a time (a large
 * trace is never unpacked whole); each TracePacket is unpacked with
 * protobuf-c and interpreted with its sequence's state: interned data,
 * TracePacketDefaults, sequence-scoped (incremental) clocks.  Tracks map to
 * (pid, tid) through their descriptors.  The conventions of our writer
 * (metadata track, counter groups, flow instants, SourceLocation fields)
 * are undone; other producers' TrackEvent traces read as well as they map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "src/output/perfetto.h"

/* protobuf-c's name for "the packet has a sequence id" */
#define SEQ_ID_SET                                                             \
	PFTRACE__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID

/* ---- a uint64 → value map ---------------------------------------------- */

struct rd_ent {
	uint64_t key;
	void *val; /* NULL: empty slot */
};

struct rd_map {
	struct rd_ent *e; /* owned */
	size_t cap, n;
};

static size_t rd_slot(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static void *map_find(const struct rd_map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t j = rd_slot(key, m->cap); m->e[j].val;
	     j = (j + 1) & (m->cap - 1))
		if (m->e[j].key == key)
			return m->e[j].val;
	return NULL;
}

/* Store @val (non-NULL) under @key; *old receives a value it replaced. */
static int map_put(struct rd_map *m, uint64_t key, void *val, void **old)
{
	size_t j;

	*old = NULL;
	if ((m->n + 1) * 4 > m->cap * 3) {
		size_t cap = m->cap ? m->cap * 2 : 32;
		struct rd_ent *e = calloc(cap, sizeof(*e));

		if (!e)
			return ps_err_detail(PS_ERR_NOMEM,
					     "out of memory reading a Perfetto "
					     "trace");
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->e[i].val)
				continue;
			for (j = rd_slot(m->e[i].key, cap); e[j].val;
			     j = (j + 1) & (cap - 1))
				;
			e[j] = m->e[i];
		}
		free(m->e);
		m->e = e;
		m->cap = cap;
	}
	for (j = rd_slot(key, m->cap); m->e[j].val; j = (j + 1) & (m->cap - 1))
		if (m->e[j].key == key) {
			*old = m->e[j].val;
			m->e[j].val = val;
			return 0;
		}
	m->e[j].key = key;
	m->e[j].val = val;
	m->n++;
	return 0;
}

static void map_clear(struct rd_map *m, void (*fn)(void *))
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->e[i].val && fn)
			fn(m->e[i].val);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---- state ------------------------------------------------------------- */

struct rd_loc {
	char *file, *module; /* owned, may be NULL */
	uint64_t address;
	uint32_t line;
};

struct rd_clock {
	int valid, incr;
	uint64_t unit;	   /* ns per tick */
	uint64_t ref_ns;   /* this clock at the snapshot, in ns */
	uint64_t ref_mono; /* the reference clock at the same instant */
	uint64_t last_ns;  /* last value (incremental clocks) */
};

enum rd_kind { RD_GENERIC, RD_PROCESS, RD_THREAD, RD_COUNTER, RD_META };

struct rd_track {
	enum rd_kind kind;
	uint64_t parent; /* 0: none */
	uint64_t pid, tid;
	char *name; /* owned, may be NULL */
};

enum { RD_NAMES, RD_CATS, RD_ANNOTS, RD_LOCS, RD_NTABLES };

struct rd_seq {
	struct rd_map tab[RD_NTABLES]; /* iid → char * / struct rd_loc * */
	int has_clock;
	uint32_t clock;		    /* default timestamp clock */
	uint64_t track;		    /* default track uuid, 0: none */
	struct rd_clock clocks[64]; /* sequence-scoped clocks 64..127 */
};

#define RD_MAX_MERGE 64 /* counter series merged into one event */

struct rd {
	struct ps_writer *dst;
	size_t off;	      /* byte offset of the current packet */
	struct rd_map seqs;   /* id → struct rd_seq * */
	struct rd_map tracks; /* uuid → struct rd_track * */
	struct rd_map flows;  /* flow id → (void *)1 while open, 2 ended */
	uint64_t last_ts;
	struct ps_arg *args; /* scratch for one event's args (owned) */
	size_t argcap;
	/* A counter event being merged from per-series packets. */
	int cnt_active;
	uint32_t cnt_seq;
	uint64_t cnt_group;
	struct ps_event cnt;
	struct ps_arg cnt_args[RD_MAX_MERGE];
};

static void loc_free(void *p)
{
	struct rd_loc *l = p;

	free(l->file);
	free(l->module);
	free(l);
}

static void track_free(void *p)
{
	struct rd_track *t = p;

	free(t->name);
	free(t);
}

static void seq_reset(struct rd_seq *s)
{
	for (int i = 0; i < RD_NTABLES; i++)
		map_clear(&s->tab[i], i == RD_LOCS ? loc_free : free);
	s->has_clock = 0;
	s->track = 0;
}

static void seq_free(void *p)
{
	seq_reset(p);
	free(p);
}

static int nomem(void)
{
	return ps_err_detail(PS_ERR_NOMEM,
			     "out of memory reading a Perfetto trace");
}

static struct rd_seq *seq_get(struct rd *r, uint32_t id)
{
	struct rd_seq *s = map_find(&r->seqs, id);
	void *old;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || map_put(&r->seqs, id, s, &old)) {
		free(s);
		nomem();
		return NULL;
	}
	return s;
}

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ---- packet parts ------------------------------------------------------ */

static int put_str(struct rd *r, struct rd_seq *s, int table, int has_iid,
		   uint64_t iid, const char *name)
{
	char *copy;
	void *old;

	if (!has_iid || !iid)
		return ps_err_detail(PS_ERR_FORMAT,
				     "Perfetto packet at byte %zu interns a "
				     "string without an iid",
				     r->off);
	copy = strdup(name ? name : "");
	if (!copy || map_put(&s->tab[table], iid, copy, &old)) {
		free(copy);
		return nomem();
	}
	free(old);
	return 0;
}

static int read_interned(struct rd *r, struct rd_seq *s,
			 const Pftrace__InternedData *in)
{
	int err = 0;

	for (size_t i = 0; !err && i < in->n_event_names; i++)
		err =
		    put_str(r, s, RD_NAMES, in->event_names[i]->has_iid,
			    in->event_names[i]->iid, in->event_names[i]->name);
	for (size_t i = 0; !err && i < in->n_event_categories; i++)
		err = put_str(r, s, RD_CATS, in->event_categories[i]->has_iid,
			      in->event_categories[i]->iid,
			      in->event_categories[i]->name);
	for (size_t i = 0; !err && i < in->n_debug_annotation_names; i++)
		err = put_str(r, s, RD_ANNOTS,
			      in->debug_annotation_names[i]->has_iid,
			      in->debug_annotation_names[i]->iid,
			      in->debug_annotation_names[i]->name);
	for (size_t i = 0; !err && i < in->n_source_locations; i++) {
		const Pftrace__SourceLocation *sl = in->source_locations[i];
		struct rd_loc *l;
		void *old;

		if (!sl->has_iid || !sl->iid)
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "Perfetto packet at byte %zu "
			    "interns a source location without "
			    "an iid",
			    r->off);
		l = calloc(1, sizeof(*l));
		if (!l)
			return nomem();
		l->file = dup_opt(sl->file_name);
		l->module = dup_opt(sl->ptscope_module);
		l->address = sl->ptscope_address;
		l->line = sl->line_number;
		if ((sl->file_name && !l->file) ||
		    (sl->ptscope_module && !l->module) ||
		    map_put(&s->tab[RD_LOCS], sl->iid, l, &old)) {
			loc_free(l);
			return nomem();
		}
		if (old)
			loc_free(old);
	}
	return err;
}

static int read_clock(struct rd *r, struct rd_seq *s,
		      const Pftrace__ClockSnapshot *cs)
{
	uint64_t ref = 0;
	int have_ref = 0;

	/* The reference is MONOTONIC if present, else any builtin clock. */
	for (size_t i = 0; i < cs->n_clocks; i++) {
		const Pftrace__ClockSnapshot__Clock *c = cs->clocks[i];

		if (c->clock_id >= PFTW_CLOCK_INCR)
			continue;
		if (!have_ref || c->clock_id == PFTW_CLOCK_MONOTONIC)
			ref = c->timestamp;
		have_ref = 1;
	}
	for (size_t i = 0; i < cs->n_clocks; i++) {
		const Pftrace__ClockSnapshot__Clock *c = cs->clocks[i];
		struct rd_clock *k;

		if (c->clock_id < PFTW_CLOCK_INCR || c->clock_id >= 128)
			continue;
		if (!s)
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "Perfetto packet at byte %zu "
			    "defines sequence clock %u without "
			    "a sequence id",
			    r->off, c->clock_id);
		k = &s->clocks[c->clock_id - PFTW_CLOCK_INCR];
		k->valid = 1;
		k->incr = c->is_incremental;
		k->unit = c->has_unit_multiplier_ns && c->unit_multiplier_ns
			      ? c->unit_multiplier_ns
			      : 1;
		k->ref_ns = c->timestamp * k->unit;
		k->ref_mono = have_ref ? ref : k->ref_ns;
		k->last_ns = k->ref_ns;
	}
	return 0;
}

/* The packet's time in ns of the reference clock. */
static int packet_time(struct rd *r, struct rd_seq *s,
		       const Pftrace__TracePacket *p, uint64_t *ts)
{
	uint32_t clock = PFTW_CLOCK_BOOTTIME;
	struct rd_clock *k;
	uint64_t v;

	if (!p->has_timestamp) {
		*ts = r->last_ts;
		return 0;
	}
	if (p->has_timestamp_clock_id)
		clock = p->timestamp_clock_id;
	else if (s->has_clock)
		clock = s->clock;
	if (clock < PFTW_CLOCK_INCR || clock >= 128) {
		*ts = r->last_ts = p->timestamp;
		return 0;
	}
	k = &s->clocks[clock - PFTW_CLOCK_INCR];
	if (!k->valid)
		return ps_err_detail(PS_ERR_FORMAT,
				     "Perfetto packet at byte %zu uses clock "
				     "%u before a clock snapshot on its "
				     "sequence defines it",
				     r->off, clock);
	v = p->timestamp * k->unit;
	if (k->incr) {
		k->last_ns += v;
		v = k->last_ns;
	}
	*ts = r->last_ts = v - k->ref_ns + k->ref_mono;
	return 0;
}

static int read_track(struct rd *r, const Pftrace__TrackDescriptor *td)
{
	struct rd_track *t;
	void *old;
	int err;

	if (!td->has_uuid || !td->uuid)
		return 0; /* the implicit global track needs no entry */
	t = map_find(&r->tracks, td->uuid);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || map_put(&r->tracks, td->uuid, t, &old)) {
			free(t);
			return nomem();
		}
	}
	if (td->has_parent_uuid)
		t->parent = td->parent_uuid;
	if (td->name) {
		char *n = strdup(td->name);

		if (!n)
			return nomem();
		free(t->name);
		t->name = n;
	}
	if (td->process) {
		t->kind = RD_PROCESS;
		t->pid = (uint32_t)td->process->pid;
		if (td->process->process_name &&
		    (err = r->dst->ops->process(r->dst, t->pid,
						td->process->process_name)))
			return err;
	} else if (td->thread) {
		t->kind = RD_THREAD;
		t->pid = (uint32_t)td->thread->pid;
		t->tid = (uint32_t)td->thread->tid;
		if (td->thread->thread_name &&
		    (err = r->dst->ops->thread(r->dst, t->pid, t->tid,
					       td->thread->thread_name)))
			return err;
	} else if (td->counter) {
		t->kind = RD_COUNTER;
	} else if (!t->parent && t->name && !strcmp(t->name, PFTW_META_TRACK)) {
		t->kind = RD_META;
	}
	return 0;
}

/* The process id a track belongs to (walking up its parents). */
static int track_pid(struct rd *r, const struct rd_track *t, uint64_t *pid)
{
	for (int depth = 0; t && depth < 16; depth++) {
		if (t->kind == RD_PROCESS || t->kind == RD_THREAD) {
			*pid = t->pid;
			return 1;
		}
		t = t->parent ? map_find(&r->tracks, t->parent) : NULL;
	}
	return 0;
}

static int read_args(struct rd *r, struct rd_seq *s,
		     const Pftrace__TrackEvent *te, struct ps_event *ev)
{
	if (te->n_debug_annotations > r->argcap) {
		struct ps_arg *a =
		    realloc(r->args, te->n_debug_annotations * sizeof(*a));

		if (!a)
			return nomem();
		r->args = a;
		r->argcap = te->n_debug_annotations;
	}
	for (size_t i = 0; i < te->n_debug_annotations; i++) {
		const Pftrace__DebugAnnotation *d = te->debug_annotations[i];
		struct ps_arg *a = &r->args[i];

		memset(a, 0, sizeof(*a));
		if (d->name_field_case ==
		    PFTRACE__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID) {
			a->name = map_find(&s->tab[RD_ANNOTS], d->name_iid);
			if (!a->name)
				return ps_err_detail(
				    PS_ERR_FORMAT,
				    "Perfetto packet at byte %zu uses "
				    "annotation name iid %llu that its "
				    "sequence never defined",
				    r->off, (unsigned long long)d->name_iid);
		} else if (d->name_field_case ==
			   PFTRACE__DEBUG_ANNOTATION__NAME_FIELD_NAME) {
			a->name = d->name;
		} else {
			a->name = "";
		}
		switch (d->value_case) {
		case PFTRACE__DEBUG_ANNOTATION__VALUE_BOOL_VALUE:
			a->type = PS_ARG_BOOL;
			a->v.b = d->bool_value ? 1 : 0;
			break;
		case PFTRACE__DEBUG_ANNOTATION__VALUE_UINT_VALUE:
			a->type = PS_ARG_UINT;
			a->v.u = d->uint_value;
			break;
		case PFTRACE__DEBUG_ANNOTATION__VALUE_INT_VALUE:
			a->type = PS_ARG_INT;
			a->v.i = d->int_value;
			break;
		case PFTRACE__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE:
			a->type = PS_ARG_DOUBLE;
			a->v.d = d->double_value;
			break;
		case PFTRACE__DEBUG_ANNOTATION__VALUE_STRING_VALUE:
			a->type = PS_ARG_STRING;
			a->v.s = d->string_value;
			break;
		case PFTRACE__DEBUG_ANNOTATION__VALUE_LEGACY_JSON_VALUE:
			a->type = PS_ARG_STRING;
			a->v.s = d->legacy_json_value;
			break;
		case PFTRACE__DEBUG_ANNOTATION__VALUE_POINTER_VALUE:
			a->type = PS_ARG_POINTER;
			a->v.u = d->pointer_value;
			break;
		default:
			a->type = PS_ARG_NULL;
			break;
		}
	}
	ev->args = r->args;
	ev->nargs = te->n_debug_annotations;
	return 0;
}

static int cnt_flush(struct rd *r)
{
	if (!r->cnt_active)
		return 0;
	r->cnt_active = 0;
	r->cnt.args = r->cnt_args;
	return r->dst->ops->event(r->dst, &r->cnt);
}

/* One series value; consecutive values of one counter at one time on one
 * sequence become a single event. */
static int read_counter(struct rd *r, uint32_t seq, const struct rd_track *t,
			uint64_t uuid, const Pftrace__TrackEvent *te,
			struct ps_event *ev)
{
	const struct rd_track *g =
	    t && t->parent ? map_find(&r->tracks, t->parent) : NULL;
	uint64_t group = g && g->kind == RD_GENERIC ? t->parent : uuid;
	const char *name = g && g->kind == RD_GENERIC ? g->name
			   : t			      ? t->name
						      : NULL;
	const char *series =
	    g && g->kind == RD_GENERIC && t->name ? t->name : "value";
	size_t gl = g && g->kind == RD_GENERIC && g->name ? strlen(g->name) : 0;
	struct ps_arg *a;
	int err;

	/* we name a series track "group series" (perfetto.c) */
	if (gl && !strncmp(series, g->name, gl) && series[gl] == ' ' &&
	    series[gl + 1])
		series += gl + 1;

	if (r->cnt_active &&
	    (r->cnt_seq != seq || r->cnt_group != group ||
	     r->cnt.ts != ev->ts || r->cnt.nargs == RD_MAX_MERGE) &&
	    (err = cnt_flush(r)))
		return err;
	for (size_t i = 0; r->cnt_active && i < r->cnt.nargs; i++)
		if (!strcmp(r->cnt_args[i].name, series) &&
		    (err = cnt_flush(r)))
			return err;
	if (!r->cnt_active) {
		r->cnt = *ev;
		r->cnt.type = PS_EV_COUNTER;
		r->cnt.name = name ? name : "counter";
		r->cnt.category = NULL;
		r->cnt.info = NULL;
		r->cnt.nargs = 0;
		r->cnt_seq = seq;
		r->cnt_group = group;
		r->cnt_active = 1;
	}
	a = &r->cnt_args[r->cnt.nargs++];
	memset(a, 0, sizeof(*a));
	a->name = series;
	if (te->counter_value_field_case ==
	    PFTRACE__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE) {
		a->type = PS_ARG_DOUBLE;
		a->v.d = te->double_counter_value;
	} else {
		a->type = PS_ARG_INT;
		a->v.i = te->counter_value;
	}
	return 0;
}

/* Flow events for the ids on @te, attached to @ev's time and thread. */
static int read_flows(struct rd *r, const Pftrace__TrackEvent *te,
		      struct ps_event *ev)
{
	const uint64_t *lists[4] = {te->flow_ids, te->flow_ids_old,
				    te->terminating_flow_ids,
				    te->terminating_flow_ids_old};
	size_t counts[4] = {te->n_flow_ids, te->n_flow_ids_old,
			    te->n_terminating_flow_ids,
			    te->n_terminating_flow_ids_old};
	struct ps_event f = *ev;
	int err;

	f.info = NULL;
	f.dur = 0;
	for (int l = 0; l < 4; l++) {
		for (size_t i = 0; i < counts[l]; i++) {
			uint64_t id = lists[l][i];
			void *state = map_find(&r->flows, id), *old;

			f.flow_id = id;
			if (l >= 2)
				f.type = PS_EV_FLOW_END;
			else if (state == (void *)1)
				f.type = PS_EV_FLOW_STEP;
			else
				f.type = PS_EV_FLOW_BEGIN;
			if ((err = map_put(&r->flows, id,
					   (void *)(uintptr_t)(l >= 2 ? 2 : 1),
					   &old)))
				return err;
			if ((err = r->dst->ops->event(r->dst, &f)))
				return err;
		}
	}
	return 0;
}

static int read_event(struct rd *r, uint32_t seq, struct rd_seq *s,
		      const Pftrace__TracePacket *p)
{
	const Pftrace__TrackEvent *te = p->track_event;
	uint64_t uuid = te->has_track_uuid ? te->track_uuid : s->track;
	const struct rd_track *t = uuid ? map_find(&r->tracks, uuid) : NULL;
	const struct rd_track *dt =
	    s->track ? map_find(&r->tracks, s->track) : NULL;
	int nflows = te->n_flow_ids || te->n_flow_ids_old ||
		     te->n_terminating_flow_ids ||
		     te->n_terminating_flow_ids_old;
	struct ps_span_info info;
	struct ps_event ev;
	int err;

	memset(&ev, 0, sizeof(ev));
	if ((err = packet_time(r, s, p, &ev.ts)))
		return err;
	/* The thread: the track's own, else the sequence's default. */
	if (dt && dt->kind == RD_THREAD) {
		ev.pid = dt->pid;
		ev.tid = dt->tid;
	}
	if (t && t->kind == RD_THREAD) {
		ev.pid = t->pid;
		ev.tid = t->tid;
	} else if (t && track_pid(r, t, &ev.pid) &&
		   !(dt && dt->kind == RD_THREAD && dt->pid == ev.pid)) {
		ev.tid = ev.pid;
	}

	if (te->type == PFTRACE__TRACK_EVENT__TYPE__TYPE_COUNTER)
		return read_counter(r, seq, t, uuid, te, &ev);
	if ((err = cnt_flush(r)))
		return err;

	if (te->name_field_case == PFTRACE__TRACK_EVENT__NAME_FIELD_NAME_IID) {
		ev.name = map_find(&s->tab[RD_NAMES], te->name_iid);
		if (!ev.name)
			return ps_err_detail(PS_ERR_FORMAT,
					     "Perfetto packet at byte %zu uses "
					     "event name iid %llu that its "
					     "sequence never defined",
					     r->off,
					     (unsigned long long)te->name_iid);
	} else if (te->name_field_case ==
		   PFTRACE__TRACK_EVENT__NAME_FIELD_NAME) {
		ev.name = te->name;
	}
	if (te->n_category_iids) {
		ev.category = map_find(&s->tab[RD_CATS], te->category_iids[0]);
		if (!ev.category)
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "Perfetto packet at byte %zu uses "
			    "category iid %llu that its "
			    "sequence never defined",
			    r->off, (unsigned long long)te->category_iids[0]);
	} else if (te->n_categories) {
		ev.category = te->categories[0];
	}
	if (te->source_location_field_case ==
	    PFTRACE__TRACK_EVENT__SOURCE_LOCATION_FIELD_SOURCE_LOCATION_IID) {
		const struct rd_loc *l =
		    map_find(&s->tab[RD_LOCS], te->source_location_iid);

		if (!l)
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "Perfetto packet at byte %zu uses "
			    "source location iid %llu that its "
			    "sequence never defined",
			    r->off,
			    (unsigned long long)te->source_location_iid);
		info.module = l->module;
		info.address = l->address;
		info.file = l->file;
		info.line = l->line;
		ev.info = &info;
	} else if (
	    te->source_location_field_case ==
	    PFTRACE__TRACK_EVENT__SOURCE_LOCATION_FIELD_SOURCE_LOCATION) {
		info.module = te->source_location->ptscope_module;
		info.address = te->source_location->ptscope_address;
		info.file = te->source_location->file_name;
		info.line = te->source_location->line_number;
		ev.info = &info;
	}
	if ((err = read_args(r, s, te, &ev)))
		return err;

	if (te->legacy_event && te->legacy_event->has_phase) {
		/* our flow events (and Chrome's); other legacy phases carry
		 * nothing we model */
		const Pftrace__TrackEvent__LegacyEvent *le = te->legacy_event;

		if (le->id_case !=
		    PFTRACE__TRACK_EVENT__LEGACY_EVENT__ID_UNSCOPED_ID)
			return 0;
		switch (le->phase) {
		case 's':
			ev.type = PS_EV_FLOW_BEGIN;
			break;
		case 't':
			ev.type = PS_EV_FLOW_STEP;
			break;
		case 'f':
			ev.type = PS_EV_FLOW_END;
			break;
		default:
			return 0;
		}
		ev.flow_id = le->unscoped_id;
		ev.info = NULL;
		return r->dst->ops->event(r->dst, &ev);
	}

	switch (te->type) {
	case PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
		ev.type = PS_EV_BEGIN;
		break;
	case PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END:
		ev.type = PS_EV_END;
		ev.info = NULL;
		break;
	case PFTRACE__TRACK_EVENT__TYPE__TYPE_INSTANT:
		ev.info = NULL;
		if (t && t->kind == RD_META) {
			for (size_t i = 0; i < ev.nargs; i++)
				if (ev.args[i].type == PS_ARG_STRING &&
				    !strcmp(ev.args[i].name, PFTW_META_ARG))
					return r->dst->ops->meta(
					    r->dst, ev.name ? ev.name : "",
					    ev.args[i].v.s);
			return 0;
		}
		if (nflows) /* our flow events are instants with the ids */
			return read_flows(r, te, &ev);
		ev.type = PS_EV_INSTANT;
		ev.scope = !t || (t->kind != RD_THREAD && !ev.pid)
			       ? PS_SCOPE_GLOBAL
			   : t->kind == RD_PROCESS ? PS_SCOPE_PROCESS
			   : t->kind == RD_THREAD  ? PS_SCOPE_THREAD
						   : PS_SCOPE_GLOBAL;
		break;
	default:
		return 0; /* legacy (untyped) events carry no TrackEvent type */
	}
	if ((err = r->dst->ops->event(r->dst, &ev)))
		return err;
	return nflows ? read_flows(r, te, &ev) : 0;
}

/* ChromeEventBundle.metadata (how we write meta(), see perfetto.c) →
 * meta() calls; ints and bools as their decimal or true/false text. */
static int read_chrome_metadata(struct rd *r,
				const Pftrace__ChromeEventBundle *b)
{
	for (size_t i = 0; i < b->n_metadata; i++) {
		const Pftrace__ChromeMetadata *m = b->metadata[i];
		char num[24];
		const char *v;
		int err;

		if (!m->name || !*m->name)
			continue;
		switch (m->value_case) {
		case PFTRACE__CHROME_METADATA__VALUE_STRING_VALUE:
			v = m->string_value;
			break;
		case PFTRACE__CHROME_METADATA__VALUE_JSON_VALUE:
			v = m->json_value;
			break;
		case PFTRACE__CHROME_METADATA__VALUE_BOOL_VALUE:
			v = m->bool_value ? "true" : "false";
			break;
		case PFTRACE__CHROME_METADATA__VALUE_INT_VALUE:
			snprintf(num, sizeof(num), "%lld",
				 (long long)m->int_value);
			v = num;
			break;
		default:
			continue;
		}
		err = r->dst->ops->meta(r->dst, m->name, v ? v : "");
		if (err)
			return err;
	}
	return 0;
}

static int read_packet(struct rd *r, const Pftrace__TracePacket *p)
{
	uint32_t seq = p->optional_trusted_packet_sequence_id_case == SEQ_ID_SET
			   ? p->trusted_packet_sequence_id
			   : 0;
	struct rd_seq *s = seq_get(r, seq);
	int err;

	if (!s)
		return PS_ERR_NOMEM;
	if (p->data_case != PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT ||
	    p->track_event->type != PFTRACE__TRACK_EVENT__TYPE__TYPE_COUNTER) {
		if ((err = cnt_flush(r)))
			return err;
	}
	if ((p->has_sequence_flags &&
	     (p->sequence_flags &
	      PFTRACE__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED)) ||
	    (p->has_incremental_state_cleared && p->incremental_state_cleared))
		seq_reset(s);
	if (p->trace_packet_defaults) {
		const Pftrace__TracePacketDefaults *d =
		    p->trace_packet_defaults;

		s->has_clock = d->has_timestamp_clock_id;
		s->clock = d->timestamp_clock_id;
		s->track = d->track_event_defaults &&
				   d->track_event_defaults->has_track_uuid
			       ? d->track_event_defaults->track_uuid
			       : 0;
	}
	if (p->interned_data && (err = read_interned(r, s, p->interned_data)))
		return err;
	switch (p->data_case) {
	case PFTRACE__TRACE_PACKET__DATA_CLOCK_SNAPSHOT:
		return read_clock(r, seq ? s : NULL, p->clock_snapshot);
	case PFTRACE__TRACE_PACKET__DATA_TRACK_DESCRIPTOR:
		return read_track(r, p->track_descriptor);
	case PFTRACE__TRACE_PACKET__DATA_TRACK_EVENT:
		return read_event(r, seq, s, p);
	case PFTRACE__TRACE_PACKET__DATA_CHROME_EVENTS:
		return read_chrome_metadata(r, p->chrome_events);
	case PFTRACE__TRACE_PACKET__DATA_PROCESS_TREE:
		for (size_t i = 0; i < p->process_tree->n_processes; i++) {
			const Pftrace__ProcessTree__Process *pr =
			    p->process_tree->processes[i];

			if (pr->has_pid && pr->has_ppid && pr->ppid > 0 &&
			    (err = ps_write_parent(r->dst, (uint32_t)pr->pid,
						   (uint32_t)pr->ppid)))
				return err;
		}
		return 0;
	default:
		return 0; /* other data sources: nothing for us */
	}
}

/* ---- an arena for protobuf-c, reset after every packet ----------------- */

struct rd_arena {
	uint8_t *buf; /* owned */
	size_t cap, used;
	void *big;   /* chain of blocks that did not fit (owned) */
	size_t want; /* bytes the last packet needed in all */
};

static void *arena_alloc(void *data, size_t size)
{
	struct rd_arena *a = data;
	void **blk;

	size = (size + 15) & ~(size_t)15;
	a->want += size;
	if (size <= a->cap - a->used) {
		void *p = a->buf + a->used;

		a->used += size;
		return p;
	}
	blk = malloc(sizeof(void *) * 2 + size);
	if (!blk)
		return NULL;
	blk[0] = a->big;
	a->big = blk;
	return blk + 2;
}

static void arena_free(void *data, void *p)
{
	/* Everything goes at once in arena_reset. */
}

static void arena_reset(struct rd_arena *a)
{
	while (a->big) {
		void **blk = a->big;

		a->big = blk[0];
		free(blk);
	}
	if (a->want > a->cap) {
		/* Grow so the next packet like this one fits. */
		size_t cap = a->cap ? a->cap : 4096;
		uint8_t *p;

		while (cap < a->want)
			cap *= 2;
		p = malloc(cap);
		if (p) {
			free(a->buf);
			a->buf = p;
			a->cap = cap;
		}
	}
	a->used = a->want = 0;
}

static void arena_fini(struct rd_arena *a)
{
	arena_reset(a);
	free(a->buf);
}

/* ---- the Trace framing ------------------------------------------------- */

/* Reads a varint at *off; 0, or PS_ERR_TRUNCATED / PS_ERR_FORMAT. */
static int get_varint(const uint8_t *d, size_t len, size_t *off, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*off >= len)
			return PS_ERR_TRUNCATED;
		b = d[(*off)++];
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return PS_ERR_FORMAT;
}

/* Skips one field's value of wire type @wt at *off. */
static int skip_value(const uint8_t *d, size_t len, size_t *off, unsigned wt)
{
	uint64_t n;
	int err;

	switch (wt) {
	case 0:
		return get_varint(d, len, off, &n);
	case 1:
		n = 8;
		break;
	case 2:
		if ((err = get_varint(d, len, off, &n)))
			return err;
		break;
	case 5:
		n = 4;
		break;
	default:
		return PS_ERR_FORMAT;
	}
	if (n > len - *off)
		return PS_ERR_TRUNCATED;
	*off += (size_t)n;
	return 0;
}

static int frame_error(int err, size_t off)
{
	if (err == PS_ERR_TRUNCATED)
		return ps_err_detail(err,
				     "Perfetto trace is truncated: the record "
				     "at byte %zu runs past the end of the "
				     "file",
				     off);
	return ps_err_detail(PS_ERR_FORMAT,
			     "Perfetto trace is corrupt at byte %zu: not a "
			     "valid protobuf field",
			     off);
}

int pftw_read(const uint8_t *data, size_t len, struct ps_writer *dst)
{
	struct rd r;
	struct rd_arena arena = {0};
	ProtobufCAllocator alloc = {arena_alloc, arena_free, &arena};
	size_t off = 0;
	int err = 0;

	if ((!data && len) || !dst)
		return ps_err_detail(PS_ERR_INVAL,
				     "pftw_read needs trace bytes and a "
				     "destination writer");
	memset(&r, 0, sizeof(r));
	r.dst = dst;
	while (!err && off < len) {
		size_t start = off;
		uint64_t tag, n;
		Pftrace__TracePacket *p;

		if ((err = get_varint(data, len, &off, &tag))) {
			err = frame_error(err, start);
			break;
		}
		if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
			err = frame_error(PS_ERR_FORMAT, start);
			break;
		}
		if (tag != ((1u << 3) | 2)) {
			/* Not a packet: a field a newer Trace may have. */
			if ((err = skip_value(data, len, &off, tag & 7)))
				err = frame_error(err, start);
			continue;
		}
		if ((err = get_varint(data, len, &off, &n))) {
			err = frame_error(err, start);
			break;
		}
		if (n > len - off) {
			err = ps_err_detail(PS_ERR_TRUNCATED,
					    "Perfetto trace is truncated: the "
					    "packet at byte %zu needs %llu "
					    "bytes, %zu remain",
					    start, (unsigned long long)n,
					    len - off);
			break;
		}
		p = pftrace__trace_packet__unpack(&alloc, (size_t)n,
						  data + off);
		if (!p) {
			arena_reset(&arena);
			err = ps_err_detail(PS_ERR_FORMAT,
					    "Perfetto trace is corrupt: the "
					    "packet at byte %zu is not a valid "
					    "TracePacket",
					    start);
			break;
		}
		r.off = start;
		err = read_packet(&r, p);
		arena_reset(&arena);
		off += (size_t)n;
	}
	if (!err)
		err = cnt_flush(&r);
	map_clear(&r.seqs, seq_free);
	map_clear(&r.tracks, track_free);
	map_clear(&r.flows, NULL);
	free(r.args);
	arena_fini(&arena);
	return err;
}

/* Walk the fields of a message prefix; 1 if every complete one is sound
 * and at least one is a TracePacket field we know. */
static int looks_like_packet(const uint8_t *d, size_t len)
{
	size_t off = 0;
	int known = 0;

	while (off < len) {
		uint64_t tag;
		unsigned field;

		if (get_varint(d, len, &off, &tag))
			return known; /* cut by the probe window */
		field = (unsigned)(tag >> 3);
		if (!field || (tag & 7) == 3 || (tag & 7) == 4 || (tag & 7) > 5)
			return 0;
		if (field == 6 || field == 8 || field == 10 || field == 11 ||
		    field == 12 || field == 13 || field == 58 || field == 59 ||
		    field == 60)
			known = 1;
		if (skip_value(d, len, &off, tag & 7))
			return known;
	}
	return known;
}

int pftw_probe(const uint8_t *data, size_t len)
{
	size_t off = 1;
	uint64_t n;

	if (!data || len < 2 || data[0] != ((1u << 3) | 2))
		return 0;
	if (get_varint(data, len, &off, &n) || n == 0)
		return 0;
	return looks_like_packet(data + off,
				 n < len - off ? (size_t)n : len - off);
}

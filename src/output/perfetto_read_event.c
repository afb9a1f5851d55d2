/* SPDX-License-Identifier: MIT */
/* The Perfetto reader's TrackEvents → ptscope events (see perfetto_reader.h).
 *
 * An event's thread comes from its track (or its sequence's default
 * track), its name, category and source location from the sequence's
 * interned data.  The conventions of our writer are undone: per-series
 * counter packets are merged back into one counter event, flow ids on an
 * event become flow events, the metadata track and bundle become meta()
 * calls.  Other producers' TrackEvent traces read as well as they map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/perfetto_format.h"
#include "src/output/perfetto_reader.h"

static int read_args(struct pfrd_reader *r, struct pfrd_seq *s,
		     const Pftrace__TrackEvent *te, struct ps_event *ev)
{
	if (te->n_debug_annotations > r->argcap) {
		struct ps_arg *a =
		    realloc(r->args, te->n_debug_annotations * sizeof(*a));

		if (!a)
			return pfrd_nomem();
		r->args = a;
		r->argcap = te->n_debug_annotations;
	}
	for (size_t i = 0; i < te->n_debug_annotations; i++) {
		const Pftrace__DebugAnnotation *d = te->debug_annotations[i];
		struct ps_arg *a = &r->args[i];

		memset(a, 0, sizeof(*a));
		if (d->name_field_case ==
		    PFTRACE__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID) {
			a->name =
			    pfrd_map_find(&s->tab[PFRD_ANNOTS], d->name_iid);
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

int pfrd_cnt_flush(struct pfrd_reader *r)
{
	if (!r->cnt_active)
		return 0;
	r->cnt_active = 0;
	r->cnt.args = r->cnt_args;
	return r->dst->ops->event(r->dst, &r->cnt);
}

/* One series value; consecutive values of one counter at one time on one
 * sequence become a single event. */
static int read_counter(struct pfrd_reader *r, uint32_t seq,
			const struct pfrd_track *t, uint64_t uuid,
			const Pftrace__TrackEvent *te, struct ps_event *ev)
{
	const struct pfrd_track *g =
	    t && t->parent ? pfrd_map_find(&r->tracks, t->parent) : NULL;
	uint64_t group = g && g->kind == PFRD_GENERIC ? t->parent : uuid;
	const char *name = g && g->kind == PFRD_GENERIC ? g->name
			   : t				? t->name
							: NULL;
	const char *series =
	    g && g->kind == PFRD_GENERIC && t->name ? t->name : "value";
	size_t gl =
	    g && g->kind == PFRD_GENERIC && g->name ? strlen(g->name) : 0;
	struct ps_arg *a;
	int err;

	/* we name a series track "group series" (perfetto_track.c) */
	if (gl && !strncmp(series, g->name, gl) && series[gl] == ' ' &&
	    series[gl + 1])
		series += gl + 1;

	if (r->cnt_active &&
	    (r->cnt_seq != seq || r->cnt_group != group ||
	     r->cnt.ts != ev->ts || r->cnt.nargs == PFRD_MAX_MERGE) &&
	    (err = pfrd_cnt_flush(r)))
		return err;
	for (size_t i = 0; r->cnt_active && i < r->cnt.nargs; i++)
		if (!strcmp(r->cnt_args[i].name, series) &&
		    (err = pfrd_cnt_flush(r)))
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
static int read_flows(struct pfrd_reader *r, const Pftrace__TrackEvent *te,
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
			void *state = pfrd_map_find(&r->flows, id), *old;

			f.flow_id = id;
			if (l >= 2)
				f.type = PS_EV_FLOW_END;
			else if (state == (void *)1)
				f.type = PS_EV_FLOW_STEP;
			else
				f.type = PS_EV_FLOW_BEGIN;
			if ((err = pfrd_map_put(
				 &r->flows, id,
				 (void *)(uintptr_t)(l >= 2 ? 2 : 1), &old)))
				return err;
			if ((err = r->dst->ops->event(r->dst, &f)))
				return err;
		}
	}
	return 0;
}

int pfrd_read_event(struct pfrd_reader *r, uint32_t seq, struct pfrd_seq *s,
		    const Pftrace__TracePacket *p)
{
	const Pftrace__TrackEvent *te = p->track_event;
	uint64_t uuid = te->has_track_uuid ? te->track_uuid : s->track;
	const struct pfrd_track *t =
	    uuid ? pfrd_map_find(&r->tracks, uuid) : NULL;
	const struct pfrd_track *dt =
	    s->track ? pfrd_map_find(&r->tracks, s->track) : NULL;
	int nflows = te->n_flow_ids || te->n_flow_ids_old ||
		     te->n_terminating_flow_ids ||
		     te->n_terminating_flow_ids_old;
	struct ps_span_info info;
	struct ps_event ev;
	int err;

	memset(&ev, 0, sizeof(ev));
	if ((err = pfrd_packet_time(r, s, p, &ev.ts)))
		return err;
	/* The thread: the track's own, else the sequence's default. */
	if (dt && dt->kind == PFRD_THREAD) {
		ev.pid = dt->pid;
		ev.tid = dt->tid;
	}
	if (t && t->kind == PFRD_THREAD) {
		ev.pid = t->pid;
		ev.tid = t->tid;
	} else if (t && pfrd_track_pid(r, t, &ev.pid) &&
		   !(dt && dt->kind == PFRD_THREAD && dt->pid == ev.pid)) {
		ev.tid = ev.pid;
	}

	if (te->type == PFTRACE__TRACK_EVENT__TYPE__TYPE_COUNTER)
		return read_counter(r, seq, t, uuid, te, &ev);
	if ((err = pfrd_cnt_flush(r)))
		return err;

	if (te->name_field_case == PFTRACE__TRACK_EVENT__NAME_FIELD_NAME_IID) {
		ev.name = pfrd_map_find(&s->tab[PFRD_NAMES], te->name_iid);
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
		ev.category =
		    pfrd_map_find(&s->tab[PFRD_CATS], te->category_iids[0]);
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
		const struct pfrd_loc *l =
		    pfrd_map_find(&s->tab[PFRD_LOCS], te->source_location_iid);

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
		if (t && t->kind == PFRD_META) {
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
		ev.scope = !t || (t->kind != PFRD_THREAD && !ev.pid)
			       ? PS_SCOPE_GLOBAL
			   : t->kind == PFRD_PROCESS ? PS_SCOPE_PROCESS
			   : t->kind == PFRD_THREAD  ? PS_SCOPE_THREAD
						     : PS_SCOPE_GLOBAL;
		break;
	default:
		return 0; /* legacy (untyped) events carry no TrackEvent type */
	}
	if ((err = r->dst->ops->event(r->dst, &ev)))
		return err;
	return nflows ? read_flows(r, te, &ev) : 0;
}

/* ChromeEventBundle.metadata (how we write meta(), see perfetto_packet.c)
 * → meta() calls; ints and bools as their decimal or true/false text. */
int pfrd_read_chrome_metadata(struct pfrd_reader *r,
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

/* SPDX-License-Identifier: MIT */
/* The Perfetto reader's state between packets (see perfetto_reader.h): each
 * sequence's interned data (names, categories, annotation names, source
 * locations by iid), its TracePacketDefaults and its sequence-scoped
 * (incremental) clocks; every track, and the (pid, tid) its descriptor
 * gives it.
 */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/perfetto_format.h"
#include "src/output/perfetto_reader.h"

/* ---- a uint64 → value map ---------------------------------------------- */

static size_t rd_slot(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

void *pfrd_map_find(const struct pfrd_map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t j = rd_slot(key, m->cap); m->e[j].val;
	     j = (j + 1) & (m->cap - 1))
		if (m->e[j].key == key)
			return m->e[j].val;
	return NULL;
}

int pfrd_map_put(struct pfrd_map *m, uint64_t key, void *val, void **old)
{
	size_t j;

	*old = NULL;
	if ((m->n + 1) * 4 > m->cap * 3) {
		size_t cap = m->cap ? m->cap * 2 : 32;
		struct pfrd_ent *e = calloc(cap, sizeof(*e));

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

void pfrd_map_clear(struct pfrd_map *m, void (*fn)(void *))
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->e[i].val && fn)
			fn(m->e[i].val);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static void loc_free(void *p)
{
	struct pfrd_loc *l = p;

	free(l->file);
	free(l->module);
	free(l);
}

void pfrd_track_free(void *p)
{
	struct pfrd_track *t = p;

	free(t->name);
	free(t);
}

void pfrd_seq_reset(struct pfrd_seq *s)
{
	for (int i = 0; i < PFRD_NTABLES; i++)
		pfrd_map_clear(&s->tab[i], i == PFRD_LOCS ? loc_free : free);
	s->has_clock = 0;
	s->track = 0;
}

void pfrd_seq_free(void *p)
{
	pfrd_seq_reset(p);
	free(p);
}

int pfrd_nomem(void)
{
	return ps_err_detail(PS_ERR_NOMEM,
			     "out of memory reading a Perfetto trace");
}

struct pfrd_seq *pfrd_seq_get(struct pfrd_reader *r, uint32_t id)
{
	struct pfrd_seq *s = pfrd_map_find(&r->seqs, id);
	void *old;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || pfrd_map_put(&r->seqs, id, s, &old)) {
		free(s);
		pfrd_nomem();
		return NULL;
	}
	return s;
}

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ---- packet parts that change the state ---------------------------------- */

static int put_str(struct pfrd_reader *r, struct pfrd_seq *s, int table,
		   int has_iid, uint64_t iid, const char *name)
{
	char *copy;
	void *old;

	if (!has_iid || !iid)
		return ps_err_detail(PS_ERR_FORMAT,
				     "Perfetto packet at byte %zu interns a "
				     "string without an iid",
				     r->off);
	copy = strdup(name ? name : "");
	if (!copy || pfrd_map_put(&s->tab[table], iid, copy, &old)) {
		free(copy);
		return pfrd_nomem();
	}
	free(old);
	return 0;
}

int pfrd_read_interned(struct pfrd_reader *r, struct pfrd_seq *s,
		       const Pftrace__InternedData *in)
{
	int err = 0;

	for (size_t i = 0; !err && i < in->n_event_names; i++)
		err =
		    put_str(r, s, PFRD_NAMES, in->event_names[i]->has_iid,
			    in->event_names[i]->iid, in->event_names[i]->name);
	for (size_t i = 0; !err && i < in->n_event_categories; i++)
		err = put_str(r, s, PFRD_CATS, in->event_categories[i]->has_iid,
			      in->event_categories[i]->iid,
			      in->event_categories[i]->name);
	for (size_t i = 0; !err && i < in->n_debug_annotation_names; i++)
		err = put_str(r, s, PFRD_ANNOTS,
			      in->debug_annotation_names[i]->has_iid,
			      in->debug_annotation_names[i]->iid,
			      in->debug_annotation_names[i]->name);
	for (size_t i = 0; !err && i < in->n_source_locations; i++) {
		const Pftrace__SourceLocation *sl = in->source_locations[i];
		struct pfrd_loc *l;
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
			return pfrd_nomem();
		l->file = dup_opt(sl->file_name);
		l->module = dup_opt(sl->ptscope_module);
		l->address = sl->ptscope_address;
		l->line = sl->line_number;
		if ((sl->file_name && !l->file) ||
		    (sl->ptscope_module && !l->module) ||
		    pfrd_map_put(&s->tab[PFRD_LOCS], sl->iid, l, &old)) {
			loc_free(l);
			return pfrd_nomem();
		}
		if (old)
			loc_free(old);
	}
	return err;
}

int pfrd_read_clock(struct pfrd_reader *r, struct pfrd_seq *s,
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
		struct pfrd_clock *k;

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
int pfrd_packet_time(struct pfrd_reader *r, struct pfrd_seq *s,
		     const Pftrace__TracePacket *p, uint64_t *ts)
{
	uint32_t clock = PFTW_CLOCK_BOOTTIME;
	struct pfrd_clock *k;
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

/* @t, a track with no descriptor of its own kind under a thread's track,
 * is a track of that thread (perfetto_format.h): give it the thread's
 * pid and its tid with PS_TID_SCHED or PS_TID_BLOCK.  0 if it is not. */
static int aux_track(struct pfrd_reader *r, struct pfrd_track *t)
{
	const struct pfrd_track *p = pfrd_map_find(&r->tracks, t->parent);
	size_t n = t->name ? strlen(t->name) : 0, bl = strlen(PFTW_BLOCK_TRACK);

	if (!p || p->kind != PFRD_THREAD || ps_tid_aux(p->tid) ||
	    p->tid >= PS_TID_MAX_REAL)
		return 0;
	t->kind = PFRD_THREAD;
	t->pid = p->pid;
	t->tid =
	    p->tid | (n >= bl && !strcmp(t->name + n - bl, PFTW_BLOCK_TRACK)
			  ? PS_TID_BLOCK
			  : PS_TID_SCHED);
	return 1;
}

int pfrd_read_track(struct pfrd_reader *r, const Pftrace__TrackDescriptor *td)
{
	struct pfrd_track *t;
	void *old;
	int err;

	if (!td->has_uuid || !td->uuid)
		return 0; /* the implicit global track needs no entry */
	t = pfrd_map_find(&r->tracks, td->uuid);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || pfrd_map_put(&r->tracks, td->uuid, t, &old)) {
			free(t);
			return pfrd_nomem();
		}
	}
	if (td->has_parent_uuid)
		t->parent = td->parent_uuid;
	if (td->name) {
		char *n = strdup(td->name);

		if (!n)
			return pfrd_nomem();
		free(t->name);
		t->name = n;
	}
	if (td->process) {
		t->kind = PFRD_PROCESS;
		t->pid = (uint32_t)td->process->pid;
		if (td->process->process_name &&
		    (err = r->dst->ops->process(r->dst, t->pid,
						td->process->process_name)))
			return err;
	} else if (td->thread) {
		t->kind = PFRD_THREAD;
		t->pid = (uint32_t)td->thread->pid;
		t->tid = (uint32_t)td->thread->tid;
		if (td->thread->thread_name &&
		    (err = r->dst->ops->thread(r->dst, t->pid, t->tid,
					       td->thread->thread_name)))
			return err;
	} else if (td->counter) {
		t->kind = PFRD_COUNTER;
	} else if (t->parent && aux_track(r, t)) {
		/* A track of a thread (perfetto_format.h). */
		if (t->name && (err = r->dst->ops->thread(r->dst, t->pid,
							  t->tid, t->name)))
			return err;
	} else if (!t->parent && t->name && !strcmp(t->name, PFTW_META_TRACK)) {
		t->kind = PFRD_META;
	}
	return 0;
}

/* The process id a track belongs to (walking up its parents). */
int pfrd_track_pid(struct pfrd_reader *r, const struct pfrd_track *t,
		   uint64_t *pid)
{
	for (int depth = 0; t && depth < 16; depth++) {
		if (t->kind == PFRD_PROCESS || t->kind == PFRD_THREAD) {
			*pid = t->pid;
			return 1;
		}
		t = t->parent ? pfrd_map_find(&r->tracks, t->parent) : NULL;
	}
	return 0;
}

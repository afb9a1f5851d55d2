/* SPDX-License-Identifier: MIT */
/* Perfetto protobuf writer: the ptscope event stream → a Perfetto Trace.
 *
 * Layout (docs/format-perfetto.md has the details):
 *   sequence 1: defaults (absolute MONOTONIC timestamps), a clock snapshot
 *     that makes MONOTONIC the trace clock, every TrackDescriptor, the
 *     metadata (one chrome_events packet, written by flush);
 *   one sequence per thread: SEQ_INCREMENTAL_STATE_CLEARED + defaults
 *     (incremental clock 64, the thread's track), a clock snapshot tying
 *     clock 64 to MONOTONIC at the thread's first event, then TrackEvent
 *     packets with ns deltas and interned names, categories, annotation
 *     names and source locations.
 *
 * This file holds the writer's ops: which packets each call becomes, and
 * when the end of a COMPLETE event is written (trace_processor's slice
 * tracker decides what that must be).  The tracks are in
 * perfetto_track.c, the encoding in perfetto_packet.c, the interning in
 * perfetto_intern.c; perfetto_writer.h holds their shared state.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "src/output/perfetto.h"
#include "src/output/perfetto_samples.h"
#include "src/output/sink.h"
#include "src/output/perfetto_writer.h"

/* ---- deferred ends of COMPLETE events ---------------------------------- */

static int pend_push(struct pftw_thread *th, uint64_t end, const char *name,
		     const char *cat)
{
	struct pftw_pend e = {end, name ? strdup(name) : NULL,
			      cat ? strdup(cat) : NULL};
	size_t i;

	if ((name && !e.name) || (cat && !e.cat))
		goto nomem;
	if (th->npend == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 16;
		struct pftw_pend *p = realloc(th->pend, cap * sizeof(*p));

		if (!p)
			goto nomem;
		th->pend = p;
		th->cap = cap;
	}
	for (i = th->npend++; i && th->pend[(i - 1) / 2].end > end;
	     i = (i - 1) / 2)
		th->pend[i] = th->pend[(i - 1) / 2];
	th->pend[i] = e;
	return 0;
nomem:
	free(e.name);
	free(e.cat);
	return ps_err_detail(PS_ERR_NOMEM,
			     "out of memory deferring a span end");
}

static struct pftw_pend pend_pop(struct pftw_thread *th)
{
	struct pftw_pend top = th->pend[0], last = th->pend[--th->npend];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < th->npend) {
		if (c + 1 < th->npend && th->pend[c + 1].end < th->pend[c].end)
			c++;
		if (th->pend[c].end >= last.end)
			break;
		th->pend[i] = th->pend[c];
		i = c;
	}
	if (th->npend)
		th->pend[i] = last;
	return top;
}

/* Write the deferred ends at or before @ts (all with @ts == UINT64_MAX):
 * children end before their parents since they end earlier. */
static int pend_flush(struct pftw_writer *w, struct pftw_thread *th,
		      uint64_t ts)
{
	struct pftw_te te = {.type =
				 PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END};

	while (th->npend && th->pend[0].end <= ts) {
		struct pftw_pend p = pend_pop(th);
		int err;

		te.name = p.name;
		te.category = p.cat;
		err = pftw_emit_event(w, &th->seq, 1, p.end, &te);
		free(p.name);
		free(p.cat);
		if (err)
			return err;
	}
	return 0;
}

/* Close the open zero-length slices (they are the innermost). */
static int zero_flush(struct pftw_writer *w, struct pftw_thread *th)
{
	struct pftw_te te = {.type =
				 PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END};

	for (; th->nzero; th->nzero--) {
		int err = pftw_emit_event(w, &th->seq, 1, th->zero_ts, &te);

		if (err)
			return err;
	}
	return 0;
}

/* Write the ends that trace_processor would apply before @ev, the way its
 * slice tracker treats JSON "X" events: a slice ending at or before a new
 * slice, instant or end is closed first, except that zero-length slices
 * and instants at one time stack.  A flow event binds to whatever is still
 * open at its time, so ends at its very time stay after it. */
static int close_before(struct pftw_writer *w, struct pftw_thread *th,
			const struct ps_event *ev)
{
	int zero = (ev->type == PS_EV_COMPLETE && !ev->dur) ||
		   (ev->type == PS_EV_INSTANT && ev->scope == PS_SCOPE_THREAD);
	int flow = ev->type == PS_EV_FLOW_BEGIN ||
		   ev->type == PS_EV_FLOW_STEP || ev->type == PS_EV_FLOW_END;
	int err = 0;

	if (th->nzero && (th->zero_ts < ev->ts || (!zero && !flow)))
		err = zero_flush(w, th);
	if (flow)
		return err || !th->npend || !ev->ts
			   ? err
			   : pend_flush(w, th, ev->ts - 1);
	if (!err && th->npend)
		err = pend_flush(w, th, ev->ts);
	return err;
}

/* ---- ops --------------------------------------------------------------- */

static int pf_process(struct ps_writer *base, uint64_t pid, const char *name)
{
	struct pftw_writer *w = (struct pftw_writer *)base;
	uint64_t uuid;
	int err = pft_name(&w->tree, pid, name);

	if (err)
		return err;
	return pftw_process_track(w, pid, name ? name : "", &uuid);
}

/* Parents go into one ProcessTree packet at flush (perfetto_tree.h). */
static int pf_parent(struct ps_writer *base, uint64_t pid, uint64_t ppid)
{
	return pft_parent(&((struct pftw_writer *)base)->tree, pid, ppid);
}

static int pf_thread_name(struct ps_writer *base, uint64_t pid, uint64_t tid,
			  const char *name)
{
	struct pftw_writer *w = (struct pftw_writer *)base;
	struct pftw_thread *th = pftw_thread_get(w, pid, tid);

	if (!th)
		return PS_ERR_NOMEM;
	return pftw_thread_describe(w, th, name ? name : "");
}

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

static int pf_meta(struct ps_writer *base, const char *key, const char *value)
{
	struct pftw_writer *w = (struct pftw_writer *)base;

	if (w->nmeta == w->metacap) {
		size_t cap = w->metacap ? w->metacap * 2 : 8;
		struct pftw_meta *m = realloc(w->metas, cap * sizeof(*m));

		if (!m)
			return ps_err_detail(PS_ERR_NOMEM,
					     "out of memory for metadata");
		w->metas = m;
		w->metacap = cap;
	}
	w->metas[w->nmeta].key = dup_str(key);
	w->metas[w->nmeta].value = dup_str(value);
	if (!w->metas[w->nmeta].key || !w->metas[w->nmeta].value) {
		free(w->metas[w->nmeta].key);
		free(w->metas[w->nmeta].value);
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for metadata");
	}
	w->nmeta++;
	return 0;
}

static int pf_counter(struct pftw_writer *w, struct pftw_thread *th,
		      const struct ps_event *ev)
{
	struct pftw_te te = {.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_COUNTER};
	const char *name = ev->name ? ev->name : "counter";

	int err;

	/* Describe every series first, so that the values follow each
	 * other and the reader joins them into one event again. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ev->nargs; i++) {
			const struct ps_arg *a = &ev->args[i];

			if (a->type == PS_ARG_NULL || a->type == PS_ARG_STRING)
				continue; /* not a number: nothing to plot */
			err = pftw_counter_track(w, ev->pid, name,
						 a->name ? a->name : "",
						 &te.track);
			if (!err && pass) {
				te.counter = a;
				err = pftw_emit_event(w, &th->seq, 1, ev->ts,
						      &te);
			}
			if (err)
				return err;
		}
	}
	return 0;
}

static int pf_event(struct ps_writer *base, const struct ps_event *ev)
{
	struct pftw_writer *w = (struct pftw_writer *)base;
	struct pftw_te te = {0};
	struct pftw_thread *th;
	int err = 0;

	if (!ev)
		return ps_err_detail(PS_ERR_INVAL,
				     "perfetto writer: NULL event");
	th = pftw_thread_get(w, ev->pid, ev->tid);
	if (!th)
		return PS_ERR_NOMEM;
	if (!th->started && (err = pftw_thread_start(w, th, ev->ts)))
		return err;
	if ((th->npend || th->nzero) && (err = close_before(w, th, ev)))
		return err;
	if (!w->any_event || ev->ts < w->min_ts)
		w->min_ts = ev->ts;
	w->any_event = 1;

	te.name = ev->name;
	te.category = ev->category;
	te.args = ev->args;
	te.nargs = ev->nargs;
	switch (ev->type) {
	case PS_EV_BEGIN:
	case PS_EV_COMPLETE:
		te.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
		te.info = ev->info;
		err = pftw_emit_event(w, &th->seq, 1, ev->ts, &te);
		if (err || ev->type != PS_EV_COMPLETE)
			return err;
		if (!ev->dur) {
			th->zero_ts = ev->ts;
			th->nzero++;
			return 0;
		}
		return pend_push(th, ev->ts + ev->dur, ev->name, ev->category);
	case PS_EV_END:
		/* Perfetto matches an end to the open slice; no name. */
		te.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END;
		te.name = te.category = NULL;
		return pftw_emit_event(w, &th->seq, 1, ev->ts, &te);
	case PS_EV_INSTANT:
		te.type = PFTRACE__TRACK_EVENT__TYPE__TYPE_INSTANT;
		if (ev->scope == PS_SCOPE_PROCESS) {
			err = pftw_process_track(w, ev->pid, NULL, &te.track);
		} else if (ev->scope == PS_SCOPE_GLOBAL) {
			if (!w->global_uuid)
				err = pftw_global_track(w, PFTW_GLOBAL_TRACK,
							&w->global_uuid);
			te.track = w->global_uuid;
		}
		if (err)
			return err;
		return pftw_emit_event(w, &th->seq, 1, ev->ts, &te);
	case PS_EV_COUNTER:
		return pf_counter(w, th, ev);
	case PS_EV_FLOW_BEGIN:
	case PS_EV_FLOW_STEP:
	case PS_EV_FLOW_END:
		/* Chrome's legacy flow events: trace_processor binds them to
		 * the enclosing slice, as it does JSON's, and adds no slice
		 * (an instant carrying flow_ids would be one). */
		te.legacy_phase = ev->type == PS_EV_FLOW_BEGIN	? 's'
				  : ev->type == PS_EV_FLOW_STEP ? 't'
								: 'f';
		te.flow = ev->flow_id;
		te.info = NULL;
		return pftw_emit_event(w, &th->seq, 1, ev->ts, &te);
	}
	return ps_err_detail(PS_ERR_INVAL,
			     "perfetto writer: unknown event "
			     "type %d",
			     (int)ev->type);
}

/* Sample packets go to the sink beside the rest (order between
 * sequences does not matter to a reader). */
static int samples_drain(struct pftw_writer *w)
{
	const uint8_t *p;
	size_t n;
	int err;

	if (!w->samples || !(p = pfs_bytes(w->samples, &n)) || !n)
		return 0;
	err = pftw_out_drain(w);
	if (!err)
		err = ps_sink_write(w->base.sink, p, n);
	pfs_clear(w->samples);
	return err;
}

static int pf_sample(struct ps_writer *base, const struct ps_sample *smp)
{
	struct pftw_writer *w = (struct pftw_writer *)base;
	size_t n;
	int err;

	if (!w->samples && (err = pfs_new(w->next_seq++, &w->samples)))
		return err;
	err = pfs_add(w->samples, smp);
	if (!err && pfs_bytes(w->samples, &n) && n > PFTW_OUT_FLUSH)
		err = samples_drain(w);
	return err;
}

static int pf_flush(struct ps_writer *base)
{
	struct pftw_writer *w = (struct pftw_writer *)base;
	int err;

	if ((err = samples_drain(w)))
		return err;

	for (size_t i = 0; i < w->threads.cap; i++) {
		struct pftw_thread *th;

		if (!w->threads.e[i].key)
			continue;
		th = (struct pftw_thread *)(uintptr_t)w->threads.e[i].val;
		if (th && th->nzero && (err = zero_flush(w, th)))
			return err;
		if (th && th->npend && (err = pend_flush(w, th, UINT64_MAX)))
			return err;
	}
	if (w->nmeta && (err = pftw_emit_metadata(w)))
		return err;
	if ((err = pftw_emit_tree(w)))
		return err;
	return pftw_out_drain(w);
}

static void pf_destroy(struct ps_writer *base)
{
	struct pftw_writer *w = (struct pftw_writer *)base;

	if (!w)
		return;
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct pftw_thread *th;

		if (!w->threads.e[i].key)
			continue;
		th = (struct pftw_thread *)(uintptr_t)w->threads.e[i].val;
		if (!th)
			continue;
		pftw_seq_free(&th->seq);
		for (size_t k = 0; k < th->npend; k++) {
			free(th->pend[k].name);
			free(th->pend[k].cat);
		}
		free(th->pend);
		free(th);
	}
	pftw_map_free(&w->threads);
	pft_free(&w->tree);
	pftw_map_free(&w->procs);
	pftw_map_free(&w->counters);
	for (int k = 0; k < PFTW_IID_KINDS; k++)
		pftw_map_free(&w->iids[k]);
	pftw_seq_free(&w->global);
	for (size_t i = 0; i < w->nmeta; i++) {
		free(w->metas[i].key);
		free(w->metas[i].value);
	}
	free(w->metas);
	pfs_free(w->samples);
	free(w->out.p);
	free(w->ev.p);
	free(w->in.p);
	free(w->key.p);
	free(w);
}

static const struct ps_writer_ops pf_ops = {
    .name = "perfetto",
    .process = pf_process,
    .thread = pf_thread_name,
    .parent = pf_parent,
    .meta = pf_meta,
    .event = pf_event,
    .flush = pf_flush,
    .destroy = pf_destroy,
    .sample = pf_sample,
};

int pftw_writer_new(struct ps_sink *sink, struct ps_writer **out)
{
	struct pftw_writer *w;
	int err;

	if (!sink || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "pftw_writer_new needs a sink and an out "
				     "pointer");
	w = calloc(1, sizeof(*w));
	if (!w)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for the Perfetto writer");
	w->base.ops = &pf_ops;
	w->base.sink = sink;
	w->next_uuid = 1;
	w->global.id = PFTW_SEQ_GLOBAL;
	w->next_seq = PFTW_SEQ_GLOBAL + 1;
	err = pftw_emit_seq_start(w, PFTW_SEQ_GLOBAL, PFTW_CLOCK_MONOTONIC, 0);
	if (!err)
		err = pftw_emit_clock(w, PFTW_SEQ_GLOBAL, 0, 0);
	if (err) {
		pf_destroy(&w->base);
		return err;
	}
	*out = &w->base;
	return 0;
}

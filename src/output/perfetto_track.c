/* SPDX-License-Identifier: MIT */
/* The Perfetto writer's tracks (see perfetto_writer.h).
 *
 * Every process and thread has a track with a uuid; a thread's track is
 * also the default track of its own packet sequence, opened (state
 * cleared, defaults, a clock snapshot) at its first event.  Counters get
 * a group track per (process, name) with a counter track per series;
 * global instants go on one global track.  Descriptors are written on
 * sequence 1 when a track is first used or named.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "ptscope/error.h"
#include "src/output/perfetto_writer.h"

#define PROC_DESCRIBED (1ull << 63)

int pftw_process_track(struct pftw_writer *w, uint64_t pid, const char *name,
		       uint64_t *uuid)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;
	Pftrace__ProcessDescriptor pd = PFTRACE__PROCESS_DESCRIPTOR__INIT;
	struct pftw_ent *e =
	    pftw_map_get(&w->procs, &pid, sizeof(pid), 1, NULL);

	if (!e)
		return PS_ERR_NOMEM;
	if (!e->val)
		e->val = w->next_uuid++;
	*uuid = e->val & ~PROC_DESCRIBED;
	if ((e->val & PROC_DESCRIBED) && !name)
		return 0;
	e->val |= PROC_DESCRIBED;
	td.has_uuid = 1;
	td.uuid = *uuid;
	pd.has_pid = 1;
	pd.pid = (int32_t)pid;
	pd.process_name = (char *)name;
	td.process = &pd;
	return pftw_emit_track(w, &td);
}

int pftw_thread_describe(struct pftw_writer *w, struct pftw_thread *th,
			 const char *name)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;
	Pftrace__ThreadDescriptor tdd = PFTRACE__THREAD_DESCRIPTOR__INIT;
	uint64_t parent;
	int err;

	if (ps_tid_aux(th->tid)) {
		/* A track of a thread (event.h): a child of the thread's
		 * track, which Perfetto shows under the thread without
		 * adding one. */
		struct pftw_thread *owner = pftw_thread_get(
		    w, th->pid, th->tid & ~(uint64_t)PS_TID_AUX);

		if (!owner)
			return PS_ERR_NOMEM;
		if (!owner->described &&
		    (err = pftw_thread_describe(w, owner, NULL)))
			return err;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = th->uuid;
		td.parent_uuid = owner->uuid;
		td.name = (char *)(name			    ? name
				   : th->tid & PS_TID_SCHED ? PFTW_SCHED_TRACK
							    : PFTW_BLOCK_TRACK);
		th->described = 1;
		return pftw_emit_track(w, &td);
	}
	err = pftw_process_track(w, th->pid, NULL, &parent);
	if (err)
		return err;
	td.has_uuid = td.has_parent_uuid = 1;
	td.uuid = th->uuid;
	td.parent_uuid = parent;
	tdd.has_pid = tdd.has_tid = 1;
	tdd.pid = (int32_t)th->pid;
	tdd.tid = (int32_t)th->tid;
	tdd.thread_name = (char *)name;
	td.thread = &tdd;
	th->described = 1;
	return pftw_emit_track(w, &td);
}

struct pftw_thread *pftw_thread_get(struct pftw_writer *w, uint64_t pid,
				    uint64_t tid)
{
	uint64_t k[2] = {pid, tid};
	struct pftw_thread *th = w->last;
	struct pftw_ent *e;
	int fresh;

	if (th && th->pid == pid && th->tid == tid)
		return th;
	e = pftw_map_get(&w->threads, k, sizeof(k), 1, &fresh);
	if (!e)
		return NULL;
	if (fresh) {
		th = calloc(1, sizeof(*th));
		if (!th) {
			ps_err_detail(PS_ERR_NOMEM,
				      "out of memory for a thread's state");
			e->val = 0;
			return NULL;
		}
		th->pid = pid;
		th->tid = tid;
		th->uuid = w->next_uuid++;
		th->seq.id = w->next_seq++;
		e->val = (uint64_t)(uintptr_t)th;
	}
	th = (struct pftw_thread *)(uintptr_t)e->val;
	if (th)
		w->last = th;
	else
		ps_err_detail(PS_ERR_NOMEM,
			      "out of memory for a thread's state");
	return th;
}

int pftw_thread_start(struct pftw_writer *w, struct pftw_thread *th,
		      uint64_t ts)
{
	int err = 0;

	if (!th->described)
		err = pftw_thread_describe(w, th, NULL);
	if (!err)
		err = pftw_emit_seq_start(w, th->seq.id, PFTW_CLOCK_INCR,
					  th->uuid);
	if (!err)
		err = pftw_emit_clock(w, th->seq.id, ts, 1);
	th->seq.clock = ts;
	th->started = 1;
	return err;
}

int pftw_global_track(struct pftw_writer *w, const char *name, uint64_t *uuid)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;

	*uuid = w->next_uuid++;
	td.has_uuid = 1;
	td.uuid = *uuid;
	td.name = (char *)name;
	return pftw_emit_track(w, &td);
}

int pftw_counter_track(struct pftw_writer *w, uint64_t pid, const char *name,
		       const char *series, uint64_t *uuid)
{
	Pftrace__TrackDescriptor td = PFTRACE__TRACK_DESCRIPTOR__INIT;
	Pftrace__CounterDescriptor cd = PFTRACE__COUNTER_DESCRIPTOR__INIT;
	size_t nl = strlen(name), sl = strlen(series);
	struct pftw_ent *e;
	uint64_t group, parent;
	int fresh, err;

	w->key.len = 0;
	if ((err = pftw_buf_reserve(&w->key, 9 + nl + sl)))
		return err;
	pftw_put_bytes(&w->key, &pid, 8);
	pftw_put_bytes(&w->key, "g", 1);
	pftw_put_bytes(&w->key, name, nl);
	e = pftw_map_get(&w->counters, w->key.p, w->key.len, 1, &fresh);
	if (!e)
		return PS_ERR_NOMEM;
	if (fresh) {
		if ((err = pftw_process_track(w, pid, NULL, &parent)))
			return err;
		e->val = w->next_uuid++;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = e->val;
		td.parent_uuid = parent;
		td.name = (char *)name;
		if ((err = pftw_emit_track(w, &td)))
			return err;
	}
	group = e->val;

	w->key.len = 0;
	pftw_put_bytes(&w->key, &group, 8);
	pftw_put_bytes(&w->key, "s", 1);
	pftw_put_bytes(&w->key, series, sl);
	e = pftw_map_get(&w->counters, w->key.p, w->key.len, 1, &fresh);
	if (!e)
		return PS_ERR_NOMEM;
	if (fresh) {
		/* "counter series", the name trace_processor gives a JSON
		 * counter's series, so both formats show the same tracks */
		char *full = malloc(nl + 1 + sl + 1);

		if (!full)
			return ps_err_detail(
			    PS_ERR_NOMEM, "out of memory for a counter track");
		memcpy(full, name, nl);
		full[nl] = ' ';
		memcpy(full + nl + 1, series, sl + 1);
		e->val = w->next_uuid++;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = e->val;
		td.parent_uuid = group;
		td.name = full;
		td.counter = &cd;
		err = pftw_emit_track(w, &td);
		free(full);
		if (err)
			return err;
	}
	*uuid = e->val;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Kernel events in the recorder (see kevents.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/bytes.h"
#include "ptscope/error.h"
#include "src/bpf/sidecar.h"
#include "src/record/core/core.h"
#include "src/record/kevents/kevents.h"

struct rkev {
	struct sidecar *sc;
	unsigned features;
	/* Mapped events, a ring of the newest RKEV_KEEP. */
	struct sdc_event *keep;
	size_t head, n;
	/* Raw events waiting for their thread's step (step backend). */
	struct sdc_event *pend;
	size_t npend;
	uint64_t dropped; /* untraced threads, overflow */
	int spans; /* fed by rkev_span (qemu): unmatched calls are QEMU's */
	/* Code that is not the program's (an emulator's own objects): page
	 * faults taken there are the emulator's. */
	const struct rkev_range *foreign;
	size_t nforeign;
	struct rec_session *s;
};

static struct rkev *K(const struct rec_session *s)
{
	return s->kev;
}

static const struct rec_extension rkev_extension;

int rkev_open(struct rec_session *s)
{
	const struct rec_options *o = s->o;
	struct sdc_config cfg;
	struct rkev *k;
	int r;

	/* Latency triggers on a free-running backend need the uprobe
	 * timer, even with --no-events. */
	if (!o->events && !o->nevent_specs && !rec_triggers_want_sidecar(s))
		return 0;
	if (!s->be->kernel_events) {
		rec_notice(s,
			   "kernel events are off: the %s backend does not "
			   "support them yet; recording goes on without them",
			   s->be->name);
		return 0;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return PS_ERR_NOMEM;
	k->keep = malloc(RKEV_KEEP * sizeof(*k->keep));
	k->pend = malloc(RKEV_PENDING * sizeof(*k->pend));
	if (!k->keep || !k->pend) {
		free(k->keep);
		free(k->pend);
		free(k);
		return PS_ERR_NOMEM;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.features = o->events;
	cfg.custom = o->event_specs;
	cfg.ncustom = o->nevent_specs;
	cfg.recorder_tgid = getpid();
	r = sdc_open(&cfg, &k->sc);
	/* A --event the user asked for that cannot be traced is an error;
	 * a kernel without root/BTF/BPF only turns the events off. */
	if (r == PS_ERR_INVAL || r == PS_ERR_NOMEM || r == PS_ERR_LIMIT ||
	    (o->nevent_specs &&
	     (r == PS_ERR_NOT_FOUND || r == PS_ERR_UNSUPPORTED))) {
		free(k->keep);
		free(k->pend);
		free(k);
		return r;
	}
	if (r) {
		rec_notice(s,
			   "kernel events are off: %s; recording goes on "
			   "without them (--no-events: no such notice)",
			   ps_err_message(r));
		free(k->keep);
		free(k->pend);
		free(k);
		return 0;
	}
	k->features = o->events;
	k->s = s;
	s->kev = k;
	s->ext = &rkev_extension;
	return 0;
}

void rkev_close(struct rec_session *s)
{
	struct rkev *k = K(s);

	if (!k)
		return;
	sdc_close(k->sc);
	free(k->keep);
	free(k->pend);
	free(k);
	s->kev = NULL;
	s->ext = NULL;
}

static void rkev_add_proc(struct rec_session *s, pid_t pid)
{
	if (K(s))
		sdc_add_pid(K(s)->sc, pid);
}

static void keep(struct rkev *k, const struct sdc_event *e, uint64_t ts)
{
	size_t slot = (k->head + k->n) % RKEV_KEEP;

	if (k->n == RKEV_KEEP) {
		k->head = (k->head + 1) % RKEV_KEEP;
		k->n--;
		k->dropped++;
	}
	k->keep[slot] = *e;
	k->keep[slot].ts = ts;
	k->n++;
}

/* A slow call from the uprobe timer (free-running backends). */
static int slow_call(struct rkev *k, const struct sdc_event *e)
{
	struct rec_thr *t = rec_thr_find(k->s, (pid_t)e->tid);

	if (!t)
		return 0;
	return rec_triggers_slow_call(k->s, t, e->id, e->v[2], e->v[0], e->ts) <
	       0;
}

static int on_free_event(void *ctx, const struct sdc_event *e)
{
	struct rkev *k = ctx;

	if (e->kind == SDC_SLOW_CALL)
		return slow_call(k, e);
	keep(k, e, e->ts);
	return 0;
}

void rkev_set_foreign(struct rec_session *s, const struct rkev_range *r,
		      size_t n)
{
	if (K(s)) {
		K(s)->foreign = r;
		K(s)->nforeign = n;
	}
}

static int foreign_fault(const struct rkev *k, const struct sdc_event *e)
{
	if (e->kind != SDC_FAULT)
		return 0;
	for (size_t i = 0; i < k->nforeign; i++)
		if (e->v[1] >= k->foreign[i].start &&
		    e->v[1] < k->foreign[i].end)
			return 1;
	return 0;
}

static int on_step_event(void *ctx, const struct sdc_event *e)
{
	struct rkev *k = ctx;

	if (foreign_fault(k, e)) {
		k->dropped++;
		return 0;
	}
	/* A thread the backend does not step (a child process it does not
	 * follow) has no place on the virtual clock. */
	if (!rec_thr_find(k->s, (pid_t)e->tid)) {
		k->dropped++;
		return 0;
	}
	if (k->npend == RKEV_PENDING) {
		/* Nobody steps these threads: they are not traced. */
		memmove(k->pend, k->pend + RKEV_PENDING / 2,
			RKEV_PENDING / 2 * sizeof(*k->pend));
		k->npend = RKEV_PENDING / 2;
		k->dropped += RKEV_PENDING / 2;
	}
	k->pend[k->npend++] = *e;
	return 0;
}

int rkev_wait_fd(const struct rec_session *s)
{
	return K(s) ? sdc_wait_fd(K(s)->sc) : -1;
}

void rkev_poll(struct rec_session *s)
{
	struct rkev *k = K(s);

	if (k)
		sdc_consume(k->sc,
			    s->be->emulated ? on_step_event : on_free_event, k);
}

/* @ts (kernel time) on [v0, v1], anchored at real [a0, a1]. */
static uint64_t place(uint64_t ts, uint64_t a0, uint64_t a1, uint64_t v0,
		      uint64_t v1)
{
	if (ts <= a0 || a1 <= a0)
		return v0;
	if (ts >= a1)
		return v1;
	return v0 + (uint64_t)((double)(ts - a0) * (double)(v1 - v0) /
			       (double)(a1 - a0));
}

void rkev_step(struct rec_session *s, struct rec_thr *t, uint64_t v0,
	       uint64_t v1, int syscall, uint64_t r0, uint64_t r1)
{
	struct rkev *k = K(s);
	uint32_t tid = (uint32_t)t->tid;
	uint64_t a0 = r0, a1 = r1;
	size_t out = 0;

	if (!k)
		return;
	sdc_consume(k->sc, on_step_event, k);
	if (!k->npend)
		return;
	if (syscall) {
		/* The call's own kernel entry and exit are the anchors. */
		for (size_t i = 0; i < k->npend; i++) {
			const struct sdc_event *e = &k->pend[i];

			if (e->tid != tid)
				continue;
			if (e->kind == SDC_SYS_ENTER)
				a0 = e->ts;
			else if (e->kind == SDC_SYS_EXIT)
				a1 = e->ts;
		}
	}
	for (size_t i = 0; i < k->npend; i++) {
		const struct sdc_event *e = &k->pend[i];

		if (e->tid != tid) {
			k->pend[out++] = *e;
			continue;
		}
		/* Off-CPU time outside a system call (a preemption while
		 * the tracer stepped one instruction) is not the program's
		 * time: the virtual clock does not count it either. */
		if (!syscall &&
		    (e->kind == SDC_SWITCH_OUT || e->kind == SDC_SWITCH_IN ||
		     e->kind == SDC_WAKEUP))
			continue;
		keep(k, e, syscall ? place(e->ts, a0, a1, v0, v1) : v0);
	}
	k->npend = out;
}

void rkev_span(struct rec_session *s, struct rec_thr *t, int64_t nr,
	       uint64_t v0, uint64_t v1, uint64_t r0, uint64_t r1, uint64_t vp,
	       uint64_t rp)
{
	struct rkev *k = K(s);
	uint32_t tid = (uint32_t)t->tid;
	uint64_t a0 = r0, a1 = r1;
	size_t out = 0;

	if (!k)
		return;
	k->spans = 1;
	sdc_consume(k->sc, on_step_event, k);
	/* The guest call's own kernel entry and exit are the anchors. */
	for (size_t i = 0; i < k->npend; i++) {
		const struct sdc_event *e = &k->pend[i];

		if (e->tid != tid || e->ts < r0 || e->ts > r1 ||
		    (int64_t)e->v[0] != nr)
			continue;
		if (e->kind == SDC_SYS_ENTER)
			a0 = e->ts;
		else if (e->kind == SDC_SYS_EXIT)
			a1 = e->ts;
	}
	for (size_t i = 0; i < k->npend; i++) {
		const struct sdc_event *e = &k->pend[i];
		int sys = e->kind == SDC_SYS_ENTER || e->kind == SDC_SYS_EXIT;

		if (e->tid != tid || e->ts > r1) {
			k->pend[out++] = *e;
			continue;
		}
		if (e->ts < r0) {
			/* Between guest calls: the emulator's own system
			 * calls and its time off the CPU are not the
			 * program's.  The rest (a fault, a signal) goes just
			 * after the thread's previous call: the real time
			 * between two calls is mostly the emulator
			 * translating code, so it cannot say how far the
			 * thread had got; the first touch of memory a call
			 * just mapped, the common case, lands right. */
			if (!sys && e->kind != SDC_SWITCH_OUT &&
			    e->kind != SDC_SWITCH_IN && e->kind != SDC_WAKEUP)
				keep(k, e, rp && vp && vp <= v0 ? vp + 1 : v0);
			continue;
		}
		/* Inside: the emulator may make calls of its own while it
		 * emulates this one; only the guest's call is shown. */
		if (sys && ((int64_t)e->v[0] != nr || e->ts < a0 || e->ts > a1))
			continue;
		keep(k, e, place(e->ts, a0, a1, v0, v1));
	}
	k->npend = out;
}

struct sidecar *rkev_sidecar(const struct rec_session *s)
{
	return K(s) ? K(s)->sc : NULL;
}

static uint64_t rkev_lost(const struct rec_session *s)
{
	return K(s) ? sdc_lost(K(s)->sc) : 0;
}

static void put_event(struct ps_bytes *b, const struct sdc_event *e)
{
	uint32_t len = e->len > SDC_DATA_MAX ? SDC_DATA_MAX : e->len;

	ps_bytes_u64(b, e->ts);
	ps_bytes_u32(b, e->pid);
	ps_bytes_u32(b, e->tid);
	ps_bytes_u16(b, e->kind);
	ps_bytes_u16(b, e->id);
	ps_bytes_u32(b, e->cpu);
	for (int i = 0; i < SDC_NV; i++)
		ps_bytes_u64(b, e->v[i]);
	ps_bytes_u32(b, len);
	ps_bytes_put(b, e->data, len);
}

/* Events of threads still inside a step (blocked in a call) when the
 * snapshot is taken go at their thread's clock now. */
static void flush_pending(struct rec_session *s, struct rkev *k)
{
	for (size_t i = 0; i < k->npend; i++) {
		struct rec_thr *t = rec_thr_find(s, (pid_t)k->pend[i].tid);
		int kind = k->pend[i].kind;

		/* Under qemu, system calls no guest call claimed are the
		 * emulator's own (the plugin's messages, its dump); its time
		 * off the CPU is not the program's either. */
		if (k->spans &&
		    (kind == SDC_SYS_ENTER || kind == SDC_SYS_EXIT ||
		     kind == SDC_SWITCH_OUT || kind == SDC_SWITCH_IN ||
		     kind == SDC_WAKEUP)) {
			k->dropped++;
			continue;
		}
		if (t)
			keep(k, &k->pend[i], rec_thr_now(s, t));
		else
			k->dropped++;
	}
	k->npend = 0;
}

static int rkev_sections(struct rec_session *s, struct rec_sidecar **secs,
			 size_t *n)
{
	struct rkev *k = K(s);
	struct ps_bytes ev = {0}, ds = {0}, st = {0};
	const struct sdc_desc *d;
	struct rec_sidecar *out;
	size_t nd;

	*secs = NULL;
	*n = 0;
	if (!k)
		return 0;
	rkev_poll(s);
	if (s->be->emulated)
		flush_pending(s, k);
	ps_bytes_u32(&ev, (uint32_t)k->n);
	for (size_t i = 0; i < k->n; i++)
		put_event(&ev, &k->keep[(k->head + i) % RKEV_KEEP]);
	nd = sdc_descs(k->sc, &d);
	ps_bytes_u32(&ds, (uint32_t)nd);
	for (size_t i = 0; i < nd; i++) {
		ps_bytes_str(&ds, d[i].name);
		ps_bytes_u8(&ds, (uint8_t)d[i].is_kfunc);
		ps_bytes_u32(&ds, (uint32_t)d[i].nfields);
		for (size_t f = 0; f < d[i].nfields; f++) {
			const struct sdc_field *fl = &d[i].fields[f];

			ps_bytes_str(&ds, fl->name);
			ps_bytes_u16(&ds, fl->offset);
			ps_bytes_u16(&ds, fl->size);
			ps_bytes_u8(&ds, fl->is_signed);
			ps_bytes_u8(&ds, fl->is_string);
			ps_bytes_u8(&ds, fl->is_dataloc);
		}
	}
	ps_bytes_u64(&st, sdc_lost(k->sc));
	ps_bytes_u64(&st, k->dropped);
	ps_bytes_u32(&st, k->features);
	ps_bytes_u32(&st, (uint32_t)getpid());
	out = calloc(3, sizeof(*out));
	if (!out || ev.oom || ds.oom || st.oom) {
		free(out);
		free(ev.p);
		free(ds.p);
		free(st.p);
		return PS_ERR_NOMEM;
	}
	out[0] = (struct rec_sidecar){RKEV_SEC_STATUS, st.p, st.len};
	out[1] = (struct rec_sidecar){RKEV_SEC_DESCS, ds.p, ds.len};
	out[2] = (struct rec_sidecar){RKEV_SEC_EVENTS, ev.p, ev.len};
	*secs = out;
	*n = 3;
	return 0;
}

static void rkev_sections_free(struct rec_sidecar *secs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((void *)secs[i].bytes);
	free(secs);
}

/* How the core reaches this part: new processes and snapshots. */
static const struct rec_extension rkev_extension = {
    .proc_added = rkev_add_proc,
    .sections = rkev_sections,
    .sections_free = rkev_sections_free,
    .lost = rkev_lost,
};

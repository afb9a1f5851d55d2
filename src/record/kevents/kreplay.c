/* SPDX-License-Identifier: MIT */
/* Kernel events of a recording → trace events (see kevents.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/bpf/event.h"
#include "src/record/kevents/kevents.h"
#include "src/record/kevents/kreplay_nest.h"

/* ---- reading the sections ---- */

struct kev {
	uint64_t ts;
	uint32_t pid, tid;
	uint16_t kind, id;
	uint32_t cpu;
	uint64_t v[SDC_NV];
	uint32_t len;
	const uint8_t *data;
	size_t seq;
};

struct field {
	char name[64];
	uint16_t offset, size;
	uint8_t is_signed, is_string, is_dataloc;
};

struct desc {
	char name[128];
	int is_kfunc;
	size_t nfields;
	struct field f[32];
};

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_n(struct rd *r, int bytes)
{
	uint64_t v = 0;

	if (r->bad || r->end - r->p < bytes) {
		r->bad = 1;
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	return v;
}

static const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return NULL;
	}
	r->p += n;
	return p;
}

static void rd_str(struct rd *r, char *out, size_t size)
{
	uint32_t n = (uint32_t)rd_n(r, 4);
	const uint8_t *p = rd_bytes(r, n);

	snprintf(out, size, "%.*s", p ? (int)n : 0, p ? (const char *)p : "");
}

struct kset {
	struct kev *ev;
	size_t n;
	struct desc desc[16];
	size_t ndesc;
	uint64_t lost, dropped;
	unsigned features;
	int have_status;
};

static int read_events(struct kset *k, const struct rec_sidecar *sc)
{
	struct rd r = {sc->bytes, sc->bytes + sc->len, 0};
	uint32_t n = (uint32_t)rd_n(&r, 4);
	struct kev *nv;

	if (r.bad || n > sc->len / 50)
		return ps_err_detail(PS_ERR_FORMAT,
				     "damaged kernel events section");
	nv = realloc(k->ev, (k->n + n) * sizeof(*nv));
	if (!nv && n)
		return PS_ERR_NOMEM;
	k->ev = nv;
	for (uint32_t i = 0; i < n && !r.bad; i++) {
		struct kev *e = &k->ev[k->n];

		e->ts = rd_n(&r, 8);
		e->pid = (uint32_t)rd_n(&r, 4);
		e->tid = (uint32_t)rd_n(&r, 4);
		e->kind = (uint16_t)rd_n(&r, 2);
		e->id = (uint16_t)rd_n(&r, 2);
		e->cpu = (uint32_t)rd_n(&r, 4);
		for (int j = 0; j < SDC_NV; j++)
			e->v[j] = rd_n(&r, 8);
		e->len = (uint32_t)rd_n(&r, 4);
		e->data = rd_bytes(&r, e->len);
		e->seq = k->n;
		if (!r.bad)
			k->n++;
	}
	return r.bad ? ps_err_detail(PS_ERR_FORMAT,
				     "damaged kernel events section")
		     : 0;
}

static int read_descs(struct kset *k, const struct rec_sidecar *sc)
{
	struct rd r = {sc->bytes, sc->bytes + sc->len, 0};
	uint32_t n = (uint32_t)rd_n(&r, 4);

	for (uint32_t i = 0; i < n && !r.bad && k->ndesc < 16; i++) {
		struct desc *d = &k->desc[k->ndesc++];
		uint32_t nf;

		memset(d, 0, sizeof(*d));
		rd_str(&r, d->name, sizeof(d->name));
		d->is_kfunc = (int)rd_n(&r, 1);
		nf = (uint32_t)rd_n(&r, 4);
		for (uint32_t f = 0; f < nf && !r.bad; f++) {
			struct field fl;

			rd_str(&r, fl.name, sizeof(fl.name));
			fl.offset = (uint16_t)rd_n(&r, 2);
			fl.size = (uint16_t)rd_n(&r, 2);
			fl.is_signed = (uint8_t)rd_n(&r, 1);
			fl.is_string = (uint8_t)rd_n(&r, 1);
			fl.is_dataloc = (uint8_t)rd_n(&r, 1);
			if (d->nfields < 32)
				d->f[d->nfields++] = fl;
		}
	}
	return r.bad ? ps_err_detail(PS_ERR_FORMAT,
				     "damaged kernel event descriptions")
		     : 0;
}

static void read_status(struct kset *k, const struct rec_sidecar *sc)
{
	struct rd r = {sc->bytes, sc->bytes + sc->len, 0};

	k->lost += rd_n(&r, 8);
	k->dropped += rd_n(&r, 8);
	k->features |= (unsigned)rd_n(&r, 4);
	k->have_status = 1;
}

static int by_thread_time(const void *a, const void *b)
{
	const struct kev *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- writing ---- */

static const char *const syscall_names[] = {
#include "syscall_names.h"
};

static const char *sys_name(uint64_t nr, char *buf, size_t size)
{
	if (nr < sizeof(syscall_names) / sizeof(syscall_names[0]) &&
	    syscall_names[nr])
		return syscall_names[nr];
	snprintf(buf, size, "syscall %llu", (unsigned long long)nr);
	return buf;
}

static void a_uint(struct args *a, const char *name, uint64_t v)
{
	if (a->n < MAXARGS)
		a->a[a->n++] = (struct ps_arg){
		    .name = name, .type = PS_ARG_UINT, .v.u = v};
}

static void a_int(struct args *a, const char *name, int64_t v)
{
	if (a->n < MAXARGS)
		a->a[a->n++] =
		    (struct ps_arg){.name = name, .type = PS_ARG_INT, .v.i = v};
}

static void a_ptr(struct args *a, const char *name, uint64_t v)
{
	if (a->n < MAXARGS)
		a->a[a->n++] = (struct ps_arg){
		    .name = name, .type = PS_ARG_POINTER, .v.u = v};
}

static void a_str(struct args *a, const char *name, const char *v)
{
	if (a->n < MAXARGS)
		a->a[a->n++] = (struct ps_arg){
		    .name = name, .type = PS_ARG_STRING, .v.s = v};
}

/* A copy of @len bytes of @p as a string kept in @a. */
static const char *a_keep(struct args *a, const uint8_t *p, size_t len)
{
	char *s;

	if (a->nstr == 4)
		return "";
	s = a->str[a->nstr++];
	if (len > 127)
		len = 127;
	memcpy(s, p ? (const char *)p : "", p ? len : 0);
	s[p ? len : 0] = 0;
	return s;
}

/* The kernel's dev_t (major << 20 | minor) as "MAJOR:MINOR", kept in @a. */
static const char *devname(struct args *a, uint64_t dev)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%llu:%llu",
			 (unsigned long long)(dev >> 20),
			 (unsigned long long)(dev & 0xfffff));

	return a_keep(a, (const uint8_t *)buf, (size_t)n);
}

static int emit(struct ps_writer *w, enum ps_event_type type, uint64_t pid,
		uint64_t tid, uint64_t ts, uint64_t dur, const char *name,
		const char *cat, const struct args *a)
{
	struct ps_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.pid = pid;
	ev.tid = tid;
	ev.ts = ts;
	ev.dur = dur;
	ev.name = name;
	ev.category = cat;
	ev.scope = PS_SCOPE_THREAD;
	ev.args = a ? a->a : NULL;
	ev.nargs = a ? a->n : 0;
	return w->ops->event(w, &ev);
}

/* Arguments of system call @nr worth showing (cheap to decode). */
static void sys_args(struct args *a, const struct kev *in)
{
	const uint64_t *v = in->v;
	const char *path = in->len ? a_keep(a, in->data, in->len) : NULL;

	switch (v[0]) {
	case 0:	 /* read */
	case 1:	 /* write */
	case 17: /* pread64 */
	case 18: /* pwrite64 */
		a_int(a, "fd", (int)v[1]);
		a_uint(a, "count", v[3]);
		break;
	case 3: /* close */
		a_int(a, "fd", (int)v[1]);
		break;
	case 257: /* openat */
		a_int(a, "dirfd", (int)v[1]);
		a_uint(a, "flags", v[3]);
		break;
	case 9: /* mmap */
		a_ptr(a, "addr", v[1]);
		a_uint(a, "length", v[2]);
		break;
	case 62: /* kill */
		a_int(a, "pid", (int)v[1]);
		a_str(a, "signal", ps_signame((int)v[2]));
		break;
	default:
		break;
	}
	if (path)
		a_str(a, "path", path);
}

static void sys_ret(struct args *a, int64_t ret)
{
	if (ret < 0 && ret > -4096) {
		const char *e = strerrorname_np((int)-ret);

		a_str(a, "error", e ? e : "?");
	}
	a_int(a, "return", ret);
}

static const char *state_name(uint64_t st, int preempted)
{
	if (preempted || !(st & 0xff))
		return "preempted";
	if (st & 0x1)
		return "sleeping";
	if (st & 0x2)
		return "blocked (D)";
	if (st & 0x80)
		return "idle";
	return "off cpu";
}

struct open_call {
	const struct kev *e;
};

/* One thread's events, in time order. */
static int write_thread(struct ps_writer *w, const struct kset *k,
			const struct kev *ev, size_t n,
			const struct krp_tap *tap, int emulated,
			struct krp_counts *st, struct kspans *spans)
{
	uint64_t from = n ? krp_tap_first(tap, ev[0].tid) : 0;
	struct open_call sys[16], kf[16];
	size_t nsys = 0, nkf = 0;
	const struct kev *off = NULL, *waker = NULL;
	uint64_t last = n ? ev[n - 1].ts : 0, t0, dur;
	char nbuf[64], name[160];
	int r = 0;

	for (size_t i = 0; i < n && !r; i++) {
		const struct kev *e = &ev[i];
		struct args a;

		memset(&a, 0, sizeof(a));
		if (e->ts < from)
			continue;
		switch (e->kind) {
		case SDC_SYS_ENTER:
			if (nsys < 16)
				sys[nsys++].e = e;
			continue;
		case SDC_SYS_EXIT:
			if (!nsys || sys[nsys - 1].e->v[0] != e->v[0]) {
				nsys = 0; /* entered before the window */
				continue;
			}
			nsys--;
			sys_args(&a, sys[nsys].e);
			sys_ret(&a, (int64_t)e->v[1]);
			t0 = sys[nsys].e->ts;
			dur = e->ts - t0;
			if (emulated && dur >= 3) {
				/* Strictly inside the decoder's "syscall"
				 * span of the same instruction. */
				t0++;
				dur -= 2;
			}
			r = kspans_add(spans, e->pid, e->tid, t0, dur,
				       sys_name(e->v[0], nbuf, sizeof(nbuf)),
				       "syscall", &a);
			continue;
		case SDC_KFUNC_ENTRY:
			if (nkf < 16)
				kf[nkf++].e = e;
			continue;
		case SDC_KFUNC_EXIT: {
			const struct kev *in;

			if (!nkf || kf[nkf - 1].e->id != e->id) {
				nkf = 0;
				continue;
			}
			in = kf[--nkf].e;
			for (uint64_t j = 0; j < in->v[6] && j < 6; j++) {
				static const char *const an[] = {
				    "arg0", "arg1", "arg2",
				    "arg3", "arg4", "arg5"};

				a_ptr(&a, an[j], in->v[j]);
			}
			a_int(&a, "return", (int64_t)e->v[0]);
			r = kspans_add(
			    spans, e->pid, e->tid, in->ts, e->ts - in->ts,
			    e->id < k->ndesc ? k->desc[e->id].name : "?",
			    "kernel", &a);
			continue;
		}
		case SDC_SWITCH_OUT:
			off = e;
			waker = NULL;
			continue;
		case SDC_WAKEUP:
			if (off)
				waker = e;
			continue;
		case SDC_SWITCH_IN:
			if (!off)
				continue;
			a_str(&a, "state",
			      state_name(off->v[0], (int)off->v[1]));
			if (off->len)
				a_str(&a, "next_task",
				      a_keep(&a, off->data, off->len));
			if (waker) {
				a_uint(&a, "woken_by_tid", waker->v[1]);
				a_str(&a, "woken_by",
				      a_keep(&a, waker->data, waker->len));
			}
			a_uint(&a, "cpu", off->cpu);
			r = kspans_add(spans, e->pid, KRP_SCHED_TID | e->tid,
				       off->ts, e->ts - off->ts,
				       state_name(off->v[0], (int)off->v[1]),
				       "sched", &a);
			if (!r && waker && waker->v[0] == e->pid &&
			    waker->v[1] != e->tid) {
				/* An arrow from the thread that woke it
				 * (same process: it has a timeline). */
				struct kspan *ks = &spans->v[spans->n - 1];

				ks->flow = 1;
				ks->flow_tid = waker->v[1];
				ks->flow_ts = waker->ts;
				/* From when the waker woke it, still in the
				 * call that did, where the wakeup itself ran
				 * later on the woken thread's CPU.  Only on a
				 * free-running clock: an emulated backend
				 * places each event on its thread's clock,
				 * where the kernel's time means nothing. */
				if (!emulated && waker->v[3] &&
				    waker->v[3] <= waker->ts)
					ks->flow_ts = waker->v[3];
			}
			off = NULL;
			continue;
		case SDC_SIG_GENERATE:
			snprintf(name, sizeof(name), "%s sent",
				 ps_signame((int)e->v[0]));
			a_uint(&a, "sender_pid", e->v[2]);
			a_uint(&a, "sender_tid", e->v[3]);
			a_str(&a, "sender", a_keep(&a, e->data, e->len));
			a_int(&a, "si_code", (int)e->v[1]);
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 name, "signal", &a);
			break;
		case SDC_SIG_DELIVER:
			snprintf(name, sizeof(name), "%s delivered",
				 ps_signame((int)e->v[0]));
			a_ptr(&a, "handler", e->v[2]);
			a_int(&a, "si_code", (int)e->v[1]);
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 name, "signal", &a);
			break;
		case SDC_FAULT:
			a_ptr(&a, "address", e->v[0]);
			a_ptr(&a, "ip", e->v[1]);
			a_str(&a, "access",
			      e->v[2] & 16  ? "exec"
			      : e->v[2] & 2 ? "write"
					    : "read");
			a_str(&a, "page",
			      e->v[2] & 1 ? "present" : "not present");
			/* How the kernel counted it, if it said (the next
			 * count of this thread for this address). */
			for (size_t j = i + 1; j < n; j++) {
				if (ev[j].kind == SDC_FAULT)
					break;
				if (ev[j].kind == SDC_FAULT_DONE &&
				    ev[j].v[0] == e->v[0]) {
					a_str(&a, "kind",
					      ev[j].v[1] ? "major" : "minor");
					break;
				}
			}
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 "page fault", "fault", &a);
			break;
		case SDC_BIO_ISSUE:
			a_str(&a, "dev", devname(&a, e->v[0]));
			a_uint(&a, "sector", e->v[1]);
			a_uint(&a, "bytes", e->v[2]);
			a_str(&a, "rwbs", a_keep(&a, e->data, e->len));
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 "block I/O issued", "block", &a);
			break;
		case SDC_BIO_DONE: {
			uint64_t t0 = e->ts;

			for (size_t j = i; j-- > 0;)
				if (ev[j].kind == SDC_BIO_ISSUE &&
				    ev[j].v[0] == e->v[0] &&
				    ev[j].v[1] == e->v[1]) {
					t0 = ev[j].ts;
					break;
				}
			a_str(&a, "dev", devname(&a, e->v[0]));
			a_uint(&a, "sector", e->v[1]);
			a_uint(&a, "bytes", e->v[2]);
			a_int(&a, "error", (int)e->v[3]);
			a_str(&a, "rwbs", a_keep(&a, e->data, e->len));
			r = emit(w, PS_EV_COMPLETE, e->pid,
				 KRP_BLOCK_TID | e->tid, t0, e->ts - t0,
				 "block I/O", "block", &a);
			break;
		}
		case SDC_EXEC:
			a_str(&a, "file", a_keep(&a, e->data, e->len));
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 "exec", "process", &a);
			break;
		case SDC_EXIT:
			a_uint(&a, "exit_code", e->v[0]);
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 "thread exit", "process", &a);
			break;
		case SDC_FORK:
			a_uint(&a, "child_pid", e->v[0]);
			a_uint(&a, "child_tid", e->v[1]);
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 e->v[0] == e->pid ? "thread created" : "fork",
				 "process", &a);
			break;
		case SDC_TRACEPOINT: {
			const struct desc *d =
			    e->id < k->ndesc ? &k->desc[e->id] : NULL;

			for (size_t f = 0; d && f < d->nfields; f++) {
				const struct field *fl = &d->f[f];
				uint64_t v = 0;

				if ((size_t)fl->offset + fl->size > e->len)
					continue;
				if (fl->is_dataloc && fl->size == 4) {
					uint32_t loc;

					memcpy(&loc, e->data + fl->offset, 4);
					if ((loc & 0xffff) + (loc >> 16) <=
						e->len &&
					    fl->is_string)
						a_str(&a, fl->name,
						      a_keep(&a,
							     e->data +
								 (loc & 0xffff),
							     loc >> 16));
					continue;
				}
				if (fl->is_string) {
					a_str(&a, fl->name,
					      a_keep(&a, e->data + fl->offset,
						     strnlen(
							 (const char *)e->data +
							     fl->offset,
							 fl->size)));
					continue;
				}
				if (fl->size > 8)
					continue;
				memcpy(&v, e->data + fl->offset, fl->size);
				if (fl->is_signed && fl->size < 8 &&
				    (v >> (8 * fl->size - 1)) & 1)
					v |= ~0ull << (8 * fl->size);
				if (fl->is_signed)
					a_int(&a, fl->name, (int64_t)v);
				else
					a_uint(&a, fl->name, v);
			}
			r = emit(w, PS_EV_INSTANT, e->pid, e->tid, e->ts, 0,
				 d ? d->name : "tracepoint", "tracepoint", &a);
			break;
		}
		default:
			continue;
		}
		if (!r)
			st->events++;
	}
	/* Calls still in the kernel when the snapshot was taken. */
	while (!r && nsys) {
		struct args a;
		const struct kev *in = sys[--nsys].e;

		memset(&a, 0, sizeof(a));
		sys_args(&a, in);
		a_str(&a, "unfinished", "in the kernel at the snapshot");
		r = kspans_add(spans, in->pid, in->tid, in->ts, last - in->ts,
			       sys_name(in->v[0], nbuf, sizeof(nbuf)),
			       "syscall", &a);
	}
	if (!r && n)
		r = kspans_write(spans, w, tap, ev[0].tid, &st->events);
	return r;
}

static const char *comm_of(const struct recording *in, uint64_t tid)
{
	for (size_t i = 0; i < in->nthreads; i++)
		if (in->threads[i].tid == tid && in->threads[i].comm)
			return in->threads[i].comm;
	return "thread";
}

/* Name the per-thread scheduler and block I/O tracks in use. */
static int name_tracks(const struct recording *in, struct ps_writer *w,
		       const struct kev *ev, size_t n)
{
	char name[96];
	int r = 0;

	for (size_t i = 0; i < n && !r; i++) {
		int first = !i || ev[i - 1].tid != ev[i].tid;

		if (!first)
			continue;
		for (size_t j = i; j < n && ev[j].tid == ev[i].tid && !r; j++) {
			if (ev[j].kind == SDC_SWITCH_IN) {
				snprintf(name, sizeof(name), "%s scheduler",
					 comm_of(in, ev[i].tid));
				r = w->ops->thread(w, ev[i].pid,
						   KRP_SCHED_TID | ev[i].tid,
						   name);
				break;
			}
		}
		for (size_t j = i; j < n && ev[j].tid == ev[i].tid && !r; j++) {
			if (ev[j].kind == SDC_BIO_DONE) {
				snprintf(name, sizeof(name), "%s block I/O",
					 comm_of(in, ev[i].tid));
				r = w->ops->thread(w, ev[i].pid,
						   KRP_BLOCK_TID | ev[i].tid,
						   name);
				break;
			}
		}
	}
	return r;
}

static int write_meta(const struct recording *in, struct ps_writer *w,
		      const struct kset *k)
{
	static const char *const names[] = {"sched",  "syscalls", "signals",
					    "faults", "block",	  "proc"};
	char list[128] = "", num[32];
	int r;

	for (unsigned i = 0; i < 6; i++)
		if (k->features & (1u << i))
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list), "%s%s",
				 list[0] ? "," : "", names[i]);
	for (size_t i = 0; i < k->ndesc; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s%s", list[0] ? "," : "", k->desc[i].name);
	r = w->ops->meta(w, "kernel_events", list);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)k->lost);
	if (!r)
		r = w->ops->meta(w, "kernel_events_lost", num);
	if (!r && k->lost) {
		struct args a;

		memset(&a, 0, sizeof(a));
		a_uint(&a, "lost", k->lost);
		r = emit(w, PS_EV_INSTANT, in->info->pid, in->info->pid,
			 k->n ? k->ev[k->n - 1].ts : in->info->start_ns, 0,
			 "kernel events lost", "ptscope", &a);
	}
	return r;
}

int krp_write(const struct recording *in, struct ps_writer *w,
	      const struct krp_tap *tap, struct krp_counts *st)
{
	struct kspans spans = {0};
	struct kset k;
	int r = 0;

	memset(&k, 0, sizeof(k));
	for (size_t i = 0; i < in->nsidecars && !r; i++) {
		const struct rec_sidecar *sc = &in->sidecars[i];

		if (sc->type == RKEV_SEC_EVENTS)
			r = read_events(&k, sc);
		else if (sc->type == RKEV_SEC_DESCS)
			r = read_descs(&k, sc);
		else if (sc->type == RKEV_SEC_STATUS)
			read_status(&k, sc);
	}
	if (r || !k.have_status) {
		free(k.ev);
		return r;
	}
	if (k.n > 1) /* qsort wants a non-NULL array, even empty */
		qsort(k.ev, k.n, sizeof(*k.ev), by_thread_time);
	r = write_meta(in, w, &k);
	if (!r)
		r = name_tracks(in, w, k.ev, k.n);
	for (size_t i = 0; i < k.n && !r;) {
		size_t j = i;

		while (j < k.n && k.ev[j].tid == k.ev[i].tid)
			j++;
		r = write_thread(w, &k, k.ev + i, j - i, tap,
				 in->info->emulated, st, &spans);
		i = j;
	}
	kspans_free(&spans);
	st->lost += k.lost;
	free(k.ev);
	return r;
}

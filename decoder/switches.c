/* SPDX-License-Identifier: MIT */
/* Context switches: reading perf's switch records, and decoding one CPU's
 * PT stream into the threads that ran on it (decoder/decoder.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/flow.h"
#include "decoder/session.h"
#include "decoder/threads.h"
#include "ptscope/error.h"
#include "ptscope/le.h"

#define PERF_RECORD_SWITCH_ 14
#define PERF_RECORD_SWITCH_CPU_WIDE_ 15
#define PERF_RECORD_MISC_SWITCH_OUT_ 0x2000

static int cmp_switch(const void *a, const void *b)
{
	const struct dec_switch *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

int dec_parse_switches(const char *path, const uint8_t *buf, size_t len,
		       struct dec_switch **out)
{
	struct dec_switch *sw = NULL, *grown;
	size_t off = 0, n = 0, cap = 0;

	while (off < len) {
		uint32_t type;
		uint16_t misc, size;
		size_t id; /* offset of the sample_id fields */

		if (len - off < 8)
			goto truncated;
		type = le_rd32(buf + off);
		memcpy(&misc, buf + off + 4, 2);
		memcpy(&size, buf + off + 6, 2);
		if (size < 8) {
			free(sw);
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "%s: record at byte %zu has size %u: this is not a "
			    "file of perf context switch records",
			    path, off, size);
		}
		if (size > len - off)
			goto truncated;
		id = type == PERF_RECORD_SWITCH_CPU_WIDE_ ? 16 : 8;
		if ((type == PERF_RECORD_SWITCH_CPU_WIDE_ ||
		     type == PERF_RECORD_SWITCH_) &&
		    size >= id + 16) {
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				grown = realloc(sw, cap * sizeof(*sw));
				if (!grown) {
					free(sw);
					return PS_ERR_NOMEM;
				}
				sw = grown;
			}
			sw[n].pid = le_rd32(buf + off + id);
			sw[n].tid = le_rd32(buf + off + id + 4);
			sw[n].time = le_rd64(buf + off + id + 8);
			sw[n].out = !!(misc & PERF_RECORD_MISC_SWITCH_OUT_);
			n++;
		}
		off += size;
	}
	if (n > 1)
		qsort(sw, n, sizeof(*sw), cmp_switch);
	if (n > (size_t)INT32_MAX) {
		free(sw);
		return ps_err_detail(PS_ERR_LIMIT, "%s: too many records",
				     path);
	}
	*out = sw;
	return (int)n;
truncated:
	free(sw);
	return ps_err_detail(PS_ERR_TRUNCATED,
			     "%s: the record at byte %zu runs past the end of "
			     "the file: the file is cut short",
			     path, off);
}

int dec_read_switches(const char *path, struct dec_switch **out)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;
	FILE *f;
	int err;

	if (!path || !out)
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "dec_read_switches: path and out are required");
	*out = NULL;
	f = fopen(path, "rb");
	if (!f)
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(errno));
	do {
		if (len == cap) {
			uint8_t *grown;

			cap = cap ? cap * 2 : 65536;
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(f);
				return PS_ERR_NOMEM;
			}
			buf = grown;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	if (ferror(f)) {
		err = ps_err_detail(PS_ERR_IO, "cannot read %s: %s", path,
				    strerror(errno));
		free(buf);
		fclose(f);
		return err;
	}
	fclose(f);
	err = dec_parse_switches(path, buf, len, out);
	free(buf);
	return err;
}

/* State shared by the CPUs of one dec_decode_cpus call. */
struct cpu_merge {
	struct dec_session *s;
	struct dec_proc *p;
	struct ps_writer *w;
};

/* One CPU: its switch records, who runs on it, and the branch events its
 * flow decoder reported but the merge has not yet delivered (those of
 * one block at most: the sink pauses the decoder after each event).
 * Threads are named by index into p->threads, which moves when it
 * grows. */
struct cpu_route {
	struct cpu_merge *m;
	const struct dec_switch *sw;
	size_t nsw, next;
	long running; /* per the switch records; -1: none of ours */
	long cur;     /* receiving the branch events; -1: none */
	struct flow_stream *fs;
	struct br_list q; /* events not yet delivered: from qhead on */
	size_t qhead;
	int done; /* the flow decoder sent BR_END */
};

static int thread_get(struct cpu_merge *m, uint64_t tid, long *out)
{
	struct dec_proc *p = m->p;
	struct dec_thread *t;
	struct stk_config cfg;
	int err;

	for (size_t i = 0; i < p->nthreads; i++) {
		if (p->threads[i].tid == tid) {
			*out = (long)i;
			return 0;
		}
	}
	t = realloc(p->threads, (p->nthreads + 1) * sizeof(*t));
	if (!t)
		return PS_ERR_NOMEM;
	p->threads = t;
	t = &t[p->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	dec_stk_config(m->s, p, tid, m->w, &cfg);
	err = stk_new(&cfg, &t->stk);
	if (err < 0)
		return err;
	*out = (long)p->nthreads++;
	return 0;
}

/* Apply the switch records up to trace time @ts. */
static int advance(struct cpu_route *r, uint64_t ts)
{
	int64_t off = r->m->s->cfg.time.offset_ns;
	long t;
	int err;

	while (r->next < r->nsw && r->sw[r->next].time + off <= ts) {
		const struct dec_switch *w = &r->sw[r->next++];

		if (w->pid != r->m->p->pid || !w->tid) {
			if (!w->out)
				r->running = -1;
			continue;
		}
		err = thread_get(r->m, w->tid, &t);
		if (err < 0)
			return err;
		if (w->out) {
			r->m->p->threads[t].end_ts = w->time + off;
			if (r->running == t)
				r->running = -1;
		} else {
			r->running = t;
		}
	}
	return 0;
}

/* PT times between timing packets are estimates that can run some
 * microseconds ahead of or behind perf's switch times (seen on real
 * per-CPU traces: an enable 8 us before its thread's switch in). */
#define DEC_SWITCH_SLACK_NS 10000

/* At an enable with none of our threads running: a switch in of ours
 * due within the slack is taken to have happened already. */
static int advance_slack(struct cpu_route *r, uint64_t ts)
{
	int64_t off = r->m->s->cfg.time.offset_ns;

	for (size_t j = r->next; j < r->nsw; j++) {
		const struct dec_switch *w = &r->sw[j];

		if (w->time + off > ts + DEC_SWITCH_SLACK_NS)
			break;
		if (!w->out && w->pid == r->m->p->pid && w->tid)
			return advance(r, w->time + off);
	}
	return 0;
}

/* Hand one event of this CPU, in merged time order, to the thread that
 * runs there. */
static int route(struct cpu_route *r, const struct br_event *ev)
{
	struct dec_session *s = r->m->s;
	struct dec_thread *t;
	int err;

	err = advance(r, ev->ts);
	if (!err && r->running < 0 && ev->kind == BR_ENABLE)
		err = advance_slack(r, ev->ts);
	if (err < 0)
		return err;
	if (ev->kind == BR_END) {
		/* this CPU's trace ends, not its thread */
		if (r->cur >= 0 && r->m->p->threads[r->cur].end_ts < ev->ts)
			r->m->p->threads[r->cur].end_ts = ev->ts;
		r->cur = -1;
		return 0;
	}
	/* PT is off while the kernel switches threads, so another thread
	 * can only start where tracing (re)starts. */
	if (r->cur != r->running && (r->cur < 0 || ev->kind == BR_ENABLE)) {
		r->cur = r->running;
		if (r->cur >= 0) {
			uint64_t ip = ev->kind == BR_ENABLE ? ev->to : ev->from;

			s->stats.threads++;
			t = &r->m->p->threads[r->cur];
			if (!stk_resume_fits(t->stk, ip)) {
				err = stk_close_all(
				    t->stk, stk_get_counts(t->stk)->last_ts);
				if (err < 0)
					return err;
			}
		}
	}
	if (r->cur < 0) {
		s->stats.skipped++;
		return 0;
	}
	return stk_feed(r->m->p->threads[r->cur].stk, ev);
}

/* br_sink_fn of a CPU's flow decoder: hold the event for the merge. */
static int queue_event(void *ctx, const struct br_event *ev)
{
	struct cpu_route *r = ctx;
	int err = br_list_add(&r->q, ev);

	if (err < 0)
		return err;
	if (ev->kind == BR_END)
		r->done = 1;
	return FLOW_PAUSE;
}

/* Make sure the CPU has an event to deliver, unless its stream is done. */
static int refill(struct cpu_route *r)
{
	int err;

	if (r->qhead < r->q.n)
		return 0;
	r->qhead = r->q.n = 0;
	while (!r->q.n && !r->done) {
		err = flow_step(r->fs);
		if (err < 0)
			return err;
		if (!err)
			r->done = 1;
	}
	return 0;
}

/* The CPU whose next event is earliest (NULL: all done), and the time of
 * the earliest next event of the others (*@lim). */
static struct cpu_route *earliest(struct cpu_route *rs, size_t n, uint64_t *lim)
{
	struct cpu_route *best = NULL;
	uint64_t second = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		uint64_t ts;

		if (rs[i].qhead == rs[i].q.n)
			continue;
		ts = rs[i].q.ev[rs[i].qhead].ts;
		if (!best || ts < best->q.ev[best->qhead].ts) {
			if (best)
				second = best->q.ev[best->qhead].ts;
			best = &rs[i];
		} else if (ts < second) {
			second = ts;
		}
	}
	*lim = second;
	return best;
}

/* The k-way merge: always deliver from the CPU whose next event is
 * earliest, decoding it further only as far as needed. */
static int merge(struct cpu_route *rs, size_t n)
{
	struct cpu_route *r;
	uint64_t lim;
	int err;

	for (size_t i = 0; i < n; i++) {
		err = refill(&rs[i]);
		if (err < 0)
			return err;
	}
	while ((r = earliest(rs, n, &lim))) {
		while (r->qhead < r->q.n && r->q.ev[r->qhead].ts <= lim) {
			err = route(r, &r->q.ev[r->qhead++]);
			if (!err)
				err = refill(r);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

/* Close every thread's stack at the end of what is known of it. */
static int close_threads(struct cpu_merge *m)
{
	struct dec_proc *p = m->p;
	int err = 0;

	for (size_t i = 0; i < p->nthreads && !err; i++)
		err = stk_close_all(p->threads[i].stk, p->threads[i].end_ts);
	for (size_t i = 0; i < p->nthreads; i++)
		m->s->stats.spans += stk_get_counts(p->threads[i].stk)->spans;
	return err;
}

struct cpus_call {
	struct dec_session *s;
	const struct dec_cpu_trace *cpus;
	size_t n;
	struct ps_writer *w;
};

static int decode_cpus(void *p);

int dec_decode_cpus(struct dec_session *s, const struct dec_cpu_trace *cpus,
		    size_t n, struct ps_writer *w)
{
	struct cpus_call c = {s, cpus, n, w};

	return dec_with_stack(decode_cpus, &c);
}

static int decode_cpus(void *p)
{
	struct cpus_call *c = p;
	struct dec_session *s = c->s;
	const struct dec_cpu_trace *cpus = c->cpus;
	size_t n = c->n;
	struct ps_writer *w = c->w;
	struct cpu_merge m = {.s = s, .w = w};
	struct cpu_route *rs;
	struct timespec t0, t1;
	size_t nsw = 0, nopsb = 0;
	int err = 0, cpu = 0;

	if (!s || !w || (!cpus && n))
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "dec_decode_cpus: session, traces and writer are required");
	for (size_t i = 0; i < n; i++) {
		if ((!cpus[i].pt && cpus[i].len) ||
		    (!cpus[i].sw && cpus[i].nsw))
			return ps_err_detail(
			    PS_ERR_INVAL,
			    "dec_decode_cpus: cpu %d has no trace or switch "
			    "buffer",
			    cpus[i].cpu);
		for (size_t j = 0; j < cpus[i].nsw && !m.p; j++)
			m.p = dec_proc_find(s, cpus[i].sw[j].pid);
		nsw += cpus[i].nsw;
		if (!m.p)
			cpu = cpus[i].cpu;
	}
	if (!m.p)
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "none of the %zu context switches of %zu cpu(s) (the last "
		    "cpu %d) is in a process with code added: add the ELF "
		    "files with the pid the switches name (--pid)",
		    nsw, n, cpu);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = dec_proc_flow(s, m.p);
	if (err < 0)
		return err;
	rs = calloc(n ? n : 1, sizeof(*rs));
	if (!rs)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		rs[i].m = &m;
		rs[i].sw = cpus[i].sw;
		rs[i].nsw = cpus[i].nsw;
		rs[i].running = rs[i].cur = -1;
		err = flow_open(m.p->flow, cpus[i].pt, cpus[i].len, queue_event,
				&rs[i], &s->stats, &rs[i].fs);
		/* a CPU whose stream holds no PSB adds nothing; only when
		 * none has one is that an error */
		if (err == PS_ERR_FORMAT) {
			rs[i].done = 1;
			nopsb++;
			err = 0;
		}
	}
	if (!err && n && nopsb == n)
		err = PS_ERR_FORMAT;
	if (!err)
		err = merge(rs, n);
	if (!err)
		err = close_threads(&m);
	for (size_t i = 0; i < n; i++) {
		flow_close(rs[i].fs);
		free(rs[i].q.ev);
	}
	free(rs);
	/* the stacks hold @w, which the next call may not share */
	for (size_t i = 0; i < m.p->nthreads; i++)
		stk_free(m.p->threads[i].stk);
	free(m.p->threads);
	m.p->threads = NULL;
	m.p->nthreads = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->stats.seconds += (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return dec_no_psb(err);
}

int dec_decode_cpu(struct dec_session *s, int cpu, const uint8_t *pt,
		   size_t len, const struct dec_switch *sw, size_t nsw,
		   struct ps_writer *w)
{
	struct dec_cpu_trace t = {
	    .cpu = cpu, .pt = pt, .len = len, .sw = sw, .nsw = nsw};

	if (!s || !w || (!pt && len) || (!sw && nsw))
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "dec_decode_cpu: session, trace and writer are required");
	return dec_decode_cpus(s, &t, 1, w);
}

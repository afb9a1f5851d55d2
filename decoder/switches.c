/* Context switches: reading perf's switch records, and decoding one CPU's
 * PT stream into the threads that ran on it (decoder/decoder.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/flow.h"
#include "decoder/session.h"
#include "ptscope/error.h"

#define PERF_RECORD_SWITCH_ 14
#define PERF_RECORD_SWITCH_CPU_WIDE_ 15
#define PERF_RECORD_MISC_SWITCH_OUT_ 0x2000

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int cmp_switch(const void *a, const void *b)
{
	const struct dec_switch *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/* Parse records in @buf; *out is malloc'ed.  Returns the count or error. */
static int parse_switches(const char *path, const uint8_t *buf, size_t len,
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
		type = rd32(buf + off);
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
			sw[n].pid = rd32(buf + off + id);
			sw[n].tid = rd32(buf + off + id + 4);
			sw[n].time = rd64(buf + off + id + 8);
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
	err = parse_switches(path, buf, len, out);
	free(buf);
	return err;
}

/* Routing state of one dec_decode_cpu call.  Threads are named by index
 * into p->threads, which moves when it grows. */
struct cpu_route {
	struct dec_session *s;
	struct dec_proc *p;
	struct ps_writer *w;
	const struct dec_switch *sw;
	size_t nsw, next;
	long running; /* per the switch records; -1: none of ours */
	long cur;     /* receiving the branch events; -1: none */
};

static int thread_get(struct cpu_route *r, uint64_t tid, long *out)
{
	struct dec_proc *p = r->p;
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
	dec_stk_config(r->s, p, tid, r->w, &cfg);
	err = stk_new(&cfg, &t->stk);
	if (err < 0)
		return err;
	*out = (long)p->nthreads++;
	return 0;
}

/* Apply the switch records up to trace time @ts. */
static int advance(struct cpu_route *r, uint64_t ts)
{
	int64_t off = r->s->cfg.time.offset_ns;
	long t;
	int err;

	while (r->next < r->nsw && r->sw[r->next].time + off <= ts) {
		const struct dec_switch *w = &r->sw[r->next++];

		if (w->pid != r->p->pid || !w->tid) {
			if (!w->out)
				r->running = -1;
			continue;
		}
		err = thread_get(r, w->tid, &t);
		if (err < 0)
			return err;
		if (w->out) {
			r->p->threads[t].out_ts = w->time + off;
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
	int64_t off = r->s->cfg.time.offset_ns;

	for (size_t j = r->next; j < r->nsw; j++) {
		const struct dec_switch *w = &r->sw[j];

		if (w->time + off > ts + DEC_SWITCH_SLACK_NS)
			break;
		if (!w->out && w->pid == r->p->pid && w->tid)
			return advance(r, w->time + off);
	}
	return 0;
}

static int route(void *ctx, const struct br_event *ev)
{
	struct cpu_route *r = ctx;
	int err;

	err = advance(r, ev->ts);
	if (!err && r->running < 0 && ev->kind == BR_ENABLE)
		err = advance_slack(r, ev->ts);
	if (err < 0)
		return err;
	/* PT is off while the kernel switches threads, so another thread
	 * can only start where tracing (re)starts. */
	if (r->cur != r->running &&
	    (r->cur < 0 || ev->kind == BR_ENABLE || ev->kind == BR_END)) {
		if (r->cur >= 0) {
			struct dec_thread *t = &r->p->threads[r->cur];
			uint64_t at = t->out_ts;
			uint64_t last = stk_get_counts(t->stk)->last_ts;

			/* its part ends where it was switched out */
			if (at < last || at > ev->ts)
				at = last;
			err = stk_close_all(t->stk, at);
			if (err < 0)
				return err;
		}
		r->cur = r->running;
		if (r->cur >= 0)
			r->s->stats.threads++;
	}
	if (r->cur < 0) {
		r->s->stats.skipped++;
		return 0;
	}
	return stk_feed(r->p->threads[r->cur].stk, ev);
}

static uint64_t spans_of(const struct dec_proc *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->nthreads; i++)
		n += stk_get_counts(p->threads[i].stk)->spans;
	return n;
}

int dec_decode_cpu(struct dec_session *s, int cpu, const uint8_t *pt,
		   size_t len, const struct dec_switch *sw, size_t nsw,
		   struct ps_writer *w)
{
	struct cpu_route r = {
	    .s = s, .w = w, .sw = sw, .nsw = nsw, .running = -1, .cur = -1};
	struct timespec t0, t1;
	int err;

	if (!s || !w || (!pt && len) || (!sw && nsw))
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "dec_decode_cpu: session, trace and writer are required");
	for (size_t i = 0; i < nsw && !r.p; i++)
		r.p = dec_proc_find(s, sw[i].pid);
	if (!r.p)
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "none of the %zu context switches of cpu %d is in a "
		    "process with code added: add the ELF files with the pid "
		    "the switches name (--pid)",
		    nsw, cpu);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = dec_proc_flow(s, r.p);
	if (err < 0)
		return err;
	err = flow_decode(r.p->flow, pt, len, route, &r, &s->stats);
	s->stats.spans += spans_of(r.p);
	/* every part was closed at its switch or at BR_END; the stacks
	 * hold @w, which the next call may not share */
	for (size_t i = 0; i < r.p->nthreads; i++)
		stk_free(r.p->threads[i].stk);
	free(r.p->threads);
	r.p->threads = NULL;
	r.p->nthreads = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->stats.seconds += (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return dec_no_psb(err);
}

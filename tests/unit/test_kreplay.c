/* SPDX-License-Identifier: MIT */
/* Tests for kernel events at decode time (src/record/kevents/kreplay.c) and the
 * latency trigger spec (src/record/latency.c), on hand-made SIDECAR
 * sections: no kernel or root needed.  System call spans with decoded
 * arguments and errno names, the scheduler track with the waker, faults,
 * a custom tracepoint's fields, lost counts, the emulated inset and the
 * window. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/bpf/event.h"
#include "src/record/kevents/kevents.h"
#include "src/record/triggers/latency.h"
#include "tests/harness.h"

/* ---- building sections ---- */

struct bb {
	uint8_t b[8192];
	size_t n;
};

static void le(struct bb *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void str(struct bb *b, const char *s)
{
	le(b, strlen(s), 4);
	memcpy(b->b + b->n, s, strlen(s));
	b->n += strlen(s);
}

static void ev(struct bb *b, uint64_t ts, uint32_t tid, uint16_t kind,
	       uint16_t id, const uint64_t *v, const void *data, uint32_t len)
{
	le(b, ts, 8);
	le(b, 7, 4); /* pid */
	le(b, tid, 4);
	le(b, kind, 2);
	le(b, id, 2);
	le(b, 0, 4); /* cpu */
	for (int i = 0; i < SDC_NV; i++)
		le(b, v ? v[i] : 0, 8);
	le(b, len, 4);
	memcpy(b->b + b->n, data, len);
	b->n += len;
}

/* ---- capturing what is written ---- */

struct got {
	char line[64][256];
	int n;
};

struct cap {
	struct ps_writer base;
	struct got *g;
};

static int cap_event(struct ps_writer *w, const struct ps_event *e)
{
	struct got *g = ((struct cap *)w)->g;
	char *l;
	size_t off;

	if (g->n == 64)
		return 0;
	l = g->line[g->n++];
	off = (size_t)snprintf(l, 256, "%s tid=%llu ts=%llu dur=%llu %s:",
			       e->type == PS_EV_COMPLETE     ? "span"
			       : e->type == PS_EV_FLOW_BEGIN ? "flow_begin"
			       : e->type == PS_EV_FLOW_END   ? "flow_end"
							     : "instant",
			       (unsigned long long)e->tid,
			       (unsigned long long)e->ts,
			       (unsigned long long)e->dur, e->name);
	for (size_t i = 0; i < e->nargs && off < 250; i++) {
		const struct ps_arg *a = &e->args[i];

		if (a->type == PS_ARG_STRING)
			off += (size_t)snprintf(l + off, 256 - off, " %s=%s",
						a->name, a->v.s);
		else if (a->type == PS_ARG_INT)
			off += (size_t)snprintf(l + off, 256 - off, " %s=%lld",
						a->name, (long long)a->v.i);
		else
			off += (size_t)snprintf(l + off, 256 - off, " %s=%llu",
						a->name,
						(unsigned long long)a->v.u);
	}
	return 0;
}

static int cap_meta(struct ps_writer *w, const char *k, const char *v)
{
	struct got *g = ((struct cap *)w)->g;

	if (g->n < 64)
		snprintf(g->line[g->n++], 256, "meta %s=%s", k, v);
	return 0;
}

static int cap_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		      const char *name)
{
	struct got *g = ((struct cap *)w)->g;

	if (g->n < 64)
		snprintf(g->line[g->n++], 256, "thread %llu %s",
			 (unsigned long long)tid, name);
	return 0;
}

static const struct ps_writer_ops cap_ops = {.name = "capture",
					     .event = cap_event,
					     .meta = cap_meta,
					     .thread = cap_thread};

static int has(const struct got *g, const char *text)
{
	for (int i = 0; i < g->n; i++)
		if (strstr(g->line[i], text))
			return 1;
	return 0;
}

static void dump(const struct got *g)
{
	for (int i = 0; i < g->n; i++)
		fprintf(stderr, "  %s\n", g->line[i]);
}

/* One thread's story: openat that blocks, wakes, fails; a fault; a
 * tracepoint with two fields. */
static int run_tap(int emulated, struct got *g, uint64_t *lost,
		   uint64_t first_span)
{
	static struct bb evs, descs, status;
	struct rec_sidecar sc[3];
	struct rec_thread thr = {7, 100, "worker"};
	struct rec_info info;
	struct recording in;
	struct krp_counts st;
	struct cap w;
	uint64_t v[SDC_NV];
	uint8_t rec[32];
	int r;

	memset(&evs, 0, sizeof(evs));
	memset(&descs, 0, sizeof(descs));
	memset(&status, 0, sizeof(status));
	le(&evs, 8, 4);
	memset(v, 0, sizeof(v));
	v[0] = 257;
	v[1] = (uint64_t)-100;
	v[3] = 0;
	ev(&evs, 1000, 100, SDC_SYS_ENTER, 0, v, "/tmp/x", 6);
	memset(v, 0, sizeof(v));
	v[0] = 1; /* TASK_INTERRUPTIBLE */
	ev(&evs, 1100, 100, SDC_SWITCH_OUT, 0, v, "other", 5);
	memset(v, 0, sizeof(v));
	v[0] = 7;
	v[1] = 101;
	v[3] = 1150; /* sched_waking, on the waker's CPU */
	ev(&evs, 1200, 100, SDC_WAKEUP, 0, v, "waker", 5);
	memset(v, 0, sizeof(v));
	ev(&evs, 1300, 100, SDC_SWITCH_IN, 0, v, "", 0);
	v[0] = 257;
	v[1] = (uint64_t)-2; /* ENOENT */
	ev(&evs, 1400, 100, SDC_SYS_EXIT, 0, v, "", 0);
	memset(v, 0, sizeof(v));
	v[0] = 0x1000;
	v[1] = 0x401000;
	v[2] = 6; /* write, user, not present */
	ev(&evs, 1500, 100, SDC_FAULT, 0, v, "", 0);
	v[1] = 1; /* counted major */
	ev(&evs, 1500, 100, SDC_FAULT_DONE, 0, v, "", 0);
	memset(rec, 0, sizeof(rec));
	rec[8] = 0xfb; /* a = -5 (s32) */
	rec[9] = rec[10] = rec[11] = 0xff;
	memcpy(rec + 12, "hello", 6);
	ev(&evs, 1600, 100, SDC_TRACEPOINT, 0, NULL, rec, 28);
	le(&descs, 1, 4);
	str(&descs, "cat:tp");
	le(&descs, 0, 1);
	le(&descs, 2, 4);
	str(&descs, "a");
	le(&descs, 8, 2);
	le(&descs, 4, 2);
	le(&descs, 1, 1);
	le(&descs, 0, 1);
	le(&descs, 0, 1);
	str(&descs, "name");
	le(&descs, 12, 2);
	le(&descs, 16, 2);
	le(&descs, 0, 1);
	le(&descs, 1, 1);
	le(&descs, 0, 1);
	le(&status, *lost, 8);
	le(&status, 0, 8);
	le(&status, 3, 4); /* sched, syscalls */
	le(&status, 1, 4);
	sc[0] = (struct rec_sidecar){RKEV_SEC_STATUS, status.b, status.n};
	sc[1] = (struct rec_sidecar){RKEV_SEC_DESCS, descs.b, descs.n};
	sc[2] = (struct rec_sidecar){RKEV_SEC_EVENTS, evs.b, evs.n};
	memset(&info, 0, sizeof(info));
	info.emulated = emulated;
	info.pid = 7;
	memset(&in, 0, sizeof(in));
	in.info = &info;
	in.threads = &thr;
	in.nthreads = 1;
	in.sidecars = sc;
	in.nsidecars = 3;
	memset(&w, 0, sizeof(w));
	w.base.ops = &cap_ops;
	w.g = g;
	memset(g, 0, sizeof(*g));
	memset(&st, 0, sizeof(st));
	if (first_span) {
		/* The decoder's first span of thread 100 goes through the
		 * tap: kernel events before it are outside the window. */
		struct ps_event span = {.type = PS_EV_COMPLETE,
					.pid = 7,
					.tid = 100,
					.ts = first_span,
					.dur = 10,
					.name = "f"};
		struct krp_tap *tap = NULL;

		r = krp_tap_new(&w.base, &tap);
		if (!r)
			r = krp_tap_writer(tap)->ops->event(krp_tap_writer(tap),
							    &span);
		krp_tap_end(tap);
		if (!r)
			r = krp_write(&in, &w.base, tap, &st);
		krp_tap_free(tap);
	} else {
		r = krp_write(&in, &w.base, NULL, &st);
	}
	*lost = st.lost;
	return r;
}

static int run(int emulated, struct got *g, uint64_t *lost)
{
	return run_tap(emulated, g, lost, 0);
}

TEST(kernel_events_become_spans_tracks_and_instants)
{
	struct got g;
	uint64_t lost = 0;

	CHECK_EQ(run(0, &g, &lost), 0);
	if (!has(&g, "span tid=100 ts=1000 dur=400 openat: dirfd=-100 "
		     "flags=0 path=/tmp/x error=ENOENT return=-2"))
		dump(&g);
	CHECK(has(&g, "span tid=100 ts=1000 dur=400 openat: dirfd=-100 "
		      "flags=0 path=/tmp/x error=ENOENT return=-2"));
	CHECK(has(&g, "span tid=1073741924 ts=1100 dur=200 sleeping: "
		      "state=sleeping next_task=other woken_by_tid=101 "
		      "woken_by=waker"));
	CHECK(has(&g, "thread 1073741924 worker scheduler"));
	/* The waker (tid 101 of the same process) gets an arrow, from when
	 * it woke the thread (sched_waking), not when the wakeup ran. */
	CHECK(has(&g, "flow_begin tid=101 ts=1150 dur=0 wakeup:"));
	CHECK(has(&g, "flow_end tid=100 ts=1300 dur=0 wakeup:"));
	CHECK(has(&g, "instant tid=100 ts=1500 dur=0 page fault: "
		      "address=4096 ip=4198400 access=write page=not present "
		      "kind=major"));
	CHECK(has(&g, "instant tid=100 ts=1600 dur=0 cat:tp: a=-5 name=hello"));
	CHECK(has(&g, "meta kernel_events=sched,syscalls,cat:tp"));
	CHECK(has(&g, "meta kernel_events_lost=0"));
	CHECK(!has(&g, "kernel events lost"));
}

TEST(emulated_syscall_spans_nest_inside_the_instruction)
{
	struct got g;
	uint64_t lost = 0;

	CHECK_EQ(run(1, &g, &lost), 0);
	CHECK(has(&g, "span tid=100 ts=1001 dur=398 openat:"));
	/* the kernel's time of the waking is not on an emulated clock */
	CHECK(has(&g, "flow_begin tid=101 ts=1200 dur=0 wakeup:"));
}

TEST(lost_events_are_counted_and_marked)
{
	struct got g;
	uint64_t lost = 3;

	CHECK_EQ(run(0, &g, &lost), 0);
	CHECK_EQ(lost, 3);
	CHECK(has(&g, "meta kernel_events_lost=3"));
	CHECK(has(&g, "kernel events lost: lost=3"));
}

TEST(damaged_sections_are_refused)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0x7f, 1, 2};
	struct rec_sidecar sc[2] = {{RKEV_SEC_STATUS, junk, 0},
				    {RKEV_SEC_EVENTS, junk, sizeof(junk)}};
	struct rec_info info = {0};
	struct recording in = {0};
	struct krp_counts st = {0};
	struct got g;
	struct cap w = {{&cap_ops, NULL, 0, 0}, &g};

	in.info = &info;
	in.sidecars = sc;
	in.nsidecars = 2;
	CHECK_EQ(krp_write(&in, &w.base, NULL, &st), PS_ERR_FORMAT);
}

TEST(latency_specs_parse_with_units)
{
	char *name = NULL;
	uint64_t ns = 0;

	CHECK_EQ(rec_latency_parse("handle_request>200us", &name, &ns), 1);
	CHECK_STR(name, "handle_request");
	CHECK_EQ(ns, 200000);
	free(name);
	CHECK_EQ(rec_latency_parse("parse@libfoo.so>2ms", &name, &ns), 1);
	CHECK_STR(name, "parse@libfoo.so");
	CHECK_EQ(ns, 2000000);
	free(name);
	CHECK_EQ(rec_latency_parse("f>1.5s", &name, &ns), 1);
	CHECK_EQ(ns, 1500000000ull);
	free(name);
	CHECK_EQ(rec_latency_parse("f>750ns", &name, &ns), 1);
	CHECK_EQ(ns, 750);
	free(name);
	CHECK_EQ(rec_latency_parse("slow_scan", &name, &ns), 0);
	CHECK_EQ(rec_latency_parse("f>200", &name, &ns), PS_ERR_INVAL);
	CHECK_EQ(rec_latency_parse("f>-1ms", &name, &ns), PS_ERR_INVAL);
	CHECK_EQ(rec_latency_parse(">1ms", &name, &ns), PS_ERR_INVAL);
	CHECK_EQ(rec_latency_parse("f>1parsec", &name, &ns), PS_ERR_INVAL);
	CHECK(strstr(ps_err_message(PS_ERR_INVAL), "units ns, us, ms, s"));
}

TEST(events_before_the_window_are_left_out)
{
	struct got g;
	uint64_t lost = 0;

	CHECK_EQ(run_tap(0, &g, &lost, 1450), 0);
	CHECK(has(&g, "span tid=100 ts=1450 dur=10 f:")); /* passed on */
	CHECK(!has(&g, "openat"));			  /* began before */
	CHECK(!has(&g, "sleeping"));
	CHECK(has(&g, "page fault"));
	CHECK(has(&g, "cat:tp"));
}

/* A kernel span is narrowed into one gap between the thread's function
 * begins and ends, touching none of them: in a Perfetto trace, where each
 * span is a begin and an end written after the thread's own, a kernel
 * span ending where a function ends (or begins) would close the wrong
 * span (likely the misplaced end the exec_thread sample hit once). */
TEST(kernel_spans_clamp_strictly_between_function_times)
{
	/* f [100, 300] holds g [140, 200] and then h [250, 260] */
	static const struct {
		enum ps_event_type type;
		uint64_t ts;
	} fn[] = {{PS_EV_BEGIN, 100}, {PS_EV_BEGIN, 140}, {PS_EV_END, 200},
		  {PS_EV_BEGIN, 250}, {PS_EV_END, 260},	  {PS_EV_END, 300}};
	static const struct {
		uint64_t t0, t1, want0, want1;
	} k[] = {
	    {150, 200, 150, 199}, /* ends where g ends */
	    {150, 250, 150, 199}, /* the longer piece is inside g */
	    {210, 255, 210, 249}, /* ends after h begins */
	    {140, 200, 141, 199}, /* exactly g */
	    {201, 249, 201, 249}, /* already between them */
	};
	struct cap w;
	struct got g;
	struct krp_tap *tap = NULL;

	memset(&w, 0, sizeof(w));
	w.base.ops = &cap_ops;
	w.g = &g;
	memset(&g, 0, sizeof(g));
	CHECK_EQ(krp_tap_new(&w.base, &tap), 0);
	for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++) {
		struct ps_event e = {.type = fn[i].type,
				     .pid = 7,
				     .tid = 100,
				     .ts = fn[i].ts,
				     .name = "f"};

		CHECK_EQ(
		    krp_tap_writer(tap)->ops->event(krp_tap_writer(tap), &e),
		    0);
	}
	krp_tap_end(tap);
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		uint64_t t0 = k[i].t0, t1 = k[i].t1;

		krp_tap_clamp(tap, 100, &t0, &t1);
		if (t0 != k[i].want0 || t1 != k[i].want1)
			fprintf(stderr, "  [%llu, %llu] became [%llu, %llu]\n",
				(unsigned long long)k[i].t0,
				(unsigned long long)k[i].t1,
				(unsigned long long)t0, (unsigned long long)t1);
		CHECK_EQ(t0, k[i].want0);
		CHECK_EQ(t1, k[i].want1);
	}
	krp_tap_free(tap);
}

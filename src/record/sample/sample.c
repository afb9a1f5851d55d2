/* SPDX-License-Identifier: MIT */
/* The sample backend's engine (sample.h): the event chosen at open, one
 * ring per thread, the service between ptrace stops (kernel events,
 * trigger hits), snapshots of the rings, and the recording's facts. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/core/core.h"
#include "src/record/kevents/kevents.h"
#include "src/record/ptrace/freerun.h"
#include "src/record/sample/sample.h"

#define PAGE 4096ull
#define RING_MIN (8 * PAGE)
#define SERVICE_BUSY_MS 10
#define RETRY_TURNS 50 /* pending triggers: re-read maps every ~0.5 s */
/* Rings of ended threads kept for the snapshot: a program that starts
 * threads all day must not pin a ring for each one it ever had. */
#define KEEP_ENDED 64

static uint64_t pow2_pages(uint64_t v)
{
	uint64_t n = RING_MIN;

	while (n < v && n < (1ull << 34))
		n <<= 1;
	return n;
}

int smpb_open(struct rec_session *s)
{
	const struct rec_options *o = s->o;
	struct smpb *b = calloc(1, sizeof(*b));
	uint64_t want;

	if (!b)
		return PS_ERR_NOMEM;
	s->bk = b;
	sprobe_run(&b->probe);
	b->event = sprobe_event_name(&b->probe);
	if (!b->event)
		return ps_err_detail(
		    b->probe.open_errno == EACCES ||
			    b->probe.open_errno == EPERM
			? PS_ERR_PERM
			: PS_ERR_NO_HW,
		    "no sampling event opens here (cpu-clock: %s; "
		    "perf_event_paranoid is %d): run as root, give ptscope "
		    "CAP_PERFMON, or set /proc/sys/kernel/perf_event_paranoid "
		    "to 2 or lower",
		    strerror(b->probe.open_errno), b->probe.paranoid);
	b->hz = o->frequency ? o->frequency : REC_DEFAULT_FREQUENCY;
	sprobe_attr(&b->rc.attr, b->probe.cycles, b->hz);
	if (b->probe.stack_user) {
		b->stack = SMPB_STACK_BYTES;
		b->rc.attr.sample_type |=
		    PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		b->rc.attr.sample_regs_user = SPROBE_REGS_MASK;
		b->rc.attr.sample_stack_user = b->stack;
	}
	if (b->probe.lbr) {
		b->rc.attr.sample_type |= PERF_SAMPLE_BRANCH_STACK;
		b->rc.attr.branch_sample_type =
		    PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK;
	}
	want = o->snapshot_size ? o->snapshot_size : REC_DEFAULT_SNAPSHOT_SIZE;
	b->rc.data_size = pow2_pages(want);
	if (b->rc.data_size != want)
		rec_notice(s,
			   "snapshot size: %llu KiB per thread (the sample "
			   "ring must be a power of two number of pages)",
			   (unsigned long long)(b->rc.data_size >> 10));
	return 0;
}

static struct smpb_thr *thr_bk(const struct rec_thr *t)
{
	return t->bk;
}

int smpb_thread_start(struct rec_session *s, struct rec_thr *t)
{
	struct smpb *b = s->bk;
	struct smpb_thr *x = thr_bk(t);
	int r;

	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return PS_ERR_NOMEM;
		x->ring.fd = -1;
		t->bk = x;
	}
	/* exec: the old program's samples would not symbolize in the new
	 * one; start afresh. */
	sring_close(&x->ring);
	r = sring_open(&b->rc, t->tid, &x->ring);
	if (!r)
		r = sring_enable(&x->ring, 1);
	if (!r)
		r = rec_triggers_arm(s, t);
	if (r)
		return r;
	t->traced = 1;
	return 0;
}

/* Close the oldest rings of ended threads beyond KEEP_ENDED. */
static void trim_ended(struct rec_session *s)
{
	size_t ended = 0;

	for (size_t i = s->nthrs; i-- > 0;) {
		struct smpb_thr *x = thr_bk(s->thrs[i]);

		if (!x || x->ring.fd < 0 || s->thrs[i]->traced)
			continue;
		if (++ended > KEEP_ENDED)
			sring_close(&x->ring);
	}
}

void smpb_thread_end(struct rec_session *s, struct rec_thr *t)
{
	struct smpb_thr *x = thr_bk(t);

	if (t->traced)
		rec_triggers_disarm(s, t);
	t->traced = 0;
	if (x && x->ring.fd >= 0) {
		sring_enable(&x->ring, 0);
		trim_ended(s);
	}
}

static int smpb_crash(struct rec_session *s, struct rec_thr *t, int sig,
		      uint64_t addr, int has_addr, uint64_t ip)
{
	smpb_thread_end(s, t);
	return rec_freerun_crash_mark(s, t, sig, addr, has_addr, ip);
}

/* Triggers in a library loaded later (dlopen): re-read the maps now and
 * then and resolve what still waits. */
static int retry_pending(struct rec_session *s)
{
	int r = 0;

	for (size_t i = 0; i < s->nprocs && !r; i++) {
		struct rec_proc *p = s->procs[i];

		if (p->gone)
			continue;
		r = rec_proc_refresh_maps(s, p);
		if (r == PS_ERR_NOT_FOUND) {
			r = 0;
			continue;
		}
		if (!r)
			r = rec_triggers_resolve(s, p, 0);
	}
	return r;
}

static int smpb_service(struct rec_session *s, int wake_fd, int timeout_ms)
{
	struct smpb *b = s->bk;
	struct pollfd pfd = {wake_fd, POLLIN, 0};
	int r;

	if (poll(&pfd, wake_fd >= 0 ? 1 : 0, timeout_ms) < 0 && errno != EINTR)
		return ps_err_detail(PS_ERR_IO, "poll: %s", strerror(errno));
	/* Slow calls from the uprobe timer come in with the kernel events. */
	rkev_poll(s);
	for (size_t i = 0; i < s->nthrs && !s->stop_reason; i++) {
		struct rec_thr *t = s->thrs[i];

		if (!t->narmed || t->state == THR_GONE)
			continue;
		r = rec_triggers_check(s, t);
		if (r < 0)
			return r;
	}
	if (s->triggers_pending && ++b->turns % RETRY_TURNS == 0)
		return retry_pending(s);
	return 0;
}

static int smpb_samples(struct rec_session *s, const struct rec_thr *t,
			struct rec_samples *out)
{
	struct smpb *b = s->bk;
	struct smpb_thr *x = thr_bk(t);
	struct recs_buf buf = {0};
	int r;

	if (!b || !x)
		return PS_ERR_NOT_FOUND;
	r = sring_extract(&b->rc, &x->ring, &buf);
	if (r) {
		free(buf.p);
		return r;
	}
	out->regs_mask = (b->rc.attr.sample_type & PERF_SAMPLE_REGS_USER)
			     ? SPROBE_REGS_MASK
			     : 0;
	out->count = buf.count;
	out->data = buf.p;
	out->len = buf.len;
	return 0;
}

static uint64_t smpb_now(struct rec_session *s, const struct rec_thr *t)
{
	(void)s;
	(void)t;
	return rec_clock_ns();
}

static void smpb_fill_info(struct rec_session *s, struct rec_info *i)
{
	struct smpb *b = s->bk;

	if (!b)
		return;
	i->emulated = 0;
	i->has_conv = 0; /* sample times are CLOCK_MONOTONIC ns already */
	i->sample_hz = b->hz;
	i->sample_event = b->event;
	i->sample_stack = b->stack;
}

static void smpb_fini(struct rec_session *s)
{
	for (size_t i = 0; i < s->nthrs; i++) {
		struct smpb_thr *x = thr_bk(s->thrs[i]);

		if (x)
			sring_close(&x->ring);
		free(x);
		s->thrs[i]->bk = NULL;
	}
	free(s->bk);
	s->bk = NULL;
}

/* The loop's view of this engine: with triggers or kernel events to
 * watch it looks every 10 ms, else it only needs to notice a stop. */
static void loop_ops(const struct rec_session *s, struct rec_freerun_ops *ops)
{
	*ops = (struct rec_freerun_ops){
	    .thread_start = smpb_thread_start,
	    .thread_end = smpb_thread_end,
	    .crash = smpb_crash,
	    .service = smpb_service,
	    .service_ms =
		rec_triggers_wanted(s) || s->kev ? SERVICE_BUSY_MS : 0,
	};
}

static int smpb_run(struct rec_session *s, char *const argv[])
{
	struct rec_freerun_ops ops;
	/* The event first: nothing starts if it cannot be used. */
	int r = smpb_open(s);

	loop_ops(s, &ops);
	return r ? r : rec_freerun_run(s, &ops, argv);
}

static int smpb_attach(struct rec_session *s, const pid_t *pids, size_t n)
{
	struct rec_freerun_ops ops;
	int r = smpb_open(s);

	loop_ops(s, &ops);
	return r ? r : rec_freerun_attach(s, &ops, pids, n);
}

const struct rec_backend rec_backend_sample = {
    .name = "sample",
    .emulated = 0,
    .marks_at_step = 0,
    .hw_breakpoints = 1, /* the breakpoint kind arms them per thread */
    .kernel_events = 1,	 /* rkev_poll per service call */
    .run = smpb_run,
    .attach = smpb_attach,
    .fini = smpb_fini,
    .samples = smpb_samples,
    .now = smpb_now,
    .fill_info = smpb_fill_info,
};

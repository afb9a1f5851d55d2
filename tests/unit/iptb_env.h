/* SPDX-License-Identifier: MIT */
/* The intel-pt engine's test setting, shared by test_intel_pt_backend.c
 * and test_intel_pt_sideband.c: a session on this test process (one
 * thread, one trigger address) over the kernel double (tests/kernel/),
 * snapshots kept for checks.  Header-only (static functions): each test
 * program takes a copy. */
#ifndef PTSCOPE_TESTS_UNIT_IPTB_ENV_H
#define PTSCOPE_TESTS_UNIT_IPTB_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/backend.h"
#include "src/record/core/core.h"
#include "src/record/intel-pt/intel_pt.h"
#include "src/record/recorder.h"
#include "src/recording/recfile.h"
#include "tests/kernel/kdouble.h"

#define TRIG_ADDR 0x401136ull

struct snaps {
	int n;
	const char *reason[4];
	uint8_t *pt[4];
	size_t len[4];
	struct rec_info info;
	size_t nmarks;
	struct rec_mark marks[16];
	char text[16][200];
	char path[128]; /* also written as a recording file when set */
};

static __attribute__((unused)) int on_snapshot(void *ctx,
					       const struct rec_snapshot *snap)
{
	struct snaps *c = ctx;

	if (c->n == 4)
		return PS_ERR_LIMIT;
	c->reason[c->n] = snap->reason;
	c->info = *snap->in.info;
	if (snap->in.npts) {
		c->len[c->n] = snap->in.pts[0].len;
		c->pt[c->n] = malloc(c->len[c->n]);
		memcpy(c->pt[c->n], snap->in.pts[0].data, c->len[c->n]);
	}
	for (size_t i = 0; i < snap->in.nmarks && c->nmarks < 16; i++) {
		c->marks[c->nmarks] = snap->in.marks[i];
		snprintf(c->text[c->nmarks], 200, "%s", snap->in.marks[i].text);
		c->marks[c->nmarks].text = c->text[c->nmarks];
		c->nmarks++;
	}
	c->n++;
	if (c->path[0])
		return snapshot_write(snap, c->path);
	return 0;
}

struct env {
	struct kd f;
	struct rec_options o;
	struct rec_result res;
	struct rec_session s;
	struct snaps snaps;
	struct rec_proc *p;
	struct rec_thr *t;
	int pt_fd, bp_fd;
};

/* A session on this test process, one thread, one trigger address. */
static __attribute__((unused)) int
env_init_filter(struct env *e, unsigned multi, const char *filter)
{
	int r;

	memset(e, 0, sizeof(*e));
	kd_init(&e->f);
	/* 6.13: breakpoints may pause PT (aux_action); tests of older
	 * kernels set 12 before the first thread starts. */
	e->f.kernel_minor = 13;
	e->o.backend = "intel-pt";
	e->o.filter = filter;
	e->o.snapshot_size = 64 << 10;
	e->o.multi_snapshot = multi;
	e->o.on_snapshot = on_snapshot;
	e->o.ctx = &e->snaps;
	e->s.o = &e->o;
	e->s.res = &e->res;
	e->s.be = &rec_backend_intel_pt;
	e->s.start_ns = rec_clock_ns();
	e->res.pid = getpid(); /* this process is the command */
	r = iptb_open(&e->s, &e->f.ops);
	if (r)
		return r;
	r = rec_proc_add(&e->s, getpid(), &e->p);
	if (!r)
		r = rec_thr_add(&e->s, e->p, (pid_t)syscall(SYS_gettid),
				THR_RUNNING, &e->t);
	if (r)
		return r;
	e->p->taddr[0].addr = TRIG_ADDR;
	e->p->taddr[0].symbol = strdup("slow_path");
	e->p->ntaddr = 1;
	return 0;
}

static __attribute__((unused)) int env_init(struct env *e, unsigned multi)
{
	return env_init_filter(e, multi, NULL);
}

static __attribute__((unused)) void env_fini(struct env *e)
{
	rec_triggers_forget(&e->s, e->p);
	e->s.be->fini(&e->s);
	rec_session_fini(&e->s);
	for (int i = 0; i < e->snaps.n; i++)
		free(e->snaps.pt[i]);
	kd_fini(&e->f);
}

/* The fds the double handed out for the thread's PT event and first
 * breakpoint. */
static __attribute__((unused)) void find_fds(struct env *e)
{
	struct kd_event *pt = kd_find(&e->f, KD_PT, e->t->tid);
	struct kd_event *bp = kd_find(&e->f, KD_BP, e->t->tid);

	e->pt_fd = pt ? pt->fd : -1;
	e->bp_fd = bp ? bp->fd : -1;
}

static __attribute__((unused)) struct kd_event *ev(struct env *e, int fd)
{
	return kd_event(&e->f, fd);
}

/* The thread hits the trigger (rdi 0). */
static __attribute__((unused)) void push_hit(struct env *e)
{
	kd_bp_fire(&e->f, ev(e, e->bp_fd), 0);
}

/* The thread runs and PT writes @n bytes, then it is switched out. */
static __attribute__((unused)) void run(struct env *e, const uint8_t *bytes,
					size_t n)
{
	kd_task_run(&e->f, e->t->tid, bytes, n);
	kd_task_sched_out(&e->f, e->t->tid);
}

static __attribute__((unused)) uint8_t *pattern(size_t n, uint8_t seed)
{
	uint8_t *b = malloc(n);

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7 + 1) | 1; /* never zero */
	return b;
}

#endif

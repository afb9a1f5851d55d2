/* SPDX-License-Identifier: MIT */
/* Tests for latency triggers in the recorder core (src/record/latency.c)
 * through a session with a test-double backend: a slow call becomes a
 * mark naming the call and its duration, then stops recording or (with
 * --multi-snapshot) takes one snapshot per slow call; specs mix with
 * ordinary triggers. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/kevents/kevents.h"
#include "src/record/triggers/latency.h"
#include "src/record/core/core.h"
#include "src/record/triggers/kinds.h"
#include "tests/harness.h"

static unsigned snapshots;

static int count_snapshot(void *ctx, const struct rec_snapshot *snap)
{
	(void)ctx;
	(void)snap;
	snapshots++;
	return 0;
}

static int no_snapshot(struct rec_session *s, const struct rec_thr *t,
		       struct rec_pt_chunk **chunks, size_t *n)
{
	return PS_ERR_NOT_FOUND;
}

static const struct rec_backend free_running = {.name = "double",
						.emulated = 0,
						.kernel_events = 1,
						.snapshot = no_snapshot};

static const struct rec_trigger_kind *const kinds[] = {
    &rec_trigger_latency, &rec_trigger_breakpoint};

/* A session with one process (this one) and its main thread. */
static int setup(struct rec_session *s, struct rec_options *o,
		 struct rec_result *res, struct rec_proc *p, struct rec_thr *t,
		 const char *const *specs, size_t n)
{
	memset(s, 0, sizeof(*s));
	memset(res, 0, sizeof(*res));
	memset(p, 0, sizeof(*p));
	memset(t, 0, sizeof(*t));
	o->triggers = specs;
	o->ntriggers = n;
	o->on_snapshot = count_snapshot;
	s->o = o;
	s->be = &free_running;
	s->res = res;
	p->pid = getpid();
	t->proc = p;
	t->tid = getpid();
	snapshots = 0;
	return rec_triggers_init(s, kinds, 2);
}

TEST(a_slow_call_marks_and_stops)
{
	const char *specs[] = {"slow_scan", "handle>200us"};
	struct rec_options o = {0};
	struct rec_session s;
	struct rec_result res;
	struct rec_proc p;
	struct rec_thr t;

	CHECK_EQ(setup(&s, &o, &res, &p, &t, specs, 2), 0);
	CHECK_EQ(s.nkinds, 2);
	CHECK_EQ(rec_latency_is_spec(specs[0]), 0);
	CHECK_EQ(rec_latency_is_spec(specs[1]), 1);
	CHECK_EQ(rec_triggers_slow_call(&s, &t, 0, 0x1000, 5000, 2105000), 1);
	CHECK_STR(s.stop_reason, "latency");
	CHECK_EQ(s.nmarks, 1);
	CHECK_EQ(s.marks[0].kind, REC_MARK_LATENCY);
	CHECK_EQ(s.marks[0].value, 2100000);
	CHECK_EQ(s.marks[0].time_ns, 2105000);
	CHECK(strstr(s.marks[0].text, "took 2.100 ms (over 200.000 us)"));
	CHECK_EQ(res.trigger_hits, 1);
	free((char *)s.marks[0].text);
	free(s.marks);
	rec_triggers_fini(&s);
}

TEST(multi_snapshot_takes_one_per_slow_call_up_to_the_limit)
{
	const char *specs[] = {"handle>1ms"};
	struct rec_options o = {0};
	struct rec_session s;
	struct rec_result res;
	struct rec_proc p;
	struct rec_thr t;

	o.multi_snapshot = 2;
	CHECK_EQ(setup(&s, &o, &res, &p, &t, specs, 1), 0);
	CHECK_EQ(rec_triggers_slow_call(&s, &t, 0, 0x1000, 0, 3000000), 0);
	CHECK_EQ(snapshots, 1);
	CHECK(s.stop_reason == NULL);
	CHECK_EQ(rec_triggers_slow_call(&s, &t, 0, 0x1000, 0, 4000000), 1);
	CHECK_EQ(snapshots, 2);
	CHECK_STR(s.stop_reason, "limit");
	for (size_t i = 0; i < s.nmarks; i++)
		free((char *)s.marks[i].text);
	free(s.marks);
	rec_triggers_fini(&s);
}

TEST(bad_specs_are_refused_before_recording)
{
	const char *specs[] = {"handle>soon"};
	struct rec_options o = {0};
	struct rec_session s;
	struct rec_result res;
	struct rec_proc p;
	struct rec_thr t;

	CHECK_EQ(setup(&s, &o, &res, &p, &t, specs, 1), PS_ERR_INVAL);
	rec_triggers_fini(&s);
}

/* The path a hardware backend takes: the target runs free, the uprobe
 * timer (eBPF) reports the slow call, rkev_poll hands it to the core. */
TEST(free_running_threads_are_timed_by_the_uprobe_timer)
{
	const char *specs[] = {"handle>20ms"};
	struct rec_options o = {0};
	struct rec_session s;
	struct rec_result res;
	struct rec_proc p, *pp = NULL;
	struct rec_thr t, *tt = NULL;
	char path[4096];
	pid_t pid;
	int r, st;

	if (geteuid() != 0)
		SKIP("uprobes need root");
	CHECK_EQ(setup(&s, &o, &res, &p, &t, specs, 1), 0);
	r = rkev_open(&s);
	CHECK_EQ(r, 0);
	if (!s.kev) {
		rec_triggers_fini(&s);
		SKIP("kernel events are not available here");
	}
	snprintf(path, sizeof(path), "%s/samples/slowcall", harness_build());
	pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(3);
		/* Rounds 20 ms apart, forever; call 737 sleeps 50 ms. */
		execl(path, path, "0", "1000", "50", (char *)NULL);
		_exit(4);
	}
	CHECK(pid > 0);
	usleep(100000); /* exec done, libraries mapped */
	r = rec_proc_add(&s, pid, &pp);
	if (!r)
		r = rec_thr_add(&s, pp, pid, THR_RUNNING, &tt);
	if (!r)
		r = rec_triggers_resolve(&s, pp, 1);
	for (int i = 0; !r && i < 300 && !s.stop_reason; i++) {
		rkev_poll(&s);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK_EQ(r, 0);
	CHECK_STR(s.stop_reason, "latency");
	CHECK_EQ(s.nmarks, 1);
	CHECK_EQ(s.marks[0].kind, REC_MARK_LATENCY);
	CHECK_EQ(s.marks[0].tid, (uint64_t)pid);
	CHECK(s.marks[0].value >= 50000000);
	CHECK(strncmp(s.marks[0].text, "handle\n", 7) == 0);
	rkev_close(&s);
	rec_triggers_fini(&s);
	rec_session_fini(&s); /* processes carry a path and images now */
}

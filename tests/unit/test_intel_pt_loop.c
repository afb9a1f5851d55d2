/* SPDX-License-Identifier: MIT */
/* The intel-pt backend's ptrace control loop (intel_pt_loop.c) on real
 * processes, with the kernel double standing in for the PT hardware
 * (iptb_kernel), watching the real tasks through the real kernel: run
 * follows every thread of a program to its exit, a crash is marked and
 * snapshotted before the program dies of it, a trigger hit (a real
 * breakpoint behind the double's) stops tracing and lets the program
 * finish untraced, and attach/--duration detaches from a running
 * process that goes on. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/intel_pt.h"
#include "src/record/backend.h"
#include "src/record/core/core.h"
#include "src/record/kevents/kevents.h"
#include "src/record/triggers/kinds.h"
#include "tests/harness.h"
#include "tests/support.h"
#include "tests/kernel/kdouble.h"

struct seen {
	int n;
	char reason[4][16];
	int marks[8]; /* count per kind */
	char trigger_text[128];
	char signal_text[128];
	size_t threads;
};

static int on_snap(void *ctx, const struct rec_snapshot *snap)
{
	struct seen *c = ctx;

	if (c->n < 4)
		snprintf(c->reason[c->n], 16, "%s", snap->reason);
	c->n++;
	c->threads = snap->in.nthreads;
	for (size_t i = 0; i < snap->in.nmarks; i++) {
		const struct rec_mark *m = &snap->in.marks[i];

		if (m->kind < 8)
			c->marks[m->kind]++;
		if (m->kind == REC_MARK_TRIGGER)
			snprintf(c->trigger_text, 128, "%s", m->text);
		if (m->kind == REC_MARK_SIGNAL)
			snprintf(c->signal_text, 128, "%s", m->text);
	}
	return 0;
}

struct loop {
	struct kd f;
	struct rec_options o;
	struct rec_result res;
	struct rec_session s;
	struct seen seen;
	const char *trig[1];
};

static const struct rec_trigger_kind *const kinds[] = {&rec_trigger_latency,
						       &rec_trigger_breakpoint};

static int loop_init(struct loop *l, const char *trigger)
{
	memset(l, 0, sizeof(*l));
	kd_init(&l->f);
	l->f.kernel_minor = 13;
	l->f.real_tasks = 1;
	iptb_kernel = &l->f.ops;
	l->o.backend = "intel-pt";
	l->o.snapshot_size = 16 << 10;
	l->o.on_snapshot = on_snap;
	l->o.ctx = &l->seen;
	if (trigger) {
		l->trig[0] = trigger;
		l->o.triggers = l->trig;
		l->o.ntriggers = 1;
	}
	l->s.o = &l->o;
	l->s.res = &l->res;
	l->s.be = &rec_backend_intel_pt;
	l->s.start_ns = rec_clock_ns();
	return rec_triggers_init(&l->s, kinds, 2);
}

static void loop_fini(struct loop *l)
{
	rkev_close(&l->s);
	rec_triggers_fini(&l->s);
	l->s.be->fini(&l->s);
	rec_session_fini(&l->s);
	iptb_kernel = &ptk_real;
	if (getenv("KD_LOG")) /* what the double saw, for a failing test */
		fputs(l->f.log, stderr);
	kd_fini(&l->f);
}

/* The backend's run with the target's output out of the test report. */
static int quiet_run(struct loop *l, char *argv[])
{
	int saved = dup(1), null = open("/dev/null", O_WRONLY), r;

	fflush(stdout);
	dup2(null, 1);
	r = l->s.be->run(&l->s, argv);
	dup2(saved, 1);
	close(saved);
	close(null);
	return r;
}

static int count(const char *log, const char *what)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, what)); p++)
		n++;
	return n;
}

TEST(run_follows_every_thread_to_exit)
{
	struct loop l;
	char self[64];
	char *argv[] = {(char *)ts_sample("threads"), NULL};

	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(l.res.exited && l.res.exit_code == 0);
	CHECK(l.res.threads >= 5); /* main + four workers */
	/* the probe on ptscope itself, then one event per thread */
	CHECK_EQ(count(l.f.log, "open pt "), 1 + (int)l.res.threads);
	snprintf(self, sizeof(self), "open pt %d ", (int)syscall(SYS_gettid));
	CHECK_EQ(count(l.f.log, self), 1);
	/* every thread's PT stopped at its exit */
	CHECK(count(l.f.log, "disable ") >= (int)l.res.threads);
	CHECK_EQ(l.seen.n, 1);
	CHECK_STR(l.seen.reason[0], "exit");
	CHECK_EQ(l.seen.marks[REC_MARK_EXIT], 1);
	CHECK_EQ(l.seen.threads, l.res.threads);
	loop_fini(&l);
}

TEST(run_crash_is_marked_and_the_target_still_dies_of_it)
{
	struct loop l;
	char *argv[] = {(char *)ts_sample("crash"), NULL};

	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK_EQ(l.res.killed_by, SIGSEGV);
	CHECK(!l.res.exited);
	CHECK_EQ(l.seen.n, 1);
	CHECK_STR(l.seen.reason[0], "signal");
	CHECK_EQ(l.seen.marks[REC_MARK_SIGNAL], 1);
	CHECK(strstr(l.seen.signal_text, "SIGSEGV (fault address 0x0)"));
	loop_fini(&l);
}

TEST(run_trigger_hit_stops_tracing_and_the_program_finishes)
{
	struct loop l;
	char *argv[] = {(char *)ts_sample("demo"), "50", NULL};

	CHECK_EQ(loop_init(&l, "handle_request"), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(strstr(l.f.log, "open bp"));
	CHECK(strstr(l.f.log, "pause=1")); /* in the PT group */
	CHECK(strstr(l.f.log, "hit "));
	CHECK_EQ(l.res.trigger_hits, 1);
	CHECK_STR(l.seen.reason[0], "trigger");
	CHECK_STR(l.seen.trigger_text, "handle_request");
	/* detached: it ran on untraced and exited normally */
	CHECK(l.res.detached);
	CHECK(l.res.exited && l.res.exit_code == 0);
	loop_fini(&l);
}

TEST(attach_with_duration_detaches_and_the_process_goes_on)
{
	struct loop l;
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	usleep(50000);
	CHECK_EQ(loop_init(&l, NULL), 0);
	l.o.duration = 0.2;
	CHECK_EQ(l.s.be->attach(&l.s, &pid, 1), 0);
	CHECK_STR(l.seen.reason[0], "duration");
	CHECK(l.res.detached);
	CHECK(strstr(l.f.log, "open pt "));
	/* still alive, and ours to end */
	CHECK_EQ(waitpid(pid, &st, WNOHANG), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	loop_fini(&l);
}

/* The last PT event the double saw opened on a task of process @pid. */
static struct kd_event *last_pt(struct kd *f, pid_t pid)
{
	for (int i = f->nev - 1; i >= 0; i--)
		if (f->ev[i].kind == KD_PT && f->ev[i].task &&
		    f->ev[i].task->pid == pid)
			return &f->ev[i];
	return NULL;
}

static int copy_file(const char *from, const char *to)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod +x '%s'", from, to,
		 to);
	return system(cmd);
}

/* --filter NAME names a file of the process image: after an exec it is
 * looked up again in the new image (here two different files called
 * "prog": a shell, then the program it execs). */
TEST(run_filter_is_built_again_for_the_image_after_an_exec)
{
	struct loop l;
	char dir[] = "/tmp/ptscope-ipt-exec-XXXXXX", a[128], b[128], cmd[300];
	char *argv[4];
	struct kd_event *pt;
	uint64_t lo, hi;

	CHECK(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	CHECK(!mkdir(a, 0755) && !mkdir(b, 0755));
	strcat(a, "/prog");
	strcat(b, "/prog");
	CHECK_EQ(copy_file("/bin/sh", a), 0);
	CHECK_EQ(copy_file(ts_sample("demo"), b), 0);
	snprintf(cmd, sizeof(cmd), "exec %s 3", b);
	argv[0] = a;
	argv[1] = "-c";
	argv[2] = cmd;
	argv[3] = NULL;
	CHECK_EQ(loop_init(&l, NULL), 0);
	l.o.filter = "prog";
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(l.res.exited && l.res.exit_code == 0);
	pt = last_pt(&l.f, l.res.pid);
	CHECK(pt != NULL);
	CHECK(strstr(pt->filter_text, "/b/prog") != NULL);
	/* bound to the new image's code when it was set */
	kd_filter_msrs(pt, 0, &lo, &hi);
	CHECK(lo != 0 && hi != UINT64_MAX);
	loop_fini(&l);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
}

/* -t 'NAME>DURATION' on intel-pt: the calls are timed by the eBPF
 * sidecar's uprobes (the backend must take kernel events), and the loop
 * must look at them while the program runs, so the snapshot ends right
 * after the slow call. */
TEST(run_latency_trigger_fires_on_the_slow_call)
{
	struct loop l;
	char *argv[] = {(char *)ts_sample("slowcall"), NULL};

	if (geteuid() || access("/sys/kernel/btf/vmlinux", R_OK))
		SKIP("eBPF uprobes need root and BTF");
	CHECK_EQ(loop_init(&l, "handle>500us"), 0);
	CHECK_EQ(rkev_open(&l.s), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(l.s.kev != NULL); /* the sidecar ran */
	CHECK_EQ(l.seen.n, 1);
	CHECK_STR(l.seen.reason[0], "latency");
	CHECK_EQ(l.seen.marks[REC_MARK_LATENCY], 1);
	CHECK_EQ(l.res.trigger_hits, 1);
	/* detached at the hit: it finished untraced */
	CHECK(l.res.exited && l.res.exit_code == 0);
	loop_fini(&l);
}

struct stopper {
	char pidfile[128], after[128];
	int stopped_ok; /* it stayed stopped until SIGCONT */
	int sent;
};

/* Wait for the target's pid, give it 300 ms stopped, look, wake it. */
static void *stopper_thread(void *arg)
{
	struct stopper *st = arg;
	struct timespec pause = {0, 10000000}, hold = {0, 300000000};
	int pid = 0;

	for (int i = 0; i < 500 && pid <= 0; i++) {
		FILE *fp = fopen(st->pidfile, "re");

		if (fp) {
			if (fscanf(fp, "%d", &pid) != 1)
				pid = 0;
			fclose(fp);
		}
		nanosleep(&pause, NULL);
	}
	if (pid <= 0)
		return NULL;
	nanosleep(&hold, NULL);
	st->stopped_ok = access(st->after, F_OK) != 0;
	kill(pid, SIGCONT);
	st->sent = 1;
	return NULL;
}

/* SIGSTOP (or Ctrl-Z) of the target while it is recorded: a group stop
 * must stop it (PTRACE_LISTEN), and SIGCONT must go on with it. */
TEST(run_target_stopped_by_sigstop_stays_stopped_until_sigcont)
{
	struct loop l;
	struct stopper st;
	char cmd[400];
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	pthread_t th;

	memset(&st, 0, sizeof(st));
	snprintf(st.pidfile, sizeof(st.pidfile), "/tmp/ptscope-stop-%d.pid",
		 (int)getpid());
	snprintf(st.after, sizeof(st.after), "/tmp/ptscope-stop-%d.after",
		 (int)getpid());
	unlink(st.pidfile);
	unlink(st.after);
	snprintf(cmd, sizeof(cmd), "echo $$ > %s; kill -STOP $$; echo x > %s",
		 st.pidfile, st.after);
	CHECK_EQ(pthread_create(&th, NULL, stopper_thread, &st), 0);
	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	pthread_join(th, NULL);
	CHECK(st.sent);
	CHECK(st.stopped_ok);
	CHECK(l.res.exited && l.res.exit_code == 0);
	CHECK_EQ(access(st.after, F_OK), 0);
	unlink(st.pidfile);
	unlink(st.after);
	loop_fini(&l);
}

/* exec from a thread that is not the main one: de_thread gives the
 * exec'ing task the main thread's id, and its PT event (events follow the
 * task) goes with it, so a new event on that id is refused (intel_pt is
 * exclusive: EBUSY) unless the old thread is retired with its event. */
TEST(run_exec_from_a_worker_thread_traces_the_new_program)
{
	struct loop l;
	char *argv[] = {(char *)ts_sample("exec_thread"), "/bin/true", NULL};

	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(l.res.exited && l.res.exit_code == 0);
	/* the double saw the worker take the main thread's id */
	CHECK(strstr(l.f.log, "execs as") != NULL);
	CHECK(!strstr(l.f.log, "refused Device or resource busy"));
	/* and the new program was traced on it */
	CHECK(last_pt(&l.f, l.res.pid) &&
	      last_pt(&l.f, l.res.pid)->task->tid == l.res.pid);
	CHECK_STR(l.seen.reason[0], "exit");
	loop_fini(&l);
}

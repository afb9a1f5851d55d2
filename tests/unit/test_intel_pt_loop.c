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
	/* processes of the last snapshot: pid, parent, epochs seen */
	size_t nprocs;
	uint64_t proc_pid[16], proc_ppid[16];
	uint32_t proc_epoch[16];
	uint64_t trigger_tid, signal_tid;
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
	c->nprocs = 0;
	for (size_t i = 0; i < snap->in.nprocs && c->nprocs < 16; i++) {
		c->proc_pid[c->nprocs] = snap->in.procs[i].pid;
		c->proc_ppid[c->nprocs] = snap->in.procs[i].ppid;
		c->proc_epoch[c->nprocs] = snap->in.procs[i].epoch;
		c->nprocs++;
	}
	for (size_t i = 0; i < snap->in.nmarks; i++) {
		const struct rec_mark *m = &snap->in.marks[i];

		if (m->kind < 8)
			c->marks[m->kind]++;
		if (m->kind == REC_MARK_TRIGGER) {
			snprintf(c->trigger_text, 128, "%s", m->text);
			c->trigger_tid = m->tid;
		}
		if (m->kind == REC_MARK_SIGNAL) {
			snprintf(c->signal_text, 128, "%s", m->text);
			c->signal_tid = m->tid;
		}
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
	/* The recorder clears a stop request after each session; a test
	 * that ran one with --duration left it set (SIGALRM). */
	rec_stop_flag = 0;
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
	int saved1 = dup(1), saved2 = dup(2),
	    null = open("/dev/null", O_WRONLY), r;

	fflush(stdout);
	fflush(stderr);
	dup2(null, 1);
	dup2(null, 2);
	r = l->s.be->run(&l->s, argv);
	dup2(saved1, 1);
	dup2(saved2, 2);
	close(saved1);
	close(saved2);
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

/* Live events of @kind the double opened on the tasks of process @pid. */
static int events_of(struct kd *f, enum kd_kind kind, pid_t pid)
{
	int n = 0;

	for (int i = 0; i < f->nev; i++)
		n += f->ev[i].kind == kind && f->ev[i].task &&
		     f->ev[i].task->pid == pid;
	return n;
}

/* The process tree on intel-pt: each child a fork creates gets its own PT
 * event, sideband event and trigger breakpoints (perf events are not
 * inherited here: no inherit, cpu -1), its trigger fires in it, and the
 * snapshot holds every process with its parent. */
TEST(run_children_get_their_own_pt_sideband_and_breakpoints)
{
	struct loop l;
	char *argv[] = {(char *)ts_sample("children"), "0.1", NULL};
	pid_t kids[2] = {0, 0};
	size_t nk = 0;

	CHECK_EQ(loop_init(&l, "second_child"), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK_STR(l.seen.reason[0], "trigger");
	CHECK_STR(l.seen.trigger_text, "second_child");
	for (size_t i = 0; i < l.seen.nprocs; i++)
		if (l.seen.proc_pid[i] != (uint64_t)l.res.pid && nk < 2) {
			CHECK_EQ(l.seen.proc_ppid[i], (uint64_t)l.res.pid);
			kids[nk++] = (pid_t)l.seen.proc_pid[i];
		}
	CHECK_EQ(nk, 2);
	for (size_t i = 0; i < 2; i++) {
		CHECK_EQ(events_of(&l.f, KD_PT, kids[i]), 1);
		CHECK_EQ(events_of(&l.f, KD_SW, kids[i]), 1);
		CHECK(events_of(&l.f, KD_BP, kids[i]) >= 1);
	}
	/* the hit was the second child's own */
	CHECK(l.seen.trigger_tid == (uint64_t)kids[0] ||
	      l.seen.trigger_tid == (uint64_t)kids[1]);
	CHECK(!strstr(l.f.log, "refused"));
	/* the command went on untraced after the hit, and ended well */
	CHECK(l.res.exited && l.res.exit_code == 0);
	loop_fini(&l);
}

/* An exec in a child: the new image gets a new PT event (the old one
 * ended with the old image, kept by the core) and no EBUSY. */
TEST(run_exec_in_a_child_traces_its_new_program)
{
	struct loop l;
	char cmd[300];
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	pid_t child = 0;

	snprintf(cmd, sizeof(cmd), "%s 3; exit 0", ts_sample("demo"));
	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(l.res.exited && l.res.exit_code == 0);
	for (size_t i = 0; i < l.seen.nprocs; i++)
		if (l.seen.proc_pid[i] != (uint64_t)l.res.pid)
			child = (pid_t)l.seen.proc_pid[i];
	CHECK(child > 0);
	/* sh's copy, then demo's: two PT events on the child's one task */
	CHECK_EQ(events_of(&l.f, KD_PT, child), 2);
	CHECK(!strstr(l.f.log, "refused"));
	loop_fini(&l);
}

/* A crash in a child: marked on the faulting thread, a snapshot of the
 * tree, the child dies of it, and the command's own status is kept. */
TEST(run_crash_in_a_child_is_marked_and_the_command_goes_on)
{
	struct loop l;
	char cmd[300];
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};

	snprintf(cmd, sizeof(cmd), "%s; exit 7", ts_sample("crash"));
	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK_EQ(l.seen.n, 1);
	CHECK_STR(l.seen.reason[0], "signal");
	CHECK(strstr(l.seen.signal_text, "SIGSEGV"));
	CHECK(l.seen.signal_tid != (uint64_t)l.res.pid);
	/* the shell saw its child die and exited as it would have */
	CHECK(l.res.exited);
	CHECK_EQ(l.res.exit_code, 7);
	CHECK_EQ(l.res.killed_by, 0);
	loop_fini(&l);
}

/* The run ends when the command ends: a background job it leaves behind
 * is let go untraced, not waited for. */
TEST(run_ends_with_the_command_and_lets_a_background_job_go)
{
	struct loop l;
	char *argv[] = {"/bin/sh", "-c", "sleep 5 & exit 3", NULL};
	uint64_t t0 = rec_clock_ns();
	pid_t job = 0;
	char path[64], line[128];
	int tracer = -1;
	FILE *fp;

	CHECK_EQ(loop_init(&l, NULL), 0);
	CHECK_EQ(quiet_run(&l, argv), 0);
	CHECK(rec_clock_ns() - t0 < 3000000000ull);
	CHECK(l.res.exited && l.res.exit_code == 3);
	CHECK_STR(l.seen.reason[0], "exit");
	for (size_t i = 0; i < l.seen.nprocs; i++)
		if (l.seen.proc_pid[i] != (uint64_t)l.res.pid)
			job = (pid_t)l.seen.proc_pid[i];
	CHECK(job > 0);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)job);
	fp = fopen(path, "re");
	CHECK(fp != NULL); /* still running */
	while (fgets(line, sizeof(line), fp))
		sscanf(line, "TracerPid: %d", &tracer);
	fclose(fp);
	CHECK_EQ(tracer, 0); /* and ours no more */
	kill(job, SIGKILL);
	loop_fini(&l);
}

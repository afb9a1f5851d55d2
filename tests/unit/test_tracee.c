/* SPDX-License-Identifier: MIT */
/* Tests for the recorder's controller: wait-status classification, signal
 * facts, spawning, the size/path helpers, option parsing, backend choice,
 * and whole recordings of the samples with the emulated backend. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/backend.h"
#include "src/cli/tracing.h"
#include "src/record/recorder.h"
#include "src/record/ptrace/tracee.h"
#include "src/record/sample/sample_probe.h"
#include "tests/harness.h"

/* A wait status as the kernel builds it. */
static int stopped(int sig, int event)
{
	return (event << 16) | (sig << 8) | 0x7f;
}

TEST(classify_statuses)
{
	int sig;

	CHECK_EQ(trc_classify(3 << 8, &sig), TRC_EXITED);
	CHECK_EQ(sig, 3);
	CHECK_EQ(trc_classify(SIGKILL, &sig), TRC_KILLED);
	CHECK_EQ(sig, SIGKILL);
	CHECK_EQ(trc_classify(stopped(SIGTRAP, 0), &sig), TRC_STEP);
	CHECK_EQ(trc_classify(stopped(SIGSEGV, 0), &sig), TRC_SIGNAL);
	CHECK_EQ(sig, SIGSEGV);
	CHECK_EQ(trc_classify(stopped(SIGTRAP, PTRACE_EVENT_CLONE), &sig),
		 TRC_CLONE);
	CHECK_EQ(trc_classify(stopped(SIGTRAP, PTRACE_EVENT_FORK), &sig),
		 TRC_FORK);
	CHECK_EQ(trc_classify(stopped(SIGTRAP, PTRACE_EVENT_VFORK), &sig),
		 TRC_FORK);
	CHECK_EQ(trc_classify(stopped(SIGTRAP, PTRACE_EVENT_EXEC), &sig),
		 TRC_EXEC);
	CHECK_EQ(trc_classify(stopped(SIGTRAP, PTRACE_EVENT_EXIT), &sig),
		 TRC_EXIT);
	CHECK_EQ(trc_classify(stopped(SIGSTOP, PTRACE_EVENT_STOP), &sig),
		 TRC_EVSTOP);
	CHECK_EQ(sig, SIGSTOP);
}

static void on_usr1(int sig)
{
	(void)sig;
}

TEST(signal_fatality_follows_the_handler_table)
{
	struct sigaction sa, old1, oldp, oldsegv, oldabrt;
	pid_t me = getpid();

	memset(&sa, 0, sizeof(sa));
	/* Default actions for the fatal ones, whatever a sanitizer runtime
	 * may have installed in this test process. */
	sa.sa_handler = SIG_DFL;
	sigaction(SIGSEGV, &sa, &oldsegv);
	sigaction(SIGABRT, &sa, &oldabrt);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, &old1);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &oldp);
	CHECK_EQ(trc_signal_is_caught(me, SIGUSR1), 1);
	CHECK_EQ(trc_signal_is_fatal(me, SIGUSR1), 0);
	CHECK_EQ(trc_signal_is_fatal(me, SIGPIPE), 0); /* ignored */
	CHECK_EQ(trc_signal_is_fatal(me, SIGSEGV), 1);
	CHECK_EQ(trc_signal_is_fatal(me, SIGABRT), 1);
	CHECK_EQ(trc_signal_is_fatal(me, SIGCHLD), 0);
	CHECK_EQ(trc_signal_is_fatal(me, SIGWINCH), 0);
	CHECK_EQ(trc_signal_is_fatal(me, SIGKILL), 1);
	sigaction(SIGUSR1, &old1, NULL);
	sigaction(SIGPIPE, &oldp, NULL);
	sigaction(SIGSEGV, &oldsegv, NULL);
	sigaction(SIGABRT, &oldabrt, NULL);
	CHECK_EQ(trc_signal_is_fatal(me, SIGUSR1), 1);
}

TEST(signal_names)
{
	CHECK_STR(ps_signame(SIGSEGV), "SIGSEGV");
	CHECK_STR(ps_signame(SIGABRT), "SIGABRT");
	CHECK_STR(ps_signame(0x7f), "SIG127");
}

TEST(threads_and_tgid_of_self)
{
	pid_t *tids = NULL;
	int n = trc_threads(getpid(), &tids);

	CHECK(n >= 1);
	free(tids);
	CHECK_EQ(trc_tgid(getpid()), getpid());
	CHECK_EQ(trc_threads(999999999, &tids), PS_ERR_NOT_FOUND);
	CHECK_EQ(trc_check_access(999999999), PS_ERR_NOT_FOUND);
	CHECK_EQ(trc_check_access(getpid()), 0);
}

TEST(spawn_missing_command)
{
	char *argv[] = {"/nonexistent/ptscope-test", NULL};
	pid_t pid = -1;
	int r = trc_spawn(argv, &pid);

	CHECK_EQ(r, PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(r), "/nonexistent/ptscope-test"));
	CHECK_EQ(pid, -1);
	CHECK_EQ(trc_spawn(NULL, &pid), PS_ERR_INVAL);
}

TEST(spawn_stops_at_exec_then_runs_to_entry)
{
	char *argv[] = {"true", NULL};
	uint64_t ip = 0;
	pid_t pid;
	int st = 0, r;

	r = trc_spawn(argv, &pid);
	CHECK_EQ(r, 0);
	CHECK_EQ(trc_ip(pid, &ip), 0);
	CHECK(ip != 0);
	r = trc_run_to_entry(pid, &st);
	CHECK_EQ(r, 0);
	CHECK_EQ(trc_ip(pid, &ip), 0);
	CHECK(ip != 0);
	/* Detached, it finishes normally. */
	CHECK_EQ(ptrace(PTRACE_DETACH, pid, 0, 0), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(parse_sizes)
{
	static const struct {
		const char *in;
		uint64_t want; /* 0: must be refused */
	} rows[] = {
	    {"4M", 4u << 20},
	    {"512K", 512u << 10},
	    {"1G", 1u << 30},
	    {"65536", 65536},
	    {"2MiB", 2u << 20},
	    {"8k", 8192},
	    {"", 0},
	    {"-1", 0},
	    {"0", 0},
	    {"12Q", 0},
	    {"4MM", 0},
	    {"99G", 0},
	    {"M", 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t v = 0;
		int r = rec_parse_size(rows[i].in, &v);

		if (rows[i].want) {
			CHECK_EQ(r, 0);
			CHECK_EQ(v, rows[i].want);
		} else {
			CHECK_EQ(r, PS_ERR_INVAL);
		}
	}
	CHECK_EQ(rec_parse_size(NULL, NULL), PS_ERR_INVAL);
}

TEST(numbered_paths)
{
	static const char *const rows[][2] = {
	    {"trace.fxt", "trace.3.fxt"}, {"dir/t.json", "dir/t.3.json"},
	    {"t.fxt.gz", "t.3.fxt.gz"},	  {"noext", "noext.3"},
	    {"a.b/noext", "a.b/noext.3"}, {".hidden", ".hidden.3"},
	};
	char out[64];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECK_EQ(rec_numbered_path(rows[i][0], 3, out, sizeof(out)), 0);
		CHECK_STR(out, rows[i][1]);
	}
	CHECK_EQ(rec_numbered_path("trace.fxt", 3, out, 5), PS_ERR_LIMIT);
}

TEST(backend_choice)
{
	const struct rec_backend *be = NULL;
	const char *why = NULL;
	char qemu[4096];
	int have_qemu = rec_find_qemu(qemu, sizeof(qemu)) == 0;
	int r;

	CHECK_EQ(rec_backend_select("auto", 0, &be, &why), 0);
	CHECK_STR(be->name, have_qemu ? "qemu" : "step");
	CHECK(why != NULL);
	CHECK_EQ(rec_backend_select("auto", 1, &be, &why), 0);
	if (rec_have_intel_pt()) {
		CHECK_STR(be->name, "intel-pt");
	} else {
		/* Attach samples where a sampling event opens (production
		 * cost), and says what the exact alternative costs. */
		struct sprobe sp;

		sprobe_run(&sp);
		CHECK_STR(be->name, sprobe_event_name(&sp) ? "sample" : "step");
		if (sprobe_event_name(&sp))
			CHECK(why && strstr(why, "--backend=step is exact but "
						 "slows the program about ten "
						 "thousand times"));
	}
	CHECK_EQ(rec_backend_select("sample", 0, &be, &why), 0);
	CHECK_STR(be->name, "sample");
	CHECK_EQ(rec_backend_select("sample", 1, &be, &why), 0);
	CHECK_STR(be->name, "sample");
	CHECK_EQ(rec_backend_select(NULL, 0, &be, &why), 0);
	CHECK_EQ(rec_backend_select("step", 0, &be, &why), 0);
	CHECK_STR(be->name, "step");
	CHECK(why == NULL);
	CHECK_EQ(rec_backend_select("emulated", 1, &be, &why), 0);
	CHECK_STR(be->name, "step");
	CHECK_EQ(rec_backend_select("qemu", 1, &be, &why), PS_ERR_INVAL);
	r = rec_backend_select("qemu", 0, &be, &why);
	CHECK_EQ(r, have_qemu ? 0 : PS_ERR_NO_HW);
	CHECK_EQ(rec_backend_select("magic", 0, &be, &why), PS_ERR_INVAL);
	r = rec_backend_select("intel-pt", 0, &be, &why);
	if (rec_have_intel_pt()) {
		CHECK_EQ(r, 0);
		CHECK_STR(be->name, "intel-pt");
		CHECK_EQ(rec_backend_select(NULL, 1, &be, &why), 0);
		CHECK_STR(be->name, "intel-pt");
	} else {
		CHECK_EQ(r, PS_ERR_NO_HW);
		CHECK(!strncmp(ps_err_message(r),
			       "intel_pt PMU not found: ", 24));
		CHECK(strstr(ps_err_message(r), "use --backend=emulated"));
	}
}

TEST(parse_command_lines)
{
	struct reccmd c;
	char *ok[] = {"run", "-t",	   ".",	 "-s",	 "1M",	"-m3",
		      "-o",  "/tmp/x.fxt", "--", "prog", "arg", NULL};
	char *att[] = {"attach", "-p", "12,34", NULL};
	char *nocmd[] = {"run", "-o", "/tmp/x.fxt", NULL};
	char *pidrun[] = {"run", "-p", "1", "--", "x", NULL};
	char *both[] = {"record", "-p", "1", "--", "x", NULL};
	char *nodir[] = {"run", "-o", "/nonexistent/dir/x.fxt",
			 "--",	"x",  NULL};
	char *archrun[] = {"run", "--archive", "--", "x", NULL};
	char *dur[] = {"attach", "-p", "1", "-d", "soon", NULL};

	POISON(c);
	CHECK_EQ(reccmd_parse(&c, RECCMD_RUN, 11, ok), 0);
	CHECK_EQ(c.ntriggers, 1);
	CHECK_STR(c.triggers[0], ".");
	CHECK_EQ(c.ro.snapshot_size, 1u << 20);
	CHECK_EQ(c.ro.multi_snapshot, 3);
	CHECK_STR(c.cmd[0], "prog");
	CHECK_STR(c.cmd[1], "arg");
	CHECK_EQ(c.npids, 0);

	CHECK_EQ(reccmd_parse(&c, RECCMD_ATTACH, 3, att), 0);
	CHECK_EQ(c.npids, 2);
	CHECK_EQ(c.pids[1], 34);
	CHECK_STR(c.output, "ptscope.fxt");

	CHECK_EQ(reccmd_parse(&c, RECCMD_RUN, 3, nocmd), PS_ERR_INVAL);
	CHECK_EQ(reccmd_parse(&c, RECCMD_RUN, 5, pidrun), PS_ERR_INVAL);
	CHECK_EQ(reccmd_parse(&c, RECCMD_RECORD, 5, both), PS_ERR_INVAL);
	CHECK_EQ(reccmd_parse(&c, RECCMD_RUN, 5, nodir), PS_ERR_NOT_FOUND);
	CHECK_EQ(reccmd_parse(&c, RECCMD_RUN, 4, archrun), PS_ERR_INVAL);
	CHECK_EQ(reccmd_parse(&c, RECCMD_ATTACH, 5, dur), PS_ERR_INVAL);
}

/* A whole recording through the library, counting what it hands over. */
struct seen {
	unsigned snapshots;
	size_t threads, pts, marks;
	uint64_t pt_bytes;
	int reason_signal, has_signal_mark, has_exit_mark, has_trigger;
	char reason[16];
};

static int count_snapshot(void *ctx, const struct rec_snapshot *snap)
{
	struct seen *s = ctx;

	s->snapshots++;
	s->threads = snap->in.nthreads;
	s->pts = snap->in.npts;
	s->marks = snap->in.nmarks;
	snprintf(s->reason, sizeof(s->reason), "%s", snap->reason);
	for (size_t i = 0; i < snap->in.npts; i++)
		s->pt_bytes += snap->in.pts[i].len;
	for (size_t i = 0; i < snap->in.nmarks; i++) {
		const struct rec_mark *m = &snap->in.marks[i];

		s->has_signal_mark |=
		    m->kind == REC_MARK_SIGNAL && m->value == SIGSEGV;
		s->has_exit_mark |= m->kind == REC_MARK_EXIT;
		s->has_trigger |=
		    m->kind == REC_MARK_TRIGGER &&
		    !strcmp(m->text, "ptscope_trigger\nslow request");
	}
	return 0;
}

static int sample(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/samples/%s", harness_build(), name);
	return access(path, X_OK) == 0;
}

static int record_sample(const char *name, char **args, const char *trig,
			 struct seen *s, struct rec_result *res)
{
	char path[512];
	char *argv[8] = {path};
	const char *trigs[1] = {trig};
	struct rec_options o;

	if (!sample(name, path, sizeof(path)))
		return 1;
	for (int i = 0; args && args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	memset(&o, 0, sizeof(o));
	memset(s, 0, sizeof(*s));
	o.backend = "step";
	o.snapshot_size = 256 << 10;
	o.on_snapshot = count_snapshot;
	o.ctx = s;
	o.triggers = trigs;
	o.ntriggers = trig ? 1 : 0;
	return rec_run(&o, argv, res) ? -1 : 0;
}

TEST(run_to_exit)
{
	struct rec_result res;
	struct seen s;
	int r = record_sample("recursion", NULL, NULL, &s, &res);

	if (r == 1)
		SKIP("build/samples/recursion is not built");
	CHECK_EQ(r, 0);
	CHECK_EQ(s.snapshots, 1);
	CHECK_STR(s.reason, "exit");
	CHECK_EQ(s.threads, 1);
	CHECK_EQ(s.pts, 1);
	CHECK(s.pt_bytes > 0);
	CHECK(s.has_exit_mark);
	CHECK_EQ(res.exited, 1);
	CHECK_EQ(res.exit_code, 0);
	CHECK_EQ(res.killed_by, 0);
	CHECK(res.instructions > 1000);
}

TEST(run_crash_snapshots_before_death)
{
	struct rec_result res;
	struct seen s;
	int r = record_sample("crash", NULL, NULL, &s, &res);

	if (r == 1)
		SKIP("build/samples/crash is not built");
	CHECK_EQ(r, 0);
	CHECK_EQ(s.snapshots, 1);
	CHECK_STR(s.reason, "signal");
	CHECK(s.has_signal_mark);
	CHECK_EQ(res.killed_by, SIGSEGV);
	CHECK_EQ(res.fault_addr, 0);
	CHECK(res.fault_ip != 0);
	CHECK_EQ(res.exited, 0);
}

TEST(run_threads_each_traced)
{
	struct rec_result res;
	struct seen s;
	int r = record_sample("threads", NULL, NULL, &s, &res);

	if (r == 1)
		SKIP("build/samples/threads is not built");
	CHECK_EQ(r, 0);
	CHECK_EQ(s.threads, 5);
	CHECK_EQ(s.pts, 5);
	CHECK_EQ(res.threads, 5);
	CHECK_EQ(res.exit_code, 0);
}

TEST(run_trigger_stops_at_first_hit)
{
	char *args[] = {"60", NULL};
	struct rec_result res;
	struct seen s;
	int r = record_sample("demo", args, ".", &s, &res);

	if (r == 1)
		SKIP("build/samples/demo is not built");
	CHECK_EQ(r, 0);
	CHECK_EQ(s.snapshots, 1);
	CHECK_STR(s.reason, "trigger");
	CHECK(s.has_trigger);
	CHECK_EQ(res.trigger_hits, 1);
	CHECK_EQ(res.detached, 1);
	CHECK_EQ(res.exited, 1); /* it went on untraced to its end */
}

TEST(run_unknown_trigger_is_refused)
{
	struct rec_result res;
	struct seen s;
	int r = record_sample("demo", NULL, "no_such_function_xyz", &s, &res);
	char path[512];

	if (!sample("demo", path, sizeof(path)))
		SKIP("build/samples/demo is not built");
	CHECK_EQ(r, -1);
	CHECK_EQ(s.snapshots, 0);
}

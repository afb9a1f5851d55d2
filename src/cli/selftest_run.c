/* SPDX-License-Identifier: MIT */
/* Recording one selftest case on one backend (selftest_run.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/own_file.h"
#include "src/cli/selftest_run.h"
#include "src/record/recorder.h"
#include "src/replay/replay.h"

/* Fast enough for the single-step backend (tens of thousands of
 * instructions a second): each case runs in about a second there. */
/* clang-format off */
const struct st_case st_cases[] = {
    {"threads", "threads", {NULL}, NULL, 0,
     "four threads created while traced"},
    {"recursion", "recursion", {NULL}, NULL, 0,
     "deep recursion left by longjmp, then mutual recursion"},
    {"exceptions", "exceptions", {NULL}, NULL, 0,
     "C++ exceptions unwinding frames"},
    {"crash", "crash", {NULL}, NULL, 0,
     "a SIGSEGV, marked before the program dies of it"},
    {"trigger", "demo", {"60", NULL}, ".", 0,
     "ptscope_trigger() ends the trace"},
    {"latency", "slowcall", {"1", "800", "2", NULL}, "handle>500us", 0,
     "a call slower than 500 us ends the trace"},
    {"dlopen", "plugin", {"5", NULL}, "plugin_step@libplugin.so", 0,
     "a trigger in a library loaded with dlopen()"},
    {"filter", "demo", {"20", NULL}, NULL, 1,
     "--filter on the program's code (intel-pt only)"},
};
/* clang-format on */
const size_t st_ncases = sizeof(st_cases) / sizeof(st_cases[0]);

#define SAMPLE_LIB "libplugin.so"
#define CASE_SECONDS 60 /* a case that takes longer is cut (--duration) */

int st_samples_dir(char *buf, size_t size)
{
	char exe[PATH_MAX - 64];
	int r = ps_own_file("PTSCOPE_SAMPLES", "samples", "samples", X_OK, buf,
			    size, exe, sizeof(exe));

	if (r && exe[0])
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "the bundled samples are neither in "
		    "%s/samples (a build tree: run make) nor "
		    "in %s/../lib/ptscope/samples (installed); "
		    "set PTSCOPE_SAMPLES to their directory",
		    exe, exe);
	return r;
}

struct run_ctx {
	struct stc_outcome *out;
	const char *recording; /* where the snapshot is saved */
	uint64_t cut;	       /* count calls that began up to here */
	const char *exe;       /* the sample's base name */
	int err;
};

/* The marks a case is compared on, and the time the trace's history ends
 * (the first of them). */
static int on_snapshot(void *ctx, const struct rec_snapshot *snap)
{
	struct run_ctx *c = ctx;

	c->out->snapshots++;
	for (size_t i = 0; i < snap->in.nmarks; i++) {
		const struct rec_mark *m = &snap->in.marks[i];

		if (m->kind != REC_MARK_TRIGGER &&
		    m->kind != REC_MARK_LATENCY && m->kind != REC_MARK_SIGNAL)
			continue;
		stc_mark(c->out, m->kind, m->text);
		if (m->time_ns < c->cut)
			c->cut = m->time_ns;
	}
	return snapshot_write(snap, c->recording);
}

/* A writer that counts the sample's own calls. */
struct count_writer {
	struct ps_writer base;
	struct run_ctx *c;
};

static int own_module(const struct run_ctx *c, const char *module)
{
	const char *base;

	if (!module)
		return 0;
	base = strrchr(module, '/');
	base = base ? base + 1 : module;
	return !strcmp(base, c->exe) || !strcmp(base, SAMPLE_LIB);
}

static int inferred(const struct ps_event *ev)
{
	for (size_t i = 0; i < ev->nargs; i++)
		if (!strcmp(ev->args[i].name, "inferred"))
			return 1;
	return 0;
}

static int count_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct count_writer *cw = (struct count_writer *)w;
	struct run_ctx *c = cw->c;

	if ((ev->type != PS_EV_BEGIN && ev->type != PS_EV_COMPLETE) ||
	    !ev->name || !ev->info || !own_module(c, ev->info->module) ||
	    inferred(ev) || ev->ts > c->cut)
		return 0;
	return stc_call(c->out, ev->name);
}

static int no_name(struct ps_writer *w, uint64_t pid, const char *name)
{
	(void)w, (void)pid, (void)name;
	return 0;
}

static int no_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		     const char *name)
{
	(void)w, (void)pid, (void)tid, (void)name;
	return 0;
}

static int no_meta(struct ps_writer *w, const char *k, const char *v)
{
	(void)w, (void)k, (void)v;
	return 0;
}

static const struct ps_writer_ops count_ops = {
    .name = "selftest",
    .process = no_name,
    .thread = no_thread,
    .meta = no_meta,
    .event = count_event,
};

/* The target's output is not the selftest's: it goes to /dev/null while
 * the case runs. */
static int quiet_begin(int saved[2])
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	fflush(stdout);
	fflush(stderr);
	saved[0] = dup(1);
	saved[1] = dup(2);
	if (null < 0 || saved[0] < 0 || saved[1] < 0)
		return PS_ERR_IO;
	dup2(null, 1);
	dup2(null, 2);
	close(null);
	return 0;
}

static void quiet_end(int saved[2])
{
	for (int i = 0; i < 2; i++)
		if (saved[i] >= 0) {
			dup2(saved[i], i + 1);
			close(saved[i]);
		}
}

static void set_error(struct stc_outcome *out, int r)
{
	snprintf(out->error, sizeof(out->error), "%s", ps_err_message(r));
}

static int decode(struct run_ctx *c)
{
	struct count_writer w;
	struct replay_options ro;

	memset(&w, 0, sizeof(w));
	w.base.ops = &count_ops;
	w.c = c;
	memset(&ro, 0, sizeof(ro));
	ro.span_info = 1;
	return replay_recording_file(c->recording, &w.base, &ro);
}

int st_run(const struct st_case *k, const char *dir, const char *backend,
	   struct stc_outcome *out)
{
	char prog[PATH_MAX], rec[64];
	char *argv[6];
	const char *trig[1];
	struct rec_options o;
	struct rec_result res;
	struct run_ctx c;
	int saved[2] = {-1, -1}, fd, r, n = 0;

	snprintf(prog, sizeof(prog), "%s/%s", dir, k->sample);
	argv[n++] = prog;
	for (int i = 0; i < 4 && k->args[i]; i++)
		argv[n++] = (char *)k->args[i];
	argv[n] = NULL;
	snprintf(rec, sizeof(rec), "/tmp/ptscope-selftest-XXXXXX");
	fd = mkstemp(rec);
	if (fd < 0) {
		snprintf(out->error, sizeof(out->error),
			 "cannot create a file in /tmp: %s", strerror(errno));
		return 0;
	}
	close(fd);
	memset(&c, 0, sizeof(c));
	c.out = out;
	c.recording = rec;
	c.cut = UINT64_MAX;
	c.exe = k->sample;
	memset(&o, 0, sizeof(o));
	o.backend = backend;
	o.duration = CASE_SECONDS;
	if (k->trigger) {
		trig[0] = k->trigger;
		o.triggers = trig;
		o.ntriggers = 1;
	}
	if (k->filter && !strcmp(backend, "intel-pt"))
		o.filter = k->sample;
	o.on_snapshot = on_snapshot;
	o.ctx = &c;
	r = quiet_begin(saved);
	if (!r)
		r = rec_run(&o, argv, &res);
	quiet_end(saved);
	if (!r && !out->snapshots)
		r = ps_err_detail(PS_ERR_TARGET, "no snapshot was taken");
	if (!r)
		r = decode(&c);
	unlink(rec);
	if (r == PS_ERR_NOMEM)
		return r;
	if (r) {
		set_error(out, r);
		return 0;
	}
	out->exited = res.exited;
	out->exit_code = res.exit_code;
	out->killed_by = res.killed_by;
	return 0;
}

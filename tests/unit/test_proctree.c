/* SPDX-License-Identifier: MIT */
/* Tests for the process tree in the recorder core
 * (src/record/core/proctree.c) and for replaying a recording whose
 * processes ran exec: children join with their parent's image, an exec
 * keeps the old image's modules and PT in their own epoch, snapshots
 * carry every epoch, specs that name nothing in one process wait for
 * another, and replay decodes each epoch's PT against its own code. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/core.h"
#include "src/record/emulate/emulate.h"
#include "src/replay/replay.h"
#include "tests/harness.h"
#include "tests/support.h"

/* ---- an engine that holds one chunk per thread: "PT<epoch>" ---------- */

static int fake_snapshot(struct rec_session *s, const struct rec_thr *t,
			 struct rec_pt_chunk **chunks, size_t *n)
{
	char *b = malloc(8);

	(void)s;
	if (!b)
		return PS_ERR_NOMEM;
	snprintf(b, 8, "PT%u", (unsigned)t->epoch);
	return rec_pt_one_chunk(t, (uint8_t *)b, strlen(b), chunks, n);
}

static const struct rec_backend fake = {.name = "fake",
					.emulated = 1,
					.snapshot = fake_snapshot};

/* What the last snapshot held. */
static struct {
	size_t npts, nmods, nprocs, nraws;
	uint32_t pt_epoch[8];
	char pt_text[8][8];
	size_t mods_in_epoch[4];
	struct rec_process procs[4];
	char names[4][32];
	int calls;
} got;

static int on_snapshot(void *ctx, const struct rec_snapshot *snap)
{
	const struct recording *in = &snap->in;

	(void)ctx;
	memset(&got, 0, sizeof(got));
	got.calls++;
	got.npts = in->npts;
	for (size_t i = 0; i < in->npts && i < 8; i++) {
		got.pt_epoch[i] = in->pts[i].epoch;
		snprintf(got.pt_text[i], 8, "%.*s", (int)in->pts[i].len,
			 (const char *)in->pts[i].data);
	}
	got.nmods = in->nmods;
	for (size_t i = 0; i < in->nmods; i++)
		if (in->mods[i].epoch < 4)
			got.mods_in_epoch[in->mods[i].epoch]++;
	got.nprocs = in->nprocs;
	for (size_t i = 0; i < in->nprocs && i < 4; i++) {
		got.procs[i] = in->procs[i];
		snprintf(got.names[i], 32, "%s", in->procs[i].name);
	}
	got.nraws = in->nraws;
	return 0;
}

static void open_session(struct rec_session *s, struct rec_options *o,
			 struct rec_result *res)
{
	memset(o, 0, sizeof(*o));
	o->on_snapshot = on_snapshot;
	rec_session_init(s, o, &fake, res);
	rec_session_start(s);
}

/* A child that waits to be killed. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

TEST(a_child_joins_with_its_parents_image)
{
	struct rec_options o;
	struct rec_session s;
	struct rec_result res;
	struct rec_proc *root, *child = NULL;
	pid_t pid;

	open_session(&s, &o, &res);
	CHECK_EQ(rec_follows(&s), 1);
	CHECK_EQ(rec_proc_add(&s, getpid(), &root), 0);
	CHECK_EQ(root->ppid, 0);
	CHECK_EQ(root->epoch, 0);
	CHECK(root->path && root->path[0] == '/');
	CHECK(root->comm[0]);
	pid = sleeper();
	CHECK(pid > 0);
	CHECK_EQ(rec_proc_add_child(&s, root, pid, &child), 0);
	CHECK(child != NULL);
	if (child) {
		CHECK_EQ(child->pid, pid);
		CHECK_EQ(child->ppid, getpid());
		CHECK_EQ(child->epoch, 0);
		CHECK_STR(child->path, root->path);
		CHECK_STR(child->comm, root->comm);
		CHECK(child->mods.n > 0);
	}
	CHECK_EQ(res.processes, 2);
	CHECK(rec_proc_find(&s, pid) == child);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	rec_session_fini(&s);
	o.no_follow = 1;
	rec_session_init(&s, &o, &fake, &res);
	CHECK_EQ(rec_follows(&s), 0);
	rec_session_fini(&s);
}

TEST(exec_keeps_the_old_image_and_its_pt)
{
	struct rec_options o;
	struct rec_session s;
	struct rec_result res;
	struct rec_proc *p;
	struct rec_thr *t;
	size_t mods0;

	open_session(&s, &o, &res);
	CHECK_EQ(rec_proc_add(&s, getpid(), &p), 0);
	CHECK_EQ(rec_thr_add(&s, p, getpid(), THR_STOPPED, &t), 0);
	t->traced = 1;
	mods0 = p->mods.n;
	CHECK(mods0 > 0);
	CHECK_EQ(rec_proc_exec(&s, p, t, s.start_ns + 1234, "/bin/new"), 0);
	CHECK_EQ(p->epoch, 1);
	CHECK_EQ(t->epoch, 1);
	CHECK_STR(p->path, "/bin/new");
	CHECK_EQ(p->epoch_ns, s.start_ns + 1234);
	CHECK_EQ(p->nimages, 1);
	CHECK_EQ(p->images[0].epoch, 0);
	CHECK_EQ(p->images[0].mods.n, mods0);
	CHECK(p->images[0].path && p->images[0].path[0] == '/');
	/* The engine's PT of the old image is the core's now. */
	CHECK_EQ(t->nkept, 1);
	CHECK_EQ(t->kept[0].epoch, 0);
	CHECK(t->kept[0].len == 3 && !memcmp(t->kept[0].data, "PT0", 3));
	/* The exec mark names the new program. */
	CHECK_EQ(s.nmarks, 1);
	CHECK_EQ(s.marks[0].kind, REC_MARK_EXEC);
	CHECK_EQ(s.marks[0].tid, (uint64_t)getpid());
	CHECK_EQ(s.marks[0].time_ns, s.start_ns + 1234);
	CHECK_EQ(s.marks[0].value, 1);
	CHECK_STR(s.marks[0].text, "/bin/new");

	/* A snapshot holds both images: PT, modules, process records. */
	CHECK_EQ(rec_snapshot_take(&s, "test"), 0);
	CHECK_EQ(got.calls, 1);
	CHECK_EQ(got.npts, 2);
	CHECK_EQ(got.pt_epoch[0], 0);
	CHECK_STR(got.pt_text[0], "PT0");
	CHECK_EQ(got.pt_epoch[1], 1);
	CHECK_STR(got.pt_text[1], "PT1");
	CHECK_EQ(got.mods_in_epoch[0], mods0);
	CHECK(got.mods_in_epoch[1] > 0);
	CHECK_EQ(got.nprocs, 2);
	CHECK_EQ(got.procs[0].epoch, 0);
	CHECK_EQ(got.procs[1].epoch, 1);
	CHECK_EQ(got.procs[1].pid, (uint64_t)getpid());
	CHECK_EQ(got.procs[1].ppid, 0);
	CHECK_EQ(got.procs[1].time_ns, s.start_ns + 1234);
	CHECK(got.names[1][0]);
	/* The kept chunk is the core's: it stays for the next snapshot. */
	CHECK_EQ(rec_snapshot_take(&s, "test"), 0);
	CHECK_EQ(got.npts, 2);
	CHECK_STR(got.pt_text[0], "PT0");
	rec_session_fini(&s);
}

TEST(kept_pt_is_bounded_oldest_first_out)
{
	struct rec_thr t;

	memset(&t, 0, sizeof(t));
	for (uint32_t e = 0; e < REC_KEPT_MAX + 3; e++)
		CHECK_EQ(rec_thr_keep_pt(&t, e, malloc(1), 1), 0);
	CHECK_EQ(t.nkept, REC_KEPT_MAX);
	CHECK_EQ(t.kept[0].epoch, 3);
	CHECK_EQ(t.kept[REC_KEPT_MAX - 1].epoch, REC_KEPT_MAX + 2);
	for (size_t i = 0; i < t.nkept; i++)
		free(t.kept[i].data);
	free(t.kept);
}

TEST(a_name_missing_in_one_process_waits_for_another)
{
	const char *specs[] = {"leaf_fn"};
	struct rec_options o;
	struct rec_session s;
	struct rec_result res;
	struct rec_proc root, child;

	open_session(&s, &o, &res);
	o.triggers = specs;
	o.ntriggers = 1;
	memset(&root, 0, sizeof(root));
	memset(&child, 0, sizeof(child));
	root.pid = 10;
	child.pid = 11;
	child.ppid = 10;
	/* The command's own program offers a close name: a misspelling. */
	ps_err_detail(PS_ERR_NOT_FOUND, "no function 'leaf_fn' in sh");
	CHECK_EQ(rec_trigger_absent(&s, &root, 0, PS_ERR_NOT_FOUND, 1), 0);
	CHECK_EQ(root.absent, 0);
	/* No close name: another process may have it. */
	CHECK_EQ(rec_trigger_absent(&s, &root, 0, PS_ERR_NOT_FOUND, 0), 1);
	CHECK_EQ(root.absent, 1);
	/* In a child even a close name waits. */
	ps_err_detail(PS_ERR_NOT_FOUND, "no function 'leaf_fn' in child");
	CHECK_EQ(rec_trigger_absent(&s, &child, 0, PS_ERR_NOT_FOUND, 1), 1);
	/* Other errors stand. */
	CHECK_EQ(rec_trigger_absent(&s, &child, 0, PS_ERR_AMBIGUOUS, 0), 0);
	/* At the end: the first sentence, unless some process had it. */
	CHECK_EQ(rec_triggers_unmatched(&s), PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(PS_ERR_NOT_FOUND),
		      "no function 'leaf_fn' in sh; no process of the "
		      "command's tree had it either"));
	s.triggers_ever = 1;
	CHECK_EQ(rec_triggers_unmatched(&s), 0);
	/* The final snapshot at exit refuses, before it, when none had it. */
	s.triggers_ever = 0;
	memset(&got, 0, sizeof(got));
	CHECK_EQ(rec_snapshot_final(&s), PS_ERR_NOT_FOUND);
	CHECK_EQ(got.calls, 0);
	rec_session_fini(&s);
	/* Without following, a missing name is the error it was. */
	o.no_follow = 1;
	rec_session_init(&s, &o, &fake, &res);
	CHECK_EQ(rec_trigger_absent(&s, &child, 0, PS_ERR_NOT_FOUND, 0), 0);
	rec_session_fini(&s);
}

/* ---- replay of a recording whose process ran exec --------------------- */

#define CODE_VA 0x10000ull
/* call +5 (to CODE_VA + 10); nop x5; ret */
static const uint8_t code[16] = {0xe8, 0x05, 0, 0, 0, 0x90, 0x90, 0x90,
				 0x90, 0x90, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90};

static ssize_t read_code(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < CODE_VA || addr >= CODE_VA + sizeof(code))
		return -1;
	if (len > CODE_VA + sizeof(code) - addr)
		len = CODE_VA + sizeof(code) - addr;
	memcpy(buf, code + (addr - CODE_VA), len);
	return (ssize_t)len;
}

/* Genuine PT of one call and return at @t0, from the emulator. */
static int make_pt(uint64_t t0, uint8_t **buf, size_t *len)
{
	struct emu_config cfg = {.ring_size = 1 << 16,
				 .start_ns = t0,
				 .read_mem = read_code};
	struct emu_process *p;
	struct emu_thread *t;
	int r = emu_process_new(&cfg, 7, &p);

	if (r)
		return r;
	r = emu_thread_new(p, 7, CODE_VA, t0, &t);
	if (!r) {
		r = emu_step(t, CODE_VA, CODE_VA + 10, 0);
		if (!r)
			r = emu_step(t, CODE_VA + 10, CODE_VA + 5, 0);
		if (!r)
			r = emu_step(t, CODE_VA + 5, CODE_VA + 6, 0);
		if (!r)
			r = emu_stop(t, CODE_VA + 6);
		if (!r)
			r = emu_snapshot(t, buf, len);
		emu_thread_free(t);
	}
	emu_process_free(p);
	return r;
}

TEST(replay_decodes_each_epoch_against_its_own_code)
{
	struct rec_info info = {.backend = "step", .emulated = 1};
	struct rec_raw_code raws[2] = {
	    {.pid = 7, .vaddr = CODE_VA, .name = "before", .bytes = code,
	     .len = sizeof(code), .epoch = 0},
	    {.pid = 7, .vaddr = CODE_VA, .name = "after", .bytes = code,
	     .len = sizeof(code), .epoch = 1}};
	struct rec_thread thr[2] = {{7, 7, "prog"}, {8, 8, "kid"}};
	struct rec_process procs[3] = {
	    {7, 0, 0, 0, "sh", "/bin/sh"},
	    {7, 0, 1, 5000, "prog", "/usr/bin/prog"},
	    {8, 7, 0, 4000, "kid", "/bin/sh"}};
	struct rec_mark mark = {REC_MARK_EXEC, 7, 7, 5000, 0, 1,
				"/usr/bin/prog"};
	struct rec_pt pts[2];
	struct recording in;
	struct ts_recorder w;
	uint8_t *b0 = NULL, *b1 = NULL;
	size_t l0 = 0, l1 = 0, before = 0, after = 0, execs = 0;

	CHECK_EQ(make_pt(1000, &b0, &l0), 0);
	CHECK_EQ(make_pt(6000, &b1, &l1), 0);
	memset(pts, 0, sizeof(pts));
	pts[0] = (struct rec_pt){7, 7, -1, 0, b0, l0, 0};
	pts[1] = (struct rec_pt){7, 7, -1, 0, b1, l1, 1};
	memset(&in, 0, sizeof(in));
	in.info = &info;
	in.raws = raws;
	in.nraws = 2;
	in.threads = thr;
	in.nthreads = 2;
	in.procs = procs;
	in.nprocs = 3;
	in.pts = pts;
	in.npts = 2;
	in.marks = &mark;
	in.nmarks = 1;
	ts_rec_init(&w);
	CHECK_EQ(replay_input(&in, &w.base, NULL, NULL), 0);
	for (size_t i = 0; i < w.count[TS_EVENT]; i++) {
		const struct ps_event *ev = ts_rec_event(&w, i);

		if (ev->type == PS_EV_INSTANT && !strcmp(ev->name, "exec")) {
			execs++;
			CHECK_EQ(ev->pid, 7);
			CHECK_EQ(ev->nargs, 2);
			CHECK_STR(ev->args[0].v.s, "/usr/bin/prog");
			continue;
		}
		if (ev->type != PS_EV_COMPLETE && ev->type != PS_EV_BEGIN)
			continue;
		CHECK_EQ(ev->pid, 7);
		if (strstr(ev->name, "before")) {
			before++;
			CHECK(ev->ts < 5000);
		} else if (strstr(ev->name, "after")) {
			after++;
			CHECK(ev->ts >= 6000);
		}
	}
	if (!before || !after)
		ts_rec_print(&w, stderr);
	CHECK(before > 0);
	CHECK(after > 0);
	CHECK_EQ(execs, 1);
	/* One name per process, its latest image's; the child's parent. */
	CHECK_EQ(w.count[TS_PROCESS], 2);
	CHECK_EQ(ts_rec_nth(&w, TS_PROCESS, 0)->ev.pid, 7);
	CHECK_STR(ts_rec_nth(&w, TS_PROCESS, 0)->value, "prog");
	CHECK_STR(ts_rec_nth(&w, TS_PROCESS, 1)->value, "kid");
	CHECK_EQ(w.count[TS_PARENT], 1);
	CHECK_EQ(ts_rec_nth(&w, TS_PARENT, 0)->ev.pid, 8);
	CHECK_EQ(ts_rec_nth(&w, TS_PARENT, 0)->ev.tid, 7);
	CHECK_EQ(w.count[TS_THREAD], 2);
	ts_rec_free(&w);

	/* Without epochs (an older recording) all of it is one image. */
	in.nprocs = 0;
	raws[1].epoch = 0;
	pts[1].epoch = 0;
	ts_rec_init(&w);
	CHECK_EQ(replay_input(&in, &w.base, NULL, NULL), 0);
	CHECK_EQ(w.count[TS_PROCESS], 2); /* named by main threads */
	CHECK_EQ(w.count[TS_PARENT], 0);
	ts_rec_free(&w);
	free(b0);
	free(b1);
}



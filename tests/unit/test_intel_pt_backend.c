/* SPDX-License-Identifier: MIT */
/* The intel-pt backend's engine (intel_pt.c) with the double of the
 * kernel (tests/kernel/kdouble.h): thread start (the event's attributes,
 * the read-only AUX mapping, breakpoints in the PT group with aux_pause),
 * a trigger wake-up, the snapshot sequence disable → copy → enable, the
 * user-space stop on kernels without aux_pause, --multi-snapshot, thread
 * exit, a crash, sideband (COMM, AUX flags, LOST), the recording's clock
 * conversion, and the error sentences.  A last test records for real
 * where the machine has an intel_pt PMU. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <asm/perf_regs.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/intel_pt.h"
#include "src/recording/recfile.h"
#include "src/replay/replay.h"
#include "src/record/backend.h"
#include "src/record/core/core.h"
#include "src/record/recorder.h"
#include "src/record/triggers/kinds.h"
#include "tests/harness.h"
#include "tests/support.h"
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

static int on_snapshot(void *ctx, const struct rec_snapshot *snap)
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
static int env_init_filter(struct env *e, unsigned multi, const char *filter)
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

static int env_init(struct env *e, unsigned multi)
{
	return env_init_filter(e, multi, NULL);
}

static void env_fini(struct env *e)
{
	rec_triggers_forget(&e->s, e->p);
	e->s.be->fini(&e->s);
	for (size_t i = 0; i < e->s.nthrs; i++)
		free(e->s.thrs[i]);
	free(e->s.thrs);
	for (size_t i = 0; i < e->s.nprocs; i++) {
		mod_list_fini(&e->s.procs[i]->mods);
		free(e->s.procs[i]->vdso);
		free(e->s.procs[i]);
	}
	free(e->s.procs);
	for (size_t i = 0; i < e->s.nmarks; i++)
		free((char *)e->s.marks[i].text);
	free(e->s.marks);
	for (int i = 0; i < e->snaps.n; i++)
		free(e->snaps.pt[i]);
	kd_fini(&e->f);
}

/* The fds the double handed out for the thread's PT event and first
 * breakpoint. */
static void find_fds(struct env *e)
{
	struct kd_event *pt = kd_find(&e->f, KD_PT, e->t->tid);
	struct kd_event *bp = kd_find(&e->f, KD_BP, e->t->tid);

	e->pt_fd = pt ? pt->fd : -1;
	e->bp_fd = bp ? bp->fd : -1;
}

static struct kd_event *ev(struct env *e, int fd)
{
	return kd_event(&e->f, fd);
}

/* The thread hits the trigger (rdi 0). */
static void push_hit(struct env *e)
{
	kd_bp_fire(&e->f, ev(e, e->bp_fd), 0);
}

/* The thread runs and PT writes @n bytes, then it is switched out. */
static void run(struct env *e, const uint8_t *bytes, size_t n)
{
	kd_task_run(&e->f, e->t->tid, bytes, n);
	kd_task_sched_out(&e->f, e->t->tid);
}

static uint8_t *pattern(size_t n, uint8_t seed)
{
	uint8_t *b = malloc(n);

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7 + 1) | 1; /* never zero */
	return b;
}

TEST(thread_start_opens_pt_overwrite_aux_and_paused_breakpoint)
{
	struct env e;
	const struct kd_event *pt, *bp, *sb;
	char want[200];

	CHECK_EQ(env_init(&e, 0), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	CHECK(e.pt_fd >= 0 && e.bp_fd >= 0);
	pt = ev(&e, e.pt_fd);
	CHECK_EQ(pt->attr.config, 0xe601);
	CHECK_EQ(pt->task->tid, e.t->tid);
	CHECK_EQ(pt->cpu, -1);
	CHECK(!pt->attr.inherit);
	CHECK(pt->attr.exclude_kernel && pt->attr.use_clockid &&
	      pt->attr.clockid == CLOCK_MONOTONIC && pt->attr.sample_id_all);
	/* the sideband on a dummy event of its own, on from the start */
	sb = kd_find(&e.f, KD_SW, e.t->tid);
	CHECK(sb && sb->enabled);
	CHECK(sb->attr.mmap2 && sb->attr.comm && sb->attr.task &&
	      sb->attr.sample_id_all && sb->attr.use_clockid);
	CHECK(!pt->attr.mmap2 && !pt->attr.comm && !pt->attr.task);
	CHECK(pt->aux_overwrite); /* mapped read-only: snapshot mode */
	CHECK_EQ(pt->aux_size, 64 << 10);
	CHECK(pt->enabled);
	/* the trigger in the PT group, pausing AUX tracing at the hit */
	bp = ev(&e, e.bp_fd);
	CHECK(bp->leader == pt);
	CHECK_EQ(ptk_attr_aux_action(&bp->attr), PTK_AUX_PAUSE);
	CHECK_EQ(bp->attr.bp_addr, TRIG_ADDR);
	/* opened disabled, mapped, then armed, then enabled */
	snprintf(want, sizeof(want), "mmap %d aux 65536 read-only\nopen sw",
		 e.pt_fd);
	CHECK(strstr(e.f.log, want));
	snprintf(want, sizeof(want),
		 "pause=1 -> %d\nmmap %d data 36864\nenable %d", e.bp_fd,
		 e.bp_fd, e.pt_fd);
	CHECK(strstr(e.f.log, want));
	CHECK(e.t->traced);
	env_fini(&e);
}

TEST(trigger_with_aux_pause_marks_at_the_hit_and_snapshots_in_order)
{
	struct env e;
	uint8_t *bytes = pattern(100000, 3), *after = pattern(5000, 8);
	size_t size = 64 << 10;
	uint32_t mult;
	uint16_t shift;
	char want[100];

	CHECK_EQ(env_init(&e, 0), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	/* 100000 bytes through a 64 KiB ring: wrapped once */
	kd_task_run(&e.f, e.t->tid, bytes, 100000);
	push_hit(&e);
	/* paused by the breakpoint: what runs after it is not traced */
	kd_task_run(&e.f, e.t->tid, after, 5000);
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	CHECK(e.f.poll_calls > 0);
	CHECK_STR(e.s.stop_reason, "trigger");
	CHECK_EQ(e.res.trigger_hits, 1);
	/* paused in the kernel: ptscope did not have to stop it */
	CHECK(!strstr(e.f.log, "disable"));
	CHECK_EQ(e.s.nmarks, 1);
	CHECK_EQ(e.s.marks[0].kind, REC_MARK_TRIGGER);
	CHECK(e.s.marks[0].time_ns > 0);
	CHECK_EQ(e.s.marks[0].address, TRIG_ADDR);
	CHECK_STR(e.s.marks[0].text, "slow_path");
	CHECK_EQ(rec_snapshot_final(&e.s), 0);
	CHECK_EQ(e.snaps.n, 1);
	CHECK_STR(e.snaps.reason[0], "trigger");
	/* the newest 64 KiB before the hit, oldest first */
	CHECK_EQ(e.snaps.len[0], size);
	CHECK(!memcmp(e.snaps.pt[0], bytes + 100000 - size, size));
	/* disable (aux_head published) → copy → enable */
	snprintf(want, sizeof(want), "disable %d\nenable %d", e.pt_fd, e.pt_fd);
	CHECK(strstr(e.f.log, want));
	/* the recording's clock: TSC → CLOCK_MONOTONIC */
	kd_time_conv(&e.f, &mult, &shift);
	CHECK(e.snaps.info.has_conv);
	CHECK_EQ(e.snaps.info.time_mult, mult);
	CHECK_EQ(e.snaps.info.time_shift, shift);
	CHECK_EQ(e.snaps.info.mtc_freq, 3);
	CHECK_EQ(e.snaps.info.nom_freq, 34);
	CHECK(!e.snaps.info.emulated);
	CHECK_STR(e.snaps.info.backend, "intel-pt");
	free(bytes);
	free(after);
	env_fini(&e);
}

TEST(trigger_without_aux_pause_stops_from_user_space_and_says_how_late)
{
	struct env e;
	uint8_t *bytes = pattern(5000, 9);
	char want[100];

	CHECK_EQ(env_init(&e, 0), 0);
	e.f.kernel_minor = 12; /* aux_action is __reserved_3: EINVAL */
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	CHECK(strstr(e.f.log, "refused Invalid argument"));
	CHECK(ev(&e, e.bp_fd)->leader == ev(&e, e.bp_fd));
	/* sched-outs: overwrite-mode AUX records carry the buffer size,
	 * which says nothing of a wrap */
	run(&e, bytes, 2000);
	run(&e, bytes + 2000, 3000);
	push_hit(&e);
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	CHECK_STR(e.s.stop_reason, "trigger");
	snprintf(want, sizeof(want), "disable %d", e.pt_fd);
	CHECK(strstr(e.f.log, want));
	/* a note saying how far past the trigger the trace runs */
	CHECK_EQ(e.s.nmarks, 2);
	CHECK_EQ(e.s.marks[0].kind, REC_MARK_NOTE);
	CHECK(strstr(e.s.marks[0].text, "past this trigger"));
	CHECK_EQ(e.s.marks[1].kind, REC_MARK_TRIGGER);
	/* never wrapped: exactly what was written */
	CHECK_EQ(rec_snapshot_final(&e.s), 0);
	CHECK_EQ(e.snaps.len[0], 5000);
	CHECK(!memcmp(e.snaps.pt[0], bytes, 5000));
	free(bytes);
	env_fini(&e);
}

TEST(multi_snapshot_takes_one_per_hit_and_keeps_tracing)
{
	struct env e;
	uint8_t *a = pattern(1000, 1), *b = pattern(3000, 2);
	char want[100];
	const char *p;
	int pairs = 0;

	CHECK_EQ(env_init(&e, 2), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	/* --multi-snapshot never pauses in the kernel */
	CHECK_EQ(ptk_attr_aux_action(&ev(&e, e.bp_fd)->attr), 0);
	kd_task_run(&e.f, e.t->tid, a, 1000);
	push_hit(&e);
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	CHECK(e.s.stop_reason == NULL);
	CHECK_EQ(e.snaps.n, 1);
	CHECK_EQ(e.snaps.len[0], 1000);
	CHECK(ev(&e, e.pt_fd)->enabled); /* tracing goes on */
	kd_task_run(&e.f, e.t->tid, b, 3000);
	push_hit(&e);
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	CHECK_STR(e.s.stop_reason, "limit");
	CHECK_EQ(e.snaps.n, 2);
	CHECK_EQ(e.snaps.len[1], 4000);
	CHECK(!memcmp(e.snaps.pt[1] + 1000, b, 3000));
	snprintf(want, sizeof(want), "disable %d\nenable %d", e.pt_fd, e.pt_fd);
	for (p = e.f.log; (p = strstr(p, want)); p++)
		pairs++;
	CHECK_EQ(pairs, 2);
	free(a);
	free(b);
	env_fini(&e);
}

TEST(thread_exit_keeps_its_trace_for_the_snapshot)
{
	struct env e;
	uint8_t *bytes = pattern(2048, 5);

	CHECK_EQ(env_init(&e, 0), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	kd_task_run(&e.f, e.t->tid, bytes, 2048);
	iptb_thread_end(&e.s, e.t);
	CHECK(!ev(&e, e.pt_fd)->enabled);
	CHECK(!kd_event(&e.f, e.bp_fd)); /* breakpoints gone */
	CHECK(ev(&e, e.pt_fd) != NULL);
	kd_task_exit(&e.f, e.t->tid);
	/* its fd stays open for the snapshot, but out of the poll set (an
	 * exited task's event polls as POLLHUP) */
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	CHECK_EQ(e.f.poll_nfds, 0);
	CHECK_EQ(rec_snapshot_take(&e.s, "exit"), 0);
	CHECK_EQ(e.snaps.len[0], 2048);
	CHECK(!memcmp(e.snaps.pt[0], bytes, 2048));
	/* not re-enabled: it was off */
	CHECK(!ev(&e, e.pt_fd)->enabled);
	free(bytes);
	env_fini(&e);
}

TEST(crash_stops_pt_marks_the_fault_and_snapshots)
{
	struct env e;
	uint8_t *bytes = pattern(777, 4);

	CHECK_EQ(env_init(&e, 0), 0);
	strcpy(e.snaps.path, "/tmp/ptscope-iptb-crash.ptsc");
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	kd_task_run(&e.f, e.t->tid, bytes, 777);
	CHECK_EQ(iptb_crash(&e.s, e.t, SIGSEGV, 0x10, 1, 0x401200), 0);
	CHECK_STR(e.s.stop_reason, "signal");
	CHECK(!ev(&e, e.pt_fd)->enabled);
	CHECK_EQ(e.res.killed_by, SIGSEGV);
	CHECK_EQ(e.res.fault_ip, 0x401200);
	CHECK_EQ(e.t->inject, SIGSEGV);
	CHECK_EQ(rec_snapshot_final(&e.s), 0);
	CHECK_STR(e.snaps.reason[0], "signal");
	CHECK_EQ(e.snaps.len[0], 777);
	CHECK_EQ(e.snaps.nmarks, 1);
	CHECK_EQ(e.snaps.marks[0].kind, REC_MARK_SIGNAL);
	CHECK(strstr(e.snaps.text[0], "SIGSEGV (fault address 0x10)"));
	/* and the recording file carries it, with the clock conversion */
	{
		struct recr *r;
		const struct rec_info *in;

		CHECK_EQ(recr_open(e.snaps.path, &r), 0);
		in = recr_info(r);
		CHECK(in->has_conv && in->time_mult == e.snaps.info.time_mult &&
		      in->time_shift == e.snaps.info.time_shift &&
		      in->time_zero == e.snaps.info.time_zero);
		CHECK_STR(in->backend, "intel-pt");
		recr_close(r);
	}
	unlink(e.snaps.path);
	free(bytes);
	env_fini(&e);
}

/* PT's TSC converts with the perf page's time_mult, which NTP does not
 * slew, while marks are on CLOCK_MONOTONIC, which it does: the zero point
 * measured at the start is 12 ms off after ten minutes at 20 ppm.  Each
 * snapshot pairs the clocks again. */
TEST(each_snapshot_pairs_the_tsc_with_clock_monotonic_again)
{
	struct env e;
	uint64_t tsc, mono, conv, err;
	const struct rec_info *in;

	CHECK_EQ(env_init(&e, 0), 0);
	e.f.mono_ppm = 20;
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	kd_clock_advance(&e.f, 600ull * 1000000000ull);
	CHECK_EQ(rec_snapshot_take(&e.s, "exit"), 0);
	in = &e.snaps.info;
	CHECK(in->has_conv);
	tsc = kd_tsc(&e.f);
	mono = kd_mono(&e.f);
	conv = in->time_zero +
	       (uint64_t)(((unsigned __int128)tsc * in->time_mult) >>
			  in->time_shift);
	err = conv > mono ? conv - mono : mono - conv;
	CHECK(err < 100000); /* 100 us: reads apart, not 12 ms */
	env_fini(&e);
}

static const struct rec_trigger_kind *const kinds[] = {
    &rec_trigger_latency, &rec_trigger_breakpoint};

/* The code mapping of @path in this process. */
static int mapping_of(const char *path, uint64_t *start, uint64_t *end,
		      uint64_t *off)
{
	char line[700];
	FILE *fp = fopen("/proc/self/maps", "re");
	int found = 0;

	while (fp && !found && fgets(line, sizeof(line), fp)) {
		unsigned long long s0, e0, o0;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s %llx", &s0, &e0, perm, &o0) ==
			4 &&
		    perm[2] == 'x' && strstr(line, path)) {
			*start = s0;
			*end = e0;
			*off = o0;
			found = 1;
		}
	}
	if (fp)
		fclose(fp);
	return found;
}

/* In snapshot mode every sched-out sends a PERF_RECORD_AUX (pt_event_stop
 * → perf_aux_output_end with the buffer's size): at 10,000 switches a
 * second a data ring shared with the sideband fills before ptscope reads
 * it, the kernel drops what follows (PERF_RECORD_LOST), and an MMAP2 of a
 * dlopen'ed library among it would leave a trigger there unarmed.  The
 * sideband has a ring of its own, and lost AUX records are not lost PT. */
TEST(a_flood_of_context_switches_does_not_drown_the_sideband)
{
	struct env e;
	const char *trig[1] = {"plugin_step"};
	const char *lib_path = ts_sample("libplugin.so");
	uint64_t start, end, off;
	struct kd_event *bp;
	void *lib, *fn;

	CHECK_EQ(env_init(&e, 0), 0);
	rec_triggers_forget(&e.s, e.p);
	e.o.triggers = trig;
	e.o.ntriggers = 1;
	CHECK_EQ(rec_triggers_init(&e.s, kinds, 2), 0);
	CHECK_EQ(rec_triggers_resolve(&e.s, e.p, 0), 0);
	CHECK(e.s.triggers_pending); /* not loaded yet */
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	for (int i = 0; i < 10000; i++)
		kd_task_sched_out(&e.f, e.t->tid);
	lib = dlopen(lib_path, RTLD_NOW);
	CHECK(lib != NULL);
	fn = dlsym(lib, "plugin_step");
	CHECK(mapping_of("libplugin.so", &start, &end, &off));
	kd_task_mmap(&e.f, e.t->tid, start, end - start, off,
		     PROT_READ | PROT_EXEC, lib_path);
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	/* the trigger in the new library is armed */
	bp = kd_find(&e.f, KD_BP, e.t->tid);
	CHECK(bp != NULL);
	CHECK_EQ(bp->attr.bp_addr, (uint64_t)(uintptr_t)fn);
	/* and nothing says PT data was lost */
	for (size_t i = 0; i < e.s.nmarks; i++)
		CHECK(e.s.marks[i].kind != REC_MARK_LOST);
	rec_triggers_fini(&e.s);
	env_fini(&e);
	dlclose(lib);
}

static int keep_raws(void *ctx, const struct rec_snapshot *snap)
{
	int *found = ctx;

	for (size_t i = 0; i < snap->in.nraws; i++)
		if (!strcmp(snap->in.raws[i].name, "[kernel.kallsyms]") &&
		    snap->in.raws[i].pid == (uint64_t)getpid() &&
		    snap->in.raws[i].vaddr == 0xffffffff81000000ull &&
		    snap->in.raws[i].len == 3)
			(*found)++;
	return 0;
}

TEST(kernel_text_goes_into_every_snapshot)
{
	struct env e;
	struct iptb *b;
	int found = 0;

	CHECK_EQ(env_init(&e, 0), 0);
	b = e.s.bk;
	b->ktext.name = "[kernel.kallsyms]";
	b->ktext.bytes = (const uint8_t *)strdup("\x90\x90\xc3");
	b->ktext.len = 3;
	b->ktext.vaddr = 0xffffffff81000000ull;
	e.o.on_snapshot = keep_raws;
	e.o.ctx = &found;
	CHECK_EQ(rec_snapshot_take(&e.s, "exit"), 0);
	CHECK_EQ(found, 1);
	env_fini(&e);
}

TEST(sideband_comm_aux_flags_lost_become_names_and_marks)
{
	struct env e;
	uint64_t rec[5];
	struct perf_event_header h = {PERF_RECORD_LOST, 0, 40};

	CHECK_EQ(env_init(&e, 0), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	kd_task_comm(&e.f, e.t->tid, "renamed");
	/* two transactions that lost data: one mark */
	ev(&e, e.pt_fd)->aux_flags = PERF_AUX_FLAG_TRUNCATED;
	kd_task_sched_out(&e.f, e.t->tid);
	ev(&e, e.pt_fd)->aux_flags = PERF_AUX_FLAG_TRUNCATED;
	kd_task_sched_out(&e.f, e.t->tid);
	/* the kernel's own LOST record in the sideband ring (kd_output
	 * writes one when a ring was full; here it is handed over as such) */
	memcpy(&rec[0], &h, 8);
	rec[1] = (uint64_t)e.pt_fd;
	rec[2] = 12;
	rec[3] = (uint64_t)e.t->tid << 32 | (uint32_t)getpid();
	rec[4] = 100;
	kd_output(&e.f, kd_find(&e.f, KD_SW, e.t->tid), rec, 40);
	CHECK_EQ(iptb_service(&e.s, 0), 0);
	CHECK_STR(e.t->comm, "renamed");
	CHECK_EQ(e.s.nmarks, 2);
	CHECK_EQ(e.s.marks[0].kind, REC_MARK_LOST);
	CHECK_EQ(e.s.marks[0].value, 12);
	CHECK(strstr(e.s.marks[0].text, "sideband records"));
	CHECK_EQ(e.s.marks[1].kind, REC_MARK_LOST);
	CHECK(strstr(e.s.marks[1].text, "truncated"));
	env_fini(&e);
}

/* A breakpoint address the kernel refuses (hw_breakpoint_parse: EINVAL
 * for an address it counts as kernel space) is that trigger's problem
 * alone: the others are armed, and still pause PT in the kernel. */
TEST(a_refused_breakpoint_address_keeps_aux_pause_for_the_others)
{
	struct env e;
	struct kd_event *bp;

	CHECK_EQ(env_init(&e, 0), 0);
	e.p->taddr[1] = e.p->taddr[0];
	e.p->taddr[1].symbol = strdup("slow_path");
	e.p->taddr[0].addr = 0x7ffffffff800ull; /* above TASK_SIZE_MAX */
	free(e.p->taddr[0].symbol);
	e.p->taddr[0].symbol = strdup("odd");
	e.p->ntaddr = 2;
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	bp = kd_find(&e.f, KD_BP, e.t->tid);
	CHECK(bp != NULL);
	CHECK_EQ(bp->attr.bp_addr, TRIG_ADDR);
	CHECK_EQ(bp->leader->kind, KD_PT);
	CHECK_EQ(ptk_attr_aux_action(&bp->attr), PTK_AUX_PAUSE);
	CHECK_EQ(((struct iptb *)e.s.bk)->tc.aux_pause, 1);
	env_fini(&e);
}

TEST(errors_privilege_mlock_busy_filter_are_one_clear_sentence)
{
	struct env e;
	const char *m;

	CHECK_EQ(env_init(&e, 0), 0);
	/* Debian's perf_event_paranoid=3 refuses unprivileged users */
	kd_sysfs_set(&e.f, "sys/perf_event_paranoid", "3\n");
	CHECK_EQ(iptb_thread_start(&e.s, e.t), PS_ERR_PERM);
	m = ps_err_message(PS_ERR_PERM);
	CHECK(strstr(m, "perf_event_paranoid is 3"));
	CHECK(strstr(m, "CAP_PERFMON"));
	kd_sysfs_set(&e.f, "sys/perf_event_paranoid", "2\n");
	e.f.lbr_in_use = 1; /* x86_add_exclusive: another PT/LBR user */
	CHECK_EQ(iptb_thread_start(&e.s, e.t), PS_ERR_NO_HW);
	CHECK(strstr(ps_err_message(PS_ERR_NO_HW), "another tool"));
	e.f.lbr_in_use = 0;
	/* 16 KiB per CPU, no RLIMIT_MEMLOCK: the AUX area does not fit */
	kd_sysfs_set(&e.f, "sys/perf_event_mlock_kb", "16\n");
	e.f.memlock = 0;
	CHECK_EQ(iptb_thread_start(&e.s, e.t), PS_ERR_LIMIT);
	m = ps_err_message(PS_ERR_LIMIT);
	CHECK(strstr(m, "smaller --snapshot-size"));
	CHECK(strstr(m, "perf_event_mlock_kb is 16"));
	/* the failed opens left nothing behind */
	CHECK(!kd_find(&e.f, KD_PT, e.t->tid));
	CHECK_EQ(e.f.user_locked + e.f.pinned_vm, 0);
	env_fini(&e);

	/* --kernel without the privilege: perf_allow_kernel */
	CHECK_EQ(env_init(&e, 0), 0);
	((struct iptb *)e.s.bk)->tc.kernel = 1;
	CHECK_EQ(iptb_thread_start(&e.s, e.t), PS_ERR_PERM);
	CHECK(strstr(ps_err_message(PS_ERR_PERM), "kernel code"));
	env_fini(&e);
}

TEST(filter_goes_to_the_kernel_before_enable)
{
	struct env e;
	char want[300];

	/* this test program's own file, by base name */
	CHECK_EQ(env_init_filter(&e, 0, "test_intel_pt_backend"), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	snprintf(want, sizeof(want), "filter %d filter 0x", e.pt_fd);
	CHECK(strstr(e.f.log, want));
	CHECK(strstr(ev(&e, e.pt_fd)->filter_text, "/test_intel_pt_backend"));
	CHECK(strstr(e.f.log, "test_intel_pt_backend -> 0\nopen bp"));
	env_fini(&e);
}

/* This program's code mapping, from /proc/self/maps. */
static int own_code(uint64_t *start, uint64_t *end)
{
	char exe[512], line[700];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *fp = fopen("/proc/self/maps", "re");
	int found = 0;

	if (n <= 0 || !fp)
		return 0;
	exe[n] = 0;
	while (!found && fgets(line, sizeof(line), fp)) {
		unsigned long long s, e;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s", &s, &e, perm) == 3 &&
		    perm[2] == 'x' && strstr(line, exe)) {
			*start = s;
			*end = e;
			found = 1;
		}
	}
	fclose(fp);
	return found;
}

/* The kernel binds a file range to the first mapping that touches it
 * (perf_addr_filter_match), and the read-only mapping before the code
 * ends exactly where the code starts: a filter at the code's file offset
 * would be bound there with size 0, which pt_event_addr_filters_sync
 * turns into "everything above".  The filter must land on the code. */
TEST(filter_binds_to_the_code_mapping_not_the_one_before_it)
{
	struct env e;
	struct kd_event *pt;
	uint64_t code0, code1, a, b;

	CHECK(own_code(&code0, &code1));
	CHECK_EQ(env_init_filter(&e, 0, "test_intel_pt_backend"), 0);
	e.f.real_tasks = 1; /* the double reads this process's maps */
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	pt = kd_find(&e.f, KD_PT, e.t->tid);
	CHECK(pt && pt->nfilters == 1);
	kd_filter_msrs(pt, 0, &a, &b);
	CHECK(a >= code0 && a <= code0 + 1);
	CHECK_EQ(b, code1 - 1);
	env_fini(&e);
}

TEST(timer_resolution_refused_where_the_cpu_lacks_it)
{
	struct env e;

	memset(&e, 0, sizeof(e));
	kd_init(&e.f);
	kd_sysfs_broadwell(&e.f);
	e.o.timer_resolution = "high";
	e.o.on_snapshot = on_snapshot;
	e.o.ctx = &e.snaps;
	e.s.o = &e.o;
	e.s.res = &e.res;
	e.s.be = &rec_backend_intel_pt;
	CHECK_EQ(iptb_open(&e.s, &e.f.ops), PS_ERR_UNSUPPORTED);
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED), "caps/"));
	e.s.be->fini(&e.s);
	kd_fini(&e.f);
}

static int count_snap(void *ctx, const struct rec_snapshot *snap)
{
	size_t *bytes = ctx;

	for (size_t i = 0; i < snap->in.npts; i++)
		*bytes += snap->in.pts[i].len;
	return 0;
}

TEST(real_hardware_run_records_pt)
{
	struct rec_options o;
	struct rec_result res;
	char *argv[] = {"/bin/true", NULL};
	size_t bytes = 0;

	if (access("/sys/bus/event_source/devices/intel_pt", F_OK))
		SKIP("no intel_pt PMU");
	memset(&o, 0, sizeof(o));
	o.backend = "intel-pt";
	o.on_snapshot = count_snap;
	o.ctx = &bytes;
	CHECK_EQ(rec_run(&o, argv, &res), 0);
	CHECK(res.exited && res.exit_code == 0);
	CHECK(bytes > 0);
}

/* Real Intel PT (an LLDB recording of a.out's main on a Broadwell) through
 * the backend's AUX area and snapshot, with the recording facts the
 * backend writes (clock conversion, MTC and nominal frequencies), decodes
 * with the existing decoder: main's span, no decode error.  (This stream
 * holds no TSC packet, so its times say nothing about the conversion;
 * clock_tsc_to_monotonic in test_intel_pt.c checks that.) */
TEST(backend_snapshot_of_real_pt_decodes)
{
	struct env e;
	struct rec_info info;
	struct rec_module mod;
	struct rec_thread th = {1234, 3842849, "a.out"};
	struct rec_pt pt;
	struct recording in;
	struct replay_stats st;
	struct ts_recorder rec;
	uint8_t *bytes;
	size_t len;
	int mains = 0;

	bytes =
	    ts_read_file(ts_realpt("lldb-single-thread/3842849.trace"), &len);
	if (!bytes)
		SKIP("no shared/testdata/real-pt");
	CHECK_EQ(env_init(&e, 0), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	kd_task_run(&e.f, e.t->tid, bytes, len);
	CHECK_EQ(rec_snapshot_final(&e.s), 0);
	CHECK_EQ(e.snaps.len[0], len);
	CHECK(!memcmp(e.snaps.pt[0], bytes, len));
	/* the snapshot's facts, as the recording file holds them */
	info = e.snaps.info;
	info.hostname = info.kernel = info.reason = NULL;
	info.argc = 0;
	info.cpu_vendor = REC_CPU_INTEL;
	info.cpu_family = 6;
	info.cpu_model = 79;
	memset(&mod, 0, sizeof(mod));
	mod.pid = 1234;
	mod.start = 0x400000;
	mod.end = 0x401000;
	mod.prot = PROT_READ | PROT_EXEC;
	mod.path = ts_realpt("lldb-single-thread/a.out");
	memset(&pt, 0, sizeof(pt));
	pt.pid = 1234;
	pt.tid = 3842849;
	pt.cpu = -1;
	pt.data = e.snaps.pt[0];
	pt.len = e.snaps.len[0];
	memset(&in, 0, sizeof(in));
	in.info = &info;
	in.mods = &mod;
	in.nmods = 1;
	in.threads = &th;
	in.nthreads = 1;
	in.pts = &pt;
	in.npts = 1;
	ts_rec_init(&rec);
	CHECK_EQ(replay_input(&in, &rec.base, NULL, &st), 0);
	CHECK_EQ(st.decode_errors, 0);
	for (size_t i = 0; ts_rec_event(&rec, i); i++) {
		const struct ps_event *ev = ts_rec_event(&rec, i);

		if (ev->type != PS_EV_BEGIN || !ev->name ||
		    strcmp(ev->name, "main"))
			continue;
		mains++;
	}
	CHECK_EQ(mains, 1);
	ts_rec_free(&rec);
	free(bytes);
	env_fini(&e);
}

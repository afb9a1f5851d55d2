/* SPDX-License-Identifier: MIT */
/* The intel-pt backend's engine (intel_pt.c) with the double of the
 * kernel (tests/kernel/kdouble.h): thread start (the event's attributes,
 * the read-only AUX mapping, breakpoints in the PT group with aux_pause),
 * a trigger wake-up, the snapshot sequence disable → copy → enable, the
 * user-space stop on kernels without aux_pause, a breakpoint address the
 * kernel refuses, --multi-snapshot, thread exit, a crash, the recording's
 * clock conversion (paired again at each snapshot), and the error
 * sentences.  Sideband and filters: test_intel_pt_sideband.c.  A last
 * test records for real where the machine has an intel_pt PMU. */
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
#include "tests/harness.h"
#include "tests/support.h"
#include "tests/unit/iptb_env.h"

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

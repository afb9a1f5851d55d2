/* SPDX-License-Identifier: MIT */
/* The intel-pt engine with the kernel double (tests/kernel/): what comes
 * from the kernel beside the trace — sideband records (names, lost-data
 * flags, LOST), a flood of the kernel's AUX records that must not drown a
 * dlopen'ed library's MMAP2 — and the address filter as the kernel binds
 * it. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/record/triggers/kinds.h"
#include "tests/harness.h"
#include "tests/support.h"
#include "tests/unit/iptb_env.h"

static const struct rec_trigger_kind *const kinds[] = {&rec_trigger_latency,
						       &rec_trigger_breakpoint};

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
TEST(filter_goes_to_the_kernel_before_enable)
{
	struct env e;
	char want[300];

	/* this test program's own file, by base name */
	CHECK_EQ(env_init_filter(&e, 0, "test_intel_pt_sideband"), 0);
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	find_fds(&e);
	snprintf(want, sizeof(want), "filter %d filter 0x", e.pt_fd);
	CHECK(strstr(e.f.log, want));
	CHECK(strstr(ev(&e, e.pt_fd)->filter_text, "/test_intel_pt_sideband"));
	CHECK(strstr(e.f.log, "test_intel_pt_sideband -> 0\nopen bp"));
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
	CHECK_EQ(env_init_filter(&e, 0, "test_intel_pt_sideband"), 0);
	e.f.real_tasks = 1; /* the double reads this process's maps */
	CHECK_EQ(iptb_thread_start(&e.s, e.t), 0);
	pt = kd_find(&e.f, KD_PT, e.t->tid);
	CHECK(pt && pt->nfilters == 1);
	kd_filter_msrs(pt, 0, &a, &b);
	CHECK(a >= code0 && a <= code0 + 1);
	CHECK_EQ(b, code1 - 1);
	env_fini(&e);
}

/* SPDX-License-Identifier: MIT */
/* The kernel double (tests/kernel/) against the kernel rules it models,
 * one test per rule, each naming the kernel function it comes from: if a
 * test here changes, the double no longer says what Linux does. */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/kernel/kdouble.h"

#define TID 4242
#define PAGE 4096

static void pt_attr(struct kd *k, struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = (uint32_t)kd_pmu_type(k);
	a->config = config;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

static void bp_attr(struct perf_event_attr *a, uint64_t addr)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_BREAKPOINT;
	a->bp_type = HW_BREAKPOINT_X;
	a->bp_addr = addr;
	a->bp_len = sizeof(long);
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a->exclude_kernel = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->wakeup_events = 1;
}

static int open_pt(struct kd *k, pid_t tid, uint64_t config)
{
	struct perf_event_attr a;

	pt_attr(k, &a, config);
	return k->ops.open(k, &a, tid, -1, -1, 0);
}

/* Data ring of @data pages and an overwrite AUX area of @aux pages. */
static int map(struct kd *k, int fd, uint64_t data, uint64_t aux)
{
	struct perf_event_mmap_page *m;
	int err = 0;

	m = k->ops.mmap(k, fd, (data + 1) * PAGE, PROT_READ | PROT_WRITE, 0,
			&err);
	if (!m)
		return err;
	m->aux_offset = (data + 1) * PAGE;
	m->aux_size = aux * PAGE;
	if (!k->ops.mmap(k, fd, aux * PAGE, PROT_READ,
			 (off_t)((data + 1) * PAGE), &err))
		return err;
	return 0;
}

/* Records in @e's ring of @type, consumed. */
static int count_records(struct kd_event *e, uint32_t type, uint64_t last[3])
{
	uint8_t *d = (uint8_t *)e->meta + PAGE;
	uint64_t tail = e->meta->data_tail;
	int n = 0;

	while (tail < e->meta->data_head) {
		struct perf_event_header h;

		memcpy(&h, d + (tail & (e->data_size - 1)), sizeof(h));
		if (h.type == type) {
			n++;
			if (last)
				memcpy(last,
				       d + ((tail + 8) & (e->data_size - 1)),
				       24);
		}
		tail += h.size;
	}
	e->meta->data_tail = tail;
	return n;
}

TEST(pmu_type_is_what_the_fake_sysfs_says)
{
	struct kd k;

	kd_init(&k);
	/* perf_init_event: no PMU claims another type → ENOENT */
	kd_sysfs_set(&k, "type", "42\n");
	{
		struct perf_event_attr a;

		pt_attr(&k, &a, 0x2401);
		a.type = 8;
		CHECK_EQ(k.ops.open(&k, &a, TID, -1, -1, 0), -ENOENT);
	}
	CHECK(open_pt(&k, TID, 0x2401) >= KD_FD0);
	kd_fini(&k);
}

TEST(pt_event_valid_checks_the_config_against_the_caps)
{
	struct kd k;

	kd_init(&k);
	/* mtc_periods 0x249: period 3 yes, 1 no */
	CHECK(open_pt(&k, TID, 0x2601 | 3 << 14) >= 0);
	CHECK_EQ(open_pt(&k, TID + 1, 0x2601 | 1 << 14), -EINVAL);
	/* cycle_thresholds 0x3fff: 14 is not in it */
	CHECK_EQ(open_pt(&k, TID + 2, 0x2403 | 14ull << 19), -EINVAL);
	/* BranchEn without the pass-through bit 0 */
	CHECK_EQ(open_pt(&k, TID + 3, 0x2400), -EINVAL);
	/* a bit outside PT_CONFIG_MASK */
	CHECK_EQ(open_pt(&k, TID + 4, 0x2401 | 1 << 3), -EINVAL);
	kd_fini(&k);
	/* Broadwell: no MTC at all, no psb_cyc for PSB periods */
	kd_init(&k);
	kd_sysfs_broadwell(&k);
	CHECK_EQ(open_pt(&k, TID, 0x2601 | 3 << 14), -EINVAL);
	CHECK_EQ(open_pt(&k, TID, 0x2401 | 1 << 24), -EINVAL);
	CHECK(open_pt(&k, TID, 0x2401) >= 0);
	kd_fini(&k);
}

TEST(one_pt_event_per_task_else_ebusy)
{
	struct kd k;
	int fd;

	kd_init(&k);
	/* exclusive_event_installable: intel_pt is PERF_PMU_CAP_EXCLUSIVE */
	fd = open_pt(&k, TID, 0x2401);
	CHECK(fd >= 0);
	CHECK_EQ(open_pt(&k, TID, 0x2401), -EBUSY);
	CHECK(open_pt(&k, TID + 1, 0x2401) >= 0);
	k.ops.close(&k, fd);
	CHECK(open_pt(&k, TID, 0x2401) >= 0);
	/* pt_event_init: x86_add_exclusive fails while LBR/BTS are used */
	k.lbr_in_use = 1;
	CHECK_EQ(open_pt(&k, TID + 2, 0x2401), -EBUSY);
	kd_fini(&k);
}

TEST(events_stay_with_the_task_through_exec_from_a_thread)
{
	struct kd k;

	kd_init(&k);
	/* a process 500 with threads 500 and 501, each with a PT event */
	CHECK(open_pt(&k, 500, 0x2401) >= 0);
	kd_task_get(&k, 501)->pid = 500;
	CHECK(open_pt(&k, 501, 0x2401) >= 0);
	/* 501 execs: de_thread kills 500, 501 becomes 500 and keeps its
	 * event, so a new one on tid 500 is refused */
	kd_task_exec(&k, 500, 501, "new");
	CHECK_EQ(open_pt(&k, 501, 0x2401), -ESRCH);
	CHECK_EQ(open_pt(&k, 500, 0x2401), -EBUSY);
	CHECK(strstr(k.log, "task 500 exits\ntask 501 execs as 500"));
	kd_fini(&k);
}

TEST(groups_need_the_same_task_clock_and_a_leader)
{
	struct kd k;
	struct perf_event_attr a;
	int pt, bp;

	kd_init(&k);
	pt = open_pt(&k, TID, 0x2401);
	bp_attr(&a, 0x401000);
	/* perf_event_open's group checks */
	CHECK_EQ(k.ops.open(&k, &a, TID + 1, -1, pt, 0), -EINVAL);
	a.clockid = CLOCK_REALTIME;
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, pt, 0), -EINVAL);
	a.clockid = CLOCK_MONOTONIC;
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, 77, 0), -EBADF);
	bp = k.ops.open(&k, &a, TID, -1, pt, 0);
	CHECK(bp >= 0);
	/* a sibling is no leader */
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, bp, 0), -EINVAL);
	/* perf_mmap: an inherited per-task event has no ring */
	pt_attr(&k, &a, 0x2401);
	a.inherit = 1;
	{
		int fd = k.ops.open(&k, &a, TID + 2, -1, -1, 0), err = 0;

		CHECK(fd >= 0);
		CHECK(!k.ops.mmap(&k, fd, 2 * PAGE, PROT_READ | PROT_WRITE, 0,
				  &err));
		CHECK_EQ(err, -EINVAL);
	}
	kd_fini(&k);
}

TEST(aux_action_is_6_13_and_needs_a_pt_leader)
{
	struct kd k;
	struct perf_event_attr a;
	int pt;

	kd_init(&k);
	pt = open_pt(&k, TID, 0x2401);
	bp_attr(&a, 0x401000);
	ptk_attr_set_aux_action(&a, PTK_AUX_PAUSE);
	/* 6.12: perf_copy_attr refuses __reserved_3 */
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, pt, 0), -EINVAL);
	k.kernel_minor = 13;
	/* perf_get_aux_event: no AUX leader */
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, -1, 0), -EINVAL);
	CHECK(k.ops.open(&k, &a, TID, -1, pt, 0) >= 0);
	/* perf_event_alloc: pause and resume together */
	ptk_attr_set_aux_action(&a, PTK_AUX_PAUSE | PTK_AUX_RESUME);
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, pt, 0), -EINVAL);
	kd_fini(&k);
}

TEST(breakpoints_refuse_kernel_addresses_and_a_fifth_one)
{
	struct kd k;
	struct perf_event_attr a;

	kd_init(&k);
	/* hw_breakpoint_parse: kernel space with exclude_kernel */
	bp_attr(&a, 0x7ffffffff000ull);
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, -1, 0), -EINVAL);
	bp_attr(&a, 0x401000);
	a.bp_len = 1;
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, -1, 0), -EINVAL);
	/* reserve_bp_slot: four debug registers per task */
	for (int i = 0; i < 4; i++) {
		bp_attr(&a, 0x401000 + 16 * (uint64_t)i);
		CHECK(k.ops.open(&k, &a, TID, -1, -1, 0) >= 0);
	}
	CHECK_EQ(k.ops.open(&k, &a, TID, -1, -1, 0), -ENOSPC);
	kd_fini(&k);
}

TEST(mmap_wants_powers_of_two_and_the_aux_offset)
{
	struct kd k;
	int fd, err = 0;
	struct perf_event_mmap_page *m;

	kd_init(&k);
	fd = open_pt(&k, TID, 0x2401);
	/* perf_mmap: data pages a power of two; AUX after the data ring */
	CHECK(!k.ops.mmap(&k, fd, 4 * PAGE, PROT_READ | PROT_WRITE, 0, &err));
	CHECK_EQ(err, -EINVAL);
	CHECK(!k.ops.mmap(&k, fd, 4 * PAGE, PROT_READ, 3 * PAGE, &err));
	CHECK_EQ(err, -EINVAL);
	m = k.ops.mmap(&k, fd, 3 * PAGE, PROT_READ | PROT_WRITE, 0, &err);
	CHECK(m != NULL);
	m->aux_offset = 2 * PAGE; /* inside the data ring */
	m->aux_size = 4 * PAGE;
	CHECK(!k.ops.mmap(&k, fd, 4 * PAGE, PROT_READ, 2 * PAGE, &err));
	CHECK_EQ(err, -EINVAL);
	m->aux_offset = 3 * PAGE;
	m->aux_size = 3 * PAGE; /* not a power of two */
	CHECK(!k.ops.mmap(&k, fd, 3 * PAGE, PROT_READ, 3 * PAGE, &err));
	CHECK_EQ(err, -EINVAL);
	m->aux_size = 4 * PAGE;
	CHECK(!k.ops.mmap(&k, fd, 4 * PAGE, PROT_READ, 4 * PAGE, &err));
	CHECK_EQ(err, -EINVAL); /* not at aux_offset */
	CHECK(k.ops.mmap(&k, fd, 4 * PAGE, PROT_READ, 3 * PAGE, &err));
	CHECK(kd_event(&k, fd)->aux_overwrite);
	kd_fini(&k);
}

TEST(locked_memory_is_mlock_kb_per_cpu_then_rlimit_memlock)
{
	struct kd k;
	int a, b;

	kd_init(&k);
	/* 516 KiB × 4 CPUs = 516 pages for the user, then RLIMIT_MEMLOCK
	 * (8 MiB = 2048 pages) of the mapping process */
	a = open_pt(&k, TID, 0x2401);
	CHECK_EQ(map(&k, a, 1, 512), 0);
	CHECK_EQ(k.user_locked, 514);
	CHECK_EQ(k.pinned_vm, 0);
	b = open_pt(&k, TID + 1, 0x2401);
	CHECK_EQ(map(&k, b, 1, 4096), -EPERM); /* its data ring fitted */
	CHECK_EQ(k.user_locked, 516);
	CHECK_EQ(map(&k, open_pt(&k, TID + 2, 0x2401), 1, 1024), 0);
	CHECK_EQ(k.user_locked, 516);
	CHECK_EQ(k.pinned_vm, 2 + 1024);
	/* CAP_IPC_LOCK is not limited */
	k.cap_ipc_lock = 1;
	CHECK_EQ(map(&k, b, 1, 4096), 0);
	/* perf_mmap_close gives it back */
	kd_fini(&k);
	CHECK_EQ(k.user_locked + k.pinned_vm, 0);
}

TEST(aux_head_moves_only_at_sched_out_with_one_aux_record)
{
	struct kd k;
	struct kd_event *e;
	uint8_t bytes[10000];
	uint64_t last[3];
	int fd;

	kd_init(&k);
	memset(bytes, 0x5a, sizeof(bytes));
	fd = open_pt(&k, TID, 0x2401);
	CHECK_EQ(map(&k, fd, 1, 2), 0);
	e = kd_event(&k, fd);
	CHECK_EQ(k.ops.ioctl(&k, fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	kd_task_run(&k, TID, bytes, 10000);
	/* the hardware wrote, but nothing is published while it runs */
	CHECK_EQ(e->meta->aux_head, 0);
	CHECK_EQ(count_records(e, PERF_RECORD_AUX, NULL), 0);
	/* pt_event_stop + perf_aux_output_end: the write offset and the
	 * buffer's size, OVERWRITE */
	kd_task_sched_out(&k, TID);
	CHECK_EQ(e->meta->aux_head, 10000 % 8192);
	CHECK_EQ(count_records(e, PERF_RECORD_AUX, last), 1);
	CHECK_EQ(last[0], 10000 % 8192);
	CHECK_EQ(last[1], 8192);
	CHECK_EQ(last[2], PERF_AUX_FLAG_OVERWRITE);
	/* one per sched-out, even with nothing new */
	kd_task_sched_out(&k, TID);
	kd_task_sched_out(&k, TID);
	CHECK_EQ(count_records(e, PERF_RECORD_AUX, NULL), 2);
	/* PERF_EVENT_IOC_DISABLE publishes too (event_sched_out) */
	kd_task_run(&k, TID, bytes, 100);
	CHECK_EQ(k.ops.ioctl(&k, fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	CHECK_EQ(e->meta->aux_head, 10100 % 8192);
	/* disabled: the hardware writes nothing */
	kd_task_run(&k, TID, bytes, 100);
	CHECK_EQ(e->hw_written, 10100);
	kd_fini(&k);
}

TEST(a_full_data_ring_loses_records_and_says_how_many)
{
	struct kd k;
	struct kd_event *e;
	uint64_t last[3];
	int fd, aux;

	kd_init(&k);
	fd = open_pt(&k, TID, 0x2401);
	CHECK_EQ(map(&k, fd, 1, 2), 0);
	e = kd_event(&k, fd);
	k.ops.ioctl(&k, fd, PERF_EVENT_IOC_ENABLE, 0);
	/* a 32-byte ITRACE_START, then 48-byte AUX records: 84 fit in the
	 * 4095 bytes CIRC_SPACE allows */
	for (int i = 0; i < 100; i++)
		kd_task_sched_out(&k, TID);
	CHECK_EQ(e->lost, 16);
	aux = count_records(e, PERF_RECORD_AUX, NULL);
	CHECK_EQ(aux, 84);
	kd_task_sched_out(&k, TID);
	CHECK_EQ(count_records(e, PERF_RECORD_LOST, last), 1);
	CHECK_EQ(last[1], 16);
	kd_fini(&k);
}

TEST(exited_tasks_events_poll_hup)
{
	struct kd k;
	struct pollfd p;
	int fd;

	kd_init(&k);
	fd = open_pt(&k, TID, 0x2401);
	p = (struct pollfd){fd, POLLIN, 0};
	CHECK_EQ(k.ops.poll(&k, &p, 1, 0), 0);
	kd_task_exit(&k, TID);
	CHECK_EQ(k.ops.poll(&k, &p, 1, 0), 1);
	CHECK(p.revents & POLLHUP);
	CHECK_EQ(open_pt(&k, TID, 0x2401), -ESRCH);
	kd_fini(&k);
}

TEST(aux_pause_stops_the_trace_at_the_breakpoint)
{
	struct kd k;
	struct perf_event_attr a;
	uint8_t bytes[100];
	int pt, bp;

	kd_init(&k);
	k.kernel_minor = 13;
	memset(bytes, 1, sizeof(bytes));
	pt = open_pt(&k, TID, 0x2401);
	CHECK_EQ(map(&k, pt, 1, 2), 0);
	bp_attr(&a, 0x401000);
	ptk_attr_set_aux_action(&a, PTK_AUX_PAUSE);
	bp = k.ops.open(&k, &a, TID, -1, pt, 0);
	k.ops.ioctl(&k, pt, PERF_EVENT_IOC_ENABLE, 0);
	kd_task_run(&k, TID, bytes, 100);
	/* __perf_event_overflow: perf_event_aux_pause first */
	kd_bp_fire(&k, kd_event(&k, bp), 0);
	kd_task_run(&k, TID, bytes, 100);
	CHECK_EQ(kd_event(&k, pt)->hw_written, 100);
	kd_fini(&k);
}

TEST(itrace_start_once_per_event)
{
	struct kd k;
	int fd;

	kd_init(&k);
	fd = open_pt(&k, TID, 0x2401);
	CHECK_EQ(map(&k, fd, 1, 2), 0);
	k.ops.ioctl(&k, fd, PERF_EVENT_IOC_ENABLE, 0);
	kd_task_run(&k, TID, (const uint8_t *)"x", 1);
	kd_task_sched_out(&k, TID);
	kd_task_run(&k, TID, (const uint8_t *)"y", 1);
	CHECK_EQ(
	    count_records(kd_event(&k, fd), PERF_RECORD_ITRACE_START, NULL), 1);
	kd_fini(&k);
}

TEST(filter_text_is_parsed_as_the_kernel_does)
{
	struct kd k;
	int fd;

	kd_init(&k);
	fd = open_pt(&k, TID, 0x2401);
#define SET(t)                                                                 \
	k.ops.ioctl(&k, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)(t))
	/* perf_event_parse_addr_filter: actions filter, start, stop */
	CHECK_EQ(SET("tracestop 0x1000/0x10@/bin/true"), -EINVAL);
	CHECK_EQ(SET("filter 0x1000/0x10"), -EINVAL); /* kernel range */
	CHECK_EQ(SET("filter 0x1000/0@/bin/true"), -EINVAL);
	CHECK_EQ(SET("filter 0x1000/0x10@/no/such/file"), -ENOENT);
	CHECK_EQ(SET("filter"), -EINVAL);
	/* pt_event_addr_filters_validate: no start, two ranges here */
	CHECK_EQ(SET("start 0x1000/0x10@/bin/true"), -EOPNOTSUPP);
	CHECK_EQ(
	    SET("filter 0x1000/0x10@/bin/true filter 0x2000/0x10@/bin/true "
		"stop 0x3000/0x10@/bin/true"),
	    -EOPNOTSUPP);
	/* spaces, commas and newlines all separate */
	CHECK_EQ(
	    SET("filter 0x1000/0x10@/bin/true,stop\n0x2000/0x10@/bin/true"), 0);
	CHECK_EQ(kd_event(&k, fd)->nfilters, 2);
#undef SET
	kd_fini(&k);
	/* Broadwell: no address ranges, no filters */
	kd_init(&k);
	kd_sysfs_broadwell(&k);
	fd = open_pt(&k, TID, 0x2401);
	CHECK_EQ(k.ops.ioctl(&k, fd, PERF_EVENT_IOC_SET_FILTER,
			     (unsigned long)"filter 0x1000/0x10@/bin/true"),
		 -EINVAL);
	kd_fini(&k);
}

TEST(a_file_range_binds_to_the_first_mapping_that_touches_it)
{
	struct kd k;
	struct kd_event *e;
	uint64_t a, b;
	int fd;

	kd_init(&k);
	/* today's layout: r-- at file offset 0, r-x right after it */
	kd_task_mmap(&k, TID, 0x555555554000ull, 0x1000, 0, PROT_READ,
		     "/bin/true");
	kd_task_mmap(&k, TID, 0x555555555000ull, 0x3000, 0x1000,
		     PROT_READ | PROT_EXEC, "/bin/true");
	fd = open_pt(&k, TID, 0x2401);
	e = kd_event(&k, fd);
	/* perf_addr_filter_match: the r-- mapping ends at 0x1000, which
	 * touches the range, so perf_addr_filter_vma_adjust binds it there
	 * with size 0, and pt_event_addr_filters_sync wraps that to the top */
	CHECK_EQ(k.ops.ioctl(&k, fd, PERF_EVENT_IOC_SET_FILTER,
			     (unsigned long)"filter 0x1000/0x3000@/bin/true"),
		 0);
	kd_filter_msrs(e, 0, &a, &b);
	CHECK_EQ(a, 0x555555555000ull);
	CHECK_EQ(b, UINT64_MAX);
	/* one byte in: only the r-x mapping touches it */
	CHECK_EQ(k.ops.ioctl(&k, fd, PERF_EVENT_IOC_SET_FILTER,
			     (unsigned long)"filter 0x1001/0x2fff@/bin/true"),
		 0);
	kd_filter_msrs(e, 0, &a, &b);
	CHECK_EQ(a, 0x555555555001ull);
	CHECK_EQ(b, 0x555555557fffull);
	/* at exec the file ranges are forgotten (perf_event_addr_filters_
	 * exec); a later executable mapping binds them again
	 * (perf_addr_filters_adjust), a data mapping does not */
	kd_task_exec(&k, TID, TID, "true");
	kd_filter_msrs(e, 0, &a, &b);
	CHECK(a == 0 && b == 0);
	kd_task_mmap(&k, TID, 0x600000000000ull, 0x1000, 0, PROT_READ,
		     "/bin/true");
	kd_filter_msrs(e, 0, &a, &b);
	CHECK(a == 0 && b == 0);
	kd_task_mmap(&k, TID, 0x600000001000ull, 0x3000, 0x1000,
		     PROT_READ | PROT_EXEC, "/bin/true");
	kd_filter_msrs(e, 0, &a, &b);
	CHECK_EQ(a, 0x600000001001ull);
	kd_fini(&k);
}

TEST(the_clock_page_is_not_slewed_but_clock_monotonic_is)
{
	struct kd k;
	uint32_t mult;
	uint16_t shift;
	uint64_t tsc, mono, conv;

	kd_init(&k);
	k.mono_ppm = 20;
	kd_time_conv(&k, &mult, &shift);
	kd_clock_advance(&k, 600ull * 1000000000ull);
	tsc = kd_tsc(&k);
	mono = kd_mono(&k);
	conv = (uint64_t)(((unsigned __int128)tsc * mult) >> shift);
	/* ten minutes at 20 ppm: 12 ms apart */
	CHECK(mono - conv > 11900000 && mono - conv < 12100000);
	kd_fini(&k);
}

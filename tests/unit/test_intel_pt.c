/* SPDX-License-Identifier: MIT */
/* The intel-pt backend's pieces on data: PMU discovery from fake sysfs
 * trees holding what real Skylake and Broadwell machines publish
 * (pt_pmu.c), config encoding per --timer-resolution, --filter text
 * (pt_filter.c), AUX snapshot extraction on real PT bytes (aux_ring.c),
 * sideband parsing of hand-built records (sideband.c), and the TSC
 * conversion (pt_clock.c). */
#include <elf.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <asm/perf_regs.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/aux_ring.h"
#include "src/record/intel-pt/kcore.h"
#include "src/record/intel-pt/pt_clock.h"
#include "src/record/intel-pt/pt_filter.h"
#include "src/record/intel-pt/pt_pmu.h"
#include "src/record/intel-pt/pt_thread.h"
#include "src/record/intel-pt/sideband.h"
#include "tests/harness.h"
#include "tests/support.h"
#include "tests/kernel/kdouble.h"

static const struct ptpmu_cpu intel_cpu = {1, 0, 1};

TEST(pmu_skylake_fields_and_caps_come_from_sysfs)
{
	struct kd f;
	struct ptpmu p;

	kd_init(&f);
	POISON(p);
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(p.type, 8);
	CHECK(p.pt.present && p.pt.shift == 0 && p.pt.bits == 1);
	CHECK(p.mtc_period.present && p.mtc_period.shift == 14 &&
	      p.mtc_period.bits == 4 && p.mtc_period.word == 0);
	CHECK(p.cyc_thresh.shift == 19 && p.cyc_thresh.bits == 4);
	CHECK(p.psb_period.shift == 24 && p.psb_period.bits == 4);
	CHECK_EQ(p.tsc.shift, 10);
	CHECK_EQ(p.branch.shift, 13);
	CHECK_EQ(p.mtc_periods, 0x249);
	CHECK_EQ(p.cycle_thresholds, 0x3fff);
	CHECK_EQ(p.psb_periods, 0x3f);
	CHECK_EQ(p.cap_num_address_ranges, 2);
	CHECK_EQ(p.cap_ip_filtering, 1);
	CHECK_EQ(p.max_nonturbo_ratio, 34);
	kd_fini(&f);
}

TEST(pmu_moved_fields_are_followed)
{
	struct kd f;
	struct ptpmu p;
	struct ptpmu_config c;

	/* A kernel that put the fields elsewhere (and a new type number):
	 * nothing may be assumed. */
	kd_init(&f);
	kd_sysfs_set(&f, "type", "42\n");
	kd_sysfs_set(&f, "format/tsc", "config1:3\n");
	kd_sysfs_set(&f, "format/mtc_period", "config2:40-43\n");
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(p.type, 42);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_NORMAL, &c), 0);
	CHECK_EQ(c.cfg[1], 1ull << 3);
	CHECK_EQ(c.cfg[2], 3ull << 40);
	CHECK_EQ(c.cfg[0] & (1ull << 10), 0);
	kd_fini(&f);
}

TEST(pmu_format_parse)
{
	struct ptpmu_field fl;

	CHECK_EQ(ptpmu_parse_format("config:14-17\n", &fl), 0);
	CHECK(fl.shift == 14 && fl.bits == 4 && fl.word == 0);
	CHECK_EQ(ptpmu_parse_format("config2:0-63", &fl), 0);
	CHECK(fl.word == 2 && fl.bits == 64);
	CHECK_EQ(ptpmu_parse_format("config:17-14", &fl), PS_ERR_FORMAT);
	CHECK_EQ(ptpmu_parse_format("config3:1", &fl), PS_ERR_FORMAT);
	CHECK_EQ(ptpmu_parse_format("config:64", &fl), PS_ERR_FORMAT);
	CHECK_EQ(ptpmu_parse_format("config:1x", &fl), PS_ERR_FORMAT);
	CHECK_EQ(
	    ptpmu_set(&(struct ptpmu_field){1, 0, 14, 4}, 16, (uint64_t[3]){0}),
	    PS_ERR_INVAL);
}

TEST(pmu_bad_sysfs_file_is_named)
{
	struct kd f;
	struct ptpmu p;

	kd_init(&f);
	kd_sysfs_set(&f, "format/mtc", "bogus\n");
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(PS_ERR_FORMAT), "format/mtc"));
	kd_fini(&f);
}

TEST(pmu_missing_says_why_and_what_to_do)
{
	struct kd f;
	struct ptpmu p;
	const struct ptpmu_cpu amd = {0, 0, 0}, vm = {1, 1, 0}, old = {1, 0, 0},
			       nokernel = {1, 0, 1};

	kd_init(&f);
	f.ops.pmu_root = "/nonexistent/devices";
	CHECK_EQ(ptpmu_discover(&f.ops, &vm, &p), PS_ERR_NO_HW);
	CHECK(strstr(ps_err_message(PS_ERR_NO_HW), "virtual machine"));
	CHECK(strstr(ps_err_message(PS_ERR_NO_HW), "pass it through"));
	CHECK(strstr(ps_err_message(PS_ERR_NO_HW), "--backend=emulated"));
	CHECK(strstr(ptpmu_missing_reason(&amd), "not an Intel CPU"));
	CHECK(!strncmp(ptpmu_missing_reason(&amd),
		       "intel_pt PMU not found: ", 24));
	CHECK(strstr(ptpmu_missing_reason(&old), "no Intel PT"));
	CHECK(strstr(ptpmu_missing_reason(&nokernel), "kernel"));
	kd_fini(&f);
}

TEST(config_skylake_per_timer_resolution)
{
	struct kd f;
	struct ptpmu p;
	struct ptpmu_config c;

	kd_init(&f);
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	/* normal: pt, branch, tsc, mtc with period 3, psb_period 0 (2K) */
	POISON(c);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_DEFAULT, &c), 0);
	CHECK_EQ(c.cfg[0], 0xe601);
	CHECK(c.note == NULL);
	CHECK(c.timer == PTPMU_TIMER_NORMAL && c.mtc_period == 3);
	/* low: no MTC */
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_LOW, &c), 0);
	CHECK_EQ(c.cfg[0], 0x2401);
	kd_fini(&f);
}

/* --timer-resolution=high adds CYC packets (threshold 1) and keeps MTC at
 * perf's period 3 (intel_pt_default_config picks the allowed period
 * nearest 3 whatever else is asked): period 0 would write an MTC at every
 * crystal-clock tick, eight times as many, and the snapshot ring would
 * hold far less history.  The config is one the kernel takes. */
TEST(config_high_keeps_perfs_mtc_period)
{
	struct kd f;
	struct ptpmu p;
	struct ptpmu_config c;
	struct perf_event_attr a;

	kd_init(&f);
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_HIGH, &c), 0);
	CHECK(c.cyc && c.cyc_thresh == 1);
	CHECK_EQ(c.mtc_period, 3);
	CHECK_EQ(c.cfg[0], 0x8e603);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = p.type;
	a.config = c.cfg[0];
	a.exclude_kernel = 1;
	a.disabled = 1;
	CHECK(f.ops.open(&f, &a, 77, -1, -1, 0) >= KD_FD0);
	/* where 3 is not offered, the nearest allowed one */
	kd_sysfs_set(&f, "caps/mtc_periods", "41\n"); /* 0 and 6 */
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_HIGH, &c), 0);
	CHECK_EQ(c.mtc_period, 0);
	kd_fini(&f);
}

TEST(config_broadwell_refuses_what_it_lacks)
{
	struct kd f;
	struct ptpmu p;
	struct ptpmu_config c;

	kd_init(&f);
	kd_sysfs_broadwell(&f);
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_DEFAULT, &c), 0);
	CHECK(c.timer == PTPMU_TIMER_LOW && c.note);
	CHECK_EQ(c.cfg[0], 0x2401);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_NORMAL, &c), PS_ERR_UNSUPPORTED);
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED), "caps/mtc is 0"));
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED),
		     "--timer-resolution=low"));
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_HIGH, &c), PS_ERR_UNSUPPORTED);
	kd_fini(&f);
}

TEST(config_timer_names)
{
	enum ptpmu_timer t;

	CHECK_EQ(ptpmu_parse_timer("high", &t), 0);
	CHECK_EQ(t, PTPMU_TIMER_HIGH);
	CHECK_EQ(ptpmu_parse_timer("fast", &t), PS_ERR_INVAL);
	CHECK(strstr(ps_err_message(PS_ERR_INVAL), "low, normal or high"));
}

static struct mod_map maps[] = {
    {.start = 0x555555554000,
     .end = 0x555555556000,
     .offset = 0x1000,
     .prot = PROT_READ | PROT_EXEC,
     .dev_major = 8,
     .dev_minor = 1,
     .inode = 11,
     .path = "/home/u/prog"},
    {.start = 0x7ffff7dd0000,
     .end = 0x7ffff7f50000,
     .offset = 0x28000,
     .prot = PROT_READ | PROT_EXEC,
     .dev_major = 8,
     .dev_minor = 1,
     .inode = 12,
     .path = "/usr/lib/x86_64-linux-gnu/libc.so.6"},
    {.start = 0x7ffff7fc0000,
     .end = 0x7ffff7fc4000,
     .offset = 0x3000,
     .prot = PROT_READ | PROT_EXEC,
     .dev_major = 8,
     .dev_minor = 1,
     .inode = 13,
     .path = "/home/u/libfoo.so"},
};

/* The kernel's filter grammar is not perf's: perf_event_parse_addr_filter
 * knows filter, start and stop, splits on spaces as on commas, and
 * pt_event_addr_filters_validate refuses start and single addresses.  The
 * raw forms come out in the kernel's words, and the kernel double takes
 * them. */
TEST(filter_raw_forms_become_the_kernels_text)
{
	struct kd k;
	struct perf_event_attr a;
	char *s = NULL;
	int fd;

	kd_init(&k);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = 8;
	a.config = 0x2401;
	a.exclude_kernel = 1;
	fd = k.ops.open(&k, &a, 77, -1, -1, 0);
	/* perf's tracestop is the kernel's stop with a size */
	CHECK_EQ(ptf_build("tracestop 0x1000/0x10@/bin/true", NULL, 2, &s), 0);
	CHECK_STR(s, "stop 0x1000/0x10@/bin/true");
	CHECK_EQ(
	    k.ops.ioctl(&k, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)s),
	    0);
	free(s);
	/* ranges split by spaces count as ranges */
	CHECK_EQ(ptf_build("filter 0x1000/0x10@/bin/true filter "
			   "0x2000/0x10@/bin/true filter 0x3000/0x10@/bin/true",
			   NULL, 2, &s),
		 PS_ERR_LIMIT);
	CHECK(strstr(ps_err_message(PS_ERR_LIMIT), "needs 3 address ranges"));
	CHECK_EQ(ptf_build("0x1000/0x10@/bin/true 0x2000/0x10@/bin/true", NULL,
			   2, &s),
		 0);
	CHECK_STR(s,
		  "filter 0x1000/0x10@/bin/true,filter 0x2000/0x10@/bin/true");
	CHECK_EQ(
	    k.ops.ioctl(&k, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)s),
	    0);
	free(s);
	s = NULL;
	/* what Intel PT cannot do is refused here, with what to do */
	CHECK_EQ(ptf_build("start 0x1000@/bin/true", NULL, 2, &s),
		 PS_ERR_UNSUPPORTED);
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED), "'start'"));
	CHECK_EQ(ptf_build("stop 0x1000@/bin/true", NULL, 2, &s),
		 PS_ERR_UNSUPPORTED);
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED), "tracestop"));
	CHECK_EQ(ptf_build("filter 0x1000/0x10", NULL, 2, &s),
		 PS_ERR_UNSUPPORTED);
	CHECK_EQ(ptf_build("filter", NULL, 2, &s), PS_ERR_INVAL);
	CHECK(s == NULL);
	kd_fini(&k);
}

TEST(filter_by_file_name)
{
	struct mod_list l = {maps, 3};
	char *s;

	CHECK_EQ(ptf_build("libfoo.so", &l, 2, &s), 0);
	CHECK_STR(s, "filter 0x3000/0x4000@/home/u/libfoo.so");
	free(s);
	CHECK_EQ(ptf_build("libc", &l, 2, &s), 0);
	CHECK_STR(s, "filter 0x28000/0x180000@/usr/lib/x86_64-linux-gnu/"
		     "libc.so.6");
	free(s);
	CHECK_EQ(ptf_build("0x1000/0x200@/home/u/prog", &l, 2, &s), 0);
	CHECK_STR(s, "filter 0x1000/0x200@/home/u/prog");
	free(s);
	CHECK_EQ(ptf_build("filter 0x10/0x10@/x,filter 0x0/0x10@/x,filter "
			   "0x40/4@/x",
			   &l, 2, &s),
		 PS_ERR_LIMIT);
	/* with the read-only mapping before the code, which ends where
	 * the code starts: one byte in, so the kernel binds the code */
	{
		struct mod_map two[2] = {maps[0], maps[0]};
		struct mod_list l2 = {two, 2};

		two[0].start = 0x555555553000;
		two[0].end = 0x555555554000;
		two[0].offset = 0;
		two[0].prot = PROT_READ;
		CHECK_EQ(ptf_build("prog", &l2, 2, &s), 0);
		CHECK_STR(s, "filter 0x1001/0x1fff@/home/u/prog");
		free(s);
	}
	CHECK_EQ(ptf_build("libbar.so", &l, 2, &s), PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(PS_ERR_NOT_FOUND), "libfoo.so"));
	CHECK(s == NULL);
}

/* ---- AUX extraction on real PT bytes ---- */

/* Packets in @buf: sync at the first PSB and walk to the end.  Returns
 * the packet count, or -1 on a decode error before the end. */
static long walk_packets(const uint8_t *buf, size_t len)
{
	struct pt_config cfg;
	struct pt_packet_decoder *d;
	struct pt_packet pkt;
	long n = 0;
	int r;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return -1;
	r = pt_pkt_sync_forward(d);
	while (r >= 0) {
		r = pt_pkt_next(d, &pkt, sizeof(pkt));
		if (r >= 0)
			n++;
	}
	pt_pkt_free_decoder(d);
	return r == -pte_eos && n > 0 ? n : -1;
}

/* Feed @len bytes of @src through a ring of @size, as the hardware would,
 * then extract. */
static int through_ring(const uint8_t *src, size_t len, size_t size,
			uint8_t **out, size_t *olen)
{
	uint8_t *ring = calloc(1, size);
	uint64_t head = 0;
	int r;

	for (size_t i = 0; i < len; i++) {
		ring[head] = src[i];
		head = (head + 1) % size;
	}
	r = aux_extract(ring, size, head, aux_wrapped(ring, size, head, 0), out,
			olen);
	free(ring);
	return r;
}

/* Two real per-CPU PT streams (an LLDB recording on Intel hardware),
 * back to back: 8635 bytes with PSBs at 1081, 3001, 4913, 6426, 8338. */
static uint8_t *real_pt(size_t *len)
{
	size_t a, b;
	uint8_t *x =
	    ts_read_file(ts_realpt("lldb-per-cpu/cores/51.intelpt_trace"), &a);
	uint8_t *y =
	    ts_read_file(ts_realpt("lldb-per-cpu/cores/45.intelpt_trace"), &b);
	uint8_t *all = NULL;

	if (x && y && (all = malloc(a + b))) {
		memcpy(all, x, a);
		memcpy(all + a, y, b);
		*len = a + b;
	}
	free(x);
	free(y);
	return all;
}

TEST(aux_real_pt_empty_partial_wrapped_once_and_many_times)
{
	static const struct {
		size_t feed, size; /* bytes written, ring size */
	} cases[] = {
	    {2048 + 700, 2048}, /* wrapped once */
	    {8635, 4096},	/* wrapped twice */
	    {8635, 2048},	/* wrapped four times */
	    {8635, 1 << 14},	/* never filled */
	};
	size_t len, olen;
	uint8_t *pt = real_pt(&len), *out;

	if (!pt)
		SKIP("no shared/testdata/real-pt");
	CHECK_EQ(len, 8635);
	CHECK_EQ(through_ring(pt, 0, 4096, &out, &olen), PS_ERR_NOT_FOUND);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t feed = cases[i].feed, size = cases[i].size;
		size_t want = feed < size ? feed : size;

		CHECK_EQ(through_ring(pt, feed, size, &out, &olen), 0);
		/* the newest bytes, oldest first: cut mid-packet at the
		 * start, and they decode from their first PSB on */
		CHECK_EQ(olen, want);
		CHECK(!memcmp(out, pt + feed - want, want));
		CHECK(walk_packets(out, olen) > 0);
		free(out);
	}
	free(pt);
}

TEST(aux_wrap_detection)
{
	uint8_t ring[64] = {0};

	CHECK_EQ(aux_wrapped(ring, 64, 10, 0), 0);
	CHECK_EQ(aux_wrapped(ring, 64, 10, 64), 1); /* AUX records */
	CHECK_EQ(aux_wrapped(ring, 64, 70, 0), 1);  /* running head */
	ring[40] = 0x02;
	CHECK_EQ(aux_wrapped(ring, 64, 10, 0), 1); /* old bytes past head */
	CHECK_EQ(aux_wrapped(ring, 64, 41, 0), 0);
}

/* ---- sideband records built by hand ---- */

struct recb {
	uint8_t b[512];
	size_t n;
};

static void put(struct recb *r, const void *p, size_t n)
{
	memcpy(r->b + r->n, p, n);
	r->n += n;
}
static void put32(struct recb *r, uint32_t v)
{
	put(r, &v, 4);
}
static void put64(struct recb *r, uint64_t v)
{
	put(r, &v, 8);
}
static void begin(struct recb *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = {type, misc, 0};

	r->n = 0;
	put(r, &h, sizeof(h));
}
/* sample_id trailer (TID, TIME), pad, fix the size. */
static void end(struct recb *r, uint32_t pid, uint32_t tid, uint64_t time,
		int trailer)
{
	uint16_t size;

	while (r->n % 8)
		r->b[r->n++] = 0;
	if (trailer) {
		put32(r, pid);
		put32(r, tid);
		put64(r, time);
	}
	size = (uint16_t)r->n;
	memcpy(r->b + 6, &size, 2);
}

TEST(sideband_mmap2_with_build_id_comm_exit_switch_itrace_aux_lost)
{
	struct sb_record o;
	struct recb r;
	uint8_t id[20];

	for (int i = 0; i < 20; i++)
		id[i] = (uint8_t)(0xa0 + i);
	begin(&r, PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID);
	put32(&r, 7), put32(&r, 8);
	put64(&r, 0x400000), put64(&r, 0x2000), put64(&r, 0x1000);
	{
		uint8_t bid[24] = {20, 0, 0, 0};

		memcpy(bid + 4, id, 20);
		put(&r, bid, 24);
	}
	put32(&r, PROT_READ | PROT_EXEC), put32(&r, MAP_PRIVATE);
	put(&r, "/bin/prog", 10);
	end(&r, 7, 8, 12345, 1);
	POISON(o);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK_EQ(o.type, PERF_RECORD_MMAP2);
	CHECK_EQ(o.u.mmap2.addr, 0x400000);
	CHECK_EQ(o.u.mmap2.pgoff, 0x1000);
	CHECK_EQ(o.u.mmap2.build_id_len, 20);
	CHECK(!memcmp(o.u.mmap2.build_id, id, 20));
	CHECK_STR(o.u.mmap2.filename, "/bin/prog");
	CHECK(o.u.mmap2.prot & PROT_EXEC);
	CHECK(o.sid.has_time && o.sid.time == 12345 && o.sid.tid == 8);

	/* MMAP2 without build id: device and inode */
	begin(&r, PERF_RECORD_MMAP2, 0);
	put32(&r, 7), put32(&r, 7);
	put64(&r, 0x1000), put64(&r, 0x1000), put64(&r, 0);
	put32(&r, 8), put32(&r, 1), put64(&r, 99), put64(&r, 0);
	put32(&r, PROT_READ), put32(&r, 0);
	put(&r, "/lib/x.so", 10);
	end(&r, 7, 7, 1, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK_EQ(o.u.mmap2.build_id_len, 0);
	CHECK_EQ(o.u.mmap2.ino, 99);
	CHECK_STR(o.u.mmap2.filename, "/lib/x.so");

	begin(&r, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	put32(&r, 7), put32(&r, 9);
	put(&r, "worker", 7);
	end(&r, 7, 9, 2, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK_STR(o.u.comm.comm, "worker");
	CHECK(o.u.comm.exec && o.u.comm.tid == 9);

	begin(&r, PERF_RECORD_EXIT, 0);
	put32(&r, 7), put32(&r, 1), put32(&r, 9), put32(&r, 7);
	put64(&r, 555);
	end(&r, 7, 9, 555, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK(o.u.exit.tid == 9 && o.u.exit.ptid == 7 && o.u.exit.time == 555);

	begin(&r, PERF_RECORD_SWITCH,
	      PERF_RECORD_MISC_SWITCH_OUT |
		  PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	end(&r, 7, 9, 600, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK(o.u.sw.out && o.u.sw.preempt);

	begin(&r, PERF_RECORD_SWITCH_CPU_WIDE, 0);
	put32(&r, 11), put32(&r, 12);
	end(&r, 7, 9, 601, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK(!o.u.sw.out && o.u.sw.pid == 11 && o.u.sw.tid == 12);

	begin(&r, PERF_RECORD_ITRACE_START, 0);
	put32(&r, 7), put32(&r, 9);
	end(&r, 7, 9, 3, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK(o.u.itrace.pid == 7 && o.u.itrace.tid == 9);

	begin(&r, PERF_RECORD_AUX, 0);
	put64(&r, 4096), put64(&r, 8192);
	put64(&r, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_OVERWRITE |
		      PERF_AUX_FLAG_PARTIAL);
	end(&r, 7, 9, 4, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK(o.u.aux.offset == 4096 && o.u.aux.size == 8192);
	{
		char t[64];

		sb_aux_flags_text(o.u.aux.flags, t, sizeof(t));
		CHECK_STR(t, "truncated, overwrite, partial");
	}

	begin(&r, PERF_RECORD_LOST, 0);
	put64(&r, 1), put64(&r, 17);
	end(&r, 7, 9, 5, 1);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_pt_layout, &o), 0);
	CHECK_EQ(o.u.lost.lost, 17);

	/* cut short, and a size that disagrees */
	CHECK_EQ(sb_parse(r.b, 20, &ptt_pt_layout, &o), PS_ERR_FORMAT);
	r.b[6] = 16, r.b[7] = 0;
	CHECK_EQ(sb_parse(r.b, 16, &ptt_pt_layout, &o), PS_ERR_TRUNCATED);
}

TEST(sideband_breakpoint_sample)
{
	struct sb_record o;
	struct recb r;

	begin(&r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(&r, 0x401136);		    /* ip */
	put32(&r, 7), put32(&r, 9);	    /* pid, tid */
	put64(&r, 777);			    /* time */
	put64(&r, PERF_SAMPLE_REGS_ABI_64); /* abi */
	put64(&r, 0x7fff1234);		    /* rdi */
	end(&r, 0, 0, 0, 0);
	CHECK_EQ(sb_parse(r.b, r.n, &ptt_bp_layout, &o), 0);
	CHECK_EQ(o.u.sample.ip, 0x401136);
	CHECK(o.u.sample.has_rdi && o.u.sample.rdi == 0x7fff1234);
	CHECK(o.sid.tid == 9 && o.sid.time == 777);
}

struct collect {
	int n;
	uint64_t times[16];
};

static int collect_fn(void *ctx, const uint8_t *rec, size_t len)
{
	struct collect *c = ctx;
	struct sb_record o;

	if (sb_parse(rec, len, &ptt_pt_layout, &o) || c->n == 16)
		return PS_ERR_FORMAT;
	c->times[c->n++] = o.sid.time;
	return 0;
}

TEST(sideband_ring_records_straddle_the_end)
{
	size_t size = 256;
	uint8_t *map = aligned_alloc(4096, 8192); /* control page + ring */
	struct perf_event_mmap_page *meta = (void *)map;
	struct collect c = {0};
	struct recb r;

	memset(map, 0, 8192);
	/* Start near the end so the third record wraps. */
	meta->data_tail = meta->data_head = 200;
	for (int i = 0; i < 5; i++) {
		uint64_t h = meta->data_head;

		begin(&r, PERF_RECORD_ITRACE_START, 0);
		put32(&r, 1), put32(&r, 2);
		end(&r, 1, 2, 100 + (uint64_t)i, 1);
		for (size_t k = 0; k < r.n; k++)
			map[4096 + ((h + k) & (size - 1))] = r.b[k];
		meta->data_head = h + r.n;
	}
	CHECK_EQ(sb_ring_read(meta, map + 4096, size, collect_fn, &c), 5);
	CHECK_EQ(c.n, 5);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(c.times[i], 100 + i);
	CHECK_EQ(meta->data_tail, meta->data_head);
	CHECK_EQ(sb_ring_read(meta, map + 4096, size, collect_fn, &c), 0);
	/* a header whose size runs past the head */
	map[4096 + (meta->data_head & (size - 1)) + 6] = 200;
	map[4096 + (meta->data_head & (size - 1))] = 1;
	meta->data_head += 8;
	CHECK_EQ(sb_ring_read(meta, map + 4096, size, collect_fn, &c),
		 PS_ERR_FORMAT);
	free(map);
}

/* The tightest |ptclk_ns(tsc) - CLOCK_MONOTONIC| of a few reads. */
static uint64_t clock_error(struct kd *f, const struct ptclk *c)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		uint64_t m0 = f->ops.monotonic_ns(f);
		uint64_t ns = ptclk_ns(c, f->ops.rdtsc(f));
		uint64_t m1 = f->ops.monotonic_ns(f), mid = m0 + (m1 - m0) / 2;
		uint64_t err = (ns > mid ? ns - mid : mid - ns) + (m1 - m0) / 2;

		if (err < best)
			best = err;
	}
	return best;
}

TEST(clock_tsc_to_monotonic)
{
	struct kd f;
	struct perf_event_mmap_page pg;
	struct ptclk c;

	kd_init(&f);
	memset(&pg, 0, sizeof(pg));
	pg.cap_user_time = 1;
	kd_time_conv(&f, &pg.time_mult, &pg.time_shift);
	CHECK_EQ(ptclk_calibrate(&f.ops, &pg, &c), 0);
	CHECK(c.mult == pg.time_mult && c.shift == pg.time_shift &&
	      !c.measured_scale);
	CHECK(clock_error(&f, &c) < 2000);
	/* no cap_user_time (an unstable TSC): the scale is measured */
	CHECK_EQ(ptclk_calibrate(&f.ops, NULL, &c), 0);
	CHECK(c.measured_scale);
	CHECK(clock_error(&f, &c) < 2000);
	kd_fini(&f);
}

/* ---- kernel text for --kernel ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[300];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "we");
	if (fp) {
		fputs(text, fp);
		fclose(fp);
	}
}

TEST(kcore_text_from_kallsyms_and_an_elf_core)
{
	char dir[] = "/tmp/ptscope-kcore-XXXXXX", ks[64], kc[64];
	uint8_t *img, *bytes;
	size_t len;
	uint64_t at;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(ks, sizeof(ks), "%s/kallsyms", dir);
	snprintf(kc, sizeof(kc), "%s/kcore", dir);
	write_file(dir, "kallsyms",
		   "ffffffff81000000 T _stext\nffffffff81000040 T do_thing\n"
		   "ffffffff81001000 T _etext\n");
	/* an ELF core: a note, then kernel memory 0xffffffff80ff0000.. */
	img = calloc(1, 0x22000);
	eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_type = ET_CORE;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	ph = (Elf64_Phdr *)(img + sizeof(*eh));
	ph[0].p_type = PT_NOTE;
	ph[1].p_type = PT_LOAD;
	ph[1].p_vaddr = 0xffffffff80ff0000ull;
	ph[1].p_offset = 0x1000;
	ph[1].p_filesz = ph[1].p_memsz = 0x20000;
	for (size_t i = 0; i < 0x1000; i++)
		img[0x1000 + 0x10000 + i] = (uint8_t)(i * 13 + 1);
	f = fopen(kc, "we");
	CHECK(f && fwrite(img, 1, 0x22000, f) == 0x22000);
	fclose(f);
	CHECK_EQ(kcore_text(ks, kc, &bytes, &len, &at), 0);
	CHECK_EQ(at, 0xffffffff81000000ull);
	CHECK_EQ(len, 0x1000);
	CHECK(!memcmp(bytes, img + 0x11000, 0x1000));
	free(bytes);
	/* hidden addresses (kptr_restrict) */
	write_file(dir, "kallsyms",
		   "0000000000000000 T _stext\n0000000000000000 T _etext\n");
	CHECK_EQ(kcore_text(ks, kc, &bytes, &len, &at), PS_ERR_PERM);
	CHECK(strstr(ps_err_message(PS_ERR_PERM), "run as root"));
	/* not an ELF file */
	write_file(dir, "kallsyms",
		   "ffffffff81000000 T _stext\nffffffff81001000 T _etext\n");
	write_file(dir, "kcore", "nope");
	CHECK_EQ(kcore_text(ks, kc, &bytes, &len, &at), PS_ERR_FORMAT);
	free(img);
	unlink(ks);
	unlink(kc);
	rmdir(dir);
}

/* SPDX-License-Identifier: MIT */
/* The flow layer and the perf.data reader on real Intel PT recordings
 * (shared/testdata/real-pt, see its README.md for the expected figures). */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/timeconv.h"
#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

struct rec {
	struct br_event ev[4096];
	size_t n;
	size_t count[BR_END + 1];
	int monotone; /* 1 while every ts is above the previous one */
};

static int rec_sink(void *ctx, const struct br_event *ev)
{
	struct rec *r = ctx;

	if (r->n && ev->ts <= r->ev[r->n - 1].ts)
		r->monotone = 0;
	if (r->n < sizeof(r->ev) / sizeof(r->ev[0]))
		r->ev[r->n++] = *ev;
	r->count[ev->kind]++;
	return 0;
}

/* Decode @trace with the ELF files (path, base) in @elves. */
static int decode(const char *trace, const struct dec_config *cfg,
		  const char *const *elves, const uint64_t *bases, int nelf,
		  struct rec *r, struct dec_stats *st)
{
	struct img_image *img = NULL;
	struct flow_decoder *fd = NULL;
	uint8_t *pt;
	size_t len;
	int err;

	pt = ts_read_file(ts_realpt(trace), &len);
	if (!pt)
		return PS_ERR_IO;
	err = img_new(NULL, &img);
	for (int i = 0; !err && i < nelf; i++) {
		err = img_add_elf(img, ts_realpt(elves[i]), bases[i], 0, 0);
		if (err > 0)
			err = 0;
	}
	if (!err)
		err = flow_new(cfg, img, NULL, &fd);
	memset(r, 0, sizeof(*r));
	r->monotone = 1;
	memset(st, 0, sizeof(*st));
	if (!err)
		err = flow_decode(fd, pt, len, rec_sink, r, st);
	flow_free(fd);
	img_free(img);
	free(pt);
	return err;
}

static struct dec_config cpu_cfg(int family, int model, int stepping)
{
	struct dec_config c;

	memset(&c, 0, sizeof(c));
	c.cpu.is_intel = 1;
	c.cpu.family = (uint16_t)family;
	c.cpu.model = (uint8_t)model;
	c.cpu.stepping = (uint8_t)stepping;
	return c;
}

TEST(lldb_single_thread)
{
	static struct rec r;
	struct dec_stats st;
	const char *elf[] = {"lldb-single-thread/a.out"};
	uint64_t base[] = {0};
	struct dec_config cfg = cpu_cfg(6, 79, 1);

	CHECK_EQ(decode("lldb-single-thread/3842849.trace", &cfg, elf, base, 1,
			&r, &st),
		 0);
	CHECK_EQ(st.instructions, 21);
	CHECK_EQ(st.err_nomap + st.err_decode + st.err_truncated, 0);
	CHECK_EQ(r.count[BR_ENABLE], 2);
	CHECK_EQ(r.count[BR_INTERRUPT], 2);
	CHECK_EQ(r.count[BR_ERROR], 0);
	CHECK_EQ(r.count[BR_END], 1);
	CHECK(r.n >= 5);
	CHECK_EQ(r.ev[0].kind, BR_ENABLE);
	CHECK_EQ(r.ev[0].to, 0x400511);
	/* Tracing stops (asynchronously) right after the last instruction
	 * 0x40052d, which is 2 bytes long. */
	CHECK_EQ(r.ev[r.n - 2].kind, BR_INTERRUPT);
	CHECK_EQ(r.ev[r.n - 2].from, 0x40052f);
	CHECK_EQ(r.ev[r.n - 2].to, 0);
	CHECK_EQ(r.ev[r.n - 1].kind, BR_END);
	CHECK_EQ(r.ev[r.n - 1].icount, 21);
	CHECK(r.monotone);
}

TEST(lldb_multi_file_nomap)
{
	static struct rec r;
	struct dec_stats st;
	const char *elf[] = {"lldb-multi-file/a.out",
			     "lldb-multi-file/libfoo.so",
			     "lldb-multi-file/libbar.so"};
	uint64_t base[] = {0, 0x7ffff7bd9000, 0x7ffff79d7000};
	struct dec_config cfg = cpu_cfg(6, 79, 1);
	size_t i;

	CHECK_EQ(decode("lldb-multi-file/multi-file.trace", &cfg, elf, base, 3,
			&r, &st),
		 0);
	CHECK_EQ(st.instructions, 45);
	CHECK_EQ(st.err_nomap, 1);
	CHECK_EQ(st.err_decode, 0);
	CHECK_EQ(st.err_truncated, 0);
	CHECK_EQ(r.count[BR_ERROR], 1);
	for (i = 0; i < r.n && r.ev[i].kind != BR_ERROR; i++)
		;
	CHECK(i < r.n);
	CHECK_EQ(r.ev[i].from, 0x7ffff7df1950);
	CHECK_EQ(r.ev[i].err, -pte_nomap);
	/* The PLT jump that went there came first (no symbols: no tail
	 * call is reported, but the calls into the PLT are). */
	CHECK(r.count[BR_CALL] >= 1);
	CHECK(r.monotone);
}

/* Both buffers hold busy loops (foo's and bar's `for`/`while` with no
 * calls inside), so the events are only enables, errors and the final
 * asynchronous disable. */
static void per_cpu(const char *trace, uint64_t insns, uint64_t nomap,
		    size_t enables, uint64_t last_from)
{
	static struct rec r;
	struct dec_stats st;
	const char *elf[] = {"lldb-per-cpu/modules/m.out"};
	uint64_t base[] = {0};
	struct dec_config cfg = cpu_cfg(6, 85, 4);

	tc_from_perf(&cfg.time, 1076264588, 31, 18433473881008870804ull);
	CHECK_EQ(decode(trace, &cfg, elf, base, 1, &r, &st), 0);
	CHECK_EQ(st.instructions, insns);
	CHECK_EQ(st.err_nomap, nomap);
	CHECK_EQ(st.err_decode, 0);
	/* The stale tail is truncation, not an error or flow. */
	CHECK_EQ(st.err_truncated, 1);
	CHECK_EQ(r.count[BR_ERROR], nomap);
	CHECK_EQ(r.count[BR_END], 1);
	CHECK(r.monotone);
	/* perf-clock times of a 2022 recording: positive and sane. */
	CHECK(r.ev[0].ts > 1000000000ull);
	CHECK(r.ev[r.n - 1].ts - r.ev[0].ts < 1000000000ull);
	CHECK_EQ(r.count[BR_ENABLE], enables);
	CHECK_EQ(r.count[BR_INTERRUPT], 1);
	CHECK_EQ(r.count[BR_CALL] + r.count[BR_RETURN] + r.count[BR_JUMP], 0);
	CHECK_EQ(r.n, enables + nomap + 2);
	CHECK_EQ(r.ev[r.n - 2].from, last_from);
	CHECK_EQ(r.ev[r.n - 1].icount, insns);
}

TEST(lldb_per_cpu_45)
{
	per_cpu("lldb-per-cpu/cores/45.intelpt_trace", 61825, 0, 1, 0x400bdb);
}

TEST(lldb_per_cpu_51)
{
	per_cpu("lldb-per-cpu/cores/51.intelpt_trace", 19521, 2, 2, 0x400bb3);
}

static int count_packets(const uint8_t *pt, size_t len, uint64_t *errors)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	int n = 0, status;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)pt;
	cfg.end = (uint8_t *)pt + len;
	d = pt_pkt_alloc_decoder(&cfg);
	*errors = 0;
	status = pt_pkt_sync_forward(d);
	while (status >= 0) {
		struct pt_packet p;

		status = pt_pkt_next(d, &p, sizeof(p));
		if (status >= 0) {
			n++;
		} else if (status != -pte_eos) {
			(*errors)++;
			status = pt_pkt_sync_forward(d);
		}
	}
	pt_pkt_free_decoder(d);
	return n;
}

TEST(perf_data_aux_packets)
{
	static const struct {
		int cpu;
		size_t bytes;
		int packets;
	} want[] = {{0, 12240, 9980}, {3, 137728, 95129}};
	uint8_t *buf, *pt;
	size_t len, ptlen;
	uint64_t errors;

	buf = ts_read_file(
	    ts_realpt("perf-data-skylake/perf.data.intel_pt-4.14"), &len);
	CHECK(buf);
	for (size_t i = 0; i < 2; i++) {
		CHECK_EQ(pd_collect_aux(buf, len, want[i].cpu, &pt, &ptlen), 1);
		CHECK_EQ(ptlen, want[i].bytes);
		CHECK_EQ(count_packets(pt, ptlen, &errors), want[i].packets);
		CHECK_EQ(errors, 0);
		free(pt);
	}
	CHECK_EQ(pd_collect_aux(buf, len, 7, &pt, &ptlen), 0);
	CHECK(pt == NULL);
	free(buf);
}

TEST(perf_data_pipe_layout)
{
	uint8_t *buf, *pt;
	size_t len, ptlen;
	uint64_t errors;

	buf = ts_read_file(
	    ts_realpt("perf-data-skylake/perf.data.piped.intel_pt-4.14"), &len);
	CHECK(buf);
	/* A separate recording: one chunk per cpu (0 and 3). */
	CHECK_EQ(pd_collect_aux(buf, len, -1, &pt, &ptlen), 2);
	free(pt);
	CHECK_EQ(pd_collect_aux(buf, len, 3, &pt, &ptlen), 1);
	CHECK_EQ(ptlen, 68192);
	CHECK(count_packets(pt, ptlen, &errors) > 1000);
	CHECK_EQ(errors, 0);
	free(pt);
	free(buf);
}

static int count_cb(void *ctx, const struct pd_aux *a)
{
	(*(int *)ctx)++;
	return a->size ? 0 : 0;
}

TEST(perf_data_truncated_and_corrupt)
{
	uint8_t *buf;
	size_t len;
	int n, bad = 0;

	buf = ts_read_file(
	    ts_realpt("perf-data-skylake/perf.data.piped.intel_pt-4.14"), &len);
	CHECK(buf);
	/* Every prefix either parses or fails cleanly. */
	for (size_t cut = 0; cut < len; cut += 97) {
		n = 0;
		int rc = pd_walk_aux(buf, cut, count_cb, &n);

		CHECK(rc >= 0 || rc == PS_ERR_TRUNCATED || rc == PS_ERR_FORMAT);
		bad += rc < 0;
	}
	CHECK(bad > 0);
	/* A record claiming size 0 is refused. */
	memset(buf + 16 + 6, 0, 2);
	CHECK_EQ(pd_walk_aux(buf, len, count_cb, &n), PS_ERR_FORMAT);
	memcpy(buf, "PERFILE3", 8);
	CHECK_EQ(pd_walk_aux(buf, len, count_cb, &n), PS_ERR_FORMAT);
	CHECK_EQ(pd_walk_aux(NULL, len, count_cb, &n), PS_ERR_INVAL);
	free(buf);
}

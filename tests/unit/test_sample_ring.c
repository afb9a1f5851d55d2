/* SPDX-License-Identifier: MIT */
/* Tests for the sample backend's records: the overwrite ring walk
 * (src/record/sample/sample_ring.c: sring_parse over hand-built backward
 * rings, empty, partly filled, wrapped with a record cut by the
 * overwrite), the SAMPLES record format (src/recording/samples.c) and
 * its round trip through a recording file with the sampled INFO fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/sample/sample_probe.h"
#include "src/record/sample/sample_ring.h"
#include "src/recording/recfile.h"
#include "src/recording/samples.h"
#include "tests/harness.h"

#define RING 4096

/* A backward ring being written like the kernel does: each record goes
 * just below the previous one; head is the newest record's start. */
struct fake_ring {
	uint8_t data[RING];
	uint64_t head; /* counts down from 0 */
};

static void ring_put(struct fake_ring *r, const void *rec, size_t n)
{
	r->head -= n;
	for (size_t i = 0; i < n; i++)
		r->data[(r->head + i) & (RING - 1)] = ((const uint8_t *)rec)[i];
}

/* A PERF_RECORD_SAMPLE for the attr of sprobe_attr + regs + stack:
 * ip, pid/tid, time, callchain (with PERF_CONTEXT_USER first), regs,
 * stack (@stack_size bytes, @dyn valid). */
static size_t make_sample(uint8_t *out, uint64_t time, uint64_t ip,
			  size_t stack_size, size_t dyn)
{
	uint64_t w[64];
	size_t n = 1; /* header */

	w[n++] = ip;
	w[n++] = 42 | (43ull << 32);
	w[n++] = time;
	w[n++] = 4; /* callchain: context, ip, two return addresses */
	w[n++] = (uint64_t)PERF_CONTEXT_USER;
	w[n++] = ip;
	w[n++] = 0x401000 + time;
	w[n++] = 0x402000;
	w[n++] = PERF_SAMPLE_REGS_ABI_64;
	for (int i = 0; i < SPROBE_NREGS; i++)
		w[n++] = 0x1000 + (uint64_t)i;
	w[n++] = stack_size;
	memcpy(out, w, n * 8);
	memset(out + n * 8, 0xab, stack_size);
	n = n * 8 + stack_size;
	memcpy(out + n, &(uint64_t){dyn}, 8);
	n += 8;
	((struct perf_event_header *)out)->type = PERF_RECORD_SAMPLE;
	((struct perf_event_header *)out)->misc = PERF_RECORD_MISC_USER;
	((struct perf_event_header *)out)->size = (uint16_t)n;
	return n;
}

static void attr(struct perf_event_attr *a)
{
	sprobe_attr(a, 0, 1000);
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = SPROBE_REGS_MASK;
	a->sample_stack_user = 64;
}

/* The times of the samples in @b, in order. */
static size_t times(const struct recs_buf *b, uint64_t *t, size_t max)
{
	struct recs_sample s;
	size_t off = 0, n = 0;

	while (n < max && recs_next(b->p, b->len, &off, &s) == 1)
		t[n++] = s.time;
	return n;
}

TEST(empty_ring_gives_nothing)
{
	static struct fake_ring r;
	struct perf_event_attr a;
	struct recs_buf b = {0};

	attr(&a);
	CHECK_EQ(sring_parse(&a, r.data, RING, 0, &b), 0);
	CHECK_EQ(b.count, 0);
	free(b.p);
}

TEST(samples_come_oldest_first_with_user_frames_only)
{
	static struct fake_ring r;
	struct perf_event_attr a;
	struct recs_buf b = {0};
	uint8_t rec[1024];
	uint64_t t[8];
	struct recs_sample s;
	size_t off = 0;

	attr(&a);
	for (uint64_t i = 1; i <= 3; i++)
		ring_put(&r, rec,
			 make_sample(rec, 100 * i, 0x400100 + i, 64, 40));
	CHECK_EQ(sring_parse(&a, r.data, RING, r.head, &b), 0);
	CHECK_EQ(b.count, 3);
	CHECK_EQ(times(&b, t, 8), 3);
	CHECK_EQ(t[0], 100);
	CHECK_EQ(t[2], 300);
	CHECK_EQ(recs_next(b.p, b.len, &off, &s), 1);
	CHECK_EQ(s.nchain, 3); /* PERF_CONTEXT_USER dropped */
	CHECK_EQ(recs_u64(s.chain, 0), 0x400101);
	CHECK_EQ(recs_u64(s.chain, 1), 0x401000 + 100);
	CHECK_EQ(s.nregs, SPROBE_NREGS);
	CHECK_EQ(recs_u64(s.regs, 8), 0x1008);
	CHECK_EQ(s.stack_len, 40); /* dyn_size, not the 64 asked */
	CHECK_EQ(s.stack[39], 0xab);
	free(b.p);
}

TEST(wrapped_ring_keeps_the_newest_and_drops_the_cut_record)
{
	static struct fake_ring r;
	struct perf_event_attr a;
	struct recs_buf b = {0};
	uint8_t rec[1024];
	uint64_t t[64];
	size_t n, size = 0;

	attr(&a);
	/* Far more than fits: the ring wraps several times. */
	for (uint64_t i = 1; i <= 40; i++)
		size = make_sample(rec, i, 0x400000 + i, 64, 64),
		ring_put(&r, rec, size);
	CHECK_EQ(sring_parse(&a, r.data, RING, r.head, &b), 0);
	n = times(&b, t, 64);
	/* Whole records that fit in the ring, newest last, contiguous. */
	CHECK_EQ(n, RING / size);
	CHECK_EQ(t[n - 1], 40);
	for (size_t i = 1; i < n; i++)
		CHECK_EQ(t[i], t[i - 1] + 1);
	free(b.p);
}

TEST(record_format_round_trip_and_damage)
{
	struct recs_buf b = {0};
	uint64_t chain[2] = {0x1234, 0x5678}, regs[3] = {1, 2, 3};
	uint64_t lbr[2] = {0xaaa, 0xbbb};
	uint8_t stack[13];
	struct recs_sample s;
	size_t off = 0;

	memset(stack, 7, sizeof(stack));
	CHECK_EQ(recs_put(&b, 99, chain, 2, regs, 3, stack, 13, lbr, 1), 0);
	CHECK_EQ(recs_put(&b, 100, chain, 1, NULL, 0, NULL, 0, NULL, 0), 0);
	CHECK_EQ(b.len % 8, 0);
	CHECK_EQ(recs_next(b.p, b.len, &off, &s), 1);
	CHECK_EQ(s.time, 99);
	CHECK_EQ(recs_u64(s.chain, 1), 0x5678);
	CHECK_EQ(recs_u64(s.regs, 2), 3);
	CHECK_EQ(s.stack_len, 13);
	CHECK_EQ(s.stack[12], 7);
	CHECK_EQ(s.nlbr, 1);
	CHECK_EQ(recs_u64(s.lbr, 1), 0xbbb);
	CHECK_EQ(recs_next(b.p, b.len, &off, &s), 1);
	CHECK_EQ(s.time, 100);
	CHECK_EQ(recs_next(b.p, b.len, &off, &s), 0);
	/* A record whose size is smaller than its fields: refused. */
	b.p[0] = 16;
	off = 0;
	CHECK_EQ(recs_next(b.p, b.len, &off, &s), PS_ERR_FORMAT);
	/* Cut short. */
	off = 0;
	CHECK_EQ(recs_next(b.p, 10, &off, &s), PS_ERR_FORMAT);
	free(b.p);
}

TEST(samples_and_rate_survive_a_recording_file)
{
	char path[] = "/tmp/ptscope-samples-XXXXXX";
	struct rec_info in = {0};
	const struct rec_samples *got;
	struct rec_samples sm = {0};
	struct recs_buf b = {0};
	uint64_t chain[1] = {0x42};
	struct recw *w;
	struct recr *r;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	in.backend = "sample";
	in.version = "t";
	in.hostname = in.kernel = in.reason = "";
	in.sample_hz = 997;
	in.sample_event = "cpu-clock";
	in.sample_stack = 4096;
	CHECK_EQ(recs_put(&b, 5, chain, 1, NULL, 0, NULL, 0, NULL, 0), 0);
	sm.pid = 7;
	sm.tid = 8;
	sm.regs_mask = SPROBE_REGS_MASK;
	sm.count = b.count;
	sm.data = b.p;
	sm.len = b.len;
	CHECK_EQ(recw_open(path, &w), 0);
	CHECK_EQ(recw_header(w, &in), 0);
	CHECK_EQ(recw_samples(w, &sm), 0);
	CHECK_EQ(recw_finish(w), 0);
	CHECK_EQ(recr_open(path, &r), 0);
	CHECK_EQ(recr_info(r)->sample_hz, 997);
	CHECK_STR(recr_info(r)->sample_event, "cpu-clock");
	CHECK_EQ(recr_info(r)->sample_stack, 4096);
	CHECK_EQ(recr_samples(r, &got), 1);
	CHECK_EQ(got[0].tid, 8);
	CHECK_EQ(got[0].regs_mask, SPROBE_REGS_MASK);
	CHECK_EQ(got[0].count, 1);
	CHECK_EQ(got[0].len, b.len);
	CHECK(!memcmp(got[0].data, b.p, b.len));
	recr_close(r);
	unlink(path);
	free(b.p);
}

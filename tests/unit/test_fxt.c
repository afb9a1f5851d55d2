/* SPDX-License-Identifier: MIT */
/* Tests for the Fuchsia trace format writer and reader (src/output/fxt*.c).
 *
 * Traces are written into a memory sink, read back with fxt_read into a
 * recording writer that keeps copies of everything it is given, and
 * compared field by field.  Hand-built traces cover what other producers
 * write (inline refs, re-assigned tables, unknown record/event/arg types).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "src/output/sink.h"
#include "tests/harness.h"
#include "tests/support.h"

/* ---- helpers ------------------------------------------------------------ */

struct mem_trace {
	struct ps_sink *sink;
	struct ps_writer *w;
	const uint8_t *data;
	size_t len;
};

static int mt_open(struct mem_trace *t)
{
	int err;

	memset(t, 0, sizeof(*t));
	err = ps_sink_open_memory(&t->sink);
	if (err)
		return err;
	return fxt_writer_new(t->sink, &t->w);
}

static int mt_done(struct mem_trace *t)
{
	int err = t->w->ops->flush(t->w);

	ps_sink_memory_data(t->sink, &t->data, &t->len);
	return err;
}

static void mt_close(struct mem_trace *t)
{
	if (t->w)
		t->w->ops->destroy(t->w);
	ps_sink_abort(t->sink);
	memset(t, 0, sizeof(*t));
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Walk the records of a trace: 0 if every record is well sized, and count
 * the records of @type (-1: all) in *count. */
static int walk(const uint8_t *d, size_t len, int type, size_t *count,
		size_t *max_words)
{
	size_t off = 0;

	*count = 0;
	if (max_words)
		*max_words = 0;
	while (off < len) {
		uint64_t h, words;

		if (len - off < 8)
			return -1;
		h = le64(d + off);
		words = (h & 15) == 15 ? (h >> 4) & 0xffffffffull
				       : (h >> 4) & 0xfff;
		if (!words || words * 8 > len - off)
			return -1;
		if (type < 0 || (int)(h & 15) == type)
			(*count)++;
		if (max_words && words > *max_words)
			*max_words = words;
		off += words * 8;
	}
	return 0;
}

/* How many string records define exactly @s. */
static size_t count_string_records(const uint8_t *d, size_t len, const char *s)
{
	size_t off = 0, n = 0, slen = strlen(s);

	while (off + 8 <= len) {
		uint64_t h = le64(d + off);
		size_t words = (h >> 4) & 0xfff;

		if (!words)
			break;
		if ((h & 15) == 2 && ((h >> 32) & 0x7fff) == slen &&
		    !memcmp(d + off + 8, s, slen))
			n++;
		off += words * 8;
	}
	return n;
}

/* ---- round trip of every kind ------------------------------------------- */

TEST(fxt_header_records)
{
	struct mem_trace t;
	size_t n;

	CHECK_EQ(mt_open(&t), 0);
	CHECK_EQ(mt_done(&t), 0);
	/* magic, provider info (2 words), section, init (2 words) */
	CHECK_EQ(t.len, 6 * 8);
	CHECK(fxt_probe(t.data, t.len));
	CHECK_EQ(le64(t.data), 0x0016547846040010ull);
	CHECK_EQ(le64(t.data + 8) & 0xf, 0);	     /* metadata */
	CHECK_EQ((le64(t.data + 8) >> 16) & 0xf, 1); /* provider info */
	CHECK_EQ((le64(t.data + 8) >> 20) & 0xffffffffull, 1);
	CHECK_EQ((le64(t.data + 8) >> 52) & 0xff, 7);
	CHECK(!memcmp(t.data + 16, "ptscope\0", 8));
	/* provider section: size 1, metadata type 2, provider id 1 */
	CHECK_EQ(le64(t.data + 24), 0x10ull | 2ull << 16 | 1ull << 20);
	CHECK_EQ(le64(t.data + 32), 0x21); /* init, 2 words */
	CHECK_EQ(le64(t.data + 40), 1000000000ull);
	CHECK_EQ(walk(t.data, t.len, -1, &n, NULL), 0);
	CHECK_EQ(n, 4);
	mt_close(&t);
}

static const struct ps_arg every_arg[] = {
    {.name = "null", .type = PS_ARG_NULL},
    {.name = "yes", .type = PS_ARG_BOOL, .v.b = 1},
    {.name = "no", .type = PS_ARG_BOOL, .v.b = 0},
    {.name = "i32", .type = PS_ARG_INT, .v.i = -123456},
    {.name = "i64", .type = PS_ARG_INT, .v.i = -5000000000ll},
    {.name = "u32", .type = PS_ARG_UINT, .v.u = 4000000000u},
    {.name = "u64", .type = PS_ARG_UINT, .v.u = 0xfedcba9876543210ull},
    {.name = "dbl", .type = PS_ARG_DOUBLE, .v.d = -2.5e-300},
    {.name = "str", .type = PS_ARG_STRING, .v.s = "hello, wörld"},
    {.name = "empty", .type = PS_ARG_STRING, .v.s = ""},
    {.name = "ptr", .type = PS_ARG_POINTER, .v.u = 0x7fff12345678ull},
};
#define N_EVERY_ARG (sizeof(every_arg) / sizeof(every_arg[0]))

static int same_arg(const struct ps_arg *a, const struct ps_arg *b)
{
	if (strcmp(a->name, b->name) || a->type != b->type)
		return 0;
	switch (a->type) {
	case PS_ARG_NULL:
		return 1;
	case PS_ARG_BOOL:
		return !a->v.b == !b->v.b;
	case PS_ARG_INT:
		return a->v.i == b->v.i;
	case PS_ARG_UINT:
	case PS_ARG_POINTER:
		return a->v.u == b->v.u;
	case PS_ARG_DOUBLE:
		return !memcmp(&a->v.d, &b->v.d, 8);
	case PS_ARG_STRING:
		return !strcmp(a->v.s, b->v.s);
	}
	return 0;
}

TEST(fxt_every_event_kind_round_trips)
{
	struct ps_span_info info = {.module = "/usr/bin/app",
				    .address = 0x401000,
				    .file = "app.c",
				    .line = 42};
	struct ps_span_info part = {.address = 0x402000};
	struct ps_arg counter_args[] = {
	    {.name = "rss", .type = PS_ARG_UINT, .v.u = 1u << 20},
	    {.name = "load", .type = PS_ARG_DOUBLE, .v.d = 0.75},
	};
	struct ps_event evs[] = {
	    {.type = PS_EV_BEGIN,
	     .pid = 10,
	     .tid = 11,
	     .ts = 1000,
	     .name = "main",
	     .category = "fn",
	     .info = &info,
	     .args = every_arg,
	     .nargs = N_EVERY_ARG},
	    {.type = PS_EV_BEGIN,
	     .pid = 10,
	     .tid = 11,
	     .ts = 1100,
	     .name = "work",
	     .category = NULL,
	     .info = &part},
	    {.type = PS_EV_END, .pid = 10, .tid = 11, .ts = 1200},
	    {.type = PS_EV_END,
	     .pid = 10,
	     .tid = 11,
	     .ts = 1300,
	     .name = "main",
	     .category = "fn"},
	    {.type = PS_EV_COMPLETE,
	     .pid = 10,
	     .tid = 12,
	     .ts = 2000,
	     .dur = 777,
	     .name = "leaf",
	     .category = "fn",
	     .info = &info},
	    {.type = PS_EV_INSTANT,
	     .pid = 10,
	     .tid = 12,
	     .ts = 2100,
	     .name = "tick",
	     .scope = PS_SCOPE_THREAD},
	    {.type = PS_EV_INSTANT,
	     .pid = 10,
	     .tid = 12,
	     .ts = 2200,
	     .name = "crash",
	     .category = "trigger",
	     .scope = PS_SCOPE_PROCESS,
	     .args = every_arg + 8,
	     .nargs = 1},
	    {.type = PS_EV_INSTANT,
	     .pid = 0,
	     .tid = 0,
	     .ts = 2300,
	     .name = "sync",
	     .scope = PS_SCOPE_GLOBAL},
	    {.type = PS_EV_COUNTER,
	     .pid = 10,
	     .tid = 11,
	     .ts = 2400,
	     .name = "mem",
	     .category = "stats",
	     .flow_id = 3,
	     .args = counter_args,
	     .nargs = 2},
	    {.type = PS_EV_FLOW_BEGIN,
	     .pid = 10,
	     .tid = 11,
	     .ts = 2500,
	     .name = "req",
	     .category = "flow",
	     .flow_id = 99},
	    {.type = PS_EV_FLOW_STEP,
	     .pid = 10,
	     .tid = 12,
	     .ts = 2600,
	     .name = "req",
	     .category = "flow",
	     .flow_id = 99},
	    {.type = PS_EV_FLOW_END,
	     .pid = 10,
	     .tid = 11,
	     .ts = 2700,
	     .name = "req",
	     .category = "flow",
	     .flow_id = 99},
	};
	size_t nev = sizeof(evs) / sizeof(evs[0]);
	struct mem_trace t;
	struct ts_recorder r;
	size_t i, nrec;

	CHECK_EQ(mt_open(&t), 0);
	CHECK_EQ(t.w->ops->meta(t.w, "backend", "emulated"), 0);
	CHECK_EQ(t.w->ops->process(t.w, 10, "app"), 0);
	CHECK_EQ(t.w->ops->thread(t.w, 10, 11, "app-main"), 0);
	CHECK_EQ(t.w->ops->thread(t.w, 10, 12, NULL), 0);
	for (i = 0; i < nev; i++)
		CHECK_EQ(ps_write_event(t.w, &evs[i]), 0);
	CHECK_EQ(t.w->ops->meta(t.w, "command", "./app --fast"), 0);
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(t.len % 8, 0);
	CHECK_EQ(walk(t.data, t.len, -1, &nrec, NULL), 0);

	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 4 + nev + 1);

	CHECK_EQ(r.items[0].kind, TS_META);
	CHECK_STR(r.items[0].key, "backend");
	CHECK_STR(r.items[0].value, "emulated");
	CHECK_EQ(r.items[1].kind, TS_PROCESS);
	CHECK_EQ(r.items[1].ev.pid, 10);
	CHECK_STR(r.items[1].value, "app");
	CHECK_EQ(r.items[2].kind, TS_THREAD);
	CHECK_EQ(r.items[2].ev.pid, 10);
	CHECK_EQ(r.items[2].ev.tid, 11);
	CHECK_STR(r.items[2].value, "app-main");
	CHECK_EQ(r.items[3].kind, TS_THREAD);
	CHECK_EQ(r.items[3].ev.tid, 12);
	CHECK_STR(r.items[3].value, "");
	CHECK_EQ(r.items[4 + nev].kind, TS_META);
	CHECK_STR(r.items[4 + nev].key, "command");
	CHECK_STR(r.items[4 + nev].value, "./app --fast");

	for (i = 0; i < nev; i++) {
		const struct ps_event *want = &evs[i];
		const struct ts_item *it = &r.items[4 + i];
		const struct ps_event *got = &it->ev;

		CHECK_EQ(it->kind, TS_EVENT);
		CHECK_EQ(got->type, want->type);
		CHECK_EQ(got->pid, want->pid);
		CHECK_EQ(got->tid, want->tid);
		CHECK_EQ(got->ts, want->ts);
		if (want->type == PS_EV_COMPLETE)
			CHECK_EQ(got->dur, want->dur);
		if (want->type == PS_EV_INSTANT)
			CHECK_EQ(got->scope, want->scope);
		if (want->type >= PS_EV_COUNTER)
			CHECK_EQ(got->flow_id, want->flow_id);
		if (want->name)
			CHECK_STR(got->name, want->name);
		else
			CHECK(got->name == NULL);
		if (want->category)
			CHECK_STR(got->category, want->category);
		else
			CHECK(got->category == NULL);
		CHECK_EQ(got->nargs, want->nargs);
		for (size_t a = 0; a < want->nargs; a++)
			CHECK(same_arg(&got->args[a], &want->args[a]));
		CHECK_EQ(it->has_info, want->info != NULL);
		if (want->info) {
			const struct ps_span_info *wi = want->info;

			CHECK_EQ(got->info->address, wi->address);
			CHECK_EQ(got->info->line, wi->line);
			if (wi->module)
				CHECK_STR(got->info->module, wi->module);
			else
				CHECK(got->info->module == NULL);
			if (wi->file)
				CHECK_STR(got->info->file, wi->file);
			else
				CHECK(got->info->file == NULL);
		}
	}
	ts_rec_free(&r);
	mt_close(&t);
}

/* Args that fit 32 bits use the one-word encodings; others take two. */
TEST(fxt_small_integers_use_one_word)
{
	struct ps_arg small = {.name = "n", .type = PS_ARG_INT, .v.i = -1};
	struct ps_arg big = {
	    .name = "n", .type = PS_ARG_UINT, .v.u = 1ull << 32};
	struct ps_event ev = {
	    .type = PS_EV_INSTANT, .name = "x", .args = &small, .nargs = 1};
	struct mem_trace t;
	size_t before, after;

	CHECK_EQ(mt_open(&t), 0);
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(mt_done(&t), 0);
	before = t.len;
	ev.args = &big;
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(mt_done(&t), 0);
	after = t.len;
	/* The second event: header, ts, arg header, arg value. */
	CHECK_EQ(after - before, 4 * 8);
	CHECK_EQ((le64(t.data + before + 16) & 0xf), 4); /* uint64 */
	mt_close(&t);
}

/* ---- strings ------------------------------------------------------------ */

#define MILLION 1000000

static int check_million(struct ts_recorder *r, const struct ps_event *ev)
{
	char want[32];
	size_t i = r->seen - 1;

	snprintf(want, sizeof(want), "fn_%07zu", i);
	if (ev->type != PS_EV_COMPLETE || !ev->name || strcmp(ev->name, want) ||
	    ev->ts != i * 10 || ev->dur != 5)
		r->bad++;
	return 0;
}

TEST(fxt_million_distinct_names)
{
	struct mem_trace t;
	struct ts_recorder r;
	char name[32];
	size_t nstr;

	CHECK_EQ(mt_open(&t), 0);
	for (size_t i = 0; i < MILLION; i++) {
		struct ps_event ev = {.type = PS_EV_COMPLETE,
				      .pid = 1,
				      .tid = 1,
				      .ts = i * 10,
				      .dur = 5,
				      .name = name};

		snprintf(name, sizeof(name), "fn_%07zu", i);
		CHECK_EQ(ps_write_event(t.w, &ev), 0);
	}
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(walk(t.data, t.len, 2, &nstr, NULL), 0);
	CHECK_EQ(nstr, MILLION); /* every name defined once, slots reused */

	ts_rec_init(&r);
	r.check = check_million;
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.seen, MILLION);
	CHECK_EQ(r.bad, 0);
	mt_close(&t);
}

TEST(fxt_lru_keeps_hot_names_stable)
{
	struct mem_trace t;
	struct ts_recorder r;
	char name[32];
	size_t n = 3 * 32767;

	CHECK_EQ(mt_open(&t), 0);
	for (size_t i = 0; i < n; i++) {
		struct ps_event hot = {.type = PS_EV_BEGIN,
				       .pid = 1,
				       .tid = 1,
				       .ts = i,
				       .name = "hot",
				       .category = "cat"};
		struct ps_event cold = {.type = PS_EV_COMPLETE,
					.pid = 1,
					.tid = 1,
					.ts = i,
					.name = name};
		struct ps_event end = {
		    .type = PS_EV_END, .pid = 1, .tid = 1, .ts = i};

		snprintf(name, sizeof(name), "cold_%zu", i);
		CHECK_EQ(ps_write_event(t.w, &hot), 0);
		CHECK_EQ(ps_write_event(t.w, &cold), 0);
		CHECK_EQ(ps_write_event(t.w, &end), 0);
	}
	CHECK_EQ(mt_done(&t), 0);
	/* Hot strings were never evicted, so never written again. */
	CHECK_EQ(count_string_records(t.data, t.len, "hot"), 1);
	CHECK_EQ(count_string_records(t.data, t.len, "cat"), 1);

	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 3 * n);
	for (size_t i = 0; i < n; i += 997) {
		snprintf(name, sizeof(name), "cold_%zu", i);
		CHECK_STR(r.items[3 * i].ev.name, "hot");
		CHECK_STR(r.items[3 * i].ev.category, "cat");
		CHECK_STR(r.items[3 * i + 1].ev.name, name);
		CHECK(r.items[3 * i + 2].ev.name == NULL);
	}
	ts_rec_free(&r);
	mt_close(&t);
}

/* A name buffer reused with new text must not be mistaken for the old. */
TEST(fxt_reused_name_buffer)
{
	struct mem_trace t;
	struct ts_recorder r;
	char buf[16];
	struct ps_event ev = {.type = PS_EV_INSTANT, .name = buf};

	CHECK_EQ(mt_open(&t), 0);
	strcpy(buf, "alpha");
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	strcpy(buf, "beta");
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	strcpy(buf, "alpha");
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(count_string_records(t.data, t.len, "alpha"), 1);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 3);
	CHECK_STR(r.items[0].ev.name, "alpha");
	CHECK_STR(r.items[1].ev.name, "beta");
	CHECK_STR(r.items[2].ev.name, "alpha");
	ts_rec_free(&r);
	mt_close(&t);
}

static char *long_string(size_t len, int utf8)
{
	char *s = malloc(len + 1);

	for (size_t i = 0; i < len; i++)
		s[i] = (char)('a' + i % 26);
	if (utf8) /* "é" (2 bytes) everywhere, so any cut may split one */
		for (size_t i = 0; i + 1 < len; i += 2)
			memcpy(s + i, "\xc3\xa9", 2);
	s[len] = '\0';
	return s;
}

static int valid_utf8_prefix(const char *got, const char *full)
{
	size_t n = strlen(got);

	if (strncmp(got, full, n))
		return 0;
	/* The cut never leaves a lead byte without its continuation. */
	return n == 0 || ((unsigned char)got[n - 1] & 0xe0) != 0xc0;
}

TEST(fxt_long_strings_clipped_or_inline)
{
	char *huge_name = long_string(40001, 1);
	char *v1 = long_string(30001, 1);
	char *v2 = long_string(30001, 0);
	char *mid = long_string(1000, 0);
	struct ps_arg args[] = {
	    {.name = huge_name, .type = PS_ARG_STRING, .v.s = mid},
	    {.name = "v1", .type = PS_ARG_STRING, .v.s = v1},
	    {.name = "v2", .type = PS_ARG_STRING, .v.s = v2},
	};
	struct ps_event ev = {.type = PS_EV_BEGIN,
			      .pid = 1,
			      .tid = 2,
			      .ts = 5,
			      .name = huge_name,
			      .category = v2,
			      .args = args,
			      .nargs = 3};
	struct mem_trace t;
	struct ts_recorder r;
	size_t n, maxw;

	CHECK_EQ(mt_open(&t), 0);
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(t.w->ops->meta(t.w, "long", v1), 0);
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(walk(t.data, t.len, -1, &n, &maxw), 0);
	CHECK(maxw <= 4095);

	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 2);
	CHECK(strlen(r.items[0].ev.name) <= 32000);
	CHECK(strlen(r.items[0].ev.name) >= 31990);
	CHECK(valid_utf8_prefix(r.items[0].ev.name, huge_name));
	CHECK(valid_utf8_prefix(r.items[0].ev.category, v2));
	CHECK_EQ(r.items[0].ev.nargs, 3);
	CHECK_STR(r.items[0].args[0].v.s, mid);
	/* v1 inline whole-ish, v2 shares what is left of 32 KiB. */
	CHECK(valid_utf8_prefix(r.items[0].args[1].v.s, v1));
	CHECK(valid_utf8_prefix(r.items[0].args[2].v.s, v2));
	CHECK(strlen(r.items[0].args[1].v.s) >= 30000);
	CHECK(strlen(r.items[0].args[1].v.s) + strlen(r.items[0].args[2].v.s) <
	      32760);
	CHECK_STR(r.items[1].key, "long");
	CHECK(valid_utf8_prefix(r.items[1].value, v1));
	CHECK(strlen(r.items[1].value) >= 30000);
	ts_rec_free(&r);
	mt_close(&t);
	free(huge_name);
	free(v1);
	free(v2);
	free(mid);
}

/* ---- threads ------------------------------------------------------------ */

TEST(fxt_thread_table_overflow)
{
	struct mem_trace t;
	struct ts_recorder r;
	size_t nthr, nthreads = 700, rounds = 3;

	CHECK_EQ(mt_open(&t), 0);
	for (size_t k = 0; k < rounds; k++)
		for (size_t i = 0; i < nthreads; i++) {
			struct ps_event ev = {.type = PS_EV_INSTANT,
					      .pid = 100 + i % 7,
					      .tid = 1000 + i,
					      .ts = k * nthreads + i,
					      .name = "t"};

			CHECK_EQ(ps_write_event(t.w, &ev), 0);
		}
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(walk(t.data, t.len, 3, &nthr, NULL), 0);
	CHECK(nthr > 255);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, rounds * nthreads);
	for (size_t j = 0; j < r.n; j++) {
		size_t i = j % nthreads;

		CHECK_EQ(r.items[j].ev.pid, 100 + i % 7);
		CHECK_EQ(r.items[j].ev.tid, 1000 + i);
		CHECK_EQ(r.items[j].ev.ts, j);
	}
	ts_rec_free(&r);
	mt_close(&t);
}

/* ---- limits and bad calls ----------------------------------------------- */

TEST(fxt_bad_calls)
{
	struct ps_writer *w = (struct ps_writer *)(uintptr_t)1;
	struct ps_arg args[16];
	struct ps_event ev;
	struct mem_trace t;
	struct ts_recorder r;

	CHECK_EQ(fxt_writer_new(NULL, &w), PS_ERR_INVAL);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(NULL, 8, &r.base), PS_ERR_INVAL);
	CHECK_EQ(fxt_read((const uint8_t *)"x", 1, NULL), PS_ERR_INVAL);
	CHECK(!fxt_probe(NULL, 8));
	CHECK(!fxt_probe((const uint8_t *)"\x10\x00\x04\x46\x78\x54\x16", 7));
	CHECK_EQ(
	    fxt_read((const uint8_t *)"{\"traceEvents\": []}", 19, &r.base),
	    PS_ERR_FORMAT);

	CHECK_EQ(mt_open(&t), 0);
	for (int i = 0; i < 16; i++)
		args[i] =
		    (struct ps_arg){.name = "a", .type = PS_ARG_INT, .v.i = i};
	memset(&ev, 0, sizeof(ev));
	ev.type = PS_EV_INSTANT;
	ev.name = "too many";
	ev.args = args;
	ev.nargs = 16;
	CHECK_EQ(ps_write_event(t.w, &ev), PS_ERR_LIMIT);
	ev.nargs = 15;
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	args[3].type = (enum ps_arg_type)77;
	CHECK_EQ(ps_write_event(t.w, &ev), PS_ERR_INVAL);
	args[3].type = PS_ARG_INT;
	args[4].name = NULL;
	CHECK_EQ(ps_write_event(t.w, &ev), PS_ERR_INVAL);
	args[4].name = "a";
	ev.type = (enum ps_event_type)42;
	CHECK_EQ(ps_write_event(t.w, &ev), PS_ERR_INVAL);
	ev.type = PS_EV_INSTANT;
	ev.scope = (enum ps_scope)9;
	CHECK_EQ(ps_write_event(t.w, &ev), PS_ERR_INVAL);
	CHECK_EQ(t.w->ops->meta(t.w, NULL, "v"), PS_ERR_INVAL);
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 1); /* only the valid event reached the trace */
	CHECK_EQ(r.items[0].ev.nargs, 15);
	ts_rec_free(&r);
	mt_close(&t);
}

TEST(fxt_wide_counter_is_split)
{
	struct ps_arg args[20];
	char names[20][8];
	struct ps_event ev = {.type = PS_EV_COUNTER,
			      .pid = 1,
			      .tid = 1,
			      .ts = 9,
			      .name = "cpu",
			      .args = args,
			      .nargs = 20};
	struct mem_trace t;
	struct ts_recorder r;

	for (int i = 0; i < 20; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		args[i] = (struct ps_arg){
		    .name = names[i], .type = PS_ARG_UINT, .v.u = i};
	}
	CHECK_EQ(mt_open(&t), 0);
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(mt_done(&t), 0);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 2);
	CHECK_EQ(r.items[0].ev.nargs, 15);
	CHECK_EQ(r.items[1].ev.nargs, 5);
	CHECK_STR(r.items[1].args[4].name, "c19");
	CHECK_EQ(r.items[1].args[4].v.u, 19);
	CHECK_EQ(r.items[1].ev.ts, 9);
	ts_rec_free(&r);
	mt_close(&t);
}

/* Fields an event type does not use may hold anything. */
TEST(fxt_poisoned_unused_fields)
{
	struct ps_event ev;
	struct mem_trace t;
	struct ts_recorder r;

	CHECK_EQ(mt_open(&t), 0);
	POISON(ev);
	ev.type = PS_EV_BEGIN;
	ev.pid = 3;
	ev.tid = 4;
	ev.ts = 50;
	ev.name = "f";
	ev.category = NULL;
	ev.info = NULL;
	ev.args = NULL;
	ev.nargs = 0;
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	POISON(ev);
	ev.type = PS_EV_END;
	ev.pid = 3;
	ev.tid = 4;
	ev.ts = 60;
	ev.name = NULL;
	ev.category = NULL;
	ev.info = NULL;
	ev.args = NULL;
	ev.nargs = 0;
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(mt_done(&t), 0);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 2);
	CHECK_STR(r.items[0].ev.name, "f");
	CHECK_EQ(r.items[0].ev.ts, 50);
	CHECK_EQ(r.items[0].ev.nargs, 0);
	CHECK(r.items[0].ev.info == NULL);
	CHECK_EQ(r.items[1].ev.type, PS_EV_END);
	CHECK_EQ(r.items[1].ev.ts, 60);
	ts_rec_free(&r);
	mt_close(&t);
}

/* Metadata must not become a slice in Perfetto, which turns every event
 * record (instants included) into one: it travels in a kernel object
 * record of type NONE, which importers skip.  The instant form older
 * versions wrote still reads back as metadata. */
TEST(fxt_metadata_is_not_an_event)
{
	static const char long_value[] = "a value longer than one word";
	struct builder_words {
		uint64_t w[32];
	} old;
	struct mem_trace t;
	struct ts_recorder r;
	size_t nev, nobj, n = 0;
	uint8_t bytes[sizeof(old.w)];

	CHECK_EQ(mt_open(&t), 0);
	CHECK_EQ(t.w->ops->meta(t.w, "backend", "emulated"), 0);
	CHECK_EQ(t.w->ops->meta(t.w, "config", long_value), 0);
	CHECK_EQ(t.w->ops->meta(t.w, "empty", NULL), 0);
	CHECK_EQ(mt_done(&t), 0);
	CHECK_EQ(walk(t.data, t.len, 4, &nev, NULL), 0);
	CHECK_EQ(nev, 0);
	CHECK_EQ(walk(t.data, t.len, 7, &nobj, NULL), 0);
	CHECK_EQ(nobj, 3);
	for (size_t off = 0; off < t.len;) {
		uint64_t h = le64(t.data + off);

		if ((h & 15) == 7) {
			CHECK_EQ((h >> 16) & 0xff, 0); /* ZX_OBJ_TYPE_NONE */
			CHECK_EQ((h >> 40) & 0xf, 1);  /* one argument */
			CHECK_EQ(le64(t.data + off + 8), 0); /* koid */
		}
		off += ((h >> 4) & 0xfff) * 8;
	}
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.items[0].kind, TS_META);
	CHECK_STR(r.items[0].key, "backend");
	CHECK_STR(r.items[0].value, "emulated");
	CHECK_STR(r.items[1].key, "config");
	CHECK_STR(r.items[1].value, long_value);
	CHECK_STR(r.items[2].key, "empty");
	CHECK_STR(r.items[2].value, "");
	ts_rec_free(&r);
	mt_close(&t);

	/* the old form: a global instant "ptscope.metadata" / "__metadata"
	 * with inline strings and thread, plus its scope word */
	memset(&old, 0, sizeof(old));
	old.w[n++] = 0x0016547846040010ull;
	old.w[n++] = 1 | 2 << 4;
	old.w[n++] = 1000000000;
	old.w[n++] = 4 | 12ull << 4 | 0ull << 16 | 1ull << 20 | 0ull << 24 |
		     (0x8000ull | 10) << 32 | (0x8000ull | 16) << 48;
	old.w[n++] = 0;			     /* ts */
	old.w[n++] = 0;			     /* pid */
	old.w[n++] = 0;			     /* tid */
	memcpy(&old.w[n], "__metadata", 10); /* category, 2 words */
	n += 2;
	memcpy(&old.w[n], "ptscope.metadata", 16); /* name, 2 words */
	n += 2;
	old.w[n++] =
	    6 | 3ull << 4 | (0x8000ull | 1) << 16 | (0x8000ull | 1) << 32;
	memcpy(&old.w[n++], "k", 1);
	memcpy(&old.w[n++], "v", 1);
	old.w[n++] = 2; /* global scope */
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 8; k++)
			bytes[i * 8 + k] = (uint8_t)(old.w[i] >> (8 * k));
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(bytes, n * 8, &r.base), 0);
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.items[0].kind, TS_META);
	CHECK_STR(r.items[0].key, "k");
	CHECK_STR(r.items[0].value, "v");
	ts_rec_free(&r);
}

/* ---- other producers' records ------------------------------------------- */

struct builder {
	uint64_t w[256];
	size_t n;
};

static void put(struct builder *b, uint64_t v)
{
	b->w[b->n++] = v;
}

static void put_str(struct builder *b, const char *s)
{
	uint64_t v[8] = {0};
	size_t len = strlen(s);

	memcpy(v, s, len);
	for (size_t i = 0; i < (len + 7) / 8; i++)
		put(b, v[i]);
}

static void to_bytes(const struct builder *b, uint8_t *out)
{
	for (size_t i = 0; i < b->n; i++)
		for (int k = 0; k < 8; k++)
			out[i * 8 + k] = (uint8_t)(b->w[i] >> (8 * k));
}

TEST(fxt_reads_foreign_records)
{
	struct builder b = {.n = 0};
	uint8_t bytes[256 * 8];
	struct ts_recorder r;

	put(&b, 0x0016547846040010ull);
	/* init: 1,000,000 ticks per second (1 tick = 1 us) */
	put(&b, 1 | 2 << 4);
	put(&b, 1000000);
	/* string 1 = "a" */
	put(&b, 2 | 2 << 4 | 1ull << 16 | 1ull << 32);
	put_str(&b, "a");
	/* instant, inline thread (pid 7 tid 8), inline cat "cc", name
	 * index 1, one koid arg with inline name "k" */
	put(&b, 4 | 8 << 4 | 0ull << 16 | 1ull << 20 | 0ull << 24 |
		    (0x8000ull | 2) << 32 | 1ull << 48);
	put(&b, 3); /* ts: 3 us */
	put(&b, 7);
	put(&b, 8);
	put_str(&b, "cc");
	put(&b, 8 | 3 << 4 | (0x8000ull | 1) << 16);
	put_str(&b, "k");
	put(&b, 0xabcdef);
	/* re-assign string 1 = "bb" */
	put(&b, 2 | 2 << 4 | 1ull << 16 | 2ull << 32);
	put_str(&b, "bb");
	/* thread 5 = (70, 80) */
	put(&b, 3 | 3 << 4 | 5ull << 16);
	put(&b, 70);
	put(&b, 80);
	/* unknown record type 10, 3 words */
	put(&b, 10 | 3 << 4);
	put(&b, 0);
	put(&b, 0);
	/* blob record, 2 words */
	put(&b, 5 | 2 << 4 | 0x8000ull << 16);
	put(&b, 0x1122334455667788ull);
	/* large record (type 15), 2 words */
	put(&b, 15 | 2ull << 4);
	put(&b, 0);
	/* async begin event: skipped */
	put(&b, 4 | 3 << 4 | 5ull << 16 | 5ull << 24 | 1ull << 48);
	put(&b, 1);
	put(&b, 42);
	/* begin on thread 5, name index 1 ("bb"), two args: unknown type 12
	 * (2 words) then int32 -7 */
	put(&b, 4 | 5 << 4 | 2ull << 16 | 2ull << 20 | 5ull << 24 | 1ull << 48);
	put(&b, 10);
	put(&b, 12 | 2 << 4 | 1ull << 16);
	put(&b, 0);
	put(&b, 1 | 1 << 4 | 1ull << 16 | (uint64_t)(uint32_t)-7 << 32);
	/* kernel object: thread koid 80, name "bb", process koid arg 70 */
	put(&b, 7 | 5 << 4 | 2ull << 16 | 1ull << 24 | 1ull << 40);
	put(&b, 80);
	put(&b, 8 | 3 << 4 | (0x8000ull | 7) << 16);
	put_str(&b, "process");
	put(&b, 70);
	to_bytes(&b, bytes);

	ts_rec_init(&r);
	CHECK_EQ(fxt_read(bytes, b.n * 8, &r.base), 0);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.items[0].ev.type, PS_EV_INSTANT);
	CHECK_EQ(r.items[0].ev.ts, 3000);
	CHECK_EQ(r.items[0].ev.pid, 7);
	CHECK_EQ(r.items[0].ev.tid, 8);
	CHECK_STR(r.items[0].ev.category, "cc");
	CHECK_STR(r.items[0].ev.name, "a");
	CHECK_EQ(r.items[0].ev.scope, PS_SCOPE_THREAD);
	CHECK_EQ(r.items[0].ev.nargs, 1);
	CHECK_STR(r.items[0].args[0].name, "k");
	CHECK_EQ(r.items[0].args[0].type, PS_ARG_UINT);
	CHECK_EQ(r.items[0].args[0].v.u, 0xabcdef);
	CHECK_EQ(r.items[1].ev.type, PS_EV_BEGIN);
	CHECK_EQ(r.items[1].ev.ts, 10000);
	CHECK_EQ(r.items[1].ev.pid, 70);
	CHECK_EQ(r.items[1].ev.tid, 80);
	CHECK_STR(r.items[1].ev.name, "bb");
	CHECK(r.items[1].ev.category == NULL);
	CHECK_EQ(r.items[1].ev.nargs, 1);
	CHECK_STR(r.items[1].args[0].name, "bb"); /* index 1, re-assigned */
	CHECK_EQ(r.items[1].args[0].v.i, -7);
	CHECK_EQ(r.items[2].kind, TS_THREAD);
	CHECK_EQ(r.items[2].ev.pid, 70);
	CHECK_EQ(r.items[2].ev.tid, 80);
	CHECK_STR(r.items[2].value, "bb");
	ts_rec_free(&r);

	/* An event naming an undefined string index is an error. */
	b.n = 0;
	put(&b, 0x0016547846040010ull);
	put(&b, 4 | 4 << 4 | 9ull << 48);
	put(&b, 1);
	put(&b, 1);
	put(&b, 1);
	to_bytes(&b, bytes);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(bytes, b.n * 8, &r.base), PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(PS_ERR_FORMAT), "byte 8") != NULL);
	ts_rec_free(&r);
}

/* ---- damaged input ------------------------------------------------------ */

static int small_trace(struct mem_trace *t)
{
	struct ps_arg args[] = {
	    {.name = "s", .type = PS_ARG_STRING, .v.s = "value"},
	    {.name = "d", .type = PS_ARG_DOUBLE, .v.d = 1.5},
	};
	struct ps_span_info info = {
	    .module = "m", .address = 16, .file = "f.c", .line = 3};
	struct ps_event b = {.type = PS_EV_BEGIN,
			     .pid = 1,
			     .tid = 2,
			     .ts = 3,
			     .name = "n",
			     .category = "c",
			     .info = &info,
			     .args = args,
			     .nargs = 2};
	struct ps_event e = {.type = PS_EV_END, .pid = 1, .tid = 2, .ts = 4};
	int err = mt_open(t);

	if (!err)
		err = t->w->ops->process(t->w, 1, "proc");
	if (!err)
		err = t->w->ops->thread(t->w, 1, 2, "thr");
	if (!err)
		err = t->w->ops->meta(t->w, "k", "v");
	if (!err)
		err = ps_write_event(t->w, &b);
	if (!err)
		err = ps_write_event(t->w, &e);
	return err ? err : mt_done(t);
}

TEST(fxt_truncated_at_every_offset)
{
	struct mem_trace t;
	struct ts_recorder r;
	size_t boundaries = 0;

	CHECK_EQ(small_trace(&t), 0);
	for (size_t len = 0; len < t.len; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		size_t nrec;
		int err, at_boundary;

		memcpy(copy, t.data, len);
		at_boundary = len >= 8 && walk(copy, len, -1, &nrec, NULL) == 0;
		ts_rec_init(&r);
		err = fxt_read(copy, len, &r.base);
		ts_rec_free(&r);
		free(copy);
		if (at_boundary) {
			/* A trace cut between records is a shorter trace. */
			CHECK_EQ(err, 0);
			boundaries++;
		} else {
			CHECK_EQ(err, PS_ERR_TRUNCATED);
			CHECK(strstr(ps_err_message(err), "byte") != NULL);
		}
	}
	CHECK(boundaries > 8);
	mt_close(&t);
}

TEST(fxt_random_byte_flips)
{
	struct mem_trace t;
	uint64_t seed = 0x2545f4914f6cdd1dull;
	size_t ok = 0, failed = 0;

	CHECK_EQ(small_trace(&t), 0);
	for (int round = 0; round < 20000; round++) {
		uint8_t *copy = malloc(t.len);
		struct ts_recorder r;
		int flips, err;

		memcpy(copy, t.data, t.len);
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		flips = 1 + (int)(seed % 3);
		for (int f = 0; f < flips; f++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			copy[(seed >> 8) % t.len] ^=
			    (uint8_t)(1u << (seed & 7));
		}
		ts_rec_init(&r);
		err = fxt_read(copy, t.len, &r.base);
		ts_rec_free(&r);
		free(copy);
		CHECK(err == 0 || err == PS_ERR_FORMAT ||
		      err == PS_ERR_TRUNCATED);
		if (err)
			failed++;
		else
			ok++;
	}
	/* Both outcomes happen: the reader neither accepts nor rejects all. */
	CHECK(ok > 0);
	CHECK(failed > 0);
	mt_close(&t);
}

/* A failing sink's error comes back from the writer, and stays. */
TEST(fxt_sink_errors_propagate)
{
	struct ps_event ev = {.type = PS_EV_INSTANT, .name = "x"};
	struct ps_sink *sink = NULL;
	struct ps_writer *w = NULL;
	int saved, full, err = 0, later = 0;
	size_t i;

	full = open("/dev/full", O_WRONLY);
	if (full < 0)
		SKIP("no /dev/full to make writes fail");
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(full, STDOUT_FILENO);
	close(full);
	if (!ps_sink_open("-", 0, &sink))
		err = fxt_writer_new(sink, &w);
	/* Far more than the writer's and the sink's buffers hold. */
	for (i = 0; w && !err && i < 1000000; i++) {
		ev.ts = i;
		err = ps_write_event(w, &ev);
	}
	if (w && !err)
		err = w->ops->flush(w);
	if (w) {
		/* Once failed, later writes fail too. */
		later = ps_write_event(w, &ev);
		if (!later)
			later = w->ops->flush(w);
		w->ops->destroy(w);
	}
	ps_sink_abort(sink);
	/* stdout is back before any CHECK can return. */
	dup2(saved, STDOUT_FILENO);
	close(saved);
	CHECK(sink != NULL);
	CHECK_EQ(err, PS_ERR_IO);
	CHECK_EQ(later, PS_ERR_IO);
}

/* ---- stable-string epochs (ps_writer.stable_epoch) ---------------------- */

/* Inside an epoch a seen pointer is trusted; once the epoch ends (or a
 * new one starts) the same buffer with new text is seen as new text. */
TEST(fxt_stable_epoch_trust_ends_with_epoch)
{
	struct mem_trace t;
	struct ts_recorder r;
	char buf[16];
	struct ps_event ev = {.type = PS_EV_INSTANT, .name = buf};
	uint64_t prev;

	CHECK_EQ(mt_open(&t), 0);
	strcpy(buf, "alpha");
	prev = ps_writer_stable_begin(t.w);
	CHECK_EQ(prev, 0);
	CHECK(t.w->stable_epoch != 0);
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	ps_writer_stable_end(t.w, prev);
	CHECK_EQ(t.w->stable_epoch, 0);
	strcpy(buf, "beta");
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	strcpy(buf, "gamma");
	prev = ps_writer_stable_begin(t.w);
	CHECK_EQ(ps_write_event(t.w, &ev), 0);
	ps_writer_stable_end(t.w, prev);
	CHECK_EQ(mt_done(&t), 0);
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(t.data, t.len, &r.base), 0);
	CHECK_EQ(r.n, 4);
	CHECK_STR(r.items[0].ev.name, "alpha");
	CHECK_STR(r.items[1].ev.name, "alpha");
	CHECK_STR(r.items[2].ev.name, "beta");
	CHECK_STR(r.items[3].ev.name, "gamma");
	ts_rec_free(&r);
	mt_close(&t);
}

/* Span BEGINs in an epoch are written from a memo: the result must be
 * the same bytes as without the epoch, also when the span info of one
 * name changes and when the string table reassigns the memo's slots. */
#define RARE_AGAIN 98297 /* same address/line pattern as i == 1 */

static int write_spans(struct ps_writer *w, int stable)
{
	static const char *const names[] = {"main", "top", "mid", "leaf"};
	static const char mod[] = "/bin/work", file[] = "work.c";
	char cold[32];
	uint64_t prev = stable ? ps_writer_stable_begin(w) : 0;
	int err = 0;

	for (size_t i = 0; i < 3 * 32767 && !err; i++) {
		struct ps_span_info in = {.module = mod,
					  .address = 0x401000 + (i & 3) * 16,
					  .file = file,
					  .line = (uint32_t)(10 + (i & 3))};
		struct ps_event b = {.type = PS_EV_BEGIN,
				     .pid = 1,
				     .tid = 1,
				     .ts = i,
				     .name = names[i & 3],
				     .category = "function",
				     .info = &in};
		struct ps_event e = {.type = PS_EV_END,
				     .pid = 1,
				     .tid = 1,
				     .ts = i,
				     .name = names[i & 3]};
		struct ps_event c = {.type = PS_EV_INSTANT,
				     .pid = 1,
				     .tid = 1,
				     .ts = i,
				     .name = cold};

		/* every 7th span of a name shows another line */
		if (i % 7 == 0)
			in.line += 100;
		/* a name used again only after the table has been refilled:
		 * its memo's slots were reassigned meanwhile */
		if (i == 1 || i == RARE_AGAIN)
			b.name = e.name = "rare";
		err = ps_write_event(w, &b);
		if (!err)
			err = ps_write_event(w, &e);
		/* fill the string table, outside the promise */
		if (!err && i % 3 == 0) {
			uint64_t ep = w->stable_epoch;

			w->stable_epoch = 0;
			snprintf(cold, sizeof(cold), "cold_%zu", i);
			err = ps_write_event(w, &c);
			w->stable_epoch = ep;
		}
	}
	if (stable)
		ps_writer_stable_end(w, prev);
	return err;
}

TEST(fxt_stable_epoch_same_bytes)
{
	struct mem_trace a, b;
	struct ts_recorder r;

	CHECK_EQ(mt_open(&a), 0);
	CHECK_EQ(mt_open(&b), 0);
	CHECK_EQ(write_spans(a.w, 0), 0);
	CHECK_EQ(write_spans(b.w, 1), 0);
	CHECK_EQ(mt_done(&a), 0);
	CHECK_EQ(mt_done(&b), 0);
	CHECK_EQ(a.len, b.len);
	CHECK(!memcmp(a.data, b.data, a.len));
	ts_rec_init(&r);
	CHECK_EQ(fxt_read(b.data, b.len, &r.base), 0);
	CHECK_STR(r.items[0].ev.name, "main");
	CHECK_EQ(r.items[0].info.line, 110);
	CHECK_STR(r.items[0].info.file, "work.c");
	CHECK_STR(r.items[3].ev.name, "rare");
	CHECK_EQ(r.items[3].info.line, 11);
	CHECK_EQ(r.items[3].info.address, 0x401010);
	for (size_t i = 0; i < r.n; i++) {
		if (r.items[i].ev.ts != RARE_AGAIN ||
		    r.items[i].ev.type != PS_EV_BEGIN)
			continue;
		CHECK_STR(r.items[i].ev.name, "rare");
		CHECK_STR(r.items[i].ev.category, "function");
		CHECK_EQ(r.items[i].info.line, 11);
	}
	ts_rec_free(&r);
	mt_close(&a);
	mt_close(&b);
}

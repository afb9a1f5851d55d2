/* SPDX-License-Identifier: MIT */
/* Every event kind through every trace format and back, compared by
 * meaning: the text writer's slices form of what was read back must equal
 * that of the original event stream.  In memory (each format's reader on
 * the bytes its writer made) and through files (ps_writer_open /
 * ps_read_trace, plain and gzipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "src/output/json.h"
#include "src/output/perfetto.h"
#include "src/output/sink.h"
#include "src/output/text.h"
#include "tests/harness.h"
#include "tests/support.h"

/* A CLOCK_MONOTONIC-sized ts (35 days of uptime).  Chrome JSON carries µs
 * that Perfetto, and so our reader, reads as doubles: every ns survives
 * only below 2^52 / 1000 µs, about 52 days. */
#define T0 3000000000000000ull

static const struct ps_arg span_args[] = {
    {.name = "count", .type = PS_ARG_INT, .v.i = -42},
    {.name = "size", .type = PS_ARG_UINT, .v.u = 1ull << 40},
    {.name = "ratio", .type = PS_ARG_DOUBLE, .v.d = 0.125},
    {.name = "ok", .type = PS_ARG_BOOL, .v.b = 1},
    {.name = "where", .type = PS_ARG_POINTER, .v.u = 0x7ffd1234},
    {.name = "label", .type = PS_ARG_STRING, .v.s = "h\xc3\xa9llo \"w\""},
};

static const struct ps_arg series[] = {
    {.name = "rss", .type = PS_ARG_INT, .v.i = 1048576},
};

static const struct ps_span_info info = {"/usr/bin/demo", 0x401136, "demo.c",
					 42};

/* The original stream: every kind of call a writer can get. */
static int replay(struct ps_writer *w)
{
	struct ps_event ev;
	int err = 0;

#define EMIT(...)                                                              \
	do {                                                                   \
		ev = (struct ps_event){__VA_ARGS__};                           \
		if (!err)                                                      \
			err = w->ops->event(w, &ev);                           \
	} while (0)

	err = w->ops->meta(w, "backend", "emulated");
	if (!err)
		err = w->ops->process(w, 100, "demo");
	if (!err)
		err = w->ops->thread(w, 100, 101, "main");
	if (!err)
		err = w->ops->thread(w, 100, 102, "worker \xe2\x98\xba");
	if (!err)
		err = w->ops->process(w, 200, "other");
	if (!err)
		err = ps_write_parent(w, 200, 100);
	EMIT(.type = PS_EV_BEGIN, .pid = 100, .tid = 101, .ts = T0,
	     .name = "main", .category = "demo", .info = &info);
	EMIT(.type = PS_EV_BEGIN, .pid = 100, .tid = 101, .ts = T0 + 10,
	     .name = "compute", .category = "demo", .args = span_args,
	     .nargs = sizeof(span_args) / sizeof(*span_args));
	EMIT(.type = PS_EV_COMPLETE, .pid = 100, .tid = 101, .ts = T0 + 20,
	     .dur = 5, .name = "leaf", .category = "demo");
	EMIT(.type = PS_EV_FLOW_BEGIN, .pid = 100, .tid = 101, .ts = T0 + 21,
	     .flow_id = 7, .name = "handoff", .category = "demo");
	EMIT(.type = PS_EV_INSTANT, .pid = 100, .tid = 101, .ts = T0 + 30,
	     .name = "checkpoint", .category = "demo",
	     .scope = PS_SCOPE_THREAD);
	EMIT(.type = PS_EV_END, .pid = 100, .tid = 101, .ts = T0 + 40);
	EMIT(.type = PS_EV_COUNTER, .pid = 100, .tid = 101, .ts = T0 + 45,
	     .name = "memory", .category = "demo", .args = series, .nargs = 1);
	EMIT(.type = PS_EV_BEGIN, .pid = 100, .tid = 102, .ts = T0 + 50,
	     .name = "job", .category = "demo");
	EMIT(.type = PS_EV_FLOW_END, .pid = 100, .tid = 102, .ts = T0 + 55,
	     .flow_id = 7, .name = "handoff", .category = "demo");
	EMIT(.type = PS_EV_COMPLETE, .pid = 100, .tid = 102, .ts = T0 + 60,
	     .dur = 0, .name = "empty", .category = "demo");
	EMIT(.type = PS_EV_END, .pid = 100, .tid = 102, .ts = T0 + 70);
	EMIT(.type = PS_EV_INSTANT, .pid = 100, .tid = 101, .ts = T0 + 80,
	     .name = "crash", .category = "demo", .scope = PS_SCOPE_PROCESS);
	EMIT(.type = PS_EV_COMPLETE, .pid = 200, .tid = 201, .ts = T0 + 90,
	     .dur = 1000000, .name = "other::run()", .category = "demo");
	EMIT(.type = PS_EV_END, .pid = 100, .tid = 101, .ts = T0 + 100);
	return err;
#undef EMIT
}

static char *dump_original(int slices)
{
	struct ps_writer *w = ts_text_on_memory(slices);
	size_t len;

	if (!w || replay(w))
		return NULL;
	return (char *)ts_writer_bytes(w, &len, NULL);
}

typedef int (*read_fn)(const uint8_t *, size_t, struct ps_writer *);

/* Original → @make's format in memory → @read → dump. */
static char *through(int (*make)(struct ps_sink *, struct ps_writer **),
		     read_fn read, int slices, int *rc)
{
	struct ps_writer *w = ts_writer_on_memory(make), *t;
	uint8_t *bytes;
	size_t len;

	*rc = PS_ERR_NOMEM;
	if (!w)
		return NULL;
	*rc = replay(w);
	bytes = ts_writer_bytes(w, &len, NULL);
	if (*rc || !bytes) {
		free(bytes);
		return NULL;
	}
	t = ts_text_on_memory(slices);
	if (!t) {
		free(bytes);
		return NULL;
	}
	*rc = read(bytes, len, t);
	free(bytes);
	if (*rc)
		printf("# read back: %s\n", ps_err_message(*rc));
	return (char *)ts_writer_bytes(t, &len, NULL);
}

/* Print the first line where two dumps differ, for the test log. */
static void show_difference(const char *want, const char *got)
{
	size_t i = 0, line = 1, start = 0;

	while (want[i] && want[i] == got[i]) {
		if (want[i] == '\n') {
			line++;
			start = i + 1;
		}
		i++;
	}
	printf("# first difference on line %zu:\n#  want: %.*s\n#  got:  "
	       "%.*s\n",
	       line, (int)strcspn(want + start, "\n"), want + start,
	       (int)strcspn(got + start, "\n"), got + start);
}

#define SAME_DUMP(want, got)                                                   \
	do {                                                                   \
		CHECK((want) != NULL && (got) != NULL);                        \
		if (strcmp(want, got))                                         \
			show_difference(want, got);                            \
		CHECK_STR(got, want);                                          \
	} while (0)

static void roundtrip_memory(int (*make)(struct ps_sink *, struct ps_writer **),
			     read_fn read)
{
	char *want = dump_original(1);
	int rc;
	char *got = through(make, read, 1, &rc);

	CHECK_EQ(rc, 0);
	SAME_DUMP(want, got);
	free(want);
	free(got);
}

TEST(json_roundtrip_by_meaning)
{
	roundtrip_memory(json_writer_new, json_read);
}

TEST(fxt_roundtrip_by_meaning)
{
	roundtrip_memory(fxt_writer_new, fxt_read);
}

TEST(perfetto_roundtrip_by_meaning)
{
	roundtrip_memory(pftw_writer_new, pftw_read);
}

/* Slices form facts that the comparisons above rely on. */
TEST(slices_form_of_the_original)
{
	char *s = dump_original(1);

	CHECK(s != NULL);
	CHECK(strstr(s, "slice pid=100 tid=101 ts=3000000000000000 "
			"depth=0 dur=100 name=\"main\" cat=\"demo\" "
			"args={address=0x401136 file=\"demo.c\" line=42 "
			"module=\"/usr/bin/demo\"}\n"));
	CHECK(strstr(s, "slice pid=100 tid=101 ts=3000000000000020 "
			"depth=2 dur=5 name=\"leaf\""));
	CHECK(strstr(s, "slice pid=100 tid=102 ts=3000000000000060 "
			"depth=1 dur=0 name=\"empty\""));
	CHECK(strstr(s, "instant pid=100 ts=3000000000000080 "
			"scope=process name=\"crash\""));
	/* counters keep no category: Perfetto's counter tracks have none */
	CHECK(strstr(s, "counter pid=100 ts=3000000000000045 "
			"name=\"memory\" args={rss=1048576}"));
	CHECK(strstr(s, "meta \"backend\" \"emulated\"\nprocess pid=100 "
			"\"demo\"\nprocess pid=200 \"other\"\n"
			"thread pid=100 tid=101 \"main\"\n"));
	free(s);
}

/* Files: each extension picks its format, .gz compresses, and
 * ps_read_trace tells the format from the content. */
static void roundtrip_file(const char *ext)
{
	char dir[] = "/tmp/ps_roundtrip.XXXXXX", path[128];
	struct ps_writer *w, *t;
	char *want = dump_original(1), *got;
	size_t len;
	int rc;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/trace%s", dir, ext);
	CHECK_EQ(ps_writer_open(path, PS_FORMAT_AUTO, &w), 0);
	CHECK_EQ(replay(w), 0);
	CHECK_EQ(ps_writer_finish(w), 0);
	t = ts_text_on_memory(1);
	CHECK(t != NULL);
	rc = ps_read_trace(path, PS_FORMAT_AUTO, t);
	got = (char *)ts_writer_bytes(t, &len, NULL);
	unlink(path);
	rmdir(dir);
	if (rc)
		printf("# %s: %s\n", ext, ps_err_message(rc));
	CHECK_EQ(rc, 0);
	SAME_DUMP(want, got);
	free(want);
	free(got);
}

TEST(file_json)
{
	roundtrip_file(".json");
}
TEST(file_json_gz)
{
	roundtrip_file(".json.gz");
}
TEST(file_fxt)
{
	roundtrip_file(".fxt");
}
TEST(file_fxt_gz)
{
	roundtrip_file(".fxt.gz");
}
TEST(file_pftrace)
{
	roundtrip_file(".pftrace");
}
TEST(file_perfetto_trace_gz)
{
	roundtrip_file(".perfetto-trace.gz");
}

TEST(format_from_path_and_name)
{
	int gz = -1;

	CHECK_EQ(ps_format_from_path("a/b.fxt", &gz), PS_FORMAT_FXT);
	CHECK_EQ(gz, 0);
	CHECK_EQ(ps_format_from_path("x.JSON.gz", &gz), PS_FORMAT_JSON);
	CHECK_EQ(gz, 1);
	CHECK_EQ(ps_format_from_path("x.pftrace", NULL), PS_FORMAT_PERFETTO);
	CHECK_EQ(ps_format_from_path("x.perfetto-trace", NULL),
		 PS_FORMAT_PERFETTO);
	CHECK_EQ(ps_format_from_path("x.pb", NULL), PS_FORMAT_PERFETTO);
	CHECK_EQ(ps_format_from_path("x.proto", NULL), PS_FORMAT_PERFETTO);
	CHECK_EQ(ps_format_from_path("x.txt", NULL), PS_FORMAT_TEXT);
	CHECK_EQ(ps_format_from_path("trace", &gz), PS_FORMAT_FXT);
	CHECK_EQ(ps_format_from_path("trace.gz", &gz), PS_FORMAT_FXT);
	CHECK_EQ(gz, 1);
	CHECK_EQ(ps_format_from_path(".gz", &gz), PS_FORMAT_FXT);
	CHECK_EQ(ps_format_from_name("perfetto"), PS_FORMAT_PERFETTO);
	CHECK_EQ(ps_format_from_name("JSON"), PS_FORMAT_JSON);
	CHECK_EQ(ps_format_from_name("text"), PS_FORMAT_TEXT);
	CHECK_EQ(ps_format_from_name("fxt"), PS_FORMAT_FXT);
	CHECK_EQ(ps_format_from_name("xml"), PS_ERR_INVAL);
	CHECK(strstr(ps_err_message(PS_ERR_INVAL), "xml"));
	CHECK_EQ(ps_format_from_name(NULL), PS_ERR_INVAL);
}

TEST(failed_write_leaves_no_file)
{
	char dir[] = "/tmp/ps_roundtrip.XXXXXX", path[128];
	struct ps_writer *w, *t;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/bad.json", dir);
	/* a reader error part-way: the writer is aborted */
	CHECK_EQ(ps_writer_open(path, PS_FORMAT_AUTO, &w), 0);
	t = w;
	CHECK_EQ(
	    json_read((const uint8_t *)"[{\"ph\":\"i\",\"ts\":1},{", 20, t),
	    PS_ERR_TRUNCATED);
	ps_writer_abort(w);
	CHECK(access(path, F_OK) != 0);
	CHECK(rmdir(dir) == 0); /* no temporary file left either */
	snprintf(path, sizeof(path), "%s/no/such/dir/x.fxt", dir);
	CHECK_EQ(ps_writer_open(path, PS_FORMAT_AUTO, &w), PS_ERR_IO);
	CHECK(strstr(ps_err_message(PS_ERR_IO), "no/such/dir"));
}

TEST(read_errors_name_the_file)
{
	char path[] = "/tmp/ps_roundtrip_bad.XXXXXX";
	struct ps_writer *t = ts_text_on_memory(0);
	size_t len;
	int fd, rc;

	CHECK(t != NULL);
	rc = ps_read_trace("/nonexistent/trace.json", PS_FORMAT_AUTO, t);
	CHECK_EQ(rc, PS_ERR_IO);
	CHECK(strstr(ps_err_message(rc), "/nonexistent/trace.json"));
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, "\x01\x02garbage", 9) == 9);
	close(fd);
	rc = ps_read_trace(path, PS_FORMAT_AUTO, t);
	CHECK_EQ(rc, PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(rc), "not a trace"));
	/* Truncated FXT / Perfetto: the binary readers' errors get the
	 * file name too. */
	rc = ps_read_trace(path, PS_FORMAT_FXT, t);
	CHECK(rc < 0);
	CHECK(strstr(ps_err_message(rc), path));
	unlink(path);
	rc = ps_read_trace("/tmp", PS_FORMAT_AUTO, t);
	CHECK_EQ(rc, PS_ERR_IO);
	CHECK(strstr(ps_err_message(rc), "directory"));
	free(ts_writer_bytes(t, &len, NULL));
}

/* The slices form nests slices that start at one time as Perfetto does:
 * BEGIN/END pairs in the order they came (a zero-length slice and then a
 * longer one are siblings, as a tail call through a PLT stub gives), and
 * complete slices longer first (Perfetto's rule for JSON X events). */
TEST(slices_form_nests_equal_starts_like_perfetto)
{
	struct ps_writer *w = ts_text_on_memory(1);
	struct ps_event ev = {.pid = 1, .tid = 1};
	char *out;
	int err;

	CHECK(w != NULL);
#define EMIT(t, n, at, d)                                                      \
	do {                                                                   \
		ev.type = (t);                                                 \
		ev.name = (n);                                                 \
		ev.ts = (at);                                                  \
		ev.dur = (d);                                                  \
		CHECK_EQ(ps_write_event(w, &ev), 0);                           \
	} while (0)
	EMIT(PS_EV_BEGIN, "plt0", 100, 0);
	EMIT(PS_EV_END, "plt0", 100, 0);
	EMIT(PS_EV_BEGIN, "resolve", 100, 0);
	EMIT(PS_EV_BEGIN, "inner", 100, 0);
	EMIT(PS_EV_END, "inner", 101, 0);
	EMIT(PS_EV_END, "resolve", 150, 0);
	EMIT(PS_EV_COMPLETE, "x_short", 200, 0);
	EMIT(PS_EV_COMPLETE, "x_long", 200, 50);
#undef EMIT
	out = (char *)ts_writer_bytes(w, NULL, &err);
	CHECK(out != NULL);
	CHECK(strstr(out, "ts=100 depth=0 dur=0 name=\"plt0\""));
	CHECK(strstr(out, "ts=100 depth=0 dur=50 name=\"resolve\""));
	CHECK(strstr(out, "ts=100 depth=1 dur=1 name=\"inner\""));
	CHECK(strstr(out, "ts=200 depth=0 dur=50 name=\"x_long\""));
	CHECK(strstr(out, "ts=200 depth=1 dur=0 name=\"x_short\""));
	free(out);
}

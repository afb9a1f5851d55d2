/* SPDX-License-Identifier: MIT */
/* Tests for the Chrome JSON writer (src/output/json.c) and streaming
 * reader (src/output/json_read.c).  Read results are checked through the
 * text writer's event form, which prints every field of every event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/json.h"
#include "src/output/sink.h"
#include "src/output/text.h"
#include "tests/harness.h"
#include "tests/support.h"

/* Read @json with chunks of @chunk bytes (0: all at once); returns the
 * event-form dump and the reader's result in *rc. */
static char *read_chunked(const char *json, size_t chunk, int *rc)
{
	struct ps_writer *w = ts_text_on_memory(0);
	struct json_reader *r;
	size_t len = strlen(json), off = 0;
	int err, ferr;
	char *out;

	if (!w || json_reader_new("t.json", w, &r))
		return NULL;
	err = 0;
	while (!err && off < len) {
		size_t n = chunk && len - off > chunk ? chunk : len - off;

		err = json_reader_feed(r, (const uint8_t *)json + off, n);
		off += n;
	}
	if (!err)
		err = json_reader_finish(r);
	json_reader_free(r);
	out = (char *)ts_writer_bytes(w, NULL, &ferr);
	*rc = err;
	return out;
}

static char *read_json(const char *json, int *rc)
{
	return read_chunked(json, 0, rc);
}

/* What @body writes with the JSON writer, as a string (caller frees). */
static char *write_json(void (*body)(struct ps_writer *w))
{
	struct ps_writer *w = ts_writer_on_memory(json_writer_new);
	int err;

	if (!w)
		return NULL;
	body(w);
	return (char *)ts_writer_bytes(w, NULL, &err);
}

#define EXPECT_READ(json, expected)                                            \
	do {                                                                   \
		int rc_;                                                       \
		char *got_ = read_json(json, &rc_);                            \
		CHECK(got_ != NULL);                                           \
		if (rc_)                                                       \
			harness_failf(__FILE__, __LINE__, "read: %s",          \
				      ps_err_message(rc_));                    \
		CHECK_EQ(rc_, 0);                                              \
		CHECK_STR(got_, expected);                                     \
		free(got_);                                                    \
	} while (0)

TEST(reads_complete_begin_end)
{
	EXPECT_READ("{\"traceEvents\":[{\"ph\":\"X\",\"pid\":1,\"tid\":2,"
		    "\"ts\":10,\"dur\":2.5,\"name\":\"f\",\"cat\":\"c\"},"
		    "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":11,\"name\":"
		    "\"g\"},{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":12}]}",
		    "complete ts=10000 pid=1 tid=2 dur=2500 name=\"f\" "
		    "cat=\"c\"\n"
		    "complete ts=11000 pid=1 tid=2 dur=1000 name=\"g\"\n");
}

TEST(reads_instants_with_every_scope)
{
	EXPECT_READ("[{\"ph\":\"i\",\"ts\":1,\"pid\":3,\"tid\":4,\"name\":"
		    "\"a\",\"s\":\"g\"},{\"ph\":\"I\",\"ts\":2,\"pid\":3,"
		    "\"tid\":4,\"name\":\"b\",\"s\":\"p\"},{\"ph\":\"i\","
		    "\"ts\":3,\"pid\":3,\"tid\":4,\"name\":\"c\"}]",
		    "instant ts=1000 pid=3 tid=4 scope=global name=\"a\"\n"
		    "instant ts=2000 pid=3 tid=4 scope=process name=\"b\"\n"
		    "instant ts=3000 pid=3 tid=4 scope=thread name=\"c\"\n");
}

TEST(reads_counters_numeric_series_only)
{
	EXPECT_READ("[{\"ph\":\"C\",\"ts\":1,\"pid\":1,\"name\":\"mem\","
		    "\"args\":{\"rss\":100,\"heap\":2.5,\"label\":\"x\"}},"
		    "{\"ph\":\"C\",\"ts\":2,\"pid\":1,\"name\":\"none\","
		    "\"args\":{\"label\":\"x\"}},"
		    "{\"ph\":\"C\",\"ts\":3,\"pid\":1,\"name\":\"str\","
		    "\"args\":{\"a\":\"12.5\",\"b\":\"0x10\",\"c\":\"1x\","
		    "\"d\":true}}]",
		    "counter ts=1000 pid=1 tid=1 name=\"mem\" "
		    "args={heap=2.5 rss=100}\n"
		    "counter ts=3000 pid=1 tid=1 name=\"str\" "
		    "args={a=12.5 b=16}\n");
}

TEST(reads_metadata_names_and_ignores_others)
{
	EXPECT_READ("[{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\","
		    "\"args\":{\"name\":\"app\"}},{\"ph\":\"M\",\"pid\":1,"
		    "\"tid\":7,\"name\":\"thread_name\",\"args\":{\"name\":"
		    "\"worker\"}},{\"ph\":\"M\",\"pid\":1,\"name\":"
		    "\"process_sort_index\",\"args\":{\"sort_index\":3}}]",
		    "process pid=1 \"app\"\nthread pid=1 tid=7 \"worker\"\n");
}

TEST(reads_flows_v1_and_v2)
{
	EXPECT_READ("[{\"ph\":\"s\",\"ts\":1,\"pid\":1,\"tid\":1,\"id\":"
		    "\"0x1f\",\"name\":\"f\"},{\"ph\":\"t\",\"ts\":2,\"pid\":1,"
		    "\"tid\":1,\"id2\":{\"local\":\"0x20\"}},{\"ph\":\"f\","
		    "\"ts\":3,\"pid\":1,\"tid\":2,\"id\":31,\"bp\":\"e\"},"
		    "{\"ph\":\"X\",\"ts\":4,\"dur\":1,\"pid\":1,\"tid\":2,"
		    "\"name\":\"src\",\"bind_id\":\"0x5\",\"flow_out\":true},"
		    "{\"ph\":\"s\",\"ts\":5,\"pid\":1,\"tid\":2}]",
		    "flow-begin ts=1000 pid=1 tid=1 id=31 name=\"f\"\n"
		    "flow-step ts=2000 pid=1 tid=1 id=32\n"
		    "flow-end ts=3000 pid=1 tid=2 id=31\n"
		    "complete ts=4000 pid=1 tid=2 dur=1000 name=\"src\"\n"
		    "flow-begin ts=4000 pid=1 tid=2 id=5\n");
}

/* Chrome writes an "X" when it closes, so a child often comes before its
 * parent at the same start time; Perfetto sorts "E" first, then "X"
 * longest first, so the reader hands events on in that order (FXT and
 * protobuf importers keep file order for ties and would nest the parent
 * inside the child).  A v2 flow stays right after its slice. */
TEST(events_come_out_in_perfettos_order)
{
	EXPECT_READ("[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,"
		    "\"dur\":2,\"name\":\"child\"},"
		    "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,"
		    "\"dur\":5,\"name\":\"parent\"},"
		    "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":6,"
		    "\"name\":\"next\"},"
		    "{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":6,"
		    "\"name\":\"mark\"},"
		    "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":6},"
		    "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":0,"
		    "\"name\":\"first\"},"
		    "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":8,"
		    "\"dur\":1,\"name\":\"src\",\"bind_id\":\"0x7\","
		    "\"flow_out\":true},"
		    "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":8,"
		    "\"dur\":3,\"name\":\"outer\"}]",
		    "complete ts=0 pid=1 tid=1 dur=6000 name=\"first\"\n"
		    "complete ts=1000 pid=1 tid=1 dur=5000 name=\"parent\"\n"
		    "complete ts=1000 pid=1 tid=1 dur=2000 name=\"child\"\n"
		    "begin ts=6000 pid=1 tid=1 name=\"next\"\n"
		    "instant ts=6000 pid=1 tid=1 scope=thread name=\"mark\"\n"
		    "complete ts=8000 pid=1 tid=1 dur=3000 name=\"outer\"\n"
		    "complete ts=8000 pid=1 tid=1 dur=1000 name=\"src\"\n"
		    "flow-begin ts=8000 pid=1 tid=1 id=7\n");
}

/* Perfetto's JSON importer (json_trace_parser_impl.cc): no tid is the
 * process's main thread, tid = pid, for events and name records alike;
 * a thread instant without a tid is dropped; "R" is an instant. */
TEST(missing_tid_is_the_main_thread_like_perfetto)
{
	EXPECT_READ("[{\"ph\":\"M\",\"pid\":5,\"name\":\"thread_name\","
		    "\"args\":{\"name\":\"[5] prog\"}},"
		    "{\"ph\":\"B\",\"pid\":5,\"ts\":1,\"name\":\"main\"},"
		    "{\"ph\":\"i\",\"pid\":5,\"ts\":2,\"name\":\"gone\"},"
		    "{\"ph\":\"R\",\"pid\":5,\"tid\":6,\"ts\":2,\"name\":"
		    "\"mark\"},"
		    "{\"ph\":\"i\",\"pid\":5,\"ts\":2,\"name\":\"odd\","
		    "\"s\":\"x\",\"tid\":5},"
		    "{\"ph\":\"E\",\"pid\":5,\"ts\":3,\"name\":\"main\"}]",
		    "thread pid=5 tid=5 \"[5] prog\"\n"
		    "complete ts=1000 pid=5 tid=5 dur=2000 name=\"main\"\n"
		    "instant ts=2000 pid=5 tid=6 scope=thread name=\"mark\"\n");
}

/* Perfetto's slice tracker pairs an E with the topmost open slice of the
 * same name (and category, when the E has one), not blindly with the top:
 * after a longjmp, uftrace writes an E for a function whose B is long
 * closed, and the frames it jumped over never end. */
TEST(end_matches_by_name_like_perfetto)
{
	EXPECT_READ("[{\"ph\":\"B\",\"pid\":1,\"ts\":1,\"name\":\"main\"},"
		    "{\"ph\":\"B\",\"pid\":1,\"ts\":2,\"name\":\"setjmp\"},"
		    "{\"ph\":\"E\",\"pid\":1,\"ts\":3,\"name\":\"setjmp\"},"
		    "{\"ph\":\"B\",\"pid\":1,\"ts\":4,\"name\":\"deep\"},"
		    "{\"ph\":\"B\",\"pid\":1,\"ts\":5,\"name\":\"longjmp\"},"
		    "{\"ph\":\"E\",\"pid\":1,\"ts\":6,\"name\":\"setjmp\","
		    "\"args\":{\"lost\":1}},"
		    "{\"ph\":\"B\",\"pid\":1,\"ts\":7,\"name\":\"after\"},"
		    "{\"ph\":\"E\",\"pid\":1,\"ts\":8,\"name\":\"after\","
		    "\"args\":{\"ret\":0}},"
		    "{\"ph\":\"E\",\"pid\":1,\"ts\":9,\"name\":\"main\"}]",
		    "complete ts=1000 pid=1 tid=1 dur=8000 name=\"main\"\n"
		    "complete ts=2000 pid=1 tid=1 dur=1000 name=\"setjmp\"\n"
		    "begin ts=4000 pid=1 tid=1 name=\"deep\"\n"
		    "begin ts=5000 pid=1 tid=1 name=\"longjmp\"\n"
		    "complete ts=7000 pid=1 tid=1 dur=1000 name=\"after\" "
		    "args={ret=0}\n");
}

TEST(complete_without_dur_is_dropped_like_perfetto)
{
	EXPECT_READ("[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":"
		    "\"nodur\"},{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":2,"
		    "\"dur\":0,\"name\":\"zero\"}]",
		    "complete ts=2000 pid=1 tid=1 dur=0 name=\"zero\"\n");
}

TEST(end_category_must_match_like_perfetto)
{
	EXPECT_READ(
	    "[{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":"
	    "\"a\",\"cat\":\"x\"},"
	    "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":2,\"name\":\"b\"},"
	    "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":3,\"cat\":\"x\"},"
	    "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":3,\"cat\":\"y\"}]",
	    "complete ts=1000 pid=1 tid=1 dur=2000 name=\"a\" "
	    "cat=\"x\"\n"
	    "begin ts=2000 pid=1 tid=1 name=\"b\"\n");
}

/* An E that closes a slice below the top leaves the open ones above it;
 * the next event after that end cuts them off there (Perfetto's
 * MaybeCloseStack, "misplaced end"), and an X that starts inside a slice
 * but ends after it is dropped as overlapping. */
TEST(misplaced_end_and_overlap_like_perfetto)
{
	EXPECT_READ(
	    "[{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":"
	    "\"a\"},"
	    "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":2,\"name\":\"b\"},"
	    "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":3,\"name\":\"a\"},"
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":4,"
	    "\"name\":\"c\"},"
	    "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":6,\"name\":\"b\"},"
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":7,\"dur\":4,"
	    "\"name\":\"overlaps\"}]",
	    "complete ts=1000 pid=1 tid=1 dur=2000 name=\"a\"\n"
	    "complete ts=2000 pid=1 tid=1 dur=1000 name=\"b\"\n"
	    "complete ts=5000 pid=1 tid=1 dur=4000 name=\"c\"\n");
}

TEST(skips_phases_not_modelled)
{
	const char *json =
	    "[{\"ph\":\"b\",\"ts\":1,\"id\":1},{\"ph\":\"P\",\"ts\":1},"
	    "{\"ph\":\"O\",\"ts\":1,\"args\":{\"snapshot\":{\"a\":[1]}}},"
	    "7,\"str\",[1,[2]],{\"ph\":\"X\",\"name\":\"no ts\"},"
	    "{\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1,\"dur\":0}]";
	struct ps_writer *w = ts_text_on_memory(0);
	struct json_reader *r;
	char *out;
	int err;

	CHECK(w != NULL);
	CHECK_EQ(json_reader_new("x", w, &r), 0);
	CHECK_EQ(json_reader_feed(r, (const uint8_t *)json, strlen(json)), 0);
	CHECK_EQ(json_reader_finish(r), 0);
	CHECK_EQ(json_reader_events(r), 1);
	CHECK_EQ(json_reader_skipped(r), 7);
	json_reader_free(r);
	out = (char *)ts_writer_bytes(w, NULL, &err);
	CHECK_STR(out, "complete ts=1000 pid=1 tid=1 dur=0\n");
	free(out);
}

/* Fractional µs are read as Perfetto reads them (doubles, then µs * 1000
 * rounded), so converted traces show the nanoseconds Perfetto shows for the
 * JSON: 1700000000123456.789 µs is ...768 ns there, not ...789.  Integer
 * µs are exact.  Events come out sorted by time. */
TEST(microseconds_round_like_perfetto)
{
	EXPECT_READ("[{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":1.5},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":0.0015},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":0.0014},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":1e3},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":1.23456789E2},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":"
		    "1700000000123456.789},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":"
		    "18446744073709551},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":25e-4},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":\"1.234\"},"
		    "{\"ph\":\"i\",\"pid\":0,\"tid\":0,\"ts\":0}]",
		    "instant ts=0 pid=0 tid=0 scope=thread\n"
		    "instant ts=1 pid=0 tid=0 scope=thread\n"
		    "instant ts=2 pid=0 tid=0 scope=thread\n"
		    "instant ts=3 pid=0 tid=0 scope=thread\n"
		    "instant ts=1234 pid=0 tid=0 scope=thread\n"
		    "instant ts=1500 pid=0 tid=0 scope=thread\n"
		    "instant ts=123457 pid=0 tid=0 scope=thread\n"
		    "instant ts=1000000 pid=0 tid=0 scope=thread\n"
		    "instant ts=1700000000123456768 pid=0 tid=0 scope=thread\n"
		    "instant ts=18446744073709551000 pid=0 tid=0 "
		    "scope=thread\n");
}

TEST(rejects_bad_timestamps)
{
	static const char *const bad[] = {
	    "[{\"ph\":\"i\",\"ts\":-1}]",
	    "[{\"ph\":\"i\",\"ts\":1e30}]",
	    "[{\"ph\":\"i\",\"ts\":18446744073709551.616}]",
	    "[{\"ph\":\"i\",\"ts\":9300000000000000.5}]",
	    "[{\"ph\":\"i\",\"ts\":\".5\"}]",
	    "[{\"ph\":\"i\",\"ts\":\"1.5x\"}]",
	    "[{\"ph\":\"i\",\"ts\":\"soon\"}]",
	    "[{\"ph\":\"X\",\"ts\":1,\"dur\":null}]",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int rc;
		char *out = read_json(bad[i], &rc);

		free(out);
		CHECK_EQ(rc, PS_ERR_FORMAT);
		CHECK(strstr(ps_err_message(rc), "byte 1"));
		CHECK(strstr(ps_err_message(rc), "microseconds"));
	}
}

TEST(reads_args_of_every_json_type)
{
	EXPECT_READ("[{\"ph\":\"i\",\"ts\":1,\"pid\":1,\"tid\":1,\"args\":{"
		    "\"n\":null,\"t\":true,\"f\":false,\"i\":-5,\"u\":"
		    "18446744073709551615,\"big\":1e400,\"d\":0.25,"
		    "\"s\":\"x\\\"y\",\"p\":\"0xdeadBEEF\",\"h\":\"0xzz\","
		    "\"o\":{\"a\":{\"b\":1},\"l\":[true,[]],\"e\":{}}}}]",
		    "instant ts=1000 pid=1 tid=1 scope=thread args={big=inf "
		    "d=0.25 f=false h=\"0xzz\" i=-5 n=null o.a.b=1 o.e=\"{}\" "
		    "o.l[0]=true o.l[1]=\"[]\" p=0xdeadbeef s=\"x\\\"y\" "
		    "t=true u=18446744073709551615}\n");
}

TEST(string_pids_are_hashed_and_named)
{
	int rc;
	char *a = read_json("[{\"ph\":\"i\",\"ts\":1,\"pid\":\"gpu\","
			    "\"tid\":\"queue\"},{\"ph\":\"i\",\"ts\":2,"
			    "\"pid\":\"gpu\",\"tid\":\"queue\"}]",
			    &rc);
	char *b, *c;
	unsigned long long pid, tid;

	CHECK(a != NULL);
	CHECK_EQ(rc, 0);
	/* names come first, then the events */
	CHECK(strstr(a, "instant ts=1000 ") != NULL);
	CHECK_EQ(sscanf(strstr(a, "instant ts=1000 "),
			"instant ts=1000 pid=%llu tid=%llu", &pid, &tid),
		 2);
	CHECK(pid > 0 && pid <= 0x7fffffff && tid > 0 && tid != pid);
	/* The string becomes the name, unless an M record names it. */
	CHECK(strstr(a, "process pid=") && strstr(a, " \"gpu\"\n"));
	CHECK(strstr(a, " \"queue\"\n"));
	b = read_json("[{\"ph\":\"M\",\"pid\":\"gpu\",\"name\":"
		      "\"process_name\",\"args\":{\"name\":\"GPU Process\"}},"
		      "{\"ph\":\"i\",\"ts\":1,\"pid\":\"gpu\",\"tid\":1}]",
		      &rc);
	CHECK_EQ(rc, 0);
	CHECK(strstr(b, "\"GPU Process\""));
	CHECK(!strstr(b, "\"gpu\""));
	/* Same text, same number, every time. */
	c = read_json("[{\"ph\":\"i\",\"ts\":1,\"pid\":\"gpu\","
		      "\"tid\":\"queue\"},{\"ph\":\"i\",\"ts\":2,"
		      "\"pid\":\"gpu\",\"tid\":\"queue\"}]",
		      &rc);
	CHECK_STR(a, c);
	free(a);
	free(b);
	free(c);
}

TEST(metadata_object_becomes_meta_calls)
{
	EXPECT_READ("{\"metadata\":{\"clock\":\"boot\",\"n\":3,\"nest\":"
		    "{\"k\":false}},\"displayTimeUnit\":\"ms\","
		    "\"systemTraceEvents\":\"ignored\",\"traceEvents\":[]}",
		    "meta \"clock\" \"boot\"\nmeta \"n\" \"3\"\n"
		    "meta \"nest.k\" \"false\"\n");
}

TEST(accepts_unterminated_bare_array)
{
	EXPECT_READ("[{\"ph\":\"i\",\"ts\":1,\"pid\":1,\"tid\":1},\n",
		    "instant ts=1000 pid=1 tid=1 scope=thread\n");
	EXPECT_READ("[{\"ph\":\"i\",\"ts\":1,\"pid\":1,\"tid\":1}",
		    "instant ts=1000 pid=1 tid=1 scope=thread\n");
	EXPECT_READ("\xef\xbb\xbf  [", "");
}

TEST(truncated_event_is_an_error_with_offset)
{
	int rc;
	char *out = read_json("[{\"ph\":\"i\",\"ts\":1,\"pid\":1},"
			      "{\"ph\":\"i\",\"ts\":2,\"na",
			      &rc);

	CHECK_EQ(rc, PS_ERR_TRUNCATED);
	CHECK(strstr(ps_err_message(rc), "starts at byte 27"));
	free(out);
	out = read_json("{\"traceEvents\":[{\"ph\":\"i\",\"ts\":1}", &rc);
	CHECK_EQ(rc, PS_ERR_TRUNCATED);
	CHECK(strstr(ps_err_message(rc), "truncated"));
	free(out);
	out = read_json("   ", &rc);
	CHECK_EQ(rc, PS_ERR_FORMAT);
	free(out);
}

TEST(syntax_error_names_the_byte)
{
	int rc;
	char *out = read_json("[{\"ph\":\"X\",,\"ts\":1}]", &rc);

	CHECK_EQ(rc, PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(rc), "t.json: invalid JSON at byte 11: "));
	CHECK(strstr(ps_err_message(rc), "Chrome trace event file?"));
	free(out);
	out = read_json("42", &rc);
	CHECK_EQ(rc, PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(rc), "not an object or array"));
	free(out);
	out = read_json("[{}] x", &rc);
	CHECK_EQ(rc, PS_ERR_FORMAT);
	free(out);
}

TEST(nesting_limit)
{
	char json[2048];
	size_t n = 0;
	int rc;
	char *out;

	n += (size_t)sprintf(json, "[{\"ph\":\"i\",\"args\":{\"a\":");
	for (int i = 0; i < 300; i++)
		json[n++] = '[';
	json[n] = '\0';
	out = read_json(json, &rc);
	CHECK_EQ(rc, PS_ERR_LIMIT);
	free(out);
}

/* Every prefix and every one-byte corruption of a valid trace: the reader
 * returns a result (no crash), and every error names a byte offset. */
TEST(every_truncation_and_corruption_is_handled)
{
	const char *good =
	    "{\"traceEvents\":[{\"ph\":\"X\",\"pid\":\"p\",\"tid\":2,"
	    "\"ts\":1.5,\"dur\":2,\"name\":\"f\\u00e9\",\"args\":{\"a\":"
	    "[1,{\"b\":null}],\"s\":\"0x10\"}},{\"ph\":\"C\",\"ts\":3,"
	    "\"args\":{\"v\":1e2}},{\"ph\":\"s\",\"id2\":{\"global\":7},"
	    "\"ts\":4}],\"metadata\":{\"k\":\"v\"}}";
	static const char subst[] = "}]{[\",:0-x\\";
	size_t len = strlen(good);
	char *buf = malloc(len + 1);
	int rc, errors = 0;

	CHECK(buf != NULL);
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(buf, good, cut);
		buf[cut] = '\0';
		free(read_json(buf, &rc));
		if (cut > 0)
			CHECK(rc == PS_ERR_TRUNCATED || rc == PS_ERR_FORMAT);
		if (cut > 0)
			CHECK(strstr(ps_err_message(rc), "byte"));
	}
	for (size_t at = 0; at < len; at++) {
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			memcpy(buf, good, len + 1);
			buf[at] = subst[k];
			free(read_json(buf, &rc));
			if (rc) {
				errors++;

				CHECK(rc == PS_ERR_FORMAT ||
				      rc == PS_ERR_TRUNCATED);
				CHECK(strstr(ps_err_message(rc), "byte"));
			}
		}
	}
	CHECK(errors > 0);
	free(buf);
}

TEST(chunking_does_not_change_the_result)
{
	const char *json =
	    "{\"traceEvents\":[{\"ph\":\"B\",\"pid\":1,\"tid\":2,"
	    "\"ts\":1234.5678,\"name\":\"long name \\u263a\",\"args\":{"
	    "\"nested\":{\"deep\":[1,2,3]}}},{\"ph\":\"E\",\"pid\":1,"
	    "\"tid\":2,\"ts\":2000}],\"metadata\":{\"x\":\"y\"}}";
	int rc;
	char *whole = read_json(json, &rc), *part;

	CHECK_EQ(rc, 0);
	for (size_t chunk = 1; chunk < 20; chunk++) {
		part = read_chunked(json, chunk, &rc);
		CHECK_EQ(rc, 0);
		CHECK_STR(part, whole);
		free(part);
	}
	free(whole);
}

/* ---- writer -------------------------------------------------------- */

static void write_every_kind(struct ps_writer *w)
{
	static const struct ps_arg args[] = {
	    {.name = "i", .type = PS_ARG_INT, .v.i = -3},
	    {.name = "u", .type = PS_ARG_UINT, .v.u = UINT64_MAX},
	    {.name = "d", .type = PS_ARG_DOUBLE, .v.d = 2.0},
	    {.name = "b", .type = PS_ARG_BOOL, .v.b = 1},
	    {.name = "n", .type = PS_ARG_NULL},
	    {.name = "p", .type = PS_ARG_POINTER, .v.u = 0x401000},
	    {.name = "s", .type = PS_ARG_STRING, .v.s = "v"},
	};
	struct ps_span_info info = {"/bin/x", 0x401136, "x.c", 12};
	struct ps_event ev = {
	    .pid = 1, .tid = 2, .ts = 1500, .name = "f", .category = "c"};

	w->ops->process(w, 1, "proc");
	w->ops->thread(w, 1, 2, "thr");
	w->ops->meta(w, "backend", "emulated");
	ev.type = PS_EV_BEGIN;
	ev.info = &info;
	w->ops->event(w, &ev);
	ev.info = NULL;
	ev.type = PS_EV_END;
	ev.ts = 2000;
	ev.name = ev.category = NULL;
	w->ops->event(w, &ev);
	ev.type = PS_EV_COMPLETE;
	ev.ts = 999;
	ev.dur = 1;
	ev.name = "x";
	ev.args = args;
	ev.nargs = sizeof(args) / sizeof(*args);
	w->ops->event(w, &ev);
	ev.args = NULL;
	ev.nargs = 0;
	ev.type = PS_EV_INSTANT;
	ev.scope = PS_SCOPE_PROCESS;
	ev.ts = 0;
	w->ops->event(w, &ev);
	ev.type = PS_EV_FLOW_END;
	ev.flow_id = 255;
	w->ops->event(w, &ev);
}

TEST(writer_writes_every_kind_exactly)
{
	char *out = write_json(write_every_kind);

	CHECK_STR(out,
		  "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		  "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\","
		  "\"args\":{\"name\":\"proc\"}},\n"
		  "{\"ph\":\"M\",\"pid\":1,\"tid\":2,\"name\":\"thread_name\","
		  "\"args\":{\"name\":\"thr\"}},\n"
		  "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":1.500,\"name\":"
		  "\"f\",\"cat\":\"c\",\"args\":{\"module\":\"/bin/x\","
		  "\"address\":\"0x401136\",\"file\":\"x.c\",\"line\":12}},\n"
		  "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":2.000},\n"
		  "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0.999,"
		  "\"dur\":0.001,"
		  "\"name\":\"x\",\"args\":{\"i\":-3,\"u\":"
		  "18446744073709551615,\"d\":2.0,\"b\":true,\"n\":null,"
		  "\"p\":\"0x401000\",\"s\":\"v\"}},\n"
		  "{\"ph\":\"i\",\"pid\":1,\"tid\":2,\"ts\":0.000,\"name\":"
		  "\"x\",\"s\":\"p\"},\n"
		  "{\"ph\":\"f\",\"pid\":1,\"tid\":2,\"ts\":0.000,\"name\":"
		  "\"x\",\"bp\":\"e\",\"id\":\"0xff\"}\n"
		  "],\n\"metadata\":{\"backend\":\"emulated\"}}\n");
	free(out);
}

static void write_nasty_strings(struct ps_writer *w)
{
	struct ps_event ev = {.type = PS_EV_INSTANT, .pid = 1, .tid = 1};

	ev.name = "q\"b\\s\n\t\x01\x1f\x7f";
	w->ops->event(w, &ev);
	ev.name = "ok \xc3\xa9 \xe2\x98\xba \xf0\x9f\x98\x80";
	w->ops->event(w, &ev);
	/* lone continuation, truncated 2-byte, overlong, surrogate, and
	 * above U+10FFFF */
	ev.name = "a\x80"
		  "b\xc3"
		  "c\xc0\xaf"
		  "d\xed\xa0\x80"
		  "e\xf4\x90\x80\x80";
	w->ops->event(w, &ev);
}

TEST(writer_escapes_strings)
{
	char *out = write_json(write_nasty_strings);
	int rc;
	char *back;

	CHECK(strstr(out, "\"name\":\"q\\\"b\\\\s\\n\\t\\u0001\\u001f\x7f\""));
	CHECK(strstr(out, "\"name\":\"ok \xc3\xa9 \xe2\x98\xba "
			  "\xf0\x9f\x98\x80\""));
	CHECK(strstr(out, "\"name\":\"a\\ufffdb\\ufffdc\\ufffd\\ufffdd"
			  "\\ufffd\\ufffd\\ufffde\\ufffd\\ufffd\\ufffd"
			  "\\ufffd\""));
	/* and reads back to the same strings (invalid bytes replaced) */
	back = read_json(out, &rc);
	CHECK_EQ(rc, 0);
	CHECK(strstr(back, "name=\"q\\\"b\\\\s\\n\\t\\x01\\x1f\\x7f\""));
	CHECK(strstr(back, "name=\"a\xef\xbf\xbd"
			   "b"));
	free(back);
	free(out);
}

static void write_doubles(struct ps_writer *w)
{
	struct ps_arg a[] = {
	    {.name = "third", .type = PS_ARG_DOUBLE, .v.d = 1.0 / 3},
	    {.name = "tiny", .type = PS_ARG_DOUBLE, .v.d = 5e-324},
	    {.name = "nan", .type = PS_ARG_DOUBLE, .v.d = 0.0 / 0.0},
	    {.name = "neg", .type = PS_ARG_DOUBLE, .v.d = -1e300},
	};
	struct ps_event ev = {.type = PS_EV_INSTANT, .args = a, .nargs = 4};

	w->ops->event(w, &ev);
}

TEST(writer_doubles_read_back_exactly)
{
	char *out = write_json(write_doubles);
	int rc;
	char *back = read_json(out, &rc);

	CHECK_EQ(rc, 0);
	CHECK(strstr(out, "\"third\":0.3333333333333333,"));
	CHECK(strstr(out, "\"nan\":\"NaN\""));
	CHECK(strstr(back, "third=0.3333333333333333 "
			   "tiny=4.94065645841247e-324"));
	CHECK(strstr(back, "neg=-1.0000000000000001e+300") ||
	      strstr(back, "neg=-1e+300"));
	free(back);
	free(out);
}

TEST(reads_from_a_file_descriptor_in_chunks)
{
	/* More than one 256 kB chunk, through a pipe. */
	struct ps_writer *w = ts_text_on_memory(1);
	const char *ev = "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,"
			 "\"dur\":1,\"name\":\"n\"},\n";
	int fds[2], rc, err;
	size_t i, n = 20000;
	char *out;
	FILE *f;

	CHECK(w != NULL);
	CHECK(pipe(fds) == 0);
	if (fork() == 0) {
		close(fds[0]);
		f = fdopen(fds[1], "w");
		fputs("[", f);
		for (i = 0; i < n; i++)
			fputs(ev, f);
		fputs("{}]", f);
		fclose(f);
		_exit(0);
	}
	close(fds[1]);
	rc = json_read_fd(fds[0], "pipe", w);
	close(fds[0]);
	wait(NULL);
	CHECK_EQ(rc, 0);
	out = (char *)ts_writer_bytes(w, NULL, &err);
	CHECK(out != NULL);
	for (i = 0; out[i]; i++)
		n -= out[i] == '\n';
	CHECK_EQ(n, 0);
	free(out);
}

TEST(null_arguments_are_refused)
{
	struct ps_writer *w;
	struct json_reader *r;

	CHECK_EQ(json_writer_new(NULL, &w), PS_ERR_INVAL);
	CHECK_EQ(json_reader_new("x", NULL, &r), PS_ERR_INVAL);
	CHECK_EQ(json_read(NULL, 3, NULL), PS_ERR_INVAL);
	json_reader_free(NULL);
}

TEST(probe_recognises_json_starts)
{
	CHECK(json_probe((const uint8_t *)" \n\t{", 4));
	CHECK(json_probe((const uint8_t *)"\xef\xbb\xbf[", 4));
	CHECK(!json_probe((const uint8_t *)"  ", 2));
	CHECK(!json_probe((const uint8_t *)"\x10\x00", 2));
	CHECK(!json_probe(NULL, 0));
}

static void write_zero_and_tracks(struct ps_writer *w)
{
	struct ps_event e = {
	    .type = PS_EV_BEGIN, .pid = 1, .tid = 2, .ts = 1000, .name = "p"};

	ps_write_event(w, &e); /* p: 1000..3000 */
	e.ts = 2000;
	e.name = "z";
	ps_write_event(w, &e); /* z: zero length at 2000 */
	e.type = PS_EV_END;
	e.name = NULL;
	ps_write_event(w, &e);
	e.ts = 3000;
	ps_write_event(w, &e);
	/* the thread's off-CPU track: on the thread, no thread record */
	w->ops->thread(w, 1, PS_TID_SCHED | 2, "x scheduler");
	e = (struct ps_event){.type = PS_EV_COMPLETE,
			      .pid = 1,
			      .tid = PS_TID_SCHED | 2,
			      .ts = 1500,
			      .dur = 100,
			      .name = "sleeping"};
	ps_write_event(w, &e);
	/* its block I/O track: an async pair */
	e.tid = PS_TID_BLOCK | 2;
	e.name = "block I/O";
	ps_write_event(w, &e);
	/* a foreign trace's big tid stays a thread */
	e.tid = 792178931;
	e.name = "big";
	ps_write_event(w, &e);
}

/* Perfetto puts every E first at one time: a zero-length B/E pair would
 * close the parent, so it is an X; tracks of a thread add no thread. */
TEST(writer_zero_length_spans_and_thread_tracks)
{
	char *out = write_json(write_zero_and_tracks);

	CHECK_STR(out,
		  "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		  "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":1.000,"
		  "\"name\":\"p\"},\n"
		  "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":2.000,"
		  "\"dur\":0.000,\"name\":\"z\"},\n"
		  "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":3.000},\n"
		  "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1.500,"
		  "\"dur\":0.100,\"name\":\"sleeping\"},\n"
		  "{\"ph\":\"b\",\"pid\":1,\"tid\":2,\"ts\":1.500,"
		  "\"id\":\"0x1\",\"name\":\"block I/O\",\"cat\":\"block\"},\n"
		  "{\"ph\":\"e\",\"pid\":1,\"tid\":2,\"ts\":1.600,"
		  "\"id\":\"0x1\",\"name\":\"block I/O\",\"cat\":\"block\"},\n"
		  "{\"ph\":\"X\",\"pid\":1,\"tid\":792178931,\"ts\":1.500,"
		  "\"dur\":0.100,\"name\":\"big\"}\n"
		  "],\n\"metadata\":{}}\n");
	free(out);
}

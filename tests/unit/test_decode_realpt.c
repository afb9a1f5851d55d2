/* SPDX-License-Identifier: MIT */
/* The decoder session (decoder/session.c, switches.c) on real Intel PT
 * recordings made by others: shared/testdata/real-pt (see its README). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "decoder/decoder.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

/* A writer that checks nesting per thread and keeps a text log. */
struct check_writer {
	struct ps_writer w;
	char log[65536];
	size_t len;
	struct {
		uint64_t tid;
		int depth;
		uint64_t begin_ts[64];
	} th[8];
	int nth;
	int bad_nesting;   /* END without BEGIN, or before its BEGIN */
	int instant_depth; /* depth of the thread at the last instant */
	uint64_t begins, ends, instants;
};

static int cw_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct check_writer *c = (struct check_writer *)w;
	int i, n;

	for (i = 0; i < c->nth && c->th[i].tid != ev->tid; i++)
		;
	if (i == c->nth) {
		if (c->nth == 8)
			return PS_ERR_LIMIT;
		c->th[c->nth++].tid = ev->tid;
	}
	if (ev->type == PS_EV_BEGIN) {
		c->begins++;
		if (c->th[i].depth < 64)
			c->th[i].begin_ts[c->th[i].depth] = ev->ts;
		c->th[i].depth++;
	} else if (ev->type == PS_EV_END) {
		c->ends++;
		if (c->th[i].depth <= 0)
			c->bad_nesting = 1;
		else if (--c->th[i].depth < 64 &&
			 c->th[i].begin_ts[c->th[i].depth] > ev->ts)
			c->bad_nesting = 1;
	} else if (ev->type == PS_EV_INSTANT) {
		c->instants++;
		c->instant_depth = c->th[i].depth;
	}
	n = snprintf(c->log + c->len, sizeof(c->log) - c->len,
		     "%c %" PRIu64 " %s\n", "BECI"[ev->type & 3], ev -> tid,
		     ev -> name ? ev -> name : "-");
	if (n > 0 && (size_t)n < sizeof(c->log) - c->len)
		c->len += n;
	return 0;
}

static const struct ps_writer_ops cw_ops = {.name = "check", .event = cw_event};

static struct check_writer *cw_new(void)
{
	struct check_writer *c = calloc(1, sizeof(*c));

	if (c)
		c->w.ops = &cw_ops;
	return c;
}

static int all_closed(const struct check_writer *c)
{
	for (int i = 0; i < c->nth; i++)
		if (c->th[i].depth)
			return 0;
	return 1;
}

static struct dec_config cpu_cfg(int model, int stepping)
{
	struct dec_config cfg = {
	    .cpu = {1, 6, (uint8_t)model, (uint8_t)stepping}, .span_info = 1};
	return cfg;
}

TEST(session_rejects_null)
{
	struct dec_session *s;
	struct dec_config cfg = {0};

	POISON(s);
	CHECK_EQ(dec_session_new(NULL, &s), PS_ERR_INVAL);
	CHECK(s == NULL);
	CHECK_EQ(dec_session_new(&cfg, NULL), PS_ERR_INVAL);
	dec_session_free(NULL);
	CHECK_EQ(dec_session_new(&cfg, &s), 0);
	CHECK_EQ(dec_add_elf(s, 1, ts_realpt("README.md"), 0, 0, 0),
		 PS_ERR_FORMAT);
	CHECK(dec_add_elf(s, 1, "/nonexistent/a.out", 0, 0, 0) < 0);
	CHECK_EQ(dec_decode_thread(s, 1, 1, NULL, 0, NULL), PS_ERR_INVAL);
	dec_session_free(s);
}

TEST(single_thread_main)
{
	struct dec_config cfg = cpu_cfg(79, 1);
	struct check_writer *c = cw_new();
	const struct dec_stats *st;
	struct dec_session *s;
	uint8_t *pt;
	size_t len;

	pt = ts_read_file(ts_realpt("lldb-single-thread/3842849.trace"), &len);
	CHECK(pt && c);
	CHECK_EQ(dec_session_new(&cfg, &s), 0);
	CHECK_EQ(dec_add_elf(s, 1234, ts_realpt("lldb-single-thread/a.out"), 0,
			     0, 0),
		 0);
	CHECK_EQ(dec_decode_thread(s, 1234, 3842849, pt, len, &c->w), 0);
	st = dec_get_stats(s);
	CHECK_EQ(st->instructions, 21);
	CHECK_EQ(st->err_nomap + st->err_decode + st->err_overflow, 0);
	CHECK_EQ(st->bytes, 4096);
	/* main runs from 0x400511 to 0x40052d; the first async disable is
	 * the kernel taking over (an interrupt) until tracing resumes; the
	 * second ends the trace, and what followed it is unknown, so it makes
	 * no span */
	CHECK_STR(c->log, "B 3842849 main\nB 3842849 [kernel]\n"
			  "E 3842849 [kernel]\nE 3842849 main\n");
	CHECK(!c->bad_nesting && all_closed(c));
	CHECK_EQ(st->spans, 2);
	dec_session_free(s);
	free(pt);
	free(c);
}

TEST(multi_file_calls_libraries_and_marks_the_gap)
{
	struct dec_config cfg = cpu_cfg(79, 1);
	struct check_writer *c = cw_new();
	const struct dec_stats *st;
	struct dec_session *s;
	const char *err_at, *plt_at;
	uint8_t *pt;
	size_t len;

	pt = ts_read_file(ts_realpt("lldb-multi-file/multi-file.trace"), &len);
	CHECK(pt && c);
	CHECK_EQ(dec_session_new(&cfg, &s), 0);
	CHECK_EQ(
	    dec_add_elf(s, 815455, ts_realpt("lldb-multi-file/a.out"), 0, 0, 0),
	    0);
	CHECK_EQ(dec_add_elf(s, 815455, ts_realpt("lldb-multi-file/libfoo.so"),
			     0x7ffff7bd9000, 0, 0),
		 0);
	CHECK_EQ(dec_add_elf(s, 815455, ts_realpt("lldb-multi-file/libbar.so"),
			     0x7ffff79d7000, 0, 0),
		 0);
	CHECK_EQ(dec_decode_thread(s, 815455, 815455, pt, len, &c->w), 0);
	st = dec_get_stats(s);
	CHECK_EQ(st->instructions, 45);
	CHECK_EQ(st->err_nomap, 1);
	/* the error is an instant, with every frame closed before it */
	CHECK(strstr(c->log, "I 815455 decode error: no memory mapped at "
			     "0x7ffff7df1950\n"));
	CHECK_EQ(c->instants, 1);
	CHECK_EQ(c->instant_depth, 0);
	/* Stream order (ptdump): main's first call of foo()@plt goes
	 * through the lazy-binding resolver in the missing ld.so, so the
	 * gap comes first; the libfoo/libbar calls shown are main's second
	 * call, decoded after the next PSB. */
	err_at = strstr(c->log, "I 815455 decode error");
	CHECK(err_at);
	plt_at = strstr(c->log, "B 815455 foo()@plt\n");
	CHECK(plt_at && plt_at < err_at);
	CHECK(!strstr(c->log, "B 815455 foo()\n") ||
	      strstr(c->log, "B 815455 foo()\n") > err_at);
	CHECK(strstr(err_at, "B 815455 foo()\nB 815455 bar()@plt\n"));
	/* main → foo()@plt → foo() in libfoo → bar()@plt → bar() in
	 * libbar, the PLT stubs replaced by their targets (tail jumps) */
	CHECK(strstr(c->log, "B 815455 foo()@plt\nE 815455 foo()@plt\n"
			     "B 815455 foo()\nB 815455 bar()@plt\n"
			     "E 815455 bar()@plt\nB 815455 bar()\n"
			     "E 815455 bar()\nE 815455 foo()\n"));
	CHECK(!c->bad_nesting && all_closed(c));
	dec_session_free(s);
	free(pt);
	free(c);
}

static int count_lines(const char *log, const char *prefix)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, prefix)); p++)
		n += p == log || p[-1] == '\n';
	return n;
}

TEST(per_cpu_streams_split_into_threads)
{
	static const int cpus[2] = {45, 51};
	struct dec_config cfg = cpu_cfg(85, 4);
	struct check_writer *c = cw_new();
	const struct dec_stats *st;
	struct dec_session *s;
	char rel[128];

	CHECK(c);
	cfg.time = (struct dec_timeconv){1, 1076264588, 31,
					 18433473881008870804ull, 0};
	CHECK_EQ(dec_session_new(&cfg, &s), 0);
	CHECK_EQ(dec_add_elf(s, 3497234,
			     ts_realpt("lldb-per-cpu/modules/m.out"), 0, 0, 0),
		 0);
	for (int i = 0; i < 2; i++) {
		struct dec_switch *sw;
		uint8_t *pt;
		size_t len;
		int n;

		snprintf(rel, sizeof(rel),
			 "lldb-per-cpu/cores/%d.perf_context_switch_trace",
			 cpus[i]);
		n = dec_read_switches(ts_realpt(rel), &sw);
		CHECK(n > 0);
		snprintf(rel, sizeof(rel),
			 "lldb-per-cpu/cores/%d.intelpt_trace", cpus[i]);
		pt = ts_read_file(ts_realpt(rel), &len);
		CHECK(pt);
		CHECK_EQ(
		    dec_decode_cpu(s, cpus[i], pt, len, sw, (size_t)n, &c->w),
		    0);
		free(pt);
		free(sw);
	}
	st = dec_get_stats(s);
	CHECK_EQ(st->instructions, 61825 + 19521);
	CHECK_EQ(st->err_nomap, 2);
	CHECK_EQ(st->err_truncated, 2);
	/* cpu 45 ran thread 3497497 (in bar), cpu 51 thread 3497496 (in
	 * foo); the main thread 3497234 ran on neither in this window and
	 * nothing lands on a thread of another process */
	CHECK(strstr(c->log, "B 3497497 bar()\n"));
	CHECK(strstr(c->log, "B 3497496 foo()\n"));
	CHECK_EQ(count_lines(c->log, "B 3497497 ") +
		     count_lines(c->log, "B 3497496 "),
		 (int)c->begins);
	CHECK_EQ(count_lines(c->log, "B 3497234 "), 0);
	/* the libc code that was not supplied is a marked gap in 3497496 */
	CHECK(strstr(c->log, "I 3497496 decode error: no memory mapped at "
			     "0x7ffff6fb56a8\n"));
	CHECK_EQ(st->threads, 2);
	CHECK(!c->bad_nesting && all_closed(c));
	dec_session_free(s);
	free(c);
}

TEST(switch_records_parse_and_reject_bad_files)
{
	struct dec_switch *sw;
	char tmp[64];
	uint8_t *buf;
	size_t len;
	FILE *f;
	int n;

	n = dec_read_switches(
	    ts_realpt("lldb-per-cpu/cores/45.perf_context_switch_trace"), &sw);
	CHECK_EQ(n, 76);
	CHECK_EQ(sw[0].time, 7002359266274235ull);
	CHECK_EQ(sw[0].out, 1);
	CHECK_EQ(sw[1].pid, 77590);
	CHECK_EQ(sw[1].tid, 77685);
	CHECK_EQ(sw[1].out, 0);
	for (int i = 1; i < n; i++)
		CHECK(sw[i - 1].time <= sw[i].time);
	free(sw);
	CHECK_EQ(dec_read_switches("/nonexistent", &sw), PS_ERR_IO);
	buf = ts_read_file(
	    ts_realpt("lldb-per-cpu/cores/45.perf_context_switch_trace"), &len);
	CHECK(buf);
	snprintf(tmp, sizeof(tmp), "/tmp/ptscope-sw-%d", (int)getpid());
	f = fopen(tmp, "wb");
	CHECK(f);
	fwrite(buf, 1, 100, f); /* cut inside the 4th record */
	fclose(f);
	CHECK_EQ(dec_read_switches(tmp, &sw), PS_ERR_TRUNCATED);
	memset(buf + 32, 0, 8); /* a record of size 0 */
	f = fopen(tmp, "wb");
	fwrite(buf, 1, len, f);
	fclose(f);
	CHECK_EQ(dec_read_switches(tmp, &sw), PS_ERR_FORMAT);
	f = fopen(tmp, "wb");
	fclose(f);
	CHECK_EQ(dec_read_switches(tmp, &sw), 0);
	free(sw);
	unlink(tmp);
	free(buf);
}

TEST(bad_streams_never_crash)
{
	struct dec_config cfg = cpu_cfg(79, 1);
	struct check_writer *c = cw_new();
	struct dec_session *s;
	uint8_t *pt, zeros[4096] = {0};
	size_t len;
	int err;

	pt = ts_read_file(ts_realpt("lldb-multi-file/multi-file.trace"), &len);
	CHECK(pt && c);
	CHECK_EQ(dec_session_new(&cfg, &s), 0);
	CHECK_EQ(dec_add_elf(s, 1, ts_realpt("lldb-multi-file/a.out"), 0, 0, 0),
		 0);
	err = dec_decode_thread(s, 1, 1, zeros, sizeof(zeros), &c->w);
	CHECK_EQ(err, PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(err), "PSB"));
	CHECK_EQ(c->begins, 0);
	/* every cut and a sweep of corruptions: decoded or refused, never
	 * unbalanced */
	for (size_t cut = 1; cut < len; cut += 97) {
		err = dec_decode_thread(s, 1, 1, pt, cut, &c->w);
		CHECK(err == 0 || err == PS_ERR_FORMAT);
		CHECK(!c->bad_nesting && all_closed(c));
	}
	for (size_t i = 0; i < len; i += 13) {
		uint8_t old = pt[i];

		pt[i] ^= 0x5a;
		err = dec_decode_thread(s, 1, 1, pt, len, &c->w);
		pt[i] = old;
		CHECK(err == 0 || err == PS_ERR_FORMAT);
		CHECK(!c->bad_nesting && all_closed(c));
	}
	dec_session_free(s);
	free(pt);
	free(c);
}

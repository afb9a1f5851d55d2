/* SPDX-License-Identifier: MIT */
/* perf.data import (perfdata/perfdata*.c, dec_decode_perfdata) on real
 * Intel PT recordings (shared/testdata/real-pt, see its README.md):
 * perf's own Skylake perf.data files, and perf.data files that
 * tools/mkperfdata builds around the LLDB recordings and their binaries,
 * so spans can be checked by name and file:line. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/decoder.h"
#include "perfdata/perfdata.h"
#include "ptscope/error.h"
#include "ptscope/le.h"
#include "tests/harness.h"
#include "tests/support.h"

#define SKYLAKE "perf-data-skylake/perf.data.intel_pt-4.14"
#define SKYLAKE_PIPE "perf-data-skylake/perf.data.piped.intel_pt-4.14"
#define PERCPU_TC "1076264588,31,18433473881008870804"

struct warnings {
	char msg[32][512];
	int n;
};

static void collect_warning(void *ctx, const char *msg)
{
	struct warnings *w = ctx;

	if (w->n < 32)
		snprintf(w->msg[w->n++], sizeof(w->msg[0]), "%s", msg);
}

static int warned(const struct warnings *w, const char *a, const char *b)
{
	for (int i = 0; i < w->n; i++)
		if (strstr(w->msg[i], a) && (!b || strstr(w->msg[i], b)))
			return 1;
	return 0;
}

/* Decode perf.data bytes into @r, warnings into @w. */
static int decode_buf(const uint8_t *buf, size_t len, struct ts_recorder *r,
		      struct warnings *w, struct dec_stats *st)
{
	struct dec_config cfg = {.span_info = 1};
	struct dec_perfdata_opts o = {
	    .name = "test.data", .warn = collect_warning, .warn_ctx = w};

	ts_rec_init(r);
	memset(w, 0, sizeof(*w));
	memset(st, 0, sizeof(*st));
	return dec_decode_perfdata(&cfg, buf, len, &o, &r->base, st);
}

static int decode_path(const char *path, struct ts_recorder *r,
		       struct warnings *w, struct dec_stats *st)
{
	size_t len;
	uint8_t *buf = ts_read_file(path, &len);
	int err;

	if (!buf)
		return PS_ERR_IO;
	err = decode_buf(buf, len, r, w, st);
	free(buf);
	return err;
}

/* Run tools/mkperfdata with @fmt's arguments; 0 on success. */
static int mkperfdata(const char *fmt, ...)
{
	char args[8192], cmd[9000];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s/tools/mkperfdata %s", harness_build(),
		 args);
	return system(cmd);
}

static char tmp_dir[256];

__attribute__((destructor)) static void remove_tmp_dir(void)
{
	char cmd[300];

	if (!tmp_dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp_dir);
}

static const char *tmp_path(const char *name)
{
	static char path[4][512];
	static unsigned i;
	char *dir = tmp_dir;

	if (!dir[0]) {
		snprintf(dir, sizeof(tmp_dir), "/tmp/ptscope-pdtest-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	i = (i + 1) % 4;
	snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
	return path[i];
}

/* Same events in the same order (thread/process names aside). */
static int same_events(const struct ts_recorder *a, const struct ts_recorder *b)
{
	if (a->count[TS_EVENT] != b->count[TS_EVENT])
		return 0;
	for (size_t i = 0; i < a->count[TS_EVENT]; i++)
		if (ts_event_diff(ts_rec_event(a, i), ts_rec_event(b, i)))
			return 0;
	return 1;
}

/* The first span named @name that carries a source line. */
static const struct ps_event *span_named(const struct ts_recorder *r,
					 const char *name)
{
	for (size_t i = 0; i < r->count[TS_EVENT]; i++) {
		const struct ps_event *e = ts_rec_event(r, i);

		if ((e->type == PS_EV_BEGIN || e->type == PS_EV_COMPLETE) &&
		    e->name && !strcmp(e->name, name) && e->info &&
		    e->info->file && e->info->line)
			return e;
	}
	return NULL;
}

/* ---- perf's own files ---- */

struct counts {
	size_t type[128];
	size_t total;
	uint64_t aux_bytes;
};

static int count_record(void *ctx, const struct pd_record *r)
{
	struct counts *c = ctx;

	c->type[r->type < 128 ? r->type : 127]++;
	c->total++;
	c->aux_bytes += r->aux_len;
	return 0;
}

TEST(skylake_every_record_accounted_for)
{
	struct counts c = {0};
	struct pd_recording rec;
	const struct pd_attr *pt;
	const struct pd_build_id *bid;
	char hex[41];
	uint8_t *buf;
	size_t len;

	buf = ts_read_file(ts_realpt(SKYLAKE), &len);
	CHECK(buf);
	/* the counts `perf report -D` prints for this file */
	CHECK_EQ(pd_walk(buf, len, count_record, &c), 257);
	CHECK_EQ(c.type[PD_RECORD_MMAP], 56);
	CHECK_EQ(c.type[PD_RECORD_MMAP2], 10);
	CHECK_EQ(c.type[PD_RECORD_COMM], 3);
	CHECK_EQ(c.type[PD_RECORD_SWITCH_CPU_WIDE], 152);
	CHECK_EQ(c.type[PD_RECORD_ITRACE_START], 2);
	CHECK_EQ(c.type[PD_RECORD_AUX], 10);
	CHECK_EQ(c.type[PD_RECORD_AUXTRACE], 2);
	CHECK_EQ(c.type[PD_RECORD_AUXTRACE_INFO], 1);
	CHECK_EQ(c.type[PD_RECORD_TIME_CONV], 1);
	CHECK_EQ(c.type[PD_RECORD_SAMPLE], 15);
	CHECK_EQ(c.aux_bytes, 12240 + 137728);

	POISON(rec);
	CHECK_EQ(pd_read(buf, len, &rec), 0);
	CHECK_EQ(rec.records, 257);
	CHECK_EQ(rec.nchunks, 2);
	CHECK_EQ(rec.chunks[0].aux.cpu, 0);
	CHECK_EQ(rec.chunks[0].aux.size, 12240);
	CHECK_EQ(rec.chunks[1].aux.cpu, 3);
	CHECK_EQ(rec.chunks[1].aux.size, 137728);
	CHECK_EQ(rec.ncomms, 3);
	/* every switch record and ITRACE_START, with time and cpu */
	CHECK_EQ(rec.nswitches, 152 + 2);
	CHECK_EQ(rec.nmmaps, 56 + 10);
	CHECK_EQ(rec.attrs.n, 4);
	pt = pd_pt_attr(&rec);
	CHECK(pt);
	CHECK_EQ(pt->config, 0x300e601);
	CHECK(!(pt->flags & PD_ATTR_EXCLUDE_KERNEL));
	/* the decode parameters of README.md */
	CHECK_EQ(rec.info_type, PD_AUXTRACE_INTEL_PT);
	CHECK_EQ(rec.priv[PD_PT_PMU_TYPE], 6);
	CHECK_EQ(rec.priv[PD_PT_TIME_SHIFT], 31);
	CHECK_EQ(rec.priv[PD_PT_TIME_MULT], 1789569706);
	CHECK(rec.priv[PD_PT_TIME_ZERO] == 18446744041015200657ull);
	CHECK_EQ(rec.priv[PD_PT_PER_CPU_MMAPS], 1);
	CHECK_EQ(rec.priv[PD_PT_SNAPSHOT_MODE], 0);
	CHECK_EQ(rec.priv[PD_PT_TSC_CTC_D], 2);
	CHECK_EQ(rec.priv[PD_PT_TSC_CTC_N], 100);
	CHECK_EQ(rec.priv[PD_PT_MAX_NONTURBO_RATIO], 12);
	CHECK_EQ((pt->config & rec.priv[PD_PT_MTC_FREQ_BITS]) >> 14, 3);
	CHECK_EQ(rec.has_time_conv, 1);
	CHECK_EQ(rec.tc_mult, 1789569706);
	CHECK_STR(rec.cpuid, "GenuineIntel,6,78,3");
	CHECK_EQ(pd_tid_pid(&rec, 3174), 3174);
	/* the build-id table (perf buildid-list) */
	bid = pd_build_ids_find(&rec.build_ids, "/usr/bin/coreutils");
	CHECK(bid);
	pd_build_id_hex(bid, hex);
	CHECK_STR(hex, "c0a88cf4408ddef75343a69e41602f4d3de34e68");
	CHECK(pd_build_ids_find(&rec.build_ids, "[kernel.kallsyms]"));
	pd_recording_free(&rec);
	free(buf);
}

/* perf.data file layout → pipe layout: attrs as HEADER_ATTR records, the
 * records as they are, the build-id table as HEADER_BUILD_ID records. */
static uint8_t *to_pipe(const uint8_t *buf, size_t len, size_t *out_len)
{
	struct pd_file f;
	const uint8_t *p;
	uint8_t *o = malloc(len + 65536), *w = o;
	size_t n;
	uint64_t v = 16;

	if (!o || pd_file_read(buf, len, &f) < 0)
		abort();
	memcpy(w, "PERFILE2", 8);
	memcpy(w + 8, &v, 8);
	w += 16;
	for (uint64_t at = f.attrs_off; at < f.attrs_off + f.attrs_size;
	     at += f.attr_size) {
		uint64_t asz = f.attr_size - 16;
		uint64_t ioff = le_rd64(buf + at + asz);
		uint64_t isz = le_rd64(buf + at + asz + 8);
		uint32_t type = PD_RECORD_HEADER_ATTR;
		uint16_t misc = 0, size = (uint16_t)(8 + asz + isz);

		memcpy(w, &type, 4);
		memcpy(w + 4, &misc, 2);
		memcpy(w + 6, &size, 2);
		memcpy(w + 8, buf + at, asz);
		memcpy(w + 8 + asz, buf + ioff, isz);
		w += size;
	}
	if (pd_file_feature(buf, len, &f, PD_FEAT_CPUID, &p, &n) > 0) {
		uint32_t type = PD_RECORD_HEADER_FEATURE;
		uint16_t misc = 0, size = (uint16_t)(16 + n);
		uint64_t feat = PD_FEAT_CPUID;

		memcpy(w, &type, 4);
		memcpy(w + 4, &misc, 2);
		memcpy(w + 6, &size, 2);
		memcpy(w + 8, &feat, 8);
		memcpy(w + 16, p, n);
		w += size;
	}
	memcpy(w, buf + f.data_off, f.data_size);
	w += f.data_size;
	if (pd_file_feature(buf, len, &f, PD_FEAT_BUILD_ID, &p, &n) > 0) {
		memcpy(w, p, n);
		for (size_t at = 0; at + 8 <= n;) {
			uint32_t type = PD_RECORD_HEADER_BUILD_ID;

			memcpy(w + at, &type, 4);
			at += le_rd16(w + at + 6);
		}
		w += n;
	}
	*out_len = (size_t)(w - o);
	return o;
}

TEST(skylake_file_and_pipe_decode_every_cpu)
{
	struct ts_recorder a, b;
	struct warnings w;
	struct dec_stats st;
	struct pd_recording rec;
	uint8_t *buf, *pipe;
	size_t len, plen;

	buf = ts_read_file(ts_realpt(SKYLAKE), &len);
	CHECK(buf);
	CHECK_EQ(decode_buf(buf, len, &a, &w, &st), 0);
	/* both CPU streams (cpu 0: 12,240 B, cpu 3: 137,728 B) decoded */
	CHECK_EQ(st.bytes, 12240 + 137728);
	CHECK(st.threads >= 2);
	/* the binaries are not here: one sentence each, and on it goes */
	CHECK(warned(&w,
		     "/usr/bin/coreutils (build id "
		     "c0a88cf4408ddef75343a69e41602f4d3de34e68)",
		     "not decoded"));
	CHECK(warned(&w, "/lib64/libc-2.23.so", "not decoded"));
	CHECK(warned(&w, "traced kernel code too", NULL));
	CHECK(a.count[TS_EVENT] > 0);
	CHECK(ts_rec_nth(&a, TS_PROCESS, 0));
	CHECK_STR(ts_rec_nth(&a, TS_PROCESS, 0)->value, "echo");

	pipe = to_pipe(buf, len, &plen);
	CHECK_EQ(pd_read(pipe, plen, &rec), 0);
	CHECK(rec.file.pipe);
	CHECK_EQ(rec.attrs.n, 4);
	CHECK(pd_build_ids_find(&rec.build_ids, "/usr/bin/coreutils"));
	CHECK_STR(rec.cpuid, "GenuineIntel,6,78,3");
	pd_recording_free(&rec);
	CHECK_EQ(decode_buf(pipe, plen, &b, &w, &st), 0);
	CHECK_EQ(st.bytes, 12240 + 137728);
	CHECK(same_events(&a, &b));
	ts_rec_free(&a);
	ts_rec_free(&b);
	free(pipe);
	free(buf);
}

TEST(skylake_pipe_recording)
{
	struct ts_recorder r;
	struct warnings w;
	struct dec_stats st;

	/* perf's own pipe-mode file, a separate recording (cpu 3: 68,192 B
	 * of AUX data plus cpu 0's) */
	CHECK_EQ(decode_path(ts_realpt(SKYLAKE_PIPE), &r, &w, &st), 0);
	CHECK(st.bytes >= 68192);
	CHECK(st.threads >= 1);
	CHECK(warned(&w, "/usr/bin/coreutils", "not decoded"));
	ts_rec_free(&r);
}

/* ---- perf.data built around the LLDB recordings ---- */

static int make_single(const char *out, const char *extra, const char *as)
{
	return mkperfdata(
	    "-o %s --cpuid GenuineIntel,6,79,1 --task 1234,3842849,a.out "
	    "--mmap 1234,0x400000,%s%s%s --pt %s,3842849 %s 2>/dev/null",
	    out, ts_realpt("lldb-single-thread/a.out"), as ? "," : "",
	    as ? as : "", ts_realpt("lldb-single-thread/3842849.trace"), extra);
}

TEST(single_thread_spans_have_file_and_line)
{
	static const char *const variants[] = {"", "--pipe", "--bid-in-mmap",
					       "--pipe --chunk 1000"};
	struct ts_recorder r, first;
	struct warnings w;
	struct dec_stats st;
	const struct ps_event *e;

	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		CHECK_EQ(
		    make_single(tmp_path("single.data"), variants[i], NULL), 0);
		CHECK_EQ(decode_path(tmp_path("single.data"), &r, &w, &st), 0);
		/* README.md: 21 instructions, first IP 0x400511 */
		CHECK_EQ(st.instructions, 21);
		CHECK_EQ(st.err_nomap + st.err_decode, 0);
		e = span_named(&r, "main");
		CHECK(e);
		CHECK(strstr(e->info->file, "main.cpp"));
		CHECK(e->info->line > 0);
		CHECK_EQ(e->pid, 1234);
		CHECK_EQ(e->tid, 3842849);
		/* no TSC conversion was recorded: said once */
		CHECK(warned(&w, "no TSC conversion", NULL));
		CHECK_EQ(w.n, 1);
		if (i == 0) {
			first = r;
			continue;
		}
		CHECK(same_events(&first, &r));
		ts_rec_free(&r);
	}
	ts_rec_free(&first);
}

static int make_percpu(const char *out, const char *extra)
{
	return mkperfdata(
	    "-o %s --cpuid GenuineIntel,6,85,4 --tsc-conv %s "
	    "--task 3497234,3497234,m.out --mmap 3497234,0x400000,%s "
	    "--cpu-pt %s,45,%s --cpu-pt %s,51,%s %s",
	    out, PERCPU_TC, ts_realpt("lldb-per-cpu/modules/m.out"),
	    ts_realpt("lldb-per-cpu/cores/45.intelpt_trace"),
	    ts_realpt("lldb-per-cpu/cores/45.perf_context_switch_trace"),
	    ts_realpt("lldb-per-cpu/cores/51.intelpt_trace"),
	    ts_realpt("lldb-per-cpu/cores/51.perf_context_switch_trace"),
	    extra);
}

/* The per-CPU streams decoded the raw way (decoder.h), for comparison. */
static int decode_percpu_raw(struct ts_recorder *r)
{
	struct dec_config cfg = {
	    .cpu = {1, 6, 85, 4},
	    .span_info = 1,
	    .time = {1, 1076264588, 31, 18433473881008870804ull, 0}};
	static const int ids[2] = {45, 51};
	struct dec_cpu_trace t[2];
	struct dec_switch *sw[2];
	uint8_t *pt[2];
	struct dec_session *s;
	char name[64];
	int err;

	ts_rec_init(r);
	if (dec_session_new(&cfg, &s) ||
	    dec_add_elf(s, 3497234, ts_realpt("lldb-per-cpu/modules/m.out"), 0,
			0, 0))
		return -1;
	for (int i = 0; i < 2; i++) {
		size_t len;
		int n;

		snprintf(name, sizeof(name),
			 "lldb-per-cpu/cores/%d.intelpt_trace", ids[i]);
		pt[i] = ts_read_file(ts_realpt(name), &len);
		snprintf(name, sizeof(name),
			 "lldb-per-cpu/cores/%d.perf_context_switch_trace",
			 ids[i]);
		n = dec_read_switches(ts_realpt(name), &sw[i]);
		t[i] = (struct dec_cpu_trace){ids[i], pt[i], len, sw[i],
					      (size_t)n};
	}
	err = dec_decode_cpus(s, t, 2, &r->base);
	for (int i = 0; i < 2; i++) {
		free(pt[i]);
		free(sw[i]);
	}
	dec_session_free(s);
	return err;
}

TEST(per_cpu_matches_the_raw_decode)
{
	static const char *const variants[] = {
	    "", "--pipe", "--chunk 1000", "--chunk 1000 --overlap 300",
	    "--pipe --chunk 512 --overlap 512 --bid-in-mmap",
	    /* perf's snapshot mode: whole rings at ring offsets */
	    "--chunk 600 --ring 1024", "--chunk 300 --ring 512",
	    "--chunk 2000 --ring 2048 --pipe"};
	struct ts_recorder raw, r;
	struct warnings w;
	struct dec_stats st;
	int t96 = 0, t97 = 0;

	CHECK_EQ(decode_percpu_raw(&raw), 0);
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		CHECK_EQ(make_percpu(tmp_path("percpu.data"), variants[i]), 0);
		CHECK_EQ(decode_path(tmp_path("percpu.data"), &r, &w, &st), 0);
		/* README.md: 61,825 + 19,521 instructions */
		CHECK_EQ(st.instructions, 61825 + 19521);
		CHECK_EQ(w.n, 0);
		CHECK(same_events(&raw, &r));
		ts_rec_free(&r);
	}
	/* snapshots further apart than the ring: data lost, said once */
	CHECK_EQ(
	    make_percpu(tmp_path("percpu.data"), "--chunk 1500 --ring 1024"),
	    0);
	CHECK_EQ(decode_path(tmp_path("percpu.data"), &r, &w, &st), 0);
	CHECK(st.instructions < 61825 + 19521);
	CHECK(warned(&w,
		     "do not continue the one before (the AUX ring "
		     "wrapped past",
		     NULL));
	CHECK_EQ(w.n, 1);
	ts_rec_free(&r);
	for (size_t i = 0; i < raw.count[TS_EVENT]; i++) {
		const struct ps_event *e = ts_rec_event(&raw, i);

		t96 += e->tid == 3497496;
		t97 += e->tid == 3497497;
	}
	CHECK(t96 > 0 && t97 > 0);
	ts_rec_free(&raw);
}

TEST(partial_text_mapping_like_a_pie)
{
	struct ts_recorder r;
	struct warnings w;
	struct dec_stats st;
	const struct ps_event *e;
	char *aout = realpath(ts_realpt("lldb-single-thread/a.out"), NULL);

	CHECK(aout);
	/* only [0x400, 0x700) of the file, at 0x400400: how perf records
	 * the text mapping of a binary whose code is not at offset 0 */
	CHECK_EQ(mkperfdata("-o %s --cpuid GenuineIntel,6,79,1 "
			    "--task 1234,3842849,a.out "
			    "--mmap 1234,0x400400,%s,%s,0x400,0x300 "
			    "--pt %s,3842849",
			    tmp_path("part.data"), aout, aout,
			    ts_realpt("lldb-single-thread/3842849.trace")),
		 0);
	free(aout);
	CHECK_EQ(decode_path(tmp_path("part.data"), &r, &w, &st), 0);
	CHECK_EQ(st.instructions, 21);
	e = span_named(&r, "main");
	CHECK(e);
	CHECK_EQ(e->info->address, 0x40050d);
	ts_rec_free(&r);
}

TEST(multi_file_missing_loader_decodes_around_it)
{
	struct ts_recorder r;
	struct warnings w;
	struct dec_stats st;
	const struct ps_event *e;
	int nomap_instant = 0;

	/* LLDB's multi-file recording: a.out, libfoo.so, libbar.so here;
	 * the dynamic loader (where it ends, README.md) recorded but not
	 * on this machine */
	CHECK_EQ(mkperfdata("-o %s --cpuid GenuineIntel,6,79,1 "
			    "--task 815455,815455,a.out "
			    "--mmap 815455,0x400000,%s "
			    "--mmap 815455,0x7ffff7bd9000,%s "
			    "--mmap 815455,0x7ffff79d7000,%s "
			    "--mmap 815455,0x7ffff7dd7000,-,/lib64/ld-0.0.so "
			    "--pt %s,815455 --pipe",
			    tmp_path("multi.data"),
			    ts_realpt("lldb-multi-file/a.out"),
			    ts_realpt("lldb-multi-file/libfoo.so"),
			    ts_realpt("lldb-multi-file/libbar.so"),
			    ts_realpt("lldb-multi-file/multi-file.trace")),
		 0);
	CHECK_EQ(decode_path(tmp_path("multi.data"), &r, &w, &st), 0);
	CHECK_EQ(st.instructions, 45);
	CHECK_EQ(st.err_nomap, 1);
	CHECK(warned(&w, "/lib64/ld-0.0.so is not on this machine", NULL));
	CHECK_EQ(w.n, 2); /* and the missing TSC conversion */
	e = span_named(&r, "foo()");
	CHECK(e);
	CHECK_STR(e->info->module, "libfoo.so");
	e = span_named(&r, "bar()");
	CHECK(e);
	CHECK_STR(e->info->module, "libbar.so");
	for (size_t i = 0; i < r.count[TS_EVENT]; i++) {
		e = ts_rec_event(&r, i);
		nomap_instant += e->type == PS_EV_INSTANT &&
				 strstr(e->name, "no memory mapped at "
						 "0x7ffff7df1950");
	}
	CHECK_EQ(nomap_instant, 1);
	ts_rec_free(&r);
}

TEST(only_pid_selects_a_process)
{
	struct dec_config cfg = {.span_info = 1};
	struct dec_perfdata_opts o = {.only_pid = 3497234};
	struct ts_recorder r;
	struct dec_stats st;
	uint8_t *buf;
	size_t len;
	int err;

	CHECK_EQ(make_percpu(tmp_path("pid.data"), ""), 0);
	buf = ts_read_file(tmp_path("pid.data"), &len);
	CHECK(buf);
	ts_rec_init(&r);
	CHECK_EQ(dec_decode_perfdata(&cfg, buf, len, &o, &r.base, &st), 0);
	CHECK_EQ(st.instructions, 61825 + 19521);
	ts_rec_free(&r);
	o.only_pid = 42;
	err = dec_decode_perfdata(&cfg, buf, len, &o, &r.base, &st);
	CHECK_EQ(err, PS_ERR_NOT_FOUND);
	CHECK(strstr(ps_err_message(err), "process 42 has no Intel PT trace"));
	CHECK(strstr(ps_err_message(err), "3497234"));
	ts_rec_free(&r);
	free(buf);
}

/* ---- finding binaries ---- */

static int link_to(const char *target, const char *path)
{
	char dir[1024], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	unlink(path);
	return symlink(target, path);
}

TEST(build_id_cache_finds_a_moved_binary)
{
	char *aout = realpath(ts_realpt("lldb-single-thread/a.out"), NULL);
	char *other;
	struct pd_build_id bid;
	struct ts_recorder r;
	struct warnings w;
	struct dec_stats st;
	char hex[41], home[512], path[1024];
	char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	char *old_dir = getenv("PERF_BUILDID_DIR")
			    ? strdup(getenv("PERF_BUILDID_DIR"))
			    : NULL;
	const struct ps_event *e;

	CHECK(aout);
	CHECK_EQ(pd_file_build_id(aout, &bid), 0);
	CHECK_EQ(bid.size, 20);
	pd_build_id_hex(&bid, hex);
	snprintf(home, sizeof(home), "%s", tmp_path("home"));
	mkdir(home, 0755);
	setenv("HOME", home, 1);
	unsetenv("PERF_BUILDID_DIR");
	/* recorded where it no longer is */
	CHECK_EQ(
	    make_single(tmp_path("moved.data"), "", "/gone/build/dir/a.out"),
	    0);

	/* nowhere: one sentence naming it and its build id; decode goes on */
	CHECK_EQ(decode_path(tmp_path("moved.data"), &r, &w, &st), 0);
	CHECK(warned(&w, "/gone/build/dir/a.out (build id", hex));
	CHECK(warned(&w, "its code is not decoded", NULL));
	CHECK(st.err_nomap > 0);
	CHECK(!span_named(&r, "main"));
	ts_rec_free(&r);

	/* perf's newer cache layout: .build-id/NN/REST → PATH/ID/elf */
	snprintf(path, sizeof(path), "%s/.debug/gone/build/dir/a.out/%s/elf",
		 home, hex);
	CHECK_EQ(link_to(aout, path), 0);
	snprintf(path, sizeof(path), "%s/.debug/.build-id/%.2s/%s", home, hex,
		 hex + 2);
	snprintf(home + strlen(home), sizeof(home) - strlen(home),
		 "/.debug/gone/build/dir/a.out/%s", hex);
	CHECK_EQ(link_to(home, path), 0);
	CHECK_EQ(decode_path(tmp_path("moved.data"), &r, &w, &st), 0);
	CHECK_EQ(st.instructions, 21);
	CHECK(!warned(&w, "a.out", NULL));
	e = span_named(&r, "main");
	CHECK(e);
	CHECK(strstr(e->info->file, "main.cpp"));
	/* labelled by the name it ran under, not the cache's "elf" */
	CHECK_STR(e->info->module, "a.out");
	ts_rec_free(&r);

	/* only the PATH/ID/elf entry (no .build-id link) also works */
	CHECK_EQ(unlink(path), 0);
	CHECK_EQ(decode_path(tmp_path("moved.data"), &r, &w, &st), 0);
	CHECK_EQ(st.instructions, 21);
	ts_rec_free(&r);

	/* a different file at the recorded path is refused by build id */
	other = realpath(ts_realpt("lldb-multi-file/a.out"), NULL);
	CHECK(other);
	CHECK_EQ(make_single(tmp_path("other.data"), "", other), 0);
	free(other);
	setenv("HOME", "/nonexistent", 1);
	CHECK_EQ(decode_path(tmp_path("other.data"), &r, &w, &st), 0);
	CHECK(warned(&w, "is not the one recorded", hex));
	ts_rec_free(&r);

	if (old_home)
		setenv("HOME", old_home, 1);
	if (old_dir)
		setenv("PERF_BUILDID_DIR", old_dir, 1);
	free(old_home);
	free(old_dir);
	free(aout);
}

/* ---- no PT, bad input ---- */

TEST(no_intel_pt_data_is_one_sentence)
{
	struct ts_recorder r;
	struct warnings w;
	struct dec_stats st;
	int err;

	CHECK_EQ(mkperfdata("-o %s --no-pt --task 1,1,init "
			    "--mmap 1,0x400000,%s",
			    tmp_path("nopt.data"),
			    ts_realpt("lldb-single-thread/a.out")),
		 0);
	err = decode_path(tmp_path("nopt.data"), &r, &w, &st);
	CHECK_EQ(err, PS_ERR_NOT_FOUND);
	CHECK(!strncmp(ps_err_message(err),
		       "perf.data holds no Intel PT data: ", 34));
	CHECK(strstr(ps_err_message(err), "intel_pt//"));
	CHECK_EQ(r.count[TS_EVENT], 0);
	ts_rec_free(&r);
	CHECK_EQ(dec_decode_perfdata(NULL, NULL, 0, NULL, &r.base, NULL),
		 PS_ERR_INVAL);
}

TEST(truncated_and_corrupt_files_fail_cleanly)
{
	struct ts_recorder r;
	struct warnings w;
	struct dec_stats st;
	uint8_t *buf;
	size_t len;
	int bad = 0, good = 0;

	CHECK_EQ(make_percpu(tmp_path("cut.data"), "--chunk 700"), 0);
	buf = ts_read_file(tmp_path("cut.data"), &len);
	CHECK(buf);
	for (size_t cut = 0; cut < len; cut += 61) {
		int err = decode_buf(buf, cut, &r, &w, &st);

		CHECK(err == 0 || err == PS_ERR_TRUNCATED ||
		      err == PS_ERR_FORMAT || err == PS_ERR_NOT_FOUND);
		bad += err < 0;
		good += err == 0;
		ts_rec_free(&r);
	}
	CHECK(bad > 0);
	memset(buf + 104 + 128 + 6, 0xff, 2); /* attrs: nonsense entry */
	memcpy(buf, "PERFILE3", 8);
	CHECK_EQ(decode_buf(buf, len, &r, &w, &st), PS_ERR_FORMAT);
	ts_rec_free(&r);
	free(buf);
}

/* SPDX-License-Identifier: MIT */
/* Tests for the recording file (src/recording/recfile_write.c): round trip of every
 * section, atomic creation, and damaged input: truncation at every byte,
 * every single-bit flip, foreign and future files, unknown sections. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ptscope/error.h"
#include "src/recording/recfile.h"
#include "tests/harness.h"
#include "tests/support.h"

static const char *const argv_in[] = {"build/samples/demo", "300", ""};
static const uint8_t pt_bytes[] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				   0x02, 0x82, 0x00, 0x19, 0x43, 0xff};
static const uint8_t elf_bytes[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
static const uint8_t vdso_bytes[] = {0xc3, 0x90, 0x90};
static const uint8_t side_bytes[] = {1, 2, 3, 4, 5};
static const struct rec_switch sw_in[] = {
    {100, 1, 2, 0}, {250, 1, 2, 1}, {260, 7, 9, 0}};

static char tmpdir[64];

static const char *scratch(const char *name)
{
	static char path[128];

	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/ptscope-recfile-XXXXXX");
		if (!mkdtemp(tmpdir))
			return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

static size_t dir_entries(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void fill_info(struct rec_info *in)
{
	memset(in, 0, sizeof(*in));
	in->backend = "emulated";
	in->emulated = 1;
	in->cpu_vendor = REC_CPU_AMD;
	in->cpu_family = 0x19;
	in->cpu_model = 0x11;
	in->cpu_stepping = 1;
	in->mtc_freq = 3;
	in->nom_freq = 24;
	in->cpuid_0x15_eax = 2;
	in->cpuid_0x15_ebx = 168;
	in->has_conv = 1;
	in->time_mult = 0x12345678;
	in->time_shift = 31;
	in->time_zero = 0xfedcba9876543210ULL;
	in->offset_ns = -123456789;
	in->version = "0.1.0";
	in->argc = 3;
	in->argv = argv_in;
	in->pid = 4242;
	in->start_ns = 1000000;
	in->start_realtime_ns = 1700000000000000000ULL;
	in->hostname = "box";
	in->kernel = "6.1.0";
	in->reason = "trigger";
	in->snapshot_ns = 2000000;
}

static void fill_module(struct rec_module *m, const char *path, uint64_t pid)
{
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->start = 0x555555554000ULL;
	m->end = 0x555555556000ULL;
	m->offset = 0x1000;
	m->prot = 5;
	m->inode = 99;
	m->path = path;
	m->build_id_len = 20;
	for (int i = 0; i < 20; i++)
		m->build_id[i] = (uint8_t)(i * 7);
}

/* Write a recording holding one of every section to @path. */
static int write_sample(const char *path)
{
	struct rec_info in;
	struct rec_module m;
	struct rec_pt pt = {4242, 4243, -1, 2, pt_bytes, sizeof(pt_bytes), 3};
	struct rec_process proc = {4300, 4242, 1, 1400000, "worker",
				   "/usr/bin/worker"};
	struct rec_mark mk = {
	    REC_MARK_TRIGGER,  4242,	      4243,	     1500000,
	    0x555555555123ULL, 0x7ffd0000ULL, "slow request"};
	struct recw *w;
	int r;

	fill_info(&in);
	r = recw_open(path, &w);
	if (r)
		return r;
	if ((r = recw_header(w, &in)) ||
	    (fill_module(&m, "/usr/bin/demo", 4242),
	     r = recw_module(w, &m, elf_bytes, sizeof(elf_bytes))) ||
	    /* Same file in a second process: archived once. */
	    (m.pid = 4300,
	     r = recw_module(w, &m, elf_bytes, sizeof(elf_bytes))) ||
	    (fill_module(&m, "/lib/libc.so.6", 4242), m.build_id_len = 0,
	     m.epoch = 2, r = recw_module(w, &m, NULL, 0)) ||
	    (r = recw_process(w, &proc)) ||
	    (r = recw_thread(w, 4242, 4243, "demo-worker")) ||
	    (r = recw_pt(w, &pt)) || (r = recw_mark(w, &mk)) ||
	    (r = recw_raw_code(w, &(struct rec_raw_code){
					  .pid = 4242,
					  .name = "[vdso]",
					  .vaddr = 0x7fff0000ULL,
					  .bytes = vdso_bytes,
					  .len = sizeof(vdso_bytes),
					  .epoch = 1})) ||
	    (r = recw_switches(w, 3, sw_in, 3)) ||
	    (r = recw_sidecar(w, 77, side_bytes, sizeof(side_bytes)))) {
		recw_abort(w);
		return r;
	}
	return recw_finish(w);
}

TEST(round_trip_of_every_section)
{
	const char *path = scratch("all.ptsc");
	const struct rec_info *in;
	const struct rec_module *m;
	const struct rec_thread *t;
	const struct rec_pt *pt;
	const struct rec_mark *mk;
	const struct rec_raw_code *rc;
	const struct rec_switches *sw;
	const struct rec_sidecar *sc;
	const struct rec_archive *ar;
	const struct rec_process *pr;
	struct recr *r = NULL;

	CHECK(path);
	CHECK_EQ(write_sample(path), 0);
	CHECK_EQ(dir_entries(), 1); /* no temporary file left */
	CHECK_EQ(recr_open(path, &r), 0);
	CHECK_EQ(recr_version(r), REC_FORMAT_VERSION);
	in = recr_info(r);
	CHECK_STR(in->backend, "emulated");
	CHECK_EQ(in->emulated, 1);
	CHECK_EQ(in->cpu_vendor, REC_CPU_AMD);
	CHECK_EQ(in->cpu_family, 0x19);
	CHECK_EQ(in->cpu_model, 0x11);
	CHECK_EQ(in->cpu_stepping, 1);
	CHECK_EQ(in->mtc_freq, 3);
	CHECK_EQ(in->nom_freq, 24);
	CHECK_EQ(in->cpuid_0x15_eax, 2);
	CHECK_EQ(in->cpuid_0x15_ebx, 168);
	CHECK_EQ(in->has_conv, 1);
	CHECK_EQ(in->time_mult, 0x12345678);
	CHECK_EQ(in->time_shift, 31);
	CHECK(in->time_zero == 0xfedcba9876543210ULL);
	CHECK_EQ(in->offset_ns, -123456789);
	CHECK_STR(in->version, "0.1.0");
	CHECK_EQ(in->argc, 3);
	CHECK_STR(in->argv[0], "build/samples/demo");
	CHECK_STR(in->argv[1], "300");
	CHECK_STR(in->argv[2], "");
	CHECK_EQ(in->pid, 4242);
	CHECK_EQ(in->start_ns, 1000000);
	CHECK(in->start_realtime_ns == 1700000000000000000ULL);
	CHECK_STR(in->hostname, "box");
	CHECK_STR(in->kernel, "6.1.0");
	CHECK_STR(in->reason, "trigger");
	CHECK_EQ(in->snapshot_ns, 2000000);

	CHECK_EQ(recr_modules(r, &m), 3);
	CHECK_EQ(m[0].pid, 4242);
	CHECK_EQ(m[1].pid, 4300);
	CHECK_EQ(m[0].start, 0x555555554000ULL);
	CHECK_EQ(m[0].end, 0x555555556000ULL);
	CHECK_EQ(m[0].offset, 0x1000);
	CHECK_EQ(m[0].prot, 5);
	CHECK_EQ(m[0].inode, 99);
	CHECK_STR(m[0].path, "/usr/bin/demo");
	CHECK_EQ(m[0].build_id_len, 20);
	CHECK_EQ(m[0].build_id[19], 19 * 7);
	CHECK_EQ(m[0].archive_len, sizeof(elf_bytes));
	CHECK(!memcmp(m[0].archive, elf_bytes, sizeof(elf_bytes)));
	CHECK(m[1].archive == m[0].archive);
	CHECK_STR(m[2].path, "/lib/libc.so.6");
	CHECK_EQ(m[2].build_id_len, 0);
	CHECK(m[2].archive == NULL && m[2].archive_len == 0);
	CHECK_EQ(m[0].epoch, 0);
	CHECK_EQ(m[2].epoch, 2);
	CHECK_EQ(recr_archives(r, &ar), 1);
	CHECK_STR(ar[0].path, "/usr/bin/demo");
	CHECK_EQ(ar[0].build_id_len, 20);

	CHECK_EQ(recr_threads(r, &t), 1);
	CHECK_EQ(t[0].pid, 4242);
	CHECK_EQ(t[0].tid, 4243);
	CHECK_STR(t[0].comm, "demo-worker");

	CHECK_EQ(recr_pts(r, &pt), 1);
	CHECK_EQ(pt[0].tid, 4243);
	CHECK_EQ(pt[0].cpu, -1);
	CHECK_EQ(pt[0].snapshot, 2);
	CHECK_EQ(pt[0].len, sizeof(pt_bytes));
	CHECK(!memcmp(pt[0].data, pt_bytes, sizeof(pt_bytes)));
	CHECK_EQ(pt[0].epoch, 3);

	CHECK_EQ(recr_processes(r, &pr), 1);
	CHECK_EQ(pr[0].pid, 4300);
	CHECK_EQ(pr[0].ppid, 4242);
	CHECK_EQ(pr[0].epoch, 1);
	CHECK_EQ(pr[0].time_ns, 1400000);
	CHECK_STR(pr[0].name, "worker");
	CHECK_STR(pr[0].path, "/usr/bin/worker");

	CHECK_EQ(recr_marks(r, &mk), 1);
	CHECK_EQ(mk[0].kind, REC_MARK_TRIGGER);
	CHECK_EQ(mk[0].tid, 4243);
	CHECK_EQ(mk[0].time_ns, 1500000);
	CHECK_EQ(mk[0].address, 0x555555555123ULL);
	CHECK_EQ(mk[0].value, 0x7ffd0000ULL);
	CHECK_STR(mk[0].text, "slow request");

	CHECK_EQ(recr_raw_codes(r, &rc), 1);
	CHECK_STR(rc[0].name, "[vdso]");
	CHECK_EQ(rc[0].vaddr, 0x7fff0000ULL);
	CHECK_EQ(rc[0].len, sizeof(vdso_bytes));
	CHECK(!memcmp(rc[0].bytes, vdso_bytes, sizeof(vdso_bytes)));
	CHECK_EQ(rc[0].epoch, 1);

	CHECK_EQ(recr_switches(r, &sw), 1);
	CHECK_EQ(sw[0].cpu, 3);
	CHECK_EQ(sw[0].n, 3);
	CHECK_EQ(sw[0].sw[1].time, 250);
	CHECK_EQ(sw[0].sw[1].out, 1);
	CHECK_EQ(sw[0].sw[2].tid, 9);

	CHECK_EQ(recr_sidecars(r, &sc), 1);
	CHECK_EQ(sc[0].type, 77);
	CHECK_EQ(sc[0].len, sizeof(side_bytes));
	CHECK(!memcmp(sc[0].bytes, side_bytes, sizeof(side_bytes)));
	CHECK_EQ(recr_unknown_sections(r), 0);
	recr_close(r);
	recr_close(NULL);
	unlink(path);
}

TEST(writer_is_atomic_and_checks_order)
{
	const char *path = scratch("order.ptsc");
	struct rec_info in;
	struct recw *w;

	CHECK(path);
	fill_info(&in);
	CHECK_EQ(recw_open(path, &w), 0);
	CHECK(access(path, F_OK) != 0); /* not under its name yet */
	CHECK_EQ(recw_thread(w, 1, 1, "x"), PS_ERR_INVAL);
	CHECK_EQ(recw_header(w, &in), 0);
	CHECK_EQ(recw_header(w, &in), PS_ERR_INVAL);
	CHECK_EQ(recw_module(w, NULL, NULL, 0), PS_ERR_INVAL);
	CHECK(recw_bytes(w) > REC_HEADER_SIZE);
	recw_abort(w);
	CHECK(access(path, F_OK) != 0);
	CHECK_EQ(dir_entries(), 0);
	/* Finishing without a header fails and leaves nothing. */
	CHECK_EQ(recw_open(path, &w), 0);
	CHECK_EQ(recw_finish(w), PS_ERR_INVAL);
	CHECK_EQ(dir_entries(), 0);
	recw_abort(NULL);
	CHECK_EQ(recw_open("/nonexistent-dir/x.ptsc", &w), PS_ERR_IO);
	CHECK(strstr(ps_err_message(PS_ERR_IO), "/nonexistent-dir/x.ptsc"));
}

TEST(truncation_at_every_byte_is_reported)
{
	const char *path = scratch("trunc.ptsc");
	struct recr *r = NULL;
	uint8_t *buf;
	size_t len;

	CHECK(path);
	CHECK_EQ(write_sample(path), 0);
	buf = ts_read_file(path, &len);
	unlink(path);
	CHECK(buf && len > 100);
	for (size_t n = 0; n < len; n++) {
		int e = recr_open_mem(buf, n, "rec.ptsc", &r);

		if (e != PS_ERR_TRUNCATED) {
			free(buf);
			harness_failf(__FILE__, __LINE__,
				      "prefix of %zu bytes: %d (%s)", n, e,
				      ps_err_message(e));
			return;
		}
	}
	CHECK(strstr(ps_err_message(PS_ERR_TRUNCATED),
		     "rec.ptsc is truncated at byte"));
	CHECK(strstr(ps_err_message(PS_ERR_TRUNCATED),
		     "was the recording interrupted?"));
	CHECK_EQ(recr_open_mem(buf, len, "rec.ptsc", &r), 0);
	recr_close(r);
	free(buf);
}

TEST(every_bit_flip_is_detected)
{
	const char *path = scratch("flip.ptsc");
	struct recr *r = NULL;
	uint8_t *buf;
	size_t len;

	CHECK(path);
	CHECK_EQ(write_sample(path), 0);
	buf = ts_read_file(path, &len);
	unlink(path);
	CHECK(buf);
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int e;

			buf[i] ^= (uint8_t)(1u << bit);
			e = recr_open_mem(buf, len, "rec.ptsc", &r);
			buf[i] ^= (uint8_t)(1u << bit);
			if (e == 0) {
				recr_close(r);
				free(buf);
				harness_failf(__FILE__, __LINE__,
					      "flip of bit %d at byte %zu "
					      "went unnoticed",
					      bit, i);
				return;
			}
			if (e != PS_ERR_FORMAT && e != PS_ERR_TRUNCATED &&
			    e != PS_ERR_UNSUPPORTED) {
				free(buf);
				harness_failf(__FILE__, __LINE__,
					      "flip at byte %zu: error %d", i,
					      e);
				return;
			}
		}
	}
	free(buf);
}

TEST(foreign_and_future_files_are_refused)
{
	const char *path = scratch("foreign.ptsc");
	static const char elf[] = "\177ELF\2\1\1\0\0\0\0\0\0\0\0\0\3\0>\0";
	struct recr *r = NULL;
	uint8_t *buf;
	size_t len;
	FILE *f;

	CHECK(path);
	CHECK_EQ(recr_open_mem(elf, sizeof(elf), "rec.ptsc", &r),
		 PS_ERR_FORMAT);
	CHECK_STR(ps_err_message(PS_ERR_FORMAT),
		  "rec.ptsc is not a ptscope recording (bad magic)");
	CHECK_EQ(recr_open_mem("PTS", 3, "rec.ptsc", &r), PS_ERR_TRUNCATED);
	CHECK_EQ(recr_open_mem("", 0, "rec.ptsc", &r), PS_ERR_TRUNCATED);
	CHECK(strstr(ps_err_message(PS_ERR_TRUNCATED), "rec.ptsc is empty"));

	CHECK_EQ(write_sample(path), 0);
	buf = ts_read_file(path, &len);
	CHECK(buf);
	buf[8] = 3; /* format version 3 */
	CHECK_EQ(recr_open_mem(buf, len, "rec.ptsc", &r), PS_ERR_UNSUPPORTED);
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED),
		     "rec.ptsc was written by a newer ptscope (format 3; "
		     "this one reads 1)"));
	/* Through the file path too, and the path is named. */
	f = fopen(path, "wb");
	CHECK(f);
	CHECK_EQ(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	CHECK_EQ(recr_open(path, &r), PS_ERR_UNSUPPORTED);
	CHECK(strstr(ps_err_message(PS_ERR_UNSUPPORTED), path));
	unlink(path);
	CHECK_EQ(recr_open(path, &r), PS_ERR_NOT_FOUND);
	CHECK_EQ(recr_open(tmpdir, &r), PS_ERR_IO);
	CHECK_EQ(recr_open(NULL, &r), PS_ERR_INVAL);
}

/* Append a section with a correct checksum to @b. */
static void put_section(uint8_t *b, size_t *len, uint32_t type,
			const uint8_t *payload, uint64_t plen)
{
	uint8_t *h = b + *len;
	uLong crc;

	for (int i = 0; i < 4; i++)
		h[i] = (uint8_t)(type >> (8 * i));
	for (int i = 0; i < 8; i++)
		h[8 + i] = (uint8_t)(plen >> (8 * i));
	crc = crc32(0L, Z_NULL, 0);
	crc = crc32(crc, h, 4);
	crc = crc32(crc, h + 8, 8);
	crc = crc32(crc, payload, (uInt)plen);
	for (int i = 0; i < 4; i++)
		h[4 + i] = (uint8_t)(crc >> (8 * i));
	memcpy(h + 16, payload, plen);
	*len += 16 + plen;
}

/* A newer writer's file: an unknown section type and a THREAD payload
 * with fields appended after the ones this reader knows. */
TEST(unknown_sections_and_new_fields_are_skipped)
{
	const char *path = scratch("newer.ptsc");
	static const uint8_t thread[] = {
	    7,	  0,   0, 0, 0,	  0,   0, 0, /* pid */
	    8,	  0,   0, 0, 0,	  0,   0, 0, /* tid */
	    2,	  0,   0, 0, 'h', 'i',	     /* comm */
	    0xde, 0xad			     /* a field from the future */
	};
	static const uint8_t unknown[] = {'n', 'e', 'w'};
	const struct rec_thread *t;
	struct recr *r = NULL;
	uint8_t *buf, *out, end[8];
	size_t len, n;

	CHECK(path);
	CHECK_EQ(write_sample(path), 0);
	buf = ts_read_file(path, &len);
	unlink(path);
	CHECK(buf);
	out = malloc(len + 256);
	CHECK(out);
	/* Everything before the END section (its last 24 bytes). */
	n = len - 24;
	memcpy(out, buf, n);
	put_section(out, &n, 0x7777, unknown, sizeof(unknown));
	put_section(out, &n, REC_SEC_THREAD, thread, sizeof(thread));
	{
		uint64_t count = 0;

		for (int i = 0; i < 8; i++)
			count |= (uint64_t)buf[len - 8 + i] << (8 * i);
		count += 2;
		for (int i = 0; i < 8; i++)
			end[i] = (uint8_t)(count >> (8 * i));
	}
	put_section(out, &n, REC_SEC_END, end, 8);
	free(buf);
	CHECK_EQ(recr_open_mem(out, n, "newer.ptsc", &r), 0);
	CHECK_EQ(recr_unknown_sections(r), 1);
	CHECK_EQ(recr_threads(r, &t), 2);
	CHECK_EQ(t[1].pid, 7);
	CHECK_EQ(t[1].tid, 8);
	CHECK_STR(t[1].comm, "hi");
	recr_close(r);
	/* A section count that disagrees with END is damage. */
	end[0] ^= 1;
	n -= 24;
	put_section(out, &n, REC_SEC_END, end, 8);
	CHECK_EQ(recr_open_mem(out, n, "newer.ptsc", &r), PS_ERR_FORMAT);
	CHECK(strstr(ps_err_message(PS_ERR_FORMAT), "sections"));
	free(out);
	rmdir(tmpdir);
}

/* A recording from before exec epochs: MODULE, PT and RAW_CODE payloads
 * end where they used to, and every record is in epoch 0; no PROCESS. */
TEST(recordings_without_epochs_still_read)
{
	static const uint8_t module[] = {
	    7, 0, 0, 0, 0, 0, 0, 0,		    /* pid */
	    0, 0x10, 0, 0, 0, 0, 0, 0,		    /* start */
	    0, 0x20, 0, 0, 0, 0, 0, 0,		    /* end */
	    0, 0, 0, 0, 0, 0, 0, 0,		    /* offset */
	    5, 0, 0, 0,				    /* prot */
	    1, 0, 0, 0, 0, 0, 0, 0,		    /* inode */
	    2, 0, 0, 0, '/', 'x',		    /* path */
	    0,					    /* build id */
	    0, 0, 0, 0, 0, 0, 0, 0		    /* no archive */
	};
	static const uint8_t pt[] = {
	    7, 0, 0, 0, 0, 0, 0, 0,		    /* pid */
	    7, 0, 0, 0, 0, 0, 0, 0,		    /* tid */
	    0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,	    /* cpu, snapshot */
	    2, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x82	    /* blob */
	};
	static const uint8_t raw[] = {
	    7, 0, 0, 0, 0, 0, 0, 0,		    /* pid */
	    0, 0x30, 0, 0, 0, 0, 0, 0,		    /* vaddr */
	    1, 0, 0, 0, 'v',			    /* name */
	    1, 0, 0, 0, 0, 0, 0, 0, 0xc3	    /* blob */
	};
	const char *path = scratch("older.ptsc");
	const struct rec_module *m;
	const struct rec_pt *p;
	const struct rec_raw_code *rc;
	const struct rec_process *pr;
	struct recr *r = NULL;
	uint8_t *buf, *out, end[8];
	size_t len, n;

	CHECK(path);
	mkdir(tmpdir, 0700); /* an earlier test may have removed it */
	CHECK_EQ(write_sample(path), 0);
	buf = ts_read_file(path, &len);
	unlink(path);
	CHECK(buf);
	out = malloc(len + 512);
	CHECK(out);
	/* Its INFO section only, then the old-layout sections. */
	n = REC_HEADER_SIZE;
	{
		uint64_t info_len = 0;

		for (int i = 0; i < 8; i++)
			info_len |= (uint64_t)buf[n + 8 + i] << (8 * i);
		n += REC_SECTION_HEADER_SIZE + info_len;
	}
	memcpy(out, buf, n);
	free(buf);
	put_section(out, &n, REC_SEC_MODULE, module, sizeof(module));
	put_section(out, &n, REC_SEC_PT, pt, sizeof(pt));
	put_section(out, &n, REC_SEC_RAW_CODE, raw, sizeof(raw));
	memset(end, 0, sizeof(end));
	end[0] = 4;
	put_section(out, &n, REC_SEC_END, end, 8);
	CHECK_EQ(recr_open_mem(out, n, "older.ptsc", &r), 0);
	CHECK_EQ(recr_modules(r, &m), 1);
	CHECK_STR(m[0].path, "/x");
	CHECK_EQ(m[0].epoch, 0);
	CHECK_EQ(recr_pts(r, &p), 1);
	CHECK_EQ(p[0].len, 2);
	CHECK_EQ(p[0].epoch, 0);
	CHECK_EQ(recr_raw_codes(r, &rc), 1);
	CHECK_EQ(rc[0].len, 1);
	CHECK_EQ(rc[0].epoch, 0);
	CHECK_EQ(recr_processes(r, &pr), 0);
	recr_close(r);
	/* A payload cut inside the appended field is damage, not "old". */
	n -= 24 + 16 + sizeof(raw);
	{
		uint8_t cut[sizeof(raw) + 2];

		memcpy(cut, raw, sizeof(raw));
		cut[sizeof(raw)] = 1;
		cut[sizeof(raw) + 1] = 0;
		put_section(out, &n, REC_SEC_RAW_CODE, cut, sizeof(cut));
	}
	put_section(out, &n, REC_SEC_END, end, 8);
	CHECK_EQ(recr_open_mem(out, n, "older.ptsc", &r), PS_ERR_FORMAT);
	free(out);
	rmdir(tmpdir);
}

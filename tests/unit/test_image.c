/* SPDX-License-Identifier: MIT */
/* The code image (decoder/image.c): ELF files at link addresses, with a
 * bias (ptxed's FILE:BASE meaning), single mappings, raw blobs, overlap,
 * and bad input. */
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

/* The bytes img_read gives at @ip equal the file's at the offset
 * img_lookup names. */
static int same_as_file(struct img_image *im, uint64_t ip, size_t n)
{
	struct img_where w;
	uint8_t a[64], b[64];
	int fd, ok;

	if (n > sizeof(a) || img_lookup(im, ip, &w) || w.is_raw)
		return 0;
	if (img_read(im, ip, a, n) != (int)n)
		return 0;
	fd = open(w.name, O_RDONLY);
	if (fd < 0)
		return 0;
	ok = pread(fd, b, n, (off_t)(w.file_offset + (ip - w.start))) ==
		 (ssize_t)n &&
	     !memcmp(a, b, n);
	close(fd);
	return ok;
}

TEST(elf_at_link_addresses)
{
	struct img_image *im = NULL;
	struct img_where w;
	uint8_t buf[4];

	CHECK_EQ(img_new(NULL, &im), 0);
	CHECK(img_add_elf(im, ts_realpt("lldb-single-thread/a.out"), 0, 0, 0) >=
	      1);
	CHECK(same_as_file(im, 0x400511, 16));
	CHECK_EQ(img_lookup(im, 0x400511, &w), 0);
	CHECK_EQ(w.bias, 0);
	CHECK_EQ(w.is_raw, 0);
	CHECK_EQ(img_read(im, 0x10, buf, 4), PS_ERR_NOT_FOUND);
	CHECK(img_pt_image(im) != NULL);
	img_free(im);
}

/* ptxed's FILE:BASE: BASE is where the lowest PT_LOAD goes. */
TEST(shared_object_with_base)
{
	struct img_cache *c = NULL;
	struct img_image *im = NULL, *im2 = NULL;
	struct img_where w;
	uint64_t gen;

	CHECK_EQ(img_cache_new(&c), 0);
	CHECK_EQ(img_new(c, &im), 0);
	CHECK_EQ(img_new(c, &im2), 0);
	gen = img_generation(im);
	CHECK(img_add_elf(im, ts_realpt("lldb-multi-file/libfoo.so"),
			  0x7ffff7bd9000, 0, 0) >= 1);
	CHECK(img_generation(im) > gen);
	/* Its one executable segment (p_vaddr 0, 0x794 bytes) is at base. */
	CHECK_EQ(img_lookup(im, 0x7ffff7bd9000 - 1, &w), PS_ERR_NOT_FOUND);
	CHECK_EQ(img_lookup(im, 0x7ffff7bd9000 + 0x600, &w), 0);
	CHECK_EQ(w.bias, 0x7ffff7bd9000);
	CHECK(same_as_file(im, w.start, 32));
	/* The same file in a second image shares the cache. */
	CHECK(img_add_elf(im2, ts_realpt("lldb-multi-file/libfoo.so"),
			  0x10000000, 0, 0) >= 1);
	CHECK_EQ(img_lookup(im2, 0x10000000 + (w.start - 0x7ffff7bd9000), &w),
		 0);
	CHECK_EQ(w.bias, 0x10000000);
	img_free(im);
	img_free(im2);
	img_cache_free(c);
}

TEST(single_mapping_like_proc_maps)
{
	struct img_image *im = NULL;
	struct img_where w;

	CHECK_EQ(img_new(NULL, &im), 0);
	/* One page of the file at offset 0x1000, mapped at 0x500000. */
	CHECK_EQ(img_add_elf(im, ts_realpt("lldb-multi-file/libfoo.so"),
			     0x500000, 0x1000, 0x1000),
		 1);
	CHECK_EQ(img_lookup(im, 0x500010, &w), 0);
	CHECK_EQ(w.start, 0x500000);
	CHECK_EQ(w.file_offset, 0x1000);
	CHECK(same_as_file(im, 0x500010, 32));
	CHECK_EQ(img_lookup(im, 0x501000, &w), PS_ERR_NOT_FOUND);
	/* A mapping past the file's end is refused. */
	CHECK_EQ(img_add_elf(im, ts_realpt("lldb-multi-file/libfoo.so"),
			     0x600000, 0x100000, 0x1000),
		 PS_ERR_FORMAT);
	img_free(im);
}

TEST(raw_blob_overrides_file)
{
	struct img_image *im = NULL;
	struct img_where w;
	uint8_t code[8] = {1, 2, 3, 4, 5, 6, 7, 8}, buf[16];

	CHECK_EQ(img_new(NULL, &im), 0);
	CHECK(img_add_elf(im, ts_realpt("lldb-single-thread/a.out"), 0, 0, 0) >=
	      1);
	CHECK_EQ(img_add_raw(im, "[jit]", code, sizeof(code), 0x400510), 0);
	CHECK_EQ(img_read(im, 0x400512, buf, 16), 6);
	CHECK(!memcmp(buf, code + 2, 6));
	CHECK_EQ(img_lookup(im, 0x400517, &w), 0);
	CHECK_STR(w.name, "[jit]");
	CHECK_EQ(w.is_raw, 1);
	/* The file resumes right after the blob, at the right offset. */
	CHECK(same_as_file(im, 0x400518, 8));
	CHECK(same_as_file(im, 0x400500, 16));
	CHECK_EQ(img_add_raw(im, "x", code, 0, 0x1000), PS_ERR_INVAL);
	CHECK_EQ(img_add_raw(im, "x", code, 8, UINT64_MAX - 2), PS_ERR_INVAL);
	img_free(im);
}

static int count_sink(void *ctx, const struct br_event *ev)
{
	(void)ev;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* Instructions the flow layer finds in @pt over @im (libipt's block
 * decoder; a bare loop would never end on this input's direct-jump loop). */
static uint64_t flow_insns(const uint8_t *pt, size_t len, struct img_image *im)
{
	struct dec_config dc = {.cpu = {1, 6, 79, 1}};
	struct flow_decoder *fd;
	struct dec_stats st;
	uint64_t n = 0;

	memset(&st, 0, sizeof(st));
	if (flow_new(&dc, im, NULL, &fd))
		return 0;
	if (flow_decode(fd, pt, len, count_sink, &n, &st))
		st.instructions = 0;
	flow_free(fd);
	return st.instructions;
}

/* The fuzzed input that hops in and out of raw code (it took 12 s when
 * each visit remapped a memfd, then ran an instruction at a time through
 * the read-memory callback): raw code is a section libipt keeps mapped,
 * never read through the callback, and decodes to what libipt finds with
 * the same bytes in a file of its own. */
TEST(raw_code_is_a_cached_section)
{
	struct img_cache *c = NULL;
	struct img_image *im = NULL, *im2 = NULL;
	char path[4096];
	uint8_t *in;
	size_t len, code;
	uint64_t got;

	snprintf(path, sizeof(path),
		 "%s/tests/fuzz/regress/ptdecode/slow-raw-code-remapped",
		 harness_top());
	in = ts_read_file(path, &len);
	CHECK(in && len > 3 && (in[0] & 3) == 3);
	code = (size_t)(in[1] | in[2] << 8) % 4097;
	CHECK(code > 0 && code + 3 < len);
	CHECK_EQ(img_cache_new(&c), 0);
	CHECK_EQ(img_new(c, &im), 0);
	CHECK_EQ(img_add_raw(im, "[code]", in + 3, code, 0x400000), 0);
	got = flow_insns(in + 3 + code, len - 3 - code, im);
	CHECK(got > 0);
	CHECK_EQ(img_callback_reads(im), 0);
	/* A second image of the cache with the same bytes shares the
	 * section (the instruction count may differ: the walk is cut off
	 * after a million instructions without trace, counted in blocks,
	 * and libipt's block cache, now warm, makes longer blocks). */
	CHECK_EQ(img_new(c, &im2), 0);
	CHECK_EQ(img_add_raw(im2, "[code]", in + 3, code, 0x400000), 0);
	CHECK(flow_insns(in + 3 + code, len - 3 - code, im2) > 0);
	CHECK_EQ(img_callback_reads(im2), 0);
	img_free(im);
	img_free(im2);
	img_cache_free(c);
	free(in);
}

TEST(bad_input)
{
	struct img_image *im = NULL;
	char tmp[] = "/tmp/ptscope-img-XXXXXX";
	int fd;

	CHECK_EQ(img_new(NULL, NULL), PS_ERR_INVAL);
	CHECK_EQ(img_cache_new(NULL), PS_ERR_INVAL);
	CHECK_EQ(img_new(NULL, &im), 0);
	CHECK_EQ(img_add_elf(im, "/nonexistent/file", 0, 0, 0), PS_ERR_IO);
	CHECK_EQ(img_add_elf(im, NULL, 0, 0, 0), PS_ERR_INVAL);
	CHECK_EQ(img_add_elf(im, ts_realpt("lldb-single-thread/3842849.trace"),
			     0, 0, 0),
		 PS_ERR_FORMAT);
	/* A truncated ELF header is not an ELF file. */
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "\177ELF\2\1\1", 7), 7);
	close(fd);
	CHECK_EQ(img_add_elf(im, tmp, 0, 0, 0), PS_ERR_FORMAT);
	unlink(tmp);
	CHECK_EQ(img_read(NULL, 0, NULL, 1), PS_ERR_INVAL);
	img_free(im);
	img_free(NULL);
	img_cache_free(NULL);
}

/* SPDX-License-Identifier: MIT */
/* The run cache (decoder/fast_runs.c) learns a run with the table decoder
 * where it can and with libipt's instruction decoder otherwise; the runs
 * must be the same either way.  Here every instruction boundary of real
 * code starts a run, learned by both walks and compared field by field:
 * where it ends and why, its instructions (address, length, class, direct
 * target) and the return addresses its calls push. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/fast_runs.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define BASE 0x7f1200000000ull

static int same_run(struct fr_cache *a, const struct fr_run *ra,
		    struct fr_cache *b, const struct fr_run *rb)
{
	const struct fr_insn *ia = fr_insns(a) + ra->first,
			     *ib = fr_insns(b) + rb->first;

	if (ra->ip != rb->ip || ra->end_ip != rb->end_ip ||
	    ra->ninsn != rb->ninsn || ra->end != rb->end ||
	    ra->end_len != rb->end_len || ra->ncalls != rb->ncalls ||
	    ra->sec_lo != rb->sec_lo || ra->sec_hi != rb->sec_hi)
		return 0;
	if (ra->end == FR_SECTION && ra->next_ip != rb->next_ip)
		return 0;
	if (ra->end == FR_ERROR &&
	    (ra->next_ip != rb->next_ip || ra->error != rb->error))
		return 0;
	if (ra->end == INSN_COND && ra->target != rb->target)
		return 0;
	for (uint32_t i = 0; i < ra->ninsn; i++) {
		if (ia[i].ip != ib[i].ip || ia[i].len != ib[i].len ||
		    ia[i].cls != ib[i].cls || ia[i].direct != ib[i].direct ||
		    (ia[i].direct && ia[i].target != ib[i].target))
			return 0;
	}
	/* (no calls learned yet: both arrays are NULL) */
	return !ra->ncalls ||
	       !memcmp(fr_calls(a) + ra->calls, fr_calls(b) + rb->calls,
		       ra->ncalls * sizeof(uint64_t));
}

/* Runs from every instruction boundary of @path's .text (a linear sweep),
 * up to @limit of them; @vex: only from VEX/EVEX instructions (vector
 * code: glibc's string functions, libm's FMA variants).  Counts into the
 * arguments. */
static void compare_file(const char *path, size_t limit, int vex, size_t *runs,
			 size_t *table, size_t *diff)
{
	struct img_image *img = NULL;
	struct insn_decoder *d = NULL;
	struct fr_cache *own = NULL, *ref = NULL;
	uint64_t addr = 0, off = 0;
	size_t size = 0;
	uint8_t *text = ts_elf_text(path, &size, &addr);

	if (!text || img_new(NULL, &img) ||
	    img_add_elf(img, path, BASE, 0, 0) < 1 || insn_new(&d) ||
	    fr_new(img, d, &own) || fr_new(img, d, &ref))
		goto out;
	fr_walk_with_libipt(ref, 1);
	while (off < size && *runs < limit) {
		uint64_t ip = BASE + addr + off;
		struct fr_run *ra, *rb;
		struct insn_info in;
		size_t n = size - off < 15 ? size - off : 15;
		uint8_t first;
		int ea, eb;

		if (insn_decode(d, 64, ip, text + off, n, &in)) {
			off++;
			continue;
		}
		first = text[off];
		off += in.len;
		if (vex && first != 0xc4 && first != 0xc5 && first != 0x62)
			continue;
		/* each cache learns each run once: start afresh now and then */
		if (*runs % 4096 == 0) {
			fr_clear(own);
			fr_clear(ref);
		}
		ea = fr_get(own, ip, &ra);
		eb = fr_get(ref, ip, &rb);
		(*runs)++;
		if (ea != eb || (!ea && !same_run(own, ra, ref, rb))) {
			if ((*diff)++ < 5)
				printf("# %s: the run at +0x%llx differs (%d, "
				       "%d)\n",
				       path, (unsigned long long)(ip - BASE),
				       ea, eb);
		}
	}
	if (own) {
		uint64_t t, l;

		fr_walk_counts(own, &t, &l);
		*table += t;
	}
out:
	free(text);
	fr_free(own);
	fr_free(ref);
	insn_free(d);
	img_free(img);
}

TEST(table_walk_equals_libipt_walk)
{
	static const char *const paths[] = {
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libcapstone.so.4",
	    "/usr/lib/x86_64-linux-gnu/libm.so.6", "/usr/bin/bash"};
	size_t runs = 0, table = 0, diff = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		size_t before = runs;

		compare_file(paths[i], before + 60000, 0, &runs, &table, &diff);
	}
	if (!runs)
		SKIP("none of libc, libcapstone, libm, bash found");
	printf("# %zu runs compared, %zu of them walked by the table decoder\n",
	       runs, table);
	CHECK(runs > 50000);
	CHECK_EQ(diff, 0);
	/* the comparison is about the table walk: most runs must take it */
	CHECK(table * 10 > runs * 8);
}

/* The same from every VEX/EVEX instruction of libc and libm: the table
 * decoder takes them (insn_len.c, quick_vex) with the lengths libipt's
 * own decoder gives. */
TEST(table_walk_equals_libipt_walk_on_vector_code)
{
	static const char *const paths[] = {
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libm.so.6"};
	size_t runs = 0, table = 0, diff = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		compare_file(paths[i], runs + 60000, 1, &runs, &table, &diff);
	if (!runs)
		SKIP("neither libc nor libm found");
	printf("# %zu runs from vector instructions compared, %zu of them "
	       "walked by the table decoder\n",
	       runs, table);
	CHECK(runs > 5000);
	CHECK_EQ(diff, 0);
	CHECK(table * 10 > runs * 8);
}

/* fr_get answers from the runs remembered after the last one before it
 * probes the table: the answer must be the run at the asked address
 * whatever came before, also across fr_clear (which renumbers runs).
 * fr_peek, that quick answer alone, must give the run fr_get gives or
 * none; taken with fr_take instead of fr_get, the answers after it stay
 * right. */
TEST(next_run_memo_gives_the_asked_run)
{
	const char *path = "/lib/x86_64-linux-gnu/libc.so.6";
	struct img_image *img = NULL;
	struct insn_decoder *d = NULL;
	struct fr_cache *c = NULL;
	uint64_t addr = 0, off = 0, ips[512];
	size_t size = 0, n = 0, wrong = 0, asked = 0, peeked = 0;
	uint8_t *text = ts_elf_text(path, &size, &addr);
	unsigned seed = 1;

	if (!text)
		SKIP("no /lib/x86_64-linux-gnu/libc.so.6");
	CHECK(!img_new(NULL, &img) && img_add_elf(img, path, BASE, 0, 0) >= 1 &&
	      !insn_new(&d) && !fr_new(img, d, &c));
	while (off < size && n < 512) {
		struct insn_info in;
		size_t left = size - off < 15 ? size - off : 15;

		if (insn_decode(d, 64, BASE + addr + off, text + off, left,
				&in)) {
			off++;
			continue;
		}
		ips[n++] = BASE + addr + off;
		off += in.len * 37; /* spread over the code */
	}
	/* a walk over a few successors per address, so the memo's two
	 * entries are hit, missed and replaced */
	for (size_t i = 0, at = 0; i < 200000; i++) {
		struct fr_run *r, *p;
		uint32_t idx;

		seed = seed * 1103515245 + 12345;
		at = (at * 5 + 1 + (seed >> 16) % 3) % n;
		if (i % 50000 == 49999)
			fr_clear(c);
		p = fr_peek(c, ips[at], &idx);
		if (p && i % 2) {
			fr_take(c, p, idx);
			r = p;
		} else if (fr_get(c, ips[at], &r)) {
			CHECK(!p);
			continue; /* code libipt cannot walk from there */
		}
		if (p) {
			peeked++;
			CHECK(p == r);
		}
		asked++;
		if (r->ip != ips[at] && wrong++ < 3)
			printf("# asked 0x%llx, got the run at 0x%llx\n",
			       (unsigned long long)ips[at],
			       (unsigned long long)r->ip);
	}
	CHECK(asked > 100000);
	CHECK(peeked > asked / 2);
	CHECK_EQ(wrong, 0);
	fr_free(c);
	insn_free(d);
	img_free(img);
	free(text);
}

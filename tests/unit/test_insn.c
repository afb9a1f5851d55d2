/* SPDX-License-Identifier: MIT */
/* Instruction classification (decoder/insn.c, insn_len.c):
 *  - the table decoder against capstone: real code, random bytes and
 *    hand-made cases;
 *  - the AVX-512 and CET instructions capstone 4 does not decode: their
 *    lengths, a check of the VEX/EVEX length decoder against capstone over
 *    glibc's code, and the flow layer running through such code without a
 *    decode error. */
#include <capstone/capstone.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define RAW 0x7100000000ull

/* A line for the reader of the test's output (the runner counts only the
 * PASS/FAIL/SKIP lines). */
#define NOTE(...) (printf("# " __VA_ARGS__), printf("\n"))

struct len_case {
	uint8_t bytes[15];
	uint8_t n;   /* bytes given */
	uint8_t len; /* expected length */
	int bits;
};

/* From glibc's __memchr_evex, __strlen_evex and kin (capstone 4 fails on
 * all of these), plus hand-made forms for each addressing case. */
static const struct len_case evex_cases[] = {
    /* vptestnmb k0, ymm19, ymm19 */
    {{0x62, 0xb2, 0x66, 0x20, 0x26, 0xc3}, 6, 6, 64},
    /* vpcmpb k0, ymm16, [rdi], 0 */
    {{0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x07, 0x00}, 7, 7, 64},
    /* vpcmpb k1, ymm19, ymm17, 0 */
    {{0x62, 0xb3, 0x65, 0x20, 0x3f, 0xc9, 0x00}, 7, 7, 64},
    /* vptestnmb k2, ymm17, ymm17 */
    {{0x62, 0xb2, 0x75, 0x20, 0x26, 0xd1}, 6, 6, 64},
    /* vpcmpb k0, ymm16, [rdi + 0x20], 0: disp8 */
    {{0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x47, 0x01, 0x00}, 8, 8, 64},
    /* vpcmpb k0, ymm16, [rdi + rax*1 + 0x1000], 0: SIB + disp32 */
    {{0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x84, 0x07, 0x00, 0x10, 0x00, 0x00, 0x00},
     12,
     12,
     64},
    /* vpcmpb k0, ymm16, [rip + 0x100], 0 */
    {{0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00},
     11,
     11,
     64},
    /* rdsspq rax (libgcc's _Unwind_RaiseException; 0F 1E hint space) */
    {{0xf3, 0x48, 0x0f, 0x1e, 0xc8}, 5, 5, 64},
    /* rdsspd [rip + 0x10]: a memory form of the same space */
    {{0xf3, 0x0f, 0x1e, 0x0d, 0x10, 0x00, 0x00, 0x00}, 8, 8, 64},
    /* the same with an fs: prefix */
    {{0x64, 0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00},
     12,
     12,
     64},
};

TEST(evex_lengths)
{
	struct insn_decoder *d;
	struct insn_info in;

	CHECK_EQ(insn_new(&d), 0);
	for (size_t i = 0; i < sizeof(evex_cases) / sizeof(evex_cases[0]);
	     i++) {
		const struct len_case *c = &evex_cases[i];

		POISON(in);
		CHECK_EQ(insn_decode(d, c->bits, RAW, c->bytes, c->n, &in), 0);
		CHECK_EQ(in.len, c->len);
		CHECK_EQ(in.cls, INSN_OTHER);
		CHECK_EQ(in.direct, 0);
		/* one byte short is not an instruction */
		CHECK_EQ(insn_fallback_len(c->bits, c->bytes, c->n - 1u), 0);
	}
	insn_free(d);
}

TEST(vex_len_rejects)
{
	/* 32-bit mode: c5 with a memory ModRM is LDS, 62 is BOUND */
	static const uint8_t lds[] = {0xc5, 0x06, 0x90};
	static const uint8_t bound[] = {0x62, 0x06, 0x90};
	/* EVEX with P1 bit 2 clear is not EVEX */
	static const uint8_t bad_p1[] = {0x62, 0xf3, 0x79, 0x20,
					 0x3f, 0xc0, 0x00};
	/* VEX map 0 and EVEX map 4 do not exist as AVX maps */
	static const uint8_t map0[] = {0xc4, 0xe0, 0x7d, 0x10, 0xc0};
	static const uint8_t map4[] = {0x62, 0xf4, 0x7d, 0x20, 0x10, 0xc0};
	static const uint8_t nop[] = {0x90};
	/* a legacy prefix before VEX is not VEX */
	static const uint8_t pre_vex[] = {0x66, 0xc5, 0xf8, 0x77};
	/* vzeroupper has no ModRM */
	static const uint8_t vzu[] = {0xc5, 0xf8, 0x77, 0xff};

	CHECK_EQ(insn_fallback_len(32, lds, sizeof(lds)), 0);
	CHECK_EQ(insn_fallback_len(32, bound, sizeof(bound)), 0);
	CHECK_EQ(insn_fallback_len(64, bad_p1, sizeof(bad_p1)), 0);
	CHECK_EQ(insn_fallback_len(64, map0, sizeof(map0)), 0);
	CHECK_EQ(insn_fallback_len(64, map4, sizeof(map4)), 0);
	CHECK_EQ(insn_fallback_len(64, nop, sizeof(nop)), 0);
	CHECK_EQ(insn_fallback_len(64, pre_vex, sizeof(pre_vex)), 0);
	CHECK_EQ(insn_fallback_len(64, vzu, 0), 0);
	CHECK_EQ(insn_fallback_len(64, vzu, sizeof(vzu)), 3);
}

/* Every VEX/EVEX instruction (and endbr64, in the 0F 1E hint space)
 * capstone does decode in glibc must get the same length from
 * insn_fallback_len (a linear sweep; glibc's .text is code). */
TEST(vex_len_matches_capstone_on_glibc)
{
	static const char *const paths[] = {"/lib/x86_64-linux-gnu/libc.so.6",
					    "/usr/lib64/libc.so.6",
					    "/lib64/libc.so.6"};
	const uint8_t *code;
	uint8_t *text = NULL;
	size_t len = 0, size, checked = 0, mismatch = 0;
	uint64_t addr = 0;
	cs_insn *ci;
	csh cs;

	for (size_t i = 0; !text && i < sizeof(paths) / sizeof(paths[0]); i++)
		text = ts_elf_text(paths[i], &len, NULL);
	if (!text)
		SKIP("no x86-64 libc.so.6 found to check against");
	CHECK_EQ(cs_open(CS_ARCH_X86, CS_MODE_64, &cs), CS_ERR_OK);
	ci = cs_malloc(cs);
	CHECK(ci != NULL);
	code = text;
	size = len;
	while (size) {
		const uint8_t *at = code;
		size_t left = size, p = 0;

		if (!cs_disasm_iter(cs, &code, &size, &addr, ci)) {
			code++;
			size--;
			addr++;
			continue;
		}
		while (p + 1 < ci->size &&
		       (at[p] == 0x64 || at[p] == 0x65 || at[p] == 0x2e ||
			at[p] == 0x3e || at[p] == 0x67 || at[p] == 0x66 ||
			at[p] == 0xf2 || at[p] == 0xf3 ||
			(at[p] & 0xf0) == 0x40))
			p++;
		if (at[p] != 0xc4 && at[p] != 0xc5 && at[p] != 0x62 &&
		    !(at[p] == 0x0f && at[p + 1] >= 0x18 && at[p + 1] <= 0x1f))
			continue;
		checked++;
		if (insn_fallback_len(64, at, left < 15 ? left : 15) !=
		    ci->size)
			mismatch++;
	}
	cs_free(ci, 1);
	cs_close(&cs);
	free(text);
	CHECK(checked > 1000);
	CHECK_EQ(mismatch, 0);
}

/* ---- the flow layer through EVEX code ---- */

/* At RAW:
 *   +0x00 vptestnmb k0, ymm19, ymm19      +0x06 vpcmpb k0, ymm16, [rdi], 0
 *   +0x0d kmovd eax, k0                   +0x11 call +0x20
 *   +0x16 ret                             +0x20 vpcmpb k1, ymm19, ymm17, 0
 *   +0x27 ret                                                           */
static uint8_t blob[0x30];

static void make_blob(void)
{
	static const uint8_t head[] = {0x62, 0xb2, 0x66, 0x20, 0x26, 0xc3,
				       0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x07,
				       0x00, 0xc5, 0xfb, 0x93, 0xc0, 0xe8,
				       0x0a, 0x00, 0x00, 0x00, 0xc3};
	static const uint8_t callee[] = {0x62, 0xb3, 0x65, 0x20,
					 0x3f, 0xc9, 0x00, 0xc3};

	memset(blob, 0xcc, sizeof(blob));
	memcpy(blob, head, sizeof(head));
	memcpy(blob + 0x20, callee, sizeof(callee));
}

struct rec {
	struct br_event ev[32];
	size_t n;
};

static int rec_sink(void *ctx, const struct br_event *ev)
{
	struct rec *r = ctx;

	if (r->n < 32)
		r->ev[r->n++] = *ev;
	return 0;
}

static void put(struct pt_encoder *e, int *bad, enum pt_packet_type type,
		uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	switch (type) {
	case ppt_tip_pge:
	case ppt_tip_pgd:
		p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
		p.payload.ip.ip = ip;
		break;
	case ppt_tsc:
		p.payload.tsc.tsc = ip;
		break;
	case ppt_mode:
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec.csl = 1;
		break;
	case ppt_tnt_8:
		/* one taken bit: the callee's compressed return */
		p.payload.tnt.bit_size = 1;
		p.payload.tnt.payload = 1;
		break;
	default:
		break;
	}
	if (pt_enc_next(e, &p) < 0)
		*bad = 1;
}

TEST(flow_through_evex_code)
{
	static uint8_t pt[512];
	struct pt_encoder *e;
	struct pt_config cfg;
	struct img_image *img;
	struct flow_decoder *fd;
	struct dec_config dc;
	struct dec_stats st;
	static struct rec r;
	uint64_t len = 0;
	int bad = 0;

	make_blob();
	pt_config_init(&cfg);
	cfg.begin = pt;
	cfg.end = pt + sizeof(pt);
	e = pt_alloc_encoder(&cfg);
	CHECK(e != NULL);
	put(e, &bad, ppt_psb, 0);
	put(e, &bad, ppt_tsc, 1000);
	put(e, &bad, ppt_mode, 0);
	put(e, &bad, ppt_psbend, 0);
	put(e, &bad, ppt_tip_pge, RAW);
	put(e, &bad, ppt_tnt_8, 0);
	put(e, &bad, ppt_tip_pgd, 0);
	pt_enc_get_offset(e, &len);
	pt_free_encoder(e);
	CHECK(!bad);

	memset(&dc, 0, sizeof(dc));
	memset(&st, 0, sizeof(st));
	CHECK_EQ(img_new(NULL, &img), 0);
	CHECK_EQ(img_add_raw(img, "[evex]", blob, sizeof(blob), RAW), 0);
	CHECK_EQ(flow_new(&dc, img, NULL, &fd), 0);
	CHECK_EQ(flow_decode(fd, pt, (size_t)len, rec_sink, &r, &st), 0);
	flow_free(fd);
	img_free(img);

	CHECK_EQ(st.err_decode, 0);
	CHECK_EQ(st.err_nomap, 0);
	CHECK_EQ(r.n, 6);
	CHECK_EQ(r.ev[0].kind, BR_ENABLE);
	CHECK_EQ(r.ev[0].to, RAW);
	CHECK_EQ(r.ev[1].kind, BR_CALL);
	CHECK_EQ(r.ev[1].from, RAW + 0x11);
	CHECK_EQ(r.ev[1].to, RAW + 0x20);
	CHECK_EQ(r.ev[1].ret, RAW + 0x16);
	CHECK_EQ(r.ev[1].icount, 4);
	CHECK_EQ(r.ev[2].kind, BR_RETURN);
	CHECK_EQ(r.ev[2].from, RAW + 0x27);
	CHECK_EQ(r.ev[2].to, RAW + 0x16);
	CHECK_EQ(r.ev[3].kind, BR_RETURN);
	CHECK_EQ(r.ev[3].from, RAW + 0x16);
	CHECK_EQ(r.ev[4].kind, BR_DISABLE);
	CHECK_EQ(r.ev[5].kind, BR_END);
	CHECK_EQ(r.ev[5].icount, 7);
	CHECK_EQ(st.instructions, 7);
}

/* insn_quick() against capstone (insn_capstone) on @text: every
 * instruction of a linear sweep the table decoder takes must get capstone's
 * length, kind and target.  Counts into *seen and *quick; mismatches are
 * printed and counted. */
static size_t quick_sweep(struct insn_decoder *d, const uint8_t *text,
			  size_t len, size_t *seen, size_t *quick)
{
	const uint64_t base = 0x400000;
	size_t off = 0, bad = 0;

	while (off < len) {
		size_t n = len - off < 15 ? len - off : 15;
		struct insn_info cs, q;

		if (insn_capstone(d, 64, base + off, text + off, n, &cs)) {
			off++;
			continue;
		}
		(*seen)++;
		if (insn_quick(text + off, n, base + off, &q)) {
			(*quick)++;
			if (q.len != cs.len || q.cls != cs.cls ||
			    q.direct != cs.direct || q.target != cs.target) {
				if (bad++ < 10)
					NOTE("quick %u/%u/%u vs capstone "
					     "%u/%u/%u at %02x %02x %02x "
					     "%02x",
					     q.len, q.cls, q.direct, cs.len,
					     cs.cls, cs.direct, text[off],
					     text[off + 1], text[off + 2],
					     text[off + 3]);
			}
		}
		off += cs.len;
	}
	return bad;
}

/* The table decoder agrees with capstone on real code, and takes nearly
 * all of it (or learning would be slow again). */
TEST(quick_matches_capstone_on_binaries)
{
	static const char *const paths[] = {
	    "/lib/x86_64-linux-gnu/libc.so.6",
	    "/usr/lib/x86_64-linux-gnu/libcapstone.so.4",
	    "/usr/lib/x86_64-linux-gnu/libdw.so.1",
	    "/usr/lib/x86_64-linux-gnu/libm.so.6",
	    "/usr/bin/bash",
	    "/usr/bin/perl"};
	struct insn_decoder *d;
	size_t seen = 0, quick = 0, bad = 0, files = 0;

	CHECK_EQ(insn_new(&d), 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		size_t len = 0;
		uint8_t *text = ts_elf_text(paths[i], &len, NULL);

		if (!text)
			continue;
		files++;
		bad += quick_sweep(d, text, len, &seen, &quick);
		free(text);
	}
	insn_free(d);
	if (!files)
		SKIP(
		    "none of libc, libcapstone, libdw, libm, bash, perl found");
	NOTE("%zu files, %zu instructions, %zu by the table decoder", files,
	     seen, quick);
	CHECK(seen > 100000);
	CHECK_EQ(bad, 0);
	CHECK(quick * 100 >= seen * 95);
}

/* Random instructions built from prefixes, opcode maps and random bytes:
 * wherever the table decoder answers, capstone decodes the same. */
TEST(quick_matches_capstone_on_random_bytes)
{
	static const uint8_t prefixes[] = {0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e,
					   0x3e, 0x26, 0x64, 0x65, 0x36};
	struct insn_decoder *d;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t tried = 0, quick = 0, bad = 0, cs_fails = 0, short_bad = 0;
	size_t vex = 0, evex_rounding = 0, locks = 0, lock_bad = 0;

	CHECK_EQ(insn_new(&d), 0);
	for (int k = 0; k < 400000; k++) {
		uint8_t b[15];
		struct insn_info cs, q;
		size_t i = 0;
		uint64_t ip = 0x7f0000001000ull + (x & 0xffff);
		int locked;

		for (size_t j = 0; j < sizeof(b); j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[j] = (uint8_t)x;
		}
		/* 0-2 legacy prefixes, maybe a REX, maybe 0F (38/3A) */
		for (unsigned np = b[14] % 3; np--; i++)
			b[i] = prefixes[b[i + 5] % sizeof(prefixes)];
		locked = memchr(b, 0xf0, i) != NULL;
		if (b[13] & 1)
			b[i++] = 0x40 | (b[12] & 15);
		if (b[13] & 2) {
			b[i++] = 0x0f;
			if ((b[13] & 12) == 4)
				b[i++] = 0x38;
			else if ((b[13] & 12) == 8)
				b[i++] = 0x3a;
		}
		/* a quarter of them VEX or EVEX, of maps 1-3 */
		if ((b[11] & 3) == 0) {
			static const uint8_t esc[3] = {0xc5, 0xc4, 0x62};
			unsigned e = b[10] % 3, map = 1 + b[9] % 3;

			b[0] = esc[e];
			locked = 0;
			if (e == 1)
				b[1] = (uint8_t)((b[1] & 0xe0) | map);
			else if (e == 2)
				b[1] = (uint8_t)((b[1] & 0xf0) | map),
				b[2] |= 0x04;
		}
		tried++;
		if (!insn_quick(b, sizeof(b), ip, &q))
			continue;
		quick++;
		/* exactly its bytes are enough, one fewer is not */
		if (!insn_quick(b, q.len, ip, &cs) || cs.len != q.len ||
		    insn_quick(b, q.len - 1u, ip, &cs))
			short_bad++;
		if (insn_capstone(d, 64, ip, b, sizeof(b), &cs)) {
			/* a lock the table decoder allows capstone does too:
			 * no instruction that used to be an error gets a
			 * length */
			lock_bad += locked;
			cs_fails++;
			continue;
		}
		locks += locked;
		if (b[0] == 0xc4 || b[0] == 0xc5 || b[0] == 0x62)
			vex++;
		/* capstone 4 takes one byte too many after an EVEX
		 * instruction with embedded rounding (EVEX.b, a register
		 * operand; objdump and libipt agree with the table decoder) */
		if (b[0] == 0x62 && (b[3] & 0x10) && b[5] >= 0xc0 &&
		    cs.len == q.len + 1u) {
			evex_rounding++;
			continue;
		}
		if (q.len != cs.len || q.cls != cs.cls ||
		    q.direct != cs.direct || q.target != cs.target) {
			if (bad++ < 10)
				NOTE("quick %u/%u/%u vs capstone %u/%u/%u "
				     "at %02x %02x %02x %02x %02x %02x",
				     q.len, q.cls, q.direct, cs.len, cs.cls,
				     cs.direct, b[0], b[1], b[2], b[3], b[4],
				     b[5]);
		}
	}
	insn_free(d);
	NOTE("%zu tried, %zu by the table decoder (%zu VEX/EVEX capstone "
	     "decodes too, %zu of them with capstone 4's EVEX rounding "
	     "length), %zu capstone rejects",
	     tried, quick, vex, evex_rounding, cs_fails);
	CHECK_EQ(bad, 0);
	CHECK(vex > 10000);
	NOTE("%zu locked ones both decode, %zu capstone rejects", locks,
	     lock_bad);
	CHECK(locks > 500);
	CHECK_EQ(lock_bad, 0);
	CHECK_EQ(short_bad, 0);
	/* most of these random instructions are common ones */
	CHECK(quick * 3 > tried);
}

/* Hand-made cases: lengths, kinds and targets the table decoder gives, and
 * the encodings it leaves to capstone. */
TEST(quick_cases)
{
	static const struct {
		uint8_t b[15];
		uint8_t n, len, cls, direct;
		int64_t rel; /* target - (ip + len) */
	} ok[] = {
	    {{0xe8, 0xfb, 0xff, 0xff, 0xff}, 5, 5, INSN_CALL, 1, -5},
	    {{0xeb, 0x80}, 2, 2, INSN_JUMP, 1, -128},
	    {{0x0f, 0x84, 0x00, 0x01, 0x00, 0x00}, 6, 6, INSN_COND, 1, 0x100},
	    {{0xe3, 0x05}, 2, 2, INSN_COND, 1, 5},
	    {{0x41, 0xff, 0xd3}, 3, 3, INSN_CALL, 0, 0}, /* call r11 */
	    {{0xff, 0x24, 0xc5, 0, 0, 0, 0}, 7, 7, INSN_JUMP, 0, 0}, /* table */
	    {{0xc3}, 1, 1, INSN_RET, 0, 0},
	    {{0xc2, 0x08, 0x00}, 3, 3, INSN_RET, 0, 0},
	    {{0x0f, 0x05}, 2, 2, INSN_SYSCALL, 0, 0},
	    {{0x48, 0xcf}, 2, 2, INSN_FAR_RET, 0, 0}, /* iretq */
	    {{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, 10, INSN_OTHER, 0, 0},
	    {{0x66, 0xb8, 1, 2}, 4, 4, INSN_OTHER, 0, 0},
	    {{0xa1, 1, 2, 3, 4, 5, 6, 7, 8}, 9, 9, INSN_OTHER, 0, 0}, /* moffs
								       */
	    {{0x67, 0xa1, 1, 2, 3, 4}, 6, 6, INSN_OTHER, 0, 0},
	    {{0xc8, 0x10, 0x00, 0x00}, 4, 4, INSN_OTHER, 0, 0}, /* enter */
	    {{0x66, 0x81, 0x44, 0x24, 0x08, 0x34, 0x12},
	     7,
	     7,
	     INSN_OTHER,
	     0,
	     0}, /* add word [rsp+8], imm16 */
	    {{0x48, 0x81, 0x04, 0x25, 0, 0, 0, 0, 1, 0, 0, 0},
	     12,
	     12,
	     INSN_OTHER,
	     0,
	     0}, /* SIB, no base: disp32 */
	    {{0xf3, 0x0f, 0x1e, 0xfa}, 4, 4, INSN_OTHER, 0, 0}, /* endbr64 */
	    {{0xf6, 0xc1, 0x01}, 3, 3, INSN_OTHER, 0, 0},	/* test cl, 1 */
	    {{0xf7, 0xd8}, 2, 2, INSN_OTHER, 0, 0},		/* neg eax */
	    {{0x0f, 0xae, 0xe8}, 3, 3, INSN_OTHER, 0, 0},	/* lfence */
	    {{0xc5, 0xf8, 0x77}, 3, 3, INSN_OTHER, 0, 0},	/* vzeroupper */
	    {{0xf0, 0x48, 0x0f, 0xb1, 0x0a}, 5, 5, INSN_OTHER, 0, 0}, /* lock */
	    {{0xf0, 0xff, 0x00}, 3, 3, INSN_OTHER, 0, 0},	/* lock inc */
	    {{0xf0, 0x83, 0x00, 0x01}, 4, 4, INSN_OTHER, 0, 0}, /* lock add */
	    {{0x0f, 0x01, 0xd0}, 3, 3, INSN_OTHER, 0, 0},	/* xgetbv */
	    {{0x0f, 0x01, 0xf9}, 3, 3, INSN_OTHER, 0, 0},	/* rdtscp */
	    {{0x67, 0xe8, 0x10, 0, 0, 0}, 6, 6, INSN_CALL, 1, 0x10},  /* addr32
								       */
	    {{0x66, 0x0f, 0x38, 0x00, 0xc1}, 5, 5, INSN_OTHER, 0, 0}, /* pshufb
								       */
	    {{0x66, 0x0f, 0x3a, 0x0f, 0xc1, 0x08}, 6, 6, INSN_OTHER, 0, 0},
	    {{0xc5, 0xfe, 0x6f, 0x06}, 4, 4, INSN_OTHER, 0, 0}, /* vmovdqu */
	    {{0xc4, 0xe2, 0x7d, 0x00, 0xc1}, 5, 5, INSN_OTHER, 0, 0}, /* 0F38 */
	    {{0xc4, 0xe3, 0x7d, 0x0f, 0xc1, 0x08},
	     6,
	     6,
	     INSN_OTHER,
	     0,
	     0}, /* vpalignr: 0F3A, imm8 */
	    {{0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x46, 0x01},
	     7,
	     7,
	     INSN_OTHER,
	     0,
	     0}, /* vmovdqu64 zmm0, [rsi+64] (EVEX, disp8) */
	};
	static const struct {
		uint8_t b[15];
		uint8_t n;
	} deferred[] = {
	    {{0xf2, 0xe8, 0, 0, 0, 0}, 6},	 /* bnd call */
	    {{0x3e, 0xff, 0xe0}, 3},		 /* notrack jmp rax */
	    {{0x66, 0xe8, 0, 0}, 4},		 /* call rel16 */
	    {{0xf3, 0xc3}, 2},			 /* rep ret */
	    {{0xe2, 0xfe}, 2},			 /* loop */
	    {{0x66, 0xc5, 0xf8, 0x77}, 4},	 /* a prefix before VEX */
	    {{0xc5, 0x78, 0x22, 0xd8}, 4},	 /* VEX 0F 22: libipt's cr3 */
	    {{0xc4, 0xe0, 0x7d, 0x00, 0xc1}, 5}, /* VEX map 0 */
	    {{0x62, 0xf5, 0x7c, 0x48, 0x58, 0xc1}, 6}, /* EVEX map 5 */
	    {{0x62, 0xf1, 0xfa, 0x48, 0x6f, 0x06}, 6}, /* P1 bit 2 clear */
	    {{0xf0, 0x01, 0xc0}, 3},		       /* lock on a register */
	    {{0xf0, 0x39, 0x07}, 3},		       /* lock cmp */
	    {{0xf2, 0xf0, 0x0f, 0xb1, 0x0a}, 5},       /* xacquire lock */
	    {{0xf0, 0x0f, 0x38, 0x00, 0x00}, 5},       /* lock in 0F 38 */
	    {{0x67, 0x48, 0xe8, 0, 0, 0, 0}, 7},       /* addr32 REX.W call */
	    {{0xff, 0x1c, 0x24}, 3},		       /* far call */
	    {{0x0f, 0x01, 0xc1}, 3},		       /* vmcall */
	    {{0x66, 0x0f, 0x01, 0xd0}, 4},	       /* 66 xgetbv */
	    {{0xf3, 0x0f, 0xae, 0xe0}, 4},	       /* ptwrite eax */
	    {{0xf3, 0x48, 0x0f, 0xae, 0x20}, 5},       /* ptwrite [rax] */
	    {{0x48, 0x66, 0x90}, 3},		       /* REX before 66 */
	    {{0xe8, 0, 0, 0}, 4},		       /* cut short */
	};
	const uint64_t ip = 0x401000;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct insn_info q;

		POISON(q);
		CHECK_EQ(insn_quick(ok[i].b, ok[i].n, ip, &q), 1);
		CHECK_EQ(q.len, ok[i].len);
		CHECK_EQ(q.cls, ok[i].cls);
		CHECK_EQ(q.direct, ok[i].direct);
		if (ok[i].direct)
			CHECK_EQ(q.target,
				 ip + ok[i].len + (uint64_t)ok[i].rel);
	}
	for (size_t i = 0; i < sizeof(deferred) / sizeof(deferred[0]); i++) {
		struct insn_info q;

		CHECK_EQ(insn_quick(deferred[i].b, deferred[i].n, ip, &q), 0);
	}
}

/* libipt's MOV to CR3 (pt_ild.c): what binds a PIP in kernel code. */
TEST(mov_cr3_as_libipt_classifies_it)
{
	static const struct {
		uint8_t b[8];
		size_t n;
		int cr3;
	} c[] = {
	    {{0x0f, 0x22, 0xd8}, 3, 1},		    /* mov %rax,%cr3 */
	    {{0x41, 0x0f, 0x22, 0xd8}, 4, 1},	    /* mov %r8,%cr3 (REX.B) */
	    {{0x44, 0x0f, 0x22, 0xd8}, 4, 0},	    /* REX.R: %cr11 */
	    {{0x44, 0x66, 0x0f, 0x22, 0xd8}, 5, 1}, /* a prefix drops REX */
	    {{0x66, 0x0f, 0x22, 0xd8}, 4, 1},
	    {{0x0f, 0x22, 0xc8}, 3, 0},		    /* mov %rax,%cr1 */
	    {{0x0f, 0x20, 0xd8}, 3, 0},		    /* mov %cr3,%rax */
	    {{0x0f, 0x01, 0xc2}, 3, 0},		    /* vmlaunch */
	    {{0x22, 0xd8}, 2, 0},		    /* and %al,%bl */
	    {{0xc5, 0x78, 0x22, 0xd8}, 4, 1},	    /* VEX, R bit clear */
	    {{0xc5, 0xf8, 0x22, 0xd8}, 4, 0},	    /* VEX, R bit set */
	    {{0xc4, 0x61, 0x78, 0x22, 0xd8}, 5, 1}, /* VEX3, map 1 */
	    {{0xc4, 0x62, 0x78, 0x22, 0xd8}, 5, 0}, /* VEX3, map 2 */
	    {{0x0f, 0x38, 0x22, 0xd8}, 4, 0},	    /* map 2 */
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		CHECK_EQ(insn_is_mov_cr3(c[i].b, c[i].n), c[i].cr3);
}

/* SPDX-License-Identifier: MIT */
/* Instruction classification (decoder/insn.c), in particular the AVX-512
 * and CET instructions capstone 4 does not decode: their lengths, a check of
 * the VEX/EVEX length decoder against capstone over glibc's code, and the flow
 * layer running through such code without a decode error. */
#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/error.h"
#include "tests/harness.h"

#define RAW 0x7100000000ull

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

/* The executable section of glibc, read with libelf. */
static uint8_t *read_text(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	uint8_t *out = NULL;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !out && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		size_t str;
		const char *name;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || elf_getshdrstrndx(e, &str))
			break;
		name = elf_strptr(e, str, sh.sh_name);
		if (!name || strcmp(name, ".text"))
			continue;
		data = elf_getdata(scn, NULL);
		if (data && data->d_size && (out = malloc(data->d_size))) {
			memcpy(out, data->d_buf, data->d_size);
			*len = data->d_size;
		}
	}
	elf_end(e);
	close(fd);
	return out;
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
		text = read_text(paths[i], &len);
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

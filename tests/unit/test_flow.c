/* SPDX-License-Identifier: MIT */
/* The flow layer on synthetic PT streams written with libipt's encoder
 * over real code: build/samples/recursion (functions found through its
 * ELF symbols, instructions located by walking them) and small raw code
 * blobs.  Each test states the exact branch events a run through a known
 * path produces. */
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "decoder/timeconv.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define BIAS 0x555555554000ull /* where the PIE sample is "loaded" */
#define RAW 0x7000000000ull    /* where raw blobs go */

/* ---- event recording ---- */

struct rec {
	struct br_event ev[256];
	size_t n;
};

static int rec_sink(void *ctx, const struct br_event *ev)
{
	struct rec *r = ctx;

	if (r->n < 256)
		r->ev[r->n++] = *ev;
	return 0;
}

/* ---- the encoder ---- */

/* @bits: "T" taken, "N" not taken, oldest first. */
static void psb_tsc(struct ts_enc *w, uint64_t tsc)
{
	ts_pkt(w, ppt_psb);
	ts_pkt_timing(w, ppt_tsc, tsc, 0);
	ts_pkt(w, ppt_psbend);
}

/* ---- the sample's symbols ---- */

struct syms {
	char name[64][32];
	uint64_t addr[64];
	int n;
};

static struct syms g_syms;

static int load_syms(const char *path, struct syms *s)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	s->n = 0;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || s->n == 64)
				continue;
			nm = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!nm || strlen(nm) >= 32)
				continue;
			strcpy(s->name[s->n], nm);
			s->addr[s->n++] = sym.st_value + BIAS;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return s->n ? 0 : -1;
}

static uint64_t sym(const char *name)
{
	for (int i = 0; i < g_syms.n; i++)
		if (!strcmp(g_syms.name[i], name))
			return g_syms.addr[i];
	return 0;
}

static int is_entry(void *ctx, uint64_t ip)
{
	const struct syms *s = ctx;

	for (int i = 0; i < s->n; i++)
		if (s->addr[i] == ip)
			return 1;
	return 0;
}

/* Address of the @nth (from 0) instruction of class @cls at or after
 * @from, walking straight-line code; 0 if not found within 64. */
static uint64_t find_insn(struct img_image *img, uint64_t from, int cls,
			  int nth, struct insn_info *info)
{
	struct insn_decoder *d;
	uint64_t ip = from, found = 0;

	if (insn_new(&d))
		return 0;
	for (int i = 0; i < 64 && !found; i++) {
		uint8_t buf[15];
		int n = img_read(img, ip, buf, sizeof(buf));

		if (n <= 0 || insn_decode(d, 64, ip, buf, (size_t)n, info))
			break;
		if (info->cls == cls && nth-- == 0)
			found = ip;
		ip += info->len;
	}
	insn_free(d);
	return found;
}

/* ---- running the flow layer ---- */

struct env {
	struct img_image *img;
	struct flow_decoder *fd;
	struct dec_config cfg;
	struct dec_stats st;
};

static int env_open(struct env *v, int with_sample, const uint8_t *raw,
		    size_t rawlen)
{
	char path[1024];
	struct flow_funcs fn = {is_entry, &g_syms};
	int err;

	memset(v, 0, sizeof(*v));
	if (img_new(NULL, &v->img))
		return -1;
	if (with_sample) {
		snprintf(path, sizeof(path), "%s/samples/recursion",
			 harness_build());
		if (load_syms(path, &g_syms) ||
		    img_add_elf(v->img, path, BIAS, 0, 0) < 1)
			return -1;
	}
	if (raw && img_add_raw(v->img, "[blob]", raw, rawlen, RAW))
		return -1;
	err = flow_new(&v->cfg, v->img, &fn, &v->fd);
	return err ? -1 : 0;
}

static void env_close(struct env *v)
{
	flow_free(v->fd);
	img_free(v->img);
}

static int run(struct env *v, struct ts_enc *w, struct rec *r)
{
	size_t len = ts_enc_done(w);

	memset(r, 0, sizeof(*r));
	return flow_decode(v->fd, w->buf, len, rec_sink, r, &v->st);
}

#define CHECK_EV(r, i, k, f, t)                                                \
	do {                                                                   \
		CHECK((i) < (r).n);                                            \
		CHECK_EQ((r).ev[i].kind, k);                                   \
		CHECK_EQ((r).ev[i].from, f);                                   \
		CHECK_EQ((r).ev[i].to, t);                                     \
	} while (0)

/* is_even → (direct call inside a block) is_odd → compressed ret →
 * ret via TIP into main → call printf@plt → PLT jmp to descend (a tail
 * call) → je taken → call longjmp@plt → PLT jmp leaves tracing. */
TEST(calls_returns_tail_call)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r;
	struct insn_info in;
	uint64_t ev_call, od_jne, od_ret, ev_ret, m_call2, m_call3, plt1;
	uint64_t de_je, de_call, plt2, ev_jne;

	if (env_open(&v, 1, NULL, 0))
		SKIP("build/samples/recursion is missing (run make)");
	ev_jne = find_insn(v.img, sym("is_even"), INSN_COND, 0, &in);
	ev_call = find_insn(v.img, in.target, INSN_CALL, 0, &in);
	CHECK(ev_call && in.target == sym("is_odd"));
	od_jne = find_insn(v.img, sym("is_odd"), INSN_COND, 0, &in);
	od_ret = find_insn(v.img, od_jne, INSN_RET, 0, &in);
	ev_ret = find_insn(v.img, ev_call, INSN_RET, 0, &in);
	m_call2 = find_insn(v.img, sym("main"), INSN_CALL, 1, &in);
	CHECK(in.target == sym("is_even"));
	m_call3 = find_insn(v.img, sym("main"), INSN_CALL, 2, &in);
	plt1 = in.target;
	de_je = find_insn(v.img, sym("descend"), INSN_COND, 0, &in);
	de_call = find_insn(v.img, in.target, INSN_CALL, 0, &in);
	plt2 = in.target;
	CHECK(ev_jne && od_jne && od_ret && ev_ret && m_call3 && de_je &&
	      de_call);

	ts_enc_init(&w);
	psb_tsc(&w, 100);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, sym("is_even"));
	ts_pkt_tnt(&w, "TNT"); /* jne taken, jne not taken, ret compressed */
	ts_pkt_ip(&w, ppt_tip, m_call2 + 5);
	ts_pkt_timing(&w, ppt_tsc, 500, 0);
	ts_pkt_ip(&w, ppt_tip, sym("descend"));
	ts_pkt_tnt(&w, "T");
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(run(&v, &w, &r), 0);

	CHECK_EQ(r.n, 9);
	CHECK_EV(r, 0, BR_ENABLE, 0, sym("is_even"));
	CHECK_EV(r, 1, BR_CALL, ev_call, sym("is_odd"));
	CHECK_EQ(r.ev[1].ret, ev_call + 5);
	CHECK_EV(r, 2, BR_RETURN, od_ret, ev_call + 5);
	CHECK_EV(r, 3, BR_RETURN, ev_ret, m_call2 + 5);
	CHECK_EV(r, 4, BR_CALL, m_call3, plt1);
	CHECK_EV(r, 5, BR_JUMP, plt1, sym("descend"));
	CHECK_EV(r, 6, BR_CALL, de_call, plt2);
	/* The PLT jump into untraced libc: no target, tracing stops. */
	CHECK_EV(r, 7, BR_DISABLE, plt2, 0);
	CHECK_EQ(r.ev[8].kind, BR_END);
	/* Times: TSC 100 then 500 (no conversion: TSC = ns); events in
	 * one tick get consecutive nanoseconds. */
	CHECK_EQ(r.ev[0].ts, 100);
	CHECK_EQ(r.ev[1].ts, 101);
	CHECK_EQ(r.ev[2].ts, 102);
	/* The PLT jump's TIP comes after TSC 500 (the call before it may
	 * be reported in the older tick, as libipt splits blocks at
	 * direct calls at will). */
	CHECK(r.ev[5].ts >= 500);
	for (size_t i = 1; i < r.n; i++)
		CHECK(r.ev[i].ts > r.ev[i - 1].ts);
	/* icount includes the branching instruction. */
	CHECK_EQ(r.ev[1].icount, 7);
	env_close(&v);
}

/* Raw code for the blob tests (at RAW):
 *   +0x00 mov eax, 39        +0x05 syscall     +0x07 call +0x11
 *   +0x0c ret                +0x0d..0x10 nop   +0x11 nop  +0x12 ret
 *   +0x20..0x3f nop          +0x40 nop         +0x41 ret            */
static uint8_t blob[0x48];

static void make_blob(void)
{
	static const uint8_t head[] = {0xb8, 0x27, 0x00, 0x00, 0x00, 0x0f, 0x05,
				       0xe8, 0x05, 0x00, 0x00, 0x00, 0xc3, 0x90,
				       0x90, 0x90, 0x90, 0x90, 0xc3};

	memset(blob, 0x90, sizeof(blob));
	memcpy(blob, head, sizeof(head));
	blob[0x41] = 0xc3;
}

/* syscall with user-only tracing: PGD after the syscall, PGE at the
 * return address; then a call and two returns. */
TEST(syscall_gap_and_raw_blob)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r;

	make_blob();
	CHECK_EQ(env_open(&v, 0, blob, sizeof(blob)), 0);
	ts_enc_init(&w);
	psb_tsc(&w, 1000);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW);
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	ts_pkt_timing(&w, ppt_tsc, 2000, 0);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 7);
	ts_pkt_tnt(&w, "T");
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(run(&v, &w, &r), 0);
	CHECK_EQ(r.n, 8);
	CHECK_EV(r, 0, BR_ENABLE, 0, RAW);
	CHECK_EV(r, 1, BR_SYSCALL, RAW + 5, 0);
	CHECK_EV(r, 2, BR_ENABLE, 0, RAW + 7);
	CHECK_EV(r, 3, BR_CALL, RAW + 7, RAW + 0x11);
	CHECK_EQ(r.ev[3].ret, RAW + 0xc);
	CHECK_EV(r, 4, BR_RETURN, RAW + 0x12, RAW + 0xc);
	CHECK_EV(r, 5, BR_RETURN, RAW + 0xc, 0);
	CHECK_EV(r, 6, BR_DISABLE, RAW + 0xc, 0);
	CHECK_EQ(r.ev[7].kind, BR_END);
	CHECK_EQ(r.ev[0].ts, 1000);
	CHECK_EQ(r.ev[1].ts, 1001);
	CHECK_EQ(r.ev[2].ts, 2000);
	CHECK_EQ(r.ev[3].ts, 2001);
	CHECK_EQ(r.ev[6].ts, 2004);
	CHECK_EQ(r.ev[1].icount, 2);
	CHECK_EQ(r.ev[7].icount, 6);
	CHECK_EQ(v.st.instructions, 6);
	env_close(&v);
}

TEST(async_interrupt)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r;

	make_blob();
	CHECK_EQ(env_open(&v, 0, blob, sizeof(blob)), 0);
	ts_enc_init(&w);
	psb_tsc(&w, 10);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 0x20);
	ts_pkt_ip(&w, ppt_fup, RAW + 0x23);
	ts_pkt_ip(&w, ppt_tip, RAW + 0x40);
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(run(&v, &w, &r), 0);
	CHECK_EQ(r.n, 5);
	CHECK_EV(r, 0, BR_ENABLE, 0, RAW + 0x20);
	CHECK_EV(r, 1, BR_INTERRUPT, RAW + 0x23, RAW + 0x40);
	CHECK_EQ(r.ev[1].icount, 3);
	CHECK_EV(r, 2, BR_RETURN, RAW + 0x41, 0);
	CHECK_EV(r, 3, BR_DISABLE, RAW + 0x41, 0);
	CHECK_EQ(r.ev[4].kind, BR_END);
	CHECK_EQ(r.ev[4].icount, 5);
	env_close(&v);
}

TEST(overflow_mid_stream)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r;

	make_blob();
	CHECK_EQ(env_open(&v, 0, blob, sizeof(blob)), 0);
	ts_enc_init(&w);
	psb_tsc(&w, 10);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 0x20);
	ts_pkt(&w, ppt_ovf);
	ts_pkt_ip(&w, ppt_fup, RAW + 0x30);
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(run(&v, &w, &r), 0);
	CHECK_EQ(r.n, 5);
	CHECK_EV(r, 0, BR_ENABLE, 0, RAW + 0x20);
	CHECK_EV(r, 1, BR_OVERFLOW, 0, RAW + 0x30);
	CHECK_EV(r, 2, BR_RETURN, RAW + 0x41, 0);
	CHECK_EV(r, 3, BR_DISABLE, RAW + 0x41, 0);
	CHECK_EQ(r.ev[4].kind, BR_END);
	CHECK_EQ(v.st.err_overflow, 1);
	env_close(&v);
}

/* A jump to unmapped memory, then the next PSB resyncs. */
TEST(error_then_resync)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r;

	make_blob();
	CHECK_EQ(env_open(&v, 0, blob, sizeof(blob)), 0);
	ts_enc_init(&w);
	psb_tsc(&w, 10);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 0x20);
	ts_pkt_ip(&w, ppt_fup, RAW + 0x23);
	ts_pkt_ip(&w, ppt_tip, 0x1234000);
	ts_pkt(&w, ppt_psb);
	ts_pkt_timing(&w, ppt_tsc, 50, 0);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_fup, RAW + 0x30);
	ts_pkt(&w, ppt_psbend);
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(run(&v, &w, &r), 0);
	CHECK_EQ(r.n, 7);
	CHECK_EV(r, 0, BR_ENABLE, 0, RAW + 0x20);
	CHECK_EV(r, 1, BR_INTERRUPT, RAW + 0x23, 0x1234000);
	CHECK_EV(r, 2, BR_ERROR, 0x1234000, 0);
	CHECK_EQ(r.ev[2].err, -pte_nomap);
	CHECK_EV(r, 3, BR_ENABLE, 0, RAW + 0x30);
	CHECK(r.ev[3].ts >= 50);
	CHECK_EV(r, 4, BR_RETURN, RAW + 0x41, 0);
	CHECK_EV(r, 5, BR_DISABLE, RAW + 0x41, 0);
	CHECK_EQ(r.ev[6].kind, BR_END);
	CHECK_EQ(v.st.err_nomap, 1);
	CHECK_EQ(v.st.err_truncated, 0);
	env_close(&v);
}

/* The same stream twice through one decoder: the second pass runs from
 * the block cache and must report the same events. */
TEST(block_cache_repeat)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r1, r2;
	size_t len;

	make_blob();
	CHECK_EQ(env_open(&v, 0, blob, sizeof(blob)), 0);
	ts_enc_init(&w);
	psb_tsc(&w, 1000);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 7);
	ts_pkt_tnt(&w, "T");
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	len = ts_enc_done(&w);
	CHECK_EQ(flow_decode(v.fd, w.buf, len, rec_sink, &r1, &v.st), 0);
	CHECK_EQ(flow_decode(v.fd, w.buf, len, rec_sink, &r2, &v.st), 0);
	CHECK_EQ(r1.n, 6);
	CHECK_EQ(r2.n, r1.n);
	for (size_t i = 0; i < r1.n; i++) {
		CHECK_EQ(r2.ev[i].kind, r1.ev[i].kind);
		CHECK_EQ(r2.ev[i].from, r1.ev[i].from);
		CHECK_EQ(r2.ev[i].to, r1.ev[i].to);
		CHECK_EQ(r2.ev[i].ts, r1.ev[i].ts);
	}
	CHECK_EQ(v.st.instructions, 8);
	env_close(&v);
}

TEST(no_psb_and_bad_args)
{
	static struct env v;
	static uint8_t junk[512];
	struct rec r;

	CHECK_EQ(env_open(&v, 0, NULL, 0), 0);
	memset(junk, 0x55, sizeof(junk));
	CHECK_EQ(flow_decode(v.fd, junk, sizeof(junk), rec_sink, &r, NULL),
		 PS_ERR_FORMAT);
	CHECK_EQ(flow_decode(v.fd, NULL, 10, rec_sink, &r, NULL), PS_ERR_INVAL);
	CHECK_EQ(flow_decode(NULL, junk, 10, rec_sink, &r, NULL), PS_ERR_INVAL);
	CHECK_EQ(flow_new(&v.cfg, NULL, NULL, &v.fd), PS_ERR_INVAL);
	env_close(&v);
}

/* Corrupted and truncated copies of a valid stream never crash and
 * always end with BR_END. */
TEST(corrupt_streams)
{
	static struct env v;
	static struct ts_enc w;
	static struct rec r;
	static uint8_t copy[4096];
	size_t len;
	unsigned seed = 12345;

	make_blob();
	CHECK_EQ(env_open(&v, 0, blob, sizeof(blob)), 0);
	ts_enc_init(&w);
	psb_tsc(&w, 1000);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 7);
	ts_pkt_tnt(&w, "T");
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	psb_tsc(&w, 2000);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW + 0x20);
	ts_pkt_ip(&w, ppt_fup, RAW + 0x23);
	ts_pkt_ip(&w, ppt_tip, RAW + 0x40);
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	len = ts_enc_done(&w);
	for (size_t cut = 1; cut <= len; cut++) {
		memset(&r, 0, sizeof(r));
		int rc = flow_decode(v.fd, w.buf, cut, rec_sink, &r, NULL);

		CHECK(rc == 0 || rc == PS_ERR_FORMAT);
		CHECK(rc != 0 || (r.n && r.ev[r.n - 1].kind == BR_END));
	}
	for (int round = 0; round < 300; round++) {
		memcpy(copy, w.buf, len);
		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % len] ^= (uint8_t)(1u << (seed % 8));
		}
		memset(&r, 0, sizeof(r));
		int rc = flow_decode(v.fd, copy, len, rec_sink, &r, NULL);

		CHECK(rc == 0 || rc == PS_ERR_FORMAT);
		CHECK(rc != 0 || (r.n && r.ev[r.n - 1].kind == BR_END));
		for (size_t i = 1; i < r.n; i++)
			CHECK(r.ev[i].ts > r.ev[i - 1].ts);
	}
	env_close(&v);
}

TEST(timeconv_matches_perf)
{
	struct dec_timeconv tc;

	POISON(tc);
	tc_from_perf(&tc, 1076264588, 31, 18433473881008870804ull);
	CHECK_EQ(tc.offset_ns, 0);
	/* Values computed with perf's formula in unbounded arithmetic,
	 * reduced mod 2^64. */
	CHECK(tc_to_ns(&tc, 0x8fb5211bfd44d6ull) == 7002363907226355ull);
	tc_from_perf(&tc, 0xffffffffu, 10, 0);
	CHECK(tc_to_ns(&tc, (1ull << 63) + 12345) == 18437736926233493491ull);
	tc.offset_ns = -5;
	CHECK(tc_to_ns(&tc, (1ull << 63) + 12345) == 18437736926233493486ull);
	tc.has_conv = 0;
	tc.offset_ns = 7;
	CHECK_EQ(tc_to_ns(&tc, 1000), 1007);
	tc.offset_ns = 0;
	tc_from_perf(&tc, 1u << 20, 20, 0);
	CHECK_EQ(tc_to_ns(&tc, 123456789), 123456789);
}

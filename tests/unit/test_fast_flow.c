/* SPDX-License-Identifier: MIT */
/* ptscope's flow engine (decoder/fast_*.c) against libipt's block
 * decoder on streams written with libipt's encoder over a small raw code
 * loop: MTC/TMA/CBR timing (which the emulated and the lldb recordings do
 * not have), MTC wrap-around, TSC resets, a compressed return, a PSB in
 * the middle of a loop, overflows, and a kernel's MOV to CR3 with the PIP
 * that binds to it.  Both engines must give the same events. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/image.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define RAW 0x500000ull

/*   +0 nop   +1 jnz +0   +3 call +0xc   +8 jmp +0   +0xc ret */
static const uint8_t code[] = {0x90, 0x75, 0xfd, 0xe8, 0x04, 0x00, 0x00,
			       0x00, 0xeb, 0xf6, 0x90, 0x90, 0xc3};

/* The code both() decodes over: code, or a test's own. */
static const uint8_t *img_code = code;
static size_t img_len = sizeof(code);

struct evs {
	struct br_event ev[4096];
	size_t n;
};

static int keep(void *ctx, const struct br_event *ev)
{
	struct evs *e = ctx;

	if (e->n < 4096)
		e->ev[e->n++] = *ev;
	return 0;
}

static void psb(struct ts_enc *w, uint64_t tsc, int tma, uint64_t ip)
{
	ts_pkt(w, ppt_psb);
	ts_pkt_timing(w, ppt_tsc, tsc, 0);
	if (tma)
		ts_pkt_timing(w, ppt_tma, 0x1234, 0x20);
	ts_pkt_timing(w, ppt_cbr, 30, 0);
	if (ip) {
		ts_pkt_mode64(w);
		ts_pkt_ip(w, ppt_fup, ip);
	}
	ts_pkt(w, ppt_psbend);
}

/* Decode @buf with libipt three times (its block cache warm) and with the
 * fast engine; 0 if the events and counts are the same. */
static int both(const struct dec_config *cfg, const uint8_t *buf, size_t len,
		struct evs *e, int *fast_used)
{
	struct img_image *img = NULL;
	struct dec_stats st[2];
	int ret[2] = {0, 0}, diff = 0;

	if (img_new(NULL, &img) ||
	    img_add_raw(img, "[loop]", img_code, img_len, RAW)) {
		img_free(img);
		return 1;
	}
	for (int run = 0; run < 4; run++) {
		int k = run == 3;
		struct flow_decoder *fd;

		e[k].n = 0;
		memset(&st[k], 0, sizeof(st[k]));
		if (flow_new(cfg, img, NULL, &fd)) {
			img_free(img);
			return 1;
		}
		flow_set_fast(fd, k);
		ret[k] = flow_decode(fd, buf, len, keep, &e[k], &st[k]);
		flow_free(fd);
	}
	img_free(img);
	*fast_used = st[1].flow_fast == 1;
	if (ret[0] != ret[1] || e[0].n != e[1].n ||
	    st[0].instructions != st[1].instructions)
		diff = 1;
	for (size_t i = 0; !diff && i < e[0].n; i++) {
		const struct br_event *a = &e[0].ev[i], *b = &e[1].ev[i];

		diff = a->kind != b->kind || a->from != b->from ||
		       a->to != b->to || a->ts != b->ts ||
		       a->icount != b->icount || a->err != b->err;
	}
	return diff;
}

/* A loop timed by MTC after a TSC+TMA: @mtc_freq and CPUID 0x15. */
static void mtc_loop(struct ts_enc *w, int wrap_psb)
{
	ts_enc_init(w);
	psb(w, 1000000, 1, 0);
	ts_pkt_mode64(w);
	ts_pkt_ip(w, ppt_tip_pge, RAW);
	for (int i = 0; i < 300; i++) {
		/* payloads step by 3 and wrap at 256 */
		ts_pkt_timing(w, ppt_mtc, (0x24 + i * 3) & 0xff, 0);
		/* jnz taken x3, not taken, compressed ret */
		ts_pkt_tnt(w, "TTTNT");
		if (wrap_psb && i % 97 == 50)
			psb(w, 1000000 + 4000 * (uint64_t)i, 1, RAW + 1);
	}
	ts_pkt_tnt(w, "N");
	ts_pkt_ip(w, ppt_tip_pgd, 0);
}

TEST(mtc_timing_same_as_libipt)
{
	static struct ts_enc w;
	static struct evs e[2];
	struct dec_config cfg;
	size_t len;
	int fast;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mtc_freq = 3;
	cfg.nom_freq = 12;
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 100;
	mtc_loop(&w, 0);
	CHECK(!w.bad);
	len = ts_enc_done(&w);
	CHECK_EQ(both(&cfg, w.buf, len, e, &fast), 0);
	CHECK(fast);
	/* The MTCs moved the time: several hundred distinct ticks. */
	CHECK(e[1].n > 600);
	CHECK(e[1].ev[e[1].n - 1].ts > e[1].ev[0].ts + 300 * 3 * 8 * 50 / 2);
}

TEST(mtc_with_psb_inside_the_loop)
{
	static struct ts_enc w;
	static struct evs e[2];
	struct dec_config cfg;
	size_t len;
	int fast;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mtc_freq = 3;
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 100;
	mtc_loop(&w, 1);
	CHECK(!w.bad);
	len = ts_enc_done(&w);
	CHECK_EQ(both(&cfg, w.buf, len, e, &fast), 0);
	CHECK(fast);
}

TEST(mtc_without_cpuid_ratio)
{
	static struct ts_enc w;
	static struct evs e[2];
	struct dec_config cfg;
	size_t len;
	int fast;

	/* CPUID 0x15 unknown: libipt ignores the MTCs (-pte_bad_config). */
	memset(&cfg, 0, sizeof(cfg));
	cfg.mtc_freq = 9;
	mtc_loop(&w, 0);
	len = ts_enc_done(&w);
	CHECK_EQ(both(&cfg, w.buf, len, e, &fast), 0);
	CHECK(fast);
}

/* @k copies of @buf with 1-3 random bytes changed (and, with @ovf, an
 * OVF written at a random place in every second one), each decoded by
 * both engines with @cfg.  The number that differ; *@nfast: how many the
 * fast engine decoded itself.  $FAST_FLOW_SAVE names a file for the first
 * copy that differs. */
static int damaged(const struct dec_config *cfg, const uint8_t *buf, size_t len,
		   unsigned seed, int k, int ovf, int *nfast)
{
	static struct evs e[2];
	static uint8_t m[4096];
	int fast, bad = 0;

	*nfast = 0;
	srand(seed);
	for (int n = 0; n < k; n++) {
		memcpy(m, buf, len);
		for (int j = 1 + rand() % 3; j > 0; j--)
			m[(size_t)rand() % len] = (uint8_t)rand();
		if (ovf && n % 2) {
			size_t at = (size_t)rand() % (len - 1);

			m[at] = 0x02;
			m[at + 1] = 0xf3;
		}
		if (both(cfg, m, len, e, &fast)) {
			const char *save = getenv("FAST_FLOW_SAVE");

			if (save && !bad) {
				FILE *f = fopen(save, "wb");

				if (f) {
					fwrite(m, 1, len, f);
					fclose(f);
				}
			}
			bad++;
		}
		*nfast += fast;
	}
	return bad;
}

TEST(damaged_loops_same_as_libipt)
{
	static struct ts_enc w;
	struct dec_config cfg;
	size_t len;
	int nfast;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mtc_freq = 3;
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 100;
	mtc_loop(&w, 1);
	len = ts_enc_done(&w);
	CHECK_EQ(damaged(&cfg, w.buf, len, 5, 2000, 0, &nfast), 0);
}

/* ---- CYC: cycle-accurate time -------------------------------------------
 * Each CYC moves the time by its cycles times the fast-counter:cycles
 * ratio, which libipt estimates (pt_time_cal) from the cycles between two
 * MTCs, between two TSCs in PSB+, or from CBR and the nominal frequency.
 * The flow engine must follow the same estimate packet by packet. */

enum {
	CY_MTC = 1,  /* an MTC each iteration (TSC+TMA in PSB+) */
	CY_PSB = 2,  /* a PSB+ every 37 iterations */
	CY_TSC = 4,  /* a TSC outside PSB+ every 53 */
	CY_CBR = 8,  /* a CBR outside PSB+ (new frequency) every 71 */
	CY_HDR = 16, /* CYCs inside PSB+ too */
	CY_GAP = 32, /* every 4th iteration, an MTC period without a CYC */
};

static void cyc_psb(struct ts_enc *w, unsigned flags, uint64_t tsc, uint64_t ip)
{
	ts_pkt(w, ppt_psb);
	if (flags & CY_HDR)
		ts_pkt_timing(w, ppt_cyc, 3, 0);
	ts_pkt_timing(w, ppt_tsc, tsc, 0);
	if (flags & CY_MTC)
		ts_pkt_timing(w, ppt_tma, 0x1234, 0x20);
	ts_pkt_timing(w, ppt_cbr, 30, 0);
	if (flags & CY_HDR)
		ts_pkt_timing(w, ppt_cyc, 0x345, 0);
	if (ip) {
		ts_pkt_mode64(w);
		ts_pkt_ip(w, ppt_fup, ip);
	}
	ts_pkt(w, ppt_psbend);
}

/* The loop of mtc_loop with CYCs between its TNTs: cycle counts of one
 * to three bytes, from a fixed sequence. */
static void cyc_loop(struct ts_enc *w, unsigned flags)
{
	uint32_t r = 12345;

	ts_enc_init(w);
	cyc_psb(w, flags, 1000000, 0);
	ts_pkt_mode64(w);
	ts_pkt_ip(w, ppt_tip_pge, RAW);
	for (int i = 0; i < 200; i++) {
		uint64_t tsc = 1000000 + 3000 * (uint64_t)i;

		r = r * 1103515245u + 12345u;
		if (flags & CY_MTC)
			ts_pkt_timing(w, ppt_mtc, (0x24 + i * 3) & 0xff, 0);
		if ((flags & CY_GAP) && i % 4 == 2) {
			/* the next CYC counts cycles of this period too */
			i++;
			ts_pkt_timing(w, ppt_mtc, (0x24 + i * 3) & 0xff, 0);
		}
		ts_pkt_timing(w, ppt_cyc, 1 + (r >> 16) % 90, 0);
		ts_pkt_tnt(w, "TT");
		ts_pkt_timing(w, ppt_cyc, 1 + (r >> 8) % (i % 5 ? 700 : 70000),
			      0);
		ts_pkt_tnt(w, "TNT");
		if ((flags & CY_TSC) && i % 53 == 20)
			ts_pkt_timing(w, ppt_tsc, tsc + 100, 0);
		if ((flags & CY_CBR) && i % 71 == 30)
			ts_pkt_timing(w, ppt_cbr, 20 + i % 7, 0);
		if ((flags & CY_PSB) && i % 37 == 36)
			cyc_psb(w, flags, tsc + 200, RAW + 1);
	}
	ts_pkt_tnt(w, "N");
	ts_pkt_ip(w, ppt_tip_pgd, 0);
}

/* cyc_loop(@flags) decoded by both engines with @cfg; the fast engine
 * must decode it itself.  The number of distinct times, or -1. */
static int cyc_same(struct dec_config *cfg, unsigned flags)
{
	static struct ts_enc w;
	static struct evs e[2];
	size_t len;
	int fast, distinct = 0;

	cyc_loop(&w, flags);
	if (w.bad)
		return -1;
	len = ts_enc_done(&w);
	if (both(cfg, w.buf, len, e, &fast) || !fast)
		return -1;
	for (size_t i = 1; i < e[1].n; i++)
		distinct += e[1].ev[i].ts != e[1].ev[i - 1].ts;
	return distinct;
}

static void mtc_config(struct dec_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtc_freq = 3;
	cfg->cpuid_0x15_eax = 2;
	cfg->cpuid_0x15_ebx = 100;
}

TEST(cyc_calibrated_by_mtc)
{
	struct dec_config cfg;
	int n;

	mtc_config(&cfg);
	n = cyc_same(&cfg, CY_MTC | CY_PSB);
	/* the CYCs move the time between MTCs: more ticks than MTCs */
	CHECK(n > 300);
	CHECK(cyc_same(&cfg, CY_MTC | CY_PSB | CY_TSC | CY_CBR) > 300);
	CHECK(cyc_same(&cfg, CY_MTC | CY_HDR | CY_PSB) > 300);
	CHECK(cyc_same(&cfg, CY_MTC | CY_GAP | CY_PSB) > 200);
	/* without CPUID 0x15 the MTCs calibrate nothing */
	cfg.cpuid_0x15_eax = 0;
	CHECK(cyc_same(&cfg, CY_MTC | CY_PSB) >= 0);
}

TEST(cyc_calibrated_by_cbr_and_nominal_frequency)
{
	struct dec_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.nom_freq = 12;
	/* calibrated from the first PSB+; each CYC moves the time */
	CHECK(cyc_same(&cfg, CY_PSB) > 300);
	/* a CBR outside PSB+ starts the calibration over */
	CHECK(cyc_same(&cfg, CY_PSB | CY_CBR | CY_TSC | CY_HDR) > 300);
}

TEST(cyc_calibrated_by_tscs_in_psb)
{
	struct dec_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	/* no MTC, no nominal frequency: the cycles between two PSB+ TSCs */
	CHECK(cyc_same(&cfg, CY_PSB) > 0);
	CHECK(cyc_same(&cfg, CY_PSB | CY_HDR) > 0);
	/* a TSC outside PSB+ restarts the count */
	CHECK(cyc_same(&cfg, CY_PSB | CY_TSC) > 0);
	/* never calibrated: the CYCs are lost, the time still the TSCs' */
	CHECK(cyc_same(&cfg, 0) >= 0);
}

TEST(cyc_with_skylake_errata)
{
	struct dec_config cfg;

	/* SKL168 (a CYC dropped before a PSB) and SKD007 (a CYC that is the
	 * start of an OVF) apply */
	mtc_config(&cfg);
	cfg.cpu = (struct dec_cpu){
	    .is_intel = 1, .family = 6, .model = 0x4e, .stepping = 3};
	CHECK(cyc_same(&cfg, CY_MTC | CY_PSB | CY_HDR) > 300);
	cfg.mtc_freq = 0;
	CHECK(cyc_same(&cfg, CY_MTC | CY_PSB | CY_CBR) > 0);
}

/* A two-byte CYC of 0x20-0x3f followed by the one-byte CYC 0xf3 reads, on
 * a CPU with SKD007, as a CYC cut short by an OVF (02 f3): libipt handles
 * that OVF, so the fast engine hands the stream over; elsewhere they are
 * two CYCs. */
TEST(cyc_skd007_pattern)
{
	static struct ts_enc w;
	static struct evs e[2];
	struct dec_config cfg;
	size_t len;
	int fast;

	ts_enc_init(&w);
	cyc_psb(&w, CY_MTC, 1000000, 0);
	ts_pkt_mode64(&w);
	ts_pkt_ip(&w, ppt_tip_pge, RAW);
	for (int i = 0; i < 20; i++) {
		ts_pkt_timing(&w, ppt_mtc, (0x24 + i * 3) & 0xff, 0);
		ts_pkt_tnt(&w, "TT");
		ts_pkt_timing(&w, ppt_cyc, 0x25, 0);
		ts_pkt_timing(&w, ppt_cyc, 0x1e, 0);
		ts_pkt_tnt(&w, "TNT");
	}
	ts_pkt_tnt(&w, "N");
	ts_pkt_ip(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	len = ts_enc_done(&w);
	mtc_config(&cfg);
	CHECK_EQ(both(&cfg, w.buf, len, e, &fast), 0);
	CHECK(fast);
	cfg.cpu = (struct dec_cpu){
	    .is_intel = 1, .family = 6, .model = 0x5e, .stepping = 3};
	CHECK_EQ(both(&cfg, w.buf, len, e, &fast), 0);
	CHECK(!fast);
}

TEST(damaged_cyc_loops_same_as_libipt)
{
	static struct ts_enc w;
	struct dec_config cfg;
	size_t len;
	int nfast;

	mtc_config(&cfg);
	cfg.nom_freq = 12;
	cfg.cpu = (struct dec_cpu){
	    .is_intel = 1, .family = 6, .model = 0x4e, .stepping = 3};
	cyc_loop(&w, CY_MTC | CY_PSB | CY_TSC | CY_CBR | CY_HDR | CY_GAP);
	CHECK(!w.bad);
	len = ts_enc_done(&w);
	CHECK_EQ(damaged(&cfg, w.buf, len, 11, 2000, 0, &nfast), 0);
	/* most damaged copies stay with the fast engine */
	CHECK(nfast > 1000);
}

/* ---- OVF: the CPU's buffer overflowed, packets were lost ----------------
 * The decoder starts over (the time kept): the overflow binds to the FUP
 * where tracing went on, or stands alone when a packet says tracing was
 * off by then (a TIP.PGE follows), or at the end of the trace. */

enum {
	OV_FUP = 1,   /* overflows that resolve with tracing on (FUP) */
	OV_PGE = 2,   /* ... with tracing off (TIP.PGE later) */
	OV_END = 4,   /* an overflow is the last packet */
	OV_PSB = 8,   /* an overflow right after a PSB+ (its events pending) */
	OV_BAD = 16,  /* an overflow followed by a TNT: a decode error */
	OV_TIME = 32, /* timing packets between OVF and what it binds to */
};

static void ovf_loop(struct ts_enc *w, unsigned flags)
{
	ts_enc_init(w);
	cyc_psb(w, CY_MTC, 1000000, 0);
	ts_pkt_mode64(w);
	ts_pkt_ip(w, ppt_tip_pge, RAW);
	for (int i = 0; i < 120; i++) {
		ts_pkt_timing(w, ppt_mtc, (0x24 + i * 3) & 0xff, 0);
		ts_pkt_tnt(w, "TT");
		ts_pkt_timing(w, ppt_cyc, 5 + i, 0);
		ts_pkt_tnt(w, "TNT");
		if (i % 10 != 5)
			continue;
		if ((flags & OV_PSB) && i % 20 == 5) {
			cyc_psb(w, CY_MTC, 1000000 + 4000 * (uint64_t)i,
				RAW + 1);
			ts_pkt(w, ppt_ovf);
			ts_pkt_ip(w, ppt_fup, RAW + 1);
			continue;
		}
		ts_pkt(w, ppt_ovf);
		if (flags & OV_TIME) {
			ts_pkt_timing(w, ppt_cyc, 77, 0);
			ts_pkt_timing(w, ppt_tsc, 1000000 + 4000 * (uint64_t)i,
				      0);
			ts_pkt_timing(w, ppt_mtc, (0x30 + i * 3) & 0xff, 0);
		}
		if ((flags & OV_BAD) && i % 30 == 15) {
			ts_pkt_tnt(w, "T");
			/* the decoder resyncs at the next PSB */
			cyc_psb(w, CY_MTC, 1000000 + 4000 * (uint64_t)i,
				RAW + 1);
		} else if ((flags & OV_PGE) &&
			   (!(flags & OV_FUP) || i % 20 == 5)) {
			ts_pkt_timing(w, ppt_cbr, 31, 0);
			ts_pkt_mode64(w);
			ts_pkt_ip(w, ppt_tip_pge, RAW);
		} else {
			/* the loop goes on at the jnz */
			ts_pkt_ip(w, ppt_fup, RAW + 1);
		}
	}
	ts_pkt_tnt(w, "N");
	ts_pkt_ip(w, ppt_tip_pgd, 0);
	if (flags & OV_END)
		ts_pkt(w, ppt_ovf);
}

/* ovf_loop(@flags) with @cfg: 0 if both engines give the same events;
 * *@fast: the fast engine decoded it itself; *@n: events. */
static int ovf_same(const struct dec_config *cfg, unsigned flags, int *fast,
		    size_t *n)
{
	static struct ts_enc w;
	static struct evs e[2];
	size_t len;
	int diff;

	ovf_loop(&w, flags);
	if (w.bad)
		return -1;
	len = ts_enc_done(&w);
	diff = both(cfg, w.buf, len, e, fast);
	*n = e[1].n;
	for (size_t i = 0; i < e[1].n; i++)
		if (e[1].ev[i].kind == BR_OVERFLOW)
			return diff;
	return -2; /* no overflow reported */
}

TEST(ovf_same_as_libipt)
{
	static const unsigned cases[] = {OV_FUP,
					 OV_FUP | OV_TIME,
					 OV_PGE,
					 OV_PGE | OV_TIME,
					 OV_FUP | OV_PGE | OV_END,
					 OV_FUP | OV_PSB | OV_TIME,
					 OV_FUP | OV_BAD | OV_TIME};
	struct dec_config cfg;
	size_t n;
	int fast;

	mtc_config(&cfg);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(ovf_same(&cfg, cases[i], &fast, &n), 0);
		CHECK(fast);
		CHECK(n > 200);
	}
}

TEST(ovf_errata)
{
	struct dec_config cfg;
	size_t n;
	int fast;

	mtc_config(&cfg);
	/* Skylake (SKD010): an overflow with tracing on is ours, one with
	 * tracing off is libipt's (it looks for a FUP the CPU lost) */
	cfg.cpu = (struct dec_cpu){
	    .is_intel = 1, .family = 6, .model = 0x5e, .stepping = 3};
	CHECK_EQ(ovf_same(&cfg, OV_FUP | OV_TIME, &fast, &n), 0);
	CHECK(fast);
	CHECK_EQ(ovf_same(&cfg, OV_PGE, &fast, &n), 0);
	CHECK(!fast);
	/* Goldmont (APL12: a FUP too many after an overflow) */
	cfg.cpu.model = 0x5c;
	CHECK_EQ(ovf_same(&cfg, OV_FUP, &fast, &n), 0);
	CHECK(!fast);
	/* Ice Lake (APL11): an overflow with tracing off is ours */
	cfg.cpu.model = 0x9a;
	CHECK_EQ(ovf_same(&cfg, OV_PGE, &fast, &n), 0);
	CHECK(fast);
}

TEST(damaged_ovf_loops_same_as_libipt)
{
	static struct ts_enc w;
	struct dec_config cfg;
	size_t len;
	int nfast;

	mtc_config(&cfg);
	ovf_loop(&w, OV_FUP | OV_PGE | OV_PSB | OV_BAD | OV_TIME | OV_END);
	CHECK(!w.bad);
	len = ts_enc_done(&w);
	CHECK_EQ(damaged(&cfg, w.buf, len, 13, 2000, 1, &nfast), 0);
	CHECK(nfast > 1000);
}

/* Kernel code switching address spaces: a PIP while tracing is on binds
 * to the next MOV to CR3 (a REX.R one is a move to CR11, not CR3), and a
 * disable without an ip binds to one too.
 *   +0 nop   +1 mov %rax,%cr3   +4 mov %rax,%cr11   +8 mov %r8,%cr3
 *   +12 jnz +0   +14 ret */
static const uint8_t cr3_code[] = {0x90, 0x0f, 0x22, 0xd8, 0x44,
				   0x0f, 0x22, 0xd8, 0x41, 0x0f,
				   0x22, 0xd8, 0x75, 0xf2, 0xc3};

static void cr3_loop(struct ts_enc *w, int disables)
{
	ts_enc_init(w);
	psb(w, 1000000, 1, 0);
	ts_pkt_mode64(w);
	ts_pkt_ip(w, ppt_tip_pge, RAW);
	for (int i = 0; i < 200; i++) {
		ts_pkt_timing(w, ppt_mtc, (0x24 + i * 3) & 0xff, 0);
		if (i % 4 == 1)
			ts_pkt(w, ppt_pip);
		if (i % 4 == 2) {
			/* two: the second binds to the next MOV to CR3 */
			ts_pkt(w, ppt_pip);
			ts_pkt(w, ppt_pip);
		}
		if (disables && i % 25 == 10) {
			/* tracing stops at the MOV to CR3, a PIP while it
			 * is off, and on again at the loop */
			ts_pkt_ip(w, ppt_tip_pgd, 0);
			ts_pkt(w, ppt_pip);
			ts_pkt_ip(w, ppt_tip_pge, RAW);
			continue;
		}
		ts_pkt_tnt(w, "T");
	}
	ts_pkt_tnt(w, "N");
	ts_pkt_ip(w, ppt_tip_pgd, 0);
}

TEST(paging_binds_to_mov_cr3_same_as_libipt)
{
	static struct ts_enc w;
	static struct evs e[2];
	struct dec_config cfg;
	size_t len;
	int fast, nfast;

	mtc_config(&cfg);
	img_code = cr3_code;
	img_len = sizeof(cr3_code);
	for (int disables = 0; disables < 2; disables++) {
		cr3_loop(&w, disables);
		CHECK(!w.bad);
		len = ts_enc_done(&w);
		CHECK_EQ(both(&cfg, w.buf, len, e, &fast), 0);
		/* the fast engine did it itself (it used to hand such a
		 * stream to libipt) */
		CHECK(fast);
		/* the disables: each a BR_DISABLE and a BR_ENABLE */
		CHECK(e[1].n >= (size_t)(disables ? 16 : 2));
		CHECK_EQ(
		    damaged(&cfg, w.buf, len, 29 + disables, 2000, 1, &nfast),
		    0);
		CHECK(nfast > 1000);
	}
	img_code = code;
	img_len = sizeof(code);
}

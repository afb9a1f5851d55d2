/* SPDX-License-Identifier: MIT */
/* --args in the decoder: a data window (FUP+TIP.PGD, PTW..., TIP.PGE at
 * the same ip) becomes BR_PTWRITE events and nothing else in the flow
 * layer, while a plain asynchronous disable is still an interrupt; the
 * windows pair with the call they name (decoder/args.c) and show on its
 * span's END by type (decoder/stack.c). */
#include <inttypes.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "decoder/args.h"
#include "decoder/flow.h"
#include "decoder/image.h"
#include "decoder/stack.h"
#include "tests/harness.h"
#include "tests/support.h"

#define RAW 0x7000000000ull

/* 0x48 bytes of nop with ret at +0x41. */
static uint8_t blob[0x48];

struct rec {
	struct br_event ev[64];
	size_t n;
};

static int rec_sink(void *ctx, const struct br_event *ev)
{
	struct rec *r = ctx;

	if (r->n < 64)
		r->ev[r->n++] = *ev;
	return 0;
}

static void put(struct ts_enc *w, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	if (type == ppt_mode) {
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec.csl = 1;
	} else if (type == ppt_tsc) {
		p.payload.tsc.tsc = ip;
	} else if (type == ppt_ptw) {
		p.payload.ptw.plc = 1;
		p.payload.ptw.payload = ip;
	} else if (type != ppt_psb && type != ppt_psbend) {
		p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
		p.payload.ip.ip = ip;
	}
	if (pt_enc_next(w->e, &p) < 0)
		w->bad = 1;
}

static int decode(struct ts_enc *w, struct rec *r)
{
	struct img_image *img = NULL;
	struct flow_decoder *fd = NULL;
	struct dec_config cfg;
	size_t len = ts_enc_done(w);
	int err;

	memset(&cfg, 0, sizeof(cfg));
	memset(r, 0, sizeof(*r));
	memset(blob, 0x90, sizeof(blob));
	blob[0x41] = 0xc3;
	if (img_new(NULL, &img) ||
	    img_add_raw(img, "[blob]", blob, sizeof(blob), RAW) ||
	    flow_new(&cfg, img, NULL, &fd))
		return -1;
	err = flow_decode(fd, w->buf, len, rec_sink, r, NULL);
	flow_free(fd);
	img_free(img);
	return err;
}

static uint64_t header(unsigned kind, unsigned n, uint64_t entry)
{
	return 0xa5 | (uint64_t)kind << 8 | (uint64_t)n << 12 |
	       (entry & 0xffffull) << 16;
}

TEST(data_window_is_only_ptwrite_events)
{
	static struct ts_enc w;
	static struct rec r;

	ts_enc_init(&w);
	put(&w, ppt_psb, 0);
	put(&w, ppt_tsc, 10);
	put(&w, ppt_psbend, 0);
	put(&w, ppt_mode, 0);
	put(&w, ppt_tip_pge, RAW + 0x20);
	/* the window at +0x23 */
	put(&w, ppt_fup, RAW + 0x23);
	put(&w, ppt_tip_pgd, 0);
	put(&w, ppt_ptw, header(1, 2, RAW + 0x23));
	put(&w, ppt_ptw, 7);
	put(&w, ppt_ptw, (uint64_t)-3);
	put(&w, ppt_mode, 0);
	put(&w, ppt_tip_pge, RAW + 0x23);
	/* the ret at +0x41, then a real asynchronous disable */
	put(&w, ppt_tip, RAW + 0x30);
	put(&w, ppt_fup, RAW + 0x35);
	put(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(decode(&w, &r), 0);
	CHECK_EQ(r.n, 7);
	CHECK_EQ(r.ev[0].kind, BR_ENABLE);
	CHECK_EQ(r.ev[1].kind, BR_PTWRITE);
	CHECK_EQ(r.ev[1].from, RAW + 0x23);
	CHECK_EQ(r.ev[1].to, header(1, 2, RAW + 0x23));
	CHECK_EQ(r.ev[1].ret, 1);
	CHECK_EQ(r.ev[2].kind, BR_PTWRITE);
	CHECK_EQ(r.ev[2].to, 7);
	CHECK_EQ(r.ev[3].kind, BR_PTWRITE);
	CHECK_EQ(r.ev[3].to, (uint64_t)-3);
	CHECK_EQ(r.ev[4].kind, BR_RETURN);
	CHECK_EQ(r.ev[4].from, RAW + 0x41);
	CHECK_EQ(r.ev[4].to, RAW + 0x30);
	CHECK_EQ(r.ev[5].kind, BR_INTERRUPT);
	CHECK_EQ(r.ev[5].from, RAW + 0x35);
	CHECK_EQ(r.ev[6].kind, BR_END);
}

TEST(disable_then_enable_without_ptw_stays_an_interrupt)
{
	static struct ts_enc w;
	static struct rec r;

	ts_enc_init(&w);
	put(&w, ppt_psb, 0);
	put(&w, ppt_tsc, 10);
	put(&w, ppt_psbend, 0);
	put(&w, ppt_mode, 0);
	put(&w, ppt_tip_pge, RAW + 0x20);
	put(&w, ppt_fup, RAW + 0x23);
	put(&w, ppt_tip_pgd, 0);
	put(&w, ppt_mode, 0);
	put(&w, ppt_tip_pge, RAW + 0x23);
	put(&w, ppt_fup, RAW + 0x25);
	put(&w, ppt_tip_pgd, 0);
	CHECK(!w.bad);
	CHECK_EQ(decode(&w, &r), 0);
	CHECK_EQ(r.n, 5);
	CHECK_EQ(r.ev[0].kind, BR_ENABLE);
	CHECK_EQ(r.ev[1].kind, BR_INTERRUPT);
	CHECK_EQ(r.ev[1].from, RAW + 0x23);
	CHECK_EQ(r.ev[2].kind, BR_ENABLE);
	CHECK_EQ(r.ev[2].to, RAW + 0x23);
	CHECK_EQ(r.ev[3].kind, BR_INTERRUPT);
	CHECK_EQ(r.ev[4].kind, BR_END);
}

static struct br_event ptw(uint64_t v)
{
	struct br_event e = {.kind = BR_PTWRITE, .to = v, .ret = 1};

	return e;
}

TEST(windows_pair_by_entry)
{
	struct arg_rec r = {0};
	struct arg_vals *v = NULL;
	struct br_event e = ptw(header(ARG_ARGS, 2, 0x401000));

	CHECK_EQ(arg_feed(&r, &e), 0);
	e = ptw(5);
	CHECK_EQ(arg_feed(&r, &e), 0);
	e = ptw(6);
	CHECK_EQ(arg_feed(&r, &e), 1);
	/* another function's window is dropped */
	CHECK_EQ(arg_attach(&r, 0x402010, &v), 0);
	CHECK(v == NULL);
	e = ptw(header(ARG_ARGS, 2, 0x401000));
	arg_feed(&r, &e);
	e = ptw(5);
	arg_feed(&r, &e);
	e = ptw(6);
	CHECK_EQ(arg_feed(&r, &e), 1);
	CHECK_EQ(arg_attach(&r, 0x401000, &v), 0);
	CHECK(v != NULL);
	CHECK_EQ(v->n, 2);
	CHECK_EQ(v->v[1], 6);
	e = ptw(header(ARG_RET, 1, 0x401000));
	arg_feed(&r, &e);
	e = ptw(11);
	CHECK_EQ(arg_feed(&r, &e), 1);
	CHECK_EQ(arg_attach(&r, 0x401000, &v), 0);
	CHECK(v->has_ret);
	CHECK_EQ(v->ret, 11);
	/* a value without a header, a bad magic: ignored */
	e = ptw(42);
	CHECK_EQ(arg_feed(&r, &e), 0);
	/* PTWRITE run by the program (tracing on) */
	e.ret = 0;
	e.to = 99;
	CHECK_EQ(arg_feed(&r, &e), 2);
	CHECK_EQ(r.v[0], 99);
	/* no values at all: whole at once */
	e = ptw(header(ARG_ARGS, 0, 0x401000));
	CHECK_EQ(arg_feed(&r, &e), 1);
	free(v);
}

TEST(values_shown_by_type)
{
	static const struct prm_enum en[] = {{6, "BLUE"}};
	struct prm_param p[6] = {
	    {.name = "i", .type = PRM_INT, .size = 4, .at = PRM_AT_REG},
	    {.name = "c", .type = PRM_CHAR, .size = 1, .at = PRM_AT_REG},
	    {.name = "e",
	     .type = PRM_ENUM,
	     .size = 4,
	     .at = PRM_AT_REG,
	     .enums = en,
	     .nenums = 1},
	    {.name = "s", .type = PRM_NONE, .at = PRM_AT_NONE},
	    {.name = "p", .type = PRM_PTR, .size = 8, .at = PRM_AT_REG},
	    {.name = "d", .type = PRM_DOUBLE, .size = 8, .at = PRM_AT_XMM},
	};
	struct prm_func f = {.entry = 0x1000, .name = "f", .p = p, .n = 6};
	struct arg_vals v = {.kind = ARG_ARGS, .n = 5, .has_ret = 1};
	struct ps_arg a[8];
	char buf[128];
	double d = 2.5;
	size_t n;

	f.ret = (struct prm_param){
	    .name = "return", .type = PRM_BOOL, .size = 1, .at = PRM_AT_RAX};
	v.v[0] = 0xdeadbeeffffffffeull; /* -2 in the low 32 bits */
	v.v[1] = 'q';
	v.v[2] = 6;
	v.v[3] = 0; /* p: NULL (s was not recorded) */
	memcpy(&v.v[4], &d, 8);
	v.ret = 0x100; /* bool in al: false */
	n = arg_show(&f, &v, a, 8, buf, sizeof(buf));
	CHECK_EQ(n, 6);
	CHECK_STR(a[0].name, "i");
	CHECK_EQ(a[0].type, PS_ARG_INT);
	CHECK_EQ(a[0].v.i, -2);
	CHECK_STR(a[1].v.s, "'q'");
	CHECK_STR(a[2].v.s, "BLUE");
	CHECK_STR(a[3].name, "p");
	CHECK_STR(a[3].v.s, "NULL");
	CHECK_EQ(a[4].type, PS_ARG_DOUBLE);
	CHECK(a[4].v.d == 2.5);
	CHECK_STR(a[5].name, "return");
	CHECK_EQ(a[5].type, PS_ARG_BOOL);
	CHECK_EQ(a[5].v.b, 0);
	/* raw registers, and no DWARF at all */
	v.kind = ARG_RAW;
	v.n = 6;
	n = arg_show(NULL, &v, a, 8, buf, sizeof(buf));
	CHECK_EQ(n, 7);
	CHECK_STR(a[0].name, "rdi");
	CHECK_EQ(a[0].type, PS_ARG_POINTER);
	CHECK_EQ(a[3].type, PS_ARG_POINTER); /* a register: 0x0, not NULL */
	CHECK_EQ(a[3].v.u, 0);
}

/* ---- on the span ---- */

static struct sym_func fn = {"f", 0x401000, 0x401100, {"a.out", 0x401000}};

static const struct sym_func *lookup(void *ctx, uint64_t ip)
{
	static struct sym_func other = {
	    "main", 0x400000, 0x401000, {"a.out", 0x400000}};

	return ip >= fn.start && ip < fn.end ? &fn : &other;
}

static struct prm_param fp[1] = {
    {.name = "n", .type = PRM_INT, .size = 4, .at = PRM_AT_REG}};
static struct prm_func pf = {.entry = 0x401000, .name = "f", .p = fp, .n = 1};

static const struct prm_func *params(void *ctx, const struct sym_func *f)
{
	return f == &fn ? &pf : NULL;
}

TEST(span_end_carries_args_and_return)
{
	struct ts_recorder rec;
	struct stk *s = NULL;
	struct stk_config cfg = {.pid = 1,
				 .tid = 2,
				 .w = &rec.base,
				 .lookup = lookup,
				 .params = params};
	struct br_event ev[] = {
	    {.kind = BR_ENABLE, .to = 0x400010, .ts = 1},
	    {.kind = BR_CALL,
	     .from = 0x400020,
	     .to = 0x401000,
	     .ret = 0x400025,
	     .ts = 2},
	    ptw(header(ARG_ARGS, 1, 0x401000)),
	    ptw(41),
	    ptw(header(ARG_RET, 1, 0x401000)),
	    ptw(42),
	    {.kind = BR_RETURN, .from = 0x401050, .to = 0x400025, .ts = 5},
	    {.kind = BR_END, .ts = 6},
	};
	const struct ts_item *end;
	const struct ps_event *e = NULL;

	ts_rec_init(&rec);
	CHECK_EQ(stk_new(&cfg, &s), 0);
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		if (ev[i].kind == BR_PTWRITE)
			ev[i].ts = 3;
		CHECK_EQ(stk_feed(s, &ev[i]), 0);
	}
	for (size_t i = 0; (end = ts_rec_nth(&rec, TS_EVENT, i)); i++) {
		const struct ps_event *x = ts_rec_event(&rec, i);

		if (x && x->type == PS_EV_END && x->nargs)
			e = x;
	}
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ(e->nargs, 2);
		CHECK_STR(e->args[0].name, "n");
		CHECK_EQ(e->args[0].v.i, 41);
		CHECK_STR(e->args[1].name, "return");
		CHECK_EQ(e->args[1].v.u, 42);
		CHECK_EQ(e->ts, 5);
	}
	stk_free(s);
	ts_rec_free(&rec);
}

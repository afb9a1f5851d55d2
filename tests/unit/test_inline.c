/* SPDX-License-Identifier: MIT */
/* Inlined functions as nested spans: the symbolizer's DWARF inline ranges
 * for build/samples/inline (mix() inlines scale(), both inlined into
 * work()), the inline layer on a synthetic event sequence over that code,
 * and a libipt-encoded stream decoded by a session with the option on and
 * off. */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "decoder/inline.h"
#include "decoder/stack.h"
#include "decoder/symbols.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define BIAS 0x555555554000ull /* where the PIE sample is "loaded" */

/* ---- a writer that keeps "B name/cat" lines ---- */

struct tw {
	struct ps_writer w;
	char buf[8192];
	size_t len;
	int bad_info; /* an inline BEGIN without the expected info */
};

static int tw_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct tw *t = (struct tw *)w;
	int inl = ev->category && !strcmp(ev->category, "inline");

	if (ev->type != PS_EV_BEGIN && ev->type != PS_EV_END)
		return 0;
	if (ev->type == PS_EV_BEGIN && inl &&
	    (ev->nargs != 1 || strcmp(ev->args[0].name, "inlined") ||
	     (ev->info && (!ev->info->file || !ev->info->line))))
		t->bad_info = 1;
	t->len +=
	    (size_t)snprintf(t->buf + t->len, sizeof(t->buf) - t->len,
			     "%c %s%s;", ev->type == PS_EV_BEGIN ? 'B' : 'E',
			     ev->name ? ev->name : "?", inl ? "/i" : "");
	if (t->len >= sizeof(t->buf))
		t->len = sizeof(t->buf) - 1;
	return 0;
}

static int tw_nop(struct ps_writer *w)
{
	(void)w;
	return 0;
}

static const struct ps_writer_ops tw_ops = {
    .name = "test", .event = tw_event, .flush = tw_nop};

static void tw_init(struct tw *t)
{
	memset(t, 0, sizeof(*t));
	t->w.ops = &tw_ops;
}

/* ---- the sample ---- */

static const char *sample(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/samples/inline", harness_build());
	return path;
}

/* Addresses of work() found through DWARF, link-time. */
struct layout {
	uint64_t work, work_end, leaf;
	uint64_t both;	   /* first address with scale inside mix */
	uint64_t mix_only; /* first address after that with only mix */
	uint64_t after;	   /* first address after that with no inline */
};

static int find_layout(struct sym_module *m, struct layout *lo)
{
	const struct sym_func *f = sym_module_find(m, "work");
	uint64_t a;

	memset(lo, 0, sizeof(*lo));
	if (!f)
		return -1;
	lo->work = f->start;
	lo->work_end = f->end;
	f = sym_module_find(m, "leaf");
	if (!f)
		return -1;
	lo->leaf = f->start;
	for (a = lo->work; a < lo->work_end; a++) {
		const struct sym_inline *in = sym_module_inline_at(m, a);
		unsigned d = in ? in->depth : 0;

		if (!lo->both && d == 2)
			lo->both = a;
		else if (lo->both && !lo->mix_only && d == 1)
			lo->mix_only = a;
		else if (lo->mix_only && !lo->after && d == 0)
			lo->after = a;
	}
	return lo->after ? 0 : -1;
}

TEST(symbolizer_finds_nested_inline_ranges)
{
	const struct sym_inline *in;
	struct sym_module *m;
	struct layout lo;
	int n;

	if (sym_module_load(sample(), NULL, 1, &m) < 0)
		SKIP("build/samples/inline is missing (run make)");
	n = sym_module_load_inlines(m);
	CHECK(n >= 2);
	CHECK_EQ(sym_module_load_inlines(m), n); /* read once */
	CHECK_EQ(find_layout(m, &lo), 0);
	/* the function's own entry and leaf() are not inlined code */
	CHECK(sym_module_inline_at(m, lo.work) == NULL);
	CHECK(sym_module_inline_at(m, lo.leaf) == NULL);
	CHECK(sym_module_inline_at(m, 0) == NULL);
	CHECK(sym_module_inline_at(m, UINT64_MAX) == NULL);
	in = sym_module_inline_at(m, lo.both);
	CHECK_STR(in->name, "scale");
	CHECK_EQ(in->depth, 2);
	CHECK_EQ(in->call_line, 32); /* int s = scale(x); */
	CHECK(in->call_file && strstr(in->call_file, "inline.c"));
	CHECK_STR(in->module, "inline");
	CHECK(in->parent != NULL);
	CHECK_STR(in->parent->name, "mix");
	CHECK_EQ(in->parent->depth, 1);
	CHECK(in->parent->parent == NULL);
	CHECK_EQ(in->parent->call_line, 42); /* total += mix(i); */
	CHECK(in->parent->entry >= lo.work && in->parent->entry <= lo.both);
	in = sym_module_inline_at(m, lo.mix_only);
	CHECK_STR(in->name, "mix");
	CHECK(lo.work < lo.both && lo.both < lo.mix_only &&
	      lo.mix_only < lo.after && lo.after < lo.work_end);
	sym_module_free(m);
}

TEST(no_dwarf_no_inlines)
{
	struct sym_module *m;

	if (sym_module_load(sample(), NULL, 0, &m) < 0)
		SKIP("build/samples/inline is missing (run make)");
	CHECK_EQ(sym_module_load_inlines(m), 0);
	CHECK(sym_module_inline_at(m, sym_module_find(m, "work")->start +
					  0x20) == NULL);
	sym_module_free(m);
}

static const struct sym_func *lookup(void *ctx, uint64_t ip)
{
	return sym_lookup(ctx, ip);
}

static int feed(struct inl *l, enum br_kind kind, uint64_t from, uint64_t to,
		uint64_t ret, uint64_t ts)
{
	struct br_event ev = {
	    .kind = kind, .from = from, .to = to, .ret = ret, .ts = ts};

	return inl_sink(l, &ev);
}

static int block(struct inl *l, uint64_t ip, uint64_t end_ip, uint64_t ts)
{
	struct flow_block b = {ip, end_ip, 1, ts};
	int err = inl_block(l, &b, 0);

	return err < 0 ? err : inl_block(l, &b, 1);
}

TEST(layer_nests_inline_spans_in_their_frame)
{
	struct sym_module *m;
	struct sym_space *sp;
	struct stk_config cfg;
	struct layout lo;
	struct inl *l;
	struct tw t;

	if (sym_module_load(sample(), NULL, 1, &m) < 0)
		SKIP("build/samples/inline is missing (run make)");
	CHECK_EQ(find_layout(m, &lo), 0);
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, m, BIAS, 0, 0), 0);
	tw_init(&t);
	memset(&cfg, 0, sizeof(cfg));
	cfg.pid = cfg.tid = 7;
	cfg.w = &t.w;
	cfg.lookup = lookup;
	cfg.lookup_ctx = sp;
	cfg.span_info = 1;
	CHECK_EQ(inl_new(NULL, sp, &l), PS_ERR_INVAL);
	CHECK_EQ(inl_new(&cfg, NULL, &l), PS_ERR_INVAL);
	CHECK_EQ(inl_new(&cfg, sp, NULL), PS_ERR_INVAL);
	CHECK_EQ(inl_new(&cfg, sp, &l), 0);
	CHECK_EQ(feed(l, BR_ENABLE, 0, BIAS + lo.work, 0, 10), 0);
	CHECK_EQ(block(l, BIAS + lo.work, BIAS + lo.work + 4, 10), 0);
	CHECK_EQ(inl_depth(l), 0);
	CHECK_EQ(block(l, BIAS + lo.both, BIAS + lo.both + 8, 20), 0);
	CHECK_EQ(inl_depth(l), 2);
	/* same chain again: nothing new */
	CHECK_EQ(block(l, BIAS + lo.both, BIAS + lo.both + 1, 25), 0);
	CHECK_EQ(block(l, BIAS + lo.mix_only, BIAS + lo.mix_only, 30), 0);
	CHECK_EQ(inl_depth(l), 1);
	/* a call from inlined code: the callee nests inside mix */
	CHECK_EQ(feed(l, BR_CALL, BIAS + lo.mix_only, BIAS + lo.leaf,
		      BIAS + lo.after, 40),
		 0);
	CHECK_EQ(block(l, BIAS + lo.leaf, BIAS + lo.leaf + 4, 41), 0);
	CHECK_EQ(inl_depth(l), 1); /* mix stays open under leaf */
	CHECK_EQ(feed(l, BR_RETURN, BIAS + lo.leaf + 4, BIAS + lo.after, 0, 50),
		 0);
	CHECK_EQ(inl_depth(l), 0);
	/* re-entering, then the stream ends inside: all close in order */
	CHECK_EQ(block(l, BIAS + lo.both, BIAS + lo.both, 60), 0);
	CHECK_EQ(feed(l, BR_END, 0, 0, 0, 70), 0);
	CHECK_EQ(inl_depth(l), 0);
	CHECK_EQ(stk_depth(inl_stk(l)), 0);
	CHECK_EQ(inl_spans(l), 4);
	CHECK_STR(t.buf, "B work;B mix/i;B scale/i;E scale/i;B leaf;E leaf;"
			 "E mix/i;B mix/i;B scale/i;E scale/i;E mix/i;E work;");
	CHECK(!t.bad_info);
	inl_free(l);
	sym_space_free(sp);
	sym_module_free(m);
}

TEST(layer_ignores_ips_outside_the_top_frame)
{
	struct sym_module *m;
	struct sym_space *sp;
	struct stk_config cfg;
	struct layout lo;
	struct inl *l;
	struct tw t;

	if (sym_module_load(sample(), NULL, 1, &m) < 0)
		SKIP("build/samples/inline is missing (run make)");
	CHECK_EQ(find_layout(m, &lo), 0);
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, m, 0, 0, 0), 0);
	tw_init(&t);
	memset(&cfg, 0, sizeof(cfg));
	cfg.w = &t.w;
	cfg.lookup = lookup;
	cfg.lookup_ctx = sp;
	CHECK_EQ(inl_new(&cfg, sp, &l), 0);
	/* no frame yet: a block inside inlined code shows nothing */
	CHECK_EQ(block(l, lo.both, lo.both, 1), 0);
	CHECK_EQ(inl_depth(l), 0);
	/* in leaf's frame, an ip of work's inlined code is not applied */
	CHECK_EQ(feed(l, BR_ENABLE, 0, lo.leaf, 0, 2), 0);
	CHECK_EQ(block(l, lo.both, lo.both, 3), 0);
	CHECK_EQ(inl_depth(l), 0);
	/* a syscall frame on top: nothing either */
	CHECK_EQ(feed(l, BR_SYSCALL, lo.leaf + 1, 0, 0, 4), 0);
	CHECK_EQ(block(l, lo.leaf, lo.leaf, 5), 0);
	CHECK_EQ(inl_depth(l), 0);
	CHECK_EQ(feed(l, BR_END, 0, 0, 0, 6), 0);
	CHECK(strstr(t.buf, "/i") == NULL);
	inl_free(l);
	sym_space_free(sp);
	sym_module_free(m);
}

/* ---- a libipt-encoded run of work(4)'s first iterations ---- */

static void put(struct ts_enc *w, enum pt_packet_type type, uint64_t ip,
		const char *tnt)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	if (type == ppt_tip || type == ppt_tip_pge) {
		p.payload.ip.ipc = pt_ipc_sext_48;
		p.payload.ip.ip = ip;
	} else if (type == ppt_mode) {
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec.csl = 1;
	} else if (type == ppt_tsc) {
		p.payload.tsc.tsc = ip;
	} else if (type == ppt_tnt_8) {
		for (; *tnt; tnt++, p.payload.tnt.bit_size++)
			p.payload.tnt.payload =
			    (p.payload.tnt.payload << 1) | (*tnt == 'T');
	}
	if (!w->e || pt_enc_next(w->e, &p) < 0)
		w->bad = 1;
}

/* work(4) from its entry: i = 0 runs scale's loop twice and calls leaf,
 * i = 1 runs it three times; the stream ends in i = 1's leaf call. */
static size_t encode_work(struct ts_enc *w, const struct layout *lo)
{
	size_t len;

	ts_enc_init(w);
	put(w, ppt_psb, 0, NULL);
	put(w, ppt_tsc, 1000, NULL);
	put(w, ppt_psbend, 0, NULL);
	put(w, ppt_mode, 0, NULL);
	put(w, ppt_tip_pge, BIAS + lo->work, NULL);
	put(w, ppt_tnt_8, 0, "NTN"); /* n > 0; scale's loop: 2 rounds */
	put(w, ppt_tsc, 2000, NULL);
	put(w, ppt_tip, BIAS + lo->after, NULL); /* leaf returns */
	put(w, ppt_tnt_8, 0, "TTTN");		 /* i < n; 3 rounds */
	put(w, ppt_tsc, 3000, NULL);
	put(w, ppt_tip, BIAS + lo->after, NULL);
	len = ts_enc_done(w);
	return w->bad ? 0 : len;
}

static int decode(int inline_frames, struct tw *t)
{
	struct dec_config cfg = {.inline_frames = inline_frames,
				 .span_info = 1};
	struct dec_session *s;
	struct layout lo;
	struct sym_module *m;
	struct ts_enc e;
	size_t len;
	int err;

	if (sym_module_load(sample(), NULL, 1, &m) < 0)
		return 1;
	err = find_layout(m, &lo);
	sym_module_free(m);
	if (err)
		return -100;
	len = encode_work(&e, &lo);
	if (!len)
		return -101;
	err = dec_session_new(&cfg, &s);
	if (!err)
		err = dec_add_elf(s, 9, sample(), BIAS, 0, 0);
	tw_init(t);
	if (!err)
		err = dec_decode_thread(s, 9, 9, e.buf, len, &t->w);
	dec_session_free(s);
	return err;
}

TEST(session_with_inline_shows_nested_spans)
{
	struct tw t;
	int err = decode(1, &t);

	if (err == 1)
		SKIP("build/samples/inline is missing (run make)");
	CHECK_EQ(err, 0);
	CHECK_STR(t.buf, "B work;B mix/i;B scale/i;E scale/i;B leaf;E leaf;"
			 "E mix/i;B mix/i;B scale/i;E scale/i;B leaf;E leaf;"
			 "E mix/i;E work;");
	CHECK(!t.bad_info);
}

TEST(session_without_inline_shows_none)
{
	struct tw t;
	int err = decode(0, &t);

	if (err == 1)
		SKIP("build/samples/inline is missing (run make)");
	CHECK_EQ(err, 0);
	CHECK_STR(t.buf, "B work;B leaf;E leaf;B leaf;E leaf;E work;");
}

/* Every prefix of the stream, and the stream with bytes flipped, must
 * decode without crashing and leave every span closed. */
TEST(truncated_and_corrupted_streams_stay_balanced)
{
	struct dec_config cfg = {.inline_frames = 1, .span_info = 1};
	struct sym_module *m;
	struct layout lo;
	struct ts_enc e;
	size_t len, cut;
	int err;

	if (sym_module_load(sample(), NULL, 1, &m) < 0)
		SKIP("build/samples/inline is missing (run make)");
	err = find_layout(m, &lo);
	sym_module_free(m);
	CHECK_EQ(err, 0);
	len = encode_work(&e, &lo);
	CHECK(len > 20);
	for (cut = 0; cut <= len + 8; cut++) {
		struct dec_session *s;
		uint8_t buf[1024];
		struct tw t;
		int depth = 0;

		memcpy(buf, e.buf, len);
		if (cut > len) /* flip a byte after the PSB+ instead */
			buf[16 + (cut - len) * 3 % (len - 16)] ^= 0x5a;
		CHECK_EQ(dec_session_new(&cfg, &s), 0);
		CHECK_EQ(dec_add_elf(s, 9, sample(), BIAS, 0, 0), 0);
		tw_init(&t);
		err = dec_decode_thread(s, 9, 9, buf, cut > len ? len : cut,
					&t.w);
		dec_session_free(s);
		CHECK(err == 0 || err == PS_ERR_FORMAT);
		for (const char *p = t.buf; *p; p++) {
			if ((p == t.buf || p[-1] == ';') &&
			    (*p == 'B' || *p == 'E'))
				depth += *p == 'B' ? 1 : -1;
			CHECK(depth >= 0);
		}
		CHECK_EQ(depth, 0);
	}
}

/* SPDX-License-Identifier: MIT */
/* Per-CPU decoding (dec_decode_cpus): a thread's call stack is kept while
 * it is switched out and resumed on another CPU.  Streams are encoded
 * with libipt's encoder over build/samples/recursion. */
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

#define BIAS 0x555555554000ull
#define PID 10
#define TID 11

/* Records the spans of thread TID. */
struct span_writer {
	struct ps_writer w;
	int depth, bad;
	uint64_t last_ts;
	char log[4096];
	size_t len;
};

static int sw_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct span_writer *c = (struct span_writer *)w;
	int inferred = 0, n;

	if (ev->tid != TID)
		return 0;
	if (ev->ts < c->last_ts)
		c->bad = 1;
	c->last_ts = ev->ts;
	for (size_t i = 0; i < ev->nargs; i++)
		if (!strcmp(ev->args[i].name, "inferred"))
			inferred = 1;
	if (ev->type == PS_EV_BEGIN)
		c->depth++;
	else if (ev->type == PS_EV_END && c->depth-- <= 0)
		c->bad = 1;
	n = snprintf(c->log + c->len, sizeof(c->log) - c->len,
		     "%c%s %s@%" PRIu64 "\n", "BECI"[ev->type & 3],
		     inferred ? "*" : "", ev->name ? ev->name : "-", ev->ts);
	if (n > 0 && (size_t)n < sizeof(c->log) - c->len)
		c->len += (size_t)n;
	return 0;
}

static const struct ps_writer_ops sw_ops = {.name = "spans", .event = sw_event};

static void pkt(struct ts_enc *w, enum pt_packet_type type, uint64_t v,
		const char *tnt)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	if (type == ppt_tsc) {
		p.payload.tsc.tsc = v;
	} else if (type == ppt_mode) {
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec.csl = 1;
	} else if (type == ppt_tnt_8) {
		for (; *tnt; tnt++, p.payload.tnt.bit_size++)
			p.payload.tnt.payload =
			    (p.payload.tnt.payload << 1) | (*tnt == 'T');
	} else if (type != ppt_psb && type != ppt_psbend) {
		p.payload.ip.ipc = v ? pt_ipc_sext_48 : pt_ipc_suppressed;
		p.payload.ip.ip = v;
	}
	if (pt_enc_next(w->e, &p) < 0)
		w->bad = 1;
}

static void start(struct ts_enc *w, uint64_t tsc)
{
	ts_enc_init(w);
	pkt(w, ppt_psb, 0, NULL);
	pkt(w, ppt_tsc, tsc, NULL);
	pkt(w, ppt_psbend, 0, NULL);
	pkt(w, ppt_mode, 0, NULL);
}

struct env {
	struct dec_session *s;
	struct img_image *img;
	uint64_t is_even, is_odd, ev_call, od_jne, de_je;
};

static uint64_t find(struct img_image *img, uint64_t from, int cls,
		     struct insn_info *in)
{
	struct insn_decoder *d;
	uint64_t ip = from, found = 0;

	if (insn_new(&d))
		return 0;
	for (int i = 0; i < 64 && !found; i++) {
		uint8_t buf[15];
		int n = img_read(img, ip, buf, sizeof(buf));

		if (n <= 0 || insn_decode(d, 64, ip, buf, (size_t)n, in))
			break;
		if (in->cls == cls)
			found = ip;
		ip += in->len;
	}
	insn_free(d);
	return found;
}

/* A function's run-time address, from nm. */
static uint64_t sym(const char *path, const char *name)
{
	char cmd[1200], line[256], nm[128], t;
	unsigned long long a;
	uint64_t found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm %s", path);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &a, &t, nm) == 3 &&
		    !strcmp(nm, name))
			found = BIAS + a;
	pclose(f);
	return found;
}

static int env_open(struct env *v)
{
	char path[1024];
	struct dec_config cfg;
	struct insn_info in;

	memset(v, 0, sizeof(*v));
	memset(&cfg, 0, sizeof(cfg));
	snprintf(path, sizeof(path), "%s/samples/recursion", harness_build());
	if (dec_session_new(&cfg, &v->s) ||
	    dec_add_elf(v->s, PID, path, BIAS, 0, 0) ||
	    img_new(NULL, &v->img) || img_add_elf(v->img, path, BIAS, 0, 0) < 1)
		return -1;
	v->is_even = sym(path, "is_even");
	v->is_odd = sym(path, "is_odd");
	v->de_je = find(v->img, sym(path, "descend"), INSN_COND, &in);
	v->ev_call = find(
	    v->img, find(v->img, v->is_even, INSN_COND, &in) ? in.target : 0,
	    INSN_CALL, &in);
	v->od_jne = find(v->img, v->is_odd, INSN_COND, &in);
	return v->is_even && v->ev_call && v->od_jne && v->de_je ? 0 : -1;
}

static void env_close(struct env *v)
{
	img_free(v->img);
	dec_session_free(v->s);
}

/* CPU 0: is_even calls is_odd, preempted at is_odd's jne (t 200);
 * CPU 1 (t 300): resumes at @resume_ip, then returns from is_odd. */
static int run_two_cpus(struct env *v, uint64_t resume_ip,
			struct span_writer *c)
{
	static struct ts_enc w0, w1;
	struct dec_switch sw0[] = {{50, PID, TID, 0}, {250, PID, TID, 1}};
	struct dec_switch sw1[] = {{280, PID, TID, 0}, {400, PID, TID, 1}};
	struct dec_cpu_trace t[2];
	size_t n0, n1;

	start(&w0, 100);
	pkt(&w0, ppt_tip_pge, v->is_even, NULL);
	pkt(&w0, ppt_tnt_8, 0, "T");
	pkt(&w0, ppt_tsc, 200, NULL);
	pkt(&w0, ppt_fup, v->od_jne, NULL);
	pkt(&w0, ppt_tip_pgd, 0, NULL);
	n0 = ts_enc_done(&w0);
	start(&w1, 300);
	pkt(&w1, ppt_tip_pge, resume_ip, NULL);
	if (resume_ip == v->od_jne) {
		pkt(&w1, ppt_tnt_8, 0, "N");
		pkt(&w1, ppt_tip, v->ev_call + 5, NULL);
	}
	n1 = ts_enc_done(&w1);
	if (w0.bad || w1.bad)
		return -1;
	memset(c, 0, sizeof(*c));
	c->w.ops = &sw_ops;
	t[0] = (struct dec_cpu_trace){0, w0.buf, n0, sw0, 2};
	t[1] = (struct dec_cpu_trace){1, w1.buf, n1, sw1, 2};
	return dec_decode_cpus(v->s, t, 2, &c->w);
}

static int count(const char *log, const char *what)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, what)); p++)
		n++;
	return n;
}

TEST(stack_kept_across_cpus)
{
	static struct env v;
	static struct span_writer c;

	if (env_open(&v))
		SKIP("build/samples/recursion is missing (run make)");
	CHECK_EQ(run_two_cpus(&v, v.od_jne, &c), 0);
	/* one is_odd span, seen called (not inferred), closed on CPU 1 */
	CHECK_EQ(count(c.log, "B is_odd@"), 1);
	CHECK_EQ(count(c.log, "B* is_odd@"), 0);
	CHECK_EQ(count(c.log, "B [kernel]@20"), 1);
	CHECK_EQ(count(c.log, "E is_odd@30"), 1);
	CHECK_EQ(c.depth, 0);
	CHECK(!c.bad);
	env_close(&v);
}

TEST(lost_data_starts_fresh_stack)
{
	static struct env v;
	static struct span_writer c;

	if (env_open(&v))
		SKIP("build/samples/recursion is missing (run make)");
	CHECK_EQ(run_two_cpus(&v, v.de_je, &c), 0);
	CHECK_EQ(count(c.log, "B is_odd@"), 1);
	CHECK_EQ(count(c.log, "B* descend@"), 1);
	CHECK_EQ(count(c.log, "[signal]"), 0);
	CHECK_EQ(c.depth, 0);
	CHECK(!c.bad);
	env_close(&v);
}

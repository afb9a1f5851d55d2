/* SPDX-License-Identifier: MIT */
/* Inlined functions as nested spans around the call-stack builder (see
 * inline.h). */
#include <stdlib.h>
#include <string.h>

#include "decoder/inline.h"
#include "ptscope/error.h"

/* One open inline span. */
struct inl_frame {
	const struct sym_inline *in; /* borrowed from the symbolizer */
	unsigned owner;		     /* real frames open when it began */
};

struct inl {
	struct ps_writer wr;	/* first: what the stack builder writes to */
	struct ps_writer *out;	/* not owned */
	struct stk *stk;	/* owned */
	struct sym_space *syms; /* not owned */
	uint64_t pid, tid;
	int span_info;
	unsigned real; /* real frames the builder has open */
	struct inl_frame fr[INL_MAX_CHAIN * 8]; /* inline spans, outer first */
	unsigned n;
	uint64_t last_ts; /* latest time written */
	uint64_t spans;	  /* inline spans closed */
};

static const char cat_inline[] = "inline";
static const struct ps_arg inlined_arg = {
    .name = "inlined", .type = PS_ARG_BOOL, .v.b = 1};

static int put(struct inl *l, struct ps_event *ev)
{
	ev->pid = l->pid;
	ev->tid = l->tid;
	return ps_write_event(l->out, ev);
}

static int close_top(struct inl *l, uint64_t ts)
{
	struct ps_event ev = {.type = PS_EV_END,
			      .ts = ts,
			      .name = l->fr[--l->n].in->name,
			      .category = cat_inline};

	l->spans++;
	return put(l, &ev);
}

static int open_one(struct inl *l, const struct sym_inline *in, uint64_t bias,
		    uint64_t ts)
{
	struct ps_span_info info = {in->module, in->entry + bias, in->call_file,
				    in->call_line};
	struct ps_event ev = {.type = PS_EV_BEGIN,
			      .ts = ts,
			      .name = in->name,
			      .category = cat_inline,
			      .args = &inlined_arg,
			      .nargs = 1};

	if (l->span_info)
		ev.info = &info;
	l->fr[l->n].in = in;
	l->fr[l->n++].owner = l->real;
	return put(l, &ev);
}

/* Close the inline spans opened above real frame number @owner. */
static int close_owned(struct inl *l, unsigned owner, uint64_t ts)
{
	int err;

	while (l->n && l->fr[l->n - 1].owner >= owner) {
		err = close_top(l, ts);
		if (err < 0)
			return err;
	}
	return 0;
}

/* The thread executes @ip at about @ts: make the inline spans above the
 * innermost frame match the chain at @ip, if @ip is in that frame. */
static int at_ip(struct inl *l, uint64_t ip, uint64_t ts)
{
	const struct sym_inline *chain[INL_MAX_CHAIN], *in, *p;
	const struct sym_func *fn = stk_top_func(l->stk);
	unsigned k = 0, i, base, same;
	uint64_t bias = 0;
	int err;

	if (!fn || ip < fn->start || ip >= fn->end)
		return 0; /* not in a function frame we know: leave as is */
	in = sym_inline_at(l->syms, ip, &bias);
	base = l->n;
	while (base && l->fr[base - 1].owner == l->real)
		base--;
	/* nothing changes (the usual case): done */
	if (l->n > base ? l->fr[l->n - 1].in == in : !in)
		return 0;
	/* the chain, outermost first; too deep: the outermost ones */
	for (p = in; p; p = p->parent)
		k++;
	for (; k > INL_MAX_CHAIN; k--)
		in = in->parent;
	for (i = k, p = in; i; p = p->parent)
		chain[--i] = p;
	if (ts < l->last_ts)
		ts = l->last_ts;
	same = 0;
	while (base + same < l->n && same < k &&
	       l->fr[base + same].in == chain[same])
		same++;
	while (l->n > base + same) {
		err = close_top(l, ts);
		if (err < 0)
			return err;
	}
	for (; same < k && l->n < sizeof(l->fr) / sizeof(l->fr[0]); same++) {
		err = open_one(l, chain[same], bias, ts);
		if (err < 0)
			return err;
	}
	l->last_ts = ts;
	return 0;
}

/* ---- the writer the stack builder writes to ---- */

static int wr_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct inl *l = (struct inl *)w;
	struct ps_event copy;
	int err;

	switch (ev->type) {
	case PS_EV_BEGIN:
		l->real++;
		break;
	case PS_EV_END:
		/* never before the inline spans it closes */
		if (ev->ts < l->last_ts) {
			copy = *ev;
			copy.ts = l->last_ts;
			ev = &copy;
		}
		err = close_owned(l, l->real, ev->ts);
		if (err < 0)
			return err;
		if (l->real)
			l->real--;
		break;
	default:
		break;
	}
	/* inferred frames begin in the past: they do not move time */
	if (ev->ts > l->last_ts)
		l->last_ts = ev->ts;
	return ps_write_event(l->out, ev);
}

static int wr_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct inl *l = (struct inl *)w;

	return l->out->ops->process(l->out, pid, name);
}

static int wr_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		     const char *name)
{
	struct inl *l = (struct inl *)w;

	return l->out->ops->thread(l->out, pid, tid, name);
}

static int wr_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct inl *l = (struct inl *)w;

	return ps_write_parent(l->out, pid, ppid);
}

static int wr_meta(struct ps_writer *w, const char *key, const char *value)
{
	struct inl *l = (struct inl *)w;

	return l->out->ops->meta(l->out, key, value);
}

/* The real writer is flushed and destroyed by its owner, not here. */
static int wr_flush(struct ps_writer *w)
{
	(void)w;
	return 0;
}

static void wr_destroy(struct ps_writer *w)
{
	(void)w;
}

static const struct ps_writer_ops inl_writer_ops = {
    .name = "inline",
    .process = wr_process,
    .thread = wr_thread,
    .parent = wr_parent,
    .meta = wr_meta,
    .event = wr_event,
    .flush = wr_flush,
    .destroy = wr_destroy,
};

/* ---- the layer ---- */

int inl_new(const struct stk_config *cfg, struct sym_space *syms,
	    struct inl **out)
{
	struct stk_config sc;
	struct inl *l;
	int err;

	if (!out)
		return ps_err_detail(PS_ERR_INVAL, "inl_new: out is NULL");
	*out = NULL;
	if (!cfg || !cfg->w || !syms)
		return ps_err_detail(PS_ERR_INVAL,
				     "inl_new: a stack configuration with a "
				     "writer and a symbol space are required");
	l = calloc(1, sizeof(*l));
	if (!l)
		return PS_ERR_NOMEM;
	l->wr.ops = &inl_writer_ops;
	l->out = cfg->w;
	l->syms = syms;
	l->pid = cfg->pid;
	l->tid = cfg->tid;
	l->span_info = cfg->span_info;
	sc = *cfg;
	sc.w = &l->wr;
	err = stk_new(&sc, &l->stk);
	if (err < 0) {
		free(l);
		return err;
	}
	*out = l;
	return 0;
}

void inl_free(struct inl *l)
{
	if (!l)
		return;
	stk_free(l->stk);
	free(l);
}

struct stk *inl_stk(struct inl *l)
{
	return l->stk;
}

uint64_t inl_spans(const struct inl *l)
{
	return l->spans;
}

unsigned inl_depth(const struct inl *l)
{
	return l->n;
}

int inl_sink(void *ctx, const struct br_event *ev)
{
	struct inl *l = ctx;
	int err = 0;

	/* where the branch was taken, before the stack reacts to it */
	switch (ev->kind) {
	case BR_CALL:
	case BR_RETURN:
	case BR_JUMP:
	case BR_SYSCALL:
	case BR_INTERRUPT:
	case BR_DISABLE:
		if (ev->from)
			err = at_ip(l, ev->from, ev->ts);
		break;
	default:
		break;
	}
	if (!err)
		err = stk_feed(l->stk, ev);
	if (err < 0)
		return err;
	/* where execution went on */
	switch (ev->kind) {
	case BR_CALL:
	case BR_RETURN:
	case BR_JUMP:
	case BR_INTERRUPT:
	case BR_FAR_RETURN:
	case BR_ENABLE:
	case BR_OVERFLOW:
		if (ev->to)
			err = at_ip(l, ev->to, ev->ts);
		break;
	default:
		break;
	}
	return err;
}

int inl_block(void *ctx, const struct flow_block *b, int at_end)
{
	return at_ip(ctx, at_end ? b->end_ip : b->ip, b->ts);
}

int inl_decode_thread(struct flow_decoder *fd, struct sym_space *syms,
		      const struct stk_config *cfg, const uint8_t *pt,
		      size_t len, struct dec_stats *stats)
{
	struct inl *l;
	int err;

	err = inl_new(cfg, syms, &l);
	if (err < 0)
		return err;
	flow_set_block_fn(fd, inl_block);
	err = flow_decode(fd, pt, len, inl_sink, l, stats);
	flow_set_block_fn(fd, NULL);
	if (stats) {
		stats->spans += stk_get_counts(l->stk)->spans + l->spans;
		stats->threads++;
	}
	inl_free(l);
	return err;
}

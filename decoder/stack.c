/* SPDX-License-Identifier: MIT */
/* The call-stack builder: branch events → streamed spans (see stack.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "decoder/args.h"
#include "decoder/stack.h"
#include "decoder/stack_frames.h"
#include "ptscope/error.h"

static int contains(const struct sym_func *fn, uint64_t ip)
{
	return fn && ip >= fn->start && ip < fn->end;
}

/* Can the thread be at @ip in @fn without a transfer we missed: inside
 * it, or @fn's size is unknown (so we cannot tell)? */
static int may_hold(const struct sym_func *fn, uint64_t ip)
{
	return contains(fn, ip) || (fn && fn->end == fn->start);
}

int stk_new(const struct stk_config *cfg, struct stk **out)
{
	struct stk *s;

	if (!out)
		return ps_err_detail(PS_ERR_INVAL, "stk_new: out is NULL");
	*out = NULL;
	if (!cfg || !cfg->w || !cfg->lookup)
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "stk_new: a writer and a lookup function are required");
	s = calloc(1, sizeof(*s));
	if (!s)
		return PS_ERR_NOMEM;
	s->cfg = *cfg;
	if (!s->cfg.max_depth)
		s->cfg.max_depth = STK_MAX_DEPTH;
	s->begin_tmpl = (struct ps_event){.type = PS_EV_BEGIN,
					  .pid = cfg->pid,
					  .tid = cfg->tid,
					  .category = stk_cat_func};
	s->end_tmpl = (struct ps_event){
	    .type = PS_EV_END, .pid = cfg->pid, .tid = cfg->tid};
	*out = s;
	return 0;
}

void stk_free(struct stk *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->depth; i++)
		free(s->fr[i].vals);
	free(s->fr);
	free(s);
}

unsigned stk_depth(const struct stk *s)
{
	return s->depth;
}

const struct stk_counts *stk_get_counts(const struct stk *s)
{
	return &s->c;
}

const struct sym_func *stk_top_func(const struct stk *s)
{
	const struct stk_frame *f;

	if (!s->depth || s->deep)
		return NULL;
	f = &s->fr[s->depth - 1];
	return f->kind == FR_FUNC ? f->fn : NULL;
}

int stk_close_all(struct stk *s, uint64_t ts)
{
	if (ts < s->last_ts)
		ts = s->last_ts;
	s->deep = 0;
	s->kpend = 0;
	/* what comes next starts a fresh stack, after everything closed */
	s->started = 0;
	s->floor_ts = ts + 1;
	s->last_ts = ts;
	return stk_pop_to(s, 0, ts);
}

/* A fresh stack: the thread runs in the function of @ip, which began at
 * an unknown time before @ts. */
static int start(struct stk *s, uint64_t ip, uint64_t ts)
{
	s->started = 1;
	s->first_ts = ts;
	s->ninferred = 0;
	if (s->floor_ts > ts)
		s->floor_ts = ts;
	return stk_push(s, FR_FUNC, s->cfg.lookup(s->cfg.lookup_ctx, ip), 0, 0,
			ts, 1);
}

/* The caller of everything seen so far: the k-th one discovered began at
 * first_ts - k, so outer frames begin strictly earlier than inner ones. */
static int discover(struct stk *s, uint64_t ip)
{
	uint64_t k = ++s->ninferred, ts = s->first_ts;

	ts = ts - s->floor_ts >= k ? ts - k : s->floor_ts;
	return stk_push(s, FR_FUNC, s->cfg.lookup(s->cfg.lookup_ctx, ip), 0, 0,
			ts, 1);
}

/* The top frame becomes @fn (tail call, or code reached without a seen
 * transfer); the saved return address stays. */
static int replace_top(struct stk *s, const struct sym_func *fn, uint64_t ts)
{
	uint64_t ret = 0;
	int err;

	if (!fn)
		return PS_ERR_NOMEM;
	if (s->depth && s->fr[s->depth - 1].kind == FR_FUNC) {
		if (s->fr[s->depth - 1].fn == fn)
			return 0;
		ret = s->fr[s->depth - 1].ret;
		err = stk_pop(s, ts);
		if (err < 0)
			return err;
	}
	return stk_push(s, FR_FUNC, fn, ret, 0, ts, 0);
}

/* The thread is at @ip, outside the top frame's function: it left through
 * a transfer we did not see (longjmp, exception landing pad, jump to the
 * middle of another function).  An outer frame holding @ip becomes the
 * top; otherwise the top frame is replaced. */
static int move_to(struct stk *s, uint64_t ip, uint64_t ts)
{
	unsigned i;

	for (i = s->depth - 1; i-- > 0;) {
		if (s->fr[i].kind == FR_FUNC && contains(s->fr[i].fn, ip))
			return stk_pop_to(s, i + 1, ts);
	}
	return replace_top(s, s->cfg.lookup(s->cfg.lookup_ctx, ip), ts);
}

/* Make sure the stack exists and its top holds @ip (the ip of the
 * branching instruction). */
static int sync_ip(struct stk *s, uint64_t ip, uint64_t ts)
{
	const struct stk_frame *top;

	if (!ip)
		return 0;
	if (!s->started || !s->depth) {
		if (s->started && !s->deep)
			return discover(s, ip);
		return s->started ? 0 : start(s, ip, ts);
	}
	if (s->deep)
		return 0;
	top = &s->fr[s->depth - 1];
	if (top->kind != FR_FUNC || may_hold(top->fn, ip))
		return 0; /* inside, or we cannot tell */
	return move_to(s, ip, ts);
}

static int do_call(struct stk *s, const struct br_event *ev, uint64_t ts)
{
	return stk_push(s, FR_FUNC, s->cfg.lookup(s->cfg.lookup_ctx, ev->to),
			ev->ret, 0, ts, 0);
}

static int do_return(struct stk *s, uint64_t to, uint64_t ts)
{
	unsigned i, top;
	int err;

	if (s->deep) {
		s->deep--;
		return 0;
	}
	if (!s->depth)
		return to ? discover(s, to) : 0;
	top = s->depth - 1;
	if (to && s->fr[top].ret == to)
		return stk_pop(s, ts);
	if (!to)
		return stk_pop(s, ts);
	/* A saved return address further up: everything above it left. */
	for (i = top; i-- > 0;) {
		if (s->fr[i].ret == to)
			return stk_pop_to(s, i, ts);
	}
	/* A caller whose return address we never saw. */
	for (i = top; i-- > 0;) {
		if (s->fr[i].kind == FR_FUNC && contains(s->fr[i].fn, to))
			return stk_pop_to(s, i + 1, ts);
	}
	err = stk_pop(s, ts);
	if (err < 0)
		return err;
	if (!s->depth)
		return discover(s, to);
	/* Returned somewhere no frame knows (a signal restorer, a
	 * hand-made return): the code there runs on top. */
	return stk_push(s, FR_FUNC, s->cfg.lookup(s->cfg.lookup_ctx, to), 0, 0,
			ts, 0);
}

static int do_jump(struct stk *s, uint64_t to, uint64_t ts)
{
	const struct sym_func *fn;

	if (s->deep || !to)
		return 0;
	fn = s->cfg.lookup(s->cfg.lookup_ctx, to);
	if (!fn)
		return PS_ERR_NOMEM;
	if (fn->start == to)
		return replace_top(s, fn, ts);
	return s->depth ? move_to(s, to, ts) : discover(s, to);
}

/* The thread stops running traced code at @resume: the kernel (or an
 * untraced region) runs until the next enable. */
static int stop(struct stk *s, enum stk_kind kind, uint64_t resume, uint64_t ts)
{
	if (!s->started || s->deep)
		return 0;
	if (s->kpend || (s->depth && (s->fr[s->depth - 1].kind == FR_SYSCALL ||
				      s->fr[s->depth - 1].kind == FR_KERNEL)))
		return 0;
	if (kind == FR_KERNEL) {
		s->kpend = 1;
		s->kpend_resume = resume;
		s->kpend_ts = ts;
		return 0;
	}
	return stk_push(s, kind, NULL, 0, resume, ts, 0);
}

/* Begin the pending "[kernel]" frame at its own time: nothing else of
 * this thread was written since, so the thread's events stay in order. */
static int kernel_begin(struct stk *s)
{
	if (!s->kpend)
		return 0;
	s->kpend = 0;
	return stk_push(s, FR_KERNEL, NULL, 0, s->kpend_resume, s->kpend_ts, 0);
}

/* Tracing goes on at @to: close the kernel span, then decide whether the
 * thread resumed where it stopped, returned from a signal handler, or
 * entered one. */
static int resume(struct stk *s, uint64_t to, uint64_t ts)
{
	uint64_t stopped = 0;
	unsigned i;
	int err, had_kernel = 0;

	if (!s->started)
		return to ? start(s, to, ts) : 0;
	if (s->deep)
		return 0;
	while (s->depth && (s->fr[s->depth - 1].kind == FR_SYSCALL ||
			    s->fr[s->depth - 1].kind == FR_KERNEL)) {
		stopped = s->fr[s->depth - 1].resume;
		had_kernel = 1;
		err = stk_pop(s, ts);
		if (err < 0)
			return err;
	}
	if (!to)
		return 0;
	if (!s->depth)
		return discover(s, to);
	for (i = s->depth; i-- > 0;) {
		if (s->fr[i].kind == FR_SIGNAL && s->fr[i].resume == to)
			return stk_pop_to(s, i, ts);
	}
	if (to == stopped || contains(s->fr[s->depth - 1].fn, to))
		return 0;
	for (i = s->depth; i-- > 1;) {
		if (s->fr[i].kind == FR_SIGNAL && contains(s->fr[i - 1].fn, to))
			return stk_pop_to(s, i, ts);
	}
	if (had_kernel && stopped) {
		err = stk_push(s, FR_SIGNAL, NULL, 0, stopped, ts, 0);
		if (err < 0)
			return err;
		return stk_push(s, FR_FUNC,
				s->cfg.lookup(s->cfg.lookup_ctx, to), 0, 0, ts,
				0);
	}
	return sync_ip(s, to, ts);
}

int stk_resume_fits(const struct stk *s, uint64_t ip)
{
	const struct sym_func *fn;
	int in_kernel = s->kpend;
	unsigned i;

	if (!s->started || (!s->depth && !s->kpend) || s->deep || !ip)
		return 1;
	if (s->kpend && s->kpend_resume == ip)
		return 1;
	for (i = s->depth; i-- > 0;) {
		const struct stk_frame *f = &s->fr[i];

		if (f->kind == FR_SIGNAL && f->resume == ip)
			return 1;
		if (f->kind == FR_SYSCALL || f->kind == FR_KERNEL) {
			if (f->resume == ip)
				return 1;
			in_kernel = 1;
			continue;
		}
		if (f->kind == FR_FUNC)
			break;
	}
	if (i < s->depth && s->fr[i].kind == FR_FUNC &&
	    may_hold(s->fr[i].fn, ip))
		return 1;
	if (!in_kernel)
		return 0;
	fn = s->cfg.lookup(s->cfg.lookup_ctx, ip);
	return fn && fn->start == ip;
}

static int problem(struct stk *s, const char *msg, uint64_t ip, uint64_t ts)
{
	struct ps_arg arg = {.name = "ip", .type = PS_ARG_POINTER, .v.u = ip};
	struct ps_event ev = {.type = PS_EV_INSTANT,
			      .ts = ts,
			      .name = msg,
			      .category = stk_cat_error,
			      .scope = PS_SCOPE_THREAD};
	int err;

	err = stk_close_all(s, ts);
	if (err < 0)
		return err;
	if (ip) {
		ev.args = &arg;
		ev.nargs = 1;
	}
	return stk_emit_unstable(s, &ev);
}

static int decode_error(struct stk *s, const struct br_event *ev, uint64_t ts)
{
	char msg[160];

	if (ev->err == -pte_nomap) {
		s->c.err_nomap++;
		if (ev->from)
			snprintf(msg, sizeof(msg),
				 "decode error: no memory mapped at 0x%" PRIx64,
				 ev->from);
		else
			snprintf(msg, sizeof(msg),
				 "decode error: no memory mapped");
	} else {
		s->c.err_decode++;
		snprintf(msg, sizeof(msg), "decode error: %s",
			 pt_errstr(pt_errcode(ev->err)));
		if (ev->from)
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
				 " at 0x%" PRIx64, ev->from);
	}
	return problem(s, msg, ev->from, ts);
}

/* A PTW packet (see stack.h). */
static int ptwrite(struct stk *s, const struct br_event *ev, uint64_t ts)
{
	struct stk_frame *f;
	int k = arg_feed(&s->rec, ev);

	if (k == 2 || (k == 1 && s->rec.kind == ARG_WRITE)) {
		struct ps_arg a = {
		    .name = "value", .type = PS_ARG_UINT, .v.u = s->rec.v[0]};
		struct ps_event in = {.type = PS_EV_INSTANT,
				      .ts = ts,
				      .name = "ptscope_write",
				      .category = stk_cat_error,
				      .scope = PS_SCOPE_THREAD,
				      .args = &a,
				      .nargs = 1};

		s->rec.kind = 0;
		return stk_emit(s, &in);
	}
	if (k != 1 || !s->depth || s->deep)
		return 0;
	f = &s->fr[s->depth - 1];
	if (f->kind != FR_FUNC || !f->fn)
		return 0;
	return arg_attach(&s->rec, f->fn->start, &f->vals);
}

/* A call or a return inside the innermost function (or one whose size is
 * unknown, which sync_ip cannot tell either), nothing pending,
 * the frame below max_depth, no --args values: most events of a trace.
 * What the general rules below do for it (sync_ip finds nothing to do,
 * do_call pushes, do_return pops the frame whose return address it is),
 * without testing for the cases that cannot arise.  Returns 1 when it
 * was not such an event (nothing done), else 0 or an error. */
static inline int feed_common(struct stk *s, const struct br_event *ev,
			      uint64_t ts)
{
	struct stk_frame *top;
	const struct sym_func *fn;
	struct ps_event *out;

	if (s->kpend | s->deep || !s->depth)
		return 1;
	top = &s->fr[s->depth - 1];
	/* sync_ip's test */
	if (top->kind != FR_FUNC || !may_hold(top->fn, ev->from))
		return 1;
	if (ev->kind == BR_RETURN) {
		if (!ev->to || top->ret != ev->to || top->vals)
			return 1;
		s->depth--;
		s->c.spans++;
		out = &s->end_tmpl;
		out->name = top->fn->name;
	} else {
		if (s->depth == s->cap || s->depth >= s->cfg.max_depth)
			return 1;
		fn = s->cfg.lookup(s->cfg.lookup_ctx, ev->to);
		if (!fn)
			return PS_ERR_NOMEM;
		if (s->cfg.span_info && fn->aliases)
			return stk_push(s, FR_FUNC, fn, ev->ret, 0, ts, 0);
		stk_frame_open(s, FR_FUNC, fn, ev->ret, 0);
		out = &s->begin_tmpl;
		out->name = fn->name;
		if (s->cfg.span_info)
			out->info = &fn->info;
	}
	out->ts = ts;
	return ps_write_event(s->cfg.w, out);
}

/* Every other event, by the rules of stack.h. */
static __attribute__((noinline)) int
feed_general(struct stk *s, const struct br_event *ev, uint64_t ts)
{
	int err = 0;

	if (s->kpend && ev->kind != BR_END && ev->kind != BR_PTWRITE) {
		err = kernel_begin(s);
		if (err < 0)
			return err;
	}
	switch (ev->kind) {
	case BR_CALL:
		err = sync_ip(s, ev->from, ts);
		if (!err)
			err = do_call(s, ev, ts);
		break;
	case BR_RETURN:
		err = sync_ip(s, ev->from, ts);
		if (!err)
			err = do_return(s, ev->to, ts);
		break;
	case BR_JUMP:
		err = sync_ip(s, ev->from, ts);
		if (!err)
			err = do_jump(s, ev->to, ts);
		break;
	case BR_SYSCALL:
		err = sync_ip(s, ev->from, ts);
		/* syscall, sysenter and int n are 2 bytes long */
		if (!err)
			err = stop(s, FR_SYSCALL, ev->from ? ev->from + 2 : 0,
				   ts);
		break;
	case BR_INTERRUPT:
		err = sync_ip(s, ev->from, ts);
		if (err || !ev->to) {
			if (!err)
				err = stop(s, FR_KERNEL, ev->from, ts);
			break;
		}
		err = stk_push(s, FR_SIGNAL, NULL, 0, ev->from, ts, 0);
		if (!err)
			err = stk_push(s, FR_FUNC,
				       s->cfg.lookup(s->cfg.lookup_ctx, ev->to),
				       0, 0, ts, 0);
		break;
	case BR_DISABLE:
		err = sync_ip(s, ev->from, ts);
		if (!err)
			err = stop(s, FR_KERNEL, 0, ts);
		break;
	case BR_FAR_RETURN:
	case BR_ENABLE:
		err = resume(s, ev->to, ts);
		break;
	case BR_OVERFLOW:
		s->c.err_overflow++;
		err = problem(s, "trace overflow: data lost", 0, s->last_ts);
		if (!err && ev->to)
			err = start(s, ev->to, ts);
		break;
	case BR_ERROR:
		err = decode_error(s, ev, ts);
		break;
	case BR_END:
		err = stk_close_all(s, ts);
		break;
	case BR_PTWRITE:
		err = ptwrite(s, ev, ts);
		break;
	}
	s->last_ts = ts;
	s->c.last_ts = ts;
	return err;
}

static inline int feed(struct stk *s, const struct br_event *ev)
{
	uint64_t ts = ev->ts > s->last_ts ? ev->ts : s->last_ts;
	int err;

	s->c.branches++;
	if (ev->kind != BR_CALL && ev->kind != BR_RETURN)
		return feed_general(s, ev, ts);
	err = feed_common(s, ev, ts);
	if (err > 0)
		return feed_general(s, ev, ts);
	s->last_ts = ts;
	s->c.last_ts = ts;
	return err;
}

int stk_feed(struct stk *s, const struct br_event *ev)
{
	return feed(s, ev);
}

int stk_sink(void *ctx, const struct br_event *ev)
{
	return feed(ctx, ev);
}

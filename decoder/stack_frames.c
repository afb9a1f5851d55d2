/* SPDX-License-Identifier: MIT */
/* A call-stack builder's frames (see stack_frames.h): pushing one writes
 * its span's BEGIN, popping one its END. */
#include <stdio.h>
#include <stdlib.h>

#include "decoder/args.h"
#include "decoder/stack_frames.h"
#include "ptscope/error.h"

const char stk_cat_func[] = "function";
const char stk_cat_kernel[] = "kernel";
const char stk_cat_signal[] = "signal";
const char stk_cat_error[] = "ptscope";

int stk_emit(struct stk *s, struct ps_event *ev)
{
	ev->pid = s->cfg.pid;
	ev->tid = s->cfg.tid;
	return ps_write_event(s->cfg.w, ev);
}

/* stk_emit() for an event whose strings are formatted on the stack: outside
 * the producer's stable-string promise (writer.h). */
int stk_emit_unstable(struct stk *s, struct ps_event *ev)
{
	uint64_t epoch = s->cfg.w->stable_epoch;
	int err;

	s->cfg.w->stable_epoch = 0;
	err = stk_emit(s, ev);
	s->cfg.w->stable_epoch = epoch;
	return err;
}

static const char *frame_name(const struct stk_frame *f)
{
	switch ((enum stk_kind)f->kind) {
	case FR_FUNC:
		return f->fn->name;
	case FR_SYSCALL:
		return "syscall";
	case FR_KERNEL:
		return "[kernel]";
	case FR_SIGNAL:
		return "[signal]";
	}
	return NULL;
}

static int emit_begin(struct stk *s, const struct stk_frame *f, uint64_t ts,
		      int inferred)
{
	struct ps_arg args[2];
	struct ps_event ev = {
	    .type = PS_EV_BEGIN, .ts = ts, .name = frame_name(f)};
	size_t n = 0;

	switch ((enum stk_kind)f->kind) {
	case FR_FUNC:
		ev.category = stk_cat_func;
		if (s->cfg.span_info)
			ev.info = &f->fn->info;
		/* the function's other names (glibc's _IO_puts for puts) */
		if (s->cfg.span_info && f->fn->aliases)
			args[n++] = (struct ps_arg){.name = "aliases",
						    .type = PS_ARG_STRING,
						    .v.s = f->fn->aliases};
		break;
	case FR_SYSCALL:
	case FR_KERNEL:
		ev.category = stk_cat_kernel;
		break;
	case FR_SIGNAL:
		ev.category = stk_cat_signal;
		break;
	}
	if (inferred)
		args[n++] = (struct ps_arg){
		    .name = "inferred", .type = PS_ARG_BOOL, .v.b = 1};
	ev.args = n ? args : NULL;
	ev.nargs = n;
	return stk_emit(s, &ev);
}

static int grow(struct stk *s)
{
	unsigned cap = s->cap ? s->cap * 2 : 64;
	struct stk_frame *fr;

	if (cap > s->cfg.max_depth)
		cap = s->cfg.max_depth;
	fr = realloc(s->fr, cap * sizeof(*fr));
	if (!fr)
		return PS_ERR_NOMEM;
	s->fr = fr;
	s->cap = cap;
	return 0;
}

static int deep_notice(struct stk *s, uint64_t ts)
{
	char msg[96];
	struct ps_event ev = {.type = PS_EV_INSTANT,
			      .ts = ts,
			      .category = stk_cat_error,
			      .scope = PS_SCOPE_THREAD};

	snprintf(msg, sizeof(msg),
		 "call stack deeper than %u frames: deeper calls not shown",
		 s->cfg.max_depth);
	ev.name = msg;
	return stk_emit_unstable(s, &ev);
}

/* Push a frame that begins at @ts; past max_depth it is only counted. */
int stk_push(struct stk *s, enum stk_kind kind, const struct sym_func *fn,
	     uint64_t ret, uint64_t resume, uint64_t ts, int inferred)
{
	struct stk_frame *f;
	int err;

	if (kind == FR_FUNC && !fn)
		return PS_ERR_NOMEM; /* the symbolizer ran out of memory */
	if (s->depth >= s->cfg.max_depth) {
		s->c.deep_calls++;
		err = s->deep++ ? 0 : deep_notice(s, ts);
		return err;
	}
	if (s->depth == s->cap) {
		err = grow(s);
		if (err < 0)
			return err;
	}
	f = stk_frame_open(s, kind, fn, ret, resume);
	return emit_begin(s, f, ts, inferred);
}

/* The END of a call that carries its arguments and return value. */
static int pop_vals(struct stk *s, struct stk_frame *f, struct ps_event *ev)
{
	struct ps_arg args[ARG_MAXV + 1];
	char buf[512];
	int err;

	ev->nargs = arg_show(
	    s->cfg.params ? s->cfg.params(s->cfg.lookup_ctx, f->fn) : NULL,
	    f->vals, args, ARG_MAXV + 1, buf, sizeof(buf));
	ev->args = ev->nargs ? args : NULL;
	err = stk_emit_unstable(s, ev);
	free(f->vals);
	f->vals = NULL;
	return err;
}

int stk_pop(struct stk *s, uint64_t ts)
{
	struct stk_frame *f = &s->fr[--s->depth];
	struct ps_event ev = {
	    .type = PS_EV_END, .ts = ts, .name = frame_name(f)};

	s->c.spans++;
	if (f->vals)
		return pop_vals(s, f, &ev);
	return stk_emit(s, &ev);
}

/* Close frames until @keep remain. */
int stk_pop_to(struct stk *s, unsigned keep, uint64_t ts)
{
	int err;

	while (s->depth > keep) {
		err = stk_pop(s, ts);
		if (err < 0)
			return err;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Fuchsia trace format (FXT) writer: the records.
 *
 * Each writer call becomes records built in a 64 KiB staging buffer and
 * handed to the sink in large writes: event records with their arguments
 * (span info as "module", "address", "file", "line"), kernel object records
 * naming processes and threads, metadata, and the header (magic number,
 * provider, initialization at 1 ns ticks).  The names they refer to come
 * from the string and thread tables (fxt_intern.c); span BEGINs and ENDs
 * from a producer with stable strings are copied from per-function
 * templates (fxt_memo.c).  fxt_writer.h says how the three files share the
 * writer's state.  See docs/format-fxt.md.
 */
#include <stdlib.h>
#include <string.h>

#include "ptscope/alloc.h"
#include "ptscope/error.h"
#include "src/output/fxt.h"
#include "src/output/fxt_writer.h"

/* ---- arguments ---------------------------------------------------------- */

/* The value part of a string argument (o->hdr already has its name). */
static inline int prep_string(struct fxt_writer *w, const char *s,
			      struct fxt_warg *o)
{
	uint16_t ref;
	size_t len;
	int err;

	o->hdr |= FXT_ARG_STRING;
	/* A known pointer whose whole text is in the table (not clipped,
	 * short enough to intern) needs no strlen. */
	ref = *s ? fxt_pc_find(w, s, &w->pc[fxt_pcache_index(s)]) : 0;
	if (ref && w->str[ref].len <= FXT_INTERN_VALUE_MAX) {
		fxt_str_mark(w, ref);
		o->hdr |= (uint64_t)ref << 32;
		return 0;
	}
	len = strlen(s);
	if (len <= FXT_INTERN_VALUE_MAX) {
		err = fxt_str_intern(w, s, &ref);
		if (err)
			return err;
		o->hdr |= (uint64_t)ref << 32;
	} else {
		o->inl = s;
		o->inl_len = fxt_clip_utf8(s, len, FXT_MAX_STRING_LEN);
		o->is_inline = 1;
	}
	return 0;
}

static int prep_arg(struct fxt_writer *w, const struct ps_arg *a,
		    struct fxt_warg *o)
{
	uint16_t name;
	int err;

	if (!a->name || !*a->name)
		return ps_err_detail(
		    PS_ERR_INVAL, "an event argument has no name; give every "
				  "argument a non-empty name");
	err = fxt_str_intern(w, a->name, &name);
	if (err)
		return err;
	o->hdr = (uint64_t)name << 16;
	o->has_val = 0;
	o->is_inline = 0;
	switch (a->type) {
	case PS_ARG_NULL:
		o->hdr |= FXT_ARG_NULL;
		return 0;
	case PS_ARG_BOOL:
		o->hdr |= FXT_ARG_BOOL | (uint64_t)(a->v.b != 0) << 32;
		return 0;
	case PS_ARG_INT:
		if (a->v.i >= INT32_MIN && a->v.i <= INT32_MAX) {
			o->hdr |= FXT_ARG_INT32 |
				  (uint64_t)(uint32_t)(int32_t)a->v.i << 32;
		} else {
			o->hdr |= FXT_ARG_INT64;
			o->val = (uint64_t)a->v.i;
			o->has_val = 1;
		}
		return 0;
	case PS_ARG_UINT:
		if (a->v.u <= UINT32_MAX) {
			o->hdr |= FXT_ARG_UINT32 | a->v.u << 32;
		} else {
			o->hdr |= FXT_ARG_UINT64;
			o->val = a->v.u;
			o->has_val = 1;
		}
		return 0;
	case PS_ARG_DOUBLE:
		o->hdr |= FXT_ARG_DOUBLE;
		memcpy(&o->val, &a->v.d, 8);
		o->has_val = 1;
		return 0;
	case PS_ARG_POINTER:
		o->hdr |= FXT_ARG_POINTER;
		o->val = a->v.u;
		o->has_val = 1;
		return 0;
	case PS_ARG_STRING:
		return prep_string(w, a->v.s ? a->v.s : "", o);
	}
	return ps_err_detail(PS_ERR_INVAL,
			     "argument \"%s\" has unknown type %d; use one of "
			     "enum ps_arg_type",
			     a->name, (int)a->type);
}

/* A span's code location as args "module", "address", "file", "line"
 * (those present), into @wa; returns how many or a negative error.  The
 * same records prep_arg() would make, without going through ps_args. */
static int prep_info(struct fxt_writer *w, const struct ps_span_info *in,
		     struct fxt_warg *wa)
{
	static const char n_module[] = "module", n_address[] = "address",
			  n_file[] = "file", n_line[] = "line";
	uint16_t name;
	int n = 0, err;

	if (in->module && *in->module) {
		err = fxt_str_intern(w, n_module, &name);
		if (!err) {
			wa[n] = (struct fxt_warg){.hdr = (uint64_t)name << 16};
			err = prep_string(w, in->module, &wa[n++]);
		}
		if (err)
			return err;
	}
	if (in->address) {
		err = fxt_str_intern(w, n_address, &name);
		if (err)
			return err;
		wa[n++] = (struct fxt_warg){.hdr = (uint64_t)name << 16 |
						   FXT_ARG_POINTER,
					    .val = in->address,
					    .has_val = 1};
	}
	if (in->file && *in->file) {
		err = fxt_str_intern(w, n_file, &name);
		if (!err) {
			wa[n] = (struct fxt_warg){.hdr = (uint64_t)name << 16};
			err = prep_string(w, in->file, &wa[n++]);
		}
		if (err)
			return err;
	}
	if (in->line) {
		err = fxt_str_intern(w, n_line, &name);
		if (err)
			return err;
		wa[n++] = (struct fxt_warg){.hdr = (uint64_t)name << 16 |
						   FXT_ARG_UINT32 |
						   (uint64_t)in->line << 32};
	}
	return n;
}

/* ---- records ------------------------------------------------------------ */

/* Write one event record.  @nwa prepared args; @extra is the event-type
 * specific word (when @has_extra). */
static int emit_event(struct fxt_writer *w, unsigned int etype, uint8_t thr,
		      uint16_t cat, uint16_t name, uint64_t ts,
		      struct fxt_warg *wa, size_t nwa, int has_extra,
		      uint64_t extra)
{
	size_t words = 2 + (has_extra ? 1 : 0), budget, i;
	uint8_t *p;
	int err = 0;

	for (i = 0; i < nwa; i++)
		words += 1 + wa[i].has_val;
	/* Inline strings share what is left of the record's maximum size;
	 * one that does not fit is clipped (at a UTF-8 boundary). */
	budget = FXT_MAX_RECORD_WORDS - words;
	for (i = 0; i < nwa; i++) {
		size_t need;

		if (!wa[i].is_inline)
			continue;
		need = fxt_pad8(wa[i].inl_len) / 8;
		if (need > budget) {
			wa[i].inl_len =
			    fxt_clip_utf8(wa[i].inl, wa[i].inl_len, budget * 8);
			need = fxt_pad8(wa[i].inl_len) / 8;
		}
		budget -= need;
		words += need;
		if (wa[i].inl_len)
			wa[i].hdr |= (uint64_t)(FXT_STR_INLINE | wa[i].inl_len)
				     << 32;
	}

	p = fxt_buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = fxt_put_word(p, FXT_REC_EVENT | (uint64_t)words << 4 |
				(uint64_t)etype << 16 | (uint64_t)nwa << 20 |
				(uint64_t)thr << 24 | (uint64_t)cat << 32 |
				(uint64_t)name << 48);
	p = fxt_put_word(p, ts);
	for (i = 0; i < nwa; i++) {
		size_t aw = 1 + wa[i].has_val;

		if (wa[i].is_inline)
			aw += fxt_pad8(wa[i].inl_len) / 8;
		p = fxt_put_word(p, wa[i].hdr | (uint64_t)aw << 4);
		if (wa[i].is_inline)
			p = fxt_put_stream(p, wa[i].inl, wa[i].inl_len);
		if (wa[i].has_val)
			p = fxt_put_word(p, wa[i].val);
	}
	if (has_extra)
		fxt_put_word(p, extra);
	return 0;
}

/* A span from a producer with stable strings (the decoder): one a
 * template (fxt_memo.c) may write. */
static int memo_kind(const struct fxt_writer *w, const struct ps_event *ev)
{
	return w->base.stable_epoch && !ev->nargs && ev->name &&
	       (ev->type == PS_EV_BEGIN || ev->type == PS_EV_END);
}

/* Any event; @tried: fxt_memo_span was tried for it and said no. */
static __attribute__((noinline)) int
event_general(struct fxt_writer *w, const struct ps_event *ev, int tried)
{
	struct fxt_warg wa[FXT_MAX_ARGS];
	const struct ps_span_info *info = NULL;
	size_t ninfo = 0, nwa = 0, first = 0;
	uint16_t cat, name;
	unsigned int etype;
	uint64_t extra = 0;
	int has_extra = 0, err, memo, async = 0;
	struct ps_event own;
	uint8_t thr;

	if (!ev)
		return ps_err_detail(PS_ERR_INVAL, "fxt: NULL event");
	if (ps_tid_aux(ev->tid)) {
		/* A track of a thread (event.h): off-CPU spans go on the
		 * thread itself (they nest in its blocking call), block I/O
		 * spans become async spans (a track of the process). */
		own = *ev;
		own.tid &= ~(uint64_t)PS_TID_AUX;
		async = ps_tid_aux(ev->tid) == PS_TID_BLOCK &&
			ev->type == PS_EV_COMPLETE;
		ev = &own;
	}
	memo = memo_kind(w, ev);
	if (memo && !tried) {
		err = fxt_memo_span(w, ev);
		if (err)
			return err < 0 ? err : 0;
	}
	if (memo)
		memo = ev->type == PS_EV_BEGIN;
	if (ev->nargs && !ev->args)
		return ps_err_detail(PS_ERR_INVAL,
				     "event \"%s\" says it has %zu args but "
				     "gives no array",
				     ev->name ? ev->name : "", ev->nargs);
	switch (ev->type) {
	case PS_EV_BEGIN:
		etype = FXT_EV_DURATION_BEGIN;
		break;
	case PS_EV_END:
		etype = FXT_EV_DURATION_END;
		break;
	case PS_EV_COMPLETE:
		etype = async ? FXT_EV_ASYNC_BEGIN : FXT_EV_DURATION_COMPLETE;
		has_extra = 1;
		extra = async ? ++w->async_id : ev->ts + ev->dur;
		break;
	case PS_EV_INSTANT:
		etype = FXT_EV_INSTANT;
		if ((unsigned int)ev->scope > PS_SCOPE_GLOBAL)
			return ps_err_detail(PS_ERR_INVAL,
					     "instant \"%s\" has unknown scope "
					     "%d",
					     ev->name ? ev->name : "",
					     (int)ev->scope);
		/* Our extension: a trailing scope word, only when not
		 * thread-scoped (readers skip it by the record size). */
		if (ev->scope != PS_SCOPE_THREAD) {
			has_extra = 1;
			extra = (uint64_t)ev->scope;
		}
		break;
	case PS_EV_COUNTER:
		etype = FXT_EV_COUNTER;
		has_extra = 1;
		extra = ev->flow_id; /* the counter id, see fxt_format.h */
		break;
	case PS_EV_FLOW_BEGIN:
	case PS_EV_FLOW_STEP:
	case PS_EV_FLOW_END:
		etype = FXT_EV_FLOW_BEGIN + (ev->type - PS_EV_FLOW_BEGIN);
		has_extra = 1;
		extra = ev->flow_id;
		break;
	default:
		return ps_err_detail(PS_ERR_INVAL,
				     "event \"%s\" has unknown type %d",
				     ev->name ? ev->name : "", (int)ev->type);
	}

	if ((ev->type == PS_EV_BEGIN || ev->type == PS_EV_COMPLETE) &&
	    ev->info) {
		info = ev->info;
		ninfo = (info->module && *info->module) + !!info->address +
			(info->file && *info->file) + !!info->line;
	}
	if (ev->nargs + ninfo > FXT_MAX_ARGS && ev->type != PS_EV_COUNTER)
		return ps_err_detail(PS_ERR_LIMIT,
				     "event \"%s\" has %zu arguments; the "
				     "Fuchsia format allows at most %d",
				     ev->name ? ev->name : "",
				     ev->nargs + ninfo, FXT_MAX_ARGS);

	fxt_next_seq(w);
	err = fxt_thr_ref(w, ev->pid, ev->tid, &thr);
	if (!err)
		err = fxt_str_intern(w, ev->category, &cat);
	if (!err)
		err = fxt_str_intern(w, ev->name, &name);
	if (err)
		return err;

	/* A counter with more series than one record holds is split into
	 * several records with the same name, id and time. */
	do {
		size_t n = ev->nargs - first;

		if (n > FXT_MAX_ARGS)
			n = FXT_MAX_ARGS;
		for (nwa = 0; nwa < n; nwa++) {
			err = prep_arg(w, &ev->args[first + nwa], &wa[nwa]);
			if (err)
				return err;
		}
		if (ninfo) {
			err = prep_info(w, info, &wa[nwa]);
			if (err < 0)
				return err;
			nwa += (size_t)err;
		}
		if (memo)
			fxt_memo_keep(w, ev, cat, name, wa, nwa);
		/* An async span's args go on its end, where the reader
		 * pairs it with its begin (Perfetto takes either). */
		err = emit_event(w, etype, thr, cat, name, ev->ts, wa,
				 async ? 0 : nwa, has_extra, extra);
		if (!err && async)
			err = emit_event(w, FXT_EV_ASYNC_END, thr, cat, name,
					 ev->ts + ev->dur, wa, nwa, 1, extra);
		if (err)
			return err;
		first += n;
		if (first >= ev->nargs)
			break;
		/* Only the name and category are shared with the next
		 * part: the parts' args need not fit the table at once. */
		fxt_next_seq(w);
		fxt_str_mark(w, cat);
		fxt_str_mark(w, name);
	} while (1);
	return 0;
}

/* A kernel object record, with one koid argument @arg = @val when @arg
 * is not NULL (a thread's "process"). */
static int emit_kernel_object(struct fxt_writer *w, unsigned int obj_type,
			      uint64_t koid, const char *name, const char *arg,
			      uint64_t val)
{
	uint16_t nref, pref = 0;
	size_t words = arg ? 5 : 2;
	uint8_t *p;
	int err;

	fxt_next_seq(w);
	err = fxt_str_intern(w, name, &nref);
	if (!err && arg)
		err = fxt_str_intern(w, arg, &pref);
	if (err)
		return err;
	p = fxt_buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = fxt_put_word(p, FXT_REC_KERNEL_OBJECT | (uint64_t)words << 4 |
				(uint64_t)obj_type << 16 |
				(uint64_t)nref << 24 |
				(uint64_t)(arg ? 1 : 0) << 40);
	p = fxt_put_word(p, koid);
	if (arg) {
		p = fxt_put_word(p, FXT_ARG_KOID | 2ull << 4 |
					(uint64_t)pref << 16);
		fxt_put_word(p, val);
	}
	return 0;
}

static int fxt_process(struct ps_writer *pw, uint64_t pid, const char *name)
{
	return emit_kernel_object(to_fxt(pw), FXT_OBJ_PROCESS, pid, name, NULL,
				  0);
}

static int fxt_thread(struct ps_writer *pw, uint64_t pid, uint64_t tid,
		      const char *name)
{
	if (ps_tid_aux(tid))
		return 0; /* a track of a thread, not a thread (event.h) */
	return emit_kernel_object(to_fxt(pw), FXT_OBJ_THREAD, tid, name,
				  "process", pid);
}

/* A parent as a kernel object that importers skip (fxt_format.h). */
static int fxt_parent(struct ps_writer *pw, uint64_t pid, uint64_t ppid)
{
	return emit_kernel_object(to_fxt(pw), FXT_OBJ_NONE, pid,
				  FXT_PARENT_NAME, FXT_PARENT_ARG, ppid);
}

/* Metadata as a kernel object record that importers skip (fxt_format.h). */
static int fxt_meta(struct ps_writer *pw, const char *key, const char *value)
{
	struct fxt_writer *w = to_fxt(pw);
	struct ps_arg arg = {
	    .name = key, .type = PS_ARG_STRING, .v.s = value ? value : ""};
	struct fxt_warg wa;
	size_t words, aw;
	uint16_t nref;
	uint8_t *p;
	int err;

	if (!key || !*key)
		return ps_err_detail(PS_ERR_INVAL,
				     "metadata needs a non-empty key");
	fxt_next_seq(w);
	err = fxt_str_intern(w, FXT_META_NAME, &nref);
	if (!err)
		err = prep_arg(w, &arg, &wa);
	if (err)
		return err;
	aw = 1;
	if (wa.is_inline) {
		/* header, koid and argument header come first */
		wa.inl_len = fxt_clip_utf8(wa.inl, wa.inl_len,
					   (FXT_MAX_RECORD_WORDS - 3) * 8);
		aw += fxt_pad8(wa.inl_len) / 8;
		if (wa.inl_len)
			wa.hdr |= (uint64_t)(FXT_STR_INLINE | wa.inl_len) << 32;
	}
	words = 2 + aw;
	p = fxt_buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = fxt_put_word(p, FXT_REC_KERNEL_OBJECT | (uint64_t)words << 4 |
				(uint64_t)FXT_OBJ_NONE << 16 |
				(uint64_t)nref << 24 | 1ull << 40);
	p = fxt_put_word(p, 0);
	p = fxt_put_word(p, wa.hdr | (uint64_t)aw << 4);
	if (wa.is_inline)
		fxt_put_stream(p, wa.inl, wa.inl_len);
	return 0;
}

static int fxt_flush(struct ps_writer *pw)
{
	return fxt_buf_drain(to_fxt(pw));
}

static void fxt_destroy(struct ps_writer *pw)
{
	struct fxt_writer *w = to_fxt(pw);

	if (!w)
		return;
	if (w->str)
		for (uint32_t i = 1; i <= w->str_used; i++)
			free(w->str[i].s);
	free(w->str);
	free(w->str_hash);
	free(w->pc);
	free(w->memo);
	free(w->buf);
	free(w);
}

/* The decoder's spans come here by the million: their common case, a
 * span from a template (fxt_memo.c), takes the short way. */
static int fxt_event(struct ps_writer *pw, const struct ps_event *ev)
{
	struct fxt_writer *w = to_fxt(pw);
	int r;

	if (ev && !ps_tid_aux(ev->tid) && memo_kind(w, ev)) {
		r = fxt_memo_span(w, ev);
		if (r)
			return r < 0 ? r : 0;
		return event_general(w, ev, 1);
	}
	return event_general(w, ev, 0);
}

static const struct ps_writer_ops fxt_ops = {
    .name = "fxt",
    .process = fxt_process,
    .thread = fxt_thread,
    .parent = fxt_parent,
    .meta = fxt_meta,
    .event = fxt_event,
    .flush = fxt_flush,
    .destroy = fxt_destroy,
};

/* Magic number, provider info ("ptscope", id 1), provider section,
 * initialization (1 tick = 1 ns). */
static int emit_header(struct fxt_writer *w)
{
	static const char provider[] = FXT_PROVIDER_NAME;
	size_t nlen = sizeof(provider) - 1;
	size_t words = 1 + 1 + fxt_pad8(nlen) / 8 + 1 + 2;
	uint8_t *p;
	int err = 0;

	p = fxt_buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = fxt_put_word(p, FXT_MAGIC_WORD);
	p = fxt_put_word(
	    p, FXT_REC_METADATA | (uint64_t)(1 + fxt_pad8(nlen) / 8) << 4 |
		   (uint64_t)FXT_META_PROVIDER_INFO << 16 |
		   (uint64_t)FXT_PROVIDER_ID << 20 | (uint64_t)nlen << 52);
	p = fxt_put_stream(p, provider, nlen);
	p = fxt_put_word(p, FXT_REC_METADATA | 1ull << 4 |
				(uint64_t)FXT_META_PROVIDER_SECTION << 16 |
				(uint64_t)FXT_PROVIDER_ID << 20);
	p = fxt_put_word(p, FXT_REC_INITIALIZATION | 2ull << 4);
	fxt_put_word(p, FXT_TICKS_PER_SECOND);
	return 0;
}

int fxt_writer_new(struct ps_sink *sink, struct ps_writer **out)
{
	struct fxt_writer *w;
	int err;

	if (!sink || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "fxt_writer_new needs a sink and an out "
				     "pointer");
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for the FXT writer");
	w->base.ops = &fxt_ops;
	w->base.sink = sink;
	w->str_hand = 1;
	w->thr_hand = 1;
	w->seq = 1;
	w->buf = calloc(1, FXT_BUF_SIZE + FXT_BUF_SLACK);
	w->str = ps_zalloc(FXT_STR_SLOTS, sizeof(*w->str));
	w->str_hash = ps_zalloc(FXT_STR_HASH_SIZE, sizeof(*w->str_hash));
	w->pc = ps_zalloc(FXT_PCACHE_SIZE, sizeof(*w->pc));
	w->memo = ps_zalloc(FXT_MEMO_SIZE, sizeof(*w->memo));
	if (!w->buf || !w->str || !w->str_hash || !w->pc || !w->memo) {
		fxt_destroy(&w->base);
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for the FXT string table");
	}
	err = emit_header(w);
	if (err) {
		fxt_destroy(&w->base);
		return err;
	}
	*out = &w->base;
	return 0;
}

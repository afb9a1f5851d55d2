/* SPDX-License-Identifier: MIT */
/* ptscope's normalised text form (see text.h and docs/convert.md): the
 * writer's ops.  The event form streams one line per call, here; the
 * slices form keeps every item and prints them sorted when flushed
 * (text_slices.c).  Both spell values as text_format.c does.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "ptscope/error.h"
#include "src/output/text.h"
#include "src/output/text_writer.h"

/* ---- event form ---------------------------------------------------- */

static int flat_event(struct text_writer *tw, const struct ps_event *ev)
{
	struct tx_buf *b = &tw->line;
	struct tx_args args = {0};
	int err;

	tb_fmt(b, "%s ts=%" PRIu64 " pid=%" PRIu64 " tid=%" PRIu64,
	       tx_kind_name[ev->type], ev->ts, ev->pid, ev->tid);
	if (ev->type == PS_EV_COMPLETE)
		tb_fmt(b, " dur=%" PRIu64, ev->dur);
	if (ev->type == PS_EV_INSTANT)
		tb_fmt(b, " scope=%s", tx_scope_name(ev->scope));
	if (ev->type >= PS_EV_FLOW_BEGIN)
		tb_fmt(b, " id=%" PRIu64, ev->flow_id);
	tb_label(b, ev->name, ev->category);
	err = tx_args_from_event(&args, ev);
	if (!err)
		tx_args_print(b, &args);
	tx_args_free(&args);
	if (err) {
		b->len = 0;
		return err;
	}
	return tx_emit_line(tw, b);
}

/* ---- writer ops ---------------------------------------------------- */

static int text_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct text_writer *tw = to_text(w);

	if (tw->slices)
		return tx_slices_name(tw, 0, pid, 0, name);
	tb_fmt(&tw->line, "process pid=%" PRIu64 " ", pid);
	tb_quoted(&tw->line, name ? name : "");
	return tx_emit_line(tw, &tw->line);
}

static int text_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct text_writer *tw = to_text(w);

	if (tw->slices)
		return tx_slices_name(tw, 2, pid, ppid, "");
	tb_fmt(&tw->line, "parent pid=%" PRIu64 " ppid=%" PRIu64, pid, ppid);
	return tx_emit_line(tw, &tw->line);
}

static int text_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		       const char *name)
{
	struct text_writer *tw = to_text(w);

	if (tw->slices)
		return tx_slices_name(tw, 1, pid, tid, name);
	tb_fmt(&tw->line, "thread pid=%" PRIu64 " tid=%" PRIu64 " ", pid, tid);
	tb_quoted(&tw->line, name ? name : "");
	return tx_emit_line(tw, &tw->line);
}

static int text_meta(struct ps_writer *w, const char *key, const char *value)
{
	struct text_writer *tw = to_text(w);

	if (!key)
		return ps_err_detail(PS_ERR_INVAL, "metadata key is NULL");
	if (!value)
		value = "";
	if (tw->slices)
		return tx_slices_meta(tw, key, value);
	tb_str(&tw->line, "meta ");
	tb_quoted(&tw->line, key);
	tb_mem(&tw->line, " ", 1);
	tb_quoted(&tw->line, value);
	return tx_emit_line(tw, &tw->line);
}

static int text_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct text_writer *tw = to_text(w);

	if (!ev || (unsigned)ev->type > PS_EV_FLOW_END)
		return ps_err_detail(PS_ERR_INVAL,
				     "text writer got an unknown event type");
	return tw->slices ? tx_slices_event(tw, ev) : flat_event(tw, ev);
}

static int text_flush(struct ps_writer *w)
{
	struct text_writer *tw = to_text(w);

	return tw->slices ? tx_slices_flush(tw) : 0;
}

static void text_destroy(struct ps_writer *w)
{
	struct text_writer *tw = to_text(w);

	if (!tw)
		return;
	tx_slices_free(tw);
	free(tw->line.p);
	free(tw);
}

static const struct ps_writer_ops text_ops = {
    .name = "text",
    .process = text_process,
    .parent = text_parent,
    .thread = text_thread,
    .meta = text_meta,
    .event = text_event,
    .flush = text_flush,
    .destroy = text_destroy,
};

int text_writer_new(struct ps_sink *sink, const struct text_options *opt,
		    struct ps_writer **out)
{
	struct text_writer *tw;

	if (!sink || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "text_writer_new needs a sink and out");
	tw = calloc(1, sizeof(*tw));
	if (!tw)
		return PS_ERR_NOMEM;
	tw->base.ops = &text_ops;
	tw->base.sink = sink;
	tw->slices = opt ? opt->slices : 0;
	*out = &tw->base;
	return 0;
}

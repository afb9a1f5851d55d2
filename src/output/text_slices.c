/* SPDX-License-Identifier: MIT */
/* The slices form of ptscope's text (see text.h): BEGIN/END pairs are
 * matched per thread as Perfetto's slice tracker matches them, and every
 * slice, instant, counter and flow is kept until flush, then printed
 * sorted by (pid, tid, ts, depth) with its nesting depth and duration;
 * names of processes and threads and the metadata come first, sorted.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json.h"
#include "src/output/text_writer.h"

/* ---- slices ------------------------------------------------------------- */

static struct tx_thread *thread_of(struct text_writer *tw, uint64_t pid,
				   uint64_t tid)
{
	struct tx_thread *t;

	if (tw->last_thread < tw->nthreads) {
		t = &tw->threads[tw->last_thread];
		if (t->pid == pid && t->tid == tid)
			return t;
	}
	for (size_t i = 0; i < tw->nthreads; i++) {
		t = &tw->threads[i];
		if (t->pid == pid && t->tid == tid) {
			tw->last_thread = i;
			return t;
		}
	}
	if (json_grow((void **)&tw->threads, &tw->threads_cap, tw->nthreads + 1,
		      sizeof(*t)))
		return NULL;
	t = &tw->threads[tw->nthreads];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	tw->last_thread = tw->nthreads++;
	return t;
}

static struct tx_item *new_item(struct text_writer *tw, const char *kind,
				int rank, const struct ps_event *ev)
{
	struct tx_item *it;

	if (json_grow((void **)&tw->items, &tw->items_cap, tw->nitems + 1,
		      sizeof(*it)))
		return NULL;
	it = &tw->items[tw->nitems++];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->rank = rank;
	it->pid = ev->pid;
	it->tid = ev->tid;
	it->ts = ev->ts;
	it->end = ev->ts;
	it->who = WHO_BOTH;
	it->seq = tw->seq++;
	return it;
}

/* The text of a finished slice: duration, name, category, args. */
static int finish_slice(struct tx_item *it, const char *name, const char *cat,
			struct tx_args *args)
{
	struct tx_buf b = {0};

	if (it->end == UINT64_MAX)
		tb_str(&b, " dur=unfinished");
	else
		tb_fmt(&b, " dur=%" PRIu64, it->end - it->ts);
	tb_label(&b, name, cat);
	tx_args_print(&b, args);
	if (b.failed) {
		free(b.p);
		return PS_ERR_NOMEM;
	}
	it->text = b.p ? b.p : strdup("");
	return it->text ? 0 : PS_ERR_NOMEM;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

static int slice_begin(struct text_writer *tw, const struct ps_event *ev)
{
	struct tx_thread *t = thread_of(tw, ev->pid, ev->tid);
	struct tx_open *o;
	struct tx_item *it;

	if (!t ||
	    json_grow((void **)&t->open, &t->cap, t->nopen + 1, sizeof(*o)))
		return PS_ERR_NOMEM;
	it = new_item(tw, "slice", 0, ev);
	if (!it)
		return PS_ERR_NOMEM;
	it->end = UINT64_MAX;
	it->paired = 1;
	o = &t->open[t->nopen++];
	memset(o, 0, sizeof(*o));
	o->item = tw->nitems - 1;
	o->name = dup_or_null(ev->name);
	o->cat = dup_or_null(ev->category);
	return tx_args_from_event(&o->args, ev);
}

static void open_free(struct tx_open *o)
{
	free(o->name);
	free(o->cat);
	tx_args_free(&o->args);
}

static int nonempty(const char *s)
{
	return s && *s;
}

static int end_matches(const struct tx_open *o, const struct ps_event *ev)
{
	if (nonempty(ev->category) &&
	    (!nonempty(o->cat) || strcmp(ev->category, o->cat)))
		return 0;
	return !nonempty(ev->name) || !nonempty(o->name) ||
	       !strcmp(ev->name, o->name);
}

static int slice_end(struct text_writer *tw, const struct ps_event *ev)
{
	struct tx_thread *t = thread_of(tw, ev->pid, ev->tid);
	struct tx_open *o;
	struct tx_item *it;
	size_t k;
	int err;

	if (!t)
		return PS_ERR_NOMEM;
	/* As Perfetto's slice tracker: the topmost open slice of the end's
	 * category (when it has one) and name (when both have one). */
	k = t->nopen;
	while (k > 0 && !end_matches(&t->open[k - 1], ev))
		k--;
	if (!k) {
		it = new_item(tw, "unmatched-end", 4, ev);
		if (!it)
			return PS_ERR_NOMEM;
		it->text = strdup("");
		return it->text ? 0 : PS_ERR_NOMEM;
	}
	o = &t->open[k - 1];
	it = &tw->items[o->item];
	/* An END before its BEGIN (clock skew) closes it with no length. */
	it->end = ev->ts < it->ts ? it->ts : ev->ts;
	err = tx_args_from_event(&o->args, ev);
	if (!err)
		err = finish_slice(it, o->name, o->cat, &o->args);
	open_free(o);
	memmove(o, o + 1, (t->nopen - k) * sizeof(*o));
	t->nopen--;
	return err;
}

int tx_slices_event(struct text_writer *tw, const struct ps_event *ev)
{
	struct tx_args args = {0};
	struct tx_buf b = {0};
	struct tx_item *it;
	int err, rank = 1;

	switch (ev->type) {
	case PS_EV_BEGIN:
		return slice_begin(tw, ev);
	case PS_EV_END:
		return slice_end(tw, ev);
	case PS_EV_COMPLETE:
		it = new_item(tw, "slice", 0, ev);
		if (!it)
			return PS_ERR_NOMEM;
		it->end = ev->dur > UINT64_MAX - 1 - ev->ts ? UINT64_MAX - 1
							    : ev->ts + ev->dur;
		err = tx_args_from_event(&args, ev);
		if (!err)
			err = finish_slice(it, ev->name, ev->category, &args);
		tx_args_free(&args);
		return err;
	case PS_EV_INSTANT:
		break;
	case PS_EV_COUNTER:
		rank = 2;
		break;
	default:
		rank = 3;
		break;
	}
	it = new_item(tw, tx_kind_name[ev->type], rank, ev);
	if (!it)
		return PS_ERR_NOMEM;
	/* Only what the event means is shown: a counter belongs to its
	 * process, a global instant to no thread at all. */
	if (ev->type == PS_EV_COUNTER ||
	    (ev->type == PS_EV_INSTANT && ev->scope == PS_SCOPE_PROCESS)) {
		it->who = WHO_PID;
		it->tid = 0;
	} else if (ev->type == PS_EV_INSTANT && ev->scope == PS_SCOPE_GLOBAL) {
		it->who = WHO_NONE;
		it->pid = it->tid = 0;
	}
	if (ev->type == PS_EV_INSTANT)
		tb_fmt(&b, " scope=%s", tx_scope_name(ev->scope));
	if (ev->type >= PS_EV_FLOW_BEGIN)
		tb_fmt(&b, " id=%" PRIu64, ev->flow_id);
	/* A counter is a named series: viewers show no category for it,
	 * and Perfetto's counter tracks keep none. */
	tb_label(&b, ev->name, ev->type == PS_EV_COUNTER ? NULL : ev->category);
	err = tx_args_from_event(&args, ev);
	if (!err)
		tx_args_print(&b, &args);
	tx_args_free(&args);
	if (!err && b.failed)
		err = PS_ERR_NOMEM;
	if (!err && !b.p && !(b.p = strdup("")))
		err = PS_ERR_NOMEM;
	if (err) {
		free(b.p);
		return err;
	}
	it->text = b.p;
	return 0;
}

/* Depth of each slice on one thread: how many slices enclose it. */
static int cmp_nesting(const void *pa, const void *pb)
{
	const struct tx_item *a = *(struct tx_item *const *)pa;
	const struct tx_item *b = *(struct tx_item *const *)pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	/* Two BEGINs at one time nest in the order they came, as Perfetto
	 * reads them (a zero-length slice then a longer one are siblings);
	 * complete slices at one time nest longer first, as Perfetto sorts
	 * JSON X events. */
	if (!(a->paired && b->paired) && a->end != b->end)
		return a->end > b->end ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_items(const void *pa, const void *pb)
{
	const struct tx_item *a = pa, *b = pb;
	int c;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank - b->rank;
	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	c = strcmp(a->text, b->text);
	if (c)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_pid_tid(const void *pa, const void *pb)
{
	const struct tx_item *a = *(struct tx_item *const *)pa;
	const struct tx_item *b = *(struct tx_item *const *)pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return cmp_nesting(pa, pb);
}

static int compute_depths(struct text_writer *tw)
{
	struct tx_item **v, **stack;
	size_t n = 0, i, sp = 0;

	v = malloc((tw->nitems + 1) * sizeof(*v));
	stack = malloc((tw->nitems + 1) * sizeof(*stack));
	if (!v || !stack) {
		free(v);
		free(stack);
		return PS_ERR_NOMEM;
	}
	for (i = 0; i < tw->nitems; i++)
		if (tw->items[i].rank == 0)
			v[n++] = &tw->items[i];
	tx_sort(v, n, sizeof(*v), cmp_pid_tid);
	for (i = 0; i < n; i++) {
		if (i &&
		    (v[i]->pid != v[i - 1]->pid || v[i]->tid != v[i - 1]->tid))
			sp = 0;
		/* Slices that end where this one starts do not enclose it
		 * (nor does a zero-length one). */
		while (sp && stack[sp - 1]->end <= v[i]->ts)
			sp--;
		v[i]->depth = (uint32_t)sp;
		stack[sp++] = v[i];
	}
	free(v);
	free(stack);
	return 0;
}

static int cmp_names(const void *pa, const void *pb)
{
	const struct tx_name *a = pa, *b = pb;

	if (a->is_thread != b->is_thread)
		return a->is_thread - b->is_thread;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return 0;
}

static int cmp_meta(const void *pa, const void *pb)
{
	const struct tx_meta *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int tx_slices_flush(struct text_writer *tw)
{
	struct tx_buf *b = &tw->line;
	size_t i;
	int err;

	/* Slices still open at the end keep an unknown length. */
	for (i = 0; i < tw->nthreads; i++) {
		struct tx_thread *t = &tw->threads[i];

		while (t->nopen) {
			struct tx_open *o = &t->open[--t->nopen];

			err = finish_slice(&tw->items[o->item], o->name, o->cat,
					   &o->args);
			open_free(o);
			if (err)
				return err;
		}
	}
	tx_sort(tw->meta, tw->nmeta, sizeof(*tw->meta), cmp_meta);
	for (i = 0; i < tw->nmeta; i++) {
		if (i + 1 < tw->nmeta &&
		    !strcmp(tw->meta[i].key, tw->meta[i + 1].key))
			continue; /* the last value set wins */
		tb_str(b, "meta ");
		tb_quoted(b, tw->meta[i].key);
		tb_mem(b, " ", 1);
		tb_quoted(b, tw->meta[i].value);
		if ((err = tx_emit_line(tw, b)))
			return err;
	}
	tx_sort(tw->names, tw->nnames, sizeof(*tw->names), cmp_names);
	for (i = 0; i < tw->nnames; i++) {
		struct tx_name *nm = &tw->names[i];

		if (nm->is_thread == 2) {
			tb_fmt(b, "parent pid=%" PRIu64 " ppid=%" PRIu64,
			       nm->pid, nm->tid);
			if ((err = tx_emit_line(tw, b)))
				return err;
			continue;
		}
		if (nm->is_thread)
			tb_fmt(b, "thread pid=%" PRIu64 " tid=%" PRIu64 " ",
			       nm->pid, nm->tid);
		else
			tb_fmt(b, "process pid=%" PRIu64 " ", nm->pid);
		tb_quoted(b, nm->name);
		if ((err = tx_emit_line(tw, b)))
			return err;
	}
	if ((err = compute_depths(tw)))
		return err;
	tx_sort(tw->items, tw->nitems, sizeof(*tw->items), cmp_items);
	for (i = 0; i < tw->nitems; i++) {
		struct tx_item *it = &tw->items[i];

		tb_str(b, it->kind);
		if (it->who != WHO_NONE)
			tb_fmt(b, " pid=%" PRIu64, it->pid);
		if (it->who == WHO_BOTH)
			tb_fmt(b, " tid=%" PRIu64, it->tid);
		tb_fmt(b, " ts=%" PRIu64, it->ts);
		if (it->rank == 0)
			tb_fmt(b, " depth=%" PRIu32, it->depth);
		tb_str(b, it->text);
		if ((err = tx_emit_line(tw, b)))
			return err;
	}
	return 0;
}

/* ---- names and metadata --------------------------------------------- */

int tx_slices_name(struct text_writer *tw, int is_thread, uint64_t pid,
		   uint64_t tid, const char *name)
{
	struct tx_name *nm = NULL;
	char *copy = strdup(name ? name : "");

	if (!copy)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < tw->nnames; i++)
		if (tw->names[i].is_thread == is_thread &&
		    tw->names[i].pid == pid &&
		    (tw->names[i].tid == tid || is_thread == 2))
			nm = &tw->names[i];
	if (!nm) {
		if (json_grow((void **)&tw->names, &tw->names_cap,
			      tw->nnames + 1, sizeof(*nm))) {
			free(copy);
			return PS_ERR_NOMEM;
		}
		nm = &tw->names[tw->nnames++];
		nm->is_thread = is_thread;
		nm->pid = pid;
	} else {
		free(nm->name);
	}
	nm->tid = tid;
	nm->name = copy;
	return 0;
}

int tx_slices_meta(struct text_writer *tw, const char *key, const char *value)
{
	struct tx_meta *m;

	if (json_grow((void **)&tw->meta, &tw->meta_cap, tw->nmeta + 1,
		      sizeof(*m)))
		return PS_ERR_NOMEM;
	m = &tw->meta[tw->nmeta];
	m->key = strdup(key);
	m->value = strdup(value);
	m->seq = tw->seq++;
	if (!m->key || !m->value) {
		free(m->key);
		free(m->value);
		return PS_ERR_NOMEM;
	}
	tw->nmeta++;
	return 0;
}

void tx_slices_free(struct text_writer *tw)
{
	size_t i;

	for (i = 0; i < tw->nitems; i++)
		free(tw->items[i].text);
	free(tw->items);
	for (i = 0; i < tw->nthreads; i++) {
		while (tw->threads[i].nopen)
			open_free(&tw->threads[i].open[--tw->threads[i].nopen]);
		free(tw->threads[i].open);
	}
	free(tw->threads);
	for (i = 0; i < tw->nnames; i++)
		free(tw->names[i].name);
	free(tw->names);
	for (i = 0; i < tw->nmeta; i++) {
		free(tw->meta[i].key);
		free(tw->meta[i].value);
	}
	free(tw->meta);
}

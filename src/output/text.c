/* SPDX-License-Identifier: MIT */
/* ptscope's normalised text form: the event form streams one line per
 * call; the slices form matches BEGIN/END per thread, keeps every item and
 * prints them sorted when flushed (see text.h and docs/convert.md).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json.h"
#include "src/output/sink.h"
#include "src/output/text.h"

/* A growing string; a failed allocation is remembered and reported once. */
struct tx_buf {
	char *p;
	size_t len, cap;
	int failed;
};

static void tb_mem(struct tx_buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void tb_str(struct tx_buf *b, const char *s)
{
	tb_mem(b, s, strlen(s));
}

static void tb_fmt(struct tx_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void tb_fmt(struct tx_buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	tb_mem(b, tmp,
	       n < 0			 ? 0
	       : (size_t)n < sizeof(tmp) ? (size_t)n
					 : sizeof(tmp) - 1);
}

/* A quoted string: \" \\ \n \r \t, other control bytes and invalid UTF-8
 * as \xNN, valid UTF-8 as is. */
static void tb_quoted(struct tx_buf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), i = 0, l;

	tb_mem(b, "\"", 1);
	while (i < n) {
		unsigned c = s[i];

		if (c == '"' || c == '\\') {
			tb_mem(b, c == '"' ? "\\\"" : "\\\\", 2);
		} else if (c == '\n') {
			tb_mem(b, "\\n", 2);
		} else if (c == '\r') {
			tb_mem(b, "\\r", 2);
		} else if (c == '\t') {
			tb_mem(b, "\\t", 2);
		} else if (c < 0x20 || c == 0x7f) {
			tb_fmt(b, "\\x%02x", c);
		} else if ((l = json_utf8_len(s + i, n - i)) != 0) {
			tb_mem(b, str + i, l);
			i += l;
			continue;
		} else {
			tb_fmt(b, "\\x%02x", c);
		}
		i++;
	}
	tb_mem(b, "\"", 1);
}

/* Arg names print bare when they hold nothing that could confuse a
 * reader of the line, else quoted. */
static void tb_name(struct tx_buf *b, const char *name)
{
	const char *p;

	for (p = name; *p; p++)
		if ((unsigned char)*p <= ' ' || strchr("\"={}\\", *p) ||
		    (unsigned char)*p >= 0x7f)
			break;
	if (*name && !*p)
		tb_str(b, name);
	else
		tb_quoted(b, name);
}

/* Canonical numbers: one spelling per value, whatever its type, so an
 * integer-valued double and an integer print alike. */
static void tb_double(struct tx_buf *b, double d)
{
	char tmp[40];

	if (d > -9.2e18 && d < 9.2e18 && d == (double)(int64_t)d) {
		tb_fmt(b, "%" PRId64, (int64_t)d);
		return;
	}
	json_format_double(tmp, d);
	tb_str(b, tmp);
}

static void tb_arg(struct tx_buf *b, const struct ps_arg *a)
{
	tb_name(b, a->name ? a->name : "");
	tb_mem(b, "=", 1);
	switch (a->type) {
	case PS_ARG_NULL:
		tb_str(b, "null");
		break;
	case PS_ARG_BOOL:
		tb_str(b, a->v.b ? "true" : "false");
		break;
	case PS_ARG_INT:
		tb_fmt(b, "%" PRId64, a->v.i);
		break;
	case PS_ARG_UINT:
		tb_fmt(b, "%" PRIu64, a->v.u);
		break;
	case PS_ARG_DOUBLE:
		tb_double(b, a->v.d);
		break;
	case PS_ARG_STRING:
		tb_quoted(b, a->v.s ? a->v.s : "");
		break;
	case PS_ARG_POINTER:
		tb_fmt(b, "0x%" PRIx64, a->v.u);
		break;
	}
}

/* A list of rendered "name=value" strings, sorted before printing. */
struct tx_args {
	char **v; /* owned strings */
	size_t n, cap;
};

static int args_add(struct tx_args *l, const struct ps_arg *a)
{
	struct tx_buf b = {0};

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		char **nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return PS_ERR_NOMEM;
		l->v = nv;
		l->cap = cap;
	}
	tb_arg(&b, a);
	if (b.failed) {
		free(b.p);
		return PS_ERR_NOMEM;
	}
	l->v[l->n++] = b.p;
	return 0;
}

static int args_from_event(struct tx_args *l, const struct ps_event *ev)
{
	const struct ps_span_info *info = ev->info;
	int err = 0;

	for (size_t i = 0; i < ev->nargs && !err; i++)
		err = args_add(l, &ev->args[i]);
	/* Writers show span info as these args, so the dump does too. */
	if (info && info->module && !err)
		err = args_add(l, &(struct ps_arg){.name = "module",
						   .type = PS_ARG_STRING,
						   .v.s = info->module});
	if (info && info->address && !err)
		err = args_add(l, &(struct ps_arg){.name = "address",
						   .type = PS_ARG_POINTER,
						   .v.u = info->address});
	if (info && info->file && !err)
		err = args_add(l, &(struct ps_arg){.name = "file",
						   .type = PS_ARG_STRING,
						   .v.s = info->file});
	if (info && info->line && !err)
		err = args_add(l, &(struct ps_arg){.name = "line",
						   .type = PS_ARG_UINT,
						   .v.u = info->line});
	return err;
}

/* qsort wants a non-NULL array even when it is empty. */
static void sort(void *v, size_t n, size_t size,
		 int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void args_print(struct tx_buf *b, struct tx_args *l)
{
	if (!l->n)
		return;
	sort(l->v, l->n, sizeof(*l->v), cmp_str);
	tb_str(b, " args={");
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			tb_mem(b, " ", 1);
		tb_str(b, l->v[i]);
	}
	tb_mem(b, "}", 1);
}

static void args_free(struct tx_args *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static const char *const kind_name[] = {
    [PS_EV_BEGIN] = "begin",	     [PS_EV_END] = "end",
    [PS_EV_COMPLETE] = "complete",   [PS_EV_INSTANT] = "instant",
    [PS_EV_COUNTER] = "counter",     [PS_EV_FLOW_BEGIN] = "flow-begin",
    [PS_EV_FLOW_STEP] = "flow-step", [PS_EV_FLOW_END] = "flow-end",
};

static const char *scope_name(enum ps_scope s)
{
	return s == PS_SCOPE_GLOBAL    ? "global"
	       : s == PS_SCOPE_PROCESS ? "process"
				       : "thread";
}

/* name="..." cat="..." for non-empty names and categories. */
static void tb_label(struct tx_buf *b, const char *name, const char *cat)
{
	if (name && *name) {
		tb_str(b, " name=");
		tb_quoted(b, name);
	}
	if (cat && *cat) {
		tb_str(b, " cat=");
		tb_quoted(b, cat);
	}
}

/* One item of the slices form, kept until flush. */
struct tx_item {
	uint64_t pid, tid, ts;
	uint64_t end; /* ts + dur; UINT64_MAX when never ended */
	int rank;     /* sort order at equal ts: slices first */
	uint32_t depth;
	uint64_t seq; /* arrival order, the last tie breaker */
	int paired;   /* a slice made of a BEGIN and an END (not COMPLETE) */
	char *text;   /* owned: the line after the sort fields */
	const char *kind;
	int who; /* which of pid/tid the line shows (WHO_*) */
};

enum { WHO_NONE, WHO_PID, WHO_BOTH };

/* A slice whose END has not come yet. */
struct tx_open {
	size_t item;	     /* index into items */
	char *name, *cat;    /* owned copies */
	struct tx_args args; /* BEGIN args, then END args */
};

struct tx_thread {
	uint64_t pid, tid;
	struct tx_open *open; /* owned stack */
	size_t nopen, cap;
};

struct tx_name {
	uint64_t pid, tid; /* a parent (is_thread 2): tid is the ppid */
	int is_thread;	   /* 0 process, 1 thread, 2 parent */
	char *name; /* owned */
};

struct tx_meta {
	char *key, *value; /* owned */
	uint64_t seq;
};

struct text_writer {
	struct ps_writer base; /* must stay first */
	int slices;
	struct tx_buf line; /* event form: the line being built */
	/* slices form: */
	struct tx_item *items; /* owned */
	size_t nitems, items_cap;
	struct tx_thread *threads; /* owned */
	size_t nthreads, threads_cap;
	size_t last_thread;
	struct tx_name *names; /* owned */
	size_t nnames, names_cap;
	struct tx_meta *meta; /* owned */
	size_t nmeta, meta_cap;
	uint64_t seq;
};

static struct text_writer *to_text(struct ps_writer *w)
{
	return (struct text_writer *)w;
}

static int emit_line(struct text_writer *tw, struct tx_buf *b)
{
	int err;

	tb_mem(b, "\n", 1);
	if (b->failed) {
		b->failed = 0;
		b->len = 0;
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory while writing text");
	}
	err = ps_sink_write(tw->base.sink, b->p, b->len);
	b->len = 0;
	return err;
}

/* ---- event form ---------------------------------------------------- */

static int flat_event(struct text_writer *tw, const struct ps_event *ev)
{
	struct tx_buf *b = &tw->line;
	struct tx_args args = {0};
	int err;

	tb_fmt(b, "%s ts=%" PRIu64 " pid=%" PRIu64 " tid=%" PRIu64,
	       kind_name[ev->type], ev->ts, ev->pid, ev->tid);
	if (ev->type == PS_EV_COMPLETE)
		tb_fmt(b, " dur=%" PRIu64, ev->dur);
	if (ev->type == PS_EV_INSTANT)
		tb_fmt(b, " scope=%s", scope_name(ev->scope));
	if (ev->type >= PS_EV_FLOW_BEGIN)
		tb_fmt(b, " id=%" PRIu64, ev->flow_id);
	tb_label(b, ev->name, ev->category);
	err = args_from_event(&args, ev);
	if (!err)
		args_print(b, &args);
	args_free(&args);
	if (err) {
		b->len = 0;
		return err;
	}
	return emit_line(tw, b);
}

/* ---- slices form --------------------------------------------------- */

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
	args_print(&b, args);
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
	return args_from_event(&o->args, ev);
}

static void open_free(struct tx_open *o)
{
	free(o->name);
	free(o->cat);
	args_free(&o->args);
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
	err = args_from_event(&o->args, ev);
	if (!err)
		err = finish_slice(it, o->name, o->cat, &o->args);
	open_free(o);
	memmove(o, o + 1, (t->nopen - k) * sizeof(*o));
	t->nopen--;
	return err;
}

static int slices_event(struct text_writer *tw, const struct ps_event *ev)
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
		err = args_from_event(&args, ev);
		if (!err)
			err = finish_slice(it, ev->name, ev->category, &args);
		args_free(&args);
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
	it = new_item(tw, kind_name[ev->type], rank, ev);
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
		tb_fmt(&b, " scope=%s", scope_name(ev->scope));
	if (ev->type >= PS_EV_FLOW_BEGIN)
		tb_fmt(&b, " id=%" PRIu64, ev->flow_id);
	/* A counter is a named series: viewers show no category for it,
	 * and Perfetto's counter tracks keep none. */
	tb_label(&b, ev->name, ev->type == PS_EV_COUNTER ? NULL : ev->category);
	err = args_from_event(&args, ev);
	if (!err)
		args_print(&b, &args);
	args_free(&args);
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
	sort(v, n, sizeof(*v), cmp_pid_tid);
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

static int slices_flush(struct text_writer *tw)
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
	sort(tw->meta, tw->nmeta, sizeof(*tw->meta), cmp_meta);
	for (i = 0; i < tw->nmeta; i++) {
		if (i + 1 < tw->nmeta &&
		    !strcmp(tw->meta[i].key, tw->meta[i + 1].key))
			continue; /* the last value set wins */
		tb_str(b, "meta ");
		tb_quoted(b, tw->meta[i].key);
		tb_mem(b, " ", 1);
		tb_quoted(b, tw->meta[i].value);
		if ((err = emit_line(tw, b)))
			return err;
	}
	sort(tw->names, tw->nnames, sizeof(*tw->names), cmp_names);
	for (i = 0; i < tw->nnames; i++) {
		struct tx_name *nm = &tw->names[i];

		if (nm->is_thread == 2) {
			tb_fmt(b, "parent pid=%" PRIu64 " ppid=%" PRIu64,
			       nm->pid, nm->tid);
			if ((err = emit_line(tw, b)))
				return err;
			continue;
		}
		if (nm->is_thread)
			tb_fmt(b, "thread pid=%" PRIu64 " tid=%" PRIu64 " ",
			       nm->pid, nm->tid);
		else
			tb_fmt(b, "process pid=%" PRIu64 " ", nm->pid);
		tb_quoted(b, nm->name);
		if ((err = emit_line(tw, b)))
			return err;
	}
	if ((err = compute_depths(tw)))
		return err;
	sort(tw->items, tw->nitems, sizeof(*tw->items), cmp_items);
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
		if ((err = emit_line(tw, b)))
			return err;
	}
	return 0;
}

/* ---- writer ops ---------------------------------------------------- */

/* The slices form keeps one name per process / thread: the last. */
static int remember_name(struct text_writer *tw, int is_thread, uint64_t pid,
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

static int text_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct text_writer *tw = to_text(w);

	if (tw->slices)
		return remember_name(tw, 0, pid, 0, name);
	tb_fmt(&tw->line, "process pid=%" PRIu64 " ", pid);
	tb_quoted(&tw->line, name ? name : "");
	return emit_line(tw, &tw->line);
}

static int text_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct text_writer *tw = to_text(w);

	if (tw->slices)
		return remember_name(tw, 2, pid, ppid, "");
	tb_fmt(&tw->line, "parent pid=%" PRIu64 " ppid=%" PRIu64, pid, ppid);
	return emit_line(tw, &tw->line);
}

static int text_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		       const char *name)
{
	struct text_writer *tw = to_text(w);

	if (tw->slices)
		return remember_name(tw, 1, pid, tid, name);
	tb_fmt(&tw->line, "thread pid=%" PRIu64 " tid=%" PRIu64 " ", pid, tid);
	tb_quoted(&tw->line, name ? name : "");
	return emit_line(tw, &tw->line);
}

static int text_meta(struct ps_writer *w, const char *key, const char *value)
{
	struct text_writer *tw = to_text(w);
	struct tx_meta *m;

	if (!key)
		return ps_err_detail(PS_ERR_INVAL, "metadata key is NULL");
	if (!value)
		value = "";
	if (!tw->slices) {
		tb_str(&tw->line, "meta ");
		tb_quoted(&tw->line, key);
		tb_mem(&tw->line, " ", 1);
		tb_quoted(&tw->line, value);
		return emit_line(tw, &tw->line);
	}
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

static int text_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct text_writer *tw = to_text(w);

	if (!ev || (unsigned)ev->type > PS_EV_FLOW_END)
		return ps_err_detail(PS_ERR_INVAL,
				     "text writer got an unknown event type");
	return tw->slices ? slices_event(tw, ev) : flat_event(tw, ev);
}

static int text_flush(struct ps_writer *w)
{
	struct text_writer *tw = to_text(w);

	return tw->slices ? slices_flush(tw) : 0;
}

static void text_destroy(struct ps_writer *w)
{
	struct text_writer *tw = to_text(w);
	size_t i;

	if (!tw)
		return;
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

/* SPDX-License-Identifier: MIT */
/* Chrome trace event JSON writer.
 *
 * Events stream out as they come, one per line, inside the "traceEvents"
 * array; process and thread names become "M" events wherever they are
 * named; metadata is kept (it is small) and written after the array, in the
 * "metadata" object, when the writer is flushed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json.h"
#include "src/output/sink.h"

/* Bytes gathered before handing them to the sink in one write. */
#define JSON_FLUSH_AT (64u * 1024)

struct json_meta {
	char *key;   /* owned */
	char *value; /* owned */
};

/* A "B" record held back: its text without the separator before it;
 * split is where a "dur" would go (just after "ts"). */
struct json_held {
	char *text; /* owned */
	size_t len, split;
};

/* The "B" records of one thread held back, all at time ts. */
struct json_hold {
	uint64_t tid, ts;
	struct json_held *v; /* owned */
	size_t n, cap;
};

struct json_writer {
	struct ps_writer base;	 /* must stay first */
	struct json_hold *holds; /* owned, one per thread seen */
	size_t nholds;
	uint64_t async_id; /* ids of block I/O "b"/"e" pairs */
	char *buf;	   /* pending output (owned) */
	size_t len, cap;
	int nevents;		/* records written into traceEvents */
	int failed;		/* out of memory while formatting */
	struct json_meta *meta; /* owned, in first-set order */
	size_t nmeta, meta_cap;
};

static int reserve(struct json_writer *jw, size_t more)
{
	size_t cap = jw->cap;
	char *nb;

	if (jw->len + more <= jw->cap)
		return 0;
	while (cap < jw->len + more)
		cap = cap ? cap * 2 : JSON_FLUSH_AT * 2;
	nb = realloc(jw->buf, cap);
	if (!nb) {
		jw->failed = 1;
		return PS_ERR_NOMEM;
	}
	jw->buf = nb;
	jw->cap = cap;
	return 0;
}

static void put_mem(struct json_writer *jw, const char *s, size_t n)
{
	if (reserve(jw, n))
		return;
	memcpy(jw->buf + jw->len, s, n);
	jw->len += n;
}

static void put(struct json_writer *jw, const char *s)
{
	put_mem(jw, s, strlen(s));
}

static void put_u64(struct json_writer *jw, uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_mem(jw, tmp + i, sizeof(tmp) - (size_t)i);
}

static void put_i64(struct json_writer *jw, int64_t v)
{
	if (v < 0) {
		put_mem(jw, "-", 1);
		put_u64(jw, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(jw, (uint64_t)v);
	}
}

/* Nanoseconds as microseconds with exactly three decimals. */
static void put_us(struct json_writer *jw, uint64_t ns)
{
	char frac[4];

	put_u64(jw, ns / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + ns / 100 % 10);
	frac[2] = (char)('0' + ns / 10 % 10);
	frac[3] = (char)('0' + ns % 10);
	put_mem(jw, frac, 4);
}

static void put_hex(struct json_writer *jw, uint64_t v)
{
	char tmp[24];

	snprintf(tmp, sizeof(tmp), "\"0x%llx\"", (unsigned long long)v);
	put(jw, tmp);
}

/* A JSON string literal: quotes, backslashes and control characters
 * escaped, invalid UTF-8 replaced by U+FFFD. */
static void put_str(struct json_writer *jw, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = strlen((const char *)s), i = 0, run = 0;
	char esc[8];

	put_mem(jw, "\"", 1);
	while (i < n) {
		unsigned c = s[i];
		size_t l = c < 0x80 ? (c >= 0x20 && c != '"' && c != '\\')
				    : json_utf8_len(s + i, n - i);

		if (l) { /* copy plain bytes in runs */
			run = i;
			i += l;
			while (i < n) {
				c = s[i];
				l = c < 0x80
					? (c >= 0x20 && c != '"' && c != '\\')
					: json_utf8_len(s + i, n - i);
				if (!l)
					break;
				i += l;
			}
			put_mem(jw, (const char *)s + run, i - run);
			continue;
		}
		switch (c) {
		case '"':
			put_mem(jw, "\\\"", 2);
			break;
		case '\\':
			put_mem(jw, "\\\\", 2);
			break;
		case '\n':
			put_mem(jw, "\\n", 2);
			break;
		case '\r':
			put_mem(jw, "\\r", 2);
			break;
		case '\t':
			put_mem(jw, "\\t", 2);
			break;
		case '\b':
			put_mem(jw, "\\b", 2);
			break;
		case '\f':
			put_mem(jw, "\\f", 2);
			break;
		default:
			if (c < 0x20) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				put_mem(jw, esc, 6);
			} else {
				put_mem(jw, "\\ufffd", 6);
			}
		}
		i++;
	}
	put_mem(jw, "\"", 1);
}

/* Doubles keep a '.' so they read back as doubles; JSON has no NaN or
 * infinities, so those are written as the strings Chrome uses. */
static void put_double(struct json_writer *jw, double d)
{
	char tmp[40];
	size_t n;

	if (isnan(d)) {
		put(jw, "\"NaN\"");
		return;
	}
	if (isinf(d)) {
		put(jw, d < 0 ? "\"-Infinity\"" : "\"Infinity\"");
		return;
	}
	n = json_format_double(tmp, d);
	if (!strpbrk(tmp, ".e"))
		memcpy(tmp + n, ".0", 3);
	put(jw, tmp);
}

static void put_arg(struct json_writer *jw, const struct ps_arg *a)
{
	put_str(jw, a->name);
	put_mem(jw, ":", 1);
	switch (a->type) {
	case PS_ARG_NULL:
		put(jw, "null");
		break;
	case PS_ARG_BOOL:
		put(jw, a->v.b ? "true" : "false");
		break;
	case PS_ARG_INT:
		put_i64(jw, a->v.i);
		break;
	case PS_ARG_UINT:
		put_u64(jw, a->v.u);
		break;
	case PS_ARG_DOUBLE:
		put_double(jw, a->v.d);
		break;
	case PS_ARG_STRING:
		put_str(jw, a->v.s);
		break;
	case PS_ARG_POINTER:
		put_hex(jw, a->v.u);
		break;
	}
}

static void put_args(struct json_writer *jw, const struct ps_event *ev)
{
	const struct ps_span_info *info = ev->info;
	int first = 1;
	size_t i;

	if (!ev->nargs && !info)
		return;
	put(jw, ",\"args\":{");
	for (i = 0; i < ev->nargs; i++) {
		if (!first)
			put_mem(jw, ",", 1);
		put_arg(jw, &ev->args[i]);
		first = 0;
	}
	if (info) {
		struct ps_arg extra[4];
		int n = 0;

		if (info->module)
			extra[n++] = (struct ps_arg){.name = "module",
						     .type = PS_ARG_STRING,
						     .v.s = info->module};
		if (info->address)
			extra[n++] = (struct ps_arg){.name = "address",
						     .type = PS_ARG_POINTER,
						     .v.u = info->address};
		if (info->file)
			extra[n++] = (struct ps_arg){.name = "file",
						     .type = PS_ARG_STRING,
						     .v.s = info->file};
		if (info->line)
			extra[n++] = (struct ps_arg){.name = "line",
						     .type = PS_ARG_UINT,
						     .v.u = info->line};
		for (int k = 0; k < n; k++) {
			if (!first)
				put_mem(jw, ",", 1);
			put_arg(jw, &extra[k]);
			first = 0;
		}
	}
	put_mem(jw, "}", 1);
}

static struct json_writer *to_json(struct ps_writer *w)
{
	return (struct json_writer *)w;
}

/* Hand what is buffered to the sink once there is enough of it. */
static int drain(struct json_writer *jw, int force)
{
	int err;

	if (jw->failed)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory while writing JSON");
	if (!jw->len || (!force && jw->len < JSON_FLUSH_AT))
		return 0;
	err = ps_sink_write(jw->base.sink, jw->buf, jw->len);
	jw->len = 0;
	return err;
}

static void put_sep(struct json_writer *jw)
{
	put(jw, jw->nevents++ ? ",\n" : "\n");
}

/* The caller puts the separator before it (put_sep). */
static void start_record(struct json_writer *jw, const char *ph, uint64_t pid,
			 uint64_t tid)
{
	put(jw, "{\"ph\":\"");
	put(jw, ph);
	put(jw, "\",\"pid\":");
	put_u64(jw, pid);
	put(jw, ",\"tid\":");
	put_u64(jw, tid);
}

static int name_record(struct json_writer *jw, const char *what, uint64_t pid,
		       uint64_t tid, const char *name)
{
	put_sep(jw);
	start_record(jw, "M", pid, tid);
	put(jw, ",\"name\":\"");
	put(jw, what);
	put(jw, "\",\"args\":{\"name\":");
	put_str(jw, name);
	put(jw, "}}");
	return drain(jw, 0);
}

static int json_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	return name_record(to_json(w), "process_name", pid, 0, name);
}

static int json_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		       const char *name)
{
	if (ps_tid_aux(tid))
		return 0; /* a track of a thread, not a thread (event.h) */
	return name_record(to_json(w), "thread_name", pid, tid, name);
}

/* Chrome's format has no parent: an "M" record of our own, which
 * viewers skip and json_read reads back. */
static int json_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	struct json_writer *jw = to_json(w);

	put_sep(jw);
	start_record(jw, "M", pid, 0);
	put(jw, ",\"name\":\"" JSON_PARENT_RECORD "\",\"args\":{\"ppid\":");
	put_u64(jw, ppid);
	put(jw, "}}");
	return drain(jw, 0);
}

static int json_meta(struct ps_writer *w, const char *key, const char *value)
{
	struct json_writer *jw = to_json(w);
	char *k, *v;
	size_t i;

	if (!key)
		return ps_err_detail(PS_ERR_INVAL, "metadata key is NULL");
	v = strdup(value ? value : "");
	if (!v)
		return PS_ERR_NOMEM;
	for (i = 0; i < jw->nmeta; i++) {
		if (!strcmp(jw->meta[i].key, key)) {
			free(jw->meta[i].value);
			jw->meta[i].value = v;
			return 0;
		}
	}
	if (jw->nmeta == jw->meta_cap) {
		size_t cap = jw->meta_cap ? jw->meta_cap * 2 : 8;
		struct json_meta *nm = realloc(jw->meta, cap * sizeof(*nm));

		if (!nm) {
			free(v);
			return PS_ERR_NOMEM;
		}
		jw->meta = nm;
		jw->meta_cap = cap;
	}
	k = strdup(key);
	if (!k) {
		free(v);
		return PS_ERR_NOMEM;
	}
	jw->meta[jw->nmeta].key = k;
	jw->meta[jw->nmeta].value = v;
	jw->nmeta++;
	return 0;
}

static const char *const phase[] = {
    [PS_EV_BEGIN] = "B",     [PS_EV_END] = "E",	     [PS_EV_COMPLETE] = "X",
    [PS_EV_INSTANT] = "i",   [PS_EV_COUNTER] = "C",  [PS_EV_FLOW_BEGIN] = "s",
    [PS_EV_FLOW_STEP] = "t", [PS_EV_FLOW_END] = "f",
};

static struct json_hold *find_hold(struct json_writer *jw, uint64_t tid)
{
	struct json_hold *nh;

	for (size_t i = 0; i < jw->nholds; i++)
		if (jw->holds[i].tid == tid)
			return &jw->holds[i];
	nh = realloc(jw->holds, (jw->nholds + 1) * sizeof(*nh));
	if (!nh) {
		jw->failed = 1;
		return NULL;
	}
	jw->holds = nh;
	nh = &jw->holds[jw->nholds++];
	memset(nh, 0, sizeof(*nh));
	nh->tid = tid;
	return nh;
}

/* Write @h's held records as "B", in order, and forget them. */
static void release(struct json_writer *jw, struct json_hold *h)
{
	for (size_t i = 0; i < h->n; i++) {
		put_sep(jw);
		put_mem(jw, h->v[i].text, h->v[i].len);
		free(h->v[i].text);
	}
	h->n = 0;
}

/* The record just formatted at jw->buf[from...] (after its separator) is
 * a "B" of thread @h at @ts: keep it back. */
static void hold(struct json_writer *jw, struct json_hold *h, uint64_t ts,
		 size_t from, size_t split)
{
	struct json_held *e;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 8;
		struct json_held *nv = realloc(h->v, cap * sizeof(*nv));

		if (!nv) {
			jw->failed = 1;
			return;
		}
		h->v = nv;
		h->cap = cap;
	}
	e = &h->v[h->n];
	e->len = jw->len - from;
	e->split = split - from;
	e->text = malloc(e->len ? e->len : 1);
	if (!e->text) {
		jw->failed = 1;
		return;
	}
	memcpy(e->text, jw->buf + from, e->len);
	jw->len = from;
	h->ts = ts;
	h->n++;
}

/* The "E" of @h's last held "B", at its time: the span is an "X" of zero
 * length. */
static void close_zero(struct json_writer *jw, struct json_hold *h)
{
	struct json_held *e = &h->v[--h->n];
	size_t ph = 7; /* {"ph":" */

	put_sep(jw);
	put_mem(jw, e->text, ph);
	put_mem(jw, "X", 1);
	put_mem(jw, e->text + ph + 1, e->split - ph - 1);
	put(jw, ",\"dur\":0.000");
	put_mem(jw, e->text + e->split, e->len - e->split);
	free(e->text);
}

static int json_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct json_writer *jw = to_json(w);
	struct json_hold *h;
	const char *ph;
	uint64_t tid;
	size_t from, split = 0;

	if (!ev || (unsigned)ev->type > PS_EV_FLOW_END)
		return ps_err_detail(PS_ERR_INVAL,
				     "JSON writer got an unknown event type");
	tid = ps_tid_aux(ev->tid) ? ev->tid & ~(uint64_t)PS_TID_AUX : ev->tid;
	if (ps_tid_aux(ev->tid) == PS_TID_BLOCK && ev->type == PS_EV_COMPLETE) {
		struct ps_event b = *ev;

		/* Block I/O: an async pair on the process's track. */
		b.tid = tid;
		jw->async_id++;
		put_sep(jw);
		start_record(jw, "b", b.pid, tid);
		put(jw, ",\"ts\":");
		put_us(jw, b.ts);
		put(jw, ",\"id\":");
		put_hex(jw, jw->async_id);
		put(jw, ",\"name\":");
		put_str(jw, b.name ? b.name : "block I/O");
		put(jw, ",\"cat\":");
		put_str(jw, b.category ? b.category : "block");
		put_args(jw, &b);
		put(jw, "}");
		put_sep(jw);
		start_record(jw, "e", b.pid, tid);
		put(jw, ",\"ts\":");
		put_us(jw, b.ts + b.dur);
		put(jw, ",\"id\":");
		put_hex(jw, jw->async_id);
		put(jw, ",\"name\":");
		put_str(jw, b.name ? b.name : "block I/O");
		put(jw, ",\"cat\":");
		put_str(jw, b.category ? b.category : "block");
		put(jw, "}");
		return drain(jw, 0);
	}
	h = find_hold(jw, tid);
	if (!h)
		return drain(jw, 0);
	if (ev->type == PS_EV_END && !ev->nargs && h->n && h->ts == ev->ts) {
		close_zero(jw, h);
		return drain(jw, 0);
	}
	if (ev->type != PS_EV_BEGIN || (h->n && h->ts != ev->ts))
		release(jw, h);
	if (ev->type != PS_EV_BEGIN)
		put_sep(jw);
	from = jw->len;
	ph = phase[ev->type];
	start_record(jw, ph, ev->pid, tid);
	put(jw, ",\"ts\":");
	put_us(jw, ev->ts);
	split = jw->len;
	if (ev->type == PS_EV_COMPLETE) {
		put(jw, ",\"dur\":");
		put_us(jw, ev->dur);
	}
	if (ev->name) {
		put(jw, ",\"name\":");
		put_str(jw, ev->name);
	}
	if (ev->category) {
		put(jw, ",\"cat\":");
		put_str(jw, ev->category);
	}
	switch (ev->type) {
	case PS_EV_INSTANT:
		put(jw, ev->scope == PS_SCOPE_GLOBAL	? ",\"s\":\"g\""
			: ev->scope == PS_SCOPE_PROCESS ? ",\"s\":\"p\""
							: ",\"s\":\"t\"");
		break;
	case PS_EV_COUNTER:
		/* the counter id (event.h), as Chrome writes one */
		if (ev->flow_id) {
			put(jw, ",\"id\":");
			put_hex(jw, ev->flow_id);
		}
		break;
	case PS_EV_FLOW_END:
		/* Bind to the enclosing slice, as the event model says. */
		put(jw, ",\"bp\":\"e\"");
		/* fall through */
	case PS_EV_FLOW_BEGIN:
	case PS_EV_FLOW_STEP:
		put(jw, ",\"id\":");
		put_hex(jw, ev->flow_id);
		break;
	default:
		break;
	}
	put_args(jw, ev);
	put_mem(jw, "}", 1);
	if (ev->type == PS_EV_BEGIN)
		hold(jw, h, ev->ts, from, split);
	return drain(jw, 0);
}

static int json_flush(struct ps_writer *w)
{
	struct json_writer *jw = to_json(w);
	size_t i;

	for (i = 0; i < jw->nholds; i++)
		release(jw, &jw->holds[i]);
	put(jw, "\n],\n\"metadata\":{");
	for (i = 0; i < jw->nmeta; i++) {
		if (i)
			put_mem(jw, ",", 1);
		put_str(jw, jw->meta[i].key);
		put_mem(jw, ":", 1);
		put_str(jw, jw->meta[i].value);
	}
	put(jw, "}}\n");
	return drain(jw, 1);
}

static void json_destroy(struct ps_writer *w)
{
	struct json_writer *jw = to_json(w);
	size_t i;

	if (!jw)
		return;
	for (i = 0; i < jw->nmeta; i++) {
		free(jw->meta[i].key);
		free(jw->meta[i].value);
	}
	free(jw->meta);
	for (i = 0; i < jw->nholds; i++) {
		for (size_t j = 0; j < jw->holds[i].n; j++)
			free(jw->holds[i].v[j].text);
		free(jw->holds[i].v);
	}
	free(jw->holds);
	free(jw->buf);
	free(jw);
}

static const struct ps_writer_ops json_ops = {
    .name = "json",
    .process = json_process,
    .parent = json_parent,
    .thread = json_thread,
    .meta = json_meta,
    .event = json_event,
    .flush = json_flush,
    .destroy = json_destroy,
};

int json_writer_new(struct ps_sink *sink, struct ps_writer **out)
{
	struct json_writer *jw;

	if (!sink || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "json_writer_new needs a sink and out");
	jw = calloc(1, sizeof(*jw));
	if (!jw)
		return PS_ERR_NOMEM;
	jw->base.ops = &json_ops;
	jw->base.sink = sink;
	put(jw, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	if (jw->failed) {
		json_destroy(&jw->base);
		return PS_ERR_NOMEM;
	}
	*out = &jw->base;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* How ptscope's text form spells things (see text_writer.h and
 * docs/convert.md): strings quoted with invalid UTF-8 as \xNN, numbers in
 * one canonical spelling whatever their type, args (and span info) as
 * name=value sorted by name, so the same trace read from any format prints
 * the same lines.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json.h"
#include "src/output/sink.h"
#include "src/output/text_writer.h"

void tb_mem(struct tx_buf *b, const char *s, size_t n)
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

void tb_str(struct tx_buf *b, const char *s)
{
	tb_mem(b, s, strlen(s));
}

void tb_fmt(struct tx_buf *b, const char *fmt, ...)
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
void tb_quoted(struct tx_buf *b, const char *str)
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

int tx_args_from_event(struct tx_args *l, const struct ps_event *ev)
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
void tx_sort(void *v, size_t n, size_t size,
	     int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tx_args_print(struct tx_buf *b, struct tx_args *l)
{
	if (!l->n)
		return;
	tx_sort(l->v, l->n, sizeof(*l->v), cmp_str);
	tb_str(b, " args={");
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			tb_mem(b, " ", 1);
		tb_str(b, l->v[i]);
	}
	tb_mem(b, "}", 1);
}

void tx_args_free(struct tx_args *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

const char *const tx_kind_name[] = {
    [PS_EV_BEGIN] = "begin",	     [PS_EV_END] = "end",
    [PS_EV_COMPLETE] = "complete",   [PS_EV_INSTANT] = "instant",
    [PS_EV_COUNTER] = "counter",     [PS_EV_FLOW_BEGIN] = "flow-begin",
    [PS_EV_FLOW_STEP] = "flow-step", [PS_EV_FLOW_END] = "flow-end",
};

const char *tx_scope_name(enum ps_scope s)
{
	return s == PS_SCOPE_GLOBAL    ? "global"
	       : s == PS_SCOPE_PROCESS ? "process"
				       : "thread";
}

/* name="..." cat="..." for non-empty names and categories. */
void tb_label(struct tx_buf *b, const char *name, const char *cat)
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

int tx_emit_line(struct text_writer *tw, struct tx_buf *b)
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

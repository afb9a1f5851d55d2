/* SPDX-License-Identifier: MIT */
/* Streaming Chrome trace event JSON reader (yajl SAX callbacks).
 *
 * A stack of nesting levels says what each JSON value means: the object
 * form's top map, the traceEvents array (or the bare top array), one event,
 * its args (flattened to dotted names), an id2 map, or the metadata map.
 * This file walks that structure and hands each value to the event rules
 * (json_read_event.c), which gather one event's fields and, when its '}'
 * arrives, keep what it means until the end of the input; json_reader.h says
 * how the files share the reader's state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#include "ptscope/error.h"
#include "src/output/json.h"
#include "src/output/json_reader.h"

#define JR_CHUNK (256u * 1024)

static uint64_t offset_now(struct json_reader *r)
{
	return r->base + yajl_get_bytes_consumed(r->yh);
}

/* The flattened name of the next child of an args/metadata level: its
 * key after a '.', or its array index in brackets.  Leaves it in r->path
 * with length returned; (size_t)-1 when out of memory. */
static size_t child_path(struct json_reader *r, struct jr_level *lv)
{
	char idx[32];
	const char *comp = r->key;
	size_t clen = r->key_len, len = lv->path_len;

	if (lv->is_array) {
		clen = (size_t)snprintf(idx, sizeof(idx), "[%llu]",
					(unsigned long long)(lv->count - 1));
		comp = idx;
	}
	if (json_grow((void **)&r->path, &r->path_cap, len + clen + 2, 1))
		return JR_NONE;
	if (len && !lv->is_array)
		r->path[len++] = '.';
	memcpy(r->path + len, comp, clen);
	len += clen;
	r->path[len] = '\0';
	return len;
}

static void reset_event(struct json_reader *r)
{
	memset(&r->ev, 0, sizeof(r->ev));
	r->ev.name = r->ev.cat = r->ev.scope = r->ev.bp = JR_NONE;
	r->ev.pid.str = r->ev.tid.str = JR_NONE;
	r->ev.start = offset_now(r) ? offset_now(r) - 1 : 0;
	r->alen = 0;
	r->nargs = 0;
}

static int push(struct json_reader *r, enum jr_kind kind, int is_array,
		size_t path_len)
{
	struct jr_level *lv;

	if (r->depth == JR_MAX_DEPTH)
		return jr_fail(r, PS_ERR_LIMIT,
			       "%s: JSON nested deeper than %d levels at byte "
			       "%llu; ptscope cannot read it",
			       r->name, JR_MAX_DEPTH,
			       (unsigned long long)offset_now(r));
	lv = &r->stack[r->depth++];
	lv->kind = kind;
	lv->is_array = is_array;
	lv->count = 0;
	lv->path_len = path_len;
	return 1;
}

/* Every JSON value (scalar or container start) comes through here. */
static int on_value(struct json_reader *r, enum jr_vtype t, const char *s,
		    size_t n, int b, int container, int is_array)
{
	struct jr_level *lv;
	size_t plen;

	if (r->skip) {
		r->skip += container;
		return 1;
	}
	if (!r->depth) {
		r->started = 1;
		if (!container)
			return jr_fail(r, PS_ERR_FORMAT,
				       "%s: the JSON at byte %llu is a single "
				       "value, not an object or array of trace "
				       "events; is this a Chrome trace event "
				       "file?",
				       r->name, (unsigned long long)r->base);
		r->bare_array = is_array;
		return push(r, is_array ? JR_EVENTS : JR_ROOT_OBJ, is_array, 0);
	}
	lv = &r->stack[r->depth - 1];
	lv->count++;
	switch (lv->kind) {
	case JR_ROOT_OBJ:
		if (container && is_array && !strcmp(r->key, "traceEvents"))
			return push(r, JR_EVENTS, 1, 0);
		if (container && !is_array && !strcmp(r->key, "metadata"))
			return push(r, JR_META, 0, 0);
		break;
	case JR_EVENTS:
		if (container && !is_array) {
			if (!push(r, JR_EVENT, 0, 0))
				return 0;
			reset_event(r);
			return 1;
		}
		r->skipped++;
		break;
	case JR_EVENT:
		if (container && !is_array && !strcmp(r->key, "args"))
			return push(r, JR_ARGS, 0, 0);
		if (container && !is_array && !strcmp(r->key, "id2"))
			return push(r, JR_ID2, 0, 0);
		if (!container)
			return jr_event_field(r, t == V_STRING,
					      t == V_NULL ? NULL : s, n,
					      t == V_BOOL, b);
		break;
	case JR_ID2:
		if (!container && (t == V_STRING || t == V_NUMBER))
			jr_set_id(&r->ev.id2, s, n);
		break;
	case JR_ARGS:
	case JR_META:
		plen = child_path(r, lv);
		if (plen == JR_NONE)
			return jr_fail_nomem(r);
		if (container)
			return push(r, lv->kind, is_array, plen);
		if (lv->kind == JR_ARGS)
			return jr_add_arg(r, plen, t, s, n, b);
		return jr_add_meta(r, plen, t, s, n, b);
	}
	if (container)
		r->skip = 1;
	return 1;
}

static int on_end(struct json_reader *r)
{
	struct jr_level *lv;

	if (r->skip) {
		r->skip--;
		return 1;
	}
	if (!r->depth)
		return jr_fail(r, PS_ERR_INTERNAL, "%s: unbalanced JSON",
			       r->name);
	lv = &r->stack[--r->depth];
	if (lv->kind == JR_EVENT)
		return jr_emit_event(r);
	if ((lv->kind == JR_ARGS || lv->kind == JR_META) && !lv->count &&
	    lv->path_len) {
		/* An empty object or array keeps its place as a string. */
		const char *empty = lv->is_array ? "[]" : "{}";

		r->path[lv->path_len] = '\0';
		if (lv->kind == JR_ARGS)
			return jr_add_arg(r, lv->path_len, V_STRING, empty, 2,
					  0);
		return jr_add_meta(r, lv->path_len, V_STRING, empty, 2, 0);
	}
	return 1;
}

static int cb_null(void *ctx)
{
	return on_value(ctx, V_NULL, "null", 4, 0, 0, 0);
}

static int cb_bool(void *ctx, int b)
{
	return on_value(ctx, V_BOOL, b ? "true" : "false", b ? 4 : 5, b, 0, 0);
}

static int cb_number(void *ctx, const char *s, size_t n)
{
	return on_value(ctx, V_NUMBER, s, n, 0, 0, 0);
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
	return on_value(ctx, V_STRING, (const char *)s, n, 0, 0, 0);
}

static int cb_start_map(void *ctx)
{
	return on_value(ctx, V_NULL, NULL, 0, 0, 1, 0);
}

static int cb_key(void *ctx, const unsigned char *s, size_t n)
{
	struct json_reader *r = ctx;

	if (r->skip)
		return 1;
	if (json_grow((void **)&r->key, &r->key_cap, n + 1, 1))
		return jr_fail_nomem(r);
	memcpy(r->key, s, n);
	r->key[n] = '\0';
	r->key_len = n;
	return 1;
}

static int cb_end(void *ctx)
{
	return on_end(ctx);
}

static int cb_start_array(void *ctx)
{
	return on_value(ctx, V_NULL, NULL, 0, 0, 1, 1);
}

static const yajl_callbacks jr_callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

int json_reader_new(const char *name, struct ps_writer *dst,
		    struct json_reader **out)
{
	struct json_reader *r;

	if (!dst || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "json_reader_new needs a writer and out");
	r = calloc(1, sizeof(*r));
	if (!r)
		return PS_ERR_NOMEM;
	r->name = name ? name : "input";
	r->dst = dst;
	r->key = calloc(1, 1);
	r->yh = yajl_alloc(&jr_callbacks, NULL, r);
	if (!r->key || !r->yh || json_order_new(&r->order)) {
		json_reader_free(r);
		return PS_ERR_NOMEM;
	}
	r->key_cap = 1;
	/* Invalid UTF-8 is passed on; the writers escape or replace it. */
	yajl_config(r->yh, yajl_dont_validate_strings, 1);
	/* Lets a bare array that was cut off be accepted (see finish). */
	yajl_config(r->yh, yajl_allow_partial_values, 1);
	*out = r;
	return 0;
}

static int sticky(struct json_reader *r)
{
	return ps_err_detail(r->err, "%s", r->errmsg);
}

/* yajl's own message without its "parse error: " prefix and newline. */
static int syntax_error(struct json_reader *r, const uint8_t *buf, size_t len)
{
	unsigned char *msg = yajl_get_error(r->yh, 0, buf, len);
	const char *m = msg ? (const char *)msg : "syntax error";
	uint64_t at;
	size_t n;

	if (!strncmp(m, "parse error: ", 13))
		m += 13;
	n = strcspn(m, "\n");
	/* yajl has consumed the offending byte: name that byte. */
	at = offset_now(r);
	jr_fail(r, PS_ERR_FORMAT,
		"%s: invalid JSON at byte %llu: %.*s; is this a Chrome trace "
		"event file?",
		r->name, (unsigned long long)(at ? at - 1 : 0), (int)n, m);
	if (msg)
		yajl_free_error(r->yh, msg);
	return sticky(r);
}

int json_reader_feed(struct json_reader *r, const uint8_t *buf, size_t len)
{
	yajl_status st;

	if (r->err)
		return sticky(r);
	if (!len)
		return 0;
	/* A UTF-8 byte order mark is not JSON; step over it. */
	if (!r->base && !r->started && len >= 3 && buf[0] == 0xef &&
	    buf[1] == 0xbb && buf[2] == 0xbf) {
		buf += 3;
		len -= 3;
		r->base = 3;
	}
	st = yajl_parse(r->yh, buf, len);
	if (st == yajl_status_client_canceled || r->err)
		return sticky(r);
	if (st != yajl_status_ok)
		return syntax_error(r, buf, len);
	r->base += len;
	return 0;
}

int json_reader_finish(struct json_reader *r)
{
	yajl_status st;
	int err;

	if (r->err)
		return sticky(r);
	st = yajl_complete_parse(r->yh);
	if (st == yajl_status_client_canceled || r->err)
		return sticky(r);
	if (st != yajl_status_ok)
		return syntax_error(r, NULL, 0);
	if (!r->started) {
		jr_fail(
		    r, PS_ERR_FORMAT,
		    "%s: no JSON value in %llu bytes; is this a Chrome trace "
		    "event file?",
		    r->name, (unsigned long long)r->base);
		return sticky(r);
	}
	/* Chrome writes a bare array as it traces: a file that stops
	 * between events (no final ']') is complete as far as it goes. */
	if (r->depth && !(r->bare_array && r->depth == 1 && !r->skip)) {
		int in_event = 0;

		for (int i = 0; i < r->depth; i++)
			in_event |= r->stack[i].kind == JR_EVENT;
		if (in_event)
			jr_fail(
			    r, PS_ERR_TRUNCATED,
			    "%s: the file ends at byte %llu inside the event "
			    "that starts at byte %llu; the trace is "
			    "truncated",
			    r->name, (unsigned long long)r->base,
			    (unsigned long long)r->ev.start);
		else
			jr_fail(
			    r, PS_ERR_TRUNCATED,
			    "%s: the file ends at byte %llu before the JSON "
			    "is complete; the trace is truncated",
			    r->name, (unsigned long long)r->base);
		return sticky(r);
	}
	/* names first, as a JSON file we wrote has them */
	if (!jr_name_string_idents(r))
		return sticky(r);
	err = json_order_replay(r->order, r->dst);
	if (err) {
		jr_fail_dst(r, err);
		return sticky(r);
	}
	return 0;
}

uint64_t json_reader_events(const struct json_reader *r)
{
	return r->events;
}

uint64_t json_reader_skipped(const struct json_reader *r)
{
	return r->skipped;
}

void json_reader_free(struct json_reader *r)
{
	if (!r)
		return;
	if (r->yh)
		yajl_free(r->yh);
	for (size_t i = 0; i < r->nids; i++)
		free(r->ids[i].text);
	free(r->ids);
	free(r->key);
	free(r->path);
	free(r->arena);
	free(r->args);
	free(r->pargs);
	json_order_free(r->order);
	free(r);
}

int json_read(const uint8_t *data, size_t len, struct ps_writer *dst)
{
	struct json_reader *r;
	int err;

	if (!data && len)
		return ps_err_detail(PS_ERR_INVAL, "json_read: NULL data");
	err = json_reader_new("input", dst, &r);
	if (err)
		return err;
	err = json_reader_feed(r, data, len);
	if (!err)
		err = json_reader_finish(r);
	json_reader_free(r);
	return err;
}

int json_read_gz(const struct json_progress *progress, gzFile gz,
		 const uint8_t *head, size_t head_len, const char *name,
		 struct ps_writer *dst)
{
	struct json_reader *r;
	uint8_t *buf;
	int err, n, zerr;

	err = json_reader_new(name, dst, &r);
	if (err)
		return err;
	buf = malloc(JR_CHUNK);
	if (!buf) {
		json_reader_free(r);
		return PS_ERR_NOMEM;
	}
	err = json_reader_feed(r, head, head_len);
	while (!err && (n = gzread(gz, buf, JR_CHUNK)) > 0) {
		err = json_reader_feed(r, buf, (size_t)n);
		if (progress && progress->fn)
			progress->fn(progress->ctx, (uint64_t)gzoffset(gz),
				     progress->total);
	}
	if (!err) {
		const char *zmsg = gzerror(gz, &zerr);

		if (zerr == Z_BUF_ERROR)
			err =
			    ps_err_detail(PS_ERR_TRUNCATED,
					  "%s: the gzip data ends early "
					  "(after "
					  "%llu bytes of JSON); the file is "
					  "truncated",
					  r->name, (unsigned long long)r->base);
		else if (zerr == Z_ERRNO)
			err = ps_err_detail(PS_ERR_IO, "cannot read %s: %s",
					    r->name, strerror(errno));
		else if (zerr != Z_OK)
			err = ps_err_detail(PS_ERR_FORMAT,
					    "%s: corrupt gzip data after %llu "
					    "bytes of JSON: %s",
					    r->name,
					    (unsigned long long)r->base, zmsg);
	}
	if (!err)
		err = json_reader_finish(r);
	free(buf);
	json_reader_free(r);
	return err;
}

int json_read_fd(int fd, const char *name, struct ps_writer *dst)
{
	int own = dup(fd), err;
	gzFile gz;

	if (own < 0)
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s",
				     name ? name : "input", strerror(errno));
	gz = gzdopen(own, "rb");
	if (!gz) {
		close(own);
		return PS_ERR_NOMEM;
	}
	err = json_read_gz(NULL, gz, NULL, 0, name, dst);
	gzclose(gz);
	return err;
}

int json_probe(const uint8_t *data, size_t len)
{
	size_t i = 0;

	if (len >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf)
		i = 3;
	while (i < len && (data[i] == ' ' || data[i] == '\t' ||
			   data[i] == '\n' || data[i] == '\r'))
		i++;
	return i < len && (data[i] == '{' || data[i] == '[');
}

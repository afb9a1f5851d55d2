/* SPDX-License-Identifier: MIT */
/* Streaming Chrome trace event JSON reader (yajl SAX callbacks).
 *
 * A stack of nesting levels says what each JSON value means: the object
 * form's top map, the traceEvents array (or the bare top array), one event,
 * its args (flattened to dotted names), an id2 map, or the metadata map.
 * One event's fields are gathered in a small arena, because keys come in
 * any order, and when its '}' arrives the event is kept in a json_order,
 * which hands all events on at the end in the order Perfetto reads them
 * (json_order.c says why).  Names of processes and threads go out at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#include "ptscope/error.h"
#include "src/output/json.h"

#define JR_MAX_DEPTH 256
#define JR_CHUNK (256u * 1024)
/* An instant scope Perfetto does not know ("s" other than g, p, t). */
#define JR_SCOPE_UNKNOWN ((enum ps_scope)99)
#define NONE ((size_t)-1)

enum jr_kind {
	JR_ROOT_OBJ, /* the object form's top map */
	JR_EVENTS,   /* traceEvents, or the bare top array */
	JR_EVENT,    /* one event map */
	JR_ARGS,     /* inside an event's args */
	JR_ID2,	     /* an event's id2 map */
	JR_META	     /* inside the top-level metadata map */
};

struct jr_level {
	enum jr_kind kind;
	int is_array;
	uint64_t count;	 /* children seen (array index for arrays) */
	size_t path_len; /* JR_ARGS/JR_META: length of this level's name */
};

struct jr_arg {
	size_t name; /* arena offset */
	enum ps_arg_type type;
	union {
		int b;
		int64_t i;
		uint64_t u;
		double d;
	} v;
	size_t str; /* arena offset for PS_ARG_STRING */
};

/* A pid or tid: a number, or a hashed string whose text is kept. */
struct jr_ident {
	uint64_t v;
	size_t str; /* arena offset of the text when it was a string */
	int set;
};

struct jr_id {
	uint64_t v;
	int set;
};

struct jr_event {
	char ph[4];
	size_t name, cat, scope, bp; /* arena offsets or NONE */
	uint64_t ts, dur;
	int has_ts, has_dur;
	struct jr_ident pid, tid;
	struct jr_id id, id2, bind_id;
	int flow_in, flow_out;
	uint64_t start; /* byte offset of the event's '{' */
};

/* String pids/tids seen, so that those no "M" record names can be named
 * after their text when the input ends. */
struct jr_named {
	int is_thread;
	uint64_t pid, tid;
	char *text; /* owned; NULL when only a name record was seen */
	int named;  /* an "M" record named it */
};

struct json_reader {
	const char *name; /* file name for messages (borrowed) */
	struct ps_writer *dst;
	yajl_handle yh;
	int err; /* first error, sticky */
	char errmsg[512];
	uint64_t base; /* bytes fed before the current chunk */
	uint64_t events, skipped;
	int started;	/* the top-level value has begun */
	int bare_array; /* top-level value is an array */

	struct jr_level stack[JR_MAX_DEPTH];
	int depth;
	uint64_t skip; /* > 0: inside a value being ignored */

	char *key; /* last map key (owned) */
	size_t key_len, key_cap;
	char *path; /* flattened args/metadata name (owned) */
	size_t path_cap;

	struct jr_event ev;
	char *arena; /* the current event's strings (owned) */
	size_t alen, acap;
	struct jr_arg *args; /* owned */
	size_t nargs, args_cap;
	struct ps_arg *pargs; /* owned, rebuilt per event */
	size_t pargs_cap;

	struct jr_named *ids; /* owned */
	size_t nids, ids_cap;

	struct json_order *order; /* events kept until the end (owned) */
};

static uint64_t offset_now(struct json_reader *r)
{
	return r->base + yajl_get_bytes_consumed(r->yh);
}

/* Record an error (first one wins) and stop the parse. */
static int fail(struct json_reader *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct json_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (!r->err) {
		r->err = err;
		va_start(ap, fmt);
		vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
		va_end(ap);
	}
	return 0;
}

static int fail_nomem(struct json_reader *r)
{
	return fail(r, PS_ERR_NOMEM, "%s: out of memory while reading JSON",
		    r->name);
}

/* The destination writer refused something: keep its own detail. */
static int fail_dst(struct json_reader *r, int err)
{
	if (!r->err) {
		r->err = err;
		snprintf(r->errmsg, sizeof(r->errmsg), "%s",
			 ps_err_message(err));
	}
	return 0;
}

/* Copy @n bytes into the event arena, NUL-terminated; NONE on failure. */
static size_t arena_put(struct json_reader *r, const char *s, size_t n)
{
	size_t off = r->alen;

	if (json_grow((void **)&r->arena, &r->acap, r->alen + n + 1, 1)) {
		fail_nomem(r);
		return NONE;
	}
	memcpy(r->arena + off, s, n);
	r->arena[off + n] = '\0';
	r->alen += n + 1;
	return off;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A string pid/tid becomes a stable positive 31-bit number, so that every
 * format (Perfetto keeps 32-bit pids) can carry it. */
static uint64_t hash_ident(const char *s, size_t n)
{
	uint64_t h = fnv1a(s, n);

	h = (h ^ (h >> 31) ^ (h >> 62)) & 0x7fffffff;
	return h ? h : 1;
}

static int is_integer_text(const char *s, size_t n)
{
	size_t i = 0;

	if (n && s[0] == '-')
		i = 1;
	if (i == n)
		return 0;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Unsigned decimal (or 0x-prefixed hex when @hex_ok) in exactly @n bytes;
 * 0 on success, -1 if it is not one or does not fit 64 bits. */
static int parse_u64(const char *s, size_t n, int hex_ok, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10, d;
	size_t i = 0;

	if (hex_ok && n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == n)
		return -1;
	for (; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* A JSON number of microseconds (text, any form) → nanoseconds, rounded
 * to the nearest; exact, with no binary floating point on the way.
 * Returns 0, or -1 (negative, not a number, out of range). */
/* Exact decimal µs → ns (rounded half up) for integer text. */
static int parse_us_exact(const char *s, size_t n, uint64_t *ns)
{
	char digits[400];
	size_t nd = 0, i = 0;
	long point = 0, exp10 = 0;
	int seen_point = 0, seen_digit = 0, exp_neg = 0;
	uint64_t v = 0;

	if (i < n && (s[i] == '-' || s[i] == '+')) {
		if (s[i] == '-')
			return -1;
		i++;
	}
	for (; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9') {
			seen_digit = 1;
			if (!nd && c == '0') { /* leading zero */
				if (seen_point)
					point--;
				continue;
			}
			if (nd == sizeof(digits))
				return -1;
			digits[nd++] = c;
			if (!seen_point)
				point++;
		} else if (c == '.' && !seen_point) {
			seen_point = 1;
		} else {
			break;
		}
	}
	if (!seen_digit)
		return -1;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			exp_neg = s[i++] == '-';
		if (i == n)
			return -1;
		for (; i < n; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (s[i] - '0');
		}
		point += exp_neg ? -exp10 : exp10;
	}
	if (i != n)
		return -1;
	point += 3; /* µs → ns: digits before this index are whole ns */
	if (point > 20)
		return nd ? -1 : (*ns = 0, 0);
	for (long k = 0; k < point; k++) {
		unsigned d = (size_t)k < nd ? (unsigned)(digits[k] - '0') : 0;

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (point >= 0 && (size_t)point < nd && digits[point] >= '5') {
		if (v == UINT64_MAX)
			return -1;
		v++;
	}
	*ns = v;
	return 0;
}

/* A fractional or exponent µs value, computed exactly as Perfetto's JSON
 * importer does (integer part + fraction digits / 10^k as doubles, times a
 * power of ten, then rounded µs * 1000), so that a trace converted from JSON
 * keeps the very nanoseconds Perfetto shows for the JSON itself. */
static int parse_us_like_perfetto(const char *s, size_t n, uint64_t *ns)
{
	uint64_t ip = 0, fp = 0, div = 1, e = 0;
	double d, scale = 1, x;
	size_t i = 0;
	int exp_neg = 0;
	int64_t whole;

	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		ip = ip * 10 + (uint64_t)(s[i] - '0');
	if (i < n && s[i] == '.')
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			fp = fp * 10 + (uint64_t)(s[i] - '0');
			div *= 10;
		}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			exp_neg = s[i++] == '-';
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			if (e < 100000)
				e = e * 10 + (uint64_t)(s[i] - '0');
	}
	d = (double)(int64_t)ip + (double)(int64_t)fp / (double)div;
	for (uint64_t k = 0; k < e && scale < 1e300; k++)
		scale *= 10;
	d = exp_neg ? d / scale : d * scale;
	if (!(d >= 0) || d >= 9.2e15) /* ns must fit Perfetto's int64 */
		return -1;
	whole = (int64_t)d;
	if ((double)whole == d) {
		*ns = (uint64_t)whole * 1000;
		return 0;
	}
	x = d * 1000.0;
	whole = (int64_t)x;
	*ns = (uint64_t)whole + (x - (double)whole >= 0.5);
	return 0;
}

/* 1 if @s is a non-negative decimal number (JSON-like, '+' allowed);
 * *is_int says it has neither fraction nor exponent. */
static int us_syntax(const char *s, size_t n, int *is_int)
{
	size_t i = 0, d0;

	*is_int = 1;
	if (i < n && s[i] == '+')
		i++;
	d0 = i;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == d0) /* a digit must come first, as in JSON */
		return 0;
	if (i < n && s[i] == '.') {
		size_t f0 = ++i;

		*is_int = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f0)
			return 0;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t e0;

		*is_int = 0;
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		e0 = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == e0)
			return 0;
	}
	return i == n;
}

static int parse_us(const char *s, size_t n, uint64_t *ns)
{
	int is_int;

	if (!us_syntax(s, n, &is_int))
		return -1;
	if (is_int)
		return parse_us_exact(s, n, ns);
	return parse_us_like_perfetto(s[0] == '+' ? s + 1 : s,
				      s[0] == '+' ? n - 1 : n, ns);
}

/* Find or add the record of a string pid (is_thread 0) or tid. */
static struct jr_named *named_slot(struct json_reader *r, int is_thread,
				   uint64_t pid, uint64_t tid)
{
	struct jr_named *e;

	for (size_t i = r->nids; i-- > 0;) {
		e = &r->ids[i];
		if (e->is_thread == is_thread && e->pid == pid &&
		    (!is_thread || e->tid == tid))
			return e;
	}
	if (json_grow((void **)&r->ids, &r->ids_cap, r->nids + 1, sizeof(*e)))
		return NULL;
	e = &r->ids[r->nids++];
	memset(e, 0, sizeof(*e));
	e->is_thread = is_thread;
	e->pid = pid;
	e->tid = tid;
	return e;
}

/* Keep the text of a string pid/tid the first time it is seen. */
static int note_string_ident(struct json_reader *r, int is_thread, uint64_t pid,
			     uint64_t tid, const char *text)
{
	struct jr_named *e = named_slot(r, is_thread, pid, tid);

	if (!e)
		return fail_nomem(r);
	if (!e->text) {
		e->text = strdup(text);
		if (!e->text)
			return fail_nomem(r);
	}
	return 1;
}

static int set_ident(struct json_reader *r, struct jr_ident *id, int is_str,
		     const char *s, size_t n)
{
	id->set = 1;
	id->str = NONE;
	/* Numbers that are not plain non-negative integers are kept as
	 * text too, so nothing is silently changed. */
	if (!is_str && is_integer_text(s, n) && s[0] != '-' &&
	    !parse_u64(s, n, 0, &id->v))
		return 1;
	id->v = hash_ident(s, n);
	id->str = arena_put(r, s, n);
	return id->str != NONE;
}

/* Flow ids: numbers, "0x..." or decimal strings, other strings hashed. */
static void set_id(struct jr_id *id, const char *s, size_t n)
{
	id->set = 1;
	if (parse_u64(s, n, 1, &id->v))
		id->v = fnv1a(s, n);
}

static int event_field(struct json_reader *r, int is_str, const char *s,
		       size_t n, int is_bool, int b)
{
	struct jr_event *ev = &r->ev;
	const char *k = r->key;
	uint64_t ns;

	if (!strcmp(k, "ph")) {
		if (is_str && n && n < sizeof(ev->ph)) {
			memcpy(ev->ph, s, n);
			ev->ph[n] = '\0';
		}
	} else if (!strcmp(k, "name") && !is_bool) {
		ev->name = arena_put(r, s, n);
	} else if (!strcmp(k, "cat") && !is_bool) {
		ev->cat = arena_put(r, s, n);
	} else if ((!strcmp(k, "ts") || !strcmp(k, "dur")) && !is_bool) {
		if (!s || parse_us(s, n, &ns))
			return fail(r, PS_ERR_FORMAT,
				    "%s: event at byte %llu has \"%s\": %.*s, "
				    "which is not a non-negative number of "
				    "microseconds",
				    r->name, (unsigned long long)ev->start, k,
				    (int)(n > 40 ? 40 : n), s ? s : "null");
		if (k[0] == 't') {
			ev->ts = ns;
			ev->has_ts = 1;
		} else {
			ev->dur = ns;
			ev->has_dur = 1;
		}
	} else if ((!strcmp(k, "pid") || !strcmp(k, "tid")) && s && !is_bool) {
		return set_ident(r, k[0] == 'p' ? &ev->pid : &ev->tid, is_str,
				 s, n);
	} else if (!strcmp(k, "id") && s && !is_bool) {
		set_id(&ev->id, s, n);
	} else if (!strcmp(k, "bind_id") && s && !is_bool) {
		set_id(&ev->bind_id, s, n);
	} else if (!strcmp(k, "s") && is_str) {
		ev->scope = arena_put(r, s, n);
	} else if (!strcmp(k, "bp") && is_str) {
		ev->bp = arena_put(r, s, n);
	} else if (!strcmp(k, "flow_in") && is_bool) {
		ev->flow_in = b;
	} else if (!strcmp(k, "flow_out") && is_bool) {
		ev->flow_out = b;
	}
	return !r->err;
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
		return NONE;
	if (len && !lv->is_array)
		r->path[len++] = '.';
	memcpy(r->path + len, comp, clen);
	len += clen;
	r->path[len] = '\0';
	return len;
}

/* "0x" and 1-16 hex digits: how Chrome writes pointers. */
static int looks_like_pointer(const char *s, size_t n)
{
	if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return 1;
}

enum jr_vtype { V_NULL, V_BOOL, V_NUMBER, V_STRING };

/* A JSON scalar as an event argument. */
static void scalar_arg(struct jr_arg *a, enum jr_vtype t, const char *s,
		       size_t n, int b)
{
	char tmp[64];
	char *end;

	switch (t) {
	case V_NULL:
		a->type = PS_ARG_NULL;
		return;
	case V_BOOL:
		a->type = PS_ARG_BOOL;
		a->v.b = b;
		return;
	case V_STRING:
		a->type = PS_ARG_STRING;
		if (looks_like_pointer(s, n) && !parse_u64(s, n, 1, &a->v.u))
			a->type = PS_ARG_POINTER;
		return;
	case V_NUMBER:
		break;
	}
	if (is_integer_text(s, n)) {
		if (s[0] != '-' && !parse_u64(s, n, 0, &a->v.u)) {
			a->type = a->v.u > INT64_MAX ? PS_ARG_UINT : PS_ARG_INT;
			return;
		}
		if (s[0] == '-' && n < 21) {
			memcpy(tmp, s, n);
			tmp[n] = '\0';
			errno = 0;
			a->v.i = strtoll(tmp, &end, 10);
			if (!errno) {
				a->type = PS_ARG_INT;
				return;
			}
		}
	}
	if (n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	a->type = PS_ARG_DOUBLE;
	a->v.d = strtod(tmp, NULL);
}

static int add_arg(struct json_reader *r, size_t path_len, enum jr_vtype t,
		   const char *s, size_t n, int b)
{
	struct jr_arg *a;

	if (json_grow((void **)&r->args, &r->args_cap, r->nargs + 1,
		      sizeof(*a)))
		return fail_nomem(r);
	a = &r->args[r->nargs];
	memset(a, 0, sizeof(*a));
	a->name = arena_put(r, r->path, path_len);
	scalar_arg(a, t, s, n, b);
	if (a->type == PS_ARG_STRING)
		a->str = arena_put(r, s, n);
	if (r->err)
		return 0;
	r->nargs++;
	return 1;
}

static int add_meta(struct json_reader *r, size_t path_len, enum jr_vtype t,
		    const char *s, size_t n, int b)
{
	char *val;
	int err;

	if (t == V_NULL) {
		s = "null";
		n = 4;
	} else if (t == V_BOOL) {
		s = b ? "true" : "false";
		n = strlen(s);
	}
	val = strndup(s, n);
	if (!val)
		return fail_nomem(r);
	err = r->dst->ops->meta(r->dst, r->path, val);
	free(val);
	(void)path_len;
	return err ? fail_dst(r, err) : 1;
}

static void reset_event(struct json_reader *r)
{
	memset(&r->ev, 0, sizeof(r->ev));
	r->ev.name = r->ev.cat = r->ev.scope = r->ev.bp = NONE;
	r->ev.pid.str = r->ev.tid.str = NONE;
	r->ev.start = offset_now(r) ? offset_now(r) - 1 : 0;
	r->alen = 0;
	r->nargs = 0;
}

static int push(struct json_reader *r, enum jr_kind kind, int is_array,
		size_t path_len)
{
	struct jr_level *lv;

	if (r->depth == JR_MAX_DEPTH)
		return fail(r, PS_ERR_LIMIT,
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
			return fail(r, PS_ERR_FORMAT,
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
			return event_field(r, t == V_STRING,
					   t == V_NULL ? NULL : s, n,
					   t == V_BOOL, b);
		break;
	case JR_ID2:
		if (!container && (t == V_STRING || t == V_NUMBER))
			set_id(&r->ev.id2, s, n);
		break;
	case JR_ARGS:
	case JR_META:
		plen = child_path(r, lv);
		if (plen == NONE)
			return fail_nomem(r);
		if (container)
			return push(r, lv->kind, is_array, plen);
		if (lv->kind == JR_ARGS)
			return add_arg(r, plen, t, s, n, b);
		return add_meta(r, plen, t, s, n, b);
	}
	if (container)
		r->skip = 1;
	return 1;
}

static const char *astr(struct json_reader *r, size_t off)
{
	return off == NONE ? NULL : r->arena + off;
}

static const char *find_string_arg(struct json_reader *r, const char *name)
{
	for (size_t i = 0; i < r->nargs; i++)
		if (r->args[i].type == PS_ARG_STRING &&
		    !strcmp(astr(r, r->args[i].name), name))
			return astr(r, r->args[i].str);
	return NULL;
}

static int deliver(struct json_reader *r, const struct ps_event *e,
		   int with_previous)
{
	int err = json_order_add(r->order, e, with_previous);

	if (err)
		return fail_dst(r, err);
	r->events++;
	return 1;
}

/* ptscope's parent record: {"ppid": N}. */
static int emit_parent(struct json_reader *r)
{
	for (size_t i = 0; i < r->nargs; i++) {
		const struct jr_arg *a = &r->args[i];
		int err;

		if (strcmp(astr(r, a->name), "ppid") ||
		    (a->type != PS_ARG_INT && a->type != PS_ARG_UINT))
			continue;
		err = ps_write_parent(r->dst, r->ev.pid.v, a->v.u);
		return err ? fail_dst(r, err) : 1;
	}
	r->skipped++;
	return 1;
}

/* An "M" record: names for processes and threads, and ptscope's
 * parents; others ignored. */
static int emit_metadata(struct json_reader *r, const char *name)
{
	struct jr_event *ev = &r->ev;
	const char *label = find_string_arg(r, "name");
	struct jr_named *e;
	int is_thread, err;

	if (name && !strcmp(name, JSON_PARENT_RECORD))
		return emit_parent(r);
	if (!name || !label ||
	    (strcmp(name, "process_name") && strcmp(name, "thread_name"))) {
		r->skipped++;
		return 1;
	}
	is_thread = name[0] == 't';
	e = named_slot(r, is_thread, ev->pid.v, is_thread ? ev->tid.v : 0);
	if (!e)
		return fail_nomem(r);
	e->named = 1;
	err = is_thread
		  ? r->dst->ops->thread(r->dst, ev->pid.v, ev->tid.v, label)
		  : r->dst->ops->process(r->dst, ev->pid.v, label);
	return err ? fail_dst(r, err) : 1;
}

static int emit_event(struct json_reader *r)
{
	struct jr_event *ev = &r->ev;
	struct ps_event e;
	const char *ph = ev->ph, *scope;
	struct jr_id *fid;
	size_t i, k = 0;

	/* As in Perfetto's JSON importer: no pid is pid 0, and no tid is
	 * the process's main thread (tid = pid); uftrace writes its main
	 * thread's events and its name records that way. */
	if (!ev->tid.set)
		ev->tid.v = ev->pid.v;
	if (ev->pid.str != NONE &&
	    !note_string_ident(r, 0, ev->pid.v, 0, astr(r, ev->pid.str)))
		return 0;
	if (ev->tid.str != NONE &&
	    !note_string_ident(r, 1, ev->pid.v, ev->tid.v,
			       astr(r, ev->tid.str)))
		return 0;
	if (!strcmp(ph, "M"))
		return emit_metadata(r, astr(r, ev->name));
	if (json_grow((void **)&r->pargs, &r->pargs_cap, r->nargs + 1,
		      sizeof(*r->pargs)))
		return fail_nomem(r);
	for (i = 0; i < r->nargs; i++) {
		struct jr_arg *a = &r->args[i];
		struct ps_arg *p = &r->pargs[k];

		/* Counter series must be numbers; as in Perfetto, a string
		 * that reads whole as a number ("12.5") is one. */
		if (!strcmp(ph, "C") && a->type != PS_ARG_INT &&
		    a->type != PS_ARG_UINT && a->type != PS_ARG_DOUBLE) {
			const char *txt =
			    a->type == PS_ARG_STRING ? astr(r, a->str) : NULL;
			char *end;
			double d;

			if (a->type == PS_ARG_POINTER) {
				p->name = astr(r, a->name);
				p->type = PS_ARG_UINT;
				p->v.u = a->v.u;
				k++;
				continue;
			}
			if (!txt || !*txt)
				continue;
			d = strtod(txt, &end);
			if (*end)
				continue;
			p->name = astr(r, a->name);
			p->type = PS_ARG_DOUBLE;
			p->v.d = d;
			k++;
			continue;
		}
		p->name = astr(r, a->name);
		p->type = a->type;
		if (a->type == PS_ARG_STRING)
			p->v.s = astr(r, a->str);
		else
			memcpy(&p->v, &a->v, sizeof(a->v));
		k++;
	}
	memset(&e, 0, sizeof(e));
	e.pid = ev->pid.v;
	e.tid = ev->tid.v;
	e.ts = ev->ts;
	e.name = astr(r, ev->name);
	e.category = astr(r, ev->cat);
	e.args = r->pargs;
	e.nargs = k;
	fid = ev->id.set ? &ev->id : ev->id2.set ? &ev->id2 : &ev->bind_id;
	e.flow_id = fid->v;
	if (!ev->has_ts || !ph[0] || ph[1]) {
		r->skipped++;
		return 1;
	}
	switch (ph[0]) {
	case 'X':
		if (!ev->has_dur) { /* Perfetto drops an X without dur */
			r->skipped++;
			return 1;
		}
		e.type = PS_EV_COMPLETE;
		e.dur = ev->dur;
		break;
	case 'B':
		e.type = PS_EV_BEGIN;
		break;
	case 'E':
		e.type = PS_EV_END;
		break;
	case 'i':
	case 'I':
	case 'R': /* a mark: Perfetto reads it as an instant */
		e.type = PS_EV_INSTANT;
		scope = astr(r, ev->scope);
		e.scope = !scope		? PS_SCOPE_THREAD
			  : !strcmp(scope, "g") ? PS_SCOPE_GLOBAL
			  : !strcmp(scope, "p") ? PS_SCOPE_PROCESS
			  : !strcmp(scope, "t") ? PS_SCOPE_THREAD
						: JR_SCOPE_UNKNOWN;
		/* Perfetto drops a thread instant without a tid, and one
		 * with an unknown scope. */
		if (e.scope == JR_SCOPE_UNKNOWN ||
		    (e.scope == PS_SCOPE_THREAD && !ev->tid.set)) {
			r->skipped++;
			return 1;
		}
		break;
	case 'C':
		if (!k) { /* no numeric series: nothing to plot */
			r->skipped++;
			return 1;
		}
		e.type = PS_EV_COUNTER;
		break;
	case 's':
	case 't':
	case 'f':
		if (!fid->set) {
			r->skipped++;
			return 1;
		}
		e.type = ph[0] == 's'	? PS_EV_FLOW_BEGIN
			 : ph[0] == 't' ? PS_EV_FLOW_STEP
					: PS_EV_FLOW_END;
		break;
	default:
		r->skipped++;
		return 1;
	}
	if (!deliver(r, &e, 0))
		return 0;
	/* Flow events v2: a slice that is the source and/or the target of
	 * a flow names it with bind_id (or id) and flow_out / flow_in. */
	if ((e.type == PS_EV_COMPLETE || e.type == PS_EV_BEGIN) &&
	    (ev->flow_in || ev->flow_out) && (ev->bind_id.set || ev->id.set)) {
		e.type = ev->flow_in && ev->flow_out ? PS_EV_FLOW_STEP
			 : ev->flow_out		     ? PS_EV_FLOW_BEGIN
						     : PS_EV_FLOW_END;
		e.flow_id = ev->bind_id.set ? ev->bind_id.v : ev->id.v;
		e.dur = 0;
		e.nargs = 0;
		/* v2 pairs by id alone, but a flow event written as "s"/"f"
		 * (JSON, Perfetto protobuf) pairs by id, name and category:
		 * both ends must carry the same, so neither carries any. */
		e.name = e.category = NULL;
		return deliver(r, &e, 1);
	}
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
		return fail(r, PS_ERR_INTERNAL, "%s: unbalanced JSON", r->name);
	lv = &r->stack[--r->depth];
	if (lv->kind == JR_EVENT)
		return emit_event(r);
	if ((lv->kind == JR_ARGS || lv->kind == JR_META) && !lv->count &&
	    lv->path_len) {
		/* An empty object or array keeps its place as a string. */
		const char *empty = lv->is_array ? "[]" : "{}";

		r->path[lv->path_len] = '\0';
		if (lv->kind == JR_ARGS)
			return add_arg(r, lv->path_len, V_STRING, empty, 2, 0);
		return add_meta(r, lv->path_len, V_STRING, empty, 2, 0);
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
		return fail_nomem(r);
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
	fail(r, PS_ERR_FORMAT,
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

/* Name string pids/tids that no "M" record named, after their text. */
static int name_string_idents(struct json_reader *r)
{
	for (size_t i = 0; i < r->nids; i++) {
		struct jr_named *e = &r->ids[i];
		int err;

		if (e->named || !e->text)
			continue;
		err = e->is_thread
			  ? r->dst->ops->thread(r->dst, e->pid, e->tid, e->text)
			  : r->dst->ops->process(r->dst, e->pid, e->text);
		if (err)
			return fail_dst(r, err);
	}
	return 1;
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
		fail(r, PS_ERR_FORMAT,
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
			fail(r, PS_ERR_TRUNCATED,
			     "%s: the file ends at byte %llu inside the event "
			     "that starts at byte %llu; the trace is "
			     "truncated",
			     r->name, (unsigned long long)r->base,
			     (unsigned long long)r->ev.start);
		else
			fail(r, PS_ERR_TRUNCATED,
			     "%s: the file ends at byte %llu before the JSON "
			     "is complete; the trace is truncated",
			     r->name, (unsigned long long)r->base);
		return sticky(r);
	}
	/* names first, as a JSON file we wrote has them */
	if (!name_string_idents(r))
		return sticky(r);
	err = json_order_replay(r->order, r->dst);
	if (err) {
		fail_dst(r, err);
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

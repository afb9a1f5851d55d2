/* SPDX-License-Identifier: MIT */
/* The JSON reader's state, private to its three files:
 *
 *   json_read.c        the tokenizer side: yajl's callbacks, the stack of
 *                      nesting levels that says what each value is (the
 *                      top map, traceEvents, an event, its args, id2,
 *                      metadata), flattened arg names, feeding and
 *                      finishing, the entry points
 *   json_read_event.c  the event rules: one event's fields as they come,
 *                      and when its '}' arrives what it means in the
 *                      event model (as Perfetto's JSON importer reads it);
 *                      names of processes and threads; errors
 *   json_read_value.c  JSON scalars → values: microseconds → ns as
 *                      Perfetto rounds them, pids/tids and ids, arg types
 *
 * Each file uses only those below it in this list.
 */
#ifndef PTSCOPE_OUTPUT_JSON_READER_H
#define PTSCOPE_OUTPUT_JSON_READER_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_parse.h>

#include "ptscope/writer.h"
#include "src/output/json.h"

#define JR_MAX_DEPTH 256
#define JR_NONE ((size_t)-1) /* no arena offset */

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
	size_t name, cat, scope, bp; /* arena offsets or JR_NONE */
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

/* What a JSON scalar is. */
enum jr_vtype { V_NULL, V_BOOL, V_NUMBER, V_STRING };

/* ---- errors and event rules (json_read_event.c) ------------------------- */

/* Record an error (first one wins) and stop the parse: these return 0,
 * which is what a yajl callback returns to stop. */
int jr_fail(struct json_reader *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int jr_fail_nomem(struct json_reader *r);
/* The destination writer refused something: keep its own detail. */
int jr_fail_dst(struct json_reader *r, int err);

/* The rest return 1 to go on, 0 after recording an error. */

/* A scalar field (the key in r->key) of the event being read. */
int jr_event_field(struct json_reader *r, int is_str, const char *s, size_t n,
		   int is_bool, int b);
/* A scalar in the event's args / the top-level metadata, named by the
 * flattened name in r->path (@path_len bytes). */
int jr_add_arg(struct json_reader *r, size_t path_len, enum jr_vtype t,
	       const char *s, size_t n, int b);
int jr_add_meta(struct json_reader *r, size_t path_len, enum jr_vtype t,
		const char *s, size_t n, int b);
/* The event's '}': what it means, kept in r->order (names of processes
 * and threads go to the destination at once). */
int jr_emit_event(struct json_reader *r);
/* At the end: name string pids/tids that no "M" record named, after
 * their text. */
int jr_name_string_idents(struct json_reader *r);

/* ---- values (json_read_value.c) ----------------------------------------- */

uint64_t jr_fnv1a(const char *s, size_t n);
/* A string pid/tid becomes a stable positive 31-bit number, so that every
 * format (Perfetto keeps 32-bit pids) can carry it. */
uint64_t jr_hash_ident(const char *s, size_t n);
/* 1 if @s[0..n) is an optional '-' and decimal digits. */
int jr_is_integer_text(const char *s, size_t n);
/* Unsigned decimal (or 0x-prefixed hex when @hex_ok) in exactly @n bytes;
 * 0 on success, -1 if it is not one or does not fit 64 bits. */
int jr_parse_u64(const char *s, size_t n, int hex_ok, uint64_t *out);
/* A JSON number of microseconds (text, any form) → nanoseconds, rounded
 * to the nearest; exact, with no binary floating point on the way.
 * Returns 0, or -1 (negative, not a number, out of range). */
int jr_parse_us(const char *s, size_t n, uint64_t *ns);
/* Flow ids: numbers, "0x..." or decimal strings, other strings hashed. */
void jr_set_id(struct jr_id *id, const char *s, size_t n);
/* A JSON scalar as an event argument: its type and value (not a string's
 * text, which the caller keeps). */
void jr_scalar_arg(struct jr_arg *a, enum jr_vtype t, const char *s, size_t n,
		   int b);

#endif /* PTSCOPE_OUTPUT_JSON_READER_H */

/* SPDX-License-Identifier: MIT */
/* The JSON reader's event rules (see json_reader.h).
 *
 * One event's fields are gathered in a small arena, because keys come in
 * any order; its args are flattened to dotted names.  When its '}' arrives
 * the phase says what it is, following Perfetto's JSON importer where the
 * format leaves room (no tid is the main thread, an X without dur and a
 * thread instant without tid are dropped, a counter's string that reads as
 * a number is one, v2 flows bind to their slice), and the event is kept in
 * a json_order, which hands all events on at the end in the order Perfetto
 * reads them (json_order.c says why).  Names of processes and threads go
 * out at once; string pids and tids no "M" record named are named after
 * their text at the end.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json_reader.h"

/* An instant scope Perfetto does not know ("s" other than g, p, t). */
#define JR_SCOPE_UNKNOWN ((enum ps_scope)99)

/* ---- errors and the event's arena ---------------------------------------- */

int jr_fail(struct json_reader *r, int err, const char *fmt, ...)
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

int jr_fail_nomem(struct json_reader *r)
{
	return jr_fail(r, PS_ERR_NOMEM, "%s: out of memory while reading JSON",
		       r->name);
}

int jr_fail_dst(struct json_reader *r, int err)
{
	if (!r->err) {
		r->err = err;
		snprintf(r->errmsg, sizeof(r->errmsg), "%s",
			 ps_err_message(err));
	}
	return 0;
}

/* Copy @n bytes into the event arena, NUL-terminated; JR_NONE on failure. */
static size_t arena_put(struct json_reader *r, const char *s, size_t n)
{
	size_t off = r->alen;

	if (json_grow((void **)&r->arena, &r->acap, r->alen + n + 1, 1)) {
		jr_fail_nomem(r);
		return JR_NONE;
	}
	memcpy(r->arena + off, s, n);
	r->arena[off + n] = '\0';
	r->alen += n + 1;
	return off;
}

/* ---- an event's fields ----------------------------------------------------
 */

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
		return jr_fail_nomem(r);
	if (!e->text) {
		e->text = strdup(text);
		if (!e->text)
			return jr_fail_nomem(r);
	}
	return 1;
}

static int set_ident(struct json_reader *r, struct jr_ident *id, int is_str,
		     const char *s, size_t n)
{
	id->set = 1;
	id->str = JR_NONE;
	/* Numbers that are not plain non-negative integers are kept as
	 * text too, so nothing is silently changed. */
	if (!is_str && jr_is_integer_text(s, n) && s[0] != '-' &&
	    !jr_parse_u64(s, n, 0, &id->v))
		return 1;
	id->v = jr_hash_ident(s, n);
	id->str = arena_put(r, s, n);
	return id->str != JR_NONE;
}

int jr_event_field(struct json_reader *r, int is_str, const char *s, size_t n,
		   int is_bool, int b)
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
		if (!s || jr_parse_us(s, n, &ns))
			return jr_fail(
			    r, PS_ERR_FORMAT,
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
		jr_set_id(&ev->id, s, n);
	} else if (!strcmp(k, "bind_id") && s && !is_bool) {
		jr_set_id(&ev->bind_id, s, n);
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

int jr_add_arg(struct json_reader *r, size_t path_len, enum jr_vtype t,
	       const char *s, size_t n, int b)
{
	struct jr_arg *a;

	if (json_grow((void **)&r->args, &r->args_cap, r->nargs + 1,
		      sizeof(*a)))
		return jr_fail_nomem(r);
	a = &r->args[r->nargs];
	memset(a, 0, sizeof(*a));
	a->name = arena_put(r, r->path, path_len);
	jr_scalar_arg(a, t, s, n, b);
	if (a->type == PS_ARG_STRING)
		a->str = arena_put(r, s, n);
	if (r->err)
		return 0;
	r->nargs++;
	return 1;
}

int jr_add_meta(struct json_reader *r, size_t path_len, enum jr_vtype t,
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
		return jr_fail_nomem(r);
	err = r->dst->ops->meta(r->dst, r->path, val);
	free(val);
	(void)path_len;
	return err ? jr_fail_dst(r, err) : 1;
}

/* ---- what an event means ------------------------------------------------- */

static const char *astr(struct json_reader *r, size_t off)
{
	return off == JR_NONE ? NULL : r->arena + off;
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
		return jr_fail_dst(r, err);
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
		return err ? jr_fail_dst(r, err) : 1;
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
		return jr_fail_nomem(r);
	e->named = 1;
	err = is_thread
		  ? r->dst->ops->thread(r->dst, ev->pid.v, ev->tid.v, label)
		  : r->dst->ops->process(r->dst, ev->pid.v, label);
	return err ? jr_fail_dst(r, err) : 1;
}

int jr_emit_event(struct json_reader *r)
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
	if (ev->pid.str != JR_NONE &&
	    !note_string_ident(r, 0, ev->pid.v, 0, astr(r, ev->pid.str)))
		return 0;
	if (ev->tid.str != JR_NONE &&
	    !note_string_ident(r, 1, ev->pid.v, ev->tid.v,
			       astr(r, ev->tid.str)))
		return 0;
	if (!strcmp(ph, "M"))
		return emit_metadata(r, astr(r, ev->name));
	if (json_grow((void **)&r->pargs, &r->pargs_cap, r->nargs + 1,
		      sizeof(*r->pargs)))
		return jr_fail_nomem(r);
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

/* Name string pids/tids that no "M" record named, after their text. */
int jr_name_string_idents(struct json_reader *r)
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
			return jr_fail_dst(r, err);
	}
	return 1;
}

/* SPDX-License-Identifier: MIT */
/* Fuchsia trace format (FXT) reader: a whole trace in memory → ps_writer
 * calls.
 *
 * Every read goes through a bounds-checked cursor over one record, so a
 * truncated or corrupted trace ends in PS_ERR_TRUNCATED / PS_ERR_FORMAT with
 * the byte offset, never an out-of-bounds read.  Unknown record, event and
 * argument types are skipped by their size words.  String and thread tables
 * are kept per provider, as the spec asks of readers of merged archives.
 */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/fxt.h"

#define RD_STR_SLOTS (FXT_MAX_STRING_INDEX + 1)
#define RD_THR_SLOTS (FXT_MAX_THREAD_INDEX + 1)
/* Inline strings of one record plus their NULs always fit. */
#define RD_SCRATCH_SIZE (FXT_MAX_RECORD_WORDS * 8 * 2)

struct rd_thread {
	uint64_t pid, tid;
	int set;
};

/* The tables one provider's records refer to. */
struct rd_provider {
	uint32_t id;
	char **str;	/* [str_cap] owned copies, grown on demand */
	size_t str_cap; /* at most RD_STR_SLOTS */
	struct rd_thread thr[RD_THR_SLOTS];
	uint64_t ticks_per_second;
};

/* Async spans open at once that the reader pairs (block I/O). */
#define RD_ASYNC 64

struct rd {
	const uint8_t *data;
	size_t len;
	struct ps_writer *dst;
	struct rd_provider **prov; /* owned */
	size_t nprov;
	struct rd_provider *cur;
	char *scratch; /* NUL-terminated copies of inline strings (owned) */
	size_t scratch_len;
	/* Async begins waiting for their end (the last RD_ASYNC): their
	 * correlation id, process and time. */
	struct {
		uint64_t id, pid, ts;
	} async[RD_ASYNC];
	size_t nasync;
};

/* A bounds-checked view of one record. */
struct rd_cur {
	const uint8_t *p; /* first byte of the record */
	size_t words;	  /* record size */
	size_t at;	  /* next word */
	size_t off;	  /* byte offset of the record in the trace */
};

static uint64_t load64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t bits(uint64_t v, unsigned int lo, unsigned int hi)
{
	return (v >> lo) &
	       (hi - lo == 63 ? ~0ull : (1ull << (hi - lo + 1)) - 1);
}

static int cur_word(struct rd_cur *c, uint64_t *v)
{
	if (c->at >= c->words)
		return ps_err_detail(PS_ERR_FORMAT,
				     "FXT record at byte %zu is shorter (%zu "
				     "words) than its fields need",
				     c->off, c->words);
	*v = load64(c->p + c->at * 8);
	c->at++;
	return 0;
}

/* ---- providers ---------------------------------------------------------- */

static void provider_free(struct rd_provider *pv)
{
	if (!pv)
		return;
	for (size_t i = 0; i < pv->str_cap; i++)
		free(pv->str[i]);
	free(pv->str);
	free(pv);
}

static int provider_switch(struct rd *r, uint32_t id)
{
	struct rd_provider *pv, **grown;

	for (size_t i = 0; i < r->nprov; i++) {
		if (r->prov[i]->id == id) {
			r->cur = r->prov[i];
			return 0;
		}
	}
	pv = calloc(1, sizeof(*pv));
	grown = realloc(r->prov, (r->nprov + 1) * sizeof(*grown));
	if (grown)
		r->prov = grown;
	if (!pv || !grown) {
		provider_free(pv);
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for FXT provider tables");
	}
	pv->id = id;
	pv->ticks_per_second = FXT_TICKS_PER_SECOND;
	r->prov[r->nprov++] = pv;
	r->cur = pv;
	return 0;
}

static uint64_t to_ns(const struct rd *r, uint64_t ticks)
{
	uint64_t tps = r->cur->ticks_per_second;

	if (tps == FXT_TICKS_PER_SECOND)
		return ticks;
	return (uint64_t)((unsigned __int128)ticks * FXT_TICKS_PER_SECOND /
			  tps);
}

/* ---- strings and threads ------------------------------------------------ */

/* Resolve a string ref; inline content is read from the cursor and copied
 * (with a NUL) into the record's scratch space. */
static int read_str(struct rd *r, struct rd_cur *c, uint16_t ref,
		    const char **out)
{
	size_t len, words;
	char *s;

	if (ref == 0) {
		*out = "";
		return 0;
	}
	if (!(ref & FXT_STR_INLINE)) {
		*out = ref < r->cur->str_cap ? r->cur->str[ref] : NULL;
		if (!*out)
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "FXT record at byte %zu uses "
			    "string index %u before any string "
			    "record defines it",
			    c->off, ref);
		return 0;
	}
	len = ref & ~FXT_STR_INLINE;
	words = fxt_pad8(len) / 8;
	if (words > c->words - c->at)
		return ps_err_detail(PS_ERR_FORMAT,
				     "FXT record at byte %zu: an inline string "
				     "of %zu bytes runs past the record's end",
				     c->off, len);
	if (r->scratch_len + len + 1 > RD_SCRATCH_SIZE)
		return ps_err_detail(PS_ERR_FORMAT,
				     "FXT record at byte %zu holds more inline "
				     "text than a record can",
				     c->off);
	s = r->scratch + r->scratch_len;
	memcpy(s, c->p + c->at * 8, len);
	s[len] = '\0';
	r->scratch_len += len + 1;
	c->at += words;
	*out = s;
	return 0;
}

static int read_thread(struct rd *r, struct rd_cur *c, uint8_t ref,
		       uint64_t *pid, uint64_t *tid)
{
	int err;

	if (ref == 0) {
		err = cur_word(c, pid);
		return err ? err : cur_word(c, tid);
	}
	if (!r->cur->thr[ref].set)
		return ps_err_detail(PS_ERR_FORMAT,
				     "FXT record at byte %zu uses thread index "
				     "%u before any thread record defines it",
				     c->off, ref);
	*pid = r->cur->thr[ref].pid;
	*tid = r->cur->thr[ref].tid;
	return 0;
}

/* Make room for string index @idx; small traces keep small tables. */
static int grow_strings(struct rd_provider *pv, size_t idx)
{
	size_t cap = pv->str_cap ? pv->str_cap : 64;
	char **grown;

	while (cap <= idx)
		cap *= 2;
	if (cap > RD_STR_SLOTS)
		cap = RD_STR_SLOTS;
	grown = realloc(pv->str, cap * sizeof(*grown));
	if (!grown)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory reading FXT strings");
	memset(grown + pv->str_cap, 0, (cap - pv->str_cap) * sizeof(*grown));
	pv->str = grown;
	pv->str_cap = cap;
	return 0;
}

static int rec_string(struct rd *r, struct rd_cur *c, uint64_t h)
{
	uint32_t idx = (uint32_t)bits(h, 16, 30);
	size_t len = (size_t)bits(h, 32, 46);
	char *copy;

	if (fxt_pad8(len) / 8 > c->words - 1)
		return ps_err_detail(PS_ERR_FORMAT,
				     "FXT string record at byte %zu claims %zu "
				     "bytes but holds %zu",
				     c->off, len, (c->words - 1) * 8);
	if (idx == 0)
		return 0; /* index 0 is the empty string; ignored by spec */
	if (idx >= r->cur->str_cap) {
		int err = grow_strings(r->cur, idx);

		if (err)
			return err;
	}
	copy = malloc(len + 1);
	if (!copy)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory reading FXT strings");
	memcpy(copy, c->p + 8, len);
	copy[len] = '\0';
	free(r->cur->str[idx]);
	r->cur->str[idx] = copy;
	return 0;
}

static int rec_thread(struct rd *r, struct rd_cur *c, uint64_t h)
{
	uint32_t idx = (uint32_t)bits(h, 16, 23);
	uint64_t pid, tid;
	int err;

	err = cur_word(c, &pid);
	if (!err)
		err = cur_word(c, &tid);
	if (err || idx == 0)
		return err;
	r->cur->thr[idx].pid = pid;
	r->cur->thr[idx].tid = tid;
	r->cur->thr[idx].set = 1;
	return 0;
}

/* ---- arguments ---------------------------------------------------------- */

/* Parse @n arguments; unknown types are skipped.  *kept is how many landed
 * in @args.  koids come back as PS_ARG_UINT (the event model has no koid),
 * and *koid_* remember the "process" koid for kernel object records. */
static int read_args(struct rd *r, struct rd_cur *c, unsigned int n,
		     struct ps_arg *args, size_t *kept, int *has_process,
		     uint64_t *process_koid)
{
	*kept = 0;
	for (unsigned int i = 0; i < n; i++) {
		size_t start = c->at, size;
		struct rd_cur ac;
		struct ps_arg a;
		uint64_t h, v;
		unsigned int type;
		int err, keep = 1;

		err = cur_word(c, &h);
		if (err)
			return err;
		type = (unsigned int)bits(h, 0, 3);
		size = (size_t)bits(h, 4, 15);
		if (size == 0 || size > c->words - start)
			return ps_err_detail(
			    PS_ERR_FORMAT,
			    "FXT record at byte %zu: argument "
			    "%u has size %zu words, outside the "
			    "record",
			    c->off, i, size);
		/* Fields past the argument's own size are not ours. */
		ac = *c;
		ac.words = start + size;
		err = read_str(r, &ac, (uint16_t)bits(h, 16, 31), &a.name);
		if (err)
			return err;
		switch (type) {
		case FXT_ARG_NULL:
			a.type = PS_ARG_NULL;
			break;
		case FXT_ARG_INT32:
			a.type = PS_ARG_INT;
			a.v.i = (int32_t)(uint32_t)bits(h, 32, 63);
			break;
		case FXT_ARG_UINT32:
			a.type = PS_ARG_UINT;
			a.v.u = bits(h, 32, 63);
			break;
		case FXT_ARG_INT64:
		case FXT_ARG_UINT64:
		case FXT_ARG_DOUBLE:
		case FXT_ARG_POINTER:
		case FXT_ARG_KOID:
			err = cur_word(&ac, &v);
			if (err)
				return err;
			if (type == FXT_ARG_INT64) {
				a.type = PS_ARG_INT;
				a.v.i = (int64_t)v;
			} else if (type == FXT_ARG_DOUBLE) {
				a.type = PS_ARG_DOUBLE;
				memcpy(&a.v.d, &v, 8);
			} else if (type == FXT_ARG_POINTER) {
				a.type = PS_ARG_POINTER;
				a.v.u = v;
			} else {
				a.type = PS_ARG_UINT;
				a.v.u = v;
			}
			if (type == FXT_ARG_KOID && has_process &&
			    !strcmp(a.name, "process")) {
				*has_process = 1;
				*process_koid = v;
			}
			break;
		case FXT_ARG_STRING:
			a.type = PS_ARG_STRING;
			err =
			    read_str(r, &ac, (uint16_t)bits(h, 32, 47), &a.v.s);
			if (err)
				return err;
			break;
		case FXT_ARG_BOOL:
			a.type = PS_ARG_BOOL;
			a.v.b = bits(h, 32, 63) != 0;
			break;
		default:
			keep = 0; /* a newer argument type: skip it */
			break;
		}
		if (keep)
			args[(*kept)++] = a;
		c->at = start + size;
	}
	return 0;
}

/* Move the args our writer makes from ps_span_info back into @info. */
static int take_span_info(struct ps_arg *args, size_t *n,
			  struct ps_span_info *info)
{
	size_t out = 0;
	int found = 0;

	memset(info, 0, sizeof(*info));
	for (size_t i = 0; i < *n; i++) {
		const struct ps_arg *a = &args[i];

		if (a->type == PS_ARG_STRING && !strcmp(a->name, "module")) {
			info->module = a->v.s;
		} else if (a->type == PS_ARG_POINTER &&
			   !strcmp(a->name, "address")) {
			info->address = a->v.u;
		} else if (a->type == PS_ARG_STRING &&
			   !strcmp(a->name, "file")) {
			info->file = a->v.s;
		} else if (a->type == PS_ARG_UINT && a->v.u <= UINT32_MAX &&
			   !strcmp(a->name, "line")) {
			info->line = (uint32_t)a->v.u;
		} else {
			args[out++] = *a;
			continue;
		}
		found = 1;
	}
	*n = out;
	return found;
}

/* ---- records ------------------------------------------------------------ */

/* Our metadata record's string args, handed on as key/value pairs. */
static int emit_meta(struct rd *r, const struct ps_arg *args, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err;

		if (args[i].type != PS_ARG_STRING)
			continue;
		err = r->dst->ops->meta(r->dst, args[i].name, args[i].v.s);
		if (err)
			return err;
	}
	return 0;
}

static int rec_event(struct rd *r, struct rd_cur *c, uint64_t h)
{
	unsigned int etype = (unsigned int)bits(h, 16, 19);
	unsigned int nargs = (unsigned int)bits(h, 20, 23);
	struct ps_arg args[FXT_MAX_ARGS];
	struct ps_span_info info;
	struct ps_event ev;
	const char *cat, *name;
	uint64_t ts, w;
	size_t kept;
	int err;

	memset(&ev, 0, sizeof(ev));
	switch (etype) {
	case FXT_EV_INSTANT:
		ev.type = PS_EV_INSTANT;
		break;
	case FXT_EV_COUNTER:
		ev.type = PS_EV_COUNTER;
		break;
	case FXT_EV_DURATION_BEGIN:
		ev.type = PS_EV_BEGIN;
		break;
	case FXT_EV_DURATION_END:
		ev.type = PS_EV_END;
		break;
	case FXT_EV_DURATION_COMPLETE:
		ev.type = PS_EV_COMPLETE;
		break;
	case FXT_EV_FLOW_BEGIN:
	case FXT_EV_FLOW_STEP:
	case FXT_EV_FLOW_END:
		ev.type = PS_EV_FLOW_BEGIN + (etype - FXT_EV_FLOW_BEGIN);
		break;
	case FXT_EV_ASYNC_BEGIN:
	case FXT_EV_ASYNC_END:
		/* Block I/O (fxt_format.h): an async pair becomes a span
		 * on the thread's block I/O track, args from the end. */
		ev.type = PS_EV_COMPLETE;
		break;
	default:
		return 0; /* async instants and newer event types: no model
			   * for them */
	}

	err = cur_word(c, &ts);
	if (!err)
		err = read_thread(r, c, (uint8_t)bits(h, 24, 31), &ev.pid,
				  &ev.tid);
	if (!err)
		err = read_str(r, c, (uint16_t)bits(h, 32, 47), &cat);
	if (!err)
		err = read_str(r, c, (uint16_t)bits(h, 48, 63), &name);
	if (!err)
		err = read_args(r, c, nargs, args, &kept, NULL, NULL);
	if (err)
		return err;
	ev.ts = to_ns(r, ts);
	ev.category = *cat ? cat : NULL;
	ev.name = name;
	ev.args = args;
	ev.nargs = kept;

	switch (ev.type) {
	case PS_EV_INSTANT:
		/* Our extension: an optional trailing scope word. */
		if (c->at < c->words) {
			err = cur_word(c, &w);
			if (err)
				return err;
			if (w <= PS_SCOPE_GLOBAL)
				ev.scope = (enum ps_scope)w;
		}
		if (ev.category && !strcmp(ev.category, FXT_META_CATEGORY) &&
		    !strcmp(name, FXT_META_NAME))
			return emit_meta(r, args, kept);
		break;
	case PS_EV_COUNTER:
	case PS_EV_FLOW_BEGIN:
	case PS_EV_FLOW_STEP:
	case PS_EV_FLOW_END:
		err = cur_word(c, &ev.flow_id);
		if (err)
			return err;
		break;
	case PS_EV_COMPLETE:
		err = cur_word(c, &w);
		if (err)
			return err;
		if (etype == FXT_EV_ASYNC_BEGIN) {
			size_t i = r->nasync++ % RD_ASYNC;

			r->async[i].id = w;
			r->async[i].pid = ev.pid;
			r->async[i].ts = ev.ts;
			return 0;
		}
		if (etype == FXT_EV_ASYNC_END) {
			uint64_t end = ev.ts;

			for (size_t i = 0; i < RD_ASYNC && i < r->nasync; i++)
				if (r->async[i].id == w &&
				    r->async[i].pid == ev.pid) {
					ev.ts = r->async[i].ts;
					r->async[i].id = r->async[i].pid = 0;
					break;
				}
			ev.dur = end > ev.ts ? end - ev.ts : 0;
			if (ev.tid < PS_TID_MAX_REAL) /* else a foreign one */
				ev.tid |= PS_TID_BLOCK;
			break;
		}
		w = to_ns(r, w);
		ev.dur = w > ev.ts ? w - ev.ts : 0;
		break;
	case PS_EV_END:
		if (!*name)
			ev.name = NULL;
		break;
	case PS_EV_BEGIN:
		break;
	}
	if ((ev.type == PS_EV_BEGIN || ev.type == PS_EV_COMPLETE) &&
	    take_span_info(args, &ev.nargs, &info))
		ev.info = &info;
	return r->dst->ops->event(r->dst, &ev);
}

static int emit_parent(struct rd *r, uint64_t pid, const struct ps_arg *args,
		       size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (args[i].name && !strcmp(args[i].name, FXT_PARENT_ARG) &&
		    args[i].type == PS_ARG_UINT)
			return ps_write_parent(r->dst, pid, args[i].v.u);
	return 0;
}

static int rec_kernel_object(struct rd *r, struct rd_cur *c, uint64_t h)
{
	unsigned int type = (unsigned int)bits(h, 16, 23);
	struct ps_arg args[FXT_MAX_ARGS];
	uint64_t koid, pid = 0;
	int has_process = 0, err;
	const char *name;
	size_t kept;

	if (type != FXT_OBJ_PROCESS && type != FXT_OBJ_THREAD &&
	    type != FXT_OBJ_NONE)
		return 0;
	err = cur_word(c, &koid);
	if (!err)
		err = read_str(r, c, (uint16_t)bits(h, 24, 39), &name);
	if (!err)
		err = read_args(r, c, (unsigned int)bits(h, 40, 43), args,
				&kept, &has_process, &pid);
	if (err)
		return err;
	if (type == FXT_OBJ_NONE) {
		/* our metadata and parent records (fxt_format.h); other
		 * such objects mean nothing to us */
		if (!strcmp(name, FXT_PARENT_NAME))
			return emit_parent(r, koid, args, kept);
		if (strcmp(name, FXT_META_NAME))
			return 0;
		return emit_meta(r, args, kept);
	}
	if (type == FXT_OBJ_PROCESS)
		return r->dst->ops->process(r->dst, koid, name);
	return r->dst->ops->thread(r->dst, pid, koid, name);
}

static int rec_metadata(struct rd *r, struct rd_cur *c, uint64_t h)
{
	switch (bits(h, 16, 19)) {
	case FXT_META_PROVIDER_INFO:
		if (fxt_pad8(bits(h, 52, 59)) / 8 > c->words - 1)
			return ps_err_detail(PS_ERR_FORMAT,
					     "FXT provider record at byte %zu "
					     "is shorter than its name",
					     c->off);
		return provider_switch(r, (uint32_t)bits(h, 20, 51));
	case FXT_META_PROVIDER_SECTION:
		return provider_switch(r, (uint32_t)bits(h, 20, 51));
	case FXT_META_TRACE_INFO:
		if (bits(h, 20, 23) == 0 && h != FXT_MAGIC_WORD)
			return ps_err_detail(PS_ERR_FORMAT,
					     "FXT magic number record at byte "
					     "%zu is corrupt",
					     c->off);
		return 0;
	default:
		return 0;
	}
}

static int rec_init(struct rd *r, struct rd_cur *c)
{
	uint64_t tps;
	int err = cur_word(c, &tps);

	if (err)
		return err;
	if (tps == 0)
		return ps_err_detail(PS_ERR_FORMAT,
				     "FXT initialization record at byte %zu "
				     "says 0 ticks per second",
				     c->off);
	r->cur->ticks_per_second = tps;
	return 0;
}

static int read_all(struct rd *r)
{
	size_t off = 0;
	int err;

	while (off < r->len) {
		size_t left = r->len - off;
		struct rd_cur c;
		uint64_t h, words;
		unsigned int type;

		if (left < 8)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "FXT trace ends inside a record "
					     "header at byte %zu",
					     off);
		h = load64(r->data + off);
		type = (unsigned int)bits(h, 0, 3);
		words = type == FXT_REC_LARGE ? bits(h, 4, 35) : bits(h, 4, 15);
		if (words == 0)
			return ps_err_detail(
			    PS_ERR_FORMAT, "FXT record at byte %zu has size 0",
			    off);
		if (words > left / 8)
			return ps_err_detail(
			    PS_ERR_TRUNCATED,
			    "FXT record at byte %zu needs %llu "
			    "bytes but the trace ends %zu bytes "
			    "later",
			    off, (unsigned long long)words * 8, left);
		c.p = r->data + off;
		c.words = (size_t)words;
		c.at = 1;
		c.off = off;
		r->scratch_len = 0;

		switch (type) {
		case FXT_REC_METADATA:
			err = rec_metadata(r, &c, h);
			break;
		case FXT_REC_INITIALIZATION:
			err = rec_init(r, &c);
			break;
		case FXT_REC_STRING:
			err = rec_string(r, &c, h);
			break;
		case FXT_REC_THREAD:
			err = rec_thread(r, &c, h);
			break;
		case FXT_REC_EVENT:
			err = rec_event(r, &c, h);
			break;
		case FXT_REC_KERNEL_OBJECT:
			err = rec_kernel_object(r, &c, h);
			break;
		default:
			err = 0; /* blobs, logs, scheduling, ...: skipped */
			break;
		}
		if (err)
			return err;
		off += (size_t)words * 8;
	}
	return 0;
}

int fxt_probe(const uint8_t *data, size_t len)
{
	return data && len >= 8 && load64(data) == FXT_MAGIC_WORD;
}

int fxt_read(const uint8_t *data, size_t len, struct ps_writer *dst)
{
	struct rd r;
	int err;

	if (!data || !dst || !dst->ops)
		return ps_err_detail(PS_ERR_INVAL,
				     "fxt_read needs trace bytes and a "
				     "destination writer");
	if (!fxt_probe(data, len))
		return ps_err_detail(len < 8 ? PS_ERR_TRUNCATED : PS_ERR_FORMAT,
				     "not a Fuchsia trace: byte 0 does not "
				     "hold the FXT magic number record");
	memset(&r, 0, sizeof(r));
	r.data = data;
	r.len = len;
	r.dst = dst;
	r.scratch = malloc(RD_SCRATCH_SIZE);
	err = r.scratch ? provider_switch(&r, UINT32_MAX)
			: ps_err_detail(PS_ERR_NOMEM,
					"out of memory reading an FXT trace");
	if (!err)
		err = read_all(&r);
	for (size_t i = 0; i < r.nprov; i++)
		provider_free(r.prov[i]);
	free(r.prov);
	free(r.scratch);
	return err;
}

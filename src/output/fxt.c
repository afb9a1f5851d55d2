/* SPDX-License-Identifier: MIT */
/* Fuchsia trace format (FXT) writer.
 *
 * Records are built in a 64 KiB staging buffer and handed to the sink in
 * large writes.  Strings and threads are interned into the format's tables
 * (15-bit string indices, 8-bit thread indices); when a table is full a
 * slot not referenced lately is reassigned (CLOCK, a second-chance
 * approximation of LRU whose hit costs one store) and its record written
 * again, so any number of distinct names fits.  A pointer-keyed cache in
 * front of the content hash makes a repeated name cost one strcmp, not
 * strlen + hash, and nothing more than the cache probe while the producer
 * promises that its strings are stable (ps_writer.stable_epoch).  Span
 * BEGINs and ENDs from such a producer are copied from per-function
 * templates.
 * See docs/format-fxt.md.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/fxt.h"
#include "src/output/sink.h"

#define FXT_BUF_SIZE (1u << 16) /* > FXT_MAX_RECORD_WORDS * 8 */
#define FXT_BUF_SLACK 64	/* >= sizeof(fxt_span_memo.argw) */

#define STR_SLOTS (FXT_MAX_STRING_INDEX + 1) /* slot 0: the empty string */
#define STR_HASH_SIZE (1u << 16)	     /* 2x slots, power of two */
#define PCACHE_BITS 14
#define PCACHE_SIZE (1u << PCACHE_BITS)

#define MEMO_BITS 10 /* span memos: the distinct functions hot at once */
#define MEMO_SIZE (1u << MEMO_BITS)

#define THR_SLOTS (FXT_MAX_THREAD_INDEX + 1) /* slot 0: unused */
#define THR_HASH_SIZE 1024u

/* String values longer than this are written inline in their event rather
 * than spending a table slot (they are rarely repeated). */
#define FXT_INTERN_VALUE_MAX 1024

struct fxt_str_slot {
	char *s;       /* owned copy, NUL-terminated; NULL if unused */
	uint32_t len;  /* bytes, at most FXT_MAX_STRING_LEN */
	uint32_t hash; /* of the (possibly clipped) content */
	uint32_t gen;  /* bumped when the slot is reassigned */
	uint32_t ref;  /* CLOCK mark: 0 if unused since the hand passed,
			* else the writer's seq at the last use, with
			* REF_NEW while that was the first */
};

struct fxt_pcache_entry {
	const char *p;	/* a caller's pointer last seen for slot */
	uint64_t epoch; /* stable epoch in which p was seen, 0: none */
	uint32_t gen;	/* slot's gen then */
	uint16_t slot;
};

/* One argument ready to encode: header without its size, an optional
 * value word, an optional inline value stream. */
struct fxt_warg {
	uint64_t hdr;
	uint64_t val;
	const char *inl;
	size_t inl_len;
	uint8_t has_val;
	uint8_t is_inline;
};

/* A span BEGIN prepared in a stable epoch (ps_writer.stable_epoch): the
 * decoder writes the same name, category and span info for every call
 * of a function, so while the epoch lasts and none of the slots was
 * reassigned a BEGIN is this record with the thread and time filled in,
 * and an END (no category) is its two words. */
struct fxt_span_memo {
	uint64_t epoch; /* 0: unused */
	const char *name, *cat;
	struct ps_span_info info;
	uint8_t has_info;
	uint8_t nslot;
	uint8_t nargw; /* words in argw */
	uint16_t name_ref;
	uint64_t stamp;	   /* fxt_writer.evictions when last confirmed */
	uint64_t hdr;	   /* BEGIN header word without the thread ref */
	uint64_t argw[6];  /* the span info args, encoded */
	uint16_t slot[10]; /* string slots the record refers to */
	uint32_t gen[10];  /* their gens then */
};

_Static_assert(sizeof(((struct fxt_span_memo *)0)->argw) <= FXT_BUF_SLACK,
	       "memo_span copies argw whole into the buffer's slack");

struct fxt_thr_slot {
	uint64_t pid, tid;
	uint32_t hash;
	uint32_t ref; /* CLOCK mark: 0 unused, 1 used, REF_NEW added */
};

struct fxt_writer {
	struct ps_writer base; /* first: ps_writer is a prefix of us */
	uint8_t *buf;	       /* staging for the sink (owned) */
	size_t len;

	struct fxt_str_slot *str;    /* [STR_SLOTS] (owned) */
	uint16_t *str_hash;	     /* [STR_HASH_SIZE]: slot or 0 */
	struct fxt_pcache_entry *pc; /* [PCACHE_SIZE] (owned) */
	uint32_t str_used;	     /* slots handed out so far */
	uint32_t str_hand;	     /* CLOCK hand: next slot to consider */
	uint32_t seq;		     /* stamp of the event being prepared */
	uint64_t evictions;	     /* string slots reassigned so far */

	struct fxt_thr_slot thr[THR_SLOTS];
	uint16_t thr_hash[THR_HASH_SIZE];
	uint32_t thr_used;
	uint32_t thr_hand;
	uint16_t thr_last; /* slot of the last thread looked up, 0: none */

	struct fxt_span_memo *memo; /* [MEMO_SIZE] (owned) */
};

static inline struct fxt_writer *to_fxt(struct ps_writer *w)
{
	return (struct fxt_writer *)w;
}

/* ---- staging buffer ---------------------------------------------------- */

static int buf_drain(struct fxt_writer *w)
{
	int err = 0;

	if (w->len)
		err = ps_sink_write(w->base.sink, w->buf, w->len);
	w->len = 0;
	return err;
}

/* Room for @n more bytes (n <= FXT_BUF_SIZE); returns where to write. */
static inline uint8_t *buf_reserve(struct fxt_writer *w, size_t n, int *err)
{
	uint8_t *p;

	if (w->len + n > FXT_BUF_SIZE) {
		*err = buf_drain(w);
		if (*err)
			return NULL;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

static inline uint8_t *put_word(uint8_t *p, uint64_t v)
{
	uint64_t le = htole64(v); /* FXT words are little-endian */

	memcpy(p, &le, 8);
	return p + 8;
}

/* @len bytes of @s, zero-padded to a whole number of words. */
static inline uint8_t *put_stream(uint8_t *p, const char *s, size_t len)
{
	size_t padded = fxt_pad8(len);

	memcpy(p, s, len);
	memset(p + len, 0, padded - len);
	return p + padded;
}

/* ---- hashing ------------------------------------------------------------ */

static uint32_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
	uint64_t k;

	while (len >= 8) {
		memcpy(&k, s, 8);
		h = (h ^ k) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
		s += 8;
		len -= 8;
	}
	k = 0;
	memcpy(&k, s, len);
	h = (h ^ k) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

static inline uint32_t hash_u64x2(uint64_t a, uint64_t b)
{
	uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ (b + 0x632be59bd9b4e019ull);

	h *= 0xc4ceb9fe1a85ec53ull;
	return (uint32_t)(h >> 32);
}

static inline uint32_t pcache_index(const char *p)
{
	return (uint32_t)(((uintptr_t)p * 0x9e3779b97f4a7c15ull) >>
			  (64 - PCACHE_BITS));
}

/* Remove the entry at @pos from a linear-probing table of slot numbers,
 * shifting later members of the cluster back so lookups stay correct. */
static void probe_delete(uint16_t *tab, uint32_t mask, uint32_t pos,
			 const uint32_t *(*home_of)(const void *, uint16_t),
			 const void *ctx)
{
	uint32_t i = pos, j = pos;

	for (;;) {
		uint32_t k;

		j = (j + 1) & mask;
		if (!tab[j])
			break;
		k = *home_of(ctx, tab[j]) & mask;
		/* Move tab[j] into the hole unless its home lies
		 * cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		tab[i] = tab[j];
		i = j;
	}
	tab[i] = 0;
}

/* ---- CLOCK reuse ---------------------------------------------------------
 *
 * A use stores the writer's seq in the slot's mark.  When a table is full
 * the hand sweeps: a slot used again since it was added or since the hand
 * last passed loses its mark and is passed over (its second chance); the
 * first other one is reused, so names used once go first and names in
 * use stay.  A slot marked with the current seq belongs to the record
 * being prepared and is never taken, so a record's refs stay valid until
 * it is written. */

#define REF_NEW 0x80000000u /* mark of a slot not used since it was added */

static inline void str_mark(struct fxt_writer *w, uint16_t slot)
{
	w->str[slot].ref = w->seq;
}

/* Start preparing a record: a new seq (never 0, below REF_NEW). */
static inline void next_seq(struct fxt_writer *w)
{
	if (++w->seq == REF_NEW)
		w->seq = 1;
}

static uint16_t str_victim(struct fxt_writer *w)
{
	for (;;) {
		uint32_t s = w->str_hand;
		struct fxt_str_slot *e = &w->str[s];

		w->str_hand = s == FXT_MAX_STRING_INDEX ? 1 : s + 1;
		if ((e->ref & ~REF_NEW) == w->seq)
			continue;
		if (!e->ref || (e->ref & REF_NEW))
			return (uint16_t)s;
		e->ref = 0;
	}
}

/* Threads: one per record, taken before anything else of the record. */
static uint16_t thr_victim(struct fxt_writer *w)
{
	for (;;) {
		uint32_t s = w->thr_hand;
		struct fxt_thr_slot *t = &w->thr[s];

		w->thr_hand = s == FXT_MAX_THREAD_INDEX ? 1 : s + 1;
		if (t->ref != 1)
			return (uint16_t)s;
		t->ref = 0;
	}
}

/* ---- string table ------------------------------------------------------- */

static const uint32_t *str_home(const void *ctx, uint16_t slot)
{
	const struct fxt_writer *w = ctx;

	return &w->str[slot].hash;
}

static int emit_string_record(struct fxt_writer *w, uint16_t slot)
{
	const struct fxt_str_slot *e = &w->str[slot];
	size_t words = 1 + fxt_pad8(e->len) / 8;
	int err = 0;
	uint8_t *p = buf_reserve(w, words * 8, &err);

	if (!p)
		return err;
	p = put_word(p, FXT_REC_STRING | (uint64_t)words << 4 |
			    (uint64_t)slot << 16 | (uint64_t)e->len << 32);
	put_stream(p, e->s, e->len);
	return 0;
}

/* Find or add (@s, @len) in the string table; *ref gets its index. */
static int str_intern_len(struct fxt_writer *w, const char *s, size_t len,
			  uint16_t *ref)
{
	uint32_t h = hash_bytes(s, len);
	uint32_t mask = STR_HASH_SIZE - 1;
	uint32_t i = h & mask;
	uint16_t slot;
	struct fxt_str_slot *e;
	char *copy;

	while ((slot = w->str_hash[i])) {
		e = &w->str[slot];
		if (e->hash == h && e->len == len && !memcmp(e->s, s, len)) {
			str_mark(w, slot);
			*ref = slot;
			return 0;
		}
		i = (i + 1) & mask;
	}

	copy = malloc(len + 1);
	if (!copy)
		return ps_err_detail(
		    PS_ERR_NOMEM, "out of memory interning a %zu-byte string",
		    len);
	memcpy(copy, s, len);
	copy[len] = '\0';

	if (w->str_used < FXT_MAX_STRING_INDEX) {
		slot = (uint16_t)++w->str_used;
	} else {
		/* Table full: reassign a slot not used lately. */
		uint32_t j;

		slot = str_victim(w);
		e = &w->str[slot];
		for (j = e->hash & mask; w->str_hash[j] != slot;
		     j = (j + 1) & mask)
			;
		probe_delete(w->str_hash, mask, j, str_home, w);
		free(e->s);
		e->gen++;
		w->evictions++;
		/* The probe position may have moved during deletion. */
		for (i = h & mask; w->str_hash[i]; i = (i + 1) & mask)
			;
	}
	e = &w->str[slot];
	e->s = copy;
	e->len = (uint32_t)len;
	e->hash = h;
	w->str_hash[i] = slot;
	e->ref = w->seq | REF_NEW;
	*ref = slot;
	return emit_string_record(w, slot);
}

/* The slot holding @s (non-empty) if the pointer cache knows it, else 0.
 * A pointer seen in the current stable epoch is trusted; otherwise it may
 * since hold other text (borrowed pointers), so a hit is confirmed by
 * content. */
static inline uint16_t pc_find(struct fxt_writer *w, const char *s,
			       struct fxt_pcache_entry *pc)
{
	const struct fxt_str_slot *e;
	uint64_t epoch = w->base.stable_epoch;

	if (pc->p != s)
		return 0;
	e = &w->str[pc->slot];
	if (epoch && pc->epoch == epoch && pc->gen == e->gen)
		return pc->slot;
	if (!e->s || strcmp(e->s, s))
		return 0;
	pc->epoch = epoch;
	pc->gen = e->gen;
	return pc->slot;
}

/* String ref for a NUL-terminated string; NULL and "" are ref 0. */
static int str_intern(struct fxt_writer *w, const char *s, uint16_t *ref)
{
	struct fxt_pcache_entry *pc;
	uint16_t slot;
	size_t len;
	int err;

	if (!s || !*s) {
		*ref = 0;
		return 0;
	}
	pc = &w->pc[pcache_index(s)];
	slot = pc_find(w, s, pc);
	if (slot) {
		str_mark(w, slot);
		*ref = slot;
		return 0;
	}
	len = fxt_clip_utf8(s, strlen(s), FXT_MAX_STRING_LEN);
	if (!len) { /* only continuation bytes before the cut */
		*ref = 0;
		return 0;
	}
	err = str_intern_len(w, s, len, ref);
	if (err)
		return err;
	pc->p = s;
	pc->slot = *ref;
	pc->epoch = w->base.stable_epoch;
	pc->gen = w->str[*ref].gen;
	return 0;
}

/* ---- thread table ------------------------------------------------------- */

static const uint32_t *thr_home(const void *ctx, uint16_t slot)
{
	const struct fxt_writer *w = ctx;

	return &w->thr[slot].hash;
}

static int thr_lookup(struct fxt_writer *w, uint64_t pid, uint64_t tid,
		      uint8_t *ref)
{
	uint32_t mask = THR_HASH_SIZE - 1;
	struct fxt_thr_slot *t;
	uint32_t h, i;
	uint16_t slot;
	uint8_t *p;
	int err = 0;

	h = hash_u64x2(pid, tid);
	for (i = h & mask; (slot = w->thr_hash[i]); i = (i + 1) & mask) {
		t = &w->thr[slot];
		if (t->pid == pid && t->tid == tid) {
			t->ref = 1;
			w->thr_last = slot;
			*ref = (uint8_t)slot;
			return 0;
		}
	}
	if (w->thr_used < FXT_MAX_THREAD_INDEX) {
		slot = (uint16_t)++w->thr_used;
	} else {
		uint32_t j;

		slot = thr_victim(w);
		t = &w->thr[slot];
		for (j = t->hash & mask; w->thr_hash[j] != slot;
		     j = (j + 1) & mask)
			;
		probe_delete(w->thr_hash, mask, j, thr_home, w);
		for (i = h & mask; w->thr_hash[i]; i = (i + 1) & mask)
			;
	}
	t = &w->thr[slot];
	t->pid = pid;
	t->tid = tid;
	t->hash = h;
	w->thr_hash[i] = slot;
	t->ref = 1 | REF_NEW;
	w->thr_last = slot;
	*ref = (uint8_t)slot;

	p = buf_reserve(w, 24, &err);
	if (!p)
		return err;
	p = put_word(p, FXT_REC_THREAD | 3ull << 4 | (uint64_t)slot << 16);
	p = put_word(p, pid);
	put_word(p, tid);
	return 0;
}

/* The thread's ref; the same thread as last time costs a compare. */
static inline int thr_ref(struct fxt_writer *w, uint64_t pid, uint64_t tid,
			  uint8_t *ref)
{
	struct fxt_thr_slot *t = &w->thr[w->thr_last];

	if (w->thr_last && t->pid == pid && t->tid == tid) {
		t->ref = 1;
		*ref = (uint8_t)w->thr_last;
		return 0;
	}
	return thr_lookup(w, pid, tid, ref);
}

/* ---- arguments ---------------------------------------------------------- */

/* The value part of a string argument (o->hdr already has its name). */
static inline int prep_string(struct fxt_writer *w, const char *s,
			      struct fxt_warg *o)
{
	uint16_t ref;
	size_t len;
	int err;

	o->hdr |= FXT_ARG_STRING;
	/* A known pointer whose whole text is in the table (not clipped,
	 * short enough to intern) needs no strlen. */
	ref = *s ? pc_find(w, s, &w->pc[pcache_index(s)]) : 0;
	if (ref && w->str[ref].len <= FXT_INTERN_VALUE_MAX) {
		str_mark(w, ref);
		o->hdr |= (uint64_t)ref << 32;
		return 0;
	}
	len = strlen(s);
	if (len <= FXT_INTERN_VALUE_MAX) {
		err = str_intern(w, s, &ref);
		if (err)
			return err;
		o->hdr |= (uint64_t)ref << 32;
	} else {
		o->inl = s;
		o->inl_len = fxt_clip_utf8(s, len, FXT_MAX_STRING_LEN);
		o->is_inline = 1;
	}
	return 0;
}

static int prep_arg(struct fxt_writer *w, const struct ps_arg *a,
		    struct fxt_warg *o)
{
	uint16_t name;
	int err;

	if (!a->name || !*a->name)
		return ps_err_detail(
		    PS_ERR_INVAL, "an event argument has no name; give every "
				  "argument a non-empty name");
	err = str_intern(w, a->name, &name);
	if (err)
		return err;
	o->hdr = (uint64_t)name << 16;
	o->has_val = 0;
	o->is_inline = 0;
	switch (a->type) {
	case PS_ARG_NULL:
		o->hdr |= FXT_ARG_NULL;
		return 0;
	case PS_ARG_BOOL:
		o->hdr |= FXT_ARG_BOOL | (uint64_t)(a->v.b != 0) << 32;
		return 0;
	case PS_ARG_INT:
		if (a->v.i >= INT32_MIN && a->v.i <= INT32_MAX) {
			o->hdr |= FXT_ARG_INT32 |
				  (uint64_t)(uint32_t)(int32_t)a->v.i << 32;
		} else {
			o->hdr |= FXT_ARG_INT64;
			o->val = (uint64_t)a->v.i;
			o->has_val = 1;
		}
		return 0;
	case PS_ARG_UINT:
		if (a->v.u <= UINT32_MAX) {
			o->hdr |= FXT_ARG_UINT32 | a->v.u << 32;
		} else {
			o->hdr |= FXT_ARG_UINT64;
			o->val = a->v.u;
			o->has_val = 1;
		}
		return 0;
	case PS_ARG_DOUBLE:
		o->hdr |= FXT_ARG_DOUBLE;
		memcpy(&o->val, &a->v.d, 8);
		o->has_val = 1;
		return 0;
	case PS_ARG_POINTER:
		o->hdr |= FXT_ARG_POINTER;
		o->val = a->v.u;
		o->has_val = 1;
		return 0;
	case PS_ARG_STRING:
		return prep_string(w, a->v.s ? a->v.s : "", o);
	}
	return ps_err_detail(PS_ERR_INVAL,
			     "argument \"%s\" has unknown type %d; use one of "
			     "enum ps_arg_type",
			     a->name, (int)a->type);
}

/* A span's code location as args "module", "address", "file", "line"
 * (those present), into @wa; returns how many or a negative error.  The
 * same records prep_arg() would make, without going through ps_args. */
static int prep_info(struct fxt_writer *w, const struct ps_span_info *in,
		     struct fxt_warg *wa)
{
	static const char n_module[] = "module", n_address[] = "address",
			  n_file[] = "file", n_line[] = "line";
	uint16_t name;
	int n = 0, err;

	if (in->module && *in->module) {
		err = str_intern(w, n_module, &name);
		if (!err) {
			wa[n] = (struct fxt_warg){.hdr = (uint64_t)name << 16};
			err = prep_string(w, in->module, &wa[n++]);
		}
		if (err)
			return err;
	}
	if (in->address) {
		err = str_intern(w, n_address, &name);
		if (err)
			return err;
		wa[n++] = (struct fxt_warg){.hdr = (uint64_t)name << 16 |
						   FXT_ARG_POINTER,
					    .val = in->address,
					    .has_val = 1};
	}
	if (in->file && *in->file) {
		err = str_intern(w, n_file, &name);
		if (!err) {
			wa[n] = (struct fxt_warg){.hdr = (uint64_t)name << 16};
			err = prep_string(w, in->file, &wa[n++]);
		}
		if (err)
			return err;
	}
	if (in->line) {
		err = str_intern(w, n_line, &name);
		if (err)
			return err;
		wa[n++] = (struct fxt_warg){.hdr = (uint64_t)name << 16 |
						   FXT_ARG_UINT32 |
						   (uint64_t)in->line << 32};
	}
	return n;
}

/* ---- records ------------------------------------------------------------ */

/* Write one event record.  @nwa prepared args; @extra is the event-type
 * specific word (when @has_extra). */
static int emit_event(struct fxt_writer *w, unsigned int etype, uint8_t thr,
		      uint16_t cat, uint16_t name, uint64_t ts,
		      struct fxt_warg *wa, size_t nwa, int has_extra,
		      uint64_t extra)
{
	size_t words = 2 + (has_extra ? 1 : 0), budget, i;
	uint8_t *p;
	int err = 0;

	for (i = 0; i < nwa; i++)
		words += 1 + wa[i].has_val;
	/* Inline strings share what is left of the record's maximum size;
	 * one that does not fit is clipped (at a UTF-8 boundary). */
	budget = FXT_MAX_RECORD_WORDS - words;
	for (i = 0; i < nwa; i++) {
		size_t need;

		if (!wa[i].is_inline)
			continue;
		need = fxt_pad8(wa[i].inl_len) / 8;
		if (need > budget) {
			wa[i].inl_len =
			    fxt_clip_utf8(wa[i].inl, wa[i].inl_len, budget * 8);
			need = fxt_pad8(wa[i].inl_len) / 8;
		}
		budget -= need;
		words += need;
		if (wa[i].inl_len)
			wa[i].hdr |= (uint64_t)(FXT_STR_INLINE | wa[i].inl_len)
				     << 32;
	}

	p = buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = put_word(p, FXT_REC_EVENT | (uint64_t)words << 4 |
			    (uint64_t)etype << 16 | (uint64_t)nwa << 20 |
			    (uint64_t)thr << 24 | (uint64_t)cat << 32 |
			    (uint64_t)name << 48);
	p = put_word(p, ts);
	for (i = 0; i < nwa; i++) {
		size_t aw = 1 + wa[i].has_val;

		if (wa[i].is_inline)
			aw += fxt_pad8(wa[i].inl_len) / 8;
		p = put_word(p, wa[i].hdr | (uint64_t)aw << 4);
		if (wa[i].is_inline)
			p = put_stream(p, wa[i].inl, wa[i].inl_len);
		if (wa[i].has_val)
			p = put_word(p, wa[i].val);
	}
	if (has_extra)
		put_word(p, extra);
	return 0;
}

static inline struct fxt_span_memo *memo_of(struct fxt_writer *w,
					    const char *name)
{
	return &w->memo[((uintptr_t)name * 0x9e3779b97f4a7c15ull) >>
			(64 - MEMO_BITS)];
}

static inline int same_info(const struct fxt_span_memo *m,
			    const struct ps_span_info *b)
{
	if (!b)
		return !m->has_info;
	return m->has_info && m->info.module == b->module &&
	       m->info.address == b->address && m->info.file == b->file &&
	       m->info.line == b->line;
}

/* Are the memo's string slots still what they were?  Checked once after
 * each reassignment; it also marks them used, as interning again would.
 * While no slot has been reassigned since, the hand has not moved, so
 * the marks are still set (and not REF_NEW, see memo_keep). */
static inline int memo_valid(struct fxt_writer *w, struct fxt_span_memo *m)
{
	uint8_t i;

	if (m->stamp == w->evictions)
		return 1;
	for (i = 0; i < m->nslot; i++)
		if (w->str[m->slot[i]].gen != m->gen[i])
			return 0;
	for (i = 0; i < m->nslot; i++)
		str_mark(w, m->slot[i]);
	m->stamp = w->evictions;
	return 1;
}

/* A span BEGIN or END without args from a producer with stable strings,
 * written from its memo: returns 1 when written, 0 when the general path
 * must run, or an error. */
static inline int memo_span(struct fxt_writer *w, const struct ps_event *ev)
{
	struct fxt_span_memo *m = memo_of(w, ev->name);
	uint64_t hdr;
	size_t words;
	uint8_t thr, *p;
	int err;

	if (m->epoch != w->base.stable_epoch || m->name != ev->name)
		return 0;
	if (ev->type == PS_EV_BEGIN) {
		if (m->cat != ev->category || !same_info(m, ev->info))
			return 0;
		hdr = m->hdr;
		words = 2 + m->nargw;
	} else {
		/* An END interns only the name: the marks must be as
		 * the general path would leave them already. */
		if (ev->category || m->stamp != w->evictions)
			return 0;
		hdr = FXT_REC_EVENT | 2ull << 4 |
		      (uint64_t)FXT_EV_DURATION_END << 16 |
		      (uint64_t)m->name_ref << 48;
		words = 2;
	}
	if (!memo_valid(w, m))
		return 0;
	err = thr_ref(w, ev->pid, ev->tid, &thr);
	if (err)
		return err;
	p = buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = put_word(p, hdr | (uint64_t)thr << 24);
	p = put_word(p, ev->ts);
	/* A fixed-size copy is a few moves; what lies past the record
	 * is in the buffer's slack and is overwritten or never sent. */
	memcpy(p, m->argw, sizeof(m->argw));
	return 1;
}

static void memo_slot(struct fxt_writer *w, struct fxt_span_memo *m,
		      uint16_t ref)
{
	if (ref) {
		m->slot[m->nslot] = ref;
		m->gen[m->nslot++] = w->str[ref].gen;
	}
}

/* Remember a BEGIN just prepared by the general path (only plain args:
 * at most 4 span info args, none inline). */
static void memo_keep(struct fxt_writer *w, const struct ps_event *ev,
		      uint16_t cat, uint16_t name, const struct fxt_warg *wa,
		      size_t nwa)
{
	struct fxt_span_memo *m = memo_of(w, ev->name);
	uint8_t *p = (uint8_t *)m->argw;

	m->epoch = 0;
	m->nslot = 0;
	memo_slot(w, m, cat);
	memo_slot(w, m, name);
	for (size_t i = 0; i < nwa; i++) {
		if (wa[i].is_inline)
			return;
		memo_slot(w, m, (uint16_t)(wa[i].hdr >> 16));
		if ((wa[i].hdr & 0xf) == FXT_ARG_STRING)
			memo_slot(w, m, (uint16_t)(wa[i].hdr >> 32));
		p = put_word(p, wa[i].hdr | (uint64_t)(1 + wa[i].has_val) << 4);
		if (wa[i].has_val)
			p = put_word(p, wa[i].val);
	}
	m->nargw = (uint8_t)((p - (uint8_t *)m->argw) / 8);
	m->hdr = FXT_REC_EVENT | (uint64_t)(2 + m->nargw) << 4 |
		 (uint64_t)FXT_EV_DURATION_BEGIN << 16 | (uint64_t)nwa << 20 |
		 (uint64_t)cat << 32 | (uint64_t)name << 48;
	m->name = ev->name;
	m->cat = ev->category;
	m->has_info = ev->info != NULL;
	if (ev->info)
		m->info = *ev->info;
	m->name_ref = name;
	/* Slots first used just now are REF_NEW: the next use must mark
	 * them as a second use, so the memo is not trusted blindly yet. */
	m->stamp = w->evictions;
	for (uint8_t i = 0; i < m->nslot; i++)
		if (w->str[m->slot[i]].ref & REF_NEW)
			m->stamp = UINT64_MAX;
	m->epoch = w->base.stable_epoch;
}

static int fxt_event(struct ps_writer *pw, const struct ps_event *ev)
{
	struct fxt_writer *w = to_fxt(pw);
	struct fxt_warg wa[FXT_MAX_ARGS];
	const struct ps_span_info *info = NULL;
	size_t ninfo = 0, nwa = 0, first = 0;
	uint16_t cat, name;
	unsigned int etype;
	uint64_t extra = 0;
	int has_extra = 0, err, memo;
	uint8_t thr;

	if (!ev)
		return ps_err_detail(PS_ERR_INVAL, "fxt: NULL event");
	/* Spans from a producer with stable strings (the decoder). */
	memo = w->base.stable_epoch && !ev->nargs && ev->name &&
	       (ev->type == PS_EV_BEGIN || ev->type == PS_EV_END);
	if (memo) {
		err = memo_span(w, ev);
		if (err)
			return err < 0 ? err : 0;
		memo = ev->type == PS_EV_BEGIN;
	}
	if (ev->nargs && !ev->args)
		return ps_err_detail(PS_ERR_INVAL,
				     "event \"%s\" says it has %zu args but "
				     "gives no array",
				     ev->name ? ev->name : "", ev->nargs);
	switch (ev->type) {
	case PS_EV_BEGIN:
		etype = FXT_EV_DURATION_BEGIN;
		break;
	case PS_EV_END:
		etype = FXT_EV_DURATION_END;
		break;
	case PS_EV_COMPLETE:
		etype = FXT_EV_DURATION_COMPLETE;
		has_extra = 1;
		extra = ev->ts + ev->dur;
		break;
	case PS_EV_INSTANT:
		etype = FXT_EV_INSTANT;
		if ((unsigned int)ev->scope > PS_SCOPE_GLOBAL)
			return ps_err_detail(PS_ERR_INVAL,
					     "instant \"%s\" has unknown scope "
					     "%d",
					     ev->name ? ev->name : "",
					     (int)ev->scope);
		/* Our extension: a trailing scope word, only when not
		 * thread-scoped (readers skip it by the record size). */
		if (ev->scope != PS_SCOPE_THREAD) {
			has_extra = 1;
			extra = (uint64_t)ev->scope;
		}
		break;
	case PS_EV_COUNTER:
		etype = FXT_EV_COUNTER;
		has_extra = 1;
		extra = ev->flow_id; /* the counter id, see fxt.h */
		break;
	case PS_EV_FLOW_BEGIN:
	case PS_EV_FLOW_STEP:
	case PS_EV_FLOW_END:
		etype = FXT_EV_FLOW_BEGIN + (ev->type - PS_EV_FLOW_BEGIN);
		has_extra = 1;
		extra = ev->flow_id;
		break;
	default:
		return ps_err_detail(PS_ERR_INVAL,
				     "event \"%s\" has unknown type %d",
				     ev->name ? ev->name : "", (int)ev->type);
	}

	if ((ev->type == PS_EV_BEGIN || ev->type == PS_EV_COMPLETE) &&
	    ev->info) {
		info = ev->info;
		ninfo = (info->module && *info->module) + !!info->address +
			(info->file && *info->file) + !!info->line;
	}
	if (ev->nargs + ninfo > FXT_MAX_ARGS && ev->type != PS_EV_COUNTER)
		return ps_err_detail(PS_ERR_LIMIT,
				     "event \"%s\" has %zu arguments; the "
				     "Fuchsia format allows at most %d",
				     ev->name ? ev->name : "",
				     ev->nargs + ninfo, FXT_MAX_ARGS);

	next_seq(w);
	err = thr_ref(w, ev->pid, ev->tid, &thr);
	if (!err)
		err = str_intern(w, ev->category, &cat);
	if (!err)
		err = str_intern(w, ev->name, &name);
	if (err)
		return err;

	/* A counter with more series than one record holds is split into
	 * several records with the same name, id and time. */
	do {
		size_t n = ev->nargs - first;

		if (n > FXT_MAX_ARGS)
			n = FXT_MAX_ARGS;
		for (nwa = 0; nwa < n; nwa++) {
			err = prep_arg(w, &ev->args[first + nwa], &wa[nwa]);
			if (err)
				return err;
		}
		if (ninfo) {
			err = prep_info(w, info, &wa[nwa]);
			if (err < 0)
				return err;
			nwa += (size_t)err;
		}
		if (memo)
			memo_keep(w, ev, cat, name, wa, nwa);
		err = emit_event(w, etype, thr, cat, name, ev->ts, wa, nwa,
				 has_extra, extra);
		if (err)
			return err;
		first += n;
		if (first >= ev->nargs)
			break;
		/* Only the name and category are shared with the next
		 * part: the parts' args need not fit the table at once. */
		next_seq(w);
		str_mark(w, cat);
		str_mark(w, name);
	} while (1);
	return 0;
}

/* A kernel object record, with one koid argument @arg = @val when @arg
 * is not NULL (a thread's "process"). */
static int emit_kernel_object(struct fxt_writer *w, unsigned int obj_type,
			      uint64_t koid, const char *name, const char *arg,
			      uint64_t val)
{
	uint16_t nref, pref = 0;
	size_t words = arg ? 5 : 2;
	uint8_t *p;
	int err;

	next_seq(w);
	err = str_intern(w, name, &nref);
	if (!err && arg)
		err = str_intern(w, arg, &pref);
	if (err)
		return err;
	p = buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = put_word(p, FXT_REC_KERNEL_OBJECT | (uint64_t)words << 4 |
			    (uint64_t)obj_type << 16 | (uint64_t)nref << 24 |
			    (uint64_t)(arg ? 1 : 0) << 40);
	p = put_word(p, koid);
	if (arg) {
		p = put_word(p,
			     FXT_ARG_KOID | 2ull << 4 | (uint64_t)pref << 16);
		put_word(p, val);
	}
	return 0;
}

static int fxt_process(struct ps_writer *pw, uint64_t pid, const char *name)
{
	return emit_kernel_object(to_fxt(pw), FXT_OBJ_PROCESS, pid, name, NULL,
				  0);
}

static int fxt_thread(struct ps_writer *pw, uint64_t pid, uint64_t tid,
		      const char *name)
{
	return emit_kernel_object(to_fxt(pw), FXT_OBJ_THREAD, tid, name,
				  "process", pid);
}

/* A parent as a kernel object that importers skip (fxt.h). */
static int fxt_parent(struct ps_writer *pw, uint64_t pid, uint64_t ppid)
{
	return emit_kernel_object(to_fxt(pw), FXT_OBJ_NONE, pid,
				  FXT_PARENT_NAME, FXT_PARENT_ARG, ppid);
}

/* Metadata as a kernel object record that importers skip (fxt.h). */
static int fxt_meta(struct ps_writer *pw, const char *key, const char *value)
{
	struct fxt_writer *w = to_fxt(pw);
	struct ps_arg arg = {
	    .name = key, .type = PS_ARG_STRING, .v.s = value ? value : ""};
	struct fxt_warg wa;
	size_t words, aw;
	uint16_t nref;
	uint8_t *p;
	int err;

	if (!key || !*key)
		return ps_err_detail(PS_ERR_INVAL,
				     "metadata needs a non-empty key");
	next_seq(w);
	err = str_intern(w, FXT_META_NAME, &nref);
	if (!err)
		err = prep_arg(w, &arg, &wa);
	if (err)
		return err;
	aw = 1;
	if (wa.is_inline) {
		/* header, koid and argument header come first */
		wa.inl_len = fxt_clip_utf8(wa.inl, wa.inl_len,
					   (FXT_MAX_RECORD_WORDS - 3) * 8);
		aw += fxt_pad8(wa.inl_len) / 8;
		if (wa.inl_len)
			wa.hdr |= (uint64_t)(FXT_STR_INLINE | wa.inl_len) << 32;
	}
	words = 2 + aw;
	p = buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = put_word(p, FXT_REC_KERNEL_OBJECT | (uint64_t)words << 4 |
			    (uint64_t)FXT_OBJ_NONE << 16 |
			    (uint64_t)nref << 24 | 1ull << 40);
	p = put_word(p, 0);
	p = put_word(p, wa.hdr | (uint64_t)aw << 4);
	if (wa.is_inline)
		put_stream(p, wa.inl, wa.inl_len);
	return 0;
}

static int fxt_flush(struct ps_writer *pw)
{
	return buf_drain(to_fxt(pw));
}

static void fxt_destroy(struct ps_writer *pw)
{
	struct fxt_writer *w = to_fxt(pw);

	if (!w)
		return;
	if (w->str)
		for (uint32_t i = 1; i <= w->str_used; i++)
			free(w->str[i].s);
	free(w->str);
	free(w->str_hash);
	free(w->pc);
	free(w->memo);
	free(w->buf);
	free(w);
}

static const struct ps_writer_ops fxt_ops = {
    .name = "fxt",
    .process = fxt_process,
    .thread = fxt_thread,
    .parent = fxt_parent,
    .meta = fxt_meta,
    .event = fxt_event,
    .flush = fxt_flush,
    .destroy = fxt_destroy,
};

/* Magic number, provider info ("ptscope", id 1), provider section,
 * initialization (1 tick = 1 ns). */
static int emit_header(struct fxt_writer *w)
{
	static const char provider[] = FXT_PROVIDER_NAME;
	size_t nlen = sizeof(provider) - 1;
	size_t words = 1 + 1 + fxt_pad8(nlen) / 8 + 1 + 2;
	uint8_t *p;
	int err = 0;

	p = buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = put_word(p, FXT_MAGIC_WORD);
	p = put_word(
	    p, FXT_REC_METADATA | (uint64_t)(1 + fxt_pad8(nlen) / 8) << 4 |
		   (uint64_t)FXT_META_PROVIDER_INFO << 16 |
		   (uint64_t)FXT_PROVIDER_ID << 20 | (uint64_t)nlen << 52);
	p = put_stream(p, provider, nlen);
	p = put_word(p, FXT_REC_METADATA | 1ull << 4 |
			    (uint64_t)FXT_META_PROVIDER_SECTION << 16 |
			    (uint64_t)FXT_PROVIDER_ID << 20);
	p = put_word(p, FXT_REC_INITIALIZATION | 2ull << 4);
	put_word(p, FXT_TICKS_PER_SECOND);
	return 0;
}

int fxt_writer_new(struct ps_sink *sink, struct ps_writer **out)
{
	struct fxt_writer *w;
	int err;

	if (!sink || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "fxt_writer_new needs a sink and an out "
				     "pointer");
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for the FXT writer");
	w->base.ops = &fxt_ops;
	w->base.sink = sink;
	w->str_hand = 1;
	w->thr_hand = 1;
	w->seq = 1;
	w->buf = calloc(1, FXT_BUF_SIZE + FXT_BUF_SLACK);
	w->str = calloc(STR_SLOTS, sizeof(*w->str));
	w->str_hash = calloc(STR_HASH_SIZE, sizeof(*w->str_hash));
	w->pc = calloc(PCACHE_SIZE, sizeof(*w->pc));
	w->memo = calloc(MEMO_SIZE, sizeof(*w->memo));
	if (!w->buf || !w->str || !w->str_hash || !w->pc || !w->memo) {
		fxt_destroy(&w->base);
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory for the FXT string table");
	}
	err = emit_header(w);
	if (err) {
		fxt_destroy(&w->base);
		return err;
	}
	*out = &w->base;
	return 0;
}

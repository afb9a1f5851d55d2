/* SPDX-License-Identifier: MIT */
/* The FXT writer's state, private to its three files:
 *
 *   fxt.c         records: the event, kernel object and metadata records,
 *                 their arguments, the header; the writer's ops
 *   fxt_memo.c    span templates: BEGIN/END records kept per function for
 *                 a producer whose strings are stable
 *   fxt_intern.c  the string and thread tables (interning, CLOCK reuse of
 *                 slots, the pointer cache) and their records
 *
 * fxt.c uses fxt_memo.c and fxt_intern.c; fxt_memo.c uses fxt_intern.c;
 * fxt_intern.c uses neither.  What every record needs on its hot path (the
 * staging buffer, a string or thread ref that is already in the table) is
 * inline here, so splitting the writer costs no calls per event.
 */
#ifndef PTSCOPE_OUTPUT_FXT_WRITER_H
#define PTSCOPE_OUTPUT_FXT_WRITER_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include "ptscope/writer.h"
#include "src/output/fxt_format.h"
#include "src/output/sink.h"

/* > FXT_MAX_RECORD_WORDS * 8; well above the sink's SINK_DIRECT (128 KiB),
 * so that a buffer drained because the next record does not fit goes
 * straight to the file instead of being copied there;
 * and small enough to stay in a core's L2 cache until the kernel copies
 * it to the page cache (2 MiB cost a -j1 decode of call-heavy code 7%) */
#define FXT_BUF_SIZE (1u << 18)
_Static_assert(FXT_BUF_SIZE - FXT_MAX_RECORD_WORDS * 8 >= SINK_DIRECT,
	       "a buffer drained for a record that does not fit goes straight "
	       "to the file");
#define FXT_BUF_SLACK 64 /* >= sizeof(fxt_span_memo.argw) */

#define FXT_STR_SLOTS                                                          \
	(FXT_MAX_STRING_INDEX + 1)   /* slot 0: the empty string               \
				      */
#define FXT_STR_HASH_SIZE (1u << 16) /* 2x slots, power of two */
#define FXT_PCACHE_BITS 14
#define FXT_PCACHE_SIZE (1u << FXT_PCACHE_BITS)

/* Span memos: the distinct functions hot at once, one slot each by the
 * name's address (a collision takes the general path).  At 1024 slots,
 * bench stream 4's 3000 functions, called in turn, went that way for most
 * spans: 4096 cut its decode's instructions by 9% (callgrind), for 0.6 MB
 * more; 16384 cut 2.5% more, for 2.3 MB more again. */
#define FXT_MEMO_BITS 12
#define FXT_MEMO_SIZE (1u << FXT_MEMO_BITS)

#define FXT_THR_SLOTS (FXT_MAX_THREAD_INDEX + 1) /* slot 0: unused */
#define FXT_THR_HASH_SIZE 1024u

/* String values longer than this are written inline in their event rather
 * than spending a table slot (they are rarely repeated). */
#define FXT_INTERN_VALUE_MAX 1024

/* Mark of a table slot not used since it was added (CLOCK reuse, see
 * fxt_intern.c). */
#define FXT_REF_NEW 0x80000000u

struct fxt_str_slot {
	char *s;       /* owned copy, NUL-terminated; NULL if unused */
	uint32_t len;  /* bytes, at most FXT_MAX_STRING_LEN */
	uint32_t hash; /* of the (possibly clipped) content */
	uint32_t gen;  /* bumped when the slot is reassigned */
	uint32_t ref;  /* CLOCK mark: 0 if unused since the hand passed,
			* else the writer's seq at the last use, with
			* FXT_REF_NEW while that was the first */
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
	       "fxt_memo_span copies argw whole into the buffer's slack");

struct fxt_thr_slot {
	uint64_t pid, tid;
	uint32_t hash;
	uint32_t ref; /* CLOCK mark: 0 unused, 1 used, FXT_REF_NEW added */
};

struct fxt_writer {
	struct ps_writer base; /* first: ps_writer is a prefix of us */
	uint8_t *buf;	       /* staging for the sink (owned) */
	size_t len;

	struct fxt_str_slot *str;    /* [FXT_STR_SLOTS] (owned) */
	uint16_t *str_hash;	     /* [FXT_STR_HASH_SIZE]: slot or 0 */
	struct fxt_pcache_entry *pc; /* [FXT_PCACHE_SIZE] (owned) */
	uint32_t str_used;	     /* slots handed out so far */
	uint32_t str_hand;	     /* CLOCK hand: next slot to consider */
	uint32_t seq;		     /* stamp of the event being prepared */
	uint64_t evictions;	     /* string slots reassigned so far */
	uint64_t async_id; /* correlation ids of block I/O async spans */

	struct fxt_thr_slot thr[FXT_THR_SLOTS];
	uint16_t thr_hash[FXT_THR_HASH_SIZE];
	uint32_t thr_used;
	uint32_t thr_hand;
	uint16_t thr_last; /* slot of the last thread looked up, 0: none */

	struct fxt_span_memo *memo; /* [FXT_MEMO_SIZE] (owned) */
};

static inline struct fxt_writer *to_fxt(struct ps_writer *w)
{
	return (struct fxt_writer *)w;
}

/* ---- staging buffer ---------------------------------------------------- */

static inline int fxt_buf_drain(struct fxt_writer *w)
{
	int err = 0;

	if (w->len)
		err = ps_sink_write(w->base.sink, w->buf, w->len);
	w->len = 0;
	return err;
}

/* Room for @n more bytes (n <= FXT_BUF_SIZE); returns where to write. */
static inline uint8_t *fxt_buf_reserve(struct fxt_writer *w, size_t n, int *err)
{
	uint8_t *p;

	if (w->len + n > FXT_BUF_SIZE) {
		*err = fxt_buf_drain(w);
		if (*err)
			return NULL;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

static inline uint8_t *fxt_put_word(uint8_t *p, uint64_t v)
{
	uint64_t le = htole64(v); /* FXT words are little-endian */

	memcpy(p, &le, 8);
	return p + 8;
}

/* @len bytes of @s, zero-padded to a whole number of words. */
static inline uint8_t *fxt_put_stream(uint8_t *p, const char *s, size_t len)
{
	size_t padded = fxt_pad8(len);

	memcpy(p, s, len);
	memset(p + len, 0, padded - len);
	return p + padded;
}

/* ---- the tables' hot paths (the rest is in fxt_intern.c) ---------------- */

/* A use of string slot @slot by the record being prepared. */
static inline void fxt_str_mark(struct fxt_writer *w, uint16_t slot)
{
	w->str[slot].ref = w->seq;
}

/* Start preparing a record: a new seq (never 0, below FXT_REF_NEW). */
static inline void fxt_next_seq(struct fxt_writer *w)
{
	if (++w->seq == FXT_REF_NEW)
		w->seq = 1;
}

static inline uint32_t fxt_pcache_index(const char *p)
{
	return (uint32_t)(((uintptr_t)p * 0x9e3779b97f4a7c15ull) >>
			  (64 - FXT_PCACHE_BITS));
}

/* The slot holding @s (non-empty) if the pointer cache knows it, else 0.
 * A pointer seen in the current stable epoch is trusted; otherwise it may
 * since hold other text (borrowed pointers), so a hit is confirmed by
 * content. */
static inline uint16_t fxt_pc_find(struct fxt_writer *w, const char *s,
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

/* fxt_str_intern for a string the pointer cache did not know: find or add
 * its text in the table (writing its string record when added) and
 * remember the pointer in @pc.  Returns 0 or PS_ERR_NOMEM / a sink error. */
int fxt_str_add(struct fxt_writer *w, const char *s,
		struct fxt_pcache_entry *pc, uint16_t *ref);

/* String ref for a NUL-terminated string; NULL and "" are ref 0.  Returns
 * 0 or as fxt_str_add. */
static inline int fxt_str_intern(struct fxt_writer *w, const char *s,
				 uint16_t *ref)
{
	struct fxt_pcache_entry *pc;
	uint16_t slot;

	if (!s || !*s) {
		*ref = 0;
		return 0;
	}
	pc = &w->pc[fxt_pcache_index(s)];
	slot = fxt_pc_find(w, s, pc);
	if (slot) {
		fxt_str_mark(w, slot);
		*ref = slot;
		return 0;
	}
	return fxt_str_add(w, s, pc, ref);
}

/* fxt_thr_ref for a thread other than the last one: find or add it in the
 * thread table (writing its thread record when added).  Returns 0 or a
 * sink error. */
int fxt_thr_lookup(struct fxt_writer *w, uint64_t pid, uint64_t tid,
		   uint8_t *ref);

/* The thread's ref; the same thread as last time costs a compare. */
static inline int fxt_thr_ref(struct fxt_writer *w, uint64_t pid, uint64_t tid,
			      uint8_t *ref)
{
	struct fxt_thr_slot *t = &w->thr[w->thr_last];

	if (w->thr_last && t->pid == pid && t->tid == tid) {
		t->ref = 1;
		*ref = (uint8_t)w->thr_last;
		return 0;
	}
	return fxt_thr_lookup(w, pid, tid, ref);
}

/* ---- span templates (fxt_memo.c) ---------------------------------------- */

/* A span BEGIN or END without args from a producer with stable strings,
 * written from its memo: returns 1 when written, 0 when the general path
 * must run, or a sink error. */
int fxt_memo_span(struct fxt_writer *w, const struct ps_event *ev);

/* Remember a BEGIN just prepared by the general path (only plain args:
 * at most 4 span info args, none inline); @cat and @name are its string
 * refs, @wa its @nwa prepared args. */
void fxt_memo_keep(struct fxt_writer *w, const struct ps_event *ev,
		   uint16_t cat, uint16_t name, const struct fxt_warg *wa,
		   size_t nwa);

#endif /* PTSCOPE_OUTPUT_FXT_WRITER_H */

/* SPDX-License-Identifier: MIT */
/* The FXT writer's string and thread tables (see fxt_writer.h).
 *
 * Strings and threads are interned into the format's tables (15-bit string
 * indices, 8-bit thread indices) and their string and thread records
 * written as they are added; when a table is full a slot not referenced
 * lately is reassigned (CLOCK, a second-chance approximation of LRU whose
 * hit costs one store) and its record written again, so any number of
 * distinct names fits.  A pointer-keyed cache in front of the content hash
 * makes a repeated name cost one strcmp, not strlen + hash, and nothing
 * more than the cache probe while the producer promises that its strings
 * are stable (ps_writer.stable_epoch); that hit path is inline in
 * fxt_writer.h, the misses are here.
 */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/fxt_writer.h"

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

static uint16_t str_victim(struct fxt_writer *w)
{
	for (;;) {
		uint32_t s = w->str_hand;
		struct fxt_str_slot *e = &w->str[s];

		w->str_hand = s == FXT_MAX_STRING_INDEX ? 1 : s + 1;
		if ((e->ref & ~FXT_REF_NEW) == w->seq)
			continue;
		if (!e->ref || (e->ref & FXT_REF_NEW))
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
	uint8_t *p = fxt_buf_reserve(w, words * 8, &err);

	if (!p)
		return err;
	p = fxt_put_word(p, FXT_REC_STRING | (uint64_t)words << 4 |
				(uint64_t)slot << 16 | (uint64_t)e->len << 32);
	fxt_put_stream(p, e->s, e->len);
	return 0;
}

/* Find or add (@s, @len) in the string table; *ref gets its index. */
static int str_intern_len(struct fxt_writer *w, const char *s, size_t len,
			  uint16_t *ref)
{
	uint32_t h = hash_bytes(s, len);
	uint32_t mask = FXT_STR_HASH_SIZE - 1;
	uint32_t i = h & mask;
	uint16_t slot;
	struct fxt_str_slot *e;
	char *copy;

	while ((slot = w->str_hash[i])) {
		e = &w->str[slot];
		if (e->hash == h && e->len == len && !memcmp(e->s, s, len)) {
			fxt_str_mark(w, slot);
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
	e->ref = w->seq | FXT_REF_NEW;
	*ref = slot;
	return emit_string_record(w, slot);
}

/* The slow path of fxt_str_intern (fxt_writer.h). */
int fxt_str_add(struct fxt_writer *w, const char *s,
		struct fxt_pcache_entry *pc, uint16_t *ref)
{
	size_t len;
	int err;

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

int fxt_thr_lookup(struct fxt_writer *w, uint64_t pid, uint64_t tid,
		   uint8_t *ref)
{
	uint32_t mask = FXT_THR_HASH_SIZE - 1;
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
	t->ref = 1 | FXT_REF_NEW;
	w->thr_last = slot;
	*ref = (uint8_t)slot;

	p = fxt_buf_reserve(w, 24, &err);
	if (!p)
		return err;
	p = fxt_put_word(p, FXT_REC_THREAD | 3ull << 4 | (uint64_t)slot << 16);
	p = fxt_put_word(p, pid);
	fxt_put_word(p, tid);
	return 0;
}

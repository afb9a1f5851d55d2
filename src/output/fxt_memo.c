/* SPDX-License-Identifier: MIT */
/* The FXT writer's span templates (see fxt_writer.h).
 *
 * A producer whose strings are stable (the decoder, ps_writer.stable_epoch)
 * writes the same name, category and span info for every call of a
 * function.  Its span BEGINs and ENDs are copied from a per-function
 * template of the encoded record, with the thread and time filled in,
 * as long as none of the string slots the template refers to has been
 * reassigned since; otherwise the general path in fxt.c writes the record
 * and keeps a fresh template.
 */
#include <stdint.h>
#include <string.h>

#include "src/output/fxt_writer.h"

static inline struct fxt_span_memo *memo_of(struct fxt_writer *w,
					    const char *name)
{
	return &w->memo[((uintptr_t)name * 0x9e3779b97f4a7c15ull) >>
			(64 - FXT_MEMO_BITS)];
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
 * the marks are still set (and not FXT_REF_NEW, see fxt_memo_keep). */
static inline int memo_valid(struct fxt_writer *w, struct fxt_span_memo *m)
{
	uint8_t i;

	if (m->stamp == w->evictions)
		return 1;
	for (i = 0; i < m->nslot; i++)
		if (w->str[m->slot[i]].gen != m->gen[i])
			return 0;
	for (i = 0; i < m->nslot; i++)
		fxt_str_mark(w, m->slot[i]);
	m->stamp = w->evictions;
	return 1;
}

/* A span BEGIN or END from its memo (fxt_writer.h). */
int fxt_memo_span(struct fxt_writer *w, const struct ps_event *ev)
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
	err = fxt_thr_ref(w, ev->pid, ev->tid, &thr);
	if (err)
		return err;
	p = fxt_buf_reserve(w, words * 8, &err);
	if (!p)
		return err;
	p = fxt_put_word(p, hdr | (uint64_t)thr << 24);
	p = fxt_put_word(p, ev->ts);
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

/* Remember a BEGIN just prepared by the general path (fxt_writer.h). */
void fxt_memo_keep(struct fxt_writer *w, const struct ps_event *ev,
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
		p = fxt_put_word(p, wa[i].hdr | (uint64_t)(1 + wa[i].has_val)
						    << 4);
		if (wa[i].has_val)
			p = fxt_put_word(p, wa[i].val);
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
	/* Slots first used just now are FXT_REF_NEW: the next use must mark
	 * them as a second use, so the memo is not trusted blindly yet. */
	m->stamp = w->evictions;
	for (uint8_t i = 0; i < m->nslot; i++)
		if (w->str[m->slot[i]].ref & FXT_REF_NEW)
			m->stamp = UINT64_MAX;
	m->epoch = w->base.stable_epoch;
}

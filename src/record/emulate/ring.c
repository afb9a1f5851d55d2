/* SPDX-License-Identifier: MIT */
/* The per-thread snapshot ring (see ring.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/emulate/ring.h"

int emu_ring_init(struct emu_ring *r, size_t size, size_t psb_gap)
{
	if (!r || !size || !psb_gap)
		return PS_ERR_INVAL;
	memset(r, 0, sizeof(*r));
	/* PSBs are at least psb_gap apart, so this many cover the ring
	 * (+2: the one partly overwritten and the very first). */
	r->psb_cap = size / psb_gap + 2;
	r->buf = malloc(size);
	r->psb = calloc(r->psb_cap, sizeof(*r->psb));
	if (!r->buf || !r->psb) {
		emu_ring_fini(r);
		return PS_ERR_NOMEM;
	}
	r->size = size;
	return 0;
}

void emu_ring_fini(struct emu_ring *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r->psb);
	r->buf = NULL;
	r->psb = NULL;
}

void emu_ring_put(struct emu_ring *r, const uint8_t *p, size_t n)
{
	size_t first = r->size - r->at;

	if (first > n)
		first = n;
	memcpy(r->buf + r->at, p, first);
	memcpy(r->buf, p + first, n - first);
	r->head += n;
	r->at += n;
	if (r->at >= r->size)
		r->at -= r->size;
}

void emu_ring_mark_psb(struct emu_ring *r)
{
	if (r->psb_count == r->psb_cap) {
		r->psb_first = (r->psb_first + 1) % r->psb_cap;
		r->psb_count--;
	}
	r->psb[(r->psb_first + r->psb_count) % r->psb_cap] = r->head;
	r->psb_count++;
	r->last_psb = r->head;
}

int emu_ring_copy(const struct emu_ring *r, size_t extra, uint8_t **buf,
		  size_t *len)
{
	uint64_t oldest = r->head > r->size ? r->head - r->size : 0;
	uint64_t from = UINT64_MAX;
	size_t i, n, at, first;
	uint8_t *out;

	for (i = 0; i < r->psb_count; i++) {
		uint64_t p = r->psb[(r->psb_first + i) % r->psb_cap];

		if (p >= oldest && p < r->head) {
			from = p;
			break;
		}
	}
	if (from == UINT64_MAX)
		return PS_ERR_NOT_FOUND;
	n = (size_t)(r->head - from);
	out = malloc(n + extra ? n + extra : 1);
	if (!out)
		return PS_ERR_NOMEM;
	at = (size_t)(from % r->size);
	first = r->size - at;
	if (first > n)
		first = n;
	memcpy(out, r->buf + at, first);
	memcpy(out + first, r->buf, n - first);
	*buf = out;
	*len = n;
	return 0;
}

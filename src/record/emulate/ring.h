/* SPDX-License-Identifier: MIT */
/* The per-thread snapshot ring (prefix emu_ring_): the newest @size bytes
 * of a thread's PT stream plus where its PSBs start, so a snapshot can
 * begin at the oldest PSB still whole in the ring. */
#ifndef PTSCOPE_RECORD_EMULATE_RING_H
#define PTSCOPE_RECORD_EMULATE_RING_H

#include <stddef.h>
#include <stdint.h>

struct emu_ring {
	uint8_t *buf; /* owned, size bytes */
	size_t size;
	uint64_t head; /* bytes ever written; buf[head % size] is next */
	size_t at;     /* head % size, kept to spare a division per put */
	uint64_t *psb; /* owned: stream offsets of PSBs, a circular queue */
	size_t psb_cap, psb_first, psb_count;
	uint64_t last_psb; /* the newest of them (psb_count > 0) */
};

/* @psb_gap: the least distance between two PSBs, to size the PSB queue.
 * Returns 0, PS_ERR_INVAL or PS_ERR_NOMEM. */
int emu_ring_init(struct emu_ring *r, size_t size, size_t psb_gap);
void emu_ring_fini(struct emu_ring *r);

/* Append @n bytes (n <= size). */
void emu_ring_put(struct emu_ring *r, const uint8_t *p, size_t n);

/* The next byte put starts a PSB. */
void emu_ring_mark_psb(struct emu_ring *r);

/* Stream offset of the newest PSB, or UINT64_MAX if none (asked after
 * every packet: inline). */
static inline uint64_t emu_ring_last_psb(const struct emu_ring *r)
{
	return r->psb_count ? r->last_psb : UINT64_MAX;
}

/* Copy from the oldest PSB still whole in the ring to the head into a
 * malloc'ed buffer with @extra spare bytes at its end (*len excludes
 * them).  Returns 0, PS_ERR_NOMEM, PS_ERR_NOT_FOUND (no PSB in the ring). */
int emu_ring_copy(const struct emu_ring *r, size_t extra, uint8_t **buf,
		  size_t *len);

#endif /* PTSCOPE_RECORD_EMULATE_RING_H */

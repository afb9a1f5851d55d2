/* SPDX-License-Identifier: MIT */
/* The AUX area of an intel_pt event mapped read-only, i.e. in overwrite
 * ("snapshot") mode (prefix aux_): the hardware writes round and round,
 * and the kernel's aux_head says where it would write next.  A snapshot
 * wants the newest bytes in order: [head, size) then [0, head) once the
 * ring has wrapped, else just [0, head).
 */
#ifndef PTSCOPE_RECORD_AUX_RING_H
#define PTSCOPE_RECORD_AUX_RING_H

#include <stddef.h>
#include <stdint.h>

/* 1 if the ring of @size bytes has wrapped: its head counts past @size
 * (kernels that report a running total), @written (bytes the AUX
 * records reported so far) reaches @size, or a byte after the head is
 * not zero (the kernel hands the area over zeroed, and PT data always
 * holds non-zero packets). */
int aux_wrapped(const uint8_t *base, uint64_t size, uint64_t head,
		uint64_t written);

/* Copy the valid bytes of the ring at @base (@size bytes, a power of two
 * multiple of the page size) whose writer stands at @head into a malloc'ed
 * *@out of *@len bytes, oldest first.  Returns 0, PS_ERR_NOT_FOUND (the
 * ring is empty), PS_ERR_INVAL (@size 0) or PS_ERR_NOMEM. */
int aux_extract(const uint8_t *base, uint64_t size, uint64_t head, int wrapped,
		uint8_t **out, size_t *len);

#endif /* PTSCOPE_RECORD_AUX_RING_H */

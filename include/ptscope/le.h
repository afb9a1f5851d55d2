/* SPDX-License-Identifier: MIT */
/* Little-endian loads from byte buffers (perf records, perf.data): memcpy,
 * never a pointer cast, so unaligned input is fine.  The caller checks the
 * bounds.  Internal to the decoder library. */
#ifndef PTSCOPE_LE_H
#define PTSCOPE_LE_H

#include <stdint.h>
#include <string.h>

static inline uint16_t le_rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t le_rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t le_rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif /* PTSCOPE_LE_H */

/* SPDX-License-Identifier: MIT */
/* Bytes built by appending, little-endian fields and length-prefixed
 * strings (header-only): the recording file's sections, the kernel
 * events' sections and the Perfetto writer's sample packets are encoded
 * with it.  Running out of memory is remembered (.oom), not returned by
 * every append: the encoder checks it once, when it takes the bytes. */
#ifndef PTSCOPE_BYTES_H
#define PTSCOPE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Zeroed, it is empty; free(p) releases it. */
struct ps_bytes {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static inline void ps_bytes_put(struct ps_bytes *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		uint8_t *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
}

/* The low @n bytes of @v, least significant first. */
static inline void ps_bytes_le(struct ps_bytes *b, uint64_t v, size_t n)
{
	uint8_t t[8];

	for (size_t i = 0; i < n && i < 8; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	ps_bytes_put(b, t, n < 8 ? n : 8);
}

static inline void ps_bytes_u8(struct ps_bytes *b, uint8_t v)
{
	ps_bytes_le(b, v, 1);
}

static inline void ps_bytes_u16(struct ps_bytes *b, uint16_t v)
{
	ps_bytes_le(b, v, 2);
}

static inline void ps_bytes_u32(struct ps_bytes *b, uint32_t v)
{
	ps_bytes_le(b, v, 4);
}

static inline void ps_bytes_u64(struct ps_bytes *b, uint64_t v)
{
	ps_bytes_le(b, v, 8);
}

/* A u32 length, then the bytes (NULL: the empty string). */
static inline void ps_bytes_str(struct ps_bytes *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > UINT32_MAX) {
		b->oom = 1;
		return;
	}
	ps_bytes_u32(b, (uint32_t)n);
	ps_bytes_put(b, s ? s : "", n);
}

#endif /* PTSCOPE_BYTES_H */

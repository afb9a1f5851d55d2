/* SPDX-License-Identifier: MIT */
/* SAMPLES records: writing and walking them (samples.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/recording/samples.h"

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t recs_u64(const uint8_t *p, size_t i)
{
	return le(p + 8 * i, 8);
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int recs_put(struct recs_buf *b, uint64_t time, const uint64_t *chain,
	     size_t nchain, const uint64_t *regs, size_t nregs,
	     const uint8_t *stack, size_t stack_len, const uint64_t *lbr,
	     size_t nlbr)
{
	size_t size =
	    RECS_HEADER + 8 * (nchain + nregs + 2 * nlbr) + pad8(stack_len);
	uint8_t *p;

	if (nchain > 0xffff || nregs > 0xffff || nlbr > 0xffff ||
	    size > 0xffffffffu)
		return PS_ERR_INVAL;
	if (b->len + size > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		void *np;

		while (cap < b->len + size)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return PS_ERR_NOMEM;
		b->p = np;
		b->cap = cap;
	}
	p = b->p + b->len;
	memset(p, 0, size);
	put_le(p, size, 4);
	put_le(p + 4, time, 8);
	put_le(p + 12, nchain, 2);
	put_le(p + 14, nregs, 2);
	put_le(p + 16, nlbr, 2);
	put_le(p + 20, stack_len, 4);
	p += RECS_HEADER;
	for (size_t i = 0; i < nchain; i++, p += 8)
		put_le(p, chain[i], 8);
	for (size_t i = 0; i < nregs; i++, p += 8)
		put_le(p, regs[i], 8);
	if (stack_len)
		memcpy(p, stack, stack_len);
	p += pad8(stack_len);
	for (size_t i = 0; i < 2 * nlbr; i++, p += 8)
		put_le(p, lbr[i], 8);
	b->len += size;
	b->count++;
	return 0;
}

int recs_next(const uint8_t *data, size_t len, size_t *off,
	      struct recs_sample *out)
{
	const uint8_t *p;
	size_t left, size, need;

	if (!data || *off >= len)
		return 0;
	p = data + *off;
	left = len - *off;
	if (left < RECS_HEADER)
		return ps_err_detail(PS_ERR_FORMAT,
				     "a sample record is cut short");
	size = (size_t)le(p, 4);
	memset(out, 0, sizeof(*out));
	out->time = le(p + 4, 8);
	out->nchain = (size_t)le(p + 12, 2);
	out->nregs = (size_t)le(p + 14, 2);
	out->nlbr = (size_t)le(p + 16, 2);
	out->flags = (unsigned)le(p + 18, 2);
	out->stack_len = (size_t)le(p + 20, 4);
	need = RECS_HEADER + 8 * (out->nchain + out->nregs + 2 * out->nlbr) +
	       pad8(out->stack_len);
	if (size < need || size > left || size % 8)
		return ps_err_detail(PS_ERR_FORMAT,
				     "a sample record is damaged (size %zu, "
				     "fields need %zu)",
				     size, need);
	p += RECS_HEADER;
	out->chain = p;
	p += 8 * out->nchain;
	out->regs = p;
	p += 8 * out->nregs;
	out->stack = p;
	p += pad8(out->stack_len);
	out->lbr = p;
	*off += size;
	return 1;
}

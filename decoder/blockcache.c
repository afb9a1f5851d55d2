/* SPDX-License-Identifier: MIT */
/* Open-addressing hash table of blocks (see blockcache.h). */
#include "decoder/blockcache.h"

#include <stdlib.h>
#include <string.h>

#include "ptscope/alloc.h"
#include "ptscope/error.h"

struct bc_cache {
	struct bc_block *slots; /* power-of-two sized, linear probing */
	size_t mask;
	size_t count;
	struct bc_branch *pool; /* all blocks' branches, appended */
	size_t npool, cappool;
};

#define BC_INITIAL_SLOTS 4096

static inline size_t bc_hash(uint64_t ip, uint32_t ninsn, uint64_t end_ip)
{
	uint64_t h = ip * UINT64_C(0x9e3779b97f4a7c15);

	h ^= (end_ip + ninsn) * UINT64_C(0xc2b2ae3d27d4eb4f);
	return (size_t)(h ^ (h >> 29));
}

int bc_new(struct bc_cache **out)
{
	struct bc_cache *c;

	if (!out)
		return PS_ERR_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return PS_ERR_NOMEM;
	c->slots = ps_zalloc(BC_INITIAL_SLOTS, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return PS_ERR_NOMEM;
	}
	c->mask = BC_INITIAL_SLOTS - 1;
	*out = c;
	return 0;
}

void bc_free(struct bc_cache *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c->pool);
	free(c);
}

void bc_clear(struct bc_cache *c)
{
	memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
	c->count = 0;
	c->npool = 0;
}

struct bc_block *bc_find(struct bc_cache *c, uint64_t ip, uint32_t ninsn,
			 uint64_t end_ip)
{
	size_t i = bc_hash(ip, ninsn, end_ip) & c->mask;

	for (;;) {
		struct bc_block *b = &c->slots[i];

		if (!b->ninsn)
			return NULL;
		if (b->ip == ip && b->ninsn == ninsn && b->end_ip == end_ip)
			return b;
		i = (i + 1) & c->mask;
	}
}

static struct bc_block *bc_slot(struct bc_block *slots, size_t mask,
				const struct bc_block *b)
{
	size_t i = bc_hash(b->ip, b->ninsn, b->end_ip) & mask;

	while (slots[i].ninsn)
		i = (i + 1) & mask;
	return &slots[i];
}

static int bc_grow(struct bc_cache *c)
{
	size_t nslots = (c->mask + 1) * 2;
	struct bc_block *ns = ps_zalloc(nslots, sizeof(*ns));

	if (!ns)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i <= c->mask; i++)
		if (c->slots[i].ninsn)
			*bc_slot(ns, nslots - 1, &c->slots[i]) = c->slots[i];
	free(c->slots);
	c->slots = ns;
	c->mask = nslots - 1;
	return 0;
}

struct bc_block *bc_add(struct bc_cache *c, const struct bc_block *b,
			const struct bc_branch *br, size_t nbr)
{
	struct bc_block *s;

	if (!b->ninsn || nbr > UINT16_MAX)
		return NULL;
	/* Keep the load under one half so probes stay short. */
	if ((c->count + 1) * 2 > c->mask + 1 && bc_grow(c))
		return NULL;
	if (c->npool + nbr > c->cappool) {
		size_t ncap = c->cappool ? c->cappool * 2 : 1024;
		struct bc_branch *np;

		while (ncap < c->npool + nbr)
			ncap *= 2;
		np = realloc(c->pool, ncap * sizeof(*np));
		if (!np)
			return NULL;
		c->pool = np;
		c->cappool = ncap;
	}
	if (nbr)
		memcpy(c->pool + c->npool, br, nbr * sizeof(*br));
	s = bc_slot(c->slots, c->mask, b);
	*s = *b;
	s->first = (uint32_t)c->npool;
	s->nbr = (uint16_t)nbr;
	c->npool += nbr;
	c->count++;
	return s;
}

const struct bc_branch *bc_branches(const struct bc_cache *c,
				    const struct bc_block *b)
{
	/* No pool yet (only branch-less blocks so far): no branches. */
	return c->pool ? c->pool + b->first : NULL;
}

size_t bc_count(const struct bc_cache *c)
{
	return c->count;
}

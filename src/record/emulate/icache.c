/* SPDX-License-Identifier: MIT */
/* The per-process instruction cache (see icache.h). */
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/emulate/icache.h"

#define ICACHE_MIN_BITS 12

static int icache_alloc(struct emu_icache *c, unsigned bits)
{
	size_t cap = (size_t)1 << bits;

	c->slots = calloc(cap, sizeof(*c->slots));
	if (!c->slots)
		return PS_ERR_NOMEM;
	c->mask = cap - 1;
	c->shift = 64 - bits;
	c->used = 0;
	return 0;
}

int emu_icache_init(struct emu_icache *c)
{
	if (!c)
		return PS_ERR_INVAL;
	return icache_alloc(c, ICACHE_MIN_BITS);
}

void emu_icache_fini(struct emu_icache *c)
{
	if (!c)
		return;
	free(c->slots);
	c->slots = NULL;
	c->used = 0;
}

static struct emu_insn *icache_put(struct emu_icache *c,
				   const struct emu_insn *in)
{
	size_t i = emu_icache_slot(c, in->ip);

	while (c->slots[i].ip && c->slots[i].ip != in->ip)
		i = (i + 1) & c->mask;
	if (!c->slots[i].ip)
		c->used++;
	c->slots[i] = *in;
	return &c->slots[i];
}

/* Move every entry that does not overlap [lo, hi) into a fresh table of
 * 2^@bits entries (lo == hi keeps all). */
static int icache_rebuild(struct emu_icache *c, unsigned bits, uint64_t lo,
			  uint64_t hi)
{
	struct emu_icache old = *c;
	size_t i;

	if (icache_alloc(c, bits) < 0) {
		*c = old;
		return PS_ERR_NOMEM;
	}
	for (i = 0; i <= old.mask; i++) {
		const struct emu_insn *e = &old.slots[i];
		uint64_t end;

		if (!e->ip)
			continue;
		end = e->ip + (e->len ? e->len : EMU_INSN_MAX);
		if (end > lo && e->ip < hi)
			continue;
		icache_put(c, e);
	}
	free(old.slots);
	return 0;
}

const struct emu_insn *emu_icache_add(struct emu_icache *c,
				      const struct emu_insn *in)
{
	if (!c || !in || !in->ip)
		return NULL;
	/* Keep the load under one half so probes stay short. */
	if ((c->used + 1) * 2 > c->mask + 1 &&
	    icache_rebuild(c, 64 - c->shift + 1, 0, 0) < 0)
		return NULL;
	return icache_put(c, in);
}

int emu_icache_drop(struct emu_icache *c, uint64_t addr, uint64_t len)
{
	uint64_t hi;

	if (!c)
		return PS_ERR_INVAL;
	hi = addr + len < addr ? UINT64_MAX : addr + len;
	/* Entries reaching into the range from below (up to 15 bytes) go
	 * too; rebuilding keeps the probe chains intact. */
	if (icache_rebuild(c, 64 - c->shift, addr, hi) == 0)
		return 0;
	/* No memory for a new table: forgetting everything is also correct. */
	memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
	c->used = 0;
	return 0;
}

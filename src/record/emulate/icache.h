/* SPDX-License-Identifier: MIT */
/* The per-process instruction cache (prefix emu_icache_): address →
 * struct emu_insn, open addressing with linear probing, so the emu_step()
 * hit path is one multiply and usually one compare. */
#ifndef PTSCOPE_RECORD_EMULATE_ICACHE_H
#define PTSCOPE_RECORD_EMULATE_ICACHE_H

#include <stddef.h>
#include <stdint.h>

#include "src/record/emulate/insn.h"

struct emu_icache {
	struct emu_insn *slots; /* owned; ip == 0 is an empty slot */
	size_t mask;		/* capacity - 1 (a power of two) */
	unsigned shift;		/* 64 - log2(capacity) */
	size_t used;
};

/* Returns 0 or PS_ERR_NOMEM. */
int emu_icache_init(struct emu_icache *c);
void emu_icache_fini(struct emu_icache *c);

static inline size_t emu_icache_slot(const struct emu_icache *c, uint64_t ip)
{
	/* Fibonacci hashing: the top bits of ip * 2^64/phi. */
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> c->shift);
}

/* The cached instruction at @ip or NULL. */
static inline const struct emu_insn *emu_icache_find(const struct emu_icache *c,
						     uint64_t ip)
{
	size_t i = emu_icache_slot(c, ip);

	for (;;) {
		const struct emu_insn *e = &c->slots[i];

		if (e->ip == ip)
			return e;
		if (!e->ip)
			return NULL;
		i = (i + 1) & c->mask;
	}
}

/* Insert or replace @in (in->ip != 0).  Pointers from emu_icache_find()
 * are invalid afterwards.  Returns the stored entry, or NULL (no memory). */
const struct emu_insn *emu_icache_add(struct emu_icache *c,
				      const struct emu_insn *in);

/* Drop every instruction that starts in [addr, addr + len) or overlaps it.
 * Returns 0 or PS_ERR_INVAL (NULL); on no memory it empties the cache. */
int emu_icache_drop(struct emu_icache *c, uint64_t addr, uint64_t len);

#endif /* PTSCOPE_RECORD_EMULATE_ICACHE_H */

/* SPDX-License-Identifier: MIT */
/* The flow layer's per-block cache (prefix bc_): what each libipt block
 * holds that matters for call stacks, learned once by walking its
 * instructions.  Key: (first ip, instruction count, last ip).  A hit costs
 * one hash probe; the entry lists the (usually 0-1) direct calls and tail
 * jumps inside the block and classifies its last instruction.  Internal
 * to the decoder library. */
#ifndef PTSCOPE_DECODER_BLOCKCACHE_H
#define PTSCOPE_DECODER_BLOCKCACHE_H

#include <stddef.h>
#include <stdint.h>

/* A transfer inside a block, or a direct one that ends it. */
struct bc_branch {
	uint64_t from, to, ret; /* ret: calls only */
	uint32_t index;		/* instruction index in the block, from 0 */
	uint32_t kind;		/* BR_CALL or BR_JUMP */
};

/* How the block's last instruction hands over to whatever follows, when
 * that depends on where execution went next. */
enum bc_end {
	BC_END_NONE,	/* nothing to report (or reported as a bc_branch) */
	BC_END_CALL,	/* indirect near call */
	BC_END_RET,	/* near ret */
	BC_END_JUMP,	/* indirect jump: a tail call if the target is a
			 * function entry */
	BC_END_COND,	/* conditional jump to a function entry (end_target):
			 * a tail call when taken */
	BC_END_SYSCALL, /* syscall and kin */
	BC_END_FAR_RET, /* iret, sysret, far ret */
	BC_END_FAR_JUMP /* far jmp */
};

struct bc_block {
	uint64_t ip, end_ip; /* key */
	uint32_t ninsn;	     /* key; 0 marks an empty slot */
	uint8_t end;	     /* enum bc_end */
	uint8_t end_len;     /* length of the last instruction */
	uint16_t nbr;	     /* branches: bc_branches(c, b)[0 .. nbr) */
	uint32_t first;	     /* index of the first in the branch pool */
	uint16_t ncall;	     /* near calls it executes (direct, indirect,
			      * to the next instruction), for the counts */
	uint64_t end_target; /* BC_END_COND: the direct target */
	uint64_t memo_to;    /* BC_END_JUMP: last target looked up ... */
	int memo_entry;	     /* ... and whether it is a function entry
			      * (-1: nothing looked up yet) */
};

struct bc_cache;

/* Returns 0, PS_ERR_INVAL, PS_ERR_NOMEM. */
int bc_new(struct bc_cache **out);
void bc_free(struct bc_cache *c); /* accepts NULL */
/* Drop every entry. */
void bc_clear(struct bc_cache *c);

/* The entry for the key, or NULL.  Valid until the next bc_add. */
struct bc_block *bc_find(struct bc_cache *c, uint64_t ip, uint32_t ninsn,
			 uint64_t end_ip);

/* Add an entry for @b (ninsn != 0; not present) with its @nbr branches
 * @br (copied); b->nbr and b->first are set by the cache.  Returns the
 * stored entry (valid until the next bc_add) or NULL (out of memory). */
struct bc_block *bc_add(struct bc_cache *c, const struct bc_block *b,
			const struct bc_branch *br, size_t nbr);

/* The branch list of @b. */
const struct bc_branch *bc_branches(const struct bc_cache *c,
				    const struct bc_block *b);

/* Entries stored. */
size_t bc_count(const struct bc_cache *c);

#endif /* PTSCOPE_DECODER_BLOCKCACHE_H */

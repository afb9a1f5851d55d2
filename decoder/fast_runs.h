/* SPDX-License-Identifier: MIT */
/* The code half of ptscope's own flow engine (prefix fr_): a cache of
 * "runs", the instructions executed from an address up to the next one
 * whose successor only the trace can tell (a conditional branch, an
 * indirect call or jump, a return, a far transfer), following direct
 * calls and jumps on the way.  A run also ends where the next instruction
 * lies in another mapping of the image, where libipt's block decoder ends
 * a block (libipt/src/pt_block_decoder.c: "We do not switch sections
 * inside a block").  Each instruction is decoded once, when its run is
 * first needed: by the table decoder (insn_quick) where it knows every
 * instruction of the run, else by libipt itself (its instruction decoder
 * over a made-up trace); the runs are libipt's either way (lengths,
 * classes, ends; tests/unit/test_fast_runs.c compares the two walks).
 * After that following a run costs one hash probe.
 * Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_FAST_RUNS_H
#define PTSCOPE_DECODER_FAST_RUNS_H

#include <stddef.h>
#include <stdint.h>

struct bc_block;
struct img_image;
struct insn_decoder;

/* How a run ends: an enum insn_class value of its last instruction, or
 * FR_SECTION (the next instruction is in another mapping, at next_ip). */
#define FR_SECTION 255
/* ... or FR_ERROR: libipt cannot decode the instruction at next_ip
 * (error: its -pte_nomap or -pte_bad_insn). */
#define FR_ERROR 254

/* One instruction of a run. */
struct fr_insn {
	uint64_t ip;
	uint64_t target; /* direct branches */
	uint8_t len, cls, direct;
};

struct fr_run {
	uint64_t ip, end_ip; /* first and last instruction */
	uint64_t next_ip;    /* FR_SECTION: where execution goes on */
	uint64_t target;     /* INSN_COND: the taken target */
	uint32_t ninsn;
	uint32_t first;	  /* its instructions: fr_insns(c) + first */
	uint32_t calls;	  /* return addresses its direct calls push: */
	uint16_t ncalls;  /* fr_calls(c) + calls, in order */
	uint8_t end;	  /* insn_class of end_ip, FR_SECTION, FR_ERROR */
	int error;	  /* FR_ERROR: the libipt error code */
	uint8_t end_len;  /* length of the instruction at end_ip */
	uint8_t by_table; /* 1: walked by the table decoder (walk_table) */
	uint64_t sec_lo, sec_hi; /* the mapping the run lies in */
	struct bc_block *cls;	 /* the flow layer's classification of the
				  * run as one block (fr_keep_cls), or NULL */
	/* The runs seen next after this one, most recent first: ip and
	 * index + 1 (0: none).  A memo of the lookup table that saves its
	 * probe (a cache miss on a big program) on most blocks. */
	uint64_t next_run_ip[2];
	uint32_t next_run[2];
};

struct fr_cache;

/* @img and @insn are not owned.  Returns 0 or PS_ERR_NOMEM. */
int fr_new(struct img_image *img, struct insn_decoder *insn,
	   struct fr_cache **out);
void fr_free(struct fr_cache *c); /* accepts NULL */
void fr_clear(struct fr_cache *c);

/* The run starting at @ip, learned now if new.  Returns 0 and sets *@run
 * (valid until the next fr_get), libipt's -pte_nomap or -pte_bad_insn
 * when it cannot decode the instruction at @ip, FR_UNSUPPORTED (an
 * instruction cut by the end of its mapping, a run too long to be real,
 * anything else this cache does not handle), PS_ERR_NOMEM. */
#define FR_UNSUPPORTED (-2002)
/* The lookup table, the first member of struct fr_cache (read by the
 * inline part of fr_get). */
struct fr_table {
	struct fr_run *runs;
	uint32_t *slots; /* run index + 1, 0: empty; keyed by run ip */
	size_t mask;
	uint32_t last; /* index + 1 of the run fr_get gave last, 0: none */
};

static inline size_t fr_hash_ip(uint64_t ip)
{
	uint64_t h = ip * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h ^ (h >> 31));
}

/* fr_get through the table (learning the run if new), and the run
 * remembered as the last one's successor. */
int fr_get_slow(struct fr_cache *c, uint64_t ip, struct fr_run **run);

/* Start loading the runs likely to come after @r (both ways of a
 * conditional branch), while @r's block is being handled. */
static inline void fr_prefetch_next(const struct fr_table *t,
				    const struct fr_run *r)
{
	__builtin_prefetch(r->cls);
	for (int k = 0; k < 2; k++)
		if (r->next_run[k]) {
			const char *p =
			    (const char *)&t->runs[r->next_run[k] - 1];

			__builtin_prefetch(p);
			__builtin_prefetch(p + sizeof(*r) - 1);
		}
}

static inline int fr_get(struct fr_cache *c, uint64_t ip, struct fr_run **run)
{
	struct fr_table *t = (struct fr_table *)c;

	if (t->last) {
		struct fr_run *prev = &t->runs[t->last - 1];
		int k = prev->next_run_ip[0] == ip   ? 0
			: prev->next_run_ip[1] == ip ? 1
						     : -1;

		if (k >= 0 && prev->next_run[k]) {
			struct fr_run *r = &t->runs[prev->next_run[k] - 1];

			t->last = prev->next_run[k];
			*run = r;
			fr_prefetch_next(t, r);
			return 0;
		}
	}
	return fr_get_slow(c, ip, run);
}

/* fr_get's quick case alone, for a caller that may not take the run: the
 * run at @ip if it is a known successor of the last one (its index + 1 in
 * *@idx), else NULL.  fr_take then makes it the last, as fr_get would.
 * (fr_get written with these two compiled into a flow engine 6% slower
 * on the loop-heavy bench stream as a CPU writes it, so it keeps its
 * own copy.) */
static inline struct fr_run *fr_peek(const struct fr_cache *c, uint64_t ip,
				     uint32_t *idx)
{
	const struct fr_table *t = (const struct fr_table *)c;
	const struct fr_run *prev;
	int k;

	if (!t->last)
		return NULL;
	prev = &t->runs[t->last - 1];
	k = prev->next_run_ip[0] == ip	 ? 0
	    : prev->next_run_ip[1] == ip ? 1
					 : -1;
	if (k < 0 || !prev->next_run[k])
		return NULL;
	*idx = prev->next_run[k];
	return &t->runs[*idx - 1];
}

static inline void fr_take(struct fr_cache *c, struct fr_run *r, uint32_t idx)
{
	struct fr_table *t = (struct fr_table *)c;

	t->last = idx;
	fr_prefetch_next(t, r);
}

/* Keep a copy of @cls (the block cache entry of @run as one block) that
 * stays put until fr_clear, in run->cls.  Returns 0 or PS_ERR_NOMEM. */
int fr_keep_cls(struct fr_cache *c, struct fr_run *run,
		const struct bc_block *cls);

/* For tests: 1, every run walked by libipt's instruction decoder (the
 * reference the table walk must equal); 0, the default. */
void fr_walk_with_libipt(struct fr_cache *c, int on);

/* How many runs each walk learned (fr_clear keeps the counts). */
void fr_walk_counts(const struct fr_cache *c, uint64_t *table,
		    uint64_t *libipt);

const struct fr_insn *fr_insns(const struct fr_cache *c);
const uint64_t *fr_calls(const struct fr_cache *c);

#endif /* PTSCOPE_DECODER_FAST_RUNS_H */

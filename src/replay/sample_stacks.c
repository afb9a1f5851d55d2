/* SPDX-License-Identifier: MIT */
/* Choosing and symbolizing one sample's call stack (sample_stacks.h). */
#include <string.h>

#include "src/replay/sample_stacks.h"

const char *sstk_unwinder_name(enum sstk_unwinder u)
{
	static const char *const names[SSTK_N] = {"fp", "dwarf", "lbr"};

	return u < SSTK_N ? names[u] : "?";
}

/* The functions every thread's stack starts in: a chain that reaches one
 * is complete, whatever their frames look like. */
static int is_bottom(const struct sym_func *f)
{
	static const char *const names[] = {"_start",
					    "__libc_start_main",
					    "__libc_start_call_main",
					    "start_thread",
					    "clone3",
					    "__clone3",
					    "clone",
					    "__clone",
					    "__libc_start_main_impl",
					    "__libc_start_main_alias_2"};

	if (!f || !f->name)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(f->name, names[i]))
			return 1;
	return 0;
}

/* One stand-in per module for code without symbols (sstk_ctx). */
static const struct sym_func *standin(struct sstk_ctx *c,
				      const struct sym_func *f)
{
	const char *mod = f->info.module;

	if (!mod || f->end != f->start)
		return f;
	for (size_t i = 0; i < c->nstandin; i++)
		if (!strcmp(c->standin[i].name, mod))
			return &c->standin[i];
	if (c->nstandin == sizeof(c->standin) / sizeof(c->standin[0]))
		return f;
	c->standin[c->nstandin] = *f;
	c->standin[c->nstandin].name = mod;
	c->standin[c->nstandin].aliases = NULL;
	return &c->standin[c->nstandin++];
}

/* The function at frame @k's pc: a caller's pc is a return address, so
 * the call is the byte before it. */
static const struct sym_func *lookup(struct sstk_ctx *c, uint64_t pid,
				     uint64_t pc, size_t k)
{
	const struct sym_func *f =
	    dec_symbolize(c->ds, pid, c->epoch, k && pc ? pc - 1 : pc);

	return f ? standin(c, f) : NULL;
}

/* Symbolize @pcs[0..n) into @out, ending at a thread's bottom. */
static void fill(struct sstk_ctx *c, uint64_t pid, const uint64_t *pcs,
		 size_t n, struct sstk *out)
{
	out->n = 0;
	for (size_t k = 0; k < n && out->n < SSTK_MAX; k++) {
		const struct sym_func *f = lookup(c, pid, pcs[k], k);

		if (!f || !pcs[k])
			break;
		out->pc[out->n] = pcs[k];
		out->fn[out->n++] = f;
		if (is_bottom(f))
			break;
	}
}

/* 1 if the frame-pointer chain @pcs can be trusted: it reaches a
 * thread's bottom, the sampled function had set up its frame (else the
 * kernel's walk skipped its caller), and each caller it walked through
 * is in a module that keeps frame pointers. */
static int fp_trusted(struct sstk_ctx *c, uint64_t pid, const uint64_t *pcs,
		      size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct smod *m = smod_find(c->mods, pid, c->epoch, pcs[k]);
		const struct sym_func *f = lookup(c, pid, pcs[k], k);

		if (is_bottom(f))
			return 1;
		if (!m || !f)
			return 0;
		if (k == 0 ? !smod_framed(m, f->start, pcs[0])
			   : !smod_has_fp(m))
			return 0;
	}
	return 0; /* it stopped short of a thread's bottom */
}

/* 1 if the symbolized stack ends at a thread's bottom. */
static int complete(const struct sstk *s)
{
	return s->n && is_bottom(s->fn[s->n - 1]);
}

/* DWARF frames @d[0..nd), then the chain @ch from where they meet. */
static size_t splice(uint64_t *d, size_t nd, const uint64_t *ch, size_t nch,
		     size_t max)
{
	for (size_t i = nd; i-- > 1;)
		for (size_t j = 1; j < nch; j++) {
			size_t n = i + 1;

			if (d[i] != ch[j])
				continue;
			for (size_t k = j + 1; k < nch && n < max; k++)
				d[n++] = ch[k];
			return n;
		}
	return nd;
}

int sstk_build(struct sstk_ctx *c, uint64_t pid, uint64_t tid,
	       uint64_t regs_mask, const struct recs_sample *smp,
	       struct sstk *out)
{
	uint64_t chain[SSTK_MAX], pcs[SSTK_MAX];
	size_t nch = smp->nchain < SSTK_MAX ? smp->nchain : SSTK_MAX, n;

	for (size_t k = 0; k < nch; k++)
		chain[k] = recs_u64(smp->chain, k);
	out->how = SSTK_FP;
	if (fp_trusted(c, pid, chain, nch)) {
		fill(c, pid, chain, nch, out);
		return 0;
	}
	if (smp->nlbr && nch) {
		/* The LBR call stack: each entry's source is a call site. */
		n = 0;
		pcs[n++] = chain[0];
		for (size_t k = 0; k < smp->nlbr && n < SSTK_MAX; k++)
			pcs[n++] = recs_u64(smp->lbr, 2 * k) + 1;
		out->how = SSTK_LBR;
		fill(c, pid, pcs, n, out);
		return 0;
	}
	n = c->unw ? sunw_unwind(c->unw, pid, c->epoch, tid, regs_mask, smp,
				 pcs, SSTK_MAX)
		   : 0;
	if (n > 1) {
		static struct sstk fp; /* large: not on the stack */

		n = splice(pcs, n, chain, nch, SSTK_MAX);
		out->how = SSTK_DWARF;
		fill(c, pid, pcs, n, out);
		fill(c, pid, chain, nch, &fp);
		/* The chain when DWARF did no better (no CFI here). */
		if (complete(out) || (!complete(&fp) && out->n >= fp.n))
			return 0;
	}
	fill(c, pid, chain, nch, out);
	out->how = SSTK_FP;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* What the symbolizer reads from DWARF (see symbols.h): the file:line of
 * each function's entry, and the inlined subroutines
 * (DW_TAG_inlined_subroutine) with their address ranges, indexed so that
 * the chain of instances at an address is a binary search plus a short
 * walk outwards. */
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "decoder/linetable.h"
#include "decoder/lines.h"
#include "decoder/symmodule.h"
#include "decoder/symnames.h"
#include "ptscope/error.h"

/* ---- file:line of function entries ---- */

void sym_module_lines(struct sym_module *m, struct mfunc *f)
{
	Dwarf_Die cu;
	Dwarf_Line *line;
	const char *src;
	int ln;

	if (f->lines_done)
		return;
	f->lines_done = 1;
	if (!m->dwarf || !dwarf_addrdie(m->dwarf, f->start, &cu))
		return;
	/* ptscope's own reading of the line table first (linetable.h):
	 * libdw's answer, at a fraction of its cost */
	if (!m->lt && !m->lt_failed && lt_cache_new(m->dwarf, &m->lt))
		m->lt_failed = 1;
	if (m->lt) {
		int r = lt_lookup(m->lt, &cu, f->start, &src, &ln);

		if (r == 0)
			return;
		if (r == 1) {
			if (src)
				f->file = sym_arena_put(&m->names, src);
			if (ln > 0)
				f->line = ln;
			return;
		}
	}
	line = dwarf_getsrc_die(&cu, f->start);
	if (!line)
		return;
	src = dwarf_linesrc(line, NULL, NULL);
	if (src)
		f->file = sym_arena_put(&m->names, src);
	if (dwarf_lineno(line, &ln) == 0 && ln > 0)
		f->line = ln;
}

/* ---- inlined subroutines ---- */

/* One address range of an inlined instance, in link-time addresses. */
struct sym_irange {
	uint64_t lo, hi;
	uint32_t inl;	/* index into m->inl */
	uint32_t outer; /* index of the range that holds this one, or
			 * UINT32_MAX */
	uint32_t depth; /* the instance's depth, for sorting */
};

/* Deeper than this, DWARF is taken as corrupt and the subtree skipped. */
#define SYM_DIE_DEPTH 64

struct inl_walk {
	struct sym_module *m;
	Dwarf_Files *files; /* the current CU's file table, or NULL */
	size_t nfiles;
	int err;
};

static int inl_grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *np;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	np = realloc(*p, ncap * size);
	if (!np)
		return PS_ERR_NOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* The name an inlined instance shows: the origin's linkage name
 * demangled, else its plain name. */
static const char *inl_name(struct sym_module *m, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *raw = NULL;
	char buf[1024];

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		raw = dwarf_formstring(&a);
	if (!raw && dwarf_attr_integrate(die, DW_AT_name, &a))
		raw = dwarf_formstring(&a);
	return sym_arena_put(
	    &m->names, raw ? sym_demangle(raw, buf, sizeof(buf)) : "[inline]");
}

static int inl_add(struct inl_walk *w, Dwarf_Die *die, uint32_t parent,
		   uint32_t *index)
{
	struct sym_module *m = w->m;
	struct sym_inline *in;
	Dwarf_Attribute a;
	Dwarf_Word word;
	Dwarf_Addr base, lo, hi, entry = UINT64_MAX;
	ptrdiff_t off = 0;
	size_t first = m->nir;
	int err;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		err = inl_grow((void **)&m->ir, &m->ircap, m->nir,
			       sizeof(*m->ir));
		if (err < 0)
			return err;
		m->ir[m->nir++] = (struct sym_irange){
		    .lo = lo, .hi = hi, .inl = (uint32_t)m->ninl};
		if (lo < entry)
			entry = lo;
	}
	if (m->nir == first)
		return 0; /* no code (optimised away): nothing to show */
	err = inl_grow((void **)&m->inl, &m->inlcap, m->ninl, sizeof(*m->inl));
	if (err < 0)
		return err;
	in = &m->inl[m->ninl];
	memset(in, 0, sizeof(*in));
	in->module = m->name;
	in->name = inl_name(m, die);
	if (!in->name)
		return PS_ERR_NOMEM;
	if (dwarf_entrypc(die, &lo) == 0 && lo)
		entry = lo;
	in->entry = entry;
	/* parent is an index until the array stops moving */
	in->parent = (const struct sym_inline *)(uintptr_t)parent;
	in->depth = parent == UINT32_MAX ? 1 : m->inl[parent].depth + 1;
	if (dwarf_attr(die, DW_AT_call_file, &a) && w->files &&
	    dwarf_formudata(&a, &word) == 0 && word < w->nfiles) {
		const char *f = dwarf_filesrc(w->files, word, NULL, NULL);

		if (f) {
			in->call_file = sym_arena_put(&m->names, f);
			if (!in->call_file)
				return PS_ERR_NOMEM;
		}
	}
	if (dwarf_attr(die, DW_AT_call_line, &a) &&
	    dwarf_formudata(&a, &word) == 0 && word <= UINT32_MAX)
		in->call_line = (uint32_t)word;
	for (size_t i = first; i < m->nir; i++)
		m->ir[i].depth = in->depth;
	*index = (uint32_t)m->ninl++;
	return 0;
}

/* Visit the children of @parent_die; @parent is the innermost inlined
 * instance around them (UINT32_MAX: none). */
static void inl_walk_children(struct inl_walk *w, Dwarf_Die *parent_die,
			      uint32_t parent, int level)
{
	Dwarf_Die die;

	if (level > SYM_DIE_DEPTH || dwarf_child(parent_die, &die) != 0)
		return;
	do {
		uint32_t inner = parent;

		switch (dwarf_tag(&die)) {
		case DW_TAG_inlined_subroutine:
			w->err = inl_add(w, &die, parent, &inner);
			if (w->err < 0)
				return;
			if (inner == parent)
				continue; /* no code: skip its subtree */
			break;
		case DW_TAG_subprogram:
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
			break;
		default:
			continue;
		}
		inl_walk_children(w, &die, inner, level + 1);
		if (w->err < 0)
			return;
	} while (dwarf_siblingof(&die, &die) == 0);
}

static int cmp_irange(const void *a, const void *b)
{
	const struct sym_irange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* outer first */
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Sort the ranges and link each to the range that holds it, so a lookup
 * is a binary search plus a short walk outwards.  Ranges that overlap
 * without nesting (broken DWARF) are clipped to their holder. */
static void inl_index(struct sym_module *m)
{
	uint32_t *stack = NULL, top = 0;
	size_t i, out = 0;

	for (i = 0; i < m->ninl; i++) {
		uintptr_t p = (uintptr_t)m->inl[i].parent;

		m->inl[i].parent = p == UINT32_MAX ? NULL : &m->inl[p];
	}
	if (m->nir > 1) /* qsort wants a non-NULL array, even empty */
		qsort(m->ir, m->nir, sizeof(*m->ir), cmp_irange);
	stack = malloc((m->nir ? m->nir : 1) * sizeof(*stack));
	for (i = 0; i < m->nir; i++) {
		struct sym_irange r = m->ir[i];

		while (stack && top && m->ir[stack[top - 1]].hi <= r.lo)
			top--;
		r.outer = UINT32_MAX;
		if (stack && top) {
			r.outer = stack[top - 1];
			if (r.hi > m->ir[r.outer].hi)
				r.hi = m->ir[r.outer].hi;
		} else if (!stack && out && m->ir[out - 1].hi > r.lo) {
			continue; /* no memory for nesting: keep it flat */
		}
		m->ir[out] = r;
		if (stack)
			stack[top++] = (uint32_t)out;
		out++;
	}
	m->nir = out;
	free(stack);
}

int sym_module_load_inlines(struct sym_module *m)
{
	struct inl_walk w = {.m = m};
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (m->inl_done)
		return m->inl_done < 0 ? m->inl_done : (int)m->ninl;
	m->inl_done = 1;
	if (!m->dwarf)
		return 0;
	while (dwarf_nextcu(m->dwarf, off, &next, &hsize, NULL, NULL, NULL) ==
	       0) {
		Dwarf_Die cu;

		if (dwarf_offdie(m->dwarf, off + hsize, &cu)) {
			w.files = NULL;
			w.nfiles = 0;
			if (dwarf_getsrcfiles(&cu, &w.files, &w.nfiles) != 0)
				w.files = NULL;
			inl_walk_children(&w, &cu, UINT32_MAX, 0);
			if (w.err < 0)
				break;
		}
		off = next;
	}
	if (w.err < 0) {
		free(m->inl);
		free(m->ir);
		m->inl = NULL;
		m->ir = NULL;
		m->ninl = m->nir = 0;
		m->inl_done = w.err;
		return w.err;
	}
	inl_index(m);
	return (int)m->ninl;
}

const struct sym_inline *sym_module_inline_at(struct sym_module *m,
					      uint64_t addr)
{
	size_t lo = 0, hi;
	uint32_t r;

	if (!m->inl_done)
		sym_module_load_inlines(m);
	hi = m->nir;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ir[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* the last range starting at or before addr, or one holding it */
	for (r = (uint32_t)(lo - 1); r != UINT32_MAX; r = m->ir[r].outer)
		if (addr < m->ir[r].hi)
			return &m->inl[m->ir[r].inl];
	return NULL;
}

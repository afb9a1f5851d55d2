/* SPDX-License-Identifier: MIT */
/* DWARF line tables read by ptscope itself (see linetable.h): the
 * sections, the tables kept per line-program offset, and the search
 * (libdw's dwarf_getsrc_die, elfutils 0.188).  linetable_read.c reads a
 * table. */
#include <dwarf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/linetable.h"
#include "decoder/linetable_read.h"
#include "ptscope/error.h"

#define UNSUP PS_ERR_UNSUPPORTED

struct lt_cache {
	struct lt_sections s;
	struct lt_table **slot; /* open addressing on off */
	size_t nslot, used;
};

/* ---- sections ---- */

static void find_sections(Elf *elf, struct lt_cache *c)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		struct lt_sect *s = NULL;
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    (sh.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".debug_line"))
			s = &c->s.line;
		else if (!strcmp(name, ".debug_line_str"))
			s = &c->s.line_str;
		else if (!strcmp(name, ".debug_str"))
			s = &c->s.str;
		if (!s || s->p)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf) {
			s->p = d->d_buf;
			s->n = d->d_size;
		}
	}
}

int lt_cache_new(Dwarf *dw, struct lt_cache **out)
{
	Elf *elf = dw ? dwarf_getelf(dw) : NULL;
	GElf_Ehdr eh;
	struct lt_cache *c;

	*out = NULL;
	/* libdw relocates a relocatable file's addresses: not done here */
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_type == ET_REL ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return UNSUP;
	c = calloc(1, sizeof(*c));
	if (!c)
		return PS_ERR_NOMEM;
	find_sections(elf, c);
	if (!c->s.line.p) {
		free(c);
		return UNSUP;
	}
	*out = c;
	return 0;
}

static void table_free(struct lt_table *t)
{
	if (!t)
		return;
	lt_table_clear(t);
	free(t);
}

void lt_cache_free(struct lt_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nslot; i++)
		table_free(c->slot[i]);
	free(c->slot);
	free(c);
}

/* ---- the cache ---- */

static size_t slot_of(const struct lt_cache *c, uint64_t off)
{
	size_t i =
	    (size_t)((off * 0x9e3779b97f4a7c15ull) >> 32) & (c->nslot - 1);

	while (c->slot[i] && c->slot[i]->off != off)
		i = (i + 1) & (c->nslot - 1);
	return i;
}

static int cache_grow(struct lt_cache *c)
{
	size_t n = c->nslot ? c->nslot * 2 : 64;
	struct lt_table **old = c->slot;
	size_t nold = c->nslot;

	c->slot = calloc(n, sizeof(*c->slot));
	if (!c->slot) {
		c->slot = old;
		return PS_ERR_NOMEM;
	}
	c->nslot = n;
	for (size_t i = 0; i < nold; i++)
		if (old[i])
			c->slot[slot_of(c, old[i]->off)] = old[i];
	free(old);
	return 0;
}

/* The table at @off, read with @cu's compile directory the first time
 * (libdw keeps the first reading of an offset, as here). */
static struct lt_table *table_at(struct lt_cache *c, uint64_t off,
				 Dwarf_Die *cu, unsigned address_size)
{
	struct lt_table *t;
	Dwarf_Attribute a;
	size_t i;

	if ((c->used + 1) * 2 > c->nslot && cache_grow(c))
		return NULL;
	i = slot_of(c, off);
	if (c->slot[i])
		return c->slot[i];
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->off = off;
	t->status = lt_read_table(
	    &c->s, t, dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)),
	    address_size);
	if (t->status == PS_ERR_NOMEM) {
		table_free(t);
		return NULL;
	}
	if (t->status) /* keep the verdict only */
		lt_table_clear(t);
	c->slot[i] = t;
	c->used++;
	return t;
}

int lt_lookup(struct lt_cache *c, Dwarf_Die *cu, uint64_t addr,
	      const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word off;
	Dwarf_Half version;
	uint8_t unit_type, address_size, offset_size;
	const struct lt_row *row;
	struct lt_table *t;
	size_t l, u;

	if (dwarf_tag(cu) != DW_TAG_compile_unit ||
	    dwarf_cu_info(cu->cu, &version, &unit_type, NULL, NULL, NULL,
			  &address_size, &offset_size) ||
	    unit_type != DW_UT_compile ||
	    !dwarf_attr(cu, DW_AT_stmt_list, &a) ||
	    dwarf_formudata(&a, &off) != 0)
		return UNSUP;
	t = table_at(c, off, cu, address_size);
	if (!t)
		return PS_ERR_NOMEM;
	if (t->status)
		return t->status;
	if (!t->nrow)
		return 0;
	/* dwarf_getsrc_die: the last row at or below addr, unless it ends
	 * a sequence */
	l = 0;
	u = t->nrow - 1;
	while (l < u) {
		size_t mid = u - (u - l) / 2;

		if (addr < t->row[mid].addr)
			u = mid - 1;
		else
			l = mid;
	}
	row = &t->row[l];
	if (row->end || row->addr > addr)
		return 0;
	/* dwarf_linesrc: no name for a file index past the table */
	*file = row->file < t->nfile ? t->file[row->file] : NULL;
	*line = row->line;
	return 1;
}

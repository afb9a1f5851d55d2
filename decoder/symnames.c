/* SPDX-License-Identifier: MIT */
/* The names of symbols (see symnames.h): their store, demangling, and
 * which name a user sees among a function's aliases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "decoder/symnames.h"
#include "ptscope/error.h"

/* ---- the store ---- */

struct sym_chunk {
	struct sym_chunk *next;
	char data[];
};

#define SYM_CHUNK 65536

const char *sym_arena_put(struct sym_arena *a, const char *s)
{
	size_t len = strlen(s) + 1, size;
	struct sym_chunk *c;
	char *p;

	if (len > a->room - a->used || !a->head) {
		size = len > SYM_CHUNK ? len : SYM_CHUNK;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
		a->used = 0;
		a->room = size;
	}
	p = a->head->data + a->used;
	memcpy(p, s, len);
	a->used += len;
	return p;
}

void sym_arena_free(struct sym_arena *a)
{
	struct sym_chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}

/* ---- demangling ---- */

const char *sym_demangle(const char *name, char *buf, size_t size)
{
	char *d;

	if (!name || (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2)))
		return name;
	/* Rust first: legacy Rust names are valid C++ names with a hash */
	d = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (!d)
		d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return name;
	snprintf(buf, size, "%s", d);
	free(d);
	return buf;
}

/* ---- which name is shown ---- */

int sym_names_cmp(const void *a, const void *b)
{
	const struct mfunc *x = a, *y = b;
	size_t ux, uy;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* a sized symbol tells the function's extent */
	if ((x->end > x->start) != (y->end > y->start))
		return x->end > x->start ? -1 : 1;
	/* the public name: puts, not _IO_puts; write, not __libc_write */
	ux = strspn(x->name, "_");
	uy = strspn(y->name, "_");
	if (ux != uy)
		return ux < uy ? -1 : 1;
	/* an indirect function's own name over its resolver's helper
	 * names (strchr over strchr_ifunc) */
	if (x->ifunc != y->ifunc)
		return x->ifunc ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	if (x->exported != y->exported)
		return x->exported ? -1 : 1;
	if (strlen(x->name) != strlen(y->name))
		return strlen(x->name) < strlen(y->name) ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct dyn_name {
	uint64_t addr;
	const char *name; /* in @elf's string table */
	size_t len;	  /* up to a version suffix "@..." */
};

static int cmp_dyn(const void *a, const void *b)
{
	const struct dyn_name *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int sym_names_mark_exported(struct mfunc *f, size_t n, Elf *elf)
{
	struct dyn_name *d = NULL;
	size_t nd = 0, cap = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			int type;

			if (!gelf_getsym(data, i, &sym))
				break;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    GELF_ST_BIND(sym.st_info) == STB_LOCAL)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (nd == cap) {
				size_t c = cap ? cap * 2 : 256;
				struct dyn_name *p = realloc(d, c * sizeof(*p));

				if (!p) {
					free(d);
					return PS_ERR_NOMEM;
				}
				d = p;
				cap = c;
			}
			d[nd++] = (struct dyn_name){sym.st_value, name,
						    strcspn(name, "@")};
		}
	}
	if (!nd)
		return 0;
	qsort(d, nd, sizeof(*d), cmp_dyn);
	for (size_t i = 0; i < n; i++) {
		struct dyn_name key = {.addr = f[i].start}, *hit;

		hit = bsearch(&key, d, nd, sizeof(*d), cmp_dyn);
		if (!hit)
			continue;
		while (hit > d && hit[-1].addr == key.addr)
			hit--;
		for (; hit < d + nd && hit->addr == key.addr; hit++)
			if (!strncmp(hit->name, f[i].name, hit->len) &&
			    !f[i].name[hit->len])
				f[i].exported = 1;
	}
	free(d);
	return 0;
}

size_t sym_names_aliases(const struct mfunc *grp, size_t n, char *buf,
			 size_t size)
{
	size_t len = 0;

	if (!size)
		return 0;
	buf[0] = '\0';
	for (size_t i = 1; i < n; i++) {
		size_t k, l = strlen(grp[i].name);

		/* skip repeats (memcpy and memcpy@@GLIBC_2.14 read alike) */
		for (k = 0; k < i; k++)
			if (!strcmp(grp[k].name, grp[i].name))
				break;
		if (k < i)
			continue;
		if (len + (len ? 2 : 0) + l + 1 > size)
			break;
		if (len) {
			memcpy(buf + len, ", ", 2);
			len += 2;
		}
		memcpy(buf + len, grp[i].name, l + 1);
		len += l;
	}
	return len;
}

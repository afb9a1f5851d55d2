/* SPDX-License-Identifier: MIT */
/* The symbolizer: ELF symbol tables, PLT stubs, DWARF lines, demangling,
 * and the per-address-space lookup with its cache (see symbols.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libiberty/demangle.h>

#include "decoder/debugfile.h"
#include "decoder/symbols.h"
#include "decoder/symnames.h"
#include "ptscope/error.h"

/* A chunked string store: what it hands out never moves. */
struct sym_arena {
	struct sym_chunk *head;
	size_t used, room;
};

struct sym_chunk {
	struct sym_chunk *next;
	char data[];
};

#define SYM_CHUNK 65536

static const char *arena_put(struct sym_arena *a, const char *s)
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

static void arena_free(struct sym_arena *a)
{
	struct sym_chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}

struct sym_module {
	char *path;
	const char *name;   /* label, in the arena */
	uint64_t link_base; /* lowest PT_LOAD p_vaddr */
	uint64_t link_end;  /* highest PT_LOAD end */
	struct mfunc *f;    /* sorted by start, one per start */
	size_t n, cap;
	struct sym_arena names;
	int fd; /* kept open while dwarf is */
	Elf *elf;
	struct sym_debug dbg; /* separate debug file: open while dwarf is */
	const char *dbg_path; /* the debug file used, in the arena, or NULL */
	Dwarf *dwarf;	      /* NULL: no lines wanted or no DWARF */
	/* inlined subroutines, read on demand (sym_module_load_inlines) */
	struct sym_inline *inl; /* owned */
	size_t ninl, inlcap;
	struct sym_irange *ir; /* owned; sorted by lo, outer first */
	size_t nir, ircap;
	int inl_done; /* 0: not read, 1: read, < 0: failed (error) */
};

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

static int add_func(struct sym_module *m, uint64_t start, uint64_t size,
		    const char *raw, int rank, int ifunc)
{
	char buf[1024];
	const char *name;
	struct mfunc *f;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;

		f = realloc(m->f, cap * sizeof(*f));
		if (!f)
			return PS_ERR_NOMEM;
		m->f = f;
		m->cap = cap;
	}
	name = arena_put(&m->names, sym_demangle(raw, buf, sizeof(buf)));
	if (!name)
		return PS_ERR_NOMEM;
	m->f[m->n++] = (struct mfunc){.start = start,
				      .end = start + size,
				      .name = name,
				      .rank = (uint8_t)rank,
				      .ifunc = (uint8_t)ifunc};
	return 0;
}

static int sym_rank(int bind)
{
	return bind == STB_GLOBAL ? SYM_RANK_GLOBAL
	       : bind == STB_WEAK ? SYM_RANK_WEAK
				  : SYM_RANK_LOCAL;
}

/* Add the functions of one symbol table of @elf (the module's file or its
 * separate debug file: both use the same link addresses). */
static int read_symtab(struct sym_module *m, Elf *elf, Elf_Scn *scn,
		       GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, count;
	GElf_Sym sym;
	char plain[512];
	int err;

	if (!data || !sh->sh_entsize)
		return 0;
	count = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < count; i++) {
		const char *name;
		int type;

		if (!gelf_getsym(data, i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		/* .symtab spells versioned definitions "name@@VERSION" */
		if (name[0] != '@' && strchr(name, '@') &&
		    strchr(name, '@') - name < (ptrdiff_t)sizeof(plain)) {
			snprintf(plain, sizeof(plain), "%.*s",
				 (int)(strchr(name, '@') - name), name);
			name = plain;
		}
		err = add_func(m, sym.st_value, sym.st_size, name,
			       sym_rank(GELF_ST_BIND(sym.st_info)),
			       type == STT_GNU_IFUNC);
		if (err < 0)
			return err;
	}
	return 0;
}

/* GOT slot address → symbol name, from one relocation section. */
struct got_name {
	uint64_t got;
	const char *name;
};

static int cmp_got(const void *a, const void *b)
{
	const struct got_name *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

/* The name of the indirect function whose resolver is at @addr (the
 * best-ranked symbol there), or NULL; symbols are not sorted yet. */
static const char *ifunc_name(const struct sym_module *m, uint64_t addr)
{
	const struct mfunc *best = NULL;

	for (size_t i = 0; i < m->n; i++)
		if (m->f[i].start == addr &&
		    (!best || m->f[i].rank > best->rank))
			best = &m->f[i];
	return best ? best->name : NULL;
}

static int read_relocs(struct sym_module *m, Elf_Scn *scn, GElf_Shdr *sh,
		       struct got_name **gn, size_t *ngn)
{
	Elf_Data *data = elf_getdata(scn, NULL), *symdata;
	Elf_Scn *symscn = elf_getscn(m->elf, sh->sh_link);
	GElf_Shdr symsh;
	size_t i, count;

	if (!data || !symscn || !gelf_getshdr(symscn, &symsh) ||
	    !sh->sh_entsize)
		return 0;
	symdata = elf_getdata(symscn, NULL);
	if (!symdata)
		return 0;
	count = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < count; i++) {
		GElf_Rela rela;
		GElf_Sym sym;
		const char *name;
		struct got_name *p;
		unsigned type;

		if (!gelf_getrela(data, i, &rela))
			break;
		type = GELF_R_TYPE(rela.r_info);
		if (type == R_X86_64_IRELATIVE)
			/* no symbol: the addend is the ifunc resolver */
			name = ifunc_name(m, (uint64_t)rela.r_addend);
		else if ((type != R_X86_64_JUMP_SLOT &&
			  type != R_X86_64_GLOB_DAT) ||
			 !gelf_getsym(symdata, GELF_R_SYM(rela.r_info), &sym))
			continue;
		else
			name = elf_strptr(m->elf, symsh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		p = realloc(*gn, (*ngn + 1) * sizeof(**gn));
		if (!p)
			return PS_ERR_NOMEM;
		*gn = p;
		p[*ngn].got = rela.r_offset;
		p[(*ngn)++].name = name;
	}
	return 0;
}

/* Name each PLT entry after the GOT slot its `jmp *disp(%rip)` goes
 * through; works for .plt, .plt.sec and .plt.got layouts. */
static int read_plt(struct sym_module *m, Elf_Scn *scn, GElf_Shdr *sh,
		    const struct got_name *gn, size_t ngn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	uint64_t esz = sh->sh_entsize ? sh->sh_entsize : 16, off;
	const uint8_t *b;
	char name[1100], buf[1024];

	if (!data || !data->d_buf || data->d_size < esz || esz > 64)
		return 0;
	b = data->d_buf;
	for (off = 0; off + esz <= data->d_size; off += esz) {
		for (uint64_t j = 0; j + 6 <= esz; j++) {
			struct got_name key, *hit;
			int32_t disp;
			int err;

			if (b[off + j] != 0xff || b[off + j + 1] != 0x25)
				continue;
			memcpy(&disp, b + off + j + 2, 4);
			key.got = sh->sh_addr + off + j + 6 + (int64_t)disp;
			hit = bsearch(&key, gn, ngn, sizeof(*gn), cmp_got);
			if (!hit)
				break;
			snprintf(name, sizeof(name), "%s@plt",
				 sym_demangle(hit->name, buf, sizeof(buf)));
			err = add_func(m, sh->sh_addr + off, esz, name,
				       SYM_RANK_GLOBAL, 0);
			if (err < 0)
				return err;
			break;
		}
	}
	return 0;
}

static int read_plts(struct sym_module *m)
{
	struct got_name *gn = NULL;
	size_t ngn = 0, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int err = 0;

	if (elf_getshdrstrndx(m->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(m->elf, scn)) && !err) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = read_relocs(m, scn, &sh, &gn, &ngn);
	}
	if (err < 0 || !ngn)
		goto out;
	qsort(gn, ngn, sizeof(*gn), cmp_got);
	while ((scn = elf_nextscn(m->elf, scn)) && !err) {
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		sn = elf_strptr(m->elf, shstrndx, sh.sh_name);
		if (sn && (!strcmp(sn, ".plt") || !strcmp(sn, ".plt.sec") ||
			   !strcmp(sn, ".plt.got")))
			err = read_plt(m, scn, &sh, gn, ngn);
	}
out:
	free(gn);
	return err;
}

/* End of the executable section holding @addr (for unsized symbols). */
static uint64_t section_end(struct sym_module *m, uint64_t addr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(m->elf, scn))) {
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) &&
		    addr >= sh.sh_addr && addr < sh.sh_addr + sh.sh_size)
			return sh.sh_addr + sh.sh_size;
	}
	return addr;
}

/* Keep the name to show of the @n functions of @grp (one start, sorted):
 * the others become its aliases; a resolver gets SYM_IFUNC_SUFFIX. */
static int name_group(struct sym_module *m, struct mfunc *grp, size_t n)
{
	char buf[2048];
	int ifunc = 0;

	for (size_t i = 0; i < n; i++)
		ifunc |= grp[i].ifunc;
	if (ifunc) {
		snprintf(buf, sizeof(buf), "%s" SYM_IFUNC_SUFFIX, grp[0].name);
		grp[0].name = arena_put(&m->names, buf);
		if (!grp[0].name)
			return PS_ERR_NOMEM;
	}
	if (sym_names_aliases(grp, n, buf, sizeof(buf))) {
		grp[0].aliases = arena_put(&m->names, buf);
		if (!grp[0].aliases)
			return PS_ERR_NOMEM;
	}
	return 0;
}

/* Sort, keep one function per start (the name a user knows, with the
 * others as aliases), give unsized ones the room up to the next function
 * within their section. */
static int finish_funcs(struct sym_module *m)
{
	size_t i, j, out = 0;
	int err;

	if (m->n > 1) /* qsort wants a non-NULL array, even empty */
		qsort(m->f, m->n, sizeof(*m->f), sym_names_cmp);
	for (i = 0; i < m->n; i = j) {
		for (j = i + 1; j < m->n && m->f[j].start == m->f[i].start; j++)
			;
		err = name_group(m, &m->f[i], j - i);
		if (err < 0)
			return err;
		m->f[out++] = m->f[i];
	}
	m->n = out;
	for (i = 0; i < m->n; i++) {
		struct mfunc *f = &m->f[i];
		uint64_t lim;

		if (f->end > f->start)
			continue;
		lim = section_end(m, f->start);
		if (i + 1 < m->n && m->f[i + 1].start < lim)
			lim = m->f[i + 1].start;
		f->end = lim;
	}
	return 0;
}

static int has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 1;
	return 0;
}

/* Read the function symbols of @elf: its .symtab, else its .dynsym when
 * @dynsym.  Returns 1 when a .symtab was read, 0 when not, or an error. */
static int read_symbols(struct sym_module *m, Elf *elf, int dynsym)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int err, have_symtab = has_symtab(elf);

	if (!have_symtab && !dynsym)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		/* .dynsym only adds names when .symtab is stripped */
		if (sh.sh_type == SHT_SYMTAB ||
		    (sh.sh_type == SHT_DYNSYM && !have_symtab)) {
			err = read_symtab(m, elf, scn, &sh);
			if (err < 0)
				return err;
		}
	}
	return have_symtab;
}

/* A stripped module (no .symtab, or no DWARF when lines are wanted): its
 * separate debug file, if one provably belongs to it, supplies what is
 * missing.  Returns 0 (found or not), PS_ERR_NOMEM. */
static int load_debug_file(struct sym_module *m, int with_lines)
{
	int err;

	if (has_symtab(m->elf) && (!with_lines || m->dwarf))
		return 0;
	err = sym_debug_open(m->path, m->elf, &m->dbg);
	if (err == PS_ERR_NOT_FOUND)
		return 0;
	if (err < 0)
		return err;
	m->dbg_path = arena_put(&m->names, m->dbg.path);
	if (!m->dbg_path)
		return PS_ERR_NOMEM;
	if (with_lines && !m->dwarf)
		m->dwarf = dwarf_begin_elf(m->dbg.elf, DWARF_C_READ, NULL);
	return 0;
}

static int load_elf(struct sym_module *m, int with_lines)
{
	GElf_Ehdr eh;
	size_t i, nph;
	int err;

	if (elf_kind(m->elf) != ELF_K_ELF || !gelf_getehdr(m->elf, &eh) ||
	    elf_getphdrnum(m->elf, &nph))
		return ps_err_detail(
		    PS_ERR_FORMAT,
		    "%s is not an ELF file: give the executable or shared "
		    "library that was traced",
		    m->path);
	m->link_base = UINT64_MAX;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(m->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr < m->link_base)
			m->link_base = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > m->link_end)
			m->link_end = ph.p_vaddr + ph.p_memsz;
	}
	if (m->link_base == UINT64_MAX)
		m->link_base = 0;
	if (with_lines)
		m->dwarf = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	err = load_debug_file(m, with_lines);
	if (err < 0)
		return err;
	/* the debug file's .symtab, else the module's .symtab or .dynsym */
	err = m->dbg.elf ? read_symbols(m, m->dbg.elf, 0) : 0;
	if (err == 0)
		err = read_symbols(m, m->elf, 1);
	if (err < 0)
		return err;
	err = read_plts(m);
	if (err < 0)
		return err;
	err = sym_names_mark_exported(m->f, m->n, m->elf);
	if (err < 0)
		return err;
	return finish_funcs(m);
}

int sym_module_load(const char *path, const char *name, int with_lines,
		    struct sym_module **out)
{
	struct sym_module *m;
	const char *base;
	int err;

	if (!out || !path)
		return ps_err_detail(
		    PS_ERR_INVAL, "sym_module_load: path and out are required");
	*out = NULL;
	elf_version(EV_CURRENT);
	m = calloc(1, sizeof(*m));
	if (!m)
		return PS_ERR_NOMEM;
	m->fd = -1;
	m->dbg.fd = -1;
	m->path = strdup(path);
	base = strrchr(path, '/');
	m->name = arena_put(&m->names, name ? name : base ? base + 1 : path);
	if (!m->path || !m->name) {
		sym_module_free(m);
		return PS_ERR_NOMEM;
	}
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->fd < 0) {
		err = ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				    strerror(errno));
		sym_module_free(m);
		return err;
	}
	m->elf = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	if (!m->elf) {
		err =
		    ps_err_detail(PS_ERR_FORMAT,
				  "%s is not an ELF file: give the executable "
				  "or shared library that was traced",
				  path);
		sym_module_free(m);
		return err;
	}
	err = load_elf(m, with_lines);
	if (err < 0) {
		sym_module_free(m);
		return err;
	}
	/* keep open only the file the DWARF handle reads */
	if (!m->dwarf || dwarf_getelf(m->dwarf) != m->elf) {
		elf_end(m->elf);
		m->elf = NULL;
		close(m->fd);
		m->fd = -1;
	}
	if (!m->dwarf || dwarf_getelf(m->dwarf) != m->dbg.elf)
		sym_debug_close(&m->dbg);
	*out = m;
	return 0;
}

void sym_module_free(struct sym_module *m)
{
	if (!m)
		return;
	if (m->dwarf)
		dwarf_end(m->dwarf);
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	sym_debug_close(&m->dbg);
	arena_free(&m->names);
	free(m->inl);
	free(m->ir);
	free(m->f);
	free(m->path);
	free(m);
}

size_t sym_module_count(const struct sym_module *m)
{
	return m->n;
}

uint64_t sym_module_link_base(const struct sym_module *m)
{
	return m->link_base;
}

const char *sym_module_debug_file(const struct sym_module *m)
{
	return m->dbg_path;
}

/* The function holding link address @a, or NULL. */
static struct mfunc *module_find(const struct sym_module *m, uint64_t a)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->f[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a >= m->f[lo - 1].end)
		return NULL;
	return &m->f[lo - 1];
}

/* Fill file:line of @f's entry from DWARF, once. */
static void module_lines(struct sym_module *m, struct mfunc *f)
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
	line = dwarf_getsrc_die(&cu, f->start);
	if (!line)
		return;
	src = dwarf_linesrc(line, NULL, NULL);
	if (src)
		f->file = arena_put(&m->names, src);
	if (dwarf_lineno(line, &ln) == 0 && ln > 0)
		f->line = ln;
}

/* The i-th function as a sym_func in thread-local storage (valid until
 * the next call of sym_module_find or sym_module_func on this thread). */
static const struct sym_func *module_func_at(const struct sym_module *m,
					     size_t i)
{
	static __thread struct sym_func found;

	module_lines((struct sym_module *)m, &m->f[i]);
	found = (struct sym_func){
	    .name = m->f[i].name,
	    .aliases = m->f[i].aliases,
	    .start = m->f[i].start,
	    .end = m->f[i].end,
	    .info = {m->name, m->f[i].start, m->f[i].file, m->f[i].line}};
	return &found;
}

/* Whether @name is one of the ", "-separated @aliases. */
static int is_alias(const char *aliases, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = aliases; p && *p;) {
		size_t l = strcspn(p, ",");

		if (l == n && !strncmp(p, name, n))
			return 1;
		p += l;
		p += strspn(p, ", ");
	}
	return 0;
}

const struct sym_func *sym_module_find(const struct sym_module *m,
				       const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->f[i].name, name))
			return module_func_at(m, i);
	for (size_t i = 0; i < m->n; i++)
		if (is_alias(m->f[i].aliases, name))
			return module_func_at(m, i);
	return NULL;
}

const struct sym_func *sym_module_func(const struct sym_module *m, size_t i)
{
	return i < m->n ? module_func_at(m, i) : NULL;
}

/* ---- inlined subroutines (DWARF) ---- */

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
	return arena_put(&m->names, raw ? sym_demangle(raw, buf, sizeof(buf))
					: "[inline]");
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
			in->call_file = arena_put(&m->names, f);
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

/* ---- address spaces ---- */

/* One module (or raw region) placed in a space. */
struct sym_place {
	uint64_t lo, hi;      /* run-time range */
	uint64_t bias;	      /* run-time = link + bias */
	struct sym_module *m; /* NULL for a raw region */
	const char *name;     /* label for stand-ins */
	struct sym_func *rt;  /* per-function run-time views, lazily */
};

struct sym_stub {
	struct sym_stub *next; /* hash chain */
	struct sym_func fn;
};

#define SYM_CACHE 4096
#define SYM_STUB_HASH 1024

struct sym_space {
	struct sym_place *p; /* sorted by lo */
	size_t n;
	struct sym_arena names; /* raw region names and stand-in names */
	struct sym_stub *stubs[SYM_STUB_HASH];
	struct {
		uint64_t ip;
		const struct sym_func *fn;
	} cache[SYM_CACHE];
};

int sym_space_new(struct sym_space **out)
{
	struct sym_space *sp = calloc(1, sizeof(*sp));

	*out = sp;
	if (!sp)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < SYM_CACHE; i++)
		sp->cache[i].ip = UINT64_MAX;
	return 0;
}

void sym_space_free(struct sym_space *sp)
{
	size_t i;

	if (!sp)
		return;
	for (i = 0; i < sp->n; i++)
		free(sp->p[i].rt);
	for (i = 0; i < SYM_STUB_HASH; i++) {
		struct sym_stub *s, *next;

		for (s = sp->stubs[i]; s; s = next) {
			next = s->next;
			free(s);
		}
	}
	arena_free(&sp->names);
	free(sp->p);
	free(sp);
}

static int place(struct sym_space *sp, const struct sym_place *pl)
{
	struct sym_place *p = realloc(sp->p, (sp->n + 1) * sizeof(*p));
	size_t i;

	if (!p)
		return PS_ERR_NOMEM;
	sp->p = p;
	for (i = sp->n; i > 0 && p[i - 1].lo > pl->lo; i--)
		p[i] = p[i - 1];
	p[i] = *pl;
	sp->n++;
	for (i = 0; i < SYM_CACHE; i++)
		sp->cache[i].ip = UINT64_MAX;
	return 0;
}

int sym_space_add(struct sym_space *sp, struct sym_module *m, uint64_t bias,
		  uint64_t lo, uint64_t hi)
{
	struct sym_place pl = {.lo = lo, .hi = hi, .bias = bias, .m = m};
	int err;

	if (!lo && !hi) {
		pl.lo = m->link_base + bias;
		pl.hi = m->link_end + bias;
	}
	pl.name = m->name;
	pl.rt = calloc(m->n ? m->n : 1, sizeof(*pl.rt));
	if (!pl.rt)
		return PS_ERR_NOMEM;
	err = place(sp, &pl);
	if (err < 0)
		free(pl.rt);
	return err;
}

int sym_space_add_region(struct sym_space *sp, const char *name, uint64_t vaddr,
			 uint64_t size)
{
	struct sym_place pl = {.lo = vaddr, .hi = vaddr + size};

	pl.name = arena_put(&sp->names, name ? name : "[raw]");
	if (!pl.name)
		return PS_ERR_NOMEM;
	return place(sp, &pl);
}

/* The innermost placement holding @ip (later ones win on overlap). */
static struct sym_place *find_place(struct sym_space *sp, uint64_t ip)
{
	size_t i, lo = 0, hi = sp->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp->p[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i-- > 0;)
		if (ip < sp->p[i].hi)
			return &sp->p[i];
	return NULL;
}

static const struct sym_func *stub(struct sym_space *sp,
				   const struct sym_place *pl, uint64_t ip)
{
	unsigned h = (unsigned)((ip * 0x9e3779b97f4a7c15ull) >> 54);
	struct sym_stub *s;
	char name[256];

	for (s = sp->stubs[h]; s; s = s->next)
		if (s->fn.start == ip)
			return &s->fn;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (pl && pl->m)
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, pl->name,
			 ip - pl->bias - pl->m->link_base);
	else if (pl)
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, pl->name,
			 ip - pl->lo);
	else
		snprintf(name, sizeof(name), "0x%" PRIx64, ip);
	s->fn.name = arena_put(&sp->names, name);
	if (!s->fn.name) {
		free(s);
		return NULL;
	}
	s->fn.start = s->fn.end = ip;
	s->fn.info = (struct ps_span_info){pl ? pl->name : NULL, ip, NULL, 0};
	s->next = sp->stubs[h];
	sp->stubs[h] = s;
	return &s->fn;
}

static const struct sym_func *resolve(struct sym_space *sp, uint64_t ip)
{
	struct sym_place *pl = find_place(sp, ip);
	struct sym_func *rt;
	struct mfunc *f;

	if (!pl || !pl->m)
		return stub(sp, pl, ip);
	f = module_find(pl->m, ip - pl->bias);
	if (!f)
		return stub(sp, pl, ip);
	rt = &pl->rt[f - pl->m->f];
	if (!rt->name) {
		module_lines(pl->m, f);
		rt->start = f->start + pl->bias;
		rt->end = f->end + pl->bias;
		rt->info = (struct ps_span_info){pl->name, rt->start, f->file,
						 f->line};
		rt->aliases = f->aliases;
		rt->name = f->name;
	}
	return rt;
}

const struct sym_func *sym_lookup(struct sym_space *sp, uint64_t ip)
{
	unsigned slot = (unsigned)(ip ^ (ip >> 12)) & (SYM_CACHE - 1);
	const struct sym_func *fn;

	if (sp->cache[slot].ip == ip)
		return sp->cache[slot].fn;
	fn = resolve(sp, ip);
	if (fn) {
		sp->cache[slot].ip = ip;
		sp->cache[slot].fn = fn;
	}
	return fn;
}

const struct sym_inline *sym_inline_at(struct sym_space *sp, uint64_t ip,
				       uint64_t *bias)
{
	struct sym_place *pl = find_place(sp, ip);

	if (!pl || !pl->m || !pl->m->dwarf)
		return NULL;
	if (bias)
		*bias = pl->bias;
	return sym_module_inline_at(pl->m, ip - pl->bias);
}

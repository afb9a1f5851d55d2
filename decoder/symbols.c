/* SPDX-License-Identifier: MIT */
/* The symbolizer's modules: an ELF file's functions from .symtab (its
 * own or its separate debug file's), else .dynsym, PLT stubs named after
 * their GOT slots, aliases at one address, and lookups by name or index
 * (see symbols.h).  DWARF is read by lines.c, address spaces are
 * symspace.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "decoder/debugfile.h"
#include "decoder/symbols.h"
#include "decoder/linetable.h"
#include "decoder/symmodule.h"
#include "decoder/symnames.h"
#include "ptscope/error.h"

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
	name = sym_arena_put(&m->names, sym_demangle(raw, buf, sizeof(buf)));
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
		grp[0].name = sym_arena_put(&m->names, buf);
		if (!grp[0].name)
			return PS_ERR_NOMEM;
	}
	if (sym_names_aliases(grp, n, buf, sizeof(buf))) {
		grp[0].aliases = sym_arena_put(&m->names, buf);
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
	m->dbg_path = sym_arena_put(&m->names, m->dbg.path);
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
	if (!name)
		name = base ? base + 1 : path;
	m->name = sym_arena_put(&m->names, name);
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
	lt_cache_free(m->lt);
	if (m->dwarf)
		dwarf_end(m->dwarf);
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	sym_debug_close(&m->dbg);
	prm_table_free(m->params);
	sym_arena_free(&m->names);
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

/* The i-th function as a sym_func in thread-local storage (valid until
 * the next call of sym_module_find or sym_module_func on this thread). */
static const struct sym_func *module_func_at(const struct sym_module *m,
					     size_t i)
{
	static __thread struct sym_func found;

	sym_module_lines((struct sym_module *)m, &m->f[i]);
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

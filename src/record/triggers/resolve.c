/* SPDX-License-Identifier: MIT */
/* Trigger specs → run-time code addresses (see resolve.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <libiberty/demangle.h>

#include "ptscope/error.h"
#include "src/record/core/modules.h"
#include "src/record/triggers/resolve.h"

#define TRIGGER_FN "ptscope_trigger"
#define MAX_SUGGEST 5
#define ANON_NS "(anonymous namespace)"

/* ---- parsing ---- */

static int bad_spec(const char *text, const char *why)
{
	return ps_err_detail(PS_ERR_INVAL,
			     "bad trigger '%s': %s (use '.', FUNCTION, "
			     "FUNCTION@MODULE, FILE:LINE or addr:0xADDR)",
			     text, why);
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int rsv_parse(const char *text, struct rsv_spec *out)
{
	struct rsv_spec s;
	const char *colon, *at;

	if (!out)
		return ps_err_detail(PS_ERR_INVAL, "rsv_parse: no output");
	if (!text || !*text)
		return bad_spec("", "empty");
	memset(&s, 0, sizeof(s));
	s.text = strdup(text);
	if (!s.text)
		return PS_ERR_NOMEM;
	colon = strrchr(text, ':');
	if (!strcmp(text, ".")) {
		s.kind = RSV_SYMBOL;
		s.name = strdup(TRIGGER_FN);
		if (!s.name)
			goto nomem;
	} else if (!strncmp(text, "addr:", 5)) {
		char *end;

		s.kind = RSV_ADDR;
		errno = 0;
		s.addr = strtoull(text + 5, &end, 0);
		if (errno || end == text + 5 || *end || !s.addr ||
		    text[5] == '-') {
			free(s.text);
			return bad_spec(text, "the address is not a number");
		}
	} else if (colon && colon > text && colon[-1] != ':' &&
		   all_digits(colon + 1)) {
		unsigned long line;

		s.kind = RSV_LINE;
		errno = 0;
		line = strtoul(colon + 1, NULL, 10);
		if (errno || line == 0 || line > UINT32_MAX) {
			free(s.text);
			return bad_spec(text, "line numbers start at 1");
		}
		s.line = (unsigned)line;
		s.file = strndup(text, (size_t)(colon - text));
		if (!s.file)
			goto nomem;
	} else {
		s.kind = RSV_SYMBOL;
		at = strrchr(text, '@');
		if (at && (at == text || !at[1])) {
			free(s.text);
			return bad_spec(text, "a name and a module are needed "
					      "around '@'");
		}
		s.name = at ? strndup(text, (size_t)(at - text)) : strdup(text);
		if (!s.name)
			goto nomem;
		if (at) {
			s.module = strdup(at + 1);
			if (!s.module)
				goto nomem;
		}
		if (!strcmp(s.name, ".")) {
			/* ".@MODULE": the trigger function of MODULE. */
			free(s.name);
			s.name = strdup(TRIGGER_FN);
			if (!s.name)
				goto nomem;
		}
	}
	*out = s;
	return 0;
nomem:
	rsv_spec_fini(&s);
	return PS_ERR_NOMEM;
}

void rsv_spec_fini(struct rsv_spec *s)
{
	if (!s)
		return;
	free(s->text);
	free(s->name);
	free(s->module);
	free(s->file);
	memset(s, 0, sizeof(*s));
}

void rsv_result_fini(struct rsv_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->t[i].module);
		free(r->t[i].symbol);
	}
	free(r->t);
	r->t = NULL;
	r->n = 0;
}

static int add_target(struct rsv_result *r, uint64_t addr, const char *mod,
		      const char *sym)
{
	struct rsv_target *t;

	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].addr == addr)
			return 0; /* aliases and .symtab/.dynsym twins */
	t = realloc(r->t, (r->n + 1) * sizeof(*t));
	if (!t)
		return PS_ERR_NOMEM;
	r->t = t;
	t = &r->t[r->n];
	t->addr = addr;
	t->module = strdup(mod);
	t->symbol = strdup(sym);
	if (!t->module || !t->symbol) {
		free(t->module);
		free(t->symbol);
		return PS_ERR_NOMEM;
	}
	r->n++;
	return 0;
}

/* ---- modules of the process ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "libc" matches libc.so.6 and libc-2.31.so; "demo" matches .../demo. */
static int module_matches(const char *path, const char *want)
{
	const char *b = base_name(path);
	size_t n = strlen(want);

	if (!strcmp(path, want) || !strcmp(b, want))
		return 1;
	return !strncmp(b, want, n) && (b[n] == '.' || b[n] == '-');
}

/* Distinct file-backed executable modules, in address order. */
static size_t distinct_paths(const struct mod_list *l, const char **paths)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct mod_map *m = &l->maps[i];
		size_t k;

		if (!(m->prot & PROT_EXEC) || !m->inode || m->path[0] != '/')
			continue;
		for (k = 0; k < n && strcmp(paths[k], m->path); k++)
			;
		if (k == n)
			paths[n++] = m->path;
	}
	return n;
}

/* The file to read for the module mapped from @path (modules.h: a
 * deleted or replaced binary is read through /proc/PID/map_files). */
static const char *file_of(const struct mod_list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->maps[i].path, path))
			return mod_file(&l->maps[i]);
	return path;
}

static int open_elf(const char *path, int *fd, Elf **e)
{
	elf_version(EV_CURRENT);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(errno));
	*e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*e || elf_kind(*e) != ELF_K_ELF) {
		elf_end(*e);
		close(*fd);
		return ps_err_detail(PS_ERR_FORMAT, "%s is not an ELF file",
				     path);
	}
	return 0;
}

static int elf_runtime_addr(Elf *e, const struct mod_list *l, const char *path,
			    uint64_t vaddr, uint64_t *out)
{
	size_t nph = 0;

	if (elf_getphdrnum(e, &nph) < 0)
		return ps_err_detail(PS_ERR_FORMAT, "%s has no program headers",
				     path);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t fo;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
			continue;
		/* Link address → file offset → the mapping of that offset. */
		fo = vaddr - ph.p_vaddr + ph.p_offset;
		for (size_t k = 0; k < l->n; k++) {
			const struct mod_map *m = &l->maps[k];

			if (strcmp(m->path, path) || fo < m->offset ||
			    fo - m->offset >= m->end - m->start)
				continue;
			*out = m->start + (fo - m->offset);
			return 0;
		}
	}
	return ps_err_detail(PS_ERR_NOT_FOUND,
			     "address 0x%" PRIx64 " of %s is not mapped", vaddr,
			     path);
}

int rsv_runtime_addr(const struct mod_list *l, const char *path, uint64_t vaddr,
		     uint64_t *out)
{
	Elf *e;
	int fd, r;

	if (!l || !path || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "rsv_runtime_addr: bad args");
	r = open_elf(file_of(l, path), &fd, &e);
	if (r)
		return r;
	r = elf_runtime_addr(e, l, path, vaddr, out);
	elf_end(e);
	close(fd);
	return r;
}

/* ---- symbols ---- */

/* The qualified name inside a demangled signature: no parameter list,
 * no return type (templates have one).  Written into @out. */
static void function_part(const char *dm, char *out, size_t outsz)
{
	size_t start = 0, end = strlen(dm), o = 0;
	int depth = 0;

	for (size_t i = 0; dm[i]; i++) {
		if (!strncmp(dm + i, ANON_NS, sizeof(ANON_NS) - 1)) {
			i += sizeof(ANON_NS) - 2;
			continue;
		}
		if (dm[i] == '<')
			depth++;
		else if (dm[i] == '>' && depth)
			depth--;
		else if (!depth && dm[i] == ' ')
			start = i + 1;
		else if (!depth && dm[i] == '(' && i > 0) {
			/* "operator()" keeps its own parentheses. */
			if (i >= 8 && !strncmp(dm + i - 8, "operator", 8))
				continue;
			end = i;
			break;
		}
	}
	if (start > end)
		start = 0;
	for (size_t i = start; i < end && o + 1 < outsz; i++)
		out[o++] = dm[i];
	out[o] = 0;
}

/* @s without template argument lists ("f<int>" → "f"). */
static void strip_templates(const char *s, char *out, size_t outsz)
{
	size_t o = 0;
	int depth = 0;

	for (; *s && o + 1 < outsz; s++) {
		if (*s == '<')
			depth++;
		else if (*s == '>' && depth)
			depth--;
		else if (!depth)
			out[o++] = *s;
	}
	out[o] = 0;
}

/* Does ELF symbol @sym name the function @want?  Plain names compare as
 * is; C++ names also by their demangled form, with or without parameter
 * list, return type and template arguments. */
static int name_matches(const char *sym, const char *want)
{
	char fn[512], plain[512];
	char *dm;
	int hit = 0;

	if (!strcmp(sym, want))
		return 1;
	if (strncmp(sym, "_Z", 2))
		return 0;
	dm = cplus_demangle(sym, DMGL_PARAMS | DMGL_ANSI);
	if (!dm)
		return 0;
	if (!strcmp(dm, want)) {
		hit = 1;
	} else if (!strchr(want, '(')) {
		function_part(dm, fn, sizeof(fn));
		strip_templates(fn, plain, sizeof(plain));
		hit = !strcmp(fn, want) || !strcmp(plain, want);
	}
	free(dm);
	return hit;
}

/* Calls @fn for every defined function symbol of @e. */
typedef int (*sym_fn)(void *ctx, const char *name, uint64_t value);

/* Does @e have a full symbol table (.symtab), not just the dynamic one? */
static int has_symtab(Elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 1;
	}
	return 0;
}

static int each_function(Elf *e, sym_fn fn, void *ctx)
{
	Elf_Scn *scn = NULL;
	int r = 0;

	while (r == 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < n && r == 0; i++) {
			GElf_Sym s;
			const char *name;
			int type;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			type = GELF_ST_TYPE(s.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && *name)
				r = fn(ctx, name, s.st_value);
		}
	}
	return r;
}

/* Close names for "did you mean". */
struct suggest {
	const char *want;
	char *name[MAX_SUGGEST];
	size_t dist[MAX_SUGGEST];
	size_t n;
};

static size_t edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), row[128];

	if (la >= 128 || lb >= 128)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0], best;

		row[0] = i;
		best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t v = diag + (a[i - 1] != b[j - 1]);

			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			if (up + 1 < v)
				v = up + 1;
			row[j] = v;
			diag = up;
			if (v < best)
				best = v;
		}
		if (best > cap)
			return cap + 1;
	}
	return row[lb];
}

static void suggest_add(struct suggest *sg, const char *name)
{
	size_t cap = strlen(sg->want) / 3 + 1, d, worst = 0;

	if (cap < 2)
		cap = 2;
	d = edit_distance(sg->want, name, cap);
	if (d > cap)
		return;
	for (size_t i = 0; i < sg->n; i++)
		if (!strcmp(sg->name[i], name))
			return;
	if (sg->n == MAX_SUGGEST) {
		for (size_t i = 1; i < sg->n; i++)
			if (sg->dist[i] > sg->dist[worst])
				worst = i;
		if (sg->dist[worst] <= d)
			return;
		free(sg->name[worst]);
	} else {
		worst = sg->n++;
	}
	sg->name[worst] = strdup(name);
	sg->dist[worst] = d;
	if (!sg->name[worst])
		sg->n--; /* a suggestion is optional */
}

struct sym_search {
	const struct rsv_spec *spec;
	const struct mod_list *l;
	const char *path;
	Elf *e;
	struct rsv_result *res;
	struct suggest sg;
	int err;
	const char *stripped; /* the first searched module without .symtab */
};

static int on_symbol(void *ctx, const char *name, uint64_t value)
{
	struct sym_search *s = ctx;
	uint64_t addr;
	int r;

	if (!name_matches(name, s->spec->name)) {
		suggest_add(&s->sg, name);
		return 0;
	}
	r = elf_runtime_addr(s->e, s->l, s->path, value, &addr);
	if (r == PS_ERR_NOT_FOUND)
		return 0; /* a segment not mapped (yet) */
	if (r)
		return r;
	return add_target(s->res, addr, s->path, name);
}

static void detail_not_found(struct sym_search *s, const char *paths0)
{
	char list[400] = "";
	size_t o = 0;

	for (size_t i = 0; i < s->sg.n; i++) {
		int n = snprintf(list + o, sizeof(list) - o, "%s%s",
				 i ? ", " : "", s->sg.name[i]);

		if (n < 0 || (size_t)n >= sizeof(list) - o)
			break;
		o += (size_t)n;
	}
	if (s->stripped)
		ps_err_detail(PS_ERR_NOT_FOUND,
			      "no function '%s' in %s%s: %s is stripped (it "
			      "has no symbol table); trigger on addr:0xADDR, "
			      "or trace a build with symbols",
			      s->spec->name,
			      s->spec->module ? s->spec->module
					      : base_name(paths0),
			      s->spec->module ? "" : " or its libraries",
			      base_name(s->stripped));
	else if (s->spec->module)
		ps_err_detail(PS_ERR_NOT_FOUND, "no function '%s' in %s%s%s%s",
			      s->spec->name, s->spec->module,
			      o ? "; did you mean: " : "", list, o ? "?" : "");
	else
		ps_err_detail(PS_ERR_NOT_FOUND,
			      "no function '%s' in %s or its libraries%s%s%s",
			      s->spec->name, base_name(paths0),
			      o ? "; did you mean: " : "", list, o ? "?" : "");
}

static int detail_ambiguous(const struct rsv_spec *spec,
			    const struct rsv_result *res)
{
	char list[600] = "";
	size_t o = 0;

	for (size_t i = 0; i < res->n; i++) {
		int n = snprintf(list + o, sizeof(list) - o,
				 "%s%s at 0x%" PRIx64 " in %s", i ? "; " : "",
				 res->t[i].symbol, res->t[i].addr,
				 base_name(res->t[i].module));

		if (n < 0 || (size_t)n >= sizeof(list) - o)
			break;
		o += (size_t)n;
	}
	return ps_err_detail(PS_ERR_AMBIGUOUS,
			     "'%s' names %zu functions (%s): pick one with "
			     "NAME@MODULE, FILE:LINE or addr:0xADDR",
			     spec->text, res->n, list);
}

static int resolve_symbol(const struct rsv_spec *spec, const struct mod_list *l,
			  struct rsv_result *out)
{
	const char **paths = calloc(l->n + 1, sizeof(*paths));
	struct sym_search s;
	size_t np, searched = 0;
	int r = 0;

	if (!paths)
		return PS_ERR_NOMEM;
	memset(&s, 0, sizeof(s));
	s.spec = spec;
	s.l = l;
	s.res = out;
	s.sg.want = spec->name;
	np = distinct_paths(l, paths);
	for (size_t i = 0; i < np && r == 0; i++) {
		int fd;

		if (spec->module && !module_matches(paths[i], spec->module))
			continue;
		searched++;
		if (open_elf(file_of(l, paths[i]), &fd, &s.e))
			continue; /* unreadable module: nothing to find */
		s.path = paths[i];
		/* The program itself (or the module asked for) stripped:
		 * worth saying, since no name in it can be found. */
		if (!s.stripped && (i == 0 || spec->module) && !has_symtab(s.e))
			s.stripped = paths[i];
		r = each_function(s.e, on_symbol, &s);
		elf_end(s.e);
		close(fd);
	}
	if (!r && spec->module && !searched)
		r = RSV_PENDING; /* the module may be dlopen'ed later */
	else if (!r && out->n == 0) {
		detail_not_found(&s, np ? paths[0] : "the program");
		r = PS_ERR_NOT_FOUND;
	} else if (!r && out->n > 1 && strcmp(spec->name, TRIGGER_FN))
		r = detail_ambiguous(spec, out);
	for (size_t i = 0; i < s.sg.n; i++)
		free(s.sg.name[i]);
	free(paths);
	if (r)
		rsv_result_fini(out);
	return r;
}

/* ---- source lines ---- */

/* Does DWARF file name @src (often absolute) name the spec's @want?
 * A bare name compares with the base name, a path with the tail. */
static int file_matches(const char *src, const char *want)
{
	size_t ls = strlen(src), lw = strlen(want);

	if (!strchr(want, '/'))
		return !strcmp(base_name(src), want);
	if (lw > ls)
		return 0;
	return !strcmp(src + ls - lw, want) &&
	       (ls == lw || src[ls - lw - 1] == '/' || want[0] == '/');
}

struct line_search {
	int file_seen; /* some CU has the file */
	int found;
	uint64_t lowest;  /* lowest is_stmt address of the line */
	unsigned nearest; /* closest line with code, for the detail */
};

static void search_lines(Dwarf *dw, const struct rsv_spec *spec,
			 struct line_search *ls)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_getsrclines(&cu, &lines, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				Dwarf_Line *ln = dwarf_onesrcline(lines, i);
				const char *src;
				int no;
				bool stmt;
				Dwarf_Addr a;

				if (!ln ||
				    !(src = dwarf_linesrc(ln, NULL, NULL)) ||
				    !file_matches(src, spec->file) ||
				    dwarf_lineno(ln, &no) || no <= 0)
					continue;
				ls->file_seen = 1;
				if ((unsigned)no != spec->line) {
					unsigned d =
					    (unsigned)no > spec->line
						? (unsigned)no - spec->line
						: spec->line - (unsigned)no;
					unsigned b =
					    ls->nearest > spec->line
						? ls->nearest - spec->line
						: spec->line - ls->nearest;

					if (!ls->nearest || d < b)
						ls->nearest = (unsigned)no;
					continue;
				}
				if (dwarf_linebeginstatement(ln, &stmt) ||
				    !stmt || dwarf_lineaddr(ln, &a))
					continue;
				if (!ls->found || a < ls->lowest)
					ls->lowest = a;
				ls->found = 1;
			}
		}
		off = next;
	}
}

/* DWARF of @path: in the file, or in its separate debug file found by
 * build id under /usr/lib/debug/.build-id. */
static Dwarf *open_dwarf(const char *path, int *fd)
{
	uint8_t id[REC_BUILD_ID_MAX];
	char hex[2 * REC_BUILD_ID_MAX + 1], dbg[256];
	Dwarf *dw;
	int n;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0) {
		dw = dwarf_begin(*fd, DWARF_C_READ);
		if (dw)
			return dw;
		close(*fd);
	}
	n = mod_build_id(path, id, sizeof(id));
	if (n < 2)
		return NULL;
	mod_build_id_hex(id, (size_t)n, hex, sizeof(hex));
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 hex, hex + 2);
	*fd = open(dbg, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	dw = dwarf_begin(*fd, DWARF_C_READ);
	if (!dw)
		close(*fd);
	return dw;
}

static int resolve_line(const struct rsv_spec *spec, const struct mod_list *l,
			struct rsv_result *out)
{
	const char **paths = calloc(l->n + 1, sizeof(*paths));
	unsigned nearest = 0;
	int seen = 0, r = RSV_PENDING;
	size_t np;

	if (!paths)
		return PS_ERR_NOMEM;
	np = distinct_paths(l, paths);
	for (size_t i = 0; i < np; i++) {
		struct line_search ls = {0, 0, 0, 0};
		uint64_t addr;
		char sym[64];
		Dwarf *dw;
		int fd;

		dw = open_dwarf(file_of(l, paths[i]), &fd);
		if (!dw)
			continue;
		search_lines(dw, spec, &ls);
		dwarf_end(dw);
		close(fd);
		seen |= ls.file_seen;
		if (ls.nearest && !nearest)
			nearest = ls.nearest;
		if (!ls.found)
			continue;
		r = rsv_runtime_addr(l, paths[i], ls.lowest, &addr);
		if (r == PS_ERR_NOT_FOUND) {
			r = RSV_PENDING;
			continue;
		}
		if (r)
			break;
		snprintf(sym, sizeof(sym), "%s:%u", base_name(spec->file),
			 spec->line);
		r = add_target(out, addr, paths[i], sym);
		break;
	}
	free(paths);
	if (r == RSV_PENDING && seen) {
		if (nearest)
			return ps_err_detail(PS_ERR_NOT_FOUND,
					     "%s has no code at line %u; the "
					     "nearest line with code is %u",
					     spec->file, spec->line, nearest);
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s has no code at line %u", spec->file,
				     spec->line);
	}
	return r;
}

/* ---- entry points ---- */

int rsv_resolve_maps(const struct rsv_spec *spec, const struct mod_list *l,
		     struct rsv_result *out)
{
	const struct mod_map *m;

	if (!spec || !l || !out)
		return ps_err_detail(PS_ERR_INVAL, "rsv_resolve: bad args");
	out->t = NULL;
	out->n = 0;
	switch (spec->kind) {
	case RSV_SYMBOL:
		return resolve_symbol(spec, l, out);
	case RSV_LINE:
		return resolve_line(spec, l, out);
	case RSV_ADDR:
		m = mod_find(l, spec->addr);
		if (!m || !(m->prot & PROT_EXEC))
			return ps_err_detail(PS_ERR_INVAL,
					     "address 0x%" PRIx64 " is not in "
					     "the target's code",
					     spec->addr);
		return add_target(out, spec->addr, m->path, spec->text);
	}
	return ps_err_detail(PS_ERR_INVAL, "rsv_resolve: unknown spec kind");
}

int rsv_resolve(const struct rsv_spec *spec, pid_t pid, struct rsv_result *out)
{
	struct mod_list l;
	int r;

	if (!spec || !out)
		return ps_err_detail(PS_ERR_INVAL, "rsv_resolve: bad args");
	out->t = NULL;
	out->n = 0;
	r = mod_read(pid, MOD_EXEC, &l);
	if (r)
		return r;
	r = rsv_resolve_maps(spec, &l, out);
	mod_list_fini(&l);
	return r;
}

/* SPDX-License-Identifier: MIT */
/* Trigger specs that name a function (see resolve_internal.h): ELF
 * symbol search with C++ names matched by their qualified name, and
 * suggestions for a misspelt one. */
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

#include <libiberty/demangle.h>

#include "ptscope/error.h"
#include "src/record/core/modules.h"
#include "src/record/triggers/resolve.h"
#include "src/record/triggers/resolve_internal.h"

#define TRIGGER_FN "ptscope_trigger"
#define MAX_SUGGEST 5
#define ANON_NS "(anonymous namespace)"

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
	r = rsv_elf_runtime_addr(s->e, s->l, s->path, value, &addr);
	if (r == PS_ERR_NOT_FOUND)
		return 0; /* a segment not mapped (yet) */
	if (r)
		return r;
	return rsv_add_target(s->res, addr, s->path, name);
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
					      : rsv_base_name(paths0),
			      s->spec->module ? "" : " or its libraries",
			      rsv_base_name(s->stripped));
	else if (s->spec->module)
		ps_err_detail(PS_ERR_NOT_FOUND, "no function '%s' in %s%s%s%s",
			      s->spec->name, s->spec->module,
			      o ? "; did you mean: " : "", list, o ? "?" : "");
	else
		ps_err_detail(PS_ERR_NOT_FOUND,
			      "no function '%s' in %s or its libraries%s%s%s",
			      s->spec->name, rsv_base_name(paths0),
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
				 rsv_base_name(res->t[i].module));

		if (n < 0 || (size_t)n >= sizeof(list) - o)
			break;
		o += (size_t)n;
	}
	return ps_err_detail(PS_ERR_AMBIGUOUS,
			     "'%s' names %zu functions (%s): pick one with "
			     "NAME@MODULE, FILE:LINE or addr:0xADDR",
			     spec->text, res->n, list);
}

int rsv_resolve_symbol(const struct rsv_spec *spec, const struct mod_list *l,
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
	np = rsv_distinct_paths(l, paths);
	for (size_t i = 0; i < np && r == 0; i++) {
		int fd;

		if (spec->module && !rsv_module_matches(paths[i], spec->module))
			continue;
		searched++;
		if (rsv_open_elf(rsv_file_of(l, paths[i]), &fd, &s.e))
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
		out->near_miss = s.sg.n > 0 && !s.stripped;
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

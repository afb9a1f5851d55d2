/* SPDX-License-Identifier: MIT */
/* Address spaces of the symbolizer (see symbols.h): modules and raw
 * regions placed at run-time addresses, the lookup of the function at an
 * address through a direct-mapped cache, and stand-ins named
 * "module+0xoffset" for code without a symbol. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/symbols.h"
#include "decoder/symmodule.h"
#include "decoder/symnames.h"
#include "ptscope/error.h"

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
	sym_arena_free(&sp->names);
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

	pl.name = sym_arena_put(&sp->names, name ? name : "[raw]");
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
	s->fn.name = sym_arena_put(&sp->names, name);
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
		sym_module_lines(pl->m, f);
		rt->start = f->start + pl->bias;
		rt->end = f->end + pl->bias;
		rt->info = (struct ps_span_info){pl->name, rt->start, f->file,
						 f->line};
		rt->aliases = f->aliases;
		rt->name = f->name;
	}
	return rt;
}

int sym_is_func_entry(const struct sym_space *sp, uint64_t ip)
{
	const struct sym_place *pl = find_place((struct sym_space *)sp, ip);
	const struct mfunc *f;

	if (!pl || !pl->m)
		return 0; /* a stand-in has no extent */
	f = module_find(pl->m, ip - pl->bias);
	return f && f->start + pl->bias == ip && f->end > f->start;
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

const struct prm_func *sym_params(struct sym_space *sp, uint64_t entry)
{
	struct sym_place *pl = find_place(sp, entry);
	struct sym_module *m;

	if (!pl || !pl->m)
		return NULL;
	m = pl->m;
	if (!m->params_done) {
		m->params_done = 1;
		if (prm_table_load(m->dbg_path ? m->dbg_path : m->path, 1,
				   &m->params))
			m->params = NULL;
	}
	return prm_table_find(m->params, entry - pl->bias);
}

/* SPDX-License-Identifier: MIT */
/* Function parameters from DWARF and their SysV x86-64 locations at the
 * entry (see params.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "decoder/params.h"
#include "ptscope/error.h"

/* Deeper than this, DWARF is taken as corrupt. */
#define PRM_DIE_DEPTH 32

struct prm_table {
	struct prm_func *f; /* sorted by entry */
	size_t n, cap;
	char **strs; /* every string and array we own */
	size_t nstrs, strcap;
	int nomem;
};

static void *keep(struct prm_table *t, void *p)
{
	if (!p) {
		t->nomem = 1;
		return NULL;
	}
	if (t->nstrs == t->strcap) {
		size_t nc = t->strcap ? t->strcap * 2 : 256;
		char **ns = realloc(t->strs, nc * sizeof(*ns));

		if (!ns) {
			free(p);
			t->nomem = 1;
			return NULL;
		}
		t->strs = ns;
		t->strcap = nc;
	}
	t->strs[t->nstrs++] = p;
	return p;
}

static const char *kstr(struct prm_table *t, const char *s)
{
	return keep(t, strdup(s ? s : ""));
}

static const char *const reg_names[6] = {"rdi", "rsi", "rdx",
					 "rcx", "r8",  "r9"};

const char *prm_reg_name(unsigned index)
{
	return index < 6 ? reg_names[index] : "?";
}

/* The type DIE under typedefs and qualifiers; 0 if none (void). */
static int strip_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Die cur;

	if (!dwarf_attr_integrate(die, DW_AT_type, &a) ||
	    !dwarf_formref_die(&a, &cur))
		return 0;
	for (int i = 0; i < 16; i++) {
		switch (dwarf_tag(&cur)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (!dwarf_attr_integrate(&cur, DW_AT_type, &a) ||
			    !dwarf_formref_die(&a, &cur))
				return 0;
			continue;
		default:
			*out = cur;
			return 1;
		}
	}
	return 0;
}

static unsigned type_size(Dwarf_Die *ty)
{
	Dwarf_Word sz;

	return dwarf_aggregate_size(ty, &sz) == 0 ? (unsigned)sz : 0;
}

static void read_enums(struct prm_table *t, Dwarf_Die *ty, struct prm_param *p)
{
	Dwarf_Die c;
	struct prm_enum *e = NULL;
	size_t n = 0, cap = 0;

	if (dwarf_child(ty, &c) != 0)
		return;
	do {
		Dwarf_Attribute a;
		Dwarf_Sword v;

		if (dwarf_tag(&c) != DW_TAG_enumerator ||
		    !dwarf_attr(&c, DW_AT_const_value, &a) ||
		    dwarf_formsdata(&a, &v) != 0)
			continue;
		if (n == cap) {
			struct prm_enum *ne;

			cap = cap ? cap * 2 : 8;
			ne = realloc(e, cap * sizeof(*ne));
			if (!ne) {
				free(e);
				t->nomem = 1;
				return;
			}
			e = ne;
		}
		e[n].value = v;
		e[n].name = kstr(t, dwarf_diename(&c));
		n++;
	} while (dwarf_siblingof(&c, &c) == 0);
	if (n && keep(t, e)) {
		p->enums = e;
		p->nenums = n;
	} else if (!n) {
		free(e);
	}
}

/* 1 if a C++ class is passed and returned by invisible reference (a
 * non-trivial copy or destructor): DWARF 5's DW_AT_calling_convention,
 * else a destructor among its members. */
static int by_reference(Dwarf_Die *ty)
{
	Dwarf_Attribute a;
	Dwarf_Word cc;
	Dwarf_Die c;

	if (dwarf_attr(ty, DW_AT_calling_convention, &a) &&
	    dwarf_formudata(&a, &cc) == 0)
		return cc == DW_CC_pass_by_reference;
	if (dwarf_child(ty, &c) != 0)
		return 0;
	do {
		const char *n = dwarf_diename(&c);

		if (dwarf_tag(&c) == DW_TAG_subprogram && n && n[0] == '~')
			return 1;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/* SysV classes we place: 'I' integer, 'S' SSE, 'M' memory (stack), 'X'
 * one we cannot follow (a small struct splits across registers). */
static char classify(struct prm_table *t, Dwarf_Die *die, struct prm_param *p)
{
	Dwarf_Die ty;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	unsigned size;

	p->type = PRM_NONE;
	if (!strip_type(die, &ty))
		return 'X';
	size = type_size(&ty);
	p->size = (uint8_t)(size > 255 ? 255 : size);
	switch (dwarf_tag(&ty)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type:
		p->type = PRM_PTR;
		p->size = 8;
		return 'I';
	case DW_TAG_enumeration_type:
		p->type = PRM_ENUM;
		read_enums(t, &ty, p);
		return size <= 8 ? 'I' : 'X';
	case DW_TAG_base_type:
		if (dwarf_attr(&ty, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		switch (enc) {
		case DW_ATE_boolean:
			p->type = PRM_BOOL;
			return 'I';
		case DW_ATE_signed_char:
		case DW_ATE_unsigned_char:
			/* plain char is a character; signed and unsigned
			 * char are small numbers */
			p->type = size == 1 && dwarf_diename(&ty) &&
					  !strcmp(dwarf_diename(&ty), "char")
				      ? PRM_CHAR
				      : (enc == DW_ATE_signed_char ? PRM_INT
								   : PRM_UINT);
			return 'I';
		case DW_ATE_signed:
			p->type = PRM_INT;
			return size <= 8 ? 'I' : 'X';
		case DW_ATE_unsigned:
		case DW_ATE_UTF:
			p->type = PRM_UINT;
			return size <= 8 ? 'I' : 'X';
		case DW_ATE_float:
			if (size == 8 || size == 4) {
				p->type = size == 8 ? PRM_DOUBLE : PRM_FLOAT;
				return 'S';
			}
			return 'M'; /* long double: memory */
		default:
			return 'X';
		}
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		if (by_reference(&ty)) {
			/* a pointer to the caller's copy */
			p->type = PRM_PTR;
			p->size = 8;
			return 'R';
		}
		return size > 16 ? 'M' : 'X';
	case DW_TAG_array_type:
		return size > 16 ? 'M' : 'X';
	default:
		return 'X';
	}
}

/* DWARF register number → SysV integer argument index (0-5), or xmm
 * argument index + 16; -1 for any other register. */
static int arg_reg(unsigned dw)
{
	switch (dw) {
	case 5:
		return 0; /* rdi */
	case 4:
		return 1; /* rsi */
	case 1:
		return 2; /* rdx */
	case 2:
		return 3; /* rcx */
	case 8:
		return 4;
	case 9:
		return 5;
	default:
		return dw >= 17 && dw < 25 ? 16 + (int)(dw - 17) : -1;
	}
}

/* What DWARF says of parameter @c at the entry @pc: 1 with p->at/index
 * set when it is a constant or in an argument register there, else 0. */
static int dwarf_place(Dwarf_Die *c, uint64_t pc, struct prm_param *p)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	Dwarf_Sword sv;
	int r;

	if (dwarf_attr(c, DW_AT_const_value, &a)) {
		if (dwarf_formsdata(&a, &sv) != 0)
			return 0;
		p->at = PRM_AT_CONST;
		p->cval = (uint64_t)sv;
		return 1;
	}
	if (!dwarf_attr(c, DW_AT_location, &a) ||
	    dwarf_getlocation_addr(&a, pc, &ops, &nops, 1) != 1 || nops != 1)
		return 0;
	if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31)
		r = arg_reg(ops[0].atom - DW_OP_reg0);
	else if (ops[0].atom == DW_OP_regx)
		r = arg_reg((unsigned)ops[0].number);
	else
		return 0;
	if (r < 0)
		return 0;
	p->at = r >= 16 ? PRM_AT_XMM : PRM_AT_REG;
	p->index = (uint32_t)(r >= 16 ? r - 16 : r);
	return 1;
}

/* Place the parameters of subprogram @fn in order. */
static int read_params(struct prm_table *t, Dwarf_Die *fn, struct prm_func *f)
{
	Dwarf_Die c;
	struct prm_param rp;
	unsigned ni = 0, ns = 0, stack = 8, cap = 0;
	int lost = 0;
	char rc = classify(t, fn, &rp);

	/* A return value in memory: its address goes in rdi first. */
	if (rc == 'M' || rc == 'R')
		ni = 1;

	if (dwarf_child(fn, &c) != 0)
		return 0;
	do {
		struct prm_param p, *np;
		char cls;

		if (dwarf_tag(&c) != DW_TAG_formal_parameter)
			continue;
		memset(&p, 0, sizeof(p));
		p.name = kstr(t, dwarf_diename(&c));
		cls = classify(t, &c, &p);
		if (lost)
			cls = 'X';
		if ((cls == 'I' || cls == 'S' || cls == 'R') &&
		    dwarf_place(&c, f->entry, &p)) {
			/* DWARF knows better (a clone's registers) */
			if (p.at == PRM_AT_REG && p.index + 1 > ni)
				ni = p.index + 1;
			if (p.at == PRM_AT_XMM && p.index + 1 > ns)
				ns = p.index + 1;
			cls = 0;
		}
		switch (cls) {
		case 0:
			break;
		case 'R':
		case 'I':
			if (ni < 6) {
				p.at = PRM_AT_REG;
				p.index = ni++;
			} else {
				p.at = PRM_AT_STACK;
				p.index = stack;
				stack += 8;
			}
			break;
		case 'S':
			if (ns < 8) {
				p.at = PRM_AT_XMM;
				p.index = ns++;
			} else {
				p.at = PRM_AT_STACK;
				p.index = stack;
				stack += 8;
			}
			break;
		case 'M':
			stack += ((unsigned)p.size + 7) & ~7u;
			p.type = PRM_NONE;
			break;
		default:
			/* A small aggregate takes registers we cannot
			 * tell: what follows is not placed either. */
			lost = 1;
			p.type = PRM_NONE;
			break;
		}
		if (f->n == cap) {
			cap = cap ? cap * 2 : 8;
			np = realloc(f->p, cap * sizeof(*np));
			if (!np)
				return PS_ERR_NOMEM;
			f->p = np;
		}
		f->p[f->n++] = p;
	} while (dwarf_siblingof(&c, &c) == 0);
	if (f->p && !keep(t, f->p))
		return PS_ERR_NOMEM;
	return 0;
}

static void read_return(struct prm_table *t, Dwarf_Die *fn, struct prm_func *f)
{
	struct prm_param *r = &f->ret;
	char cls;

	memset(r, 0, sizeof(*r));
	r->name = "return";
	cls = classify(t, fn, r);
	if (cls == 'I')
		r->at = PRM_AT_RAX;
	else if (cls == 'S')
		r->at = PRM_AT_XMM;
	else
		r->type = PRM_NONE;
}

static struct prm_func *add_func(struct prm_table *t)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		struct prm_func *nf = realloc(t->f, nc * sizeof(*nf));

		if (!nf)
			return NULL;
		t->f = nf;
		t->cap = nc;
	}
	memset(&t->f[t->n], 0, sizeof(t->f[0]));
	return &t->f[t->n++];
}

static int walk(struct prm_table *t, Dwarf_Die *parent, int depth)
{
	Dwarf_Die c;
	int err;

	if (depth > PRM_DIE_DEPTH || dwarf_child(parent, &c) != 0)
		return 0;
	do {
		Dwarf_Addr lo;
		struct prm_func *f;
		int tag = dwarf_tag(&c);

		if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		    tag == DW_TAG_structure_type) {
			err = walk(t, &c, depth + 1);
			if (err)
				return err;
			continue;
		}
		if (tag != DW_TAG_subprogram || dwarf_lowpc(&c, &lo) != 0 ||
		    !lo)
			continue;
		f = add_func(t);
		if (!f)
			return PS_ERR_NOMEM;
		f->entry = lo;
		f->name = kstr(t, dwarf_diename(&c));
		err = read_params(t, &c, f);
		if (err)
			return err;
		read_return(t, &c, f);
	} while (dwarf_siblingof(&c, &c) == 0);
	return t->nomem ? PS_ERR_NOMEM : 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct prm_func *x = a, *y = b;

	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* Functions the symbol table has and DWARF does not describe. */
static int add_raw(struct prm_table *t, Elf *elf, size_t ndwarf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			struct prm_func key, *f;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value || s.st_shndx == SHN_UNDEF)
				continue;
			key.entry = s.st_value;
			if (bsearch(&key, t->f, ndwarf, sizeof(*t->f),
				    cmp_func))
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			f = add_func(t);
			if (!f)
				return PS_ERR_NOMEM;
			f->entry = s.st_value;
			f->name = kstr(t, name);
			f->raw = 1;
			f->ret.name = "return";
		}
	}
	return t->nomem ? PS_ERR_NOMEM : 0;
}

static void dedup(struct prm_table *t)
{
	size_t j = 0;

	for (size_t i = 0; i < t->n; i++) {
		if (j && t->f[j - 1].entry == t->f[i].entry) {
			/* DWARF wins over a raw symbol */
			if (t->f[j - 1].raw && !t->f[i].raw)
				t->f[j - 1] = t->f[i];
			continue;
		}
		t->f[j++] = t->f[i];
	}
	t->n = j;
}

int prm_table_load(const char *path, int raw, struct prm_table **out)
{
	struct prm_table *t;
	Dwarf *dw;
	Elf *elf;
	int fd, err = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ps_err_detail(PS_ERR_IO, "cannot open %s", path);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return ps_err_detail(PS_ERR_FORMAT, "%s is not an ELF file",
				     path);
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		elf_end(elf);
		close(fd);
		return PS_ERR_NOMEM;
	}
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (dw) {
		Dwarf_Off off = 0, next;
		size_t hsize;

		while (!err && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL,
					    NULL) == 0) {
			Dwarf_Die cu;

			if (dwarf_offdie(dw, off + hsize, &cu))
				err = walk(t, &cu, 0);
			off = next;
		}
		dwarf_end(dw);
	}
	if (!err && t->n)
		qsort(t->f, t->n, sizeof(*t->f), cmp_func);
	if (!err)
		dedup(t);
	if (!err && raw) {
		size_t nd = t->n;

		err = add_raw(t, elf, nd);
		if (!err) {
			qsort(t->f, t->n, sizeof(*t->f), cmp_func);
			dedup(t);
		}
	}
	elf_end(elf);
	close(fd);
	if (!err && t->nomem)
		err = PS_ERR_NOMEM;
	if (err) {
		prm_table_free(t);
		return err;
	}
	*out = t;
	return 0;
}

void prm_table_free(struct prm_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->f);
	free(t);
}

size_t prm_table_count(const struct prm_table *t)
{
	return t ? t->n : 0;
}

const struct prm_func *prm_table_func(const struct prm_table *t, size_t i)
{
	return t && i < t->n ? &t->f[i] : NULL;
}

const struct prm_func *prm_table_find(const struct prm_table *t, uint64_t entry)
{
	struct prm_func key;

	if (!t || !t->n)
		return NULL;
	key.entry = entry;
	return bsearch(&key, t->f, t->n, sizeof(*t->f), cmp_func);
}

const struct prm_func *prm_table_by_name(const struct prm_table *t,
					 const char *name)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (t->f[i].name && !strcmp(t->f[i].name, name))
			return &t->f[i];
	return NULL;
}

const char *prm_enum_name(const struct prm_param *p, int64_t v)
{
	for (size_t i = 0; i < p->nenums; i++)
		if (p->enums[i].value == v)
			return p->enums[i].name;
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/* The --args table of a process's main program (see args.h). */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/params.h"
#include "ptscope/error.h"
#include "src/record/args.h"

/* Run-time minus link-time address of @exe's code, from the mapping of
 * its first executable segment.  Returns 0 or PS_ERR_NOT_FOUND. */
static int code_bias(const struct mod_list *mods, const char *exe,
		     uint64_t *bias)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC), rc = PS_ERR_NOT_FOUND;
	Elf *e;
	size_t n = 0;

	if (fd < 0)
		return PS_ERR_NOT_FOUND;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n && rc; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) ||
			    ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
				continue;
			for (size_t k = 0; k < mods->n; k++) {
				const struct mod_map *m = &mods->maps[k];

				if (strcmp(m->path, exe) ||
				    ph.p_offset < m->offset ||
				    ph.p_offset - m->offset >=
					m->end - m->start)
					continue;
				*bias = m->start + (ph.p_offset - m->offset) -
					ph.p_vaddr;
				rc = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

static void place(const struct prm_param *p, struct emu_fn *f)
{
	uint8_t l;

	switch (p->at) {
	case PRM_AT_REG:
		l = EMU_LOC_REG(p->index);
		break;
	case PRM_AT_XMM:
		l = EMU_LOC_XMM(p->index);
		break;
	case PRM_AT_STACK:
		if (p->index >= 8 * 0x7f)
			return;
		l = EMU_LOC_STACK(p->index);
		break;
	default:
		return;
	}
	if (f->nvals < EMU_FN_MAXV)
		f->loc[f->nvals++] = l;
}

/* Without --args: only ptscope_write, from the symbol table (no DWARF
 * read).  Returns 0 if found. */
static int write_fn(const char *exe, uint64_t *addr)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC), rc = PS_ERR_NOT_FOUND;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return rc;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && rc && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value)
				continue;
			nm = elf_strptr(e, sh.sh_link, sym.st_name);
			if (nm && !strcmp(nm, "ptscope_write")) {
				*addr = sym.st_value;
				rc = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

int rec_args_table(const struct mod_list *mods, const char *exe, int mode,
		   struct emu_fn **out, size_t *n)
{
	struct prm_table *t;
	struct emu_fn *fns;
	uint64_t bias = 0, wr;
	size_t k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!exe || code_bias(mods, exe, &bias))
		return 0;
	if (mode == REC_ARGS_OFF) {
		if (write_fn(exe, &wr) || !(fns = calloc(1, sizeof(*fns))))
			return 0;
		fns->entry = wr + bias;
		fns->kind = EMU_W_WRITE;
		fns->nvals = 1;
		fns->loc[0] = EMU_LOC_REG(0);
		*out = fns;
		*n = 1;
		return 0;
	}
	rc = prm_table_load(exe, mode == REC_ARGS_RAW, &t);
	if (rc)
		return rc;
	fns = calloc(prm_table_count(t) + 1, sizeof(*fns));
	if (!fns) {
		prm_table_free(t);
		return PS_ERR_NOMEM;
	}
	for (size_t i = 0; i < prm_table_count(t); i++) {
		const struct prm_func *pf = prm_table_func(t, i);
		struct emu_fn *f = &fns[k];

		memset(f, 0, sizeof(*f));
		f->entry = pf->entry + bias;
		if (!strcmp(pf->name, "ptscope_write")) {
			f->kind = EMU_W_WRITE;
			f->nvals = 1;
			f->loc[0] = EMU_LOC_REG(0);
		} else if (pf->raw) {
			f->kind = EMU_W_RAW;
			f->nvals = 6;
			for (unsigned r = 0; r < 6; r++)
				f->loc[r] = EMU_LOC_REG(r);
			f->ret = EMU_RET_RAX;
		} else {
			f->kind = EMU_W_ARGS;
			for (unsigned j = 0; j < pf->n; j++)
				place(&pf->p[j], f);
			f->ret = pf->ret.at == PRM_AT_RAX   ? EMU_RET_RAX
				 : pf->ret.at == PRM_AT_XMM ? EMU_RET_XMM0
							    : EMU_RET_NONE;
			if (!f->nvals && f->ret == EMU_RET_NONE)
				continue; /* nothing to see */
		}
		k++;
	}
	prm_table_free(t);
	*out = fns;
	*n = k;
	return 0;
}

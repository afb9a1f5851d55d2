/* SPDX-License-Identifier: MIT */
/* What the symbolizer knows of one ELF file (struct sym_module), private
 * to its files: symbols.c reads the ELF symbols into it, lines.c the DWARF
 * file:line and inlined subroutines, symspace.c places it in address
 * spaces.  Callers see only the opaque type of symbols.h. */
#ifndef PTSCOPE_DECODER_SYMMODULE_H
#define PTSCOPE_DECODER_SYMMODULE_H

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "decoder/debugfile.h"
#include "decoder/params.h"
#include "decoder/symnames.h"

struct lt_cache;
struct sym_inline;
struct sym_irange;

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
	struct lt_cache *lt;  /* its line tables (linetable.h), on demand */
	int lt_failed;	      /* lt cannot read them: libdw does */
	/* inlined subroutines, read on demand (sym_module_load_inlines) */
	struct sym_inline *inl; /* owned */
	size_t ninl, inlcap;
	struct sym_irange *ir; /* owned; sorted by lo, outer first */
	size_t nir, ircap;
	int inl_done; /* 0: not read, 1: read, < 0: failed (error) */
	/* function parameters (--args), read on demand (sym_params) */
	struct prm_table *params;
	int params_done;
};

/* Fill file:line of @f's entry (a function of @m) from DWARF, once
 * (lines.c); without DWARF they stay unknown. */
void sym_module_lines(struct sym_module *m, struct mfunc *f);

#endif /* PTSCOPE_DECODER_SYMMODULE_H */

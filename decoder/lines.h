/* SPDX-License-Identifier: MIT */
/* What the symbolizer reads from a module's DWARF (lines.c, prefix sym_):
 * the inlined subroutines at an address, declared here, and the file:line
 * of each function's entry, which callers get inside struct sym_func.
 * Callers include symbols.h, which includes this header.  Internal to the
 * decoder library. */
#ifndef PTSCOPE_DECODER_LINES_H
#define PTSCOPE_DECODER_LINES_H

#include <stdint.h>

struct sym_module;

/* One inlined instance of a function (a DW_TAG_inlined_subroutine) in a
 * module.  Stable until the module is freed; identity (pointer) tells two
 * inline sites of the same function apart. */
struct sym_inline {
	const char *name;   /* the inlined function, demangled; interned */
	const char *module; /* the module's label */
	const struct sym_inline *parent; /* the inlined instance it sits in,
					  * NULL: directly in a real function */
	unsigned depth;			 /* 1 + parent's depth */
	uint64_t entry;			 /* link-time address where it starts */
	const char *call_file; /* source file of the inline site, or NULL */
	uint32_t call_line;    /* line of the inline site, 0 if unknown */
};

/* Read the module's inlined subroutines from DWARF (once; later calls
 * return the same count).  Needs a module loaded @with_lines; without
 * DWARF there are none.  Returns the number found, or PS_ERR_NOMEM. */
int sym_module_load_inlines(struct sym_module *m);

/* The innermost inlined instance covering link address @addr in @m (its
 * parents are the outer ones), or NULL.  Loads them on first use. */
const struct sym_inline *sym_module_inline_at(struct sym_module *m,
					      uint64_t addr);

#endif /* PTSCOPE_DECODER_LINES_H */

/* SPDX-License-Identifier: MIT */
/* The symbolizer (prefix sym_): code address → function name, extent and
 * source location.  Internal to the decoder library.
 *
 * A sym_module is one ELF file read once (.symtab, else .dynsym, PLT stubs
 * as "name@plt", names demangled, DWARF file:line of each function entry);
 * a stripped one takes .symtab and DWARF from its separate debug file.
 * A sym_space is one address space (a pid): modules placed at their load
 * bias, plus raw code regions.  Lookups go through a sorted array and a
 * small direct-mapped cache.  Every sym_func and every name handed out is a
 * stable pointer until the space (names of modules: the module) is freed,
 * so writers may cache by pointer.
 *
 * Files, each using only those after it: symspace.c (address spaces,
 * lookup), symbols.c (a module's ELF symbols, PLT stubs, aliases),
 * lines.c (DWARF file:line and inlined subroutines, lines.h), debugfile.c
 * (separate debug files), symnames.c (the name store, demangling, which
 * alias is shown); symmodule.h is the module's layout they share.
 */
#ifndef PTSCOPE_DECODER_SYMBOLS_H
#define PTSCOPE_DECODER_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/lines.h"
#include "decoder/params.h"
#include "ptscope/event.h"

/* One function (or a stand-in for code without a symbol). */
struct sym_func {
	const char *name; /* demangled; interned, stable */
	uint64_t start;	  /* run-time address of the first byte */
	uint64_t end;	  /* one past the last byte; == start: unknown */
	struct ps_span_info info; /* module, address (= start), file, line */
	/* The other names of the same address (glibc's _IO_puts for puts),
	 * ", "-separated; interned, stable; NULL: none.  Which name is shown
	 * is decided in symnames.h. */
	const char *aliases;
};

struct sym_module;
struct sym_space;

/* Read the symbols of the ELF file at @path.  @name labels the module in
 * spans and in "name+0xoff" (NULL: the path's base name).
 * Returns 0, PS_ERR_IO (cannot open), PS_ERR_FORMAT (not an ELF file),
 * PS_ERR_NOMEM.  @with_lines: 1 to read DWARF file:line (slower). */
int sym_module_load(const char *path, const char *name, int with_lines,
		    struct sym_module **out);
void sym_module_free(struct sym_module *m); /* accepts NULL */

/* Number of functions the module knows (symbols + PLT stubs). */
size_t sym_module_count(const struct sym_module *m);

/* The @i-th function in address order (link-time addresses), or NULL past
 * the end.  The result lives in thread-local storage until the next call
 * of sym_module_func or sym_module_find on this thread. */
const struct sym_func *sym_module_func(const struct sym_module *m, size_t i);

/* The link-time address of the module's lowest PT_LOAD segment (what a
 * run-time base is measured against). */
uint64_t sym_module_link_base(const struct sym_module *m);

/* The separate debug file whose .symtab/DWARF the module uses (found by
 * build id or .gnu_debuglink, see debugfile.h), or NULL: none needed or
 * none that matches the module's build id. */
const char *sym_module_debug_file(const struct sym_module *m);

/* Find a function by exact name (first match; else the function that has
 * it among its aliases) in link-time addresses; NULL if absent.  For tests
 * and tools. */
const struct sym_func *sym_module_find(const struct sym_module *m,
				       const char *name);

/* Returns 0, PS_ERR_NOMEM. */
int sym_space_new(struct sym_space **out);
void sym_space_free(struct sym_space *sp); /* accepts NULL */

/* Place @m (borrowed: it must outlive @sp; one module may be placed in
 * many spaces) at @bias: run-time
 * address = link address + bias, covering [lo, hi) run-time addresses
 * (0, 0: the module's whole extent).  Returns 0, PS_ERR_NOMEM. */
int sym_space_add(struct sym_space *sp, struct sym_module *m, uint64_t bias,
		  uint64_t lo, uint64_t hi);

/* Name a raw code region [vaddr, vaddr + size) (vDSO, JIT). */
int sym_space_add_region(struct sym_space *sp, const char *name, uint64_t vaddr,
			 uint64_t size);

/* The function containing @ip; never NULL except on out of memory.  Code
 * without a symbol gets a stand-in named "module+0xoffset" (or "0xADDR"
 * outside every module) whose extent is unknown (end == start). */
const struct sym_func *sym_lookup(struct sym_space *sp, uint64_t ip);
/* Is @ip the first address of a function with an extent (what
 * sym_lookup's answer says when its start is @ip and its end is past it)?
 * Reads the space only, so another thread may call it while one uses
 * sym_lookup, as long as no module is added meanwhile. */
int sym_is_func_entry(const struct sym_space *sp, uint64_t ip);

/* The innermost inlined instance covering run-time address @ip in @sp, or
 * NULL; *bias (may be NULL) gets run-time minus link-time address. */
const struct sym_inline *sym_inline_at(struct sym_space *sp, uint64_t ip,
				       uint64_t *bias);

/* The DWARF parameters of the function that starts at run-time address
 * @entry in @sp (read from its module on first use), or NULL. */
const struct prm_func *sym_params(struct sym_space *sp, uint64_t entry);

#endif /* PTSCOPE_DECODER_SYMBOLS_H */

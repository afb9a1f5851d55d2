/* SPDX-License-Identifier: MIT */
/* The names of symbols, private to the symbolizer (symbols.c, lines.c,
 * symspace.c): the store they live in (sym_arena_), demangling
 * (sym_demangle) and which name a user sees when several symbols name one
 * address (sym_names_).
 *
 * glibc names most functions several times: puts is also _IO_puts, write
 * is also __write, __libc_write and __GI___libc_write.  A trace shows the
 * name a programmer calls: the fewest leading underscores, then a global
 * symbol over a weak one over a local one, then the name the dynamic
 * symbol table exports, then the shorter name.  The others stay known as
 * the function's aliases.  A GNU indirect function's symbol marks its
 * resolver (the code that picks an implementation while relocations are
 * applied): that code is shown as "strchr [ifunc resolver]".
 */
#ifndef PTSCOPE_DECODER_SYMNAMES_H
#define PTSCOPE_DECODER_SYMNAMES_H

#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

/* A chunked string store: what it hands out never moves, so writers may
 * cache names by pointer. */
struct sym_arena {
	struct sym_chunk *head;
	size_t used, room;
};

/* A stable copy of @s, or NULL when out of memory. */
const char *sym_arena_put(struct sym_arena *a, const char *s);
/* Free every string handed out; the arena is empty again. */
void sym_arena_free(struct sym_arena *a);

/* Demangle C++ (Itanium) and Rust names into @buf; returns @buf, or @name
 * itself when it is not mangled. */
const char *sym_demangle(const char *name, char *buf, size_t size);

/* Which of several names at one address is shown: the exported one. */
enum { SYM_RANK_LOCAL, SYM_RANK_WEAK, SYM_RANK_GLOBAL };

/* The suffix of an IFUNC resolver's name. */
#define SYM_IFUNC_SUFFIX " [ifunc resolver]"

/* A function of a module, in link-time addresses. */
struct mfunc {
	uint64_t start, end;
	const char *name;    /* in the module's arena */
	const char *aliases; /* other names, ", "-separated, or NULL */
	const char *file;    /* in the module's arena, once lines_done */
	uint32_t line;
	uint8_t lines_done;
	uint8_t rank;	  /* SYM_RANK_*: of the symbol's binding */
	uint8_t ifunc;	  /* an STT_GNU_IFUNC symbol: a resolver */
	uint8_t exported; /* the dynamic symbol table has it */
};

/* qsort order: by start; at one start the name to show first. */
int sym_names_cmp(const void *a, const void *b);

/* Mark the functions whose (address, name) @elf's .dynsym exports.  Call
 * before sorting.  Returns 0 or PS_ERR_NOMEM. */
int sym_names_mark_exported(struct mfunc *f, size_t n, Elf *elf);

/* The names of the @n functions of @grp (one start, sorted) other than the
 * first, without repeats, ", "-separated into @buf; returns the length
 * (0: no aliases). */
size_t sym_names_aliases(const struct mfunc *grp, size_t n, char *buf,
			 size_t size);

#endif /* PTSCOPE_DECODER_SYMNAMES_H */

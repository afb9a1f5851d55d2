/* SPDX-License-Identifier: MIT */
/* Trigger specs → code addresses in a live process (prefix rsv_).
 *
 * Spec forms (`ptscope run -t SPEC`):
 *   .                 ptscope_trigger (include/ptscope/trigger.h)
 *   NAME              a function: its ELF symbol name, or its demangled
 *                     C++ name ("ns::Cls::method(int)", or without the
 *                     parameter list "ns::Cls::method")
 *   NAME@MODULE       the same, only in the module whose file name (or
 *                     path) is MODULE: "malloc@libc.so.6", "main@demo"
 *   addr:0xADDR       a run-time address, taken as is
 *   FILE:LINE         the lowest is_stmt address of that source line
 *                     (DWARF line table); FILE may be a base name
 *
 *   rsv_parse("handle_request", &spec);
 *   r = rsv_resolve(&spec, pid, &res);
 *   if (r == RSV_PENDING) ... retry when the target maps new code (dlopen)
 *   for (i = 0; i < res.n; i++) bp_open(tid, res.t[i].addr, ...);
 *   rsv_result_fini(&res); rsv_spec_fini(&spec);
 */
#ifndef PTSCOPE_RECORD_RESOLVE_H
#define PTSCOPE_RECORD_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mod_list;

enum rsv_kind {
	RSV_SYMBOL, /* name (+ module), also "." */
	RSV_ADDR,   /* addr:0x... */
	RSV_LINE    /* file:line */
};

struct rsv_spec {
	enum rsv_kind kind;
	char *text;    /* owned: the spec as given */
	char *name;    /* owned: RSV_SYMBOL name ("ptscope_trigger" for ".") */
	char *module;  /* owned: RSV_SYMBOL after '@', or NULL */
	uint64_t addr; /* RSV_ADDR */
	char *file;    /* owned: RSV_LINE */
	unsigned line; /* RSV_LINE */
};

/* Parse @text into @out.  Returns 0, PS_ERR_INVAL (empty, "addr:" with a
 * bad number, line 0, ...: the detail shows the accepted forms),
 * PS_ERR_NOMEM.  On error @out needs no fini. */
int rsv_parse(const char *text, struct rsv_spec *out);
void rsv_spec_fini(struct rsv_spec *s); /* accepts NULL */

/* One resolved code address. */
struct rsv_target {
	uint64_t addr; /* run-time address in the process */
	char *module;  /* owned: path of the module file ("" for addr:) */
	char *symbol;  /* owned: symbol name, or the spec text */
};

struct rsv_result {
	struct rsv_target *t; /* owned */
	size_t n;	      /* 1, except for "." which gives every copy of
			       * ptscope_trigger (one per module that defines it) */
	int near_miss;	      /* PS_ERR_NOT_FOUND: close names were offered
			       * ("did you mean"), so likely a misspelling */
};

/* rsv_resolve() returns this (> 0) when the spec names a module, or a
 * FILE:LINE, that the process has not mapped yet: retry after it maps
 * new code.  @out is then empty. */
#define RSV_PENDING 1

/* Resolve @spec against process @pid's executable mappings.
 * Returns 0 (res filled), RSV_PENDING, or:
 *   PS_ERR_NOT_FOUND  no such function/line in the loaded modules; the
 *                     detail lists up to 5 close names ("did you mean")
 *   PS_ERR_AMBIGUOUS  the name has several addresses (e.g. static
 *                     functions in two files); the detail lists them with
 *                     their modules: use NAME@MODULE
 *   PS_ERR_INVAL      addr: not inside an executable mapping
 *   mod_read() errors, PS_ERR_NOMEM */
int rsv_resolve(const struct rsv_spec *spec, pid_t pid, struct rsv_result *out);

/* The same over an already-read module list (from mod_read()). */
int rsv_resolve_maps(const struct rsv_spec *spec, const struct mod_list *l,
		     struct rsv_result *out);

void rsv_result_fini(struct rsv_result *r); /* accepts NULL */

/* Run-time address of link-time address @vaddr of ELF file @path mapped
 * by the mappings in @l (PIE, shared library or non-PIE executable).
 * Returns 0 (*out set), PS_ERR_NOT_FOUND (@vaddr's segment not mapped),
 * PS_ERR_IO, PS_ERR_FORMAT. */
int rsv_runtime_addr(const struct mod_list *l, const char *path, uint64_t vaddr,
		     uint64_t *out);

#endif /* PTSCOPE_RECORD_RESOLVE_H */

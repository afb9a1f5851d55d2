/* SPDX-License-Identifier: MIT */
/* What the pieces of trigger resolution share (prefix rsv_): the module
 * helpers of resolve_module.c, used by the symbol search
 * (resolve_symbol.c) and the line search (resolve_line.c), which
 * resolve.c chooses between.  Not for other modules: they use resolve.h.
 */
#ifndef PTSCOPE_RECORD_TRIGGERS_RESOLVE_INTERNAL_H
#define PTSCOPE_RECORD_TRIGGERS_RESOLVE_INTERNAL_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "src/record/core/modules.h"

struct rsv_spec;
struct rsv_result;

/* Add @addr (in module @mod, named @sym) to @r unless it is there.
 * Returns 0 or PS_ERR_NOMEM. */
int rsv_add_target(struct rsv_result *r, uint64_t addr, const char *mod,
		   const char *sym);

/* The file name part of @path. */
const char *rsv_base_name(const char *path);
/* 1 if module @path is what @want names: "libc" matches libc.so.6 and
 * libc-2.31.so; "demo" matches .../demo. */
int rsv_module_matches(const char *path, const char *want);
/* The distinct file-backed executable modules of @l, in address order,
 * into @paths (room for l->n).  Returns how many. */
size_t rsv_distinct_paths(const struct mod_list *l, const char **paths);
/* The file to read for the module mapped from @path (a deleted or
 * replaced binary is read through /proc/PID/map_files). */
const char *rsv_file_of(const struct mod_list *l, const char *path);
/* Open @path as ELF.  Returns 0, PS_ERR_IO or PS_ERR_FORMAT. */
int rsv_open_elf(const char *path, int *fd, Elf **e);
/* Link address @vaddr of module @path (ELF @e) → its run-time address in
 * @l.  Returns 0, PS_ERR_FORMAT or PS_ERR_NOT_FOUND (not mapped). */
int rsv_elf_runtime_addr(Elf *e, const struct mod_list *l, const char *path,
			 uint64_t vaddr, uint64_t *out);

/* Resolve a RSV_SYMBOL spec (resolve_symbol.c) or a RSV_LINE spec
 * (resolve_line.c) in @l.  Return as rsv_resolve_maps. */
int rsv_resolve_symbol(const struct rsv_spec *spec, const struct mod_list *l,
		       struct rsv_result *out);
int rsv_resolve_line(const struct rsv_spec *spec, const struct mod_list *l,
		     struct rsv_result *out);

#endif /* PTSCOPE_RECORD_TRIGGERS_RESOLVE_INTERNAL_H */

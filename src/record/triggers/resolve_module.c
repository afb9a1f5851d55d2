/* SPDX-License-Identifier: MIT */
/* The modules of a process as trigger resolution sees them (see
 * resolve_internal.h): which module a name means, its ELF file, link
 * addresses → run-time addresses, and the result list. */
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


#include "ptscope/error.h"
#include "src/record/core/modules.h"
#include "src/record/triggers/resolve.h"
#include "src/record/triggers/resolve_internal.h"


void rsv_result_fini(struct rsv_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->t[i].module);
		free(r->t[i].symbol);
	}
	free(r->t);
	r->t = NULL;
	r->n = 0;
}

int rsv_add_target(struct rsv_result *r, uint64_t addr, const char *mod,
		      const char *sym)
{
	struct rsv_target *t;

	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].addr == addr)
			return 0; /* aliases and .symtab/.dynsym twins */
	t = realloc(r->t, (r->n + 1) * sizeof(*t));
	if (!t)
		return PS_ERR_NOMEM;
	r->t = t;
	t = &r->t[r->n];
	t->addr = addr;
	t->module = strdup(mod);
	t->symbol = strdup(sym);
	if (!t->module || !t->symbol) {
		free(t->module);
		free(t->symbol);
		return PS_ERR_NOMEM;
	}
	r->n++;
	return 0;
}

/* ---- modules of the process ---- */

const char *rsv_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "libc" matches libc.so.6 and libc-2.31.so; "demo" matches .../demo. */
int rsv_module_matches(const char *path, const char *want)
{
	const char *b = rsv_base_name(path);
	size_t n = strlen(want);

	if (!strcmp(path, want) || !strcmp(b, want))
		return 1;
	return !strncmp(b, want, n) && (b[n] == '.' || b[n] == '-');
}

/* Distinct file-backed executable modules, in address order. */
size_t rsv_distinct_paths(const struct mod_list *l, const char **paths)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct mod_map *m = &l->maps[i];
		size_t k;

		if (!(m->prot & PROT_EXEC) || !m->inode || m->path[0] != '/')
			continue;
		for (k = 0; k < n && strcmp(paths[k], m->path); k++)
			;
		if (k == n)
			paths[n++] = m->path;
	}
	return n;
}

/* The file to read for the module mapped from @path (modules.h: a
 * deleted or replaced binary is read through /proc/PID/map_files). */
const char *rsv_file_of(const struct mod_list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->maps[i].path, path))
			return mod_file(&l->maps[i]);
	return path;
}

int rsv_open_elf(const char *path, int *fd, Elf **e)
{
	elf_version(EV_CURRENT);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(errno));
	*e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*e || elf_kind(*e) != ELF_K_ELF) {
		elf_end(*e);
		close(*fd);
		return ps_err_detail(PS_ERR_FORMAT, "%s is not an ELF file",
				     path);
	}
	return 0;
}

int rsv_elf_runtime_addr(Elf *e, const struct mod_list *l, const char *path,
			    uint64_t vaddr, uint64_t *out)
{
	size_t nph = 0;

	if (elf_getphdrnum(e, &nph) < 0)
		return ps_err_detail(PS_ERR_FORMAT, "%s has no program headers",
				     path);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t fo;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
			continue;
		/* Link address → file offset → the mapping of that offset. */
		fo = vaddr - ph.p_vaddr + ph.p_offset;
		for (size_t k = 0; k < l->n; k++) {
			const struct mod_map *m = &l->maps[k];

			if (strcmp(m->path, path) || fo < m->offset ||
			    fo - m->offset >= m->end - m->start)
				continue;
			*out = m->start + (fo - m->offset);
			return 0;
		}
	}
	return ps_err_detail(PS_ERR_NOT_FOUND,
			     "address 0x%" PRIx64 " of %s is not mapped", vaddr,
			     path);
}

int rsv_runtime_addr(const struct mod_list *l, const char *path, uint64_t vaddr,
		     uint64_t *out)
{
	Elf *e;
	int fd, r;

	if (!l || !path || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "rsv_runtime_addr: bad args");
	r = rsv_open_elf(rsv_file_of(l, path), &fd, &e);
	if (r)
		return r;
	r = rsv_elf_runtime_addr(e, l, path, vaddr, out);
	elf_end(e);
	close(fd);
	return r;
}

/* SPDX-License-Identifier: MIT */
/* Which of QEMU's mappings are the guest's code, and where the guest
 * program starts (see qemu_engine.h). */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/record/args.h"
#include "src/record/qemu/qemu_engine.h"

/* 1 if file offset range [@off, @off+@len) of ELF file @path holds code
 * (lies in a PT_LOAD segment with PF_X). */
static int elf_code_at(const char *path, uint64_t off, uint64_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), code = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64)
		for (int i = 0; i < eh.e_phnum && !code; i++)
			if (pread(fd, &ph, sizeof(ph),
				  (off_t)(eh.e_phoff + i * sizeof(ph))) ==
				sizeof(ph) &&
			    ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
			    off < ph.p_offset + ph.p_filesz &&
			    ph.p_offset < off + len)
				code = 1;
	close(fd);
	return code;
}

/* /proc/PID/maps of QEMU holds the emulator's own objects beside the
 * guest's (the same libc, mapped twice): drop QEMU's, and its vDSO.
 * QEMU maps guest code readable but not executable (it runs translated
 * copies), so a guest mapping is code when its ELF segment says so. */
void qemu_keep_guest_maps(const struct qchan *q, struct rec_proc *p)
{
	size_t k = 0;

	for (size_t i = 0; i < p->mods.n; i++) {
		struct mod_map *m = &p->mods.maps[i];
		int host = !strcmp(m->path, "[vdso]") || !m->path[0] ||
			   m->path[0] == '[';

		for (uint32_t j = 0; j < q->nhost && !host; j++)
			host = m->start < q->host[j].end &&
			       q->host[j].start < m->end;
		if (!host && !(m->prot & PROT_EXEC)) {
			host =
			    !elf_code_at(m->path, m->offset, m->end - m->start);
			m->prot |= PROT_EXEC;
		}
		if (host) {
			free(m->path);
			free(m->open_path);
			continue;
		}
		p->mods.maps[k++] = *m;
	}
	p->mods.n = k;
	p->exe_start = p->exe_end = 0;
	for (size_t i = 0; i < p->mods.n; i++) {
		const struct mod_map *m = &p->mods.maps[i];

		if (strcmp(m->path, q->exe))
			continue;
		if (!p->exe_start || m->start < p->exe_start)
			p->exe_start = m->start;
		if (m->end > p->exe_end)
			p->exe_end = m->end;
	}
	free(p->vdso);
	p->vdso = NULL;
}

/* The guest program's entry point, from its ELF header and where its
 * first segment was mapped. */
uint64_t qemu_entry_point(const struct qchan *q)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t lo = UINT64_MAX, map = 0;
	int fd = open(q->exe, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) {
		close(fd);
		return 0;
	}
	for (int i = 0; i < eh.e_phnum; i++)
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) ==
			sizeof(ph) &&
		    ph.p_type == PT_LOAD && ph.p_vaddr < lo)
			lo = ph.p_vaddr & ~(uint64_t)0xfff;
	close(fd);
	if (eh.e_type != ET_DYN)
		return eh.e_entry;
	for (size_t i = 0; i < q->proc->mods.n; i++) {
		const struct mod_map *m = &q->proc->mods.maps[i];

		if (!strcmp(m->path, q->exe) && (!map || m->start < map))
			map = m->start - m->offset;
	}
	return map && lo != UINT64_MAX ? map - lo + eh.e_entry : 0;
}

int qemu_args(struct rec_session *s, const struct qchan *q, int regs_ok,
	      struct emu_fn **fns, size_t *n)
{
	if ((regs_ok & 3) == 1 && s->o->args)
		rec_notice(s, "--args: this QEMU's xmm registers cannot be "
			      "read (not QEMU 7.2's CPU state layout): "
			      "functions with float or double values are not "
			      "recorded");
	if (!(regs_ok & 1)) {
		if (s->o->args)
			rec_notice(s, "--args: this QEMU's guest registers "
				      "cannot be read; no arguments are "
				      "recorded");
		return 1;
	}
	if (rec_args_table(&q->proc->mods, q->exe, s->o->args, fns, n))
		return 1;
	if (!*n && !s->o->args)
		return 1; /* no ptscope_write: nothing to send */
	if (!*n)
		rec_notice(s,
			   "--args: %s has no functions with DWARF "
			   "parameters (build it with -g)",
			   q->exe);
	return 0;
}

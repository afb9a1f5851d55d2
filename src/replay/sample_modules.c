/* SPDX-License-Identifier: MIT */
/* A sampled recording's modules and their frame pointers
 * (sample_modules.h). */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/replay/locate.h"
#include "src/replay/sample_modules.h"

static int by_pid_start(const void *a, const void *b)
{
	const struct smod *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

int smod_build(const struct recording *in, struct smod_set *out)
{
	char path[PATH_MAX];

	memset(out, 0, sizeof(*out));
	out->m = calloc(in->nmods ? in->nmods : 1, sizeof(*out->m));
	if (!out->m)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < in->nmods; i++) {
		const struct rec_module *rm = &in->mods[i];
		struct smod *m = &out->m[out->n];

		if (!rm->path || !rm->path[0] || rm->path[0] == '[')
			continue;
		m->pid = rm->pid;
		m->epoch = rm->epoch;
		m->start = rm->start;
		m->end = rm->end;
		m->offset = rm->offset;
		m->path = rm->path;
		m->fp = -1;
		m->fd = -1;
		if (!replay_locate_module(rm, NULL, path, sizeof(path)))
			m->file = strdup(path);
		out->n++;
	}
	qsort(out->m, out->n, sizeof(*out->m), by_pid_start);
	return 0;
}

void smod_free(struct smod_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->m[i].file);
		if (s->m[i].fd >= 0)
			close(s->m[i].fd);
	}
	free(s->m);
	memset(s, 0, sizeof(*s));
}

/* 1 if @m sorts before (pid, epoch, ip). */
static int before(const struct smod *m, uint64_t pid, uint32_t epoch,
		  uint64_t ip)
{
	if (m->pid != pid)
		return m->pid < pid;
	if (m->epoch != epoch)
		return m->epoch < epoch;
	return m->end <= ip;
}

struct smod *smod_find(const struct smod_set *s, uint64_t pid, uint32_t epoch,
		       uint64_t ip)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (before(&s->m[mid], pid, epoch, ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->n && s->m[lo].pid == pid && s->m[lo].epoch == epoch &&
	    s->m[lo].start <= ip && ip < s->m[lo].end)
		return &s->m[lo];
	return NULL;
}

/* The length of the prologue at @p (@n bytes) that opens a frame:
 * [endbr64] push %rbp; mov %rsp,%rbp.  0: none. */
static size_t fp_prologue(const uint8_t *p, size_t n)
{
	static const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const uint8_t frame[] = {0x55, 0x48, 0x89, 0xe5};
	size_t skip = 0;

	if (n >= 8 && !memcmp(p, endbr, 4))
		skip = 4;
	return n >= skip + 4 && !memcmp(p + skip, frame, 4) ? skip + 4 : 0;
}

int smod_framed(struct smod *m, uint64_t start, uint64_t ip)
{
	uint8_t code[8];
	size_t len;
	ssize_t got;

	if (start < m->start || start >= m->end || !m->file)
		return 0;
	if (m->fd < 0)
		m->fd = open(m->file, O_RDONLY | O_CLOEXEC);
	if (m->fd < 0)
		return 0;
	got = pread(m->fd, code, sizeof(code),
		    (off_t)(start - m->start + m->offset));
	len = got > 0 ? fp_prologue(code, (size_t)got) : 0;
	return len && ip >= start + len;
}

/* The bytes at link address @addr in @elf's executable sections. */
static const uint8_t *code_at(Elf *elf, uint64_t addr, size_t *avail)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || addr < sh.sh_addr ||
		    addr >= sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || addr - sh.sh_addr >= d->d_size)
			return NULL;
		*avail = d->d_size - (addr - sh.sh_addr);
		return (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
	}
	return NULL;
}

static double share_of(Elf *elf)
{
	Elf_Scn *scn = NULL, *best = NULL;
	GElf_Shdr sh;
	size_t seen = 0, framed = 0;

	/* .symtab when the file has one, else .dynsym. */
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_SYMTAB ||
		     (sh.sh_type == SHT_DYNSYM && !best)))
			best = scn;
	if (!best || !gelf_getshdr(best, &sh) || !sh.sh_entsize)
		return PS_ERR_NOT_FOUND;
	{
		Elf_Data *d = elf_getdata(best, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		/* Spread the probe over the table, not its first entries. */
		size_t step =
		    n > SMOD_FP_PROBE * 4 ? n / (SMOD_FP_PROBE * 4) : 1;

		for (size_t i = 0; i < n && seen < SMOD_FP_PROBE; i += step) {
			GElf_Sym sym;
			const uint8_t *code;
			size_t avail = 0;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_size < 16 || sym.st_shndx == SHN_UNDEF)
				continue;
			code = code_at(elf, sym.st_value, &avail);
			if (!code)
				continue;
			seen++;
			framed += fp_prologue(code, avail) > 0;
		}
	}
	if (!seen)
		return PS_ERR_NOT_FOUND;
	return (double)framed / (double)seen;
}

double smod_fp_share(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	double r;

	if (fd < 0)
		return PS_ERR_IO;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	r = elf && elf_kind(elf) == ELF_K_ELF ? share_of(elf) : PS_ERR_FORMAT;
	if (elf)
		elf_end(elf);
	close(fd);
	return r;
}

int smod_has_fp(struct smod *m)
{
	if (m->fp < 0) {
		double share = m->file ? smod_fp_share(m->file) : -1;

		/* No symbols to judge by: trust the kernel's chain. */
		m->fp = share < 0 ? 1 : share >= SMOD_FP_SHARE;
	}
	return m->fp;
}

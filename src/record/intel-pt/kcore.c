/* SPDX-License-Identifier: MIT */
/* The kernel's text from /proc/kallsyms and /proc/kcore (kcore.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/kcore.h"

#define TEXT_MAX (256ull << 20) /* a kernel text above this is not one */

static int text_range(const char *path, uint64_t *start, uint64_t *end)
{
	char line[512], type, name[256];
	unsigned long long addr;
	FILE *f = fopen(path, "re");
	int found = 0;

	*start = *end = 0;
	if (!f)
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s", path,
				     strerror(errno));
	while (found != 3 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (!strcmp(name, "_stext")) {
			*start = addr;
			found |= 1;
		} else if (!strcmp(name, "_etext")) {
			*end = addr;
			found |= 2;
		}
	}
	fclose(f);
	if (found != 3)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s lists no _stext and _etext", path);
	if (*end <= *start || *end - *start > TEXT_MAX)
		return ps_err_detail(PS_ERR_PERM,
				     "%s hides kernel addresses "
				     "(kptr_restrict): run as root to record "
				     "kernel code",
				     path);
	return 0;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

int kcore_text(const char *kallsyms, const char *kcore, uint8_t **bytes,
	       size_t *len, uint64_t *vaddr)
{
	uint64_t start, end;
	Elf64_Ehdr eh;
	int fd, r;

	*bytes = NULL;
	*len = 0;
	if (!kallsyms)
		kallsyms = "/proc/kallsyms";
	if (!kcore)
		kcore = "/proc/kcore";
	r = text_range(kallsyms, &start, &end);
	if (r)
		return r;
	fd = open(kcore, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "this kernel has no %s (it needs "
				     "CONFIG_PROC_KCORE)",
				     kcore);
	if (fd < 0)
		return ps_err_detail(
		    errno == EACCES || errno == EPERM ? PS_ERR_PERM : PS_ERR_IO,
		    "cannot read %s (%s): recording kernel "
		    "code needs root",
		    kcore, strerror(errno));
	if (read_at(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr)) {
		close(fd);
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not a 64-bit ELF core file", kcore);
	}
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (read_at(fd, &ph, sizeof(ph),
			    eh.e_phoff + (uint64_t)i * sizeof(ph)))
			break;
		if (ph.p_type != PT_LOAD || start < ph.p_vaddr ||
		    end > ph.p_vaddr + ph.p_filesz)
			continue;
		*bytes = malloc(end - start);
		if (!*bytes) {
			close(fd);
			return PS_ERR_NOMEM;
		}
		if (read_at(fd, *bytes, end - start,
			    ph.p_offset + (start - ph.p_vaddr))) {
			r = ps_err_detail(PS_ERR_IO,
					  "cannot read the kernel text from "
					  "%s: %s",
					  kcore, strerror(errno));
			free(*bytes);
			*bytes = NULL;
			close(fd);
			return r;
		}
		close(fd);
		*len = (size_t)(end - start);
		*vaddr = start;
		return 0;
	}
	close(fd);
	return ps_err_detail(PS_ERR_NOT_FOUND,
			     "no segment of %s holds the kernel text "
			     "0x%llx-0x%llx",
			     kcore, (unsigned long long)start,
			     (unsigned long long)end);
}

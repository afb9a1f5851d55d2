/* SPDX-License-Identifier: MIT */
/* What exec of a file runs (see qemu_shebang.h), after fs/binfmt_script.c
 * and fs/binfmt_elf.c. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/record/qemu/qemu_shebang.h"

/* The kernel reads this much of a file to decide (BINPRM_BUF_SIZE). */
#define QX_BUF 256

void qx_prog_free(struct qx_prog *p)
{
	for (size_t i = 0; i < p->npre; i++)
		free(p->pre[i]);
	p->npre = 0;
}

static const char *machine_name(unsigned m)
{
	switch (m) {
	case EM_386:
		return "x86 (i386)";
	case EM_AARCH64:
		return "ARM64";
	case EM_ARM:
		return "ARM";
	case EM_RISCV:
		return "RISC-V";
	case EM_PPC64:
		return "PowerPC64";
	case EM_S390:
		return "s390";
	case EM_MIPS:
		return "MIPS";
	default:
		return NULL;
	}
}

/* Replace pre[0] with @n strings of @with (copied). */
static int pre_replace_first(struct qx_prog *p, char *const with[], size_t n)
{
	char *nw[QX_MAX_PRE];
	size_t k = 0;

	if (n + (p->npre ? p->npre - 1 : 0) > QX_MAX_PRE)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!(nw[k++] = strdup(with[i]))) {
			while (k--)
				free(nw[k]);
			return -1;
		}
	for (size_t i = 1; i < p->npre; i++)
		nw[k++] = p->pre[i];
	if (p->npre)
		free(p->pre[0]);
	memcpy(p->pre, nw, k * sizeof(nw[0]));
	p->npre = k;
	return 0;
}

/* A #! line in @buf (@n bytes): interpreter and optional argument, in
 * place.  Returns 1 if found, 0 if not a script, -1 if empty (ENOEXEC). */
static int shebang(char *buf, size_t n, char **interp, char **arg)
{
	char *e, *p;

	if (n < 2 || buf[0] != '#' || buf[1] != '!')
		return 0;
	buf[n < QX_BUF ? n : QX_BUF - 1] = 0;
	e = strchr(buf, '\n');
	if (e)
		*e = 0;
	e = buf + strlen(buf);
	while (e > buf + 2 && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = 0;
	p = buf + 2;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return -1;
	*interp = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	*arg = NULL;
	if (*p) {
		*p++ = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p)
			*arg = p;
	}
	return 1;
}

int qx_resolve(const char *path, const char *argv0, struct qx_prog *out)
{
	char buf[QX_BUF + 1], file[PATH_MAX];

	memset(out, 0, sizeof(*out));
	if (argv0 && !(out->pre[out->npre++] = strdup(argv0)))
		return -1;
	snprintf(file, sizeof(file), "%s", path);
	for (int depth = 0;; depth++) {
		struct stat st;
		char *interp, *arg, *with[3];
		ssize_t n;
		int fd, r;

		snprintf(out->path, sizeof(out->path), "%s", file);
		if (depth > QX_DEPTH) {
			out->kind = QX_ERROR;
			out->err = ELOOP;
			return 0;
		}
		errno = 0;
		if (stat(file, &st) || !S_ISREG(st.st_mode) ||
		    access(file, X_OK)) {
			out->kind = QX_ERROR;
			out->err = errno ? errno : EACCES;
			if (!stat(file, &st) && !S_ISREG(st.st_mode))
				out->err = EACCES;
			return 0;
		}
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			out->kind = QX_ERROR;
			out->err = errno;
			return 0;
		}
		n = pread(fd, buf, QX_BUF, 0);
		close(fd);
		if (n < 0)
			n = 0;
		buf[n] = 0;
		if (n >= (ssize_t)sizeof(Elf64_Ehdr) - 40 &&
		    !memcmp(buf, ELFMAG, SELFMAG)) {
			const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
			const char *mn = machine_name(eh->e_machine);

			if (eh->e_ident[EI_CLASS] == ELFCLASS64 &&
			    eh->e_machine == EM_X86_64) {
				out->kind = QX_X86_64;
				return 0;
			}
			out->kind = QX_FOREIGN;
			if (eh->e_machine == EM_X86_64)
				snprintf(out->why, sizeof(out->why),
					 "an x32 program");
			else if (mn)
				snprintf(out->why, sizeof(out->why),
					 "a %d-bit %s program",
					 eh->e_ident[EI_CLASS] == ELFCLASS64
					     ? 64
					     : 32,
					 mn);
			else
				snprintf(out->why, sizeof(out->why),
					 "an ELF program for machine %u",
					 (unsigned)eh->e_machine);
			return 0;
		}
		r = shebang(buf, (size_t)n, &interp, &arg);
		if (r <= 0) {
			out->kind = r ? QX_ERROR : QX_NOT_ELF;
			out->err = ENOEXEC;
			snprintf(out->why, sizeof(out->why),
				 "neither an ELF program nor a #! script");
			return 0;
		}
		out->scripts++;
		with[0] = interp;
		with[1] = arg ? arg : file;
		with[2] = file;
		if (pre_replace_first(out, with, arg ? 3 : 2))
			return -1;
		snprintf(file, sizeof(file), "%s", interp);
	}
}

/* SPDX-License-Identifier: MIT */
/* What exec of a file runs, as the kernel decides it (prefix qx_): a
 * `#!` script's interpreter (one optional argument, nested interpreters
 * up to the kernel's depth), then an ELF program, which qemu-x86_64 can
 * run when it is x86-64.  Shared by ptscope (the command it starts) and
 * its QEMU plugin (every exec of the guest); no printing, no exit. */
#ifndef PTSCOPE_RECORD_QEMU_SHEBANG_H
#define PTSCOPE_RECORD_QEMU_SHEBANG_H

#include <limits.h>
#include <stddef.h>

/* The kernel follows at most this many interpreters (ELOOP beyond). */
#define QX_DEPTH 5
#define QX_MAX_PRE (3 * QX_DEPTH + 1)

enum qx_kind {
	QX_X86_64 = 0,	/* an x86-64 ELF program: QEMU runs it */
	QX_FOREIGN = 1, /* ELF of another kind (32-bit, x32, non-x86) */
	QX_NOT_ELF = 2, /* neither ELF nor #!: the kernel says ENOEXEC */
	QX_ERROR = 3	/* cannot run at all (err): the kernel says so */
};

struct qx_prog {
	enum qx_kind kind;
	int err;	     /* QX_ERROR: errno */
	char path[PATH_MAX]; /* the ELF file (the last interpreter) */
	/* What replaces argv[0]: [interp, arg?, file, ...], or argv[0]
	 * itself when no #! was followed (owned). */
	char *pre[QX_MAX_PRE];
	size_t npre;
	int scripts;   /* #! lines followed */
	char why[200]; /* QX_FOREIGN: "a 32-bit x86 program" */
};

/* Resolve exec of @path whose argv[0] is @argv0 (may be NULL) into @out
 * (qx_prog_free it).  Returns 0, or -1 when out of memory. */
int qx_resolve(const char *path, const char *argv0, struct qx_prog *out);
void qx_prog_free(struct qx_prog *p);

#endif /* PTSCOPE_RECORD_QEMU_SHEBANG_H */

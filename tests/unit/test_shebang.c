/* SPDX-License-Identifier: MIT */
/* qx_resolve (src/record/qemu/qemu_shebang.c): what exec of a file runs,
 * by the kernel's rules, for the qemu backend and its plugin. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/record/qemu/qemu_shebang.h"
#include "tests/harness.h"

static char dir[64];

static const char *file(const char *name, const char *text, size_t len)
{
	static char path[8][128];
	static int k;
	char *p = path[k++ % 8];
	FILE *f;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/ptscope-shebang-XXXXXX");
		if (!mkdtemp(dir))
			return NULL;
	}
	snprintf(p, 128, "%s/%s", dir, name);
	f = fopen(p, "wb");
	if (!f)
		return NULL;
	fwrite(text, 1, len, f);
	fclose(f);
	chmod(p, 0755);
	return p;
}

static const char *script(const char *name, const char *text)
{
	return file(name, text, strlen(text));
}

TEST(an_elf_program_keeps_its_argv0)
{
	struct qx_prog p;

	CHECK_EQ(qx_resolve("/bin/true", "true", &p), 0);
	CHECK_EQ(p.kind, QX_X86_64);
	CHECK_STR(p.path, "/bin/true");
	CHECK_EQ(p.npre, 1);
	CHECK_STR(p.pre[0], "true");
	CHECK_EQ(p.scripts, 0);
	qx_prog_free(&p);
}

TEST(a_script_runs_its_interpreter_with_one_argument)
{
	const char *s = script("a.sh", "#!  /bin/sh  -e  -x  \necho hi\n");
	struct qx_prog p;

	CHECK(s != NULL);
	CHECK_EQ(qx_resolve(s, "./a.sh", &p), 0);
	CHECK_EQ(p.kind, QX_X86_64);
	CHECK_STR(p.path, "/bin/sh");
	CHECK_EQ(p.npre, 3);
	CHECK_STR(p.pre[0], "/bin/sh");
	/* The rest of the line is one argument, as the kernel passes it. */
	CHECK_STR(p.pre[1], "-e  -x");
	CHECK_STR(p.pre[2], s);
	qx_prog_free(&p);
}

TEST(nested_interpreters_stack_up)
{
	const char *inner = script("inner.sh", "#!/bin/sh\n");
	char text[256];
	const char *outer;
	struct qx_prog p;

	snprintf(text, sizeof(text), "#!%s arg1\n", inner);
	outer = script("outer.sh", text);
	CHECK_EQ(qx_resolve(outer, "outer.sh", &p), 0);
	CHECK_EQ(p.kind, QX_X86_64);
	CHECK_EQ(p.scripts, 2);
	CHECK_EQ(p.npre, 4);
	CHECK_STR(p.pre[0], "/bin/sh");
	CHECK_STR(p.pre[1], inner);
	CHECK_STR(p.pre[2], "arg1");
	CHECK_STR(p.pre[3], outer);
	qx_prog_free(&p);
}

TEST(a_script_that_names_itself_is_eloop)
{
	char text[256];
	const char *s = script("loop.sh", "");
	struct qx_prog p;

	snprintf(text, sizeof(text), "#!%s\n", s);
	script("loop.sh", text);
	CHECK_EQ(qx_resolve(s, "loop.sh", &p), 0);
	CHECK_EQ(p.kind, QX_ERROR);
	CHECK_EQ(p.err, ELOOP);
	qx_prog_free(&p);
}

TEST(foreign_and_unknown_files)
{
	static const char i386[] = "\x7f"
				   "ELF\x01\x01\x01\0\0\0\0\0\0\0\0\0"
				   "\x02\0\x03\0\x01\0\0\0";
	const char *f32 = file("i386", i386, sizeof(i386) + 40);
	const char *txt = script("text", "echo hi\n");
	const char *empty = script("empty.sh", "#!   \n");
	struct qx_prog p;

	CHECK_EQ(qx_resolve(f32, "i386", &p), 0);
	CHECK_EQ(p.kind, QX_FOREIGN);
	CHECK(strstr(p.why, "32-bit") != NULL);
	qx_prog_free(&p);
	CHECK_EQ(qx_resolve(txt, "text", &p), 0);
	CHECK_EQ(p.kind, QX_NOT_ELF);
	qx_prog_free(&p);
	CHECK_EQ(qx_resolve(empty, "empty.sh", &p), 0);
	CHECK_EQ(p.kind, QX_ERROR);
	CHECK_EQ(p.err, ENOEXEC);
	qx_prog_free(&p);
	CHECK_EQ(qx_resolve("/nonexistent/x", "x", &p), 0);
	CHECK_EQ(p.kind, QX_ERROR);
	CHECK_EQ(p.err, ENOENT);
	qx_prog_free(&p);
	chmod(txt, 0644);
	CHECK_EQ(qx_resolve(txt, "text", &p), 0);
	CHECK_EQ(p.kind, QX_ERROR);
	CHECK_EQ(p.err, EACCES);
	qx_prog_free(&p);
}

TEST(cleanup)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK_EQ(system(cmd), 0);
	}
}

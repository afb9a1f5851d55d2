/* SPDX-License-Identifier: MIT */
/* Tests for the symbolizer (decoder/symbols.c, lines.c, symspace.c) on
 * the samples and on the binaries of the real-pt recordings. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "decoder/debugfile.h"
#include "decoder/decoder.h"
#include "decoder/symbols.h"
#include "decoder/symnames.h"
#include "ptscope/error.h"
#include "tests/harness.h"
#include "tests/support.h"

TEST(rejects_bad_files)
{
	struct sym_module *m;

	POISON(m);
	CHECK_EQ(sym_module_load("/nonexistent/x", NULL, 0, &m), PS_ERR_IO);
	CHECK(m == NULL);
	CHECK(strstr(ps_err_message(PS_ERR_IO), "/nonexistent/x") != NULL);
	CHECK_EQ(sym_module_load(ts_realpt("README.md"), NULL, 0, &m),
		 PS_ERR_FORMAT);
	CHECK_EQ(sym_module_load(NULL, NULL, 0, &m), PS_ERR_INVAL);
	sym_module_free(NULL);
	sym_space_free(NULL);
}

TEST(cxx_names_are_demangled_with_sizes_and_lines)
{
	struct sym_module *m;
	const struct sym_func *f;

	if (access(ts_sample("exceptions"), R_OK))
		SKIP("build/samples/exceptions not built");
	CHECK_EQ(sym_module_load(ts_sample("exceptions"), NULL, 1, &m), 0);
	CHECK(sym_module_count(m) > 20);
	f = sym_module_find(m, "shop::validate(shop::Order const&)");
	CHECK(f != NULL);
	CHECK(f->end > f->start);
	CHECK(f->info.file && strstr(f->info.file, "exceptions.cc"));
	CHECK(f->info.line > 0);
	CHECK_STR(f->info.module, "exceptions");
	f = sym_module_find(m, "main");
	CHECK(f != NULL && f->info.line > 0);
	/* a template instance */
	CHECK(sym_module_find(m, "shop::Order shop::total<shop::Order>"
				 "(shop::Order const*, int)") != NULL);
	sym_module_free(m);
}

TEST(plt_stubs_are_named)
{
	struct sym_module *m;
	const struct sym_func *f;

	if (access(ts_sample("exceptions"), R_OK))
		SKIP("build/samples/exceptions not built");
	CHECK_EQ(sym_module_load(ts_sample("exceptions"), NULL, 0, &m), 0);
	f = sym_module_find(m, "printf@plt");
	CHECK(f != NULL);
	CHECK_EQ(f->end - f->start, 16);
	CHECK(sym_module_find(m, "__cxa_begin_catch@plt") != NULL);
	/* .plt.got holds __cxa_finalize */
	CHECK(sym_module_find(m, "__cxa_finalize@plt") != NULL);
	/* mangled PLT targets are demangled too */
	CHECK(sym_module_find(m, "__cxa_allocate_exception@plt") != NULL);
	sym_module_free(m);
	CHECK_EQ(
	    sym_module_load(ts_realpt("lldb-multi-file/a.out"), NULL, 0, &m),
	    0);
	f = sym_module_find(m, "foo()@plt");
	CHECK(f != NULL);
	CHECK_EQ(f->start, 0x400540);
	sym_module_free(m);
}

TEST(pie_lookup_with_bias_and_stand_ins)
{
	const uint64_t bias = 0x555555554000;
	struct sym_module *m, *ref;
	struct sym_space *sp;
	const struct sym_func *f, *g, *main_ref;

	if (access(ts_sample("exceptions"), R_OK))
		SKIP("build/samples/exceptions not built");
	CHECK_EQ(sym_module_load(ts_sample("exceptions"), NULL, 1, &ref), 0);
	main_ref = sym_module_find(ref, "main");
	CHECK(main_ref != NULL);
	uint64_t main_link = main_ref->start, main_end = main_ref->end;
	CHECK_EQ(sym_module_load(ts_sample("exceptions"), NULL, 1, &m), 0);
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, m, bias, 0, 0), 0);
	f = sym_lookup(sp, bias + main_link + 3);
	CHECK(f != NULL);
	CHECK_STR(f->name, "main");
	CHECK_EQ(f->start, bias + main_link);
	CHECK_EQ(f->end, bias + main_end);
	CHECK_EQ(f->info.address, bias + main_link);
	CHECK(f->info.file && strstr(f->info.file, "exceptions.cc"));
	/* the same stable pointer, through the cache and around it */
	CHECK(sym_lookup(sp, bias + main_link + 3) == f);
	CHECK(sym_lookup(sp, bias + main_link) == f);
	/* the first byte after main is not main */
	g = sym_lookup(sp, bias + main_end);
	CHECK(g != f);
	/* padding between .plt.got and _start has no function */
	f = sym_lookup(sp, bias + 0x113c);
	CHECK_STR(f->name, "exceptions+0x113c");
	CHECK_EQ(f->start, f->end);
	CHECK(sym_lookup(sp, bias + 0x113c) == f);
	f = sym_lookup(sp, 0x1234);
	CHECK_STR(f->name, "0x1234");
	CHECK_EQ(sym_space_add_region(sp, "[vdso]", 0x7fff0000, 0x2000), 0);
	CHECK_STR(sym_lookup(sp, 0x7fff0100)->name, "[vdso]+0x100");
	sym_space_free(sp);
	sym_module_free(m);
	sym_module_free(ref);
}

TEST(real_pt_binaries)
{
	struct sym_module *foo, *bar, *aout;
	struct sym_space *sp;
	const struct sym_func *f;

	CHECK_EQ(sym_module_load(ts_realpt("lldb-multi-file/libfoo.so"), NULL,
				 1, &foo),
		 0);
	CHECK_EQ(sym_module_load(ts_realpt("lldb-multi-file/libbar.so"), NULL,
				 1, &bar),
		 0);
	CHECK_EQ(sym_module_load(ts_realpt("lldb-single-thread/a.out"), NULL, 1,
				 &aout),
		 0);
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, foo, 0x7ffff7bd9000, 0, 0), 0);
	CHECK_EQ(sym_space_add(sp, bar, 0x7ffff79d7000, 0, 0), 0);
	CHECK_EQ(sym_space_add(sp, aout, 0, 0, 0), 0);
	f = sym_lookup(sp, 0x7ffff7bd9000 + 0x6e0);
	CHECK_STR(f->name, "foo()");
	CHECK_STR(f->info.module, "libfoo.so");
	f = sym_lookup(sp, 0x7ffff79d7000 + 0x690 + 0x1a);
	CHECK_STR(f->name, "bar()");
	CHECK_EQ(sym_lookup(sp, 0x7ffff79d7000 + 0x690 + 0x1b)->start,
		 0x7ffff79d7000 + 0x690 + 0x1b); /* past bar's size */
	f = sym_lookup(sp, 0x400511);
	CHECK_STR(f->name, "main");
	CHECK_EQ(f->start, 0x40050d);
	CHECK_EQ(f->end, 0x40050d + 0x27);
	/* an unsized symbol reaches the next one: _start → deregister_tm */
	f = sym_lookup(sp, 0x400430);
	CHECK_STR(f->name, "_start");
	CHECK_EQ(f->end, 0x400450);
	sym_space_free(sp);
	sym_module_free(foo);
	sym_module_free(bar);
	sym_module_free(aout);
}

TEST(stripped_binary_keeps_dynamic_symbols)
{
	char out[4200], cmd[8600];
	struct sym_module *m;

	snprintf(out, sizeof(out), "/tmp/ptscope-test-stripped-%d",
		 (int)getpid());
	snprintf(cmd, sizeof(cmd), "strip -o %s %s 2>/dev/null", out,
		 ts_realpt("lldb-multi-file/libfoo.so"));
	if (system(cmd) != 0)
		SKIP("strip is not available");
	CHECK_EQ(sym_module_load(out, "libfoo.so", 0, &m), 0);
	unlink(out);
	CHECK(sym_module_find(m, "foo()") != NULL);
	CHECK(sym_module_find(m, "frame_dummy") == NULL); /* local, gone */
	sym_module_free(m);
}

TEST(demangles_cxx_and_rust)
{
	char buf[256];

	CHECK_STR(sym_demangle("_Z3foov", buf, sizeof(buf)), "foo()");
	CHECK_STR(sym_demangle("main", buf, sizeof(buf)), "main");
	CHECK_STR(sym_demangle("_ZN4core3fmt5write17h0123456789abcdefE", buf,
			       sizeof(buf)),
		  "core::fmt::write");
	CHECK_STR(sym_demangle("_RNvCs1234_7mycrate3foo", buf, sizeof(buf)),
		  "mycrate::foo");
	/* not valid mangling: unchanged */
	CHECK_STR(sym_demangle("_Zzzz", buf, sizeof(buf)), "_Zzzz");
}

/* ---- separate debug files (build id, .gnu_debuglink) ---- */

static char tmp_dir[256];

/* Run a shell command built from @fmt; returns its exit status. */
static int shell(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static const char *fresh_tmp(const char *what)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/ptscope-test-%s-%d", what,
		 (int)getpid());
	shell("rm -rf %s && mkdir -p %s", tmp_dir, tmp_dir);
	return tmp_dir;
}

/* The GNU build id of @path as hex ("" when none or unreadable). */
static void build_id_hex(const char *path, char *hex, size_t size)
{
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t n = 0;
	int fd = open(path, O_RDONLY);
	Elf *elf;

	hex[0] = '\0';
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf)
		n = sym_debug_build_id(elf, id);
	for (size_t i = 0; i < n && 2 * i + 3 <= size; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (elf)
		elf_end(elf);
	close(fd);
}

/* Where libc6-dbg keeps the debug file of @path; 0 if it is there. */
static int system_debug_file(const char *path, char *out, size_t size)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1];

	build_id_hex(path, hex, sizeof(hex));
	if (strlen(hex) < 4)
		return -1;
	snprintf(out, size, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
		 hex + 2);
	return access(out, R_OK);
}

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define LDSO "/lib64/ld-linux-x86-64.so.2"

TEST(libc_and_ldso_local_functions_come_from_debug_files)
{
	const uint64_t bias = 0x7f0000000000;
	char dbg[512];
	struct sym_module *libc, *ld;
	struct sym_space *sp;
	const struct sym_func *f;
	uint64_t start;

	if (access(LIBC, R_OK) || access(LDSO, R_OK))
		SKIP("no Debian x86-64 libc.so.6 / ld-linux-x86-64.so.2");
	if (system_debug_file(LIBC, dbg, sizeof(dbg)))
		SKIP("libc6-dbg is not installed (run make deps)");
	CHECK_EQ(dec_set_debug_dirs(NULL, 1), 0);
	CHECK_EQ(sym_module_load(LIBC, NULL, 1, &libc), 0);
	CHECK_STR(sym_module_debug_file(libc), dbg);
	/* local: only in the debug file's .symtab */
	f = sym_module_find(libc, "__libc_start_call_main");
	CHECK(f != NULL);
	CHECK(f->end > f->start);
	CHECK(f->info.file && strstr(f->info.file, "libc_start_call_main"));
	CHECK(f->info.line > 0);
	start = f->start;
	/* .symtab's "__libc_start_main@@GLIBC_2.34" without the version */
	CHECK(sym_module_find(libc, "__libc_start_main") != NULL);
	CHECK(sym_module_find(libc, "__libc_start_main@@GLIBC_2.34") == NULL);
	/* an IRELATIVE PLT slot is named after its ifunc */
	CHECK(sym_module_find(libc, "strchrnul@plt") != NULL);
	/* the name a programmer calls, the others kept as aliases */
	f = sym_module_find(libc, "_IO_puts");
	CHECK(f != NULL);
	CHECK_STR(f->name, "puts");
	CHECK(f->aliases && strstr(f->aliases, "_IO_puts"));
	f = sym_module_find(libc, "__libc_write");
	CHECK(f != NULL);
	CHECK_STR(f->name, "write");
	CHECK(sym_module_find(libc, "__libc_wr") == NULL);
	/* an IFUNC symbol marks its resolver */
	f = sym_module_find(libc, "strchr [ifunc resolver]");
	CHECK(f != NULL);
	CHECK(f->aliases && strstr(f->aliases, "strchr_ifunc"));
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, libc, bias, 0, 0), 0);
	f = sym_lookup(sp, bias + start + 4);
	CHECK_STR(f->name, "__libc_start_call_main");
	CHECK_EQ(f->start, bias + start);
	/* of several aliases, the public one, not "__GI_strtol" (which
	 * stays known as an alias) */
	f = sym_module_find(libc, "__GI_strtol");
	CHECK(f != NULL);
	CHECK_STR(f->name, "strtol");
	sym_space_free(sp);
	sym_module_free(libc);

	if (system_debug_file(LDSO, dbg, sizeof(dbg)))
		SKIP("libc6-dbg has no debug file for ld.so");
	/* symbols only: the debug file is still used for .symtab */
	CHECK_EQ(sym_module_load(LDSO, NULL, 0, &ld), 0);
	CHECK_STR(sym_module_debug_file(ld), dbg);
	CHECK(sym_module_find(ld, "_dl_start") != NULL);
	CHECK(sym_module_find(ld, "_dl_fixup") != NULL);
	CHECK(sym_module_count(ld) > 200);
	sym_module_free(ld);
}

/* build/samples/demo stripped into @dir/demo; 0 on success. */
static int stripped_demo(const char *dir, const char *extra)
{
	return shell("strip %s -o %s/demo %s 2>/dev/null", extra, dir,
		     ts_sample("demo"));
}

TEST(module_without_debug_file_keeps_dynsym_and_stand_ins)
{
	char mod[300], hex[2 * SYM_BUILD_ID_MAX + 1];
	struct sym_module *ref, *m;
	struct sym_space *sp;
	const struct sym_func *f;
	uint64_t main_link;
	const char *dir;

	if (access(ts_sample("demo"), R_OK))
		SKIP("build/samples/demo not built");
	CHECK_EQ(sym_module_load(ts_sample("demo"), NULL, 0, &ref), 0);
	CHECK(sym_module_debug_file(ref) == NULL); /* has .symtab */
	f = sym_module_find(ref, "main");
	CHECK(f != NULL);
	main_link = f ? f->start : 0;
	sym_module_free(ref);
	dir = fresh_tmp("nodebug");
	if (stripped_demo(dir, ""))
		SKIP("strip is not available");
	snprintf(mod, sizeof(mod), "%s/demo", dir);
	/* only the empty temp dir: nothing to find */
	CHECK_EQ(dec_set_debug_dirs(dir, 0), 0);
	CHECK_EQ(sym_module_load(mod, NULL, 1, &m), 0);
	CHECK(sym_module_debug_file(m) == NULL);
	CHECK(sym_module_find(m, "main") == NULL);
	CHECK(sym_module_find(m, "atoi@plt") != NULL);
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, m, 0x555555554000, 0, 0), 0);
	{
		char want[64];

		snprintf(want, sizeof(want), "demo+0x%" PRIx64, main_link);
		CHECK_STR(sym_lookup(sp, 0x555555554000 + main_link)->name,
			  want);
	}
	sym_space_free(sp);
	sym_module_free(m);

	/* the same module with its debug file under .build-id: named */
	build_id_hex(mod, hex, sizeof(hex));
	CHECK(strlen(hex) >= 4);
	CHECK_EQ(shell("mkdir -p %s/.build-id/%.2s && objcopy "
		       "--only-keep-debug %s %s/.build-id/%.2s/%s.debug",
		       dir, hex, ts_sample("demo"), dir, hex, hex + 2),
		 0);
	CHECK_EQ(sym_module_load(mod, NULL, 1, &m), 0);
	CHECK(sym_module_debug_file(m) != NULL);
	f = sym_module_find(m, "main");
	CHECK(f != NULL && f->start == main_link);
	CHECK(f && f->info.file && strstr(f->info.file, "demo.c"));
	CHECK(sym_module_find(m, "slow_scan") != NULL); /* static */
	CHECK(sym_module_find(m, "atoi@plt") != NULL);	/* still */
	sym_module_free(m);
	dec_set_debug_dirs(NULL, 1);
	shell("rm -rf %s", dir);
}

/* Flip the last byte of the build id inside the file @path. */
static int corrupt_build_id(const char *path)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1];
	uint8_t id[SYM_BUILD_ID_MAX], *buf;
	size_t n, len, at;
	FILE *f;
	int ok = -1;

	build_id_hex(path, hex, sizeof(hex));
	n = strlen(hex) / 2;
	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	f = fopen(path, "r+b");
	if (!f || !n)
		goto out;
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	buf = malloc(len);
	rewind(f);
	if (buf && fread(buf, 1, len, f) == len) {
		for (at = 0; at + n <= len; at++) {
			if (memcmp(buf + at, id, n))
				continue;
			fseek(f, (long)(at + n - 1), SEEK_SET);
			fputc(id[n - 1] ^ 0x5a, f);
			ok = 0;
			break;
		}
	}
	free(buf);
out:
	if (f)
		fclose(f);
	return ok;
}

TEST(debug_file_with_another_build_id_is_refused)
{
	char dbg[512], hex[2 * SYM_BUILD_ID_MAX + 1], copy[700];
	struct sym_module *m;
	struct sym_space *sp;
	const char *dir;
	char want[64];

	if (access(LIBC, R_OK))
		SKIP("no Debian x86-64 libc.so.6");
	if (system_debug_file(LIBC, dbg, sizeof(dbg)))
		SKIP("libc6-dbg is not installed (run make deps)");
	dir = fresh_tmp("badid");
	build_id_hex(LIBC, hex, sizeof(hex));
	snprintf(copy, sizeof(copy), "%s/.build-id/%.2s/%s.debug", dir, hex,
		 hex + 2);
	CHECK_EQ(shell("mkdir -p %s/.build-id/%.2s && cp %s %s", dir, hex, dbg,
		       copy),
		 0);
	CHECK_EQ(corrupt_build_id(copy), 0);
	build_id_hex(copy, want, sizeof(want));
	CHECK(strcmp(want, hex) != 0);
	CHECK_EQ(dec_set_debug_dirs(dir, 0), 0);
	CHECK_EQ(sym_module_load(LIBC, NULL, 1, &m), 0);
	CHECK(sym_module_debug_file(m) == NULL);
	CHECK(sym_module_find(m, "__libc_start_call_main") == NULL);
	CHECK(sym_module_find(m, "malloc") != NULL); /* .dynsym */
	/* an address of a local function stays module+0xoffset */
	CHECK_EQ(sym_space_new(&sp), 0);
	CHECK_EQ(sym_space_add(sp, m, 0x7f0000000000, 0, 0), 0);
	{
		struct sym_module *good;
		const struct sym_func *f;

		dec_set_debug_dirs(NULL, 1);
		CHECK_EQ(sym_module_load(LIBC, NULL, 0, &good), 0);
		f = sym_module_find(good, "__libc_start_call_main");
		CHECK(f != NULL);
		if (f) {
			snprintf(want, sizeof(want), "libc.so.6+0x%" PRIx64,
				 f->start - sym_module_link_base(good));
			CHECK_STR(
			    sym_lookup(sp, 0x7f0000000000 + f->start)->name,
			    want);
		}
		sym_module_free(good);
	}
	sym_space_free(sp);
	sym_module_free(m);
	dec_set_debug_dirs(NULL, 1);
	shell("rm -rf %s", dir);
}

TEST(debuglink_crc_decides_without_build_id)
{
	char mod[300], src[4096];
	struct sym_module *m;
	const char *dir;

	if (access(ts_sample("demo"), R_OK))
		SKIP("build/samples/demo not built");
	if (!realpath(ts_sample("demo"), src))
		SKIP("build/samples/demo not built");
	dir = fresh_tmp("debuglink");
	/* no build id on either side: only the CRC ties them */
	if (shell("cd %s && objcopy --only-keep-debug "
		  "--remove-section=.note.gnu.build-id %s demo.dbg && "
		  "strip --remove-section=.note.gnu.build-id -o demo %s && "
		  "objcopy --add-gnu-debuglink=demo.dbg demo 2>/dev/null",
		  dir, src, src))
		SKIP("objcopy/strip are not available");
	snprintf(mod, sizeof(mod), "%s/demo", dir);
	CHECK_EQ(dec_set_debug_dirs(NULL, 0), 0);
	CHECK_EQ(sym_module_load(mod, NULL, 1, &m), 0);
	CHECK(sym_module_debug_file(m) &&
	      strstr(sym_module_debug_file(m), "demo.dbg"));
	CHECK(sym_module_find(m, "handle_request") != NULL);
	sym_module_free(m);
	/* the same name in .debug/, but changed: the CRC refuses it */
	CHECK_EQ(shell("cd %s && mkdir .debug && mv demo.dbg .debug/ && "
		       "printf x >> .debug/demo.dbg",
		       dir),
		 0);
	CHECK_EQ(sym_module_load(mod, NULL, 1, &m), 0);
	CHECK(sym_module_debug_file(m) == NULL);
	CHECK(sym_module_find(m, "handle_request") == NULL);
	sym_module_free(m);
	/* restored in .debug/: found there */
	CHECK_EQ(shell("cd %s && truncate -s -1 .debug/demo.dbg", dir), 0);
	CHECK_EQ(sym_module_load(mod, NULL, 1, &m), 0);
	CHECK(sym_module_debug_file(m) &&
	      strstr(sym_module_debug_file(m), ".debug/demo.dbg"));
	CHECK(sym_module_find(m, "handle_request") != NULL);
	sym_module_free(m);
	dec_set_debug_dirs(NULL, 1);
	shell("rm -rf %s", dir);
}

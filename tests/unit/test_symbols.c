/* Tests for the symbolizer (decoder/symbols.c) on the samples and on the
 * binaries of the real-pt recordings. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "decoder/symbols.h"
#include "ptscope/error.h"
#include "tests/harness.h"

static char path_buf[4096];

static const char *sample(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/samples/%s", harness_build(),
		 name);
	return path_buf;
}

static const char *realpt(const char *rel)
{
	snprintf(path_buf, sizeof(path_buf), "%s/real-pt/%s",
		 harness_testdata(), rel);
	return path_buf;
}

TEST(rejects_bad_files)
{
	struct sym_module *m;

	POISON(m);
	CHECK_EQ(sym_module_load("/nonexistent/x", NULL, 0, &m), PS_ERR_IO);
	CHECK(m == NULL);
	CHECK(strstr(ps_err_message(PS_ERR_IO), "/nonexistent/x") != NULL);
	CHECK_EQ(sym_module_load(realpt("README.md"), NULL, 0, &m),
		 PS_ERR_FORMAT);
	CHECK_EQ(sym_module_load(NULL, NULL, 0, &m), PS_ERR_INVAL);
	sym_module_free(NULL);
	sym_space_free(NULL);
}

TEST(cxx_names_are_demangled_with_sizes_and_lines)
{
	struct sym_module *m;
	const struct sym_func *f;

	if (access(sample("exceptions"), R_OK))
		SKIP("build/samples/exceptions not built");
	CHECK_EQ(sym_module_load(sample("exceptions"), NULL, 1, &m), 0);
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

	if (access(sample("exceptions"), R_OK))
		SKIP("build/samples/exceptions not built");
	CHECK_EQ(sym_module_load(sample("exceptions"), NULL, 0, &m), 0);
	f = sym_module_find(m, "printf@plt");
	CHECK(f != NULL);
	CHECK_EQ(f->end - f->start, 16);
	CHECK(sym_module_find(m, "__cxa_begin_catch@plt") != NULL);
	/* .plt.got holds __cxa_finalize */
	CHECK(sym_module_find(m, "__cxa_finalize@plt") != NULL);
	/* mangled PLT targets are demangled too */
	CHECK(sym_module_find(m, "__cxa_allocate_exception@plt") != NULL);
	sym_module_free(m);
	CHECK_EQ(sym_module_load(realpt("lldb-multi-file/a.out"), NULL, 0, &m),
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

	if (access(sample("exceptions"), R_OK))
		SKIP("build/samples/exceptions not built");
	CHECK_EQ(sym_module_load(sample("exceptions"), NULL, 1, &ref), 0);
	main_ref = sym_module_find(ref, "main");
	CHECK(main_ref != NULL);
	uint64_t main_link = main_ref->start, main_end = main_ref->end;
	CHECK_EQ(sym_module_load(sample("exceptions"), NULL, 1, &m), 0);
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

	CHECK_EQ(
	    sym_module_load(realpt("lldb-multi-file/libfoo.so"), NULL, 1, &foo),
	    0);
	CHECK_EQ(
	    sym_module_load(realpt("lldb-multi-file/libbar.so"), NULL, 1, &bar),
	    0);
	CHECK_EQ(
	    sym_module_load(realpt("lldb-single-thread/a.out"), NULL, 1, &aout),
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
		 realpt("lldb-multi-file/libfoo.so"));
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

/* SPDX-License-Identifier: MIT */
/* Tests for trigger specs (src/record/resolve.c): parsing, and resolution
 * in this process, in build/samples/demo (checked by a hardware breakpoint
 * counting the calls at the resolved address) and in the C++ sample. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/triggers/bp.h"
#include "src/record/core/modules.h"
#include "src/record/triggers/resolve.h"
#include "tests/harness.h"

__attribute__((noinline)) int rsv_test_local_fn(int x)
{
	__asm__ volatile("" : : "r"(x) : "memory");
	return x + 1;
}

TEST(parses_every_form)
{
	struct rsv_spec s;

	POISON(s);
	CHECK_EQ(rsv_parse(".", &s), 0);
	CHECK_EQ(s.kind, RSV_SYMBOL);
	CHECK_STR(s.name, "ptscope_trigger");
	CHECK(s.module == NULL);
	rsv_spec_fini(&s);

	CHECK_EQ(rsv_parse("malloc@libc.so.6", &s), 0);
	CHECK_EQ(s.kind, RSV_SYMBOL);
	CHECK_STR(s.name, "malloc");
	CHECK_STR(s.module, "libc.so.6");
	CHECK_STR(s.text, "malloc@libc.so.6");
	rsv_spec_fini(&s);

	CHECK_EQ(rsv_parse("addr:0x401a2b", &s), 0);
	CHECK_EQ(s.kind, RSV_ADDR);
	CHECK_EQ(s.addr, 0x401a2b);
	rsv_spec_fini(&s);

	CHECK_EQ(rsv_parse("src/demo.c:42", &s), 0);
	CHECK_EQ(s.kind, RSV_LINE);
	CHECK_STR(s.file, "src/demo.c");
	CHECK_EQ(s.line, 42);
	rsv_spec_fini(&s);

	/* C++ scope operators are not FILE:LINE. */
	CHECK_EQ(rsv_parse("shop::price", &s), 0);
	CHECK_EQ(s.kind, RSV_SYMBOL);
	CHECK_STR(s.name, "shop::price");
	rsv_spec_fini(&s);

	CHECK_EQ(rsv_parse(".@demo", &s), 0);
	CHECK_STR(s.name, "ptscope_trigger");
	CHECK_STR(s.module, "demo");
	rsv_spec_fini(&s);
	rsv_spec_fini(NULL);
}

TEST(rejects_bad_specs)
{
	static const char *const bad[] = {"",	       "addr:",	 "addr:zz",
					  "addr:0x1g", "addr:0", "a.c:0",
					  "@libc",     "foo@",	 "addr:-5"};
	struct rsv_spec s;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(rsv_parse(bad[i], &s), PS_ERR_INVAL);
		CHECK(strstr(ps_err_message(PS_ERR_INVAL), "FILE:LINE"));
	}
	CHECK_EQ(rsv_parse(NULL, &s), PS_ERR_INVAL);
	CHECK_EQ(rsv_parse("main", NULL), PS_ERR_INVAL);
}

/* Resolve @text in process @pid; returns rsv_resolve's result. */
static int resolve(const char *text, pid_t pid, struct rsv_result *res)
{
	struct rsv_spec s;
	int r = rsv_parse(text, &s);

	if (r)
		return r;
	r = rsv_resolve(&s, pid, res);
	rsv_spec_fini(&s);
	return r;
}

/* @name in libc itself (a sanitizer may interpose its own malloc). */
static void *libc_sym(const char *name)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *p = h ? dlsym(h, name) : NULL;

	if (h)
		dlclose(h);
	return p;
}

TEST(resolves_in_this_process)
{
	struct rsv_result res;
	void *libc_malloc = libc_sym("malloc");
	char spec[64];

	POISON(res);
	CHECK_EQ(resolve("rsv_test_local_fn", 0, &res), 0);
	CHECK_EQ(res.n, 1);
	CHECK_EQ(res.t[0].addr, (uintptr_t)&rsv_test_local_fn);
	CHECK(strstr(res.t[0].module, "test_resolve") != NULL);
	rsv_result_fini(&res);

	CHECK(libc_malloc != NULL);
	CHECK_EQ(resolve("malloc@libc.so.6", 0, &res), 0);
	CHECK_EQ(res.n, 1);
	CHECK_EQ(res.t[0].addr, (uintptr_t)libc_malloc);
	rsv_result_fini(&res);

	CHECK_EQ(resolve("malloc@libc", 0, &res), 0);
	CHECK_EQ(res.t[0].addr, (uintptr_t)libc_malloc);
	CHECK(strstr(res.t[0].module, "libc.so") != NULL);
	rsv_result_fini(&res);

	snprintf(spec, sizeof(spec), "addr:%p", (void *)&rsv_test_local_fn);
	CHECK_EQ(resolve(spec, 0, &res), 0);
	CHECK_EQ(res.n, 1);
	CHECK_EQ(res.t[0].addr, (uintptr_t)&rsv_test_local_fn);
	rsv_result_fini(&res);
	rsv_result_fini(NULL);
}

TEST(unknown_name_suggests_close_ones)
{
	struct rsv_result res = {0};
	const char *msg;

	CHECK_EQ(resolve("rsv_test_lokal_fn", 0, &res), PS_ERR_NOT_FOUND);
	CHECK_EQ(res.n, 0);
	msg = ps_err_message(PS_ERR_NOT_FOUND);
	CHECK(strstr(msg, "no function 'rsv_test_lokal_fn' in test_resolve"));
	CHECK(strstr(msg, "did you mean: "));
	CHECK(strstr(msg, "rsv_test_local_fn"));
	/* Nothing close: no suggestion list. */
	CHECK_EQ(resolve("zzqqxxyywwvv_nothing_like_it", 0, &res),
		 PS_ERR_NOT_FOUND);
	CHECK(!strstr(ps_err_message(PS_ERR_NOT_FOUND), "did you mean"));
}

/* Absolute path of build/samples/@name (as /proc/PID/maps shows it). */
static int sample_path(char *buf, size_t n, const char *name)
{
	char rel[512], *abs;

	snprintf(rel, sizeof(rel), "%s/samples/%s", harness_build(), name);
	abs = realpath(rel, NULL);
	if (!abs || strlen(abs) >= n) {
		free(abs);
		return -1;
	}
	strcpy(buf, abs);
	free(abs);
	return access(buf, X_OK);
}

/* Two programs that both define main, "mapped" whole into one address
 * space: main is ambiguous until a module is named. */
TEST(ambiguous_name_lists_modules)
{
	char demo[512], rec[512];
	struct mod_map maps[2];
	struct mod_list l = {maps, 2};
	struct rsv_result res = {0};
	struct rsv_spec s;
	const char *msg;

	if (sample_path(demo, sizeof(demo), "demo") ||
	    sample_path(rec, sizeof(rec), "recursion"))
		SKIP("samples demo and recursion are not built");
	memset(maps, 0, sizeof(maps));
	maps[0] = (struct mod_map){.start = 0x555555554000,
				   .end = 0x555555654000,
				   .prot = PROT_READ | PROT_EXEC,
				   .inode = 1,
				   .path = demo};
	maps[1] = (struct mod_map){.start = 0x7f0000000000,
				   .end = 0x7f0000100000,
				   .prot = PROT_READ | PROT_EXEC,
				   .inode = 2,
				   .path = rec};
	CHECK_EQ(rsv_parse("main", &s), 0);
	CHECK_EQ(rsv_resolve_maps(&s, &l, &res), PS_ERR_AMBIGUOUS);
	rsv_spec_fini(&s);
	CHECK_EQ(res.n, 0);
	msg = ps_err_message(PS_ERR_AMBIGUOUS);
	CHECK(strstr(msg, "'main' names 2 functions"));
	CHECK(strstr(msg, "in demo"));
	CHECK(strstr(msg, "in recursion"));
	CHECK(strstr(msg, "NAME@MODULE"));
	CHECK_EQ(rsv_parse("main@recursion", &s), 0);
	CHECK_EQ(rsv_resolve_maps(&s, &l, &res), 0);
	rsv_spec_fini(&s);
	CHECK_EQ(res.n, 1);
	CHECK(res.t[0].addr > maps[1].start && res.t[0].addr < maps[1].end);
	CHECK_STR(res.t[0].module, rec);
	rsv_result_fini(&res);
}

TEST(unloaded_module_is_pending)
{
	struct rsv_result res = {0};

	CHECK_EQ(resolve("f@libnot_loaded_yet.so", 0, &res), RSV_PENDING);
	CHECK_EQ(res.n, 0);
	CHECK_EQ(resolve("nosuchfile.c:10", 0, &res), RSV_PENDING);
	CHECK_EQ(resolve("addr:0x10", 0, &res), PS_ERR_INVAL);
}

/* Start @prog stopped at its exec (only it and ld.so mapped). */
static pid_t start_stopped(const char *prog, const char *arg, int *out_fd)
{
	int p[2], status;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(prog, prog, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out_fd = p[0];
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		return -1;
	return pid;
}

/* Let the stopped child run to its end with breakpoints at @addrs;
 * returns the hit counts in @hits, the child's output in @out and how it
 * ended in *@status. */
static int run_counting(pid_t pid, int fd, const uint64_t *addrs, size_t n,
			uint64_t *hits, char *out, size_t outsz, int *status)
{
	struct bp *bp[4] = {0};
	size_t got = 0;
	ssize_t k;
	int r = 0;

	for (size_t i = 0; i < n && !r; i++)
		r = bp_open(pid, addrs[i], &bp[i]);
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	while (got + 1 < outsz &&
	       (k = read(fd, out + got, outsz - 1 - got)) > 0)
		got += (size_t)k;
	out[got] = 0;
	close(fd);
	if (waitpid(pid, status, 0) != pid && !r)
		r = PS_ERR_IO; /* no status to tell */
	for (size_t i = 0; i < n; i++) {
		if (!r && bp_count(bp[i], &hits[i]))
			r = PS_ERR_IO;
		bp_close(bp[i]);
	}
	return r;
}

/* The line of samples/demo.c holding @text (found, not hard-coded). */
static unsigned demo_line(const char *text)
{
	char path[512], line[256];
	unsigned no = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/samples/demo.c", harness_top());
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		no++;
		if (strstr(line, text)) {
			fclose(f);
			return no;
		}
	}
	fclose(f);
	return 0;
}

/* One run of demo under breakpoints on handle_request, a line in it and
 * ptscope_trigger ("."), resolved in the stopped process: the hit
 * counts in @hits, demo's output in @out, how it ended in *@status.
 * Returns 0, or the first failed check's line (reported by the caller),
 * or -1 for a skip (its reason in ps_err_message(*@skip)). */
static int demo_run(const char *prog, unsigned line, uint64_t *hits, char *out,
		    size_t outsz, int *status, int *skip)
{
	struct rsv_result fn = {0}, ln = {0}, trig = {0}, res = {0};
	char spec[64];
	uint64_t addrs[3];
	int fd, r;
	pid_t pid = start_stopped(prog, "300", &fd);

	if (pid <= 0)
		return __LINE__;
	/* Only demo and ld.so are mapped at exec: libc comes later. */
	if (resolve("malloc@libc.so.6", pid, &res) != RSV_PENDING ||
	    resolve("handle_request", pid, &fn) ||
	    resolve("handle_reqest", pid, &res) != PS_ERR_NOT_FOUND ||
	    !strstr(ps_err_message(PS_ERR_NOT_FOUND),
		    "no function 'handle_reqest' in demo or its libraries; "
		    "did you mean: handle_request?"))
		r = __LINE__;
	else
		r = 0;
	snprintf(spec, sizeof(spec), "demo.c:%u", line);
	if (!r && (resolve(spec, pid, &ln) || resolve(".", pid, &trig) ||
		   fn.n != 1 || ln.n != 1 || trig.n != 1))
		r = __LINE__;
	/* The line is inside handle_request, after its entry. */
	if (!r &&
	    !(ln.t[0].addr > fn.t[0].addr && ln.t[0].addr < fn.t[0].addr + 256))
		r = __LINE__;
	if (!r && (resolve("demo.c:1", pid, &res) != PS_ERR_NOT_FOUND ||
		   !strstr(ps_err_message(PS_ERR_NOT_FOUND), "nearest line")))
		r = __LINE__;
	if (r) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(fd);
	} else {
		addrs[0] = fn.t[0].addr;
		addrs[1] = ln.t[0].addr;
		addrs[2] = trig.t[0].addr;
		r = run_counting(pid, fd, addrs, 3, hits, out, outsz, status);
		if (r == PS_ERR_PERM || r == PS_ERR_NO_HW) {
			*skip = r;
			r = -1;
		} else if (r) {
			r = __LINE__;
		}
	}
	rsv_result_fini(&fn);
	rsv_result_fini(&ln);
	rsv_result_fini(&trig);
	return r;
}

TEST(demo_function_line_and_trigger_hit_the_right_code)
{
	char prog[512], out[256];
	uint64_t hits[3] = {0};
	unsigned line = demo_line("return store(hash(parse(buf)));");
	int requests = 0, slow = -1, r = 0, status = 0, skip = 0;

	if (sample_path(prog, sizeof(prog), "demo"))
		SKIP("build/samples/demo is not built (make "
		     "build/samples/demo)");
	CHECK(line > 0);
	/* Twice in CI (2026-12-07) demo ended before printing anything, the
	 * second time by SIGTRAP, and never in 80 runs here, idle or under
	 * load.  One way it can happen: a debug exception the kernel cannot
	 * match to a breakpoint of its own goes on to the task as a SIGTRAP
	 * (x86's hw_breakpoint_handler leaves its DR6 bit to
	 * exc_debug_user), which a virtual machine's debug registers may
	 * raise; which event did it here is not known.  So a run that ends
	 * by SIGTRAP is run again, at most twice, and says so; any other
	 * end, or a third SIGTRAP, fails. */
	for (int attempt = 0; attempt < 3; attempt++) {
		memset(hits, 0, sizeof(hits));
		out[0] = 0;
		r = demo_run(prog, line, hits, out, sizeof(out), &status,
			     &skip);
		if (r || !WIFSIGNALED(status) || WTERMSIG(status) != SIGTRAP)
			break;
		printf("# demo ended by SIGTRAP (breakpoints %s), run %d of "
		       "3\n",
		       bp_hw_fires() == 1 ? "in debug registers" : "as uprobes",
		       attempt + 1);
	}
	if (r < 0)
		SKIP(ps_err_message(skip));
	if (r) {
		harness_failf(__FILE__, r, "demo_run failed here");
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		harness_failf(__FILE__, __LINE__,
			      "demo ended %s %d, output \"%s\"",
			      WIFSIGNALED(status) ? "by signal" : "with status",
			      WIFSIGNALED(status) ? WTERMSIG(status)
						  : WEXITSTATUS(status),
			      out);
		return;
	}
	CHECK_EQ(sscanf(out, "demo: %d requests, %d slow", &requests, &slow),
		 2);
	CHECK_EQ(requests, 300);
	CHECK_EQ(hits[0], 300);
	CHECK_EQ(hits[1], 300);
	CHECK(slow > 0);
	CHECK_EQ(hits[2], slow);
}

TEST(cpp_names_resolve_demangled)
{
	struct rsv_result a = {0}, b = {0}, c = {0};
	char prog[512];
	pid_t pid;
	int fd;

	if (sample_path(prog, sizeof(prog), "exceptions"))
		SKIP("build/samples/exceptions is not built");
	pid = start_stopped(prog, NULL, &fd);
	CHECK(pid > 0);
	CHECK_EQ(resolve("shop::price", pid, &a), 0);
	CHECK_EQ(resolve("_ZN4shopL5priceERKNS_5OrderE", pid, &b), 0);
	CHECK_EQ(a.t[0].addr, b.t[0].addr);
	CHECK_EQ(resolve("shop::total", pid, &c), 0);
	CHECK(c.t[0].addr != a.t[0].addr);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fd);
	rsv_result_fini(&a);
	rsv_result_fini(&b);
	rsv_result_fini(&c);
}

/* Where libc's text mapping starts relative to its file, for @pid. */
static uint64_t libc_base(pid_t pid)
{
	struct mod_list l;
	uint64_t base = 0;

	if (mod_read(pid, MOD_FILE, &l))
		return 0;
	for (size_t i = 0; i < l.n; i++)
		if (strstr(l.maps[i].path, "/libc.so.6") && !l.maps[i].offset) {
			base = l.maps[i].start;
			break;
		}
	mod_list_fini(&l);
	return base;
}

/* A shared library in another process: the same offset from libc's load
 * address as in this process (ASLR moves only the base). */
TEST(library_symbol_in_a_running_child)
{
	struct rsv_result res = {0};
	uint64_t self = (uintptr_t)libc_sym("malloc"), base = 0;
	char prog[512];
	pid_t pid;
	int fd;

	if (sample_path(prog, sizeof(prog), "demo"))
		SKIP("build/samples/demo is not built");
	pid = start_stopped(prog, "2000000000", &fd);
	CHECK(pid > 0);
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	for (int i = 0; i < 200 && !base; i++) {
		struct timespec ts = {0, 5000000};

		base = libc_base(pid);
		if (!base)
			nanosleep(&ts, NULL);
	}
	CHECK(base != 0);
	CHECK_EQ(resolve("malloc@libc.so.6", pid, &res), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fd);
	CHECK_EQ(res.n, 1);
	CHECK_EQ(res.t[0].addr - base, self - libc_base(0));
	rsv_result_fini(&res);
}

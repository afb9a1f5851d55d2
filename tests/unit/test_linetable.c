/* ptscope's own line-table reader against libdw (decoder/linetable.h): for
 * every row of every compile unit, at the row's address and the bytes on
 * either side, both must give the same file and line, or none.  On the
 * system's separate debug files (libc6-dbg, which `make deps` installs:
 * real DWARF 5 from a distribution's compiler, compressed sections) and on
 * a program compiled here with each DWARF version. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>

#include "decoder/linetable.h"
#include "ptscope/error.h"
#include "tests/harness.h"

struct tally {
	size_t units, queries, unsupported, found;
};

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* One address of @cu both ways. */
static void compare_at(struct lt_cache *c, Dwarf_Die *cu, Dwarf_Addr a,
		       const char *path, struct tally *t)
{
	Dwarf_Line *dl = dwarf_getsrc_die(cu, a);
	const char *df = dl ? dwarf_linesrc(dl, NULL, NULL) : NULL;
	const char *lf = NULL;
	int dn = 0, ln = 0;
	int r = lt_lookup(c, cu, a, &lf, &ln);

	if (dl)
		dwarf_lineno(dl, &dn);
	t->queries++;
	if (r == PS_ERR_UNSUPPORTED) {
		t->unsupported++;
		return;
	}
	if (r < 0 || (r == 1) != (dl != NULL) ||
	    (r == 1 && (!same(lf, df) || ln != dn))) {
		harness_failf(__FILE__, __LINE__,
			      "%s at %#lx: libdw %s:%d, linetable %s:%d (%d)",
			      path, (unsigned long)a, dl ? df : "-", dn,
			      r == 1 ? lf : "-", ln, r);
		return;
	}
	t->found += r == 1;
}

/* Every unit of the DWARF in @path; 0, or -1 if it has none. */
static int compare_file(const char *path, struct tally *t)
{
	int fd = open(path, O_RDONLY);
	Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	struct lt_cache *c = NULL;
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (!dw || lt_cache_new(dw, &c)) {
		if (dw)
			dwarf_end(dw);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_getsrclines(&cu, &lines, &n) == 0) {
			t->units++;
			for (size_t i = 0; i < n; i++) {
				Dwarf_Addr a;

				if (dwarf_lineaddr(dwarf_onesrcline(lines, i),
						   &a))
					continue;
				compare_at(c, &cu, a, path, t);
				compare_at(c, &cu, a + 1, path, t);
				if (a)
					compare_at(c, &cu, a - 1, path, t);
			}
		}
		off = next;
	}
	lt_cache_free(c);
	dwarf_end(dw);
	close(fd);
	return 0;
}

TEST(system_debug_files_read_as_libdw_reads_them)
{
	const char *top = "/usr/lib/debug/.build-id";
	struct tally t = {0};
	DIR *d = opendir(top);
	struct dirent *e;
	size_t files = 0;

	if (!d)
		SKIP("no separate debug files in /usr/lib/debug/.build-id "
		     "(libc6-dbg, installed by make deps)");
	/* all of them (libc6-dbg: 273 files, 4,700 units, 2 million
	 * addresses in about a second), up to a bound */
	while ((e = readdir(d)) && files < 1000) {
		char sub[512];
		DIR *sd;
		struct dirent *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", top, e->d_name);
		sd = opendir(sub);
		if (!sd)
			continue;
		while ((f = readdir(sd)) && files < 1000) {
			char path[1024];
			size_t len = strlen(f->d_name);

			if (len < 6 || strcmp(f->d_name + len - 6, ".debug"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, f->d_name);
			if (compare_file(path, &t) == 0)
				files++;
		}
		closedir(sd);
	}
	closedir(d);
	if (!files)
		SKIP("no debug file with DWARF under /usr/lib/debug/.build-id");
	/* not vacuous: real tables, answered here rather than left to
	 * libdw */
	CHECK(t.units > 100);
	CHECK(t.found > 10000);
	CHECK(t.unsupported * 100 < t.queries);
}

TEST(each_dwarf_version_reads_as_libdw_reads_it)
{
	static const char *versions[] = {"-gdwarf-2", "-gdwarf-3", "-gdwarf-4",
					 "-gdwarf-5"};
	char dir[] = "/tmp/ptscope-linetable.XXXXXX";
	char src[256], bin[256], cmd[1024];
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/p.c", dir);
	f = fopen(src, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	/* two files' lines (an inline function from a header-like part,
	 * a line directive) and code in two sections */
	fputs("#include <stdio.h>\n"
	      "static inline int twice(int x) { return 2 * x; }\n"
	      "__attribute__((cold, noinline)) static void rare(int x)\n"
	      "{\n  fprintf(stderr, \"%d\\n\", x);\n}\n"
	      "#line 100 \"other.c\"\n"
	      "int f(int x)\n{\n  if (x > 1000)\n    rare(x);\n"
	      "  return twice(x) + 1;\n}\n"
	      "int main(int argc, char **argv)\n{\n  (void)argv;\n"
	      "  return f(argc);\n}\n",
	      f);
	fclose(f);
	for (size_t i = 0; i < sizeof(versions) / sizeof(*versions); i++) {
		struct tally t = {0};

		snprintf(bin, sizeof(bin), "%s/p%zu", dir, i);
		snprintf(cmd, sizeof(cmd), "cc -O2 %s -o %s %s 2>/dev/null",
			 versions[i], bin, src);
		if (system(cmd) != 0) {
			harness_failf(__FILE__, __LINE__, "cannot build: %s",
				      cmd);
			continue;
		}
		CHECK_EQ(compare_file(bin, &t), 0);
		CHECK(t.found > 10);
		CHECK_EQ(t.unsupported, 0);
		unlink(bin);
	}
	unlink(src);
	rmdir(dir);
}

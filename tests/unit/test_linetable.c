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
#include <gelf.h>

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

/* @fn(@ctx, unit, address) for each line row of each unit of @dw that
 * libdw reads; returns the units read. */
static size_t each_row(Dwarf *dw,
		       void (*fn)(void *ctx, Dwarf_Die *cu, Dwarf_Addr a),
		       void *ctx)
{
	Dwarf_Off off = 0, next;
	size_t hsize, units = 0;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_getsrclines(&cu, &lines, &n) == 0) {
			units++;
			for (size_t i = 0; i < n; i++) {
				Dwarf_Addr a;

				if (!dwarf_lineaddr(dwarf_onesrcline(lines, i),
						    &a))
					fn(ctx, &cu, a);
			}
		}
		off = next;
	}
	return units;
}

struct compare_ctx {
	struct lt_cache *c;
	const char *path;
	struct tally *t;
};

/* A row's address and the bytes on either side, both ways. */
static void compare_row(void *ctx, Dwarf_Die *cu, Dwarf_Addr a)
{
	struct compare_ctx *x = ctx;

	compare_at(x->c, cu, a, x->path, x->t);
	compare_at(x->c, cu, a + 1, x->path, x->t);
	if (a)
		compare_at(x->c, cu, a - 1, x->path, x->t);
}

/* Every unit of the DWARF in @path; 0, or -1 if it has none. */
static int compare_file(const char *path, struct tally *t)
{
	int fd = open(path, O_RDONLY);
	Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	struct compare_ctx x = {NULL, path, t};

	if (!dw || lt_cache_new(dw, &x.c)) {
		if (dw)
			dwarf_end(dw);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	t->units += each_row(dw, compare_row, &x);
	lt_cache_free(x.c);
	dwarf_end(dw);
	close(fd);
	return 0;
}

struct addrs_ctx {
	Dwarf_Addr *out;
	size_t cap, n;
};

static void keep_addr(void *ctx, Dwarf_Die *cu, Dwarf_Addr a)
{
	struct addrs_ctx *x = ctx;

	(void)cu;
	if (x->n < x->cap)
		x->out[x->n++] = a;
}

/* The addresses of every line row of @path's units, into @out (at most
 * @cap); their number. */
static size_t row_addrs(const char *path, Dwarf_Addr *out, size_t cap)
{
	int fd = open(path, O_RDONLY);
	Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	struct addrs_ctx x = {out, cap, 0};

	if (dw) {
		each_row(dw, keep_addr, &x);
		dwarf_end(dw);
	}
	if (fd >= 0)
		close(fd);
	return x.n;
}

/* Both ways at each of @addr (and the byte after) in @path, whether or
 * not libdw can read the unit's table. */
static void compare_addrs(const char *path, const Dwarf_Addr *addr, size_t n,
			  struct tally *t)
{
	int fd = open(path, O_RDONLY);
	Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	struct lt_cache *c = NULL;

	if (dw && !lt_cache_new(dw, &c))
		for (size_t i = 0; i < n; i++) {
			Dwarf_Die cu;

			if (!dwarf_addrdie(dw, addr[i], &cu))
				continue;
			compare_at(c, &cu, addr[i], path, t);
			compare_at(c, &cu, addr[i] + 1, path, t);
		}
	lt_cache_free(c);
	if (dw)
		dwarf_end(dw);
	if (fd >= 0)
		close(fd);
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

/* Where .debug_line lies in the ELF file @path: 0 and its file offset and
 * size. */
static int debug_line_at(const char *path, long *off, size_t *size)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int r = -1;

	if (elf && !elf_getshdrstrndx(elf, &shstrndx))
		while (r && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".debug_line") &&
			    !(sh.sh_flags & SHF_COMPRESSED)) {
				*off = (long)sh.sh_offset;
				*size = sh.sh_size;
				r = 0;
			}
		}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return r;
}

/* Damaged line tables: where libdw fails, or reads a damaged table its
 * way, the reader must not answer otherwise (it leaves to libdw what it
 * does not read as libdw does).  Bytes of .debug_line changed at random
 * (a fixed seed; 3,000 copies each), in a program built with DWARF 4 and
 * with DWARF 5.  (20,000 each agreed too, once.) */
TEST(damaged_tables_read_as_libdw_reads_them)
{
	static const char *versions[] = {"-gdwarf-4", "-gdwarf-5"};
	char dir[] = "/tmp/ptscope-linetable-d.XXXXXX";
	char src[256], bin[256], bad[256], cmd[1024];
	unsigned seed = 12345;
	size_t answered = 0;
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/p.c", dir);
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	f = fopen(src, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	for (int i = 0; i < 40; i++)
		fprintf(f,
			"int f%d(int x)\n{\n  if (x > %d)\n    x -= %d;\n"
			"  return x * 3;\n}\n",
			i, i, i);
	fputs("int main(int argc, char **argv)\n{\n  (void)argv;\n"
	      "  return f0(argc);\n}\n",
	      f);
	fclose(f);
	for (size_t v = 0; v < sizeof(versions) / sizeof(*versions); v++) {
		static uint8_t img[1 << 20];
		static Dwarf_Addr addrs[4096];
		size_t naddrs;
		size_t n, size;
		long off;

		snprintf(bin, sizeof(bin), "%s/p%zu", dir, v);
		snprintf(cmd, sizeof(cmd), "cc -O1 %s -o %s %s 2>/dev/null",
			 versions[v], bin, src);
		if (system(cmd) != 0 || debug_line_at(bin, &off, &size)) {
			harness_failf(__FILE__, __LINE__, "cannot build: %s",
				      cmd);
			continue;
		}
		f = fopen(bin, "rb");
		n = f ? fread(img, 1, sizeof(img), f) : 0;
		if (f)
			fclose(f);
		CHECK(n > 0 && n < sizeof(img) && (size_t)off + size <= n);
		if (!n || n >= sizeof(img) || (size_t)off + size > n)
			continue;
		/* the rows of the undamaged table: asked of every copy, so
		 * that a unit libdw cannot read is asked too */
		naddrs = row_addrs(bin, addrs, sizeof(addrs) / sizeof(*addrs));
		CHECK(naddrs > 100);
		for (int round = 0; round < 3000; round++) {
			static uint8_t copy[1 << 20];
			struct tally t = {0};
			int changes = 1 + round % 3;

			memcpy(copy, img, n);
			/* the header's first 40 bytes most often, where one
			 * byte decides the most */
			for (int k = 0; k < changes; k++) {
				size_t at;

				seed = seed * 1103515245u + 12345u;
				at = (seed >> 8) % (round % 2 ? size : 40);
				seed = seed * 1103515245u + 12345u;
				copy[off + at] = (uint8_t)(seed >> 16);
			}
			f = fopen(bad, "wb");
			if (!f || fwrite(copy, 1, n, f) != n) {
				harness_failf(__FILE__, __LINE__,
					      "cannot write");
				if (f)
					fclose(f);
				break;
			}
			fclose(f);
			compare_addrs(bad, addrs, naddrs, &t);
			answered += t.found;
		}
		unlink(bin);
	}
	/* most damaged copies still have tables both read */
	CHECK(answered > 1000);
	unlink(bad);
	unlink(src);
	rmdir(dir);
}

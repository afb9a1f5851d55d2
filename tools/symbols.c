/* SPDX-License-Identifier: MIT */
/* symbols: list the functions ptscope's symbolizer knows in an ELF file, or
 * resolve addresses, exactly as the decoder names spans.
 *
 *   build/tools/symbols FILE              every function: start, size, name,
 *                                         file:line, other names (aliases)
 *   build/tools/symbols FILE ADDR...      the function at each link-time
 *                                         address (module+0xoff if none)
 *
 * Separate debug files (build id, .gnu_debuglink) are used as the decoder
 * uses them, so this also shows what a stripped library will look like. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/symbols.h"
#include "ptscope/error.h"

static void print_func(const struct sym_func *f)
{
	printf("%#14" PRIx64 " %8" PRIu64 "  %s", f->start, f->end - f->start,
	       f->name);
	if (f->info.file)
		printf("  %s:%" PRIu32, f->info.file, f->info.line);
	if (f->aliases)
		printf("  (aliases: %s)", f->aliases);
	printf("\n");
}

static int parse_addr(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct sym_module *m = NULL;
	struct sym_space *sp = NULL;
	int err, rc = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: symbols FILE [ADDR...]\n"
			"List the functions of an ELF file as ptscope names "
			"them, or the function at each\nlink-time address.\n");
		return argc < 2 ? 2 : 0;
	}
	err = sym_module_load(argv[1], NULL, 1, &m);
	if (err < 0) {
		fprintf(stderr, "symbols: %s: %s\n", argv[1],
			ps_err_message(err));
		return 1;
	}
	if (sym_module_debug_file(m))
		fprintf(stderr, "symbols: using debug file %s\n",
			sym_module_debug_file(m));
	if (argc == 2) {
		const struct sym_func *f;

		for (size_t i = 0; (f = sym_module_func(m, i)); i++)
			print_func(f);
		sym_module_free(m);
		return 0;
	}
	err = sym_space_new(&sp);
	if (!err)
		err = sym_space_add(sp, m, 0, 0, UINT64_MAX);
	if (err < 0) {
		fprintf(stderr, "symbols: %s\n", ps_err_message(err));
		rc = 1;
		goto out;
	}
	for (int i = 2; i < argc; i++) {
		uint64_t addr;
		const struct sym_func *f;

		if (parse_addr(argv[i], &addr)) {
			fprintf(stderr,
				"symbols: '%s' is not an address; give it "
				"as 0x401136 or 4198710\n",
				argv[i]);
			rc = 1;
			continue;
		}
		f = sym_lookup(sp, addr);
		printf("%#" PRIx64 " ", addr);
		print_func(f);
	}
out:
	sym_space_free(sp);
	sym_module_free(m);
	return rc;
}

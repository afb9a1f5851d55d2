/* SPDX-License-Identifier: MIT */
/* ptscope symbols FILE [ADDR...]: the functions of an ELF file as traces
 * name them (the name a programmer calls, its other names as aliases), or
 * the function at each link-time address. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/symbols.h"
#include "ptscope/error.h"
#include "src/cli/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ptscope symbols FILE [ADDR...]\n\n"
		   "List the functions of an executable or shared library as "
		   "ptscope's traces\nname them: start, size, name, file:line "
		   "and the other names of the same\naddress (aliases).  With "
		   "addresses (link-time, as 0x401136 or 4198710),\nprint the "
		   "function at each.  Separate debug files (build id, "
		   ".gnu_debuglink)\nare used as the decoder uses them.\n\n"
		   "options:\n"
		   "  -h, --help               this text\n");
}

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
	return errno || end == s || *end || s[0] == '-' ? -1 : 0;
}

int cmd_symbols(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sym_module *m = NULL;
	struct sym_space *sp = NULL;
	const struct sym_func *f;
	int c, err, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "ptscope symbols: give an ELF file, e.g. "
				"'ptscope symbols /bin/ls'\n");
		return 2;
	}
	for (int i = optind + 1; i < argc; i++) {
		uint64_t a;

		if (parse_addr(argv[i], &a)) {
			fprintf(stderr,
				"ptscope symbols: '%s' is not an address; give "
				"it as 0x401136 or 4198710\n",
				argv[i]);
			return 2;
		}
	}
	err = sym_module_load(argv[optind], NULL, 1, &m);
	if (err < 0) {
		fprintf(stderr, "ptscope symbols: %s\n", ps_err_message(err));
		return 1;
	}
	if (optind + 1 == argc) {
		for (size_t i = 0; (f = sym_module_func(m, i)); i++)
			print_func(f);
		goto out;
	}
	err = sym_space_new(&sp);
	if (!err)
		err = sym_space_add(sp, m, 0, 0, UINT64_MAX);
	if (err < 0) {
		fprintf(stderr, "ptscope symbols: %s\n", ps_err_message(err));
		rc = 1;
		goto out;
	}
	for (int i = optind + 1; i < argc; i++) {
		uint64_t a;

		parse_addr(argv[i], &a);
		f = sym_lookup(sp, a);
		if (!f) {
			fprintf(stderr, "ptscope symbols: out of memory\n");
			rc = 1;
			break;
		}
		printf("%#" PRIx64 " ", a);
		print_func(f);
	}
out:
	sym_space_free(sp);
	sym_module_free(m);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* ptscope: the command dispatcher.  Each subcommand lives in src/cli/. */
#include <stdio.h>
#include <string.h>

#include "src/cli/commands.h"
#include "src/output/tmpfile.h"

#ifndef PTSCOPE_VERSION
#define PTSCOPE_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"run", cmd_run,
     "run a command and trace it until a trigger, exit or crash"},
    {"attach", cmd_attach,
     "trace running processes (-p PID) until a trigger or Ctrl-C"},
    {"record", cmd_record,
     "like run/attach, but save a recording (.ptsc) to decode later"},
    {"decode", cmd_decode, "turn a recording or raw PT streams into a trace"},
    {"convert", cmd_convert,
     "convert a trace (Chrome JSON, .fxt, .pftrace) to another format"},
    {"dump", cmd_dump, "print a trace's events as normalised text"},
    {"symbols", cmd_symbols,
     "list an ELF file's functions as traces name them"},
    {"info", cmd_info,
     "what this machine offers for recording (PT, privileges, backends)"},
    {"selftest", cmd_selftest,
     "record the bundled samples on Intel PT and an emulator, compare"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ptscope COMMAND [OPTIONS]\n\n"
		   "Record what a program did just before something happened,"
		   " as a trace for Perfetto.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\n'ptscope COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("ptscope %s\n", PTSCOPE_VERSION);
		return 0;
	}
	/* Ctrl-C (or kill) in decode, convert and dump: no temporary file
	 * is left behind.  run/attach/record take these signals over while
	 * they trace (a snapshot, then detach). */
	ps_tmp_cleanup_on_signals();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr,
		"ptscope: unknown command '%s'; run 'ptscope --help' for the "
		"list.\n",
		argv[1]);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/* The ptscope subcommands, one file each in src/cli/.  Each takes the
 * arguments after the subcommand name (argv[0] is the subcommand) and
 * returns the process exit status.  Only these functions print errors. */
#ifndef PTSCOPE_CLI_COMMANDS_H
#define PTSCOPE_CLI_COMMANDS_H

int cmd_run(int argc, char **argv);    /* run.c: run CMD and trace it */
int cmd_attach(int argc, char **argv); /* attach.c: trace running PIDs */
int cmd_record(int argc, char **argv); /* record.c: save a recording */
int cmd_decode(int argc, char **argv); /* decode.c: recording/raw PT → trace */
int cmd_convert(int argc, char **argv); /* convert.c: trace → other format */
int cmd_dump(int argc, char **argv);	/* dump.c: trace → normalised text */
int cmd_symbols(int argc, char **argv); /* symbols.c: an ELF's functions */
int cmd_info(int argc, char **argv);	/* info.c: what this machine offers */
int cmd_selftest(int argc, char **argv); /* selftest.c: check the backends */

/* run.c: the body shared by run, attach and record; @mode is an
 * enum reccmd_mode (src/cli/tracing.h). */
int cli_record_main(int mode, int argc, char **argv);

#endif

/* SPDX-License-Identifier: MIT */
/* What ptscope decode reads (decode_input.c), for decode.c, which holds
 * the command line and the command's flow: the parsed command line
 * (struct decode_args) and reading raw PT streams with their code or a
 * perf.data.  Private to ptscope decode; decode.c uses decode_input.c,
 * not the other way round. */
#ifndef PTSCOPE_CLI_DECODE_INPUT_H
#define PTSCOPE_CLI_DECODE_INPUT_H

#include <stdint.h>

#include "decoder/decoder.h"
#include "ptscope/writer.h"

#define DECODE_MAX_INPUTS 256

struct decode_pt_input {
	const char *path;
	int cpu;	      /* -1: a thread's stream */
	const char *switches; /* NULL: none */
	/* --pt FILE:FROM[-TO] (ptxed's form): the bytes from file offset
	 * @from, @size of them (0: to the end) */
	uint64_t from, size;
};

struct decode_code_input {
	const char *path;
	uint64_t addr;
	int raw;
	/* --raw FILE:FROM[-TO]:ADDR (ptxed's form): the bytes from file
	 * offset @from, @size of them (0: to the end) */
	uint64_t from, size;
};

struct decode_args {
	struct decode_pt_input pt[DECODE_MAX_INPUTS];
	int npt;
	struct decode_code_input code[DECODE_MAX_INPUTS];
	int ncode;
	const char *recording, *out;
	enum ps_format format;
	struct dec_config cfg;
	uint64_t pid, tid;
	int have_pid, have_tid, stats, quiet;
};

/* The decoder's warnings (a damaged perf.data, ...) on stderr; @ctx is
 * unused. */
void cmd_decode_warn(void *ctx, const char *msg);

/* Does @path start with perf.data's magic (or is it "-", a pipe-mode
 * perf.data on standard input)? */
int cmd_decode_is_perf_data(const char *path);

/* A perf.data of `perf record -e intel_pt//` (a->recording) → @w, its
 * counts into *st.  Returns 0 or a negative PS_ERR_* with a detail. */
int cmd_decode_perf_data(struct decode_args *a, struct ps_writer *w,
			 struct dec_stats *st);

/* Raw --pt streams with the --elf/--raw code → @w, the counts into *out;
 * fills in a->pid and a->tid when they were not given.  Returns 0 or a
 * negative PS_ERR_* with a detail. */
int cmd_decode_raw(struct decode_args *a, struct ps_writer *w,
		   struct dec_stats *out);

#endif /* PTSCOPE_CLI_DECODE_INPUT_H */

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
	/* a thread's stream from a bundle: its own ids (else --pid, and
	 * --tid counting up) */
	uint64_t pid, tid;
	int has_ids;
	/* names to show for them (NULL: none given) */
	const char *process_name, *thread_name;
};

struct decode_code_input {
	const char *path;
	uint64_t addr;
	int has_addr; /* FILE:ADDR given (else: link addresses, or with a
		       * perf.data a stand-in for the binary of that name) */
	int raw;
	/* --raw FILE:FROM[-TO]:ADDR (ptxed's form): the bytes from file
	 * offset @from, @size of them (0: to the end) */
	uint64_t from, size;
	/* a module of a bundle's process (else the one of --pid) */
	uint64_t pid;
	int has_pid;
};

struct decode_args {
	struct decode_pt_input pt[DECODE_MAX_INPUTS];
	int npt;
	struct decode_code_input code[DECODE_MAX_INPUTS];
	int ncode;
	const char *recording, *out;
	int perf_data; /* the recording is a perf.data (or - : stdin) */
	enum ps_format format;
	struct dec_config cfg;
	uint64_t pid, tid;
	int have_pid, have_tid, stats, quiet;
	int jobs_given; /* -j was given (else the cores, or 1: small) */
	int small;	/* the input is a few KB (DECODE_SMALL_INPUT) */
	int cpu_given;	/* --cpu was given (or a bundle's cpuInfo) */
	/* a bundle's processes, known to the decode even when none of
	 * their code could be read */
	uint64_t process[DECODE_MAX_INPUTS];
	int nprocess;
	/* strings the inputs point to that a bundle's reading made */
	char **owned;
	size_t nowned;
};

/* All of regular file @path in *@buf (malloc'ed, a NUL after its *@len
 * bytes).  Returns 0 or a negative PS_ERR_* with a detail. */
int cmd_decode_read_file(const char *path, uint8_t **buf, size_t *len);

/* Does @path hold a JSON object (an LLDB trace bundle's description)
 * rather than a recording or a perf.data? */
int cmd_decode_is_bundle(const char *path);

/* LLDB's trace bundle (`trace save`'s trace.json, `trace load`'s input)
 * at @path into @a, as the options would give it: each thread's stream a
 * --pt with its pid and tid, each CPU's a --pt with --cpu-id and
 * --switches, each module an --elf at its load address (a file that is
 * not ELF: --raw), the kernel image likewise, and the CPU and TSC
 * conversion unless the command line gave them (a->cpu_given,
 * a->cfg.time.has_conv).  Paths are relative to the bundle's folder.
 * Warnings (a module missing or not the build the bundle names) go to
 * cmd_decode_warn.  Returns 0 or a negative PS_ERR_* with a detail. */
int cmd_decode_bundle(const char *path, struct decode_args *a);

/* Free what a->owned holds. */
void cmd_decode_args_release(struct decode_args *a);

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

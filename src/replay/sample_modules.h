/* SPDX-License-Identifier: MIT */
/* The code modules of a sampled recording, for unwinding its stacks
 * (prefix smod_): each process's mappings with the file found for them
 * on this machine (replay_locate_module), and, asked once per module,
 * whether its code keeps frame pointers — the choice of unwinder is made
 * per module (sample_stacks.h).
 *
 * Frame pointers are judged from the code: the share of the module's
 * functions (up to SMOD_FP_PROBE of them, from its symbol table) that
 * begin with `push %rbp; mov %rsp,%rbp` (after an endbr64).  Code built
 * with -fno-omit-frame-pointer does nearly always; Debian's libc and
 * most -O2 code do for a few functions only.
 */
#ifndef PTSCOPE_REPLAY_SAMPLE_MODULES_H
#define PTSCOPE_REPLAY_SAMPLE_MODULES_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/recording.h"

#define SMOD_FP_PROBE 400 /* functions looked at per module */
/* Share of functions with a frame-pointer prologue above which a module
 * keeps frame pointers: leaf functions omit the frame even with
 * -fno-omit-frame-pointer (0.4 of a sample program's functions have
 * one), while Debian's libc has a few percent. */
#define SMOD_FP_SHARE 0.25

struct smod {
	uint64_t pid, start, end, offset;
	uint32_t epoch;	  /* the image (exec epoch) of @pid it belongs to */
	const char *path; /* as recorded (borrowed from the recording) */
	char *file;	  /* the file found here (owned), NULL: missing */
	int fp;		  /* -1: not judged yet, 0: no frame pointers, 1: */
	int fd;		  /* the file, opened on first use (-1: not) */
};

struct smod_set {
	struct smod *m; /* sorted by pid, epoch, then start */
	size_t n;
};

/* Every file-backed module of @in (a [vdso] and other bracketed names
 * have no file).  Returns 0 or PS_ERR_NOMEM. */
int smod_build(const struct recording *in, struct smod_set *out);
void smod_free(struct smod_set *s);

/* The module of image @epoch of @pid holding @ip, or NULL. */
struct smod *smod_find(const struct smod_set *s, uint64_t pid, uint32_t epoch,
		       uint64_t ip);

/* 1 if @m's code keeps frame pointers, 0 if not (or its file is
 * missing: then the kernel's chain is all there is anyway). */
int smod_has_fp(struct smod *m);

/* 1 if the function of @m starting at run-time address @start opens a
 * frame ([endbr64] push %rbp; mov %rsp,%rbp) and @ip is past that
 * prologue, so its frame pointer is set: the kernel's chain then has its
 * caller.  0 otherwise (a leaf function without a frame, or @ip in the
 * prologue). */
int smod_framed(struct smod *m, uint64_t start, uint64_t ip);

/* The share (0..1) of the functions of ELF file @path that set up a
 * frame pointer, or a negative PS_ERR_* (not readable, no symbols). */
double smod_fp_share(const char *path);

#endif /* PTSCOPE_REPLAY_SAMPLE_MODULES_H */

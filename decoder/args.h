/* SPDX-License-Identifier: MIT */
/* Arguments and return values in the trace (prefix arg_): the PTW
 * packets of an emulator's data windows (--args, docs/args.md) put back
 * together, paired with the call they belong to, and shown by their
 * DWARF names and types (decoder/params.h).  The call-stack builder
 * (stack.c) feeds BR_PTWRITE events here and asks for the span's args
 * when it closes.  Internal to the decoder library.
 */
#ifndef PTSCOPE_DECODER_ARGS_H
#define PTSCOPE_DECODER_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/branch.h"
#include "decoder/params.h"
#include "ptscope/event.h"

#define ARG_MAXV 15

/* Window kinds (the header's bits 8-11; src/record/emulate/args.h). */
enum arg_kind { ARG_ARGS = 1, ARG_RET = 2, ARG_RAW = 3, ARG_WRITE = 4 };

/* One window being read, or read whole. */
struct arg_rec {
	int kind;	   /* 0: no window open */
	unsigned want, n;  /* values announced, read */
	uint16_t entry_lo; /* low 16 bits of the function's entry */
	uint64_t v[ARG_MAXV];
};

/* What a call's span carries. */
struct arg_vals {
	int kind; /* ARG_ARGS, ARG_RAW, or 0: no arguments seen */
	unsigned n;
	uint64_t v[ARG_MAXV];
	int has_ret;
	uint64_t ret;
};

/* Feed one BR_PTWRITE event.  Returns 1 when @r holds a whole window
 * (then the caller uses it and it is reset by the next call), 2 for a
 * value the program wrote itself (PTWRITE outside any window: in
 * r->v[0]), 0 otherwise. */
int arg_feed(struct arg_rec *r, const struct br_event *ev);

/* A whole window of @r (arguments or return value) for the call of the
 * function at run-time address @start: kept in *@slot (allocated on
 * first use; the caller frees it) and @r is reset.  A window of another
 * function is dropped.  Returns 0 or PS_ERR_NOMEM. */
int arg_attach(struct arg_rec *r, uint64_t start, struct arg_vals **slot);

/* The span args of @v for function @pf (NULL: unknown, values are
 * shown as arg0...): at most @max into @out, strings formatted into
 * @buf (@size bytes; the args borrow it).  Returns how many. */
size_t arg_show(const struct prm_func *pf, const struct arg_vals *v,
		struct ps_arg *out, size_t max, char *buf, size_t size);

#endif /* PTSCOPE_DECODER_ARGS_H */

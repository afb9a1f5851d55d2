/* SPDX-License-Identifier: MIT */
/* Which argument held a crash's fault address (prefix cargs_): a writer
 * tap between the decoder and the trace writer that keeps, per thread,
 * the pointer arguments (--args, shown on span ENDs) of the calls that
 * were open when its trace ended, innermost first, so the crash instant
 * can say "argument p of deref" held the address it faulted on.
 */
#ifndef PTSCOPE_REPLAY_CRASH_ARGS_H
#define PTSCOPE_REPLAY_CRASH_ARGS_H

#include <stdint.h>

#include "ptscope/writer.h"

struct cargs;

/* A tap writing through to @inner (borrowed).  Returns 0 or
 * PS_ERR_NOMEM. */
int cargs_new(struct ps_writer *inner, struct cargs **out);
/* What the producer writes to. */
struct ps_writer *cargs_writer(struct cargs *c);
/* The producer is done: hand the inner writer's epoch back. */
void cargs_end(struct cargs *c);
void cargs_free(struct cargs *c); /* accepts NULL */

/* The argument of @tid's innermost call open at its end that held
 * @addr (a pointer equal to it, or at most 4 KiB below: a field of the
 * pointed-to object; NULL for a fault in the first page), and in *fn
 * the call's name; NULL if none did. */
const char *cargs_holding(const struct cargs *c, uint64_t tid, uint64_t addr,
			  const char **fn);

#endif /* PTSCOPE_REPLAY_CRASH_ARGS_H */

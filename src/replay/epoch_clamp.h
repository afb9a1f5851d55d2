/* SPDX-License-Identifier: MIT */
/* A thread's events before an exec end by the exec.
 *
 * When a thread other than the main one runs exec, the kernel ends every
 * other thread and gives the exec'ing one the main thread's id: the old
 * main thread's timeline and the new image's share one tid.  The old
 * one's last spans may be known to end after the exec (its last timing
 * packet came later), which would cross the new image's spans on the same
 * track (Perfetto: misplaced ends).  This writer passes everything to
 * another one with times past @limit (the exec) brought back to it. */
#ifndef PTSCOPE_REPLAY_EPOCH_CLAMP_H
#define PTSCOPE_REPLAY_EPOCH_CLAMP_H

#include <stdint.h>

#include "ptscope/writer.h"

struct epoch_clamp;

int epoch_clamp_new(struct ps_writer *inner, uint64_t limit,
		    struct epoch_clamp **out);
struct ps_writer *epoch_clamp_writer(struct epoch_clamp *c);
void epoch_clamp_free(struct epoch_clamp *c); /* accepts NULL */

#endif /* PTSCOPE_REPLAY_EPOCH_CLAMP_H */

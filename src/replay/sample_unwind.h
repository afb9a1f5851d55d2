/* SPDX-License-Identifier: MIT */
/* DWARF unwinding of a call-stack sample (prefix sunw_) with elfutils'
 * unwinder: one Dwfl per process with its modules reported at their load
 * addresses, attached with our own Dwfl_Thread_Callbacks that serve the
 * sample's user registers (set_initial_registers) and its copy of the top
 * of the user stack (memory_read) — perf's way (unwind-libdw.c), done
 * here once per process rather than once per sample.  The CFI comes from
 * each module's .eh_frame (or its debug file's .debug_frame).
 */
#ifndef PTSCOPE_REPLAY_SAMPLE_UNWIND_H
#define PTSCOPE_REPLAY_SAMPLE_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "src/recording/samples.h"
#include "src/replay/sample_modules.h"

struct sunw;

/* An unwinder for the processes of @mods (borrowed: it must outlive the
 * unwinder).  Returns 0 or PS_ERR_NOMEM. */
int sunw_new(const struct smod_set *mods, struct sunw **out);
void sunw_free(struct sunw *u); /* accepts NULL */

/* Unwind sample @smp of thread @tid of @pid in its image @epoch, whose
 * registers follow
 * @regs_mask (PERF_SAMPLE_REGS_USER bits): the code addresses of its
 * frames, innermost first (the sampled ip, then return addresses), into
 * @pcs (at most @max).  Returns how many (0: it could not start: no
 * registers or stack, no module at the ip). */
size_t sunw_unwind(struct sunw *u, uint64_t pid, uint32_t epoch, uint64_t tid,
		   uint64_t regs_mask, const struct recs_sample *smp,
		   uint64_t *pcs, size_t max);

#endif /* PTSCOPE_REPLAY_SAMPLE_UNWIND_H */

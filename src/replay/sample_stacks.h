/* SPDX-License-Identifier: MIT */
/* The call stack of one sample (prefix sstk_), chosen per module:
 *  - the kernel's frame-pointer chain, when every frame it walked
 *    through keeps frame pointers (sample_modules.h) — or the walk only
 *    passed code without them at a thread's bottom (_start,
 *    __libc_start_call_main, start_thread, clone3), where stacks end;
 *  - else the LBR call stack, where the CPU recorded one;
 *  - else DWARF unwinding of the copied user stack (sample_unwind.h),
 *    joined to the frame-pointer chain where the copy ends: the first
 *    DWARF frame that the chain also holds is where the chain takes over;
 *  - the frame-pointer chain as it is when nothing better works.
 * Each frame is symbolized with the decoder's symbolizer
 * (dec_symbolize); code without a symbol is named after its module.  The result
 * names its unwinder: "fp", "dwarf", "lbr".
 */
#ifndef PTSCOPE_REPLAY_SAMPLE_STACKS_H
#define PTSCOPE_REPLAY_SAMPLE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/decoder.h"
#include "decoder/symbols.h"
#include "src/recording/samples.h"
#include "src/replay/sample_modules.h"
#include "src/replay/sample_unwind.h"

#define SSTK_MAX 256 /* frames kept per sample */

enum sstk_unwinder { SSTK_FP, SSTK_DWARF, SSTK_LBR, SSTK_N };

/* One sample's stack: frames innermost first. */
struct sstk {
	size_t n;
	uint64_t pc[SSTK_MAX];		     /* code address (return addr) */
	const struct sym_func *fn[SSTK_MAX]; /* its function */
	enum sstk_unwinder how;
};

/* What the stacks need: the decoder session with the recording's
 * modules (symbols), the modules (frame pointers) and the unwinder. */
struct sstk_ctx {
	struct dec_session *ds;
	struct smod_set *mods;
	struct sunw *unw;
	uint32_t epoch; /* the image the current samples ran in */
	/* Code without symbols (the vDSO, a stripped module) is one
	 * function per module here, not one per address ("[vdso]+0xb46"),
	 * so consecutive samples in it make one span. */
	struct sym_func standin[16];
	size_t nstandin;
};

/* The stack of sample @smp of thread (@pid, @tid), registers per
 * @regs_mask, into @out.  Returns 0 (out->n may be 0: nothing usable). */
int sstk_build(struct sstk_ctx *c, uint64_t pid, uint64_t tid,
	       uint64_t regs_mask, const struct recs_sample *smp,
	       struct sstk *out);

/* "fp", "dwarf", "lbr". */
const char *sstk_unwinder_name(enum sstk_unwinder u);

#endif /* PTSCOPE_REPLAY_SAMPLE_STACKS_H */

/* SPDX-License-Identifier: MIT */
/* The call-stack builder (prefix stk_): one thread's branch events
 * (decoder/branch.h) → span BEGIN/END events and error instants on a
 * ps_writer, streamed as they are found (memory ∝ stack depth).
 * Internal to the decoder library.
 *
 * Rules, in the order they are tried for each event:
 *  - BR_CALL pushes the callee; BR_JUMP into another function's entry
 *    replaces the top frame (tail call, PLT stub → function).
 *  - BR_RETURN pops the frame whose saved return address matches the
 *    target, closing every frame above it (longjmp/unwinding through ret);
 *    failing that, the innermost frame below the top whose function holds
 *    the target becomes the top; a return with no known caller creates
 *    the caller as an inferred frame (arg "inferred": true) that began
 *    before the thread's first time: the k-th one discovered begins at
 *    first_ts - k ns, so outer frames begin strictly earlier.
 *  - A jump or event whose ip lies in a function of an outer frame closes
 *    the frames above it (longjmp, exception landing pads).
 *  - BR_SYSCALL / BR_DISABLE / BR_INTERRUPT without a handler open a
 *    "syscall" / "[kernel]" span that the next BR_ENABLE closes; an
 *    enable elsewhere than where the thread stopped is a signal delivery:
 *    "[signal]" + the handler are pushed, and the return to the stopped ip
 *    (after rt_sigreturn) closes both.
 *  - BR_PTWRITE: a data window's values (decoder/args.h) go to the top
 *    frame when they name its function (its arguments, its return value)
 *    and show as args of its END event; a value the program wrote itself
 *    (ptscope_write) is a "ptscope_write" instant.
 *  - BR_OVERFLOW / BR_ERROR close every frame at the last good time, leave
 *    an instant naming the problem, and the next ip starts a fresh,
 *    inferred stack; BR_END closes every frame.
 */
#ifndef PTSCOPE_DECODER_STACK_H
#define PTSCOPE_DECODER_STACK_H

#include <stdint.h>

#include "decoder/branch.h"
#include "decoder/stack_config.h"

struct stk;

/* Returns 0, PS_ERR_INVAL (NULL writer or lookup), PS_ERR_NOMEM. */
int stk_new(const struct stk_config *cfg, struct stk **out);
void stk_free(struct stk *s); /* accepts NULL; writes nothing */

/* Feed one event.  Returns 0, PS_ERR_NOMEM, or the writer's error. */
int stk_feed(struct stk *s, const struct br_event *ev);

/* br_sink_fn adapter: @ctx is a struct stk. */
int stk_sink(void *ctx, const struct br_event *ev);

/* Close every open frame at @ts (as BR_END does; never before the last
 * event); the next event starts a fresh stack after @ts.  Returns 0 or
 * the writer's error. */
int stk_close_all(struct stk *s, uint64_t ts);

/* 1 if the thread, switched out with this stack, may go on at @ip when it
 * is switched back in: nothing is open, @ip is where it stopped (the
 * return of its syscall, the interrupted instruction, a signal's return
 * point), @ip lies in the innermost function, or it stopped in the kernel
 * and @ip is a function's entry (a signal handler).  0: the trace lost
 * what the thread did in between; the caller closes the stack. */
int stk_resume_fits(const struct stk *s, uint64_t ip);

/* Frames currently open (for tests). */
unsigned stk_depth(const struct stk *s);

const struct stk_counts *stk_get_counts(const struct stk *s);

/* The function of the innermost open frame, or NULL when that frame is
 * not a function (syscall, kernel, signal), is hidden (beyond max_depth)
 * or there is none.  For the inline-frame layer. */
const struct sym_func *stk_top_func(const struct stk *s);

#endif /* PTSCOPE_DECODER_STACK_H */

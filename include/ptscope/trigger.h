/* SPDX-License-Identifier: MIT */
/* ptscope_trigger(): a stop indicator for your own code.
 *
 * Call it where something interesting happened (the slow path, the bad
 * state).  Run the program under `ptscope run -t . -- ./prog`, or attach with
 * `ptscope attach -t . -p PID`, and ptscope takes a snapshot of the trace
 * each time it is called (a hardware breakpoint on this function; the
 * program is never modified).  @reason (may be NULL) is shown on the trigger
 * mark in the trace.  Untraced, the call costs a few cycles.
 *
 * Header-only: a weak, never-inlined definition, so including this header in
 * several files of a program still yields one function.
 */
#ifndef PTSCOPE_TRIGGER_H
#define PTSCOPE_TRIGGER_H

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((weak, noinline, used)) void ptscope_trigger(const char *reason)
{
	/* An empty asm the compiler cannot see through keeps the call and
	 * the function body from being optimised away. */
	__asm__ volatile("" : : "r"(reason) : "memory");
}

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_TRIGGER_H */

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

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((weak, noinline, used)) void ptscope_trigger(const char *reason)
{
	/* An empty asm the compiler cannot see through keeps the call and
	 * the function body from being optimised away. */
	__asm__ volatile("" : : "r"(reason) : "memory");
}

/* ptscope_write(): put a value of your choice into the trace.
 *
 * Where the CPU has PTWRITE (CPUID.(EAX=14H,ECX=0):EBX[4]) it runs
 * PTWRITE, which Intel PT records as a PTW packet when the intel-pt
 * backend enabled them; elsewhere it does nothing, and the emulated
 * backends (qemu, step) recognise the call and write the same packet.
 * The value shows as a "ptscope_write" instant on the writing thread.
 * Weak and never inlined, like ptscope_trigger(). */
__attribute__((weak, noinline, used)) void ptscope_write(uint64_t value)
{
	static int has_ptwrite = -1;

	if (has_ptwrite < 0) {
		unsigned a = 0x14, b = 0, c = 0, d = 0, max;

		__asm__ volatile("cpuid"
				 : "=a"(max), "=b"(b), "=c"(c), "=d"(d)
				 : "a"(0), "c"(0));
		b = 0;
		if (max >= 0x14)
			__asm__ volatile("cpuid"
					 : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
		has_ptwrite = (b >> 4) & 1;
	}
	if (has_ptwrite)
		__asm__ volatile("ptwrite %0" : : "r"(value) : "memory");
	else
		__asm__ volatile("" : : "r"(value) : "memory");
}

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_TRIGGER_H */

/* SPDX-License-Identifier: MIT */
/* Kernel masking (prefix km_): rewrite an Intel PT stream recorded with
 * user and kernel tracing into the stream user-only tracing (intel_pt//u)
 * would have produced, for decoding without the kernel's code.  Internal
 * to the perf.data importer (perfdata_import.c).
 *
 * Without the kernel image, libipt stops at the first kernel address
 * ("no memory mapped") and can only resume at the next PSB, losing the
 * user code in between.  Hardware filtering to ring 3 instead reports a
 * kernel entry as TIP.PGD (IP suppressed), the return as TIP.PGE (user
 * IP), and nothing in between but timing.  The rewrite is done in place,
 * packet by packet, without changing any length:
 *   TIP to kernel, from user      → TIP.PGD, IP suppressed (+ PAD bytes)
 *   TIP to user, from kernel      → TIP.PGE, same IP bytes
 *   TIP.PGE to kernel             → PAD (tracing starts in the kernel)
 *   TNT, TIP, TIP.PGD in kernel   → PAD
 *   FUP at a kernel IP            → PAD (PSB+, interrupts in the kernel)
 * Timing (TSC, MTC, CYC, TMA, CBR), PSB, MODE, PIP, OVF and the rest are
 * kept.  The IP compression of the packets that are kept stays valid: a
 * user IP after kernel code always comes in full or sign-extended form
 * (the upper bits change), and everything compressed against a kernel IP
 * is masked.
 */
#ifndef PTSCOPE_PERFDATA_KERNELMASK_H
#define PTSCOPE_PERFDATA_KERNELMASK_H

#include <stddef.h>
#include <stdint.h>

/* Mask the kernel parts of @buf (@len bytes) in place.  Returns the
 * number of packets rewritten (0: no kernel code in the stream),
 * PS_ERR_INVAL, PS_ERR_NOMEM. */
int km_mask_kernel(uint8_t *buf, size_t len);

/* 1 when @ip is a kernel address (x86-64: the upper canonical half). */
static inline int km_is_kernel(uint64_t ip)
{
	return (int64_t)ip < 0;
}

#endif /* PTSCOPE_PERFDATA_KERNELMASK_H */

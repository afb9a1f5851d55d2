/* SPDX-License-Identifier: MIT */
/* Hardware execution breakpoints on one thread (prefix bp_), the trigger
 * mechanism: perf_event_open(PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) with a
 * sample per hit (tid, CLOCK_MONOTONIC time, ip, user rdi) in a small
 * mmap'ed ring.  The target is never modified, and the breakpoint fires
 * even while the thread is single-stepped under ptrace.
 *
 *   bp_open(tid, addr, &bp);
 *   poll on bp_fd(bp) (POLLIN after each hit) or test bp_pending(bp);
 *   bp_read(bp, on_hit, ctx);
 *   bp_close(bp);
 */
#ifndef PTSCOPE_RECORD_BP_H
#define PTSCOPE_RECORD_BP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bp;

/* One hit of the breakpoint. */
struct bp_sample {
	uint32_t pid, tid;
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint64_t ip;	  /* == the breakpoint address */
	uint64_t rdi;	  /* first argument (ptscope_trigger's reason) */
};

/* Called per sample by bp_read(); a nonzero return stops the read and is
 * returned by bp_read() (records not yet handed over stay in the ring). */
typedef int (*bp_sample_fn)(void *ctx, const struct bp_sample *s);

/* Set an execution breakpoint at @addr on thread @tid (this thread if 0).
 * Returns 0 or:
 *   PS_ERR_PERM      not allowed (perf_event_paranoid; run as root)
 *   PS_ERR_LIMIT     all 4 debug registers of the thread are in use
 *   PS_ERR_NOT_FOUND no such thread
 *   PS_ERR_NO_HW     the kernel has no hardware breakpoint support
 *   PS_ERR_INVAL     @addr unusable (0 or kernel address), NULL @out
 *   PS_ERR_IO, PS_ERR_NOMEM */
int bp_open(pid_t tid, uint64_t addr, struct bp **out);

/* Remove the breakpoint and free @bp.  Accepts NULL. */
void bp_close(struct bp *bp);

/* The perf event fd, for poll(2) (readable after each hit). */
int bp_fd(const struct bp *bp);

uint64_t bp_addr(const struct bp *bp);
pid_t bp_tid(const struct bp *bp);

/* 1 if samples are waiting in the ring, else 0 (one load; no syscall). */
int bp_pending(const struct bp *bp);

/* Hand every waiting sample to @fn in order and free their ring space.
 * Returns the number of samples handed over, @fn's nonzero return value,
 * or PS_ERR_FORMAT (corrupt ring record). */
int bp_read(struct bp *bp, bp_sample_fn fn, void *ctx);

/* Samples the kernel dropped because the ring was full (PERF_RECORD_LOST),
 * summed over all reads so far.  The kernel reports a loss with the first
 * record it can write once the ring has room again; until then only
 * bp_count() minus the samples read shows it. */
uint64_t bp_lost(const struct bp *bp);

/* Total hits so far (the counter, read(2)), including lost ones.
 * Returns 0 or PS_ERR_IO. */
int bp_count(const struct bp *bp, uint64_t *count);

/* Arm (1) or disarm (0) without closing.  Returns 0 or PS_ERR_IO. */
int bp_enable(struct bp *bp, int on);

#endif /* PTSCOPE_RECORD_BP_H */

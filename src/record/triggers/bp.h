/* SPDX-License-Identifier: MIT */
/* Execution breakpoints on one thread (prefix bp_), the trigger
 * mechanism: perf_event_open(PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) with a
 * sample per hit (tid, CLOCK_MONOTONIC time, ip, user rdi) in a small
 * mmap'ed ring.  The target is never modified, and the breakpoint fires
 * even while the thread is single-stepped under ptrace.  On a machine
 * whose debug registers never fire (some VMs), a uprobe event of the same
 * shape stands in (bp_hw_fires).
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

/* Do hardware breakpoints fire on this machine?  Some virtual machines
 * take the debug registers and never fire them; found once per process by
 * a breakpoint on ptscope's own code.  1, 0, or a negative PS_ERR_* when
 * none can be set (bp_open's errors). */
int bp_hw_fires(void);

/* Set an execution breakpoint at @addr on thread @tid (this thread if 0):
 * a hardware one, or where they never fire (bp_hw_fires() == 0) a uprobe
 * event (the kernel puts an int3 at @addr in the process's copy of the
 * page), which needs @addr in a file mapping and has no limit of 4.
 * Returns 0 or:
 *   PS_ERR_PERM      not allowed (perf_event_paranoid; run as root)
 *   PS_ERR_LIMIT     all 4 debug registers of the thread are in use
 *   PS_ERR_NOT_FOUND no such thread
 *   PS_ERR_NO_HW     the kernel has no hardware breakpoint support
 *   PS_ERR_INVAL     @addr unusable (0 or kernel address), NULL @out
 *   PS_ERR_IO, PS_ERR_NOMEM */
int bp_open(pid_t tid, uint64_t addr, struct bp **out);

/* Turn @attr, a breakpoint's perf_event_attr at @addr, into the uprobe
 * that stands in for it (the uprobe PMU, the file and offset @addr is
 * mapped from in thread @tid's process, 0: this one); the file's path is
 * kept in @path (@size bytes), which must outlive the perf_event_open
 * call.  Returns 0, PS_ERR_NO_HW (no uprobes), PS_ERR_INVAL (@addr not in
 * a file mapping), PS_ERR_NOT_FOUND (no such thread). */
struct perf_event_attr;
int bp_uprobe_attr(struct perf_event_attr *attr, pid_t tid, uint64_t addr,
		   char *path, size_t size);

/* bp_open as a uprobe whatever the debug registers do. */
int bp_open_uprobe(pid_t tid, uint64_t addr, struct bp **out);

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

/* 1 when @bp is a uprobe standing in for a debug register. */
int bp_is_uprobe(const struct bp *bp);

/* Arm (1) or disarm (0) without closing.  Returns 0 or PS_ERR_IO. */
int bp_enable(struct bp *bp, int on);

#endif /* PTSCOPE_RECORD_BP_H */

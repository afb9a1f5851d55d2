/* SPDX-License-Identifier: MIT */
/* One virtual timeline for every thread the emulated backend steps
 * (prefix vclk_; see docs/emulated-backend.md, "Time across threads").
 *
 * Each thread's clock is its emulator clock (0.5 ns per step plus system
 * call time).  This module keeps the clocks of different threads
 * comparable:
 *  - a new thread starts at its creator's clock at clone (step/step.c);
 *  - a thread whose clock runs more than VCLK_WINDOW_NS ahead of the
 *    slowest thread that is stepping user code is parked (not resumed)
 *    until the others catch up or block;
 *  - a system call lasts the real time the recorder spent waiting while
 *    no thread was being stepped (the tracer's slowness and its own work
 *    removed), or its full real time if it
 *    ended by its own timeout (a sleep), minus the cost of the step
 *    itself; and it ends no earlier than the clock of any thread that
 *    stepped while it was in the kernel (one of them may have woken it).
 */
#ifndef PTSCOPE_RECORD_VCLOCK_H
#define PTSCOPE_RECORD_VCLOCK_H

#include <stdint.h>

#include "src/record/core/core.h"

/* How far (virtual ns) a thread may run ahead of the slowest stepping
 * thread: 2,000 instructions.  Cross-thread order is exact to this. */
#define VCLK_WINDOW_NS 1000
/* Before parked threads go on because every other thread is in a system
 * call, the recorder waits this long (real ns) for a short call to come
 * back, so that it does not end after the parked threads' clocks. */
#define VCLK_GRACE_NS 100000
/* One step in this many has its real cost measured (VCLK step_min). */
#define VCLK_SAMPLE_EVERY 64

void vclk_init(struct vclk *v);

/* The recorder waited @real_ns in waitpid: if no thread was stepping user
 * code meanwhile, only the kernel ran (system calls at native speed). */
static inline void vclk_waited(struct vclk *v, uint64_t real_ns)
{
	v->k_ns += real_ns;
}

/* @t is resumed at real time @real; @in_sys: its next step runs a system
 * call.  A thread resumed from an event stop inside a system call (clone,
 * a signal) keeps its call's start. */
void vclk_resume(struct rec_session *s, struct rec_thr *t, uint64_t real,
		 int in_sys);

/* @t no longer steps user code: it exits, execs, crashed or is detached. */
void vclk_leave(struct rec_session *s, struct rec_thr *t);

/* @t's step came back: it is now the newest step. */
static inline void vclk_stepped(struct vclk *v, struct rec_thr *t)
{
	t->last_seq = ++v->seq;
}

/* A plain step of @t took @real_cost ns of real time: keep the least. */
void vclk_sample(struct vclk *v, uint64_t real_cost);

/* 1 if system call @nr, returning @ret (rax), ended by its own timeout
 * (nanosleep, a futex or poll that timed out): its real time is real. */
int vclk_timed_out(uint64_t nr, int64_t ret);

/* @t's system call returned, seen at real time @real; @before: @t's clock
 * before the step; @timed: see vclk_timed_out().  Sets and returns
 * t->sys_ns, the trace time the call took, and clears t->in_sys. */
uint64_t vclk_syscall_end(struct rec_session *s, struct rec_thr *t,
			  uint64_t real, uint64_t before, int timed);

/* 1 if @t, whose clock is @now, runs too far ahead and must be parked.
 * Cheap unless @t is ahead of the cached floor. */
int vclk_ahead(struct rec_session *s, struct rec_thr *t, uint64_t now);

/* 1 if a thread whose clock is @now is within the window of the floor
 * last computed (a parked thread may go on). */
int vclk_may_run(const struct rec_session *s, uint64_t now);

/* Hold @t (stopped by the caller): it counts as stepping user code, at
 * its clock, until the caller resumes it. */
void vclk_park(struct rec_session *s, struct rec_thr *t);

/* Recompute the floor: the least clock of threads stepping user code
 * (parked ones included); UINT64_MAX if there are none. */
uint64_t vclk_floor(struct rec_session *s);

#endif /* PTSCOPE_RECORD_VCLOCK_H */

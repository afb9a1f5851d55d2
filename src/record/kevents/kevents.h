/* SPDX-License-Identifier: MIT */
/* Kernel events: the one way in to this part of the recorder.
 *
 * Recording (prefix rkev_, kevents.c): the eBPF sidecar's events
 * (src/bpf/sidecar.h) put on the trace's clock and kept, bounded, until a
 * snapshot stores them in SIDECAR sections (docs/recording-format.md).
 * rkev_open registers this part with the core (struct rec_extension), so
 * it hears of every new process and adds its sections to each snapshot.
 *
 * Clock.  On a backend whose threads run free (intel-pt) the trace clock
 * is CLOCK_MONOTONIC, like bpf_ktime_get_ns(): times are kept as they
 * are.  Under the single-step backend the trace runs on a virtual clock;
 * the recorder tells rkev_step() about every step of a thread, and the
 * thread's events are placed on it (docs/events.md, "Time"):
 *  - an event inside a system call goes on that call's virtual interval,
 *    proportionally between the call's own sys_enter and sys_exit kernel
 *    times (or the recorder's real start and end of the step);
 *  - an event during any other step (a page fault, a signal delivery)
 *    goes at the start of that step.
 * Events of threads the backend does not trace are dropped (counted).
 *
 * Memory: at most RKEV_KEEP events are kept (the newest); older ones are
 * outside any snapshot window that matters and are dropped (counted).
 */
#ifndef PTSCOPE_RECORD_KEVENTS_KEVENTS_H
#define PTSCOPE_RECORD_KEVENTS_KEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptscope/recording.h"
#include "ptscope/writer.h"

#define RKEV_KEEP 32768	   /* mapped events kept */
#define RKEV_PENDING 16384 /* events waiting for their thread's step */

/* SIDECAR section types (docs/recording-format.md). */
enum {
	RKEV_SEC_EVENTS = 1, /* kernel events on the trace clock */
	RKEV_SEC_DESCS = 2,  /* custom events: names and fields */
	RKEV_SEC_STATUS = 3  /* lost/dropped counts, features */
};

struct rec_session;
struct rec_thr;

/* Start the sidecar for s->o (events, event_specs).  When the kernel
 * cannot (no root, BTF or BPF), one notice says so and recording goes on
 * without it: returns 0.  Returns PS_ERR_INVAL/NOT_FOUND for a --event
 * that cannot be traced (user input), PS_ERR_NOMEM. */
int rkev_open(struct rec_session *s);
void rkev_close(struct rec_session *s);

/* Step backend: @t's last step ran from trace time @v0 to @v1; @syscall:
 * it ran a system call between real times @r0 and @r1. */
void rkev_step(struct rec_session *s, struct rec_thr *t, uint64_t v0,
	       uint64_t v1, int syscall, uint64_t r0, uint64_t r1);

/* qemu backend: @t made guest system call @nr from trace time @v0 to
 * @v1, real times @r0 to @r1 (measured by the emulator around it); its
 * previous call ended at trace time @vp, real time @rp (0: none).  Its
 * kernel events within [r0, r1] go on [v0, v1] (the call's own entry and
 * exit as anchors; the emulator's other system calls left out); earlier
 * ones just after vp (v0 if none), except the emulator's own calls and
 * its time off the CPU between guest calls. */
void rkev_span(struct rec_session *s, struct rec_thr *t, int64_t nr,
	       uint64_t v0, uint64_t v1, uint64_t r0, uint64_t r1, uint64_t vp,
	       uint64_t rp);

/* An address range [start, end). */
struct rkev_range {
	uint64_t start, end;
};
/* Page faults taken by code in @r (an emulator's own objects, kept by the
 * caller) are not the program's: drop them. */
void rkev_set_foreign(struct rec_session *s, const struct rkev_range *r,
		      size_t n);

/* Backends opt in with rec_backend.kernel_events = 1 and feed events
 * with one of the two calls below: rkev_step (virtual clock) or
 * rkev_poll (CLOCK_MONOTONIC).  A virtual-clock backend that does not
 * single-step (qemu) calls rkev_step at the end of each system call with
 * its virtual and real start and end (syscall 1), and with syscall 0 when
 * events outside calls (faults, signals) should go at a point of its
 * clock.
 *
 * Free-running backends: take what is in the ring (trace clock =
 * CLOCK_MONOTONIC).  Call it now and then (each loop turn). */
void rkev_poll(struct rec_session *s);

/* Free-running backends that sleep in poll(2): an fd readable when
 * events wait (a slow call to act on at once), or -1 when kernel events
 * are off. */
int rkev_wait_fd(const struct rec_session *s);

/* The sidecar, or NULL when kernel events are off. */
struct sidecar *rkev_sidecar(const struct rec_session *s);

/* Replay (prefix krp_, kreplay.c, kreplay_window.c): kernel events of a
 * recording → trace events.  The SIDECAR sections are merged with
 * the function spans on the trace clock:
 *  - system calls: spans named by the call ("openat", "write"), category
 *    "syscall", with decoded arguments (fd, count, path) and the return
 *    value or errno name, on the thread's own track — they nest inside
 *    the function that made the call;
 *  - kernel functions (--event kprobe:F): spans "F", category "kernel";
 *  - scheduler: off-CPU spans ("preempted", "sleeping", "blocked (D)")
 *    with who woke the thread, on a track of its own per thread, named
 *    "COMM scheduler" (its tid is KRP_SCHED_TID | tid), and a "wakeup"
 *    flow arrow from the waking thread when it is in the same process;
 *  - block I/O: issue → completion spans on a "COMM block I/O" track
 *    (KRP_BLOCK_TID | tid);
 *  - instants: signals sent and delivered, page faults, exec, fork, exit,
 *    any --event tracepoint with its fields as arguments;
 *  - metadata "kernel_events" (what was on) and "kernel_events_lost";
 *    lost events also as an instant.
 * Events of a thread before its first function span are outside the
 * snapshot's window and left out.
 */
#define KRP_SCHED_TID PS_TID_SCHED
#define KRP_BLOCK_TID PS_TID_BLOCK
/* Flow ids of wakeup arrows (waker → woken thread, same process). */
#define KRP_FLOW_BASE 0x6b00000000000000ull

struct krp_tap;

/* A writer that passes everything to @inner and notes each thread's
 * first span time (the window).  Free with krp_tap_free (not finish). */
int krp_tap_new(struct ps_writer *inner, struct krp_tap **out);
struct ps_writer *krp_tap_writer(struct krp_tap *tap);
/* The first span time of thread @tid seen through @tap (NULL: none), or
 * 0 when unknown (then nothing is left out). */
uint64_t krp_tap_first(const struct krp_tap *tap, uint64_t tid);
/* Whether a span of thread @tid seen through @tap is open at @ts: 1, 0
 * (none, or the thread had no span), -1 (unknown: memory ran out). */
int krp_tap_open_at(const struct krp_tap *tap, uint64_t tid, uint64_t ts);
/* Narrow [*t0, *t1] to the longest piece of it that holds no begin or
 * end of a span of thread @tid seen through @tap, not even at its start
 * or end, so that a span there nests with the thread's spans. */
void krp_tap_clamp(const struct krp_tap *tap, uint64_t tid, uint64_t *t0,
		   uint64_t *t1);
/* The producer is done (the times above are sorted): end any string-stability
 * epoch it left open on the inner writer (kernel events' strings are not
 * stable). */
void krp_tap_end(struct krp_tap *tap);
void krp_tap_free(struct krp_tap *tap);

/* What krp_write wrote: kernel events, and events lost while recording. */
struct krp_counts {
	uint64_t events;
	uint64_t lost;
};

/* Write the kernel events of @in to @w; @tap (may be NULL: no window)
 * gives each thread's window.  Returns 0, PS_ERR_FORMAT (a damaged
 * SIDECAR section), PS_ERR_NOMEM or what @w returned.  Adds to @n. */
int krp_write(const struct recording *in, struct ps_writer *w,
	      const struct krp_tap *tap, struct krp_counts *n);

#endif /* PTSCOPE_RECORD_KEVENTS_KEVENTS_H */

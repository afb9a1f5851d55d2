/* SPDX-License-Identifier: MIT */
/* Kernel events of a recording → trace events (prefix krp_).  The
 * SIDECAR sections (kevents.h, docs/recording-format.md) are merged with
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
#ifndef PTSCOPE_RECORD_KREPLAY_H
#define PTSCOPE_RECORD_KREPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/writer.h"
#include "src/replay/replay.h"

#define KRP_SCHED_TID 0x40000000u
#define KRP_BLOCK_TID 0x20000000u
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
/* The producer is done: end any string-stability epoch it left open on
 * the inner writer (kernel events' strings are not stable). */
void krp_tap_end(struct krp_tap *tap);
void krp_tap_free(struct krp_tap *tap);

/* Write the kernel events of @in to @w; @tap (may be NULL: no window)
 * gives each thread's window.  Returns 0, PS_ERR_FORMAT (a damaged
 * SIDECAR section), PS_ERR_NOMEM or what @w returned.  Adds to @st. */
int krp_write(const struct replay_input *in, struct ps_writer *w,
	      const struct krp_tap *tap, struct replay_stats *st);

#endif /* PTSCOPE_RECORD_KREPLAY_H */

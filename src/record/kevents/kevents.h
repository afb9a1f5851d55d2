/* SPDX-License-Identifier: MIT */
/* Kernel events in the recorder (prefix rkev_): the eBPF sidecar's
 * events (src/bpf/sidecar.h) put on the trace's clock and kept, bounded,
 * until a snapshot stores them in SIDECAR sections
 * (docs/recording-format.md).
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
#ifndef PTSCOPE_RECORD_KEVENTS_H
#define PTSCOPE_RECORD_KEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptscope/recording.h"

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

/* Follow process @pid (rec_proc_add). */
void rkev_add_proc(struct rec_session *s, pid_t pid);

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
	       uint64_t v0, uint64_t v1, uint64_t r0, uint64_t r1,
	       uint64_t vp, uint64_t rp);

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

/* The SIDECAR sections for a snapshot: *secs (malloc'ed array of *n;
 * each bytes malloc'ed).  Free with rkev_sections_free().  0 sections
 * when the sidecar is off. */
int rkev_sections(struct rec_session *s, struct rec_sidecar **secs, size_t *n);
void rkev_sections_free(struct rec_sidecar *secs, size_t n);

/* The sidecar, or NULL when kernel events are off. */
struct sidecar *rkev_sidecar(const struct rec_session *s);

/* Events lost (ring full) so far; 0 when off. */
uint64_t rkev_lost(const struct rec_session *s);

#endif /* PTSCOPE_RECORD_KEVENTS_H */

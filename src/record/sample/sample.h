/* SPDX-License-Identifier: MIT */
/* The sample backend (prefix smpb_): no PT at all, but call-stack samples
 * at a fixed rate from one perf event per thread — hardware cycles where
 * a PMU exists, else the software CPU clock — each with the frame-pointer
 * call chain the kernel walks (PERF_SAMPLE_CALLCHAIN), the user registers
 * and a copy of the top of the user stack (for DWARF unwinding of code
 * without frame pointers, done when decoding: src/replay/), and the LBR
 * call stack where the CPU has one.  Each thread's ring is in overwrite
 * mode (sample_ring.h): the snapshot ring.  Threads run free under
 * ptrace (src/record/ptrace/freerun.h); triggers are hardware
 * breakpoints (the breakpoint trigger kind) and uprobe timers (the
 * latency kind, through the eBPF sidecar); kernel events are on
 * CLOCK_MONOTONIC, like the samples.  docs/sample-backend.md explains.
 */
#ifndef PTSCOPE_RECORD_SAMPLE_H
#define PTSCOPE_RECORD_SAMPLE_H

#include <stdint.h>

#include "src/record/sample/sample_probe.h"
#include "src/record/sample/sample_ring.h"

struct rec_session;
struct rec_thr;

/* Backend state (s->bk). */
struct smpb {
	struct sprobe probe;
	struct sring_config rc;
	const char *event; /* "cycles", "cpu-clock" */
	unsigned hz;
	uint32_t stack; /* user stack bytes copied per sample */
	unsigned turns; /* service calls (pending triggers are retried) */
};

/* Per-thread state (t->bk). */
struct smpb_thr {
	struct sring ring;
};

/* User stack bytes copied with each sample: enough for the frames of
 * code without frame pointers above the sampled one (the frame-pointer
 * chain covers the rest, docs/sample-backend.md). */
#define SMPB_STACK_BYTES 4096

/* Probe the machine, pick the event and build the config for s->o (no
 * thread yet); sets s->bk.  Returns 0, PS_ERR_NO_HW (no sampling event
 * opens here: the sentence says why), PS_ERR_INVAL (a bad option). */
int smpb_open(struct rec_session *s);

/* Start sampling stopped thread @t.  Returns 0 or sring_open's errors. */
int smpb_thread_start(struct rec_session *s, struct rec_thr *t);

/* @t ends: its sampling stops, its ring stays for the snapshot. */
void smpb_thread_end(struct rec_session *s, struct rec_thr *t);

extern const struct rec_backend rec_backend_sample;

#endif /* PTSCOPE_RECORD_SAMPLE_H */

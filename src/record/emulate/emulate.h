/* SPDX-License-Identifier: MIT */
/* The emulated PT backend's core (prefix emu_): turns a single-stepped
 * execution into genuine Intel PT packets, written with libipt's encoder
 * into a per-thread snapshot ring, on a virtual clock.
 *
 * It does not drive ptrace itself: the recorder (src/record/) single-steps
 * each thread and tells emu_step() what ran.  It knows every instruction,
 * so it can also write the exact call/return sequence (ground truth) for
 * tests.  Files: src/record/emulate/ (insn.c: classify instructions with a
 * per-address cache; encode.c: packets; clock.c: virtual clock; ring.c:
 * snapshot ring; truth.c: ground truth).
 *
 * Virtual clock: each single-step advances it by EMU_PS_PER_INSN
 * picoseconds (see docs/emulated-backend.md); the trace time a syscall
 * took (kernel_ns, worked out by the recorder: src/record/core/core.h,
 * vclock.c) is added.  The tracer's own slowness never shows.
 *
 * Not thread-safe: one recorder thread drives all emu_ objects.
 */
#ifndef PTSCOPE_RECORD_EMULATE_H
#define PTSCOPE_RECORD_EMULATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Reads target memory (code bytes); returns bytes read or <0.
 * Called only on an instruction-cache miss. */
typedef ssize_t (*emu_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Virtual time per single-step: 0.5 ns, i.e. a 2 GHz CPU at one
 * instruction per cycle; time = steps * EMU_PS_PER_INSN / 1000 (integer). */
#define EMU_PS_PER_INSN 500
/* A TSC packet precedes the next packet once the virtual clock has moved
 * this far since the last TSC (16 instructions). */
#define EMU_TSC_THRESHOLD_NS 8
/* A PSB+ is inserted after this many bytes of trace (like hardware's
 * PSBFreq), or after ring_size / 4 if that is smaller. */
#define EMU_PSB_PERIOD 4096
/* The smallest ring_size emu_process_new() accepts. */
#define EMU_RING_MIN 1024

struct emu_config {
	size_t ring_size;     /* bytes of PT kept per thread (snapshot size) */
	uint64_t start_ns;    /* virtual clock at start (CLOCK_MONOTONIC now) */
	FILE *truth;	      /* ground truth output, or NULL */
	emu_read_fn read_mem; /* how to read the target's code */
	void *read_ctx;
	int dis_retc; /* IA32_RTIT_CTL.DisRETC: every RET a TIP; 0: RETs
		       * compressed as the CPU does (thread.c) */
};

/* Shared per process: the instruction cache (code is shared by threads). */
struct emu_process;
/* Per thread: encoder state, ring, clock. */
struct emu_thread;

int emu_process_new(const struct emu_config *cfg, pid_t pid,
		    struct emu_process **out);
void emu_process_free(struct emu_process *p);
/* Code at [addr, addr+len) changed (munmap, exec, JIT): drop cached insns. */
void emu_process_invalidate(struct emu_process *p, uint64_t addr, uint64_t len);

/* A thread starts being traced at @ip (PSB+, TIP.PGE) at virtual time
 * @now_ns (0: cfg->start_ns).  Returns 0, PS_ERR_INVAL, PS_ERR_NOMEM. */
int emu_thread_new(struct emu_process *p, pid_t tid, uint64_t ip,
		   uint64_t now_ns, struct emu_thread **out);
void emu_thread_free(struct emu_thread *t);

/* The instruction at @ip executed and control is now at @next_ip.
 * @kernel_ns: trace time spent in the kernel during this step if the
 * instruction was a syscall (else 0).  A rep string instruction that
 * single-steps in place (@next_ip == @ip) is one more iteration of the
 * same instruction.  If @ip is not where the previous step left the
 * thread, or @next_ip is a place the instruction cannot branch to, the
 * move is recorded as an asynchronous branch (FUP + TIP) so the trace
 * stays decodable.  Returns 0, PS_ERR_INVAL (NULL, @ip == 0),
 * PS_ERR_TARGET (code at @ip unreadable), PS_ERR_NOMEM. */
int emu_step(struct emu_thread *t, uint64_t ip, uint64_t next_ip,
	     uint64_t kernel_ns);

struct emu_insn;
/* emu_step() for an instruction the caller decoded already (the QEMU
 * plugin classifies each translated block's last instruction once). */
int emu_step_insn(struct emu_thread *t, const struct emu_insn *in,
		  uint64_t next_ip, uint64_t kernel_ns);

/* Block-level emulation: @n instructions from @start on ran as
 * straight-line code (no branch among them, so no packets), and the
 * thread is now at @last, the block's final instruction, which a later
 * emu_step_insn() completes.  Returns 0 or PS_ERR_* (as emu_step). */
int emu_block(struct emu_thread *t, uint64_t start, uint64_t last, uint64_t n);

/* The last @n instructions counted by emu_block() did not run (a fault
 * in the middle of the block): the thread is at @ip. */
void emu_unrun(struct emu_thread *t, uint64_t ip, uint64_t n);

/* Move the thread's clock forward by @ns (time spent waiting for other
 * threads, outside any instruction). */
void emu_advance(struct emu_thread *t, uint64_t ns);

/* A signal was delivered: control left @from_ip (not yet executed)
 * for the handler at @handler_ip.  Emits FUP + TIP (libipt: async
 * branch), or TIP.PGE at the handler if tracing was stopped. */
int emu_async(struct emu_thread *t, uint64_t from_ip, uint64_t handler_ip);

/* Tracing of this thread stops at @ip (exit, detach, death), the next
 * instruction, which did not run: FUP(@ip) + TIP.PGD.  A later emu_step()
 * or emu_async() starts tracing again (TIP.PGE).  Returns 0 or PS_ERR_*. */
int emu_stop(struct emu_thread *t, uint64_t ip);

/* Virtual time of this thread now, ns. */
uint64_t emu_now(const struct emu_thread *t);

/* Copy out the thread's ring, starting at its oldest complete PSB, into a
 * malloc'ed buffer (*buf, *len).  The thread keeps recording.  Pending TNT
 * bits are included, and while tracing the copy ends with FUP(next ip) +
 * TIP.PGD, so it decodes to exactly the instructions that ran.
 * Returns 0, PS_ERR_NOMEM, or PS_ERR_NOT_FOUND (no PSB yet: nothing). */
int emu_snapshot(const struct emu_thread *t, uint8_t **buf, size_t *len);

/* Instructions this thread executed (for stats and benchmarks). */
uint64_t emu_instructions(const struct emu_thread *t);

#endif /* PTSCOPE_RECORD_EMULATE_H */

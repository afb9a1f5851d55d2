/* SPDX-License-Identifier: MIT */
/* The emulated backend's private types, shared by process.c and thread.c. */
#ifndef PTSCOPE_RECORD_EMULATE_EMU_H
#define PTSCOPE_RECORD_EMULATE_EMU_H

#include "src/record/emulate/emulate.h"
#include "src/record/emulate/args.h"
#include "src/record/emulate/clock.h"
#include "src/record/emulate/encode.h"
#include "src/record/emulate/icache.h"
#include "src/record/emulate/insn.h"
#include "src/record/emulate/ring.h"

/* Largest burst of packets one call emits (a PSB+, an async branch and a
 * syscall's PGD/PGE come to about 80 bytes; an --args data window to
 * about 190). */
#define EMU_SCRATCH 384
/* Return compression: the return addresses of the calls since the last
 * PSB, as many as a decoder is asked to keep (Intel SDM vol. 3C,
 * "Indirect Transfer Compression for Returns": 64; libipt's pt_retstack
 * holds as many and, full, forgets the oldest). */
#define EMU_RETC_DEPTH 64
/* Bytes a snapshot may add after the ring: TNT-64, TSC, FUP, TIP.PGD. */
#define EMU_TAIL_MAX 64

struct emu_process {
	struct emu_config cfg; /* copy; cfg.truth is the caller's */
	pid_t pid;
	size_t psb_period;	      /* bytes between PSBs */
	struct emu_icache cache;      /* owned */
	struct emu_insn_decoder *dec; /* owned */
	/* --args: functions to record (calls.c), owned; a hash of entries */
	struct emu_fn *fns;
	size_t nfns;
	uint32_t *fhash; /* index + 1, 0: empty; fhash_mask + 1 slots */
	size_t fhash_mask;
};

/* A call whose return value is to be recorded (calls.c). */
struct emu_frame {
	uint64_t rsp; /* at the entry: where the return address is */
	uint64_t ret; /* the return address */
	uint32_t fn;  /* index into fns */
};

struct emu_thread {
	struct emu_process *proc; /* not owned; outlives the thread */
	pid_t tid;
	struct emu_clock clock;
	uint64_t insns;	    /* completed instructions */
	uint64_t last_tsc;  /* value of the newest TSC packet */
	uint64_t cur_ip;    /* next instruction (when enabled) */
	int enabled;	    /* packet generation on (PGE..PGD) */
	int need_prep;	    /* disabled or PSB due: see prepare() */
	struct emu_pkt pkt; /* owned encoder over scratch */
	/* return compression (thread.c): a ring of return addresses */
	uint64_t retc[EMU_RETC_DEPTH];
	unsigned retc_top, retc_n; /* newest's index; how many */
	struct emu_ring ring;	   /* owned */
	uint8_t scratch[EMU_SCRATCH];
	/* --args (calls.c) */
	emu_regs_fn regs;
	void *regs_ctx;
	struct emu_frame *frames; /* owned */
	unsigned nframes, frames_cap;
};

/* calls.c, for thread.c: control arrived at @ip by a branch (a listed
 * entry gets its window; @ret: the return address a call pushed, 0: read
 * it from the stack); a ret at @ip goes to @next_ip (a recorded call
 * returns: its return value's window).  Return 0 or PS_ERR_*. */
int emu_args_entry(struct emu_thread *t, uint64_t ip, uint64_t ret);
int emu_args_ret(struct emu_thread *t, uint64_t ip, uint64_t next_ip);
void emu_args_proc_fini(struct emu_process *p);
void emu_args_thread_fini(struct emu_thread *t);

/* The instruction at @ip after a cache miss: read, decode, cache it.
 * Returns 0, PS_ERR_TARGET (code unreadable or cut short), PS_ERR_NOMEM. */
int emu_process_fill(struct emu_process *p, uint64_t ip,
		     const struct emu_insn **out);

#endif /* PTSCOPE_RECORD_EMULATE_EMU_H */

/* SPDX-License-Identifier: MIT */
/* The emulated backend's private types, shared by process.c and thread.c. */
#ifndef PTSCOPE_RECORD_EMULATE_EMU_H
#define PTSCOPE_RECORD_EMULATE_EMU_H

#include "src/record/emulate/emulate.h"
#include "src/record/emulate/clock.h"
#include "src/record/emulate/encode.h"
#include "src/record/emulate/icache.h"
#include "src/record/emulate/insn.h"
#include "src/record/emulate/ring.h"

/* Largest burst of packets one call emits (a PSB+, an async branch and a
 * syscall's PGD/PGE come to about 80 bytes). */
#define EMU_SCRATCH 256
/* Bytes a snapshot may add after the ring: TNT-64, TSC, FUP, TIP.PGD. */
#define EMU_TAIL_MAX 64

struct emu_process {
	struct emu_config cfg; /* copy; cfg.truth is the caller's */
	pid_t pid;
	size_t psb_period;	      /* bytes between PSBs */
	struct emu_icache cache;      /* owned */
	struct emu_insn_decoder *dec; /* owned */
};

struct emu_thread {
	struct emu_process *proc; /* not owned; outlives the thread */
	pid_t tid;
	struct emu_clock clock;
	uint64_t insns;	      /* completed instructions */
	uint64_t last_tsc;    /* value of the newest TSC packet */
	uint64_t cur_ip;      /* next instruction (when enabled) */
	int enabled;	      /* packet generation on (PGE..PGD) */
	int need_prep;	      /* disabled or PSB due: see prepare() */
	struct emu_pkt pkt;   /* owned encoder over scratch */
	struct emu_ring ring; /* owned */
	uint8_t scratch[EMU_SCRATCH];
};

/* The instruction at @ip after a cache miss: read, decode, cache it.
 * Returns 0, PS_ERR_TARGET (code unreadable or cut short), PS_ERR_NOMEM. */
int emu_process_fill(struct emu_process *p, uint64_t ip,
		     const struct emu_insn **out);

#endif /* PTSCOPE_RECORD_EMULATE_EMU_H */

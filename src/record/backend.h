/* SPDX-License-Identifier: MIT */
/* Recording backends (engines).  The recorder core (session.c: processes,
 * threads, modules, triggers, marks, snapshots, the recording file) does
 * not know how PT is produced; each backend plugs in through this table
 * and owns its own control loop:
 *
 *   step      ptrace single-step + the PT encoder (step.c, step_emu.c);
 *             runs anywhere and can attach; slow (10^4..10^5 insn/s)
 *   qemu      qemu-x86_64 with our TCG plugin writing PT (qemu_engine.c,
 *             qemu/); run only; tens of millions of insn/s
 *   intel-pt  the intel_pt PMU in AUX snapshot mode (hardware)
 *
 * Names a user may give: auto (intel-pt where the PMU exists, else
 * emulated), emulated (the best emulator for the command: qemu for run
 * when qemu-x86_64 is installed, step otherwise and for attach), step,
 * qemu, intel-pt.
 */
#ifndef PTSCOPE_RECORD_BACKEND_H
#define PTSCOPE_RECORD_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rec_session;
struct rec_thr;
struct rec_proc;
struct rec_info;
struct rec_raw_code;

struct rec_backend {
	const char *name; /* "step", "qemu", "intel-pt" */
	int emulated;	  /* 1: packets come from an emulator */
	/* 1: the trigger mark goes at the start of the step that hit the
	 * breakpoint (t->step_ns), not at the breakpoint sample's time. */
	int marks_at_step;
	/* 1: triggers are hardware breakpoints on every thread (bp.c);
	 * 0: the backend watches the trigger addresses itself. */
	int hw_breakpoints;
	/* 1: the backend feeds kernel events to the recorder (kevents.h:
	 * rkev_step per step on a virtual clock, or rkev_poll per loop turn
	 * on CLOCK_MONOTONIC); 0: the sidecar is not started. */
	int kernel_events;
	/* Start @argv and record until it ends, a trigger, a crash, a stop
	 * request or --duration; the last snapshot is taken.  Returns 0 or
	 * PS_ERR_*. */
	int (*run)(struct rec_session *s, char *const argv[]);
	/* Attach to processes @pids (NULL: this backend cannot attach). */
	int (*attach)(struct rec_session *s, const pid_t *pids, size_t n);
	/* Free the backend's per-thread/per-process state (s->bk, t->bk,
	 * p->bk) before the core frees the session. */
	void (*fini)(struct rec_session *s);
	/* Copy @t's PT for a snapshot (malloc'ed).  PS_ERR_NOT_FOUND: none
	 * for this thread. */
	int (*snapshot)(struct rec_session *s, const struct rec_thr *t,
			uint8_t **buf, size_t *len);
	/* @t's trace clock now (ns). */
	uint64_t (*now)(struct rec_session *s, const struct rec_thr *t);
	/* Re-read @p's mappings before a snapshot (NULL: the core's
	 * rec_proc_refresh_maps; qemu leaves QEMU's own objects out). */
	int (*maps)(struct rec_session *s, struct rec_proc *p);
	/* Backend facts for the recording (clock conversion, QEMU version);
	 * may be NULL. */
	void (*fill_info)(struct rec_session *s, struct rec_info *info);
	/* Code no process mapping holds that every process's trace may run
	 * through (intel-pt --kernel: the kernel text): *raws (borrowed,
	 * pid ignored) are added to each process of a snapshot.  Returns
	 * how many; may be NULL. */
	size_t (*extra_code)(struct rec_session *s,
			     const struct rec_raw_code **raws);
};

extern const struct rec_backend rec_backend_step;
extern const struct rec_backend rec_backend_qemu;
extern const struct rec_backend rec_backend_intel_pt;

/* The backend for @name (see above; NULL means auto) for a run (@attach
 * 0) or an attach (1).  *why gets a one-line notice to show the user, or
 * NULL.  Returns 0, PS_ERR_INVAL (unknown name, or a backend that cannot
 * do this: detail says which to use), PS_ERR_NO_HW (intel-pt without the
 * PMU, qemu without qemu-x86_64: detail says what to do), or
 * PS_ERR_UNSUPPORTED. */
int rec_backend_select(const char *name, int attach,
		       const struct rec_backend **out, const char **why);

/* 1 if /sys/bus/event_source/devices/intel_pt exists. */
int rec_have_intel_pt(void);

/* The qemu-x86_64 to run (PTSCOPE_QEMU or PATH) into @buf; 0 if found,
 * else PS_ERR_NOT_FOUND. */
int rec_find_qemu(char *buf, size_t size);

#endif /* PTSCOPE_RECORD_BACKEND_H */

/* SPDX-License-Identifier: MIT */
/* The single-step backend (prefix step_): a ptrace control loop (step.c,
 * with each stop answered in step_stops.c) that follows threads, signals,
 * exec and exit, single-steps every traced thread and calls these hooks at
 * each point where tracing state changes.
 * The hooks (step_emu.c) turn each completed step into PT packets with
 * the emulator core (emulate.h).
 */
#ifndef PTSCOPE_RECORD_STEP_HOOKS_H
#define PTSCOPE_RECORD_STEP_HOOKS_H

#include <stddef.h>
#include <stdint.h>

struct rec_session;
struct rec_proc;
struct rec_thr;

struct step_hooks {
	/* Backend-wide state for session @s into *state. */
	int (*open)(struct rec_session *s, void **state);
	void (*close)(void *state);
	/* A traced process appears (or is replaced by exec). */
	int (*proc_new)(void *state, struct rec_proc *p);
	void (*proc_free)(void *state, struct rec_proc *p);
	/* Code in [addr, addr + len) of @p changed (munmap, mprotect). */
	void (*code_changed)(void *state, struct rec_proc *p, uint64_t addr,
			     uint64_t len);
	/* Start tracing @t, stopped at @ip, at trace time @now_ns. */
	int (*thread_start)(void *state, struct rec_thr *t, uint64_t ip,
			    uint64_t now_ns);
	/* Tracing of @t ends at t->ip (exit, crash, detach). */
	int (*thread_stop)(void *state, struct rec_thr *t);
	void (*thread_free)(void *state, struct rec_thr *t);
	/* 1 if the instruction at t->ip is a system call (the next step
	 * enters the kernel), else 0.  Called before each resume. */
	int (*at_syscall)(void *state, const struct rec_thr *t);
	/* Let a stopped @t go on, delivering @sig (0: none). */
	int (*resume)(void *state, struct rec_thr *t, int sig);
	/* @t stopped after its resume ran the instruction at t->ip; it is
	 * now at @next_ip.  A system call took t->sys_ns of trace time (set
	 * by the recorder, see vclk_ in core.h).  Returns 1 if that instruction
	 * was a system call, 0 if not, or PS_ERR_*. */
	int (*stepped)(void *state, struct rec_thr *t, uint64_t next_ip);
	/* A signal handler at @handler_ip was entered from t->ip. */
	int (*signal_entered)(void *state, struct rec_thr *t,
			      uint64_t handler_ip);
	/* @t's trace clock now (ns). */
	uint64_t (*now)(void *state, const struct rec_thr *t);
	/* Copy @t's PT data (malloc'ed).  PS_ERR_NOT_FOUND: nothing yet. */
	int (*snapshot)(void *state, const struct rec_thr *t, uint8_t **buf,
			size_t *len);
	/* Instructions traced in @t so far (0 if the backend cannot tell). */
	uint64_t (*instructions)(void *state, const struct rec_thr *t);
};

/* PTRACE_SINGLESTEP + the emulator core. */
extern const struct step_hooks step_emu_hooks;

#endif /* PTSCOPE_RECORD_STEP_HOOKS_H */

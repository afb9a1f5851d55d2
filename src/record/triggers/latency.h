/* SPDX-License-Identifier: MIT */
/* Latency triggers (prefix rec_latency_): -t 'NAME>DURATION' takes the
 * snapshot when a call of NAME returns after running longer than
 * DURATION, so the trace ends just after the slow call and holds all of
 * it.  The mark (REC_MARK_LATENCY) names the call and its duration.
 *
 * Timing happens where the backend can see calls:
 *  - emulated (step) backend: on the trace's own virtual clock, the same
 *    clock as the spans — the recorder sees every instruction, so it
 *    notes each arrival at the function (the return address on the
 *    stack) and the return to that address with the stack back where it
 *    was (rec_latency_step);
 *  - free-running backends: a uprobe/uretprobe pair in eBPF
 *    (src/bpf/latency.bpf.c) wakes the recorder only for slow calls
 *    (SDC_SLOW_CALL through kevents.c → rec_latency_slow).
 */
#ifndef PTSCOPE_RECORD_LATENCY_H
#define PTSCOPE_RECORD_LATENCY_H

#include <stddef.h>
#include <stdint.h>

struct rec_session;
struct rec_thr;
struct rec_proc;

/* 1 if @spec has the latency form NAME>DURATION (then *name is a
 * malloc'ed copy of NAME and *ns the threshold), 0 if it is a plain
 * trigger, PS_ERR_INVAL for a bad duration (one sentence with the
 * accepted units), PS_ERR_NOMEM. */
int rec_latency_parse(const char *spec, char **name, uint64_t *ns);

/* Take the latency specs out of s->o->triggers.  Returns 0 or PS_ERR_*. */
int rec_latency_init(struct rec_session *s);
void rec_latency_fini(struct rec_session *s);
/* 1 if trigger spec @i of s->o->triggers is a latency spec. */
int rec_latency_is_spec(const char *spec);

/* Find the functions in @p (after exec, dlopen, at the program's entry);
 * @final: a name that is still unknown is an error. */
int rec_latency_resolve(struct rec_session *s, struct rec_proc *p, int final);

/* 1 if a spec still waits for a module (re-resolve after mmap). */
int rec_latency_pending(const struct rec_session *s);
/* @p's code was replaced (exec): resolve its specs again. */
void rec_latency_forget(struct rec_session *s, struct rec_proc *p);

/* Step backend: @t's step that began at trace time @v0 took it to
 * @next_ip at @v1.  Returns 1 if recording should stop, 0, or PS_ERR_*. */
int rec_latency_step(struct rec_session *s, struct rec_thr *t, uint64_t next_ip,
		     uint64_t v0, uint64_t v1);

/* A call of latency spec @idx at @addr by @t ran from @start to @end
 * (trace clock) and was too slow: mark, then snapshot or stop.  Returns
 * 1 if recording should stop, 0, or PS_ERR_*. */
int rec_latency_slow(struct rec_session *s, struct rec_thr *t, unsigned idx,
		     uint64_t addr, uint64_t start, uint64_t end);

void rec_latency_thread_free(struct rec_thr *t);

/* A timed function of a process, for a backend that times calls itself
 * (qemu: in its plugin). */
struct rec_lat_target {
	uint64_t addr;
	uint64_t ns; /* threshold */
	unsigned idx; /* spec, for rec_latency_slow */
};
/* The resolved timed functions of process @pid into @out (at most @max).
 * Returns how many. */
size_t rec_latency_targets(const struct rec_session *s, pid_t pid,
			   struct rec_lat_target *out, size_t max);

#endif /* PTSCOPE_RECORD_LATENCY_H */

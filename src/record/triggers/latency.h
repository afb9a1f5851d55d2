/* SPDX-License-Identifier: MIT */
/* Latency triggers (prefix rec_latency_, the kind rec_trigger_latency in
 * kinds.h): -t 'NAME>DURATION' takes the
 * snapshot when a call of NAME returns after running longer than
 * DURATION, so the trace ends just after the slow call and holds all of
 * it.  The mark (REC_MARK_LATENCY) names the call and its duration.
 *
 * Timing happens where the backend can see calls:
 *  - emulated (step) backend: on the trace's own virtual clock, the same
 *    clock as the spans — the recorder sees every instruction, so it
 *    notes each arrival at the function (the return address on the
 *    stack) and the return to that address with the stack back where it
 *    was (the kind's step op);
 *  - free-running backends: a uprobe/uretprobe pair in eBPF
 *    (src/bpf/latency.bpf.c) wakes the recorder only for slow calls
 *    (SDC_SLOW_CALL through kevents.c → rec_triggers_slow_call);
 *  - qemu: its plugin times the calls (rec_triggers_timed) and reports
 *    the slow ones.
 */
#ifndef PTSCOPE_RECORD_LATENCY_H
#define PTSCOPE_RECORD_LATENCY_H

#include <stddef.h>
#include <stdint.h>

/* 1 if @spec has the latency form NAME>DURATION (then *name is a
 * malloc'ed copy of NAME and *ns the threshold), 0 if it is a plain
 * trigger, PS_ERR_INVAL for a bad duration (one sentence with the
 * accepted units), PS_ERR_NOMEM. */
int rec_latency_parse(const char *spec, char **name, uint64_t *ns);

/* 1 if @spec has the latency form (a '>'). */
int rec_latency_is_spec(const char *spec);

#endif /* PTSCOPE_RECORD_LATENCY_H */

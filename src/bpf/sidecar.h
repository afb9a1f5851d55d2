/* SPDX-License-Identifier: MIT */
/* The eBPF sidecar (prefix sdc_): kernel events about the target's
 * processes — scheduler, system calls, signals, page faults, block I/O,
 * process life, any tracepoint, kernel functions — and the uprobe call
 * timer behind latency triggers, all filtered in the kernel by the
 * target's tgids and delivered through one BPF ring buffer.
 *
 *   sdc_open(&cfg, &sc);          load and attach (needs root, BTF, BPF)
 *   sdc_add_pid(sc, tgid);        start following a process (its forks
 *                                 are followed in the kernel)
 *   sdc_consume(sc, cb, ctx);     hand over what is in the ring, no wait
 *   sdc_lost(sc);                 events dropped because the ring was full
 *   sdc_close(sc);
 *
 * Library code: never prints.  One feature = src/bpf/X.bpf.c (kernel
 * side) + src/bpf/X.c (user side: its ops, struct sdc_feature in
 * features.h) + X.h when the two sides share types.  sidecar.c starts the
 * features through their ops; they know nothing of it.
 */
#ifndef PTSCOPE_BPF_SIDECAR_H
#define PTSCOPE_BPF_SIDECAR_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/bpf/desc.h"
#include "src/bpf/event.h"

/* Feature bits (--events names in sdc_feature_name()). */
enum {
	SDC_F_SCHED = 1u << 0,
	SDC_F_SYSCALLS = 1u << 1,
	SDC_F_SIGNALS = 1u << 2,
	SDC_F_FAULTS = 1u << 3,
	SDC_F_BLOCK = 1u << 4,
	SDC_F_PROC = 1u << 5,
	SDC_F_ALL = (1u << 6) - 1
};

#define SDC_MAX_CUSTOM 16 /* --event specs */

/* A custom event's description (struct sdc_desc) is in desc.h. */

struct sdc_config {
	unsigned features;	   /* SDC_F_* */
	const char *const *custom; /* "tracepoint:CAT:NAME", "kprobe:FUNC" */
	size_t ncustom;
	pid_t recorder_tgid; /* its wakeups are not the target's (0: none) */
};

struct sidecar;

/* The bits for a comma-separated --events list of feature names
 * ("sched,syscalls,signals,faults,block,proc", or "all").  Returns 0 or
 * PS_ERR_INVAL (detail names the accepted ones). */
int sdc_parse_features(const char *list, unsigned *out);

/* Check a --event spec's form (without the kernel).  0 or PS_ERR_INVAL. */
int sdc_check_custom(const char *spec);

/* Load and attach.  Returns 0 or, with one sentence saying why the
 * kernel events are unavailable: PS_ERR_PERM (not root), PS_ERR_NO_HW
 * (no BTF, no BPF), PS_ERR_NOT_FOUND (a --event that does not exist),
 * PS_ERR_UNSUPPORTED, PS_ERR_NOMEM. */
int sdc_open(const struct sdc_config *cfg, struct sidecar **out);
void sdc_close(struct sidecar *sc); /* accepts NULL */

int sdc_add_pid(struct sidecar *sc, pid_t tgid);

typedef int (*sdc_event_fn)(void *ctx, const struct sdc_event *e);
/* Every event now in the ring, in ring order, to @fn (a nonzero return
 * stops and is returned).  Never waits; cheap when the ring is empty. */
int sdc_consume(struct sidecar *sc, sdc_event_fn fn, void *ctx);

/* Events the kernel side dropped (ring full). */
uint64_t sdc_lost(const struct sidecar *sc);

/* The custom events, index = sdc_event.id. */
size_t sdc_descs(const struct sidecar *sc, const struct sdc_desc **out);

/* Latency timer for free-running threads: time every call of the
 * function at @func_offset in @binary (all target processes) with a
 * uprobe/uretprobe pair; calls longer than @threshold_ns arrive as
 * SDC_SLOW_CALL events with id @index (0..LAT_MAX_FUNCS-1) and v2 =
 * @func_addr.  All specs must be given before the first sdc_consume.
 * Returns 0 or PS_ERR_*. */
int sdc_time_calls(struct sidecar *sc, unsigned index, const char *binary,
		   uint64_t func_offset, uint64_t func_addr,
		   uint64_t threshold_ns);

/* Calls the latency timer could not time (longjmp past them, nesting
 * deeper than LAT_STACK_DEPTH). */
uint64_t sdc_untimed(const struct sidecar *sc);

/* "sched", "syscalls", ... for one feature bit. */
const char *sdc_feature_name(unsigned bit);

/* Mount tracefs at /sys/kernel/tracing if nothing is there.  0 or
 * PS_ERR_PERM / PS_ERR_NO_HW. */
int sdc_mount_tracefs(void);

#endif /* PTSCOPE_BPF_SIDECAR_H */

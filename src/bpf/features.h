/* SPDX-License-Identifier: MIT */
/* The sidecar's parts as sidecar.c sees them: every feature (one per
 * src/bpf/X.c) is a small ops table that opens its skeleton, shares the
 * common maps (target filter, ring buffer, lost counter), loads, attaches
 * and records the skeleton in a struct sdc_part for sidecar.c to destroy.
 *
 * Calls go one way: sidecar.c starts the features through these ops; the
 * features use only the helpers of features.c (one sentence per failure,
 * sharing the maps), never sidecar.c.
 */
#ifndef PTSCOPE_BPF_FEATURES_H
#define PTSCOPE_BPF_FEATURES_H

#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

#include "src/bpf/desc.h"

/* The maps every program shares (fds created by sidecar.c). */
struct sdc_maps {
	int targets, events, lost;
	pid_t recorder_tgid;
};

/* A loaded skeleton. */
struct sdc_part {
	void *skel;
	void (*destroy)(void *skel);
};

/* A built-in feature (--events NAME).  Its start returns 0 (the loaded
 * skeleton in @part) or one sentence via sdc_fail. */
struct sdc_feature {
	/* It attaches through tracefs: sidecar.c mounts tracefs first. */
	int needs_tracefs;
	/* @emit: its events were asked for (proc is started without, since
	 * its fork handler makes the filter follow the process tree). */
	int (*start)(const struct sdc_maps *m, int emit, struct sdc_part *part);
};

/* A kind of custom event (--event KIND:TARGET). */
struct sdc_custom_kind {
	int needs_tracefs;
	/* @target: what follows "KIND:" (its form checked by
	 * sdc_check_custom); the event is number @id; fills @d. */
	int (*start)(const struct sdc_maps *m, const char *target, unsigned id,
		     struct sdc_desc *d, struct sdc_part *part);
};

extern const struct sdc_feature sdc_sched_feature;    /* sched.c */
extern const struct sdc_feature sdc_syscalls_feature; /* syscalls.c */
extern const struct sdc_feature sdc_signals_feature;  /* signals.c */
extern const struct sdc_feature sdc_faults_feature;   /* faults.c */
extern const struct sdc_feature sdc_blockio_feature;  /* blockio.c */
extern const struct sdc_feature sdc_proc_feature;     /* proc.c */
/* tracepoint:CAT:NAME (tracepoint.c), kprobe:FUNC (kfunc.c: kprobes,
 * else fentry/fexit) */
extern const struct sdc_custom_kind sdc_tracepoint_kind;
extern const struct sdc_custom_kind sdc_kfunc_kind;

/* The latency timer (latency.c): a uprobe/uretprobe pair on the function
 * at @func_offset in @binary, spec @index, reporting calls longer than
 * @threshold_ns.  *out gets the skeleton as soon as it is opened, so the
 * caller frees it (sdc_latency_destroy) even after a failure.  Returns 0
 * or one sentence via sdc_fail. */
struct ps_latency;
int sdc_latency_start(const struct sdc_maps *m, unsigned index,
		      const char *binary, uint64_t func_offset,
		      uint64_t func_addr, uint64_t threshold_ns,
		      struct ps_latency **out);
/* Calls it could not time; 0 for NULL. */
uint64_t sdc_latency_untimed(const struct ps_latency *sk);
void sdc_latency_destroy(struct ps_latency *sk); /* accepts NULL */

/* ---- what the parts share (features.c) ---------------------------------- */

/* Hand the shared maps to @obj before loading (by name).  Returns 0 or
 * as sdc_fail. */
int sdc_share_maps(struct bpf_object *obj, const struct sdc_maps *m);
/* One sentence for a failed load/attach of @what (libbpf's -errno):
 * returns PS_ERR_PERM, PS_ERR_NOT_FOUND, PS_ERR_NO_HW or
 * PS_ERR_UNSUPPORTED with a detail. */
int sdc_fail(const char *what, int err);

/* The ops of a feature whose skeleton needs nothing but the shared maps
 * (and @SETUP, run on the opened skeleton `sk`). */
#define SDC_FEATURE(NAME, SKEL, WHAT, TRACEFS, SETUP)                          \
	static void NAME##_destroy(void *p)                                    \
	{                                                                      \
		SKEL##__destroy(p);                                            \
	}                                                                      \
	static int NAME##_start(const struct sdc_maps *m, int emit,            \
				struct sdc_part *part)                         \
	{                                                                      \
		struct SKEL *sk = SKEL##__open();                              \
		int r;                                                         \
                                                                               \
		if (!sk)                                                       \
			return sdc_fail(WHAT, -errno);                         \
		SETUP;                                                         \
		r = sdc_share_maps(sk->obj, m);                                \
		if (!r && (r = SKEL##__load(sk)))                              \
			r = sdc_fail(WHAT, r);                                 \
		if (!r && (r = SKEL##__attach(sk)))                            \
			r = sdc_fail(WHAT, r);                                 \
		if (r) {                                                       \
			SKEL##__destroy(sk);                                   \
			return r;                                              \
		}                                                              \
		part->skel = sk;                                               \
		part->destroy = NAME##_destroy;                                \
		return 0;                                                      \
	}                                                                      \
	const struct sdc_feature NAME = {.needs_tracefs = TRACEFS,             \
					 .start = NAME##_start};

#endif /* PTSCOPE_BPF_FEATURES_H */

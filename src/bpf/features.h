/* SPDX-License-Identifier: MIT */
/* The start functions of the sidecar features (one per src/bpf/X.c),
 * used by sidecar.c only.  Each opens its skeleton, shares the common
 * maps (target filter, ring buffer, lost counter), loads, attaches, and
 * records the skeleton in @part for sidecar.c to destroy. */
#ifndef PTSCOPE_BPF_FEATURES_H
#define PTSCOPE_BPF_FEATURES_H

#include <bpf/libbpf.h>

#include "src/bpf/sidecar.h"

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

/* Hand the shared maps to @obj before loading (by name). */
int sdc_share_maps(struct bpf_object *obj, const struct sdc_maps *m);
/* One sentence for a failed load/attach of @what (libbpf's -errno). */
int sdc_fail(const char *what, int err);

/* The start function of a feature whose skeleton needs nothing but the
 * shared maps (and @SETUP, run on the opened skeleton `sk`). */
#define SDC_FEATURE_START(FN, SKEL, WHAT, SETUP)                               \
	static void FN##_destroy(void *p)                                      \
	{                                                                      \
		SKEL##__destroy(p);                                            \
	}                                                                      \
	int FN(const struct sdc_maps *m, struct sdc_part *part)                \
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
		part->destroy = FN##_destroy;                                  \
		return 0;                                                      \
	}

int sdc_sched_start(const struct sdc_maps *m, struct sdc_part *part);
int sdc_syscalls_start(const struct sdc_maps *m, struct sdc_part *part);
int sdc_signals_start(const struct sdc_maps *m, struct sdc_part *part);
int sdc_faults_start(const struct sdc_maps *m, struct sdc_part *part);
int sdc_blockio_start(const struct sdc_maps *m, struct sdc_part *part);
/* Always started (the filter follows forks); @emit: report events. */
int sdc_proc_start(const struct sdc_maps *m, int emit, struct sdc_part *part);
/* --event tracepoint:CAT:NAME as event @id; fills @d. */
int sdc_tracepoint_start(const struct sdc_maps *m, const char *cat,
			 const char *name, unsigned id, struct sdc_desc *d,
			 struct sdc_part *part);
/* --event kprobe:FUNC as event @id: kprobes, else fentry/fexit. */
int sdc_kfunc_start(const struct sdc_maps *m, const char *func, unsigned id,
		    struct sdc_desc *d, struct sdc_part *part);

#endif /* PTSCOPE_BPF_FEATURES_H */

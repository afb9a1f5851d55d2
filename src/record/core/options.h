/* SPDX-License-Identifier: MIT */
/* The recorder's vocabulary for its caller (prefix rec_): the options a
 * recording is made with, what it reports back, each snapshot as it is
 * handed over, and the stop request.  The core and every part of the
 * recorder see these; the caller reaches them through recorder.h.
 */
#ifndef PTSCOPE_RECORD_CORE_OPTIONS_H
#define PTSCOPE_RECORD_CORE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ptscope/recording.h"

#define REC_DEFAULT_SNAPSHOT_SIZE (4u << 20)
#define REC_MAX_TRIGGERS 4 /* debug registers per thread */
/* The sample backend's default rate (docs/sample-backend.md: the target
 * keeps >= 97% of its speed at it). */
#define REC_DEFAULT_FREQUENCY 500

/* One snapshot, as the decoder (replay_input) and the recording file
 * (recorder.h: snapshot_write) need it.  Valid during the on_snapshot call only. */
struct rec_snapshot {
	unsigned index;	    /* 1, 2, ... */
	const char *reason; /* "trigger", "exit", "signal", "interrupt",
			     * "duration" */
	struct recording in;
	/* --archive: module i's file bytes (NULL when not archived). */
	const uint8_t *const *archive;
	const size_t *archive_len;
};

struct rec_options {
	const char *backend; /* "auto" or NULL, "emulated", "qemu", "step",
			      * "intel-pt", "sample" (backend.h) */
	const char *const *triggers; /* trigger specs (src/record/triggers/resolve.h forms) */
	size_t ntriggers;
	uint64_t snapshot_size; /* bytes of PT per thread; 0: default */
	/* 0: one snapshot, then stop tracing; N > 0: keep tracing and take
	 * one snapshot per trigger hit, at most N. */
	unsigned multi_snapshot;
	double duration; /* seconds of tracing before a snapshot; 0: none */
	FILE *truth;	 /* emulated backend ground truth, or NULL */
	int archive;	 /* copy the mapped files into each snapshot */
	/* 1: processes the target creates run untraced (--no-follow); 0:
	 * every child and every exec is followed (docs/process-trees.md). */
	int no_follow;
	/* run: trace from the dynamic loader's first instruction; else the
	 * loader runs untraced and tracing starts at the program's entry. */
	int trace_loader;
	/* Emulated backends: record arguments and return values as PTW
	 * packets (--args): 0 off, 1 functions DWARF describes, 2 also the
	 * integer registers of the others (src/record/args.h). */
	int args;
	/* intel-pt backend only (refused with the other backends):
	 * "low", "normal", "high" or NULL (normal where the CPU allows), kernel
	 * code too, and an address filter (pt_filter.h forms) or NULL. */
	const char *timer_resolution;
	int kernel;
	const char *filter;
	/* sample backend only: samples per second per thread (0: the
	 * default, REC_DEFAULT_FREQUENCY). */
	unsigned frequency;
	/* Kernel events (eBPF sidecar, src/bpf/sidecar.h): SDC_F_* feature
	 * bits (0: none) and --event specs ("tracepoint:CAT:NAME",
	 * "kprobe:FUNC"). */
	unsigned events;
	const char *const *event_specs;
	size_t nevent_specs;
	/* The command line that started ptscope (recording metadata). */
	const char *const *cmdline;
	size_t cmdline_n;
	/* Each snapshot; a negative return stops recording with that error
	 * (the target is detached first). */
	int (*on_snapshot)(void *ctx, const struct rec_snapshot *snap);
	/* One-sentence notices for the user; may be NULL. */
	void (*notice)(void *ctx, const char *msg);
	void *ctx;
};

/* What happened to the target and the recording. */
struct rec_result {
	pid_t pid;  /* the first target process (the command) */
	/* How the command itself ended (not its children). */
	int exited; /* 1: the target exited, exit_code is valid */
	int exit_code;
	int killed_by;	     /* signal that ended the target, or 0 */
	uint64_t fault_addr; /* si_addr of that signal (SIGSEGV, ...) */
	uint64_t fault_ip;   /* where the faulting thread was */
	pid_t fault_tid;
	int core_dumped;    /* the signal left a core dump (run only) */
	int detached;	    /* 1: the target kept running, untraced */
	unsigned snapshots; /* snapshots handed to on_snapshot */
	unsigned trigger_hits;
	uint64_t threads;      /* threads traced */
	uint64_t processes;    /* processes traced */
	uint64_t instructions; /* instructions traced (emulated backend) */
	double seconds;	       /* wall time spent tracing (not decoding) */
	const char *backend;   /* the backend used (static string) */
};

/* Ask the recorder to take its snapshot now and stop (async-signal-safe:
 * call it from a SIGINT handler). */
void rec_request_stop(void);

#endif /* PTSCOPE_RECORD_CORE_OPTIONS_H */

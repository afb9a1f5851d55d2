/* SPDX-License-Identifier: MIT */
/* The record every sidecar eBPF program writes into the shared ring
 * buffer, and the kinds of kernel events (shared by the BPF programs,
 * src/bpf/X.bpf.c, and the user side, src/bpf/X.c).
 *
 * Plain C types only: this header is compiled by clang -target bpf (with
 * vmlinux.h) and by gcc (with <linux/types.h>).
 */
#ifndef PTSCOPE_BPF_EVENT_H
#define PTSCOPE_BPF_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SDC_DATA_MAX 256 /* bytes of string/raw data per event */
#define SDC_NV 8	 /* numeric values per event */

/* What happened.  v[] and data[] per kind: */
enum sdc_kind {
	SDC_SYS_ENTER = 1,    /* v0 nr, v1..v6 args; data: path argument */
	SDC_SYS_EXIT = 2,     /* v0 nr, v1 return value */
	SDC_SWITCH_OUT = 3,   /* v0 prev_state, v1 preempted, v2 next tid;
			       * data: next comm */
	SDC_SWITCH_IN = 4,    /* v0 prev tid; data: prev comm */
	SDC_WAKEUP = 5,	      /* v0 waker tgid, v1 waker tid, v2 target cpu,
			       * v3 when the waker woke it (sched_waking;
			       * 0: not seen); data: waker comm */
	SDC_SIG_GENERATE = 6, /* v0 sig, v1 si_code, v2 sender tgid, v3 sender
			       * tid, v4 result; data: sender comm */
	SDC_SIG_DELIVER = 7,  /* v0 sig, v1 si_code, v2 handler address */
	SDC_FAULT = 8,	      /* v0 address, v1 ip, v2 error code */
	SDC_BIO_ISSUE = 9,    /* v0 dev, v1 sector, v2 bytes; data: rwbs */
	SDC_BIO_DONE = 10,    /* v0 dev, v1 sector, v2 bytes, v3 error, v4
			       * issue time; data: rwbs */
	SDC_EXEC = 11,	      /* v0 old pid; data: file name */
	SDC_EXIT = 12,	      /* v0 exit code (wait status), v1 group dead */
	SDC_FORK = 13,	      /* v0 child tgid, v1 child tid */
	SDC_TRACEPOINT = 14,  /* id: --event index; data: the raw record */
	SDC_KFUNC_ENTRY = 15, /* id: --event index; v0..v5 arguments, v6
			       * argument count */
	SDC_KFUNC_EXIT = 16,  /* id: --event index; v0 return value */
	SDC_SLOW_CALL = 17,   /* id: latency spec; v0 entry time, v1
			       * duration, v2 function address */
	SDC_FAULT_DONE = 18   /* the kernel counted a user fault: v0
			       * address, v1 1 major / 0 minor */
};

struct sdc_event {
	__u64 ts;	/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid, tid; /* the thread the event is about */
	__u16 kind;	/* enum sdc_kind */
	__u16 id;
	__u32 cpu;
	__u64 v[SDC_NV];
	__u32 len; /* bytes of data[] used */
	__u32 pad;
	__u8 data[SDC_DATA_MAX];
};

/* The array map "lost" has one slot: events dropped because the ring
 * buffer was full. */
#define SDC_LOST_SLOT 0

#endif /* PTSCOPE_BPF_EVENT_H */

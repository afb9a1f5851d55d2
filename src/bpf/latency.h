/* SPDX-License-Identifier: MIT */
/* Types shared by latency.bpf.c and latency.c: the uprobe/uretprobe call
 * timer behind latency triggers (-t 'NAME>DURATION') for backends whose
 * threads run free. */
#ifndef PTSCOPE_BPF_LATENCY_H
#define PTSCOPE_BPF_LATENCY_H

#define LAT_MAX_FUNCS 4	   /* latency specs (as -t triggers) */
#define LAT_STACK_DEPTH 32 /* nested timed calls per thread */

/* Per thread: the entry times of the timed calls it is inside, innermost
 * last (recursion and nesting of timed functions both stack here). */
struct lat_stack {
	__u32 depth;
	__u32 pad;
	__u64 ts[LAT_STACK_DEPTH];
	__u64 fn[LAT_STACK_DEPTH]; /* spec index (the attach cookie) */
};

#endif /* PTSCOPE_BPF_LATENCY_H */

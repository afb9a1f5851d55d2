/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* What every sidecar BPF program shares: the target filter (tgids the
 * recorder fills; fork adds children), the ring buffer, the lost counter.
 * User space creates these maps once and hands the same fds to every
 * program (bpf_map__reuse_fd), so all features share one ring.
 */
#ifndef PTSCOPE_BPF_COMMON_BPF_H
#define PTSCOPE_BPF_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "src/bpf/event.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* 1 */
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline int is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

static __always_inline int current_is_target(void)
{
	return is_target(bpf_get_current_pid_tgid() >> 32);
}

/* A zeroed event of @kind about thread (@pid, @tid), or NULL (counted as
 * lost) when the ring is full. */
static __always_inline struct sdc_event *sdc_reserve(__u16 kind, __u32 pid,
						     __u32 tid)
{
	struct sdc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__u32 slot = SDC_LOST_SLOT;
		__u64 *n = bpf_map_lookup_elem(&lost, &slot);

		if (n)
			__sync_fetch_and_add(n, 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e) - SDC_DATA_MAX);
	e->ts = bpf_ktime_get_ns();
	e->pid = pid;
	e->tid = tid;
	e->kind = kind;
	e->cpu = bpf_get_smp_processor_id();
	return e;
}

static __always_inline struct sdc_event *sdc_reserve_current(__u16 kind)
{
	__u64 id = bpf_get_current_pid_tgid();

	return sdc_reserve(kind, id >> 32, (__u32)id);
}

static __always_inline void sdc_comm(struct sdc_event *e, struct task_struct *t)
{
	long n = bpf_probe_read_kernel_str(e->data, 16, &t->comm);

	e->len = n > 0 ? (__u32)n : 0;
}

#endif /* PTSCOPE_BPF_COMMON_BPF_H */

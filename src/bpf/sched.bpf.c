/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Scheduler events of the target's threads: switched out (why: preempted
 * or blocked, with the task state), switched in, woken up (by whom). */
#include "src/bpf/common.bpf.h"

/* The recorder's own tgid: its wakeups (resuming a ptrace-stopped thread)
 * and the ptrace stops themselves are the tracer's doing, not the
 * program's, and would flood the ring under a single-stepping backend. */
const volatile __u32 recorder_tgid = 0;

#define TASK_STOPPED_OR_TRACED 0x0c /* __TASK_STOPPED | __TASK_TRACED */

/* Threads whose last switch-out was a ptrace/job-control stop: their
 * next switch-in is dropped too. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} stopped SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	struct sdc_event *e;
	__u32 ptgid = BPF_CORE_READ(prev, tgid);
	__u32 ntgid = BPF_CORE_READ(next, tgid);

	if (is_target(ptgid) && (prev_state & TASK_STOPPED_OR_TRACED)) {
		__u32 tid = BPF_CORE_READ(prev, pid);
		__u8 one = 1;

		bpf_map_update_elem(&stopped, &tid, &one, BPF_ANY);
	} else if (is_target(ptgid)) {
		e = sdc_reserve(SDC_SWITCH_OUT, ptgid,
				BPF_CORE_READ(prev, pid));
		if (e) {
			e->v[0] = prev_state;
			e->v[1] = preempt;
			e->v[2] = BPF_CORE_READ(next, pid);
			sdc_comm(e, next);
			bpf_ringbuf_submit(e, 0);
		}
	}
	if (is_target(ntgid)) {
		__u32 tid = BPF_CORE_READ(next, pid);

		if (bpf_map_lookup_elem(&stopped, &tid)) {
			bpf_map_delete_elem(&stopped, &tid);
			return 0;
		}
		e = sdc_reserve(SDC_SWITCH_IN, ntgid, BPF_CORE_READ(next, pid));
		if (e) {
			e->v[0] = BPF_CORE_READ(prev, pid);
			sdc_comm(e, prev);
			bpf_ringbuf_submit(e, 0);
		}
	}
	return 0;
}

/* Who is waking a target thread, from sched_waking until its
 * sched_wakeup.  sched_waking runs in the waker's context
 * (try_to_wake_up, once the state matched); sched_wakeup runs where the
 * thread is put on a run queue (ttwu_do_activate), which for a wakeup
 * queued to another CPU (ttwu_queue_wakelist, the usual case when that
 * CPU is idle or shares no cache with this one) is that CPU's IPI
 * handler: "current" there is the idle task or whatever it interrupted.
 * The kernel added sched_waking for this (commit fbd705a0c618, 4.3). */
struct waker {
	__u32 tgid, tid;
	__u64 ts; /* when (sched_waking) */
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct waker);
} wakers SEC(".maps");

/* The task running here, as the waker (no time). */
static __always_inline void current_waker(struct waker *w)
{
	__u64 id = bpf_get_current_pid_tgid();

	w->tgid = id >> 32;
	w->tid = (__u32)id;
	bpf_get_current_comm(w->comm, sizeof(w->comm));
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct waker w = {};
	__u32 tid;

	if (!is_target(BPF_CORE_READ(p, tgid)))
		return 0;
	current_waker(&w);
	w.ts = bpf_ktime_get_ns();
	tid = BPF_CORE_READ(p, pid);
	bpf_map_update_elem(&wakers, &tid, &w, BPF_ANY);
	return 0;
}

/* @p is on a run queue: by whom (@waking: the waker was noted by
 * on_waking; a new task's first wakeup has none, and runs in the
 * parent's context). */
static __always_inline int wakeup(struct task_struct *p, int waking)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	struct waker w = {}, *noted = NULL;
	struct sdc_event *e;
	long n;

	if (!is_target(tgid))
		return 0;
	if (waking)
		noted = bpf_map_lookup_elem(&wakers, &tid);
	if (noted) {
		w = *noted;
		bpf_map_delete_elem(&wakers, &tid);
	} else {
		current_waker(&w);
	}
	if (recorder_tgid && w.tgid == recorder_tgid)
		return 0;
	e = sdc_reserve(SDC_WAKEUP, tgid, tid);
	if (!e)
		return 0;
	e->v[0] = w.tgid;
	e->v[1] = w.tid;
	e->v[2] = BPF_CORE_READ(p, wake_cpu);
	e->v[3] = w.ts; /* 0: not noted */
	n = bpf_probe_read_kernel_str(e->data, sizeof(w.comm), w.comm);
	e->len = n > 0 ? (__u32)n : 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return wakeup(p, 1);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	return wakeup(p, 0);
}

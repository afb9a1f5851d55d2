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

static __always_inline int wakeup(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct task_struct *cur;
	struct sdc_event *e;
	__u64 id;

	if (!is_target(tgid) ||
	    (recorder_tgid &&
	     bpf_get_current_pid_tgid() >> 32 == recorder_tgid))
		return 0;
	e = sdc_reserve(SDC_WAKEUP, tgid, BPF_CORE_READ(p, pid));
	if (!e)
		return 0;
	id = bpf_get_current_pid_tgid();
	cur = (struct task_struct *)bpf_get_current_task();
	e->v[0] = id >> 32;
	e->v[1] = (__u32)id;
	e->v[2] = BPF_CORE_READ(p, wake_cpu);
	sdc_comm(e, cur);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	return wakeup(p);
}

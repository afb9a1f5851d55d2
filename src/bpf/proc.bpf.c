/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Process life: fork (a child of a target becomes a target: the filter
 * follows the whole process tree in the kernel), exec, exit.  Loaded
 * whenever the sidecar runs; emit_events 0 keeps the filter work only. */
#include "src/bpf/common.bpf.h"

const volatile int emit_events = 1;

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 one = 1;
	struct sdc_event *e;

	if (!is_target(ptgid))
		return 0;
	if (ctgid != ptgid)
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	if (!emit_events)
		return 0;
	e = sdc_reserve(SDC_FORK, ptgid, BPF_CORE_READ(parent, pid));
	if (!e)
		return 0;
	e->v[0] = ctgid;
	e->v[1] = BPF_CORE_READ(child, pid);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct sdc_event *e;
	long n;

	if (!emit_events || !is_target(tgid))
		return 0;
	e = sdc_reserve(SDC_EXEC, tgid, BPF_CORE_READ(p, pid));
	if (!e)
		return 0;
	e->v[0] = old_pid;
	n = bpf_probe_read_kernel_str(e->data, SDC_DATA_MAX,
				      BPF_CORE_READ(bprm, filename));
	e->len = n > 0 ? (__u32)n : 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct sdc_event *e;

	if (!is_target(tgid))
		return 0;
	if (emit_events) {
		e = sdc_reserve(SDC_EXIT, tgid, BPF_CORE_READ(p, pid));
		if (e) {
			e->v[0] = BPF_CORE_READ(p, exit_code);
			e->v[1] = group_dead;
			bpf_ringbuf_submit(e, 0);
		}
	}
	return 0;
}

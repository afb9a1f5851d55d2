/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Signals sent to the target (by anyone) and delivered in it. */
#include "src/bpf/common.bpf.h"

SEC("tp_btf/signal_generate")
int BPF_PROG(on_generate, int sig, struct kernel_siginfo *info,
	     struct task_struct *task, int group, int result)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct task_struct *cur;
	struct sdc_event *e;
	__u64 id;

	/* Single-step and breakpoint traps are the tracer's doing (a
	 * single-stepping backend makes one per instruction). */
	if (!is_target(tgid) ||
	    (sig == 5 /* SIGTRAP */ && info &&
	     BPF_CORE_READ(info, si_code) >= 1 /* TRAP_BRKPT */ &&
	     BPF_CORE_READ(info, si_code) <= 4 /* TRAP_HWBKPT */))
		return 0;
	e = sdc_reserve(SDC_SIG_GENERATE, tgid, BPF_CORE_READ(task, pid));
	if (!e)
		return 0;
	id = bpf_get_current_pid_tgid();
	cur = (struct task_struct *)bpf_get_current_task();
	e->v[0] = sig;
	e->v[1] = info ? BPF_CORE_READ(info, si_code) : 0;
	e->v[2] = id >> 32;
	e->v[3] = (__u32)id;
	e->v[4] = result;
	sdc_comm(e, cur);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(on_deliver, int sig, struct kernel_siginfo *info,
	     struct k_sigaction *ka)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_SIG_DELIVER);
	if (!e)
		return 0;
	e->v[0] = sig;
	e->v[1] = info ? BPF_CORE_READ(info, si_code) : 0;
	e->v[2] = (__u64)BPF_CORE_READ(ka, sa.sa_handler);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

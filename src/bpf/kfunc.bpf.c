/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* A kernel function (--event kprobe:FUNC) called by the target: entry
 * with up to six arguments, exit with the return value.  fentry/fexit
 * (BPF trampolines, through the function's BTF) or, where the kernel has
 * them, kprobe/kretprobe; user space picks one pair and sets the target
 * before loading.  One object per function. */
#include "src/bpf/common.bpf.h"

const volatile __u16 event_id = 0;

SEC("fentry/placeholder")
int on_fentry(void *ctx)
{
	struct sdc_event *e;
	__u64 n, i;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_KFUNC_ENTRY);
	if (!e)
		return 0;
	e->id = event_id;
	n = bpf_get_func_arg_cnt(ctx);
	for (i = 0; i < 6 && i < n; i++)
		bpf_get_func_arg(ctx, (__u32)i, &e->v[i]);
	e->v[6] = n;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("fexit/placeholder")
int on_fexit(void *ctx)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_KFUNC_EXIT);
	if (!e)
		return 0;
	e->id = event_id;
	bpf_get_func_ret(ctx, &e->v[0]);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(on_kprobe)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_KFUNC_ENTRY);
	if (!e)
		return 0;
	e->id = event_id;
	e->v[0] = PT_REGS_PARM1(ctx);
	e->v[1] = PT_REGS_PARM2(ctx);
	e->v[2] = PT_REGS_PARM3(ctx);
	e->v[3] = PT_REGS_PARM4(ctx);
	e->v[4] = PT_REGS_PARM5(ctx);
	e->v[5] = 0;
	e->v[6] = 5;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("kretprobe")
int BPF_KRETPROBE(on_kretprobe)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_KFUNC_EXIT);
	if (!e)
		return 0;
	e->id = event_id;
	e->v[0] = PT_REGS_RC(ctx);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

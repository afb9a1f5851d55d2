/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Page faults the target takes in user mode: the fault (address, ip,
 * error code: bit 0 present, 1 write, 2 user, 4 instruction fetch) from
 * exceptions:page_fault_user, then how the kernel counted it — major or
 * minor — from the software perf events PAGE_FAULTS_MAJ/MIN, which fire
 * in the faulting thread once the fault is handled (SDC_FAULT_DONE). */
#include "src/bpf/common.bpf.h"

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_FAULT);
	if (!e)
		return 0;
	e->v[0] = address;
	e->v[1] = BPF_CORE_READ(regs, ip);
	e->v[2] = error_code;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int counted(struct bpf_perf_event_data *ctx, int major)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_FAULT_DONE);
	if (!e)
		return 0;
	e->v[0] = ctx->addr;
	e->v[1] = major;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("perf_event")
int on_major(struct bpf_perf_event_data *ctx)
{
	return counted(ctx, 1);
}

SEC("perf_event")
int on_minor(struct bpf_perf_event_data *ctx)
{
	return counted(ctx, 0);
}

// SPDX-License-Identifier: GPL-2.0
/* Page faults the target takes in user mode: address, ip, error code
 * (bit 0 present, 1 write, 2 user, 4 instruction fetch). */
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

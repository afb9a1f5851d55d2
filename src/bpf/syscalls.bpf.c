/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* System calls of the target: entry with the six arguments (and the path
 * for calls that take one), exit with the return value. */
#include "src/bpf/common.bpf.h"

/* Which argument is a path, for the x86-64 calls that take one (-1:
 * none).  Kept short: reading a user string costs a copy per call. */
static __always_inline int path_arg(long nr)
{
	switch (nr) {
	case 2:	 /* open */
	case 4:	 /* stat */
	case 6:	 /* lstat */
	case 21: /* access */
	case 59: /* execve */
	case 80: /* chdir */
	case 83: /* mkdir */
	case 84: /* rmdir */
	case 87: /* unlink */
	case 89: /* readlink */
		return 0;
	case 257: /* openat */
	case 262: /* newfstatat */
	case 263: /* unlinkat */
	case 269: /* faccessat */
	case 322: /* execveat */
	case 332: /* statx */
	case 437: /* openat2 */
	case 439: /* faccessat2 */
		return 1;
	}
	return -1;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_enter, struct pt_regs *regs, long nr)
{
	struct sdc_event *e;
	int pa;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_SYS_ENTER);
	if (!e)
		return 0;
	e->v[0] = nr;
	e->v[1] = BPF_CORE_READ(regs, di);
	e->v[2] = BPF_CORE_READ(regs, si);
	e->v[3] = BPF_CORE_READ(regs, dx);
	e->v[4] = BPF_CORE_READ(regs, r10);
	e->v[5] = BPF_CORE_READ(regs, r8);
	e->v[6] = BPF_CORE_READ(regs, r9);
	pa = path_arg(nr);
	if (pa >= 0) {
		long n = bpf_probe_read_user_str(e->data, SDC_DATA_MAX,
						 (const void *)e->v[1 + pa]);

		e->len = n > 0 ? (__u32)n : 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_exit, struct pt_regs *regs, long ret)
{
	struct sdc_event *e;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_SYS_EXIT);
	if (!e)
		return 0;
	e->v[0] = BPF_CORE_READ(regs, orig_ax);
	e->v[1] = ret;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

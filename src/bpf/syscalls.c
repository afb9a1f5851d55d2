/* SPDX-License-Identifier: MIT */
/* Sidecar feature: system call events (raw_syscalls; kernel side:
 * syscalls.bpf.c). */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/syscalls.skel.h"

SDC_FEATURE(sdc_syscalls_feature, ps_syscalls,
	    "the system call events (raw_syscalls)", 0, (void)0)

/* SPDX-License-Identifier: MIT */
/* Sidecar feature: system call events (raw_syscalls; kernel side:
 * syscalls.bpf.c). */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/syscalls.skel.h"

SDC_FEATURE_START(sdc_syscalls_start, ps_syscalls,
		  "the system call events (raw_syscalls)", (void)0)

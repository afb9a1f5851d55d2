/* SPDX-License-Identifier: MIT */
/* Sidecar feature: scheduler events (sched_switch, sched_waking and
 * sched_wakeup; kernel side: sched.bpf.c). */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/sched.skel.h"

SDC_FEATURE(sdc_sched_feature, ps_sched,
	    "the scheduler events (sched_switch, sched_waking, sched_wakeup)",
	    0, sk->rodata->recorder_tgid = (__u32)m->recorder_tgid)

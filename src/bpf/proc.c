/* SPDX-License-Identifier: MIT */
/* Sidecar feature: process life (fork, exec, exit; kernel side:
 * proc.bpf.c).  Always loaded: its fork handler adds each child of a
 * target to the filter, so the whole process tree is followed. */
#include <errno.h>
#include <stdbool.h>

#include "src/bpf/features.h"
#include "bpf/proc.skel.h"

static void proc_destroy(void *p)
{
	ps_proc__destroy(p);
}

static int proc_start(const struct sdc_maps *m, int emit, struct sdc_part *part)
{
	struct ps_proc *sk = ps_proc__open();
	int r;

	if (!sk)
		return sdc_fail("the process events (fork, exec, exit)",
				-errno);
	sk->rodata->emit_events = emit;
	r = sdc_share_maps(sk->obj, m);
	if (!r && (r = ps_proc__load(sk)))
		r = sdc_fail("the process events (fork, exec, exit)", r);
	if (!r && (r = ps_proc__attach(sk)))
		r = sdc_fail("the process events (fork, exec, exit)", r);
	if (r) {
		ps_proc__destroy(sk);
		return r;
	}
	part->skel = sk;
	part->destroy = proc_destroy;
	return 0;
}

const struct sdc_feature sdc_proc_feature = {.start = proc_start};

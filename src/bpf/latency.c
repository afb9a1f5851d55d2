/* SPDX-License-Identifier: MIT */
/* Sidecar part: the latency timer behind latency triggers on
 * free-running threads (kernel side: latency.bpf.c, shared types:
 * latency.h).  One skeleton per spec: a uprobe at the function's entry
 * and a uretprobe at its return, the spec's index as their cookie, its
 * threshold and function address set before load. */
#include <errno.h>
#include <stdbool.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "src/bpf/features.h"
#include "src/bpf/latency.h"
#include "bpf/latency.skel.h"

int sdc_latency_start(const struct sdc_maps *m, unsigned index,
		      const char *binary, uint64_t func_offset,
		      uint64_t func_addr, uint64_t threshold_ns,
		      struct ps_latency **out)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct ps_latency *sk;
	struct bpf_link *l;
	int r;

	sk = ps_latency__open();
	if (!sk)
		return sdc_fail("the latency timer", -errno);
	*out = sk;
	sk->rodata->thresholds[index] = threshold_ns;
	sk->rodata->func_addr[index] = func_addr;
	r = sdc_share_maps(sk->obj, m);
	if (r)
		return r;
	r = ps_latency__load(sk);
	if (r)
		return sdc_fail("the latency timer", r);
	uo.bpf_cookie = index;
	uo.retprobe = false;
	l = bpf_program__attach_uprobe_opts(sk->progs.on_entry, -1, binary,
					    func_offset, &uo);
	if (!l)
		return sdc_fail("the uprobe of a latency trigger", -errno);
	sk->links.on_entry = l;
	uo.retprobe = true;
	l = bpf_program__attach_uprobe_opts(sk->progs.on_return, -1, binary,
					    func_offset, &uo);
	if (!l)
		return sdc_fail("the uretprobe of a latency trigger", -errno);
	sk->links.on_return = l;
	return 0;
}

uint64_t sdc_latency_untimed(const struct ps_latency *sk)
{
	__u32 k = 0;
	__u64 v = 0;

	if (sk && !bpf_map_lookup_elem(bpf_map__fd(sk->maps.untimed), &k, &v))
		return v;
	return 0;
}

void sdc_latency_destroy(struct ps_latency *sk)
{
	ps_latency__destroy(sk);
}

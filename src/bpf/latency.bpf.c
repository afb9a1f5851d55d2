/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Latency triggers on free-running threads: a uprobe at a function's
 * entry pushes the time on the thread's stack, the uretprobe pops it, and
 * only calls longer than their threshold reach user space (SDC_SLOW_CALL).
 * The attach cookie is the spec index; thresholds[] is filled before
 * load. */
#include "src/bpf/common.bpf.h"
#include "src/bpf/latency.h"

const volatile __u64 thresholds[LAT_MAX_FUNCS] = {};
const volatile __u64 func_addr[LAT_MAX_FUNCS] = {};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct lat_stack);
} stacks SEC(".maps");

/* Calls whose return was lost (a longjmp past them, a stack deeper than
 * LAT_STACK_DEPTH): counted, not timed. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} untimed SEC(".maps");

static const struct lat_stack empty;

static __always_inline void count_untimed(void)
{
	__u32 z = 0;
	__u64 *n = bpf_map_lookup_elem(&untimed, &z);

	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("uprobe")
int on_entry(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lat_stack *st;
	__u32 d;

	if (!current_is_target())
		return 0;
	st = bpf_map_lookup_elem(&stacks, &tid);
	if (!st) {
		bpf_map_update_elem(&stacks, &tid, &empty, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&stacks, &tid);
		if (!st)
			return 0;
	}
	d = st->depth;
	if (d >= LAT_STACK_DEPTH) {
		st->depth = d + 1; /* keep returns balanced */
		count_untimed();
		return 0;
	}
	st->ts[d] = bpf_ktime_get_ns();
	st->fn[d] = bpf_get_attach_cookie(ctx);
	st->depth = d + 1;
	return 0;
}

SEC("uretprobe")
int on_return(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, d;
	__u64 fn, dur;
	struct lat_stack *st;
	struct sdc_event *e;

	st = bpf_map_lookup_elem(&stacks, &tid);
	if (!st || !st->depth)
		return 0;
	d = --st->depth;
	if (d >= LAT_STACK_DEPTH)
		return 0;
	fn = st->fn[d];
	if (fn != bpf_get_attach_cookie(ctx) || fn >= LAT_MAX_FUNCS) {
		count_untimed();
		return 0;
	}
	dur = now - st->ts[d];
	if (dur <= thresholds[fn])
		return 0;
	e = sdc_reserve(SDC_SLOW_CALL, id >> 32, tid);
	if (!e)
		return 0;
	e->ts = now;
	e->id = (__u16)fn;
	e->v[0] = st->ts[d];
	e->v[1] = dur;
	e->v[2] = func_addr[fn];
	bpf_ringbuf_submit(e, 0);
	return 0;
}

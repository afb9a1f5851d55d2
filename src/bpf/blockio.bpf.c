/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Block I/O the target's threads issue: issue (in the thread's context)
 * and completion (often in an interrupt: matched by device and sector). */
#include "src/bpf/common.bpf.h"

struct bio_key {
	__u64 dev;
	__u64 sector;
};

struct bio_val {
	__u64 ts;
	__u32 pid, tid;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* exited threads age out */
	__uint(max_entries, 4096);
	__type(key, struct bio_key);
	__type(value, struct bio_val);
} inflight SEC(".maps");

SEC("tracepoint/block/block_rq_issue")
int on_issue(struct trace_event_raw_block_rq *ctx)
{
	struct bio_key k = {ctx->dev, ctx->sector};
	struct bio_val v;
	struct sdc_event *e;
	__u64 id = bpf_get_current_pid_tgid();

	if (!is_target(id >> 32))
		return 0;
	v.ts = bpf_ktime_get_ns();
	v.pid = id >> 32;
	v.tid = (__u32)id;
	bpf_map_update_elem(&inflight, &k, &v, BPF_ANY);
	e = sdc_reserve(SDC_BIO_ISSUE, v.pid, v.tid);
	if (!e)
		return 0;
	e->v[0] = ctx->dev;
	e->v[1] = ctx->sector;
	e->v[2] = ctx->bytes;
	bpf_probe_read_kernel_str(e->data, sizeof(ctx->rwbs), ctx->rwbs);
	e->len = sizeof(ctx->rwbs);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int on_complete(struct trace_event_raw_block_rq_completion *ctx)
{
	struct bio_key k = {ctx->dev, ctx->sector};
	struct bio_val *v = bpf_map_lookup_elem(&inflight, &k);
	struct sdc_event *e;

	if (!v)
		return 0;
	e = sdc_reserve(SDC_BIO_DONE, v->pid, v->tid);
	if (e) {
		e->v[0] = ctx->dev;
		e->v[1] = ctx->sector;
		e->v[2] = (__u64)ctx->nr_sector * 512;
		e->v[3] = ctx->error;
		e->v[4] = v->ts;
		bpf_probe_read_kernel_str(e->data, sizeof(ctx->rwbs),
					  ctx->rwbs);
		e->len = sizeof(ctx->rwbs);
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(&inflight, &k);
	return 0;
}

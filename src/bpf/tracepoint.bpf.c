/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/* Any tracepoint (--event tracepoint:CAT:NAME): the raw record, up to
 * SDC_DATA_MAX bytes, for the target's threads.  User space decodes the
 * fields with the tracepoint's format file.  One object per event. */
#include "src/bpf/common.bpf.h"

const volatile __u16 event_id = 0;
const volatile __u32 record_size = 0;

SEC("tracepoint")
int on_tracepoint(void *ctx)
{
	struct sdc_event *e;
	__u32 n = record_size;

	if (!current_is_target())
		return 0;
	e = sdc_reserve_current(SDC_TRACEPOINT);
	if (!e)
		return 0;
	e->id = event_id;
	if (n > SDC_DATA_MAX)
		n = SDC_DATA_MAX;
	if (n && !bpf_probe_read_kernel(e->data, n, ctx))
		e->len = n;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

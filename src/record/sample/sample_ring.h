/* SPDX-License-Identifier: MIT */
/* One thread's sampling event and its ring (prefix sring_): a perf event
 * on that thread (cpu -1, no inherit) whose data ring is mapped read-only
 * with write_backward, which puts the kernel in overwrite mode: it never
 * waits for ptscope and the ring always holds the newest samples, the
 * last --snapshot-size of them.  A snapshot pauses the ring, walks it
 * from the newest record (backward rings make that walk possible without
 * a reader keeping up), and hands the samples over oldest first in the
 * recording's form (src/recording/samples.h).
 */
#ifndef PTSCOPE_RECORD_SAMPLE_RING_H
#define PTSCOPE_RECORD_SAMPLE_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/recording/samples.h"

/* How every thread's event is opened (owned by the backend). */
struct sring_config {
	struct perf_event_attr attr; /* sample_type etc. (sample_probe.h) */
	uint64_t data_size;	     /* ring bytes: a power of two pages */
};

struct sring {
	pid_t tid;
	int fd; /* -1 when closed */
	struct perf_event_mmap_page *meta;
	size_t map_len;
	const uint8_t *data;
	uint64_t size;
	int enabled;
};

/* Open @tid's event (disabled) and map its ring.  Returns 0 or
 * one-sentence errors: PS_ERR_PERM (perf_event_paranoid: what to change),
 * PS_ERR_NOT_FOUND (the thread is gone), PS_ERR_LIMIT (fds, or locked
 * memory for the ring: smaller --snapshot-size), PS_ERR_NO_HW, PS_ERR_IO. */
int sring_open(const struct sring_config *c, pid_t tid, struct sring *r);

/* PERF_EVENT_IOC_ENABLE / DISABLE.  Returns 0 or PS_ERR_IO. */
int sring_enable(struct sring *r, int on);

/* The samples in the ring now, oldest first, appended to @out.  The ring
 * is paused while it is read.  Returns 0, PS_ERR_NOT_FOUND (no sample
 * yet), PS_ERR_NOMEM. */
int sring_extract(const struct sring_config *c, struct sring *r,
		  struct recs_buf *out);

/* Walk the ring bytes @data (@size, a power of two) whose newest record
 * starts at backward head @head; each sample goes to @out as a record.
 * Apart from sring_extract for the unit tests.  Returns 0 or PS_ERR_*. */
int sring_parse(const struct perf_event_attr *a, const uint8_t *data,
		uint64_t size, uint64_t head, struct recs_buf *out);

void sring_close(struct sring *r); /* accepts a closed ring */

#endif /* PTSCOPE_RECORD_SAMPLE_RING_H */

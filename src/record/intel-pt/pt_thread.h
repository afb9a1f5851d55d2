/* SPDX-License-Identifier: MIT */
/* One thread's Intel PT (prefix ptt_): an intel_pt perf event on that
 * thread (cpu -1, no inherit) with its AUX area mapped read-only, which
 * puts the kernel in overwrite mode: the newest --snapshot-size bytes are
 * always there to take.  Its own small data ring only receives the
 * kernel's AUX records (one per sched-out in snapshot mode); the sideband
 * (MMAP2, COMM, EXIT) comes from a dummy software event on the same
 * thread with a ring of its own, so a flood of context switches cannot
 * push a library's MMAP2 out.  Plus the trigger
 * breakpoints of that thread, in the PT event's group with aux_pause
 * where the kernel allows it (Linux 6.13+), so a hit stops PT in the
 * kernel at the trigger instruction.
 *
 * All kernel calls go through struct ptk_ops (pt_kernel.h).
 */
#ifndef PTSCOPE_RECORD_PT_THREAD_H
#define PTSCOPE_RECORD_PT_THREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/record/intel-pt/pt_kernel.h"
#include "src/record/intel-pt/sideband.h"

#define PTT_MAX_BPS 4

/* How every thread's events are opened (owned by the backend). */
struct ptt_config {
	const struct ptk_ops *k;
	uint32_t type;	     /* intel_pt PMU type */
	uint64_t cfg[3];     /* config, config1, config2 (pt_pmu.h) */
	int kernel;	     /* trace kernel code too */
	uint64_t aux_size;   /* bytes: a power of two number of pages */
	uint64_t data_pages; /* sideband ring pages: a power of two */
	/* Put breakpoints in the PT group with aux_pause: -1 not tried
	 * yet, 1 the kernel takes it, 0 it refused (older than 6.13) or it
	 * is not wanted (--multi-snapshot keeps tracing after a hit). */
	int aux_pause;
	int build_id; /* -1 not tried, 1 MMAP2 records carry build ids */
};

/* The layouts of the two kinds of rings. */
extern const struct sb_layout ptt_pt_layout, ptt_bp_layout;

struct ptt_bp {
	int fd; /* -1: unused */
	uint64_t addr;
	struct perf_event_mmap_page *meta;
	size_t map_len;
	const uint8_t *data;
	uint64_t size;
	int in_group; /* 1: aux_pause stops PT in the kernel at a hit */
};

struct ptt {
	pid_t tid;
	int fd; /* the intel_pt event, -1 when closed */
	struct perf_event_mmap_page *meta;
	size_t map_len;
	const uint8_t *data; /* its ring: AUX records */
	uint64_t data_size;
	int sb_fd; /* the sideband event, -1 when closed */
	struct perf_event_mmap_page *sb_meta;
	size_t sb_map_len;
	const uint8_t *sb_data;
	uint64_t sb_size;
	const uint8_t *aux; /* read-only AUX mapping */
	uint64_t aux_len;
	int enabled;
	/* From the sideband so far. */
	uint64_t aux_written;	   /* sum of AUX record sizes (not in
				    * overwrite mode: see pt_thread.c) */
	uint64_t aux_truncated;	   /* AUX records with the TRUNCATED flag */
	uint64_t aux_partial;	   /* ... with PARTIAL (gaps) */
	uint64_t lost;		   /* sideband records lost */
	uint64_t aux_records_lost; /* AUX records lost (flags unknown) */
	uint64_t itrace_starts;	   /* ITRACE_START records */
	struct ptt_bp bp[PTT_MAX_BPS];
	int nbp;
};

/* Open @tid's PT event (disabled) and sideband event, map their rings and
 * set @filter (the
 * PERF_EVENT_IOC_SET_FILTER text, or NULL).
 * Returns 0 or one-sentence errors: PS_ERR_PERM (privilege: what to
 * change), PS_ERR_NO_HW, PS_ERR_LIMIT (AUX mmap refused: smaller
 * --snapshot-size or raise perf_event_mlock_kb), PS_ERR_NOT_FOUND (the
 * thread is gone), PS_ERR_INVAL (filter refused), PS_ERR_IO. */
int ptt_open(struct ptt_config *c, pid_t tid, const char *filter,
	     struct ptt *t);

/* PERF_EVENT_IOC_ENABLE / DISABLE.  Returns 0 or PS_ERR_IO. */
int ptt_enable(const struct ptt_config *c, struct ptt *t, int on);

/* A copy of the AUX area's valid bytes, oldest first: disable (the kernel
 * publishes aux_head), copy, enable again if it was enabled.  Returns 0,
 * PS_ERR_NOT_FOUND (nothing traced yet), PS_ERR_IO, PS_ERR_NOMEM. */
int ptt_snapshot(const struct ptt_config *c, struct ptt *t, uint8_t **buf,
		 size_t *len);

/* A trigger breakpoint at @addr on @t's thread (in the PT group with
 * aux_pause when the kernel takes it).  Returns 0, PS_ERR_LIMIT (4
 * already), PS_ERR_INVAL (the kernel refuses that address: it says which),
 * PS_ERR_PERM, PS_ERR_NOT_FOUND (thread gone), PS_ERR_NO_HW, PS_ERR_IO. */
int ptt_bp_add(struct ptt_config *c, struct ptt *t, uint64_t addr);

/* 1 if breakpoint @i has samples waiting. */
int ptt_bp_pending(const struct ptt *t, int i);

/* Records of @t's sideband ring / of its PT event's ring (AUX,
 * ITRACE_START, LOST of AUX records) / of breakpoint @i's ring, to @fn
 * (may be NULL; see sb_ring_read); the counts above are kept. */
int ptt_read_sideband(struct ptt *t, sb_record_fn fn, void *ctx);
int ptt_read_aux_records(struct ptt *t, sb_record_fn fn, void *ctx);
int ptt_read_bp(struct ptt *t, int i, sb_record_fn fn, void *ctx);

/* Close the breakpoints only / everything.  Accept closed state. */
void ptt_bp_close_all(const struct ptt_config *c, struct ptt *t);
void ptt_close(const struct ptt_config *c, struct ptt *t);

/* The paranoid/mlock sentence parts, read through @k (-1000 if unknown). */
int ptt_paranoid(const struct ptk_ops *k);
long ptt_mlock_kb(const struct ptk_ops *k);

#endif /* PTSCOPE_RECORD_PT_THREAD_H */

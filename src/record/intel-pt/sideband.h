/* SPDX-License-Identifier: MIT */
/* The perf data ring beside an intel_pt event (prefix sb_): reading its
 * records in order (one may straddle the ring's end) and parsing the ones
 * the backend uses: MMAP2 (with a build id when the kernel sends one),
 * COMM, EXIT, SWITCH, ITRACE_START, AUX (truncated / overwrite / partial
 * flags), LOST, and the SAMPLE of a breakpoint event.
 *
 * Records carry a sample_id trailer (attr.sample_id_all) whose layout
 * follows attr.sample_type; struct sb_layout says which fields are there.
 */
#ifndef PTSCOPE_RECORD_SIDEBAND_H
#define PTSCOPE_RECORD_SIDEBAND_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

/* What the event that wrote the ring was opened with. */
struct sb_layout {
	uint64_t sample_type;	   /* PERF_SAMPLE_* */
	int sample_id_all;	   /* trailers on non-sample records */
	uint64_t sample_regs_user; /* mask, for PERF_SAMPLE_REGS_USER */
};

struct sb_id {
	uint32_t pid, tid;
	uint64_t time; /* the event's clock (CLOCK_MONOTONIC here) */
	uint64_t id;
	uint32_t cpu;
	int has_tid, has_time, has_id, has_cpu;
};

struct sb_record {
	uint32_t type; /* PERF_RECORD_* */
	uint16_t misc;
	struct sb_id sid;
	union {
		struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			uint32_t prot, flags;
			uint8_t build_id[20];
			uint8_t build_id_len; /* 0: the record has dev/inode */
			uint32_t maj, min;
			uint64_t ino;
			const char *filename; /* points into the record */
		} mmap2;
		struct {
			uint32_t pid, tid;
			const char *comm; /* points into the record */
			int exec;	  /* PERF_RECORD_MISC_COMM_EXEC */
		} comm;
		struct {
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} exit;
		struct {
			int out;	   /* PERF_RECORD_MISC_SWITCH_OUT */
			int preempt;	   /* ..._SWITCH_OUT_PREEMPT */
			uint32_t pid, tid; /* CPU-wide: the other task */
		} sw;
		struct {
			uint32_t pid, tid;
		} itrace;
		struct {
			uint64_t offset, size, flags; /* PERF_AUX_FLAG_* */
		} aux;
		struct {
			uint64_t id, lost;
		} lost;
		struct {
			uint64_t ip;
			uint64_t rdi; /* REGS_USER with DI in the mask */
			int has_rdi;
		} sample;
	} u;
};

/* Parse the record of @len bytes at @rec.  Returns 0, PS_ERR_TRUNCATED
 * (shorter than its fields) or PS_ERR_FORMAT (header size disagrees with
 * @len).  Unknown types parse to their header and trailer only. */
int sb_parse(const uint8_t *rec, size_t len, const struct sb_layout *lay,
	     struct sb_record *out);

typedef int (*sb_record_fn)(void *ctx, const uint8_t *rec, size_t len);

/* Hand every record between data_tail and data_head of the ring (@meta:
 * the control page; @data, @size: the data pages, @size a power of two)
 * to @fn, then move data_tail past them.  A nonzero return of @fn stops
 * the walk (records up to and including that one are consumed) and is
 * returned.  Returns the number of records, @fn's return, or
 * PS_ERR_FORMAT (a record header that cannot be right). */
int sb_ring_read(struct perf_event_mmap_page *meta, const uint8_t *data,
		 uint64_t size, sb_record_fn fn, void *ctx);

/* "truncated", "truncated, partial", ... for an AUX record's flags into
 * @buf ("" for none). */
void sb_aux_flags_text(uint64_t flags, char *buf, size_t size);

#endif /* PTSCOPE_RECORD_SIDEBAND_H */

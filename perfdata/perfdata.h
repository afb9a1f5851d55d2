/* SPDX-License-Identifier: MIT */
/* perf.data import (libptscope_perfdata.a): Intel PT recordings made with
 * `perf record -e intel_pt//` decoded into a trace.  dec_decode_perfdata()
 * is the way in; the reader under it (prefix pd_) is also used by tools
 * and tests.  The importer drives the decoder only through its public
 * API (decoder/decoder.h), as the recording-file replay does: a session,
 * the binaries of each process, then each thread's or CPU's PT.
 *
 * Layout facts used (tools/perf/Documentation/perf.data-file-format.txt):
 * the file starts with magic "PERFILE2" and a u64 header size.  The file
 * layout (header size 104) has sections {offset, size} for the attrs (at
 * byte 24) and the data (at byte 40), a feature bitmap at byte 72, and
 * after the data one section per feature bit set.  The pipe layout (header
 * size 16) is followed directly by records; attributes, features and build
 * ids then arrive as records of their own (HEADER_ATTR, HEADER_FEATURE,
 * HEADER_BUILD_ID).  Each record is {u32 type, u16 misc, u16 size} +
 * payload; an AUXTRACE record carries {u64 size, offset, reference; u32
 * idx, tid, cpu, reserved} and is followed by `size` bytes of AUX data not
 * counted in its header size.
 *
 * Files: perfdata.c (header, record walk, AUX data), perfdata_attr.c
 * (event attributes, sample_id trailers), perfdata_buildid.c (build-id
 * table, finding binaries), perfdata_read.c (the records → struct
 * pd_recording), perfdata_streams.c (AUX chunks → streams),
 * kernelmask.c (kernel parts of a stream masked, kernelmask.h),
 * perfdata_import.c (decoding a recording).
 */
#ifndef PTSCOPE_PERFDATA_H
#define PTSCOPE_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/decoder.h"

/* ---- decoding a recording (perfdata_import.c) ---- */

/* How dec_decode_perfdata reports what it decodes around. */
/* Code the recording does not carry, from the command line (decode's
 * --elf and --raw): binaries recorded on another machine, the vDSO, JIT
 * code, dumped pages. */
struct dec_perfdata_code {
	const char *path;     /* the ELF file; raw bytes: their label */
	const uint8_t *bytes; /* raw code, @len bytes (NULL: an ELF file) */
	size_t len;
	/* raw bytes: where they go; an ELF file: where its lowest PT_LOAD
	 * goes (0: its link addresses), unless @stand_in */
	uint64_t addr;
	/* an ELF file that stands in for the recording's mappings of a file
	 * of the same name or build id, where they were mapped, in place of
	 * what the recorded path or a build-id cache holds */
	int stand_in;
};

struct dec_perfdata_opts {
	const char *name; /* the file, in messages (NULL: "perf.data") */
	/* One sentence per problem the decode goes on around: a binary
	 * that is not found, data the kernel dropped...  NULL: silent. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	uint64_t only_pid; /* decode this process only (0: every one) */
	/* added to every decoded process after what it mapped, so that it
	 * takes the place of what it overlaps; stand-ins are used where
	 * they match */
	const struct dec_perfdata_code *code;
	size_t ncode;
};

/* Decode an Intel PT recording made by `perf record -e intel_pt//` (file
 * or pipe layout, per-thread or per-CPU, full or snapshot mode) held in
 * @buf (@len) to @w.  @cfg (may be NULL) gives inline_frames, span_info
 * and any parameter the caller wants to force; the rest (TSC conversion,
 * MTC frequency, CPUID 0x15 ratio, max non-turbo ratio, CPU) comes from
 * the recording.  Binaries are found by path or build id
 * (pd_find_binary); one that is missing is warned about and its code
 * left undecoded.  *@stats (may be NULL) gets the counts.  Returns 0,
 * PS_ERR_INVAL, PS_ERR_FORMAT / PS_ERR_TRUNCATED (not a readable
 * perf.data), PS_ERR_NOT_FOUND / PS_ERR_UNSUPPORTED ("perf.data holds no
 * Intel PT data: ..."), PS_ERR_NOMEM or the writer's error. */
int dec_decode_perfdata(const struct dec_config *cfg, const uint8_t *buf,
			size_t len, const struct dec_perfdata_opts *o,
			struct ps_writer *w, struct dec_stats *stats);

/* ---- the file: header, records, AUX data (perfdata.c) ---- */

/* Record types (linux/perf_event.h and perf's own, from 64 on). */
enum {
	PD_RECORD_MMAP = 1,
	PD_RECORD_LOST = 2,
	PD_RECORD_COMM = 3,
	PD_RECORD_EXIT = 4,
	PD_RECORD_FORK = 7,
	PD_RECORD_SAMPLE = 9,
	PD_RECORD_MMAP2 = 10,
	PD_RECORD_AUX = 11,
	PD_RECORD_ITRACE_START = 12,
	PD_RECORD_SWITCH = 14,
	PD_RECORD_SWITCH_CPU_WIDE = 15,
	PD_RECORD_HEADER_ATTR = 64,
	PD_RECORD_HEADER_TRACING_DATA = 66,
	PD_RECORD_HEADER_BUILD_ID = 67,
	PD_RECORD_AUXTRACE_INFO = 70,
	PD_RECORD_AUXTRACE = 71,
	PD_RECORD_TIME_CONV = 79,
	PD_RECORD_HEADER_FEATURE = 80,
	PD_RECORD_COMPRESSED = 81,
	PD_RECORD_COMPRESSED2 = 83,
};

/* Feature bits (perf's util/header.h). */
enum { PD_FEAT_BUILD_ID = 2, PD_FEAT_CPUID = 9, PD_FEAT_MAX = 256 };

/* header.misc bits */
#define PD_MISC_CPUMODE_MASK 7
#define PD_MISC_KERNEL 1
#define PD_MISC_USER 2
#define PD_MISC_SWITCH_OUT (1u << 13) /* SWITCH, SWITCH_CPU_WIDE */
#define PD_MISC_COMM_EXEC (1u << 13)  /* COMM */
#define PD_MISC_MMAP_DATA (1u << 13)  /* MMAP, MMAP2 */
#define PD_MISC_MMAP_BUILD_ID (1u << 14)
#define PD_MISC_BUILD_ID_SIZE (1u << 15) /* HEADER_BUILD_ID */

#define PD_BUILD_ID_MAX 20

/* The header of a perf.data file or stream. */
struct pd_file {
	int pipe;
	uint64_t attr_size;		/* file layout: bytes per attrs entry */
	uint64_t attrs_off, attrs_size; /* file layout */
	uint64_t data_off, data_size;	/* where the records are */
	uint64_t features[4];		/* file layout: feature bitmap */
};

/* Returns 0, PS_ERR_INVAL, PS_ERR_FORMAT (no magic, bad header size),
 * PS_ERR_TRUNCATED (a section runs past the end). */
int pd_file_read(const uint8_t *buf, size_t len, struct pd_file *out);

/* The section of feature @feat in the file layout: 1 with *data, *size;
 * 0 when the feature is absent (always in the pipe layout); or
 * PS_ERR_TRUNCATED. */
int pd_file_feature(const uint8_t *buf, size_t len, const struct pd_file *f,
		    int feat, const uint8_t **data, size_t *size);

/* One record. */
struct pd_record {
	uint32_t type;
	uint16_t misc;
	const uint8_t *body; /* after the 8-byte header; in the caller's buf */
	size_t body_len;     /* header size - 8 */
	uint64_t pos;	     /* byte offset of the record in the file */
	const uint8_t *aux;  /* AUXTRACE: the data that follows; else NULL */
	uint64_t aux_len;
};

/* Called for each record in file order; a negative return stops the walk
 * and is returned. */
typedef int (*pd_record_fn)(void *ctx, const struct pd_record *r);

/* Walk the records of perf.data bytes @buf (@len).  Returns the number of
 * records, PS_ERR_INVAL (NULL), PS_ERR_FORMAT (bad magic or header, a
 * record with size < 8), PS_ERR_TRUNCATED (a record or its AUX data runs
 * past the end), PS_ERR_UNSUPPORTED (compressed records: perf record -z),
 * or the callback's negative value. */
int pd_walk(const uint8_t *buf, size_t len, pd_record_fn fn, void *ctx);

#define PD_AUXTRACE_PAYLOAD 40

struct pd_aux {
	const uint8_t *data; /* points into the caller's buffer */
	uint64_t size;	     /* bytes at data */
	uint64_t offset;     /* offset of this chunk in the AUX area stream */
	uint64_t reference;
	uint32_t idx; /* mmap index (per-CPU: usually the cpu) */
	uint32_t tid;
	uint32_t cpu;
};

/* Called for each AUXTRACE chunk in file order; a negative return stops
 * the walk and is returned. */
typedef int (*pd_aux_fn)(void *ctx, const struct pd_aux *aux);

/* Walk the AUXTRACE records.  Returns the number of AUXTRACE chunks seen,
 * or the errors of pd_walk. */
int pd_walk_aux(const uint8_t *buf, size_t len, pd_aux_fn fn, void *ctx);

/* Concatenate, in file order, the AUX data of every chunk whose cpu is
 * @cpu (or all chunks when @cpu < 0) into a malloc'ed *out, *out_len.
 * Returns the number of chunks (0: *out NULL), or the errors of
 * pd_walk_aux, PS_ERR_NOMEM. */
int pd_collect_aux(const uint8_t *buf, size_t len, int cpu, uint8_t **out,
		   size_t *out_len);

/* ---- event attributes (perfdata_attr.c) ---- */

#define PD_SAMPLE_TID (1u << 1)
#define PD_SAMPLE_TIME (1u << 2)
#define PD_SAMPLE_ID (1u << 6)
#define PD_SAMPLE_CPU (1u << 7)
#define PD_SAMPLE_STREAM_ID (1u << 9)
#define PD_SAMPLE_IDENTIFIER (1u << 16)

struct pd_attr {
	uint32_t type; /* PMU type (intel_pt's from sysfs) */
	uint64_t config;
	uint64_t sample_type;
	uint64_t flags; /* the bit fields after read_format */
	uint64_t *ids;	/* owned */
	size_t nids;
};

#define PD_ATTR_EXCLUDE_USER (1ull << 4)
#define PD_ATTR_EXCLUDE_KERNEL (1ull << 5)
#define PD_ATTR_SAMPLE_ID_ALL (1ull << 18)

struct pd_attrs {
	struct pd_attr *v; /* owned */
	size_t n;
};

/* Add the attribute at @p (@len bytes: the attr, its size in its own
 * header) with @nids ids read from @ids (little-endian u64s).  Returns 0,
 * PS_ERR_FORMAT, PS_ERR_NOMEM. */
int pd_attrs_add(struct pd_attrs *a, const uint8_t *p, size_t len,
		 const uint8_t *ids, size_t nids);
/* The attrs section of the file layout.  Returns 0 or the errors above,
 * PS_ERR_TRUNCATED. */
int pd_attrs_read_file(struct pd_attrs *a, const uint8_t *buf, size_t len,
		       const struct pd_file *f);
void pd_attrs_free(struct pd_attrs *a);

/* The sample_id fields that sideband records carry at their end. */
struct pd_sample_id {
	int has_tid, has_time, has_cpu;
	uint32_t pid, tid, cpu;
	uint64_t time;
};

/* Parse the sample_id trailer of a non-sample record (@body, @len) into
 * *out (all "has" flags 0 when the records carry none).  The attribute is
 * chosen by the trailer's IDENTIFIER when the events have one. */
void pd_sample_id_parse(const struct pd_attrs *a, const uint8_t *body,
			size_t len, struct pd_sample_id *out);

/* ---- build ids and binaries (perfdata_buildid.c) ---- */

struct pd_build_id {
	uint8_t id[PD_BUILD_ID_MAX];
	uint8_t size; /* 0: unknown */
};

struct pd_build_id_entry {
	char *path; /* owned */
	int32_t pid;
	struct pd_build_id bid;
};

struct pd_build_ids {
	struct pd_build_id_entry *v; /* owned */
	size_t n;
};

/* Parse build-id records (the HEADER_BUILD_ID feature section, or one
 * pipe HEADER_BUILD_ID record) at @p (@len bytes, records with headers).
 * Returns 0, PS_ERR_FORMAT, PS_ERR_NOMEM. */
int pd_build_ids_parse(struct pd_build_ids *t, const uint8_t *p, size_t len);
/* The build id the table holds for @path (NULL: none). */
const struct pd_build_id *pd_build_ids_find(const struct pd_build_ids *t,
					    const char *path);
void pd_build_ids_free(struct pd_build_ids *t);

/* "0a1b..." of @b into @out (2 * size + 1 bytes). */
void pd_build_id_hex(const struct pd_build_id *b, char *out);

/* The file holding the code of module @path with build id @bid (size 0:
 * unknown), looked up as perf does: @path itself when its build id
 * matches (or none is known), else in the build-id caches
 * ($PERF_BUILDID_DIR or ~/.debug: .build-id/NN/REST[/elf|/vdso] and
 * PATH/ID[/elf|/vdso]) and /usr/lib/debug/.build-id/NN/REST.  Returns 0
 * with *found (malloc'ed), PS_ERR_NOT_FOUND with a detail naming the
 * module and what to do, PS_ERR_NOMEM. */
int pd_find_binary(const char *path, const struct pd_build_id *bid,
		   char **found);

/* Is a file of build id @file the build @rec (a recording's) names?  A
 * zero-padded 20-byte @rec matches a shorter @file.  0 when either is
 * unknown (size 0). */
int pd_build_id_equal(const struct pd_build_id *rec,
		      const struct pd_build_id *file);

/* The GNU build id of the ELF file at @path into *out (size 0: none).
 * Returns 0, PS_ERR_IO, PS_ERR_FORMAT (not ELF). */
int pd_file_build_id(const char *path, struct pd_build_id *out);

/* ---- the recording (perfdata_read.c) ---- */

/* AUXTRACE_INFO of Intel PT (perf's util/intel-pt.h, priv[] order). */
enum {
	PD_PT_PMU_TYPE,
	PD_PT_TIME_SHIFT,
	PD_PT_TIME_MULT,
	PD_PT_TIME_ZERO,
	PD_PT_CAP_USER_TIME_ZERO,
	PD_PT_TSC_BIT,
	PD_PT_NORETCOMP_BIT,
	PD_PT_HAVE_SCHED_SWITCH,
	PD_PT_SNAPSHOT_MODE,
	PD_PT_PER_CPU_MMAPS,
	PD_PT_MTC_BIT,
	PD_PT_MTC_FREQ_BITS,
	PD_PT_TSC_CTC_N,
	PD_PT_TSC_CTC_D,
	PD_PT_CYC_BIT,
	PD_PT_MAX_NONTURBO_RATIO,
	PD_PT_FILTER_STR_LEN,
	PD_PT_PRIV_MAX
};

#define PD_AUXTRACE_INTEL_PT 1

struct pd_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	char *path; /* owned */
	struct pd_build_id bid;
	uint64_t time;
	int kernel;   /* cpumode kernel (or pid -1) */
	uint64_t seq; /* record order */
};

struct pd_comm {
	uint32_t pid, tid;
	char name[16];
	int exec;
	uint64_t time, seq;
};

struct pd_cpu_switch {
	uint32_t cpu;
	struct dec_switch sw;
};

struct pd_chunk {
	struct pd_aux aux;
};

struct pd_recording {
	struct pd_file file;
	struct pd_attrs attrs;
	struct pd_build_ids build_ids;
	int has_info; /* an AUXTRACE_INFO was seen */
	uint32_t info_type;
	uint64_t priv[PD_PT_PRIV_MAX];
	size_t npriv; /* priv values present */
	int has_time_conv;
	uint64_t tc_shift, tc_mult, tc_zero;
	int tc_cap_zero; /* -1: the record is too old to say */
	char cpuid[64];	 /* HEADER_CPUID, "" when absent */
	struct pd_mmap *mmaps;
	size_t nmmaps;
	struct pd_comm *comms;
	size_t ncomms;
	struct pd_cpu_switch *switches; /* SWITCH*, ITRACE_START, file order */
	size_t nswitches;
	struct pd_chunk *chunks;
	size_t nchunks;
	struct {
		uint32_t pid, tid;
	} * tasks; /* every pid/tid pair seen */
	size_t ntasks;
	size_t nswitch_records; /* SWITCH and SWITCH_CPU_WIDE among them */
	uint64_t records, aux_truncated, aux_partial, lost;
};

/* Read perf.data bytes @buf (@len, kept alive by the caller: chunks and
 * the AUX data point into it) into *out.  Returns 0 or the errors of
 * pd_walk and the parsers, PS_ERR_NOMEM. */
int pd_read(const uint8_t *buf, size_t len, struct pd_recording *out);
void pd_recording_free(struct pd_recording *r);

/* The pid that @tid belongs to per the records (@tid itself if unknown). */
uint32_t pd_tid_pid(const struct pd_recording *r, uint32_t tid);

/* The PT event's attribute (its type is AUXTRACE_INFO's PMU type), or
 * NULL. */
const struct pd_attr *pd_pt_attr(const struct pd_recording *r);

/* ---- AUX streams (perfdata_streams.c) ---- */

/* A contiguous piece of one stream's PT bytes. */
struct pd_segment {
	uint8_t *data; /* owned */
	size_t len;
	uint64_t off_start, off_end; /* AUX offsets covered */
};

/* The AUX data of one CPU (per-CPU buffers) or one thread. */
struct pd_stream {
	uint32_t key;		/* cpu or tid */
	struct pd_segment *seg; /* owned */
	size_t nseg;
};

struct pd_streams {
	struct pd_stream *v; /* owned */
	size_t n;
	size_t gaps; /* chunks that did not continue the one before */
};

/* Join the AUXTRACE chunks of @r into streams keyed by cpu (@per_cpu) or
 * tid.  In full mode a chunk continues the one before at its AUX offset
 * (the overlapping bytes must agree; perf's 8-byte zero padding is
 * dropped when in the way).  In @snapshot mode a chunk repeats what the
 * ring still held of the one before: once the ring has wrapped, the
 * chunk is the whole ring at the ring offset of its oldest byte, so the
 * repeated part is (end - offset) modulo its size, checked byte for byte;
 * failing that, the previous segment's last PSB (a TSC follows it) is
 * looked for in the chunk, as perf does.  Returns 0, PS_ERR_NOMEM. */
int pd_streams_build(const struct pd_recording *r, int per_cpu, int snapshot,
		     struct pd_streams *out);
void pd_streams_free(struct pd_streams *s); /* accepts NULL */

#endif /* PTSCOPE_PERFDATA_H */

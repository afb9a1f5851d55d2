/* SPDX-License-Identifier: MIT */
/* The ptscope decoder library: Intel PT + the code that ran → call/return
 * spans on the ps_writer interface.  Public API (prefix dec_).
 *
 * The library returns negative ps_error codes (ptscope/error.h), never
 * prints and never exits.  This header is its way in: the recording-file
 * replay (src/record/replay.c) and the perf.data importer (perfdata/) use
 * nothing else.  Internals live in their own files: session.c and
 * switches.c (this API), image.c (img_), flow.c + flow_branches.c (flow_:
 * libipt block decoder + branch classification), stack.c (stk_:
 * per-thread call stacks), inline.c (inl_), symspace.c, symbols.c,
 * lines.c (sym_: addresses → functions, ELF, DWARF), timeconv.c (tc_).
 *
 * Typical use:
 *   dec_session_new(&cfg, &s);
 *   dec_add_elf(s, pid, "/usr/bin/foo", 0x555555554000, 0);  (per module)
 *   dec_decode_thread(s, pid, tid, pt_bytes, pt_len, writer);  (per thread)
 *   dec_session_free(s);
 */
#ifndef PTSCOPE_DECODER_H
#define PTSCOPE_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/heap.h" /* dec_heap_huge, dec_heap_off */
#include "ptscope/writer.h"

/* The CPU the trace was recorded on (selects libipt errata). */
struct dec_cpu {
	int is_intel; /* 0: unknown vendor, no errata applied */
	uint16_t family;
	uint8_t model;
	uint8_t stepping;
};

/* TSC → trace clock: perf's conversion from the perf mmap page,
 *   quot = tsc >> shift; rem = tsc & ((1 << shift) - 1);
 *   t = zero + quot * mult + ((rem * mult) >> shift);
 * then t + offset_ns.  With has_conv == 0, TSC values are taken as ns
 * (this is how the emulated backend's virtual clock is written). */
struct dec_timeconv {
	int has_conv;
	uint32_t mult;
	uint16_t shift;
	uint64_t zero;
	int64_t
	    offset_ns; /* perf clock → CLOCK_MONOTONIC, measured by recorder */
};

struct dec_config {
	struct dec_cpu cpu;
	uint8_t mtc_freq;	 /* IA32_RTIT_CTL.MTCFreq (ptxed --mtc-freq) */
	uint8_t nom_freq;	 /* max non-turbo ratio (ptxed --nom-freq) */
	uint32_t cpuid_0x15_eax; /* TSC/core crystal clock ratio denominator */
	uint32_t cpuid_0x15_ebx; /* ... numerator */
	struct dec_timeconv time;
	int inline_frames; /* 1: DWARF inlined functions as nested spans */
	int span_info;	   /* 1: spans carry module/address/file:line info */
	int libipt_flow;   /* 1: libipt's block decoder only, not ptscope's
			    * flow engine (the same events, slower) */
	int jobs; /* > 1: streams are decoded on this many threads, cut
		   * at PSBs (ptscope's flow engine), or libipt's decoding
		   * runs on a thread of its own beside the stack builder
		   * and writer; the same output either way */
};

/* What one decode found; cumulative over a session. */
struct dec_stats {
	uint64_t bytes;		/* PT bytes decoded */
	uint64_t instructions;	/* instructions executed per the trace */
	uint64_t blocks;	/* libipt blocks */
	uint64_t calls;		/* near call instructions executed (direct,
				 * indirect, to the next instruction) */
	uint64_t returns;	/* near return instructions executed */
	uint64_t branches;	/* branch events handed to the stack builder */
	uint64_t spans;		/* spans closed */
	uint64_t err_overflow;	/* internal buffer overflow packets */
	uint64_t err_nomap;	/* "no memory mapped" at an ip */
	uint64_t err_decode;	/* other decode errors (resynced at next PSB) */
	uint64_t err_truncated; /* stale/wrapped data at the end of a stream */
	double seconds;		/* wall time spent decoding */
	uint64_t skipped;	/* dec_decode_cpu: branch events that ran in no
				 * known thread (not shown) */
	uint64_t threads;	/* thread parts decoded */
	uint64_t flow_fast;	/* streams decoded by ptscope's flow engine */
	uint64_t flow_fallbacks; /* streams it handed to libipt (a packet or
				  * a condition it does not handle) */
	uint64_t segments;	 /* parts of long streams decoded on threads
				  * of their own (-j, decoder/split.c) */
	/* Those threads (split_threads of them, the caller's included) for
	 * split_seconds of wall time: their seconds, summed, following the
	 * segments' flow, joining them in order (call stacks and writer),
	 * waiting for either, cutting the streams (the caller's thread,
	 * while the workers start on the first segments) and being started
	 * (from the first worker's start to each thread's first work). */
	uint64_t split_threads;
	double split_seconds, split_flow, split_join, split_wait;
	double split_plan, split_start;
};

struct dec_session;

/* Returns 0, PS_ERR_INVAL (NULL or bad config), PS_ERR_NOMEM.  With
 * cfg->jobs > 1 and ptscope's flow engine, it starts the jobs - 1 threads
 * that decode beside the caller's, which wait for work until
 * dec_session_free. */
int dec_session_new(const struct dec_config *cfg, struct dec_session **out);
void dec_session_free(struct dec_session *s); /* accepts NULL */

/* Map ELF file @path into process @pid's image.
 * @base: the run-time address of the file's lowest PT_LOAD segment, or 0
 *        to load at the link addresses (non-PIE executables).  Segments are
 *        taken from the program headers.
 * @file_offset/@size: when both are non-zero, only this part of the file
 *        is mapped at @base (a single /proc/PID/maps or MMAP2 mapping;
 *        @base is then the mapping's start address).
 * Symbols are read from the same file.  Returns 0, PS_ERR_IO, PS_ERR_FORMAT
 * (not an ELF file), PS_ERR_NOMEM. */
int dec_add_elf(struct dec_session *s, uint64_t pid, const char *path,
		uint64_t base, uint64_t file_offset, uint64_t size);

/* dec_add_elf, with the module labelled @name in spans (NULL: the
 * path's base name): a binary found elsewhere than where it ran (in a
 * build-id cache) keeps the name it ran under.  Returns what dec_add_elf
 * returns. */
int dec_add_elf_as(struct dec_session *s, uint64_t pid, const char *path,
		   const char *name, uint64_t base, uint64_t file_offset,
		   uint64_t size);

/* Map raw code bytes (vDSO, JIT code, a memory dump) at @vaddr in @pid's
 * image; @name labels it in spans ("[vdso]").  The bytes are copied. */
int dec_add_raw(struct dec_session *s, uint64_t pid, const char *name,
		const void *bytes, size_t size, uint64_t vaddr);

/* Make process @pid known to the session even when none of its code can
 * be added (its binaries are missing): dec_decode_cpus() then decodes its
 * threads' parts, reporting the code it cannot read, rather than finding
 * no process with code added.  Adding code does this by itself.  Returns
 * 0, PS_ERR_INVAL (NULL session), PS_ERR_NOMEM. */
int dec_add_process(struct dec_session *s, uint64_t pid);

/* Decode the PT stream of one thread (pid, tid) and write its spans and
 * decode-error instants to @w.  The stream may start anywhere (it is synced
 * at its first PSB) and may end with stale data.  All open frames are
 * closed at the last timestamp.  Returns 0 when the stream was decoded
 * (decode errors inside it are reported as instants and counted in the
 * stats, not returned), or PS_ERR_* when decoding could not happen at all
 * (no PSB: PS_ERR_FORMAT) or @w failed. */
int dec_decode_thread(struct dec_session *s, uint64_t pid, uint64_t tid,
		      const uint8_t *pt, size_t len, struct ps_writer *w);

/* Exec epochs: a process that ran exec has one image per program, 0
 * before its first exec and +1 at each, with code and symbols of its own,
 * so PT of each image decodes against that image only (spans still carry
 * the process's real pid).  The calls above work on epoch 0; these take
 * the epoch, and are otherwise the same. */
int dec_add_elf_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
		      const char *path, uint64_t base, uint64_t file_offset,
		      uint64_t size);
int dec_add_raw_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
		      const char *name, const void *bytes, size_t size,
		      uint64_t vaddr);
int dec_decode_thread_epoch(struct dec_session *s, uint64_t pid, uint32_t epoch,
			    uint64_t tid, const uint8_t *pt, size_t len,
			    struct ps_writer *w);

/* One thread's stream for dec_decode_streams: as dec_decode_thread_epoch's
 * arguments. */
struct dec_stream {
	uint64_t pid;
	uint32_t image; /* exec epoch */
	uint64_t tid;
	const uint8_t *pt;
	size_t len;
	struct ps_writer *w;
};

/* Told of stream @i's result (what dec_decode_thread_epoch would return
 * for it) as soon as it is written, in order.  Returns 0 to go on, or a
 * negative error that stops the decode and is returned by
 * dec_decode_streams.  May run on another thread than the caller's, one
 * call at a time. */
typedef int (*dec_stream_done_fn)(void *ctx, size_t i, int err);

/* Decode @n threads' streams, writing each as dec_decode_thread_epoch
 * would, one stream after the other: the trace is the same.  With
 * cfg.jobs > 1 and ptscope's flow engine, the streams are cut at PSBs and
 * the parts decoded on cfg.jobs threads, the next streams' while one is
 * written (decoder/split.c).  Each stream's writer is used by one thread
 * at a time, in stream order.  Returns 0, or the first error @done
 * returned. */
int dec_decode_streams(struct dec_session *s, const struct dec_stream *st,
		       size_t n, dec_stream_done_fn done, void *ctx);

/* A perf context switch on one CPU (PERF_RECORD_SWITCH_CPU_WIDE), with
 * time in the perf clock (before dec_timeconv.offset_ns). */
struct dec_switch {
	uint64_t time;
	uint64_t pid, tid; /* the thread switched in or out */
	int out;	   /* 1: switch out of pid/tid, 0: switch in */
};

/* Decode one CPU's PT stream, attributing each part to the thread that was
 * running per @sw (sorted by time).  Parts outside any known thread are
 * skipped and counted.  dec_decode_cpus() with one CPU: a thread's stack
 * is kept while it is switched out and back in on this CPU. */
int dec_decode_cpu(struct dec_session *s, int cpu, const uint8_t *pt,
		   size_t len, const struct dec_switch *sw, size_t nsw,
		   struct ps_writer *w);

/* One CPU's PT stream and its context switches (sorted by time). */
struct dec_cpu_trace {
	int cpu;
	const uint8_t *pt;
	size_t len;
	const struct dec_switch *sw;
	size_t nsw;
};

/* Decode the streams of @n CPUs of one process together, in time order
 * (a merge over the CPUs: memory ∝ CPUs, not trace length), keeping one
 * call stack per thread: a switch out suspends it with its frames open, a
 * switch in on any CPU resumes it.  A thread that resumes where its trace
 * cannot have left it (data lost in between) starts a fresh stack.  Every
 * frame is closed at the end.  Returns 0, PS_ERR_INVAL, PS_ERR_NOT_FOUND
 * (no switch names a process with code added), PS_ERR_FORMAT (a stream
 * has no PSB), PS_ERR_NOMEM or the writer's error. */
int dec_decode_cpus(struct dec_session *s, const struct dec_cpu_trace *cpus,
		    size_t n, struct ps_writer *w);

const struct dec_stats *dec_get_stats(const struct dec_session *s);

struct sym_func; /* decoder/symbols.h */

/* The function containing code address @ip in image @epoch of process
 * @pid (the
 * modules and raw code added so far), for producers of spans that do not
 * decode PT (call-stack samples).  Never NULL except for an unknown @pid
 * or out of memory: code without a symbol gets a "module+0xoff" stand-in.
 * Stable until the session is freed (decoder/symbols.h). */
const struct sym_func *dec_symbolize(struct dec_session *s, uint64_t pid,
				     uint32_t epoch, uint64_t ip);

/* Parse a file of raw perf_event records (struct perf_event_header ...) as
 * written by LLDB's *.perf_context_switch_trace, keeping
 * PERF_RECORD_SWITCH_CPU_WIDE records (sample_id_all with TID|TIME assumed
 * as LLDB writes them).  *out is malloc'ed.  Returns the count or error. */
int dec_read_switches(const char *path, struct dec_switch **out);

/* The same over @len bytes in memory; @path names them in errors. */
int dec_parse_switches(const char *path, const uint8_t *buf, size_t len,
		       struct dec_switch **out);

/* Longest GNU build id dec_elf_build_id() reports (SHA-1 ids are 20
 * bytes, some linkers write 32). */
#define DEC_BUILD_ID_MAX 64

/* The GNU build id (the NT_GNU_BUILD_ID note) of the ELF file at @path
 * into @id.  Returns its length in bytes (0: the file has none, or a
 * longer one), PS_ERR_IO (cannot open), PS_ERR_FORMAT (not an ELF
 * file). */
int dec_elf_build_id(const char *path, uint8_t id[DEC_BUILD_ID_MAX]);

/* Where separate debug files of stripped modules are looked for (by build
 * id, then by .gnu_debuglink; see decoder/debugfile.h): the colon-separated
 * @dirs first (NULL or "": none), then, when @defaults is 1, the ones in
 * $PTSCOPE_DEBUG_DIR and /usr/lib/debug.  Process-wide; takes effect for
 * modules loaded afterwards.  Returns 0, PS_ERR_NOMEM. */
int dec_set_debug_dirs(const char *dirs, int defaults);

#endif /* PTSCOPE_DECODER_H */

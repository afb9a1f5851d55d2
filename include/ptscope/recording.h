/* SPDX-License-Identifier: MIT */
/* The ptscope recording file (.ptsc): everything `ptscope decode` needs to
 * turn a recording into a trace, possibly on another machine.
 * docs/recording-format.md describes it for people; this header is the
 * reference for code (writer/reader: src/recording/recfile.h, prefix recw_/
 * recr_).
 *
 * On disk, all integers are little-endian and unaligned:
 *
 *   file header (16 bytes)
 *     0  u8[8]  magic "PTSCREC\n"
 *     8  u32    format version (REC_FORMAT_VERSION)
 *    12  u32    header size in bytes (16; a reader skips any extra bytes)
 *
 *   then sections, back to back, until the END section:
 *     0  u32    type (enum rec_section)
 *     4  u32    CRC-32 (zlib crc32) of bytes 0-3, 8-15 and the payload
 *     8  u64    payload length in bytes
 *    16  ...    payload
 *
 * Payload fields are u8/u16/u32/u64 (i64 as two's complement u64),
 * "str" = u32 length + bytes (no NUL), "blob" = u64 length + bytes.
 * Each section's payload is listed below the enum.  A reader accepts a
 * payload that is longer than the fields it knows (newer writers append
 * fields at the end) and skips section types it does not know.
 *
 * Versioning rule: adding a section type or appending fields to a payload
 * keeps REC_FORMAT_VERSION; any change that an older reader would
 * misread (moving, resizing or re-meaning a field) increments it, and a
 * reader refuses a file whose version is newer than its own.
 *
 * The file must start with INFO and end with END: a file without END was
 * cut short (the recorder died or the disk filled), and is refused.
 */
#ifndef PTSCOPE_RECORDING_H
#define PTSCOPE_RECORDING_H

#include <stddef.h>
#include <stdint.h>

#define REC_MAGIC "PTSCREC\n" /* 8 bytes, no NUL on disk */
#define REC_MAGIC_LEN 8
#define REC_FORMAT_VERSION 1
#define REC_HEADER_SIZE 16
#define REC_SECTION_HEADER_SIZE 16
#define REC_BUILD_ID_MAX 64 /* bytes; GNU build ids are 20 */

enum rec_section {
	/* INFO: exactly one, first.  Payload:
	 *   str  backend ("intel-pt", "emulated")
	 *   u8   emulated (1: PT packets come from the emulator)
	 *   u8   cpu vendor (enum rec_cpu_vendor)
	 *   u16  cpu family   u8 cpu model   u8 cpu stepping
	 *   u8   mtc_freq     u8 nom_freq
	 *   u32  cpuid 0x15 eax   u32 cpuid 0x15 ebx
	 *   u8   has_conv     u32 time_mult   u16 time_shift
	 *   u64  time_zero    i64 offset_ns
	 *   str  ptscope version
	 *   u32  argc, then argc × str  (the traced command line)
	 *   u64  target pid
	 *   u64  start time (CLOCK_MONOTONIC ns)
	 *   u64  start time (CLOCK_REALTIME ns, for people)
	 *   str  host name   str kernel release
	 *   str  snapshot reason ("trigger", "exit", "signal", "interrupt",
	 *        "latency", ...)
	 *   u64  snapshot time (CLOCK_MONOTONIC ns)
	 *   (appended: absent in recordings of PT backends written before)
	 *   u32  sample rate in Hz (0: not a sampled recording)
	 *   str  sampling event ("cpu-clock", "cycles")
	 *   u32  stack bytes copied per sample (PERF_SAMPLE_STACK_USER) */
	REC_SEC_INFO = 1,
	/* MODULE: one per mapping of a code file (or [vdso]).  Payload:
	 *   u64 pid  u64 start  u64 end  u64 file offset  u32 prot (PROT_*)
	 *   u64 inode  str path  u8 build id length  u8[len] build id
	 *   u64 archive index + 1 (0: not archived; else the ARCHIVE
	 *       section with that index, counted from 0 in file order)
	 *   u32 exec epoch (appended; absent: 0) */
	REC_SEC_MODULE = 2,
	/* THREAD: u64 pid  u64 tid  str comm */
	REC_SEC_THREAD = 3,
	/* PT: one PT stream (one snapshot of one thread's or CPU's buffer).
	 *   u64 pid  u64 tid  i32 cpu (-1: per-thread tracing)
	 *   u32 snapshot number (0, 1, ...)  blob PT bytes
	 *   u32 exec epoch (appended; absent: 0) */
	REC_SEC_PT = 4,
	/* MARK: u32 kind (enum rec_mark_kind)  u64 pid  u64 tid
	 *   u64 time (CLOCK_MONOTONIC ns)  u64 address  u64 value  str text */
	REC_SEC_MARK = 5,
	/* RAW_CODE: code bytes that exist in no file (vDSO, JIT).
	 *   u64 pid  u64 vaddr  str name  blob bytes
	 *   u32 exec epoch (appended; absent: 0) */
	REC_SEC_RAW_CODE = 6,
	/* SIDECAR: events from another source (eBPF).
	 *   u32 type (owned by the sidecar)  blob bytes */
	REC_SEC_SIDECAR = 7,
	/* SWITCH: context switches of one CPU, for per-CPU PT streams.
	 *   i32 cpu  u32 count  count × { u64 time (perf clock) u64 pid
	 *   u64 tid  u8 out } */
	REC_SEC_SWITCH = 8,
	/* ARCHIVE: a whole module file copied into the recording (--archive).
	 *   str path  u8 build id length  u8[len] build id  blob file bytes */
	REC_SEC_ARCHIVE = 9,
	/* PROCESS: one per image a traced process ran (its exec epochs).
	 *   u64 pid  u64 parent pid (0: none traced)  u32 exec epoch
	 *   u64 time the image started (CLOCK_MONOTONIC ns; the exec)
	 *   str name (comm)  str program path
	 * Recordings without it (older ones) name processes by THREAD. */
	REC_SEC_PROCESS = 10,
	/* SAMPLES: one thread's call-stack samples (the sample backend), one
	 * snapshot of its ring, oldest first.
	 *   u64 pid  u64 tid  u32 snapshot number
	 *   u64 regs mask (PERF_SAMPLE_REGS_USER bits, x86-64 perf_regs.h)
	 *   u32 count  blob records (src/recording/samples.h: each is
	 *   u32 size, u64 time, u16 callchain entries, u16 regs, u16 LBR
	 *   entries, u16 flags, u32 stack bytes, then the callchain (u64
	 *   each, the sampled ip first), the regs, the stack bytes, the LBR
	 *   entries (u64 from, u64 to))
	 *   u32 exec epoch (appended; absent: 0) */
	REC_SEC_SAMPLES = 11,
	/* END: u64 number of sections before this one.  Must be last. */
	REC_SEC_END = 0x454e4421 /* "!DNE" */
};

enum rec_cpu_vendor { REC_CPU_UNKNOWN = 0, REC_CPU_INTEL = 1, REC_CPU_AMD = 2 };

/* Why a mark was recorded (MARK.value / text meaning per kind). */
enum rec_mark_kind {
	REC_MARK_TRIGGER = 1,  /* breakpoint hit: address = ip, value = rdi
				* (ptscope_trigger's reason pointer), text =
				* the reason string read from the target */
	REC_MARK_SIGNAL = 2,   /* value = signal number, address = fault ip */
	REC_MARK_EXIT = 3,     /* value = exit status (wait(2) status) */
	REC_MARK_SNAPSHOT = 4, /* a snapshot was taken; text = reason */
	REC_MARK_LOST = 5,     /* value = lost records/bytes; text says what */
	REC_MARK_LATENCY = 6,  /* a latency trigger: value = duration ns of
				* the slow call, address = the function,
				* time = its return, text = "SYMBOL\nSYMBOL
				* took D (over T)" */
	REC_MARK_NOTE = 7,     /* free text from the recorder */
	REC_MARK_EXEC = 8      /* the process ran exec: text = the new
				* program, value = its new exec epoch */
};

/* Recording-wide facts (INFO).  Strings are owned by whoever filled the
 * struct: the recorder when writing, the reader when reading. */
struct rec_info {
	const char *backend;
	int emulated;
	enum rec_cpu_vendor cpu_vendor;
	uint16_t cpu_family;
	uint8_t cpu_model;
	uint8_t cpu_stepping;
	uint8_t mtc_freq;
	uint8_t nom_freq;
	uint32_t cpuid_0x15_eax;
	uint32_t cpuid_0x15_ebx;
	/* TSC → ns, as struct dec_timeconv (decoder/decoder.h). */
	int has_conv;
	uint32_t time_mult;
	uint16_t time_shift;
	uint64_t time_zero;
	int64_t offset_ns;
	const char *version;
	size_t argc;
	const char *const *argv;
	uint64_t pid;
	uint64_t start_ns;
	uint64_t start_realtime_ns;
	const char *hostname;
	const char *kernel;
	const char *reason;
	uint64_t snapshot_ns;
	/* Sampled recordings (backend "sample"): the rate, the event and
	 * the user stack bytes copied per sample; 0/NULL otherwise. */
	uint32_t sample_hz;
	const char *sample_event;
	uint32_t sample_stack;
};

/* Exec epochs: a process's image (the program exec loaded and what it
 * mapped) is numbered 0 from the start of recording, +1 at each exec.
 * MODULE, RAW_CODE and PT records carry the epoch they belong to, so PT
 * of each image decodes against that image's code. */

struct rec_module {
	uint64_t pid;
	uint64_t start, end; /* [start, end) mapped addresses */
	uint64_t offset;     /* file offset of start */
	uint32_t prot;	     /* PROT_READ | PROT_WRITE | PROT_EXEC */
	uint64_t inode;
	const char *path; /* as mapped on the recording machine */
	uint8_t build_id[REC_BUILD_ID_MAX];
	uint8_t build_id_len; /* 0: none */
	/* Reader only: the archived file, or NULL/0.  Writer: ignored
	 * (pass archive bytes to recw_module()). */
	const uint8_t *archive;
	uint64_t archive_len;
	uint32_t epoch; /* the image (exec epoch) of @pid it belongs to */
};

struct rec_thread {
	uint64_t pid, tid;
	const char *comm;
};

struct rec_pt {
	uint64_t pid, tid;
	int32_t cpu;	   /* -1: per-thread stream */
	uint32_t snapshot; /* 0 for the first snapshot */
	const uint8_t *data;
	uint64_t len;
	uint32_t epoch; /* the image (exec epoch) this PT ran in */
};

struct rec_mark {
	enum rec_mark_kind kind;
	uint64_t pid, tid;
	uint64_t time_ns;
	uint64_t address;
	uint64_t value;
	const char *text; /* may be NULL when writing ("" when read) */
};

struct rec_raw_code {
	uint64_t pid;
	uint64_t vaddr;
	const char *name;
	const uint8_t *bytes;
	uint64_t len;
	uint32_t epoch;
};

/* One image of a traced process (PROCESS). */
struct rec_process {
	uint64_t pid;
	uint64_t ppid; /* the traced parent, 0 for a root of the tree */
	uint32_t epoch;
	uint64_t time_ns;  /* when this image started (exec), or 0 */
	const char *name;  /* comm while it ran this image */
	const char *path;  /* its program, "" if unknown */
};

struct rec_sidecar {
	uint32_t type;
	const uint8_t *bytes;
	uint64_t len;
};

struct rec_switch {
	uint64_t time; /* perf clock (before offset_ns) */
	uint64_t pid, tid;
	int out; /* 1: switched out, 0: switched in */
};

struct rec_switches {
	int32_t cpu;
	size_t n;
	const struct rec_switch *sw;
};

/* One thread's samples (SAMPLES); the records are parsed with
 * src/recording/samples.h. */
struct rec_samples {
	uint64_t pid, tid;
	uint32_t snapshot;
	uint32_t epoch; /* the image (exec epoch) of @pid they ran in */
	uint64_t regs_mask;
	uint32_t count;
	const uint8_t *data;
	uint64_t len;
};

struct rec_archive {
	const char *path;
	uint8_t build_id[REC_BUILD_ID_MAX];
	uint8_t build_id_len;
	const uint8_t *bytes;
	uint64_t len;
};

/* A recording's contents, from a file (recr_*) or straight from the
 * recorder's memory (run/attach decode without a file round trip).
 * Everything is borrowed. */
struct recording {
	const struct rec_info *info;
	const struct rec_module *mods;
	size_t nmods;
	const struct rec_thread *threads;
	size_t nthreads;
	const struct rec_pt *pts;
	size_t npts;
	const struct rec_mark *marks;
	size_t nmarks;
	const struct rec_raw_code *raws;
	size_t nraws;
	/* The process tree: parents, names per exec epoch (may be empty). */
	const struct rec_process *procs;
	size_t nprocs;
	/* Kernel events (SIDECAR sections, see src/record/kevents/kevents.h). */
	const struct rec_sidecar *sidecars;
	size_t nsidecars;
	/* Call-stack samples (SAMPLES sections, the sample backend). */
	const struct rec_samples *samples;
	size_t nsamples;
};

#endif /* PTSCOPE_RECORDING_H */

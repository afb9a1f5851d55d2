/* SPDX-License-Identifier: MIT */
/* The Fuchsia trace format's wire format as ptscope writes and reads it:
 * record, event and argument types, limits, the magic number, how
 * metadata travels; shared by the writer (fxt.c, fxt_memo.c,
 * fxt_intern.c) and the reader (fxt_read.c).  docs/format-fxt.md
 * describes the records. */
#ifndef PTSCOPE_OUTPUT_FXT_FORMAT_H
#define PTSCOPE_OUTPUT_FXT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* The magic number record as one little-endian word. */
#define FXT_MAGIC_WORD 0x0016547846040010ull
#define FXT_TICKS_PER_SECOND 1000000000ull /* our timestamps are ns */
#define FXT_PROVIDER_ID 1u
#define FXT_PROVIDER_NAME "ptscope"

#define FXT_MAX_RECORD_WORDS 4095u /* 12-bit size field */
#define FXT_MAX_STRING_LEN 32000u  /* the spec's conservative limit */
#define FXT_MAX_STRING_INDEX 32767u
#define FXT_MAX_THREAD_INDEX 255u
#define FXT_MAX_ARGS 15
#define FXT_STR_INLINE 0x8000u /* string ref: inline, low 15 bits = len */

/* meta(key, value) is written as a kernel object record of type
 * ZX_OBJ_TYPE_NONE, koid 0, named FXT_META_NAME, with one string argument
 * key=value: importers (Perfetto's included) skip kernel objects other than
 * processes and threads, so metadata never shows up as a slice.  fxt_read
 * turns it back into a meta() call, and also reads the global-scope
 * instant (name FXT_META_NAME, category FXT_META_CATEGORY) that older
 * ptscope versions wrote. */
#define FXT_META_NAME "ptscope.metadata"
#define FXT_META_CATEGORY "__metadata"

/* A process's parent (ps_write_parent): a kernel object record of type
 * ZX_OBJ_TYPE_NONE, koid = the pid, named FXT_PARENT_NAME, with one koid
 * argument FXT_PARENT_ARG = the parent's pid.  The format has no parent
 * of its own; importers skip the record, fxt_read turns it back. */
#define FXT_PARENT_NAME "ptscope.parent"
#define FXT_PARENT_ARG "ppid"

/* A counter's FXT counter id travels in ps_event.flow_id (0 by default). */

enum fxt_record_type {
	FXT_REC_METADATA = 0,
	FXT_REC_INITIALIZATION = 1,
	FXT_REC_STRING = 2,
	FXT_REC_THREAD = 3,
	FXT_REC_EVENT = 4,
	FXT_REC_BLOB = 5,
	FXT_REC_USERSPACE_OBJECT = 6,
	FXT_REC_KERNEL_OBJECT = 7,
	FXT_REC_SCHEDULING = 8,
	FXT_REC_LOG = 9,
	FXT_REC_LARGE = 15
};

enum fxt_metadata_type {
	FXT_META_PROVIDER_INFO = 1,
	FXT_META_PROVIDER_SECTION = 2,
	FXT_META_PROVIDER_EVENT = 3,
	FXT_META_TRACE_INFO = 4
};

enum fxt_event_type {
	FXT_EV_INSTANT = 0,
	FXT_EV_COUNTER = 1,
	FXT_EV_DURATION_BEGIN = 2,
	FXT_EV_DURATION_END = 3,
	FXT_EV_DURATION_COMPLETE = 4,
	FXT_EV_ASYNC_BEGIN = 5,
	FXT_EV_ASYNC_INSTANT = 6,
	FXT_EV_ASYNC_END = 7,
	FXT_EV_FLOW_BEGIN = 8,
	FXT_EV_FLOW_STEP = 9,
	FXT_EV_FLOW_END = 10
};

enum fxt_arg_type {
	FXT_ARG_NULL = 0,
	FXT_ARG_INT32 = 1,
	FXT_ARG_UINT32 = 2,
	FXT_ARG_INT64 = 3,
	FXT_ARG_UINT64 = 4,
	FXT_ARG_DOUBLE = 5,
	FXT_ARG_STRING = 6,
	FXT_ARG_POINTER = 7,
	FXT_ARG_KOID = 8,
	FXT_ARG_BOOL = 9
};

/* Zircon object types used in kernel object records. */
enum fxt_obj_type { FXT_OBJ_NONE = 0, FXT_OBJ_PROCESS = 1, FXT_OBJ_THREAD = 2 };

static inline size_t fxt_pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The longest prefix of @s[0..len) of at most @max bytes that does not cut
 * a UTF-8 sequence in two. */
static inline size_t fxt_clip_utf8(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

#endif /* PTSCOPE_OUTPUT_FXT_FORMAT_H */

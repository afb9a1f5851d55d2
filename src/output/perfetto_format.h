/* SPDX-License-Identifier: MIT */
/* How ptscope lays out a Perfetto trace, shared by the writer
 * (perfetto*.c) and the reader (perfetto_read*.c): which sequence carries
 * what, the clocks, how metadata and global instants travel.
 * docs/format-perfetto.md describes the packets. */
#ifndef PTSCOPE_OUTPUT_PERFETTO_FORMAT_H
#define PTSCOPE_OUTPUT_PERFETTO_FORMAT_H

/* Sequence 1 carries track descriptors, metadata and the global clock
 * snapshot; each thread has its own sequence (2, 3, ...) whose timestamps
 * are deltas on the sequence-scoped incremental clock PFTW_CLOCK_INCR. */
#define PFTW_SEQ_GLOBAL 1u
#define PFTW_CLOCK_MONOTONIC 3u /* Perfetto's BUILTIN_CLOCK_MONOTONIC */
#define PFTW_CLOCK_BOOTTIME 6u	/* Perfetto's BUILTIN_CLOCK_BOOTTIME */
#define PFTW_CLOCK_INCR 64u	/* first sequence-scoped clock id */

/* meta(key, value) is written as ChromeEventBundle.metadata {name: key,
 * string_value: value} in one chrome_events packet at flush (Perfetto
 * files it in its metadata table, as Chrome's own metadata).  Older
 * versions wrote an instant named key on a global track of this name,
 * carrying one string debug annotation PFTW_META_ARG = value; the reader
 * still turns those back into meta() too. */
#define PFTW_META_TRACK "ptscope metadata"
#define PFTW_META_ARG "value"
/* Global-scope instants go on a global track of this name. */
#define PFTW_GLOBAL_TRACK "global"
/* A track of a thread (event.h: PS_TID_SCHED, PS_TID_BLOCK) is a
 * TrackDescriptor with no ThreadDescriptor whose parent is the thread's
 * track; named by the producer (ptscope's "COMM scheduler", "COMM block
 * I/O"), or these when it was not.  The reader gives such a track back
 * as PS_TID_BLOCK | tid when its name ends in PFTW_BLOCK_TRACK, else as
 * PS_TID_SCHED | tid. */
#define PFTW_SCHED_TRACK "scheduler"
#define PFTW_BLOCK_TRACK "block I/O"

#endif /* PTSCOPE_OUTPUT_PERFETTO_FORMAT_H */

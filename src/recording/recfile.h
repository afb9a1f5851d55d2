/* SPDX-License-Identifier: MIT */
/* Writing and reading recording files (layout: include/ptscope/recording.h).
 *
 * Writer (recw_): sections are appended as the recorder learns things; the
 * file appears under its name only at recw_finish() (temporary file +
 * rename), so an interrupted recording never leaves a half file behind.
 *
 *   recw_open("rec.ptsc", &w);
 *   recw_header(w, &info);                 first, exactly once
 *   recw_module(w, &mod, bytes, len);      any order from here on
 *   recw_thread(w, pid, tid, "comm");
 *   recw_process(w, &proc);                parent and name per exec epoch
 *   recw_pt(w, &pt);
 *   recw_mark(w, &mark);
 *   recw_finish(w);                        or recw_abort(w)
 *
 * Reader (recr_): recr_open() reads and validates the whole file (magic,
 * version, every section's bounds and CRC, INFO first, END last) and then
 * offers arrays of typed records.  Every pointer it hands out (strings,
 * PT bytes) lives until recr_close().
 */
#ifndef PTSCOPE_RECORD_RECFILE_H
#define PTSCOPE_RECORD_RECFILE_H

#include <stddef.h>
#include <stdint.h>

#include "ptscope/recording.h"

struct recw;

/* Create "<dir>/.<name>.XXXXXX" beside @path.  Returns 0, PS_ERR_INVAL
 * (NULL argument), PS_ERR_IO (cannot create: detail names the path),
 * PS_ERR_NOMEM. */
int recw_open(const char *path, struct recw **out);

/* The INFO section; must be the first call after recw_open and happen once.
 * NULL strings are written as "".  Returns 0, PS_ERR_INVAL (second call,
 * NULL), PS_ERR_IO. */
int recw_header(struct recw *w, const struct rec_info *info);

/* A module mapping.  @archive/@archive_len: the whole file's bytes for
 * --archive (NULL/0: not archived).  Archived bytes are written once per
 * (path, build id), however many mappings or processes share the file.
 * Returns 0, PS_ERR_INVAL (no header yet, NULL), PS_ERR_IO, PS_ERR_NOMEM. */
int recw_module(struct recw *w, const struct rec_module *m, const void *archive,
		size_t archive_len);

int recw_thread(struct recw *w, uint64_t pid, uint64_t tid, const char *comm);

/* One PT stream (pt->data, pt->len bytes; len may be 0). */
int recw_pt(struct recw *w, const struct rec_pt *pt);

int recw_mark(struct recw *w, const struct rec_mark *m);

/* Code that exists in no file, e.g. the vDSO (name "[vdso]"). */
int recw_raw_code(struct recw *w, const struct rec_raw_code *c);

/* One image (exec epoch) of a traced process: parent, name, program. */
int recw_process(struct recw *w, const struct rec_process *p);

/* Context switches of @cpu (per-CPU PT), in time order. */
int recw_switches(struct recw *w, int32_t cpu, const struct rec_switch *sw,
		  size_t n);

/* Sidecar (eBPF) event bytes; @type is the sidecar's own tag. */
int recw_sidecar(struct recw *w, uint32_t type, const void *bytes, size_t len);

/* Bytes written so far (for size limits and the final message). */
/* One thread's call-stack samples (SAMPLES). */
int recw_samples(struct recw *w, const struct rec_samples *sm);

uint64_t recw_bytes(const struct recw *w);

/* Write END, flush, fsync-free close, rename into place; frees @w.
 * Returns 0, PS_ERR_INVAL (no header), PS_ERR_IO (then nothing is left
 * under the final name). */
int recw_finish(struct recw *w);

/* Close and remove the temporary file; frees @w.  Accepts NULL. */
void recw_abort(struct recw *w);

struct recr;

/* Open and validate a recording.  Returns 0 or, with a detail sentence
 * naming the file:
 *   PS_ERR_IO          cannot open/read the file
 *   PS_ERR_FORMAT      not a ptscope recording (bad magic), a damaged
 *                      section (bad CRC, bad field), INFO missing
 *   PS_ERR_TRUNCATED   the file ends inside a section or before END
 *   PS_ERR_UNSUPPORTED written by a newer ptscope (format version)
 *   PS_ERR_NOMEM */
int recr_open(const char *path, struct recr **out);

/* Same over a memory buffer, which must outlive the reader; @name is used
 * in error details. */
int recr_open_mem(const void *buf, size_t len, const char *name,
		  struct recr **out);

void recr_close(struct recr *r); /* accepts NULL */

/* The format version the file was written with. */
uint32_t recr_version(const struct recr *r);

const struct rec_info *recr_info(const struct recr *r);

/* Each returns the count and sets *out to an array in file order. */
size_t recr_modules(const struct recr *r, const struct rec_module **out);
size_t recr_threads(const struct recr *r, const struct rec_thread **out);
size_t recr_pts(const struct recr *r, const struct rec_pt **out);
size_t recr_marks(const struct recr *r, const struct rec_mark **out);
size_t recr_raw_codes(const struct recr *r, const struct rec_raw_code **out);
size_t recr_sidecars(const struct recr *r, const struct rec_sidecar **out);
size_t recr_samples(const struct recr *r, const struct rec_samples **out);
size_t recr_switches(const struct recr *r, const struct rec_switches **out);
size_t recr_archives(const struct recr *r, const struct rec_archive **out);
size_t recr_processes(const struct recr *r, const struct rec_process **out);

/* Sections of a type this reader does not know (skipped). */
size_t recr_unknown_sections(const struct recr *r);

#endif /* PTSCOPE_RECORD_RECFILE_H */

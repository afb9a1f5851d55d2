/* SPDX-License-Identifier: MIT */
/* A process's mapped modules (prefix mod_): /proc/PID/maps with the
 * build id of each file (src/recording/build_id.h), target memory reads
 * (vDSO), whole-file reads for --archive.  Finding a module's file again
 * when a recording is decoded is src/replay/locate.h.
 */
#ifndef PTSCOPE_RECORD_MODULES_H
#define PTSCOPE_RECORD_MODULES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptscope/recording.h"

/* One line of /proc/PID/maps. */
struct mod_map {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint32_t prot;	     /* PROT_READ | PROT_WRITE | PROT_EXEC */
	int shared;	     /* 's' rather than 'p' */
	unsigned dev_major, dev_minor;
	uint64_t inode; /* 0: anonymous or special */
	char *path;	/* owned; "" anonymous, "[vdso]", "[stack]"... */
	int deleted;	/* path ended in " (deleted)" (stripped) */
	/* Owned, NULL normally.  When the file at @path is no longer the one
	 * mapped (deleted, or replaced since the process mapped it): where
	 * the mapped file can still be read, /proc/PID/map_files/S-E of the
	 * file's first mapping (the same string for all its mappings).
	 * Everything that reads the module's bytes goes there (mod_file). */
	char *open_path;
	uint8_t build_id[REC_BUILD_ID_MAX];
	uint8_t build_id_len; /* 0: none or not a file */
};

struct mod_list {
	struct mod_map *maps; /* owned, sorted by start */
	size_t n;
};

/* Which mappings mod_read() keeps. */
#define MOD_EXEC 0x1 /* executable mappings only */
#define MOD_FILE 0x2 /* file-backed (inode != 0) and [vdso] only */

/* Read /proc/@pid/maps (pid 0: this process) into @out, keeping mappings
 * that pass every bit of @flags (0: all).  Build ids of file-backed
 * mappings are filled in (cached per path, see buildid_read).
 * Returns 0, PS_ERR_NOT_FOUND (no such process), PS_ERR_PERM,
 * PS_ERR_IO, PS_ERR_FORMAT (unparsable line), PS_ERR_NOMEM. */
int mod_read(pid_t pid, unsigned flags, struct mod_list *out);
void mod_list_fini(struct mod_list *l); /* accepts NULL / empty */

/* The file to read @m's bytes from: @m->open_path, or @m->path. */
static inline const char *mod_file(const struct mod_map *m)
{
	return m->open_path ? m->open_path : m->path;
}

/* The mapping holding @addr, or NULL. */
const struct mod_map *mod_find(const struct mod_list *l, uint64_t addr);

/* Read @len bytes at @addr of process @pid (process_vm_readv, falling back
 * to /proc/PID/mem).  Returns bytes read (short at an unmapped end),
 * PS_ERR_PERM, PS_ERR_TARGET (process gone), PS_ERR_IO. */
ssize_t mod_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* The [vdso] of @pid: malloc'ed copy of its bytes and its address.
 * Returns 0, PS_ERR_NOT_FOUND (no vDSO mapped), PS_ERR_NOMEM, or a
 * mod_read_mem error. */
int mod_read_vdso(pid_t pid, uint8_t **bytes, size_t *len, uint64_t *vaddr);

/* A whole file into a malloc'ed buffer (for --archive).  Refuses files
 * larger than @max_len with PS_ERR_LIMIT.  Returns 0, PS_ERR_IO,
 * PS_ERR_LIMIT, PS_ERR_NOMEM. */
int mod_read_file(const char *path, uint64_t max_len, uint8_t **bytes,
		  size_t *len);

/* Fill @rm (for recw_module) from @m of process @pid; strings borrowed. */
void mod_to_rec(const struct mod_map *m, uint64_t pid, struct rec_module *rm);

#endif /* PTSCOPE_RECORD_MODULES_H */

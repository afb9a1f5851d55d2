/* SPDX-License-Identifier: MIT */
/* GNU build ids of ELF files (prefix buildid_): what ties a recorded
 * module to its file.  The recorder reads them for every mapping; replay
 * checks a file on this machine against the recorded one.
 */
#ifndef PTSCOPE_RECORDING_BUILD_ID_H
#define PTSCOPE_RECORDING_BUILD_ID_H

#include <stddef.h>
#include <stdint.h>

/* The GNU build id of ELF file @path (from its PT_NOTE segments, else a
 * .note.gnu.build-id section) into @buf.  Results are cached per
 * (path, inode, mtime), so calling it for every mapping is cheap.
 * Returns the id's length (0: the file has none), PS_ERR_IO (cannot
 * open), PS_ERR_FORMAT (not ELF), PS_ERR_INVAL. */
int buildid_read(const char *path, uint8_t *buf, size_t bufsz);

/* "4f1c..." for @id (2*len+1 bytes in @out, always NUL-terminated). */
void buildid_hex(const uint8_t *id, size_t len, char *out, size_t outsz);

#endif /* PTSCOPE_RECORDING_BUILD_ID_H */

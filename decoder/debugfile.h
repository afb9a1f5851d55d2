/* SPDX-License-Identifier: MIT */
/* Separate debug files (prefix sym_debug_): find the detached .debug file
 * of a stripped ELF module the way gdb, perf and libdwfl do — by GNU build
 * id under <dir>/.build-id/NN/REST.debug, then by the .gnu_debuglink name
 * next to the module, in its .debug/ subdirectory and under <dir>/<module
 * directory>/ — and accept it only when it provably belongs to the module
 * (same build id; the debuglink CRC when either side has no build id).
 * Internal to the decoder library; used by the symbolizer (symbols.c).
 */
#ifndef PTSCOPE_DECODER_DEBUGFILE_H
#define PTSCOPE_DECODER_DEBUGFILE_H

#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

/* Longest build id kept (SHA-1 ids are 20 bytes, some linkers use 32). */
#define SYM_BUILD_ID_MAX 64

/* An opened debug file; the caller owns fd, elf and path. */
struct sym_debug {
	int fd;	    /* -1: none */
	Elf *elf;   /* NULL: none */
	char *path; /* malloc'd; the file that was accepted */
};

/* The GNU build id of @elf (NT_GNU_BUILD_ID note) copied to @id; returns
 * its length in bytes, 0 when the file has none (or it is too long). */
size_t sym_debug_build_id(Elf *elf, uint8_t id[SYM_BUILD_ID_MAX]);

/* Find and open the debug file of the module @elf read from @path.
 * Returns 0 with *out filled, PS_ERR_NOT_FOUND when there is no matching
 * debug file (candidates with another build id or a bad CRC are refused),
 * PS_ERR_NOMEM.  *out is all "none" on failure. */
int sym_debug_open(const char *path, Elf *elf, struct sym_debug *out);

/* Close what sym_debug_open opened (accepts a "none" one). */
void sym_debug_close(struct sym_debug *d);

/* The CRC-32 that .gnu_debuglink records, of the file at @fd. Returns 0 and
 * *crc, or PS_ERR_IO. */
int sym_debug_file_crc(int fd, uint32_t *crc);

#endif /* PTSCOPE_DECODER_DEBUGFILE_H */

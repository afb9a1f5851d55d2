/* SPDX-License-Identifier: MIT */
/* The code image of one traced process (prefix img_): which bytes sit at
 * which address, for libipt's decoder and for the flow layer's own
 * instruction walker.  Internal to the decoder library.
 *
 * ELF files enter libipt through a shared pt_image_section_cache (one per
 * img_cache), so a file mapped into many processes is opened and mapped
 * once.  The same files are also mapped read-only by img_ so that img_read()
 * is a binary search plus a memcpy.  Raw blobs (vDSO, JIT code, dumps) are
 * copied into memfds that enter the same section cache, so libipt keeps them
 * mapped and block-caches them like files (raw code decodes as fast as file
 * code); the same bytes at the same address share one section across the
 * cache's images.  Past IMG_MAX_RAWSECS blobs (or when a memfd cannot be
 * made) a blob is served through the image's read-memory callback
 * (pt_image_set_callback), which libipt consults only where no section maps
 * the address, an instruction at a time.
 *
 * Addresses follow ptxed's `--elf FILE:BASE`: BASE is where the file's
 * lowest PT_LOAD segment goes (a PIE or shared object's bias when that
 * segment's p_vaddr is 0), and BASE 0 means "at the link addresses".
 *
 * An image is not thread-safe; a cache may be shared by images used from
 * one thread at a time.
 */
#ifndef PTSCOPE_DECODER_IMAGE_H
#define PTSCOPE_DECODER_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct pt_image;
struct pt_image_section_cache;

/* Shared by all images of a session: libipt's section cache plus the
 * files mapped so far. */
struct img_cache;

/* Returns 0, PS_ERR_INVAL (out NULL), PS_ERR_NOMEM. */
int img_cache_new(struct img_cache **out);
/* Frees the cache; every image made from it must be freed first.
 * Accepts NULL. */
void img_cache_free(struct img_cache *c);

/* One process's address space. */
struct img_image;

/* @c: the shared cache, or NULL for a private one owned by the image.
 * Returns 0, PS_ERR_INVAL (out NULL), PS_ERR_NOMEM. */
int img_new(struct img_cache *c, struct img_image **out);
void img_free(struct img_image *im); /* accepts NULL */

/* Map ELF file @path (the semantics of dec_add_elf in decoder.h):
 * with @file_offset == 0 and @size == 0, every PT_LOAD segment with PF_X
 * is mapped (p_offset, p_filesz at p_vaddr + bias), bias = @base - lowest
 * PT_LOAD p_vaddr, or 0 when @base is 0.  With @size != 0, the file bytes
 * [@file_offset, @file_offset + @size) are mapped at @base as one section
 * (one /proc/PID/maps line; clipped to the file's end).  A later mapping
 * replaces what it overlaps.
 * Returns the number of sections added (>= 1), PS_ERR_INVAL (NULL path,
 * image), PS_ERR_IO (cannot open/map the file), PS_ERR_FORMAT (not an
 * ELF file, or no executable segment), PS_ERR_NOMEM. */
int img_add_elf(struct img_image *im, const char *path, uint64_t base,
		uint64_t file_offset, uint64_t size);

/* Map a copy of @size bytes at @vaddr, labelled @name ("[vdso]").
 * Returns 0, PS_ERR_INVAL (NULL, size 0, or the range wraps),
 * PS_ERR_NOMEM. */
int img_add_raw(struct img_image *im, const char *name, const void *bytes,
		size_t size, uint64_t vaddr);

/* Copy up to @len code bytes at @ip into @buf, stopping at the end of the
 * mapping that holds @ip.  Returns the bytes copied (> 0), PS_ERR_NOT_FOUND
 * (nothing mapped at @ip), PS_ERR_INVAL (NULL). */
int img_read(const struct img_image *im, uint64_t ip, void *buf, size_t len);

/* What maps @ip (for symbolizers: file + offset of an address). */
struct img_where {
	const char *name;     /* file path or raw blob's name; owned by image */
	uint64_t start;	      /* first address of the mapping */
	uint64_t size;	      /* bytes mapped */
	uint64_t file_offset; /* file offset of @start (0 for raw blobs) */
	uint64_t bias;	      /* run-time address - link address (files) */
	int is_raw;	      /* 1: a raw blob */
	/* the code, @size bytes from @start; owned by the image, valid
	 * until the mapping is replaced or the image freed */
	const uint8_t *bytes;
};

/* Returns 0 and fills @out, or PS_ERR_NOT_FOUND, PS_ERR_INVAL. */
int img_lookup(const struct img_image *im, uint64_t ip, struct img_where *out);

/* The libipt image to give a decoder (pt_blk_set_image); owned by @im. */
struct pt_image *img_pt_image(struct img_image *im);

/* How often libipt fetched code through the read-memory callback (the slow
 * path, for blobs that could not become sections). */
uint64_t img_callback_reads(const struct img_image *im);

/* 1 if some code is served by the read-memory callback (not a libipt
 * section), else 0. */
int img_callback_code(const struct img_image *im);

/* Grows by one with every mapping added; users of cached knowledge about
 * the code (the flow layer's block cache) compare it to notice changes. */
uint64_t img_generation(const struct img_image *im);

#endif /* PTSCOPE_DECODER_IMAGE_H */

/* SPDX-License-Identifier: MIT */
/* A process's code image for libipt and for the flow layer (see image.h). */
#include "decoder/image.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptscope/error.h"

/* One file mapped read-only, shared by all images of a cache. */
struct img_file {
	char *path;
	const uint8_t *map;
	size_t size;
};

/* A raw blob given to libipt as a section of the cache: a memfd holding a
 * copy of the bytes, open as long as the cache (libipt reopens the file by
 * its /proc/self/fd path whenever it maps the section again, so the number
 * must not be reused for another file meanwhile). */
struct img_rawsec {
	uint64_t vaddr;
	size_t size;
	const uint8_t *bytes; /* owned */
	int fd;
	int isid;
};

struct img_cache {
	struct pt_image_section_cache *isc;
	struct img_file *files; /* owned, with their maps */
	size_t nfiles, capfiles;
	struct img_rawsec *raws; /* owned, with their fds */
	size_t nraws, capraws;
};

/* Blobs beyond this many go through the read-memory callback (slow, but
 * no file descriptor each). */
#define IMG_MAX_RAWSECS 256

/* A contiguous run of mapped bytes [start, end). */
struct img_seg {
	uint64_t start, end;
	const uint8_t *bytes; /* bytes[0] is at start; owned by file/blob */
	const char *name;     /* owned by the file or blob */
	uint64_t file_offset;
	uint64_t bias;
	int is_raw;
};

struct img_blob {
	char *name;
	uint8_t *bytes;
};

struct img_image {
	struct img_cache *cache;
	int own_cache;
	struct pt_image *pti;
	struct img_seg *segs; /* sorted by start, non-overlapping */
	size_t nsegs, capsegs;
	struct img_blob *blobs;
	size_t nblobs, capblobs;
	uint64_t gen;
	uint64_t cb_reads; /* read-memory callback calls that found code */
	size_t cb_blobs;   /* blobs served by the callback */
};

/* libipt's sections stay mapped up to this many bytes (its default is to
 * unmap each section as soon as the decoder leaves it). */
#define IMG_ISCACHE_LIMIT (UINT64_C(1) << 30)

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return PS_ERR_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int img_cache_new(struct img_cache **out)
{
	struct img_cache *c;

	if (!out)
		return PS_ERR_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return PS_ERR_NOMEM;
	c->isc = pt_iscache_alloc("ptscope");
	if (!c->isc) {
		free(c);
		return PS_ERR_NOMEM;
	}
	pt_iscache_set_limit(c->isc, IMG_ISCACHE_LIMIT);
	elf_version(EV_CURRENT);
	*out = c;
	return 0;
}

void img_cache_free(struct img_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nfiles; i++) {
		munmap((void *)c->files[i].map, c->files[i].size);
		free(c->files[i].path);
	}
	free(c->files);
	for (size_t i = 0; i < c->nraws; i++) {
		close(c->raws[i].fd);
		free((void *)c->raws[i].bytes);
	}
	free(c->raws);
	pt_iscache_free(c->isc);
	free(c);
}

/* The file's bytes, mapped once per cache. */
static int cache_file(struct img_cache *c, const char *path,
		      const struct img_file **out)
{
	struct img_file *f;
	struct stat st;
	void *map;
	int fd, err;

	for (size_t i = 0; i < c->nfiles; i++) {
		if (!strcmp(c->files[i].path, path)) {
			*out = &c->files[i];
			return 0;
		}
	}
	err = grow((void **)&c->files, &c->capfiles, c->nfiles + 1,
		   sizeof(*c->files));
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		close(fd);
		return ps_err_detail(
		    PS_ERR_IO, "%s is not a non-empty regular file", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return ps_err_detail(PS_ERR_IO, "cannot map %s: %s", path,
				     strerror(errno));
	f = &c->files[c->nfiles];
	f->path = strdup(path);
	if (!f->path) {
		munmap(map, (size_t)st.st_size);
		return PS_ERR_NOMEM;
	}
	f->map = map;
	f->size = (size_t)st.st_size;
	c->nfiles++;
	*out = f;
	return 0;
}

static int img_mem_cb(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *ctx);

int img_new(struct img_cache *c, struct img_image **out)
{
	struct img_image *im;
	int err;

	if (!out)
		return PS_ERR_INVAL;
	im = calloc(1, sizeof(*im));
	if (!im)
		return PS_ERR_NOMEM;
	if (!c) {
		err = img_cache_new(&c);
		if (err) {
			free(im);
			return err;
		}
		im->own_cache = 1;
	}
	im->cache = c;
	im->pti = pt_image_alloc(NULL);
	if (!im->pti) {
		img_free(im);
		return PS_ERR_NOMEM;
	}
	/* Raw blobs without a memfd are served from here; libipt asks only
	 * where no section maps the address. */
	pt_image_set_callback(im->pti, img_mem_cb, im);
	*out = im;
	return 0;
}

void img_free(struct img_image *im)
{
	if (!im)
		return;
	pt_image_free(im->pti);
	for (size_t i = 0; i < im->nblobs; i++) {
		free(im->blobs[i].name);
		free(im->blobs[i].bytes);
	}
	free(im->blobs);
	free(im->segs);
	if (im->own_cache)
		img_cache_free(im->cache);
	free(im);
}

/* First segment whose end is above @ip (segments are sorted and disjoint,
 * so ends are sorted too). */
static size_t seg_search(const struct img_image *im, uint64_t ip)
{
	size_t lo = 0, hi = im->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->segs[mid].end <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct img_seg *seg_find(const struct img_image *im, uint64_t ip)
{
	size_t i = seg_search(im, ip);

	if (i < im->nsegs && im->segs[i].start <= ip)
		return &im->segs[i];
	return NULL;
}

/* Insert @s, cutting away whatever part of older segments it covers. */
static int seg_insert(struct img_image *im, const struct img_seg *s)
{
	size_t i, j, nkeep_hi;
	struct img_seg lo_part, hi_part;
	int has_lo = 0, has_hi = 0, err;

	i = seg_search(im, s->start);
	j = i;
	while (j < im->nsegs && im->segs[j].start < s->end)
		j++;
	/* segs[i, j) overlap s; keep their parts outside it. */
	if (i < j && im->segs[i].start < s->start) {
		lo_part = im->segs[i];
		lo_part.end = s->start;
		has_lo = 1;
	}
	if (i < j && im->segs[j - 1].end > s->end) {
		uint64_t cut;

		hi_part = im->segs[j - 1];
		cut = s->end - hi_part.start;
		hi_part.start = s->end;
		hi_part.bytes += cut;
		if (!hi_part.is_raw)
			hi_part.file_offset += cut;
		has_hi = 1;
	}
	err = grow((void **)&im->segs, &im->capsegs, im->nsegs + 3,
		   sizeof(*im->segs));
	if (err)
		return err;
	nkeep_hi = im->nsegs - j;
	{
		size_t nnew = (size_t)has_lo + 1 + (size_t)has_hi;

		memmove(&im->segs[i + nnew], &im->segs[j],
			nkeep_hi * sizeof(*im->segs));
		if (has_lo)
			im->segs[i++] = lo_part;
		im->segs[i++] = *s;
		if (has_hi)
			im->segs[i++] = hi_part;
		im->nsegs = i + nkeep_hi;
	}
	im->gen++;
	return 0;
}

static int add_file_section(struct img_image *im, const struct img_file *f,
			    uint64_t offset, uint64_t size, uint64_t vaddr,
			    uint64_t bias)
{
	struct img_seg s;
	int isid, err;

	if (offset >= f->size)
		return 0;
	if (size > f->size - offset)
		size = f->size - offset;
	if (!size || vaddr + size < vaddr)
		return 0;
	isid =
	    pt_iscache_add_file(im->cache->isc, f->path, offset, size, vaddr);
	if (isid < 0)
		return ps_err_detail(PS_ERR_IO, "libipt cannot map %s: %s",
				     f->path, pt_errstr(pt_errcode(isid)));
	err = pt_image_add_cached(im->pti, im->cache->isc, isid, NULL);
	if (err < 0)
		return ps_err_detail(PS_ERR_IO, "libipt cannot add %s: %s",
				     f->path, pt_errstr(pt_errcode(err)));
	s.start = vaddr;
	s.end = vaddr + size;
	s.bytes = f->map + offset;
	s.name = f->path;
	s.file_offset = offset;
	s.bias = bias;
	s.is_raw = 0;
	err = seg_insert(im, &s);
	return err ? err : 1;
}

int img_add_elf(struct img_image *im, const char *path, uint64_t base,
		uint64_t file_offset, uint64_t size)
{
	const struct img_file *f = NULL;
	uint64_t minaddr = UINT64_MAX, bias;
	size_t phnum, i;
	GElf_Ehdr eh;
	Elf *elf;
	int err, added = 0;

	if (!im || !path)
		return PS_ERR_INVAL;
	err = cache_file(im->cache, path, &f);
	if (err)
		return err;
	elf = elf_memory((char *)f->map, f->size);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &phnum) != 0) {
		if (elf)
			elf_end(elf);
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not an ELF file with program "
				     "headers",
				     path);
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < minaddr)
			minaddr = ph.p_vaddr;
	}
	if (size) {
		/* One mapping: find the link address of file_offset to
		 * know the bias (for symbolizers). */
		bias = base - file_offset;
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) &&
			    ph.p_type == PT_LOAD &&
			    ph.p_offset <= file_offset &&
			    file_offset - ph.p_offset < ph.p_filesz) {
				bias = base - (ph.p_vaddr +
					       (file_offset - ph.p_offset));
				break;
			}
		}
		err = add_file_section(im, f, file_offset, size, base, bias);
		elf_end(elf);
		if (err == 0)
			return ps_err_detail(PS_ERR_FORMAT,
					     "%s: offset 0x%llx is past the "
					     "end of the file",
					     path,
					     (unsigned long long)file_offset);
		return err;
	}
	bias = (base && minaddr != UINT64_MAX) ? base - minaddr : 0;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || !ph.p_filesz)
			continue;
		err = add_file_section(im, f, ph.p_offset, ph.p_filesz,
				       ph.p_vaddr + bias, bias);
		if (err < 0) {
			elf_end(elf);
			return err;
		}
		added += err;
	}
	elf_end(elf);
	if (!added)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s has no executable PT_LOAD segment "
				     "inside the file",
				     path);
	return added;
}

/* Does any segment of @im overlap [start, end)? */
static int overlaps(const struct img_image *im, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < im->nsegs; i++)
		if (im->segs[i].start < end && start < im->segs[i].end)
			return 1;
	return 0;
}

/* A memory-backed file holding @size bytes, or -1. */
static int raw_memfd(const uint8_t *bytes, size_t size)
{
	size_t done = 0;
	int fd;

	fd = memfd_create("ptscope-raw", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t n = write(fd, bytes + done, size - done);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return fd;
}

/* The cache's section for these bytes at @vaddr (made on first use, shared
 * by every image that maps the same bytes there, such as the vDSO of every
 * process): a libipt section on a memfd, which stays mapped in libipt's
 * section cache like a file's and gets libipt's block cache, so raw code
 * decodes as fast as file-backed code.  Returns the isid, or < 0 when
 * the blob must be served by the read-memory callback instead. */
static int raw_section(struct img_cache *c, const uint8_t *bytes, size_t size,
		       uint64_t vaddr)
{
	struct img_rawsec *r;
	char path[64];
	uint8_t *copy;
	int fd, isid;

	for (size_t i = 0; i < c->nraws; i++) {
		r = &c->raws[i];
		if (r->vaddr == vaddr && r->size == size &&
		    !memcmp(r->bytes, bytes, size))
			return r->isid;
	}
	if (c->nraws >= IMG_MAX_RAWSECS || grow((void **)&c->raws, &c->capraws,
						c->nraws + 1, sizeof(*c->raws)))
		return -1;
	copy = malloc(size);
	if (!copy)
		return -1;
	memcpy(copy, bytes, size);
	fd = raw_memfd(bytes, size);
	if (fd < 0) {
		free(copy);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	isid = pt_iscache_add_file(c->isc, path, 0, size, vaddr);
	if (isid < 0) {
		close(fd);
		free(copy);
		return -1;
	}
	r = &c->raws[c->nraws++];
	r->vaddr = vaddr;
	r->size = size;
	r->bytes = copy;
	r->fd = fd;
	r->isid = isid;
	return isid;
}

int img_add_raw(struct img_image *im, const char *name, const void *bytes,
		size_t size, uint64_t vaddr)
{
	struct img_blob *b;
	struct img_seg s;
	int err, isid;

	if (!im || !bytes || !size || vaddr + size < vaddr || vaddr + size == 0)
		return PS_ERR_INVAL;
	err = grow((void **)&im->blobs, &im->capblobs, im->nblobs + 1,
		   sizeof(*im->blobs));
	if (err)
		return err;
	b = &im->blobs[im->nblobs];
	b->name = strdup(name ? name : "[raw]");
	b->bytes = malloc(size);
	if (!b->name || !b->bytes) {
		free(b->name);
		free(b->bytes);
		return PS_ERR_NOMEM;
	}
	memcpy(b->bytes, bytes, size);
	/* A section of the shared cache (it also wins over a file it
	 * overlaps, as a later mapping should).  A section of the image
	 * alone would be opened and mapped again each time the decoder
	 * comes back to it (12 s for one fuzzed input); failing that, the
	 * read-memory callback serves the blob (libipt then decodes it an
	 * instruction at a time, without its block cache). */
	isid = raw_section(im->cache, b->bytes, size, vaddr);
	if (isid >= 0 &&
	    pt_image_add_cached(im->pti, im->cache->isc, isid, NULL) < 0)
		isid = -1;
	if (isid < 0 && overlaps(im, vaddr, vaddr + size)) {
		free(b->name);
		free(b->bytes);
		return ps_err_detail(
		    PS_ERR_NOMEM, "cannot give libipt the raw code at 0x%llx",
		    (unsigned long long)vaddr);
	}
	im->nblobs++;
	if (isid < 0)
		im->cb_blobs++;
	s.start = vaddr;
	s.end = vaddr + size;
	s.bytes = b->bytes;
	s.name = b->name;
	s.file_offset = 0;
	s.bias = 0;
	s.is_raw = 1;
	return seg_insert(im, &s);
}

int img_read(const struct img_image *im, uint64_t ip, void *buf, size_t len)
{
	const struct img_seg *s;
	uint64_t avail;

	if (!im || !buf)
		return PS_ERR_INVAL;
	s = seg_find(im, ip);
	if (!s)
		return PS_ERR_NOT_FOUND;
	avail = s->end - ip;
	if (len > avail)
		len = (size_t)avail;
	if (len > INT32_MAX)
		len = INT32_MAX;
	memcpy(buf, s->bytes + (ip - s->start), len);
	return (int)len;
}

/* libipt's read-memory callback: raw blobs only (files have sections). */
static int img_mem_cb(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *ctx)
{
	struct img_image *im = ctx;
	const struct img_seg *s = seg_find(im, ip);
	int n;

	(void)asid;
	if (!s || !s->is_raw)
		return -pte_nomap;
	im->cb_reads++;
	n = img_read(im, ip, buffer, size);
	return n < 0 ? -pte_nomap : n;
}

int img_lookup(const struct img_image *im, uint64_t ip, struct img_where *out)
{
	const struct img_seg *s;

	if (!im || !out)
		return PS_ERR_INVAL;
	s = seg_find(im, ip);
	if (!s)
		return PS_ERR_NOT_FOUND;
	out->name = s->name;
	out->start = s->start;
	out->size = s->end - s->start;
	out->file_offset = s->file_offset;
	out->bias = s->bias;
	out->is_raw = s->is_raw;
	out->bytes = s->bytes;
	return 0;
}

struct pt_image *img_pt_image(struct img_image *im)
{
	return im ? im->pti : NULL;
}

uint64_t img_callback_reads(const struct img_image *im)
{
	return im ? im->cb_reads : 0;
}

int img_callback_code(const struct img_image *im)
{
	return im && im->cb_blobs ? 1 : 0;
}

uint64_t img_generation(const struct img_image *im)
{
	return im ? im->gen : 0;
}

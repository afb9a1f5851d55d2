/* SPDX-License-Identifier: MIT */
/* GNU build ids of ELF files (see build_id.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/recording.h"
#include "src/recording/build_id.h"

static int note_build_id(Elf_Data *data, uint8_t *buf, size_t bufsz)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4)) {
			size_t n = nh.n_descsz;

			if (n > bufsz || n > REC_BUILD_ID_MAX)
				return PS_ERR_LIMIT;
			memcpy(buf, (const char *)data->d_buf + desc_off, n);
			return (int)n;
		}
	}
	return 0;
}

static int elf_build_id(int fd, uint8_t *buf, size_t bufsz)
{
	size_t nph = 0;
	Elf_Scn *scn = NULL;
	Elf *e;
	int r = 0;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return PS_ERR_FORMAT;
	}
	if (elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph && r == 0; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(e, (int)i, &ph) ||
			    ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset,
						 ph.p_filesz, ELF_T_NHDR);
			if (d)
				r = note_build_id(d, buf, bufsz);
		}
	}
	/* Separate debug files keep the note only as a section. */
	while (r == 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d)
			r = note_build_id(d, buf, bufsz);
	}
	elf_end(e);
	return r;
}

struct bid_entry {
	char *path;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	int result;
	uint8_t id[REC_BUILD_ID_MAX];
};

static pthread_mutex_t bid_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bid_entry *bid_cache;
static size_t bid_n, bid_cap;

static struct bid_entry *bid_lookup(const char *path, const struct stat *st)
{
	for (size_t i = 0; i < bid_n; i++) {
		struct bid_entry *b = &bid_cache[i];

		if (b->ino == st->st_ino && b->dev == st->st_dev &&
		    b->mtime.tv_sec == st->st_mtim.tv_sec &&
		    b->mtime.tv_nsec == st->st_mtim.tv_nsec &&
		    !strcmp(b->path, path))
			return b;
	}
	return NULL;
}

static void bid_store(const char *path, const struct stat *st, int result,
		      const uint8_t *id)
{
	struct bid_entry *b;

	if (bid_n == bid_cap) {
		size_t nc = bid_cap ? bid_cap * 2 : 32;

		b = realloc(bid_cache, nc * sizeof(*b));
		if (!b)
			return; /* only a cache: the next call reads again */
		bid_cache = b;
		bid_cap = nc;
	}
	b = &bid_cache[bid_n];
	b->path = strdup(path);
	if (!b->path)
		return;
	b->dev = st->st_dev;
	b->ino = st->st_ino;
	b->mtime = st->st_mtim;
	b->result = result;
	if (result > 0)
		memcpy(b->id, id, (size_t)result);
	bid_n++;
}

int buildid_read(const char *path, uint8_t *buf, size_t bufsz)
{
	uint8_t id[REC_BUILD_ID_MAX];
	struct bid_entry *b;
	struct stat st;
	int fd, r, e;

	if (!path || !buf)
		return ps_err_detail(PS_ERR_INVAL, "buildid_read: no path");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(e));
	}
	pthread_mutex_lock(&bid_lock);
	b = bid_lookup(path, &st);
	if (b) {
		r = b->result;
		memcpy(id, b->id, r > 0 ? (size_t)r : 0);
	} else {
		r = S_ISREG(st.st_mode) ? elf_build_id(fd, id, sizeof(id))
					: PS_ERR_FORMAT;
		bid_store(path, &st, r, id);
	}
	pthread_mutex_unlock(&bid_lock);
	close(fd);
	if (r == PS_ERR_FORMAT)
		return ps_err_detail(r, "%s is not an ELF file", path);
	if (r > 0) {
		if ((size_t)r > bufsz)
			return ps_err_detail(PS_ERR_LIMIT,
					     "build id of %s is %d bytes, "
					     "buffer has %zu",
					     path, r, bufsz);
		memcpy(buf, id, (size_t)r);
	}
	return r;
}

void buildid_hex(const uint8_t *id, size_t len, char *out, size_t outsz)
{
	size_t o = 0;

	if (!outsz)
		return;
	for (size_t i = 0; i < len && o + 2 < outsz; i++, o += 2)
		snprintf(out + o, 3, "%02x", id[i]);
	out[o] = 0;
}

/* SPDX-License-Identifier: MIT */
/* Finding a stripped module's separate debug file (see debugfile.h), and
 * the build id of an ELF file (dec_elf_build_id, decoder.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "decoder/debugfile.h"
#include "decoder/decoder.h"
#include "ptscope/error.h"

#define SYM_DEBUG_DEFAULT "/usr/lib/debug"

/* Set by dec_set_debug_dirs; read when a module is loaded. */
static char *user_dirs;	      /* colon-separated, searched first; owned */
static int with_defaults = 1; /* then $PTSCOPE_DEBUG_DIR and the default */

int dec_set_debug_dirs(const char *dirs, int defaults)
{
	char *copy = NULL;

	if (dirs && *dirs) {
		copy = strdup(dirs);
		if (!copy)
			return PS_ERR_NOMEM;
	}
	free(user_dirs);
	user_dirs = copy;
	with_defaults = defaults != 0;
	return 0;
}

/* The directories to search, colon-separated, in order; malloc'd. */
static char *debug_dirs(void)
{
	const char *env = with_defaults ? getenv("PTSCOPE_DEBUG_DIR") : NULL;
	size_t len = 1;
	char *s;

	len += user_dirs ? strlen(user_dirs) + 1 : 0;
	len += env ? strlen(env) + 1 : 0;
	len += with_defaults ? sizeof(SYM_DEBUG_DEFAULT) : 0;
	s = malloc(len);
	if (!s)
		return NULL;
	snprintf(s, len, "%s%s%s%s%s", user_dirs ? user_dirs : "",
		 user_dirs ? ":" : "", env ? env : "", env ? ":" : "",
		 with_defaults ? SYM_DEBUG_DEFAULT : "");
	return s;
}

size_t sym_debug_build_id(Elf *elf, uint8_t id[SYM_BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off,
					   &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) ||
			    !nh.n_descsz || nh.n_descsz > SYM_BUILD_ID_MAX)
				continue;
			memcpy(id, (char *)data->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
	}
	return 0;
}

_Static_assert(DEC_BUILD_ID_MAX == SYM_BUILD_ID_MAX,
	       "dec_elf_build_id hands out what sym_debug_build_id reads");

int dec_elf_build_id(const char *path, uint8_t id[DEC_BUILD_ID_MAX])
{
	size_t n;
	Elf *elf;
	int fd;

	if (!path || !id)
		return ps_err_detail(PS_ERR_INVAL,
				     "dec_elf_build_id: path and id are "
				     "required");
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ps_err_detail(PS_ERR_IO, "cannot open %s: %s", path,
				     strerror(errno));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		close(fd);
		return ps_err_detail(PS_ERR_FORMAT, "%s is not an ELF file",
				     path);
	}
	n = sym_debug_build_id(elf, id);
	elf_end(elf);
	close(fd);
	return (int)n;
}

int sym_debug_file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	off_t pos = 0;
	ssize_t got;

	while ((got = pread(fd, buf, sizeof(buf), pos)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return PS_ERR_IO;
		}
		c = crc32(c, buf, (uInt)got);
		pos += got;
	}
	*crc = (uint32_t)c;
	return 0;
}

/* The .gnu_debuglink of @elf: file name (NUL-terminated, then padding to
 * 4 bytes) and the CRC-32 of the debug file in the module's byte order. */
static int debuglink(Elf *elf, const char **name, uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	GElf_Ehdr eh;

	if (elf_getshdrstrndx(elf, &shstrndx) || !gelf_getehdr(elf, &eh))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *sn;
		Elf_Data *data;
		const unsigned char *b;
		size_t len, at;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		sn = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sn || strcmp(sn, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return 0;
		b = data->d_buf;
		len = strnlen((const char *)b, data->d_size);
		at = (len + 4) & ~(size_t)3;
		/* a bare file name that fits, with its CRC after it */
		if (!len || at + 4 > data->d_size || memchr(b, '/', len))
			return 0;
		if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
			*crc = (uint32_t)b[at] << 24 |
			       (uint32_t)b[at + 1] << 16 |
			       (uint32_t)b[at + 2] << 8 | b[at + 3];
		else
			*crc = (uint32_t)b[at + 3] << 24 |
			       (uint32_t)b[at + 2] << 16 |
			       (uint32_t)b[at + 1] << 8 | b[at];
		*name = (const char *)b;
		return 1;
	}
	return 0;
}

/* What a candidate must match. */
struct want {
	const char *module; /* the module's own path (never itself) */
	struct stat st;	    /* of the module, to skip it */
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t idlen; /* 0: the module has no build id */
	int have_crc; /* a debuglink candidate: CRC to check */
	uint32_t crc;
};

/* Open @cand and keep it in @out if it belongs to the module.  Returns 1
 * (accepted), 0 (absent or refused), PS_ERR_NOMEM. */
static int try_candidate(const char *cand, const struct want *w,
			 struct sym_debug *out)
{
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t idlen;
	uint32_t crc;
	struct stat st;
	int fd, ok;
	Elf *elf;

	fd = open(cand, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_dev == w->st.st_dev && st.st_ino == w->st.st_ino)) {
		close(fd);
		return 0;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return 0;
	}
	idlen = sym_debug_build_id(elf, id);
	if (w->idlen && idlen)
		/* both carry an id: it alone decides */
		ok = idlen == w->idlen && !memcmp(id, w->id, idlen);
	else
		ok = w->have_crc && sym_debug_file_crc(fd, &crc) == 0 &&
		     crc == w->crc;
	if (!ok) {
		elf_end(elf);
		close(fd);
		return 0;
	}
	out->path = strdup(cand);
	if (!out->path) {
		elf_end(elf);
		close(fd);
		return PS_ERR_NOMEM;
	}
	out->fd = fd;
	out->elf = elf;
	return 1;
}

/* <dir>/.build-id/NN/REST.debug in each debug directory. */
static int by_build_id(const char *dirs, const struct want *w,
		       struct sym_debug *out)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1], cand[PATH_MAX];
	const char *d, *end;
	int r;

	if (w->idlen < 2)
		return 0;
	for (size_t i = 0; i < w->idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", w->id[i]);
	for (d = dirs; *d; d = *end ? end + 1 : end) {
		end = strchrnul(d, ':');
		if (end == d)
			continue;
		if (snprintf(cand, sizeof(cand), "%.*s/.build-id/%.2s/%s.debug",
			     (int)(end - d), d, hex,
			     hex + 2) >= (int)sizeof(cand))
			continue;
		r = try_candidate(cand, w, out);
		if (r)
			return r;
	}
	return 0;
}

/* The debuglink name next to the module, in its .debug/ subdirectory,
 * and under each debug directory + the module's directory. */
static int by_debuglink(const char *dirs, const char *link,
			const struct want *w, struct sym_debug *out)
{
	char real[PATH_MAX], cand[PATH_MAX], *slash;
	const char *d, *end;
	int r;

	if (!realpath(w->module, real) &&
	    snprintf(real, sizeof(real), "%s", w->module) >= (int)sizeof(real))
		return 0;
	slash = strrchr(real, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(real, sizeof(real), ".");
	if (snprintf(cand, sizeof(cand), "%s/%s", real, link) <
	    (int)sizeof(cand)) {
		r = try_candidate(cand, w, out);
		if (r)
			return r;
	}
	if (snprintf(cand, sizeof(cand), "%s/.debug/%s", real, link) <
	    (int)sizeof(cand)) {
		r = try_candidate(cand, w, out);
		if (r)
			return r;
	}
	for (d = dirs; *d; d = *end ? end + 1 : end) {
		end = strchrnul(d, ':');
		if (end == d)
			continue;
		if (snprintf(cand, sizeof(cand), "%.*s%s%s/%s", (int)(end - d),
			     d, real[0] == '/' ? "" : "/", real,
			     link) >= (int)sizeof(cand))
			continue;
		r = try_candidate(cand, w, out);
		if (r)
			return r;
	}
	return 0;
}

int sym_debug_open(const char *path, Elf *elf, struct sym_debug *out)
{
	struct want w = {.module = path};
	const char *link = NULL;
	char *dirs;
	int r;

	out->fd = -1;
	out->elf = NULL;
	out->path = NULL;
	if (stat(path, &w.st))
		memset(&w.st, 0, sizeof(w.st));
	w.idlen = sym_debug_build_id(elf, w.id);
	dirs = debug_dirs();
	if (!dirs)
		return PS_ERR_NOMEM;
	r = by_build_id(dirs, &w, out);
	if (!r && debuglink(elf, &link, &w.crc)) {
		w.have_crc = 1;
		r = by_debuglink(dirs, link, &w, out);
	}
	free(dirs);
	if (r < 0)
		return r;
	if (!r)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "no debug file with the build id of %s "
				     "was found: install its -dbg/-dbgsym "
				     "package or pass --debug-dir",
				     path);
	return 0;
}

void sym_debug_close(struct sym_debug *d)
{
	if (!d)
		return;
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	d->elf = NULL;
	d->fd = -1;
	d->path = NULL;
}

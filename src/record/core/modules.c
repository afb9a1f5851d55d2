/* SPDX-License-Identifier: MIT */
/* Mapped modules of a process: /proc/PID/maps, build ids, memory reads,
 * archives (see modules.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/modules.h"

#define DELETED_SUFFIX " (deleted)"

static int parse_line(char *line, struct mod_map *m)
{
	unsigned long long start, end, off, inode;
	char perms[8];
	int n = 0;
	char *path;
	size_t len;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &m->dev_major, &m->dev_minor, &inode,
		   &n) != 7 ||
	    n == 0 || strlen(perms) < 4 || end < start)
		return PS_ERR_FORMAT;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->inode = inode;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
		  (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->shared = perms[3] == 's';
	path = line + n;
	len = strlen(path);
	while (len && (path[len - 1] == '\n' || path[len - 1] == ' '))
		path[--len] = 0;
	m->deleted = 0;
	if (len >= sizeof(DELETED_SUFFIX) - 1 &&
	    !strcmp(path + len - (sizeof(DELETED_SUFFIX) - 1),
		    DELETED_SUFFIX)) {
		path[len - (sizeof(DELETED_SUFFIX) - 1)] = 0;
		m->deleted = 1;
	}
	m->path = strdup(path);
	return m->path ? 0 : PS_ERR_NOMEM;
}

static int keep(const struct mod_map *m, unsigned flags)
{
	if ((flags & MOD_EXEC) && !(m->prot & PROT_EXEC))
		return 0;
	if ((flags & MOD_FILE) && !m->inode && strcmp(m->path, "[vdso]"))
		return 0;
	return 1;
}

/* Is the file now at @m->path the one @m maps?  A program whose binary
 * was deleted, or replaced (a package upgrade renames a new file over
 * it), still runs the old one: reading the path would give the wrong
 * code and symbols.  The mapped file stays reachable through
 * /proc/PID/map_files, which @m->open_path is then set to (the first
 * mapping's, from @l, so all mappings of a file share the string). */
static int find_mapped_file(pid_t pid, const struct mod_list *l,
			    struct mod_map *m)
{
	struct stat st;
	char alt[96];

	if (!m->deleted && !stat(m->path, &st) && st.st_ino == m->inode &&
	    major(st.st_dev) == m->dev_major &&
	    minor(st.st_dev) == m->dev_minor)
		return 0;
	for (size_t i = l->n; i-- > 0;)
		if (l->maps[i].inode == m->inode &&
		    l->maps[i].dev_major == m->dev_major &&
		    l->maps[i].dev_minor == m->dev_minor &&
		    l->maps[i].open_path) {
			m->open_path = strdup(l->maps[i].open_path);
			return m->open_path ? 0 : PS_ERR_NOMEM;
		}
	snprintf(alt, sizeof(alt), "/proc/%d/map_files/%llx-%llx",
		 pid ? (int)pid : (int)getpid(), (unsigned long long)m->start,
		 (unsigned long long)m->end);
	m->open_path = strdup(alt);
	return m->open_path ? 0 : PS_ERR_NOMEM;
}

int mod_read(pid_t pid, unsigned flags, struct mod_list *out)
{
	char fname[64], *line = NULL;
	size_t cap = 0, lineno = 0;
	struct mod_list l = {NULL, 0};
	size_t lcap = 0;
	FILE *f;
	int r = 0;

	if (!out || pid < 0)
		return ps_err_detail(PS_ERR_INVAL, "mod_read: bad arguments");
	if (pid)
		snprintf(fname, sizeof(fname), "/proc/%d/maps", (int)pid);
	else
		snprintf(fname, sizeof(fname), "/proc/self/maps");
	f = fopen(fname, "re");
	if (!f) {
		int e = errno;

		if (e == ENOENT)
			return ps_err_detail(PS_ERR_NOT_FOUND, "no process %d",
					     (int)pid);
		if (e == EACCES || e == EPERM)
			return ps_err_detail(PS_ERR_PERM,
					     "cannot read %s: %s (run as the "
					     "target's user or root)",
					     fname, strerror(e));
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s", fname,
				     strerror(e));
	}
	while (getline(&line, &cap, f) > 0) {
		struct mod_map m;

		lineno++;
		memset(&m, 0, sizeof(m));
		r = parse_line(line, &m);
		if (r == PS_ERR_FORMAT) {
			r = ps_err_detail(PS_ERR_FORMAT,
					  "%s line %zu is not a mapping", fname,
					  lineno);
			break;
		}
		if (r)
			break;
		if (!keep(&m, flags)) {
			free(m.path);
			continue;
		}
		if (m.inode && m.path[0] == '/') {
			int n;

			r = find_mapped_file(pid, &l, &m);
			if (r) {
				free(m.path);
				break;
			}
			n = mod_build_id(mod_file(&m), m.build_id,
					 sizeof(m.build_id));

			/* A file we cannot read or that is no ELF (a font,
			 * a locale archive) simply has no build id. */
			m.build_id_len = n > 0 ? (uint8_t)n : 0;
		}
		if (l.n == lcap) {
			size_t nc = lcap ? lcap * 2 : 32;
			struct mod_map *nm = realloc(l.maps, nc * sizeof(*nm));

			if (!nm) {
				free(m.path);
				free(m.open_path);
				r = PS_ERR_NOMEM;
				break;
			}
			l.maps = nm;
			lcap = nc;
		}
		l.maps[l.n++] = m;
	}
	if (!r && ferror(f))
		r = ps_err_detail(PS_ERR_IO, "cannot read %s", fname);
	free(line);
	fclose(f);
	if (r) {
		mod_list_fini(&l);
		return r;
	}
	if (pid && l.n == 0 && !flags) {
		/* A zombie or a process that just exited has no maps. */
		return ps_err_detail(PS_ERR_TARGET,
				     "process %d has no memory mappings "
				     "(has it exited?)",
				     (int)pid);
	}
	*out = l;
	return 0;
}

void mod_list_fini(struct mod_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->maps[i].path);
		free(l->maps[i].open_path);
	}
	free(l->maps);
	l->maps = NULL;
	l->n = 0;
}

const struct mod_map *mod_find(const struct mod_list *l, uint64_t addr)
{
	size_t lo = 0, hi = l ? l->n : 0;

	/* /proc/PID/maps is sorted by address. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mod_map *m = &l->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

/* ---- build ids ---- */

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

int mod_build_id(const char *path, uint8_t *buf, size_t bufsz)
{
	uint8_t id[REC_BUILD_ID_MAX];
	struct bid_entry *b;
	struct stat st;
	int fd, r, e;

	if (!path || !buf)
		return ps_err_detail(PS_ERR_INVAL, "mod_build_id: no path");
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

void mod_build_id_hex(const uint8_t *id, size_t len, char *out, size_t outsz)
{
	size_t o = 0;

	if (!outsz)
		return;
	for (size_t i = 0; i < len && o + 2 < outsz; i++, o += 2)
		snprintf(out + o, 3, "%02x", id[i]);
	out[o] = 0;
}

/* ---- target memory ---- */

ssize_t mod_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)addr, len};
	char fname[64];
	ssize_t n;
	int fd, e;

	if (!buf || pid < 0)
		return ps_err_detail(PS_ERR_INVAL, "mod_read_mem: bad args");
	if (pid == 0)
		pid = getpid();
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n >= 0)
		return n;
	e = errno;
	if (e == ESRCH)
		return ps_err_detail(PS_ERR_TARGET, "process %d is gone",
				     (int)pid);
	if (e == EFAULT)
		return 0; /* nothing mapped at @addr */
	/* EPERM (e.g. Yama) or ENOSYS: /proc/PID/mem also works for a
	 * ptrace-stopped tracee. */
	snprintf(fname, sizeof(fname), "/proc/%d/mem", (int)pid);
	fd = open(fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			return ps_err_detail(PS_ERR_TARGET,
					     "process %d is gone", (int)pid);
		return ps_err_detail(e == EACCES || e == EPERM ? PS_ERR_PERM
							       : PS_ERR_IO,
				     "cannot read the memory of process %d: "
				     "%s (trace it or run as root)",
				     (int)pid, strerror(e));
	}
	n = pread(fd, buf, len, (off_t)addr);
	e = errno;
	close(fd);
	if (n < 0)
		return e == EIO ? 0
				: ps_err_detail(PS_ERR_IO,
						"cannot read the memory of "
						"process %d: %s",
						(int)pid, strerror(e));
	return n;
}

int mod_read_vdso(pid_t pid, uint8_t **bytes, size_t *len, uint64_t *vaddr)
{
	struct mod_list l;
	const struct mod_map *v = NULL;
	uint8_t *buf;
	size_t size;
	ssize_t n;
	int r;

	if (!bytes || !len || !vaddr)
		return ps_err_detail(PS_ERR_INVAL, "mod_read_vdso: bad args");
	r = mod_read(pid, MOD_FILE, &l);
	if (r)
		return r;
	for (size_t i = 0; i < l.n && !v; i++)
		if (!strcmp(l.maps[i].path, "[vdso]"))
			v = &l.maps[i];
	if (!v) {
		mod_list_fini(&l);
		return ps_err_detail(PS_ERR_NOT_FOUND, "process %d has no vDSO",
				     (int)pid);
	}
	size = v->end - v->start;
	*vaddr = v->start;
	mod_list_fini(&l);
	buf = malloc(size);
	if (!buf)
		return PS_ERR_NOMEM;
	n = mod_read_mem(pid, *vaddr, buf, size);
	if (n < 0 || (size_t)n != size) {
		free(buf);
		return n < 0 ? (int)n
			     : ps_err_detail(PS_ERR_IO,
					     "could read only %zd of %zu vDSO "
					     "bytes of process %d",
					     n, size, (int)pid);
	}
	*bytes = buf;
	*len = size;
	return 0;
}

int mod_read_file(const char *path, uint64_t max_len, uint8_t **bytes,
		  size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, e;

	if (!path || !bytes || !len)
		return ps_err_detail(PS_ERR_INVAL, "mod_read_file: bad args");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s", path,
				     strerror(e));
	}
	if ((uint64_t)st.st_size > max_len || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return ps_err_detail(PS_ERR_LIMIT,
				     "%s is %lld bytes, more than the archive "
				     "limit of %" PRIu64 " bytes",
				     path, (long long)st.st_size, max_len);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return PS_ERR_NOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return ps_err_detail(
			    PS_ERR_IO, "cannot read %s: %s", path,
			    n < 0 ? strerror(e) : "file shrank");
		}
		got += (size_t)n;
	}
	close(fd);
	*bytes = buf;
	*len = got;
	return 0;
}

void mod_to_rec(const struct mod_map *m, uint64_t pid, struct rec_module *rm)
{
	memset(rm, 0, sizeof(*rm));
	rm->pid = pid;
	rm->start = m->start;
	rm->end = m->end;
	rm->offset = m->offset;
	rm->prot = m->prot;
	rm->inode = m->inode;
	rm->path = m->path;
	rm->build_id_len = m->build_id_len;
	memcpy(rm->build_id, m->build_id, m->build_id_len);
}

/* ---- finding a recorded module's file when decoding ---- */

static int mkdir_p(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(dir, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* Write the archived bytes to @path unless an identical file is there. */
static int extract(const struct rec_module *m, const char *path)
{
	char *tmp = NULL;
	struct stat st;
	size_t off = 0;
	int fd, e;

	/* Same build id and size: extracted before (by us or a decoder
	 * running at the same time). */
	if (m->build_id_len && stat(path, &st) == 0 &&
	    (uint64_t)st.st_size == m->archive_len)
		return 0;
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return PS_ERR_NOMEM;
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	while (off < m->archive_len) {
		ssize_t n = write(fd, m->archive + off, m->archive_len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* rename: decoders running at once see the whole file or none. */
	if (rename(tmp, path) < 0)
		goto fail;
	free(tmp);
	return 0;
fail:
	e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return ps_err_detail(PS_ERR_IO,
			     "cannot extract %s from the "
			     "recording: %s",
			     path, strerror(e));
}

int mod_locate(const struct rec_module *m, const char *cache_dir, char *out,
	       size_t outsz)
{
	char hex[2 * REC_BUILD_ID_MAX + 1], dir[PATH_MAX];
	uint8_t id[REC_BUILD_ID_MAX];
	const char *base;
	int n;

	if (!m || !m->path || !out || !outsz)
		return ps_err_detail(PS_ERR_INVAL, "mod_locate: bad args");
	mod_build_id_hex(m->build_id, m->build_id_len, hex, sizeof(hex));
	if (m->archive) {
		const char *tmp = getenv("TMPDIR");
		int r;

		base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
			base = "module";
		if (cache_dir)
			n = snprintf(dir, sizeof(dir), "%s/%s", cache_dir,
				     hex[0] ? hex : "noid");
		else
			n = snprintf(dir, sizeof(dir), "%s/ptscope-%u/%s",
				     tmp && *tmp ? tmp : "/tmp",
				     (unsigned)getuid(), hex[0] ? hex : "noid");
		if (n < 0 || (size_t)n >= sizeof(dir))
			return ps_err_detail(PS_ERR_LIMIT,
					     "cache path too long");
		if (mkdir_p(dir) < 0)
			return ps_err_detail(PS_ERR_IO, "cannot create %s: %s",
					     dir, strerror(errno));
		n = snprintf(out, outsz, "%s/%s", dir, base);
		if (n < 0 || (size_t)n >= outsz)
			return ps_err_detail(PS_ERR_LIMIT,
					     "path buffer too small");
		r = extract(m, out);
		return r;
	}
	if (access(m->path, R_OK) < 0)
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "%s is not on this machine and the "
				     "recording has no copy of it: record "
				     "with --archive",
				     m->path);
	if (m->build_id_len) {
		n = mod_build_id(m->path, id, sizeof(id));
		if (n > 0 && ((size_t)n != m->build_id_len ||
			      memcmp(id, m->build_id, (size_t)n)))
			return ps_err_detail(PS_ERR_NOT_FOUND,
					     "%s on this machine differs from "
					     "the recorded one (build id %s): "
					     "record with --archive",
					     m->path, hex);
	}
	n = snprintf(out, outsz, "%s", m->path);
	if (n < 0 || (size_t)n >= outsz)
		return ps_err_detail(PS_ERR_LIMIT, "path buffer too small");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Mapped modules of a process: /proc/PID/maps, memory reads, archives
 * (see modules.h). */
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
#include "src/recording/build_id.h"

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
			n = buildid_read(mod_file(&m), m.build_id,
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

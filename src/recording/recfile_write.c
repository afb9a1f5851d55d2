/* SPDX-License-Identifier: MIT */
/* Recording file writer (recw_, recfile.h): sections appended as the
 * recorder learns things, in a temporary file renamed at the end.  Layout
 * and versioning rule: include/ptscope/recording.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ptscope/bytes.h"
#include "ptscope/error.h"
#include "src/output/tmpfile.h"
#include "src/recording/recfile.h"

/* ---- writer ---- */

struct archived {
	char *path;
	uint8_t id[REC_BUILD_ID_MAX];
	uint8_t id_len;
};

struct recw {
	FILE *f;      /* owned: the temporary file */
	char *path;   /* owned: final name */
	char *tmp;    /* owned: temporary name */
	int tmp_slot; /* its src/output/tmpfile.h slot, -1: none */
	int have_header;
	int err; /* sticky: first error */
	uint64_t bytes;
	uint64_t nsections;
	struct archived *arch; /* owned: archives written, in order */
	size_t narch;
	struct ps_bytes ob; /* scratch for one section's fixed fields */
};

int recw_open(const char *path, struct recw **out)
{
	struct recw *w;
	const char *slash;
	size_t dirlen;
	int fd;

	if (!path || !*path || !out)
		return ps_err_detail(PS_ERR_INVAL,
				     "recw_open needs a file name");
	w = calloc(1, sizeof(*w));
	if (!w)
		return PS_ERR_NOMEM;
	slash = strrchr(path, '/');
	dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	w->path = strdup(path);
	if (w->path && ps_path_is_special(path)) {
		/* a device or a FIFO: written in place, nothing renamed */
		w->tmp_slot = -1;
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			free(w->path);
			free(w);
			return ps_err_detail(PS_ERR_IO, "cannot write %s: %s",
					     path, strerror(e));
		}
		goto opened;
	}
	if (!w->path || asprintf(&w->tmp, "%.*s.%s.XXXXXX", (int)dirlen, path,
				 path + dirlen) < 0) {
		w->tmp = NULL;
		free(w->path);
		free(w);
		return PS_ERR_NOMEM;
	}
	fd = mkstemp(w->tmp);
	if (fd < 0) {
		int e = errno;

		free(w->tmp);
		free(w->path);
		free(w);
		return ps_err_detail(PS_ERR_IO, "cannot create %s: %s", path,
				     strerror(e));
	}
	{
		/* mkstemp makes 0600; a recording is an ordinary file. */
		mode_t um = umask(0);

		umask(um);
		if (fchmod(fd, 0666 & ~um) < 0) {
			/* Harmless: the file just stays private. */
		}
	}
	w->tmp_slot = ps_tmp_track(w->tmp);
opened:
	w->f = fdopen(fd, "wb");
	if (!w->f) {
		ps_tmp_untrack(w->tmp_slot);
		close(fd);
		if (w->tmp)
			unlink(w->tmp);
		free(w->tmp);
		free(w->path);
		free(w);
		return PS_ERR_NOMEM;
	}
	setvbuf(w->f, NULL, _IOFBF, 1 << 16);
	ps_bytes_put(&w->ob, REC_MAGIC, REC_MAGIC_LEN);
	ps_bytes_u32(&w->ob, REC_FORMAT_VERSION);
	ps_bytes_u32(&w->ob, REC_HEADER_SIZE);
	if (fwrite(w->ob.p, 1, w->ob.len, w->f) != w->ob.len)
		w->err = PS_ERR_IO;
	w->bytes = w->ob.len;
	w->ob.len = 0;
	*out = w;
	return 0;
}

static int w_check(struct recw *w, int need_header)
{
	if (!w)
		return ps_err_detail(PS_ERR_INVAL, "no recording writer");
	if (w->err)
		return w->err;
	if (need_header && !w->have_header)
		return ps_err_detail(PS_ERR_INVAL,
				     "recording sections written before "
				     "its header (recw_header)");
	w->ob.len = 0;
	w->ob.oom = 0;
	return 0;
}

static int w_io(struct recw *w)
{
	int e = errno ? errno : EIO;

	w->err = ps_err_detail(PS_ERR_IO, "cannot write %s: %s%s", w->path,
			       strerror(e),
			       e == ENOSPC ? "; free some space or write the "
					     "recording elsewhere (-o)"
					   : "");
	return w->err;
}

/* Write one section: header, w->ob's fields, then @tail (a blob's bytes,
 * whose length the fields already hold), then the @after_len bytes of
 * @after (fields appended after the blob by a newer format). */
static int w_section_after(struct recw *w, uint32_t type, const void *tail,
			   uint64_t tail_len, const uint8_t *after,
			   size_t after_len)
{
	uint8_t hdr[REC_SECTION_HEADER_SIZE];
	uint64_t len;
	uLong crc;

	if (w->ob.oom)
		return PS_ERR_NOMEM;
	len = w->ob.len + tail_len + after_len;
	for (int i = 0; i < 4; i++)
		hdr[i] = (uint8_t)(type >> (8 * i));
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (uint8_t)(len >> (8 * i));
	/* The checksum covers type and length too, so a damaged header is
	 * not mistaken for an unknown section and skipped. */
	crc = crc32(0L, Z_NULL, 0);
	crc = crc32(crc, hdr, 4);
	crc = crc32(crc, hdr + 8, 8);
	crc = crc32(crc, w->ob.p, (uInt)w->ob.len);
	for (uint64_t off = 0; off < tail_len;) {
		uint64_t n = tail_len - off;

		if (n > (1u << 30))
			n = 1u << 30;
		crc = crc32(crc, (const Bytef *)tail + off, (uInt)n);
		off += n;
	}
	if (after_len)
		crc = crc32(crc, after, (uInt)after_len);
	for (int i = 0; i < 4; i++)
		hdr[4 + i] = (uint8_t)(crc >> (8 * i));
	errno = 0;
	if (fwrite(hdr, 1, sizeof(hdr), w->f) != sizeof(hdr) ||
	    fwrite(w->ob.p, 1, w->ob.len, w->f) != w->ob.len ||
	    (tail_len && fwrite(tail, 1, tail_len, w->f) != tail_len) ||
	    (after_len && fwrite(after, 1, after_len, w->f) != after_len))
		return w_io(w);
	w->bytes += sizeof(hdr) + len;
	w->nsections++;
	return 0;
}

static int w_section(struct recw *w, uint32_t type, const void *tail,
		     uint64_t tail_len)
{
	return w_section_after(w, type, tail, tail_len, NULL, 0);
}

/* A u32 as the bytes appended after a blob. */
static void le32(uint8_t out[4], uint32_t v)
{
	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

int recw_header(struct recw *w, const struct rec_info *in)
{
	int r = w_check(w, 0);

	if (r)
		return r;
	if (!in || w->have_header)
		return ps_err_detail(PS_ERR_INVAL,
				     "a recording has exactly one header");
	ps_bytes_str(&w->ob, in->backend);
	ps_bytes_u8(&w->ob, in->emulated ? 1 : 0);
	ps_bytes_u8(&w->ob, (uint8_t)in->cpu_vendor);
	ps_bytes_u16(&w->ob, in->cpu_family);
	ps_bytes_u8(&w->ob, in->cpu_model);
	ps_bytes_u8(&w->ob, in->cpu_stepping);
	ps_bytes_u8(&w->ob, in->mtc_freq);
	ps_bytes_u8(&w->ob, in->nom_freq);
	ps_bytes_u32(&w->ob, in->cpuid_0x15_eax);
	ps_bytes_u32(&w->ob, in->cpuid_0x15_ebx);
	ps_bytes_u8(&w->ob, in->has_conv ? 1 : 0);
	ps_bytes_u32(&w->ob, in->time_mult);
	ps_bytes_u16(&w->ob, in->time_shift);
	ps_bytes_u64(&w->ob, in->time_zero);
	ps_bytes_u64(&w->ob, (uint64_t)in->offset_ns);
	ps_bytes_str(&w->ob, in->version);
	if (in->argc > UINT32_MAX || (in->argc && !in->argv))
		return ps_err_detail(PS_ERR_INVAL,
				     "recording header: bad argument list");
	ps_bytes_u32(&w->ob, (uint32_t)in->argc);
	for (size_t i = 0; i < in->argc; i++)
		ps_bytes_str(&w->ob, in->argv[i]);
	ps_bytes_u64(&w->ob, in->pid);
	ps_bytes_u64(&w->ob, in->start_ns);
	ps_bytes_u64(&w->ob, in->start_realtime_ns);
	ps_bytes_str(&w->ob, in->hostname);
	ps_bytes_str(&w->ob, in->kernel);
	ps_bytes_str(&w->ob, in->reason);
	ps_bytes_u64(&w->ob, in->snapshot_ns);
	/* appended fields: PT recordings stay as they were */
	if (in->sample_hz) {
		ps_bytes_u32(&w->ob, in->sample_hz);
		ps_bytes_str(&w->ob, in->sample_event ? in->sample_event : "");
		ps_bytes_u32(&w->ob, in->sample_stack);
	}
	r = w_section(w, REC_SEC_INFO, NULL, 0);
	if (!r)
		w->have_header = 1;
	return r;
}

/* Index of the archive for (path, build id), writing it first if new. */
static int w_archive(struct recw *w, const struct rec_module *m,
		     const void *bytes, size_t len, uint64_t *index)
{
	struct archived *a;
	int r;

	for (size_t i = 0; i < w->narch; i++) {
		a = &w->arch[i];
		if (!strcmp(a->path, m->path) && a->id_len == m->build_id_len &&
		    !memcmp(a->id, m->build_id, a->id_len)) {
			*index = i;
			return 0;
		}
	}
	a = realloc(w->arch, (w->narch + 1) * sizeof(*a));
	if (!a)
		return PS_ERR_NOMEM;
	w->arch = a;
	a = &w->arch[w->narch];
	a->path = strdup(m->path);
	if (!a->path)
		return PS_ERR_NOMEM;
	a->id_len = m->build_id_len;
	memcpy(a->id, m->build_id, m->build_id_len);
	w->ob.len = 0;
	ps_bytes_str(&w->ob, m->path);
	ps_bytes_u8(&w->ob, m->build_id_len);
	ps_bytes_put(&w->ob, m->build_id, m->build_id_len);
	ps_bytes_u64(&w->ob, len);
	r = w_section(w, REC_SEC_ARCHIVE, bytes, len);
	if (r) {
		free(a->path);
		return r;
	}
	*index = w->narch++;
	return 0;
}

int recw_module(struct recw *w, const struct rec_module *m, const void *archive,
		size_t archive_len)
{
	uint64_t ref = 0;
	int r = w_check(w, 1);

	if (r)
		return r;
	if (!m || !m->path || m->build_id_len > REC_BUILD_ID_MAX ||
	    (archive_len && !archive))
		return ps_err_detail(PS_ERR_INVAL,
				     "recw_module: bad module description");
	if (archive) {
		r = w_archive(w, m, archive, archive_len, &ref);
		if (r)
			return r;
		ref++;
		w->ob.len = 0;
	}
	ps_bytes_u64(&w->ob, m->pid);
	ps_bytes_u64(&w->ob, m->start);
	ps_bytes_u64(&w->ob, m->end);
	ps_bytes_u64(&w->ob, m->offset);
	ps_bytes_u32(&w->ob, m->prot);
	ps_bytes_u64(&w->ob, m->inode);
	ps_bytes_str(&w->ob, m->path);
	ps_bytes_u8(&w->ob, m->build_id_len);
	ps_bytes_put(&w->ob, m->build_id, m->build_id_len);
	ps_bytes_u64(&w->ob, ref);
	ps_bytes_u32(&w->ob, m->epoch);
	return w_section(w, REC_SEC_MODULE, NULL, 0);
}

int recw_thread(struct recw *w, uint64_t pid, uint64_t tid, const char *comm)
{
	int r = w_check(w, 1);

	if (r)
		return r;
	ps_bytes_u64(&w->ob, pid);
	ps_bytes_u64(&w->ob, tid);
	ps_bytes_str(&w->ob, comm);
	return w_section(w, REC_SEC_THREAD, NULL, 0);
}

int recw_pt(struct recw *w, const struct rec_pt *pt)
{
	uint8_t epoch[4];
	int r = w_check(w, 1);

	if (r)
		return r;
	if (!pt || (pt->len && !pt->data))
		return ps_err_detail(PS_ERR_INVAL, "recw_pt: no PT bytes");
	ps_bytes_u64(&w->ob, pt->pid);
	ps_bytes_u64(&w->ob, pt->tid);
	ps_bytes_u32(&w->ob, (uint32_t)pt->cpu);
	ps_bytes_u32(&w->ob, pt->snapshot);
	ps_bytes_u64(&w->ob, pt->len);
	le32(epoch, pt->epoch);
	return w_section_after(w, REC_SEC_PT, pt->data, pt->len, epoch, 4);
}

int recw_mark(struct recw *w, const struct rec_mark *m)
{
	int r = w_check(w, 1);

	if (r)
		return r;
	if (!m)
		return ps_err_detail(PS_ERR_INVAL, "recw_mark: no mark");
	ps_bytes_u32(&w->ob, (uint32_t)m->kind);
	ps_bytes_u64(&w->ob, m->pid);
	ps_bytes_u64(&w->ob, m->tid);
	ps_bytes_u64(&w->ob, m->time_ns);
	ps_bytes_u64(&w->ob, m->address);
	ps_bytes_u64(&w->ob, m->value);
	ps_bytes_str(&w->ob, m->text);
	return w_section(w, REC_SEC_MARK, NULL, 0);
}

int recw_raw_code(struct recw *w, const struct rec_raw_code *c)
{
	uint8_t epoch[4];
	int r = w_check(w, 1);

	if (r)
		return r;
	if (!c || (c->len && !c->bytes))
		return ps_err_detail(PS_ERR_INVAL, "recw_raw_code: no bytes");
	ps_bytes_u64(&w->ob, c->pid);
	ps_bytes_u64(&w->ob, c->vaddr);
	ps_bytes_str(&w->ob, c->name);
	ps_bytes_u64(&w->ob, c->len);
	le32(epoch, c->epoch);
	return w_section_after(w, REC_SEC_RAW_CODE, c->bytes, c->len, epoch, 4);
}

int recw_process(struct recw *w, const struct rec_process *p)
{
	int r = w_check(w, 1);

	if (r)
		return r;
	if (!p)
		return ps_err_detail(PS_ERR_INVAL, "recw_process: no process");
	ps_bytes_u64(&w->ob, p->pid);
	ps_bytes_u64(&w->ob, p->ppid);
	ps_bytes_u32(&w->ob, p->epoch);
	ps_bytes_u64(&w->ob, p->time_ns);
	ps_bytes_str(&w->ob, p->name);
	ps_bytes_str(&w->ob, p->path);
	return w_section(w, REC_SEC_PROCESS, NULL, 0);
}

int recw_switches(struct recw *w, int32_t cpu, const struct rec_switch *sw,
		  size_t n)
{
	int r = w_check(w, 1);

	if (r)
		return r;
	if ((n && !sw) || n > UINT32_MAX)
		return ps_err_detail(PS_ERR_INVAL,
				     "recw_switches: bad switch list");
	ps_bytes_u32(&w->ob, (uint32_t)cpu);
	ps_bytes_u32(&w->ob, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		ps_bytes_u64(&w->ob, sw[i].time);
		ps_bytes_u64(&w->ob, sw[i].pid);
		ps_bytes_u64(&w->ob, sw[i].tid);
		ps_bytes_u8(&w->ob, sw[i].out ? 1 : 0);
	}
	return w_section(w, REC_SEC_SWITCH, NULL, 0);
}

int recw_sidecar(struct recw *w, uint32_t type, const void *bytes, size_t len)
{
	int r = w_check(w, 1);

	if (r)
		return r;
	if (len && !bytes)
		return ps_err_detail(PS_ERR_INVAL, "recw_sidecar: no bytes");
	ps_bytes_u32(&w->ob, type);
	ps_bytes_u64(&w->ob, len);
	return w_section(w, REC_SEC_SIDECAR, bytes, len);
}

int recw_samples(struct recw *w, const struct rec_samples *sm)
{
	uint8_t epoch[4];
	int r = w_check(w, 1);

	if (r)
		return r;
	if (!sm || (sm->len && !sm->data))
		return ps_err_detail(PS_ERR_INVAL, "recw_samples: no samples");
	ps_bytes_u64(&w->ob, sm->pid);
	ps_bytes_u64(&w->ob, sm->tid);
	ps_bytes_u32(&w->ob, sm->snapshot);
	ps_bytes_u64(&w->ob, sm->regs_mask);
	ps_bytes_u32(&w->ob, sm->count);
	ps_bytes_u64(&w->ob, sm->len);
	le32(epoch, sm->epoch);
	return w_section_after(w, REC_SEC_SAMPLES, sm->data, sm->len, epoch, 4);
}

uint64_t recw_bytes(const struct recw *w)
{
	return w ? w->bytes : 0;
}

static void w_free(struct recw *w)
{
	for (size_t i = 0; i < w->narch; i++)
		free(w->arch[i].path);
	free(w->arch);
	free(w->ob.p);
	free(w->tmp);
	free(w->path);
	free(w);
}

int recw_finish(struct recw *w)
{
	int r = w_check(w, 1);

	if (!w)
		return r;
	if (!r) {
		ps_bytes_u64(&w->ob, w->nsections);
		r = w_section(w, REC_SEC_END, NULL, 0);
	}
	if (!r) {
		errno = 0;
		if (fflush(w->f) != 0)
			r = w_io(w);
	}
	if (fclose(w->f) != 0 && !r)
		r = w_io(w);
	w->f = NULL;
	if (!r && w->tmp && rename(w->tmp, w->path) < 0)
		r = ps_err_detail(PS_ERR_IO, "cannot rename %s to %s: %s",
				  w->tmp, w->path, strerror(errno));
	if (r && w->tmp)
		unlink(w->tmp);
	ps_tmp_untrack(w->tmp_slot);
	w_free(w);
	return r;
}

void recw_abort(struct recw *w)
{
	if (!w)
		return;
	if (w->f)
		fclose(w->f);
	if (w->tmp)
		unlink(w->tmp);
	ps_tmp_untrack(w->tmp_slot);
	w_free(w);
}

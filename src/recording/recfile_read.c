/* SPDX-License-Identifier: MIT */
/* Recording file reader (recr_, recfile.h): a file mapped or read into
 * memory, every section checked against its bounds, damaged and unknown
 * sections counted, not trusted.  Layout and versioning rule:
 * include/ptscope/recording.h. */
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

#include "ptscope/error.h"
#include "src/recording/recfile.h"

/* Bounds-checked little-endian reader over one payload. */
struct rd {
	const uint8_t *p;
	uint64_t len, off;
	int bad; /* a read went past the end */
};

static uint64_t rd_le(struct rd *d, unsigned n)
{
	uint64_t v = 0;

	if (d->bad || d->len - d->off < n) {
		d->bad = 1;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)d->p[d->off + i] << (8 * i);
	d->off += n;
	return v;
}

/* A field a newer writer appended: @dflt when the payload ends before it
 * (an older writer), else read as rd_le. */
static uint64_t rd_opt_le(struct rd *d, unsigned n, uint64_t dflt)
{
	return !d->bad && d->off == d->len ? dflt : rd_le(d, n);
}

static const uint8_t *rd_bytes(struct rd *d, uint64_t n)
{
	const uint8_t *p;

	if (d->bad || d->len - d->off < n) {
		d->bad = 1;
		return NULL;
	}
	p = d->p + d->off;
	d->off += n;
	return p;
}

struct vec {
	void *p;
	size_t n, cap;
};

struct recr {
	const uint8_t *data; /* whole file */
	size_t size;
	int mapped; /* data is an mmap of the file */
	char *name; /* owned: for error details */
	uint32_t version;
	struct rec_info info;
	int have_info;
	struct vec strs; /* char *: every string handed out */
	struct vec mods, threads, pts, marks, raws, sides, sws, archs, procs, samps;
	struct vec argv; /* const char * */
	size_t unknown;
	int oom;
};

static void *vec_add(struct recr *r, struct vec *v, size_t elem)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 8;
		void *np = realloc(v->p, cap * elem);

		if (!np) {
			r->oom = 1;
			return NULL;
		}
		v->p = np;
		v->cap = cap;
	}
	memset((char *)v->p + v->n * elem, 0, elem);
	return (char *)v->p + v->n++ * elem;
}

/* A NUL-terminated copy of a "str" field, owned by the reader. */
static const char *rd_str(struct recr *r, struct rd *d)
{
	uint64_t n = rd_le(d, 4);
	const uint8_t *s = rd_bytes(d, n);
	char *c, **slot;

	if (!s)
		return "";
	c = malloc(n + 1);
	slot = c ? vec_add(r, &r->strs, sizeof(char *)) : NULL;
	if (!slot) {
		free(c);
		r->oom = 1;
		return "";
	}
	memcpy(c, s, n);
	c[n] = 0;
	*slot = c;
	return c;
}

static const uint8_t *rd_blob(struct rd *d, uint64_t *len)
{
	*len = rd_le(d, 8);
	return rd_bytes(d, *len);
}

static uint8_t rd_build_id(struct rd *d, uint8_t *id)
{
	uint8_t n = (uint8_t)rd_le(d, 1);
	const uint8_t *p;

	if (n > REC_BUILD_ID_MAX) {
		d->bad = 1;
		return 0;
	}
	p = rd_bytes(d, n);
	if (p)
		memcpy(id, p, n);
	return n;
}

static const char *sec_name(uint32_t type)
{
	switch (type) {
	case REC_SEC_INFO:
		return "INFO";
	case REC_SEC_MODULE:
		return "MODULE";
	case REC_SEC_THREAD:
		return "THREAD";
	case REC_SEC_PT:
		return "PT";
	case REC_SEC_MARK:
		return "MARK";
	case REC_SEC_RAW_CODE:
		return "RAW_CODE";
	case REC_SEC_SIDECAR:
		return "SIDECAR";
	case REC_SEC_SWITCH:
		return "SWITCH";
	case REC_SEC_ARCHIVE:
		return "ARCHIVE";
	case REC_SEC_PROCESS:
		return "PROCESS";
	case REC_SEC_SAMPLES:
		return "SAMPLES";
	case REC_SEC_END:
		return "END";
	}
	return "unknown";
}

static void parse_info(struct recr *r, struct rd *d)
{
	struct rec_info *in = &r->info;
	uint64_t argc;

	in->backend = rd_str(r, d);
	in->emulated = (int)rd_le(d, 1);
	in->cpu_vendor = (enum rec_cpu_vendor)rd_le(d, 1);
	in->cpu_family = (uint16_t)rd_le(d, 2);
	in->cpu_model = (uint8_t)rd_le(d, 1);
	in->cpu_stepping = (uint8_t)rd_le(d, 1);
	in->mtc_freq = (uint8_t)rd_le(d, 1);
	in->nom_freq = (uint8_t)rd_le(d, 1);
	in->cpuid_0x15_eax = (uint32_t)rd_le(d, 4);
	in->cpuid_0x15_ebx = (uint32_t)rd_le(d, 4);
	in->has_conv = (int)rd_le(d, 1);
	in->time_mult = (uint32_t)rd_le(d, 4);
	in->time_shift = (uint16_t)rd_le(d, 2);
	in->time_zero = rd_le(d, 8);
	in->offset_ns = (int64_t)rd_le(d, 8);
	in->version = rd_str(r, d);
	argc = rd_le(d, 4);
	/* Each argument takes at least its 4-byte length. */
	if (argc > (d->len - d->off) / 4) {
		d->bad = 1;
		return;
	}
	for (uint64_t i = 0; i < argc && !d->bad && !r->oom; i++) {
		const char **a = vec_add(r, &r->argv, sizeof(char *));

		if (a)
			*a = rd_str(r, d);
	}
	in->pid = rd_le(d, 8);
	in->start_ns = rd_le(d, 8);
	in->start_realtime_ns = rd_le(d, 8);
	in->hostname = rd_str(r, d);
	in->kernel = rd_str(r, d);
	in->reason = rd_str(r, d);
	in->snapshot_ns = rd_le(d, 8);
	if (d->bad || d->off >= d->len)
		return; /* written before sampled recordings, or by a PT backend */
	in->sample_hz = (uint32_t)rd_le(d, 4);
	in->sample_event = rd_str(r, d);
	in->sample_stack = (uint32_t)rd_le(d, 4);
}

static void parse_module(struct recr *r, struct rd *d)
{
	struct rec_module *m = vec_add(r, &r->mods, sizeof(*m));
	uint64_t ref;

	if (!m)
		return;
	m->pid = rd_le(d, 8);
	m->start = rd_le(d, 8);
	m->end = rd_le(d, 8);
	m->offset = rd_le(d, 8);
	m->prot = (uint32_t)rd_le(d, 4);
	m->inode = rd_le(d, 8);
	m->path = rd_str(r, d);
	m->build_id_len = rd_build_id(d, m->build_id);
	ref = rd_le(d, 8);
	/* Archives precede the modules that use them; keep the index in
	 * archive_len until all sections are read. */
	if (ref > r->archs.n)
		d->bad = 1;
	m->archive_len = ref;
	m->epoch = (uint32_t)rd_opt_le(d, 4, 0);
}

static void parse_section(struct recr *r, uint32_t type, struct rd *d)
{
	switch (type) {
	case REC_SEC_INFO:
		parse_info(r, d);
		break;
	case REC_SEC_MODULE:
		parse_module(r, d);
		break;
	case REC_SEC_THREAD: {
		struct rec_thread *t = vec_add(r, &r->threads, sizeof(*t));

		if (!t)
			return;
		t->pid = rd_le(d, 8);
		t->tid = rd_le(d, 8);
		t->comm = rd_str(r, d);
		break;
	}
	case REC_SEC_PT: {
		struct rec_pt *p = vec_add(r, &r->pts, sizeof(*p));

		if (!p)
			return;
		p->pid = rd_le(d, 8);
		p->tid = rd_le(d, 8);
		p->cpu = (int32_t)(uint32_t)rd_le(d, 4);
		p->snapshot = (uint32_t)rd_le(d, 4);
		p->data = rd_blob(d, &p->len);
		p->epoch = (uint32_t)rd_opt_le(d, 4, 0);
		break;
	}
	case REC_SEC_MARK: {
		struct rec_mark *m = vec_add(r, &r->marks, sizeof(*m));

		if (!m)
			return;
		m->kind = (enum rec_mark_kind)rd_le(d, 4);
		m->pid = rd_le(d, 8);
		m->tid = rd_le(d, 8);
		m->time_ns = rd_le(d, 8);
		m->address = rd_le(d, 8);
		m->value = rd_le(d, 8);
		m->text = rd_str(r, d);
		break;
	}
	case REC_SEC_RAW_CODE: {
		struct rec_raw_code *c = vec_add(r, &r->raws, sizeof(*c));

		if (!c)
			return;
		c->pid = rd_le(d, 8);
		c->vaddr = rd_le(d, 8);
		c->name = rd_str(r, d);
		c->bytes = rd_blob(d, &c->len);
		c->epoch = (uint32_t)rd_opt_le(d, 4, 0);
		break;
	}
	case REC_SEC_PROCESS: {
		struct rec_process *p = vec_add(r, &r->procs, sizeof(*p));

		if (!p)
			return;
		p->pid = rd_le(d, 8);
		p->ppid = rd_le(d, 8);
		p->epoch = (uint32_t)rd_le(d, 4);
		p->time_ns = rd_le(d, 8);
		p->name = rd_str(r, d);
		p->path = rd_str(r, d);
		break;
	}
	case REC_SEC_SIDECAR: {
		struct rec_sidecar *s = vec_add(r, &r->sides, sizeof(*s));

		if (!s)
			return;
		s->type = (uint32_t)rd_le(d, 4);
		s->bytes = rd_blob(d, &s->len);
		break;
	}
	case REC_SEC_SWITCH: {
		struct rec_switches *s = vec_add(r, &r->sws, sizeof(*s));
		struct rec_switch *a;
		uint64_t n;

		if (!s)
			return;
		s->cpu = (int32_t)(uint32_t)rd_le(d, 4);
		n = rd_le(d, 4);
		if (n > (d->len - d->off) / 25) {
			d->bad = 1;
			return;
		}
		a = calloc(n ? n : 1, sizeof(*a));
		if (!a) {
			r->oom = 1;
			return;
		}
		for (uint64_t i = 0; i < n; i++) {
			a[i].time = rd_le(d, 8);
			a[i].pid = rd_le(d, 8);
			a[i].tid = rd_le(d, 8);
			a[i].out = (int)rd_le(d, 1);
		}
		s->sw = a;
		s->n = n;
		break;
	}
	case REC_SEC_SAMPLES: {
		struct rec_samples *s = vec_add(r, &r->samps, sizeof(*s));

		if (!s)
			return;
		s->pid = rd_le(d, 8);
		s->tid = rd_le(d, 8);
		s->snapshot = (uint32_t)rd_le(d, 4);
		s->regs_mask = rd_le(d, 8);
		s->count = (uint32_t)rd_le(d, 4);
		s->data = rd_blob(d, &s->len);
		if (!d->bad && d->off < d->len)
			s->epoch = (uint32_t)rd_le(d, 4);
		break;
	}
	case REC_SEC_ARCHIVE: {
		struct rec_archive *a = vec_add(r, &r->archs, sizeof(*a));

		if (!a)
			return;
		a->path = rd_str(r, d);
		a->build_id_len = rd_build_id(d, a->build_id);
		a->bytes = rd_blob(d, &a->len);
		break;
	}
	default:
		r->unknown++;
		break;
	}
}

static int parse_file(struct recr *r)
{
	const char *nm = r->name;
	const uint8_t *p = r->data;
	size_t size = r->size;
	uint64_t off, nsec = 0, hsize;
	int ended = 0;

	if (size == 0)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "%s is empty: was the recording "
				     "interrupted?",
				     nm);
	if (memcmp(p, REC_MAGIC, size < REC_MAGIC_LEN ? size : REC_MAGIC_LEN))
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not a ptscope recording (bad "
				     "magic)",
				     nm);
	if (size < REC_HEADER_SIZE)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "%s is truncated at byte %zu: was the "
				     "recording interrupted?",
				     nm, size);
	{
		struct rd h = {p, size, REC_MAGIC_LEN, 0};

		r->version = (uint32_t)rd_le(&h, 4);
		hsize = rd_le(&h, 4);
	}
	if (r->version > REC_FORMAT_VERSION)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "%s was written by a newer ptscope "
				     "(format %u; this one reads %d): "
				     "update ptscope",
				     nm, r->version, REC_FORMAT_VERSION);
	if (r->version == 0)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is damaged (format version 0)", nm);
	if (hsize < REC_HEADER_SIZE)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is damaged (header size %llu)", nm,
				     (unsigned long long)hsize);
	if (hsize > size)
		return ps_err_detail(PS_ERR_TRUNCATED,
				     "%s is truncated at byte %zu: was the "
				     "recording interrupted?",
				     nm, size);
	for (off = hsize; !ended;) {
		struct rd h = {p, size, off, 0};
		uint32_t type, crc;
		uint64_t len;
		uLong sum;
		struct rd d;

		if (size - off < REC_SECTION_HEADER_SIZE)
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "%s is truncated at byte %zu: "
					     "was the recording interrupted?",
					     nm, size);
		type = (uint32_t)rd_le(&h, 4);
		crc = (uint32_t)rd_le(&h, 4);
		len = rd_le(&h, 8);
		off += REC_SECTION_HEADER_SIZE;
		if (len > size - off) {
			/* A sane length past the end means the file was cut
			 * short; an absurd one, that the header is damaged;
			 * the checksum cannot tell which, so say both. */
			return ps_err_detail(PS_ERR_TRUNCATED,
					     "%s is truncated at byte %zu "
					     "(a %s section at byte %llu needs "
					     "%llu bytes): was the recording "
					     "interrupted?",
					     nm, size, sec_name(type),
					     (unsigned long long)(off - 16),
					     (unsigned long long)len);
		}
		sum = crc32(0L, Z_NULL, 0);
		sum = crc32(sum, p + off - 16, 4);
		sum = crc32(sum, p + off - 8, 8);
		for (uint64_t k = 0; k < len;) {
			uint64_t n =
			    len - k > (1u << 30) ? (1u << 30) : len - k;

			sum = crc32(sum, p + off + k, (uInt)n);
			k += n;
		}
		if ((uint32_t)sum != crc)
			return ps_err_detail(PS_ERR_FORMAT,
					     "%s is damaged: the section at "
					     "byte %llu fails its checksum",
					     nm,
					     (unsigned long long)(off - 16));
		if (nsec == 0 && type != REC_SEC_INFO)
			return ps_err_detail(PS_ERR_FORMAT,
					     "%s is damaged: it does not start "
					     "with an INFO section",
					     nm);
		if (nsec > 0 && type == REC_SEC_INFO)
			return ps_err_detail(PS_ERR_FORMAT,
					     "%s is damaged: it has two INFO "
					     "sections",
					     nm);
		d = (struct rd){p + off, len, 0, 0};
		if (type == REC_SEC_END) {
			uint64_t n = rd_le(&d, 8);

			if (!d.bad && n != nsec)
				return ps_err_detail(
				    PS_ERR_FORMAT,
				    "%s is damaged: it has %llu "
				    "sections, its end says "
				    "%llu",
				    nm, (unsigned long long)nsec,
				    (unsigned long long)n);
			ended = 1;
		} else {
			parse_section(r, type, &d);
		}
		if (r->oom)
			return PS_ERR_NOMEM;
		if (d.bad)
			return ps_err_detail(PS_ERR_FORMAT,
					     "%s is damaged: the %s section at "
					     "byte %llu is malformed",
					     nm, sec_name(type),
					     (unsigned long long)(off - 16));
		off += len;
		nsec++;
	}
	r->have_info = 1;
	return 0;
}

/* Turn archive indexes into pointers once every section is known. */
static void link_archives(struct recr *r)
{
	struct rec_module *m = r->mods.p;
	struct rec_archive *a = r->archs.p;

	for (size_t i = 0; i < r->mods.n; i++) {
		uint64_t ref = m[i].archive_len;

		m[i].archive = ref ? a[ref - 1].bytes : NULL;
		m[i].archive_len = ref ? a[ref - 1].len : 0;
	}
}

static int r_open(const void *buf, size_t len, const char *name, int mapped,
		  struct recr **out)
{
	struct recr *r = calloc(1, sizeof(*r));
	int err;

	if (!r) {
		if (mapped && len)
			munmap((void *)buf, len);
		return PS_ERR_NOMEM;
	}
	r->data = buf;
	r->size = len;
	r->mapped = mapped;
	r->name = strdup(name ? name : "recording");
	if (!r->name) {
		recr_close(r);
		return PS_ERR_NOMEM;
	}
	err = parse_file(r);
	if (err) {
		recr_close(r);
		return err;
	}
	link_archives(r);
	r->info.argv = r->argv.p;
	r->info.argc = r->argv.n;
	*out = r;
	return 0;
}

int recr_open_mem(const void *buf, size_t len, const char *name,
		  struct recr **out)
{
	if (!out || (!buf && len))
		return ps_err_detail(PS_ERR_INVAL, "recr_open_mem: no buffer");
	*out = NULL;
	return r_open(buf ? buf : "", len, name, 0, out);
}

int recr_open(const char *path, struct recr **out)
{
	struct stat st;
	void *map;
	int fd, e;

	if (!path || !out)
		return ps_err_detail(PS_ERR_INVAL, "recr_open: no file name");
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return ps_err_detail(e == ENOENT ? PS_ERR_NOT_FOUND : PS_ERR_IO,
				     "cannot open %s: %s", path, strerror(e));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ps_err_detail(PS_ERR_IO, "%s is not a regular file",
				     path);
	}
	if (st.st_size == 0) {
		close(fd);
		return r_open("", 0, path, 0, out);
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return ps_err_detail(PS_ERR_LIMIT, "%s is too large", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = errno;
	close(fd);
	if (map == MAP_FAILED)
		return ps_err_detail(PS_ERR_IO, "cannot read %s: %s", path,
				     strerror(e));
	return r_open(map, (size_t)st.st_size, path, 1, out);
}

void recr_close(struct recr *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->strs.n; i++)
		free(((char **)r->strs.p)[i]);
	for (size_t i = 0; i < r->sws.n; i++)
		free((void *)((struct rec_switches *)r->sws.p)[i].sw);
	free(r->strs.p);
	free(r->mods.p);
	free(r->threads.p);
	free(r->pts.p);
	free(r->marks.p);
	free(r->raws.p);
	free(r->sides.p);
	free(r->samps.p);
	free(r->sws.p);
	free(r->archs.p);
	free(r->procs.p);
	free(r->argv.p);
	if (r->mapped && r->size)
		munmap((void *)r->data, r->size);
	free(r->name);
	free(r);
}

uint32_t recr_version(const struct recr *r)
{
	return r->version;
}

const struct rec_info *recr_info(const struct recr *r)
{
	return &r->info;
}

#define RECR_ARRAY(fn, field, type)                                            \
	size_t fn(const struct recr *r, const type **out)                      \
	{                                                                      \
		*out = r->field.p;                                             \
		return r->field.n;                                             \
	}

RECR_ARRAY(recr_modules, mods, struct rec_module)
RECR_ARRAY(recr_threads, threads, struct rec_thread)
RECR_ARRAY(recr_pts, pts, struct rec_pt)
RECR_ARRAY(recr_marks, marks, struct rec_mark)
RECR_ARRAY(recr_raw_codes, raws, struct rec_raw_code)
RECR_ARRAY(recr_sidecars, sides, struct rec_sidecar)
RECR_ARRAY(recr_samples, samps, struct rec_samples)
RECR_ARRAY(recr_switches, sws, struct rec_switches)
RECR_ARRAY(recr_archives, archs, struct rec_archive)
RECR_ARRAY(recr_processes, procs, struct rec_process)

size_t recr_unknown_sections(const struct recr *r)
{
	return r->unknown;
}

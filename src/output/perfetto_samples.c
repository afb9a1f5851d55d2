/* SPDX-License-Identifier: MIT */
/* PerfSample packets with interned callstacks (perfetto_samples.h).
 * Encoded by hand: a few nested messages per sample. */
#include <stdlib.h>
#include <string.h>

#include "ptscope/bytes.h"
#include "ptscope/error.h"
#include "src/output/perfetto_format.h"
#include "src/output/perfetto_samples.h"

enum { WT_VARINT = 0, WT_LEN = 2 };
#define TAG(f, wt) (((uint64_t)(f) << 3) | (wt))

/* TracePacket and InternedData fields (Perfetto's protos). */
enum {
	TP_TIMESTAMP = 8,
	TP_SEQ_ID = 10,
	TP_INTERNED = 12,
	TP_SEQ_FLAGS = 13,
	TP_CLOCK_ID = 58,
	TP_PERF_SAMPLE = 66,
	ID_FUNCTION_NAMES = 5,
	ID_FRAMES = 6,
	ID_CALLSTACKS = 7,
	ID_MAPPING_PATHS = 17,
	ID_MAPPINGS = 19
};
#define SEQ_CLEARED 1u
#define SEQ_NEEDS_STATE 2u
#define CPU_MODE_USER 2u

static void varint(struct ps_bytes *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	ps_bytes_put(b, t, n);
}

static void field_u(struct ps_bytes *b, unsigned f, uint64_t v)
{
	varint(b, TAG(f, WT_VARINT));
	varint(b, v);
}

static void field_bytes(struct ps_bytes *b, unsigned f, const void *p, size_t n)
{
	varint(b, TAG(f, WT_LEN));
	varint(b, n);
	ps_bytes_put(b, p, n);
}

/* A string/bytes key → iid table (open addressing). */
struct ent {
	uint64_t hash, iid;
	uint8_t *key; /* owned; NULL: empty */
	size_t klen;
};

struct table {
	struct ent *e;
	size_t cap, n;
	uint64_t next;
};

static uint64_t hash(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h | 1;
}

static int grow(struct table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct ent *e = calloc(cap, sizeof(*e));

	if (!e)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t k;

		if (!t->e[i].key)
			continue;
		for (k = t->e[i].hash & (cap - 1); e[k].key;
		     k = (k + 1) & (cap - 1))
			;
		e[k] = t->e[i];
	}
	free(t->e);
	t->e = e;
	t->cap = cap;
	return 0;
}

/* The iid of @key; *fresh = 1 when it was just given one. */
static uint64_t intern(struct table *t, const void *key, size_t klen,
		       int *fresh)
{
	uint64_t h = hash(key, klen);
	size_t k;

	*fresh = 0;
	if ((t->n + 1) * 2 > t->cap && grow(t))
		return 0;
	for (k = h & (t->cap - 1); t->e[k].key; k = (k + 1) & (t->cap - 1))
		if (t->e[k].hash == h && t->e[k].klen == klen &&
		    !memcmp(t->e[k].key, key, klen))
			return t->e[k].iid;
	t->e[k].key = malloc(klen ? klen : 1);
	if (!t->e[k].key)
		return 0;
	memcpy(t->e[k].key, key, klen);
	t->e[k].klen = klen;
	t->e[k].hash = h;
	t->e[k].iid = ++t->next;
	t->n++;
	*fresh = 1;
	return t->e[k].iid;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->e[i].key);
	free(t->e);
}

enum { T_NAME, T_PATH, T_MAP, T_FRAME, T_STACK, T_N };

/* The InternedData field of each table's entries. */
static const unsigned table_field[T_N] = {
    ID_FUNCTION_NAMES, ID_MAPPING_PATHS, ID_MAPPINGS, ID_FRAMES, ID_CALLSTACKS};

struct pfs {
	uint32_t seq;
	int started;
	struct table t[T_N];
	struct ps_bytes out;	  /* pending packets */
	struct ps_bytes in[T_N];  /* this packet's new interned entries */
	struct ps_bytes tmp, key; /* scratch */
};

int pfs_new(uint32_t seq, struct pfs **out)
{
	struct pfs *s = calloc(1, sizeof(*s));

	if (!s)
		return PS_ERR_NOMEM;
	s->seq = seq;
	*out = s;
	return 0;
}

void pfs_free(struct pfs *s)
{
	if (!s)
		return;
	for (int i = 0; i < T_N; i++) {
		table_free(&s->t[i]);
		free(s->in[i].p);
	}
	free(s->out.p);
	free(s->tmp.p);
	free(s->key.p);
	free(s);
}

const uint8_t *pfs_bytes(const struct pfs *s, size_t *len)
{
	*len = s->out.len;
	return s->out.p;
}

void pfs_clear(struct pfs *s)
{
	s->out.len = 0;
}

/* An InternedString entry {iid, str} into s->in[@t]. */
static uint64_t intern_str(struct pfs *s, int t, const char *str)
{
	int fresh;
	uint64_t iid = intern(&s->t[t], str, strlen(str), &fresh);

	if (fresh) {
		s->tmp.len = 0;
		field_u(&s->tmp, 1, iid);
		field_bytes(&s->tmp, 2, str, strlen(str));
		field_bytes(&s->in[t], table_field[t], s->tmp.p, s->tmp.len);
	}
	return iid;
}

static uint64_t intern_mapping(struct pfs *s, const struct ps_sample_frame *f)
{
	const char *path = f->module ? f->module : "[unknown]";
	uint64_t k[2] = {f->map_start, f->map_offset}, iid, pid;
	int fresh;

	s->key.len = 0;
	ps_bytes_put(&s->key, k, sizeof(k));
	ps_bytes_put(&s->key, path, strlen(path));
	iid = intern(&s->t[T_MAP], s->key.p, s->key.len, &fresh);
	if (!fresh || !iid)
		return iid;
	pid = intern_str(s, T_PATH, path);
	s->tmp.len = 0;
	field_u(&s->tmp, 1, iid);
	field_u(&s->tmp, 8, f->map_offset); /* exact_offset */
	field_u(&s->tmp, 3, f->map_offset); /* start_offset */
	field_u(&s->tmp, 4, f->map_start);
	field_u(&s->tmp, 5, f->map_end);
	field_u(&s->tmp, 7, pid); /* path_string_ids */
	field_bytes(&s->in[T_MAP], table_field[T_MAP], s->tmp.p, s->tmp.len);
	return iid;
}

/* One frame per function of a mapping: the flame graph groups by it. */
static uint64_t intern_frame(struct pfs *s, const struct ps_sample_frame *f)
{
	uint64_t map = intern_mapping(s, f);
	uint64_t name = intern_str(s, T_NAME, f->name ? f->name : "?");
	uint64_t k[2] = {map, name}, iid;
	int fresh;

	iid = intern(&s->t[T_FRAME], k, sizeof(k), &fresh);
	if (fresh) {
		s->tmp.len = 0;
		field_u(&s->tmp, 1, iid);
		field_u(&s->tmp, 2, name);
		field_u(&s->tmp, 3, map);
		field_u(&s->tmp, 4,
			f->pc >= f->map_start ? f->pc - f->map_start : 0);
		field_bytes(&s->in[T_FRAME], table_field[T_FRAME], s->tmp.p,
			    s->tmp.len);
	}
	return iid;
}

static uint64_t intern_stack(struct pfs *s, const struct ps_sample *smp)
{
	static uint64_t ids[1024];
	size_t n = smp->nframes < 1024 ? smp->nframes : 1024;
	uint64_t iid;
	int fresh;

	/* Bottom (outermost) frame first. */
	for (size_t i = 0; i < n; i++)
		ids[i] = intern_frame(s, &smp->frames[n - 1 - i]);
	iid = intern(&s->t[T_STACK], ids, n * sizeof(ids[0]), &fresh);
	if (fresh) {
		s->tmp.len = 0;
		field_u(&s->tmp, 1, iid);
		for (size_t i = 0; i < n; i++)
			field_u(&s->tmp, 2, ids[i]);
		field_bytes(&s->in[T_STACK], table_field[T_STACK], s->tmp.p,
			    s->tmp.len);
	}
	return iid;
}

int pfs_add(struct pfs *s, const struct ps_sample *smp)
{
	struct ps_bytes pkt = {0}, inter = {0}, perf = {0};
	uint64_t stack;
	int err = 0;

	if (!smp->nframes)
		return 0;
	for (int i = 0; i < T_N; i++)
		s->in[i].len = 0;
	stack = intern_stack(s, smp);
	for (int i = 0; i < T_N; i++)
		if (s->in[i].len)
			ps_bytes_put(&inter, s->in[i].p, s->in[i].len);
	field_u(&perf, 1, 0);
	field_u(&perf, 2, smp->pid);
	field_u(&perf, 3, smp->tid);
	field_u(&perf, 5, CPU_MODE_USER);
	field_u(&perf, 4, stack);
	field_u(&pkt, TP_TIMESTAMP, smp->ts);
	field_u(&pkt, TP_CLOCK_ID, PFTW_CLOCK_MONOTONIC);
	field_u(&pkt, TP_SEQ_ID, s->seq);
	field_u(&pkt, TP_SEQ_FLAGS, s->started ? SEQ_NEEDS_STATE : SEQ_CLEARED);
	s->started = 1;
	if (inter.len)
		field_bytes(&pkt, TP_INTERNED, inter.p, inter.len);
	field_bytes(&pkt, TP_PERF_SAMPLE, perf.p, perf.len);
	field_bytes(&s->out, 1, pkt.p, pkt.len); /* Trace.packet */
	if (pkt.oom || inter.oom || perf.oom || s->out.oom || s->tmp.oom ||
	    s->key.oom)
		err = ps_err_detail(PS_ERR_NOMEM,
				    "out of memory writing call-stack samples");
	for (int i = 0; i < T_N; i++)
		if (s->in[i].oom)
			err = PS_ERR_NOMEM;
	free(pkt.p);
	free(inter.p);
	free(perf.p);
	return err;
}

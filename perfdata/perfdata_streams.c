/* SPDX-License-Identifier: MIT */
/* perf.data AUX chunks → one stream per CPU or thread (see perfdata.h):
 * chunks are joined when one continues the one before, in full mode by
 * their AUX offsets, in snapshot mode by the ring offsets perf writes or
 * by content; a chunk that does not continue starts a new segment. */
#include <stdlib.h>
#include <string.h>

#include "perfdata/perfdata.h"
#include "ptscope/error.h"

static struct pd_stream *stream_get(struct pd_streams *s, uint32_t key)
{
	struct pd_stream *v;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].key == key)
			return &s->v[i];
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->v = v;
	v = &v[s->n++];
	memset(v, 0, sizeof(*v));
	v->key = key;
	return v;
}

static int seg_append(struct pd_segment *g, const uint8_t *p, size_t n)
{
	uint8_t *d = realloc(g->data, g->len + n + 1);

	if (!d)
		return PS_ERR_NOMEM;
	memcpy(d + g->len, p, n);
	g->data = d;
	g->len += n;
	g->off_end += n;
	return 0;
}

/* Try to continue segment @g with chunk @a whose first @over bytes
 * repeat @g's last ones: 1 (appended or nothing new), 0 (they differ). */
static int seg_continue(struct pd_segment *g, const struct pd_aux *a,
			uint64_t over, int *err)
{
	if (over > g->len || memcmp(g->data + g->len - over, a->data,
				    over < a->size ? over : a->size))
		return 0;
	*err = over < a->size
		   ? seg_append(g, a->data + over, (size_t)(a->size - over))
		   : 0; /* an older snapshot's bytes again */
	return 1;
}

/* A PSB packet: where a decoder can start, and (with the TSC after it)
 * a byte string that does not repeat. */
static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

/* In snapshot mode, once the ring has wrapped, each chunk is the whole
 * ring (@a->size bytes) and its offset the ring position of its oldest
 * byte, so the bytes it repeats from segment @g are (end of @g - offset)
 * modulo the ring size: 1 when that many bytes of @g's end (perf's
 * padding dropped) begin @a (the rest appended, *@err set), else 0. */
static int seg_continue_ring(struct pd_segment *g, const struct pd_aux *a,
			     int *err)
{
	for (size_t z = 0; z < 8 && z <= g->len; z++) {
		uint64_t over = (g->off_end - z - a->offset) % a->size;

		if (z && g->data[g->len - z])
			break;
		if (over > g->len - z ||
		    memcmp(g->data + g->len - z - over, a->data, over))
			continue;
		g->len -= z;
		*err = seg_append(g, a->data + over, (size_t)(a->size - over));
		g->off_end = a->offset + a->size;
		return 1;
	}
	return 0;
}

/* When the offsets do not tell: find the end of segment @g in chunk @a
 * from @g's last PSB (unique: a TSC follows it), as perf does, and append
 * what follows.  1 (done, *@err set) or 0 (not there: the ring wrapped
 * past it, or @g has no PSB). */
static int seg_continue_by_psb(struct pd_segment *g, const struct pd_aux *a,
			       int *err)
{
	size_t len = g->len, pos;
	const uint8_t *hit = NULL;

	for (int z = 0; z < 7 && len && !g->data[len - 1]; z++)
		len--; /* perf's padding */
	for (size_t i = len >= sizeof(psb) ? len - sizeof(psb) + 1 : 0; i--;)
		if (!memcmp(g->data + i, psb, sizeof(psb))) {
			hit = memmem(a->data, a->size, g->data + i, len - i);
			pos = hit ? (size_t)(hit - a->data) + (len - i) : 0;
			break;
		}
	if (!hit)
		return 0;
	g->len = len;
	*err = pos < a->size ? seg_append(g, a->data + pos, a->size - pos) : 0;
	g->off_end = a->offset + a->size;
	return 1;
}

/* Add a chunk to its stream: appended when it continues the last
 * segment (see pd_streams_build), else a new segment. */
static int stream_add(struct pd_stream *st, const struct pd_aux *a,
		      int snapshot, size_t *gaps)
{
	struct pd_segment *g = st->nseg ? &st->seg[st->nseg - 1] : NULL;
	int err = 0;

	if (!a->size)
		return 0;
	if (g && snapshot) {
		if (seg_continue_ring(g, a, &err) ||
		    seg_continue_by_psb(g, a, &err))
			return err;
	} else if (g && a->offset >= g->off_start && a->offset <= g->off_end) {
		uint64_t over = g->off_end - a->offset, z = 0;

		if (seg_continue(g, a, over, &err))
			return err;
		while (z < 7 && z < over && z < g->len &&
		       !g->data[g->len - 1 - z])
			z++;
		if (z) {
			struct pd_segment trimmed = *g;

			trimmed.len -= z;
			trimmed.off_end -= z;
			if (seg_continue(&trimmed, a, over - z, &err)) {
				*g = trimmed; /* data may have moved */
				return err;
			}
		}
	}
	*gaps += st->nseg > 0;
	g = realloc(st->seg, (st->nseg + 1) * sizeof(*g));
	if (!g)
		return PS_ERR_NOMEM;
	st->seg = g;
	g = &g[st->nseg++];
	memset(g, 0, sizeof(*g));
	g->off_start = g->off_end = a->offset;
	return seg_append(g, a->data, (size_t)a->size);
}

int pd_streams_build(const struct pd_recording *r, int per_cpu, int snapshot,
		     struct pd_streams *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < r->nchunks; i++) {
		const struct pd_aux *a = &r->chunks[i].aux;
		struct pd_stream *st =
		    stream_get(out, per_cpu ? a->cpu : a->tid);
		int err;

		err =
		    st ? stream_add(st, a, snapshot, &out->gaps) : PS_ERR_NOMEM;
		if (err < 0) {
			pd_streams_free(out);
			return err;
		}
	}
	return 0;
}

void pd_streams_free(struct pd_streams *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t j = 0; j < s->v[i].nseg; j++)
			free(s->v[i].seg[j].data);
		free(s->v[i].seg);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* SPDX-License-Identifier: MIT */
/* The Perfetto writer's interning state (see perfetto_writer.h).
 *
 * Names, categories, annotation names and source locations are interned:
 * each distinct one gets an iid once per kind, and is defined in a
 * packet's InternedData the first time a sequence uses it (each thread's
 * sequence has its own set of what it has had defined).  The byte-keyed
 * map behind the iids also holds the writer's tracks (perfetto_track.c).
 */
#include <stdlib.h>
#include <string.h>

#include "ptscope/alloc.h"
#include "ptscope/error.h"
#include "src/output/perfetto_writer.h"

static uint64_t hash_bytes(const void *data, size_t n, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);

	while (n >= 8) {
		uint64_t k;

		memcpy(&k, p, 8);
		h = (h ^ (k * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t k = 0;

		memcpy(&k, p, n);
		h = (h ^ (k * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 32;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static int map_rehash(struct pftw_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct pftw_ent *e = ps_zalloc(cap, sizeof(*e));

	if (!e)
		return ps_err_detail(PS_ERR_NOMEM,
				     "out of memory growing a table to %zu "
				     "entries",
				     cap);
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->e[i].key)
			continue;
		j = m->e[i].hash & (cap - 1);
		while (e[j].key)
			j = (j + 1) & (cap - 1);
		e[j] = m->e[i];
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return 0;
}

struct pftw_ent *pftw_map_get(struct pftw_map *m, const void *key, size_t klen,
			      int create, int *fresh)
{
	uint64_t h = hash_bytes(key, klen, 0);
	size_t j;

	if (fresh)
		*fresh = 0;
	if (m->cap) {
		for (j = h & (m->cap - 1); m->e[j].key;
		     j = (j + 1) & (m->cap - 1))
			if (m->e[j].hash == h && m->e[j].klen == klen &&
			    !memcmp(m->e[j].key, key, klen))
				return &m->e[j];
	}
	if (!create)
		return NULL;
	if ((m->n + 1) * 4 > m->cap * 3 && map_rehash(m))
		return NULL;
	for (j = h & (m->cap - 1); m->e[j].key; j = (j + 1) & (m->cap - 1))
		;
	m->e[j].key = malloc(klen + 1);
	if (!m->e[j].key) {
		ps_err_detail(PS_ERR_NOMEM, "out of memory copying a key");
		return NULL;
	}
	memcpy(m->e[j].key, key, klen);
	m->e[j].key[klen] = 0;
	m->e[j].hash = h;
	m->e[j].klen = klen;
	m->e[j].val = 0;
	m->n++;
	if (fresh)
		*fresh = 1;
	return &m->e[j];
}

void pftw_map_free(struct pftw_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->e[i].key);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* Sets bit @i; returns 1 if it was already set, <0 on error. */
static int bits_test_set(struct pftw_bits *b, uint64_t i)
{
	size_t w = (size_t)(i >> 6);

	if (w >= b->nwords) {
		size_t n = b->nwords ? b->nwords : 4;
		uint64_t *p;

		while (n <= w)
			n *= 2;
		p = realloc(b->w, n * sizeof(*p));
		if (!p)
			return ps_err_detail(PS_ERR_NOMEM,
					     "out of memory for interning "
					     "state");
		memset(p + b->nwords, 0, (n - b->nwords) * sizeof(*p));
		b->w = p;
		b->nwords = n;
	}
	if (b->w[w] & (1ull << (i & 63)))
		return 1;
	b->w[w] |= 1ull << (i & 63);
	return 0;
}

void pftw_seq_free(struct pftw_seq *s)
{
	for (int k = 0; k < PFTW_IID_KINDS; k++)
		free(s->sent[k].w);
}

int pftw_iid(struct pftw_writer *w, struct pftw_seq *seq, enum pftw_kind kind,
	     const void *key, size_t klen, uint64_t *iid)
{
	struct pftw_ent *e = pftw_map_get(&w->iids[kind], key, klen, 1, NULL);
	int err;

	if (!e)
		return PS_ERR_NOMEM;
	if (!e->val)
		e->val = ++w->next_iid[kind];
	*iid = e->val;
	err = bits_test_set(&seq->sent[kind], *iid);
	return err < 0 ? err : !err;
}

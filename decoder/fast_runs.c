/* SPDX-License-Identifier: MIT */
/* The run cache of the fast flow engine (see fast_runs.h). */
#include "decoder/fast_runs.h"

#include <stdlib.h>
#include <string.h>

#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/error.h"

/* Longer runs are not real code (libipt would split them at 65535
 * instructions in a way that depends on its cache); the stream then goes
 * to libipt. */
#define FR_MAX_INSNS 16384

struct fr_cache {
	struct img_image *img;
	struct insn_decoder *insn;
	struct fr_run *runs;
	size_t nruns, caprun;
	uint32_t *slots; /* run index + 1, 0: empty; keyed by run ip */
	size_t mask;
	struct fr_insn *insns;
	size_t ninsns, capinsns;
	uint64_t *calls;
	size_t ncalls, capcalls;
};

static size_t hash_ip(uint64_t ip)
{
	uint64_t h = ip * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h ^ (h >> 31));
}

int fr_new(struct img_image *img, struct insn_decoder *insn,
	   struct fr_cache **out)
{
	struct fr_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return PS_ERR_NOMEM;
	c->img = img;
	c->insn = insn;
	c->mask = 4095;
	c->slots = calloc(c->mask + 1, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return PS_ERR_NOMEM;
	}
	*out = c;
	return 0;
}

void fr_free(struct fr_cache *c)
{
	if (!c)
		return;
	free(c->runs);
	free(c->slots);
	free(c->insns);
	free(c->calls);
	free(c);
}

void fr_clear(struct fr_cache *c)
{
	memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
	c->nruns = c->ninsns = c->ncalls = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 256;
	void *np;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	np = realloc(*p, n * size);
	if (!np)
		return PS_ERR_NOMEM;
	*p = np;
	*cap = n;
	return 0;
}

static int rehash(struct fr_cache *c)
{
	size_t mask = c->mask * 2 + 1;
	uint32_t *s = calloc(mask + 1, sizeof(*s));

	if (!s)
		return PS_ERR_NOMEM;
	for (size_t r = 0; r < c->nruns; r++) {
		size_t i = hash_ip(c->runs[r].ip) & mask;

		while (s[i])
			i = (i + 1) & mask;
		s[i] = (uint32_t)(r + 1);
	}
	free(c->slots);
	c->slots = s;
	c->mask = mask;
	return 0;
}

/* Decode the instruction at @ip, which must lie in [lo, hi). */
static int decode_at(struct fr_cache *c, uint64_t ip, struct insn_info *in)
{
	uint8_t buf[15];
	int n = img_read(c->img, ip, buf, sizeof(buf));

	if (n <= 0)
		return FR_NOMAP;
	if (insn_decode(c->insn, 64, ip, buf, (size_t)n, in) || in->len > n)
		return FR_BADINSN;
	return 0;
}

static int learn(struct fr_cache *c, uint64_t ip, uint32_t *index)
{
	struct img_where w;
	struct fr_run run;
	int err;

	if (img_lookup(c->img, ip, &w))
		return FR_NOMAP;
	memset(&run, 0, sizeof(run));
	run.ip = ip;
	run.first = (uint32_t)c->ninsns;
	run.calls = (uint32_t)c->ncalls;
	run.sec_lo = w.start;
	run.sec_hi = w.start + w.size;
	for (;;) {
		struct insn_info in;
		struct fr_insn *fi;

		if (ip < run.sec_lo || ip >= run.sec_hi) {
			run.end = FR_SECTION;
			run.next_ip = ip;
			break;
		}
		if (run.ninsn == FR_MAX_INSNS)
			return FR_BADINSN;
		err = decode_at(c, ip, &in);
		if (err)
			return err;
		if (grow((void **)&c->insns, &c->capinsns, c->ninsns + 1,
			 sizeof(*c->insns)))
			return PS_ERR_NOMEM;
		fi = &c->insns[c->ninsns++];
		fi->ip = ip;
		fi->target = in.target;
		fi->len = in.len;
		fi->cls = in.cls;
		fi->direct = in.direct;
		run.ninsn++;
		run.end_ip = ip;
		run.end_len = in.len;
		if (in.cls == INSN_OTHER) {
			ip += in.len;
			continue;
		}
		if (in.cls == INSN_CALL && in.direct) {
			if (in.target != ip + in.len) {
				if (grow((void **)&c->calls, &c->capcalls,
					 c->ncalls + 1, sizeof(*c->calls)))
					return PS_ERR_NOMEM;
				c->calls[c->ncalls++] = ip + in.len;
				run.ncalls++;
			}
			ip = in.target;
			continue;
		}
		if (in.cls == INSN_JUMP && in.direct) {
			ip = in.target;
			continue;
		}
		run.end = in.cls;
		run.target = in.target;
		break;
	}
	if (grow((void **)&c->runs, &c->caprun, c->nruns + 1, sizeof(*c->runs)))
		return PS_ERR_NOMEM;
	c->runs[c->nruns] = run;
	*index = (uint32_t)c->nruns++;
	if (c->nruns * 2 > c->mask + 1)
		return rehash(c);
	{
		size_t i = hash_ip(run.ip) & c->mask;

		while (c->slots[i])
			i = (i + 1) & c->mask;
		c->slots[i] = *index + 1;
	}
	return 0;
}

int fr_get(struct fr_cache *c, uint64_t ip, const struct fr_run **run)
{
	size_t i = hash_ip(ip) & c->mask;
	uint32_t index;
	size_t ni = c->ninsns, nc = c->ncalls;
	int err;

	for (;;) {
		uint32_t s = c->slots[i];

		if (!s)
			break;
		if (c->runs[s - 1].ip == ip) {
			*run = &c->runs[s - 1];
			return 0;
		}
		i = (i + 1) & c->mask;
	}
	err = learn(c, ip, &index);
	if (err) {
		/* Forget the half-learned instructions. */
		if (c->nruns && c->runs[c->nruns - 1].ip == ip &&
		    err == PS_ERR_NOMEM)
			c->nruns--;
		c->ninsns = ni;
		c->ncalls = nc;
		return err;
	}
	*run = &c->runs[index];
	return 0;
}

const struct fr_insn *fr_insns(const struct fr_cache *c)
{
	return c->insns;
}

const uint64_t *fr_calls(const struct fr_cache *c)
{
	return c->calls;
}

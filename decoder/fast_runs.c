/* SPDX-License-Identifier: MIT */
/* The run cache of the fast flow engine (see fast_runs.h). */
#include "decoder/fast_runs.h"

#include "decoder/blockcache.h"
#include <intel-pt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/image.h"
#include "decoder/insn.h"
#include "ptscope/alloc.h"
#include "ptscope/error.h"

/* Longer runs are not real code (libipt would split them at 65535
 * instructions in a way that depends on its cache); the stream then goes
 * to libipt. */
#define FR_MAX_INSNS 16384

struct fr_cache {
	struct fr_table t; /* first: fr_get's inline part reads it */
	struct img_image *img;
	struct insn_decoder *insn;
	size_t nruns, caprun;
	struct fr_insn *insns;
	size_t ninsns, capinsns;
	uint64_t *calls;
	size_t ncalls, capcalls;
	struct pt_insn_decoder *walker; /* libipt, over trace[] */
	struct bc_block **chunks;	/* fr_keep_cls copies, CLS_CHUNK each */
	size_t nchunks, capchunks, used; /* used: in the last chunk */
	uint8_t trace[29];
	int libipt_only;		    /* fr_walk_with_libipt */
	uint64_t table_walks, libipt_walks; /* runs learned by each */
};

#define hash_ip fr_hash_ip

int fr_new(struct img_image *img, struct insn_decoder *insn,
	   struct fr_cache **out)
{
	struct fr_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return PS_ERR_NOMEM;
	c->img = img;
	c->insn = insn;
	c->t.mask = 4095;
	c->t.slots = ps_zalloc(c->t.mask + 1, sizeof(*c->t.slots));
	if (!c->t.slots) {
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
	free(c->t.runs);
	free(c->t.slots);
	free(c->insns);
	free(c->calls);
	pt_insn_free_decoder(c->walker);
	for (size_t i = 0; i < c->nchunks; i++)
		free(c->chunks[i]);
	free(c->chunks);
	free(c);
}

void fr_clear(struct fr_cache *c)
{
	memset(c->t.slots, 0, (c->t.mask + 1) * sizeof(*c->t.slots));
	c->nruns = c->ninsns = c->ncalls = 0;
	c->t.last = 0;
	for (size_t i = 0; i < c->nchunks; i++)
		free(c->chunks[i]);
	c->nchunks = c->used = 0;
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
	size_t mask = c->t.mask * 2 + 1;
	uint32_t *s = ps_zalloc(mask + 1, sizeof(*s));

	if (!s)
		return PS_ERR_NOMEM;
	for (size_t r = 0; r < c->nruns; r++) {
		size_t i = hash_ip(c->t.runs[r].ip) & mask;

		while (s[i])
			i = (i + 1) & mask;
		s[i] = (uint32_t)(r + 1);
	}
	free(c->t.slots);
	c->t.slots = s;
	c->t.mask = mask;
	return 0;
}

/* libipt's view of the code: an instruction decoder over a made-up trace
 * that enables tracing at the run's first address and ends there, so
 * pt_insn_next walks the instructions (following direct calls and jumps)
 * up to the first one that needs trace and fails there for want of it.
 * The runs are then libipt's instructions, lengths and classes exactly. */
static int walker_start(struct fr_cache *c, uint64_t ip)
{
	static const uint8_t head[] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				       0x02, 0x82, /* PSB */
				       0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				       0x02, 0x82, 0x02, 0x23, /* PSBEND */
				       0x99, 0x01, /* MODE.Exec 64-bit */
				       0xd1}; /* TIP.PGE, 8-byte ip follows */
	int status;

	if (!c->walker) {
		struct pt_config cfg;

		memcpy(c->trace, head, sizeof(head));
		pt_config_init(&cfg);
		cfg.begin = c->trace;
		cfg.end = c->trace + sizeof(c->trace);
		c->walker = pt_insn_alloc_decoder(&cfg);
		if (!c->walker ||
		    pt_insn_set_image(c->walker, img_pt_image(c->img)) < 0)
			return FR_UNSUPPORTED;
	}
	for (int i = 0; i < 8; i++)
		c->trace[sizeof(head) + i] = (uint8_t)(ip >> (8 * i));
	status = pt_insn_sync_set(c->walker, 0);
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_insn_event(c->walker, &ev, sizeof(ev));
	}
	return status < 0 ? FR_UNSUPPORTED : 0;
}

static uint8_t insn_class(enum pt_insn_class ic)
{
	switch (ic) {
	case ptic_call:
		return INSN_CALL;
	case ptic_return:
		return INSN_RET;
	case ptic_jump:
		return INSN_JUMP;
	case ptic_cond_jump:
		return INSN_COND;
	case ptic_far_call:
		return INSN_SYSCALL;
	case ptic_far_return:
		return INSN_FAR_RET;
	case ptic_far_jump:
		return INSN_FAR_JUMP;
	default:
		return INSN_OTHER;
	}
}

/* The taken target of a conditional branch (libipt gives none): its
 * displacement per capstone, which must agree on the length. */
static int cond_target(struct fr_cache *c, const struct pt_insn *pi,
		       uint64_t *target)
{
	struct insn_info in;

	if (insn_decode(c->insn, 64, pi->ip, pi->raw, pi->size, &in) ||
	    in.len != pi->size || in.cls != INSN_COND || !in.direct)
		return FR_UNSUPPORTED;
	*target = in.target;
	return 0;
}

/* The next instruction of the run being learned (its direct target not
 * known yet), or NULL: out of memory. */
static struct fr_insn *add_insn(struct fr_cache *c, uint64_t ip, uint8_t len,
				uint8_t cls)
{
	struct fr_insn *fi;

	if (grow((void **)&c->insns, &c->capinsns, c->ninsns + 1,
		 sizeof(*c->insns)))
		return NULL;
	fi = &c->insns[c->ninsns++];
	fi->ip = ip;
	fi->target = 0;
	fi->len = len;
	fi->cls = cls;
	fi->direct = 0;
	return fi;
}

/* A direct call of @run to @target from @fi: the return address it
 * pushes, unless it calls the next instruction (which only pushes an
 * address).  0 or PS_ERR_NOMEM. */
static int add_call(struct fr_cache *c, struct fr_run *run,
		    const struct fr_insn *fi, uint64_t target)
{
	if (target == fi->ip + fi->len)
		return 0;
	if (grow((void **)&c->calls, &c->capcalls, c->ncalls + 1,
		 sizeof(*c->calls)))
		return PS_ERR_NOMEM;
	c->calls[c->ncalls++] = fi->ip + fi->len;
	run->ncalls++;
	return 0;
}

/* libipt's walk reads the code through libipt's image, which the caches
 * of several flow decoders share (decoder/split.c runs them on threads);
 * the table walk reads the image's own copy (img_read), which is safe. */
static pthread_mutex_t walker_lock = PTHREAD_MUTEX_INITIALIZER;

/* Walk the run that starts at run->ip (its fields set up by learn()) with
 * libipt's instruction decoder, under walker_lock. */
static int walk_libipt_locked(struct fr_cache *c, struct fr_run *r)
{
	struct fr_run run = *r;
	struct fr_insn *prev = NULL;
	int err;

	err = walker_start(c, run.ip);
	if (err)
		return err;
	for (;;) {
		struct pt_insn pi;
		int status;

		memset(&pi, 0, sizeof(pi));
		status = pt_insn_next(c->walker, &pi, sizeof(pi));
		if (prev) {
			/* a direct call or jump: where it went */
			prev->direct = 1;
			prev->target = pi.ip;
			if (prev->cls == INSN_CALL &&
			    add_call(c, &run, prev, pi.ip))
				return PS_ERR_NOMEM;
			prev = NULL;
		}
		if (pi.ip < run.sec_lo || pi.ip >= run.sec_hi) {
			run.end = FR_SECTION;
			run.next_ip = pi.ip;
			break;
		}
		if (status < 0 && !pi.size) {
			/* libipt cannot decode at pi.ip */
			if (status != -pte_nomap && status != -pte_bad_insn)
				return FR_UNSUPPORTED;
			if (!run.ninsn)
				return status;
			run.end = FR_ERROR;
			run.error = status;
			run.next_ip = pi.ip;
			break;
		}
		if (pi.truncated || run.ninsn == FR_MAX_INSNS)
			return FR_UNSUPPORTED;
		if (!add_insn(c, pi.ip, pi.size, insn_class(pi.iclass)))
			return PS_ERR_NOMEM;
		run.ninsn++;
		run.end_ip = pi.ip;
		run.end_len = pi.size;
		if (status >= 0) {
			uint8_t cls = insn_class(pi.iclass);

			if (cls == INSN_CALL || cls == INSN_JUMP)
				prev = &c->insns[c->ninsns - 1];
			else if (cls != INSN_OTHER)
				return FR_UNSUPPORTED;
			continue;
		}
		/* It needs trace (the made-up one has none left). */
		if (status != -pte_eos)
			return FR_UNSUPPORTED;
		run.end = insn_class(pi.iclass);
		if (run.end == INSN_OTHER)
			return FR_UNSUPPORTED;
		if (run.end == INSN_COND) {
			if (cond_target(c, &pi, &run.target))
				return FR_UNSUPPORTED;
			/* the event path walks instructions, not runs */
			c->insns[c->ninsns - 1].target = run.target;
			c->insns[c->ninsns - 1].direct = 1;
		}
		break;
	}
	*r = run;
	return 0;
}

static int walk_libipt(struct fr_cache *c, struct fr_run *r)
{
	int err;

	pthread_mutex_lock(&walker_lock);
	err = walk_libipt_locked(c, r);
	pthread_mutex_unlock(&walker_lock);
	return err;
}

/* Walk the run at run->ip with the table decoder over the image's bytes,
 * as libipt's walk would (same instructions, lengths, classes and end):
 * the table decoder agrees with libipt on every transfer it classifies,
 * and leaves the others (far and system transfers, ptwrite, loop, mov to
 * cr3, prefixed branches).  Returns 1 where it cannot follow (an
 * instruction the table leaves, one that crosses the mapping's end, the
 * instruction limit): libipt walks that run instead.  It costs about a
 * third of libipt's walk (whose sync and per-instruction work dominate a
 * decode of code run once). */
static int walk_table(struct fr_cache *c, struct fr_run *run,
		      const uint8_t *code)
{
	uint64_t ip = run->ip;

	for (;;) {
		struct insn_info in;
		struct fr_insn *fi;
		/* the run stays in its mapping, whose bytes @code are */
		uint64_t n = run->sec_hi - ip;

		if (!insn_quick(code + (ip - run->sec_lo), n < 15 ? n : 15, ip,
				&in) ||
		    run->ninsn == FR_MAX_INSNS)
			return 1;
		fi = add_insn(c, ip, in.len, in.cls);
		if (!fi)
			return PS_ERR_NOMEM;
		run->ninsn++;
		run->end_ip = ip;
		run->end_len = in.len;
		if (in.cls == INSN_OTHER) {
			ip += in.len;
		} else if ((in.cls == INSN_CALL || in.cls == INSN_JUMP) &&
			   in.direct) {
			fi->direct = 1;
			fi->target = in.target;
			if (in.cls == INSN_CALL &&
			    add_call(c, run, fi, in.target))
				return PS_ERR_NOMEM;
			ip = in.target;
		} else {
			/* a transfer that needs trace ends the run */
			run->end = in.cls;
			if (in.cls == INSN_COND) {
				fi->direct = 1;
				fi->target = run->target = in.target;
			}
			return 0;
		}
		if (ip < run->sec_lo || ip >= run->sec_hi) {
			run->end = FR_SECTION;
			run->next_ip = ip;
			return 0;
		}
	}
}

static int learn(struct fr_cache *c, uint64_t ip, uint32_t *index)
{
	struct img_where w;
	struct fr_run run, own;
	int err;

	if (img_lookup(c->img, ip, &w))
		return -pte_nomap;
	memset(&run, 0, sizeof(run));
	run.ip = ip;
	run.first = (uint32_t)c->ninsns;
	run.calls = (uint32_t)c->ncalls;
	run.sec_lo = w.start;
	run.sec_hi = w.start + w.size;
	own = run;
	err = c->libipt_only ? 1 : walk_table(c, &own, w.bytes);
	if (err < 0)
		return err;
	if (!err) {
		run = own;
		run.by_table = 1;
		c->table_walks++;
	} else {
		c->libipt_walks++;
		/* forget the table walk's instructions */
		c->ninsns = run.first;
		c->ncalls = run.calls;
		err = walk_libipt(c, &run);
		if (err)
			return err;
	}
	if (grow((void **)&c->t.runs, &c->caprun, c->nruns + 1,
		 sizeof(*c->t.runs)))
		return PS_ERR_NOMEM;
	c->t.runs[c->nruns] = run;
	*index = (uint32_t)c->nruns++;
	if (c->nruns * 2 > c->t.mask + 1)
		return rehash(c);
	{
		size_t i = hash_ip(run.ip) & c->t.mask;

		while (c->t.slots[i])
			i = (i + 1) & c->t.mask;
		c->t.slots[i] = *index + 1;
	}
	return 0;
}

#define CLS_CHUNK 1024

int fr_keep_cls(struct fr_cache *c, struct fr_run *run,
		const struct bc_block *cls)
{
	if (!c->nchunks || c->used == CLS_CHUNK) {
		struct bc_block *chunk;

		if (grow((void **)&c->chunks, &c->capchunks, c->nchunks + 1,
			 sizeof(*c->chunks)))
			return PS_ERR_NOMEM;
		chunk = malloc(CLS_CHUNK * sizeof(*chunk));
		if (!chunk)
			return PS_ERR_NOMEM;
		c->chunks[c->nchunks++] = chunk;
		c->used = 0;
	}
	run->cls = &c->chunks[c->nchunks - 1][c->used++];
	*run->cls = *cls;
	return 0;
}

/* A run not in the cache yet: learn it. */
static int fr_get_new(struct fr_cache *c, uint64_t ip, struct fr_run **run)
{
	uint32_t index;
	size_t ni = c->ninsns, nc = c->ncalls;
	int err;

	err = learn(c, ip, &index);
	if (err) {
		/* Forget the half-learned instructions. */
		if (c->nruns && c->t.runs[c->nruns - 1].ip == ip &&
		    err == PS_ERR_NOMEM)
			c->nruns--;
		c->ninsns = ni;
		c->ncalls = nc;
		return err;
	}
	*run = &c->t.runs[index];
	return 0;
}

int fr_get_slow(struct fr_cache *c, uint64_t ip, struct fr_run **run)
{
	struct fr_table *t = &c->t;
	size_t i = hash_ip(ip) & t->mask;
	uint32_t s, prev = t->last;
	int err;

	while ((s = t->slots[i]) && t->runs[s - 1].ip != ip)
		i = (i + 1) & t->mask;
	if (!s) {
		t->last = 0;
		err = fr_get_new(c, ip, run);
		if (err)
			return err;
		s = (uint32_t)(*run - t->runs) + 1;
	}
	if (prev) {
		struct fr_run *p = &t->runs[prev - 1];

		p->next_run_ip[1] = p->next_run_ip[0];
		p->next_run[1] = p->next_run[0];
		p->next_run_ip[0] = ip;
		p->next_run[0] = s;
	}
	t->last = s;
	*run = &t->runs[s - 1];
	fr_prefetch_next(t, *run);
	return 0;
}

void fr_walk_with_libipt(struct fr_cache *c, int on)
{
	c->libipt_only = on;
}

void fr_walk_counts(const struct fr_cache *c, uint64_t *table, uint64_t *libipt)
{
	*table = c->table_walks;
	*libipt = c->libipt_walks;
}

const struct fr_insn *fr_insns(const struct fr_cache *c)
{
	return c->insns;
}

const uint64_t *fr_calls(const struct fr_cache *c)
{
	return c->calls;
}

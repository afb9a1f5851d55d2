/* SPDX-License-Identifier: MIT */
/* The latency trigger kind (see latency.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "ptscope/error.h"
#include "src/bpf/sidecar.h"
#include "src/record/kevents/kevents.h"
#include "src/record/triggers/latency.h"
#include "src/record/triggers/resolve.h"
#include "src/record/core/core.h"
#include "src/record/triggers/kinds.h"
#include "src/record/ptrace/tracee.h"

#define LAT_DEPTH 64 /* nested timed calls followed per thread */

struct lat_spec {
	struct rsv_spec spec;
	uint64_t ns;
	unsigned idx; /* its place in s->o->triggers */
};

/* A timed function in one process. */
struct lat_addr {
	pid_t pid;
	unsigned idx; /* spec */
	uint64_t addr;
	char *symbol; /* owned */
};

struct rec_lat {
	struct lat_spec spec[REC_MAX_TRIGGERS];
	size_t nspec;
	struct lat_addr *addrs;
	size_t naddrs;
	unsigned bpf_armed; /* bit i: spec i has its uprobe timer */
	/* Per process: bit i set once spec i is resolved there. */
	struct {
		pid_t pid;
		unsigned done;
	} * procs;
	size_t nprocs;
	int pending; /* a spec waits for a module in some process */
	unsigned slot; /* rec_thr.trig[slot]: struct lat_thr */
};

/* Per thread: the calls it is inside, innermost last. */
struct lat_thr {
	size_t n;
	struct {
		uint64_t ret, sp, t0, addr;
		unsigned idx;
	} f[LAT_DEPTH];
};

int rec_latency_is_spec(const char *spec)
{
	return spec && strchr(spec, '>') != NULL;
}

int rec_latency_parse(const char *spec, char **name, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double mult;
	} units[] = {{"ns", 1},
		     {"us", 1e3},
		     {"\xc2\xb5s", 1e3},
		     {"ms", 1e6},
		     {"s", 1e9}};
	const char *gt = strchr(spec, '>');
	char *end;
	double v;

	if (!gt)
		return 0;
	errno = 0;
	v = strtod(gt + 1, &end);
	if (gt == spec || errno || end == gt + 1 || !(v > 0) || v > 1e6)
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		*ns = (uint64_t)(v * units[i].mult + 0.5);
		if (!*ns)
			goto bad;
		*name = strndup(spec, (size_t)(gt - spec));
		return *name ? 1 : PS_ERR_NOMEM;
	}
bad:
	return ps_err_detail(PS_ERR_INVAL,
			     "bad latency trigger '%s': use NAME>DURATION "
			     "with a unit, e.g. 'handle_request>200us' "
			     "(units ns, us, ms, s)",
			     spec);
}

static int lat_init(struct rec_session *s, const unsigned *idx, size_t n,
		    unsigned slot, void **state)
{
	struct rec_lat *L = calloc(1, sizeof(*L));
	int r = 0;

	if (!L)
		return PS_ERR_NOMEM;
	L->slot = slot;
	*state = L;
	for (size_t i = 0; i < n && i < REC_MAX_TRIGGERS; i++) {
		struct lat_spec *ls = &L->spec[L->nspec];
		char *name = NULL;

		ls->idx = idx[i];
		r = rec_latency_parse(s->o->triggers[idx[i]], &name, &ls->ns);
		if (r < 0)
			return r;
		r = rsv_parse(name, &ls->spec);
		free(name);
		if (r)
			return r;
		L->nspec++;
	}
	return 0;
}

static void lat_fini(struct rec_session *s, void *state)
{
	struct rec_lat *L = state;

	if (!L)
		return;
	for (size_t i = 0; i < L->nspec; i++)
		rsv_spec_fini(&L->spec[i].spec);
	for (size_t i = 0; i < L->naddrs; i++)
		free(L->addrs[i].symbol);
	free(L->addrs);
	free(L->procs);
	free(L);
}

/* @t's call stack goes: it exits, execs or is no longer traced. */
static void lat_disarm(struct rec_session *s, void *state, struct rec_thr *t)
{
	struct rec_lat *L = state;

	free(t->trig[L->slot]);
	t->trig[L->slot] = NULL;
}

static int known(const struct rec_lat *L, pid_t pid, uint64_t addr)
{
	for (size_t i = 0; i < L->naddrs; i++)
		if (L->addrs[i].pid == pid && L->addrs[i].addr == addr)
			return 1;
	return 0;
}

/* Free-running backends: a uprobe timer on the function's file. */
static int arm_bpf(struct rec_session *s, struct rec_lat *L, struct rec_proc *p,
		   unsigned idx, uint64_t addr)
{
	struct sidecar *sc = rkev_sidecar(s);

	if (s->be->emulated || (L->bpf_armed & (1u << idx)))
		return 0;
	if (!sc)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "latency triggers on the %s backend "
				     "need kernel events (eBPF uprobes), "
				     "which are off",
				     s->be->name);
	for (size_t i = 0; i < p->mods.n; i++) {
		const struct mod_map *m = &p->mods.maps[i];

		if (addr < m->start || addr >= m->end || !m->path[0])
			continue;
		L->bpf_armed |= 1u << idx;
		return sdc_time_calls(sc, idx, m->path,
				      addr - m->start + m->offset, addr,
				      L->spec[idx].ns);
	}
	return 0;
}

/* The resolved-spec bits of process @pid (added if new), or NULL. */
static unsigned *done_of(struct rec_lat *L, pid_t pid)
{
	void *n;

	for (size_t i = 0; i < L->nprocs; i++)
		if (L->procs[i].pid == pid)
			return &L->procs[i].done;
	n = realloc(L->procs, (L->nprocs + 1) * sizeof(*L->procs));
	if (!n)
		return NULL;
	L->procs = n;
	L->procs[L->nprocs].pid = pid;
	L->procs[L->nprocs].done = 0;
	return &L->procs[L->nprocs++].done;
}

static int lat_pending(const struct rec_session *s, const void *state)
{
	const struct rec_lat *L = state;

	return L->pending;
}

static void lat_forget(struct rec_session *s, void *state, struct rec_proc *p)
{
	struct rec_lat *L = state;
	unsigned *done;
	size_t out = 0;

	if (!L)
		return;
	done = done_of(L, p->pid);
	if (done)
		*done = 0;
	for (size_t i = 0; i < L->naddrs; i++) {
		if (L->addrs[i].pid == p->pid) {
			free(L->addrs[i].symbol);
			continue;
		}
		L->addrs[out++] = L->addrs[i];
	}
	L->naddrs = out;
}

static int lat_resolve(struct rec_session *s, void *state, struct rec_proc *p,
		       int final)
{
	struct rec_lat *L = state;
	unsigned *done;
	int r;

	if (!L)
		return 0;
	done = done_of(L, p->pid);
	if (!done)
		return PS_ERR_NOMEM;
	L->pending = 0;
	for (unsigned i = 0; i < L->nspec; i++) {
		struct rsv_result res = {0};

		if (*done & (1u << i))
			continue;
		/* A backend that filters the mappings itself (qemu)
		 * resolves against its list. */
		r = p->map_flags
			? rsv_resolve_maps(&L->spec[i].spec, &p->mods, &res)
			: rsv_resolve(&L->spec[i].spec, p->pid, &res);
		if (r == RSV_PENDING || (r == PS_ERR_NOT_FOUND && !final)) {
			L->pending = 1;
			continue;
		}
		if (r && final &&
		    rec_trigger_absent(s, p, L->spec[i].idx, r, res.near_miss)) {
			*done |= 1u << i;
			continue;
		}
		if (r)
			return r;
		for (size_t k = 0; k < res.n && !r; k++) {
			struct lat_addr *na;

			if (known(L, p->pid, res.t[k].addr))
				continue;
			na = realloc(L->addrs, (L->naddrs + 1) * sizeof(*na));
			if (!na) {
				r = PS_ERR_NOMEM;
				break;
			}
			L->addrs = na;
			na[L->naddrs] = (struct lat_addr){
			    p->pid, i, res.t[k].addr,
			    strdup(res.t[k].symbol ? res.t[k].symbol : "")};
			L->naddrs++;
			r = arm_bpf(s, L, p, i, res.t[k].addr);
		}
		rsv_result_fini(&res);
		if (r)
			return r;
		*done |= 1u << i;
		p->resolved |= 1u << L->spec[i].idx;
	}
	return 0;
}

static size_t lat_timed(const struct rec_session *s, const void *state,
			pid_t pid, struct rec_timed_fn *out, size_t max)
{
	const struct rec_lat *L = state;
	size_t n = 0;

	for (size_t i = 0; L && i < L->naddrs && n < max; i++)
		if (L->addrs[i].pid == pid)
			out[n++] = (struct rec_timed_fn){
			    L->addrs[i].addr, L->spec[L->addrs[i].idx].ns,
			    L->addrs[i].idx};
	return n;
}

static const char *symbol_of(const struct rec_lat *L, pid_t pid, uint64_t addr)
{
	for (size_t i = 0; i < L->naddrs; i++)
		if (L->addrs[i].addr == addr && L->addrs[i].pid == pid)
			return L->addrs[i].symbol;
	return "?";
}

static void fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, size, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, size, "%.3f us", (double)ns / 1e3);
	else
		snprintf(buf, size, "%llu ns", (unsigned long long)ns);
}

static int lat_slow(struct rec_session *s, void *state, struct rec_thr *t,
		    unsigned idx, uint64_t addr, uint64_t start, uint64_t end)
{
	struct rec_lat *L = state;
	char text[512], took[32], limit[32];
	const char *sym;
	uint64_t dur = end > start ? end - start : 0;
	int r;

	if (!L || idx >= L->nspec)
		return 0;
	sym = symbol_of(L, t->proc->pid, addr);
	fmt_ns(took, sizeof(took), dur);
	fmt_ns(limit, sizeof(limit), L->spec[idx].ns);
	snprintf(text, sizeof(text), "%s\n%s took %s (over %s)", sym, sym, took,
		 limit);
	r = rec_mark_add(s, REC_MARK_LATENCY, t, end, addr, dur, text);
	return r ? r : rec_trigger_snapshot(s, "latency");
}

static int read_sp(pid_t tid, uint64_t *sp)
{
	return trc_reg(tid, offsetof(struct user_regs_struct, rsp), sp);
}

static int lat_step(struct rec_session *s, void *state, struct rec_thr *t,
		    uint64_t next_ip, uint64_t v0, uint64_t v1)
{
	struct rec_lat *L = state;
	struct lat_thr *lt = t->trig[L->slot];
	uint64_t sp, ret;

	if (!L)
		return 0;
	if (lt && lt->n && next_ip == lt->f[lt->n - 1].ret) {
		if (read_sp(t->tid, &sp))
			return 0;
		/* Frames a longjmp skipped lie below the stack pointer. */
		while (lt->n && lt->f[lt->n - 1].sp < sp)
			lt->n--;
		if (lt->n && lt->f[lt->n - 1].ret == next_ip &&
		    lt->f[lt->n - 1].sp == sp) {
			uint64_t t0 = lt->f[lt->n - 1].t0;
			unsigned idx = lt->f[lt->n - 1].idx;
			uint64_t addr = lt->f[lt->n - 1].addr;

			lt->n--;
			if (v1 - t0 > L->spec[idx].ns)
				return lat_slow(s, L, t, idx, addr, t0, v1);
		}
		return 0;
	}
	for (size_t i = 0; i < L->naddrs; i++) {
		const struct lat_addr *a = &L->addrs[i];

		if (a->addr != next_ip || a->pid != t->proc->pid)
			continue;
		/* Arrived at the function: the return address is on top of
		 * the stack (a call, or a tail call's jump). */
		if (read_sp(t->tid, &sp) ||
		    mod_read_mem(t->proc->pid, sp, &ret, 8) != 8)
			return 0;
		if (!lt) {
			lt = calloc(1, sizeof(*lt));
			if (!lt)
				return PS_ERR_NOMEM;
			t->trig[L->slot] = lt;
		}
		if (lt->n == LAT_DEPTH)
			return 0; /* too deep: this call goes untimed */
		lt->f[lt->n].ret = ret;
		lt->f[lt->n].sp = sp + 8;
		lt->f[lt->n].t0 = v0;
		lt->f[lt->n].idx = a->idx;
		lt->f[lt->n].addr = a->addr;
		lt->n++;
		return 0;
	}
	return 0;
}

static int lat_wants_sidecar(const struct rec_session *s, const void *state)
{
	return !s->be->emulated; /* the uprobe timer */
}

static int lat_claims(const char *spec)
{
	return rec_latency_is_spec(spec);
}

const struct rec_trigger_kind rec_trigger_latency = {
    .name = "latency",
    .claims = lat_claims,
    .init = lat_init,
    .fini = lat_fini,
    .resolve = lat_resolve,
    .pending = lat_pending,
    .forget = lat_forget,
    .disarm = lat_disarm,
    .step = lat_step,
    .timed = lat_timed,
    .slow_call = lat_slow,
    .wants_sidecar = lat_wants_sidecar,
};

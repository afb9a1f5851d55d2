/* SPDX-License-Identifier: MIT */
/* Snapshots: every thread's PT plus what decoding it needs (modules, vDSO,
 * thread names, marks, CPU and clock facts, the sections of extensions
 * such as kernel events), handed to the caller, who decodes it
 * (run/attach) or saves it with snapshot_write (record). */
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/core.h"

#ifndef PTSCOPE_VERSION
#define PTSCOPE_VERSION "0.1.0"
#endif

#define ARCHIVE_MAX (1ull << 30) /* refuse to copy files above 1 GiB */

struct snap_build {
	struct rec_info info;
	struct utsname uts;
	char host[256];
	struct rec_module *mods;
	uint8_t **arch;
	size_t *arch_len;
	size_t nmods;
	struct rec_thread *thr;
	size_t nthr;
	struct rec_pt *pts;
	uint8_t *pt_owned; /* 1: pts[i].data is this snapshot's to free */
	size_t npts, pts_cap;
	struct rec_samples *samps; /* a sampling backend's */
	size_t nsamps;
	struct rec_raw_code *raws;
	size_t nraws;
	struct rec_sidecar *sides; /* the extension's (kernel events) */
	size_t nsides;
	struct rec_process *procs;
	size_t nprocs;
};

static void cpu_identity(struct rec_info *info)
{
	unsigned a, b, c, d, fam, model;
	char vendor[13];

	info->cpu_vendor = REC_CPU_UNKNOWN;
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	if (!strcmp(vendor, "GenuineIntel"))
		info->cpu_vendor = REC_CPU_INTEL;
	else if (!strcmp(vendor, "AuthenticAMD"))
		info->cpu_vendor = REC_CPU_AMD;
	if (a >= 0x15 && info->cpu_vendor == REC_CPU_INTEL) {
		unsigned a15, b15, c15, d15;

		__cpuid(0x15, a15, b15, c15, d15);
		info->cpuid_0x15_eax = a15;
		info->cpuid_0x15_ebx = b15;
	}
	__cpuid(1, a, b, c, d);
	fam = (a >> 8) & 0xf;
	model = (a >> 4) & 0xf;
	if (fam == 0xf)
		fam += (a >> 20) & 0xff;
	if (fam == 0x6 || fam >= 0xf)
		model += ((a >> 16) & 0xf) << 4;
	info->cpu_family = (uint16_t)fam;
	info->cpu_model = (uint8_t)model;
	info->cpu_stepping = a & 0xf;
}

static void fill_info(struct rec_session *s, struct snap_build *b,
		      const char *reason)
{
	struct rec_info *i = &b->info;

	memset(i, 0, sizeof(*i));
	i->backend = s->be->name;
	i->emulated = s->be->emulated;
	cpu_identity(i);
	/* The emulated clock writes nanoseconds as its TSC: no
	 * conversion (has_conv 0). */
	i->version = PTSCOPE_VERSION;
	i->argc = s->o->cmdline_n;
	i->argv = s->o->cmdline;
	i->pid = s->nprocs ? (uint64_t)s->procs[0]->pid : 0;
	i->start_ns = s->start_ns;
	i->start_realtime_ns = s->start_real_ns;
	if (gethostname(b->host, sizeof(b->host) - 1))
		b->host[0] = 0;
	i->hostname = b->host;
	if (uname(&b->uts))
		memset(&b->uts, 0, sizeof(b->uts));
	i->kernel = b->uts.release;
	i->reason = reason;
	i->snapshot_ns = rec_clock_ns();
	if (s->be->fill_info)
		s->be->fill_info(s, i);
}

/* One image's modules (of process @pid, exec epoch @epoch). */
static void add_image_modules(struct rec_session *s, struct snap_build *b,
			      uint64_t pid, uint32_t epoch,
			      const struct mod_list *l)
{
	for (size_t k = 0; k < l->n; k++) {
		const struct mod_map *m = &l->maps[k];
		struct rec_module *rm = &b->mods[b->nmods];

		mod_to_rec(m, pid, rm);
		rm->epoch = epoch;
		/* A deleted or replaced binary is archived always: its bytes
		 * exist only in the running process. */
		if ((s->o->archive || m->open_path) && m->path[0] &&
		    m->path[0] != '[' &&
		    !mod_read_file(mod_file(m), ARCHIVE_MAX, &b->arch[b->nmods],
				   &b->arch_len[b->nmods])) {
			rm->archive = b->arch[b->nmods];
			rm->archive_len = b->arch_len[b->nmods];
		}
		b->nmods++;
	}
}

static int add_modules(struct rec_session *s, struct snap_build *b)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		n += s->procs[i]->mods.n;
		for (size_t k = 0; k < s->procs[i]->nimages; k++)
			n += s->procs[i]->images[k].mods.n;
	}
	b->mods = calloc(n ? n : 1, sizeof(*b->mods));
	b->arch = calloc(n ? n : 1, sizeof(*b->arch));
	b->arch_len = calloc(n ? n : 1, sizeof(*b->arch_len));
	if (!b->mods || !b->arch || !b->arch_len)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct rec_proc *p = s->procs[i];

		for (size_t k = 0; k < p->nimages; k++)
			add_image_modules(s, b, (uint64_t)p->pid,
					  p->images[k].epoch,
					  &p->images[k].mods);
		add_image_modules(s, b, (uint64_t)p->pid, p->epoch, &p->mods);
	}
	return 0;
}

/* @p's name now: its main thread's, else the one it had at exec. */
static const char *proc_name(struct rec_session *s, const struct rec_proc *p)
{
	for (size_t i = s->nthrs; i-- > 0;)
		if (s->thrs[i]->proc == p && s->thrs[i]->tid == p->pid &&
		    s->thrs[i]->comm[0] && s->thrs[i]->epoch == p->epoch)
			return s->thrs[i]->comm;
	return p->comm;
}

/* Every image of every process: parent, name and program per epoch. */
static int add_procs(struct rec_session *s, struct snap_build *b)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nprocs; i++)
		n += 1 + s->procs[i]->nimages;
	b->procs = calloc(n ? n : 1, sizeof(*b->procs));
	if (!b->procs)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct rec_proc *p = s->procs[i];

		for (size_t k = 0; k < p->nimages; k++)
			b->procs[b->nprocs++] = (struct rec_process){
			    .pid = (uint64_t)p->pid,
			    .ppid = (uint64_t)p->ppid,
			    .epoch = p->images[k].epoch,
			    .time_ns = p->images[k].start_ns,
			    .name = p->images[k].comm,
			    .path = p->images[k].path ? p->images[k].path
						      : ""};
		b->procs[b->nprocs++] = (struct rec_process){
		    .pid = (uint64_t)p->pid,
		    .ppid = (uint64_t)p->ppid,
		    .epoch = p->epoch,
		    .time_ns = p->epoch_ns,
		    .name = proc_name(s, p),
		    .path = p->path ? p->path : ""};
	}
	return 0;
}

/* One PT record of @t for chunk @c (taking its data). */
static int add_pt(struct rec_session *s, struct snap_build *b,
		  const struct rec_thr *t, const struct rec_pt_chunk *c,
		  int owned)
{
	struct rec_pt *pt;

	if (b->npts == b->pts_cap) {
		size_t cap = b->pts_cap ? 2 * b->pts_cap : 16;
		struct rec_pt *np = realloc(b->pts, cap * sizeof(*np));
		uint8_t *no = np ? realloc(b->pt_owned, cap) : NULL;

		if (np)
			b->pts = np;
		if (!no) {
			if (owned)
				free(c->data);
			return PS_ERR_NOMEM;
		}
		b->pt_owned = no;
		b->pts_cap = cap;
	}
	b->pt_owned[b->npts] = (uint8_t)owned;
	pt = &b->pts[b->npts++];
	memset(pt, 0, sizeof(*pt));
	pt->pid = (uint64_t)t->proc->pid;
	pt->tid = (uint64_t)t->tid;
	pt->cpu = -1;
	pt->snapshot = s->res->snapshots;
	pt->data = c->data;
	pt->len = c->len;
	pt->epoch = c->epoch;
	return 0;
}

static int add_threads(struct rec_session *s, struct snap_build *b)
{
	b->thr = calloc(s->nthrs ? s->nthrs : 1, sizeof(*b->thr));
	b->samps = calloc(s->nthrs ? s->nthrs : 1, sizeof(*b->samps));
	if (!b->thr || !b->samps)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nthrs; i++) {
		const struct rec_thr *t = s->thrs[i];
		struct rec_pt_chunk *c = NULL;
		size_t n = 0;
		int r = 0;

		b->thr[b->nthr].pid = (uint64_t)t->proc->pid;
		b->thr[b->nthr].tid = (uint64_t)t->tid;
		b->thr[b->nthr].comm = t->comm;
		b->nthr++;
		if (s->be->samples) {
			struct rec_samples *sm = &b->samps[b->nsamps];

			memset(sm, 0, sizeof(*sm));
			r = s->be->samples(s, t, sm);
			if (r == PS_ERR_NOT_FOUND)
				continue;
			if (r)
				return r;
			sm->pid = (uint64_t)t->proc->pid;
			sm->tid = (uint64_t)t->tid;
			sm->snapshot = s->res->snapshots;
			sm->epoch = t->epoch;
			b->nsamps++;
			continue;
		}
		/* Earlier images first: they ran first. */
		for (size_t k = 0; k < t->nkept && !r; k++)
			r = add_pt(s, b, t, &t->kept[k], 0);
		if (r)
			return r;
		r = s->be->snapshot(s, t, &c, &n);
		if (r == PS_ERR_NOT_FOUND)
			continue;
		if (r)
			return r;
		for (size_t k = 0; k < n; k++) {
			if (!r)
				r = add_pt(s, b, t, &c[k], 1);
			else
				free(c[k].data);
		}
		free(c);
		if (r)
			return r;
	}
	return 0;
}

/* One image's code that no file holds: the vDSO, the engine's extra. */
static void add_image_raws(struct snap_build *b, uint64_t pid, uint32_t epoch,
			   const uint8_t *vdso, size_t vdso_len,
			   uint64_t vdso_addr, const struct rec_raw_code *x,
			   size_t nx)
{
	for (size_t k = 0; k < nx; k++) {
		b->raws[b->nraws] = x[k];
		b->raws[b->nraws].pid = pid;
		b->raws[b->nraws].epoch = epoch;
		b->nraws++;
	}
	if (!vdso)
		return;
	b->raws[b->nraws] = (struct rec_raw_code){.pid = pid,
						  .vaddr = vdso_addr,
						  .name = "[vdso]",
						  .bytes = vdso,
						  .len = vdso_len,
						  .epoch = epoch};
	b->nraws++;
}

static int add_raws(struct rec_session *s, struct snap_build *b)
{
	const struct rec_raw_code *x = NULL;
	size_t nx = s->be->extra_code ? s->be->extra_code(s, &x) : 0;
	size_t n = 0;

	for (size_t i = 0; i < s->nprocs; i++)
		n += 1 + s->procs[i]->nimages;
	b->raws = calloc(n * (1 + nx) + 1, sizeof(*b->raws));
	if (!b->raws)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct rec_proc *p = s->procs[i];

		for (size_t k = 0; k < p->nimages; k++) {
			const struct rec_image *im = &p->images[k];

			add_image_raws(b, (uint64_t)p->pid, im->epoch, im->vdso,
				       im->vdso_len, im->vdso_addr, x, nx);
		}
		add_image_raws(b, (uint64_t)p->pid, p->epoch, p->vdso,
			       p->vdso_len, p->vdso_addr, x, nx);
	}
	return 0;
}

static void build_free(struct rec_session *s, struct snap_build *b)
{
	if (b->sides)
		s->ext->sections_free(b->sides, b->nsides);
	for (size_t i = 0; i < b->nmods; i++)
		free(b->arch[i]);
	for (size_t i = 0; i < b->npts; i++)
		if (b->pt_owned[i])
			free((void *)b->pts[i].data);
	for (size_t i = 0; i < b->nsamps; i++)
		free((void *)b->samps[i].data);
	free(b->samps);
	free(b->mods);
	free(b->arch);
	free(b->arch_len);
	free(b->thr);
	free(b->pts);
	free(b->pt_owned);
	free(b->raws);
	free(b->procs);
}

/* A mark saying when and why a snapshot without its own mark (Ctrl-C,
 * --duration) was taken, on the first process's main thread. */
static int snapshot_mark(struct rec_session *s, const char *reason)
{
	struct rec_thr *t = NULL;

	if (!strcmp(reason, "trigger") || !strcmp(reason, "signal") ||
	    !strcmp(reason, "latency") ||
	    !strcmp(reason, "exit") || !s->nprocs)
		return 0;
	for (size_t i = 0; i < s->nthrs && !t; i++)
		if (s->thrs[i]->proc == s->procs[0])
			t = s->thrs[i];
	if (!t)
		return 0;
	return rec_mark_add(s, REC_MARK_SNAPSHOT, t,
			    rec_thr_now(s, t),
			    t->ip, 0, reason);
}

int rec_snapshot_take(struct rec_session *s, const char *reason)
{
	struct rec_snapshot snap;
	struct snap_build b;
	int r;

	memset(&b, 0, sizeof(b));
	for (size_t i = 0; i < s->nprocs; i++)
		if (!s->procs[i]->gone) {
			if (s->be->maps)
				s->be->maps(s, s->procs[i]);
			else
				rec_proc_refresh_maps(s, s->procs[i]);
		}
	r = snapshot_mark(s, reason);
	if (r)
		return r;
	fill_info(s, &b, reason);
	r = add_modules(s, &b);
	if (!r)
		r = add_threads(s, &b);
	if (!r)
		r = add_raws(s, &b);
	if (!r)
		r = add_procs(s, &b);
	if (!r && s->ext && s->ext->sections)
		r = s->ext->sections(s, &b.sides, &b.nsides);
	if (r) {
		build_free(s, &b);
		return r;
	}
	memset(&snap, 0, sizeof(snap));
	snap.index = s->res->snapshots + 1;
	snap.reason = reason;
	snap.in.info = &b.info;
	snap.in.mods = b.mods;
	snap.in.nmods = b.nmods;
	snap.in.threads = b.thr;
	snap.in.nthreads = b.nthr;
	snap.in.pts = b.pts;
	snap.in.npts = b.npts;
	snap.in.marks = s->marks + s->marks_snapped;
	snap.in.nmarks = s->nmarks - s->marks_snapped;
	snap.in.raws = b.raws;
	snap.in.nraws = b.nraws;
	snap.in.procs = b.procs;
	snap.in.nprocs = b.nprocs;
	snap.in.sidecars = b.sides;
	snap.in.nsidecars = b.nsides;
	snap.in.samples = b.samps;
	snap.in.nsamples = b.nsamps;
	if (s->ext && s->ext->lost && s->ext->lost(s))
		rec_notice(s,
			   "%llu kernel events were lost (the ring buffer was "
			   "full); the trace marks it",
			   (unsigned long long)s->ext->lost(s));
	snap.archive = (const uint8_t *const *)b.arch;
	snap.archive_len = b.arch_len;
	r = s->o->on_snapshot ? s->o->on_snapshot(s->o->ctx, &snap) : 0;
	build_free(s, &b);
	if (r)
		return r;
	s->res->snapshots++;
	/* The marks are in this snapshot and no later one needs them: free
	 * them, or --multi-snapshot grows by a mark per hit for hours. */
	for (size_t i = 0; i < s->nmarks; i++)
		free((char *)s->marks[i].text);
	s->nmarks = 0;
	s->marks_snapped = 0;
	return 0;
}

int rec_snapshot_final(struct rec_session *s)
{
	const char *why = s->stop_reason ? s->stop_reason : "exit";
	int r;

	/* A trigger no process ever had: the sentence that says why, and
	 * no trace, as when the command's own program lacks it. */
	if (!strcmp(why, "exit") && (r = rec_triggers_unmatched(s)))
		return r;
	/* "limit": --multi-snapshot took its last one already; at exit,
	 * multi-snapshot mode has nothing new to show once a hit was saved. */
	if (!strcmp(why, "limit") ||
	    (!strcmp(why, "exit") && s->o->multi_snapshot && s->res->snapshots))
		return 0;
	return rec_snapshot_take(s, why);
}

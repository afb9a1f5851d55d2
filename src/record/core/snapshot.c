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
	size_t npts;
	struct rec_samples *samps; /* a sampling backend's */
	size_t nsamps;
	struct rec_raw_code *raws;
	size_t nraws;
	struct rec_sidecar *sides; /* the extension's (kernel events) */
	size_t nsides;
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

static int add_modules(struct rec_session *s, struct snap_build *b)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nprocs; i++)
		n += s->procs[i]->mods.n;
	b->mods = calloc(n ? n : 1, sizeof(*b->mods));
	b->arch = calloc(n ? n : 1, sizeof(*b->arch));
	b->arch_len = calloc(n ? n : 1, sizeof(*b->arch_len));
	if (!b->mods || !b->arch || !b->arch_len)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct rec_proc *p = s->procs[i];

		for (size_t k = 0; k < p->mods.n; k++) {
			const struct mod_map *m = &p->mods.maps[k];
			struct rec_module *rm = &b->mods[b->nmods];

			mod_to_rec(m, (uint64_t)p->pid, rm);
			/* A deleted or replaced binary is archived always:
			 * its bytes exist only in the running process. */
			if ((s->o->archive || m->open_path) && m->path[0] &&
			    m->path[0] != '[' &&
			    !mod_read_file(mod_file(m), ARCHIVE_MAX,
					   &b->arch[b->nmods],
					   &b->arch_len[b->nmods])) {
				rm->archive = b->arch[b->nmods];
				rm->archive_len = b->arch_len[b->nmods];
			}
			b->nmods++;
		}
	}
	return 0;
}

static int add_threads(struct rec_session *s, struct snap_build *b)
{
	b->thr = calloc(s->nthrs ? s->nthrs : 1, sizeof(*b->thr));
	b->pts = calloc(s->nthrs ? s->nthrs : 1, sizeof(*b->pts));
	b->samps = calloc(s->nthrs ? s->nthrs : 1, sizeof(*b->samps));
	if (!b->thr || !b->pts || !b->samps)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nthrs; i++) {
		const struct rec_thr *t = s->thrs[i];
		struct rec_pt *pt = &b->pts[b->npts];
		uint8_t *buf;
		size_t len;
		int r;

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
			b->nsamps++;
			continue;
		}
		r = s->be->snapshot(s, t, &buf, &len);
		if (r == PS_ERR_NOT_FOUND)
			continue;
		if (r)
			return r;
		pt->pid = (uint64_t)t->proc->pid;
		pt->tid = (uint64_t)t->tid;
		pt->cpu = -1;
		pt->snapshot = s->res->snapshots;
		pt->data = buf;
		pt->len = len;
		b->npts++;
	}
	return 0;
}

static int add_raws(struct rec_session *s, struct snap_build *b)
{
	const struct rec_raw_code *x = NULL;
	size_t nx = s->be->extra_code ? s->be->extra_code(s, &x) : 0;

	b->raws =
	    calloc(s->nprocs ? s->nprocs * (1 + nx) : 1, sizeof(*b->raws));
	if (!b->raws)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct rec_proc *p = s->procs[i];

		for (size_t k = 0; k < nx; k++) {
			b->raws[b->nraws] = x[k];
			b->raws[b->nraws].pid = (uint64_t)p->pid;
			b->nraws++;
		}
		if (!p->vdso)
			continue;
		b->raws[b->nraws].pid = (uint64_t)p->pid;
		b->raws[b->nraws].vaddr = p->vdso_addr;
		b->raws[b->nraws].name = "[vdso]";
		b->raws[b->nraws].bytes = p->vdso;
		b->raws[b->nraws].len = p->vdso_len;
		b->nraws++;
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
		free((void *)b->pts[i].data);
	for (size_t i = 0; i < b->nsamps; i++)
		free((void *)b->samps[i].data);
	free(b->samps);
	free(b->mods);
	free(b->arch);
	free(b->arch_len);
	free(b->thr);
	free(b->pts);
	free(b->raws);
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

	/* "limit": --multi-snapshot took its last one already; at exit,
	 * multi-snapshot mode has nothing new to show once a hit was saved. */
	if (!strcmp(why, "limit") ||
	    (!strcmp(why, "exit") && s->o->multi_snapshot && s->res->snapshots))
		return 0;
	return rec_snapshot_take(s, why);
}

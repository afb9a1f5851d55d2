/* SPDX-License-Identifier: MIT */
/* The intel-pt backend's engine (intel_pt.h): PMU and config at open,
 * per-thread PT events, trigger breakpoints and their hits, sideband,
 * snapshots, clock facts for the recording.  The ptrace control loop
 * that calls it is intel_pt_loop.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/intel-pt/intel_pt.h"
#include "src/record/intel-pt/kcore.h"
#include "src/record/intel-pt/pt_filter.h"
#include "src/record/kevents/kevents.h"
#include "src/record/core/core.h"
#include "src/record/ptrace/freerun.h"
#include "src/record/ptrace/tracee.h"

#define PAGE 4096ull
#define DATA_PAGES 16 /* sideband ring: 64 KiB per thread */
#define AUX_MIN (4 * PAGE)

/* @v rounded up to a power of two number of pages. */
static uint64_t pow2_pages(uint64_t v)
{
	uint64_t n = AUX_MIN;

	while (n < v && n < (1ull << 40))
		n <<= 1;
	return n;
}

int iptb_open(struct rec_session *s, const struct ptk_ops *k)
{
	const struct rec_options *o = s->o;
	enum ptpmu_timer timer = PTPMU_TIMER_DEFAULT;
	struct ptpmu_cpu cpu;
	struct iptb *b;
	uint64_t want;
	int r;

	b = calloc(1, sizeof(*b));
	if (!b)
		return PS_ERR_NOMEM;
	b->k = k;
	b->sigpipe[0] = b->sigpipe[1] = -1;
	s->bk = b;
	ptpmu_cpu_probe(&cpu);
	r = ptpmu_discover(k, &cpu, &b->pmu);
	if (r)
		return r;
	if (o->timer_resolution &&
	    (r = ptpmu_parse_timer(o->timer_resolution, &timer)))
		return r;
	r = ptpmu_build(&b->pmu, timer, &b->pc);
	if (r)
		return r;
	if (b->pc.note)
		rec_notice(s, "%s", b->pc.note);
	if (o->filter && !b->pmu.cap_ip_filtering)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "--filter needs IP filtering, which this "
				     "CPU lacks (caps/ip_filtering is 0)");
	want = o->snapshot_size ? o->snapshot_size : REC_DEFAULT_SNAPSHOT_SIZE;
	b->tc.k = k;
	b->tc.type = b->pmu.type;
	memcpy(b->tc.cfg, b->pc.cfg, sizeof(b->tc.cfg));
	b->tc.kernel = o->kernel;
	b->tc.aux_size = pow2_pages(want);
	b->tc.data_pages = DATA_PAGES;
	/* --multi-snapshot keeps tracing after a hit: a pause in the
	 * kernel would need a resume; stop from user space instead. */
	b->tc.aux_pause = o->multi_snapshot ? 0 : -1;
	b->tc.build_id = -1;
	if (o->kernel) {
		uint8_t *bytes;
		size_t len;
		uint64_t at;

		/* Without it PT still records the kernel; only the decoder
		 * cannot follow it there. */
		r = kcore_text(NULL, NULL, &bytes, &len, &at);
		if (r) {
			rec_notice(s,
				   "--kernel: %s; kernel code will not "
				   "decode",
				   ps_err_message(r));
		} else {
			b->ktext.name = "[kernel.kallsyms]";
			b->ktext.bytes = bytes;
			b->ktext.len = len;
			b->ktext.vaddr = at;
		}
	}
	if (b->tc.aux_size != want)
		rec_notice(s,
			   "snapshot size: %llu KiB per thread (the AUX area "
			   "must be a power of two number of pages)",
			   (unsigned long long)(b->tc.aux_size >> 10));
	return 0;
}

static struct iptb_thr *thr_bk(struct rec_thr *t)
{
	return t->bk;
}

/* A trigger address the kernel refused a breakpoint for. */
static int refused(const struct iptb *b, uint64_t addr)
{
	for (size_t i = 0; i < b->nrefused; i++)
		if (b->refused[i] == addr)
			return 1;
	return 0;
}

int iptb_arm(struct rec_session *s, struct rec_thr *t)
{
	struct iptb *b = s->bk;
	struct iptb_thr *x = thr_bk(t);
	int r;

	if (!x || x->pt.fd < 0 || t->state == THR_GONE ||
	    t->state == THR_EXITING)
		return 0;
	for (size_t i = 0; i < t->proc->ntaddr; i++) {
		uint64_t addr = t->proc->taddr[i].addr;

		if (refused(b, addr))
			continue;
		r = ptt_bp_add(&b->tc, &x->pt, addr);
		if (r == PS_ERR_NOT_FOUND)
			return 0; /* the thread is already gone */
		if (r == PS_ERR_INVAL) {
			/* That trigger's problem alone: say it once, arm
			 * the others. */
			rec_notice(s, "trigger %s: %s",
				   t->proc->taddr[i].symbol, ps_err_message(r));
			if (b->nrefused < IPTB_MAX_REFUSED)
				b->refused[b->nrefused++] = addr;
			continue;
		}
		if (r)
			return r;
	}
	return 0;
}

/* The --filter text of @p's image, built from all its file mappings the
 * first time, and again for each new image (exec epoch).  A name the new image
 * does not map keeps the old text: the kernel binds it if that file is mapped
 * later, and traces nothing of the process until then. */
static int proc_filter(struct rec_session *s, struct rec_proc *p,
		       const char **out)
{
	struct iptb *b = s->bk;
	struct iptb_proc *pb = p->bk;
	struct mod_list all = {0};
	char *f = NULL;
	int r;

	*out = NULL;
	if (!s->o->filter)
		return 0;
	if (!pb) {
		pb = calloc(1, sizeof(*pb));
		if (!pb)
			return PS_ERR_NOMEM;
		p->bk = pb;
	}
	if (pb->filter && pb->epoch == p->epoch) {
		*out = pb->filter;
		return 0;
	}
	r = mod_read(p->pid, MOD_FILE, &all);
	if (r == PS_ERR_NOT_FOUND)
		return r;
	if (!r)
		r = ptf_build(s->o->filter, &all, b->pmu.cap_num_address_ranges,
			      &f);
	mod_list_fini(&all);
	if (r == PS_ERR_NOT_FOUND && pb->filter) {
		rec_notice(s,
			   "%s; process %d keeps the filter of its previous "
			   "program, so nothing of it is traced until that "
			   "file is mapped",
			   ps_err_message(r), (int)p->pid);
		r = 0;
	} else if (!r) {
		free(pb->filter);
		pb->filter = f;
	}
	pb->epoch = p->epoch;
	*out = pb->filter;
	return r;
}

int iptb_thread_start(struct rec_session *s, struct rec_thr *t)
{
	struct iptb *b = s->bk;
	struct iptb_thr *x = thr_bk(t);
	const char *filter;
	int r;

	r = proc_filter(s, t->proc, &filter);
	if (r)
		return r;
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return PS_ERR_NOMEM;
		x->pt.fd = -1;
		t->bk = x;
	}
	if (x->pt.fd >= 0)
		ptt_close(&b->tc, &x->pt);
	r = ptt_open(&b->tc, t->tid, filter, &x->pt);
	if (r)
		return r;
	if (!b->have_clk) {
		r = ptclk_calibrate(b->k, x->pt.meta, &b->clk);
		if (r)
			return r;
		b->have_clk = 1;
	}
	r = iptb_arm(s, t);
	if (!r)
		r = ptt_enable(&b->tc, &x->pt, 1);
	if (r)
		return r;
	t->traced = 1;
	return 0;
}

void iptb_thread_end(struct rec_session *s, struct rec_thr *t)
{
	struct iptb *b = s->bk;
	struct iptb_thr *x = thr_bk(t);

	t->traced = 0;
	if (!x || x->pt.fd < 0)
		return;
	ptt_enable(&b->tc, &x->pt, 0);
	ptt_bp_close_all(&b->tc, &x->pt);
}

void iptb_thread_retire(struct rec_session *s, struct rec_thr *t)
{
	struct iptb *b = s->bk;
	struct iptb_thr *x = thr_bk(t);
	uint8_t *buf;
	size_t len;

	t->traced = 0;
	if (!x || !b || x->pt.fd < 0)
		return;
	ptt_enable(&b->tc, &x->pt, 0);
	ptt_read_aux_records(&x->pt, NULL, NULL);
	if (!ptt_snapshot(&b->tc, &x->pt, &buf, &len) &&
	    rec_thr_keep_pt(t, t->epoch, buf, len))
		rec_notice(s, "out of memory keeping thread %d's trace",
			   (int)t->tid);
	ptt_close(&b->tc, &x->pt);
}

int iptb_crash(struct rec_session *s, struct rec_thr *t, int sig, uint64_t addr,
	       int has_addr, uint64_t ip)
{
	iptb_thread_end(s, t);
	return rec_freerun_crash_mark(s, t, sig, addr, has_addr, ip);
}

static const struct rec_taddr *taddr_of(const struct rec_proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->ntaddr; i++)
		if (p->taddr[i].addr == addr)
			return &p->taddr[i];
	return NULL;
}

struct hit_ctx {
	struct rec_session *s;
	struct rec_thr *t;
	int bp;
	int err;
};

/* One breakpoint sample: the trigger hit. */
static int on_bp_record(void *ctx, const uint8_t *rec, size_t len)
{
	struct hit_ctx *h = ctx;
	struct rec_session *s = h->s;
	struct rec_thr *t = h->t;
	struct iptb *b = s->bk;
	struct iptb_thr *x = thr_bk(t);
	const struct rec_taddr *ta;
	struct sb_record r;
	char reason[256];
	int rr;

	if (sb_parse(rec, len, &ptt_bp_layout, &r) ||
	    r.type != PERF_RECORD_SAMPLE || s->stop_reason)
		return 0;
	if (!x->pt.bp[h->bp].in_group) {
		/* No aux_pause: PT ran on until now.  Stop it (a snapshot
		 * under --multi-snapshot stops it just as well) and say how
		 * far past the trigger the trace goes. */
		uint64_t stop;

		if (!s->o->multi_snapshot)
			ptt_enable(&b->tc, &x->pt, 0);
		stop = rec_clock_ns();
		b->overrun_ns = stop > r.sid.time ? stop - r.sid.time : 0;
		rr = rec_mark_add(s, REC_MARK_NOTE, t, r.sid.time,
				  r.u.sample.ip, b->overrun_ns,
				  "the trace runs on past this trigger until "
				  "ptscope stopped it from user space (value: "
				  "ns); Linux 6.13+ stops it in the kernel at "
				  "the trigger (aux_pause)");
		if (rr) {
			h->err = rr;
			return 1;
		}
	}
	ta = taddr_of(t->proc, r.u.sample.ip);
	reason[0] = 0;
	if (ta && ta->is_trigger_fn && r.u.sample.rdi) {
		ssize_t n = mod_read_mem(t->proc->pid, r.u.sample.rdi, reason,
					 sizeof(reason) - 1);

		reason[n > 0 ? n : 0] = 0;
	}
	rr = rec_trigger_hit(s, t, r.u.sample.ip, r.sid.time, r.u.sample.rdi,
			     ta ? ta->symbol : "", reason);
	if (rr < 0) {
		h->err = rr;
		return 1;
	}
	return rr;
}

struct sb_ctx {
	struct rec_session *s;
	struct rec_thr *t;
	int maps_changed;
	int err;
};

static int on_sideband(void *ctx, const uint8_t *rec, size_t len)
{
	struct sb_ctx *c = ctx;
	struct rec_thr *t = c->t;
	struct sb_record r;
	char text[160];
	int rr;

	if (sb_parse(rec, len, &ptt_pt_layout, &r))
		return 0;
	switch (r.type) {
	case PERF_RECORD_COMM:
		if (r.u.comm.comm && r.u.comm.tid == (uint32_t)t->tid)
			snprintf(t->comm, sizeof(t->comm), "%s", r.u.comm.comm);
		break;
	case PERF_RECORD_MMAP2:
		if (r.u.mmap2.prot & PROT_EXEC)
			c->maps_changed = 1;
		break;
	case PERF_RECORD_LOST:
		snprintf(text, sizeof(text),
			 "%llu sideband records (mappings, names) lost: the "
			 "sideband ring was full",
			 (unsigned long long)r.u.lost.lost);
		rr = rec_mark_add(c->s, REC_MARK_LOST, t, r.sid.time, 0,
				  r.u.lost.lost, text);
		if (rr) {
			c->err = rr;
			return 1;
		}
		break;
	default:
		break;
	}
	return 0;
}

/* The PT event's own ring: AUX records whose flags say PT data was lost
 * (one mark per thread).  Lost AUX records lose only those flags. */
static int on_aux_record(void *ctx, const uint8_t *rec, size_t len)
{
	struct sb_ctx *c = ctx;
	struct iptb_thr *x = thr_bk(c->t);
	struct sb_record r;
	char text[160], flags[64];
	int rr;

	if (sb_parse(rec, len, &ptt_pt_layout, &r) ||
	    r.type != PERF_RECORD_AUX ||
	    !(r.u.aux.flags &
	      (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL)) ||
	    x->lost_marked)
		return 0;
	x->lost_marked = 1;
	sb_aux_flags_text(r.u.aux.flags, flags, sizeof(flags));
	snprintf(text, sizeof(text),
		 "PT data lost: the kernel marked AUX data %s", flags);
	rr = rec_mark_add(c->s, REC_MARK_LOST, c->t, r.sid.time, 0,
			  r.u.aux.size, text);
	if (rr) {
		c->err = rr;
		return 1;
	}
	return 0;
}

/* New code mapped: re-read the maps, resolve waiting triggers, arm. */
static int maps_changed(struct rec_session *s, struct rec_proc *p)
{
	int r = rec_proc_refresh_maps(s, p);

	if (r)
		return r == PS_ERR_NOT_FOUND ? 0 : r;
	if (!s->triggers_pending)
		return 0;
	r = rec_triggers_resolve(s, p, 0);
	for (size_t i = 0; i < s->nthrs && !r; i++)
		if (s->thrs[i]->proc == p)
			r = iptb_arm(s, s->thrs[i]);
	return r;
}

static int poll_set(struct iptb *b, struct rec_session *s, size_t *n)
{
	size_t need = 2, k = 0;
	int kfd = rkev_wait_fd(s);

	for (size_t i = 0; i < s->nthrs; i++)
		need += 1 + PTT_MAX_BPS;
	if (need > b->pfds_cap) {
		struct pollfd *np = realloc(b->pfds, need * sizeof(*np));

		if (!np)
			return PS_ERR_NOMEM;
		b->pfds = np;
		b->pfds_cap = need;
	}
	if (b->sigpipe[0] >= 0)
		b->pfds[k++] = (struct pollfd){b->sigpipe[0], POLLIN, 0};
	/* Kernel events waiting (a slow call: act on it now). */
	if (kfd >= 0)
		b->pfds[k++] = (struct pollfd){kfd, POLLIN, 0};
	for (size_t i = 0; i < s->nthrs; i++) {
		struct iptb_thr *x = thr_bk(s->thrs[i]);

		/* An exited thread's event polls as POLLHUP for ever: keep
		 * its fd for the snapshot but out of the poll set. */
		if (!x || x->pt.fd < 0 || !s->thrs[i]->traced)
			continue;
		/* The sideband wakes the loop; the PT event's own ring (AUX
		 * records) is read at each look, never waited for. */
		if (x->pt.sb_fd >= 0)
			b->pfds[k++] = (struct pollfd){x->pt.sb_fd, POLLIN, 0};
		for (int j = 0; j < PTT_MAX_BPS; j++)
			if (x->pt.bp[j].fd >= 0)
				b->pfds[k++] =
				    (struct pollfd){x->pt.bp[j].fd, POLLIN, 0};
	}
	*n = k;
	return 0;
}

static int service_thread(struct rec_session *s, struct rec_thr *t)
{
	struct iptb_thr *x = thr_bk(t);
	struct sb_ctx sc = {s, t, 0, 0};
	int r;

	if (!x || x->pt.fd < 0)
		return 0;
	for (int j = 0; j < PTT_MAX_BPS && !s->stop_reason; j++) {
		struct hit_ctx h = {s, t, j, 0};

		if (!ptt_bp_pending(&x->pt, j))
			continue;
		r = ptt_read_bp(&x->pt, j, on_bp_record, &h);
		if (h.err)
			return h.err;
		if (r < 0)
			return r;
	}
	r = ptt_read_sideband(&x->pt, on_sideband, &sc);
	if (!sc.err && r >= 0)
		r = ptt_read_aux_records(&x->pt, on_aux_record, &sc);
	if (sc.err)
		return sc.err;
	if (r < 0)
		return r;
	if (sc.maps_changed && !t->proc->gone)
		return maps_changed(s, t->proc);
	return 0;
}

int iptb_service(struct rec_session *s, int timeout_ms)
{
	struct iptb *b = s->bk;
	size_t n = 0;
	int r;

	r = poll_set(b, s, &n);
	if (r)
		return r;
	r = b->k->poll(b->k->ctx, b->pfds, n, timeout_ms);
	if (r < 0 && r != -EINTR)
		return ps_err_detail(PS_ERR_IO, "poll: %s", strerror(-r));
	if (b->sigpipe[0] >= 0) {
		char drain[64];

		while (read(b->sigpipe[0], drain, sizeof(drain)) > 0)
			;
	}
	for (size_t i = 0; i < s->nthrs; i++) {
		r = service_thread(s, s->thrs[i]);
		if (r)
			return r;
	}
	/* Kernel events, and the slow calls the latency timer saw. */
	if (!s->stop_reason)
		rkev_poll(s);
	return 0;
}

/* ---- the struct rec_backend hooks shared by run and attach ---- */

static int iptb_snapshot(struct rec_session *s, const struct rec_thr *ct,
			 struct rec_pt_chunk **chunks, size_t *n)
{
	struct rec_thr *t = (struct rec_thr *)ct;
	struct iptb *b = s->bk;
	struct iptb_thr *x = thr_bk(t);
	uint8_t *buf;
	size_t len;
	int r;

	if (!b || !x || x->pt.fd < 0)
		return PS_ERR_NOT_FOUND;
	/* The AUX records so far tell whether the ring wrapped. */
	ptt_read_aux_records(&x->pt, NULL, NULL);
	r = ptt_snapshot(&b->tc, &x->pt, &buf, &len);
	return r ? r : rec_pt_one_chunk(t, buf, len, chunks, n);
}

static uint64_t iptb_now(struct rec_session *s, const struct rec_thr *t)
{
	(void)s;
	(void)t;
	return rec_clock_ns();
}

static void iptb_fill_info(struct rec_session *s, struct rec_info *i)
{
	struct iptb *b = s->bk;
	const struct perf_event_mmap_page *pg = NULL;

	if (!b)
		return;
	for (size_t k = 0; k < s->nthrs && !pg; k++) {
		struct iptb_thr *x = thr_bk(s->thrs[k]);

		if (x && x->pt.meta)
			pg = x->pt.meta;
	}
	if (b->have_clk)
		ptclk_repair(b->k, pg, &b->clk);
	i->emulated = 0;
	i->mtc_freq = (uint8_t)b->pc.mtc_period;
	i->nom_freq = (uint8_t)b->pmu.max_nonturbo_ratio;
	if (b->have_clk) {
		i->has_conv = 1;
		i->time_mult = b->clk.mult;
		i->time_shift = b->clk.shift;
		i->time_zero = b->clk.zero;
		i->offset_ns = 0;
	}
}

static size_t iptb_extra_code(struct rec_session *s,
			      const struct rec_raw_code **raws)
{
	struct iptb *b = s->bk;

	if (!b || !b->ktext.bytes)
		return 0;
	*raws = &b->ktext;
	return 1;
}

static void iptb_fini(struct rec_session *s)
{
	struct iptb *b = s->bk;

	for (size_t i = 0; i < s->nthrs; i++) {
		struct iptb_thr *x = thr_bk(s->thrs[i]);

		if (x && b)
			ptt_close(&b->tc, &x->pt);
		free(x);
		s->thrs[i]->bk = NULL;
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		struct iptb_proc *pb = s->procs[i]->bk;

		if (pb)
			free(pb->filter);
		free(pb);
		s->procs[i]->bk = NULL;
	}
	if (!b)
		return;
	free(b->pfds);
	free((void *)b->ktext.bytes);
	free(b);
	s->bk = NULL;
}

const struct rec_backend rec_backend_intel_pt = {
    .name = "intel-pt",
    .emulated = 0,
    .marks_at_step = 0,
    .hw_breakpoints = 0, /* in the PT group, armed here (iptb_arm) */
    /* Latency triggers are timed by the sidecar's uprobes, and kernel
     * events are on CLOCK_MONOTONIC like the trace: rkev_poll per turn. */
    .kernel_events = 1,
    .run = iptb_run,
    .attach = iptb_attach,
    .fini = iptb_fini,
    .snapshot = iptb_snapshot,
    .now = iptb_now,
    .fill_info = iptb_fill_info,
    .extra_code = iptb_extra_code,
};

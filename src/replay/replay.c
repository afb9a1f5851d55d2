/* SPDX-License-Identifier: MIT */
/* Replay: a recording → decoder session → trace writer (see replay.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/kevents/kevents.h"
#include "src/replay/crash_args.h"
#include "src/replay/epoch_clamp.h"
#include "src/replay/locate.h"
#include "src/recording/recfile.h"
#include "src/replay/replay.h"
#include "src/replay/sample_spans.h"

static const struct replay_options default_opts = {
    .inline_frames = 0,
    .span_info = 1,
};

static void warn(const struct replay_options *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const struct replay_options *o, const char *fmt, ...)
{
	char buf[768];
	va_list ap;

	if (!o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o->warn(o->warn_ctx, buf);
}

static void config_from_info(const struct rec_info *i,
			     const struct replay_options *o,
			     struct dec_config *c)
{
	memset(c, 0, sizeof(*c));
	/* Emulated packets come from libipt's encoder, not this CPU: no
	 * errata apply. */
	c->cpu.is_intel = i->cpu_vendor == REC_CPU_INTEL && !i->emulated;
	c->cpu.family = i->cpu_family;
	c->cpu.model = i->cpu_model;
	c->cpu.stepping = i->cpu_stepping;
	c->mtc_freq = i->mtc_freq;
	c->nom_freq = i->nom_freq;
	c->cpuid_0x15_eax = i->cpuid_0x15_eax;
	c->cpuid_0x15_ebx = i->cpuid_0x15_ebx;
	c->time.has_conv = i->has_conv;
	c->time.mult = i->time_mult;
	c->time.shift = i->time_shift;
	c->time.zero = i->time_zero;
	c->time.offset_ns = i->offset_ns;
	c->inline_frames = o->inline_frames;
	c->span_info = o->span_info;
	c->jobs = o->jobs;
	c->libipt_flow = o->libipt_flow;
}

static int write_meta(struct ps_writer *w, const struct rec_info *i)
{
	char cmd[2048], num[32];
	size_t off = 0;
	int r;

	cmd[0] = 0;
	for (size_t k = 0; k < i->argc && off < sizeof(cmd) - 1; k++) {
		int n = snprintf(cmd + off, sizeof(cmd) - off, "%s%s",
				 k ? " " : "", i->argv[k] ? i->argv[k] : "");

		if (n < 0)
			break;
		off += (size_t)n;
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)i->pid);
	r = w->ops->meta(w, "backend", i->backend ? i->backend : "");
	if (!r)
		r = w->ops->meta(w, "emulated", i->emulated ? "true" : "false");
	if (!r)
		r = w->ops->meta(w, "ptscope_version",
				 i->version ? i->version : "");
	if (!r && cmd[0])
		r = w->ops->meta(w, "command", cmd);
	if (!r)
		r = w->ops->meta(w, "snapshot_reason",
				 i->reason ? i->reason : "");
	if (!r)
		r = w->ops->meta(w, "pid", num);
	if (!r && i->hostname && i->hostname[0])
		r = w->ops->meta(w, "host", i->hostname);
	if (!r && i->kernel && i->kernel[0])
		r = w->ops->meta(w, "kernel", i->kernel);
	return r;
}

/* Add every module to the decoder; a missing file is told once. */
static int add_modules(struct dec_session *ds, const struct recording *in,
		       const struct replay_options *o)
{
	char path[4096];
	int r;

	for (size_t i = 0; i < in->nmods; i++) {
		const struct rec_module *m = &in->mods[i];
		int told = 0;

		if (!m->path || m->path[0] == '[' || !m->path[0])
			continue; /* [vdso] comes as raw code */
		r = replay_locate_module(m, NULL, path, sizeof(path));
		if (!r)
			r = dec_add_elf_epoch(ds, m->pid, m->epoch, path,
					      m->start, m->offset,
					      m->end - m->start);
		if (r == PS_ERR_NOMEM)
			return r;
		if (!r)
			continue;
		for (size_t k = 0; k < i && !told; k++)
			told = in->mods[k].path &&
			       !strcmp(in->mods[k].path, m->path);
		if (!told)
			warn(o, "%s", ps_err_message(r));
	}
	for (size_t i = 0; i < in->nraws; i++) {
		const struct rec_raw_code *rc = &in->raws[i];

		r = dec_add_raw_epoch(ds, rc->pid, rc->epoch,
				      rc->name ? rc->name : "[code]", rc->bytes,
				      rc->len, rc->vaddr);
		if (r == PS_ERR_NOMEM)
			return r;
		if (r)
			warn(o, "%s: %s", rc->name ? rc->name : "code",
			     ps_err_message(r));
	}
	return 0;
}

/* The PROCESS record of @pid's latest image, or NULL (older recordings
 * have none). */
static const struct rec_process *latest_image(const struct recording *in,
					      uint64_t pid)
{
	const struct rec_process *best = NULL;

	for (size_t i = 0; i < in->nprocs; i++)
		if (in->procs[i].pid == pid &&
		    (!best || in->procs[i].epoch >= best->epoch))
			best = &in->procs[i];
	return best;
}

/* Processes are named by their latest image (the exec marks tell the
 * earlier ones) and told their parent; a recording without PROCESS
 * records names a process by its main thread. */
static int write_names(struct ps_writer *w, const struct recording *in)
{
	int r;

	for (size_t i = 0; i < in->nprocs; i++) {
		const struct rec_process *p = &in->procs[i];

		if (latest_image(in, p->pid) != p)
			continue;
		r = w->ops->process(w, p->pid, p->name ? p->name : "");
		if (!r && p->ppid)
			r = ps_write_parent(w, p->pid, p->ppid);
		if (r)
			return r;
	}
	for (size_t i = 0; i < in->nthreads; i++) {
		const struct rec_thread *t = &in->threads[i];
		const char *comm = t->comm ? t->comm : "";

		if (t->pid == t->tid && !latest_image(in, t->pid)) {
			r = w->ops->process(w, t->pid, comm);
			if (r)
				return r;
		}
		r = w->ops->thread(w, t->pid, t->tid, comm);
		if (r)
			return r;
	}
	return 0;
}

static const char *mark_name(const struct rec_mark *m, char *buf, size_t size)
{
	switch (m->kind) {
	case REC_MARK_TRIGGER:
		return "trigger";
	case REC_MARK_SIGNAL:
		snprintf(buf, size, "%s", ps_signame((int)m->value));
		return buf;
	case REC_MARK_EXIT:
		return "exit";
	case REC_MARK_SNAPSHOT:
		return "snapshot";
	case REC_MARK_LOST:
		return "lost data";
	case REC_MARK_LATENCY:
		return "slow call";
	case REC_MARK_NOTE:
		return "note";
	case REC_MARK_EXEC:
		return "exec";
	}
	return "mark";
}

static int write_mark(struct ps_writer *w, const struct rec_mark *m,
		      const struct cargs *ca)
{
	struct ps_event ev;
	struct ps_arg args[5];
	const char *held, *fn = NULL, *fa;
	char name[32], symbol[256];
	const char *text = m->text ? m->text : "";
	const char *nl;
	size_t n = 0;

	memset(&ev, 0, sizeof(ev));
	memset(args, 0, sizeof(args));
	ev.type = PS_EV_INSTANT;
	ev.pid = m->pid;
	ev.tid = m->tid;
	ev.ts = m->time_ns;
	ev.category = "ptscope";
	ev.scope = PS_SCOPE_THREAD;
	ev.name = mark_name(m, name, sizeof(name));
	switch (m->kind) {
	case REC_MARK_TRIGGER:
		/* text: "SYMBOL" or "SYMBOL\nREASON" */
		nl = strchr(text, '\n');
		snprintf(symbol, sizeof(symbol), "%.*s",
			 (int)(nl ? (size_t)(nl - text) : strlen(text)), text);
		args[n++] = (struct ps_arg){
		    .name = "symbol", .type = PS_ARG_STRING, .v.s = symbol};
		if (nl)
			args[n++] = (struct ps_arg){.name = "reason",
						    .type = PS_ARG_STRING,
						    .v.s = nl + 1};
		args[n++] = (struct ps_arg){.name = "address",
					    .type = PS_ARG_POINTER,
					    .v.u = m->address};
		break;
	case REC_MARK_SIGNAL:
		args[n++] = (struct ps_arg){
		    .name = "signal", .type = PS_ARG_STRING, .v.s = text};
		args[n++] = (struct ps_arg){
		    .name = "ip", .type = PS_ARG_POINTER, .v.u = m->address};
		/* --args: the argument that held the fault address */
		fa = strstr(text, "fault address 0x");
		held = fa ? cargs_holding(ca, m->tid,
					  strtoull(fa + 14, NULL, 16), &fn)
			  : NULL;
		if (held) {
			args[n++] = (struct ps_arg){.name = "argument",
						    .type = PS_ARG_STRING,
						    .v.s = held};
			args[n++] = (struct ps_arg){.name = "argument_of",
						    .type = PS_ARG_STRING,
						    .v.s = fn};
		}
		break;
	case REC_MARK_EXIT:
		args[n++] = (struct ps_arg){
		    .name = "status", .type = PS_ARG_STRING, .v.s = text};
		break;
	case REC_MARK_EXEC:
		args[n++] = (struct ps_arg){
		    .name = "program", .type = PS_ARG_STRING, .v.s = text};
		args[n++] = (struct ps_arg){
		    .name = "epoch", .type = PS_ARG_UINT, .v.u = m->value};
		break;
	case REC_MARK_LATENCY:
		/* text: "SYMBOL\nSYMBOL took 2.1 ms (over 500 us)" */
		nl = strchr(text, '\n');
		snprintf(symbol, sizeof(symbol), "%.*s",
			 (int)(nl ? (size_t)(nl - text) : strlen(text)), text);
		args[n++] = (struct ps_arg){
		    .name = "symbol", .type = PS_ARG_STRING, .v.s = symbol};
		args[n++] = (struct ps_arg){.name = "duration_ns",
					    .type = PS_ARG_UINT,
					    .v.u = m->value};
		args[n++] = (struct ps_arg){.name = "reason",
					    .type = PS_ARG_STRING,
					    .v.s = nl ? nl + 1 : text};
		args[n++] = (struct ps_arg){.name = "address",
					    .type = PS_ARG_POINTER,
					    .v.u = m->address};
		break;
	default:
		args[n++] = (struct ps_arg){
		    .name = "text", .type = PS_ARG_STRING, .v.s = text};
		if (m->value)
			args[n++] = (struct ps_arg){.name = "value",
						    .type = PS_ARG_UINT,
						    .v.u = m->value};
		break;
	}
	ev.args = args;
	ev.nargs = n;
	return w->ops->event(w, &ev);
}

/* When process @pid's exec epoch @epoch ended in an exec: its time, else
 * UINT64_MAX. */
static uint64_t epoch_end(const struct recording *in, uint64_t pid,
			  uint32_t epoch)
{
	uint64_t t = UINT64_MAX;

	for (size_t i = 0; i < in->nmarks; i++) {
		const struct rec_mark *m = &in->marks[i];

		if (m->kind == REC_MARK_EXEC && m->pid == pid &&
		    m->value == (uint64_t)epoch + 1 && m->time_ns < t)
			t = m->time_ns;
	}
	return t;
}

/* The threads' streams, decoded together (dec_decode_streams: on -j
 * cores, the next ones while one is written). */
struct thread_decode {
	const struct rec_pt **pt; /* of each stream */
	struct epoch_clamp **ec;
	const struct replay_options *opts;
	struct replay_stats *st;
};

/* A stream is written: a trace that cannot be decoded is reported and
 * skipped, the others count. */
static int thread_done(void *ctx, size_t i, int err)
{
	struct thread_decode *t = ctx;

	if (err == PS_ERR_FORMAT || err == PS_ERR_DECODE) {
		warn(t->opts, "thread %llu: %s",
		     (unsigned long long)t->pt[i]->tid, ps_err_message(err));
		return 0;
	}
	if (!err)
		t->st->threads++;
	return err;
}

static int decode_threads(const struct recording *in, struct dec_session *ds,
			  struct ps_writer *dw,
			  const struct replay_options *opts,
			  struct replay_stats *st)
{
	struct thread_decode t = {NULL, NULL, opts, st};
	struct dec_stream *v;
	size_t n = 0;
	int r = 0;

	v = calloc(in->npts ? in->npts : 1, sizeof(*v));
	t.pt = calloc(in->npts ? in->npts : 1, sizeof(*t.pt));
	t.ec = calloc(in->npts ? in->npts : 1, sizeof(*t.ec));
	if (!v || !t.pt || !t.ec)
		r = PS_ERR_NOMEM;
	for (size_t i = 0; i < in->npts && !r; i++) {
		const struct rec_pt *pt = &in->pts[i];
		uint64_t end;

		if (!pt->len)
			continue;
		/* a thread's spans end where its image did (exec) */
		end = epoch_end(in, pt->pid, pt->epoch);
		if (end != UINT64_MAX) {
			r = epoch_clamp_new(dw, end, &t.ec[n]);
			if (r)
				break;
		}
		t.pt[n] = pt;
		v[n] = (struct dec_stream){
		    .pid = pt->pid,
		    .image = pt->epoch,
		    .tid = pt->tid,
		    .pt = pt->data,
		    .len = (size_t)pt->len,
		    .w = t.ec[n] ? epoch_clamp_writer(t.ec[n]) : dw};
		n++;
	}
	if (!r)
		r = dec_decode_streams(ds, v, n, thread_done, &t);
	for (size_t i = 0; t.ec && i < n; i++)
		epoch_clamp_free(t.ec[i]);
	free(t.ec);
	free(t.pt);
	free(v);
	return r;
}

int replay_input(const struct recording *in, struct ps_writer *w,
		 const struct replay_options *opts, struct replay_stats *st)
{
	const struct dec_stats *ds_stats;
	struct dec_session *ds = NULL;
	struct dec_config cfg;
	struct replay_stats local;
	struct krp_tap *tap = NULL;
	struct cargs *ca = NULL;
	struct ps_writer *dw = w;
	int r;

	if (!in || !in->info || !w)
		return ps_err_detail(PS_ERR_INVAL, "nothing to replay");
	if (!opts)
		opts = &default_opts;
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	config_from_info(in->info, opts, &cfg);
	r = dec_session_new(&cfg, &ds);
	if (r)
		return r;
	if (in->nsidecars) {
		/* The tap notes each thread's window for the kernel events. */
		r = krp_tap_new(w, &tap);
		if (r) {
			dec_session_free(ds);
			return r;
		}
		dw = krp_tap_writer(tap);
	}
	for (size_t i = 0; i < in->nmarks && !ca; i++)
		if (in->marks[i].kind == REC_MARK_SIGNAL &&
		    cargs_new(dw, &ca) == 0)
			dw = cargs_writer(ca);
	r = write_meta(w, in->info);
	if (!r)
		r = add_modules(ds, in, opts);
	if (!r)
		r = write_names(w, in);
	if (!r)
		r = decode_threads(in, ds, dw, opts, st);
	if (!r && (in->nsamples || in->info->sample_hz)) {
		struct sspan_opts so = {opts->span_info, opts->warn,
					opts->warn_ctx};
		struct sspan_stats ss = {0};

		r = sspan_replay(in, ds, dw, w, &so, &ss);
		st->threads += ss.threads;
		st->spans += ss.spans;
		st->samples += ss.samples;
		st->sample_hz = ss.sample_hz;
	}
	cargs_end(ca);
	for (size_t i = 0; i < in->nmarks && !r; i++) {
		r = write_mark(w, &in->marks[i], ca);
		if (!r)
			st->marks++;
	}
	krp_tap_end(tap);
	if (!r && in->nsidecars) {
		struct krp_counts kn = {0};

		r = krp_write(in, w, tap, &kn);
		st->kernel_events += kn.events;
		st->kernel_lost += kn.lost;
	}
	krp_tap_free(tap);
	cargs_free(ca);
	ds_stats = dec_get_stats(ds);
	if (ds_stats)
		st->decoder = *ds_stats;
	if (ds_stats && !in->info->sample_hz && !in->nsamples) {
		st->spans = ds_stats->spans;
		st->instructions = ds_stats->instructions;
		st->decode_errors = ds_stats->err_decode +
				    ds_stats->err_overflow +
				    ds_stats->err_nomap;
	}
	dec_session_free(ds);
	return r;
}

int replay_recording_file_stats(const char *path, struct ps_writer *w,
				const struct replay_options *opts,
				struct replay_stats *stats)
{
	struct recording in;
	struct recr *rr;
	int r;

	r = recr_open(path, &rr);
	if (r)
		return r;
	memset(&in, 0, sizeof(in));
	in.info = recr_info(rr);
	in.nmods = recr_modules(rr, &in.mods);
	in.nthreads = recr_threads(rr, &in.threads);
	in.npts = recr_pts(rr, &in.pts);
	in.nmarks = recr_marks(rr, &in.marks);
	in.nraws = recr_raw_codes(rr, &in.raws);
	in.nprocs = recr_processes(rr, &in.procs);
	in.nsidecars = recr_sidecars(rr, &in.sidecars);
	in.nsamples = recr_samples(rr, &in.samples);
	r = replay_input(&in, w, opts, stats);
	recr_close(rr);
	return r;
}

int replay_recording_file(const char *path, struct ps_writer *w,
			  const struct replay_options *opts)
{
	return replay_recording_file_stats(path, w, opts, NULL);
}

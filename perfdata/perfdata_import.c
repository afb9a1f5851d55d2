/* SPDX-License-Identifier: MIT */
/* Decoding a perf.data Intel PT recording (dec_decode_perfdata in
 * perfdata.h): the recording's configuration → dec_config, its mappings →
 * the process images (binaries found by path or build id), its AUX chunks
 * → one stream per thread or CPU (perfdata_streams.c), kernel parts masked
 * (kernelmask.h), its switch records → the threads of each CPU's
 * stream.  The decoder is driven through decoder/decoder.h alone. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "perfdata/kernelmask.h"
#include "perfdata/perfdata.h"
#include "ptscope/error.h"

struct imp_binary {
	char *path;  /* owned: the mapping's name */
	char *found; /* owned; NULL: not found (warned once) */
};

struct imp {
	const struct pd_recording *r;
	const struct dec_perfdata_opts *o;
	struct dec_session *s;
	struct ps_writer *w;
	int per_cpu, snapshot;
	struct pd_streams st;
	struct imp_binary *bins;
	size_t nbins;
	uint32_t *pids; /* the traced processes */
	size_t npids;
	size_t anon_exec;
	size_t gaps;	 /* AUX chunks that do not continue the one before */
	uint64_t masked; /* kernel packets masked (kernelmask.h) */
	struct dec_stream *dec; /* the threads' parts, while decoded */
	/* per code of the options: a stand-in's build id, whether it stood
	 * in for a mapping */
	struct pd_build_id *code_bid;
	uint8_t *code_used;
};

static void warnf(struct imp *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warnf(struct imp *m, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!m->o || !m->o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m->o->warn(m->o->warn_ctx, msg);
}

static const char *file_name(const struct imp *m)
{
	return m->o && m->o->name ? m->o->name : "perf.data";
}

/* Is there PT data at all?  Returns 0 or an error with the sentence. */
static int check_pt(const struct imp *m)
{
	const struct pd_recording *r = m->r;

	if (r->has_info && r->info_type != PD_AUXTRACE_INTEL_PT)
		return ps_err_detail(
		    PS_ERR_UNSUPPORTED,
		    "perf.data holds no Intel PT data: %s holds AUX area "
		    "trace of type %u (not Intel PT, e.g. Arm CoreSight or "
		    "SPE), which ptscope does not decode",
		    file_name(m), r->info_type);
	if (!r->has_info && !r->nchunks)
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "perf.data holds no Intel PT data: %s was recorded "
		    "without an intel_pt event (record with `perf record -e "
		    "intel_pt//u -- PROGRAM`)",
		    file_name(m));
	if (!r->nchunks)
		return ps_err_detail(
		    PS_ERR_NOT_FOUND,
		    "perf.data holds no Intel PT data: the intel_pt event of "
		    "%s recorded no trace bytes (nothing ran while it was "
		    "on, or in snapshot mode no snapshot was taken)",
		    file_name(m));
	return 0;
}

static int lowest_bit(uint64_t mask)
{
	return mask ? __builtin_ctzll(mask) : 0;
}

static uint64_t priv(const struct pd_recording *r, int i)
{
	return (size_t)i < r->npriv ? r->priv[i] : 0;
}

/* What the caller left unset comes from the recording. */
static void make_config(struct imp *m, struct dec_config *cfg)
{
	const struct pd_recording *r = m->r;
	const struct pd_attr *pt = pd_pt_attr(r);
	unsigned fam, model, step;
	char vendor[32];
	int cap;

	if (!cfg->time.has_conv) {
		int tc = r->has_time_conv;

		cap = tc && r->tc_cap_zero >= 0
			  ? r->tc_cap_zero
			  : (int)priv(r, PD_PT_CAP_USER_TIME_ZERO);
		if (cap || (tc && r->tc_cap_zero < 0 &&
			    r->npriv <= PD_PT_CAP_USER_TIME_ZERO)) {
			cfg->time.has_conv = 1;
			cfg->time.shift =
			    (uint16_t)(tc ? r->tc_shift
					  : priv(r, PD_PT_TIME_SHIFT));
			cfg->time.mult =
			    (uint32_t)(tc ? r->tc_mult
					  : priv(r, PD_PT_TIME_MULT));
			cfg->time.zero =
			    tc ? r->tc_zero : priv(r, PD_PT_TIME_ZERO);
		} else {
			warnf(m,
			      "%s has no TSC conversion (the kernel did "
			      "not publish time_zero): times in the trace "
			      "are raw TSC ticks, not perf time",
			      file_name(m));
		}
	}
	if (!cfg->nom_freq)
		cfg->nom_freq = (uint8_t)priv(r, PD_PT_MAX_NONTURBO_RATIO);
	if (!cfg->cpuid_0x15_eax && !cfg->cpuid_0x15_ebx) {
		cfg->cpuid_0x15_eax = (uint32_t)priv(r, PD_PT_TSC_CTC_D);
		cfg->cpuid_0x15_ebx = (uint32_t)priv(r, PD_PT_TSC_CTC_N);
	}
	if (pt && !cfg->mtc_freq && (pt->config & priv(r, PD_PT_MTC_BIT))) {
		uint64_t bits = priv(r, PD_PT_MTC_FREQ_BITS);

		cfg->mtc_freq =
		    (uint8_t)((pt->config & bits) >> lowest_bit(bits));
	}
	if (pt && priv(r, PD_PT_TSC_BIT) &&
	    !(pt->config & priv(r, PD_PT_TSC_BIT)))
		warnf(m,
		      "the Intel PT event of %s ran with tsc=0: the trace "
		      "has no timestamps, so spans are placed by order "
		      "only",
		      file_name(m));
	if (!cfg->cpu.is_intel &&
	    sscanf(r->cpuid, "%31[^,],%u,%u,%u", vendor, &fam, &model, &step) ==
		4 &&
	    !strcmp(vendor, "GenuineIntel")) {
		cfg->cpu.is_intel = 1;
		cfg->cpu.family = (uint16_t)fam;
		cfg->cpu.model = (uint8_t)model;
		cfg->cpu.stepping = (uint8_t)step;
	}
	if (!cfg->cpu.is_intel)
		warnf(m,
		      "%s does not say which CPU it was recorded on (no "
		      "CPUID header): give it with --cpu FAMILY/MODEL[/"
		      "STEPPING] for libipt's errata workarounds",
		      file_name(m));
}

/* Kernel code is never decoded (no kernel image is read), so when the
 * event traced it, the streams are made user-only (kernelmask.h): the
 * user code after a kernel entry decodes instead of being lost until the
 * next PSB. */
static int mask_kernel(struct imp *m)
{
	const struct pd_attr *pt = pd_pt_attr(m->r);

	if (pt && (pt->flags & PD_ATTR_EXCLUDE_KERNEL))
		return 0;
	for (size_t i = 0; i < m->st.n; i++)
		for (size_t j = 0; j < m->st.v[i].nseg; j++) {
			int n = km_mask_kernel(m->st.v[i].seg[j].data,
					       m->st.v[i].seg[j].len);

			if (n < 0)
				return n;
			m->masked += (uint64_t)n;
		}
	return 0;
}

/* ---- processes and their code ---- */

static int pid_add(struct imp *m, uint32_t pid)
{
	uint32_t *v;

	if (!pid || pid == UINT32_MAX)
		return 0;
	for (size_t i = 0; i < m->npids; i++)
		if (m->pids[i] == pid)
			return 0;
	v = realloc(m->pids, (m->npids + 1) * sizeof(*v));
	if (!v)
		return PS_ERR_NOMEM;
	m->pids = v;
	m->pids[m->npids++] = pid;
	return 0;
}

/* The processes whose trace is decoded: per thread, those of the traced
 * threads; per CPU, those tracing started in or with code mapped (the
 * switch records also name every other task that used the CPUs). */
static int find_pids(struct imp *m)
{
	const struct pd_recording *r = m->r;
	uint32_t *cand = NULL;
	uint8_t *ran = NULL;
	size_t ncand = 0;
	int err = 0;

	if (!m->per_cpu) {
		for (size_t i = 0; i < m->st.n && !err; i++)
			err = pid_add(m, pd_tid_pid(r, m->st.v[i].key));
	} else {
		/* the processes with code mapped that a switch names */
		for (size_t j = 0; j < r->nmmaps && !err; j++)
			if (!r->mmaps[j].kernel)
				err = pid_add(m, r->mmaps[j].pid);
		cand = m->pids;
		ncand = m->npids;
		m->pids = NULL;
		m->npids = 0;
		ran = calloc(ncand ? ncand : 1, 1);
		if (!err && !ran)
			err = PS_ERR_NOMEM;
		for (size_t i = 0; i < r->nswitches && !err; i++)
			for (size_t k = 0; k < ncand; k++)
				if (cand[k] == r->switches[i].sw.pid)
					ran[k] = 1;
		for (size_t k = 0; k < ncand && !err; k++)
			if (ran[k])
				err = pid_add(m, cand[k]);
		free(cand);
		free(ran);
	}
	if (err || !m->o || !m->o->only_pid)
		return err;
	for (size_t i = 0; i < m->npids; i++)
		if (m->pids[i] == m->o->only_pid) {
			m->pids[0] = m->pids[i];
			m->npids = 1;
			return 0;
		}
	return ps_err_detail(PS_ERR_NOT_FOUND,
			     "process %" PRIu64 " has no Intel PT trace in %s "
			     "(%zu traced process%s, the first %u): give one "
			     "of those to --pid, or leave --pid out",
			     m->o->only_pid, file_name(m), m->npids,
			     m->npids == 1 ? "" : "es",
			     m->npids ? m->pids[0] : 0);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The stand-in given for a mapping of @path with build id @bid (NULL:
 * unknown): one of the same file name or build id.  Its index, or -1. */
static int stand_in(struct imp *m, const char *path,
		    const struct pd_build_id *bid)
{
	for (size_t i = 0; m->o && i < m->o->ncode; i++) {
		const struct dec_perfdata_code *c = &m->o->code[i];

		if (!c->stand_in)
			continue;
		if (!strcmp(base_name(c->path), base_name(path)) ||
		    (bid && pd_build_id_equal(bid, &m->code_bid[i]))) {
			m->code_used[i] = 1;
			return (int)i;
		}
	}
	return -1;
}

/* The file to read @mp's code from (NULL: none; warned once). */
static const char *binary_for(struct imp *m, const struct pd_mmap *mp)
{
	const struct pd_build_id *bid = mp->bid.size ? &mp->bid : NULL;
	struct imp_binary *b;
	int err, k;

	for (size_t i = 0; i < m->nbins; i++)
		if (!strcmp(m->bins[i].path, mp->path))
			return m->bins[i].found;
	b = realloc(m->bins, (m->nbins + 1) * sizeof(*b));
	if (!b)
		return NULL;
	m->bins = b;
	b = &b[m->nbins];
	b->path = strdup(mp->path);
	if (!b->path)
		return NULL;
	m->nbins++;
	if (!bid)
		bid = pd_build_ids_find(&m->r->build_ids, mp->path);
	k = stand_in(m, mp->path, bid);
	if (k >= 0) {
		const char *given = m->o->code[k].path;

		if (bid && bid->size &&
		    !pd_build_id_equal(bid, &m->code_bid[k])) {
			char hex[2 * PD_BUILD_ID_MAX + 1];

			pd_build_id_hex(bid, hex);
			warnf(
			    m,
			    "%s is not the build of %s that was recorded "
			    "(build id %s): its code is decoded all the same, "
			    "as given, and may not be what ran",
			    given, mp->path, hex);
		}
		b->found = strdup(given);
		return b->found;
	}
	err = pd_find_binary(mp->path, bid, &b->found);
	if (err < 0)
		warnf(m, "%s", ps_err_message(err));
	return b->found;
}

static int is_file_mapping(const char *path)
{
	return path[0] == '/' && strncmp(path, "//anon", 6) &&
	       strncmp(path, "/memfd:", 7) && !strstr(path, " (deleted)");
}

/* Did @mp come before @exec?  By time when both have one (records of
 * different CPUs' buffers are not in time order in the file), else by
 * file order. */
static int before(const struct pd_mmap *mp, const struct pd_comm *exec)
{
	if (!exec)
		return 0;
	if (mp->time && exec->time)
		return mp->time < exec->time;
	return mp->seq < exec->seq;
}

/* The code given at an address, into @pid's image after its own
 * mappings: it takes the place of what it overlaps. */
static int add_given_code(struct imp *m, uint32_t pid)
{
	for (size_t i = 0; m->o && i < m->o->ncode; i++) {
		const struct dec_perfdata_code *c = &m->o->code[i];
		char why[512];
		int err;

		if (c->stand_in)
			continue;
		err = c->bytes ? dec_add_raw(m->s, pid, c->path, c->bytes,
					     c->len, c->addr)
			       : dec_add_elf(m->s, pid, c->path, c->addr, 0, 0);
		if (err == PS_ERR_NOMEM)
			return err;
		if (err < 0) {
			snprintf(why, sizeof(why), "%s", ps_err_message(err));
			return ps_err_detail(
			    err, "%s cannot be mapped at 0x%" PRIx64 ": %s",
			    c->path, c->addr, why);
		}
	}
	return 0;
}

/* The stand-ins' build ids, each checked to be an ELF file. */
static int read_stand_ins(struct imp *m)
{
	size_t n = m->o ? m->o->ncode : 0;

	m->code_bid = calloc(n ? n : 1, sizeof(*m->code_bid));
	m->code_used = calloc(n ? n : 1, 1);
	if (!m->code_bid || !m->code_used)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct dec_perfdata_code *c = &m->o->code[i];
		char why[512];
		int err;

		if (!c->stand_in)
			continue;
		err = pd_file_build_id(c->path, &m->code_bid[i]);
		if (err == PS_ERR_NOMEM)
			return err;
		if (err < 0) {
			snprintf(why, sizeof(why), "%s", ps_err_message(err));
			return ps_err_detail(err,
					     "%s cannot stand in for a binary "
					     "of the recording: %s",
					     c->path, why);
		}
	}
	return 0;
}

/* Map into @pid's image what it mapped after its last exec. */
static int add_images(struct imp *m, uint32_t pid)
{
	const struct pd_recording *r = m->r;
	const struct pd_comm *exec = NULL;
	int err;

	/* known to the decoder even when none of its binaries is found */
	err = dec_add_process(m->s, pid);
	if (err < 0)
		return err;
	for (size_t i = 0; i < r->ncomms; i++)
		if (r->comms[i].pid == pid && r->comms[i].exec &&
		    (!exec || r->comms[i].time >= exec->time))
			exec = &r->comms[i];
	for (size_t i = 0; i < r->nmmaps; i++) {
		const struct pd_mmap *mp = &r->mmaps[i];
		const char *file;

		if (mp->kernel || mp->pid != pid || before(mp, exec))
			continue;
		if (!is_file_mapping(mp->path) && strcmp(mp->path, "[vdso]")) {
			m->anon_exec += mp->path[0] != '[';
			continue;
		}
		file = binary_for(m, mp);
		if (!file)
			continue;
		err = dec_add_elf_as(m->s, pid, file, base_name(mp->path),
				     mp->start, mp->pgoff, mp->len);
		if (err == PS_ERR_NOMEM)
			return err;
		if (err < 0)
			warnf(m,
			      "%s mapped at 0x%" PRIx64 " in process %u is "
			      "not decoded: %s",
			      file, mp->start, pid, ps_err_message(err));
	}
	return add_given_code(m, pid);
}

static const char *comm_of(const struct pd_recording *r, uint32_t tid)
{
	const char *name = NULL;

	for (size_t i = 0; i < r->ncomms; i++)
		if (r->comms[i].tid == tid)
			name = r->comms[i].name;
	return name;
}

static int name_tasks(struct imp *m)
{
	const struct pd_recording *r = m->r;
	int err = 0;

	for (size_t i = 0; i < m->npids && !err; i++) {
		const char *name = comm_of(r, m->pids[i]);

		if (name)
			err = m->w->ops->process(m->w, m->pids[i], name);
		for (size_t j = 0; j < r->ntasks && !err; j++) {
			if (r->tasks[j].pid != m->pids[i])
				continue;
			name = comm_of(r, r->tasks[j].tid);
			if (name)
				err = m->w->ops->thread(m->w, m->pids[i],
							r->tasks[j].tid, name);
		}
	}
	return err;
}

/* ---- decoding ---- */

/* A thread's part is written: one with no PSB is reported and skipped. */
static int thread_done(void *ctx, size_t i, int err)
{
	struct imp *m = ctx;

	if (err == PS_ERR_FORMAT) {
		warnf(m,
		      "%zu bytes of thread %" PRIu64 "'s trace hold no PSB "
		      "packet: nothing in them is decoded",
		      m->dec[i].len, m->dec[i].tid);
		return 0;
	}
	return err < 0 ? err : 0;
}

/* Every thread's parts, decoded together (dec_decode_streams: on -j
 * cores, the next ones while one is written). */
static int decode_threads(struct imp *m)
{
	size_t n = 0, cap = 0;
	int err;

	for (size_t i = 0; i < m->st.n; i++)
		cap += m->st.v[i].nseg;
	m->dec = calloc(cap ? cap : 1, sizeof(*m->dec));
	if (!m->dec)
		return PS_ERR_NOMEM;
	for (size_t i = 0; i < m->st.n; i++) {
		const struct pd_stream *st = &m->st.v[i];
		uint32_t pid = pd_tid_pid(m->r, st->key);

		if (m->o && m->o->only_pid && pid != m->o->only_pid)
			continue;
		for (size_t j = 0; j < st->nseg; j++)
			m->dec[n++] = (struct dec_stream){.pid = pid,
							  .tid = st->key,
							  .pt = st->seg[j].data,
							  .len = st->seg[j].len,
							  .w = m->w};
	}
	err = dec_decode_streams(m->s, m->dec, n, thread_done, m);
	free(m->dec);
	m->dec = NULL;
	return err;
}

static int cmp_switch(const void *a, const void *b)
{
	const struct dec_switch *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/* Every CPU's segments with that CPU's switches, as seen by process
 * @pid: other processes' records keep their place (they end @pid's
 * turn) but name no process. */
static int cpu_traces(struct imp *m, uint32_t pid, struct dec_cpu_trace **out,
		      size_t *nout, struct dec_switch ***sws)
{
	const struct pd_recording *r = m->r;
	struct dec_cpu_trace *t;
	struct dec_switch **sw;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < m->st.n; i++)
		n += m->st.v[i].nseg;
	t = calloc(n ? n : 1, sizeof(*t));
	sw = calloc(m->st.n ? m->st.n : 1, sizeof(*sw));
	if (!t || !sw) {
		free(t);
		free(sw);
		return PS_ERR_NOMEM;
	}
	*sws = sw;
	*out = t;
	for (size_t i = 0; i < m->st.n; i++) {
		const struct pd_stream *st = &m->st.v[i];
		size_t nsw = 0;

		sw[i] =
		    malloc((r->nswitches ? r->nswitches : 1) * sizeof(**sw));
		if (!sw[i])
			return PS_ERR_NOMEM;
		for (size_t j = 0; j < r->nswitches; j++) {
			if (r->switches[j].cpu != st->key)
				continue;
			sw[i][nsw] = r->switches[j].sw;
			if (sw[i][nsw].pid != pid)
				sw[i][nsw].pid = UINT64_MAX;
			nsw++;
		}
		if (nsw > 1)
			qsort(sw[i], nsw, sizeof(**sw), cmp_switch);
		for (size_t j = 0; j < st->nseg; j++)
			t[k++] = (struct dec_cpu_trace){.cpu = (int)st->key,
							.pt = st->seg[j].data,
							.len = st->seg[j].len,
							.sw = sw[i],
							.nsw = nsw};
	}
	*nout = k;
	return 0;
}

static int decode_cpus(struct imp *m)
{
	for (size_t i = 0; i < m->npids; i++) {
		struct dec_cpu_trace *t = NULL;
		struct dec_switch **sw = NULL;
		size_t n = 0;
		int err;

		err = cpu_traces(m, m->pids[i], &t, &n, &sw);
		if (!err)
			err = dec_decode_cpus(m->s, t, n, m->w);
		for (size_t j = 0; sw && j < m->st.n; j++)
			free(sw[j]);
		free(sw);
		free(t);
		if (err == PS_ERR_FORMAT) {
			warnf(m,
			      "none of the per-CPU traces of %s holds a "
			      "PSB packet: nothing is decoded",
			      file_name(m));
			return 0;
		}
		if (err == PS_ERR_NOT_FOUND) {
			warnf(m,
			      "process %u never ran on a traced CPU per "
			      "the switch records: nothing of it is "
			      "decoded",
			      m->pids[i]);
			continue;
		}
		if (err < 0)
			return err;
	}
	return 0;
}

static void final_warnings(struct imp *m)
{
	const struct pd_recording *r = m->r;
	if (m->masked)
		warnf(m,
		      "%s traced kernel code too, which ptscope does not "
		      "decode (no kernel image is read): time in the kernel "
		      "shows as [kernel] gaps in the user code; record with "
		      "intel_pt//u to trace user space only",
		      file_name(m));
	if (m->per_cpu && !r->nswitch_records)
		warnf(m,
		      "%s has per-CPU traces but no context switch records "
		      "(perf records them since Linux 4.3; older ones used "
		      "the sched_switch tracepoint, which ptscope does not "
		      "read): each CPU's trace goes to the thread that "
		      "tracing started in",
		      file_name(m));
	if (m->anon_exec)
		warnf(m,
		      "%zu executable mappings without a file (JIT code?) "
		      "are not decoded unless their code is given (ptscope "
		      "decode --raw FILE:ADDR)",
		      m->anon_exec);
	for (size_t i = 0; m->o && i < m->o->ncode; i++)
		if (m->o->code[i].stand_in && !m->code_used[i])
			warnf(m,
			      "%s stands in for nothing: %s maps no file of "
			      "that name or build id (give its address, "
			      "FILE:ADDR, to map it there)",
			      m->o->code[i].path, file_name(m));
	if (r->aux_truncated)
		warnf(m,
		      "the kernel dropped Intel PT data %" PRIu64 " times "
		      "(AUX buffer full): the trace has gaps there; "
		      "record with a bigger AUX buffer (perf record -m "
		      ",SIZE)",
		      r->aux_truncated);
	if (m->st.gaps)
		warnf(m,
		      "%zu Intel PT chunks of %s do not continue the one "
		      "before (%s): the trace has gaps there",
		      m->st.gaps, file_name(m),
		      m->snapshot ? "the AUX ring wrapped past the previous "
				    "snapshot; take snapshots more often or "
				    "use a bigger buffer"
				  : "data was lost between them");
	if (r->lost)
		warnf(m,
		      "%" PRIu64 " sideband records were lost: some "
		      "mappings or switches may be missing",
		      r->lost);
}

static void imp_free(struct imp *m)
{
	pd_streams_free(&m->st);
	for (size_t i = 0; i < m->nbins; i++) {
		free(m->bins[i].path);
		free(m->bins[i].found);
	}
	free(m->bins);
	free(m->pids);
	free(m->code_bid);
	free(m->code_used);
}

int dec_decode_perfdata(const struct dec_config *cfg_in, const uint8_t *buf,
			size_t len, const struct dec_perfdata_opts *o,
			struct ps_writer *w, struct dec_stats *stats)
{
	struct pd_recording r;
	struct dec_config cfg = {0};
	struct imp m = {.r = &r, .o = o, .w = w};
	int err;

	if (!buf || !w)
		return ps_err_detail(PS_ERR_INVAL, "dec_decode_perfdata: "
						   "data and writer are "
						   "required");
	if (cfg_in)
		cfg = *cfg_in;
	err = pd_read(buf, len, &r);
	if (err < 0)
		return err;
	err = check_pt(&m);
	if (err < 0)
		goto out;
	make_config(&m, &cfg);
	m.per_cpu = r.npriv > PD_PT_PER_CPU_MMAPS
			? !!r.priv[PD_PT_PER_CPU_MMAPS]
			: r.nchunks && r.chunks[0].aux.tid == UINT32_MAX;
	m.snapshot = !!priv(&r, PD_PT_SNAPSHOT_MODE);
	err = read_stand_ins(&m);
	if (!err)
		err = dec_session_new(&cfg, &m.s);
	if (!err)
		err = pd_streams_build(&r, m.per_cpu, m.snapshot, &m.st);
	if (!err)
		err = mask_kernel(&m);
	if (!err)
		err = find_pids(&m);
	for (size_t i = 0; i < m.npids && !err; i++)
		err = add_images(&m, m.pids[i]);
	if (!err)
		err = name_tasks(&m);
	if (!err)
		err = m.per_cpu ? decode_cpus(&m) : decode_threads(&m);
	if (!err)
		final_warnings(&m);
	if (m.s && stats)
		*stats = *dec_get_stats(m.s);
	dec_session_free(m.s);
out:
	imp_free(&m);
	pd_recording_free(&r);
	return err;
}

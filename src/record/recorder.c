/* SPDX-License-Identifier: MIT */
/* rec_run() and rec_attach() (recorder.h): choose the backend, set up the
 * core's session, register the trigger kinds and the kernel-event part
 * with it, hand it to the backend's control loop, and take it all down
 * again.  The only file that knows every part of the recorder.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/backend.h"
#include "src/record/core/core.h"
#include "src/record/core/crash_guard.h"
#include "src/record/kevents/kevents.h"
#include "src/record/ptrace/tracee.h"
#include "src/record/recorder.h"
#include "src/record/triggers/kinds.h"
#include "src/recording/recfile.h"

/* Latency first: its specs (NAME>DURATION) would also read as names. */
static const struct rec_trigger_kind *const trigger_kinds[] = {
    &rec_trigger_latency,
    &rec_trigger_breakpoint,
};

/* MemAvailable from /proc/meminfo in bytes, 0 when unknown. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* Every traced thread gets a buffer of the snapshot size; one that alone
 * takes more than half the free memory would push the machine (and the
 * target) toward the OOM killer once it fills.  Refused up front. */
static int check_snapshot_memory(uint64_t size)
{
	uint64_t avail = mem_available();

	if (!size || !avail || size <= avail / 2)
		return 0;
	return ps_err_detail(PS_ERR_LIMIT,
			     "a snapshot size of %llu MiB per thread is more "
			     "than half of the memory available (%llu MiB); "
			     "use a smaller --snapshot-size, e.g. 4M",
			     (unsigned long long)(size >> 20),
			     (unsigned long long)(avail >> 20));
}

/* Every process to attach to exists and may be traced.  The backend
 * checks again as it attaches; this is asked before anything else, the
 * kernel-event part's BPF programs above all (they take about half a
 * second to load here), so that a wrong pid is said at once, not after a
 * target that was about to end has gone. */
static int check_targets(const pid_t *pids, size_t n)
{
	int r = 0;

	for (size_t i = 0; i < n && !r; i++)
		r = trc_check_access(pids[i]);
	return r;
}

/* @pids and @npids: the processes to attach to (none for a command). */
static int session_open(struct rec_session *s, const struct rec_options *o,
			int attach, const pid_t *pids, size_t npids,
			struct rec_result *res)
{
	const struct rec_backend *be;
	const char *why = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	memset(res, 0, sizeof(*res));
	/* first: a wrong pid is the one sentence said, before any notice */
	r = check_targets(pids, npids);
	if (r)
		return r;
	r = rec_backend_select(o->backend, attach, &be, &why);
	if (r)
		return r;
	rec_session_init(s, o, be, res);
	if (why)
		rec_notice(s, "%s", why);
	if (be != &rec_backend_intel_pt &&
	    (o->kernel || o->filter || o->timer_resolution))
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "--kernel, --filter and --timer-resolution "
		    "need the intel-pt backend (this recording "
		    "uses %s)",
		    be->name);
	if (be != &rec_backend_sample && o->frequency)
		return ps_err_detail(PS_ERR_INVAL,
				     "--frequency needs the sample backend "
				     "(this recording uses %s): add "
				     "--backend=sample",
				     be->name);
	if (!be->emulated && o->args)
		return ps_err_detail(PS_ERR_INVAL,
				     "--args needs an emulated backend (qemu "
				     "or step; this recording uses %s): add "
				     "--backend=qemu or --backend=step",
				     be->name);
	r = check_snapshot_memory(o->snapshot_size);
	if (r)
		return r;
	cg_install();
	r = rec_triggers_init(s, trigger_kinds,
			      sizeof(trigger_kinds) / sizeof(trigger_kinds[0]));
	if (!r)
		r = rkev_open(s);
	if (r)
		return r;
	rec_session_start(s);
	return 0;
}

static void session_close(struct rec_session *s)
{
	cg_uninstall();
	rec_triggers_fini(s);
	rkev_close(s);
	if (s->be && s->be->fini)
		s->be->fini(s);
	rec_session_fini(s);
}

int rec_run(const struct rec_options *o, char *const argv[],
	    struct rec_result *res)
{
	char path[PATH_MAX];
	struct rec_session s;
	int r;

	/* first: a command that is not there is the one sentence said,
	 * before any notice (the backend runs it, and looks again) */
	memset(res, 0, sizeof(*res));
	r = rec_find_command(argv[0], path, sizeof(path));
	if (r)
		return r;
	r = session_open(&s, o, 0, NULL, 0, res);
	if (!r)
		r = s.be->run(&s, argv);
	rec_stop_flag = 0;
	session_close(&s);
	return r;
}

int rec_attach(const struct rec_options *o, const pid_t *pids, size_t n,
	       struct rec_result *res)
{
	struct rec_session s;
	int r;

	r = session_open(&s, o, 1, pids, n, res);
	if (!r && !s.be->attach)
		r = ps_err_detail(PS_ERR_INVAL,
				  "the %s backend cannot attach to a running "
				  "process; use --backend=step",
				  s.be->name);
	if (!r)
		r = s.be->attach(&s, pids, n);
	rec_stop_flag = 0;
	session_close(&s);
	return r;
}

int snapshot_write(const struct rec_snapshot *snap, const char *path)
{
	const struct recording *in = &snap->in;
	struct recw *w;
	int r;

	r = recw_open(path, &w);
	if (r)
		return r;
	r = recw_header(w, in->info);
	for (size_t i = 0; i < in->nmods && !r; i++)
		r = recw_module(w, &in->mods[i],
				snap->archive ? snap->archive[i] : NULL,
				snap->archive_len ? snap->archive_len[i] : 0);
	for (size_t i = 0; i < in->nthreads && !r; i++)
		r = recw_thread(w, in->threads[i].pid, in->threads[i].tid,
				in->threads[i].comm);
	for (size_t i = 0; i < in->nraws && !r; i++)
		r = recw_raw_code(w, &in->raws[i]);
	for (size_t i = 0; i < in->nprocs && !r; i++)
		r = recw_process(w, &in->procs[i]);
	for (size_t i = 0; i < in->npts && !r; i++)
		r = recw_pt(w, &in->pts[i]);
	for (size_t i = 0; i < in->nsamples && !r; i++)
		r = recw_samples(w, &in->samples[i]);
	for (size_t i = 0; i < in->nmarks && !r; i++)
		r = recw_mark(w, &in->marks[i]);
	for (size_t i = 0; i < in->nsidecars && !r; i++)
		r = recw_sidecar(w, in->sidecars[i].type, in->sidecars[i].bytes,
				 (size_t)in->sidecars[i].len);
	if (r) {
		recw_abort(w);
		return r;
	}
	return recw_finish(w);
}

int rec_numbered_path(const char *path, unsigned index, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(path, '.');
	int n;

	if (dot && (dot == path || (slash && dot < slash) || dot[-1] == '/'))
		dot = NULL;
	/* "trace.fxt.gz" numbers before ".fxt". */
	if (dot && !strcmp(dot, ".gz")) {
		const char *d2 = dot;

		while (d2 > path && d2[-1] != '.' && d2[-1] != '/')
			d2--;
		if (d2 > path + 1 && d2[-1] == '.' && d2[-2] != '/')
			dot = d2 - 1;
	}
	if (dot)
		n = snprintf(out, size, "%.*s.%u%s", (int)(dot - path), path,
			     index, dot);
	else
		n = snprintf(out, size, "%s.%u", path, index);
	if (n < 0 || (size_t)n >= size)
		return ps_err_detail(PS_ERR_LIMIT, "output path too long: %s",
				     path);
	return 0;
}

int rec_parse_size(const char *str, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!str || !*str || *str == '-')
		goto bad;
	v = strtoull(str, &end, 10);
	if (errno || end == str)
		goto bad;
	switch (*end) {
	case 0:
		break;
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		goto bad;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v == 0 || v > (16ull << 30))
		goto bad;
	*out = v;
	return 0;
bad:
	return ps_err_detail(PS_ERR_INVAL,
			     "bad size '%s': use a number of bytes with an "
			     "optional K, M or G suffix (e.g. 4M), up to 16G",
			     str ? str : "");
}

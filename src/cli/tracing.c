/* SPDX-License-Identifier: MIT */
/* Shared work of run/attach/record (see command.h). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/bpf/sidecar.h"
#include "src/cli/tracing.h"
#include "src/record/triggers/latency.h"
#include "src/cli/isolate.h"

static const char usage_run[] =
    "usage: ptscope run [OPTIONS] -- CMD [ARGS...]\n"
    "\n"
    "Run CMD, trace every thread, and write a trace of the last moments\n"
    "before a trigger hit, a crash, the exit, or Ctrl-C.\n";
static const char usage_attach[] =
    "usage: ptscope attach [OPTIONS] -p PID[,PID...]\n"
    "\n"
    "Trace every thread of running processes until a trigger hit, a\n"
    "crash, --duration or Ctrl-C; then detach (they keep running) and\n"
    "write a trace.\n";
static const char usage_record[] =
    "usage: ptscope record [OPTIONS] -o REC.ptsc (-- CMD [ARGS...] | -p PID)\n"
    "\n"
    "Like run/attach, but save a recording to decode later with\n"
    "`ptscope decode REC.ptsc -o trace.fxt` (here or on another machine,\n"
    "with --archive).\n";
static const char usage_options[] =
    "\n"
    "options:\n"
    "  -o, --output=FILE       output (default ptscope.fxt; ptscope.ptsc for\n"
    "                          record); format from the extension: .fxt,\n"
    "                          .pftrace, .json (.gz compresses)\n"
    "  -f, --format=FMT        fxt, perfetto or json, whatever the name\n"
    "  -t, --trigger=SPEC      snapshot when SPEC runs: a function name\n"
    "                          (NAME or NAME@MODULE), FILE:LINE, addr:0xADDR,\n"
    "                          or '.' for ptscope_trigger(); up to 4;\n"
    "                          'NAME>DURATION' (e.g. 'handle>200us'; ns, us,\n"
    "                          ms, s): when a call of NAME returns after\n"
    "                          running longer than DURATION\n"
    "  -m, --multi-snapshot[=N]  keep tracing, one snapshot per hit (at most\n"
    "                          N): trace.fxt -> trace.1.fxt, trace.2.fxt, ...\n"
    "  -s, --snapshot-size=SIZE  PT (or samples) kept per thread (default\n"
    "                          4M; K/M/G)\n"
    "  -b, --backend=NAME      auto (default: intel-pt if the CPU has it,\n"
    "                          else sample for attach and emulated for\n"
    "                          run), emulated (qemu for run when\n"
    "                          qemu-x86_64 is installed, else step), qemu,\n"
    "                          step, sample or intel-pt\n"
    "  -d, --duration=SECS     snapshot after SECS seconds of tracing\n"
    "  -p, --pid=PID[,PID...]  attach to these processes (attach, record)\n"
    "      --archive           record: copy the mapped binaries into the\n"
    "                          recording so it decodes anywhere\n"
    "      --inline            show inlined functions as nested spans\n"
    "      --trace-loader      run: trace the dynamic loader too (by\n"
    "                          default tracing starts at the program's\n"
    "                          entry point, its libraries loaded)\n"
    "      --no-follow         trace only the command (or the attached\n"
    "                          processes): the processes they start run\n"
    "                          untraced (by default every child, and every\n"
    "                          exec, is followed; docs/process-trees.md)\n"
    "qemu and step backends only:\n"
    "      --args[=raw]        record each call's arguments and return\n"
    "                          value (the main program's functions that\n"
    "                          DWARF describes; raw: the others' integer\n"
    "                          registers too; docs/args.md)\n"
    "sample backend only:\n"
    "  -F, --frequency=HZ      call-stack samples per second per thread\n"
    "                          (default 500, at most 100000)\n"
    "intel-pt backend only:\n"
    "      --timer-resolution=R  low (TSC only), normal (TSC+MTC, the\n"
    "                          default) or high (adds cycle-accurate CYC)\n"
    "      --kernel            trace kernel code too (needs root,\n"
    "                          CAP_PERFMON or perf_event_paranoid <= 1)\n"
    "      --filter=SPEC       trace only a file's code: a mapped file\n"
    "                          name (libfoo.so) or START/SIZE@FILE\n"
    "      --events=LIST       kernel events to merge (eBPF): sched,\n"
    "                          syscalls, signals, faults, block, proc or\n"
    "                          all (the default)\n"
    "      --no-events         no kernel events\n"
    "      --event=SPEC        also tracepoint:CATEGORY:NAME or\n"
    "                          kprobe:FUNCTION (repeatable, up to 16)\n"
    "  -q, --quiet             print only errors\n"
    "  -h, --help              this text\n";

const char *reccmd_usage(enum reccmd_mode mode)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf), "%s%s",
		 mode == RECCMD_RUN	 ? usage_run
		 : mode == RECCMD_ATTACH ? usage_attach
					 : usage_record,
		 usage_options);
	return buf;
}

enum {
	OPT_ARCHIVE = 256,
	OPT_TRUTH,
	OPT_INLINE,
	OPT_LOADER,
	OPT_NO_FOLLOW,
	OPT_TIMER,
	OPT_KERNEL,
	OPT_FILTER,
	OPT_EVENTS,
	OPT_NO_EVENTS,
	OPT_EVENT,
	OPT_ARGS
};

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"format", required_argument, NULL, 'f'},
    {"trigger", required_argument, NULL, 't'},
    {"multi-snapshot", optional_argument, NULL, 'm'},
    {"snapshot-size", required_argument, NULL, 's'},
    {"backend", required_argument, NULL, 'b'},
    {"frequency", required_argument, NULL, 'F'},
    {"duration", required_argument, NULL, 'd'},
    {"pid", required_argument, NULL, 'p'},
    {"archive", no_argument, NULL, OPT_ARCHIVE},
    {"inline", no_argument, NULL, OPT_INLINE},
    {"trace-loader", no_argument, NULL, OPT_LOADER},
    {"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
    {"timer-resolution", required_argument, NULL, OPT_TIMER},
    {"kernel", no_argument, NULL, OPT_KERNEL},
    {"filter", required_argument, NULL, OPT_FILTER},
    {"truth", required_argument, NULL, OPT_TRUTH},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"no-events", no_argument, NULL, OPT_NO_EVENTS},
    {"event", required_argument, NULL, OPT_EVENT},
    {"args", optional_argument, NULL, OPT_ARGS},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_pids(struct reccmd *c, const char *arg)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT_MAX ||
		    (*end && *end != ','))
			return ps_err_detail(PS_ERR_INVAL,
					     "bad pid list '%s': use -p PID or "
					     "-p PID,PID,...",
					     arg);
		if (c->npids == RECCMD_MAX_PIDS)
			return ps_err_detail(PS_ERR_LIMIT,
					     "more than %d pids given",
					     RECCMD_MAX_PIDS);
		c->pids[c->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	if (!c->npids)
		return ps_err_detail(PS_ERR_INVAL, "-p needs a pid");
	return 0;
}

static int parse_count(const char *arg, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v == 0 || v > 1000000 ||
	    arg[0] == '-')
		return ps_err_detail(PS_ERR_INVAL,
				     "bad --multi-snapshot count '%s': give a "
				     "number from 1 to 1000000",
				     arg);
	*out = (unsigned)v;
	return 0;
}

static int parse_frequency(const char *arg, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *arg == '-' ||
	    (*end && strcmp(end, "Hz") && strcmp(end, "hz")) || v == 0 ||
	    v > 100000)
		return ps_err_detail(PS_ERR_INVAL,
				     "bad --frequency '%s': use samples per "
				     "second from 1 to 100000, e.g. 1000",
				     arg);
	*out = (unsigned)v;
	return 0;
}

static int parse_seconds(const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > 1e7)
		return ps_err_detail(PS_ERR_INVAL,
				     "bad --duration '%s': give seconds, e.g. "
				     "2 or 0.5",
				     arg);
	*out = v;
	return 0;
}

/* The output's directory must exist before the target starts. */
static int check_output_dir(const char *path)
{
	char copy[PATH_MAX];
	struct stat st;
	const char *dir;

	if (!strcmp(path, "-"))
		return 0;
	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy))
		return ps_err_detail(PS_ERR_INVAL, "output path too long");
	dir = dirname(copy);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return ps_err_detail(PS_ERR_NOT_FOUND,
				     "output directory '%s' does not exist; "
				     "create it or choose another -o",
				     dir);
	if (access(dir, W_OK))
		return ps_err_detail(PS_ERR_PERM,
				     "cannot write in output directory '%s': "
				     "%s; choose another -o",
				     dir, strerror(errno));
	return 0;
}

int reccmd_parse(struct reccmd *c, enum reccmd_mode mode, int argc, char **argv)
{
	int opt, r;

	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->argc = argc;
	c->argv = argv;
	c->format = PS_FORMAT_AUTO;
	c->ro.events = SDC_F_ALL;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+o:f:t:m::s:b:F:d:p:qh", long_opts,
				  NULL)) != -1) {
		r = 0;
		switch (opt) {
		case 'o':
			c->output = optarg;
			break;
		case 'f':
			r = ps_format_from_name(optarg);
			if (r < 0 || r == PS_FORMAT_TEXT)
				return ps_err_detail(PS_ERR_INVAL,
						     "unknown format '%s': use "
						     "fxt, perfetto or json",
						     optarg);
			c->format = (enum ps_format)r;
			r = 0;
			break;
		case 't': {
			char *name = NULL;
			uint64_t ns;

			if (c->ntriggers == REC_MAX_TRIGGERS)
				return ps_err_detail(PS_ERR_LIMIT,
						     "at most %d -t triggers",
						     REC_MAX_TRIGGERS);
			/* A bad NAME>DURATION is told before anything runs. */
			r = rec_latency_parse(optarg, &name, &ns);
			free(name);
			if (r < 0)
				return r;
			r = 0;
			c->triggers[c->ntriggers++] = optarg;
			break;
		}
		case 'm':
			c->ro.multi_snapshot = 1000000;
			if (optarg)
				r = parse_count(optarg, &c->ro.multi_snapshot);
			break;
		case 's':
			r = rec_parse_size(optarg, &c->ro.snapshot_size);
			break;
		case 'b':
			c->ro.backend = optarg;
			break;
		case 'F':
			r = parse_frequency(optarg, &c->ro.frequency);
			break;
		case 'd':
			r = parse_seconds(optarg, &c->ro.duration);
			break;
		case 'p':
			if (mode == RECCMD_RUN)
				return ps_err_detail(
				    PS_ERR_INVAL, "run starts a command; use "
						  "'ptscope attach -p PID' "
						  "for a running process");
			r = parse_pids(c, optarg);
			break;
		case OPT_ARCHIVE:
			c->ro.archive = 1;
			break;
		case OPT_INLINE:
			c->inline_frames = 1;
			break;
		case OPT_LOADER:
			c->ro.trace_loader = 1;
			break;
		case OPT_NO_FOLLOW:
			c->ro.no_follow = 1;
			break;
		case OPT_ARGS:
			if (optarg && strcmp(optarg, "raw"))
				return ps_err_detail(
				    PS_ERR_INVAL,
				    "bad --args=%s: use --args or --args=raw",
				    optarg);
			c->ro.args = optarg ? 2 : 1;
			break;
		case OPT_TIMER:
			if (strcmp(optarg, "low") && strcmp(optarg, "normal") &&
			    strcmp(optarg, "high"))
				return ps_err_detail(
				    PS_ERR_INVAL,
				    "bad --timer-resolution '%s': use low, "
				    "normal or high",
				    optarg);
			c->ro.timer_resolution = optarg;
			break;
		case OPT_KERNEL:
			c->ro.kernel = 1;
			break;
		case OPT_FILTER:
			c->ro.filter = optarg;
			break;
		case OPT_TRUTH:
			c->truth_path = optarg;
			break;
		case OPT_EVENTS:
			r = sdc_parse_features(optarg, &c->ro.events);
			break;
		case OPT_NO_EVENTS:
			c->no_events = 1;
			break;
		case OPT_EVENT:
			if (c->nevent_specs == SDC_MAX_CUSTOM)
				return ps_err_detail(PS_ERR_LIMIT,
						     "at most %d --event given",
						     SDC_MAX_CUSTOM);
			r = sdc_check_custom(optarg);
			c->event_specs[c->nevent_specs++] = optarg;
			break;
		case 'q':
			c->quiet = 1;
			break;
		case 'h':
			c->help = 1;
			return 0;
		default:
			return ps_err_detail(PS_ERR_INVAL,
					     "unknown or incomplete option "
					     "'%s'; see 'ptscope %s --help'",
					     argv[optind - 1], argv[0]);
		}
		if (r)
			return r;
	}
	if (optind < argc)
		c->cmd = argv + optind;
	if (c->no_events) {
		c->ro.events = 0;
		c->nevent_specs = 0;
	}
	if (mode == RECCMD_ATTACH && c->cmd)
		return ps_err_detail(PS_ERR_INVAL,
				     "attach takes -p PID, not a command; use "
				     "'ptscope run -- CMD' to start one");
	if (c->cmd && c->npids)
		return ps_err_detail(PS_ERR_INVAL,
				     "give either -- CMD or -p PID, not both");
	if (!c->cmd && !c->npids)
		return ps_err_detail(PS_ERR_INVAL,
				     mode == RECCMD_ATTACH
					 ? "no process given: use -p PID"
					 : "no command given: use "
					   "'ptscope %s [OPTIONS] -- CMD'",
				     argv[0]);
	if (c->ro.archive && mode != RECCMD_RECORD)
		return ps_err_detail(PS_ERR_INVAL,
				     "--archive only applies to 'ptscope "
				     "record'");
	if (!c->output)
		c->output =
		    mode == RECCMD_RECORD ? "ptscope.ptsc" : "ptscope.fxt";
	if (mode == RECCMD_RECORD && c->format != PS_FORMAT_AUTO)
		return ps_err_detail(PS_ERR_INVAL,
				     "record writes a recording; give the "
				     "trace format to 'ptscope decode'");
	return check_output_dir(c->output);
}

static void cmd_notice(void *ctx, const char *msg)
{
	struct reccmd *c = ctx;

	if (c->on_notice)
		c->on_notice(c->ctx, msg);
}

static int write_trace(struct reccmd *c, const struct rec_snapshot *snap,
		       const char *path, struct reccmd_output *out)
{
	struct ps_writer *w;
	int r;

	r = ps_writer_open(path, c->format, &w);
	if (r)
		return r;
	r = replay_input(&snap->in, w, &c->rep, &out->stats);
	if (r) {
		ps_writer_abort(w);
		return r;
	}
	return ps_writer_finish(w);
}

struct snapshot_job {
	struct reccmd *c;
	const struct rec_snapshot *snap;
	const char *path;
	struct reccmd_output *out;
};

static int snapshot_job_run(void *ctx, struct replay_stats *stats)
{
	struct snapshot_job *j = ctx;
	int r;

	if (j->c->mode == RECCMD_RECORD)
		return snapshot_write(j->snap, j->path);
	r = write_trace(j->c, j->snap, j->path, j->out);
	*stats = j->out->stats;
	return r;
}

static int on_snapshot(void *ctx, const struct rec_snapshot *snap)
{
	struct reccmd *c = ctx;
	struct reccmd_output out;
	char path[PATH_MAX];
	int r;

	/* Every hit of --multi-snapshot is numbered; so is a crash (a
	 * child's crash snapshots like a hit and recording goes on). */
	if (c->ro.multi_snapshot && (!strcmp(snap->reason, "trigger") ||
				     !strcmp(snap->reason, "latency") ||
				     !strcmp(snap->reason, "signal"))) {
		r = rec_numbered_path(c->output, snap->index, path,
				      sizeof(path));
		if (r)
			return r;
	} else {
		snprintf(path, sizeof(path), "%s", c->output);
	}
	/* Attached as the process exited (a zombie, or it ended during the
	 * attach): an empty trace would only mislead. */
	if (!snap->in.nthreads && !snap->in.npts && !snap->in.nsamples)
		return ps_err_detail(PS_ERR_TARGET,
				     "the process exited before ptscope could "
				     "trace any of it; nothing was written");
	memset(&out, 0, sizeof(out));
	out.path = path;
	out.index = snap->index;
	out.reason = snap->reason;
	out.threads = snap->in.nthreads;
	for (size_t i = 0; i < snap->in.npts; i++)
		out.bytes += snap->in.pts[i].len;
	for (size_t i = 0; i < snap->in.nsamples; i++)
		out.bytes += snap->in.samples[i].len;
	out.sampled = snap->in.nsamples > 0 || snap->in.info->sample_hz;
	{
		/* Decoding and writing run in a child process, apart from
		 * the tracer that holds the target (isolate.h). */
		struct snapshot_job job = {c, snap, path, &out};

		r = iso_run(snapshot_job_run, &job, &out.stats);
	}
	if (r)
		return r;
	if (c->on_output)
		c->on_output(c->ctx, &out);
	return 0;
}

static void replay_warn(void *ctx, const char *msg)
{
	cmd_notice(ctx, msg);
}

int reccmd_execute(struct reccmd *c, struct rec_result *res)
{
	int r;

	if (c->truth_path) {
		c->truth = fopen(c->truth_path, "w");
		if (!c->truth)
			return ps_err_detail(PS_ERR_IO, "cannot create %s: %s",
					     c->truth_path, strerror(errno));
	}
	c->ro.triggers = c->triggers;
	c->ro.ntriggers = c->ntriggers;
	c->ro.event_specs = c->event_specs;
	c->ro.nevent_specs = c->nevent_specs;
	c->ro.truth = c->truth;
	c->ro.cmdline = (const char *const *)c->argv;
	c->ro.cmdline_n = (size_t)c->argc;
	c->ro.on_snapshot = on_snapshot;
	c->ro.notice = cmd_notice;
	c->ro.ctx = c;
	c->rep.inline_frames = c->inline_frames;
	c->rep.span_info = 1;
	c->rep.warn = replay_warn;
	c->rep.warn_ctx = c;
	if (c->cmd)
		r = rec_run(&c->ro, c->cmd, res);
	else
		r = rec_attach(&c->ro, c->pids, c->npids, res);
	if (c->truth) {
		if (fclose(c->truth) && !r)
			r = ps_err_detail(PS_ERR_IO, "writing %s failed",
					  c->truth_path);
		c->truth = NULL;
	}
	return r;
}

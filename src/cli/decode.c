/* SPDX-License-Identifier: MIT */
/* ptscope decode: a recording (.ptsc), a perf.data, or raw Intel PT
 * streams plus the code that ran → a trace.  This file holds the command
 * line, checked before anything is decoded, and the command's flow;
 * decode_input.c reads perf.data and raw streams.  The raw-stream options
 * follow libipt's ptxed where it has a spelling for them (--pt,
 * --elf FILE[:BASE], --raw, --cpu, --mtc-freq, --nom-freq,
 * --cpuid-0x15.eax/ebx). */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/decoder.h"
#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/cli/commands.h"
#include "src/cli/decode_input.h"
#include "src/cli/progress.h"
#include "src/replay/replay.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: ptscope decode RECORDING.ptsc -o TRACE [options]\n"
	    "       ptscope decode perf.data -o TRACE [options]   (perf "
	    "record -e intel_pt//;\n"
	    "                                      - reads a pipe-mode "
	    "perf.data from stdin)\n"
	    "       ptscope decode --pt FILE [--pt FILE ...] --elf FILE[:BASE] "
	    "... -o TRACE [options]\n"
	    "       ptscope decode BUNDLE.json -o TRACE [options]   (LLDB's "
	    "trace save)\n\n"
	    "Decode a saved recording, a perf.data, or raw Intel PT streams "
	    "with the binaries\nthat ran, into a call timeline for Perfetto.  "
	    "TRACE's extension picks the format\n(.fxt, .pftrace, .json) "
	    "unless --format is given.\n\n"
	    "raw streams (ptxed's spelling where it has one):\n"
	    "  --pt FILE[:FROM[-TO]]   a PT stream (AUX area bytes); repeat "
	    "for more threads/CPUs\n"
	    "  --cpu-id N              the preceding --pt is CPU N's stream "
	    "(needs --switches)\n"
	    "  --switches FILE         perf context switch records for the "
	    "preceding --pt\n"
	    "  --elf FILE[:BASE]       code: ELF file, lowest PT_LOAD at BASE "
	    "(default: link address)\n"
	    "  --raw FILE[:FROM[-TO]]:ADDR\n"
	    "                          code: raw bytes loaded at ADDR (vDSO, "
	    "memory dump); FROM-TO:\n"
	    "                          only those file offsets, as ptxed "
	    "takes them\n"
	    "                          (perf.data: --elf FILE stands in for "
	    "the binary of that\n"
	    "                          name or build id; FILE:BASE and --raw "
	    "add code to each process)\n"
	    "  --cpu F/M[/S] | none    CPU the trace came from (selects "
	    "errata)\n"
	    "  --mtc-freq N            IA32_RTIT_CTL.MTCFreq\n"
	    "  --nom-freq N            max non-turbo ratio\n"
	    "  --cpuid-0x15.eax N, --cpuid-0x15.ebx N, --cpuid-15 EAX,EBX\n"
	    "                          TSC/crystal clock ratio\n"
	    "  --tsc-conv MULT,SHIFT,ZERO\n"
	    "                          perf's TSC conversion (time_mult, "
	    "time_shift, time_zero)\n"
	    "  --pid N, --tid N        ids to show (per-CPU: the process "
	    "of the switches;\n"
	    "                          perf.data: the one process to "
	    "decode)\n"
	    "common:\n"
	    "  -o, --output FILE       where to write the trace\n"
	    "  -f, --format F          fxt, perfetto, json or text\n"
	    "      --inline            inlined functions (DWARF) as nested "
	    "spans\n"
	    "  -j, --jobs N            threads to decode with (default: the "
	    "cores this\n"
	    "                          process may run on, one for a trace "
	    "under 8 KB; -j1: one;\n"
	    "                          the trace is the same)\n"
	    "      --no-info           spans without module/address/"
	    "file:line args\n"
	    "      --flow-engine E     ptscope (default: its own, falling "
	    "back to libipt\n"
	    "                          where it must) or libipt (libipt's "
	    "block decoder\n"
	    "                          only); the trace is the same\n"
	    "      --stats             counts and throughput on stderr\n"
	    "  -q, --quiet             no progress line on a terminal\n"
	    "      --debug-dir DIR[:DIR...]\n"
	    "                          where stripped modules' debug files "
	    "are (searched\n"
	    "                          before /usr/lib/debug)\n"
	    "  -h, --help              this text\n");
}

enum {
	OPT_PT = 256,
	OPT_CPU_ID,
	OPT_SWITCHES,
	OPT_ELF,
	OPT_RAW,
	OPT_CPU,
	OPT_MTC,
	OPT_NOM,
	OPT_EAX,
	OPT_EBX,
	OPT_CPUID15,
	OPT_TSC,
	OPT_PID,
	OPT_TID,
	OPT_NOINFO,
	OPT_FLOW_ENGINE,
	OPT_INLINE,
	OPT_STATS,
	OPT_DEBUG_DIR
};

/* The cores this process may run on (sched_getaffinity), at least 1. */
static int cores_available(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "ptscope decode: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return -1;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

static int parse_num(const char *opt, const char *s, uint64_t max,
		     uint64_t *out)
{
	if (parse_u64(s, out) || *out > max) {
		fprintf(
		    stderr,
		    "ptscope decode: %s '%s' is not a number from 0 to %" PRIu64
		    ": give a decimal or 0x-hex number\n",
		    opt, s, max);
		return -1;
	}
	return 0;
}

/* "A,B[,C]" → numbers. */
static int parse_list(const char *opt, const char *s, uint64_t *v, int n)
{
	char buf[128], *p, *save = NULL;
	int i = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (p = strtok_r(buf, ",", &save); p && i < n;
	     p = strtok_r(NULL, ",", &save))
		if (parse_u64(p, &v[i++]))
			break;
	if (i != n || p) {
		fprintf(stderr,
			"ptscope decode: %s '%s' needs %d comma-separated "
			"numbers\n",
			opt, s, n);
		return -1;
	}
	return 0;
}

/* --raw's optional FROM[-TO] (file offsets, TO not included), the @n
 * bytes at @s: 1 if it reads as one, -1 if TO is not past FROM, else 0
 * (the ':' before it is then part of the path, as ptxed takes it). */
static int parse_range(const char *s, size_t n, uint64_t *from, uint64_t *size)
{
	char buf[64], *dash;
	uint64_t to;

	if (!n || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	dash = strchr(buf, '-');
	if (dash)
		*dash = '\0';
	if (parse_u64(buf, from))
		return 0;
	*size = 0;
	if (dash) {
		if (parse_u64(dash + 1, &to))
			return 0;
		if (to <= *from)
			return -1;
		*size = to - *from;
	}
	return 1;
}

/* The first @len bytes of @arg as a path that lives as long as the
 * process (the arguments of --pt, --elf and --raw, without what follows
 * the path), or NULL when it is too long. */
static const char *keep_path(const char *arg, size_t len)
{
	static char paths[2 * DECODE_MAX_INPUTS][4096];
	static int used;

	if (len >= sizeof(paths[0]) || used == 2 * DECODE_MAX_INPUTS)
		return NULL;
	memcpy(paths[used], arg, len);
	paths[used][len] = '\0';
	return paths[used++];
}

/* FILE[:FROM[-TO]] for --pt, as libipt's ptxed takes it: the range is what
 * follows the last ':' when it reads as one (paths may hold ':' too). */
static int parse_pt(const char *arg, struct decode_pt_input *in)
{
	const char *colon = strrchr(arg, ':');
	int k = colon ? parse_range(colon + 1, strlen(colon + 1), &in->from,
				    &in->size)
		      : 0;

	if (k < 0)
		return bad("--pt '%s': in FROM-TO, TO must be past FROM (file "
			   "offsets, TO not included)",
			   arg);
	if (!k) {
		in->from = in->size = 0;
		in->path = arg;
		return 0;
	}
	in->path = keep_path(arg, (size_t)(colon - arg));
	return in->path ? 0 : bad("'%s' is too long", arg);
}

/* FILE[:ADDR], and for --raw FILE[:FROM[-TO]]:ADDR as libipt's ptxed
 * takes it: the address is what follows the last ':' when it reads as a
 * number, the range what follows the ':' before it when it reads as one
 * (paths may hold ':' too). */
static int parse_code(const char *arg, int raw, struct decode_code_input *c)
{
	const char *colon = strrchr(arg, ':');
	uint64_t addr = 0;
	size_t len = strlen(arg);

	c->from = c->size = 0;
	if (colon && !parse_u64(colon + 1, &addr))
		len = (size_t)(colon - arg);
	else if (raw)
		return bad("--raw '%s' needs FILE:ADDR (or FILE:FROM-TO:ADDR, "
			   "file offsets), the address the bytes were loaded "
			   "at",
			   arg);
	if (raw && len) {
		const char *r = memrchr(arg, ':', len);
		int k = r ? parse_range(r + 1, (size_t)(arg + len - r - 1),
					&c->from, &c->size)
			  : 0;

		if (k < 0)
			return bad("--raw '%s': in FROM-TO, TO must be past "
				   "FROM (file offsets, TO not included)",
				   arg);
		if (k)
			len = (size_t)(r - arg);
	}
	c->path = keep_path(arg, len);
	c->addr = addr;
	c->has_addr = len < strlen(arg);
	c->raw = raw;
	return c->path ? 0 : bad("'%s' is too long", arg);
}

static int parse_cpu(const char *s, struct dec_cpu *cpu)
{
	unsigned f, m, st = 0;
	char extra;
	int n;

	memset(cpu, 0, sizeof(*cpu));
	if (!strcmp(s, "none"))
		return 0;
	n = sscanf(s, "%u/%u/%u%c", &f, &m, &st, &extra);
	if ((n != 2 && n != 3) || f > 0xffff || m > 0xff || st > 0xff)
		return bad("--cpu '%s' must be FAMILY/MODEL[/STEPPING] (e.g. "
			   "6/79/1, from /proc/cpuinfo of the traced machine) "
			   "or none",
			   s);
	cpu->is_intel = 1;
	cpu->family = (uint16_t)f;
	cpu->model = (uint8_t)m;
	cpu->stepping = (uint8_t)st;
	return 0;
}

/* Say which input cannot be read before anything is decoded. */
static int check_input(const char *what, const char *path)
{
	if (!path || !access(path, R_OK))
		return 0;
	fprintf(stderr,
		"ptscope decode: cannot read %s %s (%s): check the path\n",
		what, path, strerror(errno));
	return -1;
}

/* Below this many bytes of input the decode takes about a millisecond,
 * and what makes it faster on big inputs costs more than it saves: a
 * second decoding thread and the huge pages each decoding thread sets up
 * (on the test VM the whole command on the 5.7 KB and 4 KB LLDB streams
 * went from 5.2 and 5.0 ms to 4.4 and 4.3, medians of 60 runs). */
#define DECODE_SMALL_INPUT (8 * 1024)

/* The bytes the decode reads: the PT streams, or the recording (stdin:
 * unknown, taken as large). */
static uint64_t input_bytes(const struct decode_args *a)
{
	uint64_t n = 0;
	struct stat st;

	if (a->recording)
		return strcmp(a->recording, "-") && !stat(a->recording, &st)
			   ? (uint64_t)st.st_size
			   : UINT64_MAX;
	for (int i = 0; i < a->npt; i++) {
		if (stat(a->pt[i].path, &st))
			return UINT64_MAX;
		n += a->pt[i].size ? a->pt[i].size : (uint64_t)st.st_size;
	}
	return n;
}

static int parse_args(int argc, char **argv, struct decode_args *a)
{
	static const struct option opts[] = {
	    {"pt", required_argument, NULL, OPT_PT},
	    {"cpu-id", required_argument, NULL, OPT_CPU_ID},
	    {"switches", required_argument, NULL, OPT_SWITCHES},
	    {"elf", required_argument, NULL, OPT_ELF},
	    {"raw", required_argument, NULL, OPT_RAW},
	    {"cpu", required_argument, NULL, OPT_CPU},
	    {"mtc-freq", required_argument, NULL, OPT_MTC},
	    {"nom-freq", required_argument, NULL, OPT_NOM},
	    {"cpuid-0x15.eax", required_argument, NULL, OPT_EAX},
	    {"cpuid-0x15.ebx", required_argument, NULL, OPT_EBX},
	    {"cpuid-15", required_argument, NULL, OPT_CPUID15},
	    {"tsc-conv", required_argument, NULL, OPT_TSC},
	    {"pid", required_argument, NULL, OPT_PID},
	    {"tid", required_argument, NULL, OPT_TID},
	    {"no-info", no_argument, NULL, OPT_NOINFO},
	    {"flow-engine", required_argument, NULL, OPT_FLOW_ENGINE},
	    {"inline", no_argument, NULL, OPT_INLINE},
	    {"stats", no_argument, NULL, OPT_STATS},
	    {"stat", no_argument, NULL, OPT_STATS},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t v[3];
	int c, f, bundle = 0;

	a->cfg.span_info = 1;
	a->cfg.jobs = cores_available();
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:f:qhj:", opts, NULL)) != -1) {
		switch (c) {
		case OPT_PT:
			if (a->npt == DECODE_MAX_INPUTS)
				return bad("too many --pt (%s)", optarg);
			if (parse_pt(optarg, &a->pt[a->npt]))
				return -1;
			a->pt[a->npt++].cpu = -1;
			break;
		case OPT_CPU_ID:
		case OPT_SWITCHES:
			if (!a->npt)
				return bad("%s belongs to a --pt: put it after "
					   "the --pt it describes",
					   c == OPT_CPU_ID ? "--cpu-id"
							   : "--switches");
			if (c == OPT_SWITCHES) {
				a->pt[a->npt - 1].switches = optarg;
				break;
			}
			if (parse_num("--cpu-id", optarg, 0xffff, v))
				return -1;
			a->pt[a->npt - 1].cpu = (int)v[0];
			break;
		case OPT_ELF:
		case OPT_RAW:
			if (a->ncode == DECODE_MAX_INPUTS)
				return bad("too many --elf/--raw (%s)", optarg);
			if (parse_code(optarg, c == OPT_RAW,
				       &a->code[a->ncode]))
				return -1;
			a->ncode++;
			break;
		case OPT_CPU:
			if (parse_cpu(optarg, &a->cfg.cpu))
				return -1;
			a->cpu_given = 1;
			break;
		case OPT_MTC:
		case OPT_NOM:
			if (parse_num(c == OPT_MTC ? "--mtc-freq"
						   : "--nom-freq",
				      optarg, 0xff, v))
				return -1;
			if (c == OPT_MTC)
				a->cfg.mtc_freq = (uint8_t)v[0];
			else
				a->cfg.nom_freq = (uint8_t)v[0];
			break;
		case OPT_EAX:
		case OPT_EBX:
			if (parse_num(c == OPT_EAX ? "--cpuid-0x15.eax"
						   : "--cpuid-0x15.ebx",
				      optarg, UINT32_MAX, v))
				return -1;
			if (c == OPT_EAX)
				a->cfg.cpuid_0x15_eax = (uint32_t)v[0];
			else
				a->cfg.cpuid_0x15_ebx = (uint32_t)v[0];
			break;
		case OPT_CPUID15:
			if (parse_list("--cpuid-15", optarg, v, 2))
				return -1;
			if (v[0] > UINT32_MAX || v[1] > UINT32_MAX)
				return bad("--cpuid-15 '%s': values are 32-bit",
					   optarg);
			a->cfg.cpuid_0x15_eax = (uint32_t)v[0];
			a->cfg.cpuid_0x15_ebx = (uint32_t)v[1];
			break;
		case OPT_TSC:
			if (parse_list("--tsc-conv", optarg, v, 3))
				return -1;
			if (v[0] > UINT32_MAX || v[1] > 63)
				return bad(
				    "--tsc-conv '%s': MULT is 32-bit and "
				    "SHIFT below 64 (perf's time_mult, "
				    "time_shift)",
				    optarg);
			a->cfg.time.has_conv = 1;
			a->cfg.time.mult = (uint32_t)v[0];
			a->cfg.time.shift = (uint16_t)v[1];
			a->cfg.time.zero = v[2];
			break;
		case OPT_PID:
		case OPT_TID:
			if (parse_num(c == OPT_PID ? "--pid" : "--tid", optarg,
				      UINT32_MAX, v))
				return -1;
			if (c == OPT_PID) {
				a->pid = v[0];
				a->have_pid = 1;
			} else {
				a->tid = v[0];
				a->have_tid = 1;
			}
			break;
		case OPT_FLOW_ENGINE:
			if (!strcmp(optarg, "libipt"))
				a->cfg.libipt_flow = 1;
			else if (strcmp(optarg, "ptscope"))
				return bad("--flow-engine '%s': say ptscope "
					   "(the default) or libipt",
					   optarg);
			break;
		case OPT_NOINFO:
			a->cfg.span_info = 0;
			break;
		case OPT_INLINE:
			a->cfg.inline_frames = 1;
			break;
		case OPT_STATS:
			a->stats = 1;
			break;
		case 'j':
			if (parse_num("-j", optarg, 4096, v))
				return -1;
			a->cfg.jobs = v[0] ? (int)v[0] : 1;
			a->jobs_given = 1;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case OPT_DEBUG_DIR:
			if (dec_set_debug_dirs(optarg, 1) < 0)
				return bad("out of memory for --debug-dir %s",
					   optarg);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'f':
			f = ps_format_from_name(optarg);
			if (f < 0)
				return bad("--format '%s' is not one of fxt, "
					   "perfetto, json, text",
					   optarg);
			a->format = (enum ps_format)f;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		a->recording = argv[optind++];
	if (optind < argc)
		return bad("unexpected argument '%s': give one recording, or "
			   "raw streams with --pt",
			   argv[optind]);
	if (!a->recording && !a->npt) {
		usage(stderr);
		return bad("%s", "nothing to decode: give a recording file or "
				 "--pt streams");
	}
	a->perf_data = a->recording && cmd_decode_is_perf_data(a->recording);
	if (a->recording && strcmp(a->recording, "-") && !a->perf_data &&
	    cmd_decode_is_bundle(a->recording)) {
		int err;

		if (a->npt || a->have_pid || a->have_tid)
			return bad("'%s' is a trace bundle: it names its own "
				   "streams, processes and threads; leave out "
				   "--pt, --pid and --tid",
				   a->recording);
		err = cmd_decode_bundle(a->recording, a);
		if (err < 0) {
			fprintf(stderr, "ptscope decode: %s\n",
				ps_err_message(err));
			return -1;
		}
		a->recording = NULL;
		bundle = 1;
	}
	if (a->perf_data) {
		if (a->npt)
			return bad("'%s': a perf.data carries its own streams; "
				   "leave out --pt",
				   a->recording);
	} else if (a->recording && (a->npt || a->ncode)) {
		return bad("'%s': a recording carries its own streams and "
			   "code; leave out --pt/--elf/--raw",
			   a->recording);
	}
	if (!a->out)
		return bad("%s", "no output given: add -o trace.fxt (or "
				 ".pftrace, .json)");
	if (a->npt && !a->ncode && !bundle)
		return bad("%s", "no code given: add --elf FILE[:BASE] for "
				 "each binary that ran (and --raw for code "
				 "without a file)");
	if (a->recording && strcmp(a->recording, "-") &&
	    check_input("recording", a->recording))
		return -1;
	for (int i = 0; i < a->npt; i++)
		if (check_input(bundle ? "the bundle's stream" : "--pt",
				a->pt[i].path) ||
		    check_input(bundle ? "the bundle's switches" : "--switches",
				a->pt[i].switches))
			return -1;
	for (int i = 0; i < a->ncode; i++)
		if (check_input(a->code[i].raw ? "--raw" : "--elf",
				a->code[i].path))
			return -1;
	for (int i = 0; i < a->npt; i++)
		if (a->pt[i].cpu >= 0 && !a->pt[i].switches)
			return bad("--pt %s has --cpu-id but no --switches: "
				   "per-CPU streams need the context switch "
				   "records to be split into threads",
				   a->pt[i].path);
	a->small = input_bytes(a) < DECODE_SMALL_INPUT;
	if (a->small && !a->jobs_given)
		a->cfg.jobs = 1;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_stats(const struct dec_stats *st, double wall)
{
	double secs = st->seconds > 0 ? st->seconds : wall;

	fprintf(stderr,
		"decoded %" PRIu64 " bytes of PT: %" PRIu64
		" instructions (%" PRIu64 " calls, %" PRIu64
		" returns), %" PRIu64 " blocks, %" PRIu64 " branches, %" PRIu64
		" spans in %" PRIu64 " thread parts\n"
		"errors: %" PRIu64 " overflow, %" PRIu64
		" no memory mapped, %" PRIu64 " other decode, %" PRIu64
		" stale data at the end; %" PRIu64
		" events in no known thread\n"
		"flow engine: %" PRIu64 " streams by ptscope's, %" PRIu64
		" handed to libipt\n"
		"throughput: %.3g instructions/s, %.3g MB/s of PT "
		"(%.4f s decoding)\n",
		st->bytes, st->instructions, st->calls, st->returns, st->blocks,
		st->branches, st->spans, st->threads, st->err_overflow,
		st->err_nomap, st->err_decode, st->err_truncated, st->skipped,
		st->flow_fast, st->flow_fallbacks,
		secs > 0 ? st->instructions / secs : 0,
		secs > 0 ? st->bytes / 1e6 / secs : 0, secs);
	if (st->segments)
		fprintf(stderr,
			"parallel: %" PRIu64
			" segments of long streams decoded "
			"on threads of their own\n",
			st->segments);
	if (st->split_threads)
		fprintf(stderr,
			"parallel: %" PRIu64 " threads for %.3f s, their "
			"seconds summed: following flow %.3f s, joining "
			"(call stacks and writer) %.3f s, waiting %.3f s, "
			"cutting %.3f s, starting %.3f s\n",
			st->split_threads, st->split_seconds, st->split_flow,
			st->split_join, st->split_wait, st->split_plan,
			st->split_start);
}

int cmd_decode(int argc, char **argv)
{
	struct decode_args *a = calloc(1, sizeof(*a));
	struct dec_stats st = {0};
	uint64_t kevents = 0; /* kernel events of a recording */
	struct ps_writer *w = NULL;
	struct progress pw;
	double t0 = now_s();
	int err, rc = 1;

	if (!a) {
		fprintf(stderr, "ptscope decode: out of memory\n");
		return 1;
	}
	err = parse_args(argc, argv, a);
	if (err) {
		cmd_decode_args_release(a);
		free(a);
		return err > 0 ? 0 : 2;
	}
	if (a->small)
		dec_heap_off(); /* the decoding thread's too */
	else
		dec_heap_huge(); /* before the writer's tables are allocated */
	err = ps_writer_open(a->out, a->format, &w);
	if (err < 0) {
		fprintf(stderr, "ptscope decode: %s\n", ps_err_message(err));
		cmd_decode_args_release(a);
		free(a);
		return 1;
	}
	/* spans written so far, on a terminal, for a long decode */
	progress_init(&pw, "ptscope decode", w,
		      a->quiet || !strcmp(a->out, "-"));
	if (a->perf_data) {
		err = cmd_decode_perf_data(a, w, &st);
	} else if (a->recording) {
		struct replay_options ro = {.inline_frames =
						a->cfg.inline_frames,
					    .span_info = a->cfg.span_info,
					    .jobs = a->cfg.jobs,
					    .libipt_flow = a->cfg.libipt_flow,
					    .warn = cmd_decode_warn};
		struct replay_stats rs = {0};

		err = replay_recording_file_stats(
		    a->recording, progress_writer(&pw), &ro, &rs);
		st = rs.decoder;
		st.instructions = rs.instructions;
		st.spans = rs.spans;
		st.threads = rs.threads;
		kevents = rs.kernel_events;
	} else {
		err = w->ops->meta(w, "decoder", "ptscope decode (raw PT)");
		if (!err)
			err = cmd_decode_raw(a, progress_writer(&pw), &st);
	}
	progress_end(&pw);
	if (err < 0) {
		fprintf(stderr, "ptscope decode: %s\n", ps_err_message(err));
		ps_writer_abort(w);
		goto out;
	}
	err = ps_writer_finish(w);
	if (err < 0) {
		fprintf(stderr, "ptscope decode: %s\n", ps_err_message(err));
		goto out;
	}
	if (a->stats)
		print_stats(&st, now_s() - t0);
	if (st.err_nomap + st.err_decode + st.err_overflow)
		fprintf(stderr,
			"ptscope decode: %" PRIu64
			" decode errors; each is an instant in the trace where "
			"the timeline has a gap\n",
			st.err_nomap + st.err_decode + st.err_overflow);
	if (st.err_nomap + st.err_decode && a->npt && !a->cpu_given)
		fprintf(stderr,
			"ptscope decode: no --cpu was given, so libipt "
			"applied none of its errata workarounds; if the trace "
			"came from an Intel CPU, give its --cpu "
			"FAMILY/MODEL/STEPPING (some errata lose whole "
			"traces)\n");
	if (strcmp(a->out, "-") && kevents)
		fprintf(stderr,
			"%" PRIu64 " spans and %" PRIu64
			" kernel events written to %s; open it at "
			"https://ui.perfetto.dev (Open trace file)\n",
			st.spans, kevents, a->out);
	else if (strcmp(a->out, "-"))
		fprintf(stderr,
			"%" PRIu64 " spans written to %s; open it at "
			"https://ui.perfetto.dev (Open trace file)\n",
			st.spans, a->out);
	rc = 0;
out:
	cmd_decode_args_release(a);
	free(a);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* ptscope convert IN -o OUT [--format F]: read a trace in any format
 * ptscope knows and write it in another, through the same event stream
 * the decoder uses (reader → writer). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/cli/commands.h"
#include "src/cli/progress.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ptscope convert IN -o OUT [--format F]\n\n"
		   "Convert a trace to another format.  IN is a Chrome JSON, "
		   "Fuchsia (.fxt) or\nPerfetto (.pftrace) trace, gzipped or "
		   "not, told apart by its content.\nOUT's extension picks the "
		   "output format unless --format is given:\n"
		   ".fxt, .pftrace/.perfetto-trace/.pb, .json, .txt; a final "
		   ".gz compresses.\n\n"
		   "options:\n"
		   "  -o, --output FILE        where to write ('-': standard "
		   "output)\n"
		   "  -f, --format F           output format: fxt, perfetto, "
		   "json, text\n"
		   "  -i, --input-format F     read IN as F instead of "
		   "guessing\n"
		   "  -q, --quiet              no progress or summary line on "
		   "stderr\n"
		   "  -h, --help               this text\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A file's size for the summary ("" when unknown, e.g. stdout). */
static void file_size(const char *path, char *buf, size_t len)
{
	struct stat st;

	buf[0] = '\0';
	if (!strcmp(path, "-") || stat(path, &st))
		return;
	if (st.st_size < 10000)
		snprintf(buf, len, "%lld bytes", (long long)st.st_size);
	else if (st.st_size < 10000000)
		snprintf(buf, len, "%.1f kB", st.st_size / 1e3);
	else
		snprintf(buf, len, "%.1f MB", st.st_size / 1e6);
}

static int parse_format(const char *arg, enum ps_format *out)
{
	int f = ps_format_from_name(arg);

	if (f < 0) {
		fprintf(stderr, "ptscope convert: %s\n", ps_err_message(f));
		return -1;
	}
	*out = (enum ps_format)f;
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"input-format", required_argument, NULL, 'i'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	enum ps_format out_fmt = PS_FORMAT_AUTO, in_fmt = PS_FORMAT_AUTO;
	struct progress pw;
	struct ps_writer *w;
	const char *in = NULL, *out = NULL;
	char in_size[32], out_size[32];
	double t0, secs, mbps = 0;
	struct stat st;
	int c, err, quiet = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:f:i:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			if (parse_format(optarg, &out_fmt))
				return 2;
			break;
		case 'i':
			if (parse_format(optarg, &in_fmt))
				return 2;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc || !out) {
		fprintf(stderr, "ptscope convert: %s\n",
			optind >= argc	    ? "no input trace given"
			: optind + 1 < argc ? "give exactly one input trace"
					    : "no output given; add -o OUT");
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	t0 = now_s();
	err = ps_writer_open(out, out_fmt, &w);
	if (err) {
		fprintf(stderr, "ptscope convert: %s\n", ps_err_message(err));
		return 1;
	}
	/* no progress line when the trace itself goes to the terminal */
	progress_init(&pw, "ptscope convert", w, quiet || !strcmp(out, "-"));
	err = ps_read_trace_progress(in, in_fmt, &pw.base, progress_read, &pw);
	progress_end(&pw);
	if (err) {
		fprintf(stderr, "ptscope convert: %s\n", ps_err_message(err));
		ps_writer_abort(w);
		return 1;
	}
	err = ps_writer_finish(w);
	if (err) {
		fprintf(stderr, "ptscope convert: %s\n", ps_err_message(err));
		return 1;
	}
	secs = now_s() - t0;
	if (quiet)
		return 0;
	file_size(in, in_size, sizeof(in_size));
	file_size(out, out_size, sizeof(out_size));
	if (!stat(in, &st) && secs > 0)
		mbps = st.st_size / 1e6 / secs;
	fprintf(stderr,
		"ptscope convert: %s%s%s%s → %s%s%s%s: %llu events in %.2f s",
		in, *in_size ? " (" : "", in_size, *in_size ? ")" : "", out,
		*out_size ? " (" : "", out_size, *out_size ? ")" : "",
		(unsigned long long)pw.events, secs);
	if (mbps > 0)
		fprintf(stderr, ", %.1f MB/s", mbps);
	fprintf(stderr, "\n");
	return 0;
}

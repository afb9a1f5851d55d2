/* SPDX-License-Identifier: MIT */
/* ptscope dump [--slices] FILE: print a trace in ptscope's normalised
 * text form (src/output/text.h), the same whatever format FILE is in. */
#include <getopt.h>
#include <stdio.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/cli/commands.h"
#include "src/output/sink.h"
#include "src/output/text.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ptscope dump [--slices] FILE\n\n"
		   "Print a trace (Chrome JSON, .fxt or .pftrace, gzipped or "
		   "not) as text on\nstandard output.\n\n"
		   "options:\n"
		   "  -s, --slices             match begin/end pairs and print "
		   "every slice with\n"
		   "                           its depth and duration, sorted "
		   "by pid, tid, time\n"
		   "                           (to compare two traces by "
		   "meaning)\n"
		   "  -i, --input-format F     read FILE as F (fxt, perfetto, "
		   "json) instead of\n"
		   "                           guessing from its content\n"
		   "  -h, --help               this text\n");
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"slices", no_argument, NULL, 's'},
	    {"input-format", required_argument, NULL, 'i'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct text_options topt = {0};
	enum ps_format in_fmt = PS_FORMAT_AUTO;
	struct ps_writer *w;
	struct ps_sink *sink;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "si:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			topt.slices = 1;
			break;
		case 'i':
			err = ps_format_from_name(optarg);
			if (err < 0) {
				fprintf(stderr, "ptscope dump: %s\n",
					ps_err_message(err));
				return 2;
			}
			in_fmt = (enum ps_format)err;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "ptscope dump: %s\n",
			optind >= argc ? "no trace file given"
				       : "give exactly one trace file");
		usage(stderr);
		return 2;
	}
	err = ps_sink_open("-", 0, &sink);
	if (!err) {
		err = text_writer_new(sink, &topt, &w);
		if (err)
			ps_sink_abort(sink);
	}
	if (err) {
		fprintf(stderr, "ptscope dump: %s\n", ps_err_message(err));
		return 1;
	}
	err = ps_read_trace(argv[optind], in_fmt, w);
	if (err) {
		ps_writer_abort(w);
		fprintf(stderr, "ptscope dump: %s\n", ps_err_message(err));
		return 1;
	}
	err = ps_writer_finish(w);
	if (err) {
		fprintf(stderr, "ptscope dump: %s\n", ps_err_message(err));
		return 1;
	}
	return 0;
}

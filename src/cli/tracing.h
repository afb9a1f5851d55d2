/* SPDX-License-Identifier: MIT */
/* The options and the work shared by `ptscope run`, `attach` and `record`
 * (prefix reccmd_): parse the command line, run the recorder, and turn
 * each snapshot into a trace file (run/attach) or a recording (record).
 * The CLI files (src/cli/run.c, attach.c, record.c) only print.
 */
#ifndef PTSCOPE_RECORD_COMMAND_H
#define PTSCOPE_RECORD_COMMAND_H

#include <stdio.h>
#include <sys/types.h>

#include "ptscope/writer.h"
#include "src/record/recorder.h"
#include "src/replay/replay.h"

enum reccmd_mode {
	RECCMD_RUN,    /* -- CMD, decode into a trace */
	RECCMD_ATTACH, /* -p PID, decode into a trace */
	RECCMD_RECORD  /* -- CMD or -p PID, save a recording */
};

#define RECCMD_MAX_PIDS 64

/* What one snapshot produced. */
struct reccmd_output {
	const char *path;	   /* the file written */
	unsigned index;		   /* snapshot number, from 1 */
	const char *reason;	   /* why the snapshot was taken */
	struct replay_stats stats; /* run/attach: what the trace holds */
	uint64_t bytes;		   /* record: PT (or sample) bytes saved */
	size_t threads;		   /* threads in the snapshot */
	int sampled;		   /* record: call-stack samples, not PT */
};

struct reccmd {
	enum reccmd_mode mode;
	const char *output; /* -o; a default per mode */
	enum ps_format format;
	const char *triggers[REC_MAX_TRIGGERS];
	size_t ntriggers;
	pid_t pids[RECCMD_MAX_PIDS];
	size_t npids;
	char **cmd; /* after "--" (run, record) */
	int help;   /* -h: print reccmd_usage() and stop */
	int quiet;
	int inline_frames;
	const char *truth_path; /* --truth (tests): emulator ground truth */
	int no_events;		/* --no-events */
	const char *event_specs[16]; /* --event */
	size_t nevent_specs;
	struct rec_options ro;

	/* Filled by the caller before reccmd_execute(); may be NULL. */
	void (*on_output)(void *ctx, const struct reccmd_output *out);
	void (*on_notice)(void *ctx, const char *msg);
	void *ctx;

	/* Internal. */
	FILE *truth;
	struct replay_options rep;
	int argc;
	char **argv;
};

/* Parse @argv (argv[0] is the subcommand).  Returns 0, or PS_ERR_INVAL
 * with a one-sentence detail (unknown option, missing -- CMD or -p, bad
 * number, output directory missing). */
int reccmd_parse(struct reccmd *c, enum reccmd_mode mode, int argc,
		 char **argv);

/* Record as parsed, writing one file per snapshot.  Returns 0 (see @res)
 * or PS_ERR_*: no file is left under the output name on failure. */
int reccmd_execute(struct reccmd *c, struct rec_result *res);

/* The help text for @mode. */
const char *reccmd_usage(enum reccmd_mode mode);

#endif /* PTSCOPE_RECORD_COMMAND_H */

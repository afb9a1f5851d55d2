/* SPDX-License-Identifier: MIT */
/* ptscope run: start a command under the recorder and write its trace.
 * Also the printing shared by attach and record (cli_record_main). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/cli/commands.h"
#include "src/cli/tracing.h"
#include "src/record/ptrace/tracee.h"

static const char *const cmd_names[] = {"run", "attach", "record"};

static void print_notice(void *ctx, const char *msg)
{
	const struct reccmd *c = ctx;

	if (!c->quiet)
		fprintf(stderr, "ptscope: %s\n", msg);
}

static void print_output(void *ctx, const struct reccmd_output *o)
{
	const struct reccmd *c = ctx;

	if (c->quiet)
		return;
	if (c->mode == RECCMD_RECORD) {
		fprintf(stderr,
			"ptscope: snapshot %u (%s): recording written to %s "
			"(%zu threads, %llu bytes of %s)\n",
			o->index, o->reason, o->path, o->threads,
			(unsigned long long)o->bytes,
			o->sampled ? "call-stack samples" : "PT");
		return;
	}
	if (o->stats.sample_hz) {
		/* Said plainly: these spans are inferred, not traced. */
		fprintf(stderr,
			"ptscope: snapshot %u (%s): trace written to %s (%llu "
			"threads, %llu spans rebuilt from %llu call-stack "
			"samples at %u Hz: sampled, not exact",
			o->index, o->reason, o->path,
			(unsigned long long)o->stats.threads,
			(unsigned long long)o->stats.spans,
			(unsigned long long)o->stats.samples,
			(unsigned)o->stats.sample_hz);
		if (o->stats.kernel_events || o->stats.kernel_lost)
			fprintf(stderr, ", %llu kernel events, %llu lost",
				(unsigned long long)o->stats.kernel_events,
				(unsigned long long)o->stats.kernel_lost);
		fprintf(stderr, ")\n");
		return;
	}
	fprintf(stderr,
		"ptscope: snapshot %u (%s): trace written to %s (%llu "
		"threads, %llu spans, %llu instructions",
		o->index, o->reason, o->path,
		(unsigned long long)o->stats.threads,
		(unsigned long long)o->stats.spans,
		(unsigned long long)o->stats.instructions);
	if (o->stats.kernel_events || o->stats.kernel_lost)
		fprintf(stderr, ", %llu kernel events, %llu lost",
			(unsigned long long)o->stats.kernel_events,
			(unsigned long long)o->stats.kernel_lost);
	fprintf(stderr, ")\n");
}

static void on_sigint(int sig)
{
	(void)sig;
	rec_request_stop();
}

/* The signals that would end ptscope while it holds the target: each one
 * stops tracing as Ctrl-C does (snapshot, then detach), so the target is
 * never left stopped or single-stepped (docs/safety.md).  SIGHUP is the
 * terminal closing, SIGQUIT Ctrl+backslash.  SIGPIPE is ignored: a closed pipe
 * on stderr or a "-" output becomes a write error, not our death. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

struct saved_signals {
	struct sigaction stop[NSTOP];
	struct sigaction pipe;
};

/* They must interrupt waitpid (no SA_RESTART). */
static void catch_interrupts(struct saved_signals *sv)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sa, &sv->stop[i]);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &sv->pipe);
}

static void restore_signals(const struct saved_signals *sv)
{
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sv->stop[i], NULL);
	sigaction(SIGPIPE, &sv->pipe, NULL);
}

static int report(const struct reccmd *c, const struct rec_result *res)
{
	if (!c->quiet && res->instructions && res->seconds > 0)
		fprintf(stderr,
			"ptscope: traced %llu instructions in %llu threads in "
			"%.2f s (%.0f instructions/s)\n",
			(unsigned long long)res->instructions,
			(unsigned long long)res->threads, res->seconds,
			(double)res->instructions / res->seconds);
	if (!c->quiet && res->snapshots && c->mode != RECCMD_RECORD)
		fprintf(stderr,
			"ptscope: open it at https://ui.perfetto.dev (Open "
			"trace file)\n");
	if (!c->quiet && res->snapshots && c->mode == RECCMD_RECORD)
		fprintf(stderr,
			"ptscope: decode it with 'ptscope decode %s -o "
			"trace.fxt'\n",
			c->output);
	if (!c->quiet && c->ntriggers && !res->trigger_hits)
		fprintf(stderr, "ptscope: the trigger was never hit\n");
	if (res->killed_by) {
		const char *core = res->core_dumped ? ", core dumped" : "";

		if (res->fault_tid)
			fprintf(stderr,
				"ptscope: target killed by %s at 0x%llx "
				"(address 0x%llx)%s\n",
				ps_signame(res->killed_by),
				(unsigned long long)res->fault_ip,
				(unsigned long long)res->fault_addr, core);
		else
			fprintf(stderr, "ptscope: target killed by %s%s\n",
				ps_signame(res->killed_by), core);
		return 128 + res->killed_by;
	}
	if (c->cmd && res->exited) {
		if (res->exit_code && !c->quiet)
			fprintf(stderr,
				"ptscope: target exited with status %d\n",
				res->exit_code);
		return res->exit_code;
	}
	if (!c->quiet && res->detached && c->npids)
		fprintf(stderr,
			"ptscope: detached; the target keeps running\n");
	return 0;
}

int cli_record_main(int mode, int argc, char **argv)
{
	struct saved_signals saved;
	struct rec_result res;
	struct reccmd c;
	int r;

	r = reccmd_parse(&c, (enum reccmd_mode)mode, argc, argv);
	if (r) {
		fprintf(stderr, "ptscope %s: %s\n", cmd_names[mode],
			ps_err_message(r));
		return 2;
	}
	if (c.help) {
		fputs(reccmd_usage((enum reccmd_mode)mode), stdout);
		return 0;
	}
	c.on_output = print_output;
	c.on_notice = print_notice;
	c.ctx = &c;
	catch_interrupts(&saved);
	r = reccmd_execute(&c, &res);
	restore_signals(&saved);
	if (r) {
		fprintf(stderr, "ptscope %s: %s\n", cmd_names[mode],
			ps_err_message(r));
		if (res.killed_by)
			fprintf(stderr, "ptscope: target killed by %s\n",
				ps_signame(res.killed_by));
		return 1;
	}
	return report(&c, &res);
}

int cmd_run(int argc, char **argv)
{
	return cli_record_main(RECCMD_RUN, argc, argv);
}

/* SPDX-License-Identifier: MIT */
/* ptscope selftest: as `perf test` does for perf, check the recording path
 * of this machine in one command.  Each bundled sample case (threads,
 * longjmp, exceptions, a crash, a trigger, a latency trigger, a dlopen'ed
 * library, a filter) is recorded on intel-pt and on an emulated backend,
 * and each function's call count and the marks must agree: the emulators
 * run every instruction, so they are the reference.  Without Intel PT the
 * same comparison runs between the two emulated backends (qemu and step),
 * which shows that the comparison itself works.  One line per case, a
 * summary, exit status 0 when every case agrees, 1 when one does not.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptscope/error.h"
#include "src/cli/commands.h"
#include "src/cli/selftest_compare.h"
#include "src/cli/selftest_run.h"
#include "src/record/backend.h"
#include "src/record/intel-pt/pt_pmu.h"
#include "src/record/recorder.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ptscope selftest [OPTIONS] [CASE...]\n\n"
		"Record the bundled samples on Intel PT and on an emulated "
		"backend and check\nthat every function was called as often "
		"and the same marks were made.\nWithout Intel PT the two "
		"emulated backends (qemu, step) are compared.\n\n"
		"  -l, --list              list the cases\n"
		"  -b, --backends A,B      compare these two backends instead\n"
		"  -v, --verbose           print each side's calls and marks\n"
		"  -h, --help              this help\n\n"
		"Exit status: 0 every case agrees, 1 one does not, 2 usage.\n");
}

static volatile sig_atomic_t interrupted;

static void on_stop(int sig)
{
	(void)sig;
	interrupted = 1;
	rec_request_stop();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int find_case(const char *name)
{
	for (size_t i = 0; i < st_ncases; i++)
		if (!strcmp(st_cases[i].name, name))
			return (int)i;
	return -1;
}

/* The pair to compare, and the sentence that says why when it is not
 * intel-pt against an emulator. */
static void pick_backends(const char **a, const char **b, char *why,
			  size_t size)
{
	char qemu[PATH_MAX];
	int have_qemu = !rec_find_qemu(qemu, sizeof(qemu));

	why[0] = 0;
	if (rec_have_intel_pt()) {
		*a = "intel-pt";
		*b = have_qemu ? "qemu" : "step";
		return;
	}
	{
		struct ptpmu_cpu cpu;
		const char *reason, *colon;
		int n;

		ptpmu_cpu_probe(&cpu);
		reason = ptpmu_missing_reason(&cpu);
		/* "intel_pt PMU not found: WHY; use ..." → WHY */
		colon = strstr(reason, ": ");
		reason = colon ? colon + 2 : reason;
		n = (int)strcspn(reason, ";");
		if (have_qemu) {
			*a = "qemu";
			*b = "step";
			snprintf(why, size,
				 "%.*s, so the same comparison runs between "
				 "the two emulated backends, qemu and step, "
				 "which shows that the comparison itself "
				 "works",
				 n, reason);
		} else {
			*a = *b = "step";
			snprintf(why, size,
				 "%.*s and qemu-x86_64 is not installed "
				 "(apt-get install qemu-user), so step is "
				 "compared with itself, which only shows that "
				 "the recording path runs",
				 n, reason);
		}
	}
}

static void print_side(const char *name, const struct stc_outcome *o)
{
	printf("      %s:", name);
	for (size_t i = 0; i < o->nfuncs; i++)
		printf(" %s=%llu", o->funcs[i].name,
		       (unsigned long long)o->funcs[i].calls);
	for (size_t i = 0; i < o->nmarks; i++)
		printf(" [mark %s]", o->marks[i].text);
	printf("\n");
}

/* One case on both backends: its line.  Returns 1 if they agree, 0 if
 * not, PS_ERR_NOMEM. */
static int run_case(const struct st_case *k, const char *dir, const char *a,
		    const char *b, int verbose)
{
	struct stc_outcome oa, ob;
	char why[512];
	double t0 = now_s();
	int r, same = 0;

	stc_init(&oa);
	stc_init(&ob);
	printf("  %-11s ", k->name);
	fflush(stdout);
	r = st_run(k, dir, a, &oa);
	if (!r && !interrupted)
		r = st_run(k, dir, b, &ob);
	if (r)
		goto out;
	if (interrupted) {
		printf("interrupted\n");
		goto out;
	}
	same = !stc_compare(&oa, a, &ob, b, why, sizeof(why));
	if (same)
		printf("ok    %zu functions, %llu calls%s%s (%.1f s)\n",
		       oa.nfuncs, (unsigned long long)stc_total(&oa),
		       oa.nmarks ? ", mark: " : "",
		       oa.nmarks ? oa.marks[0].text : "", now_s() - t0);
	else
		printf("FAIL  %s\n", why);
	if (verbose) {
		print_side(a, &oa);
		print_side(b, &ob);
	}
out:
	stc_fini(&oa);
	stc_fini(&ob);
	return r ? r : same;
}

static int parse_pair(char *arg, const char **a, const char **b)
{
	char *comma = strchr(arg, ',');

	if (!comma || comma == arg || !comma[1])
		return -1;
	*comma = 0;
	*a = arg;
	*b = comma + 1;
	return 0;
}

int cmd_selftest(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"list", no_argument, NULL, 'l'},
	    {"backends", required_argument, NULL, 'b'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0}};
	const char *a = NULL, *b = NULL;
	char dir[PATH_MAX], why[512];
	int verbose = 0, c, passed = 0, failed = 0, r;
	struct sigaction sa, old_int, old_term;
	double t0 = now_s();

	while ((c = getopt_long(argc, argv, "lb:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			for (size_t i = 0; i < st_ncases; i++)
				printf("%-11s %s\n", st_cases[i].name,
				       st_cases[i].what);
			return 0;
		case 'b':
			if (parse_pair(optarg, &a, &b)) {
				fprintf(stderr, "ptscope selftest: --backends "
						"takes two names, e.g. "
						"intel-pt,qemu\n");
				return 2;
			}
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		if (find_case(argv[i]) < 0) {
			fprintf(stderr,
				"ptscope selftest: no case '%s'; 'ptscope "
				"selftest --list' lists them\n",
				argv[i]);
			return 2;
		}
	r = st_samples_dir(dir, sizeof(dir));
	if (r) {
		fprintf(stderr, "ptscope selftest: %s\n", ps_err_message(r));
		return 2;
	}
	why[0] = 0;
	if (!a)
		pick_backends(&a, &b, why, sizeof(why));
	{
		const struct rec_backend *be;
		const char *note;

		/* A pair this machine cannot run is one sentence, not a
		 * failed case each. */
		if ((r = rec_backend_select(a, 0, &be, &note)) ||
		    (r = rec_backend_select(b, 0, &be, &note))) {
			fprintf(stderr, "ptscope selftest: %s\n",
				ps_err_message(r));
			return 2;
		}
	}
	if (why[0])
		printf("ptscope selftest: %s.\n", why);
	printf("ptscope selftest: %s against %s, samples in %s\n", a, b, dir);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	for (size_t i = 0; i < st_ncases && !interrupted; i++) {
		int wanted = optind == argc;

		for (int j = optind; j < argc; j++)
			wanted |= !strcmp(argv[j], st_cases[i].name);
		if (!wanted)
			continue;
		r = run_case(&st_cases[i], dir, a, b, verbose);
		if (r < 0) {
			fprintf(stderr, "ptscope selftest: %s\n",
				ps_err_message(r));
			return 2;
		}
		if (!interrupted)
			r ? passed++ : failed++;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	printf("ptscope selftest: %d passed, %d failed%s (%.1f s)\n", passed,
	       failed, interrupted ? ", interrupted" : "", now_s() - t0);
	if (interrupted)
		return 130;
	return failed ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/* gen_trace: write a realistic synthetic trace in any ptscope format, for
 * benchmarks and for trying `ptscope convert` on big inputs.
 *
 *   gen_trace [-n SPANS] [-t THREADS] [-k NAMES] [-s SEED] [-d DEPTH]
 *             [--complete] [--info] [-f FORMAT] -o OUT
 *
 * Each thread runs a random walk over a call stack (calls and returns,
 * depth up to DEPTH), so spans nest like real call trees; names are drawn
 * from NAMES C++-like function names with a Zipf-like law (a few hot
 * functions, a long tail); threads are interleaved in blocks, as a decoder
 * hands them over.  Spans are BEGIN/END pairs, or COMPLETE events with
 * --complete; --info adds module and address to each span.  "-o -" writes
 * to standard output; "--null" writes nowhere (to time the generator).
 * Prints "spans events seconds" on stderr.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"

#define MAX_DEPTH 256
#define BLOCK 512 /* spans per thread before switching to the next */

struct gen_frame {
	uint32_t name;
	uint64_t ts;
};

struct gen_thread {
	uint64_t tid, now, spans;
	struct gen_frame stack[MAX_DEPTH];
	int depth;
};

struct gen {
	uint64_t rng;
	char **names;
	double *cdf;
	uint32_t nnames;
	int complete, info, max_depth;
	uint64_t events;
};

static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 0x2545f4914f6cdd1dull;
}

static double rnd01(struct gen *g)
{
	return (double)(rnd(g) >> 11) / 9007199254740992.0;
}

/* Zipf's law (s = 1): the i-th name has weight 1 / (i + 1). */
static int make_names(struct gen *g, uint32_t n)
{
	static const char *const ns[] = {"app",	 "net",	 "db", "ui",
					 "core", "util", "io", "sched"};
	static const char *const verb[] = {"process", "handle", "parse",
					   "update",  "flush",	"lookup",
					   "encode",  "run"};
	double sum = 0;

	g->names = calloc(n, sizeof(*g->names));
	g->cdf = calloc(n, sizeof(*g->cdf));
	if (!g->names || !g->cdf)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		if (asprintf(&g->names[i], "%s::%s%c%u::%s_%u(%s)",
			     ns[rnd(g) % 8], i % 3 ? "Worker" : "Queue",
			     'A' + (int)(rnd(g) % 26), i % 97, verb[rnd(g) % 8],
			     i, i % 2 ? "int, char const*" : "") < 0)
			return -1;
		sum += 1.0 / (i + 1);
		g->cdf[i] = sum;
	}
	for (uint32_t i = 0; i < n; i++)
		g->cdf[i] /= sum;
	g->nnames = n;
	return 0;
}

static uint32_t pick_name(struct gen *g)
{
	double u = rnd01(g);
	uint32_t lo = 0, hi = g->nnames - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (g->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int emit(struct gen *g, struct ps_writer *w, struct ps_event *ev)
{
	g->events++;
	return w ? w->ops->event(w, ev) : 0;
}

static int call(struct gen *g, struct ps_writer *w, struct gen_thread *t)
{
	struct gen_frame *f = &t->stack[t->depth++];
	struct ps_span_info info = {"/usr/bin/app", 0, NULL, 0};
	struct ps_event ev = {.type = PS_EV_BEGIN, .pid = 1000, .tid = t->tid};

	f->name = pick_name(g);
	f->ts = t->now;
	t->spans++;
	if (g->complete)
		return 0;
	ev.ts = t->now;
	ev.name = g->names[f->name];
	ev.category = "app";
	info.address = 0x400000 + (uint64_t)f->name * 64;
	ev.info = g->info ? &info : NULL;
	return emit(g, w, &ev);
}

static int ret(struct gen *g, struct ps_writer *w, struct gen_thread *t)
{
	struct gen_frame *f = &t->stack[--t->depth];
	struct ps_span_info info = {"/usr/bin/app", 0, NULL, 0};
	struct ps_event ev = {
	    .type = PS_EV_END, .pid = 1000, .tid = t->tid, .ts = t->now};

	if (g->complete) {
		ev.type = PS_EV_COMPLETE;
		ev.ts = f->ts;
		ev.dur = t->now - f->ts;
		ev.name = g->names[f->name];
		ev.category = "app";
		info.address = 0x400000 + (uint64_t)f->name * 64;
		ev.info = g->info ? &info : NULL;
	}
	return emit(g, w, &ev);
}

/* Up to @quota more calls on @t, then return to the caller's depth. */
static int walk(struct gen *g, struct ps_writer *w, struct gen_thread *t,
		uint64_t quota)
{
	uint64_t done = 0;
	int err = 0;

	while (!err && (done < quota || t->depth)) {
		t->now += 1 + rnd(g) % 200;
		if (done < quota && (!t->depth || (t->depth < g->max_depth &&
						   rnd(g) % 100 < 50))) {
			err = call(g, w, t);
			done++;
		} else {
			err = ret(g, w, t);
		}
	}
	return err;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gen_trace [-n SPANS] [-t THREADS] [-k NAMES] "
		   "[-s SEED] [-d DEPTH]\n"
		   "                 [--complete] [--info] [-f FORMAT] "
		   "(-o OUT | --null)\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	*out = strtoull(s, &end, 10);
	return *s && !*end ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"complete", no_argument, NULL, 'c'},
	    {"info", no_argument, NULL, 'I'},
	    {"null", no_argument, NULL, 'N'},
	    {"format", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t spans = 100000, threads = 4, nnames = 3000, seed = 1,
		 depth = 24, v;
	struct gen g = {0};
	struct gen_thread *th;
	struct ps_writer *w = NULL;
	enum ps_format fmt = PS_FORMAT_AUTO;
	const char *out = NULL;
	struct timespec t0, t1;
	int c, err = 0, null = 0;

	while ((c = getopt_long(argc, argv, "n:t:k:s:d:f:o:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'n':
		case 't':
		case 'k':
		case 's':
		case 'd':
			if (parse_u64(optarg, &v)) {
				fprintf(stderr,
					"gen_trace: -%c wants a "
					"number, not '%s'\n",
					c, optarg);
				return 2;
			}
			*(c == 'n'   ? &spans
			  : c == 't' ? &threads
			  : c == 'k' ? &nnames
			  : c == 's' ? &seed
				     : &depth) = v;
			break;
		case 'c':
			g.complete = 1;
			break;
		case 'I':
			g.info = 1;
			break;
		case 'N':
			null = 1;
			break;
		case 'o':
			out = optarg;
			break;
		case 'f':
			err = ps_format_from_name(optarg);
			if (err < 0) {
				fprintf(stderr, "gen_trace: %s\n",
					ps_err_message(err));
				return 2;
			}
			fmt = (enum ps_format)err;
			err = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if ((!out && !null) || optind != argc || !threads || !nnames ||
	    !depth || depth > MAX_DEPTH || threads > 100000) {
		usage(stderr);
		return 2;
	}
	g.rng = seed * 0x9e3779b97f4a7c15ull + 1;
	g.max_depth = (int)depth;
	th = calloc(threads, sizeof(*th));
	if (!th || make_names(&g, (uint32_t)nnames)) {
		fprintf(stderr, "gen_trace: out of memory\n");
		return 1;
	}
	if (!null) {
		err = ps_writer_open(out, fmt, &w);
		if (err) {
			fprintf(stderr, "gen_trace: %s\n", ps_err_message(err));
			return 1;
		}
		err = w->ops->process(w, 1000, "app");
		if (!err)
			err = w->ops->meta(w, "generator", "gen_trace");
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < threads && !err; i++) {
		char name[32];

		th[i].tid = 1001 + i;
		th[i].now = 1000000000ull + i * 17;
		snprintf(name, sizeof(name), "worker-%" PRIu64, i);
		if (w)
			err = w->ops->thread(w, 1000, th[i].tid, name);
	}
	for (uint64_t done = 0; !err && done < spans;) {
		for (uint64_t i = 0; i < threads && !err && done < spans; i++) {
			uint64_t q = spans - done;

			if (q > BLOCK)
				q = BLOCK;

			err = walk(&g, w, &th[i], q);
			done += q;
		}
	}
	if (w) {
		if (err) {
			ps_writer_abort(w);
		} else {
			err = ps_writer_finish(w);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		fprintf(stderr, "gen_trace: %s\n", ps_err_message(err));
		return 1;
	}
	fprintf(stderr, "%" PRIu64 " %" PRIu64 " %.3f\n", spans, g.events,
		(double)(t1.tv_sec - t0.tv_sec) +
		    (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (uint32_t i = 0; i < g.nnames; i++)
		free(g.names[i]);
	free(g.names);
	free(g.cdf);
	free(th);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* bench_fxt: how fast the FXT writer is and how big its output.
 *
 *   build/tools/bench_fxt [SPANS [NAMES]]      (defaults: 1000000 4000)
 *
 * Writes SPANS begin/end pairs into a memory sink, nested like a call
 * stack on 4 threads, with names drawn Zipf-like (weight 1/rank) from NAMES
 * distinct function names whose pointers stay stable, as the decoder's
 * symbol table gives them.  Runs once without and once with span info
 * (module, address, file, line on each begin) and prints bytes per span and
 * spans per second.  The event sequence is prepared before the clock
 * starts, so only the writer is timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/fxt.h"
#include "src/output/sink.h"

#define BENCH_THREADS 4
#define BENCH_MAX_DEPTH 40

struct op {
	uint32_t name; /* index into names, or UINT32_MAX for an end */
	uint8_t thread;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_count(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	v = strtoull(s, &end, 10);
	if (end == s || *end || v == 0 || v > 100000000ull)
		return -1;
	*out = (size_t)v;
	return 0;
}

/* Begins and ends of @spans spans, nested, spread over the threads. */
static struct op *make_ops(size_t spans, const double *cdf, size_t nnames,
			   size_t *nops)
{
	struct op *ops = malloc(2 * spans * sizeof(*ops));
	size_t depth[BENCH_THREADS] = {0};
	size_t begun = 0, n = 0;

	if (!ops)
		return NULL;
	while (begun < spans || n < 2 * spans) {
		unsigned int t = (unsigned int)(rng() % BENCH_THREADS);
		int push = begun < spans &&
			   (depth[t] == 0 ||
			    (depth[t] < BENCH_MAX_DEPTH && rng() % 2));

		if (!push && depth[t] == 0)
			continue;
		if (push) {
			double u = (double)(rng() >> 11) / (double)(1ull << 53);
			size_t lo = 0, hi = nnames - 1;

			while (lo < hi) { /* first rank with cdf >= u */
				size_t mid = (lo + hi) / 2;

				if (cdf[mid] < u)
					lo = mid + 1;
				else
					hi = mid;
			}
			ops[n++] = (struct op){(uint32_t)lo, (uint8_t)t};
			depth[t]++;
			begun++;
		} else {
			ops[n++] = (struct op){UINT32_MAX, (uint8_t)t};
			depth[t]--;
		}
	}
	*nops = n;
	return ops;
}

static int run(const struct op *ops, size_t nops, size_t spans, char **names,
	       int with_info)
{
	struct ps_span_info info = {.module = "/usr/lib/libapp.so",
				    .file = "src/app/engine.cc"};
	struct ps_sink *sink;
	struct ps_writer *w;
	double t0, t1;
	int err;

	err = ps_sink_open_memory(&sink);
	if (err)
		return err;
	err = fxt_writer_new(sink, &w);
	if (err) {
		ps_sink_abort(sink);
		return err;
	}
	t0 = now();
	for (size_t i = 0; i < nops && !err; i++) {
		struct ps_event ev = {.pid = 4242,
				      .tid = 4242 + ops[i].thread,
				      .ts = 1000000 + i * 37,
				      .category = "fn"};

		if (ops[i].name == UINT32_MAX) {
			ev.type = PS_EV_END;
		} else {
			ev.type = PS_EV_BEGIN;
			ev.name = names[ops[i].name];
			if (with_info) {
				info.address = 0x400000 + ops[i].name * 64;
				info.line = 10 + ops[i].name % 900;
				ev.info = &info;
			}
		}
		err = ps_write_event(w, &ev);
	}
	if (!err)
		err = w->ops->flush(w);
	t1 = now();
	if (!err)
		printf("%-12s %8zu spans  %6.1f bytes/span  %6.2f M spans/s  "
		       "(%.1f MB in %.3f s)\n",
		       with_info ? "with info" : "names only", spans,
		       (double)ps_sink_bytes(sink) / spans,
		       spans / (t1 - t0) / 1e6, ps_sink_bytes(sink) / 1e6,
		       t1 - t0);
	w->ops->destroy(w);
	ps_sink_abort(sink);
	return err;
}

int main(int argc, char **argv)
{
	size_t spans = 1000000, nnames = 4000, nops;
	double *cdf, sum = 0;
	char **names;
	struct op *ops;
	int err;

	if (argc > 3 || (argc > 1 && parse_count(argv[1], &spans)) ||
	    (argc > 2 && parse_count(argv[2], &nnames))) {
		fprintf(stderr, "usage: bench_fxt [SPANS [NAMES]]\n");
		return 2;
	}
	names = calloc(nnames, sizeof(*names));
	cdf = calloc(nnames, sizeof(*cdf));
	if (!names || !cdf) {
		fprintf(stderr, "bench_fxt: out of memory\n");
		return 1;
	}
	for (size_t k = 0; k < nnames; k++) {
		char buf[128];

		snprintf(buf, sizeof(buf),
			 "app::engine%zu::Worker::step_%zu(int, char const*)",
			 k % 37, k);
		names[k] = strdup(buf);
		if (!names[k]) {
			fprintf(stderr, "bench_fxt: out of memory\n");
			return 1;
		}
		sum += 1.0 / (double)(k + 1);
		cdf[k] = sum;
	}
	for (size_t k = 0; k < nnames; k++)
		cdf[k] /= sum;
	ops = make_ops(spans, cdf, nnames, &nops);
	if (!ops) {
		fprintf(stderr, "bench_fxt: out of memory\n");
		return 1;
	}
	err = run(ops, nops, spans, names, 0);
	if (!err)
		err = run(ops, nops, spans, names, 1);
	if (err) {
		fprintf(stderr, "bench_fxt: %s\n", ps_err_message(err));
		return 1;
	}
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
	free(names);
	free(cdf);
	free(ops);
	return 0;
}

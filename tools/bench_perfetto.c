/* SPDX-License-Identifier: MIT */
/* bench_perfetto: size and speed of the Perfetto writer and reader.
 *
 *   build/tools/bench_perfetto [SPANS [NAMES [OUT.pftrace]]]
 *
 * Writes SPANS (default 1,000,000) nested call spans (begin + end) on one
 * thread, names drawn Zipf-like (s = 1) from NAMES (default 4,000)
 * C++-style function names, with 5-300 ns between events, into memory;
 * prints bytes per span and spans per second for writing and for reading
 * back.  With OUT the trace is also saved (to open in ui.perfetto.dev).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptscope/error.h"
#include "ptscope/writer.h"
#include "src/output/perfetto.h"
#include "src/output/sink.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A reader destination that only counts. */
struct counter {
	struct ps_writer base;
	uint64_t events;
};

static int c_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	return 0;
}

static int c_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		    const char *name)
{
	return 0;
}

static int c_meta(struct ps_writer *w, const char *k, const char *v)
{
	return 0;
}

static int c_event(struct ps_writer *w, const struct ps_event *ev)
{
	((struct counter *)w)->events++;
	return 0;
}

static int c_flush(struct ps_writer *w)
{
	return 0;
}

static void c_destroy(struct ps_writer *w)
{
}

static const struct ps_writer_ops counter_ops = {
    "count", c_process, c_thread, c_meta, c_event, c_flush, c_destroy,
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "bench_perfetto: %s: %s\n", what, ps_err_message(err));
	return 1;
}

static int parse_count(const char *s, unsigned long *out)
{
	char *end;

	*out = strtoul(s, &end, 10);
	return *s && !*end && *out > 0;
}

int main(int argc, char **argv)
{
	static const char *const ns[] = {
	    "std::", "app::net::", "app::db::", "boost::asio::detail::", ""};
	unsigned long spans = 1000000, nnames = 4000;
	char **names;
	double *cdf, total = 0, t0, t_write, t_read;
	struct ps_sink *sink;
	struct ps_writer *w;
	struct counter cnt = {{&counter_ops, NULL}, 0};
	const uint8_t *data;
	size_t len;
	uint64_t ts = 1000000000ull, done = 0;
	int depth = 0, err;

	if ((argc > 1 && !parse_count(argv[1], &spans)) ||
	    (argc > 2 && !parse_count(argv[2], &nnames))) {
		fprintf(stderr, "usage: bench_perfetto [SPANS [NAMES "
				"[OUT.pftrace]]]\n");
		return 2;
	}
	names = calloc(nnames, sizeof(*names));
	cdf = calloc(nnames, sizeof(*cdf));
	if (!names || !cdf)
		return fail("setup", PS_ERR_NOMEM);
	for (unsigned long i = 0; i < nnames; i++) {
		char buf[96];

		snprintf(buf, sizeof(buf), "%sComponent%lu::handle_%lu",
			 ns[i % 5], i / 7, i);
		names[i] = strdup(buf);
		total += 1.0 / (double)(i + 1);
		cdf[i] = total;
	}

	if ((err = ps_sink_open_memory(&sink)) ||
	    (err = pftw_writer_new(sink, &w)))
		return fail("open", err);
	t0 = now();
	/* A random walk of calls and returns, at most 24 deep. */
	while (done < spans) {
		struct ps_event e = {.pid = 4242, .tid = 4242};
		uint64_t r = next_rand();

		if (depth == 0 || (depth < 24 && (r & 3) < 2 &&
				   done + (uint64_t)depth < spans)) {
			double u =
			    (double)(r >> 11) / 9007199254740992.0 * total;
			unsigned long lo = 0, hi = nnames - 1;

			while (lo < hi) {
				unsigned long mid = (lo + hi) / 2;

				if (cdf[mid] < u)
					lo = mid + 1;
				else
					hi = mid;
			}
			e.type = PS_EV_BEGIN;
			e.name = names[lo];
			depth++;
		} else {
			e.type = PS_EV_END;
			depth--;
			done++;
		}
		ts += 5 + (r >> 40) % 296;
		e.ts = ts;
		if ((err = ps_write_event(w, &e)))
			return fail("write", err);
	}
	if ((err = w->ops->flush(w)))
		return fail("flush", err);
	t_write = now() - t0;
	ps_sink_memory_data(sink, &data, &len);

	t0 = now();
	if ((err = pftw_read(data, len, &cnt.base)))
		return fail("read", err);
	t_read = now() - t0;

	printf("spans %lu, names %lu, bytes %zu, bytes/span %.2f\n", spans,
	       nnames, len, (double)len / (double)spans);
	printf("write %.3f s = %.2f M spans/s; read %.3f s = %.2f M spans/s "
	       "(%llu events)\n",
	       t_write, (double)spans / t_write / 1e6, t_read,
	       (double)spans / t_read / 1e6, (unsigned long long)cnt.events);
	if (argc > 3) {
		FILE *f = fopen(argv[3], "wb");

		if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
			fprintf(stderr, "bench_perfetto: cannot write %s\n",
				argv[3]);
			return 1;
		}
	}
	w->ops->destroy(w);
	ps_sink_abort(sink);
	for (unsigned long i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	free(cdf);
	return 0;
}

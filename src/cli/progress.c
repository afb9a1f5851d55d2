/* SPDX-License-Identifier: MIT */
/* A progress line on a terminal for long work (see progress.h). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "src/cli/progress.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void draw(struct progress *p)
{
	double t = now_s();

	/* nothing for short work; then at most 5 redraws a second */
	if (t - p->start < 0.5 || t - p->last < 0.2)
		return;
	p->last = t;
	fprintf(stderr, "\r\033[K%s: ", p->label);
	if (p->total && p->done <= p->total)
		fprintf(stderr, "%3.0f%% of %.1f MB read",
			100.0 * (double)p->done / (double)p->total,
			p->total / 1e6);
	else
		fprintf(stderr, "%.1f MB read", p->done / 1e6);
	if (p->events)
		fprintf(stderr, ", %llu events written",
			(unsigned long long)p->events);
	fprintf(stderr, " (%.0f s)", t - p->start);
	fflush(stderr);
	p->shown = 1;
}

void progress_read(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;

	p->done = done;
	p->total = total;
	if (p->on)
		draw(p);
}

static struct ps_writer *inner_of(struct ps_writer *w)
{
	return ((struct progress *)w)->inner;
}

static int pw_process(struct ps_writer *w, uint64_t pid, const char *name)
{
	struct ps_writer *in = inner_of(w);

	return in->ops->process(in, pid, name);
}

static int pw_thread(struct ps_writer *w, uint64_t pid, uint64_t tid,
		     const char *name)
{
	struct ps_writer *in = inner_of(w);

	return in->ops->thread(in, pid, tid, name);
}

static int pw_parent(struct ps_writer *w, uint64_t pid, uint64_t ppid)
{
	return ps_write_parent(inner_of(w), pid, ppid);
}

static int pw_meta(struct ps_writer *w, const char *key, const char *value)
{
	struct ps_writer *in = inner_of(w);

	return in->ops->meta(in, key, value);
}

static int pw_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct progress *p = (struct progress *)w;

	/* look at the clock once every 64k events: cheap per event */
	p->events++;
	if (p->on && !(p->events & 0xffff))
		draw(p);
	/* the producer's promise about its strings holds for the inner
	 * writer too */
	p->inner->stable_epoch = w->stable_epoch;
	return ps_write_event(p->inner, ev);
}

static int pw_sample(struct ps_writer *w, const struct ps_sample *smp)
{
	return ps_write_sample(inner_of(w), smp);
}

static int pw_flush(struct ps_writer *w)
{
	return 0;
}

static void pw_destroy(struct ps_writer *w)
{
}

static const struct ps_writer_ops progress_ops = {
    .name = "progress",
    .process = pw_process,
    .thread = pw_thread,
    .parent = pw_parent,
    .meta = pw_meta,
    .event = pw_event,
    .flush = pw_flush,
    .destroy = pw_destroy,
    .sample = pw_sample,
};

void progress_init(struct progress *p, const char *label,
		   struct ps_writer *inner, int quiet)
{
	*p = (struct progress){.base.ops = &progress_ops,
			       .inner = inner,
			       .label = label,
			       .on = !quiet && isatty(STDERR_FILENO)};
	p->start = p->last = now_s();
}

struct ps_writer *progress_writer(struct progress *p)
{
	return p->on ? &p->base : p->inner;
}

void progress_end(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = 0;
}

/* SPDX-License-Identifier: MIT */
/* One stream decoded on two threads (see session.h): a producer thread runs
 * the flow layer (libipt's block decoder, the larger part of the work) and
 * fills chunks of branch events; the caller's thread takes the chunks in
 * order and hands every event to the sink, the stack builder and writer.
 * The sink sees exactly the events flow_decode would give it, in the same
 * order, so the output is the same byte for byte.  Memory stays flat: at
 * most PL_NCHUNK chunks exist, the producer waits when all are full. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/session.h"
#include "decoder/threads.h"
#include "ptscope/error.h"

#define PL_CHUNK 4096 /* events per chunk */
#define PL_NCHUNK 8   /* chunks in flight */
/* Shorter streams are decoded on the caller's thread: starting a thread
 * costs more than it could save. */
#define PL_MIN_BYTES (64 * 1024)

struct pl_chunk {
	size_t n;
	struct br_event ev[PL_CHUNK];
};

struct pl {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pl_chunk *chunk[PL_NCHUNK]; /* ring: full ones in order */
	size_t head, count;		   /* full chunks: [head, +count) */
	struct pl_chunk *spare[PL_NCHUNK]; /* empty ones */
	size_t nspare;
	struct pl_chunk *cur; /* the producer's, being filled */
	int done;	      /* the producer has finished */
	int stop;	      /* the consumer wants no more */
	/* producer's inputs and result */
	struct flow_decoder *fd;
	const uint8_t *pt;
	size_t len;
	struct dec_stats stats;
	int ret;
};

/* Producer: hand the filled chunk over and take an empty one; returns -1
 * when the consumer has stopped. */
static int pl_push(struct pl *q)
{
	int stop;

	pthread_mutex_lock(&q->mu);
	if (q->cur && q->cur->n) {
		q->chunk[(q->head + q->count) % PL_NCHUNK] = q->cur;
		q->count++;
		q->cur = NULL;
		pthread_cond_broadcast(&q->cv);
	}
	while (!q->cur && !q->nspare && !q->stop)
		pthread_cond_wait(&q->cv, &q->mu);
	if (!q->cur && q->nspare) {
		q->cur = q->spare[--q->nspare];
		q->cur->n = 0;
	}
	stop = q->stop;
	pthread_mutex_unlock(&q->mu);
	return stop ? -1 : 0;
}

static int pl_sink(void *ctx, const struct br_event *ev)
{
	struct pl *q = ctx;

	if (q->cur->n == PL_CHUNK && pl_push(q) < 0)
		return PS_ERR_INTERRUPTED;
	q->cur->ev[q->cur->n++] = *ev;
	return 0;
}

static void *pl_producer(void *arg)
{
	struct pl *q = arg;

	q->ret = flow_decode(q->fd, q->pt, q->len, pl_sink, q, &q->stats);
	pl_push(q);
	pthread_mutex_lock(&q->mu);
	q->done = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int dec_pipeline(struct flow_decoder *fd, const uint8_t *pt, size_t len,
		 br_sink_fn sink, void *ctx, struct dec_stats *stats)
{
	struct pl_chunk *all[PL_NCHUNK] = {0};
	struct pl q;
	pthread_t th;
	int err = 0;

	if (len < PL_MIN_BYTES)
		return flow_decode(fd, pt, len, sink, ctx, stats);
	memset(&q, 0, sizeof(q));
	for (size_t i = 0; i < PL_NCHUNK; i++) {
		all[i] = malloc(sizeof(*all[i]));
		if (!all[i])
			break;
		q.spare[q.nspare++] = all[i];
	}
	if (q.nspare < 2) {
		for (size_t i = 0; i < q.nspare; i++)
			free(q.spare[i]);
		return flow_decode(fd, pt, len, sink, ctx, stats);
	}
	q.cur = q.spare[--q.nspare];
	q.cur->n = 0;
	q.fd = fd;
	q.pt = pt;
	q.len = len;
	pthread_mutex_init(&q.mu, NULL);
	pthread_cond_init(&q.cv, NULL);
	if (dec_thread_create(&th, pl_producer, &q)) {
		pthread_mutex_destroy(&q.mu);
		pthread_cond_destroy(&q.cv);
		for (size_t i = 0; i < PL_NCHUNK; i++)
			free(all[i]);
		return flow_decode(fd, pt, len, sink, ctx, stats);
	}
	for (;;) {
		struct pl_chunk *c;

		pthread_mutex_lock(&q.mu);
		while (!q.count && !q.done)
			pthread_cond_wait(&q.cv, &q.mu);
		if (!q.count) {
			pthread_mutex_unlock(&q.mu);
			break;
		}
		c = q.chunk[q.head];
		q.head = (q.head + 1) % PL_NCHUNK;
		q.count--;
		pthread_mutex_unlock(&q.mu);
		for (size_t i = 0; i < c->n && !err; i++) {
			err = sink(ctx, &c->ev[i]);
			if (err > 0)
				err = 0; /* FLOW_PAUSE: flow_decode goes on */
		}
		pthread_mutex_lock(&q.mu);
		q.spare[q.nspare++] = c;
		if (err < 0)
			q.stop = 1;
		pthread_cond_broadcast(&q.cv);
		pthread_mutex_unlock(&q.mu);
		if (err < 0)
			break;
	}
	pthread_join(th, NULL);
	pthread_mutex_destroy(&q.mu);
	pthread_cond_destroy(&q.cv);
	for (size_t i = 0; i < PL_NCHUNK; i++)
		free(all[i]);
	dec_stats_add(stats, &q.stats);
	return err < 0 ? err : q.ret;
}

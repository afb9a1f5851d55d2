/* SPDX-License-Identifier: MIT */
/* A session's decoding threads (see crew.h). */
#include "decoder/crew.h"

#include <pthread.h>
#include <stdlib.h>

#include "decoder/threads.h"
#include "ptscope/error.h"

struct dec_crew {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* new work, or stop */
	pthread_cond_t done_cv; /* a thread's work returned */
	pthread_t *th;
	size_t n;	/* started */
	size_t next;	/* index the next thread to start takes */
	unsigned round; /* counts dec_crew_run calls */
	size_t want;	/* threads of this round that run fn */
	size_t busy;	/* of those, not yet returned */
	void (*fn)(void *);
	void *arg;
	int stop;
};

static void *crew_main(void *p)
{
	struct dec_crew *c = p;
	unsigned seen = 0;
	size_t i;

	pthread_mutex_lock(&c->mu);
	i = c->next++;
	for (;;) {
		while (!c->stop && (c->round == seen || i >= c->want))
			pthread_cond_wait(&c->work_cv, &c->mu);
		if (c->stop)
			break;
		seen = c->round;
		pthread_mutex_unlock(&c->mu);
		c->fn(c->arg);
		pthread_mutex_lock(&c->mu);
		if (!--c->busy)
			pthread_cond_broadcast(&c->done_cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int dec_crew_new(size_t n, struct dec_crew **out)
{
	struct dec_crew *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c || !(c->th = calloc(n ? n : 1, sizeof(*c->th)))) {
		free(c);
		return PS_ERR_NOMEM;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->work_cv, NULL);
	pthread_cond_init(&c->done_cv, NULL);
	/* c->n is counted here without the lock: the threads never read
	 * it (each takes its index from c->next, under the lock) */
	for (size_t i = 0; i < n; i++) {
		if (dec_thread_create(&c->th[i], crew_main, c))
			break;
		c->n++;
	}
	*out = c;
	return 0;
}

void dec_crew_free(struct dec_crew *c)
{
	if (!c)
		return;
	dec_crew_wait(c);
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->work_cv);
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < c->n; i++)
		pthread_join(c->th[i], NULL);
	pthread_cond_destroy(&c->done_cv);
	pthread_cond_destroy(&c->work_cv);
	pthread_mutex_destroy(&c->mu);
	free(c->th);
	free(c);
}

size_t dec_crew_size(const struct dec_crew *c)
{
	return c ? c->n : 0;
}

void dec_crew_run(struct dec_crew *c, size_t n, void (*fn)(void *), void *arg)
{
	if (!c || !n)
		return;
	pthread_mutex_lock(&c->mu);
	c->fn = fn;
	c->arg = arg;
	c->want = n < c->n ? n : c->n;
	c->busy = c->want;
	c->round++;
	pthread_cond_broadcast(&c->work_cv);
	pthread_mutex_unlock(&c->mu);
}

void dec_crew_wait(struct dec_crew *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	while (c->busy)
		pthread_cond_wait(&c->done_cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* SPDX-License-Identifier: MIT */
/* sleepers: one thread sleeps 20 ms while another computes; main joins
 * both.  With the emulated backend the sleep must still last 20 ms of
 * trace time and the joins must end when the threads do.
 *
 *   ptscope run -- build/samples/sleepers */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static void *sleeper(void *arg)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL);
	return NULL;
}

static long sum_squares(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}

static void *computer(void *arg)
{
	return (void *)sum_squares((long)arg);
}

int main(void)
{
	pthread_t a, b;
	void *r;

	pthread_create(&a, NULL, sleeper, NULL);
	pthread_create(&b, NULL, computer, (void *)4000L);
	pthread_join(a, NULL);
	pthread_join(b, &r);
	printf("sleepers: %ld\n", (long)r);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* threads: four worker threads, each with its own call pattern, created
 * while the program runs; each gets its own timeline in the trace.
 *
 *   ptscope run -- build/samples/threads */
#include <pthread.h>
#include <stdio.h>

static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static long count_primes(long limit)
{
	long count = 0;

	for (long n = 2; n < limit; n++) {
		int prime = 1;

		for (long d = 2; d * d <= n; d++)
			if (n % d == 0) {
				prime = 0;
				break;
			}
		count += prime;
	}
	return count;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	long r = (id % 2) ? fib(12 + (int)id) : count_primes(300 * (id + 1));

	return (void *)r;
}

int main(void)
{
	pthread_t t[4];
	void *r;
	long total = 0;

	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("threads: total %ld\n", total);
	return 0;
}

/* busy: a long-running multi-threaded program to stay attached to (the
 * soak and signal-safety tests).  Four threads compute and check known
 * answers for SECS seconds of wall time, calling ptscope_trigger() about
 * every 20 ms; then main prints the same line whatever happened and exits
 * with status 7 — unless a check failed, which tracing must never cause.
 *
 *   build/samples/busy 60 &  ptscope attach -p $! -t . -m -o soak.fxt */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ptscope/trigger.h"

#define NTHREADS 4

static double deadline;
static long errors[NTHREADS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long collatz_steps(long n)
{
	long steps = 0;

	while (n != 1) {
		n = n & 1 ? 3 * n + 1 : n / 2;
		steps++;
	}
	return steps;
}

static long sum_to(long n)
{
	long s = 0;

	for (long i = 1; i <= n; i++)
		s += i;
	return s;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	double next_trigger = now();

	while (now() < deadline) {
		/* 27 takes 111 steps; 1..100 sums to 5050 */
		if (collatz_steps(27) != 111 || sum_to(100) != 5050)
			errors[id]++;
		if (now() >= next_trigger) {
			ptscope_trigger("tick");
			next_trigger = now() + 0.02;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	long bad = 0;

	deadline = now() + (argc > 1 ? atof(argv[1]) : 10);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		bad += errors[i];
	}
	printf("busy: %d threads, %ld failed checks\n", NTHREADS, bad);
	return bad ? 1 : 7;
}

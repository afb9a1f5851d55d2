/* SPDX-License-Identifier: MIT */
/* split: CPU-bound work with a known split of its time, for the sample
 * backend (its tests and benchmark).
 *
 *   build/samples/split SECONDS [THREADS]
 *
 * Each round calls heavy() (6 units of work), medium() (3) and light()
 * (1): 60%, 30% and 10% of the CPU time, all under round().  Every 64th
 * round also calls checkpoint() (a cheap trigger target) and spike(),
 * which is quick except every 16th call, when it spins for 3 ms (a
 * latency trigger target: 'spike>2ms').  At the end it prints its own
 * work rate, "split: R rounds/s, C rounds per CPU-second": the
 * benchmark's measures (the second one does not depend on what else the
 * machine runs; what sampling costs the program is in its CPU time). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define UNIT 20000 /* iterations per unit of work */

static volatile unsigned sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned work(unsigned units, unsigned seed)
{
	unsigned v = seed;

	for (unsigned i = 0; i < units * UNIT; i++)
		v = v * 1103515245u + 12345u;
	return v;
}

static void heavy(unsigned i) { sink += work(6, i); }
static void medium(unsigned i) { sink += work(3, i); }
static void light(unsigned i) { sink += work(1, i); }

static void checkpoint(unsigned i) { sink += i; }

static void spike(unsigned calls)
{
	if (calls % 16 == 15) {
		double end = now() + 0.003;

		while (now() < end)
			sink++;
	}
}

static void round_of_work(unsigned i)
{
	heavy(i);
	medium(i);
	light(i);
}

static double deadline;

static void *worker(void *arg)
{
	unsigned long *rounds = arg;
	unsigned spikes = 0;

	while (now() < deadline) {
		round_of_work((unsigned)*rounds);
		if (++*rounds % 64 == 0) {
			checkpoint((unsigned)*rounds);
			spike(spikes++);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	int nthr = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t tid[16];
	unsigned long rounds[16] = {0}, total = 0;
	double t0;

	if (nthr < 1 || nthr > 16 || secs <= 0) {
		fprintf(stderr, "usage: split SECONDS [THREADS 1-16]\n");
		return 2;
	}
	t0 = now();
	deadline = t0 + secs;
	for (int i = 1; i < nthr; i++)
		pthread_create(&tid[i], NULL, worker, &rounds[i]);
	worker(&rounds[0]);
	for (int i = 1; i < nthr; i++)
		pthread_join(tid[i], NULL);
	for (int i = 0; i < nthr; i++)
		total += rounds[i];
	{
		struct rusage ru;
		double cpu;

		getrusage(RUSAGE_SELF, &ru);
		cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
		printf("split: %.1f rounds/s, %.1f rounds per CPU-second\n",
		       (double)total / (now() - t0),
		       cpu > 0 ? (double)total / cpu : 0.0);
	}
	return 0;
}

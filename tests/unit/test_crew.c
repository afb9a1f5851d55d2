/* A session's decoding threads (decoder/crew.h): each round's work runs
 * once on each thread asked for, on threads with the decoder's stack, and
 * nothing is left running when the crew is freed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "decoder/crew.h"
#include "decoder/threads.h"
#include "tests/harness.h"

#define MAX_RUNS 16

struct tally {
	atomic_int runs;
	pthread_t who[MAX_RUNS];
	size_t stack[MAX_RUNS];
	int sleep_ms;
	atomic_int finished;
};

static void count(void *arg)
{
	struct tally *t = arg;
	int k = atomic_fetch_add(&t->runs, 1);
	pthread_attr_t attr;

	if (t->sleep_ms)
		usleep((useconds_t)t->sleep_ms * 1000);
	if (k < MAX_RUNS) {
		t->who[k] = pthread_self();
		if (!pthread_getattr_np(pthread_self(), &attr)) {
			pthread_attr_getstacksize(&attr, &t->stack[k]);
			pthread_attr_destroy(&attr);
		}
	}
	atomic_fetch_add(&t->finished, 1);
}

/* How many different threads ran the first @n runs of @t (none of them
 * the test's own). */
static int distinct_threads(const struct tally *t, int n)
{
	int d = 0;

	for (int i = 0; i < n; i++) {
		int seen = pthread_equal(t->who[i], pthread_self());

		for (int j = 0; j < i && !seen; j++)
			seen = pthread_equal(t->who[i], t->who[j]);
		d += !seen;
	}
	return d;
}

TEST(each_round_runs_once_on_each_thread_asked_for)
{
	struct dec_crew *c;
	struct tally t;

	memset(&t, 0, sizeof(t));
	CHECK_EQ(dec_crew_new(3, &c), 0);
	CHECK_EQ(dec_crew_size(c), 3);
	/* handed out at once: the threads may still be starting */
	dec_crew_run(c, 3, count, &t);
	dec_crew_wait(c);
	CHECK_EQ(atomic_load(&t.runs), 3);
	CHECK_EQ(distinct_threads(&t, 3), 3);
	for (int i = 0; i < 3; i++)
		CHECK(t.stack[i] >= DEC_STACK_SIZE);
	/* fewer than the crew, then more than it has */
	dec_crew_run(c, 2, count, &t);
	dec_crew_wait(c);
	CHECK_EQ(atomic_load(&t.runs), 5);
	dec_crew_run(c, 7, count, &t);
	dec_crew_wait(c);
	CHECK_EQ(atomic_load(&t.runs), 8);
	CHECK_EQ(distinct_threads(&t, 8), 3);
	dec_crew_free(c);
}

TEST(free_waits_for_the_work_handed_out)
{
	struct dec_crew *c;
	struct tally t;

	memset(&t, 0, sizeof(t));
	t.sleep_ms = 50;
	CHECK_EQ(dec_crew_new(2, &c), 0);
	dec_crew_run(c, 2, count, &t);
	dec_crew_free(c);
	CHECK_EQ(atomic_load(&t.finished), 2);
}

TEST(a_crew_of_no_threads_runs_nothing_and_does_not_block)
{
	struct dec_crew *c;
	struct tally t;

	memset(&t, 0, sizeof(t));
	CHECK_EQ(dec_crew_new(0, &c), 0);
	CHECK_EQ(dec_crew_size(c), 0);
	dec_crew_run(c, 2, count, &t);
	dec_crew_wait(c);
	CHECK_EQ(atomic_load(&t.runs), 0);
	dec_crew_free(c);
	CHECK_EQ(dec_crew_size(NULL), 0);
	dec_crew_free(NULL);
}

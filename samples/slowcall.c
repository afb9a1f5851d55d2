/* slowcall: handle() is called 1000 times; call number 737 sleeps 2 ms,
 * every other call takes well under a microsecond.  A latency trigger
 * such as -t 'handle>500us' must fire on that call and no other. */
#include <stdio.h>
#include <time.h>

static volatile unsigned long total;

static void slow_part(void)
{
	struct timespec ts = {0, 2000000};

	nanosleep(&ts, NULL);
}

static void handle(int i)
{
	total += (unsigned long)i;
	if (i == 737)
		slow_part();
}

int main(void)
{
	for (int i = 0; i < 1000; i++)
		handle(i);
	printf("slowcall: 1000 calls, total %lu\n", total);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* kevents: a program whose kernel side is known, for the eBPF sidecar's
 * tests and docs.  Each function makes one kind of kernel event:
 *   do_sleep    nanosleep 1 ms            (clock_nanosleep, sleeping)
 *   do_open     openat("/dev/null")       (openat with its path)
 *   do_write    write 5 bytes to it       (write, fd and count)
 *   pipe_wait   read a pipe that a second thread fills once the main
 *               thread is blocked in the read, 50 ms later (however
 *               slowly a tracer single-steps the main thread to the read)
 *               (read blocks; the filler thread wakes it)
 *   touch_page  first write to a fresh page (a page fault)
 *   get_signal  kill(self, SIGUSR1), handled by on_usr1 (signal sent,
 *               delivered)
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile int got_signal;
static volatile pid_t reader; /* the thread about to read the pipe */

static void do_sleep(void)
{
	struct timespec ts = {0, 1000000};

	nanosleep(&ts, NULL);
}

static int do_open(void)
{
	/* A path built at run time, as most programs do: the kernel-side
	 * program reads it without faulting (see docs/events.md). */
	char path[16];

	snprintf(path, sizeof(path), "/dev/%s", "null");
	return openat(AT_FDCWD, path, O_WRONLY);
}

static void do_write(int fd)
{
	if (write(fd, "hello", 5) != 5)
		perror("write");
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Is thread @tid asleep (state S in /proc)? */
static int asleep(pid_t tid)
{
	char path[64], line[512], *p;
	FILE *f;
	int s = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')))
		s = p[1] == ' ' && p[2] == 'S';
	fclose(f);
	return s;
}

static void *filler(void *arg)
{
	(void)arg;
	/* The main thread single-stepped by a tracer may take longer than
	 * any fixed delay to reach its read: wait until it is blocked in
	 * it (at most 10 s), then 50 ms more. */
	for (int i = 0; i < 10000 && !(reader && asleep(reader)); i++)
		pause_ms(1);
	pause_ms(50);
	if (write(fds[1], "x", 1) != 1)
		perror("write");
	return NULL;
}

static char pipe_wait(void)
{
	char c = 0;

	reader = (pid_t)syscall(SYS_gettid);
	if (read(fds[0], &c, 1) != 1)
		perror("read");
	return c;
}

static void touch_page(void)
{
	volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		p[0] = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	got_signal = 1;
}

static void get_signal(void)
{
	kill(getpid(), SIGUSR1);
}

int main(void)
{
	pthread_t th;
	int fd;

	signal(SIGUSR1, on_usr1);
	if (pipe(fds))
		return 1;
	do_sleep();
	fd = do_open();
	do_write(fd);
	close(fd);
	pthread_create(&th, NULL, filler, NULL);
	pipe_wait();
	pthread_join(th, NULL);
	touch_page();
	get_signal();
	printf("kevents: done (signal %s)\n", got_signal ? "handled" : "lost");
	return 0;
}

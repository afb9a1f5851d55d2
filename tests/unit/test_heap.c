/* The decoding threads' heaps on transparent huge pages (decoder/heap.h).
 * Each case runs in a child process: the first dec_heap_huge() of a
 * process sets malloc up for all its threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decoder/heap.h"
#include "tests/harness.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

/* Does the mapping that holds @p carry MADV_HUGEPAGE ("hg")?  1, 0, or -1
 * if it is not found. */
static int advised(const void *p)
{
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");
	int in = 0, r = -1;

	if (!f)
		return -1;
	while (r < 0 && fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		/* a mapping's first line; its fields' names are not hex
		 * digits followed by '-' */
		if (sscanf(line, "%lx-%lx", &a, &b) == 2)
			in = (uintptr_t)p >= a && (uintptr_t)p < b;
		else if (in && !strncmp(line, "VmFlags:", 8))
			r = strstr(line, " hg") != NULL;
	}
	fclose(f);
	return r;
}

struct probe {
	size_t size;
	int advised;
	int intact;
};

/* On a thread of its own: dec_heap_huge(), then a block of probe.size
 * written and read back. */
static void *on_thread(void *arg)
{
	struct probe *pr = arg;
	uint8_t *b;

	dec_heap_huge();
	b = malloc(pr->size);
	if (!b)
		return NULL;
	for (size_t i = 0; i < pr->size; i++)
		b[i] = (uint8_t)(i * 7);
	pr->intact = 1;
	for (size_t i = 0; i < pr->size; i++)
		if (b[i] != (uint8_t)(i * 7))
			pr->intact = 0;
	pr->advised = advised(b);
	free(b);
	return NULL;
}

/* In a child with PTSCOPE_HUGEPAGES set to @env (NULL: unset), after
 * dec_heap_off() when @off: 1 if a thread's block was advised, 0 if not;
 * 2 if its bytes were not kept. */
static int child_advised_off(const char *env, size_t size, int off)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct probe pr = {size, -1, 0};
		pthread_t th;

		if (env)
			setenv("PTSCOPE_HUGEPAGES", env, 1);
		else
			unsetenv("PTSCOPE_HUGEPAGES");
		if (off)
			dec_heap_off();
		if (pthread_create(&th, NULL, on_thread, &pr))
			_exit(3);
		pthread_join(th, NULL);
		_exit(!pr.intact ? 2 : pr.advised == 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int child_advised(const char *env, size_t size)
{
	return child_advised_off(env, size, 0);
}

TEST(a_decoding_threads_heap_is_advised)
{
#ifdef SANITIZED
	SKIP("a sanitizer's allocator, not glibc's heaps");
#endif
	if (!dec_heap_thp_available())
		SKIP("transparent huge pages are off (THP mode \"never\")");
	/* small blocks and one a few MiB large (below the mmap threshold
	 * dec_heap_huge sets: from the heap, not a mapping of its own) */
	CHECK_EQ(child_advised(NULL, 4096), 1);
	CHECK_EQ(child_advised(NULL, 5u << 20), 1);
	CHECK_EQ(child_advised("1", 100000), 1);
}

TEST(ptscope_hugepages_0_leaves_the_heap_alone)
{
#ifdef SANITIZED
	SKIP("a sanitizer's allocator, not glibc's heaps");
#endif
	CHECK_EQ(child_advised("0", 4096), 0);
	CHECK_EQ(child_advised("0", 5u << 20), 0);
}

TEST(dec_heap_off_leaves_every_threads_heap_alone)
{
#ifdef SANITIZED
	SKIP("a sanitizer's allocator, not glibc's heaps");
#endif
	if (!dec_heap_thp_available())
		SKIP("transparent huge pages are off (THP mode \"never\")");
	/* what a_decoding_threads_heap_is_advised advises, not advised */
	CHECK_EQ(child_advised_off(NULL, 4096, 1), 0);
	CHECK_EQ(child_advised_off(NULL, 5u << 20, 1), 0);
}

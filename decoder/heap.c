/* SPDX-License-Identifier: MIT */
/* The decoding threads' heaps on transparent huge pages (see heap.h). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decoder/heap.h"

/* glibc's heap of a thread's arena: an anonymous mapping of HEAP_MAX_SIZE
 * (2 * DEFAULT_MMAP_THRESHOLD_MAX on 64-bit) at an address aligned to
 * its size, made readable and writable as it grows (malloc/arena.c). */
#define GLIBC_THREAD_HEAP (64ul << 20)
/* What a heap is grown by at once, so that its 2 MiB ranges are whole
 * when they are first touched (a huge page is only given to a range
 * wholly inside the mapping; past this, a thread's heap grows by what
 * each allocation needs, and its pages are 4 KiB again).  Address space,
 * not memory, until touched. */
#define HEAP_GROW (30ul << 20) /* below the mmap threshold set below */
#define HUGE_PAGE (2ul << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1 */
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int enabled;
static int off; /* dec_heap_off(): set before any decoding thread runs */

/* the kernel's THP mode reads "always [madvise] never", the mode chosen in
 * brackets */
int dec_heap_thp_available(void)
{
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (!f)
		return 0;
	if (!fgets(mode, sizeof(mode), f))
		mode[0] = 0;
	fclose(f);
	return strstr(mode, "[always]") || strstr(mode, "[madvise]");
}

static void setup(void)
{
	const char *env = getenv("PTSCOPE_HUGEPAGES");

	if ((env && !strcmp(env, "0")) || !dec_heap_thp_available())
		return;
	/* Large blocks from the heaps too (not a mapping each, faulted in
	 * 4 KiB at a time), and kept there when freed: the decoder frees
	 * and reallocates its growing tables. */
	if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || /* glibc's largest */
	    mallopt(M_TRIM_THRESHOLD, 256 << 20) != 1 ||
	    mallopt(M_TOP_PAD, (int)HEAP_GROW) != 1)
		return;
	enabled = 1;
}

/* The mapping of /proc/self/maps that holds @addr: [lo, hi), whether it
 * is the main heap ("[heap]"), and whether it starts a glibc thread heap
 * (anonymous mappings from a GLIBC_THREAD_HEAP-aligned start to exactly
 * GLIBC_THREAD_HEAP further, the writable part and the part not yet so).
 * 0 if found. */
static int mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *is_brk,
		      int *is_thread_heap)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	uintptr_t next = 0; /* where the heap's mappings went on to */
	int found = -1;

	if (!f)
		return -1;
	*is_thread_heap = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, ino;
		int name = 0, anon;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %n", &a, &b, &ino,
			   &name) < 3)
			continue;
		anon = ino == 0 && (line[name] == '\n' || !line[name]);
		if (found && addr >= a && addr < b) {
			*lo = a;
			*hi = b;
			*is_brk = !strncmp(line + name, "[heap]", 6);
			found = 0;
			next = anon && !(a % GLIBC_THREAD_HEAP) ? b : 0;
		} else if (next && a == next && anon) {
			next = b;
		} else if (!found) {
			break;
		}
	}
	fclose(f);
	if (!found && next == *lo + GLIBC_THREAD_HEAP)
		*is_thread_heap = 1;
	return found;
}

/* Grow the calling thread's heap by HEAP_GROW now (a block that size,
 * freed again: the trim threshold keeps the room). */
static void grow(void)
{
	void *volatile big = malloc(HEAP_GROW);

	free(big);
}

void dec_heap_off(void)
{
	off = 1;
}

void dec_heap_huge(void)
{
	void *volatile probe;
	uintptr_t lo, hi, at;
	int is_brk, is_heap;

	if (off)
		return;
	pthread_once(&once, setup);
	if (!enabled)
		return;
	probe = malloc(64);
	if (!probe)
		return;
	at = (uintptr_t)probe;
	free(probe);
	if (mapping_of(at, &lo, &hi, &is_brk, &is_heap))
		return;
	if (is_heap) {
		/* the whole heap, the part not yet writable too: what it
		 * grows into keeps the advice */
		if (madvise((void *)lo, GLIBC_THREAD_HEAP, MADV_HUGEPAGE))
			return;
		grow();
		/* its first range holds the arena, already touched in 4 KiB
		 * pages: made one huge page now, or the rest of it would be
		 * faulted in 4 KiB at a time (an error, before Linux 6.1, only
		 * leaves it so) */
		madvise((void *)lo, HUGE_PAGE, MADV_COLLAPSE);
	} else if (is_brk) {
		/* the main heap grows by brk, which makes a new mapping
		 * without the advice: grow it first, then advise it */
		grow();
		if (!mapping_of(at, &lo, &hi, &is_brk, &is_heap) && is_brk)
			madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
	}
}

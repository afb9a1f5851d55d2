/* SPDX-License-Identifier: MIT */
/* The decoding threads' heaps on transparent huge pages (heap.c, prefix
 * dec_heap_).
 *
 * A decode learns the code as it goes: its caches, the symbols and line
 * tables of the functions it meets and the writer's tables are new memory,
 * and a page touched for the first time is a page fault.  On the virtual
 * machines ptscope is developed on a fault costs about 11 us, so decoding
 * a stream of code that runs once or twice spent over half its time in
 * them (docs/bench-decoder.md, stream 4).  A 2 MiB huge page is one fault
 * for 512 pages.
 *
 * dec_heap_huge() asks for huge pages (MADV_HUGEPAGE) on the calling
 * thread's malloc heap and grows it by 16 MiB at once, so that the ranges
 * are whole when first touched.  The first call also has glibc serve large
 * blocks from the heaps and keep freed room.  It does nothing when the
 * kernel's THP mode is "never", when PTSCOPE_HUGEPAGES=0 is set, or when
 * the heap is not glibc's (a sanitizer's allocator, another libc).  Memory
 * is still taken only where touched, in 2 MiB steps.  Each decoding
 * thread calls it as it starts (threads.c); a program calls it on its own
 * thread before it allocates what the decode uses, such as the writer's
 * tables (ptscope decode does).  Part of the API: decoder.h. */
#ifndef PTSCOPE_DECODER_HEAP_H
#define PTSCOPE_DECODER_HEAP_H

void dec_heap_huge(void);

/* Have dec_heap_huge() do nothing from now on, on every thread: for a
 * decode too small for huge pages to pay for their setup (a few KB of
 * trace: ptscope decode).  Call it before any decoding thread starts. */
void dec_heap_off(void);

/* 1 if the kernel's THP mode is "always" or "madvise", else 0. */
int dec_heap_thp_available(void);

#endif /* PTSCOPE_DECODER_HEAP_H */

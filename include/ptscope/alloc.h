/* SPDX-License-Identifier: MIT */
/* Zeroed tables whose pages are written at once (header-only).
 *
 * calloc leaves fresh pages mapped to the kernel's shared zero page.  A
 * hash table is read (a lookup) before it is written (an insert), and
 * replacing the zero page on that write flushes the TLB of every CPU the
 * process runs on: once the process has threads (decode -j) that is an
 * interrupt to each, and in a virtual machine an exit.  It cost 6% of a
 * -j2 decode of python3's start-up, and a quarter of its gain over -j1.
 * ps_zalloc writes the zeros itself, so the pages are private from the
 * start.  For the decoder's caches and the writers' tables. */
#ifndef PTSCOPE_ALLOC_H
#define PTSCOPE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* @n entries of @size bytes, zeroed, or NULL. */
static inline void *ps_zalloc(size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = malloc(n * size);
	/* not memset: compilers turn malloc + memset into calloc */
	if (p)
		explicit_bzero(p, n * size);
	return p;
}

#endif /* PTSCOPE_ALLOC_H */

/* SPDX-License-Identifier: MIT */
/* A session's decoding threads, started with the session (crew.c, prefix
 * dec_crew_).
 *
 * A thread that is to decode first makes its heap ready (heap.h: huge
 * pages), which on the VMs ptscope is developed on took 1 to 13 ms a
 * thread (a 2 MiB page copied by MADV_COLLAPSE, a first fault on each
 * huge page).  Started when the session is made, the threads do that
 * while the caller loads the code (ELF files, DWARF), then wait for
 * work: a -j decode (split.c) no longer waits for them.  A session that
 * turns out to have nothing to cut starts them all the same, and their
 * cost is then waste: their start-up on cores otherwise idle, and a
 * 2 MiB huge page of heap each (dec_session_free joins them).  Each has
 * DEC_STACK_SIZE of stack (threads.h).  Internal to the decoder. */
#ifndef PTSCOPE_DECODER_CREW_H
#define PTSCOPE_DECODER_CREW_H

#include <stddef.h>

struct dec_crew;

/* Start @n threads; fewer if the system gives fewer (dec_crew_size says
 * how many).  Returns 0 or PS_ERR_NOMEM (*@out NULL). */
int dec_crew_new(size_t n, struct dec_crew **out);

/* Wait for the work handed out to end, stop the threads and free @c
 * (NULL is fine). */
void dec_crew_free(struct dec_crew *c);

/* The threads started (0 for NULL). */
size_t dec_crew_size(const struct dec_crew *c);

/* Run @fn(@arg) once on each of @n threads (at most dec_crew_size),
 * returning at once; dec_crew_wait waits for all @n to return.  The
 * work of one dec_crew_run must be waited for before the next. */
void dec_crew_run(struct dec_crew *c, size_t n, void (*fn)(void *), void *arg);
void dec_crew_wait(struct dec_crew *c);

#endif /* PTSCOPE_DECODER_CREW_H */

/* SPDX-License-Identifier: MIT */
/* Threads with room for libipt's block decoder (threads.c, prefix dec_).
 *
 * libipt 2.0's block decoder follows code that needs no trace (direct calls
 * and jumps) by calling itself once per cached step
 * (pt_blk_proceed_no_event_cached), up to the 65,535 instructions a block
 * may hold: some 14 MB of stack (208 bytes a step in Debian's build).  A
 * thread's usual 8 MB is enough for real code, where such chains are short,
 * but not for a damaged stream or code that calls itself with no branch
 * between (found by fuzzing: ptscope died of SIGSEGV).  So every thread of
 * the decoder that may run it gets DEC_STACK_SIZE bytes of stack, which
 * cost address space, not memory, until used; and the decode entry points
 * (dec_decode_streams, dec_decode_cpus) move to such a thread when the
 * caller's own is not one.  Internal to the decoder library. */
#ifndef PTSCOPE_DECODER_THREADS_H
#define PTSCOPE_DECODER_THREADS_H

#include <pthread.h>

#define DEC_STACK_SIZE (64u << 20)

/* pthread_create with DEC_STACK_SIZE of stack; returns its result. */
int dec_thread_create(pthread_t *th, void *(*fn)(void *), void *arg);

/* @fn(@arg) on a thread with DEC_STACK_SIZE of stack: this one if it is
 * such a thread, else a new one, joined before returning.  Returns what
 * @fn returned, its error detail (ptscope/error.h) carried over to the
 * caller's thread; PS_ERR_NOMEM when no thread can be made. */
int dec_with_stack(int (*fn)(void *), void *arg);

/* Error messages live in thread-local storage (ptscope/error.h), and an
 * error made on one thread may be reported on another: its message goes
 * with it.  dec_keep_detail replaces *@detail (owned) with @err's message
 * (NULL if @err is not an error) and returns @err; dec_give_detail makes
 * it @err's message on this thread and returns @err. */
int dec_keep_detail(char **detail, int err);
int dec_give_detail(const char *detail, int err);

#endif /* PTSCOPE_DECODER_THREADS_H */

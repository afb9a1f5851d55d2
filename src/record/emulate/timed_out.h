/* SPDX-License-Identifier: MIT */
/* A system call that returned because its timeout ran out (or a sleep)
 * took real time that no other thread caused: the emulators put that real
 * time on the virtual clock, where a call that waited for another thread
 * gets the other thread's virtual time instead. */
#ifndef PTSCOPE_RECORD_EMULATE_TIMED_OUT_H
#define PTSCOPE_RECORD_EMULATE_TIMED_OUT_H

#include <stdint.h>

/* 1 if system call @nr returning @ret (-errno on failure) slept or
 * timed out. */
int emu_timed_out(uint64_t nr, int64_t ret);

#endif /* PTSCOPE_RECORD_EMULATE_TIMED_OUT_H */

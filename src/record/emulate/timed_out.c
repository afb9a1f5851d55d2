/* SPDX-License-Identifier: MIT */
/* Which system calls ended by running out their time (see timed_out.h). */
#include <errno.h>
#include <sys/syscall.h>

#include "src/record/emulate/timed_out.h"

int emu_timed_out(uint64_t nr, int64_t ret)
{
	switch (nr) {
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
		/* Slept its time, or until a signal: real either way. */
		return 1;
	case SYS_futex:
	case SYS_mq_timedreceive:
	case SYS_io_getevents:
		return ret == -ETIMEDOUT;
	case SYS_rt_sigtimedwait:
	case SYS_semtimedop:
		return ret == -EAGAIN;
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return ret == 0;
	default:
		return 0;
	}
}

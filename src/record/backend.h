/* SPDX-License-Identifier: MIT */
/* The recording backends (engines) and choosing one.  The recorder core
 * (core/) does not know how PT is produced; each backend plugs in through
 * struct rec_backend (core/core.h), lives in a folder of its own and owns
 * its control loop:
 *
 *   step/      ptrace single-step + the PT encoder; runs anywhere and can
 *              attach; slow (10^4..10^5 insn/s)
 *   qemu/      qemu-x86_64 with our TCG plugin writing PT (the plugin is
 *              the top-level qemu/); run only; tens of millions of insn/s
 *   intel-pt/  the intel_pt PMU in AUX snapshot mode (hardware)
 *   sample/    call-stack samples (cycles or cpu-clock) in an overwrite
 *              ring: no PT, approximate spans, production cost; run and
 *              attach
 *
 * Names a user may give: auto (intel-pt where the PMU exists, else
 * sample for attach where a sampling event opens, and emulated for run),
 * emulated (the best emulator for the command: qemu for run when
 * qemu-x86_64 is installed, step otherwise and for attach), step, qemu,
 * sample, intel-pt.
 */
#ifndef PTSCOPE_RECORD_BACKEND_H
#define PTSCOPE_RECORD_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/record/core/core.h"

extern const struct rec_backend rec_backend_step;
extern const struct rec_backend rec_backend_qemu;
extern const struct rec_backend rec_backend_intel_pt;
extern const struct rec_backend rec_backend_sample;

/* The backend for @name (see above; NULL means auto) for a run (@attach
 * 0) or an attach (1).  *why gets a one-line notice to show the user, or
 * NULL.  Returns 0, PS_ERR_INVAL (unknown name, or a backend that cannot
 * do this: detail says which to use), PS_ERR_NO_HW (intel-pt without the
 * PMU, qemu without qemu-x86_64: detail says what to do), or
 * PS_ERR_UNSUPPORTED. */
int rec_backend_select(const char *name, int attach,
		       const struct rec_backend **out, const char **why);

/* 1 if /sys/bus/event_source/devices/intel_pt exists. */
int rec_have_intel_pt(void);

/* The qemu-x86_64 to run (PTSCOPE_QEMU or PATH) into @buf; 0 if found,
 * else PS_ERR_NOT_FOUND. */
int rec_find_qemu(char *buf, size_t size);

#endif /* PTSCOPE_RECORD_BACKEND_H */

/* SPDX-License-Identifier: MIT */
/* Choosing a backend: intel-pt where the CPU has it, else sampling for
 * attach and the best emulator for run (backend.h).  It sits above the backends: it
 * asks each one whether this machine can run it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/backend.h"
#include "src/record/intel-pt/pt_pmu.h"
#include "src/record/qemu/qemu_engine.h"
#include "src/record/sample/sample_probe.h"

#define INTEL_PT_PMU "/sys/bus/event_source/devices/intel_pt"

int rec_have_intel_pt(void)
{
	return access(INTEL_PT_PMU, F_OK) == 0;
}

int rec_find_qemu(char *buf, size_t size)
{
	return qemu_find(buf, size);
}

/* The hardware backend, where the PMU exists (its settings are checked
 * when recording starts: intel_pt.c). */
static int intel_pt_check(const struct rec_backend **out)
{
	struct ptpmu_cpu cpu;

	if (!rec_have_intel_pt()) {
		ptpmu_cpu_probe(&cpu);
		return ps_err_detail(PS_ERR_NO_HW, "%s",
				     ptpmu_missing_reason(&cpu));
	}
	*out = &rec_backend_intel_pt;
	return 0;
}

static int have_qemu(void)
{
	char path[PATH_MAX];

	if (!rec_backend_qemu.run)
		return 0;
	return rec_find_qemu(path, sizeof(path)) == 0;
}

/* 1 if a sampling event opens here (the sample backend can work). */
static int can_sample(void)
{
	struct sprobe p;

	sprobe_run(&p);
	return sprobe_event_name(&p) != NULL;
}

/* "emulated": qemu for a run when it is installed, else step. */
static const struct rec_backend *best_emulator(int attach, const char **why,
					       int automatic)
{
	if (attach) {
		if (automatic)
			*why = "backend: step (no intel_pt PMU on this CPU; "
			       "attach single-steps the target, so it runs "
			       "much slower while traced)";
		return &rec_backend_step;
	}
	if (have_qemu()) {
		if (automatic)
			*why = "backend: qemu (no intel_pt PMU on this CPU; "
			       "the command runs under qemu-x86_64, which "
			       "writes its PT)";
		return &rec_backend_qemu;
	}
	*why = "backend: step (no intel_pt PMU, and qemu-x86_64 is not "
	       "installed: install qemu-user to trace thousands of times "
	       "faster)";
	return &rec_backend_step;
}

int rec_backend_select(const char *name, int attach,
		       const struct rec_backend **out, const char **why)
{
	*why = NULL;
	if (!name || !strcmp(name, "auto")) {
		if (rec_have_intel_pt()) {
			*out = &rec_backend_intel_pt;
			*why = "backend: intel-pt (this CPU has Intel PT: the "
			       "target runs at full speed while traced)";
			return 0;
		}
		if (attach && can_sample()) {
			/* Production cost: a running program must not be
			 * slowed ten thousand times by default. */
			*out = &rec_backend_sample;
			*why = "backend: sample (no intel_pt PMU on this CPU: "
			       "call stacks are sampled, so spans are "
			       "approximate; --backend=step is exact but slows "
			       "the program about ten thousand times)";
			return 0;
		}
		*out = best_emulator(attach, why, 1);
		return 0;
	}
	if (!strcmp(name, "sample")) {
		*out = &rec_backend_sample;
		return 0;
	}
	if (!strcmp(name, "emulated")) {
		*out = best_emulator(attach, why, 0);
		return 0;
	}
	if (!strcmp(name, "step")) {
		*out = &rec_backend_step;
		return 0;
	}
	if (!strcmp(name, "qemu")) {
		char path[PATH_MAX];
		int r;

		if (attach)
			return ps_err_detail(
			    PS_ERR_INVAL,
			    "the qemu backend cannot attach to a running "
			    "process (QEMU must start it); use --backend=step");
		if (!rec_backend_qemu.run)
			return ps_err_detail(PS_ERR_UNSUPPORTED,
					     "this build has no qemu backend; "
					     "use --backend=step");
		r = rec_find_qemu(path, sizeof(path));
		if (r)
			return ps_err_detail(PS_ERR_NO_HW, "%s",
					     ps_err_message(r));
		*out = &rec_backend_qemu;
		return 0;
	}
	if (!strcmp(name, "intel-pt") || !strcmp(name, "intel_pt"))
		return intel_pt_check(out);
	return ps_err_detail(PS_ERR_INVAL,
			     "unknown backend '%s': use auto, emulated, qemu, "
			     "step, sample or intel-pt",
			     name);
}

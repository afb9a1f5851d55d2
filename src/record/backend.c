/* Choosing a backend: intel-pt where the CPU has it, else emulated. */
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/backend.h"

#define INTEL_PT_PMU "/sys/bus/event_source/devices/intel_pt"

int rec_have_intel_pt(void)
{
	return access(INTEL_PT_PMU, F_OK) == 0;
}

/* The hardware backend's state of play on this machine. */
static int intel_pt_check(void)
{
	if (!rec_have_intel_pt())
		return ps_err_detail(PS_ERR_NO_HW,
				     "intel_pt PMU not found: this CPU has no "
				     "Intel PT; use --backend=emulated");
	return ps_err_detail(PS_ERR_UNSUPPORTED,
			     "this ptscope build has no intel-pt recorder "
			     "yet (the PMU is present); use "
			     "--backend=emulated");
}

int rec_backend_select(const char *name, const struct rec_backend_ops **out,
		       const char **why)
{
	*why = NULL;
	if (!name || !strcmp(name, "auto")) {
		if (rec_have_intel_pt())
			*why = "backend: emulated (the intel_pt PMU is "
			       "present, but this build records with the "
			       "emulator)";
		else
			*why = "backend: emulated (no intel_pt PMU on this "
			       "CPU; execution is single-stepped, so the "
			       "target runs much slower)";
		*out = &rec_backend_emulated;
		return 0;
	}
	if (!strcmp(name, "emulated")) {
		*out = &rec_backend_emulated;
		return 0;
	}
	if (!strcmp(name, "intel-pt") || !strcmp(name, "intel_pt"))
		return intel_pt_check();
	return ps_err_detail(PS_ERR_INVAL,
			     "unknown backend '%s': use auto, intel-pt or "
			     "emulated",
			     name);
}

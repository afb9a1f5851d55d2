/* SPDX-License-Identifier: MIT */
/* The intel_pt PMU as the kernel publishes it (prefix ptpmu_): its event
 * type, where each config field sits (format/NAME: "config:14-17") and
 * what the CPU can do (caps/NAME, hex), all read from sysfs; then the
 * perf_event_attr config for a --timer-resolution.  Nothing about the
 * PMU is assumed: a field or capability the kernel does not list is
 * absent, and an option that needs it is refused with the reason.
 */
#ifndef PTSCOPE_RECORD_PT_PMU_H
#define PTSCOPE_RECORD_PT_PMU_H

#include <stdint.h>

#include "src/record/intel-pt/pt_kernel.h"

/* One format field: @bits bits at @shift of config word @word
 * (0 config, 1 config1, 2 config2).  @present 0: the kernel lacks it. */
struct ptpmu_field {
	int present;
	uint8_t word;
	uint8_t shift;
	uint8_t bits;
};

struct ptpmu {
	uint32_t type; /* perf_event_attr.type */
	struct ptpmu_field pt, tsc, mtc, cyc, branch, noretcomp, mtc_period,
	    cyc_thresh, psb_period, ptw, fup_on_ptw;
	/* caps/ (0 when the file is missing) */
	uint64_t cap_mtc, cap_psb_cyc, cap_ip_filtering, cap_num_address_ranges,
	    cap_topa_output, cap_topa_multiple_entries, cap_single_range_output,
	    cap_ptwrite;
	uint64_t mtc_periods;	     /* bit n: mtc_period n allowed */
	uint64_t cycle_thresholds;   /* bit n: cyc_thresh n allowed */
	uint64_t psb_periods;	     /* bit n: psb_period n allowed */
	uint64_t max_nonturbo_ratio; /* 0 if unknown */
};

/* What the CPU says about itself (cpuid), for the "no PT" sentence. */
struct ptpmu_cpu {
	int intel;	/* GenuineIntel */
	int hypervisor; /* cpuid 1 ecx bit 31: a virtual machine */
	int pt_cpuid;	/* cpuid 7 ebx bit 25: the CPU reports Intel PT */
};

/* This CPU's facts. */
void ptpmu_cpu_probe(struct ptpmu_cpu *cpu);

/* Read the intel_pt PMU below k->pmu_root.  Returns 0, PS_ERR_NO_HW (no
 * such PMU: the detail is ptpmu_missing_reason's sentence for @cpu) or
 * PS_ERR_FORMAT (a file the kernel wrote is not understood: detail names
 * it). */
int ptpmu_discover(const struct ptk_ops *k, const struct ptpmu_cpu *cpu,
		   struct ptpmu *pmu);

/* Parse one format file's text ("config:0", "config:14-17",
 * "config2:0-31").  Returns 0 or PS_ERR_FORMAT. */
int ptpmu_parse_format(const char *text, struct ptpmu_field *f);

/* Put @value into field @f of @cfg[3].  Returns 0, PS_ERR_UNSUPPORTED
 * (field absent) or PS_ERR_INVAL (value does not fit). */
int ptpmu_set(const struct ptpmu_field *f, uint64_t value, uint64_t cfg[3]);

/* Why there is no intel_pt PMU, as one sentence with what to do. */
const char *ptpmu_missing_reason(const struct ptpmu_cpu *cpu);

enum ptpmu_timer {
	PTPMU_TIMER_DEFAULT, /* normal, or low where the CPU has no MTC */
	PTPMU_TIMER_LOW,     /* TSC packets only (at each PSB) */
	PTPMU_TIMER_NORMAL,  /* TSC + MTC */
	PTPMU_TIMER_HIGH     /* TSC + MTC (period as normal) + CYC */
};

/* "low", "normal", "high" → *out.  PS_ERR_INVAL otherwise. */
int ptpmu_parse_timer(const char *s, enum ptpmu_timer *out);

struct ptpmu_config {
	uint64_t cfg[3]; /* config, config1, config2 */
	int tsc, mtc, cyc;
	int ptw; /* PTW packets (with a FUP each) for PTWRITE: caps/ptwrite */
	unsigned mtc_period, cyc_thresh, psb_period;
	enum ptpmu_timer timer; /* what was chosen */
	const char *note;	/* why the default was lowered, or NULL */
};

/* The config for @timer.  Returns 0, or PS_ERR_UNSUPPORTED when the CPU
 * lacks what @timer needs (detail: which capability, what to use). */
int ptpmu_build(const struct ptpmu *pmu, enum ptpmu_timer timer,
		struct ptpmu_config *out);

#endif /* PTSCOPE_RECORD_PT_PMU_H */

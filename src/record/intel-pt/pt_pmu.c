/* SPDX-License-Identifier: MIT */
/* The intel_pt PMU from sysfs, and configs built from it (pt_pmu.h). */
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/pt_pmu.h"

void ptpmu_cpu_probe(struct ptpmu_cpu *cpu)
{
	unsigned a, b, c, d;
	char vendor[13];

	memset(cpu, 0, sizeof(*cpu));
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	cpu->intel = !strcmp(vendor, "GenuineIntel");
	if (a >= 7) {
		unsigned a7, b7, c7, d7;

		__cpuid_count(7, 0, a7, b7, c7, d7);
		cpu->pt_cpuid = (b7 >> 25) & 1;
	}
	__cpuid(1, a, b, c, d);
	cpu->hypervisor = (c >> 31) & 1;
}

const char *ptpmu_missing_reason(const struct ptpmu_cpu *cpu)
{
	if (!cpu->intel)
		return "intel_pt PMU not found: this CPU has no Intel PT (it "
		       "is not an Intel CPU); use --backend=emulated";
	if (cpu->hypervisor && !cpu->pt_cpuid)
		return "intel_pt PMU not found: this virtual machine's CPU "
		       "shows no Intel PT, so the hypervisor does not pass it "
		       "through (KVM: kvm_intel pt_mode=1 and a CPU model "
		       "with PT); use --backend=emulated";
	if (!cpu->pt_cpuid)
		return "intel_pt PMU not found: this CPU has no Intel PT (it "
		       "came with Broadwell, 2014); use --backend=emulated";
	return "intel_pt PMU not found: the CPU has Intel PT but the kernel "
	       "does not offer it (it needs Linux 4.1+ with "
	       "CONFIG_PERF_EVENTS); use --backend=emulated";
}

int ptpmu_parse_format(const char *text, struct ptpmu_field *f)
{
	unsigned lo, hi;
	int word, n = 0;

	memset(f, 0, sizeof(*f));
	if (!strncmp(text, "config:", 7))
		word = 0, text += 7;
	else if (!strncmp(text, "config1:", 8))
		word = 1, text += 8;
	else if (!strncmp(text, "config2:", 8))
		word = 2, text += 8;
	else
		return PS_ERR_FORMAT;
	if (sscanf(text, "%u-%u%n", &lo, &hi, &n) == 2)
		;
	else if (sscanf(text, "%u%n", &lo, &n) == 1)
		hi = lo;
	else
		return PS_ERR_FORMAT;
	text += n;
	if ((*text && *text != '\n') || hi < lo || hi > 63)
		return PS_ERR_FORMAT;
	f->present = 1;
	f->word = (uint8_t)word;
	f->shift = (uint8_t)lo;
	f->bits = (uint8_t)(hi - lo + 1);
	return 0;
}

int ptpmu_set(const struct ptpmu_field *f, uint64_t value, uint64_t cfg[3])
{
	uint64_t mask;

	if (!f->present)
		return PS_ERR_UNSUPPORTED;
	mask = f->bits == 64 ? ~0ull : (1ull << f->bits) - 1;
	if (value & ~mask)
		return PS_ERR_INVAL;
	cfg[f->word] =
	    (cfg[f->word] & ~(mask << f->shift)) | (value << f->shift);
	return 0;
}

static int read_field(const struct ptk_ops *k, const char *dir,
		      const char *name, struct ptpmu_field *f)
{
	char path[512], text[64];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/format/%s", dir, name);
	n = k->read_file(k->ctx, path, text, sizeof(text));
	if (n < 0) {
		memset(f, 0, sizeof(*f));
		return 0; /* this kernel has no such field */
	}
	if (ptpmu_parse_format(text, f))
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s holds '%.40s', not a config field "
				     "like 'config:14-17'",
				     path, text);
	return 0;
}

static int read_cap(const struct ptk_ops *k, const char *dir, const char *name,
		    uint64_t *out)
{
	char path[512];
	int r;

	snprintf(path, sizeof(path), "%s/caps/%s", dir, name);
	r = ptk_read_u64(k, path, 1, out);
	if (r == -EINVAL)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s is not a hexadecimal number", path);
	if (r)
		*out = 0;
	return 0;
}

int ptpmu_discover(const struct ptk_ops *k, const struct ptpmu_cpu *cpu,
		   struct ptpmu *pmu)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
	    {"pt", offsetof(struct ptpmu, pt)},
	    {"tsc", offsetof(struct ptpmu, tsc)},
	    {"mtc", offsetof(struct ptpmu, mtc)},
	    {"cyc", offsetof(struct ptpmu, cyc)},
	    {"branch", offsetof(struct ptpmu, branch)},
	    {"noretcomp", offsetof(struct ptpmu, noretcomp)},
	    {"mtc_period", offsetof(struct ptpmu, mtc_period)},
	    {"cyc_thresh", offsetof(struct ptpmu, cyc_thresh)},
	    {"psb_period", offsetof(struct ptpmu, psb_period)},
	    {"ptw", offsetof(struct ptpmu, ptw)},
	    {"fup_on_ptw", offsetof(struct ptpmu, fup_on_ptw)},
	};
	static const struct {
		const char *name;
		size_t off;
	} caps[] = {
	    {"mtc", offsetof(struct ptpmu, cap_mtc)},
	    {"psb_cyc", offsetof(struct ptpmu, cap_psb_cyc)},
	    {"ip_filtering", offsetof(struct ptpmu, cap_ip_filtering)},
	    {"num_address_ranges",
	     offsetof(struct ptpmu, cap_num_address_ranges)},
	    {"topa_output", offsetof(struct ptpmu, cap_topa_output)},
	    {"topa_multiple_entries",
	     offsetof(struct ptpmu, cap_topa_multiple_entries)},
	    {"single_range_output",
	     offsetof(struct ptpmu, cap_single_range_output)},
	    {"mtc_periods", offsetof(struct ptpmu, mtc_periods)},
	    {"cycle_thresholds", offsetof(struct ptpmu, cycle_thresholds)},
	    {"psb_periods", offsetof(struct ptpmu, psb_periods)},
	    {"ptwrite", offsetof(struct ptpmu, cap_ptwrite)},
	};
	char dir[400], path[512];
	uint64_t type;
	int r;

	memset(pmu, 0, sizeof(*pmu));
	snprintf(dir, sizeof(dir), "%s/intel_pt", k->pmu_root);
	snprintf(path, sizeof(path), "%s/type", dir);
	r = ptk_read_u64(k, path, 0, &type);
	if (r == -EINVAL || (!r && type > UINT32_MAX))
		return ps_err_detail(
		    PS_ERR_FORMAT, "%s does not hold a PMU type number", path);
	if (r)
		return ps_err_detail(PS_ERR_NO_HW, "%s",
				     ptpmu_missing_reason(cpu));
	pmu->type = (uint32_t)type;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		r = read_field(
		    k, dir, fields[i].name,
		    (struct ptpmu_field *)((char *)pmu + fields[i].off));
		if (r)
			return r;
	}
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		r = read_cap(k, dir, caps[i].name,
			     (uint64_t *)((char *)pmu + caps[i].off));
		if (r)
			return r;
	}
	snprintf(path, sizeof(path), "%s/max_nonturbo_ratio", dir);
	if (ptk_read_u64(k, path, 0, &pmu->max_nonturbo_ratio))
		pmu->max_nonturbo_ratio = 0;
	if (!pmu->pt.present && !pmu->branch.present)
		return ps_err_detail(PS_ERR_FORMAT,
				     "%s/format lists neither 'pt' nor "
				     "'branch': this kernel's intel_pt PMU "
				     "is not one ptscope knows",
				     dir);
	return 0;
}

int ptpmu_parse_timer(const char *s, enum ptpmu_timer *out)
{
	if (s && !strcmp(s, "low"))
		*out = PTPMU_TIMER_LOW;
	else if (s && !strcmp(s, "normal"))
		*out = PTPMU_TIMER_NORMAL;
	else if (s && !strcmp(s, "high"))
		*out = PTPMU_TIMER_HIGH;
	else
		return ps_err_detail(PS_ERR_INVAL,
				     "bad --timer-resolution '%s': use low, "
				     "normal or high",
				     s ? s : "");
	return 0;
}

/* The allowed value in bitmap @allowed nearest to @want (ties: the
 * smaller); -1 if none. */
static int nearest(uint64_t allowed, int want)
{
	for (int d = 0; d < 64; d++) {
		if (want - d >= 0 && want - d < 64 &&
		    (allowed >> (want - d) & 1))
			return want - d;
		if (want + d < 64 && (allowed >> (want + d) & 1))
			return want + d;
	}
	return -1;
}

static int lowest(uint64_t allowed, int from)
{
	for (int i = from; i < 64; i++)
		if (allowed >> i & 1)
			return i;
	return -1;
}

static int set(const struct ptpmu_field *f, uint64_t v, uint64_t cfg[3],
	       const char *name)
{
	int r = ptpmu_set(f, v, cfg);

	if (r == PS_ERR_UNSUPPORTED)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "the intel_pt PMU has no '%s' field "
				     "(format/%s): this kernel is too old for "
				     "that setting",
				     name, name);
	if (r)
		return ps_err_detail(PS_ERR_INTERNAL,
				     "%s=%llu does not fit its config field",
				     name, (unsigned long long)v);
	return 0;
}

/* MTC period 3 (every 8 crystal-clock periods) is perf's default. */
#define MTC_PERIOD_NORMAL 3

int ptpmu_build(const struct ptpmu *pmu, enum ptpmu_timer timer,
		struct ptpmu_config *c)
{
	int r, v;

	memset(c, 0, sizeof(*c));
	c->timer = timer;
	if (timer == PTPMU_TIMER_DEFAULT) {
		c->timer = PTPMU_TIMER_NORMAL;
		if (!pmu->cap_mtc || !pmu->mtc.present) {
			c->timer = PTPMU_TIMER_LOW;
			c->note = "timer resolution: low (this CPU has no MTC "
				  "packets, so times come from TSC packets "
				  "only)";
		}
	}
	/* pt (pass-through) enables branch tracing as perf does. */
	if (pmu->pt.present && (r = set(&pmu->pt, 1, c->cfg, "pt")))
		return r;
	if (pmu->branch.present && (r = set(&pmu->branch, 1, c->cfg, "branch")))
		return r;
	if (!pmu->tsc.present)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "the intel_pt PMU has no 'tsc' field, so "
				     "the trace would carry no time; this "
				     "kernel is too old for ptscope");
	if ((r = set(&pmu->tsc, 1, c->cfg, "tsc")))
		return r;
	c->tsc = 1;
	/* Short PSB periods: a wrapped snapshot decodes from its first
	 * PSB, so less is lost at its start. */
	if (pmu->psb_period.present && pmu->psb_periods) {
		v = lowest(pmu->psb_periods, 0);
		if ((r = set(&pmu->psb_period, (uint64_t)v, c->cfg,
			     "psb_period")))
			return r;
		c->psb_period = (unsigned)v;
	}
	/* PTWRITE's values (ptscope_write) where the CPU has it, each with a
	 * FUP naming the instruction. */
	if (pmu->cap_ptwrite && pmu->ptw.present) {
		if ((r = set(&pmu->ptw, 1, c->cfg, "ptw")) ||
		    (pmu->fup_on_ptw.present &&
		     (r = set(&pmu->fup_on_ptw, 1, c->cfg, "fup_on_ptw"))))
			return r;
		c->ptw = 1;
	}
	if (c->timer == PTPMU_TIMER_LOW)
		return 0;
	if (!pmu->cap_mtc || !pmu->mtc.present || !pmu->mtc_period.present)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "--timer-resolution=%s needs MTC packets, "
				     "which this CPU lacks (caps/mtc is 0); "
				     "use --timer-resolution=low",
				     c->timer == PTPMU_TIMER_HIGH ? "high"
								  : "normal");
	/* High resolution comes from CYC, not from a faster MTC: perf keeps
	 * period 3 with cyc too, and period 0 would spend the ring on eight
	 * times the MTC packets. */
	v = nearest(pmu->mtc_periods, MTC_PERIOD_NORMAL);
	if (v < 0)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "the CPU lists no MTC period "
				     "(caps/mtc_periods is 0); use "
				     "--timer-resolution=low");
	if ((r = set(&pmu->mtc, 1, c->cfg, "mtc")) ||
	    (r = set(&pmu->mtc_period, (uint64_t)v, c->cfg, "mtc_period")))
		return r;
	c->mtc = 1;
	c->mtc_period = (unsigned)v;
	if (c->timer != PTPMU_TIMER_HIGH)
		return 0;
	if (!pmu->cap_psb_cyc || !pmu->cyc.present)
		return ps_err_detail(PS_ERR_UNSUPPORTED,
				     "--timer-resolution=high needs "
				     "cycle-accurate mode (CYC packets), "
				     "which this CPU lacks (caps/psb_cyc is "
				     "0); use --timer-resolution=normal");
	if ((r = set(&pmu->cyc, 1, c->cfg, "cyc")))
		return r;
	c->cyc = 1;
	/* Threshold 1 (a CYC at most every cycle that has other packets)
	 * where allowed: the finest timing that still batches cycles. */
	v = lowest(pmu->cycle_thresholds, 1);
	if (v < 0)
		v = lowest(pmu->cycle_thresholds, 0);
	if (v > 0 && pmu->cyc_thresh.present) {
		if ((r = set(&pmu->cyc_thresh, (uint64_t)v, c->cfg,
			     "cyc_thresh")))
			return r;
		c->cyc_thresh = (unsigned)v;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* The intel-pt backend turns on PTW packets (config ptw, and fup_on_ptw
 * so each names its PTWRITE) exactly where caps/ptwrite says the CPU has
 * PTWRITE, and the kernel double takes the config; a CPU without it gets
 * neither bit, which the kernel would refuse. */
#include <string.h>

#include "src/record/intel-pt/pt_pmu.h"
#include "tests/harness.h"
#include "tests/kernel/kdouble.h"

static const struct ptpmu_cpu intel_cpu = {1, 0, 1};

#define PTW_BIT (1ull << 12)	   /* format/ptw: config:12 */
#define FUP_ON_PTW_BIT (1ull << 5) /* format/fup_on_ptw: config:5 */

static int opens(struct kd *f, const struct ptpmu *p, uint64_t config)
{
	static int pid = 77;

	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = p->type;
	a.config = config;
	a.exclude_kernel = 1;
	a.disabled = 1;
	/* a task of its own each time: the PMU is exclusive per task */
	return f->ops.open(f, &a, pid++, -1, -1, 0) >= KD_FD0;
}

TEST(ptw_where_caps_say_so)
{
	struct kd f;
	struct ptpmu p;
	struct ptpmu_config c;

	kd_init(&f);
	kd_sysfs_set(&f, "caps/ptwrite", "1\n");
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(p.cap_ptwrite, 1);
	CHECK(p.ptw.present && p.ptw.shift == 12);
	CHECK(p.fup_on_ptw.present && p.fup_on_ptw.shift == 5);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_DEFAULT, &c), 0);
	CHECK(c.ptw);
	CHECK_EQ(c.cfg[0] & (PTW_BIT | FUP_ON_PTW_BIT),
		 PTW_BIT | FUP_ON_PTW_BIT);
	CHECK_EQ(c.cfg[0] & ~(PTW_BIT | FUP_ON_PTW_BIT), 0xe601);
	CHECK(opens(&f, &p, c.cfg[0]));
	/* low resolution too */
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_LOW, &c), 0);
	CHECK(c.ptw);
	CHECK(opens(&f, &p, c.cfg[0]));
	kd_fini(&f);
}

TEST(no_ptw_without_ptwrite)
{
	struct kd f;
	struct ptpmu p;
	struct ptpmu_config c;

	kd_init(&f);
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	CHECK_EQ(p.cap_ptwrite, 0);
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_DEFAULT, &c), 0);
	CHECK(!c.ptw);
	CHECK_EQ(c.cfg[0] & (PTW_BIT | FUP_ON_PTW_BIT), 0);
	CHECK(opens(&f, &p, c.cfg[0]));
	/* what the kernel says to the bits on such a CPU */
	CHECK(!opens(&f, &p, c.cfg[0] | PTW_BIT));
	/* a kernel without the format field: nothing to set */
	kd_sysfs_set(&f, "caps/ptwrite", "1\n");
	CHECK_EQ(ptpmu_discover(&f.ops, &intel_cpu, &p), 0);
	p.ptw.present = 0;
	CHECK_EQ(ptpmu_build(&p, PTPMU_TIMER_DEFAULT, &c), 0);
	CHECK(!c.ptw);
	kd_fini(&f);
}

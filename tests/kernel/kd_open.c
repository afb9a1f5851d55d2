/* SPDX-License-Identifier: MIT */
/* perf_event_open(2), ioctl(2) and close(2) of the kernel double
 * (kdouble.h), rule by rule from Linux 6.12 (6.13 where aux_action is
 * concerned): kernel/events/core.c, arch/x86/events/intel/pt.c,
 * kernel/events/hw_breakpoint.c, arch/x86/kernel/hw_breakpoint.c.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/kernel/kdouble.h"

/* RTIT_CTL bits (arch/x86/include/asm/msr-index.h): hardware, not the
 * format files, which only say where the user's config bits go. */
#define RTIT_TRACEEN (1ull << 0)
#define RTIT_CYCLEACC (1ull << 1)
#define RTIT_PWR_EVT (1ull << 4)
#define RTIT_FUP_ON_PTW (1ull << 5)
#define RTIT_MTC_EN (1ull << 9)
#define RTIT_TSC_EN (1ull << 10)
#define RTIT_DISRETC (1ull << 11)
#define RTIT_PTW_EN (1ull << 12)
#define RTIT_BRANCH_EN (1ull << 13)
#define RTIT_MTC_RANGE (0xfull << 14)
#define RTIT_CYC_THRESH (0xfull << 19)
#define RTIT_PSB_FREQ (0xfull << 24)
#define RTIT_EVENT_EN (1ull << 31)
#define RTIT_NOTNT (1ull << 55)
#define PT_CONFIG_MASK                                                         \
	(RTIT_TRACEEN | RTIT_TSC_EN | RTIT_DISRETC | RTIT_BRANCH_EN |          \
	 RTIT_CYCLEACC | RTIT_CYC_THRESH | RTIT_PSB_FREQ | RTIT_MTC_EN |       \
	 RTIT_MTC_RANGE | RTIT_PWR_EVT | RTIT_EVENT_EN | RTIT_NOTNT |          \
	 RTIT_FUP_ON_PTW | RTIT_PTW_EN)

/* x86-64 TASK_SIZE_MAX with 4-level paging. */
#define TASK_SIZE_MAX ((1ull << 47) - KD_PAGE)
#define HBP_NUM 4

struct kd_event *kd_event(struct kd *k, int fd)
{
	int i = fd - KD_FD0;

	return i >= 0 && i < k->nev && !k->ev[i].closed ? &k->ev[i] : NULL;
}

struct kd_event *kd_find(struct kd *k, enum kd_kind kind, pid_t tid)
{
	for (int i = 0; i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];

		if (!e->closed && e->kind == kind && e->task &&
		    (tid < 0 || e->task->tid == tid))
			return e;
	}
	return NULL;
}

static int bit_allowed(long long caps, uint64_t v)
{
	return caps > 0 && v < 64 && ((uint64_t)caps >> v & 1);
}

/* pt_event_valid(): the config against PT_CONFIG_MASK and the caps. */
static int pt_event_valid(struct kd *k, uint64_t config)
{
	uint64_t v;

	if ((config & PT_CONFIG_MASK) != config)
		return 0;
	if (config & (RTIT_CYCLEACC | RTIT_CYC_THRESH | RTIT_PSB_FREQ)) {
		if (kd_cap(k, "psb_cyc") <= 0)
			return 0;
		v = (config & RTIT_PSB_FREQ) >> 24;
		if (v && !bit_allowed(kd_cap(k, "psb_periods"), v))
			return 0;
		v = (config & RTIT_CYC_THRESH) >> 19;
		if (v && !bit_allowed(kd_cap(k, "cycle_thresholds"), v))
			return 0;
	}
	if (config & (RTIT_MTC_EN | RTIT_MTC_RANGE)) {
		/* Setting mtc period bits without the mtc cap would #GP. */
		if (kd_cap(k, "mtc") <= 0 || kd_cap(k, "mtc_periods") <= 0)
			return 0;
		if (!bit_allowed(kd_cap(k, "mtc_periods"),
				 (config & RTIT_MTC_RANGE) >> 14))
			return 0;
	}
	if ((config & RTIT_PWR_EVT) && kd_cap(k, "power_event_trace") <= 0)
		return 0;
	if ((config & RTIT_EVENT_EN) && kd_cap(k, "event_trace") <= 0)
		return 0;
	if ((config & RTIT_NOTNT) && kd_cap(k, "tnt_disable") <= 0)
		return 0;
	if (config & (RTIT_PTW_EN | RTIT_FUP_ON_PTW)) {
		if (kd_cap(k, "ptwrite") <= 0)
			return 0;
		if ((config & RTIT_FUP_ON_PTW) && !(config & RTIT_PTW_EN))
			return 0;
	}
	/* Bit 0 passes BranchEn through; BranchEn without it is refused. */
	if (!(config & RTIT_TRACEEN) && (config & RTIT_BRANCH_EN))
		return 0;
	return 1;
}

/* perf_copy_attr(): aux_action is __reserved_3 before 6.13. */
static int copy_attr(struct kd *k, const struct perf_event_attr *a)
{
	uint32_t act = ptk_attr_aux_action(a);

	if (a->size != sizeof(*a) && a->size < PERF_ATTR_SIZE_VER0)
		return -E2BIG;
	if (k->kernel_minor < 13 && act)
		return -EINVAL;
	if (act & ~(PTK_AUX_START_PAUSED | PTK_AUX_PAUSE | PTK_AUX_RESUME))
		return -EINVAL;
	if (a->sample_type & ~(PERF_SAMPLE_MAX - 1))
		return -EINVAL;
	return 0;
}

/* hw_breakpoint_parse() and arch_build_bp_info(): instruction
 * breakpoints need bp_len == sizeof(long); a kernel address with
 * exclude_kernel is refused. */
static int bp_parse(const struct perf_event_attr *a)
{
	if (a->bp_type != HW_BREAKPOINT_X || a->bp_len != sizeof(long))
		return -EINVAL;
	if (a->bp_addr >= TASK_SIZE_MAX ||
	    a->bp_addr + sizeof(long) - 1 >= TASK_SIZE_MAX)
		return a->exclude_kernel ? -EINVAL : -EPERM;
	return 0;
}

/* The clock an event stamps with (perf_event_alloc: use_clockid). */
static int event_clock(const struct perf_event_attr *a)
{
	return a->use_clockid ? (int)a->clockid : -1;
}

static int group_check(struct kd *k, const struct perf_event_attr *a,
		       struct kd_task *t, int cpu, struct kd_event *g)
{
	(void)k;
	/* perf_event_open: a recursive hierarchy, another clock, another
	 * CPU, another task's context, exclusive or pinned: -EINVAL. */
	if (g->leader != g || event_clock(&g->attr) != event_clock(a) ||
	    g->cpu != cpu || g->task != t || a->exclusive || a->pinned)
		return -EINVAL;
	return 0;
}

static int live_bps(struct kd *k, const struct kd_task *t)
{
	int n = 0;

	for (int i = 0; i < k->nev; i++)
		n += !k->ev[i].closed && k->ev[i].kind == KD_BP &&
		     k->ev[i].task == t;
	return n;
}

static enum kd_kind kind_of(struct kd *k, const struct perf_event_attr *a)
{
	if (a->type == PERF_TYPE_BREAKPOINT)
		return KD_BP;
	if (a->type == PERF_TYPE_SOFTWARE)
		return KD_SW;
	if (kd_pmu_type(k) >= 0 && a->type == (uint32_t)kd_pmu_type(k))
		return KD_PT;
	return KD_OTHER;
}

static int open_checks(struct kd *k, struct perf_event_attr *a, pid_t pid,
		       int cpu, int group, struct kd_task **tp,
		       struct kd_event **gp)
{
	uint32_t act = ptk_attr_aux_action(a);
	long long par = kd_sysctl(k, "perf_event_paranoid");
	enum kd_kind kind = kind_of(k, a);
	struct kd_task *t = NULL;
	struct kd_event *g = NULL;
	int r;

	if ((r = copy_attr(k, a)))
		return r;
	/* Debian's and Android's perf_event_paranoid=3: no unprivileged
	 * perf_event_open at all. */
	if (par > 2 && !k->cap_perfmon)
		return -EACCES;
	/* perf_allow_kernel(). */
	if (!a->exclude_kernel && par > 1 && !k->cap_perfmon)
		return -EACCES;
	if (pid == -1 && cpu == -1)
		return -EINVAL;
	if (pid == -1 || cpu != -1)
		return -EINVAL; /* CPU-wide events are not modelled */
	/* find_lively_task_by_vpid(): -ESRCH for a task that is gone. */
	t = kd_task_get(k, pid ? pid : (pid_t)syscall(SYS_gettid));
	if (!t || t->exited)
		return -ESRCH;
	/* perf_init_event(): no PMU of this type. */
	if (kind == KD_OTHER)
		return -ENOENT;
	if (kind == KD_PT) {
		/* pt_event_init(). */
		if (!pt_event_valid(k, a->config))
			return -EINVAL;
		if (k->lbr_in_use)
			return -EBUSY;
	}
	if (kind == KD_BP) {
		if ((r = bp_parse(a)))
			return r;
		/* reserve_bp_slot(): the task's debug registers. */
		if (live_bps(k, t) >= HBP_NUM)
			return -ENOSPC;
	}
	/* perf_event_alloc(), 6.13: pause and resume together. */
	if ((act & PTK_AUX_PAUSE) && (act & PTK_AUX_RESUME))
		return -EINVAL;
	if ((act & PTK_AUX_START_PAUSED) && kind != KD_PT)
		return -EOPNOTSUPP;
	if (group != -1) {
		/* perf_fget_light(): not a perf fd. */
		g = kd_event(k, group);
		if (!g)
			return -EBADF;
		if ((r = group_check(k, a, t, cpu, g)))
			return r;
	}
	/* perf_get_aux_event(): pause/resume need an AUX group leader
	 * whose PMU can pause (PERF_PMU_CAP_AUX_PAUSE, intel_pt in 6.13). */
	if ((act & (PTK_AUX_PAUSE | PTK_AUX_RESUME)) &&
	    (!g || g->kind != KD_PT))
		return -EINVAL;
	/* exclusive_event_installable(): intel_pt is an exclusive PMU, one
	 * event of it per task context. */
	for (int i = 0; kind == KD_PT && i < k->nev; i++)
		if (!k->ev[i].closed && !k->ev[i].exited &&
		    k->ev[i].kind == KD_PT && k->ev[i].task == t)
			return -EBUSY;
	*tp = t;
	*gp = g;
	return 0;
}

static void log_open(struct kd *k, const struct kd_event *e, int r)
{
	const char *what = e->kind == KD_PT   ? "pt"
			   : e->kind == KD_BP ? "bp"
			   : e->kind == KD_SW ? "sw"
					      : "other";

	if (r < 0) {
		kd_log(k, "open %s %d refused %s", what,
		       e->task ? (int)e->task->tid : -1, strerror(-r));
		return;
	}
	if (e->kind == KD_BP)
		kd_log(k, "open bp %d 0x%llx group=%d pause=%u -> %d",
		       (int)e->task->tid, (unsigned long long)e->attr.bp_addr,
		       e->leader != e ? e->leader->fd : -1,
		       (ptk_attr_aux_action(&e->attr) & PTK_AUX_PAUSE) ? 1 : 0,
		       r);
	else if (e->kind == KD_PT)
		kd_log(k, "open pt %d config=0x%llx -> %d", (int)e->task->tid,
		       (unsigned long long)e->attr.config, r);
	else
		kd_log(k, "open %s %d -> %d", what, (int)e->task->tid, r);
}

int kd_open_op(void *ctx, struct perf_event_attr *a, pid_t pid, int cpu,
	       int group, unsigned long flags)
{
	struct kd *k = ctx;
	struct kd_task *t = NULL;
	struct kd_event *g = NULL, *e;
	int r;

	(void)flags;
	kd_sync(k);
	r = open_checks(k, a, pid, cpu, group, &t, &g);
	if (!r && k->fail_open) {
		r = -k->fail_open;
		k->fail_open = 0;
	}
	if (!r && k->nev == KD_MAX_EVENTS)
		r = -EMFILE;
	if (r) {
		struct kd_event tmp;

		memset(&tmp, 0, sizeof(tmp));
		tmp.kind = kind_of(k, a);
		tmp.task = t ? t : kd_task_find(k, pid);
		log_open(k, &tmp, r);
		return r;
	}
	e = &k->ev[k->nev];
	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->fd = KD_FD0 + k->nev++;
	e->kind = kind_of(k, a);
	e->attr = *a;
	e->task = t;
	e->cpu = cpu;
	e->leader = g ? g : e;
	e->enabled = !a->disabled;
	e->real_bp_fd = -1;
	log_open(k, e, e->fd);
	if (e->kind == KD_BP && t->real)
		kd_task_watch(k, t); /* and the real breakpoint behind it */
	return e->fd;
}

/* pt_event_stop() from event_sched_out(): the transaction ends. */
void kd_event_stop(struct kd *k, struct kd_event *e)
{
	if (e->kind == KD_PT && e->enabled && !e->exited)
		kd_pt_sched_out(k, e);
}

int kd_ioctl_op(void *ctx, int fd, unsigned long req, unsigned long arg)
{
	struct kd *k = ctx;
	struct kd_event *e;

	kd_sync(k);
	e = kd_event(k, fd);
	if (!e)
		return -EBADF;
	switch (req) {
	case PERF_EVENT_IOC_ENABLE:
		kd_log(k, "enable %d", fd);
		if (!e->enabled && !e->exited) {
			e->enabled = 1;
			if (e->kind == KD_PT)
				kd_pt_sched_in(k, e);
		}
		return 0;
	case PERF_EVENT_IOC_DISABLE:
		/* perf_event_disable() → event_sched_out() → pmu::del:
		 * pt_event_stop(PERF_EF_UPDATE) publishes aux_head. */
		kd_log(k, "disable %d", fd);
		kd_event_stop(k, e);
		e->enabled = 0;
		return 0;
	case PERF_EVENT_IOC_SET_FILTER: {
		int r = kd_filter_set(k, e, (const char *)arg);

		kd_log(k, "filter %d %s -> %d", fd, (const char *)arg, r);
		return r;
	}
	}
	return -ENOTTY;
}

void kd_close_op(void *ctx, int fd)
{
	struct kd *k = ctx;
	struct kd_event *e = kd_event(k, fd);

	kd_log(k, "close %d", fd);
	if (!e)
		return;
	/* perf_release → perf_event_release_kernel: the event leaves its
	 * context (a PT event still running publishes first); its group's
	 * siblings become singletons (perf_group_detach). */
	kd_event_stop(k, e);
	for (int i = 0; i < k->nev; i++)
		if (k->ev[i].leader == e && &k->ev[i] != e)
			k->ev[i].leader = &k->ev[i];
	/* The rings live on while mapped (the mapping holds them). */
	e->closed = 1;
}

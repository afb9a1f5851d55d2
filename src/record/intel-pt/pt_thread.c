/* SPDX-License-Identifier: MIT */
/* One thread's intel_pt event, rings and trigger breakpoints
 * (pt_thread.h). */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <asm/perf_regs.h>

#include "ptscope/error.h"
#include "src/record/intel-pt/aux_ring.h"
#include "src/record/intel-pt/pt_thread.h"

#define PAGE 4096ull
#define BP_PAGES 8
/* The PT event's own data ring holds only what the kernel writes there
 * for AUX: ITRACE_START and a PERF_RECORD_AUX at every sched-out.  Small,
 * and when it fills only those records are lost, never sideband. */
#define AUX_RECORD_PAGES 2
#define BP_USER_MAX 0x00007fffffffffffULL

const struct sb_layout ptt_pt_layout = {
    .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
    .sample_id_all = 1,
};

const struct sb_layout ptt_bp_layout = {
    .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		   PERF_SAMPLE_REGS_USER,
    .sample_id_all = 1,
    .sample_regs_user = 1ull << PERF_REG_X86_DI,
};

int ptt_paranoid(const struct ptk_ops *k)
{
	char path[300], buf[32];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/perf_event_paranoid", k->sysctl_root);
	n = k->read_file(k->ctx, path, buf, sizeof(buf));
	if (n <= 0)
		return -1000;
	return atoi(buf);
}

long ptt_mlock_kb(const struct ptk_ops *k)
{
	char path[300];
	uint64_t v;

	snprintf(path, sizeof(path), "%s/perf_event_mlock_kb", k->sysctl_root);
	if (ptk_read_u64(k, path, 0, &v))
		return -1000;
	return (long)v;
}

static int open_error(const struct ptt_config *c, int e, pid_t tid)
{
	int par = ptt_paranoid(c->k);

	switch (e) {
	case EACCES:
	case EPERM:
		if (c->kernel)
			return ps_err_detail(
			    PS_ERR_PERM,
			    "not allowed to trace kernel code with Intel PT "
			    "(perf_event_paranoid is %d): run as root, give "
			    "ptscope CAP_PERFMON, or set "
			    "/proc/sys/kernel/perf_event_paranoid to 1 or "
			    "lower; or drop --kernel",
			    par);
		return ps_err_detail(
		    PS_ERR_PERM,
		    "not allowed to trace with Intel PT (perf_event_paranoid "
		    "is %d): run as root, give ptscope CAP_PERFMON (setcap "
		    "cap_perfmon,cap_sys_ptrace+ep), or set "
		    "/proc/sys/kernel/perf_event_paranoid to 2 or lower",
		    par);
	case ESRCH:
		return ps_err_detail(PS_ERR_NOT_FOUND, "no thread %d",
				     (int)tid);
	case EBUSY:
		return ps_err_detail(PS_ERR_NO_HW,
				     "Intel PT is busy: another tool (perf, "
				     "a debugger, a VM monitor) is using it; "
				     "stop that tool and try again");
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		return ps_err_detail(PS_ERR_NO_HW,
				     "the kernel refused the intel_pt event "
				     "(%s): Intel PT is not usable here "
				     "(in a VM: no PT passthrough); use "
				     "--backend=emulated",
				     strerror(e));
	case EINVAL:
		return ps_err_detail(
		    PS_ERR_NO_HW,
		    "the intel_pt PMU rejected the configuration "
		    "(config 0x%llx): this CPU lacks a feature asked for; "
		    "try --timer-resolution=low",
		    (unsigned long long)c->cfg[0]);
	case EMFILE:
	case ENFILE:
		return ps_err_detail(PS_ERR_LIMIT,
				     "out of file descriptors (each traced "
				     "thread needs one per event): raise "
				     "'ulimit -n'");
	}
	return ps_err_detail(PS_ERR_IO,
			     "cannot open the intel_pt event on thread %d: %s",
			     (int)tid, strerror(e));
}

static void pt_attr(const struct ptt_config *c, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = c->type;
	a->size = sizeof(*a);
	a->config = c->cfg[0];
	a->config1 = c->cfg[1];
	a->config2 = c->cfg[2];
	a->disabled = 1;
	a->exclude_kernel = !c->kernel;
	a->exclude_hv = 1;
	a->sample_type = ptt_pt_layout.sample_type;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* Never wake a poller: its records are read at each look. */
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(AUX_RECORD_PAGES * PAGE);
}

/* The sideband event: a dummy software event on the same thread that only
 * carries MMAP2, COMM and EXIT records.  Enabled from the start: a disabled
 * event gets no sideband (perf_iterate_ctx skips it). */
static void sb_attr(const struct ptt_config *c, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->size = sizeof(*a);
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->sample_type = ptt_pt_layout.sample_type;
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* Wake a poller when the sideband ring is half full. */
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(c->data_pages * PAGE / 2);
	a->build_id = c->build_id != 0;
}

static int mlock_error(const struct ptt_config *c, int e)
{
	long kb = ptt_mlock_kb(c->k);

	return ps_err_detail(
	    PS_ERR_LIMIT,
	    "the kernel refused to map %llu KiB of AUX area (%s; "
	    "perf_event_mlock_kb is %ld): use a smaller --snapshot-size, or "
	    "raise /proc/sys/kernel/perf_event_mlock_kb (or run as root)",
	    (unsigned long long)(c->aux_size >> 10), strerror(e), kb);
}

static int ring_error(const struct ptt_config *c, int err, const char *what)
{
	if (err == -EPERM || err == -ENOMEM)
		return mlock_error(c, -err);
	return ps_err_detail(PS_ERR_IO, "cannot map the %s: %s", what,
			     strerror(-err));
}

/* The sideband event, opened and mapped (build ids where the kernel
 * knows them, 5.12+). */
static int open_sideband(struct ptt_config *c, struct ptt *t)
{
	const struct ptk_ops *k = c->k;
	struct perf_event_attr a;
	int fd, err = 0;
	void *p;

	sb_attr(c, &a);
	fd = k->open(k->ctx, &a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd == -EINVAL && c->build_id < 0) {
		a.build_id = 0;
		fd = k->open(k->ctx, &a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			c->build_id = 0;
	} else if (fd >= 0 && c->build_id < 0) {
		c->build_id = 1;
	}
	if (fd < 0)
		return open_error(c, -fd, t->tid);
	t->sb_fd = fd;
	t->sb_size = c->data_pages * PAGE;
	t->sb_map_len = (size_t)(t->sb_size + PAGE);
	p = k->mmap(k->ctx, fd, t->sb_map_len, PROT_READ | PROT_WRITE, 0, &err);
	if (!p)
		return ring_error(c, err, "sideband ring");
	t->sb_meta = p;
	t->sb_data = (const uint8_t *)p + PAGE;
	return 0;
}

static int map_rings(struct ptt_config *c, struct ptt *t)
{
	const struct ptk_ops *k = c->k;
	void *p;
	int err = 0;

	t->data_size = AUX_RECORD_PAGES * PAGE;
	t->map_len = (size_t)(t->data_size + PAGE);
	p = k->mmap(k->ctx, t->fd, t->map_len, PROT_READ | PROT_WRITE, 0, &err);
	if (!p)
		return ring_error(c, err, "AUX record ring");
	t->meta = p;
	t->data = (const uint8_t *)p + PAGE;
	t->meta->aux_offset = t->map_len;
	t->meta->aux_size = c->aux_size;
	/* PROT_READ only: overwrite mode (the kernel never waits for us). */
	p = k->mmap(k->ctx, t->fd, (size_t)c->aux_size, PROT_READ,
		    (off_t)t->map_len, &err);
	if (!p) {
		if (err == -EPERM || err == -ENOMEM || err == -EAGAIN)
			return mlock_error(c, -err);
		return ps_err_detail(
		    PS_ERR_IO, "cannot map the AUX area (%llu bytes): %s",
		    (unsigned long long)c->aux_size, strerror(-err));
	}
	t->aux = p;
	t->aux_len = c->aux_size;
	return 0;
}

int ptt_open(struct ptt_config *c, pid_t tid, const char *filter, struct ptt *t)
{
	const struct ptk_ops *k = c->k;
	struct perf_event_attr a;
	int fd, r;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->fd = -1;
	t->sb_fd = -1;
	for (int i = 0; i < PTT_MAX_BPS; i++)
		t->bp[i].fd = -1;
	pt_attr(c, &a);
	fd = k->open(k->ctx, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return open_error(c, -fd, tid);
	t->fd = fd;
	r = map_rings(c, t);
	if (!r)
		r = open_sideband(c, t);
	if (!r && filter) {
		r = k->ioctl(k->ctx, fd, PERF_EVENT_IOC_SET_FILTER,
			     (unsigned long)filter);
		if (r)
			r = ps_err_detail(
			    PS_ERR_INVAL,
			    "the kernel refused the address filter '%s' (%s): "
			    "check the ranges against the file and "
			    "caps/num_address_ranges",
			    filter, strerror(-r));
	}
	if (r)
		ptt_close(c, t);
	return r;
}

int ptt_enable(const struct ptt_config *c, struct ptt *t, int on)
{
	int r;

	if (t->fd < 0)
		return 0;
	r = c->k->ioctl(c->k->ctx, t->fd,
			on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
	if (r)
		return ps_err_detail(PS_ERR_IO, "cannot %s Intel PT: %s",
				     on ? "enable" : "disable", strerror(-r));
	t->enabled = on;
	return 0;
}

int ptt_snapshot(const struct ptt_config *c, struct ptt *t, uint8_t **buf,
		 size_t *len)
{
	int was = t->enabled, r, r2;
	uint64_t head;

	*buf = NULL;
	*len = 0;
	if (t->fd < 0 || !t->aux)
		return PS_ERR_NOT_FOUND;
	if (was && (r = ptt_enable(c, t, 0)))
		return r;
	head = __atomic_load_n(&t->meta->aux_head, __ATOMIC_ACQUIRE);
	r = aux_extract(t->aux, t->aux_len, head,
			aux_wrapped(t->aux, t->aux_len, head, t->aux_written),
			buf, len);
	if (was && (r2 = ptt_enable(c, t, 1)) && !r) {
		free(*buf);
		*buf = NULL;
		*len = 0;
		r = r2;
	}
	return r;
}

static int bp_error(const struct ptt_config *c, int e, pid_t tid, uint64_t addr)
{
	switch (e) {
	case EINVAL:
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "the kernel refused a breakpoint at 0x%llx "
		    "(%s): it is not an address a user-space "
		    "breakpoint can watch; check the trigger",
		    (unsigned long long)addr, strerror(e));
	case EACCES:
	case EPERM:
		return ps_err_detail(
		    PS_ERR_PERM,
		    "not allowed to set a hardware breakpoint on thread %d "
		    "(perf_event_paranoid is %d): run as root or lower "
		    "/proc/sys/kernel/perf_event_paranoid",
		    (int)tid, ptt_paranoid(c->k));
	case ENOSPC:
		return ps_err_detail(PS_ERR_LIMIT,
				     "all 4 debug registers of thread %d are "
				     "in use (a debugger or other triggers): "
				     "use fewer triggers",
				     (int)tid);
	case ESRCH:
		return ps_err_detail(PS_ERR_NOT_FOUND, "no thread %d",
				     (int)tid);
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		return ps_err_detail(PS_ERR_NO_HW,
				     "this kernel or CPU has no hardware "
				     "breakpoints (%s)",
				     strerror(e));
	}
	return ps_err_detail(PS_ERR_IO,
			     "cannot set a breakpoint on thread %d: %s",
			     (int)tid, strerror(e));
}

static void bp_attr(uint64_t addr, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_BREAKPOINT;
	a->size = sizeof(*a);
	a->bp_type = HW_BREAKPOINT_X;
	a->bp_addr = addr;
	a->bp_len = sizeof(long); /* x86 requires this for execute */
	a->sample_period = 1;
	a->sample_type = ptt_bp_layout.sample_type;
	a->sample_regs_user = ptt_bp_layout.sample_regs_user;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->wakeup_events = 1;
}

int ptt_bp_add(struct ptt_config *c, struct ptt *t, uint64_t addr)
{
	const struct ptk_ops *k = c->k;
	struct perf_event_attr a;
	struct ptt_bp *b;
	int fd = -1, err = 0, slot = -1;
	void *p;

	for (int i = 0; i < PTT_MAX_BPS; i++) {
		if (t->bp[i].fd >= 0 && t->bp[i].addr == addr)
			return 0;
		if (t->bp[i].fd < 0 && slot < 0)
			slot = i;
	}
	if (slot < 0)
		return ps_err_detail(PS_ERR_LIMIT,
				     "more than %d trigger addresses: a "
				     "thread has only %d debug registers",
				     PTT_MAX_BPS, PTT_MAX_BPS);
	if (!addr || addr > BP_USER_MAX)
		return ps_err_detail(PS_ERR_INVAL,
				     "address 0x%llx is not a user-space code "
				     "address",
				     (unsigned long long)addr);
	b = &t->bp[slot];
	bp_attr(addr, &a);
	if (c->aux_pause != 0 && t->fd >= 0) {
		ptk_attr_set_aux_action(&a, PTK_AUX_PAUSE);
		fd = k->open(k->ctx, &a, t->tid, -1, t->fd,
			     PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0) {
			c->aux_pause = 1;
			b->in_group = 1;
		} else if (fd != -EINVAL && fd != -EOPNOTSUPP && fd != -E2BIG) {
			return bp_error(c, -fd, t->tid, addr);
		}
	}
	if (fd < 0) {
		ptk_attr_set_aux_action(&a, 0);
		fd = k->open(k->ctx, &a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return bp_error(c, -fd, t->tid, addr);
		/* The same breakpoint without the pause was taken, so it was
		 * the pause the kernel refused (before Linux 6.13, or a PMU
		 * without it): stop PT from user space at the wake-up from
		 * now on.  A refused address says nothing about the pause. */
		if (c->aux_pause < 0)
			c->aux_pause = 0;
		b->in_group = 0;
	}
	b->map_len = (size_t)((BP_PAGES + 1) * PAGE);
	p = k->mmap(k->ctx, fd, b->map_len, PROT_READ | PROT_WRITE, 0, &err);
	if (!p) {
		k->close(k->ctx, fd);
		return ps_err_detail(err == -EPERM ? PS_ERR_PERM : PS_ERR_IO,
				     "cannot map the breakpoint's sample ring: "
				     "%s (perf_event_mlock_kb too small?)",
				     strerror(-err));
	}
	b->fd = fd;
	b->addr = addr;
	b->meta = p;
	b->data = (const uint8_t *)p + PAGE;
	b->size = BP_PAGES * PAGE;
	t->nbp++;
	return 0;
}

int ptt_bp_pending(const struct ptt *t, int i)
{
	const struct ptt_bp *b = &t->bp[i];

	return b->fd >= 0 &&
	       __atomic_load_n(&b->meta->data_head, __ATOMIC_ACQUIRE) !=
		   b->meta->data_tail;
}

struct sb_wrap {
	struct ptt *t;
	sb_record_fn fn;
	void *ctx;
};

/* Records of the PT event's own ring: the AUX records' flags, and how many
 * of them the kernel dropped. */
static int count_aux_record(void *ctx, const uint8_t *rec, size_t len)
{
	struct sb_wrap *w = ctx;
	struct sb_record r;

	if (!sb_parse(rec, len, &ptt_pt_layout, &r)) {
		if (r.type == PERF_RECORD_AUX) {
			/* In overwrite mode the size is the whole buffer at
			 * every sched-out: it says nothing about wraps. */
			if (!(r.u.aux.flags & PERF_AUX_FLAG_OVERWRITE))
				w->t->aux_written += r.u.aux.size;
			w->t->aux_truncated +=
			    !!(r.u.aux.flags & PERF_AUX_FLAG_TRUNCATED);
			w->t->aux_partial +=
			    !!(r.u.aux.flags & PERF_AUX_FLAG_PARTIAL);
		} else if (r.type == PERF_RECORD_LOST) {
			w->t->aux_records_lost += r.u.lost.lost;
		} else if (r.type == PERF_RECORD_ITRACE_START) {
			w->t->itrace_starts++;
		}
	}
	return w->fn ? w->fn(w->ctx, rec, len) : 0;
}

static int count_sideband(void *ctx, const uint8_t *rec, size_t len)
{
	struct sb_wrap *w = ctx;
	struct sb_record r;

	if (!sb_parse(rec, len, &ptt_pt_layout, &r) &&
	    r.type == PERF_RECORD_LOST)
		w->t->lost += r.u.lost.lost;
	return w->fn ? w->fn(w->ctx, rec, len) : 0;
}

int ptt_read_aux_records(struct ptt *t, sb_record_fn fn, void *ctx)
{
	struct sb_wrap w = {t, fn, ctx};

	if (t->fd < 0 || !t->meta)
		return 0;
	return sb_ring_read(t->meta, t->data, t->data_size, count_aux_record,
			    &w);
}

int ptt_read_sideband(struct ptt *t, sb_record_fn fn, void *ctx)
{
	struct sb_wrap w = {t, fn, ctx};

	if (t->sb_fd < 0 || !t->sb_meta)
		return 0;
	return sb_ring_read(t->sb_meta, t->sb_data, t->sb_size, count_sideband,
			    &w);
}

int ptt_read_bp(struct ptt *t, int i, sb_record_fn fn, void *ctx)
{
	struct ptt_bp *b = &t->bp[i];

	if (b->fd < 0)
		return 0;
	return sb_ring_read(b->meta, b->data, b->size, fn, ctx);
}

void ptt_bp_close_all(const struct ptt_config *c, struct ptt *t)
{
	for (int i = 0; i < PTT_MAX_BPS; i++) {
		struct ptt_bp *b = &t->bp[i];

		if (b->fd < 0)
			continue;
		if (b->meta)
			c->k->munmap(c->k->ctx, b->meta, b->map_len);
		c->k->close(c->k->ctx, b->fd);
		memset(b, 0, sizeof(*b));
		b->fd = -1;
	}
	t->nbp = 0;
}

void ptt_close(const struct ptt_config *c, struct ptt *t)
{
	ptt_bp_close_all(c, t);
	if (t->sb_meta)
		c->k->munmap(c->k->ctx, t->sb_meta, t->sb_map_len);
	if (t->sb_fd >= 0)
		c->k->close(c->k->ctx, t->sb_fd);
	t->sb_meta = NULL;
	t->sb_data = NULL;
	t->sb_fd = -1;
	if (t->aux)
		c->k->munmap(c->k->ctx, (void *)t->aux, (size_t)t->aux_len);
	if (t->meta)
		c->k->munmap(c->k->ctx, t->meta, t->map_len);
	if (t->fd >= 0)
		c->k->close(c->k->ctx, t->fd);
	t->aux = NULL;
	t->meta = NULL;
	t->data = NULL;
	t->fd = -1;
	t->enabled = 0;
}

/* SPDX-License-Identifier: MIT */
/* A double of the Linux kernel's perf_event and intel_pt code (prefix kd_),
 * for testing the intel-pt backend where there is no Intel PT.  It stands
 * behind struct ptk_ops (src/record/intel-pt/pt_kernel.h) and models, rule
 * by rule, what Linux 6.12 does; each rule names the kernel function it
 * comes from (kernel/events/core.c, kernel/events/ring_buffer.c,
 * arch/x86/events/intel/pt.c).  Files, one concept each:
 *
 *   kd_sysfs.c   the fake /sys/bus/event_source and /proc/sys/kernel
 *                trees (a Skylake client, a Broadwell), read back as the
 *                kernel would publish them, and the clocks (TSC, and a
 *                CLOCK_MONOTONIC that NTP may slew)
 *   kd_open.c    perf_event_open(2): permissions, pt_event_init and
 *                pt_event_valid against the caps, the exclusive PMU (one
 *                PT event per task), groups, aux_action; ioctl and close
 *   kd_ring.c    mmap(2) of the data ring and the AUX area (page counts,
 *                aux_offset, locked memory), records into the data ring
 *                (PERF_RECORD_LOST when full), the hardware writing the
 *                AUX area, and what a sched-out publishes
 *   kd_filter.c  address filters: parsing, pt's validation, binding a
 *                file range to a mapping, the MSR values
 *   kd_task.c    tasks: scripted ones, and real ones watched through the
 *                real kernel (a dummy software event per task tells of
 *                exec, exit, context switches, mmaps; a real breakpoint
 *                stands behind each fake one), and poll(2)
 *
 * It is test code: on a broken assumption it aborts.
 */
#ifndef PTSCOPE_TESTS_KERNEL_KDOUBLE_H
#define PTSCOPE_TESTS_KERNEL_KDOUBLE_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/record/intel-pt/pt_kernel.h"

#define KD_MAX_EVENTS 256
#define KD_MAX_TASKS 64
#define KD_MAX_FILTERS 8
#define KD_FD0 1000 /* fake fds: KD_FD0 + index (real fds stay below) */
#define KD_PAGE 4096ull

enum kd_kind { KD_PT, KD_BP, KD_SW, KD_OTHER };

/* One address filter of an event (struct perf_addr_filter), and the
 * range the kernel bound it to (struct perf_addr_filter_range). */
struct kd_filter {
	int action; /* 0 filter, 1 start, 2 stop */
	uint64_t offset, size;
	char path[256]; /* "" for a kernel address range */
	dev_t dev;
	ino_t ino;
	uint64_t start, rsize; /* bound range, 0/0 when not mapped */
};

/* A file mapping of a scripted task (a vm_area_struct). */
struct kd_map {
	uint64_t start, end, pgoff;
	int prot;
	dev_t dev;
	ino_t ino;
	char path[256];
};

/* A task as the kernel's task_struct: perf events stay with it across
 * exec (even when its tid changes, de_thread) until it exits. */
struct kd_task {
	int used;
	pid_t tid, pid; /* current tid (it can change at exec) and tgid */
	int exited;
	int real;      /* a live process of this machine */
	int shadow_fd; /* real dummy event on it, or -1 */
	struct perf_event_mmap_page *shadow_meta;
	size_t shadow_len;
	uint64_t shadow_lost;	/* real records the double missed */
	uint64_t switches;	/* sched-outs seen */
	struct kd_map maps[32]; /* scripted tasks' mm, by address */
	int nmaps;
};

struct kd_event {
	int used, closed;
	int fd;
	enum kd_kind kind;
	struct perf_event_attr attr;
	struct kd_task *task; /* NULL: a CPU-wide event (not modelled) */
	int cpu;
	struct kd_event *leader; /* itself for a group leader */
	int enabled;
	int exited; /* its task exited: PERF_EVENT_STATE_EXIT */
	/* the data ring (kd_ring.c) */
	struct perf_event_mmap_page *meta;
	size_t map_len;
	uint64_t data_size;
	uint64_t lost; /* records that did not fit, not yet reported */
	uint64_t nrecords;
	uint64_t wake_mark; /* data_head at the last watermark wake-up */
	int wake;	    /* perf_output_wakeup happened: POLLIN */
	/* the AUX area */
	uint8_t *aux;
	uint64_t aux_size;
	int aux_overwrite; /* mapped read-only: snapshot mode */
	uint64_t hw_pos;   /* where the hardware writes next (running) */
	uint64_t hw_written;
	uint64_t aux_flags; /* flags of the transaction in flight */
	int paused;	    /* aux_pause took effect */
	int itrace_logged;
	/* address filters (kd_filter.c) */
	struct kd_filter filters[KD_MAX_FILTERS];
	int nfilters;
	char filter_text[1024];
	/* a breakpoint on a real task: the real one behind it */
	int real_bp_fd; /* -1: none yet, -2: the real kernel refused */
	struct perf_event_mmap_page *real_bp_meta;
	size_t real_bp_len;
	uint64_t pinned_data, pinned_aux; /* pages charged to pinned_vm */
};

struct kd {
	struct ptk_ops ops;
	struct kd_event ev[KD_MAX_EVENTS];
	int nev;
	struct kd_task task[KD_MAX_TASKS];
	/* what the machine is */
	int kernel_minor;     /* 12: Linux 6.12 (no aux_action), 13: 6.13 */
	int ncpus;	      /* num_online_cpus() */
	int cap_perfmon;      /* CAP_PERFMON (or root) */
	int cap_ipc_lock;     /* CAP_IPC_LOCK: locked memory not limited */
	uint64_t memlock;     /* RLIMIT_MEMLOCK in bytes */
	int lbr_in_use;	      /* x86_add_exclusive fails: LBR/BTS users */
	int real_tasks;	      /* watch real tids through the real kernel */
	uint64_t user_locked; /* pages on user->locked_vm */
	uint64_t pinned_vm;   /* pages on mm->pinned_vm (the mapper's) */
	/* clocks (kd_sysfs.c) */
	uint64_t t0;	   /* CLOCK_MONOTONIC when the double started */
	uint64_t advanced; /* time a test made pass (kd_clock_advance) */
	uint64_t tsc_khz;  /* TSC rate */
	double mono_ppm;   /* CLOCK_MONOTONIC's NTP slew */
	/* test knobs for what the model does not produce by itself */
	int fail_open; /* next perf_event_open fails with -this */
	/* observation */
	char log[32768];
	size_t loglen;
	int poll_calls;
	size_t poll_nfds;
	char root[128], pmu_root[192], sysctl_root[192];
};

/* ---- kd_sysfs.c ---- */
/* A double of Linux 6.12 on a 4-CPU Skylake client with the default
 * sysctls (perf_event_paranoid 2, perf_event_mlock_kb 516), an
 * unprivileged user with RLIMIT_MEMLOCK 8 MiB: k->ops is its ptk_ops. */
void kd_init(struct kd *k);
void kd_fini(struct kd *k);
/* The intel_pt directories as those CPUs' kernels publish them. */
void kd_sysfs_skylake(struct kd *k);
void kd_sysfs_broadwell(struct kd *k);
/* Write @text to @rel below the intel_pt directory ("caps/mtc") or, with
 * @rel starting "sys/", below the sysctl directory. */
void kd_sysfs_set(struct kd *k, const char *rel, const char *text);
/* Read a value the way the kernel holds it: intel_pt's type, a cap (hex),
 * a sysctl (decimal).  Returns -1 when the file is missing. */
long long kd_pmu_type(struct kd *k);
long long kd_cap(struct kd *k, const char *name);
long long kd_sysctl(struct kd *k, const char *name);
/* Time passes: @ns of true time. */
void kd_clock_advance(struct kd *k, uint64_t ns);
/* The TSC and CLOCK_MONOTONIC now, and the perf mmap page's conversion
 * of a TSC value (time_mult/time_shift: no NTP slew). */
uint64_t kd_tsc(const struct kd *k);
uint64_t kd_mono(const struct kd *k);
void kd_time_conv(const struct kd *k, uint32_t *mult, uint16_t *shift);
/* One line into k->log. */
void kd_log(struct kd *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- kd_open.c ---- */
struct kd_event *kd_event(struct kd *k, int fd);
/* The first live event of @kind on task tid @tid (-1: any), or NULL. */
struct kd_event *kd_find(struct kd *k, enum kd_kind kind, pid_t tid);
/* An event stops (sched-out of a disabled or exiting event). */
void kd_event_stop(struct kd *k, struct kd_event *e);

/* ---- kd_ring.c ---- */
/* Output @len bytes of record @rec (header included, sample_id added by
 * the caller) into @e's data ring as perf_output_begin/end do. */
void kd_output(struct kd *k, struct kd_event *e, const void *rec, size_t len);
/* The sample_id trailer of @e for task @t at time @time into @out;
 * returns its length. */
size_t kd_sample_id(const struct kd_event *e, const struct kd_task *t,
		    uint64_t time, uint8_t *out);
/* The hardware writes @len bytes of trace for @e (running, enabled, not
 * paused: else they are not written). */
void kd_pt_hw_write(struct kd *k, struct kd_event *e, const uint8_t *bytes,
		    size_t len);
/* pt_event_stop(PERF_EF_UPDATE) + perf_aux_output_end: aux_head
 * published, a PERF_RECORD_AUX. */
void kd_pt_sched_out(struct kd *k, struct kd_event *e);
/* ITRACE_START at the first sched-in (perf_log_itrace_start). */
void kd_pt_sched_in(struct kd *k, struct kd_event *e);
void kd_ring_release(struct kd *k, struct kd_event *e);
extern void *(*const kd_mmap_op)(void *, int, size_t, int, off_t, int *);
extern void (*const kd_munmap_op)(void *, void *, size_t);

/* ---- kd_filter.c ---- */
/* PERF_EVENT_IOC_SET_FILTER: 0 or -errno. */
int kd_filter_set(struct kd *k, struct kd_event *e, const char *text);
/* Bind file filters to @t's mappings now (perf_event_addr_filters_apply)
 * and after a new executable mapping (perf_addr_filters_adjust). */
void kd_filter_apply(struct kd *k, struct kd_event *e);
void kd_filter_mmap(struct kd *k, struct kd_event *e, uint64_t start,
		    uint64_t end, uint64_t pgoff, dev_t dev, ino_t ino,
		    int exec);
/* The RTIT_ADDRn_A/B values of filter @i (pt_event_addr_filters_sync). */
void kd_filter_msrs(const struct kd_event *e, int i, uint64_t *a, uint64_t *b);

/* ---- kd_task.c ---- */
/* The task that tid @tid names now (created if new), or NULL. */
struct kd_task *kd_task_get(struct kd *k, pid_t tid);
struct kd_task *kd_task_find(struct kd *k, pid_t tid);
/* Watch a real task through the real kernel (kd->real_tasks). */
void kd_task_watch(struct kd *k, struct kd_task *t);
void kd_task_unwatch(struct kd *k, struct kd_task *t);
/* What the real kernel said since the last look. */
void kd_sync(struct kd *k);
/* Scripted events of task @tid: */
void kd_task_run(struct kd *k, pid_t tid, const uint8_t *pt, size_t len);
void kd_task_sched_out(struct kd *k, pid_t tid);
void kd_task_exit(struct kd *k, pid_t tid);
/* prctl(PR_SET_NAME): a PERF_RECORD_COMM. */
void kd_task_comm(struct kd *k, pid_t tid, const char *comm);
/* Thread @old_tid of @pid execs: it becomes tid @pid (de_thread), the
 * other threads exit. */
void kd_task_exec(struct kd *k, pid_t pid, pid_t old_tid, const char *comm);
/* @tid maps a file range (perf_event_mmap: MMAP2 records, filters). */
void kd_task_mmap(struct kd *k, pid_t tid, uint64_t start, uint64_t len,
		  uint64_t pgoff, int prot, const char *path);
/* A breakpoint of @tid fires at its address (the overflow handler: a
 * sample, aux_pause). */
void kd_bp_fire(struct kd *k, struct kd_event *bp, uint64_t rdi);
extern int (*const kd_poll_op)(void *, struct pollfd *, size_t, int);

#endif

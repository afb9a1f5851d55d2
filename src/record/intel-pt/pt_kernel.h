/* SPDX-License-Identifier: MIT */
/* The kernel calls of the intel-pt backend (prefix ptk_), as an ops
 * table: perf_event_open, ioctl, mmap/munmap, close, poll and reads of
 * small sysfs/procfs files.  ptk_real is the kernel; the unit tests put a
 * double in its place that owns fake rings and a fake sysfs tree, so the
 * backend's logic runs in `make check` on machines without Intel PT.
 *
 * Every call returns a negative errno on failure (never sets errno).
 */
#ifndef PTSCOPE_RECORD_PT_KERNEL_H
#define PTSCOPE_RECORD_PT_KERNEL_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* perf_event_attr.aux_action (Linux 6.13), in the word older headers
 * call __reserved_3. */
#define PTK_AUX_START_PAUSED (1u << 0)
#define PTK_AUX_PAUSE (1u << 1)
#define PTK_AUX_RESUME (1u << 2)

struct ptk_ops {
	/* perf_event_open(2): an fd or -errno. */
	int (*open)(void *ctx, struct perf_event_attr *attr, pid_t pid, int cpu,
		    int group_fd, unsigned long flags);
	/* ioctl(2) on a perf fd: 0 or -errno. */
	int (*ioctl)(void *ctx, int fd, unsigned long req, unsigned long arg);
	/* mmap(2) of @len bytes of @fd at @off (MAP_SHARED): the address,
	 * or NULL with *err = -errno. */
	void *(*mmap)(void *ctx, int fd, size_t len, int prot, off_t off,
		      int *err);
	void (*munmap)(void *ctx, void *addr, size_t len);
	void (*close)(void *ctx, int fd);
	/* poll(2): the number of ready fds, 0 on timeout, or -errno. */
	int (*poll)(void *ctx, struct pollfd *fds, size_t n, int timeout_ms);
	/* Read the small text file @path into @buf (NUL-terminated):
	 * bytes read, or -errno. */
	ssize_t (*read_file)(void *ctx, const char *path, char *buf,
			     size_t size);
	/* The perf clock's TSC conversion is measured against this
	 * CLOCK_MONOTONIC reading and rdtsc (see pt_time.c). */
	uint64_t (*rdtsc)(void *ctx);
	uint64_t (*monotonic_ns)(void *ctx);
	void *ctx;
	/* Where the event source PMUs live: "/sys/bus/event_source/devices"
	 * (a temporary tree in tests). */
	const char *pmu_root;
	/* /proc/sys/kernel (perf_event_paranoid, perf_event_mlock_kb are
	 * read from here for error sentences). */
	const char *sysctl_root;
};

/* The real kernel. */
extern const struct ptk_ops ptk_real;

/* Read an unsigned number (decimal, or hex when @hex) from a file through
 * @k.  Returns 0, or -errno / -EINVAL (not a number). */
int ptk_read_u64(const struct ptk_ops *k, const char *path, int hex,
		 uint64_t *out);

/* Set/get perf_event_attr.aux_action (see PTK_AUX_*). */
void ptk_attr_set_aux_action(struct perf_event_attr *attr, uint32_t bits);
uint32_t ptk_attr_aux_action(const struct perf_event_attr *attr);

#endif /* PTSCOPE_RECORD_PT_KERNEL_H */

/* SPDX-License-Identifier: MIT */
/* The real kernel behind struct ptk_ops (pt_kernel.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "src/record/intel-pt/pt_kernel.h"

static int real_open(void *ctx, struct perf_event_attr *attr, pid_t pid,
		     int cpu, int group_fd, unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);

	(void)ctx;
	return fd < 0 ? -errno : (int)fd;
}

static int real_ioctl(void *ctx, int fd, unsigned long req, unsigned long arg)
{
	(void)ctx;
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

static void *real_mmap(void *ctx, int fd, size_t len, int prot, off_t off,
		       int *err)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, off);

	(void)ctx;
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	return p;
}

static void real_munmap(void *ctx, void *addr, size_t len)
{
	(void)ctx;
	munmap(addr, len);
}

static void real_close(void *ctx, int fd)
{
	(void)ctx;
	close(fd);
}

static int real_poll(void *ctx, struct pollfd *fds, size_t n, int timeout_ms)
{
	int r = poll(fds, n, timeout_ms);

	(void)ctx;
	return r < 0 ? -errno : r;
}

static ssize_t real_read_file(void *ctx, const char *path, char *buf,
			      size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	(void)ctx;
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = 0;
	close(fd);
	return n;
}

static uint64_t real_rdtsc(void *ctx)
{
	(void)ctx;
	return __rdtsc();
}

static uint64_t real_monotonic_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const struct ptk_ops ptk_real = {
    .open = real_open,
    .ioctl = real_ioctl,
    .mmap = real_mmap,
    .munmap = real_munmap,
    .close = real_close,
    .poll = real_poll,
    .read_file = real_read_file,
    .rdtsc = real_rdtsc,
    .monotonic_ns = real_monotonic_ns,
    .pmu_root = "/sys/bus/event_source/devices",
    .sysctl_root = "/proc/sys/kernel",
};

int ptk_read_u64(const struct ptk_ops *k, const char *path, int hex,
		 uint64_t *out)
{
	char buf[64], *end;
	ssize_t n = k->read_file(k->ctx, path, buf, sizeof(buf));
	unsigned long long v;

	if (n < 0)
		return (int)n;
	errno = 0;
	v = strtoull(buf, &end, hex ? 16 : 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

/* aux_action sits right after aux_sample_size (offset 116). */
void ptk_attr_set_aux_action(struct perf_event_attr *attr, uint32_t bits)
{
	memcpy((char *)attr +
		   offsetof(struct perf_event_attr, aux_sample_size) +
		   sizeof(attr->aux_sample_size),
	       &bits, sizeof(bits));
}

uint32_t ptk_attr_aux_action(const struct perf_event_attr *attr)
{
	uint32_t bits;

	memcpy(&bits,
	       (const char *)attr +
		   offsetof(struct perf_event_attr, aux_sample_size) +
		   sizeof(attr->aux_sample_size),
	       sizeof(bits));
	return bits;
}

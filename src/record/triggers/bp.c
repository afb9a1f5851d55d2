/* SPDX-License-Identifier: MIT */
/* Execution breakpoints through perf_event_open (see bp.h): hardware ones,
 * or uprobes where the machine's debug registers take a breakpoint and
 * never fire it. */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <asm/perf_regs.h>

#include "ptscope/error.h"
#include "src/record/triggers/bp.h"

/* 2^BP_RING_ORDER data pages: at 56 bytes a sample, room for ~1,100 hits
 * between two reads, far more than a trigger needs. */
#define BP_RING_ORDER 4

/* Largest user-space address on x86-64 (canonical lower half). */
#define BP_USER_MAX 0x00007fffffffffffULL

struct bp {
	int fd;				   /* owned */
	struct perf_event_mmap_page *meta; /* owned mapping: meta + data */
	size_t map_len;
	const uint8_t *data; /* inside the mapping */
	uint64_t data_size;  /* power of two */
	uint64_t tail;	     /* our read position */
	uint64_t lost;
	uint64_t addr;
	pid_t tid;
	int uprobe; /* a uprobe stands in for the debug register */
};

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 99;
		fclose(f);
	}
	return v;
}

static int open_error(int e, pid_t tid, uint64_t addr)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return ps_err_detail(
		    PS_ERR_PERM,
		    "not allowed to set a hardware breakpoint "
		    "on thread %d (perf_event_paranoid is %d): "
		    "run as root or lower "
		    "/proc/sys/kernel/perf_event_paranoid",
		    (int)tid, paranoid_level());
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
				     "breakpoints (perf_event_open: %s)",
				     strerror(e));
	case EINVAL:
		return ps_err_detail(PS_ERR_INVAL,
				     "address 0x%llx cannot take a hardware "
				     "breakpoint",
				     (unsigned long long)addr);
	case ENOMEM:
		return PS_ERR_NOMEM;
	}
	return ps_err_detail(PS_ERR_IO,
			     "cannot set a breakpoint on thread %d: %s",
			     (int)tid, strerror(e));
}

/* What the debug register probe runs into. */
static __attribute__((noinline, used)) void bp_probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

static int open_bp(pid_t tid, uint64_t addr, int uprobe, struct bp **out);

int bp_hw_fires(void)
{
	static int known = -1; /* 1 fires, 0 silent, else an error */
	int v = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
	void (*volatile call)(void) = bp_probe_target;
	uint64_t hits = 0;
	struct bp *bp;

	if (v != -1)
		return v;
	v = open_bp(0, (uint64_t)(uintptr_t)call, 0, &bp);
	if (!v) {
		call();
		v = bp_count(bp, &hits) ? PS_ERR_IO : hits > 0;
		bp_close(bp);
	}
	__atomic_store_n(&known, v, __ATOMIC_RELEASE);
	return v;
}

/* The uprobe PMU's type (/sys/bus/event_source/devices/uprobe/type), or
 * -1 when the kernel has none. */
static int uprobe_pmu(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int t = -1;

	if (f) {
		if (fscanf(f, "%d", &t) != 1)
			t = -1;
		fclose(f);
	}
	return t;
}

/* The file and file offset @addr is mapped from in thread @tid's
 * process (0: this one), from /proc/TID/maps. */
static int file_of(pid_t tid, uint64_t addr, char *path, size_t size,
		   uint64_t *offset)
{
	char maps[64], line[4200], perms[8], file[4097];
	unsigned long long lo, hi, off;
	int found = 0;
	FILE *f;

	if (tid)
		snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)tid);
	else
		snprintf(maps, sizeof(maps), "/proc/self/maps");
	f = fopen(maps, "re");
	if (!f)
		return ps_err_detail(PS_ERR_NOT_FOUND, "no thread %d",
				     (int)tid);
	while (!found && fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4096[^\n]", &lo,
			   &hi, perms, &off, file) < 4 ||
		    addr < lo || addr >= hi)
			continue;
		found = file[0] == '/' ? 1 : -1;
		if (found < 0)
			break;
		*offset = addr - lo + off;
		/* The file the mapping holds, even one deleted or replaced
		 * since (its path would name another inode): the kernel
		 * follows the map_files link to it.  That link needs
		 * CAP_SYS_ADMIN; without it, the path as it is now. */
		snprintf(path, size, "/proc/%d/map_files/%llx-%llx",
			 tid ? (int)tid : (int)getpid(), lo, hi);
		if (access(path, F_OK)) {
			if (strstr(file, " (deleted)"))
				found = -1;
			else
				snprintf(path, size, "%s", file);
		}
	}
	fclose(f);
	if (found > 0)
		return 0;
	return ps_err_detail(PS_ERR_INVAL,
			     "address 0x%llx of thread %d is not in a file "
			     "(this machine's debug registers never fire, "
			     "so a breakpoint is a uprobe, which needs one)",
			     (unsigned long long)addr, (int)tid);
}

int bp_uprobe_attr(struct perf_event_attr *attr, pid_t tid, uint64_t addr,
		   char *path, size_t size)
{
	uint64_t offset = 0;
	int type = uprobe_pmu(), r;

	if (type < 0)
		return ps_err_detail(PS_ERR_NO_HW,
				     "this machine's debug registers never "
				     "fire and the kernel has no uprobes: no "
				     "breakpoint can be set (use the qemu "
				     "backend, which watches trigger "
				     "addresses itself)");
	r = file_of(tid, addr, path, size, &offset);
	if (r)
		return r;
	attr->type = (uint32_t)type;
	attr->bp_type = 0;
	attr->bp_addr = 0;
	attr->bp_len = 0;
	attr->config1 = (uint64_t)(uintptr_t)path; /* uprobe_path */
	attr->config2 = offset;			   /* probe_offset */
	return 0;
}

/* The breakpoint as a uprobe (bp_uprobe_attr) on thread @tid: its fd in
 * *@fd. */
static int open_uprobe(struct perf_event_attr *attr, pid_t tid, uint64_t addr,
		       int *fd)
{
	char path[4097];
	int r = bp_uprobe_attr(attr, tid, addr, path, sizeof(path)), e;

	if (r)
		return r;
	*fd = (int)syscall(SYS_perf_event_open, attr, tid, -1, -1,
			   PERF_FLAG_FD_CLOEXEC);
	if (*fd >= 0)
		return 0;
	e = errno;
	if (e == EINVAL || e == ENOTSUP)
		return ps_err_detail(
		    PS_ERR_INVAL,
		    "cannot put a uprobe at 0x%llx (%s+0x%llx) "
		    "in thread %d: %s",
		    (unsigned long long)addr, path,
		    (unsigned long long)attr->config2, (int)tid, strerror(e));
	return open_error(e, tid, addr);
}

int bp_open(pid_t tid, uint64_t addr, struct bp **out)
{
	return open_bp(tid, addr, bp_hw_fires() == 0, out);
}

int bp_open_uprobe(pid_t tid, uint64_t addr, struct bp **out)
{
	return open_bp(tid, addr, 1, out);
}

static int open_bp(pid_t tid, uint64_t addr, int uprobe, struct bp **out)
{
	struct perf_event_attr attr;
	long page = sysconf(_SC_PAGESIZE);
	struct bp *bp;
	void *map;
	int e;

	if (!out || tid < 0)
		return ps_err_detail(PS_ERR_INVAL, "bp_open: bad arguments");
	if (!addr || addr > BP_USER_MAX)
		return ps_err_detail(PS_ERR_INVAL,
				     "address 0x%llx is not a user-space code "
				     "address",
				     (unsigned long long)addr);
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_BREAKPOINT;
	attr.size = sizeof(attr);
	attr.bp_type = HW_BREAKPOINT_X;
	attr.bp_addr = addr;
	attr.bp_len = sizeof(long); /* x86 requires this for execute */
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_REGS_USER;
	attr.sample_regs_user = 1ULL << PERF_REG_X86_DI;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.wakeup_events = 1;
	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return PS_ERR_NOMEM;
	if (uprobe) {
		e = open_uprobe(&attr, tid, addr, &bp->fd);
		if (e) {
			free(bp);
			return e;
		}
	} else {
		bp->fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1,
				      PERF_FLAG_FD_CLOEXEC);
		if (bp->fd < 0) {
			e = errno;
			free(bp);
			return open_error(e, tid, addr);
		}
	}
	bp->uprobe = uprobe;
	bp->map_len = (size_t)page * ((1u << BP_RING_ORDER) + 1);
	map = mmap(NULL, bp->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   bp->fd, 0);
	if (map == MAP_FAILED) {
		e = errno;
		close(bp->fd);
		free(bp);
		return ps_err_detail(e == EPERM ? PS_ERR_PERM : PS_ERR_IO,
				     "cannot map the breakpoint's sample ring: "
				     "%s (perf_event_mlock_kb too small?)",
				     strerror(e));
	}
	bp->meta = map;
	/* Older kernels leave data_offset/size 0: data follows one page. */
	bp->data_size = bp->meta->data_size ? bp->meta->data_size
					    : (uint64_t)page << BP_RING_ORDER;
	bp->data =
	    (const uint8_t *)map +
	    (bp->meta->data_offset ? bp->meta->data_offset : (uint64_t)page);
	bp->tail = bp->meta->data_tail;
	bp->addr = addr;
	bp->tid = tid ? tid : (pid_t)syscall(SYS_gettid);
	*out = bp;
	return 0;
}

void bp_close(struct bp *bp)
{
	if (!bp)
		return;
	munmap(bp->meta, bp->map_len);
	close(bp->fd);
	free(bp);
}

int bp_fd(const struct bp *bp)
{
	return bp->fd;
}

uint64_t bp_addr(const struct bp *bp)
{
	return bp->addr;
}

pid_t bp_tid(const struct bp *bp)
{
	return bp->tid;
}

int bp_pending(const struct bp *bp)
{
	return __atomic_load_n(&bp->meta->data_head, __ATOMIC_ACQUIRE) !=
	       bp->tail;
}

/* Copy @len bytes at ring position @pos, which may wrap. */
static void ring_copy(const struct bp *bp, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (bp->data_size - 1);
	size_t first = len;

	if (off + len > bp->data_size)
		first = (size_t)(bp->data_size - off);
	memcpy(dst, bp->data + off, first);
	memcpy((uint8_t *)dst + first, bp->data, len - first);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v)); /* x86: host order is little-endian */
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Fields of a sample: ip, pid/tid, time, abi, [rdi]. */
static int parse_sample(const uint8_t *p, size_t len, struct bp_sample *s)
{
	uint64_t abi;

	if (len < 32)
		return PS_ERR_FORMAT;
	s->ip = le64(p);
	s->pid = le32(p + 8);
	s->tid = le32(p + 12);
	s->time_ns = le64(p + 16);
	abi = le64(p + 24);
	s->rdi = 0;
	if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		if (len < 40)
			return PS_ERR_FORMAT;
		s->rdi = le64(p + 32);
	}
	return 0;
}

int bp_read(struct bp *bp, bp_sample_fn fn, void *ctx)
{
	uint8_t rec[256];
	uint64_t head;
	int count = 0, r = 0;

	if (!bp || !fn)
		return ps_err_detail(PS_ERR_INVAL, "bp_read: bad arguments");
	head = __atomic_load_n(&bp->meta->data_head, __ATOMIC_ACQUIRE);
	while (bp->tail < head && r == 0) {
		struct perf_event_header h;
		struct bp_sample s;

		if (head - bp->tail < sizeof(h)) {
			r = PS_ERR_FORMAT;
			break;
		}
		ring_copy(bp, bp->tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - bp->tail) {
			r = ps_err_detail(PS_ERR_FORMAT,
					  "corrupt record in the breakpoint "
					  "ring of thread %d",
					  (int)bp->tid);
			break;
		}
		if (h.type == PERF_RECORD_SAMPLE ||
		    h.type == PERF_RECORD_LOST) {
			size_t n = h.size - sizeof(h);

			if (n > sizeof(rec))
				n = sizeof(rec); /* trailing fields unused */
			ring_copy(bp, bp->tail + sizeof(h), rec, n);
			if (h.type == PERF_RECORD_LOST) {
				/* { u64 id; u64 lost; } */
				if (n >= 16)
					bp->lost += le64(rec + 8);
			} else if (parse_sample(rec, n, &s) == 0) {
				if (bp->uprobe)
					s.ip =
					    bp->addr; /* not the int3's end */
				r = fn(ctx, &s);
				if (r)
					break; /* this record stays */
				count++;
			} else {
				r = ps_err_detail(PS_ERR_FORMAT,
						  "short sample in the "
						  "breakpoint ring of thread "
						  "%d",
						  (int)bp->tid);
				break;
			}
		}
		bp->tail += h.size;
	}
	/* Tell the kernel the space is free (after our reads). */
	__atomic_store_n(&bp->meta->data_tail, bp->tail, __ATOMIC_RELEASE);
	return r ? r : count;
}

uint64_t bp_lost(const struct bp *bp)
{
	return bp->lost;
}

int bp_count(const struct bp *bp, uint64_t *count)
{
	uint64_t v;

	if (!bp || !count)
		return ps_err_detail(PS_ERR_INVAL, "bp_count: bad arguments");
	if (read(bp->fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return ps_err_detail(PS_ERR_IO,
				     "cannot read the breakpoint counter: %s",
				     strerror(errno));
	*count = v;
	return 0;
}

int bp_is_uprobe(const struct bp *bp)
{
	return bp->uprobe;
}

int bp_enable(struct bp *bp, int on)
{
	if (!bp)
		return ps_err_detail(PS_ERR_INVAL, "bp_enable: no breakpoint");
	if (ioctl(bp->fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
		  0) < 0)
		return ps_err_detail(PS_ERR_IO, "cannot %s the breakpoint: %s",
				     on ? "enable" : "disable",
				     strerror(errno));
	return 0;
}

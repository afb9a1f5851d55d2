/* SPDX-License-Identifier: MIT */
/* One thread's sampling event in overwrite mode (sample_ring.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/sample/sample_ring.h"

#define PAGE 4096ull
#define MAX_CHAIN 512 /* call chain entries kept per sample */
#define MAX_LBR 64

static int paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -1000;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1000;
		fclose(f);
	}
	return v;
}

static int open_error(int e, pid_t tid, const struct sring_config *c)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return ps_err_detail(
		    PS_ERR_PERM,
		    "not allowed to sample thread %d (perf_event_paranoid is "
		    "%d): run as root, give ptscope CAP_PERFMON, or set "
		    "/proc/sys/kernel/perf_event_paranoid to 2 or lower",
		    (int)tid, paranoid());
	case ESRCH:
		return ps_err_detail(PS_ERR_NOT_FOUND, "no thread %d",
				     (int)tid);
	case EMFILE:
	case ENFILE:
		return ps_err_detail(PS_ERR_LIMIT,
				     "out of file descriptors (each sampled "
				     "thread needs one): raise 'ulimit -n'");
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		return ps_err_detail(
		    PS_ERR_NO_HW,
		    "the kernel refused the %s sampling event "
		    "(%s)",
		    c->attr.type == PERF_TYPE_HARDWARE ? "cycles" : "cpu-clock",
		    strerror(e));
	}
	return ps_err_detail(PS_ERR_IO,
			     "cannot open the sampling event on thread %d: %s",
			     (int)tid, strerror(e));
}

int sring_open(const struct sring_config *c, pid_t tid, struct sring *r)
{
	struct perf_event_attr a = c->attr;
	void *p;
	int fd;

	memset(r, 0, sizeof(*r));
	r->tid = tid;
	r->fd = -1;
	a.write_backward = 1;
	/* Nobody reads while it runs: no wake-ups. */
	a.watermark = 1;
	a.wakeup_watermark =
	    (uint32_t)(c->data_size > UINT32_MAX ? UINT32_MAX : c->data_size);
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return open_error(errno, tid, c);
	r->map_len = (size_t)(c->data_size + PAGE);
	/* PROT_READ only: overwrite mode (the kernel never waits for us). */
	p = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;

		close(fd);
		if (e == EPERM || e == ENOMEM)
			return ps_err_detail(
			    PS_ERR_LIMIT,
			    "the kernel refused to map %llu KiB of sample ring "
			    "(%s): use a smaller --snapshot-size, or raise "
			    "/proc/sys/kernel/perf_event_mlock_kb (or run as "
			    "root)",
			    (unsigned long long)(c->data_size >> 10),
			    strerror(e));
		return ps_err_detail(
		    PS_ERR_IO, "cannot map the sample ring: %s", strerror(e));
	}
	r->fd = fd;
	r->meta = p;
	r->data = (const uint8_t *)p + PAGE;
	r->size = c->data_size;
	return 0;
}

int sring_enable(struct sring *r, int on)
{
	if (r->fd < 0)
		return 0;
	if (ioctl(r->fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
		  0))
		return ps_err_detail(PS_ERR_IO, "cannot %s sampling: %s",
				     on ? "enable" : "disable",
				     strerror(errno));
	r->enabled = on;
	return 0;
}

/* Bounds-checked reads of one sample record. */
struct cur {
	const uint8_t *p;
	size_t len, off;
	int bad;
};

static uint64_t next_u64(struct cur *c)
{
	uint64_t v;

	if (c->bad || c->len - c->off < 8) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p + c->off, 8);
	c->off += 8;
	return v;
}

static const uint8_t *next_bytes(struct cur *c, uint64_t n)
{
	const uint8_t *p = c->p + c->off;

	if (c->bad || c->len - c->off < n) {
		c->bad = 1;
		return NULL;
	}
	c->off += n;
	return p;
}

/* One PERF_RECORD_SAMPLE (after its header) → a recording record. */
static int put_sample(const struct perf_event_attr *a, const uint8_t *rec,
		      size_t len, struct recs_buf *out)
{
	static uint64_t chain[MAX_CHAIN], lbr[2 * MAX_LBR], regs[64];
	struct cur c = {rec, len, 0, 0};
	uint64_t time = 0, n;
	size_t nchain = 0, nlbr = 0, nregs = 0, stack_len = 0;
	const uint8_t *stack = NULL;

	if (a->sample_type & PERF_SAMPLE_IP)
		next_u64(&c);
	if (a->sample_type & PERF_SAMPLE_TID)
		next_u64(&c);
	if (a->sample_type & PERF_SAMPLE_TIME)
		time = next_u64(&c);
	if (a->sample_type & PERF_SAMPLE_CALLCHAIN) {
		n = next_u64(&c);
		for (uint64_t i = 0; i < n && !c.bad; i++) {
			uint64_t ip = next_u64(&c);

			/* PERF_CONTEXT_USER and kin mark where a context
			 * begins; only user addresses are asked for. */
			if (ip >= (uint64_t)PERF_CONTEXT_MAX)
				continue;
			if (nchain < MAX_CHAIN)
				chain[nchain++] = ip;
		}
	}
	if (a->sample_type & PERF_SAMPLE_BRANCH_STACK) {
		n = next_u64(&c);
		for (uint64_t i = 0; i < n && !c.bad; i++) {
			uint64_t from = next_u64(&c), to = next_u64(&c);

			next_u64(&c); /* flags */
			if (nlbr < MAX_LBR) {
				lbr[2 * nlbr] = from;
				lbr[2 * nlbr + 1] = to;
				nlbr++;
			}
		}
	}
	if (a->sample_type & PERF_SAMPLE_REGS_USER) {
		uint64_t abi = next_u64(&c);

		if (abi != PERF_SAMPLE_REGS_ABI_NONE)
			for (int b = 0; b < 64; b++)
				if (a->sample_regs_user & (1ull << b))
					regs[nregs++] = next_u64(&c);
	}
	if (a->sample_type & PERF_SAMPLE_STACK_USER) {
		uint64_t size = next_u64(&c);

		if (size) {
			stack = next_bytes(&c, size);
			n = next_u64(&c); /* dyn_size: what was copied */
			stack_len = (size_t)(n < size ? n : size);
		}
	}
	if (c.bad || !nchain)
		return 0; /* damaged or cut by the overwrite: skip it */
	return recs_put(out, time, chain, nchain, regs, nregs, stack, stack_len,
			lbr, nlbr);
}

int sring_parse(const struct perf_event_attr *a, const uint8_t *data,
		uint64_t size, uint64_t head, struct recs_buf *out)
{
	uint64_t mask = size - 1, avail = 0 - head, off = 0;
	size_t *offs = NULL, n = 0, cap = 0;
	uint8_t *tmp = NULL;
	int r = 0;

	if (avail > size)
		avail = size; /* wrapped: the whole ring */
	/* Newest first: note where each record starts. */
	while (off + sizeof(struct perf_event_header) <= avail) {
		struct perf_event_header h;
		uint64_t at = (head + off) & mask;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(at + i) & mask];
		if (h.size < sizeof(h) || off + h.size > avail)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				size_t *np = realloc(offs, nc * sizeof(*np));

				if (!np) {
					free(offs);
					return PS_ERR_NOMEM;
				}
				offs = np;
				cap = nc;
			}
			offs[n++] = (size_t)off;
		}
		off += h.size;
	}
	tmp = malloc(65536);
	if (!tmp) {
		free(offs);
		return PS_ERR_NOMEM;
	}
	/* Oldest first into the recording. */
	while (n-- > 0 && !r) {
		uint64_t at = (head + offs[n]) & mask;
		struct perf_event_header h;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(at + i) & mask];
		for (size_t i = 0; i < h.size; i++)
			tmp[i] = data[(at + i) & mask];
		r = put_sample(a, tmp + sizeof(h), h.size - sizeof(h), out);
	}
	free(tmp);
	free(offs);
	return r;
}

int sring_extract(const struct sring_config *c, struct sring *r,
		  struct recs_buf *out)
{
	uint64_t head;
	uint32_t before = out->count;
	int rr;

	if (r->fd < 0 || !r->meta)
		return PS_ERR_NOT_FOUND;
	ioctl(r->fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1);
	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	rr = sring_parse(&c->attr, r->data, r->size, head, out);
	ioctl(r->fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0);
	if (!rr && out->count == before)
		return PS_ERR_NOT_FOUND;
	return rr;
}

void sring_close(struct sring *r)
{
	if (r->meta)
		munmap(r->meta, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	r->meta = NULL;
	r->data = NULL;
	r->fd = -1;
	r->enabled = 0;
}

/* SPDX-License-Identifier: MIT */
/* Tasks in the kernel double (kdouble.h).  Perf events belong to a
 * task_struct, not to a thread id: they follow it through exec — where a
 * thread other than the leader takes over the leader's tid (de_thread) —
 * and go to PERF_EVENT_STATE_EXIT when it exits (perf_event_exit_task),
 * after which poll(2) reports POLLHUP (perf_poll, is_event_hup).
 *
 * A task is scripted by the test (kd_task_run, kd_task_exec, ...) or, with
 * kd->real_tasks, is a real thread of this machine watched through the
 * real kernel: a dummy software event on it (comm, comm_exec, task,
 * mmap2, context_switch) says when it execs (and under which tid), exits,
 * is switched out or maps code, and a real hardware breakpoint stands
 * behind each fake one.  What those records mean for the PT events is the
 * double's model: a PERF_RECORD_AUX per sched-out, the sideband records
 * the kernel would write, the filters moved at exec and mmap.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "src/record/triggers/bp.h"
#include "tests/kernel/kdouble.h"

#define SHADOW_PAGES 64 /* 256 KiB: a busy task's switches between looks */
#define TRAILER 16	/* TID + TIME: the layout every record here uses */

struct kd_task *kd_task_find(struct kd *k, pid_t tid)
{
	struct kd_task *gone = NULL;

	for (int i = 0; i < KD_MAX_TASKS; i++) {
		struct kd_task *t = &k->task[i];

		if (!t->used || t->tid != tid)
			continue;
		if (!t->exited)
			return t;
		gone = t;
	}
	return gone;
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	FILE *fp;
	pid_t tgid = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(fp);
	return tgid;
}

struct kd_task *kd_task_get(struct kd *k, pid_t tid)
{
	struct kd_task *t = kd_task_find(k, tid);
	pid_t tgid = 0;

	/* A scripted tid stays gone once exited; a real one may name a new
	 * thread (tids are reused). */
	if (t && (!t->exited || !k->real_tasks))
		return t;
	if (k->real_tasks && !(tgid = tgid_of(tid)))
		return NULL; /* no such thread */
	for (int i = 0; i < KD_MAX_TASKS; i++) {
		t = &k->task[i];
		if (t->used)
			continue;
		memset(t, 0, sizeof(*t));
		t->used = 1;
		t->tid = tid;
		t->pid = tgid ? tgid : tid;
		t->shadow_fd = -1;
		t->real = tgid != 0;
		if (t->real)
			kd_task_watch(k, t);
		return t;
	}
	abort();
}

/* ---- what the kernel writes into the fake events' rings ---- */

/* A non-sample record of @type with @body into every live event of @t
 * that asked for it (@want(attr)). */
static void side_record(struct kd *k, struct kd_task *t, uint32_t type,
			uint16_t misc, const void *body, size_t blen,
			int (*want)(const struct perf_event_attr *))
{
	uint8_t rec[4096 + 64];
	struct perf_event_header h = {type, misc, 0};

	if (blen > 4096)
		return;
	for (int i = 0; i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];
		size_t n = sizeof(h);

		/* perf_iterate_ctx: events that are off get no sideband. */
		if (e->closed || e->exited || !e->enabled || e->task != t ||
		    !want(&e->attr))
			continue;
		if (blen)
			memcpy(rec + n, body, blen);
		n += blen;
		n += kd_sample_id(e, t, kd_mono(k), rec + n);
		h.size = (uint16_t)n;
		memcpy(rec, &h, sizeof(h));
		kd_output(k, e, rec, n);
	}
}

static int want_comm(const struct perf_event_attr *a)
{
	return a->comm;
}

static int want_task(const struct perf_event_attr *a)
{
	return a->task;
}

static int want_switch(const struct perf_event_attr *a)
{
	return a->context_switch;
}

static int want_mmap2(const struct perf_event_attr *a)
{
	return a->mmap2;
}

static int want_mmap_only(const struct perf_event_attr *a)
{
	return a->mmap && !a->mmap2;
}

/* The PT events of @t stop: context switch, exit. */
static void sched_out(struct kd *k, struct kd_task *t)
{
	uint16_t misc = PERF_RECORD_MISC_SWITCH_OUT;

	t->switches++;
	for (int i = 0; i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];

		if (!e->closed && e->task == t && e->kind == KD_PT)
			kd_event_stop(k, e);
	}
	side_record(k, t, PERF_RECORD_SWITCH, misc, NULL, 0, want_switch);
}

/* perf_event_exit_task: a PERF_RECORD_EXIT to events with attr.task,
 * then every event of the task leaves it (the PT ones publish) and is in
 * PERF_EVENT_STATE_EXIT. */
static void task_exit(struct kd *k, struct kd_task *t)
{
	uint32_t ids[4] = {(uint32_t)t->pid, (uint32_t)t->pid, (uint32_t)t->tid,
			   (uint32_t)t->tid};
	uint64_t body[3], now = kd_mono(k);

	if (t->exited)
		return;
	memcpy(body, ids, 16);
	body[2] = now;
	side_record(k, t, PERF_RECORD_EXIT, 0, body, sizeof(body), want_task);
	for (int i = 0; i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];

		if (e->closed || e->task != t)
			continue;
		kd_event_stop(k, e);
		e->exited = 1;
		e->wake = 1;
	}
	t->exited = 1;
	kd_log(k, "task %d exits", (int)t->tid);
}

/* perf_event_comm (and perf_event_addr_filters_exec at exec: the file
 * ranges are forgotten until the new image maps them). */
static void task_comm(struct kd *k, struct kd_task *t, const char *comm,
		      int exec)
{
	uint8_t body[8 + 24];
	uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)t->tid};
	size_t n = strlen(comm) + 1;

	memset(body, 0, sizeof(body));
	memcpy(body, ids, 8);
	memcpy(body + 8, comm, n > 16 ? 16 : n);
	n = 8 + ((n > 16 ? 16 : n) + 7) / 8 * 8;
	side_record(k, t, PERF_RECORD_COMM,
		    exec ? PERF_RECORD_MISC_COMM_EXEC : 0, body, n, want_comm);
	if (!exec)
		return;
	for (int i = 0; i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];

		if (e->closed || e->task != t)
			continue;
		for (int f = 0; f < e->nfilters; f++)
			if (e->filters[f].path[0])
				e->filters[f].start = e->filters[f].rsize = 0;
	}
}

/* perf_event_mmap: MMAP2 (or MMAP) records to the events that want them
 * (executable mappings: attr.mmap or mmap2), filters moved
 * (perf_addr_filters_adjust). */
static void task_mmap(struct kd *k, struct kd_task *t, uint64_t start,
		      uint64_t len, uint64_t pgoff, int prot, dev_t dev,
		      ino_t ino, const char *path)
{
	uint8_t body[64 + 256];
	uint32_t ids[2] = {(uint32_t)t->pid, (uint32_t)t->tid};
	uint64_t v[3] = {start, len, pgoff};
	uint32_t mm[2] = {major(dev), minor(dev)};
	uint64_t ino2[2] = {(uint64_t)ino, 0};
	uint32_t pf[2] = {(uint32_t)prot, MAP_PRIVATE};
	size_t plen = strlen(path) + 1, n = 0, n1;
	int exec = prot & PROT_EXEC;

	if (!exec || plen > 255)
		return; /* attr.mmap_data is never asked for here */
	memset(body, 0, sizeof(body));
	memcpy(body + n, ids, 8), n += 8;
	memcpy(body + n, v, 24), n += 24;
	n1 = n;
	memcpy(body + n1, path, plen);
	side_record(k, t, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, body,
		    n1 + (plen + 7) / 8 * 8, want_mmap_only);
	memcpy(body + n, mm, 8), n += 8;
	memcpy(body + n, ino2, 16), n += 16;
	memcpy(body + n, pf, 8), n += 8;
	memcpy(body + n, path, plen);
	n += (plen + 7) / 8 * 8;
	side_record(k, t, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, body, n,
		    want_mmap2);
	for (int i = 0; i < k->nev; i++)
		if (!k->ev[i].closed && k->ev[i].task == t)
			kd_filter_mmap(k, &k->ev[i], start, start + len, pgoff,
				       dev, ino, exec);
}

/* ---- scripted tasks ---- */

void kd_task_run(struct kd *k, pid_t tid, const uint8_t *pt, size_t len)
{
	struct kd_task *t = kd_task_get(k, tid);

	for (int i = 0; t && i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];

		if (e->closed || e->task != t || e->kind != KD_PT)
			continue;
		kd_pt_sched_in(k, e);
		kd_pt_hw_write(k, e, pt, len);
	}
}

void kd_task_sched_out(struct kd *k, pid_t tid)
{
	struct kd_task *t = kd_task_find(k, tid);

	if (t && !t->exited)
		sched_out(k, t);
}

void kd_task_exit(struct kd *k, pid_t tid)
{
	struct kd_task *t = kd_task_find(k, tid);

	if (t)
		task_exit(k, t);
}

void kd_task_comm(struct kd *k, pid_t tid, const char *comm)
{
	struct kd_task *t = kd_task_find(k, tid);

	if (t && !t->exited)
		task_comm(k, t, comm, 0);
}

void kd_task_exec(struct kd *k, pid_t pid, pid_t old_tid, const char *comm)
{
	struct kd_task *x = kd_task_get(k, old_tid);

	/* de_thread: every other thread of the process dies (the leader
	 * too), then the exec'ing one takes the leader's tid. */
	for (int i = 0; i < KD_MAX_TASKS; i++) {
		struct kd_task *t = &k->task[i];

		if (t->used && t != x && t->pid == pid && !t->exited)
			task_exit(k, t);
	}
	x->tid = pid;
	x->nmaps = 0;
	if (old_tid != pid) {
		/* The old tid names no task any more. */
		struct kd_task *gone = kd_task_get(k, old_tid);

		gone->pid = pid;
		gone->exited = 1;
	}
	kd_log(k, "task %d execs as %d", (int)old_tid, (int)pid);
	task_comm(k, x, comm, 1);
}

void kd_task_mmap(struct kd *k, pid_t tid, uint64_t start, uint64_t len,
		  uint64_t pgoff, int prot, const char *path)
{
	struct kd_task *t = kd_task_get(k, tid);
	struct stat st;
	struct kd_map *m;
	int at;

	if (!t || stat(path, &st) || t->nmaps == 32)
		abort();
	for (at = 0; at < t->nmaps && t->maps[at].start < start; at++)
		;
	memmove(&t->maps[at + 1], &t->maps[at],
		sizeof(t->maps[0]) * (size_t)(t->nmaps - at));
	t->nmaps++;
	m = &t->maps[at];
	m->start = start;
	m->end = start + len;
	m->pgoff = pgoff;
	m->prot = prot;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	snprintf(m->path, sizeof(m->path), "%s", path);
	task_mmap(k, t, start, len, pgoff, prot, st.st_dev, st.st_ino, path);
}

/* The overflow handler of a breakpoint (__perf_event_overflow): pause
 * the group's AUX event first (aux_pause, 6.13), then the sample. */
void kd_bp_fire(struct kd *k, struct kd_event *bp, uint64_t rdi)
{
	uint8_t rec[256];
	struct perf_event_header h = {PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
				      0};
	uint64_t st = bp->attr.sample_type, v;
	uint32_t ids[2] = {(uint32_t)bp->task->pid, (uint32_t)bp->task->tid};
	size_t n = sizeof(h);

	if ((ptk_attr_aux_action(&bp->attr) & PTK_AUX_PAUSE) &&
	    bp->leader->kind == KD_PT)
		bp->leader->paused = 1;
	if (st & PERF_SAMPLE_IP)
		memcpy(rec + n, &bp->attr.bp_addr, 8), n += 8;
	if (st & PERF_SAMPLE_TID)
		memcpy(rec + n, ids, 8), n += 8;
	if (st & PERF_SAMPLE_TIME) {
		v = kd_mono(k);
		memcpy(rec + n, &v, 8), n += 8;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		v = PERF_SAMPLE_REGS_ABI_64;
		memcpy(rec + n, &v, 8), n += 8;
		for (int b = 0; b < 64; b++)
			if (bp->attr.sample_regs_user >> b & 1)
				memcpy(rec + n, &rdi, 8), n += 8;
	}
	h.size = (uint16_t)n;
	memcpy(rec, &h, sizeof(h));
	kd_log(k, "hit %d", bp->fd);
	kd_output(k, bp, rec, n);
}

/* ---- real tasks, through the real kernel ---- */

static int real_open(struct perf_event_attr *a, pid_t tid)
{
	return (int)syscall(SYS_perf_event_open, a, tid, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

void kd_task_watch(struct kd *k, struct kd_task *t)
{
	struct perf_event_attr a;
	size_t len = (SHADOW_PAGES + 1) * KD_PAGE;
	void *p;

	(void)k;
	if (!t->real || t->shadow_fd >= 0 || t->exited)
		return;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.size = sizeof(a);
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	a.comm = a.comm_exec = a.task = a.mmap2 = a.context_switch = 1;
	a.exclude_kernel = a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	t->shadow_fd = real_open(&a, t->tid);
	if (t->shadow_fd < 0)
		return; /* not allowed here: tid identity only */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, t->shadow_fd,
		 0);
	if (p == MAP_FAILED) {
		close(t->shadow_fd);
		t->shadow_fd = -1;
		return;
	}
	t->shadow_meta = p;
	t->shadow_len = len;
}

void kd_task_unwatch(struct kd *k, struct kd_task *t)
{
	(void)k;
	if (t->shadow_meta)
		munmap(t->shadow_meta, t->shadow_len);
	if (t->shadow_fd >= 0)
		close(t->shadow_fd);
	t->shadow_meta = NULL;
	t->shadow_fd = -1;
}

/* Copy the record at @tail of a real ring (it may wrap) into @out. */
static size_t ring_rec(const struct perf_event_mmap_page *m, uint64_t tail,
		       uint8_t *out, size_t max)
{
	const uint8_t *d = (const uint8_t *)m + m->data_offset;
	uint64_t size = m->data_size;
	struct perf_event_header h;

	for (size_t i = 0; i < sizeof(h); i++)
		((uint8_t *)&h)[i] = d[(tail + i) & (size - 1)];
	if (h.size < sizeof(h) || h.size > max)
		return h.size < sizeof(h) ? 0 : h.size;
	for (size_t i = 0; i < h.size; i++)
		out[i] = d[(tail + i) & (size - 1)];
	return h.size;
}

static void shadow_record(struct kd *k, struct kd_task *t, const uint8_t *r,
			  size_t len)
{
	struct perf_event_header h;
	const uint8_t *b = r + sizeof(h);
	uint32_t u[4];
	uint64_t v[4];

	memcpy(&h, r, sizeof(h));
	if (len < sizeof(h) + TRAILER)
		return;
	switch (h.type) {
	case PERF_RECORD_COMM:
		memcpy(u, b, 8);
		if ((h.misc & PERF_RECORD_MISC_COMM_EXEC) &&
		    (pid_t)u[1] != t->tid) {
			kd_log(k, "task %d execs as %d", (int)t->tid,
			       (int)u[1]);
			t->tid = (pid_t)u[1];
		}
		task_comm(k, t, (const char *)b + 8,
			  !!(h.misc & PERF_RECORD_MISC_COMM_EXEC));
		break;
	case PERF_RECORD_EXIT:
		memcpy(u, b, 16);
		if ((pid_t)u[2] == t->tid)
			task_exit(k, t);
		break;
	case PERF_RECORD_SWITCH:
		if (h.misc & PERF_RECORD_MISC_SWITCH_OUT)
			sched_out(k, t);
		break;
	case PERF_RECORD_MMAP2:
		memcpy(v, b + 8, 24);
		memcpy(u, b + 32, 8);
		memcpy(&v[3], b + 40, 8);
		if (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
			break;
		{
			uint32_t prot;

			memcpy(&prot, b + 56, 4);
			task_mmap(k, t, v[0], v[1], v[2], (int)prot,
				  makedev(u[0], u[1]), (ino_t)v[3],
				  (const char *)b + 64);
		}
		break;
	case PERF_RECORD_LOST:
		memcpy(v, b, 16);
		t->shadow_lost += v[1];
		break;
	}
}

static void drain_shadow(struct kd *k, struct kd_task *t)
{
	struct perf_event_mmap_page *m = t->shadow_meta;
	uint8_t rec[8192];
	uint64_t head, tail;

	if (!m)
		return;
	head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	tail = m->data_tail;
	while (tail < head) {
		size_t n = ring_rec(m, tail, rec, sizeof(rec));

		if (!n)
			break;
		if (n <= sizeof(rec))
			shadow_record(k, t, rec, n);
		tail += n;
	}
	__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
}

/* The real breakpoint behind a fake one on a real task. */
static void real_bp(struct kd *k, struct kd_event *e)
{
	struct perf_event_attr a = e->attr;
	uint8_t rec[512];
	void *p;

	if (e->closed || e->exited) {
		if (e->real_bp_fd >= 0) {
			munmap(e->real_bp_meta, e->real_bp_len);
			close(e->real_bp_fd);
		}
		e->real_bp_fd = -2;
		return;
	}
	if (e->real_bp_fd == -1) {
		char path[4097];

		ptk_attr_set_aux_action(&a, 0);
		a.disabled = 0;
		/* Where this machine's debug registers never fire, a
		 * uprobe tells the double of the hits instead. */
		if (bp_hw_fires() == 0 &&
		    bp_uprobe_attr(&a, e->task->tid, a.bp_addr, path,
				   sizeof(path))) {
			e->real_bp_fd = -2; /* nothing can see its hits */
			return;
		}
		e->real_bp_fd = real_open(&a, e->task->tid);
		if (e->real_bp_fd < 0) {
			e->real_bp_fd = -2;
			return;
		}
		e->real_bp_len = 2 * KD_PAGE;
		p = mmap(NULL, e->real_bp_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED, e->real_bp_fd, 0);
		if (p == MAP_FAILED)
			abort();
		e->real_bp_meta = p;
	}
	if (e->real_bp_fd < 0)
		return;
	{
		struct perf_event_mmap_page *m = e->real_bp_meta;
		uint64_t head =
		    __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = m->data_tail;

		while (tail < head) {
			size_t n = ring_rec(m, tail, rec, sizeof(rec));

			if (!n)
				break;
			if (n <= sizeof(rec) &&
			    ((struct perf_event_header *)rec)->type ==
				PERF_RECORD_SAMPLE) {
				if ((ptk_attr_aux_action(&e->attr) &
				     PTK_AUX_PAUSE) &&
				    e->leader->kind == KD_PT)
					e->leader->paused = 1;
				kd_log(k, "hit %d", e->fd);
				kd_output(k, e, rec, n);
			}
			tail += n;
		}
		__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
	}
}

void kd_sync(struct kd *k)
{
	for (int i = 0; i < KD_MAX_TASKS; i++)
		if (k->task[i].used && k->task[i].real && !k->task[i].exited)
			drain_shadow(k, &k->task[i]);
	for (int i = 0; i < k->nev; i++)
		if (k->ev[i].kind == KD_BP && k->ev[i].real_bp_fd != -2 &&
		    k->ev[i].task && k->ev[i].task->real)
			real_bp(k, &k->ev[i]);
}

/* ---- poll(2) ---- */

static int fake_ready(struct kd *k, struct pollfd *fds, size_t n)
{
	int ready = 0;

	for (size_t i = 0; i < n; i++) {
		struct kd_event *e = kd_event(k, fds[i].fd);

		fds[i].revents = 0;
		if (!e)
			continue;
		/* perf_poll: POLLHUP once the task is gone; POLLIN when
		 * the ring woke readers (rb->poll, cleared by poll). */
		if (e->exited)
			fds[i].revents |= POLLHUP;
		if (e->wake && e->meta &&
		    e->meta->data_head != e->meta->data_tail)
			fds[i].revents |= POLLIN & fds[i].events;
		e->wake = 0;
		ready += fds[i].revents != 0;
	}
	return ready;
}

static int op_poll(void *ctx, struct pollfd *fds, size_t n, int timeout_ms)
{
	struct kd *k = ctx;
	struct pollfd real[128];
	size_t nreal = 0, ncaller;
	int ready, r;

	k->poll_calls++;
	k->poll_nfds = n;
	kd_sync(k);
	ready = fake_ready(k, fds, n);
	for (size_t i = 0; i < n && nreal < 64; i++)
		if (!kd_event(k, fds[i].fd) && fds[i].fd < KD_FD0)
			real[nreal++] = fds[i];
	ncaller = nreal;
	if (ready)
		timeout_ms = 0;
	/* Wake up for the real kernel's news too. */
	for (int i = 0; i < KD_MAX_TASKS && nreal < 128; i++)
		if (k->task[i].shadow_fd >= 0 && !k->task[i].exited)
			real[nreal++] =
			    (struct pollfd){k->task[i].shadow_fd, POLLIN, 0};
	for (int i = 0; i < k->nev && nreal < 128; i++)
		if (k->ev[i].real_bp_fd >= 0)
			real[nreal++] =
			    (struct pollfd){k->ev[i].real_bp_fd, POLLIN, 0};
	if (!nreal)
		return ready;
	r = poll(real, nreal, timeout_ms);
	if (r < 0)
		return ready ? ready : -errno;
	for (size_t i = 0, j = 0; i < n && j < ncaller; i++) {
		if (kd_event(k, fds[i].fd) || fds[i].fd >= KD_FD0)
			continue;
		fds[i].revents = real[j++].revents;
		ready += fds[i].revents != 0;
	}
	if (!ready && r > 0) {
		kd_sync(k);
		ready = fake_ready(k, fds, n);
	}
	return ready;
}

int (*const kd_poll_op)(void *, struct pollfd *, size_t, int) = op_poll;

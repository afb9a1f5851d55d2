/* SPDX-License-Identifier: MIT */
/* The kernel double's buffers (kdouble.h): mmap(2) of an event's data ring
 * and AUX area with perf_mmap's rules and locked-memory accounting,
 * records written into the data ring as perf_output_begin does (a
 * PERF_RECORD_LOST when one does not fit), the PT hardware filling the
 * AUX area, and what pt_event_stop + perf_aux_output_end publish at a
 * sched-out.  Sources: kernel/events/core.c (perf_mmap, perf_mmap_close,
 * arch_perf_update_userpage in arch/x86/events/core.c),
 * kernel/events/ring_buffer.c (__perf_output_begin, perf_aux_output_end,
 * rb_alloc_aux), arch/x86/events/intel/pt.c (pt_event_stop,
 * pt_update_head).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/kernel/kdouble.h"

static int is_pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

size_t kd_sample_id(const struct kd_event *e, const struct kd_task *t,
		    uint64_t time, uint8_t *out)
{
	uint64_t st = e->attr.sample_type;
	size_t n = 0;
	uint32_t pt[2] = {(uint32_t)t->pid, (uint32_t)t->tid};
	uint64_t id = (uint64_t)e->fd, cpu = 0;

	if (!e->attr.sample_id_all)
		return 0;
	/* __perf_event_header__init_id / perf_event__output_id_sample. */
	if (st & PERF_SAMPLE_TID) {
		memcpy(out + n, pt, 8);
		n += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		memcpy(out + n, &time, 8);
		n += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		memcpy(out + n, &id, 8);
		n += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		memcpy(out + n, &id, 8);
		n += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		memcpy(out + n, &cpu, 8);
		n += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER) {
		memcpy(out + n, &id, 8);
		n += 8;
	}
	return n;
}

static uint8_t *data_of(struct kd_event *e)
{
	return (uint8_t *)e->meta + KD_PAGE;
}

static void put_bytes(struct kd_event *e, uint64_t head, const void *p,
		      size_t len)
{
	uint8_t *d = data_of(e);

	for (size_t i = 0; i < len; i++)
		d[(head + i) & (e->data_size - 1)] = ((const uint8_t *)p)[i];
}

/* When a reader is woken (perf_output_wakeup, seen as POLLIN): a sample
 * of an event with wakeup_events (perf_output_sample), or the head
 * passing the ring's watermark — wakeup_watermark, or half the ring
 * (rb_alloc) — since the last time (__perf_output_begin). */
static void wakeup(struct kd_event *e, const void *rec, uint64_t head)
{
	struct perf_event_header h;
	uint64_t wm = e->attr.watermark ? e->attr.wakeup_watermark : 0;

	memcpy(&h, rec, sizeof(h));
	if (!wm || wm > e->data_size)
		wm = e->data_size / 2;
	if (h.type == PERF_RECORD_SAMPLE && !e->attr.watermark &&
	    e->attr.wakeup_events)
		e->wake = 1;
	while (head - e->wake_mark > wm) {
		e->wake_mark += wm;
		e->wake = 1;
	}
}

/* __perf_output_begin(): room is CIRC_SPACE(head, tail, size), which
 * keeps one byte free; a record that does not fit is counted in
 * rb->lost, and the next one that fits is preceded by a
 * PERF_RECORD_LOST carrying the count. */
void kd_output(struct kd *k, struct kd_event *e, const void *rec, size_t len)
{
	uint64_t head, tail, space, need = len;
	uint8_t lost[64];
	size_t lost_len = 0;

	(void)k;
	if (!e->meta || !e->data_size)
		return;
	if (e->lost) {
		struct perf_event_header h = {PERF_RECORD_LOST, 0, 0};
		uint64_t body[2] = {(uint64_t)e->fd, e->lost};

		lost_len = sizeof(h) + sizeof(body);
		memcpy(lost + sizeof(h), body, sizeof(body));
		lost_len +=
		    kd_sample_id(e, e->task, kd_mono(k), lost + lost_len);
		h.size = (uint16_t)lost_len;
		memcpy(lost, &h, sizeof(h));
		need += lost_len;
	}
	head = e->meta->data_head;
	tail = __atomic_load_n(&e->meta->data_tail, __ATOMIC_ACQUIRE);
	space = (tail - (head + 1)) & (e->data_size - 1);
	if (space < need) {
		e->lost++;
		return;
	}
	if (lost_len) {
		put_bytes(e, head, lost, lost_len);
		head += lost_len;
		e->lost = 0;
	}
	put_bytes(e, head, rec, len);
	head += len;
	e->nrecords++;
	__atomic_store_n(&e->meta->data_head, head, __ATOMIC_RELEASE);
	wakeup(e, rec, head);
}

/* perf_mmap()'s locked-memory rule: pages count against the user's
 * perf_event_mlock_kb × CPUs first, the rest against the mapping
 * process's RLIMIT_MEMLOCK (pinned_vm), unless CAP_IPC_LOCK or
 * perf_event_paranoid is -1. */
static int charge(struct kd *k, uint64_t pages, uint64_t *extra_out)
{
	long long kb = kd_sysctl(k, "perf_event_mlock_kb");
	long long par = kd_sysctl(k, "perf_event_paranoid");
	uint64_t limit = (uint64_t)(kb < 0 ? 0 : kb) / 4 * (uint64_t)k->ncpus;
	uint64_t locked = k->user_locked, user_extra = pages, extra = 0;

	if (locked > limit)
		locked = limit;
	locked += user_extra;
	if (locked > limit) {
		extra = locked - limit;
		user_extra -= extra;
	}
	if (k->pinned_vm + extra > k->memlock / KD_PAGE && par > -1 &&
	    !k->cap_ipc_lock)
		return -EPERM;
	k->user_locked += user_extra;
	k->pinned_vm += extra;
	*extra_out = extra;
	return 0;
}

static void uncharge(struct kd *k, uint64_t pages, uint64_t extra)
{
	k->user_locked -= pages - extra;
	k->pinned_vm -= extra;
}

/* perf_event_init_userpage + arch_perf_update_userpage. */
static void init_userpage(struct kd *k, struct kd_event *e)
{
	uint32_t mult;
	uint16_t shift;

	e->meta->version = 0;
	e->meta->compat_version = 0;
	e->meta->data_offset = KD_PAGE;
	e->meta->data_size = e->data_size;
	kd_time_conv(k, &mult, &shift);
	e->meta->cap_user_time = 1;
	e->meta->time_mult = mult;
	e->meta->time_shift = shift;
	/* With use_clockid the records are on another clock than perf's:
	 * no time_zero. */
	if (!e->attr.use_clockid) {
		e->meta->cap_user_time_zero = 1;
		e->meta->time_zero = 0;
	}
}

static void *map_data(struct kd *k, struct kd_event *e, size_t len, int *err)
{
	uint64_t nr = len / KD_PAGE - 1, extra;
	int r;

	if (nr && !is_pow2(nr)) {
		*err = -EINVAL;
		return NULL;
	}
	if (e->meta) {
		/* Mapped again: same size only (one ring per event). */
		*err = e->data_size == nr * KD_PAGE ? 0 : -EINVAL;
		return *err ? NULL : e->meta;
	}
	if ((r = charge(k, nr + 1, &extra))) {
		*err = r;
		return NULL;
	}
	e->meta = aligned_alloc(KD_PAGE, len);
	if (!e->meta)
		abort();
	memset(e->meta, 0, len);
	e->map_len = len;
	e->data_size = nr * KD_PAGE;
	e->pinned_data = extra;
	init_userpage(k, e);
	return e->meta;
}

static void *map_aux(struct kd *k, struct kd_event *e, size_t len, int prot,
		     off_t off, int *err)
{
	uint64_t nr = len / KD_PAGE, extra;
	int r;

	/* perf_mmap, AUX: the data ring first, aux_offset above it and
	 * equal to the mapping's offset, aux_size its length, a power of
	 * two number of pages; rb_alloc_aux: only AUX PMUs. */
	if (!e->meta) {
		*err = -EINVAL;
		return NULL;
	}
	if (e->meta->aux_offset < e->data_size + KD_PAGE ||
	    e->meta->aux_offset != (uint64_t)off ||
	    e->meta->aux_size != nr * KD_PAGE || !is_pow2(nr)) {
		*err = -EINVAL;
		return NULL;
	}
	if (e->aux) {
		*err = e->aux_size == len ? 0 : -EINVAL;
		return *err ? NULL : e->aux;
	}
	if (e->kind != KD_PT) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	if ((r = charge(k, nr, &extra))) {
		*err = r;
		return NULL;
	}
	e->aux = aligned_alloc(KD_PAGE, len);
	if (!e->aux)
		abort();
	memset(e->aux, 0, len); /* rb_alloc_aux hands zeroed pages */
	e->aux_size = len;
	e->aux_overwrite = !(prot & PROT_WRITE);
	e->pinned_aux = extra;
	return e->aux;
}

static void *op_mmap(void *ctx, int fd, size_t len, int prot, off_t off,
		     int *err)
{
	struct kd *k = ctx;
	struct kd_event *e;
	void *p;

	kd_sync(k);
	e = kd_event(k, fd);
	*err = 0;
	if (!e) {
		*err = -EBADF;
		return NULL;
	}
	/* perf_mmap: no mmap of inherited per-task events; whole pages. */
	if ((e->cpu == -1 && e->attr.inherit) || !len || len % KD_PAGE) {
		*err = -EINVAL;
		return NULL;
	}
	p = off ? map_aux(k, e, len, prot, off, err) : map_data(k, e, len, err);
	kd_log(k, "mmap %d %s %zu%s%s", fd, off ? "aux" : "data", len,
	       off ? (prot & PROT_WRITE ? " read-write" : " read-only") : "",
	       p ? "" : " refused");
	return p;
}

/* perf_mmap_close: the pages are uncharged. */
static void op_munmap(void *ctx, void *addr, size_t len)
{
	struct kd *k = ctx;

	for (int i = 0; i < k->nev; i++) {
		struct kd_event *e = &k->ev[i];

		if (e->aux && addr == e->aux) {
			uncharge(k, len / KD_PAGE, e->pinned_aux);
			e->pinned_aux = 0;
			free(e->aux);
			e->aux = NULL;
			return;
		}
		if (e->meta && addr == (void *)e->meta) {
			uncharge(k, len / KD_PAGE, e->pinned_data);
			e->pinned_data = 0;
			free(e->meta);
			e->meta = NULL;
			return;
		}
	}
	abort(); /* not a mapping of the double */
}

void *(*const kd_mmap_op)(void *, int, size_t, int, off_t, int *) = op_mmap;
void (*const kd_munmap_op)(void *, void *, size_t) = op_munmap;

void kd_ring_release(struct kd *k, struct kd_event *e)
{
	if (e->aux)
		op_munmap(k, e->aux, e->aux_size);
	if (e->meta)
		op_munmap(k, e->meta, e->map_len);
}

void kd_pt_hw_write(struct kd *k, struct kd_event *e, const uint8_t *bytes,
		    size_t len)
{
	(void)k;
	/* pt_event_start found no AUX buffer (perf_aux_output_begin), or
	 * the event is off, paused or its task gone: nothing is written. */
	if (!e->aux || !e->enabled || e->paused || e->exited)
		return;
	for (size_t i = 0; i < len; i++)
		e->aux[(e->hw_pos + i) & (e->aux_size - 1)] = bytes[i];
	e->hw_pos += len;
	e->hw_written += len;
}

static void aux_record(struct kd *k, struct kd_event *e, uint64_t offset,
		       uint64_t size, uint64_t flags)
{
	uint8_t rec[128];
	struct perf_event_header h = {PERF_RECORD_AUX, 0, 0};
	uint64_t body[3] = {offset, size, flags};
	size_t n = sizeof(h);

	memcpy(rec + n, body, sizeof(body));
	n += sizeof(body);
	n += kd_sample_id(e, e->task, kd_mono(k), rec + n);
	h.size = (uint16_t)n;
	memcpy(rec, &h, sizeof(h));
	kd_output(k, e, rec, n);
}

/* pt_event_stop(PERF_EF_UPDATE): in snapshot mode pt_update_head gives
 * the write offset inside the buffer, which becomes handle->head, and
 * the size passed to perf_aux_output_end is the whole buffer; there the
 * overwrite branch sets aux_head to handle->head and sends a
 * PERF_RECORD_AUX {offset = head, size = buffer size, OVERWRITE} since
 * size is not 0.  Otherwise aux_head moves on by what was written. */
void kd_pt_sched_out(struct kd *k, struct kd_event *e)
{
	uint64_t head, size, flags = e->aux_flags;

	if (!e->aux || !e->meta)
		return;
	if (e->aux_overwrite) {
		head = e->hw_pos & (e->aux_size - 1);
		size = e->aux_size;
		flags |= PERF_AUX_FLAG_OVERWRITE;
		e->meta->aux_head = head;
		aux_record(k, e, head, size, flags);
	} else {
		head = e->meta->aux_head;
		size = e->hw_pos - head;
		e->meta->aux_head = e->hw_pos;
		if (size || flags)
			aux_record(k, e, head, size, flags);
	}
	e->aux_flags = 0;
}

/* event_sched_in → perf_log_itrace_start: once per event. */
void kd_pt_sched_in(struct kd *k, struct kd_event *e)
{
	uint8_t rec[64];
	struct perf_event_header h = {PERF_RECORD_ITRACE_START, 0, 0};
	uint32_t ids[2];
	size_t n = sizeof(h);

	if (e->itrace_logged || !e->enabled || e->exited)
		return;
	e->itrace_logged = 1;
	ids[0] = (uint32_t)e->task->pid;
	ids[1] = (uint32_t)e->task->tid;
	memcpy(rec + n, ids, 8);
	n += 8;
	n += kd_sample_id(e, e->task, kd_mono(k), rec + n);
	h.size = (uint16_t)n;
	memcpy(rec, &h, sizeof(h));
	kd_output(k, e, rec, n);
}

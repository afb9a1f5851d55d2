/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guest as a whole: stopping and resuming it, the conversation with
 * ptscope (src/record/qemu/qemu_proto.h), and one timeline across threads.
 *
 * Stopping: a DUMP sets qpl.stopped; every thread parks at its next block
 * boundary (qpl_world_check), and a thread inside a system call counts as
 * stopped, since it touches its PT ring only in the block callback.  When
 * all live threads are quiet, their rings are copied and sent.
 *
 * Timeline: each thread's clock counts its own instructions; a system
 * call adds the real time during which no guest thread ran (the process
 * was waiting on the outside world), the whole real time when it slept or
 * timed out, and never returns earlier than the clock another thread
 * published while it waited (at its own system call: the write that woke
 * this read, the futex wake that ended this wait). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "qemu/plugin.h"
#include "src/record/emulate/timed_out.h"
#include "src/record/qemu/qemu_proto.h"

uint64_t qpl_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_all(const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(qpl.fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(qpl.fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

int qpl_send(uint32_t type, const void *a, uint32_t alen, const void *b,
	     uint32_t blen)
{
	struct qp_header h = {type, alen + blen};
	int r;

	if (qpl.fd < 0)
		return -1;
	pthread_mutex_lock(&qpl.send_lock);
	r = write_all(&h, sizeof(h));
	if (!r && alen)
		r = write_all(a, alen);
	if (!r && blen)
		r = write_all(b, blen);
	pthread_mutex_unlock(&qpl.send_lock);
	return r;
}

void qpl_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qpl.tracing = 0;
	if (qpl_send(QP_FAIL, msg, (uint32_t)strlen(msg), NULL, 0))
		fprintf(stderr, "ptscope plugin: %s\n", msg);
}

struct dump_part {
	struct qp_thread th;
	uint8_t *pt;
};

int qpl_send_dump(void)
{
	struct dump_part *parts;
	struct qpl_thread *q;
	uint32_t n = 0, i = 0;
	uint64_t total = sizeof(uint32_t);
	struct qp_header h;
	int r = 0;

	for (q = qpl.threads; q; q = q->next)
		n += q->emu != NULL;
	parts = calloc(n ? n : 1, sizeof(*parts));
	if (!parts)
		return -1;
	for (q = qpl.threads; q && i < n; q = q->next) {
		size_t len = 0;

		if (!q->emu)
			continue;
		parts[i].th.tid = (uint32_t)q->tid;
		parts[i].th.alive = (uint32_t)q->alive;
		parts[i].th.now = emu_now(q->emu);
		parts[i].th.insns = emu_instructions(q->emu);
		parts[i].th.birth = q->birth;
		if (emu_snapshot(q->emu, &parts[i].pt, &len))
			parts[i].pt = NULL, len = 0;
		parts[i].th.len = len;
		total += sizeof(parts[i].th) + len;
		i++;
	}
	h.type = QP_DUMP_DATA;
	h.len = (uint32_t)total;
	pthread_mutex_lock(&qpl.send_lock);
	r = write_all(&h, sizeof(h));
	if (!r)
		r = write_all(&n, sizeof(n));
	for (i = 0; i < n && !r; i++) {
		r = write_all(&parts[i].th, sizeof(parts[i].th));
		if (!r && parts[i].th.len)
			r = write_all(parts[i].pt, parts[i].th.len);
	}
	pthread_mutex_unlock(&qpl.send_lock);
	for (i = 0; i < n; i++)
		free(parts[i].pt);
	free(parts);
	return r;
}

void qpl_thread_register(struct qpl_thread *q)
{
	pthread_mutex_lock(&qpl.lock);
	q->alive = 1;
	q->next = qpl.threads;
	qpl.threads = q;
	qpl.nlive++;
	qpl.nrunning++;
	if (qpl.nrunning == 1 && qpl.idle_since)
		qpl.idle_ns += qpl_clock_ns() - qpl.idle_since;
	pthread_mutex_unlock(&qpl.lock);
}

void qpl_world_check(struct qpl_thread *q)
{
	pthread_mutex_lock(&qpl.lock);
	if (qpl.stopped) {
		qpl.nquiet++;
		pthread_cond_broadcast(&qpl.cond);
		while (qpl.stopped)
			pthread_cond_wait(&qpl.cond, &qpl.lock);
		qpl.nquiet--;
	}
	pthread_mutex_unlock(&qpl.lock);
}

void qpl_notify_wait(struct qpl_thread *q, uint32_t type, const void *payload,
		     uint32_t len)
{
	pthread_mutex_lock(&qpl.lock);
	q->answer = 0;
	q->waiting = 1;
	qpl.nquiet++;
	pthread_cond_broadcast(&qpl.cond);
	pthread_mutex_unlock(&qpl.lock);
	if (qpl_send(type, payload, len, NULL, 0))
		qpl.tracing = 0;
	pthread_mutex_lock(&qpl.lock);
	while (!q->answer && qpl.fd >= 0 && q->waiting)
		pthread_cond_wait(&qpl.cond, &qpl.lock);
	/* An answer counts the thread as running at once (resume()): a
	 * DUMP right behind it waits for it to reach its next block. */
	if (q->waiting) {
		q->waiting = 0;
		qpl.nquiet--;
	}
	pthread_mutex_unlock(&qpl.lock);
}

void qpl_wait_answer(struct qpl_thread *q, int seconds)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock(&qpl.lock);
	while (!q->answer && qpl.fd >= 0)
		if (pthread_cond_timedwait(&qpl.cond, &qpl.lock, &until))
			break;
	pthread_mutex_unlock(&qpl.lock);
}

void qpl_syscall_enter(struct qpl_thread *q, int64_t nr)
{
	uint64_t now = qpl_clock_ns();

	pthread_mutex_lock(&qpl.lock);
	q->sys_nr = nr;
	q->sys_real0 = now;
	q->in_sys = 1;
	qpl.nquiet++;
	if (--qpl.nrunning == 0)
		qpl.idle_since = now;
	q->sys_idle0 = qpl.idle_ns;
	q->prev_seq0 = q->sys_seq0;
	q->sys_clock0 = q->emu ? emu_now(q->emu) : 0;
	q->pub_clock = q->sys_clock0;
	q->pub_seq = ++qpl.pub_seq;
	q->sys_seq0 = q->pub_seq;
	pthread_cond_broadcast(&qpl.cond);
	pthread_mutex_unlock(&qpl.lock);
}

/* System calls that can wait until another thread acts (a wake, a
 * write into a pipe, a child's exit). */
static int waits_for_others(int64_t nr)
{
	switch (nr) {
	case SYS_futex:
	case SYS_read:
	case SYS_readv:
	case SYS_pread64:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_accept:
	case SYS_accept4:
	case SYS_msgrcv:
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
	case SYS_mq_timedreceive:
	case SYS_io_getevents:
	case SYS_flock:
	case SYS_fcntl:
		return 1;
	default:
		return 0;
	}
}

uint64_t qpl_syscall_leave(struct qpl_thread *q, int64_t ret)
{
	uint64_t now = qpl_clock_ns(), idle, waited = 0, ns;
	struct qpl_thread *o;

	pthread_mutex_lock(&qpl.lock);
	if (!q->in_sys) {
		pthread_mutex_unlock(&qpl.lock);
		return 0;
	}
	if (qpl.nrunning == 0) {
		qpl.idle_ns += now - qpl.idle_since;
		qpl.idle_since = now;
	}
	idle = qpl.idle_ns - q->sys_idle0;
	qpl.nrunning++;
	q->in_sys = 0;
	qpl.nquiet--;
	/* Clocks published during the call, and the last clock of a thread
	 * that exited since this thread's previous call: a join's futex is
	 * woken by QEMU after the thread's exit, which may come before the
	 * wait began. */
	for (o = qpl.threads; o; o = o->next)
		if (o != q && o->pub_clock > waited &&
		    (o->pub_seq > q->sys_seq0 ||
		     (!o->alive && o->pub_seq > q->prev_seq0)))
			waited = o->pub_clock;
	pthread_mutex_unlock(&qpl.lock);
	if (emu_timed_out((uint64_t)q->sys_nr, ret))
		ns = now - q->sys_real0;
	else if (q->sys_nr == SYS_clone || q->sys_nr == SYS_clone3 ||
		 q->sys_nr == SYS_fork || q->sys_nr == SYS_vfork)
		/* Its real time is QEMU's: creating a vCPU, and at the first
		 * thread retranslating everything for parallel execution
		 * (milliseconds).  The kernel's share is microseconds. */
		return 0;
	else if (!waits_for_others(q->sys_nr))
		/* clone, mmap, write...: other threads' progress meanwhile
		 * says nothing about this call's length. */
		return idle;
	else if (q->sys_nr == SYS_futex && waited)
		/* A futex wait ends by another thread's wake: at the waker's
		 * time; the real time QEMU took to pass the wake on (idle
		 * while the waker exits, say) is not the program's. */
		return waited > q->sys_clock0 ? waited - q->sys_clock0 : 0;
	else
		ns = idle;
	if (waited > q->sys_clock0 + ns)
		ns = waited - q->sys_clock0;
	return ns;
}

void qpl_thread_exit(struct qpl_thread *q)
{
	pthread_mutex_lock(&qpl.lock);
	if (q->alive) {
		q->alive = 0;
		qpl.nlive--;
		if (q->in_sys) {
			q->in_sys = 0;
			qpl.nquiet--;
		}
	}
	pthread_cond_broadcast(&qpl.cond);
	pthread_mutex_unlock(&qpl.lock);
}

static void stop_world(void)
{
	pthread_mutex_lock(&qpl.lock);
	qpl.stopped = 1;
	qpl.attention = 1;
	while (qpl.nquiet < qpl.nlive)
		pthread_cond_wait(&qpl.cond, &qpl.lock);
	pthread_mutex_unlock(&qpl.lock);
}

void qpl_world_stop_for_death(struct qpl_thread *self_thread, int sig)
{
	struct timespec until;

	/* For the signals that dump core, QEMU has already stopped every
	 * other vCPU outside guest code (stop_all_tasks): nothing to wait
	 * for. */
	if (sig == SIGABRT || sig == SIGFPE || sig == SIGILL ||
	    sig == SIGQUIT || sig == SIGSEGV || sig == SIGTRAP ||
	    sig == SIGBUS) {
		qpl.stopped = 1;
		qpl.attention = 1;
		return;
	}

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	pthread_mutex_lock(&qpl.lock);
	qpl.stopped = 1;
	qpl.attention = 1;
	if (self_thread && self_thread->alive && !self_thread->in_sys)
		qpl.nquiet++;
	/* QEMU may hold other threads outside guest code already (it stops
	 * them before dumping a core): they never park, so wait a little,
	 * then copy what is there. */
	while (qpl.nquiet < qpl.nlive)
		if (pthread_cond_timedwait(&qpl.cond, &qpl.lock, &until))
			break;
	pthread_mutex_unlock(&qpl.lock);
}

static void resume(const struct qp_resume *rs)
{
	struct qpl_thread *q;

	pthread_mutex_lock(&qpl.lock);
	if (rs->mode == QP_UNTRACE) {
		qpl.tracing = 0;
		qpl.untraced = 1;
	}
	qpl.stopped = 0;
	/* Blocks look again only to drop the callbacks after UNTRACE. */
	qpl.attention = rs->mode == QP_UNTRACE;
	for (q = qpl.threads; q; q = q->next)
		if ((rs->tid == 0 && rs->mode == QP_UNTRACE) ||
		    (uint32_t)q->tid == rs->tid) {
			q->answer = 1;
			if (q->waiting) {
				q->waiting = 0;
				qpl.nquiet--;
			}
		}
	pthread_cond_broadcast(&qpl.cond);
	pthread_mutex_unlock(&qpl.lock);
}

static void watch(const uint8_t *p, uint32_t len)
{
	struct qp_watch w;
	size_t need;

	if (len < sizeof(w))
		return;
	memcpy(&w, p, sizeof(w));
	need = sizeof(w) + w.n * 8u + w.ntimed * sizeof(struct qp_timed);
	if (w.n > QPL_MAX_WATCH || w.ntimed > QPL_MAX_WATCH || len < need)
		return;
	pthread_mutex_lock(&qpl.lock);
	memcpy(qpl.watch, p + sizeof(w), w.n * 8u);
	qpl.nwatch = w.n;
	memcpy(qpl.timed, p + sizeof(w) + w.n * 8u,
	       w.ntimed * sizeof(struct qp_timed));
	qpl.ntimed = w.ntimed;
	qpl.want_maps = (w.flags & QP_WATCH_MAPS) != 0;
	qpl.want_syscalls = (w.flags & QP_WATCH_SYSCALLS) != 0;
	qpl.follow = (w.flags & QP_WATCH_FOLLOW) != 0;
	qpl.entry = w.entry;
	__atomic_add_fetch(&qpl.watch_gen, 1, __ATOMIC_RELEASE);
	if (!w.entry && !qpl.untraced)
		qpl.tracing = 1;
	pthread_mutex_unlock(&qpl.lock);
}

/* QP_ARGS: the table of calls to record (--args), @len bytes. */
static int qpl_args_msg(uint32_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	int r = -1;

	if (b && !read_all(b, len)) {
		pthread_mutex_lock(&qpl.lock);
		emu_process_set_fns(qpl.proc, (const struct emu_fn *)b,
				    len / sizeof(struct emu_fn));
		pthread_mutex_unlock(&qpl.lock);
		r = 0;
	}
	free(b);
	return r;
}

/* The control thread: the only reader of the socket. */
static void *control(void *arg)
{
	(void)arg;
	for (;;) {
		struct qp_header h;
		uint8_t buf[sizeof(struct qp_watch) + QPL_MAX_WATCH * 8 +
			    QPL_MAX_WATCH * sizeof(struct qp_timed)];

		unsigned gen = qpl.fd_gen;

		if (read_all(&h, sizeof(h)) ||
		    (h.type == QP_ARGS && qpl_args_msg(h.len)) ||
		    (h.type != QP_ARGS &&
		     (h.len > sizeof(buf) || read_all(buf, h.len)))) {
			/* The guest closed our socket and a new one took
			 * its place (qpl_check_fd): read that one. */
			if (qpl.fd >= 0 && qpl.fd_gen != gen)
				continue;
			break;
		}
		switch (h.type) {
		case QP_WATCH:
			watch(buf, h.len);
			break;
		case QP_DUMP:
			stop_world();
			qpl_send_dump();
			break;
		case QP_RESUME: {
			struct qp_resume rs = {0};

			memcpy(&rs, buf,
			       h.len < sizeof(rs) ? h.len : sizeof(rs));
			resume(&rs);
			break;
		}
		default:
			break;
		}
	}
	/* ptscope went away: run on untraced, never stay stopped. */
	pthread_mutex_lock(&qpl.lock);
	qpl.tracing = 0;
	qpl.untraced = 1;
	qpl.fd = -1;
	qpl.stopped = 0;
	qpl.attention = 1;
	for (struct qpl_thread *q = qpl.threads; q; q = q->next)
		q->answer = 1;
	pthread_cond_broadcast(&qpl.cond);
	pthread_mutex_unlock(&qpl.lock);
	return NULL;
}

int qpl_world_init(void)
{
	sigset_t all, old;
	pthread_t th;
	pthread_attr_t a;
	int r;

	pthread_mutex_init(&qpl.lock, NULL);
	pthread_mutex_init(&qpl.send_lock, NULL);
	pthread_cond_init(&qpl.cond, NULL);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* The control thread is born with every signal blocked: a signal
	 * sent to the process (the guest's SIGALRM from setitimer) must
	 * land on a vCPU thread, where QEMU's handler finds its CPU; taken
	 * on this thread, QEMU's handler crashed. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&th, &a, control, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return r ? -1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Processes the guest creates: a fork child (fork, vfork, clone without
 * CLONE_THREAD, clone3, posix_spawn; QEMU runs vfork as a fork) keeps
 * only the thread that forked, so it starts afresh: its own socket to
 * ptscope, its own PT process whose clock starts at the parent's clock at
 * the fork, its own control thread, then HELLO.  The ground truth of
 * every process goes to one shared file, in whole lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "qemu/plugin.h"
#include "src/record/qemu/qemu_proto.h"

static void note_ino(int fd)
{
	struct stat st;

	qpl.fd_ino = fd >= 0 && !fstat(fd, &st) ? (uint64_t)st.st_ino : 0;
}

/* Move @fd out of the guest's way: shells save and restore their low
 * fds with dup (a copy of our socket the guest would then write to). */
static int high_fd(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 960);

	if (h < 0)
		return fd;
	close(fd);
	return h;
}

int qpl_connect(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(qpl.sock);
	socklen_t len;
	int fd;

	if (!n || n >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, qpl.sock, n);
	if (a.sun_path[0] == '@')
		a.sun_path[0] = 0; /* abstract */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	while (connect(fd, (struct sockaddr *)&a, len))
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	fd = high_fd(fd);
	note_ino(fd);
	return fd;
}

/* Around the guest's fork: nothing of ours is half-held in the child, and
 * no buffered ground truth is written twice. */
static void before_fork(void)
{
	if (qpl.truth)
		fflush(qpl.truth);
	pthread_mutex_lock(&qpl.lock);
	pthread_mutex_lock(&qpl.send_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&qpl.send_lock);
	pthread_mutex_unlock(&qpl.lock);
}

static void after_fork_child(void)
{
	pthread_mutex_init(&qpl.lock, NULL);
	pthread_mutex_init(&qpl.send_lock, NULL);
	pthread_cond_init(&qpl.cond, NULL);
}

void qpl_tree_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void run_untraced(void)
{
	qpl.tracing = 0;
	qpl.untraced = 1;
	qpl.attention = 1;
	if (qpl.fd >= 0)
		close(qpl.fd);
	qpl.fd = -1;
}

void qpl_forked(struct qpl_thread *q, uint64_t clock)
{
	struct emu_config cfg = {0};
	pid_t ppid = qpl.pid;

	qpl.pid = getpid();
	/* The parent's channel is the parent's. */
	if (qpl.fd >= 0)
		close(qpl.fd);
	qpl.fd = -1;
	/* Only this thread came along; it is inside the fork system call.
	 * The other threads' state (and the parent's PT) stays behind
	 * unused. */
	q->tid = qpl.pid;
	q->next = NULL;
	q->alive = 1;
	q->emu = NULL;
	q->prev = NULL;
	q->ncalls = 0;
	q->pending_ns = 0;
	q->birth = clock;
	q->answer = 0;
	q->waiting = 0;
	q->pub_clock = 0;
	q->pub_seq = q->sys_seq0 = q->prev_seq0 = 0;
	qpl.threads = q;
	qpl.nlive = 1;
	qpl.nquiet = q->in_sys ? 1 : 0;
	qpl.nrunning = q->in_sys ? 0 : 1;
	qpl.idle_ns = 0;
	qpl.idle_since = 0;
	qpl.pub_seq = 0;
	qpl.stopped = 0;
	qpl.attention = 0;
	if (!qpl.follow || !qpl.tracing || qpl.untraced) {
		run_untraced();
		return;
	}
	qpl.fd = qpl_connect();
	cfg.ring_size = qpl.ring;
	cfg.start_ns = clock;
	cfg.truth = qpl.truth;
	cfg.read_mem = qpl_read_guest;
	if (qpl.fd < 0 || emu_process_new(&cfg, qpl.pid, &qpl.proc) ||
	    qpl_world_init()) {
		run_untraced();
		return;
	}
	qpl.tracing = 0;
	qpl_hello(q, 1, ppid, clock);
}

static int truth_reopen(void);

int qpl_high_fd(int fd)
{
	return high_fd(fd);
}

void qpl_check_fd(int64_t nr)
{
	struct qp_hello h = {0};
	struct stat st;
	int fd;

	if (nr != SYS_close && nr != SYS_close_range && nr != SYS_dup2 &&
	    nr != SYS_dup3)
		return;
	if (qpl.truth_fd >= 0 &&
	    (fstat(qpl.truth_fd, &st) || (uint64_t)st.st_ino != qpl.truth_ino))
		truth_reopen();
	if (qpl.fd < 0 || !qpl.fd_ino ||
	    (!fstat(qpl.fd, &st) && (uint64_t)st.st_ino == qpl.fd_ino))
		return;
	/* Gone (or now the guest's): a new socket; ptscope moves the
	 * process over to it, and closes the old one, which ends the
	 * control thread's read there (it goes on with the new one). */
	fd = qpl_connect();
	pthread_mutex_lock(&qpl.send_lock);
	qpl.fd = fd;
	qpl.fd_gen++;
	pthread_mutex_unlock(&qpl.send_lock);
	if (fd < 0) {
		qpl.tracing = 0;
		qpl.untraced = 1;
		qpl.attention = 1;
		return;
	}
	h.version = QP_VERSION;
	h.pid = (uint32_t)qpl.pid;
	h.forked = 2;
	qpl_send(QP_HELLO, &h, sizeof(h), NULL, 0);
}

/* ---- the shared ground truth ---------------------------------------- */

struct truth_out {
	char *part; /* the last line, not yet complete */
	size_t len, cap;
};

static void write_full(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static ssize_t truth_write(void *cookie, const char *buf, size_t n)
{
	struct truth_out *o = cookie;
	const char *nl = memrchr(buf, '\n', n);
	size_t whole = nl ? (size_t)(nl - buf) + 1 : 0, rest = n - whole;

	if (whole) {
		/* One write per batch of whole lines: the processes sharing
		 * the file never cut each other's lines. */
		struct iovec v[2] = {{o->part, o->len}, {(void *)buf, whole}};
		size_t want = o->len + whole;
		ssize_t w = writev(qpl.truth_fd, v, 2);

		if (w >= 0 && (size_t)w < want) {
			/* A short write (a full disk): the rest plainly. */
			size_t done = (size_t)w;

			if (done < o->len) {
				write_full(qpl.truth_fd, o->part + done,
					   o->len - done);
				done = o->len;
			}
			write_full(qpl.truth_fd, buf + (done - o->len),
				   whole - (done - o->len));
		}
		o->len = 0;
	}
	if (rest) {
		if (o->len + rest > o->cap) {
			size_t cap = (o->len + rest) * 2;
			char *p = realloc(o->part, cap);

			if (!p)
				return (ssize_t)whole ? (ssize_t)whole : -1;
			o->part = p;
			o->cap = cap;
		}
		memcpy(o->part + o->len, buf + whole, rest);
		o->len += rest;
	}
	return (ssize_t)n;
}

static int truth_close(void *cookie)
{
	struct truth_out *o = cookie;

	write_full(qpl.truth_fd, o->part, o->len);
	o->len = 0;
	return 0;
}

/* Open the truth file again, appending, at a high fd. */
static int truth_reopen(void)
{
	struct stat st;
	int fd = open(qpl.truth_path, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return -1;
	fd = high_fd(fd);
	qpl.truth_fd = fd;
	qpl.truth_ino = fstat(fd, &st) ? 0 : (uint64_t)st.st_ino;
	return 0;
}

FILE *qpl_truth_open(int fd)
{
	cookie_io_functions_t io = {.write = truth_write, .close = truth_close};
	struct truth_out *o;
	char link[64];
	ssize_t n;
	FILE *f;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, qpl.truth_path, sizeof(qpl.truth_path) - 1);
	if (n <= 0)
		return NULL;
	qpl.truth_path[n] = 0;
	if (truth_reopen())
		return NULL;
	close(fd);
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	f = fopencookie(o, "w", io);
	if (!f) {
		free(o);
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	return f;
}

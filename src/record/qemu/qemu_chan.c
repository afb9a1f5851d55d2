/* SPDX-License-Identifier: MIT */
/* The qemu backend's sockets (see qemu_engine.h): one channel per guest
 * process, every one read without blocking into its own buffer and
 * queue, so that a signal, a silent plugin or a second process never
 * holds ptscope in a read, and two processes' messages never mix. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/qemu/qemu_engine.h"

#define MAX_MSG (1u << 30)

int qchan_listen(struct qemu_bk *q)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timespec ts;
	socklen_t len;
	size_t n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(q->sock, sizeof(q->sock), "@ptscope-qemu-%d-%lx",
		 (int)getpid(),
		 (unsigned long)ts.tv_nsec ^ (unsigned long)ts.tv_sec);
	n = strlen(q->sock);
	memcpy(a.sun_path, q->sock, n);
	a.sun_path[0] = 0;
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	q->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (q->lfd < 0 || bind(q->lfd, (struct sockaddr *)&a, len) ||
	    listen(q->lfd, 64))
		return ps_err_detail(PS_ERR_IO,
				     "cannot listen for the QEMU plugin: %s",
				     strerror(errno));
	return 0;
}

struct qchan *qchan_add(struct qemu_bk *q, int fd, pid_t pid)
{
	struct qchan *c = calloc(1, sizeof(*c)), **n;

	n = c ? realloc(q->ch, (q->nch + 1) * sizeof(*n)) : NULL;
	if (!n) {
		free(c);
		close(fd);
		return NULL;
	}
	q->ch = n;
	q->ch[q->nch++] = c;
	c->fd = fd;
	c->pid = pid;
	c->qtail = &c->queue;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return c;
}

void qmsg_free(struct qmsg *m)
{
	if (m) {
		free(m->data);
		free(m);
	}
}

void qchan_close(struct qchan *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->eof = 1;
	c->dumping = 0;
	c->stopped = 0;
}

void qchan_free(struct qchan *c)
{
	if (!c)
		return;
	qchan_close(c);
	while (c->queue) {
		struct qmsg *m = c->queue;

		c->queue = m->next;
		qmsg_free(m);
	}
	free(c->in);
	free(c->host);
	free(c);
}

int qchan_send(struct qchan *c, uint32_t type, const void *a, uint32_t alen,
	       const void *b, uint32_t blen)
{
	struct qp_header h = {type, alen + blen};
	const uint8_t *parts[3] = {(const uint8_t *)&h, a, b};
	size_t lens[3] = {sizeof(h), alen, blen};
	int waited = 0;

	if (c->fd < 0)
		return -1;
	/* Messages to the plugin are small and its control thread reads
	 * them at once; a full socket for 2 s means it is gone. */
	for (int i = 0; i < 3; i++)
		while (lens[i]) {
			ssize_t w = send(c->fd, parts[i], lens[i],
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0) {
				parts[i] += w;
				lens[i] -= (size_t)w;
				continue;
			}
			if (w < 0 && (errno == EAGAIN || errno == EINTR) &&
			    waited++ < 200) {
				struct pollfd pf = {c->fd, POLLOUT, 0};

				poll(&pf, 1, 10);
				continue;
			}
			return -1;
		}
	return 0;
}

int qchan_resume(struct qchan *c, int mode, uint32_t tid)
{
	struct qp_resume r = {(uint32_t)mode, tid};

	if (mode == QP_UNTRACE)
		c->untraced = 1;
	c->stopped = 0;
	return qchan_send(c, QP_RESUME, &r, sizeof(r), NULL, 0);
}

/* Whole messages out of @c's buffer into its queue. */
static int parse(struct qchan *c)
{
	size_t off = 0;
	int r = 0;

	while (c->inlen - off >= sizeof(struct qp_header)) {
		struct qp_header h;
		struct qmsg *m;

		memcpy(&h, c->in + off, sizeof(h));
		if (h.len > MAX_MSG) {
			r = ps_err_detail(PS_ERR_FORMAT,
					  "the QEMU plugin of process %d sent "
					  "a %u-byte message",
					  (int)c->pid, h.len);
			break;
		}
		if (c->inlen - off - sizeof(h) < h.len)
			break;
		m = calloc(1, sizeof(*m));
		if (!m || !(m->data = malloc(h.len ? h.len : 1))) {
			free(m);
			r = PS_ERR_NOMEM;
			break;
		}
		m->type = h.type;
		m->len = h.len;
		memcpy(m->data, c->in + off + sizeof(h), h.len);
		off += sizeof(h) + h.len;
		*c->qtail = m;
		c->qtail = &m->next;
	}
	memmove(c->in, c->in + off, c->inlen - off);
	c->inlen -= off;
	return r;
}

static int read_some(struct qchan *c)
{
	for (;;) {
		ssize_t n;

		if (c->incap - c->inlen < 65536) {
			size_t cap = c->incap ? 2 * c->incap : 1 << 17;
			uint8_t *p = realloc(c->in, cap);

			if (!p)
				return PS_ERR_NOMEM;
			c->in = p;
			c->incap = cap;
		}
		n = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
		if (n > 0) {
			c->inlen += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		/* End of stream (or an error: the same to us). */
		close(c->fd);
		c->fd = -1;
		c->eof = 1;
		break;
	}
	return parse(c);
}

static void accept_new(struct qemu_bk *q)
{
	for (;;) {
		struct ucred cr = {0};
		socklen_t cl = sizeof(cr);
		int fd = accept4(q->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			return;
		/* Only our own user's processes. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ||
		    cr.uid != getuid()) {
			close(fd);
			continue;
		}
		qchan_add(q, fd, cr.pid);
	}
}

int qchan_pump(struct qemu_bk *q, int ms)
{
	struct pollfd *pf = calloc(q->nch + 1, sizeof(*pf));
	size_t n = 0;
	int r = 0;

	if (!pf)
		return PS_ERR_NOMEM;
	if (q->lfd >= 0)
		pf[n++] = (struct pollfd){q->lfd, POLLIN, 0};
	for (size_t i = 0; i < q->nch; i++)
		if (q->ch[i]->fd >= 0)
			pf[n++] = (struct pollfd){q->ch[i]->fd, POLLIN, 0};
	/* A signal (Ctrl-C, SIGTERM, --duration's SIGALRM) ends the wait
	 * with EINTR: the caller looks at rec_stop_flag. */
	if (poll(pf, n, ms) > 0) {
		if (q->lfd >= 0 && pf[0].revents)
			accept_new(q);
		for (size_t i = 0; i < q->nch && !r; i++)
			if (q->ch[i]->fd >= 0)
				r = read_some(q->ch[i]);
	}
	free(pf);
	return r;
}

struct qmsg *qchan_pop(struct qchan *c)
{
	struct qmsg *m = c->queue;

	if (m) {
		c->queue = m->next;
		if (!c->queue)
			c->qtail = &c->queue;
		m->next = NULL;
	}
	return m;
}

struct qmsg *qchan_take(struct qchan *c, uint32_t type)
{
	for (struct qmsg **pp = &c->queue; *pp; pp = &(*pp)->next) {
		struct qmsg *m = *pp;

		if (m->type != type)
			continue;
		*pp = m->next;
		if (!*pp)
			c->qtail = pp;
		m->next = NULL;
		return m;
	}
	return NULL;
}

struct qchan *qchan_of_pid(struct qemu_bk *q, pid_t pid)
{
	for (size_t i = q->nch; i-- > 0;)
		if (q->ch[i]->pid == pid && q->ch[i]->proc && q->ch[i]->fd >= 0)
			return q->ch[i];
	return NULL;
}

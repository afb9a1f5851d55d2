/* SPDX-License-Identifier: MIT */
/* The qemu backend: `run` under qemu-x86_64 with our TCG plugin (qemu/),
 * which writes each guest thread's PT into its own snapshot ring.  This
 * side starts QEMU, answers the plugin (src/record/qemu/qemu_proto.h), keeps the
 * latest copy of every thread's PT, and turns what it hears into the
 * recorder core's processes, threads, modules, triggers and marks.
 *
 * Not followed: a program the target starts with execve (QEMU execs it
 * natively), and fork children (they run on under QEMU, untraced).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/kevents/kevents.h"
#include "src/record/qemu/qemu_engine.h"

#define MAX_MSG (1u << 30)

/* ---- socket ------------------------------------------------------- */

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

static int send_msg(struct qemu_bk *q, uint32_t type, const void *a,
		    uint32_t alen, const void *b, uint32_t blen)
{
	struct qp_header h = {type, alen + blen};
	struct iovec v[3] = {
	    {&h, sizeof(h)}, {(void *)a, alen}, {(void *)b, blen}};
	struct msghdr m = {.msg_iov = v, .msg_iovlen = 3};
	size_t want = sizeof(h) + alen + blen;
	ssize_t w = sendmsg(q->fd, &m, MSG_NOSIGNAL);

	/* Messages to the plugin are small: one sendmsg or a dead peer. */
	return w == (ssize_t)want ? 0 : -1;
}

static int resume(struct qemu_bk *q, int mode, uint32_t tid)
{
	struct qp_resume r = {(uint32_t)mode, tid};

	return send_msg(q, QP_RESUME, &r, sizeof(r), NULL, 0);
}

/* The next message (queued first), or 1 at the end of the stream. */
static int next_msg(struct qemu_bk *q, struct qmsg **out)
{
	struct qp_header h;
	struct qmsg *m;

	if (q->queue) {
		*out = q->queue;
		q->queue = q->queue->next;
		if (!q->queue)
			q->qtail = &q->queue;
		return 0;
	}
	if (read_all(q->fd, &h, sizeof(h)))
		return 1;
	if (h.len > MAX_MSG)
		return ps_err_detail(PS_ERR_FORMAT,
				     "the QEMU plugin sent a %u-byte message",
				     h.len);
	m = calloc(1, sizeof(*m));
	if (!m || !(m->data = malloc(h.len ? h.len : 1))) {
		free(m);
		return PS_ERR_NOMEM;
	}
	m->type = h.type;
	m->len = h.len;
	if (read_all(q->fd, m->data, h.len)) {
		free(m->data);
		free(m);
		return 1;
	}
	*out = m;
	return 0;
}

static void msg_free(struct qmsg *m)
{
	if (m) {
		free(m->data);
		free(m);
	}
}

/* ---- modules ------------------------------------------------------- */

/* Re-read the guest's mappings.  A process that is exiting shows none:
 * then the last good list stays. */
static int refresh(struct rec_session *s, struct qemu_bk *q)
{
	struct mod_list old = q->proc->mods;
	int r;

	memset(&q->proc->mods, 0, sizeof(q->proc->mods));
	r = rec_proc_refresh_maps(s, q->proc);
	if (!r)
		qemu_keep_guest_maps(q, q->proc);
	if (r || !q->proc->mods.n) {
		mod_list_fini(&q->proc->mods);
		q->proc->mods = old;
		return r == PS_ERR_NOT_FOUND ? 0 : r;
	}
	mod_list_fini(&old);
	return 0;
}

/* The mappings were read when the PT was taken (the guest stopped, see
 * on_dump), which is what the snapshot must describe; by the time it is
 * written the program may have moved on or ended. */
static int qemu_maps(struct rec_session *s, struct rec_proc *p)
{
	(void)s, (void)p;
	return 0;
}

/* Tell the plugin where to stop: trigger addresses, the entry point, and
 * the functions whose calls it times (latency triggers). */
static int send_watch(struct rec_session *s, struct qemu_bk *q)
{
	struct qp_watch w = {q->entry,
			     (s->triggers_pending ? QP_WATCH_MAPS : 0) |
				 (rkev_sidecar(s) ? QP_WATCH_SYSCALLS : 0),
			     0, 0, 0};
	uint8_t body[REC_MAX_TRIGGERS * (8 + sizeof(struct qp_timed))];
	size_t len = 0;

	for (size_t i = 0; i < q->proc->ntaddr && i < REC_MAX_TRIGGERS; i++) {
		memcpy(body + len, &q->proc->taddr[i].addr, 8);
		len += 8;
		w.n++;
	}
	q->ntimed = rec_triggers_timed(s, q->proc->pid, q->timed,
					REC_MAX_TRIGGERS);
	for (size_t i = 0; i < q->ntimed; i++) {
		struct qp_timed t = {q->timed[i].addr, q->timed[i].ns};

		memcpy(body + len, &t, sizeof(t));
		len += sizeof(t);
	}
	w.ntimed = (uint32_t)q->ntimed;
	return send_msg(q, QP_WATCH, &w, sizeof(w), body, (uint32_t)len)
		   ? PS_ERR_TARGET
		   : 0;
}

/* ---- messages ------------------------------------------------------ */

static struct rec_thr *thread_of(struct rec_session *s, struct qemu_bk *q,
				 pid_t tid)
{
	struct rec_thr *t = rec_thr_find(s, tid);

	if (!t && rec_thr_add(s, q->proc, tid, THR_RUNNING, &t))
		return NULL;
	if (t && !t->bk)
		t->bk = calloc(1, sizeof(struct qthr_bk));
	if (t && !t->bk)
		return NULL;
	return t;
}

static int on_dump(struct rec_session *s, struct qemu_bk *q,
		   const struct qmsg *m)
{
	const uint8_t *p = m->data, *end = m->data + m->len;
	uint32_t n;

	if (m->len < 4)
		return PS_ERR_FORMAT;
	memcpy(&n, p, 4);
	p += 4;
	s->res->instructions = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct qp_thread th;
		struct qthr_bk *b;
		struct rec_thr *t;

		if ((size_t)(end - p) < sizeof(th))
			return PS_ERR_FORMAT;
		memcpy(&th, p, sizeof(th));
		p += sizeof(th);
		if ((uint64_t)(end - p) < th.len)
			return PS_ERR_FORMAT;
		t = thread_of(s, q, (pid_t)th.tid);
		if (!t)
			return PS_ERR_NOMEM;
		b = t->bk;
		free(b->pt);
		b->pt = NULL;
		b->len = 0;
		if (th.len && !(b->pt = malloc(th.len)))
			return PS_ERR_NOMEM;
		memcpy(b->pt, p, th.len);
		b->len = th.len;
		b->now = th.now;
		b->insns = th.insns;
		p += th.len;
		t->traced = 1;
		if (t->comm[0] == 0 || !strncmp(t->comm, "qemu-", 5)) {
			if (th.alive)
				rec_read_comm(q->pid, t->tid, t->comm,
					 sizeof(t->comm));
			if (!t->comm[0] || !strncmp(t->comm, "qemu-", 5)) {
				const char *b0 = strrchr(q->exe, '/');

				snprintf(t->comm, sizeof(t->comm), "%.31s",
					 b0 ? b0 + 1 : q->exe);
			}
		}
		if (!th.alive && t->state != THR_GONE) {
			t->state = THR_GONE;
			s->nlive--;
		}
		if (th.now > q->proc->now)
			q->proc->now = th.now;
		s->res->instructions += th.insns;
	}
	s->res->threads = s->nthrs;
	q->have_dump = 1;
	/* The guest is stopped (or ending): its mappings match this PT. */
	return refresh(s, q);
}

/* Stop the guest and take every thread's PT; other notifications that
 * arrive meanwhile wait in the queue. */
static int dump(struct rec_session *s, struct qemu_bk *q)
{
	struct qmsg *m, *held = NULL, **tail = &held;
	int r;

	if (send_msg(q, QP_DUMP, NULL, 0, NULL, 0))
		return PS_ERR_TARGET;
	for (;;) {
		r = next_msg(q, &m);
		if (r)
			break;
		if (m->type == QP_DUMP_DATA) {
			r = on_dump(s, q, m);
			msg_free(m);
			break;
		}
		*tail = m;
		tail = &m->next;
		m->next = NULL;
	}
	if (held) {
		*tail = q->queue;
		if (!q->queue)
			q->qtail = tail;
		q->queue = held;
	}
	return r == 1 ? PS_ERR_TARGET : r;
}

static int on_hit(struct rec_session *s, struct qemu_bk *q,
		  const struct qp_hit *h)
{
	const struct rec_taddr *ta =
	    h->index < q->proc->ntaddr ? &q->proc->taddr[h->index] : NULL;
	char reason[256] = "";
	struct rec_thr *t;
	int r;

	r = dump(s, q);
	if (r)
		return r;
	t = thread_of(s, q, (pid_t)h->tid);
	if (!t)
		return PS_ERR_NOMEM;
	if (ta && ta->is_trigger_fn && h->rdi) {
		ssize_t n =
		    mod_read_mem(q->pid, h->rdi, reason, sizeof(reason) - 1);

		reason[n > 0 ? n : 0] = 0;
	}
	r = rec_trigger_hit(s, t, h->ip, h->now, h->rdi, ta ? ta->symbol : "",
			    reason);
	if (r < 0)
		return r;
	return resume(q, r == 1 ? QP_UNTRACE : QP_GO, h->tid) ? PS_ERR_TARGET
							      : 0;
}

/* One message; 1 when recording is over. */
static int handle(struct rec_session *s, struct qemu_bk *q, struct qmsg *m)
{
	struct qp_tid tid = {0};
	int r = 0;

	if (m->len >= sizeof(tid))
		memcpy(&tid, m->data, sizeof(tid));
	switch (m->type) {
	case QP_HELLO: {
		struct qp_hello h;
		struct emu_fn *fns; /* --args */
		size_t n;

		if (m->len < sizeof(h))
			return PS_ERR_FORMAT;
		memcpy(&h, m->data, sizeof(h));
		if (h.guest_base)
			return ps_err_detail(
			    PS_ERR_UNSUPPORTED,
			    "QEMU placed the guest at an offset (guest_base "
			    "0x%llx); the qemu backend needs guest addresses "
			    "equal to host addresses",
			    (unsigned long long)h.guest_base);
		free(q->host);
		q->nhost = h.nranges;
		q->host = calloc(h.nranges ? h.nranges : 1, sizeof(*q->host));
		if (!q->host ||
		    m->len < sizeof(h) + (size_t)h.nranges * sizeof(*q->host))
			return PS_ERR_FORMAT;
		memcpy(q->host, m->data + sizeof(h),
		       h.nranges * sizeof(*q->host));
		/* qp_range and rkev_range are both {start, end}. */
		rkev_set_foreign(s, (const struct rkev_range *)q->host,
				 q->nhost);
		r = rec_proc_add(s, q->pid, &q->proc);
		if (!r) {
			q->proc->map_flags = MOD_FILE;
			r = refresh(s, q);
		}
		if (!r)
			r = rec_triggers_resolve(s, q->proc, 0);
		q->entry = s->o->trace_loader ? 0 : qemu_entry_point(q);
		if (!r && !s->o->trace_loader && !q->entry)
			r = ps_err_detail(PS_ERR_TARGET,
					  "cannot find the entry point of "
					  "'%s'; try --trace-loader",
					  q->exe);
		if (!r && s->o->args && !qemu_args(s, q, h.regs_ok, &fns, &n)) {
			r = send_msg(q, QP_ARGS, fns, (uint32_t)(n * sizeof(*fns)),
				     NULL, 0) ? PS_ERR_TARGET : 0;
			free(fns);
		}
		if (!r)
			r = send_watch(s, q);
		if (!r && resume(q, QP_GO, (uint32_t)q->pid))
			r = PS_ERR_TARGET;
		return r;
	}
	case QP_MAPS:
	case QP_ENTRY:
		if (m->type == QP_ENTRY)
			q->entry = 0;
		r = refresh(s, q);
		if (!r)
			r = rec_triggers_resolve(s, q->proc,
						 m->type == QP_ENTRY);
		if (!r)
			r = send_watch(s, q);
		if (!r && resume(q, QP_GO, tid.tid))
			r = PS_ERR_TARGET;
		return r;
	case QP_HIT: {
		struct qp_hit h;

		if (m->len < sizeof(h))
			return PS_ERR_FORMAT;
		memcpy(&h, m->data, sizeof(h));
		return on_hit(s, q, &h);
	}
	case QP_EXEC:
		r = dump(s, q);
		if (!r)
			r = rec_mark_add(s, REC_MARK_NOTE,
					 rec_thr_find(s, (pid_t)tid.tid),
					 q->proc->now, 0, 0,
					 "execve: the program replaced itself "
					 "with another, which the qemu backend "
					 "does not follow");
		s->stop_reason = "exec";
		if (!r && resume(q, QP_UNTRACE, tid.tid))
			r = PS_ERR_TARGET;
		return r;
	case QP_SLOW: {
		struct qp_slow sl;
		struct rec_thr *t;

		if (m->len < sizeof(sl))
			return PS_ERR_FORMAT;
		memcpy(&sl, m->data, sizeof(sl));
		r = dump(s, q);
		t = r ? NULL : thread_of(s, q, (pid_t)sl.tid);
		if (!r && !t)
			r = PS_ERR_NOMEM;
		if (!r && sl.index < q->ntimed)
			r = rec_triggers_slow_call(s, t, q->timed[sl.index].idx,
						   sl.addr, sl.start, sl.end);
		if (r < 0)
			return r;
		return resume(q, r == 1 ? QP_UNTRACE : QP_GO, sl.tid)
			   ? PS_ERR_TARGET
			   : 0;
	}
	case QP_SYSCALL: {
		struct qp_syscall c;
		struct rec_thr *t;

		if (m->len < sizeof(c))
			return PS_ERR_FORMAT;
		memcpy(&c, m->data, sizeof(c));
		t = thread_of(s, q, (pid_t)c.tid);
		if (!t)
			return PS_ERR_NOMEM;
		{
			struct qthr_bk *b = t->bk;

			rkev_span(s, t, c.nr, c.v0, c.v1, c.r0, c.r1, b->call_v,
				  b->call_r);
			b->call_v = c.v1;
			b->call_r = c.r1;
		}
		return 0;
	}
	case QP_THREAD:
		return thread_of(s, q, (pid_t)tid.tid) ? 0 : PS_ERR_NOMEM;
	case QP_END:
		if (m->len < sizeof(q->end))
			return PS_ERR_FORMAT;
		memcpy(&q->end, m->data, sizeof(q->end));
		q->ended = 1;
		/* QEMU waits, alive, until we read its last dump. */
		return q->proc ? refresh(s, q) : 0;
	case QP_DUMP_DATA:
		r = on_dump(s, q, m);
		/* The last dump (after END): the process may go now that its
		 * mappings are read. */
		if (!r && q->ended)
			resume(q, QP_GO, q->end.tid);
		return r;
	case QP_FAIL:
		snprintf(q->fail, sizeof(q->fail), "%.*s", (int)m->len,
			 (const char *)m->data);
		return ps_err_detail(PS_ERR_UNSUPPORTED, "%s", q->fail);
	default:
		return ps_err_detail(PS_ERR_FORMAT,
				     "the QEMU plugin sent message type %u",
				     m->type);
	}
}

/* ---- the run ------------------------------------------------------- */

/* The end of the run: wait for QEMU and mark how the program ended. */
static int finish(struct rec_session *s, struct qemu_bk *q)
{
	struct rec_result *res = s->res;
	struct rec_thr *t;
	char text[128];
	int st = 0, sig;

	while (waitpid(q->pid, &st, 0) < 0)
		if (errno != EINTR)
			return ps_err_detail(PS_ERR_TARGET, "waitpid: %s",
					     strerror(errno));
	if (WIFEXITED(st)) {
		res->exited = 1;
		res->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->killed_by = WTERMSIG(st);
	}
	if (!q->ended || !q->proc)
		return 0;
	t = thread_of(s, q, (pid_t)q->end.tid);
	if (!t)
		return PS_ERR_NOMEM;
	if (q->end.kind == QP_END_CRASH && WIFSIGNALED(st)) {
		sig = WTERMSIG(st);
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
		    sig == SIGFPE)
			snprintf(text, sizeof(text),
				 "%s (fault address 0x%llx)", ps_signame(sig),
				 (unsigned long long)q->end.addr);
		else
			snprintf(text, sizeof(text), "%s", ps_signame(sig));
		res->fault_addr = q->end.addr;
		res->fault_ip = q->end.ip;
		res->fault_tid = (pid_t)q->end.tid;
		s->stop_reason = "signal";
		return rec_mark_add(s, REC_MARK_SIGNAL, t, q->end.now,
				    q->end.ip, (uint64_t)sig, text);
	}
	snprintf(text, sizeof(text), "exit status %d", res->exit_code);
	return rec_mark_add(s, REC_MARK_EXIT, t, q->end.now, 0,
			    (uint64_t)(res->exit_code << 8), text);
}

/* Answer the plugin until the program ends, or recording stops early
 * (trigger, --multi-snapshot limit, --duration, Ctrl-C, exec): then the
 * program runs on untraced and s->stop_reason says why. */
static int loop(struct rec_session *s, struct qemu_bk *q)
{
	int r = 0;

	for (;;) {
		struct qmsg *m;
		struct pollfd pf = {q->fd, POLLIN, 0};

		if (rec_stop_flag && q->proc) {
			/* Ctrl-C or --duration: snapshot now, then let the
			 * program run on untraced. */
			s->stop_reason =
			    rec_stop_flag == 2 ? "duration" : "interrupt";
			r = dump(s, q);
			if (r == PS_ERR_TARGET)
				return 0; /* it ended meanwhile */
			if (r)
				return r;
			resume(q, QP_UNTRACE, 0);
			return 0;
		}
		/* Woken every 100 ms, or by a signal (EINTR), to look at
		 * rec_stop_flag. */
		if (!q->queue && poll(&pf, 1, 100) <= 0)
			continue;
		r = next_msg(q, &m);
		if (r == 1)
			return 0;
		if (r < 0)
			return r;
		r = handle(s, q, m);
		msg_free(m);
		if (r < 0)
			return r;
		if (s->stop_reason && !q->ended)
			return 0;
	}
}

/* After an early stop: the plugin has nothing more to say; read to the
 * end so QEMU never blocks on a full socket. */
static void drain(struct qemu_bk *q)
{
	struct qmsg *m;

	while (next_msg(q, &m) == 0)
		msg_free(m);
}

static int qemu_run(struct rec_session *s, char *const argv[])
{
	char qemu[PATH_MAX], plugin[PATH_MAX];
	struct rec_saved_timer sv;
	struct qemu_bk *q;
	uint64_t t0 = rec_clock_ns();
	int r;

	r = qemu_find(qemu, sizeof(qemu));
	if (!r)
		r = qemu_plugin_path(plugin, sizeof(plugin));
	if (r)
		return r;
	q = calloc(1, sizeof(*q));
	if (!q)
		return PS_ERR_NOMEM;
	s->bk = q;
	q->fd = -1;
	q->qtail = &q->queue;
	r = qemu_find_program(argv[0], q->exe, sizeof(q->exe));
	if (r)
		return r;
	{
		/* /proc/PID/maps names files by their absolute path. */
		char abs[PATH_MAX];

		if (realpath(q->exe, abs))
			snprintf(q->exe, sizeof(q->exe), "%s", abs);
	}
	qemu_version(qemu, q->version, sizeof(q->version));
	snprintf(q->backend, sizeof(q->backend), "qemu (QEMU %s)", q->version);
	r = qemu_spawn(s, q, qemu, plugin, argv);
	if (r)
		return r;
	rec_stop_flag = 0;
	rec_duration_arm(s->o, &sv);
	r = loop(s, q);
	rec_duration_disarm(s->o, &sv);
	s->res->seconds = (double)(rec_clock_ns() - t0) / 1e9;
	if (r) {
		/* Do not leave the command half-traced. */
		kill(q->pid, SIGKILL);
		waitpid(q->pid, NULL, 0);
		return r;
	}
	if (!q->proc) {
		int st = 0;

		waitpid(q->pid, &st, 0);
		s->res->exited = WIFEXITED(st);
		s->res->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
		s->res->killed_by = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		return ps_err_detail(PS_ERR_TARGET,
				     "'%s' ended before its first instruction "
				     "under qemu-x86_64 (see QEMU's message "
				     "above)",
				     argv[0]);
	}
	if (s->stop_reason && !q->ended) {
		/* The trace is written now, while the program runs on. */
		if (q->have_dump)
			r = rec_snapshot_final(s);
		rec_stop_flag = 0;
		drain(q);
		if (!r)
			r = finish(s, q);
		return r;
	}
	r = finish(s, q);
	rec_stop_flag = 0;
	if (!r && q->have_dump)
		r = rec_snapshot_final(s);
	return r;
}

static void qemu_fini(struct rec_session *s)
{
	struct qemu_bk *q = s->bk;

	for (size_t i = 0; i < s->nthrs; i++) {
		struct qthr_bk *b = s->thrs[i]->bk;

		if (b)
			free(b->pt);
		free(b);
		s->thrs[i]->bk = NULL;
	}
	if (!q)
		return;
	while (q->queue) {
		struct qmsg *m = q->queue;

		q->queue = m->next;
		msg_free(m);
	}
	if (q->fd >= 0)
		close(q->fd);
	free(q->host);
	free(q);
	s->bk = NULL;
}

static int qemu_snapshot(struct rec_session *s, const struct rec_thr *t,
			 struct rec_pt_chunk **chunks, size_t *n)
{
	const struct qthr_bk *b = t->bk;
	uint8_t *buf;

	(void)s;
	if (!b || !b->len)
		return PS_ERR_NOT_FOUND;
	buf = malloc(b->len);
	if (!buf)
		return PS_ERR_NOMEM;
	memcpy(buf, b->pt, b->len);
	return rec_pt_one_chunk(t, buf, b->len, chunks, n);
}

static uint64_t qemu_now(struct rec_session *s, const struct rec_thr *t)
{
	const struct qthr_bk *b = t->bk;

	return b ? b->now : t->proc->now;
}

static void qemu_fill_info(struct rec_session *s, struct rec_info *info)
{
	const struct qemu_bk *q = s->bk;

	if (q)
		info->backend = q->backend;
}

const struct rec_backend rec_backend_qemu = {
    .name = "qemu",
    .emulated = 1,
    .marks_at_step = 0,
    .hw_breakpoints = 0,
    .kernel_events = 1,
    .run = qemu_run,
    .attach = NULL,
    .fini = qemu_fini,
    .snapshot = qemu_snapshot,
    .now = qemu_now,
    .maps = qemu_maps,
    .fill_info = qemu_fill_info,
};

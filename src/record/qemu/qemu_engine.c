/* SPDX-License-Identifier: MIT */
/* The qemu backend: `run` under qemu-x86_64 with our TCG plugin (qemu/),
 * which writes each guest thread's PT into its own snapshot ring.  This
 * side starts QEMU, answers the plugins (src/record/qemu/qemu_proto.h) of
 * every process of the command's tree, keeps the latest copy of every
 * thread's PT, and turns what it hears into the recorder core's
 * processes, threads, modules, triggers and marks.  Fork children and
 * programs started by exec are followed (qemu_tree.c; qemu/tree.c and
 * qemu/exec.c on the plugin's side) unless --no-follow.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/kevents/kevents.h"
#include "src/record/qemu/qemu_engine.h"

/* The mappings were read when the PT was taken (the guest stopped, see
 * qtree_on_dump), which is what the snapshot must describe.  A new
 * process or image (fork, exec) is read through its channel. */
static int qemu_maps(struct rec_session *s, struct rec_proc *p)
{
	struct qemu_bk *q = s->bk;

	for (size_t i = q ? q->nch : 0; i-- > 0;) {
		struct qchan *c = q->ch[i];

		if (c->pid != p->pid || !c->maps_stale || c->fd < 0)
			continue;
		if (!c->proc)
			c->proc = p;
		return qtree_refresh(s, c);
	}
	return 0;
}

static int on_hit(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		  const struct qp_hit *h)
{
	const struct rec_taddr *ta =
	    h->index < c->proc->ntaddr ? &c->proc->taddr[h->index] : NULL;
	char reason[256] = "";
	struct rec_thr *t;
	int r;

	/* The snapshot holds the whole tree. */
	r = qtree_dump_all(s, q);
	if (r)
		return r;
	t = qtree_thread(s, c, (pid_t)h->tid);
	if (!t)
		return PS_ERR_NOMEM;
	if (ta && ta->is_trigger_fn && h->rdi) {
		ssize_t n =
		    mod_read_mem(c->pid, h->rdi, reason, sizeof(reason) - 1);

		reason[n > 0 ? n : 0] = 0;
	}
	r = rec_trigger_hit(s, t, h->ip, h->now, h->rdi, ta ? ta->symbol : "",
			    reason);
	if (r < 0)
		return r;
	if (r == 0)
		qtree_resume_all(q, QP_GO, c, h->tid);
	return 0;
}

static int on_slow(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		   const struct qmsg *m)
{
	struct qp_slow sl;
	struct rec_thr *t;
	int r;

	if (m->len < sizeof(sl))
		return PS_ERR_FORMAT;
	memcpy(&sl, m->data, sizeof(sl));
	r = qtree_dump_all(s, q);
	t = r ? NULL : qtree_thread(s, c, (pid_t)sl.tid);
	if (!r && !t)
		r = PS_ERR_NOMEM;
	if (!r && sl.index < c->ntimed)
		r = rec_triggers_slow_call(s, t, c->timed[sl.index].idx,
					   sl.addr, sl.start, sl.end);
	if (r < 0)
		return r;
	if (r == 0)
		qtree_resume_all(q, QP_GO, c, sl.tid);
	return 0;
}

static int on_exec(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		   const struct qmsg *m)
{
	struct qp_exec e;
	int r;

	if (m->len < sizeof(e))
		return PS_ERR_FORMAT;
	memcpy(&e, m->data, sizeof(e));
	r = qtree_dump_one(s, q, c);
	if (r)
		return r;
	if (e.kind == QP_EXEC_STOP) {
		/* --no-follow: the trace ends at the exec. */
		r = rec_mark_add(s, REC_MARK_NOTE,
				 rec_thr_find(s, (pid_t)e.tid), c->proc->now, 0,
				 0,
				 "execve: the program replaced itself with "
				 "another, which is not followed "
				 "(--no-follow)");
		s->stop_reason = "exec";
		return r;
	}
	c->exec = (int)e.kind + 1;
	c->exec_tid = (pid_t)e.tid;
	snprintf(c->exec_text, sizeof(c->exec_text), "%.*s",
		 (int)(m->len - sizeof(e)), (const char *)m->data + sizeof(e));
	return qchan_resume(c, QP_GO, e.tid) ? 0 : 0;
}

/* One message of @c. */
int qtree_handle(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		 struct qmsg *m)
{
	struct qp_tid tid = {0};
	int r = 0;

	if (m->len >= sizeof(tid))
		memcpy(&tid, m->data, sizeof(tid));
	if (m->type != QP_HELLO && m->type != QP_FAIL && !c->proc) {
		/* Before HELLO, or a channel exec replaced: nothing to do
		 * but never leave a thread waiting. */
		if (m->type == QP_END)
			qchan_resume(c, QP_GO, tid.tid);
		return 0;
	}
	if (q->stopping && m->type != QP_END && m->type != QP_DUMP_DATA &&
	    m->type != QP_SYSCALL && m->type != QP_THREAD &&
	    m->type != QP_EXEC_FAIL && m->type != QP_FAIL) {
		/* Recording is over: whoever asks goes on untraced. */
		qchan_resume(c, QP_UNTRACE, 0);
		return 0;
	}
	switch (m->type) {
	case QP_HELLO:
		return qtree_hello(s, q, c, m);
	case QP_MAPS:
	case QP_ENTRY:
		if (m->type == QP_ENTRY) {
			c->entry = 0;
			q->started = 1;
		}
		r = qtree_refresh(s, c);
		if (!r)
			r = rec_triggers_resolve(s, c->proc,
						 m->type == QP_ENTRY);
		if (!r)
			r = qtree_watch(s, c);
		if (!r && qchan_resume(c, QP_GO, tid.tid))
			r = 0; /* gone meanwhile */
		return r;
	case QP_HIT: {
		struct qp_hit h;

		if (m->len < sizeof(h))
			return PS_ERR_FORMAT;
		memcpy(&h, m->data, sizeof(h));
		return on_hit(s, q, c, &h);
	}
	case QP_EXEC:
		return on_exec(s, q, c, m);
	case QP_EXEC_FAIL:
		c->exec = 0;
		return 0;
	case QP_SLOW:
		return on_slow(s, q, c, m);
	case QP_SYSCALL: {
		struct qp_syscall sc;
		struct rec_thr *t;
		struct qthr_bk *b;

		if (m->len < sizeof(sc))
			return PS_ERR_FORMAT;
		memcpy(&sc, m->data, sizeof(sc));
		t = qtree_thread(s, c, (pid_t)sc.tid);
		if (!t)
			return PS_ERR_NOMEM;
		b = t->bk;
		rkev_span(s, t, sc.nr, sc.v0, sc.v1, sc.r0, sc.r1, b->call_v,
			  b->call_r);
		b->call_v = sc.v1;
		b->call_r = sc.r1;
		return 0;
	}
	case QP_THREAD:
		return qtree_thread(s, c, (pid_t)tid.tid) ? 0 : PS_ERR_NOMEM;
	case QP_END:
		if (m->len < sizeof(c->end))
			return PS_ERR_FORMAT;
		memcpy(&c->end, m->data, sizeof(c->end));
		c->ended = 1;
		/* QEMU waits, alive, until we read its last dump. */
		return qtree_refresh(s, c);
	case QP_DUMP_DATA:
		r = qtree_on_dump(s, c, m);
		if (!r && c->ended)
			c->end_data = 1;
		return r;
	case QP_FAIL: {
		char fail[512];

		snprintf(fail, sizeof(fail), "%.*s", (int)m->len,
			 (const char *)m->data);
		if (c->pid == q->pid && !q->traced_any)
			return ps_err_detail(PS_ERR_UNSUPPORTED, "%s", fail);
		rec_notice(s, "process %d runs untraced: %s", (int)c->pid,
			   fail);
		qchan_close(c);
		return 0;
	}
	default:
		return ps_err_detail(PS_ERR_FORMAT,
				     "the QEMU plugin of process %d sent "
				     "message type %u",
				     (int)c->pid, m->type);
	}
}

/* The command ended: reaped, and all its channels read to their end. */
static int command_over(struct qemu_bk *q)
{
	if (!q->reaped) {
		int st;
		pid_t r = waitpid(q->pid, &st, WNOHANG);

		if (r == q->pid) {
			q->reaped = 1;
			q->wstatus = st;
		} else if (r < 0 && errno == ECHILD) {
			q->reaped = 1;
		}
	}
	if (!q->reaped)
		return 0;
	for (size_t i = 0; i < q->nch; i++)
		if (q->ch[i]->pid == q->pid &&
		    (!q->ch[i]->eof || q->ch[i]->queue))
			return 0;
	return 1;
}

/* One message from any channel, round robin; NULL if none is queued. */
static struct qmsg *next_msg(struct qemu_bk *q, struct qchan **out)
{
	for (size_t k = 0; k < q->nch; k++) {
		struct qchan *c = q->ch[(q->rr + k) % q->nch];
		struct qmsg *m = qchan_pop(c);

		if (m) {
			q->rr = (q->rr + k + 1) % q->nch;
			*out = c;
			return m;
		}
	}
	return NULL;
}

/* Handle what is queued and what ended; 1 if anything was done. */
static int step(struct rec_session *s, struct qemu_bk *q, int *r)
{
	struct qchan *c;
	struct qmsg *m = next_msg(q, &c);

	if (m) {
		*r = qtree_handle(s, q, c, m);
		qmsg_free(m);
		return 1;
	}
	for (size_t i = 0; i < q->nch; i++) {
		c = q->ch[i];
		if (c->ended && c->end_data && !c->end_done) {
			*r = qtree_ended(s, q, c);
			return 1;
		}
		if (c->eof && !c->queue && !c->eof_done) {
			*r = qtree_eof(s, q, c);
			return 1;
		}
	}
	return 0;
}

/* Recording stops (a trigger, a child's crash, Ctrl-C, --duration): the
 * whole tree's PT is taken, and everything runs on untraced. */
static int stop_all(struct rec_session *s, struct qemu_bk *q)
{
	int r = qtree_dump_all(s, q);

	q->stopping = 1;
	qtree_resume_all(q, QP_UNTRACE, NULL, 0);
	return r;
}

/* Answer the plugins until the command ends, or recording stops early
 * (trigger, --multi-snapshot limit, --duration, Ctrl-C, a child's crash):
 * then the tree runs on untraced and s->stop_reason says why. */
static int loop(struct rec_session *s, struct qemu_bk *q)
{
	int r = 0;

	for (;;) {
		/* A stop request before the command's first instruction
		 * waits for it (the trace then holds where it stood). */
		if (rec_stop_flag && !s->stop_reason && q->started)
			s->stop_reason =
			    rec_stop_flag == 2 ? "duration" : "interrupt";
		if (s->stop_reason)
			return stop_all(s, q);
		if (step(s, q, &r)) {
			if (r < 0)
				return r;
			continue;
		}
		if (command_over(q))
			break;
		/* Woken every 100 ms, or by a signal (EINTR), to look at
		 * rec_stop_flag. */
		r = qchan_pump(q, 100);
		if (r)
			return r;
	}
	/* The command ended: what it left running goes on untraced. */
	return stop_all(s, q);
}

/* After recording: read on so no plugin blocks on a full socket and
 * whoever asks runs untraced, until the command ends.  A stop request
 * now (a second Ctrl-C, SIGTERM) ends the wait: the command runs on. */
static void drain(struct rec_session *s, struct qemu_bk *q)
{
	int r = 0;

	q->stopping = 1;
	while (!command_over(q)) {
		if (rec_stop_flag)
			return;
		while (step(s, q, &r))
			;
		if (qchan_pump(q, 100))
			break;
	}
}

static void result(struct rec_session *s, struct qemu_bk *q)
{
	struct rec_result *res = s->res;
	int st = q->wstatus;

	if (!q->reaped)
		return;
	if (WIFEXITED(st)) {
		res->exited = 1;
		res->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->killed_by = WTERMSIG(st);
		if (!s->stop_reason)
			s->stop_reason = "signal";
	}
}

static int qemu_run(struct rec_session *s, char *const argv[])
{
	char plugin[PATH_MAX];
	struct rec_saved_timer sv;
	struct qemu_bk *q;
	uint64_t t0 = rec_clock_ns();
	int r;

	q = calloc(1, sizeof(*q));
	if (!q)
		return PS_ERR_NOMEM;
	s->bk = q;
	q->lfd = -1;
	r = qemu_find(q->qemu, sizeof(q->qemu));
	if (!r)
		r = qemu_plugin_path(plugin, sizeof(plugin));
	if (r)
		return r;
	qemu_version(q->qemu, q->version, sizeof(q->version));
	snprintf(q->backend, sizeof(q->backend), "qemu (QEMU %s)", q->version);
	r = qchan_listen(q);
	if (!r)
		r = qemu_spawn(s, q, plugin, argv);
	if (r)
		return r;
	/* A Ctrl-C that came while QEMU started is not forgotten. */
	rec_duration_arm(s->o, &sv);
	r = loop(s, q);
	rec_duration_disarm(s->o, &sv);
	s->res->seconds = (double)(rec_clock_ns() - t0) / 1e9;
	if (r) {
		/* Do not leave the command half-traced. */
		if (!q->reaped) {
			kill(q->pid, SIGKILL);
			waitpid(q->pid, NULL, 0);
		}
		return r;
	}
	if (!q->traced_any) {
		drain(s, q);
		result(s, q);
		return ps_err_detail(PS_ERR_TARGET,
				     "'%s' ended before its first instruction "
				     "under qemu-x86_64 (QEMU's message, if "
				     "any, is above)",
				     argv[0]);
	}
	rec_stop_flag = 0;
	result(s, q);
	r = rec_snapshot_final(s);
	drain(s, q);
	result(s, q);
	rec_stop_flag = 0;
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
	for (size_t i = 0; i < s->nprocs; i++)
		s->procs[i]->bk = NULL;
	if (!q)
		return;
	for (size_t i = 0; i < q->nch; i++)
		qchan_free(q->ch[i]);
	free(q->ch);
	if (q->lfd >= 0)
		close(q->lfd);
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

	(void)s;
	return b && b->now ? b->now : t->proc->now;
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

/* SPDX-License-Identifier: MIT */
/* The process tree under QEMU (see qemu_engine.h and
 * docs/qemu-backend.md): the command, its fork children (each with a
 * plugin channel of its own) and the programs exec starts under a new
 * QEMU in the same process; whole-tree dumps for snapshots; how each
 * process ends. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "ptscope/signame.h"
#include "src/record/kevents/kevents.h"
#include "src/record/qemu/qemu_engine.h"

/* How long a plugin may take to answer a DUMP (ms). */
#define DUMP_WAIT_MS 10000

struct rec_thr *qtree_thread(struct rec_session *s, struct qchan *c, pid_t tid)
{
	struct rec_thr *t = rec_thr_find(s, tid);

	if (t && t->proc != c->proc)
		t = NULL; /* a tid reused by another process */
	if (!t && rec_thr_add(s, c->proc, tid, THR_RUNNING, &t))
		return NULL;
	if (t && !t->bk)
		t->bk = calloc(1, sizeof(struct qthr_bk));
	return t && t->bk ? t : NULL;
}

int qtree_refresh(struct rec_session *s, struct qchan *c)
{
	struct rec_proc *p = c->proc;
	struct mod_list old = p->mods;
	int r;

	c->maps_stale = 0;
	memset(&p->mods, 0, sizeof(p->mods));
	r = rec_proc_refresh_maps(s, p);
	if (!r)
		qemu_keep_guest_maps(c, p);
	/* A process that is exiting shows none: the last good list stays. */
	if (r || !p->mods.n) {
		mod_list_fini(&p->mods);
		p->mods = old;
		return r == PS_ERR_NOT_FOUND ? 0 : r;
	}
	mod_list_fini(&old);
	return 0;
}

int qtree_watch(struct rec_session *s, struct qchan *c)
{
	struct rec_proc *p = c->proc;
	struct qp_watch w = {c->entry,
			     (s->triggers_pending ? QP_WATCH_MAPS : 0) |
				 (rkev_sidecar(s) ? QP_WATCH_SYSCALLS : 0) |
				 (rec_follows(s) ? QP_WATCH_FOLLOW : 0),
			     0, 0, 0};
	uint8_t body[REC_MAX_TRIGGERS * (8 + sizeof(struct qp_timed))];
	size_t len = 0;

	for (size_t i = 0; i < p->ntaddr && i < REC_MAX_TRIGGERS; i++) {
		memcpy(body + len, &p->taddr[i].addr, 8);
		len += 8;
		w.n++;
	}
	c->ntimed = rec_triggers_timed(s, p->pid, c->timed, REC_MAX_TRIGGERS);
	for (size_t i = 0; i < c->ntimed; i++) {
		struct qp_timed t = {c->timed[i].addr, c->timed[i].ns};

		memcpy(body + len, &t, sizeof(t));
		len += sizeof(t);
	}
	w.ntimed = (uint32_t)c->ntimed;
	return qchan_send(c, QP_WATCH, &w, sizeof(w), body, (uint32_t)len)
		   ? PS_ERR_TARGET
		   : 0;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

int qtree_on_dump(struct rec_session *s, struct qchan *c, const struct qmsg *m)
{
	const uint8_t *p = m->data, *end = m->data + m->len;
	uint32_t n;

	c->dumping = 0;
	if (!c->proc)
		return 0;
	if (m->len < 4)
		return PS_ERR_FORMAT;
	memcpy(&n, p, 4);
	p += 4;
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
		t = qtree_thread(s, c, (pid_t)th.tid);
		if (!t)
			return PS_ERR_NOMEM;
		b = t->bk;
		s->res->instructions += th.insns - b->insns;
		free(b->pt);
		b->pt = NULL;
		b->len = 0;
		if (th.len && !(b->pt = malloc(th.len)))
			return PS_ERR_NOMEM;
		if (th.len)
			memcpy(b->pt, p, th.len);
		b->len = th.len;
		b->now = th.now;
		b->insns = th.insns;
		p += th.len;
		t->traced = 1;
		if (t->comm[0] == 0 || !strncmp(t->comm, "qemu-", 5)) {
			if (th.alive)
				rec_read_comm(c->pid, t->tid, t->comm,
					      sizeof(t->comm));
			if (!t->comm[0] || !strncmp(t->comm, "qemu-", 5))
				snprintf(t->comm, sizeof(t->comm), "%.15s",
					 base_name(c->exe));
		}
		if (!th.alive)
			rec_thr_set_gone(s, t);
		if (th.now > c->proc->now)
			c->proc->now = th.now;
	}
	s->res->threads = s->nthrs;
	c->have_dump = 1;
	/* The guest is stopped (or ending): its mappings match this PT. */
	return qtree_refresh(s, c);
}

static int traced(const struct qchan *c)
{
	return c->fd >= 0 && c->proc && !c->untraced && !c->ended;
}

/* Wait for the DUMP_DATA of every channel with @dumping set.  END and
 * the DUMP_DATA after it are read on the way (a process that dies
 * meanwhile); other messages wait in their queues. */
static int dump_wait(struct rec_session *s, struct qemu_bk *q)
{
	uint64_t t0 = rec_clock_ns();
	int r = 0;

	for (;;) {
		int waiting = 0;

		for (size_t i = 0; i < q->nch && !r; i++) {
			struct qchan *c = q->ch[i];
			struct qmsg *m;

			if (!c->dumping)
				continue;
			if (!c->ended && (m = qchan_take(c, QP_END))) {
				if (m->len >= sizeof(c->end)) {
					memcpy(&c->end, m->data,
					       sizeof(c->end));
					c->ended = 1;
				}
				qmsg_free(m);
			}
			if ((m = qchan_take(c, QP_DUMP_DATA))) {
				r = qtree_on_dump(s, c, m);
				if (c->ended)
					c->end_data = 1;
				qmsg_free(m);
				continue;
			}
			if (c->eof) {
				c->dumping = 0;
				continue;
			}
			if (rec_clock_ns() - t0 >
			    (uint64_t)DUMP_WAIT_MS * 1000000) {
				rec_notice(s,
					   "the QEMU plugin of process %d "
					   "stopped answering; its trace ends "
					   "at what it sent before, and it "
					   "runs on untraced",
					   (int)c->pid);
				qchan_close(c);
				c->untraced = 1;
				continue;
			}
			waiting = 1;
		}
		if (r || !waiting)
			return r;
		r = qchan_pump(q, 50);
	}
}

int qtree_dump_one(struct rec_session *s, struct qemu_bk *q, struct qchan *c)
{
	if (!traced(c))
		return 0;
	if (qchan_send(c, QP_DUMP, NULL, 0, NULL, 0))
		return 0; /* gone: its last dump stands */
	c->dumping = 1;
	c->stopped = 1;
	return dump_wait(s, q);
}

int qtree_dump_all(struct rec_session *s, struct qemu_bk *q)
{
	for (size_t i = 0; i < q->nch; i++) {
		struct qchan *c = q->ch[i];

		if (!traced(c) || c->dumping)
			continue;
		if (qchan_send(c, QP_DUMP, NULL, 0, NULL, 0))
			continue;
		c->dumping = 1;
		c->stopped = 1;
	}
	return dump_wait(s, q);
}

void qtree_resume_all(struct qemu_bk *q, int mode, struct qchan *c,
		      uint32_t tid)
{
	for (size_t i = 0; i < q->nch; i++) {
		struct qchan *o = q->ch[i];

		if (o->fd < 0 || o == c)
			continue;
		if (mode == QP_UNTRACE ? !o->untraced : o->stopped)
			qchan_resume(o, mode, 0);
	}
	if (c && c->fd >= 0)
		qchan_resume(c, mode, tid);
}

/* A known process ran exec: its new program under a new QEMU said HELLO
 * on @c. */
static int exec_hello(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		      struct rec_proc *p, uint64_t clock)
{
	struct rec_thr *t;
	struct qthr_bk *b;
	int r;

	for (size_t i = 0; i < q->nch; i++) {
		struct qchan *o = q->ch[i];

		if (o != c && o->proc == p) {
			/* The old image's channel: its messages are over. */
			qchan_close(o);
			o->eof_done = 1;
			o->proc = NULL;
		}
	}
	c->proc = p;
	p->bk = c;
	/* Only the thread that ran exec remains, with the process's id. */
	for (size_t i = 0; i < s->nthrs; i++) {
		t = s->thrs[i];
		if (t->proc == p && t->tid != p->pid)
			rec_thr_set_gone(s, t);
	}
	t = qtree_thread(s, c, p->pid);
	if (!t)
		return PS_ERR_NOMEM;
	if (t->state == THR_GONE) {
		t->state = THR_RUNNING;
		s->nlive++;
	}
	c->maps_stale = 1;
	p->gone = 0;
	r = rec_proc_exec(s, p, t, clock, c->exe);
	/* The core keeps the old image's PT; the new one starts afresh. */
	b = t->bk;
	free(b->pt);
	b->pt = NULL;
	b->len = 0;
	b->insns = 0;
	b->now = clock;
	snprintf(t->comm, sizeof(t->comm), "%s", p->comm);
	return r;
}

/* The guest closed the plugin's socket of process @pid (a child that
 * closes every fd before exec): its plugin continues on @c. */
static int reopen(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		  pid_t pid)
{
	struct qchan *old = qchan_of_pid(q, pid);
	struct qmsg *m;
	int r = 0;

	if (!old) {
		for (size_t i = q->nch; i-- > 0 && !old;)
			if (q->ch[i] != c && q->ch[i]->pid == pid &&
			    q->ch[i]->proc)
				old = q->ch[i];
	}
	if (!old || old == c) {
		qchan_resume(c, QP_UNTRACE, 0);
		return 0;
	}
	/* What the old socket still held comes first. */
	while (!r && (m = qchan_pop(old))) {
		r = qtree_handle(s, q, old, m);
		qmsg_free(m);
	}
	c->pid = pid;
	c->proc = old->proc;
	c->host = old->host;
	c->nhost = old->nhost;
	old->host = NULL;
	memcpy(c->exe, old->exe, sizeof(c->exe));
	c->entry = old->entry;
	c->have_dump = old->have_dump;
	c->untraced = old->untraced;
	c->exec = old->exec;
	c->exec_tid = old->exec_tid;
	memcpy(c->exec_text, old->exec_text, sizeof(c->exec_text));
	memcpy(c->timed, old->timed, sizeof(c->timed));
	c->ntimed = old->ntimed;
	if (c->proc)
		c->proc->bk = c;
	qchan_close(old);
	old->eof_done = 1;
	old->proc = NULL;
	return r;
}

int qtree_hello(struct rec_session *s, struct qemu_bk *q, struct qchan *c,
		const struct qmsg *m)
{
	struct qp_hello h;
	struct rec_proc *p;
	size_t rlen;
	int r = 0;

	if (m->len < sizeof(h))
		return PS_ERR_FORMAT;
	memcpy(&h, m->data, sizeof(h));
	if (h.version != QP_VERSION)
		return ps_err_detail(PS_ERR_FORMAT,
				     "the QEMU plugin speaks protocol %u, "
				     "ptscope %u: rebuild both with make",
				     h.version, QP_VERSION);
	if (h.forked == 2)
		return reopen(s, q, c, (pid_t)h.pid);
	rlen = (size_t)h.nranges * sizeof(*c->host);
	if (m->len < sizeof(h) + rlen + h.pathlen)
		return PS_ERR_FORMAT;
	if (h.guest_base)
		return ps_err_detail(
		    PS_ERR_UNSUPPORTED,
		    "QEMU placed the guest at an offset (guest_base 0x%llx); "
		    "the qemu backend needs guest addresses equal to host "
		    "addresses",
		    (unsigned long long)h.guest_base);
	c->pid = (pid_t)h.pid;
	free(c->host);
	c->nhost = h.nranges;
	c->host = calloc(h.nranges ? h.nranges : 1, sizeof(*c->host));
	if (!c->host)
		return PS_ERR_NOMEM;
	memcpy(c->host, m->data + sizeof(h), rlen);
	snprintf(c->exe, sizeof(c->exe), "%.*s", (int)h.pathlen,
		 (const char *)m->data + sizeof(h) + rlen);
	if (!c->exe[0])
		snprintf(c->exe, sizeof(c->exe), "%s", q->exe);
	if (q->stopping) {
		/* Recording is over: what starts now runs untraced. */
		qchan_resume(c, QP_UNTRACE, h.pid);
		return 0;
	}
	p = rec_proc_find(s, c->pid);
	if (p && !h.forked) {
		r = exec_hello(s, q, c, p, h.clock);
		c->entry = s->o->trace_loader ? 0 : qemu_entry_point(c);
	} else if (h.forked) {
		struct rec_proc *parent = rec_proc_find(s, (pid_t)h.ppid);

		if (!parent) {
			qchan_resume(c, QP_UNTRACE, h.pid);
			return 0;
		}
		/* qemu_maps reads its mappings through this channel. */
		c->maps_stale = 1;
		r = rec_proc_add_child(s, parent, c->pid, &p);
		if (!r) {
			p->bk = c;
			c->proc = p;
			free(p->path);
			p->path = strdup(c->exe);
		}
		if (r == PS_ERR_NOT_FOUND) {
			/* Gone already. */
			qchan_resume(c, QP_UNTRACE, h.pid);
			return 0;
		}
		if (!r && p->comm[0] == 0)
			snprintf(p->comm, sizeof(p->comm), "%s", parent->comm);
		if (!r && !qtree_thread(s, c, c->pid))
			r = PS_ERR_NOMEM;
		c->entry = 0;
	} else {
		/* The command itself. */
		/* qp_range and rkev_range are both {start, end}. */
		rkev_set_foreign(s, (const struct rkev_range *)c->host,
				 c->nhost);
		r = rec_proc_add(s, c->pid, &p);
		if (!r) {
			p->bk = c;
			c->proc = p;
			p->map_flags = MOD_FILE;
			free(p->path);
			p->path = strdup(c->exe);
			r = qtree_refresh(s, c);
		}
		if (!r)
			r = rec_triggers_resolve(s, p, 0);
		c->entry = s->o->trace_loader ? 0 : qemu_entry_point(c);
		if (!r) {
			/* --args (without it ptscope_write only): the
			 * command's own program. */
			struct emu_fn *fns;
			size_t n;

			if (!qemu_args(s, c, h.regs_ok, &fns, &n)) {
				if (qchan_send(c, QP_ARGS, fns,
					       (uint32_t)(n * sizeof(*fns)),
					       NULL, 0))
					r = PS_ERR_TARGET;
				free(fns);
			}
		}
	}
	if (!r && !s->o->trace_loader && !c->entry && !h.forked)
		r = ps_err_detail(PS_ERR_TARGET,
				  "cannot find the entry point of '%s'; try "
				  "--trace-loader",
				  c->exe);
	if (!r)
		r = qtree_watch(s, c);
	if (!r && qchan_resume(c, QP_GO, h.pid))
		r = PS_ERR_TARGET;
	if (!r)
		q->traced_any = 1;
	if (!r && !c->entry)
		q->started = 1;
	return r;
}

/* @c's process no longer runs traced: its threads are over for us. */
static void proc_gone(struct rec_session *s, struct rec_proc *p)
{
	p->gone = 1;
	for (size_t i = 0; i < s->nthrs; i++) {
		struct rec_thr *t = s->thrs[i];

		if (t->proc == p)
			rec_thr_set_gone(s, t);
	}
}

/* Is process @pid running qemu-x86_64 now? */
static int runs_qemu(const struct qemu_bk *q, pid_t pid)
{
	char *exe = rec_exe_path(pid);
	char real[PATH_MAX];
	int yes = exe && realpath(q->qemu, real) && !strcmp(exe, real);

	free(exe);
	return yes;
}

int qtree_eof(struct rec_session *s, struct qemu_bk *q, struct qchan *c)
{
	struct rec_proc *p = c->proc;
	struct rec_thr *t;
	char text[PATH_MAX + 400];

	c->eof_done = 1;
	if (!p) {
		/* A QEMU that never said HELLO: one that exec started and
		 * that refused the program. */
		struct rec_proc *old = c->pid ? rec_proc_find(s, c->pid) : NULL;

		if (old && !old->gone && !q->stopping &&
		    !qchan_of_pid(q, c->pid)) {
			rec_notice(s,
				   "qemu-x86_64 could not run the program "
				   "process %d exec'ed (its message is above); "
				   "the process ended",
				   (int)c->pid);
			proc_gone(s, old);
		}
		return 0;
	}
	if (c->ended || c->untraced)
		return 0;
	t = rec_thr_find(s, c->exec_tid ? c->exec_tid : p->pid);
	if (c->exec == QP_EXEC_QEMU + 1 && runs_qemu(q, p->pid))
		return 0; /* its new QEMU says HELLO on a channel of its own */
	if (c->exec == QP_EXEC_NATIVE + 1 ||
	    (c->exec == QP_EXEC_QEMU + 1 && !kill(p->pid, 0))) {
		if (c->exec == QP_EXEC_NATIVE + 1)
			snprintf(text, sizeof(text), "%s", c->exec_text);
		else
			snprintf(text, sizeof(text),
				 "process %d exec'ed '%s' outside QEMU: it "
				 "runs untraced",
				 (int)p->pid, c->exec_text);
		rec_notice(s, "%s", text);
		rec_mark_add(s, REC_MARK_NOTE, t, p->now, 0, 0, text);
	}
	proc_gone(s, p);
	return 0;
}

int qtree_ended(struct rec_session *s, struct qemu_bk *q, struct qchan *c)
{
	struct rec_proc *p = c->proc;
	struct rec_thr *t;
	char text[128];
	int sig = (int)c->end.status, r = 0;

	c->end_done = 1;
	if (!p) {
		qchan_resume(c, QP_GO, c->end.tid);
		return 0;
	}
	t = qtree_thread(s, c, (pid_t)c->end.tid);
	if (!t)
		return PS_ERR_NOMEM;
	if (c->end.kind == QP_END_CRASH) {
		if (sig && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
			    sig == SIGFPE))
			snprintf(text, sizeof(text),
				 "%s (fault address 0x%llx)", ps_signame(sig),
				 (unsigned long long)c->end.addr);
		else
			snprintf(text, sizeof(text), "%s",
				 sig ? ps_signame(sig) : "a fatal signal");
		r = rec_mark_add(s, REC_MARK_SIGNAL, t, c->end.now, c->end.ip,
				 (uint64_t)sig, text);
		if (!r && p->pid == q->pid) {
			s->res->fault_addr = c->end.addr;
			s->res->fault_ip = c->end.ip;
			s->res->fault_tid = t->tid;
		} else if (!r && !q->stopping) {
			/* A crash in the command's tree: a snapshot of the
			 * whole tree as for a trigger hit. */
			if (!s->o->multi_snapshot) {
				s->stop_reason = "signal";
			} else {
				r = qtree_dump_all(s, q);
				if (!r)
					r = rec_snapshot_take(s, "signal");
				qtree_resume_all(q, QP_GO, NULL, 0);
				if (!r &&
				    s->res->snapshots >= s->o->multi_snapshot)
					s->stop_reason = "limit";
			}
		}
	} else {
		snprintf(text, sizeof(text), "exit status %d",
			 (int)(c->end.status & 0xff));
		r = rec_mark_add(s, REC_MARK_EXIT, t, c->end.now, 0,
				 (c->end.status & 0xff) << 8, text);
	}
	proc_gone(s, p);
	/* QEMU waits, alive, until its mappings were read. */
	qchan_resume(c, QP_GO, c->end.tid);
	return r;
}

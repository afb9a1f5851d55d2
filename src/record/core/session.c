/* SPDX-License-Identifier: MIT */
/* The recorder core's session: its processes, threads, marks, notices,
 * the stop request and --duration (core.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/core/core.h"
#include "src/record/core/crash_guard.h"

volatile sig_atomic_t rec_stop_flag;

void rec_request_stop(void)
{
	rec_stop_flag = 1;
}

static void on_alarm(int sig)
{
	(void)sig;
	if (!rec_stop_flag)
		rec_stop_flag = 2;
}

uint64_t rec_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rec_notice(struct rec_session *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!s->o->notice)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s->o->notice(s->o->ctx, buf);
}

struct rec_thr *rec_thr_find(struct rec_session *s, pid_t tid)
{
	if (s->last && s->last->tid == tid && s->last->state != THR_GONE)
		return s->last;
	/* Newest first: a reused tid belongs to the newest thread. */
	for (size_t i = s->nthrs; i-- > 0;)
		if (s->thrs[i]->tid == tid && s->thrs[i]->state != THR_GONE)
			return s->last = s->thrs[i];
	return NULL;
}

struct rec_proc *rec_proc_find(struct rec_session *s, pid_t pid)
{
	for (size_t i = s->nprocs; i-- > 0;)
		if (s->procs[i]->pid == pid && !s->procs[i]->gone)
			return s->procs[i];
	return NULL;
}

static int grow(void *arrp, size_t n, size_t elem)
{
	void **arr = arrp;
	void *na;

	/* Capacity doubles at powers of two. */
	if (n & (n - 1) || (n && n < 8))
		return 0;
	na = realloc(*arr, (n ? 2 * n : 8) * elem);
	if (!na)
		return PS_ERR_NOMEM;
	*arr = na;
	return 0;
}

int rec_proc_refresh_maps(struct rec_session *s, struct rec_proc *p)
{
	struct mod_list l = {0};
	char exe[4096], link[64];
	ssize_t n;
	int r;

	r = mod_read(p->pid, p->map_flags ? p->map_flags : MOD_EXEC | MOD_FILE,
		     &l);
	if (r)
		return r;
	mod_list_fini(&p->mods);
	p->mods = l;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)p->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		p->exe_start = p->exe_end = 0;
		for (size_t i = 0; i < l.n; i++) {
			if (strcmp(l.maps[i].path, exe))
				continue;
			if (!p->exe_start || l.maps[i].start < p->exe_start)
				p->exe_start = l.maps[i].start;
			if (l.maps[i].end > p->exe_end)
				p->exe_end = l.maps[i].end;
		}
	}
	if (!p->vdso) {
		if (mod_read_vdso(p->pid, &p->vdso, &p->vdso_len,
				  &p->vdso_addr))
			p->vdso = NULL;
	}
	return 0;
}

char *rec_exe_path(pid_t pid)
{
	char link[64], exe[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	return strdup(exe);
}

int rec_proc_add(struct rec_session *s, pid_t pid, struct rec_proc **out)
{
	struct rec_proc *p;
	int r;

	r = grow(&s->procs, s->nprocs, sizeof(*s->procs));
	if (r)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return PS_ERR_NOMEM;
	p->pid = pid;
	p->now = s->start_ns;
	p->epoch_ns = s->start_ns;
	r = rec_proc_refresh_maps(s, p);
	if (r) {
		mod_list_fini(&p->mods);
		free(p->vdso);
		free(p);
		return r;
	}
	rec_read_comm(pid, pid, p->comm, sizeof(p->comm));
	p->path = rec_exe_path(pid);
	s->procs[s->nprocs++] = p;
	if (s->res)
		s->res->processes++;
	if (s->ext && s->ext->proc_added)
		s->ext->proc_added(s, pid);
	*out = p;
	return 0;
}

int rec_thr_add(struct rec_session *s, struct rec_proc *p, pid_t tid,
		enum rec_thr_state state, struct rec_thr **out)
{
	struct rec_thr *t;
	int r;

	r = grow(&s->thrs, s->nthrs, sizeof(*s->thrs));
	if (r)
		return r;
	t = calloc(1, sizeof(*t));
	if (!t)
		return PS_ERR_NOMEM;
	t->tid = tid;
	t->proc = p;
	t->state = state;
	t->epoch = p->epoch;
	cg_track(tid);
	rec_read_comm(p->pid, tid, t->comm, sizeof(t->comm));
	s->thrs[s->nthrs++] = t;
	s->nlive++;
	if (s->res)
		s->res->threads++;
	*out = t;
	return 0;
}

int rec_mark_add(struct rec_session *s, enum rec_mark_kind kind,
		 const struct rec_thr *t, uint64_t time_ns, uint64_t address,
		 uint64_t value, const char *text)
{
	struct rec_mark *m;

	if (s->nmarks == s->marks_cap) {
		size_t cap = s->marks_cap ? 2 * s->marks_cap : 16;
		struct rec_mark *nm = realloc(s->marks, cap * sizeof(*nm));

		if (!nm)
			return PS_ERR_NOMEM;
		s->marks = nm;
		s->marks_cap = cap;
	}
	m = &s->marks[s->nmarks];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->pid = t ? (uint64_t)t->proc->pid : 0;
	m->tid = t ? (uint64_t)t->tid : 0;
	m->time_ns = time_ns;
	m->address = address;
	m->value = value;
	m->text = strdup(text ? text : "");
	if (!m->text)
		return PS_ERR_NOMEM;
	s->nmarks++;
	return 0;
}

void rec_duration_arm(const struct rec_options *o, struct rec_saved_timer *sv)
{
	struct sigaction sa;
	struct itimerval it = {0};

	if (o->duration <= 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGALRM, &sa, &sv->alrm);
	it.it_value.tv_sec = (time_t)o->duration;
	it.it_value.tv_usec =
	    (suseconds_t)((o->duration - (double)(time_t)o->duration) * 1e6);
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, &sv->timer);
}

void rec_duration_disarm(const struct rec_options *o,
			 struct rec_saved_timer *sv)
{
	struct itimerval off = {0};

	if (o->duration <= 0)
		return;
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &sv->alrm, NULL);
}

uint64_t rec_thr_now(struct rec_session *s, const struct rec_thr *t)
{
	return t->traced && s->be->now ? s->be->now(s, t) : t->proc->now;
}

void rec_read_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[96];
	ssize_t n;
	int fd;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
		 (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = 0;
		return;
	}
	if (buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
}

void rec_session_init(struct rec_session *s, const struct rec_options *o,
		      const struct rec_backend *be, struct rec_result *res)
{
	memset(s, 0, sizeof(*s));
	memset(res, 0, sizeof(*res));
	vclk_init(&s->vc);
	s->o = o;
	s->be = be;
	s->res = res;
	res->backend = be->name;
}

void rec_session_start(struct rec_session *s)
{
	struct timespec ts;

	s->start_ns = rec_clock_ns();
	clock_gettime(CLOCK_REALTIME, &ts);
	s->start_real_ns =
	    (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rec_session_fini(struct rec_session *s)
{
	for (size_t i = 0; i < s->nthrs; i++) {
		for (size_t k = 0; k < s->thrs[i]->nkept; k++)
			free(s->thrs[i]->kept[k].data);
		free(s->thrs[i]->kept);
		free(s->thrs[i]);
	}
	free(s->thrs);
	for (size_t i = 0; i < s->nprocs; i++) {
		struct rec_proc *p = s->procs[i];

		for (size_t k = 0; k < p->nimages; k++) {
			free(p->images[k].path);
			mod_list_fini(&p->images[k].mods);
			free(p->images[k].vdso);
		}
		free(p->images);
		free(p->path);
		mod_list_fini(&p->mods);
		free(p->vdso);
		free(p);
	}
	free(s->procs);
	for (size_t i = 0; i < REC_MAX_TRIGGERS; i++)
		free(s->trigger_absent[i]);
	for (size_t i = 0; i < s->nmarks; i++)
		free((char *)s->marks[i].text);
	free(s->marks);
	memset(s, 0, sizeof(*s));
}

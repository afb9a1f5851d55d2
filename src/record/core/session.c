/* SPDX-License-Identifier: MIT */
/* The recorder core: a session's processes, threads, marks, the stop
 * request and --duration, and the entry points rec_run()/rec_attach(),
 * which hand the session to the chosen backend's own control loop
 * (backend.h).
 */
#include <errno.h>
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
#include "src/record/triggers/bp.h"
#include "src/record/kevents/kevents.h"
#include "src/record/triggers/latency.h"
#include "src/record/core/crash_guard.h"
#include "src/record/core/core.h"
#include "src/record/ptrace/tracee.h"
#include "src/record/core/vclock.h"

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
	r = rec_proc_refresh_maps(s, p);
	if (r) {
		mod_list_fini(&p->mods);
		free(p->vdso);
		free(p);
		return r;
	}
	s->procs[s->nprocs++] = p;
	rkev_add_proc(s, pid);
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
	cg_track(tid);
	trc_comm(p->pid, tid, t->comm, sizeof(t->comm));
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

static void session_fini(struct rec_session *s)
{
	cg_uninstall();
	rec_triggers_fini(s);
	rkev_close(s);
	for (size_t i = 0; i < s->nthrs; i++) {
		rec_triggers_disarm(s->thrs[i]);
		rec_latency_thread_free(s->thrs[i]);
	}
	rec_latency_fini(s);
	if (s->be && s->be->fini)
		s->be->fini(s);
	for (size_t i = 0; i < s->nthrs; i++)
		free(s->thrs[i]);
	free(s->thrs);
	for (size_t i = 0; i < s->nprocs; i++) {
		mod_list_fini(&s->procs[i]->mods);
		free(s->procs[i]->vdso);
		free(s->procs[i]);
	}
	free(s->procs);
	for (size_t i = 0; i < s->nmarks; i++)
		free((char *)s->marks[i].text);
	free(s->marks);
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

/* MemAvailable from /proc/meminfo in bytes, 0 when unknown. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* Every traced thread gets a buffer of the snapshot size; one that alone
 * takes more than half the free memory would push the machine (and the
 * target) toward the OOM killer once it fills.  Refused up front. */
static int check_snapshot_memory(uint64_t size)
{
	uint64_t avail = mem_available();

	if (!size || !avail || size <= avail / 2)
		return 0;
	return ps_err_detail(PS_ERR_LIMIT,
			     "a snapshot size of %llu MiB per thread is more "
			     "than half of the memory available (%llu MiB); "
			     "use a smaller --snapshot-size, e.g. 4M",
			     (unsigned long long)(size >> 20),
			     (unsigned long long)(avail >> 20));
}

static int session_init(struct rec_session *s, const struct rec_options *o,
			int attach, struct rec_result *res)
{
	const char *why = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	memset(res, 0, sizeof(*res));
	vclk_init(&s->vc);
	s->o = o;
	s->res = res;
	r = rec_backend_select(o->backend, attach, &s->be, &why);
	if (r)
		return r;
	if (why)
		rec_notice(s, "%s", why);
	res->backend = s->be->name;
	if (s->be != &rec_backend_intel_pt &&
	    (o->kernel || o->filter || o->timer_resolution))
		return ps_err_detail(PS_ERR_INVAL,
				     "--kernel, --filter and --timer-resolution "
				     "need the intel-pt backend (this recording "
				     "uses %s)",
				     s->be->name);
	r = check_snapshot_memory(o->snapshot_size);
	if (r)
		return r;
	cg_install();
	r = rec_triggers_init(s);
	if (!r)
		r = rkev_open(s);
	if (r)
		return r;
	s->start_ns = rec_clock_ns();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s->start_real_ns =
		    (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	return 0;
}


int rec_snapshot_final(struct rec_session *s)
{
	const char *why = s->stop_reason ? s->stop_reason : "exit";

	/* "limit": --multi-snapshot took its last one already; at exit,
	 * multi-snapshot mode has nothing new to show once a hit was saved. */
	if (!strcmp(why, "limit") ||
	    (!strcmp(why, "exit") && s->o->multi_snapshot && s->res->snapshots))
		return 0;
	return rec_snapshot_take(s, why);
}

uint64_t rec_thr_now(struct rec_session *s, const struct rec_thr *t)
{
	return t->traced && s->be->now ? s->be->now(s, t) : t->proc->now;
}

int rec_run(const struct rec_options *o, char *const argv[],
	    struct rec_result *res)
{
	struct rec_session s;
	int r;

	r = session_init(&s, o, 0, res);
	if (!r)
		r = s.be->run(&s, argv);
	rec_stop_flag = 0;
	session_fini(&s);
	return r;
}

int rec_attach(const struct rec_options *o, const pid_t *pids, size_t n,
	       struct rec_result *res)
{
	struct rec_session s;
	int r;

	r = session_init(&s, o, 1, res);
	if (!r && !s.be->attach)
		r = ps_err_detail(PS_ERR_INVAL,
				  "the %s backend cannot attach to a running "
				  "process; use --backend=step",
				  s.be->name);
	if (!r)
		r = s.be->attach(&s, pids, n);
	rec_stop_flag = 0;
	session_fini(&s);
	return r;
}

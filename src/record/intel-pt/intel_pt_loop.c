/* SPDX-License-Identifier: MIT */
/* The intel-pt backend's run and attach: the PMU and options are checked
 * (one event opened and closed on ptscope itself) before the target
 * starts, then the free-running control loop (src/record/ptrace/freerun.h)
 * drives the engine (intel_pt.c).
 */
#include "src/record/intel-pt/intel_pt.h"
#include "src/record/core/core.h"
#include "src/record/ptrace/freerun.h"

const struct ptk_ops *iptb_kernel = &ptk_real;

/* Open and close one event on ourselves: permission, config and the AUX
 * size are checked before the target starts. */
static int probe(struct rec_session *s)
{
	struct iptb *b = s->bk;
	struct ptt t;
	int r;

	r = ptt_open(&b->tc, 0, NULL, &t);
	if (!r)
		ptt_close(&b->tc, &t);
	return r;
}

static int open_checked(struct rec_session *s)
{
	int r = iptb_open(s, iptb_kernel);

	return r ? r : probe(s);
}

static int service(struct rec_session *s, int wake_fd, int timeout_ms)
{
	struct iptb *b = s->bk;

	b->sigpipe[0] = wake_fd; /* polled beside the perf fds */
	return iptb_service(s, timeout_ms);
}

static const struct rec_freerun_ops loop_ops = {
    .thread_start = iptb_thread_start,
    .thread_end = iptb_thread_end,
    .thread_retire = iptb_thread_retire,
    .crash = iptb_crash,
    .service = service,
};

int iptb_run(struct rec_session *s, char *const argv[])
{
	/* PMU and options first: nothing starts if PT cannot be used. */
	int r = open_checked(s);

	return r ? r : rec_freerun_run(s, &loop_ops, argv);
}

int iptb_attach(struct rec_session *s, const pid_t *pids, size_t n)
{
	int r = open_checked(s);

	return r ? r : rec_freerun_attach(s, &loop_ops, pids, n);
}

/* SPDX-License-Identifier: MIT */
/* Tests for hardware execution breakpoints (src/record/bp.c): a forked
 * child calls a function N times; the breakpoint on the child's thread
 * must report N samples with the right ip, tid, rdi and rising times. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptscope/error.h"
#include "src/record/triggers/bp.h"
#include "tests/harness.h"

#define CALLS 100

static volatile unsigned long sink;
static const char reason_text[] = "slow path";

__attribute__((noinline)) static void target_fn(const char *reason)
{
	__asm__ volatile("" : : "r"(reason) : "memory");
	sink += (unsigned long)reason[0];
}

/* The child: wait for the go byte, call target_fn n times, exit. */
static pid_t spawn_caller(int n, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(2);
		for (int i = 0; i < n; i++)
			target_fn(reason_text);
		_exit(0);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

struct collected {
	struct bp_sample s[CALLS + 8];
	int n;
};

static int collect(void *ctx, const struct bp_sample *s)
{
	struct collected *c = ctx;

	if (c->n < (int)(sizeof(c->s) / sizeof(c->s[0])))
		c->s[c->n] = *s;
	c->n++;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Open a breakpoint or SKIP if this machine cannot have one. */
#define OPEN_OR_SKIP(tid, addr, bpp, child)                                    \
	do {                                                                   \
		int r_ = bp_open(tid, addr, bpp);                              \
		if (r_ == PS_ERR_PERM || r_ == PS_ERR_NO_HW) {                 \
			kill(child, SIGKILL);                                  \
			waitpid(child, NULL, 0);                               \
			SKIP(ps_err_message(r_));                              \
		}                                                              \
		CHECK_EQ(r_, 0);                                               \
	} while (0)

/* Every call of the child seen, with its ip, ids, rdi and time: through
 * bp_open (@uprobe 0: a debug register where they fire) or a uprobe. */
static void counts_every_call(int uprobe)
{
	uint64_t addr = (uint64_t)(uintptr_t)&target_fn, count = 0;
	static struct collected c;
	struct bp *bp = NULL;
	int go, status;
	uint64_t t0 = mono_ns();
	pid_t pid = spawn_caller(CALLS, &go);

	CHECK(pid > 0);
	if (uprobe) {
		int r = bp_open_uprobe(pid, addr, &bp);

		if (r) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		if (r == PS_ERR_PERM || r == PS_ERR_NO_HW)
			SKIP(ps_err_message(r));
		CHECK_EQ(r, 0);
		CHECK(bp_is_uprobe(bp));
	} else {
		OPEN_OR_SKIP(pid, addr, &bp, pid);
	}
	CHECK_EQ(bp_addr(bp), addr);
	CHECK_EQ(bp_tid(bp), pid);
	CHECK(!bp_pending(bp));
	CHECK_EQ(write(go, "g", 1), 1);
	close(go);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(bp_pending(bp));
	{
		struct pollfd pfd = {bp_fd(bp), POLLIN, 0};

		CHECK(poll(&pfd, 1, 0) >= 1);
	}
	c.n = 0;
	CHECK_EQ(bp_read(bp, collect, &c), CALLS);
	CHECK_EQ(c.n, CALLS);
	CHECK(!bp_pending(bp));
	CHECK_EQ(bp_lost(bp), 0);
	for (int i = 0; i < CALLS; i++) {
		CHECK_EQ(c.s[i].ip, addr);
		CHECK_EQ(c.s[i].tid, pid);
		CHECK_EQ(c.s[i].pid, pid);
		CHECK_EQ(c.s[i].rdi, (uintptr_t)reason_text);
		/* CLOCK_MONOTONIC: after the test started, never backwards. */
		CHECK(c.s[i].time_ns >= t0 && c.s[i].time_ns <= mono_ns());
		if (i)
			CHECK(c.s[i].time_ns >= c.s[i - 1].time_ns);
	}
	CHECK_EQ(bp_count(bp, &count), 0);
	CHECK_EQ(count, CALLS);
	/* Nothing more: a second read hands over nothing. */
	CHECK_EQ(bp_read(bp, collect, &c), 0);
	bp_close(bp);
}

TEST(counts_every_call_of_a_child)
{
	counts_every_call(0);
}

/* The uprobe that stands in where debug registers never fire, on every
 * machine (where they do fire, bp_open never makes one). */
TEST(uprobe_counts_every_call_of_a_child)
{
	counts_every_call(1);
}

/* What bp_open gives: a debug register exactly when they fire here. */
TEST(debug_registers_checked_not_assumed)
{
	struct bp *bp = NULL;
	int fires = bp_hw_fires(),
	    r = bp_open(0, (uint64_t)(uintptr_t)&target_fn, &bp);

	if (r == PS_ERR_PERM || r == PS_ERR_NO_HW)
		SKIP(ps_err_message(r));
	CHECK_EQ(r, 0);
	CHECK(fires == 0 || fires == 1);
	CHECK_EQ(bp_is_uprobe(bp), !fires);
	bp_close(bp);
}

/* More hits than the ring holds between reads: the kernel drops the
 * overflow and, once the ring has room again, reports how many it dropped
 * (PERF_RECORD_LOST) before the next sample.  Every hit is delivered or
 * counted as lost, and the counter sees them all. */
TEST(overflowing_ring_counts_lost_samples)
{
	uint64_t addr = (uint64_t)(uintptr_t)&target_fn, count = 0;
	static struct collected c;
	struct bp *bp = NULL;
	int go[2], again[2], status, calls = 5000, got, got2;
	pid_t pid;

	CHECK(pipe(go) == 0 && pipe(again) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char ch;

		if (read(go[0], &ch, 1) != 1)
			_exit(2);
		for (int i = 0; i < calls; i++)
			target_fn(reason_text);
		if (write(again[1], "d", 1) != 1 || read(go[0], &ch, 1) != 1)
			_exit(2);
		target_fn(reason_text);
		_exit(0);
	}
	OPEN_OR_SKIP(pid, addr, &bp, pid);
	CHECK_EQ(write(go[1], "g", 1), 1);
	{
		char ch;

		CHECK_EQ(read(again[0], &ch, 1), 1);
	}
	c.n = 0;
	got = bp_read(bp, collect, &c);
	CHECK(got > 0 && got < calls);
	CHECK_EQ(bp_lost(bp), 0); /* not reported yet: the ring was full */
	CHECK_EQ(write(go[1], "g", 1), 1);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	got2 = bp_read(bp, collect, &c);
	CHECK_EQ(got2, 1);
	CHECK_EQ((uint64_t)got + bp_lost(bp), (uint64_t)calls);
	CHECK_EQ(bp_count(bp, &count), 0);
	CHECK_EQ(count, calls + 1);
	bp_close(bp);
	close(go[0]);
	close(go[1]);
	close(again[0]);
	close(again[1]);
}

static int stop_after_one(void *ctx, const struct bp_sample *s)
{
	int *n = ctx;

	return ++*n == 2 ? 42 : 0;
}

TEST(callback_stop_keeps_the_rest)
{
	uint64_t addr = (uint64_t)(uintptr_t)&target_fn;
	static struct collected c;
	struct bp *bp = NULL;
	int go, n = 0;
	pid_t pid = spawn_caller(5, &go);

	CHECK(pid > 0);
	OPEN_OR_SKIP(pid, addr, &bp, pid);
	CHECK_EQ(write(go, "g", 1), 1);
	close(go);
	CHECK_EQ(waitpid(pid, NULL, 0), pid);
	CHECK_EQ(bp_read(bp, stop_after_one, &n), 42);
	CHECK(bp_pending(bp));
	c.n = 0;
	/* The sample the callback refused comes again. */
	CHECK_EQ(bp_read(bp, collect, &c), 4);
	bp_close(bp);
}

/* The emulated backend single-steps the target under ptrace; the
 * breakpoint must still fire on every call. */
TEST(fires_while_single_stepped)
{
	uint64_t addr = (uint64_t)(uintptr_t)&target_fn, count = 0;
	struct bp *bp = NULL;
	int status, steps = 0, calls = 10;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		for (int i = 0; i < calls; i++)
			target_fn(reason_text);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSTOPPED(status));
	OPEN_OR_SKIP(pid, addr, &bp, pid);
	for (;;) {
		int sig = 0;

		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) < 0)
			break;
		if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
			break;
		/* Hardware breakpoint hits arrive as SIGTRAP too: not a
		 * signal for the child. */
		if (WSTOPSIG(status) != SIGTRAP)
			sig = WSTOPSIG(status);
		if (sig)
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
		if (++steps > 200000)
			break;
	}
	CHECK(WIFEXITED(status));
	CHECK_EQ(bp_count(bp, &count), 0);
	CHECK_EQ(count, calls);
	bp_close(bp);
}

TEST(bad_arguments_are_refused)
{
	struct bp *bp = NULL;

	CHECK_EQ(bp_open(0, 0, &bp), PS_ERR_INVAL);
	CHECK_EQ(bp_open(0, 0xffffffff81000000ULL, &bp), PS_ERR_INVAL);
	CHECK_EQ(bp_open(0, 0x401000, NULL), PS_ERR_INVAL);
	CHECK(bp == NULL);
	bp_close(NULL);
}

TEST(missing_thread_is_not_found)
{
	struct bp *bp = NULL;
	pid_t pid = fork();
	int r;

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	r = bp_open(pid, (uint64_t)(uintptr_t)&target_fn, &bp);
	if (r == PS_ERR_PERM || r == PS_ERR_NO_HW)
		SKIP(ps_err_message(r));
	CHECK_EQ(r, PS_ERR_NOT_FOUND);
}

/* x86 has 4 debug registers per thread: the fifth breakpoint on the
 * same thread must fail with a clear limit error. */
TEST(fifth_breakpoint_hits_the_register_limit)
{
	struct bp *bps[5] = {0};
	uint64_t addr = (uint64_t)(uintptr_t)&target_fn;
	int r = 0, i;

	for (i = 0; i < 5; i++) {
		r = bp_open(0, addr + (uint64_t)i * 16, &bps[i]);
		if (r)
			break;
	}
	for (int k = 0; k < 5; k++)
		bp_close(bps[k]);
	if (r == PS_ERR_PERM || r == PS_ERR_NO_HW)
		SKIP(ps_err_message(r));
	if (bp_hw_fires() == 0)
		SKIP("this machine's debug registers never fire: breakpoints "
		     "are uprobes here, which have no limit of 4");
	CHECK_EQ(i, 4);
	CHECK_EQ(r, PS_ERR_LIMIT);
	CHECK(strstr(ps_err_message(r), "debug registers") != NULL);
}

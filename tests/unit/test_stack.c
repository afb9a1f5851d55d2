/* SPDX-License-Identifier: MIT */
/* Tests for the call-stack builder (decoder/stack.c): synthetic branch
 * event sequences against the exact span stream they must produce. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <intel-pt.h>

#include "decoder/stack.h"
#include "ptscope/error.h"
#include "tests/harness.h"

/* A fake address space: six functions, 0x100 bytes each. */
enum {
	MAIN = 0x1000,
	FOO = 0x1100,
	BAR = 0x1200,
	BAZ = 0x1300,
	HANDLER = 0x1400,
	RESTORER = 0x1500
};
static struct sym_func funcs[] = {
    {"main", MAIN, MAIN + 0x100, {"a.out", MAIN, "m.c", 10}},
    {"foo", FOO, FOO + 0x100, {"a.out", FOO, "m.c", 20}},
    {"bar", BAR, BAR + 0x100, {"a.out", BAR, "m.c", 30}},
    {"baz", BAZ, BAZ + 0x100, {"a.out", BAZ, "m.c", 40}},
    {"handler", HANDLER, HANDLER + 0x100, {"a.out", HANDLER, NULL, 0}},
    {"__restore_rt", RESTORER, RESTORER + 0x10, {"libc", RESTORER}},
};
static struct sym_func unknown[16];
static char unknown_names[16][24];
static unsigned nunknown;

static const struct sym_func *fake_lookup(void *ctx, uint64_t ip)
{
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (ip >= funcs[i].start && ip < funcs[i].end)
			return &funcs[i];
	for (unsigned i = 0; i < nunknown; i++)
		if (unknown[i].start == ip)
			return &unknown[i];
	if (nunknown == 16)
		return NULL;
	snprintf(unknown_names[nunknown], sizeof(unknown_names[0]),
		 "0x%" PRIx64, ip);
	unknown[nunknown] = (struct sym_func){
	    unknown_names[nunknown], ip, ip, {NULL, ip, NULL, 0}};
	return &unknown[nunknown++];
}

/* A writer that prints each event as one line into a buffer. */
struct text_writer {
	struct ps_writer w;
	char buf[16384];
	size_t len;
	int nevents;
};

static int tw_event(struct ps_writer *w, const struct ps_event *ev)
{
	struct text_writer *t = (struct text_writer *)w;
	static const char type[] = "BECICfff";
	size_t room = sizeof(t->buf) - t->len;
	int n;

	t->nevents++;
	n = snprintf(t->buf + t->len, room, "%c %s %" PRIu64 "%s\n",
		     type[ev->type], ev->name ? ev->name : "-", ev->ts,
		     ev->nargs && ev->args[0].type == PS_ARG_BOOL ? " inferred"
								  : "");
	if (n > 0 && (size_t)n < room)
		t->len += n;
	return 0;
}

static const struct ps_writer_ops tw_ops = {.name = "test", .event = tw_event};

static struct text_writer tw;
static struct stk *stk;

static void setup(unsigned max_depth)
{
	struct stk_config cfg = {.pid = 1,
				 .tid = 2,
				 .w = &tw.w,
				 .lookup = fake_lookup,
				 .max_depth = max_depth};

	memset(&tw, 0, sizeof(tw));
	tw.w.ops = &tw_ops;
	stk_free(stk);
	stk = NULL;
	if (stk_new(&cfg, &stk) < 0)
		abort();
}

static int feed(enum br_kind kind, uint64_t from, uint64_t to, uint64_t ret,
		uint64_t ts)
{
	struct br_event ev = {
	    .kind = kind, .from = from, .to = to, .ret = ret, .ts = ts};
	return stk_feed(stk, &ev);
}

#define CALL(from, to, ts) CHECK_EQ(feed(BR_CALL, from, to, (from) + 5, ts), 0)
#define RET(from, to, ts) CHECK_EQ(feed(BR_RETURN, from, to, 0, ts), 0)
#define EV(kind, from, to, ts) CHECK_EQ(feed(kind, from, to, 0, ts), 0)

TEST(rejects_null_arguments)
{
	struct stk_config cfg = {.lookup = fake_lookup};
	struct stk *s;

	POISON(s);
	CHECK_EQ(stk_new(&cfg, &s), PS_ERR_INVAL);
	CHECK(s == NULL);
	CHECK_EQ(stk_new(NULL, &s), PS_ERR_INVAL);
	CHECK_EQ(stk_new(&cfg, NULL), PS_ERR_INVAL);
	stk_free(NULL);
}

TEST(calls_and_returns_nest)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN + 0x10, 100);
	CALL(MAIN + 0x20, FOO, 110);
	CALL(FOO + 0x4, BAR, 120);
	RET(BAR + 0x8, FOO + 0x9, 130);
	RET(FOO + 0x10, MAIN + 0x25, 140);
	EV(BR_END, 0, 0, 150);
	CHECK_STR(tw.buf, "B main 100 inferred\n"
			  "B foo 110\nB bar 120\nE bar 130\nE foo 140\n"
			  "E main 150\n");
	CHECK_EQ(stk_depth(stk), 0);
	CHECK_EQ(stk_get_counts(stk)->spans, 3);
	CHECK_EQ(stk_get_counts(stk)->branches, 6);
}

TEST(tail_call_replaces_top)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN + 0x10, 100);
	CALL(MAIN + 0x20, FOO, 110);
	EV(BR_JUMP, FOO + 0x30, BAR, 120);
	/* bar returns straight to foo's caller */
	RET(BAR + 0x8, MAIN + 0x25, 130);
	EV(BR_END, 0, 0, 140);
	CHECK_STR(tw.buf, "B main 100 inferred\nB foo 110\nE foo 120\n"
			  "B bar 120\nE bar 130\nE main 140\n");
}

TEST(mid_stack_start_infers_callers_earlier)
{
	setup(0);
	EV(BR_ENABLE, 0, BAZ + 0x4, 1000);
	RET(BAZ + 0x10, BAR + 0x8, 1010);
	RET(BAR + 0x10, FOO + 0x8, 1020);
	CALL(FOO + 0x20, BAZ, 1030);
	RET(BAZ + 0x8, FOO + 0x25, 1040);
	RET(FOO + 0x30, MAIN + 0x30, 1050);
	EV(BR_END, 0, 0, 1060);
	/* k-th inferred caller begins at first_ts - k */
	CHECK_STR(tw.buf, "B baz 1000 inferred\nE baz 1010\n"
			  "B bar 999 inferred\nE bar 1020\n"
			  "B foo 998 inferred\nB baz 1030\nE baz 1040\n"
			  "E foo 1050\nB main 997 inferred\nE main 1060\n");
}

TEST(mid_stack_recursion_infers_each_level)
{
	setup(0);
	EV(BR_ENABLE, 0, FOO + 0x40, 500);
	RET(FOO + 0x50, FOO + 0x25, 510);
	RET(FOO + 0x50, FOO + 0x25, 520);
	RET(FOO + 0x50, MAIN + 0x25, 530);
	EV(BR_END, 0, 0, 540);
	CHECK_STR(tw.buf, "B foo 500 inferred\nE foo 510\n"
			  "B foo 499 inferred\nE foo 520\n"
			  "B foo 498 inferred\nE foo 530\n"
			  "B main 497 inferred\nE main 540\n");
}

TEST(recursion_and_runaway_depth)
{
	setup(4);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	for (int i = 0; i < 5; i++)
		CALL(FOO + 0x20, FOO, 30 + i);
	CHECK_EQ(stk_depth(stk), 4);
	CHECK_EQ(stk_get_counts(stk)->deep_calls, 3);
	for (int i = 0; i < 5; i++)
		RET(FOO + 0x50, FOO + 0x25, 40 + i);
	RET(FOO + 0x50, MAIN + 0x25, 50);
	EV(BR_END, 0, 0, 60);
	CHECK_STR(
	    tw.buf,
	    "B main 10 inferred\nB foo 20\nB foo 30\nB foo 31\n"
	    "I call stack deeper than 4 frames: deeper calls not shown 32\n"
	    "E foo 43\nE foo 44\nE foo 50\nE main 60\n");
}

TEST(return_to_saved_address_further_up_closes_frames)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	CALL(FOO + 0x20, BAR, 30);
	CALL(BAR + 0x20, BAZ, 40);
	/* baz returns to main: a longjmp done with ret */
	RET(BAZ + 0x10, MAIN + 0x25, 50);
	EV(BR_END, 0, 0, 60);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nB bar 30\nB baz 40\n"
			  "E baz 50\nE bar 50\nE foo 50\nE main 60\n");
}

TEST(longjmp_seen_by_the_next_ip_closes_frames)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	CALL(FOO + 0x20, BAR, 30);
	CALL(BAR + 0x20, BAZ, 40); /* longjmp: jmp *%rdx is not reported */
	CALL(MAIN + 0x60, FOO, 50);
	EV(BR_END, 0, 0, 60);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nB bar 30\nB baz 40\n"
			  "E baz 50\nE bar 50\nE foo 50\nB foo 50\n"
			  "E foo 60\nE main 60\n");
}

TEST(exception_landing_pad_closes_frames)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	CALL(FOO + 0x20, BAR, 30);
	CALL(BAR + 0x20, BAZ, 40);
	/* the unwinder jumps into foo's landing pad (not an entry) */
	EV(BR_JUMP, BAZ + 0x80, FOO + 0x70, 50);
	RET(FOO + 0x80, MAIN + 0x25, 60);
	EV(BR_END, 0, 0, 70);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nB bar 30\nB baz 40\n"
			  "E baz 50\nE bar 50\nE foo 60\nE main 70\n");
}

TEST(syscall_is_a_span)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	EV(BR_SYSCALL, FOO + 0x10, 0, 30);
	EV(BR_ENABLE, 0, FOO + 0x12, 90);
	RET(FOO + 0x20, MAIN + 0x25, 100);
	EV(BR_END, 0, 0, 110);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nB syscall 30\n"
			  "E syscall 90\nE foo 100\nE main 110\n");
}

TEST(interrupt_without_kernel_trace_is_a_kernel_span)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	EV(BR_INTERRUPT, MAIN + 0x33, 0, 20);
	EV(BR_ENABLE, 0, MAIN + 0x33, 80);
	EV(BR_END, 0, 0, 90);
	CHECK_STR(tw.buf, "B main 10 inferred\nB [kernel] 20\nE [kernel] 80\n"
			  "E main 90\n");
}

/* A trace that stops asynchronously (an interrupt the trace never comes
 * back from, or the end of a snapshot) says nothing of what came next: no
 * "[kernel]" span is made for it, and the frames close at that time. */
TEST(trace_ending_in_async_disable_makes_no_kernel_span)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	EV(BR_INTERRUPT, FOO + 0x33, 0, 30);
	EV(BR_END, 0, 0, 30);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nE foo 30\n"
			  "E main 30\n");
	/* the same disable followed by more trace is a kernel span */
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	EV(BR_DISABLE, MAIN + 0x10, 0, 20);
	EV(BR_ENABLE, 0, MAIN + 0x10, 50);
	EV(BR_END, 0, 0, 60);
	CHECK_STR(tw.buf, "B main 10 inferred\nB [kernel] 20\n"
			  "E [kernel] 50\nE main 60\n");
}

TEST(signal_handler_in_and_out)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	EV(BR_INTERRUPT, FOO + 0x33, 0, 30);
	EV(BR_ENABLE, 0, HANDLER, 40);
	RET(HANDLER + 0x30, RESTORER, 50);
	EV(BR_SYSCALL, RESTORER + 0x7, 0, 60);
	EV(BR_ENABLE, 0, FOO + 0x33, 70);
	RET(FOO + 0x40, MAIN + 0x25, 80);
	EV(BR_END, 0, 0, 90);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nB [kernel] 30\n"
			  "E [kernel] 40\nB [signal] 40\nB handler 40\n"
			  "E handler 50\nB __restore_rt 50\nB syscall 60\n"
			  "E syscall 70\nE __restore_rt 70\nE [signal] 70\n"
			  "E foo 80\nE main 90\n");
}

TEST(traced_signal_delivery_with_handler)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	EV(BR_INTERRUPT, MAIN + 0x40, HANDLER, 20);
	RET(HANDLER + 0x30, RESTORER, 30);
	EV(BR_SYSCALL, RESTORER + 0x7, 0, 40);
	EV(BR_ENABLE, 0, MAIN + 0x40, 50);
	EV(BR_END, 0, 0, 60);
	CHECK_STR(tw.buf, "B main 10 inferred\nB [signal] 20\nB handler 20\n"
			  "E handler 30\nB __restore_rt 30\nB syscall 40\n"
			  "E syscall 50\nE __restore_rt 50\nE [signal] 50\n"
			  "E main 60\n");
}

TEST(overflow_closes_frames_and_resumes_fresh)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 100);
	CALL(MAIN + 0x20, FOO, 200);
	CALL(FOO + 0x20, BAR, 250);
	EV(BR_OVERFLOW, 0, BAZ + 0x4, 300);
	RET(BAZ + 0x10, MAIN + 0x30, 310);
	EV(BR_END, 0, 0, 320);
	CHECK_STR(tw.buf, "B main 100 inferred\nB foo 200\nB bar 250\n"
			  "E bar 250\nE foo 250\nE main 250\n"
			  "I trace overflow: data lost 250\n"
			  "B baz 300 inferred\nE baz 310\n"
			  "B main 299 inferred\nE main 320\n");
	CHECK_EQ(stk_get_counts(stk)->err_overflow, 1);
}

TEST(decode_error_names_the_error_and_resumes)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 100);
	CALL(MAIN + 0x20, FOO, 200);
	CHECK_EQ(stk_feed(stk, &(struct br_event){.kind = BR_ERROR,
						  .from = 0x7ffff7df1950,
						  .err = -pte_nomap,
						  .ts = 210}),
		 0);
	/* the inferred frames after the resync stay after the error */
	EV(BR_ENABLE, 0, BAR + 0x8, 212);
	RET(BAR + 0x10, FOO + 0x30, 220);
	RET(FOO + 0x40, MAIN + 0x30, 230);
	CHECK_EQ(stk_feed(stk, &(struct br_event){.kind = BR_ERROR,
						  .from = 0x4000,
						  .err = -pte_bad_opc,
						  .ts = 240}),
		 0);
	EV(BR_END, 0, 0, 250);
	CHECK_STR(tw.buf,
		  "B main 100 inferred\nB foo 200\n"
		  "E foo 210\nE main 210\n"
		  "I decode error: no memory mapped at 0x7ffff7df1950 210\n"
		  "B bar 212 inferred\nE bar 220\nB foo 211 inferred\n"
		  "E foo 230\nB main 211 inferred\nE main 240\n"
		  "I decode error: unknown opcode at 0x4000 240\n");
	CHECK_EQ(stk_get_counts(stk)->err_nomap, 1);
	CHECK_EQ(stk_get_counts(stk)->err_decode, 1);
}

TEST(end_closes_every_frame_at_last_time)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	CALL(FOO + 0x20, BAR, 30);
	EV(BR_SYSCALL, BAR + 0x10, 0, 40);
	EV(BR_END, 0, 0, 50);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nB bar 30\n"
			  "B syscall 40\nE syscall 50\nE bar 50\nE foo 50\n"
			  "E main 50\n");
	CHECK_EQ(stk_depth(stk), 0);
}

TEST(first_event_without_enable_starts_the_stack)
{
	setup(0);
	CALL(FOO + 0x20, BAR, 30);
	RET(BAR + 0x8, FOO + 0x25, 40);
	RET(FOO + 0x30, 0x9999, 50); /* into code without a symbol */
	EV(BR_END, 0, 0, 60);
	CHECK_STR(tw.buf, "B foo 30 inferred\nB bar 30\nE bar 40\nE foo 50\n"
			  "B 0x9999 29 inferred\nE 0x9999 60\n");
}

TEST(unknown_jump_in_middle_replaces_top)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 10);
	CALL(MAIN + 0x20, FOO, 20);
	/* foo's code goes on in bar's body without a reported transfer */
	CALL(BAR + 0x40, BAZ, 30);
	RET(BAZ + 0x8, BAR + 0x45, 40);
	RET(BAR + 0x50, MAIN + 0x25, 50);
	EV(BR_END, 0, 0, 60);
	CHECK_STR(tw.buf, "B main 10 inferred\nB foo 20\nE foo 30\nB bar 30\n"
			  "B baz 30\nE baz 40\nE bar 50\nE main 60\n");
}

TEST(times_never_go_backwards)
{
	setup(0);
	EV(BR_ENABLE, 0, MAIN, 100);
	CALL(MAIN + 0x20, FOO, 90);
	RET(FOO + 0x20, MAIN + 0x25, 95);
	EV(BR_END, 0, 0, 50);
	CHECK_STR(tw.buf, "B main 100 inferred\nB foo 100\nE foo 100\n"
			  "E main 100\n");
}

/* SPDX-License-Identifier: MIT */
/* The flow layer (prefix flow_): libipt's block decoder over one PT stream
 * and an image → the branch events of decoder/branch.h.  Internal to the
 * decoder library; the call-stack builder (stack.c) consumes the events.
 *
 * What is reported, per stream, in execution order:
 *  - BR_ENABLE (to = first ip) when decoding starts, after every PSB resync
 *    and at every TIP.PGE (e.g. the return address after a syscall).
 *  - BR_CALL for every near call, including the direct calls that libipt's
 *    block decoder runs through inside a block (found by walking the
 *    block's instructions; cached per block).  A "call next instruction"
 *    (32-bit PIC idiom) is not a call and is not reported.
 *  - BR_RETURN for every near ret (to = where it went, 0 if unknown).
 *  - BR_JUMP for a jump (direct or indirect, conditional or not) whose
 *    target is a function entry per flow_funcs.is_func_entry: a tail call.
 *    Without is_func_entry no BR_JUMP is reported.
 *  - BR_SYSCALL for syscall/sysenter/int n/int3/far call; with user-only
 *    tracing it is followed by the BR_ENABLE at the resume ip.
 *  - BR_INTERRUPT for an asynchronous branch (FUP+TIP: signal, interrupt
 *    with kernel tracing): from = interrupted ip (not executed), to =
 *    target; and for an asynchronous disable (FUP+TIP.PGD: the kernel took
 *    over at from): to = 0, tracing resumes at the next BR_ENABLE.
 *  - BR_FAR_RETURN for iret/sysret/sysexit.
 *  - BR_DISABLE when tracing stops after a non-syscall branch (TIP.PGD,
 *    e.g. leaving an IP filter region); from = that branch's ip.
 *  - BR_OVERFLOW (to = resume ip or 0) when the CPU dropped data.
 *  - BR_ERROR (from = ip where decoding failed or 0, err = -pte_*), then
 *    decoding resumes at the next PSB, reported by BR_ENABLE.
 *  - BR_END once, at the end, with the last time.
 *
 * Times: libipt's time tracking (TSC, MTC, CYC) read after every block and
 * event, converted by tc_to_ns().  The time of an event is the converted
 * time of the timing packet last seen before it, raised to previous + 1 ns
 * when that would not be later than the previous event's: so events are
 * strictly increasing (several branches within one timing tick get
 * consecutive nanoseconds), never earlier than their timing packet.
 * Before the first timing packet the time is 0 (+1 per event).
 *
 * icount: instructions executed in this stream up to and including the
 * branching instruction (for BR_ENABLE/BR_ERROR/BR_END: so far).
 *
 * Stale data: a per-CPU snapshot buffer may end in older data from an
 * earlier lap of the ring, which libipt finds inconsistent (e.g. "expected
 * tracing enabled event").  A trace-consistency error (anything but
 * nomap/bad insn/bad image) after which no PSB follows ends the stream as
 * stale: no BR_ERROR, err_truncated is counted, and BR_END follows.
 * (Time going backwards is not used as a sign: with unknown MTC settings
 * libipt's estimates can step back in genuine data.)
 *
 * Files: flow.c drives libipt over a stream (sync, steps, resync, end),
 * flow_branches.c says what its blocks and events mean (flow_run.h is
 * their shared state).  The sink, FLOW_PAUSE, the block hook and
 * struct flow_funcs are declared in branch.h, below both.
 */
#ifndef PTSCOPE_DECODER_FLOW_H
#define PTSCOPE_DECODER_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/branch.h"
#include "decoder/decoder.h"
#include "decoder/fast_packets.h"
#include "decoder/image.h"

/* One decoder per image (process): keeps the per-block cache across
 * streams (threads) of that process. */
struct flow_decoder;

/* @cfg: cpu (errata), mtc_freq, nom_freq, cpuid_0x15_*, time are used;
 * copied.  @img: not owned, must outlive the decoder.  @funcs: copied,
 * may be NULL.  Returns 0, PS_ERR_INVAL (NULL cfg/img/out),
 * PS_ERR_NOMEM. */
int flow_new(const struct dec_config *cfg, struct img_image *img,
	     const struct flow_funcs *funcs, struct flow_decoder **out);
void flow_free(struct flow_decoder *fd); /* accepts NULL */

/* Decode one PT stream (@pt, @len bytes; synced at its first PSB) and call
 * @sink for each branch event.  @stats (may be NULL) is added to: bytes,
 * instructions, blocks, branches, err_overflow, err_nomap, err_decode,
 * err_truncated.  Returns 0 when the stream was decoded (decode errors
 * inside it were reported as BR_ERROR), PS_ERR_FORMAT (no PSB in the
 * stream: nothing was reported, not even BR_END), PS_ERR_INVAL (NULL
 * arguments), PS_ERR_NOMEM, PS_ERR_DECODE (libipt refused the
 * configuration), or the sink's negative return value. */
int flow_decode(struct flow_decoder *fd, const uint8_t *pt, size_t len,
		br_sink_fn sink, void *sink_ctx, struct dec_stats *stats);

/* One stream decoded in steps, so that several streams (per-CPU traces)
 * can be interleaved in time order.  Memory stays that of one decoder. */
struct flow_stream;

/* Start decoding @pt as flow_decode() does (same arguments and errors),
 * without reporting anything yet.  @pt, @sink_ctx and @stats must outlive
 * the stream; @stats is added to by flow_close(). */
int flow_open(struct flow_decoder *fd, const uint8_t *pt, size_t len,
	      br_sink_fn sink, void *sink_ctx, struct dec_stats *stats,
	      struct flow_stream **out);

/* Decode until the sink asks for a pause (returns FLOW_PAUSE) or the
 * stream is done: BR_END sent, returns 0 (and 0 again on later calls).
 * A negative return is the sink's error or PS_ERR_NOMEM; the stream is
 * then done too. */
int flow_step(struct flow_stream *st);

/* Free the stream and add its counts to its stats.  Accepts NULL. */
void flow_close(struct flow_stream *st);

/* Segment mode (decoder/split.c): one part of a long stream, decoded on
 * a thread of its own with its own flow decoder, its events joined to
 * the others' in order.  The segment starts at the PSB at trace offset
 * @start (0: the stream's first PSB, as flow_open) and, unless @stop_at
 * is 0 (the last segment), ends where a decode of the whole stream would
 * begin the block at @stop_ip, the FUP address of the PSB+ that ends at
 * offset @stop_at (the next segment's PSB): its pending block end is
 * resolved with @stop_ip and no BR_END follows.  The next segment then
 * begins with its first block at @start_ip, reported with no BR_ENABLE
 * (as one decode goes on there).  Times are
 * raised per segment only (the joiner raises them across) and icount
 * counts from 0 in each.  Only ptscope's flow engine decodes segments.
 *
 * CYC packets need the clock the packets before the segment left (the
 * calibration of cycles to time).  With @fold a segment takes it from
 * the timing packets since @fold_from (a PSB before @start, in the
 * previous segment);
 * without, it starts afresh and a CYC aborts it (flow_seg_clock then says
 * it saw one: decode it again with @fold).  Each keeps the clock it has
 * at @next_start (the next segment's PSB, 0: none), so the joiner can
 * check that the next segment started from the clock a decode of the
 * whole stream has there. */
struct flow_seg {
	uint64_t start, start_ip; /* start_ip: the previous stop_ip */
	uint64_t stop_at, stop_ip;
	uint64_t fold_from, next_start;
	int fold;
};

/* What a segment's clock was: the one it started from (if @seeded), the
 * one it had at the next segment's PSB (if @ended), and whether it read a
 * CYC packet (@saw_cyc: its times depend on the clock it started from). */
struct flow_seg_clock {
	struct fq_clock seed, at_end;
	int seeded, ended, saw_cyc;
};

/* flow_open for a segment.  flow_step then returns FLOW_SEG_ABORT where
 * the seam is not clean (a decode error, a hand-over to libipt, a
 * disable pending at the seam): decode the stream whole instead. */
#define FLOW_SEG_ABORT (-4000)
int flow_open_segment(struct flow_decoder *fd, const uint8_t *pt, size_t len,
		      const struct flow_seg *seg, br_sink_fn sink,
		      void *sink_ctx, struct dec_stats *stats,
		      struct flow_stream **out);

/* The clock of a segment decoded by flow_step (call before flow_close). */
void flow_seg_clock(const struct flow_stream *st, struct flow_seg_clock *out);

/* Install (or with NULL remove) the block hook for the following
 * flow_decode() calls.  Off by default: the inline-frame layer uses it. */
void flow_set_block_fn(struct flow_decoder *fd, flow_block_fn fn);

/* Use ptscope's own flow engine (decoder/fast_flow.c) where it can
 * (@on 1, the default) or libipt's block decoder only (@on 0).  The
 * branch events are the same either way. */
void flow_set_fast(struct flow_decoder *fd, int on);

/* Forget what is cached about blocks (the image changes are noticed by
 * themselves through img_generation; this is for is_func_entry changes). */
void flow_invalidate(struct flow_decoder *fd);

/* Fill a libipt pt_config's cpu, errata and timing fields from @cfg
 * (shared with tools that run bare libipt loops).  @ptcfg must have been
 * pt_config_init()ed; begin/end are left alone.  Returns 0 or
 * PS_ERR_DECODE (libipt rejected the cpu). */
struct pt_config;
int flow_pt_config(const struct dec_config *cfg, struct pt_config *ptcfg);

#endif /* PTSCOPE_DECODER_FLOW_H */

/* SPDX-License-Identifier: MIT */
/* The ptscope event model: what every producer (decoder, recorder, trace
 * readers) hands to every consumer (trace writers, the text dumper).
 *
 * One clock everywhere: CLOCK_MONOTONIC nanoseconds.  Events are a stream;
 * nothing requires the whole trace in memory.  Producers try to keep each
 * thread's events in time order, but consumers must accept out-of-order
 * events (e.g. the begin of an inferred caller frame, or a Chrome JSON file
 * written in any order).
 *
 * All pointers in an event are borrowed for the duration of the call that
 * receives it: a consumer that needs a string later copies or interns it.
 */
#ifndef PTSCOPE_EVENT_H
#define PTSCOPE_EVENT_H

#include <stddef.h>
#include <stdint.h>

enum ps_event_type {
	PS_EV_BEGIN,	/* a span opens on (pid, tid) at ts */
	PS_EV_END,	/* the innermost open span of (pid, tid) closes at ts */
	PS_EV_COMPLETE, /* a whole span: [ts, ts + dur] */
	PS_EV_INSTANT,	/* a point in time */
	PS_EV_COUNTER,	/* args are the numeric series values at ts */
	PS_EV_FLOW_BEGIN, /* flow_id starts in the span enclosing ts on tid */
	PS_EV_FLOW_STEP,  /* flow_id passes through the enclosing span */
	PS_EV_FLOW_END	  /* flow_id ends in the enclosing span */
};

/* Tracks that belong to a thread.  A tid with one of these bits set
 * (never a real one: Linux tids stay below 2^22) names a track of thread
 * tid & ~PS_TID_AUX, not a thread: PS_TID_SCHED its time off the CPU
 * (spans that nest inside the thread's own spans: the blocking system
 * call), PS_TID_BLOCK its block I/O requests (issue to completion, which
 * may cross anything).  Writers show them without adding a thread
 * (docs/events.md says how each format does). */
#define PS_TID_SCHED 0x40000000u
#define PS_TID_BLOCK 0x20000000u
#define PS_TID_AUX (PS_TID_SCHED | PS_TID_BLOCK)
#define PS_TID_MAX_REAL (1u << 22) /* PID_MAX_LIMIT */

/* PS_TID_SCHED or PS_TID_BLOCK when @tid names a track of a thread, else
 * 0 (a thread: any other tid, a foreign trace's big ones included). */
static inline uint32_t ps_tid_aux(uint64_t tid)
{
	uint64_t kind = tid & PS_TID_AUX;

	if ((kind != PS_TID_SCHED && kind != PS_TID_BLOCK) ||
	    (tid & ~(uint64_t)PS_TID_AUX) >= PS_TID_MAX_REAL)
		return 0;
	return (uint32_t)kind;
}

/* The reach of an instant event. */
enum ps_scope { PS_SCOPE_THREAD = 0, PS_SCOPE_PROCESS, PS_SCOPE_GLOBAL };

enum ps_arg_type {
	PS_ARG_NULL,
	PS_ARG_BOOL,
	PS_ARG_INT,    /* v.i */
	PS_ARG_UINT,   /* v.u */
	PS_ARG_DOUBLE, /* v.d */
	PS_ARG_STRING, /* v.s (borrowed, NUL-terminated) */
	PS_ARG_POINTER /* v.u, shown as an address */
};

struct ps_arg {
	const char *name;
	enum ps_arg_type type;
	union {
		int b;
		int64_t i;
		uint64_t u;
		double d;
		const char *s;
	} v;
};

/* Where a span's code lives.  Optional (NULL in ps_event.info); writers
 * show these fields as args named "module", "address", "file" and "line"
 * (the Perfetto writer may use its interned source locations instead). */
struct ps_span_info {
	const char *module; /* path or name of the module; may be NULL */
	uint64_t address;   /* code address of the function (0: unknown) */
	const char *file;   /* source file, may be NULL */
	uint32_t line;	    /* source line, 0 if unknown */
};

struct ps_event {
	enum ps_event_type type;
	uint64_t pid;
	uint64_t tid;
	uint64_t ts;	  /* CLOCK_MONOTONIC ns (or the trace's own ns clock) */
	uint64_t dur;	  /* PS_EV_COMPLETE only */
	const char *name; /* may be NULL for PS_EV_END */
	const char *category;		 /* may be NULL */
	uint64_t flow_id;		 /* PS_EV_FLOW_* only */
	enum ps_scope scope;		 /* PS_EV_INSTANT only */
	const struct ps_span_info *info; /* BEGIN/COMPLETE; may be NULL */
	const struct ps_arg *args;
	size_t nargs;
};

#endif /* PTSCOPE_EVENT_H */

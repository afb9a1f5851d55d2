/* SPDX-License-Identifier: MIT */
/* The trigger kinds (struct rec_trigger_kind, core/core.h) that the
 * recorder registers with the core:
 *
 *   rec_trigger_breakpoint  NAME, NAME@MODULE, FILE:LINE, addr:ADDR and
 *                           "." (breakpoint.c): addresses resolved per
 *                           process (resolve.h), hardware breakpoints on
 *                           every thread (bp.h) when the backend wants
 *                           them, a mark per hit
 *   rec_trigger_latency     NAME>DURATION (latency.c, latency.h): a mark
 *                           when a call of NAME runs too long
 */
#ifndef PTSCOPE_RECORD_TRIGGERS_KINDS_H
#define PTSCOPE_RECORD_TRIGGERS_KINDS_H

#include "src/record/core/core.h"

extern const struct rec_trigger_kind rec_trigger_breakpoint;
extern const struct rec_trigger_kind rec_trigger_latency;

#endif /* PTSCOPE_RECORD_TRIGGERS_KINDS_H */

/* SPDX-License-Identifier: MIT */
/* Sidecar feature: signal events (signal_generate, signal_deliver; kernel side:
 * signals.bpf.c). */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/signals.skel.h"

SDC_FEATURE(sdc_signals_feature, ps_signals,
	    "the signal events (signal_generate, signal_deliver)", 0, (void)0)

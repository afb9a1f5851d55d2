/* SPDX-License-Identifier: MIT */
/* Sidecar feature: block I/O events (block_rq_issue, block_rq_complete; kernel
 * side: blockio.bpf.c). */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/blockio.skel.h"

SDC_FEATURE_START(sdc_blockio_start, ps_blockio,
		  "the block I/O events (block_rq_issue, block_rq_complete)",
		  (void)0)

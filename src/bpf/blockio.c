/* SPDX-License-Identifier: MIT */
/* Sidecar feature: block I/O events (block_rq_issue, block_rq_complete; kernel
 * side: blockio.bpf.c).  Its tracepoints attach through tracefs. */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/blockio.skel.h"

SDC_FEATURE(sdc_blockio_feature, ps_blockio,
	    "the block I/O events (block_rq_issue, block_rq_complete)", 1,
	    (void)0)

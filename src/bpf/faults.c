/* Sidecar feature: user page faults (exceptions:page_fault_user; kernel
 * side: faults.bpf.c). */
#include <errno.h>

#include "src/bpf/features.h"
#include "bpf/faults.skel.h"

SDC_FEATURE_START(sdc_faults_start, ps_faults, "the page fault events", (void)0)

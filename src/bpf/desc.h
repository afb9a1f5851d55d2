/* SPDX-License-Identifier: MIT */
/* The description of a custom event (--event tracepoint:CAT:NAME or
 * kprobe:FUNC): what the decoder needs to name it and read its fields,
 * also stored in recordings (docs/recording-format.md).  The features that
 * make one (tracepoint.c, kfunc.c) fill it in; the sidecar hands it out
 * (sdc_descs in sidecar.h).  User side only. */
#ifndef PTSCOPE_BPF_DESC_H
#define PTSCOPE_BPF_DESC_H

#include <stddef.h>
#include <stdint.h>

#define SDC_MAX_FIELDS 32 /* tracepoint fields kept per custom event */

struct sdc_field {
	char name[64];
	uint16_t offset, size;
	uint8_t is_signed;
	uint8_t is_string;  /* char array: a NUL-terminated string */
	uint8_t is_dataloc; /* __data_loc: u32 offset | length << 16 */
};

struct sdc_desc {
	char name[128]; /* "sched:sched_process_fork", "do_sys_openat2" */
	int is_kfunc;	/* 1: kernel function (entry/exit), 0: tracepoint */
	size_t nfields;
	struct sdc_field fields[SDC_MAX_FIELDS];
};

#endif /* PTSCOPE_BPF_DESC_H */

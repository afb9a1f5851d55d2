/* SPDX-License-Identifier: MIT */
/* capstone, loaded on first use (prefix cs_api_).
 *
 * Linked in, capstone cost every ptscope start about 370 page faults
 * (its 1.7 MB of pointer tables are relocated by the dynamic loader),
 * 4 ms on a VM where a fault costs 11 us, though only the emulated
 * engines and the decoder's rare instructions (insn.c) need it.  So
 * ptscope and the QEMU plugin dlopen the soname the build was compiled
 * against when the first caller asks.  Thread-safe. */
#ifndef PTSCOPE_DECODER_CAPSTONE_LOAD_H
#define PTSCOPE_DECODER_CAPSTONE_LOAD_H

#include <capstone/capstone.h>

struct cs_api {
	__typeof__(cs_open) *open;
	__typeof__(cs_close) *close;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_free) *free;
	__typeof__(cs_disasm_iter) *disasm_iter;
};

/* The library's functions in *@out.  Returns 0, or PS_ERR_INTERNAL with
 * a detail (ps_err_detail) naming the library and how to install it. */
int cs_api_get(const struct cs_api **out);

#endif /* PTSCOPE_DECODER_CAPSTONE_LOAD_H */

/* SPDX-License-Identifier: MIT */
/* Kernel code for --kernel recordings (prefix kcore_): the kernel's text
 * [_stext, _etext) as /proc/kallsyms places it and /proc/kcore (an ELF
 * core file of kernel memory) holds it, so the decoder can follow PT
 * through kernel code.  Needs root: kallsyms shows zero addresses to
 * others (kptr_restrict) and kcore needs CAP_SYS_RAWIO.
 */
#ifndef PTSCOPE_RECORD_KCORE_H
#define PTSCOPE_RECORD_KCORE_H

#include <stddef.h>
#include <stdint.h>

/* Copy the kernel text into a malloc'ed *@bytes of *@len bytes that
 * belong at *@vaddr.  @kallsyms, @kcore: the files (NULL: the /proc ones).
 * Returns 0, PS_ERR_PERM (addresses hidden or kcore not readable: the
 * detail says what is needed), PS_ERR_NOT_FOUND (no _stext/_etext, or no
 * kcore segment holds them), PS_ERR_FORMAT (kcore is not a 64-bit ELF
 * core), PS_ERR_IO, PS_ERR_NOMEM. */
int kcore_text(const char *kallsyms, const char *kcore, uint8_t **bytes,
	       size_t *len, uint64_t *vaddr);

#endif /* PTSCOPE_RECORD_KCORE_H */

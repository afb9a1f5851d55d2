/* SPDX-License-Identifier: MIT */
/* Calls glibc functions that glibc names several times (puts is also
 * _IO_puts, write is also __libc_write, ...): a trace must show the names
 * a programmer calls.  Built static, its start-up runs the GNU IFUNC
 * resolvers (strchr's, strlen's), shown as "strchr [ifunc resolver]". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	char *p = calloc(4, 16);
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	puts("hello");
	if (write(1, "x\n", 2) != 2)
		return 1;
	mprotect(page, 4096, PROT_READ);
	if (brk(sbrk(0)))
		return 1;
	printf("%s %d\n", strchr("abc", 'b'), p[3]);
	free(p);
	return 0;
}

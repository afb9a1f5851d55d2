/* SPDX-License-Identifier: MIT */
/* capstone, loaded on first use (see capstone_load.h). */
#include "decoder/capstone_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "ptscope/error.h"

#define CS_SONAME_(major) "libcapstone.so." #major
#define CS_SONAME(major) CS_SONAME_(major)

static struct cs_api api;
static char why[256]; /* empty when api is loaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(void *lib, const char *name)
{
	void *f = dlsym(lib, name);

	if (!f && !why[0])
		snprintf(why, sizeof(why), "%s has no %s",
			 CS_SONAME(CS_API_MAJOR), name);
	return f;
}

static void load(void)
{
	void *lib = dlopen(CS_SONAME(CS_API_MAJOR), RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!lib) {
		e = dlerror();
		snprintf(why, sizeof(why), "%s",
			 e ? e : CS_SONAME(CS_API_MAJOR));
		return;
	}
	api.open = (__typeof__(api.open))sym(lib, "cs_open");
	api.close = (__typeof__(api.close))sym(lib, "cs_close");
	api.option = (__typeof__(api.option))sym(lib, "cs_option");
	api.malloc = (__typeof__(api.malloc))sym(lib, "cs_malloc");
	api.free = (__typeof__(api.free))sym(lib, "cs_free");
	api.disasm_iter =
	    (__typeof__(api.disasm_iter))sym(lib, "cs_disasm_iter");
	/* A library without one of them is kept loaded but never used. */
}

int cs_api_get(const struct cs_api **out)
{
	pthread_once(&once, load);
	if (why[0])
		return ps_err_detail(PS_ERR_INTERNAL,
				     "the x86 disassembler capstone could not "
				     "be loaded (%s); install libcapstone "
				     "version %d (make deps)",
				     why, CS_API_MAJOR);
	*out = &api;
	return 0;
}

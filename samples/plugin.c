/* SPDX-License-Identifier: MIT */
/* plugin: loads libplugin.so (beside the program) with dlopen(3) after
 * some work of its own, then calls its plugin_step N times.
 *
 *   plugin [N]      (default 5) */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int before(int n)
{
	return n + 1;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 32);
	int n = argc > 1 ? atoi(argv[1]) : 5, sum = 0;
	int (*step)(int);
	void *lib;

	for (int i = 0; i < n; i++)
		sum += before(i);
	if (len <= 0)
		return 1;
	path[len] = 0;
	strcpy(strrchr(path, '/') + 1, "libplugin.so");
	lib = dlopen(path, RTLD_NOW);
	step = lib ? (int (*)(int))dlsym(lib, "plugin_step") : NULL;
	if (!step) {
		fprintf(stderr, "plugin: %s\n", dlerror());
		return 1;
	}
	for (int i = 0; i < n; i++)
		sum += step(i);
	printf("plugin: %d calls, sum %d\n", n, sum);
	return 0;
}

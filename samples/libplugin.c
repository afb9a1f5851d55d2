/* SPDX-License-Identifier: MIT */
/* libplugin.so: the library samples/plugin loads with dlopen(3), so that
 * its code appears while the program runs: a trigger on plugin_step
 * waits for it, and the trace names code that was not there at start. */

static int plugin_twice(int x)
{
	return 2 * x;
}

int plugin_step(int x)
{
	return plugin_twice(x) + 1;
}

/* Placeholder until its owner lands the real command (removed before any stop). */
#include <stdio.h>
#include "src/cli/commands.h"
int cmd_attach(int argc, char **argv)
{
	fprintf(stderr, "ptscope attach: not built yet\n");
	return 2;
}

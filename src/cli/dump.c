/* Placeholder until its owner lands the real command (removed before any stop). */
#include <stdio.h>
#include "src/cli/commands.h"
int cmd_dump(int argc, char **argv)
{
	fprintf(stderr, "ptscope dump: not built yet\n");
	return 2;
}

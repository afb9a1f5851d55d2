/* SPDX-License-Identifier: MIT */
/* ptscope attach: trace running processes, detach, write the trace. */
#include "src/cli/commands.h"
#include "src/cli/tracing.h"

int cmd_attach(int argc, char **argv)
{
	return cli_record_main(RECCMD_ATTACH, argc, argv);
}

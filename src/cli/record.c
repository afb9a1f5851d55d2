/* SPDX-License-Identifier: MIT */
/* ptscope record: like run/attach, but save a recording (.ptsc). */
#include "src/cli/commands.h"
#include "src/cli/tracing.h"

int cmd_record(int argc, char **argv)
{
	return cli_record_main(RECCMD_RECORD, argc, argv);
}

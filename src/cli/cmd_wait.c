/*
 * cmd_wait.c - placeholder, filled in by its issue's work.
 */
#include "cli.h"

static int run_wait(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_wait = {
	.name = "wait",
	.synopsis = "taskq wait ID... | --batch NAME [--timeout DUR] [--json]",
	.summary = "Wait for tasks or a batch to end.",
	.help = "",
	.run = run_wait,
};

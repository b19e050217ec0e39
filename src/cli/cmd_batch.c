/*
 * cmd_batch.c - placeholder, filled in by its issue's work.
 */
#include "cli.h"

static int run_batch(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_batch = {
	.name = "batch",
	.synopsis = "taskq batch list | show NAME [--json]",
	.summary = "List batches, or show one.",
	.help = "",
	.run = run_batch,
};

static int run_group(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_group = {
	.name = "group",
	.synopsis = "taskq group set NAME --parallel N | list",
	.summary = "Set a group's parallelism.",
	.help = "",
	.run = run_group,
};

static int run_clear(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_clear = {
	.name = "clear",
	.synopsis = "taskq clear [--finished] [--older-than DUR] [ID...]",
	.summary = "Remove finished tasks and their logs.",
	.help = "",
	.run = run_clear,
};

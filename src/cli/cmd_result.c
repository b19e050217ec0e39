/*
 * cmd_result.c - placeholder, filled in by its issue's work.
 */
#include "cli.h"

static int run_result(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_result = {
	.name = "result",
	.synopsis = "taskq result ID [--json]",
	.summary = "Print an agent task's result.",
	.help = "",
	.run = run_result,
};

static int run_stats(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_stats = {
	.name = "stats",
	.synopsis = "taskq stats [--batch B] [--since DUR] [--json]",
	.summary = "Sum cost, tokens, runtime and outcomes.",
	.help = "",
	.run = run_stats,
};

static int run_session(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_session = {
	.name = "session",
	.synopsis = "taskq session show KEY [--json]",
	.summary = "Show a session's tasks and its agent session id.",
	.help = "",
	.run = run_session,
};

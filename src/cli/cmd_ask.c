/*
 * cmd_ask.c - placeholder, filled in by its issue's work.
 */
#include "ask.h"

int cli_ask_apply(struct cli_submit *s, const struct cli_ask *a, struct tq_err *err)
{
	(void)s;
	(void)a;
	return tq_err_set(err, TQ_EINVAL, "agent tasks are not built yet");
}

static int run_ask(struct cli_ctx *c, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_runtime(c, "not implemented yet");
}

const struct cli_cmd cli_cmd_ask = {
	.name = "ask",
	.synopsis = "taskq ask [--agent NAME] [--model M] [--source NAME=PATH]... [--session KEY] [--isolate] [--interactive] [submit options] [PROMPT]",
	.summary = "Submit an agent task (claude, gemini, codex, opencode).",
	.help = "",
	.run = run_ask,
};

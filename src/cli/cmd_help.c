/*
 * cmd_help.c - `taskq help [COMMAND]` and `taskq version`.
 *
 * The overview is built from the command table, so each command's synopsis
 * is written once, in its own file, and help cannot drift from --help.
 */
#include "cli.h"

#include <string.h>

#ifndef TASKQ_VERSION
#define TASKQ_VERSION "unknown"
#endif

static const char overview_head[] =
	"usage: taskq [--home DIR] [--db URL] [--node NAME] COMMAND [ARGS...]\n"
	"\n"
	"taskq keeps a queue of commands in one SQLite file and runs them in the\n"
	"background, surviving crashes and reboots.\n"
	"\n"
	"Commands:\n";

static const char overview_tail[] =
	"\n"
	"Global options (before the command):\n"
	"  --home DIR    the state directory: the database and logs (default\n"
	"                $TASKQ_HOME, else $XDG_STATE_HOME/taskq, else\n"
	"                ~/.local/state/taskq)\n"
	"  --db URL      keep the store in a PostgreSQL database (postgresql://...;\n"
	"                libpq's PG* variables apply) instead of the state\n"
	"                directory's SQLite file: every node pointed at it shares\n"
	"                one queue (default $TASKQ_DB, else the config file's\n"
	"                \"database\")\n"
	"  --node NAME   this node's name (default $TASKQ_NODE, else the host name)\n"
	"  -h, --help    this help; 'taskq help COMMAND' or 'taskq COMMAND --help'\n"
	"                for one command\n"
	"  --version     print the version\n"
	"\n"
	"Exit status:\n"
	"  0   success\n"
	"  1   runtime error: the database or a file could not be read or written,\n"
	"      or a task is in a state that does not allow the action\n"
	"  2   usage error: unknown command or option, bad value, unknown task id\n"
	"      or state name; no state directory or database where the command\n"
	"      looked (only submit, serve, drain and group set create them)\n"
	"Errors are one line on stderr: \"taskq: COMMAND: what went wrong\".\n"
	"\n"
	"Environment:\n"
	"  TASKQ_HOME        the state directory, unless --home is given\n"
	"  TASKQ_DB          the PostgreSQL store, unless --db is given\n"
	"  TASKQ_DB_RETRY    how long submit tries a PostgreSQL store it cannot\n"
	"                    reach (default 30s; 0: not at all)\n"
	"  TASKQ_AUTOSTART   0: submit does not start a supervisor\n"
	"  TASKQ_NODE        this node's name for serve and drain (default: the host\n"
	"                    name); recovery signals only its own node's processes\n"
	"  TASKQ_SCRUB_ENV   comma-separated variable names that submit leaves out of\n"
	"                    a task's environment, on top of the built-in list\n"
	"                    (agent-env.json: CLAUDECODE, GEMINI_CLI, CODEX_THREAD_ID,\n"
	"                    OPENCODE, AGENT, ...; the config's \"scrub_env\" adds)\n"
	"  NO_COLOR          when set and not empty, no colour in tables\n";

static void overview(FILE *f)
{
	fputs(overview_head, f);
	for (size_t i = 0; cli_cmds[i] != NULL; i++)
		if (cli_cmds[i]->summary != NULL) /* NULL: internal (worker) */
			fprintf(f, "  %s\n      %s\n", cli_cmds[i]->synopsis,
				cli_cmds[i]->summary);
	fputs(overview_tail, f);
}

static const struct cli_opt no_opts[] = { { NULL, 0, 0, 0 } };

static int run_help(struct cli_ctx *c, int argc, char **argv)
{
	const struct cli_cmd *cmd;
	const char *topic = NULL;
	struct cli_args a;
	int k;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, no_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_help, stdout);
		if (k != CLI_OPT_ARG)
			return CLI_USAGE;
		if (topic != NULL)
			return cli_usage(c, "unexpected argument \"%s\"", a.val);
		topic = a.val;
	}
	if (topic == NULL) {
		overview(stdout);
		return CLI_OK;
	}
	cmd = cli_find_cmd(topic);
	if (cmd == NULL)
		return cli_usage(c, "unknown command \"%s\"; see 'taskq help'", topic);
	return cli_print_help(cmd, stdout);
}

const struct cli_cmd cli_cmd_help = {
	.name = "help",
	.synopsis = "taskq help [COMMAND]",
	.summary = "Show the commands, or one command's options.",
	.help = "",
	.run = run_help,
};

static int run_version(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_args a;
	int k;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, no_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_version, stdout);
		if (k == CLI_OPT_ARG)
			return cli_usage(c, "unexpected argument \"%s\"", a.val);
		return CLI_USAGE;
	}
	printf("taskq %s\n", TASKQ_VERSION);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_version = {
	.name = "version",
	.synopsis = "taskq version",
	.summary = "Print the version.",
	.help = "",
	.run = run_version,
};

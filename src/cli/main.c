/*
 * main.c - the taskq command line: global options, the command table,
 * dispatch, and the one place errors become messages and exit codes.
 *
 *     taskq [--home DIR] [--db URL] [--node NAME] COMMAND [ARGS...]
 *
 * Every command is a struct cli_cmd in its own file (cmd_*.c) holding its
 * synopsis and help text next to its code. main does as little as it can
 * before dispatch: `submit` is benchmarked against a bare exec, so nothing
 * here loads a locale or touches the database, and the config file is
 * read once, for its "database", and kept for the command
 * (tq_config_keep).
 *
 * Exit codes: 0 success; 1 runtime error (database, I/O, a task in a state
 * that does not allow the action); 2 usage error (unknown command or
 * option, bad value, unknown task id or state).
 */
#include "cli.h"

#include <bsd/unistd.h>
#include "output.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/parse.h"
#include "common/sys.h"
#include "ops/submit.h"
#include "queue/home.h"

const struct cli_cmd *const cli_cmds[] = {
	&cli_cmd_submit,
	&cli_cmd_ask,
	&cli_cmd_wait,
	&cli_cmd_list,
	&cli_cmd_show,
	&cli_cmd_result,
	&cli_cmd_stats,
	&cli_cmd_session,
	&cli_cmd_sessions,
	&cli_cmd_batch,
	&cli_cmd_group,
	&cli_cmd_clear,
	&cli_cmd_classify,
	&cli_cmd_log,
	&cli_cmd_poll,
	&cli_cmd_cancel,
	&cli_cmd_remove,
	&cli_cmd_kill,
	&cli_cmd_write,
	&cli_cmd_retry,
	&cli_cmd_pause,
	&cli_cmd_resume,
	&cli_cmd_status,
	&cli_cmd_serve,
	&cli_cmd_drain,
	&cli_cmd_shutdown,
	&cli_cmd_db,
	&cli_cmd_worker,
	&cli_cmd_help,
	&cli_cmd_version,
	NULL,
};

const struct cli_cmd *cli_find_cmd(const char *name)
{
	for (size_t i = 0; cli_cmds[i] != NULL; i++)
		if (strcmp(cli_cmds[i]->name, name) == 0 ||
		    (cli_cmds[i]->alias != NULL && strcmp(cli_cmds[i]->alias, name) == 0))
			return cli_cmds[i];
	return NULL;
}

int cli_print_help(const struct cli_cmd *cmd, FILE *f)
{
	fprintf(f, "usage: %s\n\n%s\n", cmd->synopsis, cmd->summary);
	if (cmd->alias != NULL)
		fprintf(f, "Alias: taskq %s\n", cmd->alias);
	if (cmd->help != NULL && *cmd->help != '\0')
		fprintf(f, "\n%s", cmd->help);
	return CLI_OK;
}

/* ------------------------------------------------------------------ */
/* Errors                                                             */

/* "taskq: CMD: message\n", escaped so that no value can make it two lines
 * or send terminal controls. */
static void print_error(const struct cli_ctx *c, const char *fmt, va_list ap)
{
	char buf[TQ_ERR_MAX * 2];
	char *esc;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	esc = cli_esc(buf, 0, NULL);
	fflush(stdout); /* keep stdout and stderr in order on a shared tty */
	if (c != NULL && c->cmd != NULL)
		fprintf(stderr, "taskq: %s: %s\n", c->cmd->name, esc ? esc : "out of memory");
	else
		fprintf(stderr, "taskq: %s\n", esc ? esc : "out of memory");
	free(esc);
}

int cli_usage(const struct cli_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_error(c, fmt, ap);
	va_end(ap);
	return CLI_USAGE;
}

int cli_check_text(const struct cli_ctx *c, const char *what, const char *s)
{
	if (!tq_utf8_valid(s))
		return cli_usage(c, "%s \"%s\": not valid UTF-8", what, s);
	return CLI_OK;
}

void cli_note(const struct cli_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_error(c, fmt, ap);
	va_end(ap);
}

int cli_runtime(const struct cli_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_error(c, fmt, ap);
	va_end(ap);
	return CLI_RUNTIME;
}

int cli_usage_no_id(const struct cli_ctx *c)
{
	char line[1024];
	size_t n = 0;

	/* Each newline and the indent after it become one space. */
	for (const char *p = c->cmd->synopsis; *p != '\0' && n + 1 < sizeof(line); p++) {
		if (*p == '\n') {
			while (p[1] == ' ' || p[1] == '\t')
				p++;
			line[n++] = ' ';
		} else {
			line[n++] = *p;
		}
	}
	line[n] = '\0';
	return cli_usage(c, "no task id given; usage: %s", line);
}

int cli_exit_for(int code)
{
	if (code == 0)
		return CLI_OK;
	return code == TQ_EINVAL || code == TQ_ENOTFOUND ? CLI_USAGE : CLI_RUNTIME;
}

int cli_fail(const struct cli_ctx *c, const struct tq_err *err)
{
	int code = err->code != 0 ? err->code : TQ_EIO;

	/* the store's message already names the object */
	if (err->msg[0] != '\0')
		cli_runtime(c, "%s", err->msg);
	else
		cli_runtime(c, "%s", tq_err_name(code));
	return cli_exit_for(code);
}

static int open_queue(const struct cli_ctx *c, unsigned flags, int missing_ok,
		      int64_t retry_ms, struct tq_queue **q)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_retry r;
	int rc;

	*q = NULL;
	if ((rc = tq_home_resolve(c->home_flag, c->home, PATH_MAX, &err)) < 0)
		return cli_fail(c, &err);
	tq_ops_retry_start(&r, retry_ms);
	rc = tq_ops_open(c->home, flags, &r, q, &err);
	if (rc == TQ_ENOTFOUND && (flags & TQ_OPEN_NOCREATE) && missing_ok)
		return CLI_OK;
	/* Not an empty queue: most often a typo in the path (an empty table
	 * would hide it). Say where we looked and what chose that place. */
	if (rc == TQ_ENOTFOUND && (flags & TQ_OPEN_NOCREATE))
		return cli_usage(c, "%s (state directory from %s); check the path "
				 "(a submit creates it)", err.msg,
				 tq_home_source(c->home_flag));
	if (rc < 0) {
		/* a refused database is never the user's typo: exit 1 */
		cli_fail(c, &err);
		return CLI_RUNTIME;
	}
	if (tq_queue_notice(*q) != NULL)
		cli_note(c, "%s", tq_queue_notice(*q));
	return CLI_OK;
}

int cli_open(const struct cli_ctx *c, unsigned flags, struct tq_queue **q)
{
	return open_queue(c, flags, 0, 0, q);
}

int cli_open_retry(const struct cli_ctx *c, unsigned flags, int64_t retry_ms,
		   struct tq_queue **q)
{
	return open_queue(c, flags, 0, retry_ms, q);
}

int cli_open_if_exists(const struct cli_ctx *c, unsigned flags, struct tq_queue **q)
{
	return open_queue(c, flags | TQ_OPEN_NOCREATE, 1, 0, q);
}

int cli_retry_ms(const struct cli_ctx *c, int64_t *ms)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_ops_retry_ms(getenv(TQ_OPS_RETRY_VAR), ms, &err) < 0)
		return cli_usage(c, "%s", err.msg);
	return CLI_OK;
}

int cli_parse_id(const struct cli_ctx *c, const char *s, int64_t *id)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_parse_id(s, id, &err) < 0)
		return cli_usage(c, "%s", err.msg);
	return CLI_OK;
}

int cli_finish_stdout(const struct cli_ctx *c)
{
	errno = 0;
	/* a failed earlier printf left ferror set; fflush retries what is
	 * buffered and says why (ENOSPC, EIO) */
	if (fflush(stdout) != 0 || ferror(stdout))
		return cli_runtime(c, "write to stdout: %s",
				   errno != 0 ? strerror(errno) : "write error");
	return CLI_OK;
}

/* ------------------------------------------------------------------ */
/* Global options and dispatch                                        */

enum { OPT_HOME = 256, OPT_VERSION, OPT_DB, OPT_NODE };

static const struct cli_opt global_opts[] = {
	{ "home", OPT_HOME, 1, 0 },
	{ "db", OPT_DB, 1, 0 },
	{ "node", OPT_NODE, 1, 0 },
	{ "version", OPT_VERSION, 0, 0 },
	{ NULL, 0, 0, 0 },
};

/* The most of a config file read for its "database". */
#define TQ_CONFIG_DB_MAX (1024 * 1024)

/* --db and --node, kept until the command is known (select_store). */
static const char *db_flag, *node_flag;

/* Parse the options before the command; *cmd_at is the command's index. */
static int parse_global(struct cli_ctx *c, int argc, char **argv, int *cmd_at)
{
	struct cli_args a;
	int k;

	cli_args_init(&a, argc, argv, 1);
	while ((k = cli_next(c, &a, global_opts)) != CLI_OPT_END) {
		switch (k) {
		case OPT_HOME:
			if (*a.val == '\0')
				return cli_usage(c, "--home: empty directory name");
			c->home_flag = a.val;
			break;
		case OPT_DB:
			db_flag = a.val;
			break;
		case OPT_NODE:
			node_flag = a.val;
			break;
		case OPT_VERSION:
			*cmd_at = -1;
			return cli_cmd_version.run(c, 0, NULL);
		case CLI_OPT_HELP:
			*cmd_at = -1;
			return cli_cmd_help.run(c, 0, NULL);
		case CLI_OPT_ARG:
			*cmd_at = a.i - 1;
			return CLI_OK;
		default:
			return CLI_USAGE;
		}
	}
	return cli_usage(c, "no command given; see 'taskq help'");
}

/* The config file's "database", as $TASKQ_DB when that is not set; a
 * config without one (or no config file) changes nothing. */
static int config_database(struct cli_ctx *c)
{
	struct tq_err err = TQ_ERR_INIT;
	char file[PATH_MAX], *text = NULL;
	cJSON *doc = NULL, *db;
	int must_exist = 0, rc;
	size_t len = 0;

	if ((rc = tq_config_path(file, sizeof(file), &must_exist, &err)) != 0)
		return rc < 0 ? cli_usage(c, "%s", err.msg) : CLI_OK;
	/* a config named but missing is for the command that reads it to say */
	if (tq_config_read(file, 0, TQ_CONFIG_DB_MAX, &text, &len, &err) < 0 || text == NULL)
		return CLI_OK;
	rc = CLI_OK;
	if (tq_config_parse(file, text, len, &doc, &err) < 0)
		rc = cli_usage(c, "%s", err.msg);
	else if ((db = cJSON_GetObjectItemCaseSensitive(doc, "database")) != NULL &&
		 !cJSON_IsNull(db)) {
		if (!cJSON_IsString(db) || !tq_queue_is_database(db->valuestring))
			rc = cli_usage(c, "%s: \"database\": expected a postgresql:// URL", file);
		else if (setenv(TQ_DB_VAR, db->valuestring, 1) < 0)
			rc = cli_runtime(c, "setenv: %s", strerror(errno));
	}
	cJSON_Delete(doc);
	free(text);
	return rc;
}

/*
 * Where the store is, for this process and every one it starts (serve's
 * supervisor and workers inherit the environment): --db URL, else
 * $TASKQ_DB, else the config file's "database", else the state
 * directory's SQLite file. And --node NAME, as $TASKQ_NODE. A value is
 * never echoed: a URL may hold a password.
 */
static int select_store(struct cli_ctx *c)
{
	struct tq_err err = TQ_ERR_INIT;
	char node[TQ_NODE_MAX + 1];
	const char *db;

	if (node_flag != NULL) {
		if (setenv(TQ_NODE_VAR, node_flag, 1) < 0)
			return cli_runtime(c, "setenv: %s", strerror(errno));
		if (tq_node_self(node, sizeof(node), &err) < 0)
			return cli_usage(c, "--node: %s", err.msg);
	}
	if (db_flag != NULL) {
		if (!tq_queue_is_database(db_flag))
			return cli_usage(c, "--db: expected a postgresql:// URL (or libpq's "
					 "\"host=... dbname=...\"); the SQLite store is the state "
					 "directory's (--home)");
		if (setenv(TQ_DB_VAR, db_flag, 1) < 0)
			return cli_runtime(c, "setenv: %s", strerror(errno));
		return CLI_OK;
	}
	if ((db = getenv(TQ_DB_VAR)) != NULL && db[0] != '\0') {
		if (!tq_queue_is_database(db))
			return cli_usage(c, "%s: expected a postgresql:// URL", TQ_DB_VAR);
		return CLI_OK;
	}
	return config_database(c);
}

extern char **environ;

int main(int argc, char **argv)
{
	static char home[PATH_MAX];
	struct cli_ctx c = { NULL, NULL, home };
	const struct cli_cmd *cmd;
	int at = 0, rc, out;

	/* before anything opens a file: fds 0-2 must be taken, or the
	 * database could become fd 1 and a printf would write into it */
	if (tq_sanitize_stdfds() < 0)
		return CLI_RUNTIME;
	rc = parse_global(&c, argc, argv, &at);
	if (rc == CLI_OK && at > 0) {
		cmd = cli_find_cmd(argv[at]);
		if (cmd == NULL)
			return cli_usage(&c, "unknown command \"%s\"; see 'taskq help'",
					 argv[at]);
		c.cmd = cmd;
		/* A command reads the config file once, whoever asks (main for
		 * "database", the scrub for "scrub_env"); the long-running
		 * processes read it again to see an edit. */
		if (cmd != &cli_cmd_serve && cmd != &cli_cmd_drain && cmd != &cli_cmd_worker)
			tq_config_keep();
		if (cmd != &cli_cmd_help && cmd != &cli_cmd_version &&
		    (rc = select_store(&c)) != CLI_OK)
			return rc;
		/* Long-running processes retitle themselves ("taskq: worker 2:
		 * task 41 claude"); libbsd needs the original argv for that. Only
		 * they pay for it, after which argv's memory is theirs to reuse
		 * (every value they keep is copied while parsing). The title
		 * gets argv's memory only, never the environment's: that must
		 * stay where the kernel shows it, in /proc/PID/environ, since
		 * processes are found by the marks it holds (a worker's
		 * TASKQ_WORKER_PROC, proc/proc.h; the marks a test run or a
		 * user's tooling gives the supervisor). Given environ, libbsd
		 * would move it and write the title over it; with libbsd
		 * shared its constructor's earlier init hid that, and with
		 * libbsd linked static (9730893) a supervisor's environment
		 * read back as its title. */
		if (cmd == &cli_cmd_serve || cmd == &cli_cmd_drain ||
		    cmd == &cli_cmd_worker)
			setproctitle_init(argc, argv, (char *[]){ NULL });
		rc = cmd->run(&c, argc - at, argv + at);
	}
	out = cli_finish_stdout(&c);
	return rc != CLI_OK ? rc : out;
}

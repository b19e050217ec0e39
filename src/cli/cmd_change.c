/*
 * cmd_change.c - the commands that change tasks directly in the store:
 * `taskq cancel ID...` (a task that has not started) and `taskq remove
 * ID...` (a task that is not running, with its log).
 *
 * Every id is parsed before any is touched, so a typo in the third id
 * changes nothing. Then each id is handled on its own: what was done goes to
 * stdout ("canceled 5"), what failed to stderr, one line each, and the exit
 * code is the worst of them (2 for an unknown id over 1 for a wrong state).
 * Stopping a running task is `kill`'s job (a worker owns the process);
 * these commands never signal anything.
 */
#include "cli.h"
#include "queue/logstore.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct cli_opt no_opts[] = { { NULL, 0, 0, 0 } };

/* Parse every argument as an id into *ids (malloc'd). -1: --help shown. */
static int parse_ids(const struct cli_ctx *c, int argc, char **argv,
		     int64_t **ids, size_t *n)
{
	struct cli_args a;
	int k, rc = CLI_OK;

	*ids = calloc((size_t)argc, sizeof(**ids));
	*n = 0;
	if (*ids == NULL)
		return cli_runtime(c, "out of memory");
	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, no_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(c->cmd, stdout), -1;
		if (k != CLI_OPT_ARG)
			return CLI_USAGE;
		rc = cli_parse_id(c, a.val, &(*ids)[(*n)++]);
	}
	if (rc == CLI_OK && *n == 0)
		rc = cli_usage(c, "no task id given; usage: %s", c->cmd->synopsis);
	return rc;
}

/* The worse of two exit codes: usage (2) over runtime (1) over ok. */
static int worst(int a, int b)
{
	return a > b ? a : b;
}

static int cancel_one(const struct cli_ctx *c, struct tq_queue *q, int64_t id)
{
	struct tq_err err = TQ_ERR_INIT;
	enum tq_state was = TQ_QUEUED;
	int rc = tq_queue_cancel(q, id, "canceled with taskq cancel", &was, &err);

	if (rc == TQ_ESTATE && was == TQ_CANCELED) {
		/* the state asked for already holds: not an error for scripts */
		printf("%lld already canceled\n", (long long)id);
		return CLI_OK;
	}
	if (rc < 0)
		return cli_fail(c, &err);
	printf("%lld canceled\n", (long long)id);
	return CLI_OK;
}

/* Remove the row, then the log and its index: the other order would lose
 * the log of a task whose removal then failed; a log left behind is only
 * disk space. */
static int remove_one(const struct cli_ctx *c, struct tq_queue *q, int64_t id)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_remove(q, id, &err) < 0)
		return cli_fail(c, &err);
	if (tq_log_remove(q, id, &err) < 0)
		return cli_runtime(c, "task %lld removed, but not its log: %s",
				   (long long)id, err.msg);
	printf("%lld removed\n", (long long)id);
	return CLI_OK;
}

static int run_each(struct cli_ctx *c, int argc, char **argv,
		    int (*one)(const struct cli_ctx *, struct tq_queue *, int64_t))
{
	struct tq_queue *q = NULL;
	int64_t *ids = NULL;
	size_t n = 0;
	int rc = parse_ids(c, argc, argv, &ids, &n);

	if (rc == CLI_OK)
		rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q);
	/* no database yet (q NULL): every id is unknown */
	for (size_t i = 0, go = rc == CLI_OK; go && i < n; i++)
		rc = worst(rc, q != NULL ? one(c, q, ids[i])
				  : cli_usage(c, "task %lld: no such task", (long long)ids[i]));
	tq_queue_close(q);
	free(ids);
	return rc < 0 ? CLI_OK : rc;
}

static int run_cancel(struct cli_ctx *c, int argc, char **argv)
{
	return run_each(c, argc, argv, cancel_one);
}

static int run_remove(struct cli_ctx *c, int argc, char **argv)
{
	return run_each(c, argc, argv, remove_one);
}

const struct cli_cmd cli_cmd_cancel = {
	.name = "cancel",
	.synopsis = "taskq cancel ID...",
	.summary = "Cancel tasks that have not started yet.",
	.help = "A queued, scheduled or blocked task becomes canceled and never runs;\n"
		"tasks waiting for it to succeed are canceled too. A task that already\n"
		"runs is not touched (an error, exit 1); canceling a canceled task is\n"
		"not an error. Prints \"ID canceled\" for each.\n",
	.run = run_cancel,
};

const struct cli_cmd cli_cmd_remove = {
	.name = "remove",
	.alias = "rm",
	.synopsis = "taskq remove ID...",
	.summary = "Delete tasks that are not running, with their attempts and logs.",
	.help = "The task's row, attempts, labels and log file are deleted; its id is\n"
		"never reused. A task that has not started counts as canceled for the\n"
		"tasks waiting on it. A running task is not touched (an error, exit 1).\n"
		"Prints \"ID removed\" for each.\n",
	.run = run_remove,
};

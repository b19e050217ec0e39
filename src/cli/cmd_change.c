/*
 * cmd_change.c - the commands that change tasks directly in the store:
 * `taskq cancel ID...` (a task that has not started) and `taskq remove
 * ID...` (any task, with its log).
 *
 * Every id is parsed before any is touched, so a typo in the third id
 * changes nothing. Then each id is handled on its own: what was done goes to
 * stdout ("canceled 5"), what failed to stderr, one line each, and the exit
 * code is the worst of them (2 for an unknown id over 1 for a wrong state).
 *
 * Removing is ops/remove.h: a running task is killed through its worker, as
 * `taskq kill` does (the CLI never signals a task itself), and waited for,
 * with a deadline, until the worker records its end; only then is the row
 * deleted. A running task whose worker is not alive is refused at once: it
 * is recovered when its lease expires, and can be removed then.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sys.h"
#include "ops/remove.h"


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
		rc = cli_usage_no_id(c);
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

/* A task whose process has ended, its end kept in an end record until the
 * store takes it (worker/endrec.h): its row cannot go before its end is
 * written, and waiting for that would only run into the deadline. */
static int ended_unrecorded(const struct cli_ctx *c, int64_t id, const char *how)
{
	return cli_runtime(c, "task %lld has ended (%s); its end is being recorded: not "
			   "removed yet, run taskq remove again once it is", (long long)id,
			   how);
}

/* Remove task id (ops/remove.h: a running task is killed through its
 * worker first, and waited for), saying what happened. */
static int remove_one(const struct cli_ctx *c, struct tq_queue *q, int64_t id)
{
	struct tq_err err = TQ_ERR_INIT;
	char how[TQ_OPS_HOW_MAX];

	switch (tq_ops_remove(q, c->home, id, how, &err)) {
	case TQ_OPS_REMOVED:
		printf("%lld removed\n", (long long)id);
		return CLI_OK;
	case TQ_OPS_REMOVE_RECORDING: return ended_unrecorded(c, id, how);
	case TQ_OPS_REMOVE_NO_WORKER:
		return cli_runtime(c, "task %lld is running, but its worker is not alive; it "
				   "is recovered when its lease expires: remove it then",
				   (long long)id);
	case TQ_OPS_REMOVE_STILL_RUNNING:
		return cli_runtime(c, "task %lld: killed, but its worker has not recorded "
				   "its end yet; not removed", (long long)id);
	case TQ_OPS_REMOVE_LOG_LEFT:
		return cli_runtime(c, "task %lld removed, but not its log: %s",
				   (long long)id, err.msg);
	default: return cli_fail(c, &err);
	}
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
	for (size_t i = 0, go = rc == CLI_OK; go && i < n; i++)
		rc = worst(rc, one(c, q, ids[i]));
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
	.summary = "Delete tasks, with their attempts and logs; kill running ones first.",
	.help = "The task's row, attempts, labels and log file are deleted; its id is\n"
		"never reused. A task that has not started counts as canceled for the\n"
		"tasks waiting on it. A running task is killed first, as taskq kill does\n"
		"(TERM to its process group, KILL after its --kill-grace): remove waits\n"
		"for its worker to record the end (at most the kill grace + 15s), then\n"
		"deletes it. A running task whose worker is dead is refused (exit 1)\n"
		"until it is recovered. A task whose process has ended but whose end\n"
		"could not be written yet (a locked database, a full disk: its end waits\n"
		"in HOME/ends/) is refused at once, exit 1: remove it once its end is\n"
		"recorded. Prints \"ID removed\" for each.\n",
	.run = run_remove,
};

/*
 * cmd_retry.c - acting on failures: `taskq retry` (run finished tasks
 * again, as new attempts of the same ids) and `taskq pause` / `taskq
 * resume` (hold a group's queued tasks, or lift a pause, including one a
 * rate limit set).
 */
#include "cli.h"
#include "ops/change.h"

#include <string.h>

enum { O_FAILED = 256, O_BATCH };

static int retry_ids(struct cli_ctx *c, struct tq_queue *q, char **ids, int n)
{
	struct tq_err err = TQ_ERR_INIT;
	int worst = CLI_OK;

	for (int i = 0; i < n; i++) {
		int64_t id;
		int rc = cli_parse_id(c, ids[i], &id);
		if (rc == CLI_OK && tq_ops_retry(q, c->home, id, &err) < 0)
			rc = cli_fail(c, &err);
		if (rc == CLI_OK)
			printf("%lld queued again\n", (long long)id);
		worst = rc > worst ? rc : worst;
	}
	return worst;
}

static int run_retry(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "failed", O_FAILED, 0, 0 }, { "batch", O_BATCH, 1, 0 }, { NULL, 0, 0, 0 },
	};
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	const char *batch = NULL;
	char **ids = argv + 1;
	struct cli_args a;
	int k, failed = 0, n = 0, rc;
	int64_t count = 0;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_FAILED: failed = 1; break;
		case O_BATCH:
			if (cli_check_text(c, "--batch", a.val) != CLI_OK)
				return CLI_USAGE;
			batch = a.val;
			break;
		/* ids are collected in place at the front of argv: the n-th
		 * positional argument is stored at argv[1 + n], a slot the parser
		 * has already passed */
		case CLI_OPT_ARG: ids[n++] = (char *)a.val; break;
		default: return CLI_USAGE;
		}
	}
	if (failed == (n > 0))
		return cli_usage(c, "give task ids, or --failed; usage: %s", c->cmd->synopsis);
	if (batch != NULL && !failed)
		return cli_usage(c, "--batch goes with --failed");
	if ((rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (failed) {
		if (tq_ops_retry_failed(q, c->home, batch, &count, &err) < 0)
			rc = cli_fail(c, &err);
		else
			printf("%lld task%s queued again\n", (long long)count,
			       count == 1 ? "" : "s");
	} else {
		rc = retry_ids(c, q, ids, n);
	}
	tq_queue_close(q);
	return rc;
}

static int run_group_change(struct cli_ctx *c, int argc, char **argv,
			    int (*change)(struct tq_queue *, const char *, const char *,
					  struct tq_err *),
			    const char *done)
{
	static const struct cli_opt opts[] = { { NULL, 0, 0, 0 } };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	const char *name = NULL;
	struct cli_args a;
	int k, rc;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(c->cmd, stdout);
		if (k != CLI_OPT_ARG || name != NULL)
			return k == CLI_OPT_ARG ? cli_usage(c, "one group at a time") : CLI_USAGE;
		name = a.val;
	}
	if (name == NULL)
		return cli_usage(c, "no group given; usage: %s", c->cmd->synopsis);
	if ((rc = cli_check_text(c, "group", name)) != CLI_OK)
		return rc;
	if ((rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (change(q, c->home, name, &err) < 0)
		rc = cli_fail(c, &err);
	else
		printf("group %s %s\n", name, done);
	tq_queue_close(q);
	return rc;
}

static int run_pause(struct cli_ctx *c, int argc, char **argv)
{
	return run_group_change(c, argc, argv, tq_ops_group_pause, "paused");
}

static int run_resume(struct cli_ctx *c, int argc, char **argv)
{
	return run_group_change(c, argc, argv, tq_ops_group_resume, "resumed");
}

const struct cli_cmd cli_cmd_retry = {
	.name = "retry",
	.synopsis = "taskq retry ID... | taskq retry --failed [--batch NAME]",
	.summary = "Run finished tasks again, as new attempts.",
	.help =
	"Queues finished tasks again, under the same ids; their earlier attempts stay\n"
	"in `taskq show` and no longer count against --retries (a fresh budget).\n"
	"Tasks canceled because a dependency failed stay canceled.\n"
	"\n"
	"      --failed        every task that failed or timed out\n"
	"      --batch NAME    with --failed: only that batch's\n",
	.run = run_retry,
};

const struct cli_cmd cli_cmd_pause = {
	.name = "pause",
	.synopsis = "taskq pause GROUP",
	.summary = "Hold a group's queued tasks (running ones go on).",
	.help = "The group's queued tasks wait until taskq resume GROUP.\n",
	.run = run_pause,
};

const struct cli_cmd cli_cmd_resume = {
	.name = "resume",
	.synopsis = "taskq resume GROUP",
	.summary = "Lift a group's pause, by hand or from a rate limit.",
	.help =
	"A rate limit pauses the task's group until the time the provider asked for;\n"
	"taskq status shows paused groups and until when. resume lifts both kinds\n"
	"of pause at once.\n",
	.run = run_resume,
};

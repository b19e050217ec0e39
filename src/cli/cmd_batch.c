/*
 * cmd_batch.c - batches, group settings and clearing:
 *
 *     taskq batch list [--json]          every batch, with counts and cost
 *     taskq batch show NAME [--json]     one batch and the tasks that failed
 *     taskq group set NAME --parallel N  a group's parallelism (0: unlimited)
 *     taskq group list [--json]          every group, its limit and pause
 *     taskq clear [--finished] [--older-than DUR] [ID...]
 *
 * Reads go through tq_queue_batches / tq_queue_batch_get (the tasks_batch
 * index, never the whole queue) and never create the state directory.
 * `clear` deletes finished tasks in bounded transactions
 * (tq_queue_clear_finished), so a clear of a million tasks never holds the
 * write lock for long and workers go on claiming in between.
 */
#include "cli.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/sys.h"
#include "ops/change.h"
#include "queue/logstore.h"

#define CLEAR_CHUNK 1000 /* tasks removed per transaction */

enum { O_JSON = 256, O_PARALLEL, O_FINISHED, O_OLDER };

static const struct cli_opt json_opts[] = { { "json", O_JSON, 0, 0 }, { NULL, 0, 0, 0 } };

/* A subcommand's arguments: the name (when wanted) and --json. -1: help
 * shown. */
static int parse_read(const struct cli_ctx *c, int argc, char **argv, const char **name,
		      int *json)
{
	struct cli_args a;
	int k;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, json_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(c->cmd, stdout), -1;
		if (k == O_JSON) {
			*json = 1;
		} else if (k == CLI_OPT_ARG && name != NULL && *name == NULL) {
			*name = a.val;
		} else if (k == CLI_OPT_ARG) {
			return cli_usage(c, "unexpected argument \"%s\"", a.val);
		} else {
			return CLI_USAGE;
		}
	}
	if (name != NULL && *name == NULL)
		return cli_usage(c, "no name given; usage: %s", c->cmd->synopsis);
	return CLI_OK;
}

static int print_json_out(const struct cli_ctx *c, cJSON *o, int oom)
{
	if (!oom && o != NULL && cli_json_print(o, stdout) == 0) {
		cJSON_Delete(o);
		return CLI_OK;
	}
	cJSON_Delete(o);
	return cli_runtime(c, "out of memory");
}

static void add_item(cJSON *arr, cJSON *x, int *oom)
{
	if (x == NULL || arr == NULL || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		*oom = 1;
	}
}

static cJSON *add_object(cJSON *o, const char *key, int *oom)
{
	cJSON *x = o ? cJSON_AddObjectToObject(o, key) : NULL;

	if (x == NULL)
		*oom = 1;
	return x;
}

/* ------------------------------------------------------------------ */
/* batch list / show                                                  */

/* How long the batch has run: its first start to its last end, or to now
 * while tasks are open. 0 when none has started. */
static int64_t batch_elapsed(const struct tq_batch *b, int64_t now)
{
	int64_t end = tq_batch_done(b) ? b->last_finished : now;

	return b->first_started > 0 && end > b->first_started ? end - b->first_started : 0;
}

static void format_cost(const struct tq_batch *b, char *buf, size_t n)
{
	if (b->has_cost)
		snprintf(buf, n, "$%.4f", b->cost_usd);
	else
		snprintf(buf, n, "-");
}

static cJSON *batch_json(const struct tq_batch *b, int64_t now, int *oom)
{
	cJSON *o = cJSON_CreateObject(), *cnt;

	if (o == NULL) {
		*oom = 1;
		return NULL;
	}
	cli_json_bytes(o, "name", b->name, oom);
	cli_json_int(o, "total", b->total, 1, oom);
	cnt = add_object(o, "counts", oom);
	for (int s = 0; cnt != NULL && s < TQ_STATE_COUNT; s++)
		cli_json_int(cnt, tq_state_name((enum tq_state)s), b->counts[s], 1, oom);
	cli_json_bool(o, "done", tq_batch_done(b), oom);
	cli_json_int(o, "first_created", b->first_created, 1, oom);
	cli_json_int(o, "last_created", b->last_created, 1, oom);
	cli_json_int(o, "first_started", b->first_started, b->first_started > 0, oom);
	cli_json_int(o, "last_finished", b->last_finished, b->last_finished > 0, oom);
	cli_json_int(o, "elapsed_ms", batch_elapsed(b, now), b->first_started > 0, oom);
	if (b->has_cost) {
		if (!cJSON_AddNumberToObject(o, "cost_usd", b->cost_usd))
			*oom = 1;
	} else {
		cli_json_int(o, "cost_usd", 0, 0, oom);
	}
	return o;
}

static int64_t sum(const int64_t *counts, int a, int b)
{
	int64_t n = 0;

	for (int s = a; s <= b; s++)
		n += counts[s];
	return n;
}

static int batch_row(struct cli_table *tb, const struct tq_batch *b)
{
	char num[5][24], first[32], last[32], cost[32];
	const int64_t v[5] = {
		b->total, sum(b->counts, TQ_QUEUED, TQ_BLOCKED), b->counts[TQ_RUNNING],
		b->counts[TQ_SUCCEEDED], sum(b->counts, TQ_FAILED, TQ_CANCELED),
	};
	int rc = cli_table_add(tb, b->name, NULL);

	for (int i = 0; rc == 0 && i < 5; i++) {
		snprintf(num[i], sizeof(num[i]), "%lld", (long long)v[i]);
		rc = cli_table_add(tb, num[i], NULL);
	}
	tq_format_time(b->first_created, first, sizeof(first));
	tq_format_time(b->last_created, last, sizeof(last));
	format_cost(b, cost, sizeof(cost));
	if (rc == 0)
		rc = cli_table_add(tb, first, NULL);
	if (rc == 0)
		rc = cli_table_add(tb, last, NULL);
	return rc == 0 ? cli_table_add(tb, cost, NULL) : rc;
}

static int batch_list(const struct cli_ctx *c, int argc, char **argv)
{
	static const char *const heads[] = {
		"BATCH", "TASKS", "WAITING", "RUNNING", "SUCCEEDED", "FAILED",
		"FIRST", "LAST", "COST",
	};
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_batch *bs = NULL;
	size_t n = 0;
	int json = 0, rc = parse_read(c, argc, argv, NULL, &json);

	if (rc != CLI_OK)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_batches(q, &bs, &n, &err) < 0) {
		rc = cli_fail(c, &err);
		goto out;
	}
	cli_output_init();
	if (json) {
		cJSON *arr = cJSON_CreateArray();
		int oom = arr == NULL;
		int64_t now = tq_now_ms();
		for (size_t i = 0; !oom && i < n; i++)
			add_item(arr, batch_json(&bs[i], now, &oom), &oom);
		rc = print_json_out(c, arr, oom);
	} else {
		struct cli_table tb;
		int r = 0;
		cli_table_init(&tb, 9, heads, 0x3eu);
		for (size_t i = 0; r == 0 && i < n; i++)
			r = batch_row(&tb, &bs[i]);
		if (r == 0)
			cli_table_print(&tb, stdout);
		cli_table_release(&tb);
		if (r < 0)
			rc = cli_runtime(c, "out of memory");
	}
out:
	tq_batch_list_free(bs, n);
	tq_queue_close(q);
	return rc;
}

/* The tasks of batch name that ended without succeeding, newest first. */
static int batch_failures(const struct cli_ctx *c, struct tq_queue *q, const char *name,
			  struct tq_task **ts, size_t *n)
{
	struct tq_filter f = TQ_FILTER_INIT;
	struct tq_err err = TQ_ERR_INIT;

	f.batch = name;
	f.limit = -1;
	f.states = 1u << TQ_FAILED | 1u << TQ_TIMED_OUT | 1u << TQ_KILLED | 1u << TQ_CANCELED;
	if (tq_queue_list(q, &f, ts, n, &err) < 0)
		return cli_fail(c, &err);
	return CLI_OK;
}


static void print_counts_line(const struct tq_batch *b)
{
	int first = 1;

	printf("%-11s %lld", "tasks:", (long long)b->total);
	for (int s = 0; s < TQ_STATE_COUNT; s++) {
		if (b->counts[s] == 0)
			continue;
		printf("%s %lld %s", first ? ":" : ",", (long long)b->counts[s],
		       tq_state_name((enum tq_state)s));
		first = 0;
	}
	printf("\n");
}

static int failures_table(const struct tq_task *ts, size_t n)
{
	static const char *const heads[] = {
		"ID", "STATE", "NAME", "EXIT", "OUTCOME", "CATEGORY", "REASON",
	};
	struct cli_table tb;
	int rc = 0;

	cli_table_init(&tb, 7, heads, 1u << 0 | 1u << 3);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct tq_task *t = &ts[i];
		char id[24], ex[16] = "-";
		int st = cli_task_status(t);
		const char *cells[7] = {
			id, tq_state_name(t->state), t->name, ex,
			t->outcome != TQ_OUT_NONE ? tq_outcome_name(t->outcome) : "-",
			t->category != TQ_CAT_NONE ? tq_category_name(t->category) : "-",
			t->reason ? t->reason : "-",
		};
		snprintf(id, sizeof(id), "%lld", (long long)t->id);
		if (st >= 0)
			snprintf(ex, sizeof(ex), "%d", st);
		for (size_t j = 0; rc == 0 && j < 7; j++)
			rc = cli_table_add(&tb, cells[j], j == 1 ? cli_state_sgr(t->state) : NULL);
	}
	if (rc == 0)
		cli_table_print(&tb, stdout);
	cli_table_release(&tb);
	return rc;
}

static int show_human(const struct tq_batch *b, const struct tq_task *ts, size_t n)
{
	int64_t now = tq_now_ms();
	char t1[32], t2[32], buf[64];
	char *name = cli_esc(b->name, 0, NULL);

	if (name == NULL)
		return -1;
	printf("%-11s %s\n", "batch:", name);
	free(name);
	printf("%-11s %s\n", "status:", tq_batch_done(b) ? "done" : "open");
	print_counts_line(b);
	tq_format_time(b->first_created, t1, sizeof(t1));
	tq_format_time(b->last_created, t2, sizeof(t2));
	printf("%-11s %s .. %s\n", "submitted:", t1, t2);
	tq_format_time(b->first_started, t1, sizeof(t1));
	printf("%-11s %s\n", "started:", t1);
	tq_format_time(tq_batch_done(b) ? b->last_finished : 0, t2, sizeof(t2));
	printf("%-11s %s\n", "finished:", t2);
	if (b->first_started > 0)
		tq_format_duration(batch_elapsed(b, now), buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "-");
	printf("%-11s %s\n", "elapsed:", buf);
	format_cost(b, buf, sizeof(buf));
	printf("%-11s %s\n", "cost:", buf);
	printf("%-11s %zu\n", "failures:", n);
	return n > 0 ? failures_table(ts, n) : 0;
}

static int batch_show(const struct cli_ctx *c, int argc, char **argv)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_batch b = { 0 };
	struct tq_task *ts = NULL;
	const char *name = NULL;
	size_t n = 0;
	int json = 0, rc = parse_read(c, argc, argv, &name, &json);

	if (rc != CLI_OK)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_check_text(c, "batch", name)) != CLI_OK ||
	    (rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_batch_get(q, name, &b, &err) < 0) {
		rc = cli_fail(c, &err);
		goto out;
	}
	if ((rc = batch_failures(c, q, name, &ts, &n)) != CLI_OK)
		goto out;
	cli_output_init();
	if (json) {
		int oom = 0;
		cJSON *o = batch_json(&b, tq_now_ms(), &oom), *arr = NULL;
		if (o != NULL && (arr = cJSON_AddArrayToObject(o, "failures")) == NULL)
			oom = 1;
		for (size_t i = 0; !oom && i < n; i++)
			add_item(arr, cli_task_summary_json(&ts[i], &oom), &oom);
		rc = print_json_out(c, o, oom);
	} else if (show_human(&b, ts, n) < 0) {
		rc = cli_runtime(c, "out of memory");
	}
out:
	tq_task_list_free(ts, n);
	tq_batch_release(&b);
	tq_queue_close(q);
	return rc;
}

static int run_batch(struct cli_ctx *c, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		if (argc >= 2)
			return cli_print_help(c->cmd, stdout);
		return cli_usage(c, "expected list or show; usage: %s", c->cmd->synopsis);
	}
	if (strcmp(argv[1], "list") == 0 || strcmp(argv[1], "ls") == 0)
		return batch_list(c, argc - 1, argv + 1);
	if (strcmp(argv[1], "show") == 0)
		return batch_show(c, argc - 1, argv + 1);
	return cli_usage(c, "\"%s\": expected list or show", argv[1]);
}

const struct cli_cmd cli_cmd_batch = {
	.name = "batch",
	.synopsis = "taskq batch list [--json] | show NAME [--json]",
	.summary = "List batches, or show one with its failures.",
	.help =
	"A batch is the tasks submitted with the same --batch NAME.\n"
	"\n"
	"batch list: one row per batch, the last submitted to first: its tasks,\n"
	"how many are WAITING (queued, scheduled or blocked), RUNNING, SUCCEEDED,\n"
	"FAILED (failed, timed out, killed or canceled), its first and last\n"
	"submit, and the cost its agent tasks reported (every attempt).\n"
	"\n"
	"batch show NAME: its counts by state, when it was submitted, started and\n"
	"finished, how long it ran (first start to last end), its cost, and every\n"
	"task that did not succeed with its exit status, outcome, category and\n"
	"reason. Exit 2 if no task has the batch name.\n"
	"\n"
	"      --json          batch list: an array; batch show: one object, with\n"
	"                      counts (by state), done, times in ms since the epoch,\n"
	"                      elapsed_ms, cost_usd (null without one) and failures\n",
	.run = run_batch,
};

/* ------------------------------------------------------------------ */
/* group set / list                                                   */

static int check_group_name(const struct cli_ctx *c, const char *name)
{
	if (name[0] == '\0' || strlen(name) >= TQ_NAME_MAX)
		return cli_usage(c, "group \"%s\": expected a name of 1 to %d bytes", name,
				 TQ_NAME_MAX - 1);
	return cli_check_text(c, "group", name);
}

static int group_set(const struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "parallel", O_PARALLEL, 1, 'p' }, { NULL, 0, 0, 0 },
	};
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct cli_args a;
	const char *name = NULL;
	int64_t parallel = -1;
	int k, rc;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_PARALLEL:
			if (tq_parse_int(a.val, 0, TQ_PARALLEL_MAX, &parallel, &err) < 0)
				return cli_usage(c, "%s %s (0: unlimited)", a.flag, err.msg);
			break;
		case CLI_OPT_ARG:
			if (name != NULL)
				return cli_usage(c, "unexpected argument \"%s\"", a.val);
			name = a.val;
			break;
		default: return CLI_USAGE;
		}
	}
	if (name == NULL)
		return cli_usage(c, "no group name given; usage: %s", c->cmd->synopsis);
	if ((rc = check_group_name(c, name)) != CLI_OK)
		return rc;
	if (parallel < 0)
		return cli_usage(c, "nothing to set: give --parallel N (0: unlimited)");
	if ((rc = cli_open(c, TQ_OPEN_DURABLE, &q)) != CLI_OK)
		return rc;
	if (tq_ops_group_set_parallel(q, c->home, name, parallel, &err) < 0) {
		rc = cli_fail(c, &err);
	} else {
		char *esc = cli_esc(name, 0, NULL);
		if (parallel > 0)
			printf("group %s: parallel %lld\n", esc ? esc : name, (long long)parallel);
		else
			printf("group %s: parallel unlimited\n", esc ? esc : name);
		free(esc);
	}
	tq_queue_close(q);
	return rc;
}

static cJSON *group_json(const struct tq_group *g, int *oom)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL) {
		*oom = 1;
		return NULL;
	}
	cli_json_bytes(o, "name", g->name, oom);
	cli_json_int(o, "parallel", g->parallel, 1, oom);
	cli_json_bool(o, "paused", g->paused, oom);
	cli_json_int(o, "paused_until", g->paused_until, g->paused_until > tq_now_ms(), oom);
	/* the same end kept once it passed (paused_until is null then): a
	 * script sees when its group's last rate limit let go; a resume clears
	 * it, and only a rate limit sets it */
	cli_json_int(o, "rate_limited_until", g->paused_until, g->paused_until > 0, oom);
	cli_json_bytes(o, "pause_reason", g->pause_reason, oom);
	/* after a rate limit: one task first (probe_task), the rest after it */
	cli_json_bool(o, "probe", g->probe, oom);
	cli_json_bool(o, "probing", g->probe && g->paused_until <= tq_now_ms(), oom);
	cli_json_int(o, "probe_task", g->probe_task, g->probe_task > 0, oom);
	cli_json_int(o, "queued", g->queued, 1, oom);
	cli_json_int(o, "scheduled", g->scheduled, 1, oom);
	cli_json_int(o, "blocked", g->blocked, 1, oom);
	cli_json_int(o, "running", g->running, 1, oom);
	return o;
}

static int group_row(struct cli_table *tb, const struct tq_group *g, int64_t now)
{
	char par[24], paused[64], qd[24], sc[24], rn[24];
	int rc;

	if (g->parallel > 0)
		snprintf(par, sizeof(par), "%lld", (long long)g->parallel);
	else
		snprintf(par, sizeof(par), "unlimited");
	if (g->paused_until > now) {
		char t[32];
		tq_format_time(g->paused_until, t, sizeof(t));
		snprintf(paused, sizeof(paused), "until %s%s", t, g->probe ? ", then probe" : "");
	} else if (g->paused) {
		snprintf(paused, sizeof(paused), "yes");
	} else if (g->probe && g->probe_task > 0) {
		snprintf(paused, sizeof(paused), "probing (task %lld)", (long long)g->probe_task);
	} else if (g->probe) {
		snprintf(paused, sizeof(paused), "probing");
	} else {
		snprintf(paused, sizeof(paused), "no");
	}
	snprintf(qd, sizeof(qd), "%lld", (long long)g->queued);
	snprintf(sc, sizeof(sc), "%lld", (long long)g->scheduled);
	snprintf(rn, sizeof(rn), "%lld", (long long)g->running);
	if ((rc = cli_table_add(tb, g->name, NULL)) < 0 ||
	    (rc = cli_table_add(tb, par, NULL)) < 0 ||
	    (rc = cli_table_add(tb, paused, NULL)) < 0 ||
	    (rc = cli_table_add(tb, qd, NULL)) < 0 ||
	    (rc = cli_table_add(tb, sc, NULL)) < 0)
		return rc;
	return cli_table_add(tb, rn, NULL);
}

static int group_list(const struct cli_ctx *c, int argc, char **argv)
{
	/* SCHEDULED: waiting for a time, such as a rate limit's retry (a
	 * paused group's tasks are there, not in QUEUED) */
	static const char *const heads[] = { "GROUP", "PARALLEL", "PAUSED", "QUEUED",
					     "SCHEDULED", "RUNNING" };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_group *gs = NULL;
	size_t n = 0;
	int json = 0, rc = parse_read(c, argc, argv, NULL, &json);

	if (rc != CLI_OK)
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_groups(q, &gs, &n, &err) < 0) {
		rc = cli_fail(c, &err);
		goto out;
	}
	cli_output_init();
	if (json) {
		cJSON *arr = cJSON_CreateArray();
		int oom = arr == NULL;
		for (size_t i = 0; !oom && i < n; i++)
			add_item(arr, group_json(&gs[i], &oom), &oom);
		rc = print_json_out(c, arr, oom);
	} else {
		struct cli_table tb;
		int64_t now = tq_now_ms();
		int r = 0;
		cli_table_init(&tb, 6, heads, 1u << 3 | 1u << 4 | 1u << 5);
		for (size_t i = 0; r == 0 && i < n; i++)
			r = group_row(&tb, &gs[i], now);
		if (r == 0)
			cli_table_print(&tb, stdout);
		cli_table_release(&tb);
		if (r < 0)
			rc = cli_runtime(c, "out of memory");
	}
out:
	tq_group_list_free(gs, n);
	tq_queue_close(q);
	return rc;
}

static int run_group(struct cli_ctx *c, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		if (argc >= 2)
			return cli_print_help(c->cmd, stdout);
		return cli_usage(c, "expected set or list; usage: %s", c->cmd->synopsis);
	}
	if (strcmp(argv[1], "set") == 0)
		return group_set(c, argc - 1, argv + 1);
	if (strcmp(argv[1], "list") == 0 || strcmp(argv[1], "ls") == 0)
		return group_list(c, argc - 1, argv + 1);
	return cli_usage(c, "\"%s\": expected set or list", argv[1]);
}

const struct cli_cmd cli_cmd_group = {
	.name = "group",
	.synopsis = "taskq group set NAME --parallel N | list [--json]",
	.summary = "Limit how many tasks of a group run at once; list groups.",
	.help =
	"A task's group is --group NAME at submit (default: the program's name).\n"
	"\n"
	"group set NAME --parallel N: at most N tasks of the group run at once\n"
	"(0: no limit but the number of workers). Kept in the database; applies to\n"
	"the next claim (running tasks are not stopped when the limit drops). A\n"
	"group no task has used yet is created with the limit.\n"
	"\n"
	"group list: every group with its limit, whether it is paused (taskq pause,\n"
	"or until when after a rate limit), and its queued, scheduled (waiting for\n"
	"a time: --delay, --at, the retry after a rate limit) and running tasks\n"
	"(--json also counts the blocked ones). When a rate limit's pause lifts,\n"
	"the group is \"probing\": one task runs first and the others start once\n"
	"it ended without a rate limit (taskq help status).\n"
	"\n"
	"  -p, --parallel N    0 (unlimited) to 100000\n"
	"      --json          group list: an array of objects: name, parallel,\n"
	"                      paused, paused_until (while a rate limit's pause\n"
	"                      lasts), rate_limited_until (the end of the last\n"
	"                      one, also once passed; null after a resume),\n"
	"                      pause_reason, probe, probing, probe_task, queued,\n"
	"                      scheduled, blocked, running (times in ms since\n"
	"                      the epoch)\n",
	.run = run_group,
};

/* ------------------------------------------------------------------ */
/* clear                                                              */

static int clear_ids(const struct cli_ctx *c, struct tq_queue *q, const int64_t *ids,
		     size_t n)
{
	int rc = CLI_OK;

	for (size_t i = 0; i < n; i++) {
		struct tq_err err = TQ_ERR_INIT;
		int r = CLI_OK;
		if (tq_queue_clear_task(q, ids[i], NULL, &err) < 0)
			r = cli_fail(c, &err);
		else if (tq_log_remove(q, ids[i], &err) < 0)
			r = cli_runtime(c, "task %lld removed, but not its log: %s",
					(long long)ids[i], err.msg);
		else
			printf("%lld removed\n", (long long)ids[i]);
		rc = r > rc ? r : rc;
	}
	return rc;
}

static int clear_finished(const struct cli_ctx *c, struct tq_queue *q, int64_t before)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t total = 0, got;
	int rc = CLI_OK;

	do {
		got = 0;
		if (tq_queue_clear_finished(q, before, CLEAR_CHUNK, &got, &err) < 0) {
			/* rows may have gone even so (a log that stayed) */
			total += got;
			rc = cli_fail(c, &err);
			break;
		}
		total += got;
	} while (got == CLEAR_CHUNK);
	printf("%lld task%s removed\n", (long long)total, total == 1 ? "" : "s");
	return rc;
}

static int run_clear(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "finished", O_FINISHED, 0, 0 }, { "older-than", O_OLDER, 1, 0 },
		{ NULL, 0, 0, 0 },
	};
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct cli_args a;
	int64_t *ids = calloc((size_t)argc, sizeof(*ids)), older = -1;
	size_t n = 0;
	int k, finished = 0, rc = ids ? CLI_OK : cli_runtime(c, "out of memory");

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: free(ids); return cli_print_help(c->cmd, stdout);
		case O_FINISHED: finished = 1; break;
		case O_OLDER:
			if (tq_parse_duration(a.val, &older, &err) < 0)
				rc = cli_usage(c, "--older-than %s", err.msg);
			break;
		case CLI_OPT_ARG: rc = cli_parse_id(c, a.val, &ids[n++]); break;
		default: rc = CLI_USAGE; break;
		}
	}
	if (rc == CLI_OK && n > 0 && (finished || older >= 0))
		rc = cli_usage(c, "give task ids or --finished/--older-than, not both");
	if (rc == CLI_OK && n == 0 && !finished && older < 0)
		rc = cli_usage(c, "nothing to clear: give --finished, --older-than DUR or "
			       "task ids");
	if (rc == CLI_OK)
		rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q);
	if (rc == CLI_OK && n > 0)
		rc = clear_ids(c, q, ids, n);
	else if (rc == CLI_OK)
		rc = clear_finished(c, q, older >= 0 ? tq_now_ms() - older : INT64_MAX);
	tq_queue_close(q);
	free(ids);
	return rc;
}

const struct cli_cmd cli_cmd_clear = {
	.name = "clear",
	.synopsis = "taskq clear [--finished] [--older-than DUR] [ID...]",
	.summary = "Remove finished tasks and their logs.",
	.help =
	"Deletes finished tasks (succeeded, failed, timed out, killed, canceled)\n"
	"with their attempts, labels, poll cursors and log files; ids are never\n"
	"reused. Tasks that are queued, scheduled, blocked or running are never\n"
	"touched (taskq remove deletes those).\n"
	"\n"
	"      --finished        every finished task; prints \"N tasks removed\"\n"
	"      --older-than DUR  finished tasks that ended more than DUR ago (7d, 12h)\n"
	"  ID...                 these tasks, each only if it is finished (exit 1 for\n"
	"                        one that is not, 2 for an unknown id); prints\n"
	"                        \"ID removed\" for each\n"
	"\n"
	"The supervisor does the same on its own for tasks older than its retention\n"
	"(taskq serve --retention DUR, default 7d; taskq status shows it).\n",
	.run = run_clear,
};

/*
 * cmd_result.c - what agent tasks produced: `taskq result ID` (the final
 * result text, or every field with --json), `taskq stats` (cost, tokens,
 * runtime and outcomes summed over attempts), `taskq session show KEY` (a
 * session's tasks and the agent session the next link resumes).
 *
 * All three only read (tq_queue_attempts, tq_queue_stats,
 * tq_queue_session_show) and never create the state directory. The result
 * text is the agent's own: printed exactly when stdout is not a terminal,
 * escaped line by line (output.h) when it is. JSON field names are an
 * interface: add fields, never rename them.
 */
#include "ask.h"
#include "cli.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/sys.h"

/* "$0.0123"; "-" when no attempt reported a cost. */
static void format_cost(double usd, int has, char *buf, size_t n)
{
	if (!has)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "$%.4f", usd);
}

/* key: the cost, or null when the agent reported none (cost < 0). */
static void json_cost(cJSON *o, const char *key, double usd, int has, int *oom)
{
	cJSON *v = has ? cJSON_CreateNumber(usd) : cJSON_CreateNull();

	if (v == NULL || !cJSON_AddItemToObject(o, key, v)) {
		cJSON_Delete(v);
		*oom = 1;
	}
}

/* ------------------------------------------------------------------ */
/* result                                                             */

static const char result_help[] =
	"The result text of the task's last attempt that has an agent result:\n"
	"the final answer an agent CLI printed in its stream-json or json output\n"
	"(Claude Code, Gemini CLI, Codex, OpenCode), or its error text when the\n"
	"result is an error. The task's full output stays in `taskq log ID`.\n"
	"\n"
	"The text is printed exactly (with a newline added when it has none at\n"
	"its end) unless stdout is a terminal, where control characters are\n"
	"escaped line by line.\n"
	"\n"
	"Options:\n"
	"  --json   one object: id, attempt, state, result, is_error, subtype,\n"
	"           agent_session, model, cost_usd (null when the agent reports\n"
	"           none), duration_ms (null likewise: codex, opencode), num_turns,\n"
	"           input_tokens, output_tokens, cache_read_tokens,\n"
	"           cache_creation_tokens; model is the one the task asked for\n"
	"           (--model, -m) when the agent names none\n"
	"\n"
	"Exit status: 0 when a result was printed; 1 when the task has no result\n"
	"(yet: it has not run or is running; or its output had none: a plain\n"
	"command, text output, a crash before the result); 2 for an unknown id.\n";

enum { OPT_RESULT_JSON = 256 };

static const struct cli_opt result_opts[] = {
	{ "json", OPT_RESULT_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

/* The text for a person at a terminal: each line escaped. */
static int print_escaped(const char *text)
{
	const char *p = text;

	cli_output_init();
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, n), *e = line ? cli_esc(line, 0, NULL) : NULL;

		free(line);
		if (e == NULL)
			return TQ_ENOMEM;
		printf("%s\n", e);
		free(e);
		p += n + (nl != NULL);
	}
	return 0;
}

static int print_result_text(const char *text)
{
	size_t n;

	if (text == NULL)
		text = "";
	if (isatty(STDOUT_FILENO))
		return print_escaped(text);
	n = strlen(text);
	fwrite(text, 1, n, stdout);
	if (n == 0 || text[n - 1] != '\n')
		putchar('\n');
	return 0;
}

static int print_result_json(const struct tq_task *t, const struct tq_attempt *a)
{
	cJSON *o = cJSON_CreateObject();
	int oom = o == NULL;

	cli_json_int(o, "id", t->id, 1, &oom);
	cli_json_int(o, "attempt", a->attempt, 1, &oom);
	cli_json_name(o, "state", tq_state_name(t->state), &oom);
	cli_json_bytes(o, "result", a->result, &oom);
	cli_json_bool(o, "is_error", a->is_error, &oom);
	cli_json_bytes(o, "subtype", a->subtype, &oom);
	cli_json_bytes(o, "agent_session", a->agent_session, &oom);
	cli_json_bytes(o, "model", a->model, &oom);
	json_cost(o, "cost_usd", a->cost_usd, a->cost_usd >= 0, &oom);
	cli_json_int(o, "duration_ms", a->duration_ms, a->duration_ms >= 0, &oom);
	cli_json_int(o, "num_turns", a->num_turns, 1, &oom);
	cli_json_int(o, "input_tokens", a->input_tokens, 1, &oom);
	cli_json_int(o, "output_tokens", a->output_tokens, 1, &oom);
	cli_json_int(o, "cache_read_tokens", a->cache_read_tokens, 1, &oom);
	cli_json_int(o, "cache_creation_tokens", a->cache_creation_tokens, 1, &oom);
	if (!oom)
		oom = cli_json_print(o, stdout) < 0;
	cJSON_Delete(o);
	return oom ? TQ_ENOMEM : 0;
}

/* Why a task has no result, in a few words. */
static const char *no_result_why(const struct tq_task *t)
{
	if (t->state == TQ_RUNNING)
		return " yet: it is running";
	if (!tq_state_final(t->state))
		return t->attempt > 0 ? " yet: it is waiting to run again" : " yet: it has not run";
	return ": its output had none";
}

int cli_result_print(const struct cli_ctx *c, struct tq_queue *q, const struct tq_task *t,
		     int json)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_attempt *att = NULL;
	const struct tq_attempt *last = NULL;
	size_t n = 0;
	int rc = CLI_OK;

	if (tq_queue_attempts(q, t->id, &att, &n, &err) < 0)
		rc = cli_fail(c, &err);
	for (size_t i = n; rc == CLI_OK && i > 0 && last == NULL; i--)
		if (att[i - 1].has_result)
			last = &att[i - 1];
	if (rc == CLI_OK && last == NULL)
		rc = cli_runtime(c, "task %lld has no result%s (%s)", (long long)t->id,
				 no_result_why(t), tq_state_name(t->state));
	if (rc == CLI_OK &&
	    (json ? print_result_json(t, last) : print_result_text(last->result)) < 0)
		rc = cli_runtime(c, "out of memory");
	tq_attempt_list_free(att, n);
	return rc;
}

static int show_result(const struct cli_ctx *c, int64_t id, int json)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_task t = { 0 };
	int rc;

	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_get(q, id, 0, &t, &err) < 0)
		rc = cli_fail(c, &err);
	else
		rc = cli_result_print(c, q, &t, json);
	tq_queue_close(q);
	tq_task_release(&t);
	return rc;
}

static int run_result(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_args a;
	const char *id_s = NULL;
	int64_t id;
	int k, json = 0, rc;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, result_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_result, stdout);
		else if (k == OPT_RESULT_JSON)
			json = 1;
		else if (k == CLI_OPT_ARG && id_s == NULL)
			id_s = a.val;
		else if (k == CLI_OPT_ARG)
			return cli_usage(c, "unexpected argument \"%s\"; result takes one id",
					 a.val);
		else
			return CLI_USAGE;
	}
	if (id_s == NULL)
		return cli_usage_no_id(c);
	if ((rc = cli_parse_id(c, id_s, &id)) != CLI_OK)
		return rc;
	return show_result(c, id, json);
}

const struct cli_cmd cli_cmd_result = {
	.name = "result",
	.synopsis = "taskq result ID [--json]",
	.summary = "Print an agent task's result.",
	.help = result_help,
	.run = run_result,
};

/* ------------------------------------------------------------------ */
/* stats                                                              */

static const char stats_help[] =
	"Sums over attempts (every run of every task, retries included): how\n"
	"many ended in each outcome and failure category, their wall time, and\n"
	"for agent results the cost, tokens (input, output, cache read, cache\n"
	"write), turns and the agents' own duration, in total and per model.\n"
	"Cost is summed over the attempts whose agent reported one (Claude Code,\n"
	"OpenCode); Gemini CLI and Codex report none.\n"
	"\n"
	"Options:\n"
	"  --batch NAME   only tasks of this batch\n"
	"  --group NAME   only tasks of this group\n"
	"  --since DUR    only attempts started in the last DUR (30m, 12h, 1d, 1w)\n"
	"  --json         one object: tasks, attempts, running, outcomes and\n"
	"                 categories (objects of counts), runtime_ms, results,\n"
	"                 errors, cost_usd, costed, input_tokens, output_tokens,\n"
	"                 cache_read_tokens, cache_creation_tokens, num_turns,\n"
	"                 agent_ms, models (an array of the same sums per model)\n";

enum { OPT_ST_BATCH = 256, OPT_ST_GROUP, OPT_ST_SINCE, OPT_ST_JSON };

static const struct cli_opt stats_opts[] = {
	{ "batch", OPT_ST_BATCH, 1, 0 },
	{ "group", OPT_ST_GROUP, 1, 0 },
	{ "since", OPT_ST_SINCE, 1, 0 },
	{ "json", OPT_ST_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

/* The sums of a row, as JSON fields of o. */
static void row_json(cJSON *o, const struct tq_stats_row *r, int *oom)
{
	cli_json_int(o, "results", r->results, 1, oom);
	cli_json_int(o, "errors", r->errors, 1, oom);
	json_cost(o, "cost_usd", r->cost_usd, r->costed > 0, oom);
	cli_json_int(o, "costed", r->costed, 1, oom);
	cli_json_int(o, "input_tokens", r->input_tokens, 1, oom);
	cli_json_int(o, "output_tokens", r->output_tokens, 1, oom);
	cli_json_int(o, "cache_read_tokens", r->cache_read_tokens, 1, oom);
	cli_json_int(o, "cache_creation_tokens", r->cache_creation_tokens, 1, oom);
	cli_json_int(o, "num_turns", r->num_turns, 1, oom);
	cli_json_int(o, "agent_ms", r->agent_ms, r->timed > 0, oom);
}

static cJSON *counts_json(const int64_t *v, int count, int outcomes, int *oom)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL) {
		*oom = 1;
		return NULL;
	}
	for (int i = 1; i < count; i++)
		cli_json_int(o, outcomes ? tq_outcome_name((enum tq_outcome)i)
				: tq_category_name((enum tq_category)i), v[i], 1, oom);
	return o;
}

static void add_item(cJSON *o, const char *key, cJSON *v, int *oom)
{
	if (v == NULL || !cJSON_AddItemToObject(o, key, v)) {
		cJSON_Delete(v);
		*oom = 1;
	}
}

static int stats_json(const struct tq_stats *s)
{
	cJSON *o = cJSON_CreateObject(), *models = cJSON_CreateArray();
	int oom = o == NULL || models == NULL;

	cli_json_int(o, "tasks", s->tasks, 1, &oom);
	cli_json_int(o, "attempts", s->total.attempts, 1, &oom);
	cli_json_int(o, "running", s->outcomes[TQ_OUT_NONE], 1, &oom);
	add_item(o, "outcomes", counts_json(s->outcomes, TQ_OUTCOME_COUNT, 1, &oom), &oom);
	add_item(o, "categories", counts_json(s->categories, TQ_CATEGORY_COUNT, 0, &oom),
		 &oom);
	cli_json_int(o, "runtime_ms", s->total.runtime_ms, 1, &oom);
	row_json(o, &s->total, &oom);
	for (size_t i = 0; models != NULL && i < s->nmodels; i++) {
		cJSON *m = cJSON_CreateObject();
		if (m == NULL || !cJSON_AddItemToArray(models, m)) {
			cJSON_Delete(m);
			oom = 1;
			break;
		}
		cli_json_bytes(m, "model", s->models[i].model, &oom);
		cli_json_int(m, "attempts", s->models[i].attempts, 1, &oom);
		row_json(m, &s->models[i], &oom);
	}
	add_item(o, "models", models, &oom);
	if (!oom)
		oom = cli_json_print(o, stdout) < 0;
	cJSON_Delete(o);
	return oom ? TQ_ENOMEM : 0;
}

/* "succeeded 9, failed 2" of the nonzero counts; "-" when none. */
static void counts_line(const char *key, const int64_t *v, int count, int outcomes)
{
	int any = 0;

	printf("%-13s", key);
	for (int i = 1; i < count; i++) {
		if (v[i] == 0)
			continue;
		printf("%s %s %lld", any ? "," : "", outcomes
		       ? tq_outcome_name((enum tq_outcome)i)
		       : tq_category_name((enum tq_category)i), (long long)v[i]);
		any = 1;
	}
	printf("%s\n", any ? "" : " -");
}

static int models_table(const struct tq_stats *s)
{
	static const char *const heads[] = {
		"MODEL", "RESULTS", "ERRORS", "COST", "INPUT", "OUTPUT", "CACHE READ",
		"CACHE WRITE", "TURNS",
	};
	struct cli_table tb;
	int rc = 0;

	if (s->nmodels == 0)
		return 0;
	putchar('\n');
	cli_table_init(&tb, 9, heads, 0x1feu);
	for (size_t i = 0; rc == 0 && i < s->nmodels; i++) {
		const struct tq_stats_row *r = &s->models[i];
		char v[8][32];

		snprintf(v[0], 32, "%lld", (long long)r->results);
		snprintf(v[1], 32, "%lld", (long long)r->errors);
		format_cost(r->cost_usd, r->costed > 0, v[2], 32);
		snprintf(v[3], 32, "%lld", (long long)r->input_tokens);
		snprintf(v[4], 32, "%lld", (long long)r->output_tokens);
		snprintf(v[5], 32, "%lld", (long long)r->cache_read_tokens);
		snprintf(v[6], 32, "%lld", (long long)r->cache_creation_tokens);
		snprintf(v[7], 32, "%lld", (long long)r->num_turns);
		rc = cli_table_add(&tb, r->model != NULL ? r->model : "-", NULL);
		for (int j = 0; rc == 0 && j < 8; j++)
			rc = cli_table_add(&tb, v[j], NULL);
	}
	if (rc == 0)
		cli_table_print(&tb, stdout);
	cli_table_release(&tb);
	return rc;
}

static int stats_human(const struct tq_stats *s)
{
	const struct tq_stats_row *t = &s->total;
	char dur[32], cost[32];

	cli_output_init();
	printf("%-13s %lld\n", "tasks:", (long long)s->tasks);
	printf("%-13s %lld", "attempts:", (long long)t->attempts);
	if (s->outcomes[TQ_OUT_NONE] > 0)
		printf(" (%lld running)", (long long)s->outcomes[TQ_OUT_NONE]);
	putchar('\n');
	counts_line("outcomes:", s->outcomes, TQ_OUTCOME_COUNT, 1);
	counts_line("categories:", s->categories, TQ_CATEGORY_COUNT, 0);
	tq_format_duration(t->runtime_ms, dur, sizeof(dur));
	printf("%-13s %s\n", "runtime:", dur);
	printf("%-13s %lld (%lld error%s)\n", "results:", (long long)t->results,
	       (long long)t->errors, t->errors == 1 ? "" : "s");
	format_cost(t->cost_usd, t->costed > 0, cost, sizeof(cost));
	printf("%-13s %s", "cost:", cost);
	if (t->costed < t->results)
		printf(" (%lld of %lld results reported one)", (long long)t->costed,
		       (long long)t->results);
	putchar('\n');
	printf("%-13s input %lld, output %lld, cache read %lld, cache write %lld\n",
	       "tokens:", (long long)t->input_tokens, (long long)t->output_tokens,
	       (long long)t->cache_read_tokens, (long long)t->cache_creation_tokens);
	printf("%-13s %lld\n", "turns:", (long long)t->num_turns);
	/* "-" when no agent reported a duration (codex, opencode), not "0ms" */
	if (t->timed > 0)
		tq_format_duration(t->agent_ms, dur, sizeof(dur));
	else
		snprintf(dur, sizeof(dur), "-");
	printf("%-13s %s", "agent time:", dur);
	if (t->timed > 0 && t->timed < t->results)
		printf(" (%lld of %lld results reported one)", (long long)t->timed,
		       (long long)t->results);
	putchar('\n');
	return models_table(s);
}

static int take_stats_opt(const struct cli_ctx *c, int k, const struct cli_args *a,
			  struct tq_stats_filter *f, int *json)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t ms;

	switch (k) {
	case OPT_ST_BATCH:
		f->batch = a->val;
		return cli_check_text(c, "--batch", a->val);
	case OPT_ST_GROUP:
		f->group = a->val;
		return cli_check_text(c, "--group", a->val);
	case OPT_ST_SINCE:
		if (tq_parse_duration(a->val, &ms, &err) < 0)
			return cli_usage(c, "--since %s", err.msg);
		f->since = tq_now_ms() - ms;
		if (f->since <= 0)
			f->since = 1;
		return CLI_OK;
	case OPT_ST_JSON:
		*json = 1;
		return CLI_OK;
	case CLI_OPT_ARG:
		return cli_usage(c, "unexpected argument \"%s\"", a->val);
	default:
		return CLI_USAGE;
	}
}

static int run_stats(struct cli_ctx *c, int argc, char **argv)
{
	struct tq_stats_filter f = TQ_STATS_FILTER_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_stats s = { 0 };
	struct cli_args a;
	int k, json = 0, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, stats_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_stats, stdout);
		rc = take_stats_opt(c, k, &a, &f, &json);
	}
	if (rc != CLI_OK || (rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_stats(q, &f, &s, &err) < 0)
		rc = cli_fail(c, &err);
	tq_queue_close(q);
	if (rc == CLI_OK && (json ? stats_json(&s) : stats_human(&s)) < 0)
		rc = cli_runtime(c, "out of memory");
	tq_stats_release(&s);
	return rc;
}

const struct cli_cmd cli_cmd_stats = {
	.name = "stats",
	.synopsis = "taskq stats [--batch B] [--group G] [--since DUR] [--json]",
	.summary = "Sum cost, tokens, runtime and outcomes.",
	.help = stats_help,
	.run = run_stats,
};

/* ------------------------------------------------------------------ */
/* session                                                            */

static const char session_help[] =
	"A session (`taskq submit --session KEY`, `taskq ask --session KEY`) is\n"
	"a chain of tasks that run one at a time, in submit order. Each agent\n"
	"task reports its agent's own session id; the session's current one is\n"
	"that of its last link that succeeded (a failed link does not advance\n"
	"it), and is what {session_id} expands to in the next link's command\n"
	"(claude --resume). Every link runs in the session's directory, its first\n"
	"link's (an agent resumes a conversation only where it began): a link\n"
	"submitted from elsewhere runs there, one with another --cwd is refused.\n"
	"\n"
	"  show KEY   the tasks of KEY in order (state, attempts, and the agent\n"
	"             session each one reported), the current agent session, and\n"
	"             its warm agent process if one is up (ask --warm; taskq\n"
	"             sessions lists every session)\n"
	"\n"
	"Options:\n"
	"  --json     one object: session, agent_session (null when none yet),\n"
	"             last_task_id, updated_at, cwd, agent, warm_pid, warm_node,\n"
	"             idle_since (null when none), tasks (id, state, name, attempt,\n"
	"             finished_at, agent_session)\n"
	"\n"
	"Exit status: 0; 2 for a key no task has.\n";

enum { OPT_SESSION_JSON = 256 };

static const struct cli_opt session_opts[] = {
	{ "json", OPT_SESSION_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

/* w: the session's row (its agent and warm process), or NULL. */
static int session_json(const struct tq_session_info *s, const struct tq_session_row *w)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
	int oom = o == NULL || arr == NULL;

	cli_json_bytes(o, "session", s->key, &oom);
	cli_json_bytes(o, "agent_session", s->agent_session, &oom);
	cli_json_int(o, "last_task_id", s->last_task_id, s->last_task_id > 0, &oom);
	cli_json_int(o, "updated_at", s->updated_at, s->updated_at > 0, &oom);
	cli_json_bytes(o, "cwd", s->cwd, &oom);
	cli_json_bytes(o, "agent", w ? w->agent : NULL, &oom);
	cli_json_int(o, "warm_pid", w ? w->pid : 0, w && w->pid, &oom);
	cli_json_bytes(o, "warm_node", w ? w->node : NULL, &oom);
	cli_json_int(o, "idle_since", w ? w->idle_since : 0, w && w->idle_since, &oom);
	for (size_t i = 0; arr != NULL && i < s->ntasks; i++) {
		const struct tq_session_task *t = &s->tasks[i];
		cJSON *e = cJSON_CreateObject();
		if (e == NULL || !cJSON_AddItemToArray(arr, e)) {
			cJSON_Delete(e);
			oom = 1;
			break;
		}
		cli_json_int(e, "id", t->id, 1, &oom);
		cli_json_name(e, "state", tq_state_name(t->state), &oom);
		cli_json_bytes(e, "name", t->name, &oom);
		cli_json_int(e, "attempt", t->attempt, 1, &oom);
		cli_json_int(e, "finished_at", t->finished_at, t->finished_at > 0, &oom);
		cli_json_bytes(e, "agent_session", t->agent_session, &oom);
	}
	add_item(o, "tasks", arr, &oom);
	if (!oom)
		oom = cli_json_print(o, stdout) < 0;
	cJSON_Delete(o);
	return oom ? TQ_ENOMEM : 0;
}

static int session_human(const struct tq_session_info *s, const struct tq_session_row *w)
{
	static const char *const heads[] = {
		"ID", "STATE", "NAME", "ATTEMPT", "FINISHED", "AGENT SESSION",
	};
	struct cli_table tb;
	char *key, *cur = NULL, *dir = NULL, when[32];
	int rc = 0;

	cli_output_init();
	if ((key = cli_esc(s->key, CLI_ESC_QUOTE, NULL)) == NULL ||
	    (s->agent_session != NULL &&
	     (cur = cli_esc(s->agent_session, 0, NULL)) == NULL) ||
	    (s->cwd != NULL && (dir = cli_esc(s->cwd, CLI_ESC_QUOTE, NULL)) == NULL)) {
		free(key);
		free(cur);
		return TQ_ENOMEM;
	}
	printf("%-15s %s\n", "session:", key);
	printf("%-15s %s\n", "directory:", dir != NULL ? dir : "-");
	printf("%-15s %s\n", "agent session:", cur != NULL ? cur : "- (none yet)");
	if (s->last_task_id > 0)
		printf("%-15s %lld\n", "set by task:", (long long)s->last_task_id);
	else
		printf("%-15s -\n", "set by task:");
	tq_format_time(s->updated_at, when, sizeof(when));
	printf("%-15s %s\n", "updated:", when);
	printf("%-15s %s\n", "agent:", w != NULL && w->agent != NULL ? w->agent : "-");
	if (w != NULL && w->pid != 0) {
		char idle[32] = "busy";
		int64_t now = tq_now_ms();

		if (w->idle_since != 0)
			tq_format_duration(now > w->idle_since ? now - w->idle_since : 0, idle,
					   sizeof(idle));
		printf("%-15s pid %d on node %s, %s%s\n", "warm process:", w->pid,
		       w->node ? w->node : "?", w->idle_since ? "idle " : "", idle);
	} else {
		printf("%-15s -\n", "warm process:");
	}
	printf("%-15s %zu\n", "tasks:", s->ntasks);
	free(key);
	free(cur);
	free(dir);
	if (s->ntasks == 0)
		return 0;
	cli_table_init(&tb, 6, heads, 1u << 0 | 1u << 3);
	for (size_t i = 0; rc == 0 && i < s->ntasks; i++) {
		const struct tq_session_task *t = &s->tasks[i];
		char id[24], att[16], fin[32];

		snprintf(id, sizeof(id), "%lld", (long long)t->id);
		snprintf(att, sizeof(att), "%d", t->attempt);
		tq_format_time(t->finished_at, fin, sizeof(fin));
		if ((rc = cli_table_add(&tb, id, NULL)) < 0 ||
		    (rc = cli_table_add(&tb, tq_state_name(t->state),
					cli_state_sgr(t->state))) < 0 ||
		    (rc = cli_table_add(&tb, t->name, NULL)) < 0 ||
		    (rc = cli_table_add(&tb, att, NULL)) < 0 ||
		    (rc = cli_table_add(&tb, fin, NULL)) < 0)
			break;
		rc = cli_table_add(&tb, t->agent_session ? t->agent_session : "-", NULL);
	}
	if (rc == 0)
		cli_table_print(&tb, stdout);
	cli_table_release(&tb);
	return rc;
}

static int session_show(const struct cli_ctx *c, const char *key, int json)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_session_info s = { 0 };
	struct tq_session_row *w = NULL;
	size_t nw = 0;
	int rc;

	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_session_show(q, key, &s, &err) < 0 ||
	    tq_queue_sessions(q, key, &w, &nw, &err) < 0)
		rc = cli_fail(c, &err);
	tq_queue_close(q);
	if (rc == CLI_OK && (json ? session_json(&s, nw ? w : NULL) :
			     session_human(&s, nw ? w : NULL)) < 0)
		rc = cli_runtime(c, "out of memory");
	tq_session_row_list_free(w, nw);
	tq_session_info_release(&s);
	return rc;
}

static int run_session(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_args a;
	const char *sub = NULL, *key = NULL;
	int k, json = 0;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, session_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_session, stdout);
		else if (k == OPT_SESSION_JSON)
			json = 1;
		else if (k == CLI_OPT_ARG && sub == NULL)
			sub = a.val;
		else if (k == CLI_OPT_ARG && key == NULL)
			key = a.val;
		else if (k == CLI_OPT_ARG)
			return cli_usage(c, "unexpected argument \"%s\"", a.val);
		else
			return CLI_USAGE;
	}
	if (sub == NULL)
		return cli_usage(c, "no subcommand given; usage: %s", cli_cmd_session.synopsis);
	if (strcmp(sub, "show") != 0)
		return cli_usage(c, "unknown subcommand \"%s\"; usage: %s", sub,
				 cli_cmd_session.synopsis);
	if (key == NULL)
		return cli_usage(c, "no session key given; usage: %s",
				 cli_cmd_session.synopsis);
	if (cli_check_text(c, "session", key) != CLI_OK)
		return CLI_USAGE;
	return session_show(c, key, json);
}

const struct cli_cmd cli_cmd_session = {
	.name = "session",
	.synopsis = "taskq session show KEY [--json]",
	.summary = "Show a session's tasks and its agent session id.",
	.help = session_help,
	.run = run_session,
};

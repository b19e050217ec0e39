/*
 * cmd_list.c - the read commands: `taskq list` (a table of tasks) and
 * `taskq show ID...` (everything stored about tasks, attempts included).
 *
 * Both read through tq_queue_list/tq_queue_get and never create the state
 * directory: on a machine where nothing was submitted yet, list prints its
 * header and show says the task does not exist. Human output escapes every
 * stored string (output.h); --json is exact, with *_base64 fields for bytes
 * that are not UTF-8. The JSON field names are an interface: add fields,
 * never rename them.
 */
#include "cli.h"
#include "output.h"

#include <bsd/string.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/secret.h"
#include "common/sys.h"

/* ------------------------------------------------------------------ */
/* Shared by list and show                                            */

/* How long the task ran: until it finished, or until now while it runs. */
static int runtime_ms(const struct tq_task *t, int64_t now, int64_t *ms)
{
	if (t->started_at <= 0)
		return 0;
	if (t->state == TQ_RUNNING)
		*ms = now - t->started_at;
	else if (t->finished_at >= t->started_at)
		*ms = t->finished_at - t->started_at;
	else
		return 0; /* started once, requeued since */
	return 1;
}

/* "0", "1", "SIGKILL" (or "sig 40" for a signal without a name), "-". A
 * process that taskq ended (timed out, killed) and that then exited 0 shows
 * "-": gemini exits 0 on SIGTERM, which is no success (the outcome and the
 * reason say what happened; --json keeps the real exit_code). */
static void format_exit_of(int code, int sig, enum tq_outcome o, char *buf, size_t n)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;

	if (code == 0 && sig <= 0 && (o == TQ_OUT_TIMED_OUT || o == TQ_OUT_KILLED))
		snprintf(buf, n, "-");
	else if (abbrev != NULL)
		snprintf(buf, n, "SIG%s", abbrev);
	else if (sig > 0)
		snprintf(buf, n, "sig %d", sig);
	else if (code >= 0)
		snprintf(buf, n, "%d", code);
	else
		snprintf(buf, n, "-");
}

static const char *outcome_or_null(enum tq_outcome o)
{
	return o != TQ_OUT_NONE ? tq_outcome_name(o) : NULL;
}

static const char *category_or_null(enum tq_category c)
{
	return c != TQ_CAT_NONE ? tq_category_name(c) : NULL;
}

/* "$0.0123" (agent cost in US dollars); "" when there is none. */
static void format_cost(double usd, int has, char *buf, size_t n)
{
	if (has)
		snprintf(buf, n, "$%.4f", usd);
	else
		snprintf(buf, n, "%s", "");
}

/* key: the cost, or null when none was reported. */
static void json_cost(cJSON *o, const char *key, double usd, int has, int *oom)
{
	cJSON *v = has ? cJSON_CreateNumber(usd) : cJSON_CreateNull();

	if (v == NULL || !cJSON_AddItemToObject(o, key, v)) {
		cJSON_Delete(v);
		*oom = 1;
	}
}

/* The fields list --json has; show --json adds to them. */
static cJSON *task_json(const struct tq_task *t, int64_t now, int *oom)
{
	cJSON *o = cJSON_CreateObject();
	int64_t rt = 0;
	int has_rt = runtime_ms(t, now, &rt);

	if (o == NULL) {
		*oom = 1;
		return NULL;
	}
	cli_json_int(o, "id", t->id, 1, oom);
	cli_json_name(o, "state", tq_state_name(t->state), oom);
	cli_json_bytes(o, "name", t->name, oom);
	cli_json_strv(o, "argv", t->argv, t->argc, oom);
	cli_json_bytes(o, "cwd", t->cwd, oom);
	cli_json_bytes(o, "batch", t->batch, oom);
	cli_json_bytes(o, "group", t->group, oom);
	cli_json_int(o, "priority", t->priority, 1, oom);
	cli_json_int(o, "created_at", t->created_at, 1, oom);
	cli_json_int(o, "started_at", t->started_at, t->started_at > 0, oom);
	cli_json_int(o, "finished_at", t->finished_at, t->finished_at > 0, oom);
	cli_json_int(o, "runtime_ms", rt, has_rt, oom);
	cli_json_int(o, "exit_code", t->exit_code, t->exit_code >= 0, oom);
	cli_json_int(o, "signal", t->signal, t->signal > 0, oom);
	cli_json_name(o, "outcome", outcome_or_null(t->outcome), oom);
	cli_json_name(o, "category", category_or_null(t->category), oom);
	cli_json_bytes(o, "reason", t->reason, oom);
	cli_json_int(o, "attempt", t->attempt, 1, oom);
	json_cost(o, "cost_usd", t->cost_usd, t->has_cost, oom);
	cli_json_bool(o, "warm", t->warm, oom);
	cli_json_int(o, "idle_timeout_ms", t->idle_timeout_ms, t->warm, oom);
	return o;
}

/* ------------------------------------------------------------------ */
/* list                                                               */

static const char list_help[] =
	"Tasks newest first, as a table: ID STATE NAME STARTED RUNTIME EXIT, and\n"
	"COST when a task shown has one.\n"
	"RUNTIME is until the task ended, or until now while it runs; EXIT is the\n"
	"exit code, or the signal that ended it; COST is what its agent reported\n"
	"(Claude Code, OpenCode), summed over its attempts, blank when none.\n"
	"\n"
	"Options:\n"
	"  --state S[,S...]  only tasks in these states: queued, scheduled, blocked,\n"
	"                    running, succeeded, failed, timed_out, killed, canceled\n"
	"  --name NAME       only tasks with this name\n"
	"  --label K=V       only tasks with this label\n"
	"  --batch NAME      only tasks of this batch\n"
	"  --group NAME      only tasks of this group\n"
	"  --category C      only tasks whose last attempt failed this way:\n"
	"                    rate_limit, overload, network, auth, unknown\n"
	"  --limit N         at most N tasks (default 50; 0: no limit)\n"
	"  --offset N        skip the N newest matching tasks first\n"
	"  --json            a JSON array of objects: id, state, name, argv, cwd,\n"
	"                    batch, group, priority, created_at, started_at,\n"
	"                    finished_at, runtime_ms, exit_code, signal, outcome,\n"
	"                    category, reason, attempt, cost_usd (times in ms since\n"
	"                    the epoch, null when absent)\n"
	"\n"
	"Text is escaped C-style (\\n, \\t, \\033, \\377) so that every byte is visible.\n";

enum { OPT_STATE = 256, OPT_LIMIT, OPT_OFFSET, OPT_NAME, OPT_LABEL, OPT_BATCH, OPT_JSON,
       OPT_GROUP, OPT_CATEGORY };

static const struct cli_opt list_opts[] = {
	{ "state", OPT_STATE, 1, 0 },
	{ "limit", OPT_LIMIT, 1, 0 },
	{ "offset", OPT_OFFSET, 1, 0 },
	{ "name", OPT_NAME, 1, 0 },
	{ "label", OPT_LABEL, 1, 0 },
	{ "batch", OPT_BATCH, 1, 0 },
	{ "group", OPT_GROUP, 1, 0 },
	{ "category", OPT_CATEGORY, 1, 0 },
	{ "json", OPT_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

struct list_req {
	struct tq_filter f;
	int json;
	char *label;  /* owned copy of --label K=V, split at '=' */
};

/* "--state S": one state name, refused with every valid name listed. */
static int bad_state(const struct cli_ctx *c, const char *s)
{
	char names[256] = "";

	for (int i = 0; i < TQ_STATE_COUNT; i++) {
		strlcat(names, i ? ", " : "", sizeof(names));
		strlcat(names, tq_state_name((enum tq_state)i), sizeof(names));
	}
	return cli_usage(c, "--state \"%s\": expected one of %s", s, names);
}

static int parse_states(const struct cli_ctx *c, const char *arg, unsigned *mask)
{
	const char *p = arg;

	do {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
		char one[32];
		enum tq_state s;

		if (n >= sizeof(one))
			return bad_state(c, arg);
		memcpy(one, p, n);
		one[n] = '\0';
		if (tq_state_parse(one, &s) < 0)
			return bad_state(c, one);
		*mask |= 1u << s;
		p = end != NULL ? end + 1 : NULL;
	} while (p != NULL);
	return CLI_OK;
}

static int take_label(const struct cli_ctx *c, struct list_req *r, const char *kv)
{
	char *eq;

	if ((eq = strchr(kv, '=')) == NULL || eq == kv)
		return cli_usage(c, "--label \"%s\": expected KEY=VALUE", kv);
	if (cli_check_text(c, "--label", kv) != CLI_OK)
		return CLI_USAGE;
	free(r->label);
	if ((r->label = strdup(kv)) == NULL)
		return cli_runtime(c, "out of memory");
	eq = r->label + (eq - kv);
	*eq = '\0';
	r->f.label_key = r->label;
	r->f.label_value = eq + 1;
	return CLI_OK;
}

static int take_list_opt(const struct cli_ctx *c, struct list_req *r, int k,
			 const struct cli_args *a)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	switch (k) {
	case OPT_STATE:
		return parse_states(c, a->val, &r->f.states);
	case OPT_LIMIT:
		if (tq_parse_int(a->val, 0, INT32_MAX, &v, &err) < 0)
			return cli_usage(c, "--limit %s", err.msg);
		r->f.limit = v == 0 ? -1 : v;
		return CLI_OK;
	case OPT_OFFSET:
		if (tq_parse_int(a->val, 0, INT64_MAX, &r->f.offset, &err) < 0)
			return cli_usage(c, "--offset %s", err.msg);
		return CLI_OK;
	case OPT_NAME:
		r->f.name = a->val;
		return cli_check_text(c, "--name", a->val);
	case OPT_BATCH:
		r->f.batch = a->val;
		return cli_check_text(c, "--batch", a->val);
	case OPT_GROUP:
		r->f.group = a->val;
		return cli_check_text(c, "--group", a->val);
	case OPT_CATEGORY:
		if (tq_category_parse(a->val, &r->f.category) < 0)
			return cli_usage(c, "--category \"%s\": expected rate_limit, overload, "
					 "network, auth or unknown", a->val);
		return CLI_OK;
	case OPT_LABEL:
		return take_label(c, r, a->val);
	case OPT_JSON:
		r->json = 1;
		return CLI_OK;
	case CLI_OPT_ARG:
		return cli_usage(c, "unexpected argument \"%s\"", a->val);
	default:
		return CLI_USAGE;
	}
}

static int add_row(struct cli_table *tb, const struct tq_task *t, int64_t now,
		   int with_cost)
{
	char id[24], started[32], runtime[32] = "-", exit_s[32], cost[32];
	int64_t rt;
	int rc = 0;

	snprintf(id, sizeof(id), "%lld", (long long)t->id);
	tq_format_time(t->started_at, started, sizeof(started));
	if (runtime_ms(t, now, &rt))
		tq_format_duration(rt, runtime, sizeof(runtime));
	format_exit_of(t->exit_code, t->signal, t->outcome, exit_s, sizeof(exit_s));
	if ((rc = cli_table_add(tb, id, NULL)) < 0 ||
	    (rc = cli_table_add(tb, tq_state_name(t->state), cli_state_sgr(t->state))) < 0 ||
	    (rc = cli_table_add(tb, t->name, NULL)) < 0 ||
	    (rc = cli_table_add(tb, started, NULL)) < 0 ||
	    (rc = cli_table_add(tb, runtime, NULL)) < 0 ||
	    (rc = cli_table_add(tb, exit_s, NULL)) < 0 || !with_cost)
		return rc;
	format_cost(t->cost_usd, t->has_cost, cost, sizeof(cost));
	return cli_table_add(tb, cost, NULL);
}

static int print_table(const struct tq_task *tasks, size_t n)
{
	static const char *const heads[] = {
		"ID", "STATE", "NAME", "STARTED", "RUNTIME", "EXIT", "COST",
	};
	struct cli_table tb;
	int64_t now = tq_now_ms();
	int rc = 0, with_cost = 0;

	/* COST only when a task shown has one: a queue of plain commands
	 * keeps its narrow table */
	for (size_t i = 0; i < n && !with_cost; i++)
		with_cost = tasks[i].has_cost;
	cli_output_init();
	cli_table_init(&tb, with_cost ? 7 : 6, heads,
		       1u << 0 | 1u << 4 | 1u << 5 | 1u << 6);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = add_row(&tb, &tasks[i], now, with_cost);
	if (rc == 0)
		cli_table_print(&tb, stdout);
	cli_table_release(&tb);
	return rc;
}

static int print_json_list(const struct tq_task *tasks, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	int64_t now = tq_now_ms();
	int oom = arr == NULL;

	for (size_t i = 0; !oom && i < n; i++) {
		cJSON *o = task_json(&tasks[i], now, &oom);
		if (o != NULL && !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			oom = 1;
		}
	}
	if (!oom)
		oom = cli_json_print(arr, stdout) < 0;
	cJSON_Delete(arr);
	return oom ? TQ_ENOMEM : 0;
}

static int list_tasks(const struct cli_ctx *c, const struct list_req *r)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_task *tasks = NULL;
	size_t n = 0;
	int rc;

	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_list(q, &r->f, &tasks, &n, &err) < 0)
		rc = cli_fail(c, &err);
	tq_queue_close(q);
	if (rc == CLI_OK &&
	    (r->json ? print_json_list(tasks, n) : print_table(tasks, n)) < 0)
		rc = cli_runtime(c, "out of memory");
	tq_task_list_free(tasks, n);
	return rc;
}

static int run_list(struct cli_ctx *c, int argc, char **argv)
{
	struct list_req r = { .f = TQ_FILTER_INIT };
	struct cli_args a;
	int k, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, list_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP) {
			cli_print_help(&cli_cmd_list, stdout);
			free(r.label);
			return CLI_OK;
		}
		rc = take_list_opt(c, &r, k, &a);
	}
	if (rc == CLI_OK)
		rc = list_tasks(c, &r);
	free(r.label);
	return rc;
}

const struct cli_cmd cli_cmd_list = {
	.name = "list",
	.alias = "ls",
	.synopsis = "taskq list [--state S[,S...]] [--name NAME] [--label K=V] "
		    "[--batch NAME]\n             [--group NAME] [--category C] "
		    "[--limit N] [--offset N] [--json]",
	.summary = "List tasks, newest first.",
	.help = list_help,
	.run = run_list,
};

/* ------------------------------------------------------------------ */
/* show                                                               */

static const char show_help[] =
	"Everything stored about a task: its command (one argument per line,\n"
	"quoted and escaped C-style so that spaces, quotes, empty arguments and\n"
	"bytes that are not UTF-8 are all visible), working directory, umask\n"
	"(\"-\" for a task stored before taskq kept it: it runs with the\n"
	"worker's), environment, labels, dependencies, limits and every attempt.\n"
	"\n"
	"Several ids show each task in turn, in the order given, a blank line\n"
	"between them (--json: one object a line). An id with no task says so\n"
	"on stderr, the others are still shown, and the exit status is 2.\n"
	"\n"
	"Options:\n"
	"  --show-env   show the values of variables whose names look secret\n"
	"               (containing KEY, TOKEN, SECRET or PASSWORD) and the\n"
	"               passwords and credential parameters (token=, key=,\n"
	"               password=, sig=, ...) of URLs in any variable; they are\n"
	"               masked as *** otherwise\n"
	"  --json       one JSON object a task, on its own line: the fields of\n"
	"               list --json plus the rest; strings that are not valid\n"
	"               UTF-8 carry U+FFFD and an exact copy in a *_base64\n"
	"               field (argv_base64, env_base64, cwd_base64, ...); each\n"
	"               attempt has its worker_id, pid, pgid, proc_start (the\n"
	"               process's start time), times, exit, outcome, retry_at,\n"
	"               and counted (false: a shutdown interrupted it, not\n"
	"               counted against --retries)\n";

enum { OPT_SHOW_ENV = 300, OPT_SHOW_JSON };

static const struct cli_opt show_opts[] = {
	{ "show-env", OPT_SHOW_ENV, 0, 0 },
	{ "json", OPT_SHOW_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

/* The environment as shown: "K=***" for secret-looking names and URL
 * credentials masked (secret.h) unless show_env. Every string is malloc'd;
 * NULL when out of memory. */
static char **masked_env(const struct tq_task *t, int show_env)
{
	char **v = calloc(t->envc + 1, sizeof(*v));

	for (size_t i = 0; v != NULL && i < t->envc; i++) {
		const char *e = t->env[i];

		v[i] = show_env ? strdup(e) : tq_secret_env_display(e);
		if (v[i] == NULL) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return NULL;
		}
	}
	return v;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static void attempt_json(cJSON *arr, const struct tq_attempt *a, int *oom)
{
	cJSON *o = cJSON_CreateObject();
	int ended = a->ended_at > 0;

	if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		*oom = 1;
		return;
	}
	cli_json_int(o, "attempt", a->attempt, 1, oom);
	cli_json_int(o, "worker_id", a->worker_id, a->worker_id > 0, oom);
	cli_json_int(o, "pid", a->pid, a->pid > 0, oom);
	cli_json_int(o, "pgid", a->pgid, a->pgid > 0, oom);
	cli_json_int(o, "proc_start", a->proc_start, a->proc_start > 0, oom);
	cli_json_int(o, "started_at", a->started_at, a->started_at > 0, oom);
	cli_json_int(o, "ended_at", a->ended_at, ended, oom);
	cli_json_int(o, "runtime_ms", a->ended_at - a->started_at, ended, oom);
	cli_json_int(o, "exit_code", a->exit_code, a->exit_code >= 0, oom);
	cli_json_int(o, "signal", a->signal, a->signal > 0, oom);
	cli_json_name(o, "outcome", outcome_or_null(a->outcome), oom);
	cli_json_name(o, "category", category_or_null(a->category), oom);
	cli_json_bytes(o, "reason", a->reason, oom);
	cli_json_int(o, "retry_at", a->retry_at, a->retry_at > 0, oom);
	/* false: a shutdown interrupted it; it does not count against --retries */
	cli_json_bool(o, "counted", a->counted, oom);
	/* every attempt's node, not only an agent's (issue 20: which node ran it) */
	cli_json_bytes(o, "node", a->node, oom);
	if (!a->has_result)
		return;
	cli_json_bytes(o, "result", a->result, oom);
	cli_json_bool(o, "is_error", a->is_error, oom);
	cli_json_bytes(o, "subtype", a->subtype, oom);
	cli_json_bytes(o, "agent_session", a->agent_session, oom);
	cli_json_bytes(o, "model", a->model, oom);
	cli_json_int(o, "duration_ms", a->duration_ms, a->duration_ms >= 0, oom);
	cli_json_int(o, "num_turns", a->num_turns, 1, oom);
	cli_json_int(o, "input_tokens", a->input_tokens, 1, oom);
	cli_json_int(o, "output_tokens", a->output_tokens, 1, oom);
	cli_json_int(o, "cache_read_tokens", a->cache_read_tokens, 1, oom);
	cli_json_int(o, "cache_creation_tokens", a->cache_creation_tokens, 1, oom);
	json_cost(o, "cost_usd", a->cost_usd, a->cost_usd >= 0, oom);
}

/* Labels as an object, dependencies as an array of ids. */
static void relations_json(cJSON *o, const struct tq_task *t, int *oom)
{
	cJSON *labels = cJSON_CreateObject(), *after = cJSON_CreateArray();

	if (labels == NULL || !cJSON_AddItemToObject(o, "labels", labels)) {
		cJSON_Delete(labels);
		labels = NULL, *oom = 1;
	}
	if (after == NULL || !cJSON_AddItemToObject(o, "after", after)) {
		cJSON_Delete(after);
		after = NULL, *oom = 1;
	}
	for (size_t i = 0; labels != NULL && i < t->nlabels; i++)
		cli_json_bytes(labels, t->labels[i].key, t->labels[i].value, oom);
	for (size_t i = 0; after != NULL && i < t->nafter; i++) {
		cJSON *d = cJSON_CreateObject();
		if (d == NULL || !cJSON_AddItemToArray(after, d)) {
			cJSON_Delete(d);
			*oom = 1;
			break;
		}
		cli_json_int(d, "id", t->after[i], 1, oom);
		cli_json_bool(d, "any", t->after_any != NULL && t->after_any[i], oom);
	}
}

/* What show --json adds to task_json. */
static void task_json_more(cJSON *o, const struct tq_task *t, char **env, int *oom)
{
	char um[8];

	cli_json_bool(o, "shell", t->shell, oom);
	/* octal text, as umask(1) prints it; null: stored before it was kept */
	snprintf(um, sizeof(um), "%04o", (unsigned)(t->umask & TQ_UMASK_MAX));
	cli_json_bytes(o, "umask", t->umask >= 0 ? um : NULL, oom);
	cli_json_bytes(o, "session", t->session, oom);
	cli_json_bytes(o, "unique_key", t->unique_key, oom);
	cli_json_int(o, "run_after", t->run_after, t->run_after > 0, oom);
	cli_json_int(o, "timeout_ms", t->timeout_ms, 1, oom);
	cli_json_int(o, "stall_timeout_ms", t->stall_timeout_ms, 1, oom);
	cli_json_int(o, "kill_grace_ms", t->kill_grace_ms, 1, oom);
	cli_json_int(o, "max_output", t->max_output, 1, oom);
	cli_json_int(o, "max_retries", t->max_retries, 1, oom);
	cli_json_bool(o, "retry_lost", t->retry_lost, oom);
	cli_json_int(o, "backoff_ms", t->backoff_ms, 1, oom);
	cli_json_int(o, "backoff_max_ms", t->backoff_max_ms, 1, oom);
	cli_json_name(o, "stdin", tq_stdin_mode_name(t->stdin_mode), oom);
	cli_json_bool(o, "pty", t->pty, oom);
	cli_json_bytes(o, "on_exit", t->on_exit, oom);
	cli_json_bytes(o, "agent", t->agent, oom);
	cli_json_bytes(o, "model", t->model, oom);
	cli_json_bytes(o, "prompt", t->prompt, oom);
	cli_json_bool(o, "isolate", t->isolate, oom);
	cli_json_bytes(o, "sources", t->sources_json, oom);
	cli_json_int(o, "kill_signal", t->kill_signal, t->kill_signal > 0, oom);
	cli_json_int(o, "kill_requested_at", t->kill_requested_at,
		     t->kill_requested_at > 0, oom);
	cli_json_int(o, "worker_id", t->worker_id, t->worker_id > 0, oom);
	cli_json_int(o, "lease_until", t->lease_until, t->lease_until > 0, oom);
	cli_json_strv(o, "env", env, t->envc, oom);
	relations_json(o, t, oom);
	cli_json_int(o, "deps_left", t->deps_left, 1, oom);
}

static int show_json(const struct tq_task *t, char **env,
		     const struct tq_attempt *att, size_t natt)
{
	int oom = 0;
	cJSON *o = task_json(t, tq_now_ms(), &oom), *arr = NULL;

	if (o != NULL) {
		task_json_more(o, t, env, &oom);
		arr = cJSON_CreateArray();
		if (arr == NULL || !cJSON_AddItemToObject(o, "attempts", arr)) {
			cJSON_Delete(arr);
			arr = NULL, oom = 1;
		}
	}
	for (size_t i = 0; arr != NULL && i < natt; i++)
		attempt_json(arr, &att[i], &oom);
	if (!oom)
		oom = cli_json_print(o, stdout) < 0;
	cJSON_Delete(o);
	return oom ? TQ_ENOMEM : 0;
}

/* ---- human show ---- */

/* "key:  value", the value escaped (quoted when it is free text). */
static void field(const char *key, const char *val, unsigned esc, int *oom)
{
	char *e = val != NULL ? cli_esc(val, esc, NULL) : NULL;

	if (val != NULL && e == NULL)
		*oom = 1;
	printf("%-13s %s\n", key, e != NULL ? e : "-");
	free(e);
}

static void field_int(const char *key, int64_t v, int present)
{
	if (present)
		printf("%-13s %lld\n", key, (long long)v);
	else
		printf("%-13s -\n", key);
}

static void field_time(const char *key, int64_t ms)
{
	char buf[32];

	tq_format_time(ms, buf, sizeof(buf));
	printf("%-13s %s\n", key, buf);
}

static void field_dur(const char *key, int64_t ms, const char *zero)
{
	char buf[32];

	if (ms == 0 && zero != NULL)
		snprintf(buf, sizeof(buf), "%s", zero);
	else
		tq_format_duration(ms, buf, sizeof(buf));
	printf("%-13s %s\n", key, buf);
}

/* "    key:  value" under an attempt, escaped; "-" for NULL (and when out of
 * memory: this is a display of an optional field). */
static void field_indented(const char *key, const char *val)
{
	char *e = val != NULL ? cli_esc(val, 0, NULL) : NULL;

	printf("    %-14s %s\n", key, e != NULL ? e : "-");
	free(e);
}

/* Each string on its own line, indented, quoted and escaped. */
static void lines(char *const *v, size_t n, int *oom)
{
	for (size_t i = 0; i < n; i++) {
		char *e = cli_esc(v[i], CLI_ESC_QUOTE, NULL);
		if (e == NULL)
			*oom = 1;
		printf("    %s\n", e != NULL ? e : "?");
		free(e);
	}
}

static void show_command(const struct tq_task *t, int *oom)
{
	printf("%-13s %zu argument%s%s\n", "argv:", t->argc, t->argc == 1 ? "" : "s",
	       t->shell ? " (from --shell)" : "");
	char um[8];

	lines(t->argv, t->argc, oom);
	field("cwd:", t->cwd, CLI_ESC_QUOTE, oom);
	snprintf(um, sizeof(um), "%04o", (unsigned)(t->umask & TQ_UMASK_MAX));
	field("umask:", t->umask >= 0 ? um : "- (not known: it runs with the worker's)",
	      0, oom);
}

static void show_outcome(const struct tq_task *t, int64_t now, int *oom)
{
	char exit_s[32], rt_s[32] = "-";
	int64_t rt;

	field_time("created:", t->created_at);
	field_time("run after:", t->run_after);
	field_time("started:", t->started_at);
	field_time("finished:", t->finished_at);
	if (runtime_ms(t, now, &rt))
		tq_format_duration(rt, rt_s, sizeof(rt_s));
	printf("%-13s %s\n", "runtime:", rt_s);
	format_exit_of(t->exit_code, t->signal, t->outcome, exit_s, sizeof(exit_s));
	printf("%-13s %s\n", "exit:", exit_s);
	field("outcome:", outcome_or_null(t->outcome), 0, oom);
	field("category:", category_or_null(t->category), 0, oom);
	field("reason:", t->reason, 0, oom);
	field_int("attempt:", t->attempt, 1);
}

static void show_policy(const struct tq_task *t, int *oom)
{
	char size[16];

	field_dur("timeout:", t->timeout_ms, "none");
	field_dur("stall:", t->stall_timeout_ms, "none");
	field_dur("kill grace:", t->kill_grace_ms, NULL);
	tq_format_size(t->max_output, size, sizeof(size));
	printf("%-13s %s\n", "max output:", t->max_output ? size : "unlimited");
	field_int("max retries:", t->max_retries, 1);
	field_dur("backoff:", t->backoff_ms, NULL);
	field_dur("backoff max:", t->backoff_max_ms, NULL);
	field("retry lost:", t->retry_lost ? "yes" : "no", 0, oom);
	field("stdin:", tq_stdin_mode_name(t->stdin_mode), 0, oom);
	field("pty:", t->pty ? "yes" : "no", 0, oom);
	field("on exit:", t->on_exit, CLI_ESC_QUOTE, oom);
}

static void show_agent(const struct tq_task *t, int *oom)
{
	field("agent:", t->agent, 0, oom);
	field("model:", t->model, 0, oom);
	field("prompt:", t->prompt, CLI_ESC_QUOTE, oom);
	field("isolate:", t->isolate ? "yes" : "no", 0, oom);
	field("sources:", t->sources_json, 0, oom);
	if (t->warm) {
		char idle[32];
		tq_format_duration(t->idle_timeout_ms, idle, sizeof(idle));
		printf("%-13s yes, idle timeout %s\n", "warm:", idle);
	} else {
		field("warm:", "no", 0, oom);
	}
	field_int("kill signal:", t->kill_signal, t->kill_signal > 0);
	field_time("kill asked:", t->kill_requested_at);
	field_int("worker:", t->worker_id, t->worker_id > 0);
	field_time("lease until:", t->lease_until);
}

static void show_relations(const struct tq_task *t, char **env, int show_env, int *oom)
{
	printf("%-13s %zu\n", "labels:", t->nlabels);
	for (size_t i = 0; i < t->nlabels; i++) {
		char *k = cli_esc(t->labels[i].key, 0, NULL);
		char *v = cli_esc(t->labels[i].value, CLI_ESC_QUOTE, NULL);
		if (k == NULL || v == NULL)
			*oom = 1;
		printf("    %s=%s\n", k ? k : "?", v ? v : "?");
		free(k);
		free(v);
	}
	if (t->nafter > 0 && t->deps_left > 0)
		printf("%-13s %zu (%lld not ended yet)\n", "after:", t->nafter,
		       (long long)t->deps_left);
	else
		printf("%-13s %zu\n", "after:", t->nafter);
	for (size_t i = 0; i < t->nafter; i++)
		printf("    %lld (%s)\n", (long long)t->after[i],
		       t->after_any != NULL && t->after_any[i] ? "to end"
							    : "to succeed");
	printf("%-13s %zu variable%s%s\n", "environment:", t->envc,
	       t->envc == 1 ? "" : "s",
	       show_env ? "" : " (secret-looking values masked; --show-env shows them)");
	lines(env, t->envc, oom);
}

#define SHOW_RESULT_MAX 300 /* bytes of a result text shown; `taskq result` has all */

/* An attempt's agent result, below the attempts table. */
static int show_result(const struct tq_attempt *a)
{
	size_t len = a->result ? strlen(a->result) : 0;
	char *cut = a->result ? strndup(a->result, SHOW_RESULT_MAX) : NULL, *e = NULL;
	char cost[64], dur[32];

	if (a->result != NULL && (cut == NULL || (e = cli_esc(cut, CLI_ESC_QUOTE, NULL)) == NULL)) {
		free(cut);
		return TQ_ENOMEM;
	}
	printf("attempt %d result:\n", a->attempt);
	if (len > SHOW_RESULT_MAX)
		printf("    %-14s %s... (%zu bytes; taskq result shows it all)\n", "text:", e,
		       len);
	else
		printf("    %-14s %s\n", "text:", e != NULL ? e : "-");
	free(e);
	free(cut);
	printf("    %-14s %s\n", "is error:", a->is_error ? "yes" : "no");
	field_indented("subtype:", a->subtype);
	field_indented("agent session:", a->agent_session);
	field_indented("model:", a->model != NULL ? a->model : "- (not reported)");
	if (a->cost_usd >= 0)
		snprintf(cost, sizeof(cost), "$%.4f (%.10g USD)", a->cost_usd, a->cost_usd);
	else
		snprintf(cost, sizeof(cost), "- (not reported)");
	printf("    %-14s %s\n", "cost:", cost);
	if (a->duration_ms >= 0)
		tq_format_duration(a->duration_ms, dur, sizeof(dur));
	else
		snprintf(dur, sizeof(dur), "- (not reported)");
	printf("    %-14s %s\n", "agent time:", dur);
	printf("    %-14s %lld\n", "turns:", (long long)a->num_turns);
	printf("    %-14s input %lld, output %lld, cache read %lld, cache write %lld\n",
	       "tokens:", (long long)a->input_tokens, (long long)a->output_tokens,
	       (long long)a->cache_read_tokens, (long long)a->cache_creation_tokens);
	return 0;
}

static int show_attempts(const struct tq_attempt *att, size_t n)
{
	static const char *const heads[] = {
		"N", "STARTED", "ENDED", "RUNTIME", "OUTCOME", "CATEGORY", "EXIT", "REASON",
	};
	struct cli_table tb;
	int rc = 0;

	printf("%-13s %zu\n", "attempts:", n);
	if (n == 0)
		return 0;
	cli_table_init(&tb, 8, heads, 1u << 0 | 1u << 3);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct tq_attempt *a = &att[i];
		char num[16], st[32], en[32], rt[32] = "-", ex[32];

		snprintf(num, sizeof(num), "%d", a->attempt);
		tq_format_time(a->started_at, st, sizeof(st));
		tq_format_time(a->ended_at, en, sizeof(en));
		if (a->ended_at > 0)
			tq_format_duration(a->ended_at - a->started_at, rt, sizeof(rt));
		format_exit_of(a->exit_code, a->signal, a->outcome, ex, sizeof(ex));
		const char *cells[] = { num, st, en, rt, outcome_or_null(a->outcome),
					category_or_null(a->category), ex, a->reason };
		for (size_t j = 0; rc == 0 && j < 8; j++)
			rc = cli_table_add(&tb, cells[j], NULL);
	}
	if (rc == 0)
		cli_table_print(&tb, stdout);
	cli_table_release(&tb);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (att[i].has_result)
			rc = show_result(&att[i]);
	return rc;
}

static int show_human(const struct tq_task *t, char **env, int show_env,
		      const struct tq_attempt *att, size_t natt)
{
	int oom = 0;

	cli_output_init();
	field_int("id:", t->id, 1);
	field("name:", t->name, 0, &oom);
	printf("%-13s %s\n", "state:", tq_state_name(t->state));
	show_command(t, &oom);
	field("group:", t->group, 0, &oom);
	field("batch:", t->batch, 0, &oom);
	field("session:", t->session, 0, &oom);
	field("unique key:", t->unique_key, 0, &oom);
	field_int("priority:", t->priority, 1);
	show_outcome(t, tq_now_ms(), &oom);
	show_policy(t, &oom);
	show_agent(t, &oom);
	show_relations(t, env, show_env, &oom);
	if (t->has_cost) /* only agent tasks: plain commands show no cost line */
		printf("%-13s $%.4f (%.10g USD, summed over attempts)\n", "cost:",
		       t->cost_usd, t->cost_usd);
	if (show_attempts(att, natt) < 0)
		oom = 1;
	return oom ? TQ_ENOMEM : 0;
}

/* Read the task and its attempts from q, then print them: after a blank
 * line when *shown says a task was printed before (human form); *shown set. */
static int show_task(const struct cli_ctx *c, struct tq_queue *q, int64_t id, int json,
		     int show_env, int *shown)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t = { 0 };
	struct tq_attempt *att = NULL;
	size_t natt = 0;
	char **env = NULL;
	int rc = CLI_OK;

	if (tq_queue_get(q, id, TQ_GET_ALL, &t, &err) < 0 ||
	    tq_queue_attempts(q, id, &att, &natt, &err) < 0)
		rc = cli_fail(c, &err);
	for (size_t i = 0; rc == CLI_OK && i < natt; i++)
		if (att[i].has_result && att[i].cost_usd >= 0) {
			t.cost_usd += att[i].cost_usd;
			t.has_cost = 1;
		}
	if (rc == CLI_OK && (env = masked_env(&t, show_env)) == NULL)
		rc = cli_runtime(c, "out of memory");
	if (rc == CLI_OK && *shown && !json)
		putchar('\n');
	if (rc == CLI_OK &&
	    (json ? show_json(&t, env, att, natt)
		  : show_human(&t, env, show_env, att, natt)) < 0)
		rc = cli_runtime(c, "out of memory");
	if (rc == CLI_OK)
		*shown = 1;
	free_strv(env);
	tq_attempt_list_free(att, natt);
	tq_task_release(&t);
	return rc;
}

/*
 * Each task of ids in turn, through one open queue: a test or a script
 * reading thousands of tasks pays one process and one open, not one a task
 * (a taskq show is mostly its start: ~3 ms of CPU, ~30 ms under ASan). An
 * id with no task says so and the rest are still shown (exit 2 at the
 * end); a runtime error (the database) stops at once (exit 1). Human
 * blocks are separated by a blank line; JSON objects are one a line.
 */
static int show_tasks(const struct cli_ctx *c, const int64_t *ids, size_t n, int json,
		      int show_env)
{
	struct tq_queue *q = NULL;
	int rc, worst = CLI_OK, shown = 0;

	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	for (size_t i = 0; i < n && worst != CLI_RUNTIME; i++)
		if ((rc = show_task(c, q, ids[i], json, show_env, &shown)) != CLI_OK)
			worst = rc;
	tq_queue_close(q);
	return worst;
}

static int run_show(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_args a;
	/* at most argc ids; every one parsed once the options are read */
	const char **id_s = reallocarray(NULL, (size_t)argc + 1, sizeof(*id_s));
	int64_t *ids = reallocarray(NULL, (size_t)argc + 1, sizeof(*ids));
	size_t n = 0;
	int k, json = 0, show_env = 0, rc = CLI_OK;

	if (id_s == NULL || ids == NULL) {
		rc = cli_runtime(c, "out of memory");
		goto out;
	}
	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, show_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP) {
			rc = cli_print_help(&cli_cmd_show, stdout);
			goto out;
		} else if (k == OPT_SHOW_JSON) {
			json = 1;
		} else if (k == OPT_SHOW_ENV) {
			show_env = 1;
		} else if (k == CLI_OPT_ARG) {
			id_s[n++] = a.val;
		} else {
			rc = CLI_USAGE;
		}
	}
	if (rc == CLI_OK && n == 0)
		rc = cli_usage_no_id(c);
	for (size_t i = 0; rc == CLI_OK && i < n; i++)
		rc = cli_parse_id(c, id_s[i], &ids[i]);
	if (rc == CLI_OK)
		rc = show_tasks(c, ids, n, json, show_env);
out:
	free(ids);
	free(id_s);
	return rc;
}

const struct cli_cmd cli_cmd_show = {
	.name = "show",
	.synopsis = "taskq show ID... [--json] [--show-env]",
	.summary = "Show everything stored about tasks, attempts included.",
	.help = show_help,
	.run = run_show,
};

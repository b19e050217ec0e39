/*
 * cmd_sessions.c - `taskq sessions` (every session: its agent, agent
 * session, directory, warm process, messages and cost) and `taskq sessions
 * close KEY` (its warm agent process ended, through src/ops/sessions.h).
 * Warm sessions are issue 19's: `taskq ask --session KEY --warm`.
 */
#include "cli.h"
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/parse.h"
#include "common/sys.h"
#include "ops/sessions.h"

static const char sessions_help[] =
	"Lists every session (taskq ask --session KEY, taskq submit --session KEY)\n"
	"as a table: KEY AGENT SESSION DIRECTORY WARM IDLE MESSAGES COST. SESSION\n"
	"is the agent's own session id the next message resumes; WARM the pid of\n"
	"the session's agent process the supervisor keeps up between messages\n"
	"(ask --warm), \"-\" when none runs; IDLE how long it has had no turn\n"
	"(\"busy\" while one runs); MESSAGES the session's tasks; COST what their\n"
	"attempts reported, summed.\n"
	"\n"
	"taskq sessions close KEY ends KEY's warm process: the request is stored\n"
	"on the session, the supervisor of the node the process runs on ends it\n"
	"(TERM, its grace, KILL), and this waits until it has (at most 30s). The\n"
	"conversation is kept: the session's next message starts a new process\n"
	"that resumes it. A session with no warm process: said so, exit 0.\n"
	"\n"
	"Options:\n"
	"  --json      one JSON array, an object a session: key, agent,\n"
	"              agent_session, cwd, last_task_id, updated_at, warm_pid,\n"
	"              warm_start, warm_node, warm_at, idle_since,\n"
	"              close_requested_at, idle_timeout_ms (null when none),\n"
	"              messages, cost_usd (null when none reported)\n"
	"  --no-wait   close: store the request and return\n"
	"\n"
	"Exit: 0; 2 for an unknown session (as for an unknown task id); 1 when\n"
	"the warm process was not ended within 30s (the request stays: its\n"
	"supervisor ends it when it can).\n"
	"\n"
	"Examples:\n"
	"  taskq sessions\n"
	"  taskq sessions close fix\n";

enum { OPT_JSON = 256, OPT_NO_WAIT };

static const struct cli_opt sessions_opts[] = {
	{ "json", OPT_JSON, 0, 0 },
	{ "no-wait", OPT_NO_WAIT, 0, 0 },
	{ NULL, 0, 0, 0 },
};

/* ms, or null when absent (0). */
static void json_ms(cJSON *o, const char *key, int64_t v, int *oom)
{
	cli_json_int(o, key, v, v != 0, oom);
}

static int sessions_json(const struct tq_session_row *rows, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	int oom = arr == NULL;

	for (size_t i = 0; !oom && i < n; i++) {
		const struct tq_session_row *r = &rows[i];
		cJSON *o = cJSON_CreateObject(), *cost;

		if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			oom = 1;
			break;
		}
		cli_json_bytes(o, "key", r->key, &oom);
		cli_json_bytes(o, "agent", r->agent, &oom);
		cli_json_bytes(o, "agent_session", r->agent_session, &oom);
		cli_json_bytes(o, "cwd", r->cwd, &oom);
		json_ms(o, "last_task_id", r->last_task_id, &oom);
		json_ms(o, "updated_at", r->updated_at, &oom);
		cli_json_int(o, "warm_pid", r->pid, r->pid != 0, &oom);
		cli_json_int(o, "warm_start", r->start, r->pid != 0, &oom);
		cli_json_bytes(o, "warm_node", r->node, &oom);
		json_ms(o, "warm_at", r->warm_at, &oom);
		json_ms(o, "idle_since", r->idle_since, &oom);
		json_ms(o, "close_requested_at", r->close_requested_at, &oom);
		json_ms(o, "idle_timeout_ms", r->idle_timeout_ms, &oom);
		cli_json_int(o, "messages", r->messages, 1, &oom);
		cost = r->has_cost ? cJSON_CreateNumber(r->cost_usd) : cJSON_CreateNull();
		if (cost == NULL || !cJSON_AddItemToObject(o, "cost_usd", cost)) {
			cJSON_Delete(cost);
			oom = 1;
		}
	}
	if (!oom)
		oom = cli_json_print(arr, stdout) < 0;
	cJSON_Delete(arr);
	return oom ? TQ_ENOMEM : 0;
}

/* The WARM and IDLE cells of r. */
static void warm_cells(const struct tq_session_row *r, int64_t now, char *pid, size_t np,
		       char *idle, size_t ni)
{
	if (r->pid == 0) {
		snprintf(pid, np, "-");
		snprintf(idle, ni, "-");
		return;
	}
	snprintf(pid, np, "%d", r->pid);
	if (r->idle_since == 0)
		snprintf(idle, ni, "busy");
	else
		tq_format_duration(now > r->idle_since ? now - r->idle_since : 0, idle, ni);
}

static int sessions_human(const struct tq_session_row *rows, size_t n)
{
	static const char *const heads[] = {
		"KEY", "AGENT", "SESSION", "DIRECTORY", "WARM", "IDLE", "MESSAGES", "COST",
	};
	struct cli_table tb;
	int64_t now = tq_now_ms();
	int rc = 0;

	cli_output_init();
	cli_table_init(&tb, 8, heads, 1u << 4 | 1u << 6);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct tq_session_row *r = &rows[i];
		char pid[24], idle[32], msgs[24], cost[32];

		warm_cells(r, now, pid, sizeof(pid), idle, sizeof(idle));
		snprintf(msgs, sizeof(msgs), "%lld", (long long)r->messages);
		if (r->has_cost)
			snprintf(cost, sizeof(cost), "$%.4f", r->cost_usd);
		else
			snprintf(cost, sizeof(cost), "-");
		if ((rc = cli_table_add(&tb, r->key, NULL)) < 0 ||
		    (rc = cli_table_add(&tb, r->agent ? r->agent : "-", NULL)) < 0 ||
		    (rc = cli_table_add(&tb, r->agent_session ? r->agent_session : "-",
					NULL)) < 0 ||
		    (rc = cli_table_add(&tb, r->cwd ? r->cwd : "-", NULL)) < 0 ||
		    (rc = cli_table_add(&tb, pid, NULL)) < 0 ||
		    (rc = cli_table_add(&tb, idle, NULL)) < 0 ||
		    (rc = cli_table_add(&tb, msgs, NULL)) < 0)
			break;
		rc = cli_table_add(&tb, cost, NULL);
	}
	if (rc == 0 && n > 0)
		cli_table_print(&tb, stdout);
	cli_table_release(&tb);
	return rc;
}

static int list_sessions(const struct cli_ctx *c, int json)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_session_row *rows = NULL;
	struct tq_queue *q = NULL;
	size_t n = 0;
	int rc;

	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_sessions(q, NULL, &rows, &n, &err) < 0)
		rc = cli_fail(c, &err);
	tq_queue_close(q);
	if (rc == CLI_OK && (json ? sessions_json(rows, n) : sessions_human(rows, n)) < 0)
		rc = cli_runtime(c, "out of memory");
	tq_session_row_list_free(rows, n);
	return rc;
}

static int close_session(const struct cli_ctx *c, const char *key, int wait)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_close r;
	struct tq_queue *q = NULL;
	char *k;
	int rc;

	if ((rc = cli_open(c, TQ_OPEN_DURABLE | TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	rc = tq_ops_session_close(q, c->home, key,
				  wait ? tq_mono_ms() + TQ_OPS_CLOSE_WAIT_MS : 0, &r, &err);
	tq_queue_close(q);
	if (rc < 0)
		return cli_fail(c, &err);
	if ((k = cli_esc(key, CLI_ESC_QUOTE, NULL)) == NULL)
		return cli_runtime(c, "out of memory");
	switch (r.outcome) {
	case TQ_OPS_CLOSE_NONE:
		printf("session %s: no warm process\n", k);
		break;
	case TQ_OPS_CLOSE_ENDED:
		printf("session %s: warm process %d ended\n", k, r.pid);
		break;
	case TQ_OPS_CLOSE_ASKED:
		printf("session %s: warm process %d (node %s) asked to end\n", k, r.pid, r.node);
		break;
	case TQ_OPS_CLOSE_PENDING:
		if (r.this_node && !r.supervisor_here)
			rc = cli_runtime(c, "session %s: warm process %d is asked to end, but no "
					 "supervisor runs here: the next one started ends it", k,
					 r.pid);
		else
			rc = cli_runtime(c, "session %s: warm process %d is asked to end; its "
					 "supervisor (node %s) has not ended it within %ds", k,
					 r.pid, r.node, TQ_OPS_CLOSE_WAIT_MS / 1000);
		break;
	}
	free(k);
	return rc;
}

static int run_sessions(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_args a;
	const char *sub = NULL, *key = NULL;
	int k, json = 0, wait = 1;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, sessions_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_sessions, stdout);
		else if (k == OPT_JSON)
			json = 1;
		else if (k == OPT_NO_WAIT)
			wait = 0;
		else if (k == CLI_OPT_ARG && sub == NULL)
			sub = a.val;
		else if (k == CLI_OPT_ARG && key == NULL)
			key = a.val;
		else if (k == CLI_OPT_ARG)
			return cli_usage(c, "unexpected argument \"%s\"", a.val);
		else
			return CLI_USAGE;
	}
	if (sub == NULL) {
		if (!wait)
			return cli_usage(c, "--no-wait is for sessions close");
		return list_sessions(c, json);
	}
	if (strcmp(sub, "close") != 0)
		return cli_usage(c, "unknown subcommand \"%s\"; usage: %s", sub,
				 cli_cmd_sessions.synopsis);
	if (key == NULL)
		return cli_usage(c, "no session key given; usage: %s", cli_cmd_sessions.synopsis);
	if (json)
		return cli_usage(c, "--json is for the list, not sessions close");
	if (cli_check_text(c, "session", key) != CLI_OK)
		return CLI_USAGE;
	return close_session(c, key, wait);
}

const struct cli_cmd cli_cmd_sessions = {
	.name = "sessions",
	.synopsis = "taskq sessions [--json] | taskq sessions close KEY [--no-wait]",
	.summary = "List sessions and their warm agent processes; end one.",
	.help = sessions_help,
	.run = run_sessions,
};

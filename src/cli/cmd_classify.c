/*
 * cmd_classify.c - `taskq classify [--explain] [--json] ID [--attempt N]`:
 * classify a finished attempt again, from what is stored, with the rules as
 * they are now (built-in plus the user's config, or --config FILE), and
 * show the answer beside what the worker recorded then; with --explain,
 * every check the classifier made, in order.
 *
 * The evidence is what the worker had: the attempt's outcome, exit code and
 * signal, the program (argv[0]'s base name) and agent, and the tail of the
 * attempt's own output. A retried task's log holds every attempt; the
 * attempts table says at which line each began (log_line), so attempt N's
 * lines are [its log_line, the next attempt's log_line). "Now" is the time
 * the attempt ended, so "resets 3pm" gives the same retry time as then.
 *
 * It changes nothing. The rules are loaded before anything sets the locale,
 * as in a worker (which never does), so the regexes match as they did.
 */
#include "cli.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/secret.h"
#include "common/sys.h"
#include "queue/logstore.h"
#include "classify/classify.h"
#include "worker/evidence.h"


static const char classify_help[] =
	"Classify attempt N (default: the last) of a finished task again from\n"
	"what is stored: its outcome, exit code and signal, the command, and the\n"
	"last 64 KiB of each stream of that attempt's output. Shows the category,\n"
	"whether it is transient (retried), the retry time the provider asked\n"
	"for, the rule that decided and the line or field that decided it, next\n"
	"to what the worker recorded. Nothing is changed.\n"
	"\n"
	"The rules are the built-in ones (rules.json) plus the config file\n"
	"($TASKQ_CONFIG, else $XDG_CONFIG_HOME/taskq/config.json, else\n"
	"~/.config/taskq/config.json): a way to try a new rule on a real failure.\n"
	"\n"
	"Options:\n"
	"  --attempt N    the attempt to classify (1 is the first)\n"
	"  --explain      also print every check made, in order, and its result\n"
	"  --config FILE  use this config file instead of the default one\n"
	"  --json         one JSON object: id, attempt, outcome, exit_code, signal,\n"
	"                 category, transient, retry_at (ms), rule, reason, stored\n"
	"                 {category, reason, retry_at}, and explain (with --explain)\n";

enum { OPT_ATTEMPT = 300, OPT_EXPLAIN, OPT_CONFIG, OPT_JSON };

static const struct cli_opt classify_opts[] = {
	{ "attempt", OPT_ATTEMPT, 1, 0 },
	{ "explain", OPT_EXPLAIN, 0, 0 },
	{ "config", OPT_CONFIG, 1, 0 },
	{ "json", OPT_JSON, 0, 0 },
	{ NULL, 0, 0, 0 },
};

struct classify_req {
	int64_t id;
	int have_id;
	int64_t attempt;   /* 0: the last */
	int explain, json;
	const char *config;
};

/*
 * Read attempt k's (att[k]) last lines into t. Its lines are [first, last]:
 * first its log_line (0 when it never started a process: no output, unless
 * it is the first attempt), last the line before the next attempt's.
 */
static int read_tails(struct tq_queue *q, int64_t id, const struct tq_attempt *att,
		      size_t n, size_t k, struct tq_tails *t, struct tq_err *err)
{
	int64_t first = att[k].log_line, last = -1;

	if (first <= 0 && k > 0)
		return 0;
	for (size_t j = k + 1; j < n; j++)
		if (att[j].log_line > 0) {
			last = att[j].log_line - 1;
			break;
		}
	return tq_tails_read(q, id, first, last, t, err);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s != NULL && s[1] != '\0' ? s + 1 : p;
}

/* ---- output ---- */

static void field(const char *key, const char *val, int *oom)
{
	char *e = val != NULL ? cli_esc(val, 0, NULL) : NULL;

	if (val != NULL && e == NULL)
		*oom = 1;
	printf("%-11s %s\n", key, e != NULL ? e : "-");
	free(e);
}

static void retry_text(int64_t at, int64_t from, char *buf, size_t n)
{
	char when[32], in[32];

	if (at <= 0) {
		snprintf(buf, n, "-");
		return;
	}
	tq_format_time(at, when, sizeof(when));
	tq_format_duration(at > from ? at - from : 0, in, sizeof(in));
	snprintf(buf, n, "%s (%s after the attempt ended)", when, in);
}

static const char *cat_or_null(enum tq_category c)
{
	return c != TQ_CAT_NONE ? tq_category_name(c) : NULL;
}

static int print_human(int64_t id, const struct tq_attempt *a,
		       const struct tq_classification *c, const char *explain)
{
	char buf[128], stored[TQ_CLASSIFY_REASON_MAX + 64];
	int oom = 0;

	cli_output_init();
	if (a->signal > 0)
		snprintf(buf, sizeof(buf), "signal %d", a->signal);
	else
		snprintf(buf, sizeof(buf), "exit code %d", a->exit_code);
	printf("task %lld, attempt %d: %s, %s\n", (long long)id, a->attempt,
	       tq_outcome_name(a->outcome), buf);
	field("category:", c->category != TQ_CAT_NONE ? tq_category_name(c->category)
						       : "none (succeeded)", &oom);
	field("transient:", c->transient ? "yes (retried)" : "no", &oom);
	retry_text(c->retry_at, a->ended_at, buf, sizeof(buf));
	field("retry at:", buf, &oom);
	field("rule:", c->rule, &oom);
	field("reason:", c->reason, &oom);
	snprintf(stored, sizeof(stored), "%s: %s",
		 a->category != TQ_CAT_NONE ? tq_category_name(a->category) : "none",
		 a->reason != NULL ? a->reason : "-");
	field("stored:", stored, &oom);
	if (explain != NULL) {
		const char *p = explain;

		printf("\nexplain:\n");
		while (*p != '\0') {
			size_t k = strcspn(p, "\n");
			char *line = strndup(p, k), *e = line ? cli_esc(line, 0, NULL) : NULL;

			if (e == NULL)
				oom = 1;
			else
				printf("  %s\n", e);
			free(e);
			free(line);
			p += k + (p[k] == '\n');
		}
	}
	return oom ? TQ_ENOMEM : 0;
}

static int print_json(int64_t id, const struct tq_attempt *a,
		      const struct tq_classification *c, const char *explain)
{
	cJSON *o = cJSON_CreateObject(), *st = cJSON_CreateObject();
	int oom = o == NULL || st == NULL;

	cli_json_int(o, "id", id, 1, &oom);
	cli_json_int(o, "attempt", a->attempt, 1, &oom);
	cli_json_name(o, "outcome", tq_outcome_name(a->outcome), &oom);
	cli_json_int(o, "exit_code", a->exit_code, a->exit_code >= 0, &oom);
	cli_json_int(o, "signal", a->signal, a->signal > 0, &oom);
	cli_json_name(o, "category", cat_or_null(c->category), &oom);
	cli_json_bool(o, "transient", c->transient, &oom);
	cli_json_int(o, "retry_at", c->retry_at, c->retry_at > 0, &oom);
	cli_json_bytes(o, "rule", c->rule, &oom);
	cli_json_bytes(o, "reason", c->reason, &oom);
	cli_json_name(st, "category", cat_or_null(a->category), &oom);
	cli_json_bytes(st, "reason", a->reason, &oom);
	cli_json_int(st, "retry_at", a->retry_at, a->retry_at > 0, &oom);
	if (!oom && !cJSON_AddItemToObject(o, "stored", st))
		oom = 1;
	else if (!oom)
		st = NULL;
	if (explain != NULL)
		cli_json_bytes(o, "explain", explain, &oom);
	if (!oom)
		oom = cli_json_print(o, stdout) < 0;
	cJSON_Delete(st);
	cJSON_Delete(o);
	return oom ? TQ_ENOMEM : 0;
}

/* ---- the command ---- */

/* The attempt asked for (the last by default), or an error printed. */
static int pick_attempt(const struct cli_ctx *c, const struct classify_req *r,
			const struct tq_attempt *att, size_t n, size_t *k)
{
	if (n == 0)
		return cli_runtime(c, "task %lld has not run yet", (long long)r->id);
	*k = n - 1;
	if (r->attempt > 0) {
		for (*k = 0; *k < n && att[*k].attempt != r->attempt; (*k)++)
			;
		if (*k == n)
			return cli_usage(c, "task %lld has no attempt %lld (it has %d to %d)",
					 (long long)r->id, (long long)r->attempt, att[0].attempt,
					 att[n - 1].attempt);
	}
	if (att[*k].outcome == TQ_OUT_NONE)
		return cli_runtime(c, "task %lld: attempt %d has not finished", (long long)r->id,
				   att[*k].attempt);
	return CLI_OK;
}

/* The reason (and the explanation) can quote the output, and with it a
 * credential the task printed: mask them as the worker masked the reason it
 * stored (secret.h), so the two can be compared. Out of memory masks URL
 * credentials only. */
static void mask_secrets(const struct tq_task *t, struct tq_classification *out,
			 char *explain)
{
	struct tq_secrets s = TQ_SECRETS_INIT;

	tq_secrets_add_env(&s, t->env, t->envc, NULL);
	tq_secrets_mask_str(&s, out->reason, sizeof(out->reason));
	if (explain != NULL)
		tq_secrets_mask_str(&s, explain, TQ_CLASSIFY_EXPLAIN_MAX);
	tq_secrets_release(&s);
}

static int classify_task(const struct cli_ctx *c, const struct classify_req *r,
			 const struct tq_rules *rules)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	struct tq_task t = { 0 };
	struct tq_attempt *att = NULL;
	struct tq_tails tl = TQ_TAILS_INIT;
	struct tq_classification out;
	char *explain = NULL;
	size_t n = 0, k = 0;
	int rc;

	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	if (tq_queue_get(q, r->id, TQ_GET_ENV, &t, &err) < 0 ||
	    tq_queue_attempts(q, r->id, &att, &n, &err) < 0)
		rc = cli_fail(c, &err);
	if (rc == CLI_OK)
		rc = pick_attempt(c, r, att, n, &k);
	if (rc == CLI_OK && read_tails(q, r->id, att, n, k, &tl, &err) < 0)
		rc = cli_fail(c, &err);
	if (rc == CLI_OK && r->explain &&
	    (explain = malloc(TQ_CLASSIFY_EXPLAIN_MAX)) == NULL)
		rc = cli_runtime(c, "out of memory");
	if (rc == CLI_OK) {
		struct tq_classify_input in = {
			.outcome = att[k].outcome, .exit_code = att[k].exit_code,
			.signal = att[k].signal,
			.program = t.argc > 0 ? base_name(t.argv[0]) : NULL, .agent = t.agent,
			.out_tail = tl.buf[0] ? tl.buf[0] : "", .out_len = tl.len[0],
			.err_tail = tl.buf[1] ? tl.buf[1] : "", .err_len = tl.len[1],
			.now_ms = att[k].ended_at > 0 ? att[k].ended_at : tq_now_ms(),
		};

		tq_classify(rules, &in, &out, explain, explain ? TQ_CLASSIFY_EXPLAIN_MAX : 0);
		mask_secrets(&t, &out, explain);
		if ((r->json ? print_json(r->id, &att[k], &out, explain)
			     : print_human(r->id, &att[k], &out, explain)) < 0)
			rc = cli_runtime(c, "out of memory");
	}
	free(explain);
	tq_tails_release(&tl);
	tq_attempt_list_free(att, n);
	tq_task_release(&t);
	tq_queue_close(q);
	return rc;
}

static int take_opt(const struct cli_ctx *c, struct classify_req *r, int k,
		    const struct cli_args *a)
{
	struct tq_err err = TQ_ERR_INIT;

	switch (k) {
	case OPT_ATTEMPT:
		if (tq_parse_int(a->val, 1, INT32_MAX, &r->attempt, &err) < 0)
			return cli_usage(c, "--attempt %s (attempts count from 1)", err.msg);
		return CLI_OK;
	case OPT_EXPLAIN: r->explain = 1; return CLI_OK;
	case OPT_JSON: r->json = 1; return CLI_OK;
	case OPT_CONFIG: r->config = a->val; return CLI_OK;
	case CLI_OPT_ARG:
		if (r->have_id)
			return cli_usage(c, "unexpected argument \"%s\"; classify takes one id",
					 a->val);
		r->have_id = 1;
		return cli_parse_id(c, a->val, &r->id);
	default:
		return CLI_USAGE;
	}
}

static int run_classify(struct cli_ctx *c, int argc, char **argv)
{
	struct classify_req r = { 0 };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_rules *rules = NULL;
	struct cli_args a;
	int k, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, classify_opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(&cli_cmd_classify, stdout);
		rc = take_opt(c, &r, k, &a);
	}
	if (rc != CLI_OK)
		return rc;
	if (!r.have_id)
		return cli_usage_no_id(c);
	if (r.config != NULL && r.config[0] == '\0')
		return cli_usage(c, "--config \"\": expected a file such as ~/.config/taskq/"
				 "config.json");
	if (tq_rules_load(&rules, r.config, &err) < 0)
		return cli_fail(c, &err);
	rc = classify_task(c, &r, rules);
	tq_rules_free(rules);
	return rc;
}

const struct cli_cmd cli_cmd_classify = {
	.name = "classify",
	.synopsis = "taskq classify ID [--attempt N] [--explain] [--config FILE] [--json]",
	.summary = "Show why an attempt failed and whether it is retried, rule by rule.",
	.help = classify_help,
	.run = run_classify,
};

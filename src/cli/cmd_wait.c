/*
 * cmd_wait.c - `taskq wait ID...` and `taskq wait --batch NAME`: block until
 * the tasks have ended, then exit with how they ended, so a cron line or a
 * script can branch on it.
 *
 * Waiting polls the store (ops/wait.h, tq_ops_wait_ended: the first task
 * still open, or the batch's open count, with a growing pause; no
 * supervisor, lock or file needed). The wait ends when no task is queued,
 * scheduled (a retry's backoff), blocked or running; a task of a batch
 * retried by hand while we wait is open again.
 *
 * Exit status: 0 when every task succeeded; for one task its own status
 * (cli_task_status: N, 128+N, 124, 127, 1); for several or a batch 1 when
 * any did not succeed; 124 when --timeout passed first; 2 for an unknown id
 * or batch.
 */
#include "cli.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/sys.h"
#include "ops/kill.h"
#include "ops/wait.h"
#include "worker/supervisor.h"

#define WAIT_EXIT_TIMEOUT 124      /* as timeout(1) */
#define WAIT_SHOW_FAILURES 20      /* human output: failures listed by name */

enum { O_BATCH = 256, O_TIMEOUT, O_JSON };

struct waiter {
	const struct cli_ctx *c;
	struct tq_queue *q;
	int json;
	int64_t timeout_ms;        /* -1: none */
	const char *batch;         /* --batch, or NULL */
	/* ids */
	int64_t *ids;
	struct tq_task *tasks;     /* one per id, the last read */
	int *gone;                 /* removed while we waited */
	size_t n;
	/* batch */
	struct tq_batch b;
};

/* ------------------------------------------------------------------ */
/* Reading                                                            */

/* Read every id once; unknown ids are usage errors, each reported. */
static int load_ids(struct waiter *w)
{
	struct tq_err err = TQ_ERR_INIT;
	int rc = CLI_OK;

	for (size_t i = 0; i < w->n; i++) {
		if (tq_queue_get(w->q, w->ids[i], 0, &w->tasks[i], &err) < 0) {
			int code = cli_fail(w->c, &err);
			rc = code > rc ? code : rc;
		}
	}
	return rc;
}

/* Poll until done or the deadline (ops/wait.h). Returns 1 when done, 0 on
 * timeout; *rc is set on an error (then 1 is returned). */
static int wait_loop(struct waiter *w, int *rc)
{
	struct tq_ops_tasks ts = { w->ids, w->tasks, w->gone, w->n };
	struct tq_err err = TQ_ERR_INIT;
	int64_t deadline = w->timeout_ms >= 0 ? tq_mono_ms() + w->timeout_ms
					      : TQ_OPS_NO_DEADLINE;
	int r = tq_ops_wait_ended(w->q, &ts, w->batch, &w->b, deadline, &err);

	if (r < 0) {
		*rc = cli_fail(w->c, &err);
		return 1;
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* Results                                                            */

static int ids_status(const struct waiter *w, int done)
{
	int all_ok = 1;

	if (!done)
		return WAIT_EXIT_TIMEOUT;
	for (size_t i = 0; i < w->n; i++)
		if (w->gone[i] || w->tasks[i].state != TQ_SUCCEEDED)
			all_ok = 0;
	if (all_ok)
		return CLI_OK;
	if (w->n == 1)
		return w->gone[0] ? CLI_RUNTIME : cli_task_status(&w->tasks[0]);
	return CLI_RUNTIME;
}

static int batch_status(const struct waiter *w, int done)
{
	if (!done)
		return WAIT_EXIT_TIMEOUT;
	return w->b.total > 0 && w->b.counts[TQ_SUCCEEDED] == w->b.total ? CLI_OK
									 : CLI_RUNTIME;
}

/* "failed, exit status 3: no rule matched" */
static void print_task_line(const struct tq_task *t)
{
	int st = cli_task_status(t);
	char *reason = t->reason && t->state != TQ_SUCCEEDED ? cli_esc(t->reason, 0, NULL)
							     : NULL;

	printf("%lld %s", (long long)t->id, tq_state_name(t->state));
	if (st > 0)
		printf(", exit status %d", st);
	if (t->category != TQ_CAT_NONE)
		printf(" (%s)", tq_category_name(t->category));
	if (reason != NULL)
		printf(": %s", reason);
	printf("\n");
	free(reason);
}

static void print_counts(const int64_t *counts)
{
	int first = 1;

	for (int s = 0; s < TQ_STATE_COUNT; s++) {
		if (counts[s] == 0)
			continue;
		printf("%s %lld %s", first ? ":" : ",", (long long)counts[s],
		       tq_state_name((enum tq_state)s));
		first = 0;
	}
	printf("\n");
}

/* The tasks of the batch that ended without succeeding (at most limit;
 * -1: all), or every task with all. */
static int batch_tasks(struct waiter *w, int all, int64_t limit, struct tq_task **ts,
		       size_t *n)
{
	struct tq_filter f = TQ_FILTER_INIT;
	struct tq_err err = TQ_ERR_INIT;

	f.batch = w->batch;
	f.limit = limit;
	if (!all)
		f.states = 1u << TQ_FAILED | 1u << TQ_TIMED_OUT | 1u << TQ_KILLED |
			   1u << TQ_CANCELED;
	if (w->b.total == 0) {
		*ts = NULL;
		*n = 0;
		return CLI_OK;
	}
	if (tq_queue_list(w->q, &f, ts, n, &err) < 0)
		return cli_fail(w->c, &err);
	return CLI_OK;
}

static int print_human(struct waiter *w)
{
	struct tq_task *ts = NULL;
	size_t n = 0;
	int rc;
	char *name;

	if (w->batch == NULL) {
		for (size_t i = 0; i < w->n; i++)
			if (w->gone[i])
				printf("%lld removed while waiting\n", (long long)w->ids[i]);
			else
				print_task_line(&w->tasks[i]);
		return CLI_OK;
	}
	if ((name = cli_esc(w->batch, 0, NULL)) == NULL)
		return cli_runtime(w->c, "out of memory");
	printf("batch %s: %lld task%s", name, (long long)w->b.total,
	       w->b.total == 1 ? "" : "s");
	free(name);
	print_counts(w->b.counts);
	if ((rc = batch_tasks(w, 0, WAIT_SHOW_FAILURES + 1, &ts, &n)) != CLI_OK)
		return rc;
	for (size_t i = 0; i < n && i < WAIT_SHOW_FAILURES; i++)
		print_task_line(&ts[i]);
	if (n > WAIT_SHOW_FAILURES)
		printf("... and more: taskq batch show %s\n", w->batch);
	tq_task_list_free(ts, n);
	return CLI_OK;
}


static void add_item(cJSON *arr, cJSON *x, int *oom)
{
	if (x == NULL || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		*oom = 1;
	}
}

static int print_json(struct waiter *w, int done, int status)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray(), *cnt = NULL;
	int64_t counts[TQ_STATE_COUNT] = { 0 }, total = 0;
	struct tq_task *ts = NULL;
	size_t n = 0;
	int oom = o == NULL || arr == NULL, rc = CLI_OK;

	if (w->batch) {
		memcpy(counts, w->b.counts, sizeof(counts));
		total = w->b.total;
		if ((rc = batch_tasks(w, 1, -1, &ts, &n)) != CLI_OK)
			goto out;
		for (size_t i = 0; !oom && i < n; i++)
			add_item(arr, cli_task_summary_json(&ts[i], &oom), &oom);
	} else {
		for (size_t i = 0; !oom && i < w->n; i++) {
			cJSON *x;
			if (w->gone[i]) {
				x = cJSON_CreateObject();
				cli_json_int(x, "id", w->ids[i], 1, &oom);
				cli_json_bool(x, "removed", 1, &oom);
			} else {
				x = cli_task_summary_json(&w->tasks[i], &oom);
				counts[w->tasks[i].state]++;
			}
			total++;
			add_item(arr, x, &oom);
		}
	}
	cli_json_bytes(o, "batch", w->batch, &oom);
	cli_json_bool(o, "done", done, &oom);
	cli_json_bool(o, "timed_out", !done, &oom);
	cli_json_int(o, "exit_status", status, 1, &oom);
	cli_json_int(o, "total", total, 1, &oom);
	if (!oom && (cnt = cJSON_AddObjectToObject(o, "counts")) == NULL)
		oom = 1;
	for (int s = 0; !oom && s < TQ_STATE_COUNT; s++)
		cli_json_int(cnt, tq_state_name((enum tq_state)s), counts[s], 1, &oom);
	if (!oom && cJSON_AddItemToObject(o, "tasks", arr))
		arr = NULL; /* o owns it */
	else
		oom = 1;
	if (!oom && cli_json_print(o, stdout) < 0)
		oom = 1;
	if (oom)
		rc = cli_runtime(w->c, "out of memory");
out:
	tq_task_list_free(ts, n);
	cJSON_Delete(arr);
	cJSON_Delete(o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The command                                                        */

static int parse_args(struct waiter *w, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "batch", O_BATCH, 1, 'b' }, { "timeout", O_TIMEOUT, 1, 't' },
		{ "json", O_JSON, 0, 0 }, { NULL, 0, 0, 0 },
	};
	struct tq_err err = TQ_ERR_INIT;
	struct cli_args a;
	int k, rc = CLI_OK;

	if ((w->ids = calloc((size_t)argc, sizeof(*w->ids))) == NULL)
		return cli_runtime(w->c, "out of memory");
	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(w->c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: cli_print_help(w->c->cmd, stdout); return -1;
		case O_BATCH:
			if (a.val[0] == '\0' || strlen(a.val) >= TQ_NAME_MAX)
				return cli_usage(w->c, "--batch \"%s\": expected a batch name of "
						 "1 to %d bytes", a.val, TQ_NAME_MAX - 1);
			if (cli_check_text(w->c, "--batch", a.val) != CLI_OK)
				return CLI_USAGE;
			w->batch = a.val;
			break;
		case O_TIMEOUT:
			if (tq_parse_duration(a.val, &w->timeout_ms, &err) < 0)
				return cli_usage(w->c, "--timeout %s", err.msg);
			break;
		case O_JSON: w->json = 1; break;
		case CLI_OPT_ARG: rc = cli_parse_id(w->c, a.val, &w->ids[w->n++]); break;
		default: return CLI_USAGE;
		}
	}
	if (rc != CLI_OK)
		return rc;
	if (w->batch && w->n > 0)
		return cli_usage(w->c, "give task ids or --batch NAME, not both");
	if (!w->batch && w->n == 0)
		return cli_usage(w->c, "no task id or --batch given; usage: %s",
				 w->c->cmd->synopsis);
	return CLI_OK;
}

/* One line on stderr when nothing can run the open tasks: waiting would
 * last forever (a cron line that forgot `taskq serve`). */
static void warn_no_supervisor(const struct waiter *w)
{
	if (!tq_supervisor_running(w->c->home, NULL))
		fprintf(stderr, "taskq: wait: note: no supervisor is running; the tasks "
			"wait for one (taskq serve)\n");
}

/*
 * The one line at a timeout. Tasks that still read `running` but have
 * ended, their end kept until the store takes it (a locked database, a
 * full disk: worker/endrec.h), are named: they are not running any more,
 * and their end will be written without anyone's help.
 */
static void say_timed_out(struct waiter *w)
{
	struct tq_filter f = TQ_FILTER_INIT;
	struct tq_task *ts = NULL, *one = NULL;
	size_t n = 0, ended = 0;
	char buf[64], how[96] = "", first[96] = "";

	tq_format_duration(w->timeout_ms, buf, sizeof(buf));
	if (w->batch) {
		f.batch = w->batch;
		f.states = 1u << TQ_RUNNING;
		f.limit = -1;
		if (tq_queue_list(w->q, &f, &ts, &n, NULL) < 0)
			n = 0;
		one = ts;
	} else {
		one = w->tasks;
		n = w->n;
	}
	for (size_t i = 0; i < n; i++) {
		if ((w->batch == NULL && w->gone[i]) ||
		    !tq_ops_end_recording(w->c->home, &one[i], how, sizeof(how)))
			continue;
		if (ended++ == 0)
			snprintf(first, sizeof(first), "task %lld has ended (%.60s)",
				 (long long)one[i].id, how);
	}
	tq_task_list_free(ts, w->batch ? n : 0);
	fflush(stdout);
	if (ended == 1)
		fprintf(stderr, "taskq: wait: timed out after %s; %s and its end is being "
			"recorded%s\n", buf, first, n > 1 ? "; the other tasks go on" : "");
	else if (ended > 1)
		fprintf(stderr, "taskq: wait: timed out after %s; %zu tasks have ended and "
			"their ends are being recorded; the others go on\n", buf, ended);
	else
		fprintf(stderr, "taskq: wait: timed out after %s; the tasks go on\n", buf);
}

static int run_wait(struct cli_ctx *c, int argc, char **argv)
{
	struct waiter w = { .c = c, .timeout_ms = -1 };
	int rc = parse_args(&w, argc, argv), done = 0, status;
	int64_t retry_ms = 0;

	if (rc != CLI_OK)
		goto out;
	/* a store that cannot be reached (a database server restarting):
	 * tried again, as the wait's looks are (ops/wait.h) */
	if ((rc = cli_retry_ms(c, &retry_ms)) != CLI_OK ||
	    (rc = cli_open_retry(c, TQ_OPEN_NOCREATE, retry_ms, &w.q)) != CLI_OK)
		goto out;
	cli_output_init();
	if (w.batch) {
		struct tq_err err = TQ_ERR_INIT;
		if (tq_queue_batch_get(w.q, w.batch, &w.b, &err) < 0) {
			rc = cli_fail(c, &err);
			goto out;
		}
		done = tq_batch_done(&w.b);
	} else {
		w.tasks = calloc(w.n, sizeof(*w.tasks));
		w.gone = calloc(w.n, sizeof(*w.gone));
		if (w.tasks == NULL || w.gone == NULL) {
			rc = cli_runtime(c, "out of memory");
			goto out;
		}
		if ((rc = load_ids(&w)) != CLI_OK)
			goto out;
		done = 1;
		for (size_t i = 0; i < w.n; i++)
			done = done && tq_state_final(w.tasks[i].state);
	}
	if (!done) {
		warn_no_supervisor(&w);
		done = wait_loop(&w, &rc);
		if (rc != CLI_OK)
			goto out;
	}
	status = w.batch ? batch_status(&w, done) : ids_status(&w, done);
	rc = w.json ? print_json(&w, done, status) : print_human(&w);
	if (rc == CLI_OK && !done)
		say_timed_out(&w);
	if (rc == CLI_OK)
		rc = status;
out:
	if (w.tasks)
		for (size_t i = 0; i < w.n; i++)
			tq_task_release(&w.tasks[i]);
	free(w.tasks);
	free(w.gone);
	free(w.ids);
	tq_batch_release(&w.b);
	tq_queue_close(w.q);
	return rc < 0 ? CLI_OK : rc;
}

const struct cli_cmd cli_cmd_wait = {
	.name = "wait",
	.synopsis = "taskq wait ID... | --batch NAME [--timeout DUR] [--json]",
	.summary = "Wait for tasks or a batch to end.",
	.help =
	"Blocks until every task given has ended (succeeded, failed, timed out,\n"
	"killed or canceled), or every task of the batch has. A task waiting for a\n"
	"retry has not ended. Then prints one line per task (for a batch: its counts\n"
	"and the tasks that did not succeed). Needs no running supervisor to wait,\n"
	"but one must run for the tasks to end.\n"
	"\n"
	"  -b, --batch NAME    wait for every task of the batch\n"
	"  -t, --timeout DUR   give up after DUR (30s, 5m, 2h): exit 124; the tasks\n"
	"                      go on\n"
	"      --json          one object: batch, done, timed_out, exit_status,\n"
	"                      total, counts (by state) and tasks (id, name, state,\n"
	"                      outcome, exit_code, signal, exit_status, reason,\n"
	"                      category)\n"
	"\n"
	"Exit status: 0 if every task succeeded; for a single ID its own status\n"
	"(N for exit code N, 128+N for signal N, 124 timed out, 127 not started,\n"
	"1 otherwise; see taskq help log); for several ids or a batch, 1 if any did\n"
	"not succeed; 124 if --timeout passed first; 2 for an unknown id or batch.\n"
	"\n"
	"A task whose process has ended while the database could not take its end\n"
	"(locked, or the disk full) still reads running until its worker (or the\n"
	"supervisor) writes that end from HOME/ends/; the wait goes on until then,\n"
	"and a --timeout that passes first says which tasks are in that state.\n",
	.run = run_wait,
};

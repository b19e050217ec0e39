/*
 * cmd_serve.c - running the queue: `taskq serve`, `taskq drain`,
 * `taskq status`, `taskq shutdown`, and the internal `taskq worker` that
 * the supervisor starts. The work itself is in src/worker; this file parses
 * flags and reports.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/diag.h"
#include "common/parse.h"
#include "common/sys.h"
#include "ops/shutdown.h"
#include "output.h"
#include "proc/proc.h"
#include "queue/home.h"
#include "worker/endrec.h"
#include "worker/supervisor.h"
#include "worker/worker.h"

/* How long shutdown waits beyond the grace (running tasks get the grace,
 * then their kill grace) before saying the supervisor has not stopped. */
#define SHUTDOWN_WAIT_MARGIN_MS 60000

enum { O_WORKERS = 256, O_FOREGROUND, O_GRACE, O_LEASE, O_NOW, O_SLOT, O_SUP, O_JSON,
       O_NOWAIT, O_RETENTION, O_LOG_SIZE, O_LOG_FILES, O_MAX_WARM };

/* The config file read for "max_warm" at most this long. */
#define SERVE_CONFIG_MAX (1024 * 1024)

static int parse_ms(const struct cli_ctx *c, const struct cli_args *a, int64_t *ms)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_parse_duration(a->val, ms, &err) < 0)
		return cli_usage(c, "%s %s", a->flag, err.msg);
	return CLI_OK;
}

static int parse_workers(const struct cli_ctx *c, const struct cli_args *a, int *n)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	if (tq_parse_int(a->val, 1, TQ_MAX_WORKERS, &v, &err) < 0)
		return cli_usage(c, "%s %s", a->flag, err.msg);
	*n = (int)v;
	return CLI_OK;
}

static int home_and_exe(const struct cli_ctx *c, char *home, char *exe)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_home_resolve(c->home_flag, home, PATH_MAX, &err) < 0 ||
	    tq_self_exe(exe, PATH_MAX, &err) < 0)
		return cli_fail(c, &err);
	return CLI_OK;
}

/* --log-size SIZE, --log-files N: the bounds of the background
 * supervisor's serve.log (serve; and the worker, which gets them from its
 * supervisor). */
static int parse_log(const struct cli_ctx *c, const struct cli_args *a, int k,
		     int64_t *size, int *files)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	if (k == O_LOG_FILES) {
		if (tq_parse_int(a->val, 1, TQ_DIAG_LOG_FILES_MAX, &v, &err) < 0)
			return cli_usage(c, "%s %s", a->flag, err.msg);
		*files = (int)v;
		return CLI_OK;
	}
	if (tq_parse_size(a->val, &v, &err) < 0)
		return cli_usage(c, "%s %s", a->flag, err.msg);
	if (v < TQ_DIAG_LOG_SIZE_MIN || v > TQ_DIAG_LOG_SIZE_MAX)
		return cli_usage(c, "%s \"%s\": expected a size from 64K to 1T, such as 10M",
				 a->flag, a->val);
	*size = v;
	return CLI_OK;
}

/* --max-warm N: 1 to TQ_MAX_WARM. */
static int parse_max_warm(const struct cli_ctx *c, const struct cli_args *a, int *n)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	if (tq_parse_int(a->val, 1, TQ_MAX_WARM, &v, &err) < 0)
		return cli_usage(c, "%s %s", a->flag, err.msg);
	*n = (int)v;
	return CLI_OK;
}

/*
 * The config file's "max_warm" (common/config.h; this file reads it: the
 * supervisor's option) into *n, which keeps its value when the file or the
 * key is missing or null. A number of the range, checked as --max-warm's
 * text is; anything else is TQ_EINVAL naming the file.
 */
static int config_max_warm(int *n, struct tq_err *err)
{
	char path[PATH_MAX], num[64], *text = NULL;
	const cJSON *v;
	cJSON *doc = NULL;
	size_t len = 0;
	int must = 0, rc;
	int64_t x;

	if ((rc = tq_config_path(path, sizeof(path), &must, err)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = tq_config_read(path, must, SERVE_CONFIG_MAX, &text, &len, err)) < 0 ||
	    text == NULL)
		return rc;
	if ((rc = tq_config_parse(path, text, len, &doc, err)) < 0)
		goto out;
	v = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "max_warm") : NULL;
	if (v == NULL || cJSON_IsNull(v))
		goto out;
	if (!cJSON_IsNumber(v)) {
		rc = tq_err_set(err, TQ_EINVAL, "%s: \"max_warm\" must be a number from 1 to %d",
				path, TQ_MAX_WARM);
		goto out;
	}
	/* its shortest exact text: 4.5 and 1e9 stay what they are, refused */
	snprintf(num, sizeof(num), "%.17g", v->valuedouble);
	if (tq_parse_int(num, 1, TQ_MAX_WARM, &x, err) < 0) {
		rc = tq_err_set(err, TQ_EINVAL, "%s: \"max_warm\": %s", path, err->msg);
		goto out;
	}
	*n = (int)x;
out:
	cJSON_Delete(doc);
	free(text);
	return rc;
}

/* serve and drain share their flags. */
static int run_supervisor(struct cli_ctx *c, int argc, char **argv, int drain)
{
	static const struct cli_opt opts[] = {
		{ "workers", O_WORKERS, 1, 'w' }, { "foreground", O_FOREGROUND, 0, 'f' },
		{ "grace", O_GRACE, 1, 0 }, { "lease", O_LEASE, 1, 0 },
		{ "retention", O_RETENTION, 1, 0 }, { "log-size", O_LOG_SIZE, 1, 0 },
		{ "log-files", O_LOG_FILES, 1, 0 }, { "max-warm", O_MAX_WARM, 1, 0 },
		{ NULL, 0, 0, 0 },
	};
	char home[PATH_MAX], exe[PATH_MAX];
	struct tq_err err = TQ_ERR_INIT;
	int max_warm = 0; /* 0: not given */
	struct tq_serve_opts o = {
		.workers = TQ_DEFAULT_WORKERS, .foreground = drain, .drain = drain,
		.grace_ms = TQ_DEFAULT_SHUTDOWN_GRACE_MS, .lease_ms = TQ_DEFAULT_LEASE_MS,
		.retention_ms = -1, /* the stored setting, else the default */
		.max_warm = TQ_DEFAULT_MAX_WARM,
	};
	struct cli_args a;
	int k, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_WORKERS: rc = parse_workers(c, &a, &o.workers); break;
		case O_FOREGROUND: o.foreground = 1; break;
		case O_GRACE: rc = parse_ms(c, &a, &o.grace_ms); break;
		case O_LEASE: rc = parse_ms(c, &a, &o.lease_ms); break;
		case O_RETENTION: rc = parse_ms(c, &a, &o.retention_ms); break;
		case O_MAX_WARM: rc = parse_max_warm(c, &a, &max_warm); break;
		case O_LOG_SIZE:
		case O_LOG_FILES:
			if (drain)
				return cli_usage(c, "%s is for serve: drain logs to stderr", a.flag);
			rc = parse_log(c, &a, k, &o.log_size, &o.log_files);
			break;
		case CLI_OPT_ARG: return cli_usage(c, "unexpected argument \"%s\"", a.val);
		default: return CLI_USAGE;
		}
	}
	if (rc != CLI_OK)
		return rc;
	if (o.lease_ms < 300)
		return cli_usage(c, "--lease must be at least 300ms");
	if (max_warm > 0)
		o.max_warm = max_warm;
	else if (config_max_warm(&o.max_warm, &err) < 0)
		return cli_fail(c, &err);
	if ((rc = home_and_exe(c, home, exe)) != CLI_OK)
		return rc;
	o.home = home;
	o.exe = exe;
	fflush(stdout);
	return tq_supervisor_main(&o);
}

static int run_serve(struct cli_ctx *c, int argc, char **argv)
{
	return run_supervisor(c, argc, argv, 0);
}

static int run_drain(struct cli_ctx *c, int argc, char **argv)
{
	return run_supervisor(c, argc, argv, 1);
}

static int run_worker(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "slot", O_SLOT, 1, 0 }, { "lease", O_LEASE, 1, 0 },
		{ "grace", O_GRACE, 1, 0 }, { "supervisor", O_SUP, 1, 0 },
		{ "log-size", O_LOG_SIZE, 1, 0 }, { "log-files", O_LOG_FILES, 1, 0 },
		{ NULL, 0, 0, 0 },
	};
	int64_t log_size = TQ_DIAG_LOG_SIZE;
	int log_files = TQ_DIAG_LOG_FILES;
	char home[PATH_MAX];
	struct tq_worker_opts o = { .slot = 1, .lease_ms = TQ_DEFAULT_LEASE_MS,
				    .grace_ms = TQ_DEFAULT_SHUTDOWN_GRACE_MS };
	struct tq_err err = TQ_ERR_INIT;
	struct cli_args a;
	int64_t v;
	int k, rc = CLI_OK;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_SLOT:
		case O_SUP:
			if (tq_parse_int(a.val, 1, INT_MAX, &v, &err) < 0)
				return cli_usage(c, "%s %s", a.flag, err.msg);
			*(k == O_SLOT ? &o.slot : &o.supervisor_pid) = (int)v;
			break;
		case O_LEASE: rc = parse_ms(c, &a, &o.lease_ms); break;
		case O_GRACE: rc = parse_ms(c, &a, &o.grace_ms); break;
		case O_LOG_SIZE:
		case O_LOG_FILES: rc = parse_log(c, &a, k, &log_size, &log_files); break;
		default: return CLI_USAGE;
		}
	}
	if (rc != CLI_OK)
		return rc;
	if (tq_home_resolve(c->home_flag, home, sizeof(home), &err) < 0)
		return cli_fail(c, &err);
	o.home = home;
	/* A background supervisor's workers write to its serve.log: follow
	 * it across rotations, and rotate it too (diag.h). */
	tq_diag_log_follow(home, log_size, log_files);
	return tq_worker_main(&o);
}

/* ------------------------------------------------------------------ */
/* status                                                             */

struct status {
	pid_t pid;
	int running;
	int64_t started_at;
	int64_t workers_target;
	int64_t max_warm;          /* its --max-warm (meta) */
	size_t nwarm;              /* warm agent processes recorded, any node */
	char *containment;         /* how its workers contain tasks (meta) */
	int64_t retention_ms;      /* in force, or that the next supervisor uses */
	int64_t log_size;          /* serve.log's bounds, the same way */
	int64_t log_files;
	int on_exit_due;           /* some task's --on-exit hook is owed */
	int64_t counts[TQ_STATE_COUNT];
	struct tq_worker_info *ws;
	size_t nws;
	struct tq_group *gs;
	size_t ngs;
	struct tq_supervisor_info *sups; /* every node's supervisor row */
	size_t nsups;
	char self[TQ_NODE_MAX + 1]; /* this node ("": not known: every worker ours) */
	int nodes;                  /* nodes the store knows of (rows of workers
				     * and supervisors): > 1 lists them by node */
};

/* How long another node's idle worker may go without a heartbeat before
 * status calls it dead: three of its idle beats (worker.c beats every 10 s
 * while idle). One that runs a task is alive while it holds the lease. */
#define FOREIGN_BEAT_MS (3 * 10000)

static int64_t meta_int(struct tq_queue *q, const char *key)
{
	char *v = NULL;
	int64_t n = 0;

	if (tq_queue_meta_get(q, key, &v, NULL) == 0 && v != NULL)
		n = strtoll(v, NULL, 10);
	free(v);
	return n;
}

/* How many sessions record a warm agent process, on any node. */
static int warm_count(struct tq_queue *q, size_t *n, struct tq_err *err)
{
	struct tq_session_row *rows = NULL;
	int rc = tq_queue_warm_list(q, NULL, &rows, n, err);

	tq_session_row_list_free(rows, rc < 0 ? 0 : *n);
	return rc;
}

/* The retention a supervisor stored, else the default it would use. */
static int64_t retention_of(struct tq_queue *q)
{
	struct tq_err err = TQ_ERR_INIT;
	char *v = NULL;
	int64_t ms = TQ_DEFAULT_RETENTION_MS;

	if (tq_queue_meta_get(q, TQ_META_RETENTION, &v, NULL) == 0 && v != NULL &&
	    tq_parse_int(v, 0, INT64_MAX, &ms, &err) < 0)
		ms = TQ_DEFAULT_RETENTION_MS;
	free(v);
	return ms;
}

/* A bound of serve.log a supervisor stored, else the default it would use
 * (as the supervisor reads it: a value out of [lo, hi] is not used). */
static int64_t log_bound_of(struct tq_queue *q, const char *key, int64_t lo, int64_t hi,
			    int64_t def)
{
	char *v = NULL;
	int64_t n = def;

	if (tq_queue_meta_get(q, key, &v, NULL) == 0 && v != NULL &&
	    tq_parse_int(v, lo, hi, &n, NULL) < 0)
		n = def;
	free(v);
	return n;
}

/* Whether node is another node than this one (issue 20): its pids name
 * nothing here. A row without a node is of this one. */
static int foreign_node(const struct status *s, const char *node)
{
	return s->self[0] != '\0' && node[0] != '\0' && strcmp(node, s->self) != 0;
}

/* Whether w runs on another node than this one. */
static int foreign(const struct status *s, const struct tq_worker_info *w)
{
	return foreign_node(s, w->node);
}

/* This node first, then the others by name (qsort's comparator has no
 * argument: the node is the process's own, set before the sort). */
static const char *sort_self;

static int node_order(const char *a, const char *b)
{
	int sa = a[0] == '\0' || strcmp(a, sort_self) == 0;
	int sb = b[0] == '\0' || strcmp(b, sort_self) == 0;

	if (sa != sb)
		return sa ? -1 : 1;
	return sa ? 0 : strcmp(a, b);
}

/* Workers by node, then in slot order (rows come in the order they
 * registered: a restarted worker 1 came after worker 2). */
static int by_slot(const void *a, const void *b)
{
	const struct tq_worker_info *x = a, *y = b;
	int c = node_order(x->node, y->node);

	if (c != 0)
		return c;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_node(const void *a, const void *b)
{
	const struct tq_supervisor_info *x = a, *y = b;

	return node_order(x->node, y->node);
}

/* The supervisor row of node, or NULL. */
static const struct tq_supervisor_info *sup_of(const struct status *s, const char *node)
{
	for (size_t i = 0; i < s->nsups; i++)
		if (strcmp(s->sups[i].node, node) == 0)
			return &s->sups[i];
	return NULL;
}

/* Whether a node's supervisor runs: this node's, by the lock of the state
 * directory (and the row is its own: the same pid); another node's, by its
 * row: not stopped, and heard from within TQ_SUPERVISOR_SILENT_MS. */
static int sup_alive(const struct status *s, const struct tq_supervisor_info *v, int64_t now)
{
	if (!foreign_node(s, v->node))
		return s->running && v->pid == (int)s->pid;
	return v->stopped_at == 0 && now - v->heartbeat_at < TQ_SUPERVISOR_SILENT_MS;
}

/* The node a row names, this node's own for a row without one. */
static const char *node_of(const struct status *s, const char *node)
{
	return foreign_node(s, node) ? node : s->self;
}

/* How many nodes the store knows of: this one, and those its supervisors'
 * and workers' rows name (both lists are sorted by node). */
static int count_nodes(const struct status *s)
{
	int n = 1;

	for (size_t i = 0; i < s->nsups; i++)
		n += foreign_node(s, s->sups[i].node);
	for (size_t i = 0; i < s->nws; i++)
		n += foreign_node(s, s->ws[i].node) && sup_of(s, s->ws[i].node) == NULL &&
		     (i == 0 || strcmp(s->ws[i].node, s->ws[i - 1].node) != 0);
	return n;
}

/* A worker's row says it runs until a supervisor records its end; one that
 * was killed while no supervisor watched (or a moment ago) still has its
 * row. Whether it lives is the kernel's answer: its pid with its start
 * time; for another node's worker, which no pid here tells, its heartbeat
 * or the lease of the task it runs. */
static int worker_alive(const struct status *s, const struct tq_worker_info *w, int64_t now)
{
	if (foreign(s, w))
		return w->task_id != 0 || now - w->heartbeat_at < FOREIGN_BEAT_MS;
	return w->pid > 0 && tq_proc_alive(w->pid, w->proc_start);
}

static int load_status(const struct cli_ctx *c, struct tq_queue *q, const char *home,
		       struct status *s)
{
	struct tq_err err = TQ_ERR_INIT;

	s->running = tq_supervisor_running(home, &s->pid);
	if (tq_node_self(s->self, sizeof(s->self), NULL) < 0)
		s->self[0] = '\0';
	s->retention_ms = retention_of(q);
	s->log_size = log_bound_of(q, TQ_META_LOG_SIZE, TQ_DIAG_LOG_SIZE_MIN,
				   TQ_DIAG_LOG_SIZE_MAX, TQ_DIAG_LOG_SIZE);
	s->log_files = log_bound_of(q, TQ_META_LOG_FILES, 1, TQ_DIAG_LOG_FILES_MAX,
				    TQ_DIAG_LOG_FILES);
	if (tq_queue_counts(q, s->counts, &err) < 0 ||
	    tq_queue_on_exit_due(q, &s->on_exit_due, &err) < 0 ||
	    tq_queue_workers(q, &s->ws, &s->nws, &err) < 0 ||
	    tq_queue_supervisors(q, &s->sups, &s->nsups, &err) < 0 ||
	    tq_queue_groups(q, &s->gs, &s->ngs, &err) < 0 ||
	    warm_count(q, &s->nwarm, &err) < 0)
		return cli_fail(c, &err);
	sort_self = s->self;
	if (s->nws > 1)
		qsort(s->ws, s->nws, sizeof(*s->ws), by_slot);
	if (s->nsups > 1)
		qsort(s->sups, s->nsups, sizeof(*s->sups), by_node);
	s->nodes = count_nodes(s);
	if (s->running) {
		/* this node's row, when it is the running supervisor's: with
		 * several nodes on one store the meta values are the last
		 * one's to start (a supervisor of an older taskq writes only
		 * those) */
		const struct tq_supervisor_info *me = sup_of(s, s->self);

		if (me != NULL && me->pid == (int)s->pid) {
			s->started_at = me->started_at;
			s->workers_target = me->workers;
			s->max_warm = me->max_warm;
			if (me->containment != NULL &&
			    (s->containment = strdup(me->containment)) == NULL)
				return cli_runtime(c, "out of memory");
			return CLI_OK;
		}
		s->started_at = meta_int(q, "supervisor_started_at");
		s->workers_target = meta_int(q, "supervisor_workers");
		s->max_warm = meta_int(q, TQ_META_MAX_WARM);
		tq_queue_meta_get(q, TQ_META_CONTAINMENT, &s->containment, NULL);
	}
	return CLI_OK;
}

/* 1 when task id's worker is recording its end: the process has ended and
 * its end waits in HOME/ends/ for the store (worker/endrec.h). */
static int recording(const char *home, int64_t id)
{
	struct tq_endrec_id *ids = NULL;
	size_t n = 0;
	int found = 0;

	if (id == 0 || tq_endrec_list(home, SIZE_MAX, &ids, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		found |= ids[i].task == id;
	free(ids);
	return found;
}

static int group_shown(const struct tq_group *g, int64_t now)
{
	return g->paused || g->paused_until > now || g->probe || g->parallel > 0 ||
	       g->running > 0 || g->queued > 0 || g->scheduled > 0 || g->blocked > 0;
}

/* "worker 1: pid 42, running task 7 (seen 1.0s ago)"; a dead one says so,
 * and what becomes of the task it held. */
static void print_worker(const char *home, const struct status *s,
			 const struct tq_worker_info *w, int supervisor, int64_t now)
{
	char seen[64];
	int alive = worker_alive(s, w, now);

	tq_format_duration(now - w->heartbeat_at, seen, sizeof(seen));
	if (foreign(s, w)) {
		/* another node's: its pid and its end records are that node's */
		if (alive && w->task_id)
			printf("worker %d: pid %d on %s, running task %lld (seen %s ago)\n",
			       w->slot, w->pid, w->node, (long long)w->task_id, seen);
		else if (alive)
			printf("worker %d: pid %d on %s, idle (seen %s ago)\n", w->slot, w->pid,
			       w->node, seen);
		else
			printf("worker %d: pid %d on %s, not heard from (seen %s ago)\n", w->slot,
			       w->pid, w->node, seen);
		return;
	}
	if (alive && recording(home, w->task_id))
		printf("worker %d: pid %d, recording the end of task %lld, which the "
		       "database has not taken yet (seen %s ago)\n", w->slot, w->pid,
		       (long long)w->task_id, seen);
	else if (alive && w->task_id)
		printf("worker %d: pid %d, running task %lld (seen %s ago)\n", w->slot, w->pid,
		       (long long)w->task_id, seen);
	else if (alive)
		printf("worker %d: pid %d, idle (seen %s ago)\n", w->slot, w->pid, seen);
	else if (w->task_id)
		printf("worker %d: pid %d, dead (was running task %lld, seen %s ago); %s\n",
		       w->slot, w->pid, (long long)w->task_id, seen,
		       supervisor ? "the supervisor recovers the task"
				  : "the next supervisor (taskq serve) recovers the task");
	else
		printf("worker %d: pid %d, dead (seen %s ago)\n", w->slot, w->pid, seen);
}

/* "node h2: supervisor pid 42, up 5m, 2 workers (seen 1.0s ago)": a node's
 * heading, when the store has several (issue 20). This node's supervisor
 * is judged by its state directory's lock, another's by its heartbeat. */
static void print_node(const struct status *s, const char *node, int64_t now)
{
	const struct tq_supervisor_info *v = sup_of(s, node);
	int self = !foreign_node(s, node);
	char up[64], seen[64];

	printf("node %s%s: ", node[0] ? node : "?", self ? " (this one)" : "");
	if (v == NULL) {
		printf("%s\n", self && s->running ? "supervisor running" : "no supervisor known");
		return;
	}
	tq_format_duration(now - v->started_at, up, sizeof(up));
	tq_format_duration(now - (v->stopped_at ? v->stopped_at : v->heartbeat_at), seen,
			   sizeof(seen));
	if (sup_alive(s, v, now))
		printf("supervisor pid %d, up %s, %d worker%s (seen %s ago)\n", v->pid, up,
		       v->workers, v->workers == 1 ? "" : "s", seen);
	else if (v->stopped_at)
		printf("no supervisor (pid %d stopped %s ago)\n", v->pid, seen);
	else if (self)
		printf("no supervisor (pid %d is gone, seen %s ago)\n", v->pid, seen);
	else
		printf("supervisor pid %d, not heard from (seen %s ago)\n", v->pid, seen);
}

/* Every worker, by node; with several nodes, each node's heading first
 * (its supervisor), a node with a supervisor row and no worker too. */
static void print_nodes(const struct status *s, const char *home, int64_t now)
{
	size_t w = 0, v = 0;

	if (s->nodes <= 1) {
		for (size_t i = 0; i < s->nws; i++)
			print_worker(home, s, &s->ws[i], s->running, now);
		return;
	}
	/* both lists are in node order: merge them */
	while (w < s->nws || v < s->nsups) {
		const char *node;
		int c = w == s->nws ? 1 : v == s->nsups ? -1
				     : node_order(s->ws[w].node, s->sups[v].node);

		node = node_of(s, c <= 0 ? s->ws[w].node : s->sups[v].node);
		print_node(s, node, now);
		if (c >= 0)
			v++;
		while (w < s->nws && node_order(s->ws[w].node, node) == 0)
			print_worker(home, s, &s->ws[w++], s->running, now);
	}
}

static void print_status_human(const struct status *s, const char *home)
{
	int64_t now = tq_now_ms();
	char buf[64], *esc;

	if (s->running) {
		tq_format_duration(s->started_at ? now - s->started_at : 0, buf, sizeof(buf));
		printf("supervisor: running, pid %d, up %s, %lld workers", (int)s->pid,
		       buf, (long long)s->workers_target);
		if (s->max_warm > 0)
			printf(", %zu warm agents (at most %lld)", s->nwarm,
			       (long long)s->max_warm);
		printf("\n");
	} else {
		printf("supervisor: not running (start one with: taskq serve)\n");
		if (s->nwarm > 0)
			printf("warm agents: %zu recorded (the next supervisor adopts or ends "
			       "them; taskq sessions)\n", s->nwarm);
	}
	if (s->running && s->containment != NULL) {
		char *c = cli_esc(s->containment, 0, NULL);
		if (c != NULL)
			printf("task processes: contained by %s\n", c);
		free(c);
	}
	/* control characters and odd bytes escaped, as every name we print */
	esc = cli_esc(home, 0, NULL);
	printf("state directory: %s\n", esc != NULL ? esc : "?");
	free(esc);
	if (s->retention_ms > 0) {
		tq_format_duration(s->retention_ms, buf, sizeof(buf));
		printf("retention: finished tasks are removed after %s\n", buf);
	} else {
		printf("retention: finished tasks are kept forever\n");
	}
	printf("tasks:");
	for (int i = 0; i < TQ_STATE_COUNT; i++)
		printf("%s %s %lld", i ? "," : "", tq_state_name((enum tq_state)i),
		       (long long)s->counts[i]);
	printf("\n");
	print_nodes(s, home, now);
	for (size_t i = 0; i < s->ngs; i++) {
		const struct tq_group *g = &s->gs[i];
		char *name;
		if (!group_shown(g, now) || (name = cli_esc(g->name, 0, NULL)) == NULL)
			continue;
		printf("group %s: %lld running, %lld queued", name, (long long)g->running,
		       (long long)g->queued);
		/* waiting for their time (a rate limit's retry) or their --after */
		if (g->scheduled > 0)
			printf(", %lld scheduled", (long long)g->scheduled);
		if (g->blocked > 0)
			printf(", %lld blocked", (long long)g->blocked);
		if (g->parallel > 0)
			printf(", parallel %lld", (long long)g->parallel);
		if (g->paused)
			printf(", paused");
		if (g->paused_until > now) {
			tq_format_time(g->paused_until, buf, sizeof(buf));
			printf(", paused until %s%s", buf, g->probe ? " (rate limit), then "
			       "probed: one task first" : "");
		} else if (g->probe && g->probe_task > 0) {
			printf(", probing: task %lld runs first, the others wait for it",
			       (long long)g->probe_task);
		} else if (g->probe) {
			printf(", probing: the next task to start runs first");
		}
		printf("\n");
		free(name);
	}
}

static cJSON *status_json(const struct status *s, const char *home)
{
	cJSON *o = cJSON_CreateObject(), *t, *w, *g;
	int64_t now = tq_now_ms();
	int oom = o == NULL;

	cJSON_AddBoolToObject(o, "supervisor_running", s->running);
	if (s->running) {
		cJSON_AddNumberToObject(o, "supervisor_pid", s->pid);
		cJSON_AddNumberToObject(o, "started_at", (double)s->started_at);
		cJSON_AddNumberToObject(o, "workers", (double)s->workers_target);
		cli_json_int(o, "max_warm", s->max_warm, s->max_warm > 0, &oom);
		if (s->containment != NULL) {
			cJSON_AddStringToObject(o, "containment",
				strncmp(s->containment, "cgroup", 6) == 0 ? "cgroup" : "record");
			cli_json_bytes(o, "containment_detail", s->containment, &oom);
		}
	}
	cli_json_int(o, "warm_agents", (int64_t)s->nwarm, 1, &oom);
	if (s->self[0] != '\0')
		cJSON_AddStringToObject(o, "node", s->self);
	else
		cJSON_AddNullToObject(o, "node");
	w = cJSON_AddArrayToObject(o, "supervisors");
	for (size_t i = 0; i < s->nsups; i++) {
		const struct tq_supervisor_info *v = &s->sups[i];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddStringToObject(x, "node", v->node);
		cJSON_AddNumberToObject(x, "pid", v->pid);
		cJSON_AddNumberToObject(x, "started_at", (double)v->started_at);
		cJSON_AddNumberToObject(x, "heartbeat_at", (double)v->heartbeat_at);
		cJSON_AddNumberToObject(x, "workers", v->workers);
		cJSON_AddNumberToObject(x, "max_warm", v->max_warm);
		cli_json_int(x, "stopped_at", v->stopped_at, v->stopped_at != 0, &oom);
		cJSON_AddBoolToObject(x, "this_node", !foreign_node(s, v->node));
		cJSON_AddBoolToObject(x, "alive", sup_alive(s, v, now));
		cJSON_AddItemToArray(w, x);
	}
	cli_json_bytes(o, "home", home, &oom);
	cJSON_AddNumberToObject(o, "retention_ms", (double)s->retention_ms);
	cJSON_AddNumberToObject(o, "serve_log_size", (double)s->log_size);
	cJSON_AddNumberToObject(o, "serve_log_files", (double)s->log_files);
	cJSON_AddBoolToObject(o, "on_exit_due", s->on_exit_due);
	t = cJSON_AddObjectToObject(o, "tasks");
	for (int i = 0; i < TQ_STATE_COUNT; i++)
		cJSON_AddNumberToObject(t, tq_state_name((enum tq_state)i), (double)s->counts[i]);
	w = cJSON_AddArrayToObject(o, "worker_list");
	for (size_t i = 0; i < s->nws; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "id", (double)s->ws[i].id);
		cJSON_AddNumberToObject(x, "slot", s->ws[i].slot);
		cJSON_AddNumberToObject(x, "pid", s->ws[i].pid);
		cJSON_AddStringToObject(x, "node", s->ws[i].node);
		if (s->ws[i].task_id)
			cJSON_AddNumberToObject(x, "task", (double)s->ws[i].task_id);
		else
			cJSON_AddNullToObject(x, "task");
		cJSON_AddNumberToObject(x, "heartbeat_at", (double)s->ws[i].heartbeat_at);
		cJSON_AddBoolToObject(x, "recording", recording(home, s->ws[i].task_id));
		cJSON_AddBoolToObject(x, "alive", worker_alive(s, &s->ws[i], tq_now_ms()));
		cJSON_AddItemToArray(w, x);
	}
	g = cJSON_AddArrayToObject(o, "groups");
	for (size_t i = 0; i < s->ngs; i++) {
		cJSON *x;
		if (!group_shown(&s->gs[i], now))
			continue;
		x = cJSON_CreateObject();
		cli_json_bytes(x, "name", s->gs[i].name, &oom);
		cJSON_AddNumberToObject(x, "running", (double)s->gs[i].running);
		cJSON_AddNumberToObject(x, "queued", (double)s->gs[i].queued);
		cJSON_AddNumberToObject(x, "scheduled", (double)s->gs[i].scheduled);
		cJSON_AddNumberToObject(x, "blocked", (double)s->gs[i].blocked);
		cJSON_AddNumberToObject(x, "parallel", (double)s->gs[i].parallel);
		cJSON_AddBoolToObject(x, "paused", s->gs[i].paused);
		if (s->gs[i].paused_until > now)
			cJSON_AddNumberToObject(x, "paused_until", (double)s->gs[i].paused_until);
		cJSON_AddBoolToObject(x, "probe", s->gs[i].probe);
		cJSON_AddBoolToObject(x, "probing", s->gs[i].probe && s->gs[i].paused_until <= now);
		if (s->gs[i].probe_task > 0)
			cJSON_AddNumberToObject(x, "probe_task", (double)s->gs[i].probe_task);
		else
			cJSON_AddNullToObject(x, "probe_task");
		cJSON_AddItemToArray(g, x);
	}
	if (oom) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int run_status(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = { { "json", O_JSON, 0, 0 }, { NULL, 0, 0, 0 } };
	char home[PATH_MAX];
	struct status s = { 0 };
	struct tq_queue *q = NULL;
	struct tq_err err = TQ_ERR_INIT;
	struct cli_args a;
	int k, json = 0, rc;

	cli_args_init(&a, argc, argv, 0);
	while ((k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		if (k == CLI_OPT_HELP)
			return cli_print_help(c->cmd, stdout);
		if (k != O_JSON)
			return k == CLI_OPT_ARG ? cli_usage(c, "unexpected argument \"%s\"", a.val)
						: CLI_USAGE;
		json = 1;
	}
	if (tq_home_resolve(c->home_flag, home, sizeof(home), &err) < 0)
		return cli_fail(c, &err);
	if ((rc = cli_open(c, TQ_OPEN_NOCREATE, &q)) != CLI_OK)
		return rc;
	cli_output_init();
	rc = load_status(c, q, home, &s);
	if (rc == CLI_OK && json) {
		cJSON *o = status_json(&s, home);
		char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
		if (txt == NULL)
			rc = cli_runtime(c, "out of memory");
		else
			printf("%s\n", txt);
		free(txt);
		cJSON_Delete(o);
	} else if (rc == CLI_OK) {
		print_status_human(&s, home);
	}
	free(s.ws);
	tq_supervisor_list_free(s.sups, s.nsups);
	free(s.containment);
	tq_group_list_free(s.gs, s.ngs);
	tq_queue_close(q);
	return rc;
}

/* ------------------------------------------------------------------ */
/* shutdown                                                           */

static int run_shutdown(struct cli_ctx *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "now", O_NOW, 0, 0 }, { "grace", O_GRACE, 1, 0 },
		{ "no-wait", O_NOWAIT, 0, 0 }, { NULL, 0, 0, 0 },
	};
	char home[PATH_MAX];
	struct tq_err err = TQ_ERR_INIT;
	struct cli_args a;
	int64_t grace = -1, deadline;
	int k, rc = CLI_OK, wait = 1;
	pid_t pid = 0;

	cli_args_init(&a, argc, argv, 0);
	while (rc == CLI_OK && (k = cli_next(c, &a, opts)) != CLI_OPT_END) {
		switch (k) {
		case CLI_OPT_HELP: return cli_print_help(c->cmd, stdout);
		case O_NOW: grace = 0; break;
		case O_GRACE: rc = parse_ms(c, &a, &grace); break;
		case O_NOWAIT: wait = 0; break;
		case CLI_OPT_ARG: return cli_usage(c, "unexpected argument \"%s\"", a.val);
		default: return CLI_USAGE;
		}
	}
	if (rc != CLI_OK)
		return rc;
	if (grace > INT_MAX)
		return cli_usage(c, "--grace is too long");
	if (tq_home_resolve(c->home_flag, home, sizeof(home), &err) < 0)
		return cli_fail(c, &err);
	/* a typo in the path must not read as "stopped" */
	if (tq_home_check(home, &err) == TQ_ENOTFOUND)
		return cli_usage(c, "%s (state directory from %s); no supervisor runs there",
				 err.msg, tq_home_source(c->home_flag));
	if ((rc = tq_ops_shutdown(home, grace, &pid, &err)) == 0) {
		printf("no supervisor is running\n");
		return CLI_OK;
	}
	if (rc < 0)
		return cli_runtime(c, "%s", err.msg);
	if (!wait) {
		printf("supervisor pid %d is stopping\n", (int)pid);
		return CLI_OK;
	}
	/* Running tasks get the grace, then their kill grace: wait for that
	 * plus a margin before giving up. */
	deadline = tq_mono_ms() + (grace >= 0 ? grace : TQ_DEFAULT_SHUTDOWN_GRACE_MS) +
		   SHUTDOWN_WAIT_MARGIN_MS;
	if (!tq_ops_shutdown_wait(home, deadline))
		return cli_runtime(c, "supervisor pid %d has not stopped yet", (int)pid);
	printf("supervisor pid %d stopped\n", (int)pid);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_serve = {
	.name = "serve",
	.synopsis = "taskq serve [--workers N] [--foreground] [--grace DUR] [--lease DUR]\n"
		    "                   [--retention DUR] [--log-size SIZE] [--log-files N]\n"
		    "                   [--max-warm N]",
	.summary = "Run the supervisor and its workers (submit starts one when needed).",
	.help =
	"Starts the supervisor for the state directory: it keeps N workers (default 2)\n"
	"running, each claiming one task at a time, restarts a worker that dies, and\n"
	"recovers the tasks of workers that died. One supervisor runs per state\n"
	"directory; a second `serve` says so and exits 0. Without --foreground it runs\n"
	"in the background and logs to HOME/serve.log, which it and its workers rotate\n"
	"by size (serve.log.1 is the newest old one). A line that repeats within 10 s\n"
	"(a client looping connect, garbage, close) is logged once, then once more\n"
	"with \"(repeated N times in the last 10 s)\".\n"
	"\n"
	"While it runs, submit hands it tasks through HOME/submit.sock. It serves up\n"
	"to 64 connections at once, side by side; each must send its whole request\n"
	"within 1 s of being accepted or is closed, so clients that connect and stall\n"
	"never hold up anyone else's submit. A submit that gets no answer within 1 s\n"
	"stores its task itself, exactly once even if the supervisor stores the same\n"
	"request a moment later.\n"
	"\n"
	"If the state directory is removed or replaced, it stops its workers and\n"
	"their tasks and exits 1; it removes only the files it made itself.\n"
	"Each task attempt gets a cgroup v2 group where the supervisor's cgroup is\n"
	"delegated to it (root's, or a systemd unit or scope with Delegate=yes), else\n"
	"a record of its process tree; `taskq status` says which (TASKQ_CGROUP=0\n"
	"forces the record).\n"
	"\n"
	"  -w, --workers N     workers to keep running (1-256; default 2)\n"
	"  -f, --foreground    stay in the foreground, log to stderr\n"
	"      --grace DUR     on shutdown, how long running tasks may go on before\n"
	"                      they are stopped and requeued (default 30s)\n"
	"      --lease DUR     how long a task's lease lasts without renewal before a\n"
	"                      dead worker's task is recovered (default 10s)\n"
	"      --retention DUR remove finished tasks and their logs once they ended\n"
	"                      more than DUR ago, checked at start and every minute\n"
	"                      (default 7d; 0 keeps them forever). Kept in the\n"
	"                      database: later supervisors (an autostarted one too)\n"
	"                      use it until another --retention\n"
	"      --log-size SIZE rotate serve.log when a line would take it past SIZE\n"
	"                      (64K-1T; default 10M)\n"
	"      --log-files N   rotated files to keep, serve.log.1..N (1-9; default 3).\n"
	"                      Both are kept in the database, as --retention is\n"
	"      --max-warm N    warm agent processes (ask --warm) kept up at most\n"
	"                      (1-256; default the config's \"max_warm\", else 4); past\n"
	"                      it the least recently used idle one is ended\n"
	"\n"
	"SIGTERM or SIGINT stop it gracefully; it exits 143 or 130.\n",
	.run = run_serve,
};

const struct cli_cmd cli_cmd_drain = {
	.name = "drain",
	.synopsis = "taskq drain [--workers N] [--grace DUR] [--lease DUR] [--retention DUR]\n"
		    "                   [--max-warm N]",
	.summary = "Run tasks in the foreground until none is left, then exit.",
	.help =
	"Runs a supervisor in the foreground until no task can run now, nothing is\n"
	"running, and no task it ran is waiting for a retry; then exits. For cron and\n"
	"CI without a daemon. Refuses to start while a supervisor runs.\n"
	"\n"
	"  -w, --workers N     workers (default 2)\n"
	"      --grace DUR     shutdown grace on SIGTERM/SIGINT (default 30s)\n"
	"      --lease DUR     lease length (default 10s)\n"
	"      --retention DUR as for serve: finished tasks older than DUR are removed\n"
	"      --max-warm N    as for serve: warm agent processes kept up at most\n"
	"\n"
	"Exit status: 0 if every task it ran succeeded, 1 otherwise.\n",
	.run = run_drain,
};

const struct cli_cmd cli_cmd_worker = {
	.name = "worker",
	.synopsis = "taskq worker [--slot N] [--lease DUR] [--grace DUR] [--supervisor PID]\n"
		    "                   [--log-size SIZE] [--log-files N]",
	.summary = NULL, /* internal: started by the supervisor */
	.help = "Runs one worker in the foreground. The supervisor starts these.\n",
	.run = run_worker,
};

const struct cli_cmd cli_cmd_status = {
	.name = "status",
	.synopsis = "taskq status [--json]",
	.summary = "Show the supervisor, workers, task counts and groups.",
	.help =
	"Says whether a supervisor runs (its pid, uptime, workers, warm agents and\n"
	"--max-warm), how it contains\n"
	"each task's processes (a cgroup v2 group per attempt, or a record of its\n"
	"process tree: TASKQ_CGROUP=0 forces the record), the state\n"
	"directory (control characters escaped), how long finished tasks are kept\n"
	"(serve --retention), how many tasks are in each state, what each worker is\n"
	"doing, in slot order (a worker whose process is gone is \"dead\", with the\n"
	"task it held, which a supervisor recovers; --json: \"alive\"), and the\n"
	"groups that are paused, limited (group set --parallel), or have work:\n"
	"running, queued, scheduled (waiting for a time, such as the retry after a\n"
	"rate limit) and blocked tasks, the limit, the pause.\n"
	"\n"
	"On a store several nodes share (PostgreSQL: --db), the workers are listed\n"
	"by node, this one first, each node headed by its supervisor: its pid,\n"
	"uptime, workers and when it was last heard from (a supervisor writes a\n"
	"heartbeat every 10 s; another node's is \"not heard from\" after 30 s\n"
	"without one, or says when it stopped).\n"
	"\n"
	"After a rate limit's pause a group is probing: one task runs first, the\n"
	"others start once it ended without a rate limit; if it hits the limit\n"
	"again the group is paused again until the new retry time. A probe that\n"
	"ends without an answer (killed, lost with its worker, stalled, timed out)\n"
	"lets the next task probe. A pause by hand (taskq pause) is not probed:\n"
	"taskq resume starts everything.\n"
	"\n"
	"      --json          one JSON object; each group has probe (a rate limit\n"
	"                      paused it: it will be or is being probed), probing\n"
	"                      (now) and probe_task (the probe running, or null);\n"
	"                      each worker its id (show --json's worker_id);\n"
	"                      serve_log_size and serve_log_files (serve.log's\n"
	"                      bounds: a supervisor's, or those the next one\n"
	"                      takes); on_exit_due (true while an --on-exit hook\n"
	"                      is owed: an end written by a recovery or from an\n"
	"                      end record, whose hook a worker runs next); node\n"
	"                      (this one) and supervisors (a row a node: node,\n"
	"                      pid, started_at, heartbeat_at, workers, max_warm,\n"
	"                      stopped_at, this_node, alive)\n",
	.run = run_status,
};

const struct cli_cmd cli_cmd_shutdown = {
	.name = "shutdown",
	.synopsis = "taskq shutdown [--now] [--grace DUR] [--no-wait]",
	.summary = "Stop the supervisor; running tasks are requeued.",
	.help =
	"Stops the supervisor: workers stop claiming, running tasks get the grace\n"
	"period to finish, then are stopped (TERM, then KILL) and go back to the\n"
	"queue without spending an attempt. Waits until the supervisor has exited.\n"
	"\n"
	"      --now           no grace: stop running tasks at once\n"
	"      --grace DUR     this grace instead of the supervisor's (default 30s)\n"
	"      --no-wait       return once the supervisor has been told\n",
	.run = run_shutdown,
};

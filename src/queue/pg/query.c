/*
 * query.c - reading tasks, attempts, counts and groups from the PostgreSQL
 * store, in the shapes the SQLite backend's query.c returns.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns of TQ_PG_TASK_COLS, in order. */
enum {
	C_ID, C_STATE, C_NAME, C_ARGV, C_SHELL, C_CWD, C_BATCH, C_GRP, C_SESSION,
	C_UNIQUE, C_PRIORITY, C_RUN_AFTER, C_CREATED, C_TIMEOUT, C_GRACE, C_MAXOUT,
	C_RETRIES, C_RETRY_LOST, C_BACKOFF, C_BACKOFF_MAX, C_STDIN, C_PTY, C_ON_EXIT,
	C_AGENT, C_MODEL, C_PROMPT, C_ISOLATE, C_SOURCES, C_KILL_SIG, C_KILL_AT,
	C_ATTEMPT, C_WORKER, C_LEASE, C_STARTED, C_FINISHED, C_EXIT, C_SIGNAL,
	C_OUTCOME, C_CATEGORY, C_REASON, C_ENV_ID, C_UMASK, C_STALL, C_DEPS_LEFT,
	C_WARM, C_IDLE_TIMEOUT
};

/* Decode a NUL-separated byte string into a NULL-terminated array. */
static int strv_decode(const unsigned char *blob, size_t len, char ***v, size_t *n)
{
	size_t count = 0, i = 0;
	char **out;

	for (size_t k = 0; k < len; k++)
		if (blob[k] == '\0')
			count++;
	if (len > 0 && blob[len - 1] != '\0')
		count++; /* a last string without its NUL (never written so) */
	if ((out = calloc(count + 1, sizeof(*out))) == NULL)
		return TQ_ENOMEM;
	for (size_t k = 0; k < len && i < count; i++) {
		size_t l = strnlen((const char *)blob + k, len - k);

		if ((out[i] = malloc(l + 1)) == NULL) {
			for (size_t j = 0; j < i; j++)
				free(out[j]);
			free(out);
			return TQ_ENOMEM;
		}
		memcpy(out[i], blob + k, l);
		out[i][l] = '\0';
		k += l + 1;
	}
	*v = out;
	*n = count;
	return 0;
}

int tq_pg_task_from_row(const PGresult *r, int row, struct tq_task *t)
{
	static const struct { int col; size_t off; } cols[] = {
		{ C_NAME, offsetof(struct tq_task, name) },
		{ C_BATCH, offsetof(struct tq_task, batch) },
		{ C_GRP, offsetof(struct tq_task, group) },
		{ C_SESSION, offsetof(struct tq_task, session) },
		{ C_UNIQUE, offsetof(struct tq_task, unique_key) },
		{ C_ON_EXIT, offsetof(struct tq_task, on_exit) },
		{ C_AGENT, offsetof(struct tq_task, agent) },
		{ C_MODEL, offsetof(struct tq_task, model) },
		{ C_PROMPT, offsetof(struct tq_task, prompt) },
		{ C_SOURCES, offsetof(struct tq_task, sources_json) },
		{ C_REASON, offsetof(struct tq_task, reason) },
	};
	unsigned char *argv = NULL;
	size_t argv_len = 0;
	const char *s;

	memset(t, 0, sizeof(*t));
	t->id = tq_pg_get_i64(r, row, C_ID, 0);
	tq_state_parse(tq_pg_get_txt(r, row, C_STATE), &t->state);
	if (tq_pg_bytea(r, row, C_ARGV, &argv, &argv_len) < 0 ||
	    strv_decode(argv, argv_len, &t->argv, &t->argc) < 0)
		goto nomem;
	free(argv);
	argv = NULL;
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		if (tq_pg_dup(r, row, cols[i].col, (char **)((char *)t + cols[i].off)) < 0)
			goto nomem;
	if (tq_pg_path_dup(r, row, C_CWD, &t->cwd) == TQ_ENOMEM)
		goto nomem;  /* a bad one (not written by taskq) stays NULL */
	t->shell = (int)tq_pg_get_i64(r, row, C_SHELL, 0);
	t->priority = tq_pg_get_i64(r, row, C_PRIORITY, 0);
	t->run_after = tq_pg_get_i64(r, row, C_RUN_AFTER, 0);
	t->created_at = tq_pg_get_i64(r, row, C_CREATED, 0);
	t->timeout_ms = tq_pg_get_i64(r, row, C_TIMEOUT, 0);
	t->stall_timeout_ms = tq_pg_get_i64(r, row, C_STALL, 0);
	t->umask = (int)tq_pg_get_i64(r, row, C_UMASK, -1);
	t->deps_left = tq_pg_get_i64(r, row, C_DEPS_LEFT, 0);
	t->warm = (int)tq_pg_get_i64(r, row, C_WARM, 0);
	t->idle_timeout_ms = tq_pg_get_i64(r, row, C_IDLE_TIMEOUT, 0);
	t->kill_grace_ms = tq_pg_get_i64(r, row, C_GRACE, 0);
	t->max_output = tq_pg_get_i64(r, row, C_MAXOUT, 0);
	t->max_retries = tq_pg_get_i64(r, row, C_RETRIES, 0);
	t->retry_lost = (int)tq_pg_get_i64(r, row, C_RETRY_LOST, 0);
	t->backoff_ms = tq_pg_get_i64(r, row, C_BACKOFF, 0);
	t->backoff_max_ms = tq_pg_get_i64(r, row, C_BACKOFF_MAX, 0);
	s = tq_pg_get_txt(r, row, C_STDIN);
	t->stdin_mode = s && strcmp(s, "file") == 0 ? TQ_STDIN_FILE :
			s && strcmp(s, "pipe") == 0 ? TQ_STDIN_PIPE : TQ_STDIN_NULL;
	t->pty = (int)tq_pg_get_i64(r, row, C_PTY, 0);
	t->isolate = (int)tq_pg_get_i64(r, row, C_ISOLATE, 0);
	t->kill_signal = (int)tq_pg_get_i64(r, row, C_KILL_SIG, 0);
	t->kill_requested_at = tq_pg_get_i64(r, row, C_KILL_AT, 0);
	t->attempt = (int)tq_pg_get_i64(r, row, C_ATTEMPT, 0);
	t->worker_id = tq_pg_get_i64(r, row, C_WORKER, 0);
	t->lease_until = tq_pg_get_i64(r, row, C_LEASE, 0);
	t->started_at = tq_pg_get_i64(r, row, C_STARTED, 0);
	t->finished_at = tq_pg_get_i64(r, row, C_FINISHED, 0);
	t->exit_code = (int)tq_pg_get_i64(r, row, C_EXIT, -1);
	t->signal = (int)tq_pg_get_i64(r, row, C_SIGNAL, 0);
	if (tq_outcome_parse(tq_pg_get_txt(r, row, C_OUTCOME), &t->outcome) < 0)
		t->outcome = TQ_OUT_NONE;
	if (tq_category_parse(tq_pg_get_txt(r, row, C_CATEGORY), &t->category) < 0)
		t->category = TQ_CAT_NONE;
	return 0;
nomem:
	free(argv);
	tq_task_release(t);
	return TQ_ENOMEM;
}

static int load_env(struct tq_pg *q, int64_t env_id, struct tq_task *t, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	unsigned char *blob = NULL;
	size_t len = 0;
	PGresult *r;
	int rc = 0;

	tq_pg_i64(&p, env_id);
	if ((r = tq_pg_query(q, "SELECT data FROM envs WHERE id = $1", &p, err,
			     "read environment")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0) {
		if (tq_pg_bytea(r, 0, 0, &blob, &len) < 0 ||
		    strv_decode(blob, len, &t->env, &t->envc) < 0)
			rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		free(blob);
	} else if ((t->env = calloc(1, sizeof(*t->env))) == NULL) {
		/* no row: an empty environment (--clean-env with nothing added) */
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	tq_pg_clear(r);
	return rc;
}

static int load_labels(struct tq_pg *q, struct tq_task *t, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int n;

	tq_pg_i64(&p, t->id);
	if ((r = tq_pg_query(q, "SELECT key, value FROM labels WHERE task_id = $1"
			     " ORDER BY key COLLATE \"C\"", &p, err, "read labels")) == NULL)
		return err ? err->code : TQ_EIO;
	n = tq_pg_rows(r);
	if (n > 0 && (t->labels = calloc((size_t)n, sizeof(*t->labels))) == NULL)
		goto nomem;
	for (int i = 0; i < n; i++) {
		char *k = NULL, *v = NULL;

		if (tq_pg_dup(r, i, 0, &k) < 0 || tq_pg_dup(r, i, 1, &v) < 0) {
			free(k);
			free(v);
			goto nomem;
		}
		t->labels[i].key = k;
		t->labels[i].value = v;
		t->nlabels++;
	}
	tq_pg_clear(r);
	return 0;
nomem:
	tq_pg_clear(r);
	return tq_err_set(err, TQ_ENOMEM, "out of memory");
}

static int load_deps(struct tq_pg *q, struct tq_task *t, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int n;

	tq_pg_i64(&p, t->id);
	if ((r = tq_pg_query(q, "SELECT dep_id, (kind = 'any')::int FROM deps"
			     " WHERE task_id = $1 ORDER BY dep_id", &p, err,
			     "read dependencies")) == NULL)
		return err ? err->code : TQ_EIO;
	n = tq_pg_rows(r);
	if (n > 0 && ((t->after = calloc((size_t)n, sizeof(*t->after))) == NULL ||
		      (t->after_any = calloc((size_t)n, sizeof(*t->after_any))) == NULL)) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		t->after[i] = tq_pg_get_i64(r, i, 0, 0);
		t->after_any[i] = (int)tq_pg_get_i64(r, i, 1, 0);
	}
	t->nafter = (size_t)n;
	tq_pg_clear(r);
	return 0;
}

int tq_pg_task_load(struct tq_pg *q, int64_t id, unsigned flags, struct tq_task *t,
		    struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t env = -1;
	PGresult *r;
	int rc;

	memset(t, 0, sizeof(*t));
	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(q, "SELECT " TQ_PG_TASK_COLS " FROM tasks t WHERE t.id = $1",
			     &p, err, "read task")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) == 0) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	}
	env = tq_pg_get_i64(r, 0, C_ENV_ID, -1);
	rc = tq_pg_task_from_row(r, 0, t);
	tq_pg_clear(r);
	if (rc < 0)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	if (((flags & TQ_GET_ENV) && (rc = load_env(q, env, t, err)) < 0) ||
	    ((flags & TQ_GET_LABELS) && (rc = load_labels(q, t, err)) < 0) ||
	    ((flags & TQ_GET_DEPS) && (rc = load_deps(q, t, err)) < 0)) {
		tq_task_release(t);
		return rc;
	}
	return 0;
}

int tq_pg_get(struct tq_queue *base, int64_t id, unsigned flags, struct tq_task *t,
	      struct tq_err *err)
{
	return tq_pg_task_load(tq_pg_of(base), id, flags, t, err);
}

int tq_pg_state_of(struct tq_pg *q, int64_t id, enum tq_state *s, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(q, "SELECT state FROM tasks WHERE id = $1", &p, err,
			     "read task")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) == 0) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	}
	tq_state_parse(tq_pg_get_txt(r, 0, 0), s);
	tq_pg_clear(r);
	return 0;
}

/* The filter's states as a PostgreSQL array literal ("{queued,running}"). */
static void states_array(unsigned states, char *buf, size_t n)
{
	size_t len = (size_t)snprintf(buf, n, "{");

	for (int s = 0; s < TQ_STATE_COUNT; s++)
		if (states & (1u << s))
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len > 1 ? "," : "",
						tq_state_name((enum tq_state)s));
	snprintf(buf + len, n - len, "}");
}

int tq_pg_list(struct tq_queue *base, const struct tq_filter *f,
	       struct tq_task **tasks, size_t *n, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	struct tq_task *out = NULL;
	char states[256];
	PGresult *r;
	int rows;

	*tasks = NULL;
	*n = 0;
	if (f->states) {
		states_array(f->states, states, sizeof(states));
		tq_pg_txt(&p, states);
	} else {
		tq_pg_null(&p);
	}
	tq_pg_txt(&p, f->name);
	tq_pg_txt(&p, f->label_key);
	tq_pg_txt(&p, f->label_value ? f->label_value : "");
	tq_pg_txt(&p, f->batch);
	tq_pg_txt(&p, f->group);
	tq_pg_txt(&p, f->category != TQ_CAT_NONE ? tq_category_name(f->category) : NULL);
	if (f->limit < 0)
		tq_pg_null(&p); /* LIMIT NULL: no limit */
	else
		tq_pg_i64(&p, f->limit == 0 ? TQ_LIST_DEFAULT_LIMIT : f->limit);
	tq_pg_i64(&p, f->offset > 0 ? f->offset : 0);
	r = tq_pg_query(q, "SELECT " TQ_PG_TASK_COLS ", (SELECT sum(a.cost_usd) FROM attempts a"
			" WHERE a.task_id = t.id) FROM tasks t WHERE"
			" ($1::text[] IS NULL OR t.state = ANY($1::text[]))"
			" AND ($2::text IS NULL OR t.name = $2)"
			" AND ($3::text IS NULL OR t.id IN (SELECT task_id FROM labels"
			"      WHERE key = $3 AND value = $4))"
			" AND ($5::text IS NULL OR t.batch = $5)"
			" AND ($6::text IS NULL OR t.grp = $6)"
			" AND ($7::text IS NULL OR t.category = $7)"
			" ORDER BY t.id DESC LIMIT $8 OFFSET $9", &p, err, "list tasks");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (out = calloc((size_t)rows, sizeof(*out))) == NULL)
		goto nomem;
	for (int i = 0; i < rows; i++) {
		if (tq_pg_task_from_row(r, i, &out[i]) < 0) {
			tq_task_list_free(out, (size_t)i);
			goto nomem;
		}
		if (!tq_pg_isnull(r, i, C_IDLE_TIMEOUT + 1)) {
			out[i].cost_usd = tq_pg_get_dbl(r, i, C_IDLE_TIMEOUT + 1);
			out[i].has_cost = 1;
		}
	}
	tq_pg_clear(r);
	*tasks = out;
	*n = (size_t)rows;
	return 0;
nomem:
	tq_pg_clear(r);
	return tq_err_set(err, TQ_ENOMEM, "list tasks: out of memory");
}

int tq_pg_counts(struct tq_queue *base, int64_t *counts, struct tq_err *err)
{
	PGresult *r;

	memset(counts, 0, sizeof(*counts) * TQ_STATE_COUNT);
	if ((r = tq_pg_query(tq_pg_of(base), "SELECT state, count(*) FROM tasks GROUP BY state",
			     NULL, err, "count tasks")) == NULL)
		return err ? err->code : TQ_EIO;
	for (int i = 0; i < tq_pg_rows(r); i++) {
		enum tq_state s;

		if (tq_state_parse(tq_pg_get_txt(r, i, 0), &s) == 0)
			counts[s] = tq_pg_get_i64(r, i, 1, 0);
	}
	tq_pg_clear(r);
	return 0;
}

static int attempt_from_row(const PGresult *r, int i, struct tq_attempt *a)
{
	memset(a, 0, sizeof(*a));
	a->task_id = tq_pg_get_i64(r, i, 0, 0);
	a->attempt = (int)tq_pg_get_i64(r, i, 1, 0);
	a->worker_id = tq_pg_get_i64(r, i, 2, 0);
	a->pid = (int)tq_pg_get_i64(r, i, 3, 0);
	a->pgid = (int)tq_pg_get_i64(r, i, 4, 0);
	a->proc_start = tq_pg_get_i64(r, i, 5, 0);
	a->started_at = tq_pg_get_i64(r, i, 6, 0);
	a->ended_at = tq_pg_get_i64(r, i, 7, 0);
	a->exit_code = (int)tq_pg_get_i64(r, i, 8, -1);
	a->signal = (int)tq_pg_get_i64(r, i, 9, 0);
	if (tq_outcome_parse(tq_pg_get_txt(r, i, 10), &a->outcome) < 0)
		a->outcome = TQ_OUT_NONE;
	if (tq_category_parse(tq_pg_get_txt(r, i, 11), &a->category) < 0)
		a->category = TQ_CAT_NONE;
	a->retry_at = tq_pg_get_i64(r, i, 13, 0);
	a->counted = (int)tq_pg_get_i64(r, i, 14, 0);
	a->log_offset = tq_pg_get_i64(r, i, 15, 0);
	a->log_line = tq_pg_get_i64(r, i, 16, 0);
	a->has_result = !tq_pg_isnull(r, i, 18);
	a->is_error = (int)tq_pg_get_i64(r, i, 18, 0);
	a->cost_usd = !tq_pg_isnull(r, i, 21) ? tq_pg_get_dbl(r, i, 21) :
		      a->has_result ? -1 : 0;
	a->duration_ms = tq_pg_get_i64(r, i, 22, a->has_result ? -1 : 0);
	a->num_turns = tq_pg_get_i64(r, i, 23, 0);
	a->input_tokens = tq_pg_get_i64(r, i, 24, 0);
	a->output_tokens = tq_pg_get_i64(r, i, 25, 0);
	a->cache_read_tokens = tq_pg_get_i64(r, i, 26, 0);
	a->cache_creation_tokens = tq_pg_get_i64(r, i, 27, 0);
	if (tq_pg_dup(r, i, 12, &a->reason) < 0 || tq_pg_dup(r, i, 17, &a->result) < 0 ||
	    tq_pg_dup(r, i, 19, &a->subtype) < 0 || tq_pg_dup(r, i, 20, &a->agent_session) < 0 ||
	    tq_pg_dup(r, i, 28, &a->model) < 0 || tq_pg_dup(r, i, 29, &a->node) < 0)
		return TQ_ENOMEM;
	return 0;
}

int tq_pg_attempts(struct tq_queue *base, int64_t id, struct tq_attempt **list,
		   size_t *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct tq_attempt *out = NULL;
	PGresult *r;
	int rows;

	*list = NULL;
	*n = 0;
	tq_pg_i64(&p, id);
	r = tq_pg_query(tq_pg_of(base), "SELECT task_id, attempt, worker_id, pid, pgid,"
			" proc_start, started_at, ended_at, exit_code, signal, outcome, category,"
			" reason, retry_at, counted, log_offset, log_line, result, is_error,"
			" subtype, agent_session, cost_usd, duration_ms, num_turns, input_tokens,"
			" output_tokens, cache_read_tokens, cache_creation_tokens, model, node"
			" FROM attempts WHERE task_id = $1 ORDER BY attempt", &p, err,
			"read attempts");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (out = calloc((size_t)rows, sizeof(*out))) == NULL)
		goto nomem;
	for (int i = 0; i < rows; i++)
		if (attempt_from_row(r, i, &out[i]) < 0) {
			tq_attempt_list_free(out, (size_t)i + 1);
			goto nomem;
		}
	tq_pg_clear(r);
	*list = out;
	*n = (size_t)rows;
	return 0;
nomem:
	tq_pg_clear(r);
	return tq_err_set(err, TQ_ENOMEM, "read attempts: out of memory");
}

int tq_pg_stdin_file(struct tq_queue *base, int64_t id, void **data, size_t *len,
		     struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	unsigned char *d = NULL;
	PGresult *r;
	int rc = 0;

	*data = NULL;
	*len = 0;
	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(tq_pg_of(base), "SELECT data FROM stdin_files WHERE task_id = $1",
			     &p, err, "read stdin file")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) == 0)
		rc = tq_err_set(err, TQ_ENOTFOUND, "task %lld has no stdin file", (long long)id);
	else if (tq_pg_bytea(r, 0, 0, &d, len) < 0)
		rc = tq_err_set(err, TQ_ENOMEM, "stdin file: out of memory");
	else
		*data = d;
	tq_pg_clear(r);
	return rc;
}

int tq_pg_groups(struct tq_queue *base, struct tq_group **list, size_t *n,
		 struct tq_err *err)
{
	struct tq_group *out = NULL;
	PGresult *r;
	int rows;

	*list = NULL;
	*n = 0;
	r = tq_pg_query(tq_pg_of(base), "SELECT g.name, g.parallel, g.paused, g.paused_until,"
			" g.pause_reason,"
			" (SELECT count(*) FROM tasks c WHERE c.state = 'queued' AND c.grp = g.name),"
			" (SELECT count(*) FROM tasks c WHERE c.state = 'running' AND c.grp = g.name),"
			" g.probe, (SELECT p.id FROM tasks p WHERE p.id = g.probe_task"
			"  AND p.state = 'running'),"
			" (SELECT count(*) FROM tasks c WHERE c.state = 'scheduled' AND c.grp = g.name),"
			" (SELECT count(*) FROM tasks c WHERE c.state = 'blocked' AND c.grp = g.name)"
			" FROM groups g ORDER BY g.name COLLATE \"C\"", NULL, err, "read groups");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (out = calloc((size_t)rows, sizeof(*out))) == NULL)
		goto nomem;
	for (int i = 0; i < rows; i++) {
		struct tq_group *g = &out[i];

		g->parallel = tq_pg_get_i64(r, i, 1, 0);
		g->paused = (int)tq_pg_get_i64(r, i, 2, 0);
		g->paused_until = tq_pg_get_i64(r, i, 3, 0);
		g->queued = tq_pg_get_i64(r, i, 5, 0);
		g->running = tq_pg_get_i64(r, i, 6, 0);
		g->probe = tq_pg_get_i64(r, i, 7, 0) != 0;
		g->probe_task = tq_pg_get_i64(r, i, 8, 0);
		g->scheduled = tq_pg_get_i64(r, i, 9, 0);
		g->blocked = tq_pg_get_i64(r, i, 10, 0);
		if (tq_pg_dup(r, i, 0, &g->name) < 0 || tq_pg_dup(r, i, 4, &g->pause_reason) < 0) {
			tq_group_list_free(out, (size_t)i + 1);
			goto nomem;
		}
	}
	tq_pg_clear(r);
	*list = out;
	*n = (size_t)rows;
	return 0;
nomem:
	tq_pg_clear(r);
	return tq_err_set(err, TQ_ENOMEM, "read groups: out of memory");
}

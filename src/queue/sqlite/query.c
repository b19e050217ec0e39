/*
 * query.c - reading tasks, attempts, counts and groups. Nothing here writes.
 *
 * list builds its SQL from the filter's shape (which fields are set) and
 * caches one statement per shape, so every filter still runs as a prepared
 * statement with bound values, never as text built from user input.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	C_ID, C_STATE, C_NAME, C_ARGV, C_SHELL, C_CWD, C_BATCH, C_GRP, C_SESSION,
	C_UNIQUE, C_PRIORITY, C_RUN_AFTER, C_CREATED, C_TIMEOUT, C_GRACE, C_MAXOUT,
	C_RETRIES, C_RETRY_LOST, C_BACKOFF, C_BACKOFF_MAX, C_STDIN, C_PTY, C_ON_EXIT,
	C_AGENT, C_MODEL, C_PROMPT, C_ISOLATE, C_SOURCES, C_KILL_SIG, C_KILL_AT,
	C_ATTEMPT, C_WORKER, C_LEASE, C_STARTED, C_FINISHED, C_EXIT, C_SIGNAL,
	C_OUTCOME, C_CATEGORY, C_REASON, C_ENV_ID, C_UMASK, C_STALL, C_DEPS_LEFT,
	C_WARM, C_IDLE_TIMEOUT
};

static int64_t col_i64(sqlite3_stmt *st, int c, int64_t none)
{
	return sqlite3_column_type(st, c) == SQLITE_NULL ? none : sqlite3_column_int64(st, c);
}

static int task_strings(sqlite3_stmt *st, struct tq_task *t)
{
	static const struct { int col; size_t off; } cols[] = {
		{ C_NAME, offsetof(struct tq_task, name) },
		{ C_CWD, offsetof(struct tq_task, cwd) },
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

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		if (tq_col_strdup(st, cols[i].col, (char **)((char *)t + cols[i].off)) < 0)
			return TQ_ENOMEM;
	return 0;
}

int tq_task_from_row(sqlite3_stmt *st, struct tq_task *t)
{
	const char *s;

	memset(t, 0, sizeof(*t));
	t->id = sqlite3_column_int64(st, C_ID);
	tq_state_parse((const char *)sqlite3_column_text(st, C_STATE), &t->state);
	if (tq_strv_decode(sqlite3_column_blob(st, C_ARGV),
			   (size_t)sqlite3_column_bytes(st, C_ARGV), &t->argv, &t->argc) < 0 ||
	    task_strings(st, t) < 0) {
		tq_task_release(t);
		return TQ_ENOMEM;
	}
	t->shell = sqlite3_column_int(st, C_SHELL);
	t->priority = sqlite3_column_int64(st, C_PRIORITY);
	t->run_after = sqlite3_column_int64(st, C_RUN_AFTER);
	t->created_at = sqlite3_column_int64(st, C_CREATED);
	t->timeout_ms = sqlite3_column_int64(st, C_TIMEOUT);
	t->stall_timeout_ms = sqlite3_column_int64(st, C_STALL);
	t->umask = (int)col_i64(st, C_UMASK, -1);
	t->deps_left = sqlite3_column_int64(st, C_DEPS_LEFT);
	t->warm = sqlite3_column_int(st, C_WARM);
	t->idle_timeout_ms = sqlite3_column_int64(st, C_IDLE_TIMEOUT);
	t->kill_grace_ms = sqlite3_column_int64(st, C_GRACE);
	t->max_output = sqlite3_column_int64(st, C_MAXOUT);
	t->max_retries = sqlite3_column_int64(st, C_RETRIES);
	t->retry_lost = sqlite3_column_int(st, C_RETRY_LOST);
	t->backoff_ms = sqlite3_column_int64(st, C_BACKOFF);
	t->backoff_max_ms = sqlite3_column_int64(st, C_BACKOFF_MAX);
	s = (const char *)sqlite3_column_text(st, C_STDIN);
	t->stdin_mode = s && strcmp(s, "file") == 0 ? TQ_STDIN_FILE :
			s && strcmp(s, "pipe") == 0 ? TQ_STDIN_PIPE : TQ_STDIN_NULL;
	t->pty = sqlite3_column_int(st, C_PTY);
	t->isolate = sqlite3_column_int(st, C_ISOLATE);
	t->kill_signal = (int)col_i64(st, C_KILL_SIG, 0);
	t->kill_requested_at = col_i64(st, C_KILL_AT, 0);
	t->attempt = sqlite3_column_int(st, C_ATTEMPT);
	t->worker_id = col_i64(st, C_WORKER, 0);
	t->lease_until = col_i64(st, C_LEASE, 0);
	t->started_at = col_i64(st, C_STARTED, 0);
	t->finished_at = col_i64(st, C_FINISHED, 0);
	t->exit_code = (int)col_i64(st, C_EXIT, -1);
	t->signal = (int)col_i64(st, C_SIGNAL, 0);
	if (tq_outcome_parse((const char *)sqlite3_column_text(st, C_OUTCOME), &t->outcome) < 0)
		t->outcome = TQ_OUT_NONE;
	if (tq_category_parse((const char *)sqlite3_column_text(st, C_CATEGORY), &t->category) < 0)
		t->category = TQ_CAT_NONE;
	return 0;
}

static int load_env(struct tq_sqlite *q, int64_t env_id, struct tq_task *t,
		    struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_GET_ENV, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, env_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		rc = tq_strv_decode(sqlite3_column_blob(st, 0),
				    (size_t)sqlite3_column_bytes(st, 0), &t->env, &t->envc);
		tq_db_done(st);
		return rc < 0 ? tq_err_set(err, rc, "out of memory") : 0;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "read environment");
	/* No row: an empty environment (--clean-env with nothing added). */
	if ((t->env = calloc(1, sizeof(*t->env))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	t->envc = 0;
	return 0;
}

static int load_labels(struct tq_sqlite *q, struct tq_task *t, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_GET_LABELS, err);
	size_t cap = 0;
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, t->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char *k = NULL, *v = NULL;
		if (t->nlabels == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			struct tq_label *nl = reallocarray(t->labels, ncap, sizeof(*nl));
			if (nl == NULL)
				goto nomem;
			t->labels = nl;
			cap = ncap;
		}
		if (tq_col_strdup(st, 0, &k) < 0 || tq_col_strdup(st, 1, &v) < 0) {
			free(k);
			free(v);
			goto nomem;
		}
		t->labels[t->nlabels].key = k;
		t->labels[t->nlabels].value = v;
		t->nlabels++;
	}
	tq_db_done(st);
	return rc == SQLITE_DONE ? 0 : tq_db_error(q, rc, err, "read labels");
nomem:
	tq_db_done(st);
	return tq_err_set(err, TQ_ENOMEM, "out of memory");
}

static int load_deps(struct tq_sqlite *q, struct tq_task *t, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_GET_DEPS, err);
	size_t cap = 0;
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, t->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (t->nafter == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			int64_t *na = reallocarray(t->after, ncap, sizeof(*na));
			int *ny;
			if (na == NULL)
				goto nomem;
			t->after = na;
			if ((ny = reallocarray(t->after_any, ncap, sizeof(*ny))) == NULL)
				goto nomem;
			t->after_any = ny;
			cap = ncap;
		}
		t->after[t->nafter] = sqlite3_column_int64(st, 0);
		t->after_any[t->nafter] = sqlite3_column_int(st, 1);
		t->nafter++;
	}
	tq_db_done(st);
	return rc == SQLITE_DONE ? 0 : tq_db_error(q, rc, err, "read dependencies");
nomem:
	tq_db_done(st);
	return tq_err_set(err, TQ_ENOMEM, "out of memory");
}

int tq_task_load(struct tq_sqlite *q, int64_t id, unsigned flags, struct tq_task *t,
		 struct tq_err *err)
{
	sqlite3_stmt *st;
	int64_t env = -1;
	int rc;

	memset(t, 0, sizeof(*t));
	st = tq_db_stmt(q, ST_GET, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		env = col_i64(st, C_ENV_ID, -1);
		rc = tq_task_from_row(st, t) < 0 ? TQ_ENOMEM : SQLITE_ROW;
	}
	tq_db_done(st);
	if (rc == TQ_ENOMEM)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	if (rc != SQLITE_ROW)
		return tq_db_error(q, rc, err, "read task");
	if (((flags & TQ_GET_ENV) && (rc = load_env(q, env, t, err)) < 0) ||
	    ((flags & TQ_GET_LABELS) && (rc = load_labels(q, t, err)) < 0) ||
	    ((flags & TQ_GET_DEPS) && (rc = load_deps(q, t, err)) < 0)) {
		tq_task_release(t);
		return rc;
	}
	return 0;
}

int tq_sqlite_get(struct tq_queue *base, int64_t id, unsigned flags, struct tq_task *t,
		 struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	return tq_task_load(q, id, flags, t, err);
}

/* ------------------------------------------------------------------ */
/* list                                                               */

static unsigned filter_shape(const struct tq_filter *f)
{
	const unsigned hot = 1u << TQ_QUEUED | 1u << TQ_RUNNING;

	return (f->states ? TQ_LIST_F_STATES : 0) |
	       (f->states && !(f->states & hot) ? TQ_LIST_F_SETTLED : 0) |
	       (f->states == 1u << TQ_RUNNING ? TQ_LIST_F_RUNNING : 0) |
	       (f->name ? TQ_LIST_F_NAME : 0) |
	       (f->label_key ? TQ_LIST_F_LABEL : 0) | (f->batch ? TQ_LIST_F_BATCH : 0) |
	       (f->group ? TQ_LIST_F_GROUP : 0) |
	       (f->category != TQ_CAT_NONE ? TQ_LIST_F_CATEGORY : 0);
}

static sqlite3_stmt *list_stmt(struct tq_sqlite *q, unsigned shape, struct tq_err *err)
{
	char sql[TQ_LIST_SQL_MAX];
	int rc;

	if (q->list_st[shape] != NULL)
		return q->list_st[shape];
	if (tq_stmt_list_sql(shape, sql, sizeof(sql)) < 0) {
		tq_err_set(err, TQ_EINVAL, "prepare list: filter shape %u", shape);
		return NULL;
	}
	rc = sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
				&q->list_st[shape], NULL);
	if (rc != SQLITE_OK) {
		tq_db_error(q, rc, err, "prepare list");
		q->list_st[shape] = NULL;
	}
	return q->list_st[shape];
}

static void bind_states(sqlite3_stmt *st, unsigned states, char *buf, size_t n)
{
	size_t len = 0;

	len += (size_t)snprintf(buf, n, "[");
	for (int s = 0; s < TQ_STATE_COUNT; s++)
		if (states & (1u << s))
			len += (size_t)snprintf(buf + len, n - len, "%s\"%s\"",
						len > 1 ? "," : "", tq_state_name((enum tq_state)s));
	snprintf(buf + len, n - len, "]");
	sqlite3_bind_text(st, 1, buf, -1, SQLITE_STATIC);
}

/*
 * Each listed task's cost, summed over its attempts: one probe of the
 * attempts primary key per task shown, after the page is chosen, so the
 * cost of a list stays that of its page (a subquery among the selected
 * columns would run for every matching row whenever the plan sorts).
 */

static int list_costs(struct tq_sqlite *q, struct tq_task *t, size_t n,
		      struct tq_err *err)
{
	sqlite3_stmt *st;
	int rc;

	if (n == 0)
		return 0;
	st = tq_db_stmt(q, ST_TASK_COST, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	for (size_t i = 0; i < n; i++) {
		if (t[i].attempt == 0)
			continue; /* never ran: no attempts */
		sqlite3_bind_int64(st, 1, t[i].id);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
			t[i].cost_usd = sqlite3_column_double(st, 0);
			t[i].has_cost = 1;
		}
		sqlite3_reset(st);
		if (rc != SQLITE_ROW) {
			tq_db_done(st);
			return tq_db_error(q, rc, err, "read task cost");
		}
	}
	tq_db_done(st);
	return 0;
}

int tq_sqlite_list(struct tq_queue *base, const struct tq_filter *f,
		  struct tq_task **tasks, size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = list_stmt(q, filter_shape(f), err);
	struct tq_task *out = NULL;
	size_t cap = 0, count = 0;
	char states[256];
	int rc;

	*tasks = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	if (f->states)
		bind_states(st, f->states, states, sizeof(states));
	tq_bind_text(st, 2, f->name);
	tq_bind_text(st, 3, f->label_key);
	tq_bind_text(st, 4, f->label_value ? f->label_value : "");
	tq_bind_text(st, 5, f->batch);
	tq_bind_text(st, 6, f->group);
	if (f->category != TQ_CAT_NONE)
		tq_bind_text(st, 7, tq_category_name(f->category));
	sqlite3_bind_int64(st, 8, f->limit == 0 ? TQ_LIST_DEFAULT_LIMIT : f->limit);
	sqlite3_bind_int64(st, 9, f->offset > 0 ? f->offset : 0);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct tq_task *nt = reallocarray(out, ncap, sizeof(*nt));
			if (nt == NULL)
				goto nomem;
			out = nt;
			cap = ncap;
		}
		if (tq_task_from_row(st, &out[count]) < 0)
			goto nomem;
		count++;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_task_list_free(out, count);
		return tq_db_error(q, rc, err, "list tasks");
	}
	if ((rc = list_costs(q, out, count, err)) < 0) {
		tq_task_list_free(out, count);
		return rc;
	}
	*tasks = out;
	*n = count;
	return 0;
nomem:
	tq_db_done(st);
	tq_task_list_free(out, count);
	return tq_err_set(err, TQ_ENOMEM, "list tasks: out of memory");
}

int tq_sqlite_counts(struct tq_queue *base, int64_t *counts, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_COUNTS, err);
	int rc;

	memset(counts, 0, sizeof(*counts) * TQ_STATE_COUNT);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		enum tq_state s;
		if (tq_state_parse((const char *)sqlite3_column_text(st, 0), &s) == 0)
			counts[s] = sqlite3_column_int64(st, 1);
	}
	tq_db_done(st);
	return rc == SQLITE_DONE ? 0 : tq_db_error(q, rc, err, "count tasks");
}

/* ------------------------------------------------------------------ */
/* attempts                                                           */

static int attempt_from_row(sqlite3_stmt *st, struct tq_attempt *a)
{
	memset(a, 0, sizeof(*a));
	a->task_id = sqlite3_column_int64(st, 0);
	a->attempt = sqlite3_column_int(st, 1);
	a->worker_id = col_i64(st, 2, 0);
	a->pid = (int)col_i64(st, 3, 0);
	a->pgid = (int)col_i64(st, 4, 0);
	a->proc_start = col_i64(st, 5, 0);
	a->started_at = col_i64(st, 6, 0);
	a->ended_at = col_i64(st, 7, 0);
	a->exit_code = (int)col_i64(st, 8, -1);
	a->signal = (int)col_i64(st, 9, 0);
	if (tq_outcome_parse((const char *)sqlite3_column_text(st, 10), &a->outcome) < 0)
		a->outcome = TQ_OUT_NONE;
	if (tq_category_parse((const char *)sqlite3_column_text(st, 11), &a->category) < 0)
		a->category = TQ_CAT_NONE;
	a->retry_at = col_i64(st, 13, 0);
	a->counted = sqlite3_column_int(st, 14);
	a->log_offset = col_i64(st, 15, 0);
	a->log_line = col_i64(st, 16, 0);
	a->has_result = sqlite3_column_type(st, 18) != SQLITE_NULL;
	a->is_error = (int)col_i64(st, 18, 0);
	/* NULL with a result: the agent reported no cost (queue.h) */
	a->cost_usd = sqlite3_column_type(st, 21) != SQLITE_NULL ?
		      sqlite3_column_double(st, 21) : a->has_result ? -1 : 0;
	a->duration_ms = col_i64(st, 22, a->has_result ? -1 : 0);
	a->num_turns = col_i64(st, 23, 0);
	a->input_tokens = col_i64(st, 24, 0);
	a->output_tokens = col_i64(st, 25, 0);
	a->cache_read_tokens = col_i64(st, 26, 0);
	a->cache_creation_tokens = col_i64(st, 27, 0);
	if (tq_col_strdup(st, 12, &a->reason) < 0 || tq_col_strdup(st, 17, &a->result) < 0 ||
	    tq_col_strdup(st, 19, &a->subtype) < 0 ||
	    tq_col_strdup(st, 20, &a->agent_session) < 0 ||
	    tq_col_strdup(st, 28, &a->model) < 0 || tq_col_strdup(st, 29, &a->node) < 0)
		return TQ_ENOMEM;
	return 0;
}

int tq_sqlite_attempts(struct tq_queue *base, int64_t id, struct tq_attempt **list,
		      size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_ATTEMPTS, err);
	struct tq_attempt *out = NULL;
	size_t cap = 0, count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			struct tq_attempt *na = reallocarray(out, ncap, sizeof(*na));
			if (na == NULL)
				goto nomem;
			out = na;
			cap = ncap;
		}
		rc = attempt_from_row(st, &out[count]);
		count++;
		if (rc < 0)
			goto nomem;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_attempt_list_free(out, count);
		return tq_db_error(q, rc, err, "read attempts");
	}
	*list = out;
	*n = count;
	return 0;
nomem:
	tq_db_done(st);
	tq_attempt_list_free(out, count);
	return tq_err_set(err, TQ_ENOMEM, "read attempts: out of memory");
}

int tq_sqlite_stdin_file(struct tq_queue *base, int64_t id, void **data, size_t *len,
			struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_STDIN_GET, err);
	int rc;

	*data = NULL;
	*len = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		*data = malloc(n ? n : 1);
		if (*data == NULL) {
			tq_db_done(st);
			return tq_err_set(err, TQ_ENOMEM, "stdin file: out of memory");
		}
		if (n)
			memcpy(*data, sqlite3_column_blob(st, 0), n);
		*len = n;
	}
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld has no stdin file",
				  (long long)id);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read stdin file");
}

/* ------------------------------------------------------------------ */
/* groups                                                             */

int tq_sqlite_groups(struct tq_queue *base, struct tq_group **list, size_t *n,
		    struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_GROUPS, err);
	struct tq_group *out = NULL;
	size_t cap = 0, count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct tq_group *g;
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct tq_group *ng = reallocarray(out, ncap, sizeof(*ng));
			if (ng == NULL)
				goto nomem;
			out = ng;
			cap = ncap;
		}
		g = &out[count++];
		memset(g, 0, sizeof(*g));
		g->parallel = sqlite3_column_int64(st, 1);
		g->paused = sqlite3_column_int(st, 2);
		g->paused_until = sqlite3_column_int64(st, 3);
		g->queued = sqlite3_column_int64(st, 5);
		g->running = sqlite3_column_int64(st, 6);
		g->probe = sqlite3_column_int(st, 7) != 0;
		g->probe_task = sqlite3_column_int64(st, 8); /* NULL: 0 */
		g->scheduled = sqlite3_column_int64(st, 9);
		g->blocked = sqlite3_column_int64(st, 10);
		if (tq_col_strdup(st, 0, &g->name) < 0 ||
		    tq_col_strdup(st, 4, &g->pause_reason) < 0)
			goto nomem;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_group_list_free(out, count);
		return tq_db_error(q, rc, err, "read groups");
	}
	*list = out;
	*n = count;
	return 0;
nomem:
	tq_db_done(st);
	tq_group_list_free(out, count);
	return tq_err_set(err, TQ_ENOMEM, "read groups: out of memory");
}


/*
 * stats.c - agent results, sessions and statistics: what `taskq result`,
 * `taskq stats` and `taskq session show` read, and the session lookup a
 * worker does before it expands {session_id}.
 *
 * Nothing here writes: a session advances in tq_queue_finish (claim.c),
 * in the transaction that records the attempt.
 *
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int tq_sqlite_session_get(struct tq_queue *base, const char *key, char **agent_session,
			 struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_GET, err);
	int rc;

	*agent_session = NULL;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && tq_col_strdup(st, 0, agent_session) < 0) {
		tq_db_done(st);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	tq_db_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	       tq_db_error(q, rc, err, "read session");
}

/* ------------------------------------------------------------------ */
/* session show                                                       */

static int64_t col_i64(sqlite3_stmt *st, int c, int64_t none)
{
	return sqlite3_column_type(st, c) == SQLITE_NULL ? none : sqlite3_column_int64(st, c);
}

/* The sessions row of key, if any. *found 1 when there is one. */
static int session_row(struct tq_sqlite *q, const char *key, struct tq_session_info *s,
		       int *found, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_ROW, err);
	int rc;

	*found = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = 1;
		s->last_task_id = col_i64(st, 1, 0);
		s->updated_at = col_i64(st, 2, 0);
		if (tq_col_strdup(st, 0, &s->agent_session) < 0 ||
		    tq_col_strdup(st, 3, &s->cwd) < 0) {
			tq_db_done(st);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
	}
	tq_db_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	       tq_db_error(q, rc, err, "read session");
}

static int session_task_row(sqlite3_stmt *st, struct tq_session_task *t)
{
	memset(t, 0, sizeof(*t));
	t->id = sqlite3_column_int64(st, 0);
	if (tq_state_parse((const char *)sqlite3_column_text(st, 1), &t->state) < 0)
		t->state = TQ_QUEUED;
	t->attempt = sqlite3_column_int(st, 3);
	t->finished_at = col_i64(st, 5, 0);
	if (tq_col_strdup(st, 2, &t->name) < 0 || tq_col_strdup(st, 4, &t->agent_session) < 0)
		return TQ_ENOMEM;
	return 0;
}

/* The tasks of key in submit order, through the tasks_session index; each
 * one's agent session is one probe of the attempts primary key. */
static int session_tasks(struct tq_sqlite *q, const char *key, struct tq_session_info *s,
			 struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_TASKS, err);
	size_t cap = 0;
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (s->ntasks == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct tq_session_task *nt = reallocarray(s->tasks, ncap, sizeof(*nt));
			if (nt == NULL)
				goto nomem;
			s->tasks = nt;
			cap = ncap;
		}
		rc = session_task_row(st, &s->tasks[s->ntasks]);
		s->ntasks++;
		if (rc < 0)
			goto nomem;
	}
	tq_db_done(st);
	return rc == SQLITE_DONE ? 0 : tq_db_error(q, rc, err, "read session tasks");
nomem:
	tq_db_done(st);
	return tq_err_set(err, TQ_ENOMEM, "read session tasks: out of memory");
}

int tq_sqlite_session_show(struct tq_queue *base, const char *key,
			  struct tq_session_info *s, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	int found = 0, rc;

	memset(s, 0, sizeof(*s));
	if ((s->key = strdup(key)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	if ((rc = session_row(q, key, s, &found, err)) < 0 ||
	    (rc = session_tasks(q, key, s, err)) < 0) {
		tq_session_info_release(s);
		return rc;
	}
	if (!found && s->ntasks == 0) {
		tq_session_info_release(s);
		return tq_err_set(err, TQ_ENOTFOUND, "session \"%s\": no such session", key);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* stats                                                              */

static void bind_filter(sqlite3_stmt *st, const struct tq_stats_filter *f)
{
	tq_bind_text(st, 1, f->batch);
	tq_bind_text(st, 2, f->group);
	sqlite3_bind_int64(st, 3, f->since > 0 ? f->since : INT64_MIN);
}

static void row_add(struct tq_stats_row *r, sqlite3_stmt *st)
{
	r->attempts += sqlite3_column_int64(st, 3);
	r->results += sqlite3_column_int64(st, 4);
	r->errors += sqlite3_column_int64(st, 5);
	r->cost_usd += sqlite3_column_double(st, 6);
	r->costed += sqlite3_column_int64(st, 7);
	r->input_tokens += sqlite3_column_int64(st, 8);
	r->output_tokens += sqlite3_column_int64(st, 9);
	r->cache_read_tokens += sqlite3_column_int64(st, 10);
	r->cache_creation_tokens += sqlite3_column_int64(st, 11);
	r->num_turns += sqlite3_column_int64(st, 12);
	r->runtime_ms += sqlite3_column_int64(st, 13);
	r->agent_ms += sqlite3_column_int64(st, 14);
	r->timed += sqlite3_column_int64(st, 15);
}

/* The per-model row for the current row's model (added if new). NULL when
 * out of memory. */
static struct tq_stats_row *model_row(struct tq_stats *s, sqlite3_stmt *st, size_t *cap)
{
	const char *m = (const char *)sqlite3_column_text(st, 2);
	struct tq_stats_row *r;

	for (size_t i = 0; i < s->nmodels; i++) {
		const char *have = s->models[i].model;
		if ((m == NULL && have == NULL) || (m && have && strcmp(m, have) == 0))
			return &s->models[i];
	}
	if (s->nmodels == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4;
		struct tq_stats_row *nm = reallocarray(s->models, ncap, sizeof(*nm));
		if (nm == NULL)
			return NULL;
		s->models = nm;
		*cap = ncap;
	}
	r = &s->models[s->nmodels];
	memset(r, 0, sizeof(*r));
	if (m != NULL && (r->model = strdup(m)) == NULL)
		return NULL;
	s->nmodels++;
	return r;
}

static int stats_group(struct tq_stats *s, sqlite3_stmt *st, size_t *cap)
{
	enum tq_outcome o = TQ_OUT_NONE;
	enum tq_category c = TQ_CAT_NONE;
	int64_t n = sqlite3_column_int64(st, 3);
	struct tq_stats_row *r;

	if (tq_outcome_parse((const char *)sqlite3_column_text(st, 0), &o) < 0)
		o = TQ_OUT_NONE;
	if (tq_category_parse((const char *)sqlite3_column_text(st, 1), &c) < 0)
		c = TQ_CAT_NONE;
	s->outcomes[o] += n;
	s->categories[c] += n;
	row_add(&s->total, st);
	if (sqlite3_column_int64(st, 4) == 0)
		return 0; /* no agent result in this group: no model row */
	if ((r = model_row(s, st, cap)) == NULL)
		return TQ_ENOMEM;
	row_add(r, st);
	return 0;
}

static int cmp_cost(const void *a, const void *b)
{
	const struct tq_stats_row *x = a, *y = b;

	if (x->cost_usd != y->cost_usd)
		return x->cost_usd > y->cost_usd ? -1 : 1;
	return x->results > y->results ? -1 : x->results < y->results;
}

static int stats_sums(struct tq_sqlite *q, const struct tq_stats_filter *f,
		      struct tq_stats *s, struct tq_err *err)
{
	sqlite3_stmt *st = f->batch != NULL
		? tq_db_stmt(q, ST_STATS_BATCH, err)
		: tq_db_stmt(q, ST_STATS_ALL, err);
	size_t cap = 0;
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	bind_filter(st, f);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (stats_group(s, st, &cap) < 0) {
			tq_db_done(st);
			return tq_err_set(err, TQ_ENOMEM, "stats: out of memory");
		}
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "read stats");
	if (s->nmodels > 1)
		qsort(s->models, s->nmodels, sizeof(*s->models), cmp_cost);
	return 0;
}

static int stats_tasks(struct tq_sqlite *q, const struct tq_stats_filter *f,
		       struct tq_stats *s, struct tq_err *err)
{
	sqlite3_stmt *st = f->batch != NULL
		? tq_db_stmt(q, ST_STATS_TASKS_B, err)
		: tq_db_stmt(q, ST_STATS_TASKS, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	bind_filter(st, f);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		s->tasks = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read stats");
}

int tq_sqlite_stats(struct tq_queue *base, const struct tq_stats_filter *f,
		   struct tq_stats *s, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	int rc;

	memset(s, 0, sizeof(*s));
	/* Two reads, not one transaction (the statement cache has no plain
	 * BEGIN, and BEGIN IMMEDIATE would hold up the workers): an attempt
	 * that starts between them can be in one and not the other. */
	if ((rc = stats_sums(q, f, s, err)) < 0 || (rc = stats_tasks(q, f, s, err)) < 0) {
		tq_stats_release(s);
		return rc;
	}
	return 0;
}


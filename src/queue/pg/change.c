/*
 * change.c - what the CLI changes directly in the PostgreSQL store: cancel,
 * remove, kill requests, manual retries, group pauses, a group's limit,
 * and clearing finished tasks. As the SQLite backend's change.c and
 * batch.c; each change that reads a task's state first reads it FOR UPDATE,
 * so a worker's finish of that task waits for it, or it for the finish.
 */
#include "internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sys.h"

/* The state of task id, its row locked until the transaction ends. */
static int state_locked(struct tq_pg *q, int64_t id, enum tq_state *s, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(q, "SELECT state FROM tasks WHERE id = $1 FOR UPDATE", &p, err,
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

int tq_pg_cancel(struct tq_queue *base, int64_t id, const char *reason,
		 enum tq_state *was, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	int64_t now = tq_now_ms();
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	if ((rc = state_locked(q, id, &s, err)) < 0)
		goto fail;
	if (was)
		*was = s;
	if (s != TQ_QUEUED && s != TQ_SCHEDULED && s != TQ_BLOCKED) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld is %s, not waiting to run",
				(long long)id, tq_state_name(s));
		goto fail;
	}
	tq_pg_i64(&p, id);
	tq_pg_txt(&p, reason ? reason : "canceled by user");
	tq_pg_i64(&p, now);
	if ((rc = tq_pg_exec(q, "UPDATE tasks SET state = 'canceled', outcome = 'canceled',"
			     " reason = $2, finished_at = $3 WHERE id = $1 AND state IN"
			     " ('queued','scheduled','blocked')", &p, NULL, err,
			     "cancel task")) < 0 ||
	    (rc = tq_pg_deps_resolve(q, id, TQ_CANCELED, now, err)) < 0 ||
	    (rc = tq_pg_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

int tq_pg_remove(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	int64_t now = tq_now_ms();
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	if ((rc = state_locked(q, id, &s, err)) < 0)
		goto fail;
	if (s == TQ_RUNNING) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld is running; kill it first",
				(long long)id);
		goto fail;
	}
	tq_pg_i64(&p, id);
	/* a task removed before it ran counts as canceled for its dependents
	 * (resolved after the delete, whose trigger took it out of their
	 * counts), as with SQLite */
	if ((rc = tq_pg_exec(q, "DELETE FROM tasks WHERE id = $1", &p, NULL, err,
			     "remove task")) < 0 ||
	    (!tq_state_final(s) && (rc = tq_pg_deps_resolve(q, id, TQ_CANCELED, now, err)) < 0) ||
	    (rc = tq_pg_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

int tq_pg_request_kill(struct tq_queue *base, int64_t id, int sig, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	enum tq_state s = TQ_QUEUED;
	int64_t changed = 0;
	int rc;

	if (sig <= 0 || sig >= NSIG)
		return tq_err_set(err, TQ_EINVAL, "signal %d: not a signal", sig);
	tq_pg_i64(&p, id);
	tq_pg_i64(&p, sig);
	tq_pg_i64(&p, tq_now_ms());
	if ((rc = tq_pg_exec(q, "UPDATE tasks SET kill_signal = $2, kill_requested_at = $3"
			     " WHERE id = $1 AND state = 'running'", &p, &changed, err,
			     "request kill")) < 0)
		return rc;
	if (changed > 0)
		return 0;
	if ((rc = tq_pg_state_of(q, id, &s, err)) < 0)
		return rc;
	return tq_err_set(err, TQ_ESTATE, "task %lld is %s, not running", (long long)id,
			  tq_state_name(s));
}

static int retry_in_txn(struct tq_pg *q, int64_t id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = state_locked(q, id, &s, err)) < 0)
		return rc;
	if (!tq_state_final(s))
		return tq_err_set(err, TQ_ESTATE, "task %lld is %s; only a finished task "
				  "can be retried", (long long)id, tq_state_name(s));
	tq_pg_i64(&p, id);
	if ((rc = tq_pg_exec(q, "UPDATE attempts SET counted = 0 WHERE task_id = $1", &p,
			     NULL, err, "retry task")) < 0)
		return rc;
	return tq_pg_exec(q, "UPDATE tasks SET state = 'queued', run_after = 0,"
			  " finished_at = NULL, exit_code = NULL, signal = NULL, outcome = NULL,"
			  " category = NULL, reason = NULL WHERE id = $1", &p, NULL, err,
			  "retry task");
}

int tq_pg_retry(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	if ((rc = retry_in_txn(q, id, err)) < 0 || (rc = tq_pg_wake(q, err)) < 0 ||
	    (rc = tq_pg_commit(q, err)) < 0) {
		tq_pg_rollback(q);
		return rc;
	}
	return 0;
}

int tq_pg_retry_failed(struct tq_queue *base, const char *batch, int64_t *n,
		       struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rows, rc;

	*n = 0;
	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	tq_pg_txt(&p, batch);
	r = tq_pg_query(q, "SELECT id FROM tasks WHERE state IN ('failed','timed_out')"
			" AND ($1::text IS NULL OR batch = $1) ORDER BY id", &p, err,
			"find failed tasks");
	if (r == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	rows = tq_pg_rows(r);
	for (int i = 0; i < rows && rc == 0; i++)
		rc = retry_in_txn(q, tq_pg_get_i64(r, i, 0, 0), err);
	tq_pg_clear(r);
	if (rc < 0 || (rows > 0 && (rc = tq_pg_wake(q, err)) < 0) ||
	    (rc = tq_pg_commit(q, err)) < 0)
		goto fail;
	*n = rows;
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

/* One statement and, when it changed a row and wake is set, the other
 * nodes woken (tq_pg_wake), in one transaction. */
static int exec_wake(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
		     int wake, int64_t *changed, struct tq_err *err, const char *what)
{
	int rc;

	if (!wake)
		return tq_pg_exec(q, sql, p, changed, err, what);
	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	if ((rc = tq_pg_exec(q, sql, p, changed, err, what)) < 0 ||
	    (*changed > 0 && (rc = tq_pg_wake(q, err)) < 0) ||
	    (rc = tq_pg_commit(q, err)) < 0) {
		tq_pg_rollback(q);
		return rc;
	}
	return 0;
}

/* A group's row changed; wake: what it changed may let tasks start. */
static int group_update(struct tq_pg *q, const char *sql, const char *name, int wake,
			struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	int rc;

	tq_pg_txt(&p, name);
	if ((rc = exec_wake(q, sql, &p, wake, &changed, err, "change group")) < 0)
		return rc;
	if (changed == 0)
		return tq_err_set(err, TQ_ENOTFOUND, "group %s: no such group (no task "
				  "has used it)", name);
	return 0;
}

int tq_pg_group_pause(struct tq_queue *base, const char *name, struct tq_err *err)
{
	return group_update(tq_pg_of(base), "INSERT INTO groups(name, paused) VALUES ($1, 1)"
			    " ON CONFLICT (name) DO UPDATE SET paused = 1", name, 0, err);
}

int tq_pg_group_resume(struct tq_queue *base, const char *name, struct tq_err *err)
{
	return group_update(tq_pg_of(base), "UPDATE groups SET paused = 0, paused_until = 0,"
			    " pause_reason = NULL, probe = 0, probe_task = NULL WHERE name = $1",
			    name, 1, err);
}

int tq_pg_group_set_parallel(struct tq_queue *base, const char *name, int64_t parallel,
			     struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len >= TQ_NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "group name: expected 1 to %d bytes",
				  TQ_NAME_MAX - 1);
	if (parallel < 0 || parallel > TQ_PARALLEL_MAX)
		return tq_err_set(err, TQ_EINVAL, "parallel %lld: expected 0 (unlimited) to %d",
				  (long long)parallel, TQ_PARALLEL_MAX);
	tq_pg_txt(&p, name);
	tq_pg_i64(&p, parallel);
	/* a limit raised or lifted lets queued tasks start */
	return exec_wake(tq_pg_of(base), "INSERT INTO groups(name, parallel) VALUES ($1, $2)"
			 " ON CONFLICT (name) DO UPDATE SET parallel = $2", &p, 1, &changed,
			 err, "set group");
}

/* Remove the logs of ids[0..n); the first failure is returned, the rest are
 * still tried. */
static int remove_logs(struct tq_pg *q, const int64_t *ids, size_t n, struct tq_err *err)
{
	struct tq_err one = TQ_ERR_INIT;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (tq_pg_log_remove(&q->base, ids[i], &one) == 0 || rc < 0)
			continue;
		rc = tq_err_set(err, one.code, "task %lld removed, but not its log: %s",
				(long long)ids[i], one.msg);
	}
	return rc;
}

int tq_pg_clear_finished(struct tq_queue *base, int64_t before, size_t max,
			 int64_t *removed, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	int64_t *ids = NULL;
	PGresult *r;
	int rows, rc;

	*removed = 0;
	if (max == 0)
		return 0;
	tq_pg_i64(&p, before);
	tq_pg_i64(&p, (int64_t)max);
	r = tq_pg_query(q, "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks"
			" WHERE finished_at < $1 AND state IN " TQ_PG_FINAL
			" ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id",
			&p, err, "clear tasks");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (ids = calloc((size_t)rows, sizeof(*ids))) == NULL) {
		tq_pg_clear(r);
		*removed = rows;
		return tq_err_set(err, TQ_ENOMEM, "clear tasks: out of memory");
	}
	for (int i = 0; i < rows; i++)
		ids[i] = tq_pg_get_i64(r, i, 0, 0);
	tq_pg_clear(r);
	*removed = rows;
	rc = remove_logs(q, ids, (size_t)rows, err);
	free(ids);
	return rc;
}

int tq_pg_clear_task(struct tq_queue *base, int64_t id, enum tq_state *was,
		     struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	if ((rc = state_locked(q, id, &s, err)) < 0)
		goto fail;
	if (was)
		*was = s;
	if (!tq_state_final(s)) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld is %s, not finished (taskq remove "
				"%lld deletes it anyway)", (long long)id, tq_state_name(s),
				(long long)id);
		goto fail;
	}
	tq_pg_i64(&p, id);
	if ((rc = tq_pg_exec(q, "DELETE FROM tasks WHERE id = $1 AND state IN " TQ_PG_FINAL,
			     &p, NULL, err, "clear task")) < 0 ||
	    (rc = tq_pg_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

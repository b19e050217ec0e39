/*
 * change.c - what the CLI changes directly: cancel a task that has not
 * started, remove a task, ask for a running task to be killed. Killing
 * itself is the worker's job (it owns the process); the store only records
 * the request, so it survives until the worker sees it.
 */
#include "internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../common/sys.h"

/* The state of task id, or TQ_ENOTFOUND. */
static int state_of(struct tq_queue *q, int64_t id, enum tq_state *s, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_STATE_OF, "SELECT state FROM tasks WHERE id = ?1",
				      err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		tq_state_parse((const char *)sqlite3_column_text(st, 0), s);
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read task");
}

static int not_pending(enum tq_state s)
{
	return s != TQ_QUEUED && s != TQ_SCHEDULED && s != TQ_BLOCKED;
}

int tq_queue_cancel(struct tq_queue *q, int64_t id, const char *reason,
		    enum tq_state *was, struct tq_err *err)
{
	sqlite3_stmt *st;
	int64_t now = tq_now_ms();
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = state_of(q, id, &s, err)) < 0)
		goto fail;
	if (was)
		*was = s;
	if (not_pending(s)) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld is %s, not waiting to run",
				(long long)id, tq_state_name(s));
		goto fail;
	}
	st = tq_db_stmt(q, ST_CANCEL,
		"UPDATE tasks SET state = 'canceled', outcome = 'canceled', reason = ?2,"
		" finished_at = ?3 WHERE id = ?1 AND state IN ('queued','scheduled','blocked')",
		err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, id);
	tq_bind_text(st, 2, reason ? reason : "canceled by user");
	sqlite3_bind_int64(st, 3, now);
	if ((rc = tq_db_exec_st(q, st, err, "cancel task")) < 0 ||
	    (rc = tq_deps_resolve(q, id, TQ_CANCELED, now, err)) < 0 ||
	    (rc = tq_db_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

int tq_queue_remove(struct tq_queue *q, int64_t id, struct tq_err *err)
{
	sqlite3_stmt *st;
	int64_t now = tq_now_ms();
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = state_of(q, id, &s, err)) < 0)
		goto fail;
	if (s == TQ_RUNNING) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld is running; kill it first",
				(long long)id);
		goto fail;
	}
	/* A task removed before it ran counts as canceled for its dependents. */
	if (!tq_state_final(s) && (rc = tq_deps_resolve(q, id, TQ_CANCELED, now, err)) < 0)
		goto fail;
	st = tq_db_stmt(q, ST_REMOVE, "DELETE FROM tasks WHERE id = ?1", err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, id);
	if ((rc = tq_db_exec_st(q, st, err, "remove task")) < 0 ||
	    (rc = tq_db_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

int tq_queue_request_kill(struct tq_queue *q, int64_t id, int sig, struct tq_err *err)
{
	sqlite3_stmt *st;
	enum tq_state s = TQ_QUEUED;
	int rc;

	if (sig <= 0 || sig >= NSIG)
		return tq_err_set(err, TQ_EINVAL, "signal %d: not a signal", sig);
	st = tq_db_stmt(q, ST_KILL,
		"UPDATE tasks SET kill_signal = ?2, kill_requested_at = ?3"
		" WHERE id = ?1 AND state = 'running'", err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, sig);
	sqlite3_bind_int64(st, 3, tq_now_ms());
	if ((rc = tq_db_exec_st(q, st, err, "request kill")) < 0)
		return rc;
	if (sqlite3_changes(q->db) > 0)
		return 0;
	if ((rc = state_of(q, id, &s, err)) < 0)
		return rc;
	return tq_err_set(err, TQ_ESTATE, "task %lld is %s, not running", (long long)id,
			  tq_state_name(s));
}

/*
 * change.c - what the CLI changes directly: cancel a task that has not
 * started, remove a task, ask for a running task to be killed. Killing
 * itself is the worker's job (it owns the process); the store only records
 * the request, so it survives until the worker sees it.
 */
#include "internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sys.h"

/* The state of task id, or TQ_ENOTFOUND. */
static int state_of(struct tq_sqlite *q, int64_t id, enum tq_state *s, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_STATE_OF, err);
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

int tq_sqlite_cancel(struct tq_queue *base, int64_t id, const char *reason,
		    enum tq_state *was, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
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
	st = tq_db_stmt(q, ST_CANCEL, err);
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

int tq_sqlite_remove(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
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
	st = tq_db_stmt(q, ST_REMOVE, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, id);
	if ((rc = tq_db_exec_st(q, st, err, "remove task")) < 0)
		goto fail;
	/* A task removed before it ran counts as canceled for its dependents:
	 * resolved after the delete, whose trigger (deps_left_delete) has
	 * taken it out of their counts (its deps rows, which name it by id
	 * only, are still there to find them by). */
	if ((!tq_state_final(s) && (rc = tq_deps_resolve(q, id, TQ_CANCELED, now, err)) < 0) ||
	    (rc = tq_db_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

int tq_sqlite_request_kill(struct tq_queue *base, int64_t id, int sig, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	enum tq_state s = TQ_QUEUED;
	int rc;

	if (sig <= 0 || sig >= NSIG)
		return tq_err_set(err, TQ_EINVAL, "signal %d: not a signal", sig);
	st = tq_db_stmt(q, ST_KILL, err);
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

/* ------------------------------------------------------------------ */
/* Manual retries                                                     */

static int retry_in_txn(struct tq_sqlite *q, int64_t id, struct tq_err *err)
{
	sqlite3_stmt *st;
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = state_of(q, id, &s, err)) < 0)
		return rc;
	if (!tq_state_final(s))
		return tq_err_set(err, TQ_ESTATE, "task %lld is %s; only a finished task "
				  "can be retried", (long long)id, tq_state_name(s));
	st = tq_db_stmt(q, ST_RETRY_ATTEMPTS, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	if ((rc = tq_db_exec_st(q, st, err, "retry task")) < 0)
		return rc;
	st = tq_db_stmt(q, ST_RETRY_TASK, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	return tq_db_exec_st(q, st, err, "retry task");
}

int tq_sqlite_retry(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = retry_in_txn(q, id, err)) < 0 || (rc = tq_db_commit(q, err)) < 0) {
		tq_db_rollback(q);
		return rc;
	}
	return 0;
}

int tq_sqlite_retry_failed(struct tq_queue *base, const char *batch, int64_t *n,
			  struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	int64_t *ids = NULL;
	size_t count = 0, cap = 0;
	int rc;

	*n = 0;
	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	st = tq_db_stmt(q, ST_FAILED_IDS, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto out;
	}
	tq_bind_text(st, 1, batch);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			int64_t *ni = reallocarray(ids, ncap, sizeof(*ni));
			if (ni == NULL) {
				tq_db_done(st);
				rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
				goto out;
			}
			ids = ni;
			cap = ncap;
		}
		ids[count++] = sqlite3_column_int64(st, 0);
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		rc = tq_db_error(q, rc, err, "find failed tasks");
		goto out;
	}
	rc = 0;
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = retry_in_txn(q, ids[i], err);
	if (rc == 0 && (rc = tq_db_commit(q, err)) == 0)
		*n = (int64_t)count;
out:
	if (rc < 0)
		tq_db_rollback(q);
	free(ids);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Group pauses                                                       */

static int group_update(struct tq_sqlite *q, enum tq_stmt slot, const char *name,
			struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, slot, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, name);
	if ((rc = tq_db_exec_st(q, st, err, "change group")) < 0)
		return rc;
	if (sqlite3_changes(q->db) == 0)
		return tq_err_set(err, TQ_ENOTFOUND, "group %s: no such group (no task "
				  "has used it)", name);
	return 0;
}

int tq_sqlite_group_pause(struct tq_queue *base, const char *name, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	/* Pausing a group before its first task is submitted is allowed. */
	return group_update(q, ST_GROUP_PAUSE_HAND, name, err);
}

int tq_sqlite_group_resume(struct tq_queue *base, const char *name, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	return group_update(q, ST_GROUP_RESUME, name, err);
}

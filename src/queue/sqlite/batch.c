/*
 * batch.c - batches, group settings and retention: what `taskq batch`,
 * `taskq group set`, `taskq clear`, `taskq wait --batch` and the
 * supervisor's retention sweep read and change.
 *
 * A batch is only a name on tasks (tasks.batch, indexed by tasks_batch):
 * reading one walks that index and the attempts of its tasks, never the
 * rest of the queue. Clearing deletes task rows; attempts, labels,
 * dependency rows, cursors and stdin go with them by ON DELETE CASCADE, and
 * the log files are unlinked after the commit (a log left behind by a crash
 * in between is only disk space; a log removed before a failed commit would
 * be output lost).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/sys.h"
#include "queue/logstore.h"

enum { C_NAME = 0, C_COUNTS = 1, C_TOTAL = 1 + TQ_STATE_COUNT, C_FIRST_CREATED,
       C_LAST_CREATED, C_FIRST_STARTED, C_LAST_FINISHED, C_LAST_ID, C_COST, C_NCOST };

static int batch_from_row(sqlite3_stmt *st, struct tq_batch *b)
{
	memset(b, 0, sizeof(*b));
	for (int i = 0; i < TQ_STATE_COUNT; i++)
		b->counts[i] = sqlite3_column_int64(st, C_COUNTS + i);
	b->total = sqlite3_column_int64(st, C_TOTAL);
	b->first_created = sqlite3_column_int64(st, C_FIRST_CREATED);
	b->last_created = sqlite3_column_int64(st, C_LAST_CREATED);
	b->first_started = sqlite3_column_int64(st, C_FIRST_STARTED);
	b->last_finished = sqlite3_column_int64(st, C_LAST_FINISHED);
	b->cost_usd = sqlite3_column_double(st, C_COST);
	b->has_cost = sqlite3_column_int64(st, C_NCOST) > 0;
	return tq_col_strdup(st, C_NAME, &b->name);
}

int tq_sqlite_batches(struct tq_queue *base, struct tq_batch **list, size_t *n,
		     struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_BATCH_LIST, err);
	struct tq_batch *out = NULL;
	size_t cap = 0, count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct tq_batch *nb = reallocarray(out, ncap, sizeof(*nb));
			if (nb == NULL)
				goto nomem;
			out = nb;
			cap = ncap;
		}
		if (batch_from_row(st, &out[count++]) < 0)
			goto nomem;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_batch_list_free(out, count);
		return tq_db_error(q, rc, err, "read batches");
	}
	*list = out;
	*n = count;
	return 0;
nomem:
	tq_db_done(st);
	tq_batch_list_free(out, count);
	return tq_err_set(err, TQ_ENOMEM, "read batches: out of memory");
}

int tq_sqlite_batch_get(struct tq_queue *base, const char *name, struct tq_batch *b,
		       struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_BATCH_ONE, err);
	int rc;

	memset(b, 0, sizeof(*b));
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && batch_from_row(st, b) < 0) {
		tq_db_done(st);
		tq_batch_release(b);
		return tq_err_set(err, TQ_ENOMEM, "read batch: out of memory");
	}
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "batch %s: no such batch (no task has it)",
				  name);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read batch");
}

int tq_sqlite_batch_open(struct tq_queue *base, const char *name, int64_t *open,
			struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_BATCH_OPEN, err);
	int rc;

	*open = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*open = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read batch");
}

/* ------------------------------------------------------------------ */
/* Group settings                                                     */

int tq_sqlite_group_set_parallel(struct tq_queue *base, const char *name, int64_t parallel,
				struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len >= TQ_NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "group name: expected 1 to %d bytes",
				  TQ_NAME_MAX - 1);
	if (parallel < 0 || parallel > TQ_PARALLEL_MAX)
		return tq_err_set(err, TQ_EINVAL, "parallel %lld: expected 0 (unlimited) to %d",
				  (long long)parallel, TQ_PARALLEL_MAX);
	st = tq_db_stmt(q, ST_GROUP_SET, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, name);
	sqlite3_bind_int64(st, 2, parallel);
	return tq_db_exec_st(q, st, err, "set group");
}

/* ------------------------------------------------------------------ */
/* Clearing finished tasks                                            */

/* Unlink the logs of ids[0..n); the first failure is returned, the rest are
 * still tried. */
static int remove_logs(struct tq_sqlite *q, const int64_t *ids, size_t n,
		       struct tq_err *err)
{
	struct tq_err one = TQ_ERR_INIT;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (tq_sqlite_log_remove(&q->base, ids[i], &one) == 0 || rc < 0)
			continue;
		rc = tq_err_set(err, one.code, "task %lld removed, but not its log: %s",
				(long long)ids[i], one.msg);
	}
	return rc;
}

int tq_sqlite_clear_finished(struct tq_queue *base, int64_t before, size_t max,
			    int64_t *removed, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	int64_t *ids = NULL;
	size_t count = 0;
	int rc;

	*removed = 0;
	if (max == 0)
		return 0;
	if ((ids = calloc(max, sizeof(*ids))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "clear tasks: out of memory");
	if ((rc = tq_db_begin(q, err)) < 0)
		goto out;
	/* DELETE ... RETURNING hands every id back after the deletes ran, all
	 * inside this transaction; the oldest go first (tasks_finished). */
	st = tq_db_stmt(q, ST_CLEAR_OLD, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (count < max)
			ids[count++] = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		rc = tq_db_error(q, rc, err, "clear tasks");
		goto fail;
	}
	if ((rc = tq_db_commit(q, err)) < 0)
		goto fail;
	*removed = (int64_t)count;
	rc = remove_logs(q, ids, count, err);
	goto out;
fail:
	tq_db_rollback(q);
out:
	free(ids);
	return rc;
}

static int state_in_txn(struct tq_sqlite *q, int64_t id, enum tq_state *s,
			struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_STATE_OF, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW &&
	    tq_state_parse((const char *)sqlite3_column_text(st, 0), s) < 0)
		rc = SQLITE_CORRUPT;
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read task");
}

int tq_sqlite_clear_task(struct tq_queue *base, int64_t id, enum tq_state *was,
			struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	enum tq_state s = TQ_QUEUED;
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = state_in_txn(q, id, &s, err)) < 0)
		goto fail;
	if (was)
		*was = s;
	if (!tq_state_final(s)) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld is %s, not finished (taskq remove "
				"%lld deletes it anyway)", (long long)id, tq_state_name(s),
				(long long)id);
		goto fail;
	}
	st = tq_db_stmt(q, ST_CLEAR_ONE, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, id);
	if ((rc = tq_db_exec_st(q, st, err, "clear task")) < 0 ||
	    (rc = tq_db_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

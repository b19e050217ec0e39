/*
 * sessions.c - the sessions rows as issue 19 keeps them: `taskq sessions`
 * (each row with its tasks' count and cost), a session's warm agent
 * process recorded, cleared, marked idle and listed per node, and the close
 * request `taskq sessions close` stores for the supervisor that holds it.
 *
 * A warm process is its pid and start time together: every write that
 * names one is fenced by both (WHERE warm_pid = ? AND warm_start = ?), so a
 * supervisor acting on a process it no longer holds changes nothing. How a
 * session advances its agent session is claim.c's (tq_queue_finish); its
 * tasks and directory are submit.c's; `taskq session show` is stats.c's.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The columns of SESSION_COLS and SESSION_SUMS (stmt.h), in order. */
enum {
	S_KEY, S_AGENT, S_AGENT_SESSION, S_CWD, S_LAST_TASK, S_UPDATED, S_PID, S_START,
	S_NODE, S_WARM_AT, S_IDLE_SINCE, S_CLOSE_AT, S_IDLE_TIMEOUT, S_MESSAGES, S_COST,
	S_COSTED
};

static int64_t col_i64(sqlite3_stmt *st, int c, int64_t none)
{
	return sqlite3_column_type(st, c) == SQLITE_NULL ? none : sqlite3_column_int64(st, c);
}

static int row_from(sqlite3_stmt *st, struct tq_session_row *r)
{
	memset(r, 0, sizeof(*r));
	r->last_task_id = col_i64(st, S_LAST_TASK, 0);
	r->updated_at = col_i64(st, S_UPDATED, 0);
	r->pid = (int)col_i64(st, S_PID, 0);
	if (r->pid != 0) {
		r->start = col_i64(st, S_START, 0);
		r->warm_at = col_i64(st, S_WARM_AT, 0);
		r->idle_since = col_i64(st, S_IDLE_SINCE, 0);
		r->close_requested_at = col_i64(st, S_CLOSE_AT, 0);
	}
	r->idle_timeout_ms = col_i64(st, S_IDLE_TIMEOUT, 0);
	r->messages = sqlite3_column_int64(st, S_MESSAGES);
	r->cost_usd = sqlite3_column_double(st, S_COST);
	r->has_cost = sqlite3_column_int64(st, S_COSTED) > 0;
	if (tq_col_strdup(st, S_KEY, &r->key) < 0 ||
	    tq_col_strdup(st, S_AGENT, &r->agent) < 0 ||
	    tq_col_strdup(st, S_AGENT_SESSION, &r->agent_session) < 0 ||
	    tq_col_strdup(st, S_CWD, &r->cwd) < 0 ||
	    (r->pid != 0 && tq_col_strdup(st, S_NODE, &r->node) < 0))
		return TQ_ENOMEM;
	return 0;
}

/* Every row st (bound) returns, into a growing array. */
static int read_rows(struct tq_sqlite *q, sqlite3_stmt *st, struct tq_session_row **list,
		     size_t *n, struct tq_err *err)
{
	struct tq_session_row *rows = NULL;
	size_t cap = 0, k = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (k == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct tq_session_row *nr = reallocarray(rows, ncap, sizeof(*nr));
			if (nr == NULL)
				goto nomem;
			rows = nr;
			cap = ncap;
		}
		rc = row_from(st, &rows[k]);
		k++;
		if (rc < 0)
			goto nomem;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_session_row_list_free(rows, k);
		return tq_db_error(q, rc, err, "read sessions");
	}
	*list = rows;
	*n = k;
	return 0;
nomem:
	tq_db_done(st);
	tq_session_row_list_free(rows, k);
	return tq_err_set(err, TQ_ENOMEM, "read sessions: out of memory");
}

int tq_sqlite_sessions(struct tq_queue *base, const char *key, struct tq_session_row **list,
		       size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, key ? ST_SESSIONS_ONE : ST_SESSIONS_ALL, err);

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	if (key != NULL)
		tq_bind_text(st, 1, key);
	return read_rows(q, st, list, n, err);
}

int tq_sqlite_warm_list(struct tq_queue *base, const char *node, struct tq_session_row **list,
			size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, node ? ST_WARM_LIST_NODE : ST_WARM_LIST_ALL, err);

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	if (node != NULL)
		tq_bind_text(st, 1, node);
	return read_rows(q, st, list, n, err);
}

/* The one row of key: *found 0 when there is none (r zeroed). */
static int read_one(struct tq_sqlite *q, const char *key, struct tq_session_row *r,
		    int *found, struct tq_err *err)
{
	struct tq_session_row *rows = NULL;
	size_t n = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	*found = 0;
	if ((rc = tq_sqlite_sessions(&q->base, key, &rows, &n, err)) < 0)
		return rc;
	if (n > 0) {
		*r = rows[0];
		*found = 1;
		memset(&rows[0], 0, sizeof(rows[0]));
	}
	tq_session_row_list_free(rows, n);
	return 0;
}

int tq_sqlite_warm_set(struct tq_queue *base, const char *key, const char *node, int pid,
		       int64_t start, int64_t now, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct tq_session_row r;
	sqlite3_stmt *st;
	int found, rc;

	if (key == NULL || node == NULL || pid <= 0)
		return tq_err_set(err, TQ_EINVAL, "warm process: a session key, a node "
				  "and a pid are required");
	if ((st = tq_db_stmt(q, ST_WARM_SET, err)) == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, start);
	tq_bind_text(st, 4, node);
	sqlite3_bind_int64(st, 5, now);
	if ((rc = tq_db_exec_st(q, st, err, "record warm process")) < 0)
		return rc;
	if (sqlite3_changes(q->db) > 0)
		return 0;
	if ((rc = read_one(q, key, &r, &found, err)) < 0)
		return rc;
	rc = tq_err_set(err, TQ_EEXIST, "session %s: warm process %d on node %s is "
			"recorded, not %d", key, r.pid, r.node ? r.node : "?", pid);
	tq_session_row_release(&r);
	return rc;
}

int tq_sqlite_warm_clear(struct tq_queue *base, const char *key, int pid, int64_t start,
			 int *cleared, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_WARM_CLEAR, err);
	int rc;

	if (cleared)
		*cleared = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, start);
	if ((rc = tq_db_exec_st(q, st, err, "clear warm process")) < 0)
		return rc;
	if (cleared)
		*cleared = sqlite3_changes(q->db) > 0;
	return 0;
}

int tq_sqlite_warm_idle(struct tq_queue *base, const char *key, int pid, int64_t start,
			int64_t since, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_WARM_IDLE, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, start);
	tq_bind_opt_i64(st, 4, since, 0);
	if ((rc = tq_db_exec_st(q, st, err, "mark warm process")) < 0)
		return rc;
	if (sqlite3_changes(q->db) == 0)
		return tq_err_set(err, TQ_ESTALE, "session %s: warm process %d is not the "
				  "one recorded", key, pid);
	return 0;
}

int tq_sqlite_session_close_request(struct tq_queue *base, const char *key, int64_t now,
				    struct tq_session_row *row, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_CLOSE_ASK, err);
	int found, rc;

	memset(row, 0, sizeof(*row));
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	sqlite3_bind_int64(st, 2, now);
	if ((rc = tq_db_exec_st(q, st, err, "store close request")) < 0 ||
	    (rc = read_one(q, key, row, &found, err)) < 0)
		return rc;
	if (!found)
		return tq_err_set(err, TQ_ENOTFOUND, "session \"%s\": no such session", key);
	return 0;
}

int tq_sqlite_session_close_take(struct tq_queue *base, const char *key, int pid,
				 int64_t start, int64_t *requested_at, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	int rc;

	*requested_at = 0;
	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((st = tq_db_stmt(q, ST_SESSION_CLOSE_READ, err)) == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	tq_bind_text(st, 1, key);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, start);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*requested_at = col_i64(st, 0, 0);
	tq_db_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = tq_db_error(q, rc, err, "read close request");
		goto fail;
	}
	if (*requested_at != 0) {
		if ((st = tq_db_stmt(q, ST_SESSION_CLOSE_DONE, err)) == NULL) {
			rc = err ? err->code : TQ_EIO;
			goto fail;
		}
		tq_bind_text(st, 1, key);
		sqlite3_bind_int64(st, 2, pid);
		sqlite3_bind_int64(st, 3, start);
		if ((rc = tq_db_exec_st(q, st, err, "take close request")) < 0)
			goto fail;
	}
	if ((rc = tq_db_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_db_rollback(q);
	*requested_at = 0;
	return rc;
}

/*
 * sessions.c - the sessions rows of issue 19 in the PostgreSQL store, as the
 * SQLite backend's sessions.c keeps them: `taskq sessions` (each row with
 * its tasks' count and cost), a session's warm agent process recorded,
 * cleared, marked idle and listed per node, and the close request `taskq
 * sessions close` stores for the supervisor that holds it. Every write
 * naming a warm process is fenced by its pid and start time together.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define SESSION_COLS \
	"SELECT s.key, coalesce(s.agent, (SELECT t.agent FROM tasks t" \
	" WHERE t.session = s.key ORDER BY t.id DESC LIMIT 1)), s.agent_session," \
	" s.cwd, s.last_task_id, s.updated_at, s.warm_pid, s.warm_start," \
	" s.warm_node, s.warm_at, s.idle_since, s.close_requested_at," \
	" (SELECT t.idle_timeout_ms FROM tasks t WHERE t.session = s.key" \
	" AND t.warm != 0 ORDER BY t.id DESC LIMIT 1)"
#define SESSION_SUMS \
	", (SELECT count(*) FROM tasks t WHERE t.session = s.key)," \
	" (SELECT coalesce(sum(a.cost_usd), 0) FROM tasks t JOIN attempts a" \
	" ON a.task_id = t.id WHERE t.session = s.key)," \
	" (SELECT count(a.cost_usd) FROM tasks t JOIN attempts a ON a.task_id = t.id" \
	" WHERE t.session = s.key) FROM sessions s"
#define SESSION_NO_SUMS ", 0, 0, 0 FROM sessions s"

enum {
	S_KEY, S_AGENT, S_AGENT_SESSION, S_CWD, S_LAST_TASK, S_UPDATED, S_PID, S_START,
	S_NODE, S_WARM_AT, S_IDLE_SINCE, S_CLOSE_AT, S_IDLE_TIMEOUT, S_MESSAGES, S_COST,
	S_COSTED
};

static int row_from(const PGresult *res, int i, struct tq_session_row *r)
{
	memset(r, 0, sizeof(*r));
	r->last_task_id = tq_pg_get_i64(res, i, S_LAST_TASK, 0);
	r->updated_at = tq_pg_get_i64(res, i, S_UPDATED, 0);
	r->pid = (int)tq_pg_get_i64(res, i, S_PID, 0);
	if (r->pid != 0) {
		r->start = tq_pg_get_i64(res, i, S_START, 0);
		r->warm_at = tq_pg_get_i64(res, i, S_WARM_AT, 0);
		r->idle_since = tq_pg_get_i64(res, i, S_IDLE_SINCE, 0);
		r->close_requested_at = tq_pg_get_i64(res, i, S_CLOSE_AT, 0);
	}
	r->idle_timeout_ms = tq_pg_get_i64(res, i, S_IDLE_TIMEOUT, 0);
	r->messages = tq_pg_get_i64(res, i, S_MESSAGES, 0);
	r->cost_usd = tq_pg_get_dbl(res, i, S_COST);
	r->has_cost = tq_pg_get_i64(res, i, S_COSTED, 0) > 0;
	if (tq_pg_dup(res, i, S_KEY, &r->key) < 0 || tq_pg_dup(res, i, S_AGENT, &r->agent) < 0 ||
	    tq_pg_dup(res, i, S_AGENT_SESSION, &r->agent_session) < 0 ||
	    tq_pg_path_dup(res, i, S_CWD, &r->cwd) == TQ_ENOMEM ||
	    (r->pid != 0 && tq_pg_dup(res, i, S_NODE, &r->node) < 0))
		return TQ_ENOMEM;
	return 0;
}

static int read_rows(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
		     struct tq_session_row **list, size_t *n, struct tq_err *err)
{
	struct tq_session_row *rows = NULL;
	PGresult *r;
	int k;

	*list = NULL;
	*n = 0;
	if ((r = tq_pg_query(q, sql, p, err, "read sessions")) == NULL)
		return err ? err->code : TQ_EIO;
	k = tq_pg_rows(r);
	if (k > 0 && (rows = calloc((size_t)k, sizeof(*rows))) == NULL)
		goto nomem;
	for (int i = 0; i < k; i++)
		if (row_from(r, i, &rows[i]) < 0) {
			tq_session_row_list_free(rows, (size_t)i + 1);
			goto nomem;
		}
	tq_pg_clear(r);
	*list = rows;
	*n = (size_t)k;
	return 0;
nomem:
	tq_pg_clear(r);
	return tq_err_set(err, TQ_ENOMEM, "read sessions: out of memory");
}

int tq_pg_sessions(struct tq_queue *base, const char *key, struct tq_session_row **list,
		   size_t *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	if (key == NULL)
		/* as SQLite's ST_SESSIONS_ALL: a session with nothing left (no
		 * agent session, no warm process, no task) is not listed */
		return read_rows(tq_pg_of(base), SESSION_COLS SESSION_SUMS
				 " WHERE s.agent_session IS NOT NULL OR s.warm_pid IS NOT NULL"
				 " OR EXISTS (SELECT 1 FROM tasks t WHERE t.session = s.key)"
				 " ORDER BY s.key COLLATE \"C\"", NULL, list, n, err);
	tq_pg_txt(&p, key);
	return read_rows(tq_pg_of(base), SESSION_COLS SESSION_SUMS " WHERE s.key = $1", &p,
			 list, n, err);
}

int tq_pg_warm_list(struct tq_queue *base, const char *node, struct tq_session_row **list,
		    size_t *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, node);
	return read_rows(tq_pg_of(base), SESSION_COLS SESSION_NO_SUMS " WHERE s.warm_pid IS"
			 " NOT NULL AND ($1::text IS NULL OR s.warm_node = $1)"
			 " ORDER BY s.key COLLATE \"C\"", &p, list, n, err);
}

static int read_one(struct tq_pg *q, const char *key, struct tq_session_row *r, int *found,
		    struct tq_err *err)
{
	struct tq_session_row *rows = NULL;
	size_t n = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	*found = 0;
	if ((rc = tq_pg_sessions(&q->base, key, &rows, &n, err)) < 0)
		return rc;
	if (n > 0) {
		*r = rows[0];
		*found = 1;
		memset(&rows[0], 0, sizeof(rows[0]));
	}
	tq_session_row_list_free(rows, n);
	return 0;
}

int tq_pg_warm_set(struct tq_queue *base, const char *key, const char *node, int pid,
		   int64_t start, int64_t now, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	struct tq_session_row r;
	int64_t changed = 0;
	int found, rc;

	if (key == NULL || node == NULL || pid <= 0)
		return tq_err_set(err, TQ_EINVAL, "warm process: a session key, a node "
				  "and a pid are required");
	tq_pg_txt(&p, key);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, start);
	tq_pg_txt(&p, node);
	tq_pg_i64(&p, now);
	if ((rc = tq_pg_exec(q, "INSERT INTO sessions(key, updated_at, warm_pid, warm_start,"
			     " warm_node, warm_at) VALUES ($1, 0, $2, $3, $4, $5)"
			     " ON CONFLICT (key) DO UPDATE SET"
			     " warm_at = CASE WHEN sessions.warm_pid IS NULL THEN excluded.warm_at"
			     "  ELSE sessions.warm_at END,"
			     " close_requested_at = CASE WHEN sessions.warm_pid IS NULL THEN NULL"
			     "  ELSE sessions.close_requested_at END,"
			     " warm_pid = excluded.warm_pid, warm_start = excluded.warm_start,"
			     " warm_node = excluded.warm_node, idle_since = NULL"
			     " WHERE sessions.warm_pid IS NULL OR (sessions.warm_pid ="
			     " excluded.warm_pid AND sessions.warm_start = excluded.warm_start"
			     " AND sessions.warm_node = excluded.warm_node)", &p, &changed, err,
			     "record warm process")) < 0)
		return rc;
	if (changed > 0)
		return 0;
	if ((rc = read_one(q, key, &r, &found, err)) < 0)
		return rc;
	rc = tq_err_set(err, TQ_EEXIST, "session %s: warm process %d on node %s is "
			"recorded, not %d", key, r.pid, r.node ? r.node : "?", pid);
	tq_session_row_release(&r);
	return rc;
}

int tq_pg_warm_clear(struct tq_queue *base, const char *key, int pid, int64_t start,
		     int *cleared, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	int rc;

	if (cleared)
		*cleared = 0;
	tq_pg_txt(&p, key);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, start);
	if ((rc = tq_pg_exec(tq_pg_of(base), "UPDATE sessions SET warm_pid = NULL,"
			     " warm_start = NULL, warm_node = NULL, warm_at = NULL,"
			     " idle_since = NULL, close_requested_at = NULL WHERE key = $1"
			     " AND warm_pid = $2 AND warm_start = $3", &p, &changed, err,
			     "clear warm process")) < 0)
		return rc;
	if (cleared)
		*cleared = changed > 0;
	return 0;
}

int tq_pg_warm_idle(struct tq_queue *base, const char *key, int pid, int64_t start,
		    int64_t since, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	int rc;

	tq_pg_txt(&p, key);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, start);
	tq_pg_opt(&p, since, 0);
	if ((rc = tq_pg_exec(tq_pg_of(base), "UPDATE sessions SET idle_since = $4 WHERE key = $1"
			     " AND warm_pid = $2 AND warm_start = $3", &p, &changed, err,
			     "mark warm process")) < 0)
		return rc;
	if (changed == 0)
		return tq_err_set(err, TQ_ESTALE, "session %s: warm process %d is not the "
				  "one recorded", key, pid);
	return 0;
}

int tq_pg_session_close_request(struct tq_queue *base, const char *key, int64_t now,
				struct tq_session_row *row, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	int found, rc;

	memset(row, 0, sizeof(*row));
	tq_pg_txt(&p, key);
	tq_pg_i64(&p, now);
	if ((rc = tq_pg_exec(q, "UPDATE sessions SET close_requested_at ="
			     " coalesce(close_requested_at, $2) WHERE key = $1"
			     " AND warm_pid IS NOT NULL", &p, NULL, err,
			     "store close request")) < 0 ||
	    (rc = read_one(q, key, row, &found, err)) < 0)
		return rc;
	if (!found)
		return tq_err_set(err, TQ_ENOTFOUND, "session \"%s\": no such session", key);
	return 0;
}

int tq_pg_session_close_take(struct tq_queue *base, const char *key, int pid,
			     int64_t start, int64_t *requested_at, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	*requested_at = 0;
	tq_pg_txt(&p, key);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, start);
	/* one statement takes it: the old value, and the request cleared */
	r = tq_pg_query(tq_pg_of(base), "UPDATE sessions s SET close_requested_at = NULL"
			" FROM (SELECT key, close_requested_at FROM sessions WHERE key = $1"
			" AND warm_pid = $2 AND warm_start = $3 FOR UPDATE) o"
			" WHERE s.key = o.key AND o.close_requested_at IS NOT NULL"
			" RETURNING o.close_requested_at", &p, err, "take close request");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0)
		*requested_at = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

/*
 * stats.c - agent results, sessions and statistics: what `taskq result`,
 * `taskq stats` and `taskq session show` read, and the session lookup a
 * worker does before it expands {session_id}.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define ST_SESSION_GET ST_AGENT_0

int tq_queue_session_get(struct tq_queue *q, const char *key, char **agent_session,
			 struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_GET,
		"SELECT agent_session FROM sessions WHERE key = ?1", err);
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

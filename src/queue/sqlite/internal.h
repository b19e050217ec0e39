/*
 * internal.h - what the files of src/queue share and nothing else sees: the
 * connection struct, the statement cache, error mapping, transactions, and
 * row decoding. This is the only header that names SQLite.
 */
#ifndef TQ_QUEUE_INTERNAL_H
#define TQ_QUEUE_INTERNAL_H

#include <limits.h>
#include <sqlite3.h>

#include "queue/queue.h"
#include "stmt.h"

struct tq_queue {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	sqlite3_stmt *list_st[TQ_LIST_VARIANTS];
	unsigned flags;
	int64_t busy_start;     /* mono ms when the current busy wait began */
	int64_t busy_gave_up;   /* mono ms when the busy handler last gave up */
	int64_t busy_timeout;   /* ms */
	char home[PATH_MAX];
	char path[PATH_MAX];    /* HOME/taskq.db */
	char *notice;           /* tq_queue_notice, malloc'd; NULL: none */
};

/* The cached statement of slot id, prepared from its text in stmts.def on
 * first use (so a short-lived CLI process prepares only what it runs) and
 * kept. NULL on error (err filled). */
sqlite3_stmt *tq_db_stmt(struct tq_queue *q, enum tq_stmt id, struct tq_err *err);

/* Path of a task's log: HOME/logs/ID.log. Returns 0 or TQ_EINVAL (too
 * long). The files of logstore.c; no caller outside the backend names it. */
int tq_db_log_path(const struct tq_queue *q, int64_t id, char *buf, size_t n);

/* Reset and clear bindings: the end of every use of a cached statement. */
void tq_db_done(sqlite3_stmt *st);

/* Map an SQLite result code to TQ_E* and fill err with "what: errmsg". */
int tq_db_error(struct tq_queue *q, int rc, struct tq_err *err, const char *what);

/* Run a cached statement that returns no rows (or ignore them); resets it. */
int tq_db_exec_st(struct tq_queue *q, sqlite3_stmt *st, struct tq_err *err,
		  const char *what);

int tq_db_begin(struct tq_queue *q, struct tq_err *err);  /* BEGIN IMMEDIATE */
int tq_db_commit(struct tq_queue *q, struct tq_err *err);
void tq_db_rollback(struct tq_queue *q);                  /* keeps errno/err */

/* Bind helpers: NULL or 0-length text binds SQL NULL where noted. */
int tq_bind_text(sqlite3_stmt *st, int i, const char *s);     /* NULL -> NULL */
int tq_bind_opt_i64(sqlite3_stmt *st, int i, int64_t v, int64_t none);

/* Copy a text column (NULL stays NULL). Returns 0 or TQ_ENOMEM. */
int tq_col_strdup(sqlite3_stmt *st, int col, char **out);

/* Fill t from the current row of a statement that selected tq_task_cols
 * first. Returns 0 or TQ_ENOMEM (t released). */
int tq_task_from_row(sqlite3_stmt *st, struct tq_task *t);

/* Decode a NUL-separated blob into a NULL-terminated malloc'd array. */
int tq_strv_decode(const void *blob, size_t len, char ***v, size_t *n);
/* Encode n strings as "s\0s\0"; *len set. Returns 0, TQ_ENOMEM or TQ_EINVAL
 * (over max bytes). */
int tq_strv_encode(char *const *v, size_t n, size_t max, char **blob, size_t *len);
void tq_strv_free(char **v);

/* Read the task fully (get flags) inside the current transaction. */
int tq_task_load(struct tq_queue *q, int64_t id, unsigned flags, struct tq_task *t,
		 struct tq_err *err);

/* A task reached a final state: unblock or cancel its dependents, in the
 * current transaction. */
int tq_deps_resolve(struct tq_queue *q, int64_t id, enum tq_state state,
		    int64_t now, struct tq_err *err);

#endif

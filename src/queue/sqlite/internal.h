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

/* Slots of the statement cache: each statement is prepared on first use
 * (so a short-lived CLI process prepares only what it runs) and kept. */
enum tq_stmt {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK,
	ST_UNIQUE_FIND, ST_ENV_FIND, ST_ENV_ADD, ST_GROUP_ADD, ST_DEP_STATE,
	ST_SESSION_LAST, ST_TASK_ADD, ST_LABEL_ADD, ST_DEP_ADD, ST_STDIN_ADD,
	ST_PROMOTE_DUE, ST_CLAIM, ST_ATTEMPT_ADD, ST_NEXT_DUE, ST_NEXT_PAUSE,
	ST_RENEW, ST_SET_PROCESS, ST_FENCE, ST_ATTEMPT_END, ST_ATTEMPT_RESULT,
	ST_TASK_END, ST_GROUP_PAUSE, ST_DEPENDENTS, ST_UNBLOCK,
	ST_CANCEL, ST_EXPIRED,
	ST_GET, ST_GET_ENV, ST_GET_LABELS, ST_GET_DEPS, ST_COUNTS, ST_ATTEMPTS,
	ST_STDIN_GET, ST_GROUPS, ST_STATE_OF, ST_REMOVE, ST_KILL,
	ST_WORKER_ADD, ST_WORKER_BEAT, ST_WORKER_STOP, ST_WORKERS, ST_WORKER_RESULTS,
	ST_META_SET, ST_META_GET, ST_STDIN_EOF_FIND, ST_STDIN_WRITE, ST_STDIN_PENDING,
	ST_STDIN_DELIVERED, ST_RUNNING_BY, ST_RUNNABLE, ST_RETRY_ATTEMPTS, ST_RETRY_TASK,
	ST_FAILED_IDS, ST_GROUP_PAUSE_HAND, ST_GROUP_RESUME,
	ST_CURSOR_GET, ST_CURSOR_ADVANCE, ST_WORKER_OFF,
	ST_PROBE_TAKE, ST_PROBE_END, ST_ON_EXIT_DUE, ST_ON_EXIT_TAKE,
	/* slots for the later files, each file naming its own (#define) */
	ST_AGENT_0, ST_AGENT_1, ST_AGENT_2, ST_AGENT_3, ST_AGENT_4, ST_AGENT_5,
	ST_AGENT_6, ST_AGENT_7, ST_AGENT_8, ST_AGENT_9, ST_AGENT_10, ST_AGENT_11,
	ST_BATCH_0, ST_BATCH_1, ST_BATCH_2, ST_BATCH_3, ST_BATCH_4, ST_BATCH_5,
	ST_BATCH_6, ST_BATCH_7, ST_BATCH_8, ST_BATCH_9, ST_BATCH_10, ST_BATCH_11,
	ST_SUBMIT_0, ST_SUBMIT_1, ST_SUBMIT_2, ST_SUBMIT_3, ST_SUBMIT_4, ST_SUBMIT_5,
	ST_SUBMIT_6,
	ST_COUNT
};

#define TQ_LIST_VARIANTS 128 /* one cached list statement per filter shape */

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

/* The cached statement for slot id, prepared from sql on first use. NULL on
 * error (err filled). */
sqlite3_stmt *tq_db_stmt(struct tq_queue *q, enum tq_stmt id, const char *sql,
			 struct tq_err *err);

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

/* The columns every task read selects, in the order tq_task_from_row reads
 * (the table is aliased t). */
#define TQ_TASK_COLS \
	"t.id, t.state, t.name, t.argv, t.shell, t.cwd, t.batch, t.grp, t.session," \
	" t.unique_key, t.priority, t.run_after, t.created_at, t.timeout_ms," \
	" t.kill_grace_ms, t.max_output, t.max_retries, t.retry_lost, t.backoff_ms," \
	" t.backoff_max_ms, t.stdin_mode, t.pty, t.on_exit, t.agent, t.model, t.prompt," \
	" t.isolate, t.sources, t.kill_signal, t.kill_requested_at, t.attempt," \
	" t.worker_id, t.lease_until, t.started_at, t.finished_at, t.exit_code," \
	" t.signal, t.outcome, t.category, t.reason, t.env_id, t.umask," \
	" t.stall_timeout_ms, t.deps_left"

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

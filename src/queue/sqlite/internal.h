/*
 * internal.h - what the files of src/queue share and nothing else sees: the
 * connection struct, the statement cache, error mapping, transactions, and
 * row decoding. This is the only header that names SQLite.
 */
#ifndef TQ_QUEUE_INTERNAL_H
#define TQ_QUEUE_INTERNAL_H

#include <limits.h>
#include <sqlite3.h>
#include <time.h>

#include "queue/queue.h"
#include "queue/store.h"
#include "stmt.h"

struct tq_sqlite {
	struct tq_queue base;    /* first: tq_sqlite_of */
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
	int64_t worker_id;      /* the worker this connection registered (0: none) */
	char node[TQ_NODE_MAX + 1]; /* and its node, which its claims record */
	int64_t wants_id;       /* the task a submit of one just stored (0: none) */
	int wants;              /* and tq_queue_wants_worker's answer for it, read
				 * in the submit's transaction */
	/* the writers' queue (lock.c) */
	int lock_fd;            /* the database file, for the lock; -1: not open */
	int locked;             /* held, in a transaction of ours */
	int lock_broken;        /* no OFD locks here: transactions go without */
	int lock_timer_made;
	timer_t lock_timer;     /* the tick of a wait */
	int64_t busy_spent;     /* ms this transaction waited for it already */
	int wal_frames;         /* TQ_OPEN_TIDY: the WAL's frames at our last
				 * commit (tidy_wal_hook) */
	int wal_committed;      /* TQ_OPEN_TIDY: a commit since the last tidy */
	int64_t wal_frame_bytes; /* a WAL frame's size (24 + the page size; 0:
				 * not known yet) */
	int64_t wal_room_retry; /* mono ms before which wal_make_room, which
				 * failed, is not tried again */
};

/* The SQLite queue behind a handle this backend made (base is its first
 * member, so the conversion is exact). */
static inline struct tq_sqlite *tq_sqlite_of(struct tq_queue *base)
{
	return (struct tq_sqlite *)base;
}

static inline const struct tq_sqlite *tq_sqlite_of_c(const struct tq_queue *base)
{
	return (const struct tq_sqlite *)base;
}

/* The operations of the store's interface (queue.h, logstore.h) as this
 * backend fills them: tq_sqlite_ops (ops.c) names each. */
int tq_sqlite_open(struct tq_queue **qp, const char *home, unsigned flags,
	struct tq_err *err);
void tq_sqlite_set_busy_timeout(struct tq_queue *base, int64_t ms);
void tq_sqlite_close(struct tq_queue *base);
void tq_sqlite_tidy(struct tq_queue *base);
const char *tq_sqlite_notice(const struct tq_queue *base);
int tq_sqlite_schema_version(struct tq_queue *base, int64_t *version, struct tq_err *err);
int tq_sqlite_submit(struct tq_queue *base, const struct tq_task_spec *spec, int64_t *id,
	int *existed, struct tq_err *err);
int tq_sqlite_wants_worker(struct tq_queue *base, int64_t id);
int tq_sqlite_prune_tokens(struct tq_queue *base, int64_t before_ms, int *n,
	struct tq_err *err);
int tq_sqlite_token_first(struct tq_queue *base, const char *prefix, char *buf, size_t n,
	int64_t *id, struct tq_err *err);
int tq_sqlite_submit_many(struct tq_queue *base, const struct tq_task_spec *specs,
	size_t n, int64_t *ids, int *existed, struct tq_err *err);
int tq_sqlite_get(struct tq_queue *base, int64_t id, unsigned get_flags,
	struct tq_task *t, struct tq_err *err);
int tq_sqlite_list(struct tq_queue *base, const struct tq_filter *f,
	struct tq_task **tasks, size_t *n, struct tq_err *err);
int tq_sqlite_counts(struct tq_queue *base, int64_t *counts, struct tq_err *err);
int tq_sqlite_attempts(struct tq_queue *base, int64_t id, struct tq_attempt **list,
	size_t *n, struct tq_err *err);
int tq_sqlite_stdin_file(struct tq_queue *base, int64_t id, void **data, size_t *len,
	struct tq_err *err);
int tq_sqlite_cancel(struct tq_queue *base, int64_t id, const char *reason,
	enum tq_state *was, struct tq_err *err);
int tq_sqlite_remove(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_sqlite_retry(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_sqlite_retry_failed(struct tq_queue *base, const char *batch, int64_t *n,
	struct tq_err *err);
int tq_sqlite_request_kill(struct tq_queue *base, int64_t id, int sig, struct tq_err *err);
int tq_sqlite_claim(struct tq_queue *base, int64_t worker_id, int64_t lease_ms,
	struct tq_task *t, int *more, struct tq_err *err);
int tq_sqlite_next_wakeup(struct tq_queue *base, int64_t *at, struct tq_err *err);
int tq_sqlite_renew(struct tq_queue *base, int64_t id, int attempt, int64_t worker_id,
	int64_t lease_ms, int *kill_signal, struct tq_err *err);
int tq_sqlite_set_process(struct tq_queue *base, int64_t id, int attempt, int pid,
	int pgid, int64_t proc_start, int64_t log_offset, int64_t log_line,
	struct tq_err *err);
int tq_sqlite_finish_claim(struct tq_queue *base, const struct tq_finish *f,
	enum tq_state *state, int64_t lease_ms, struct tq_task *t, int *claimed, int *more,
	struct tq_err *err);
int tq_sqlite_finish(struct tq_queue *base, const struct tq_finish *f,
	enum tq_state *state, struct tq_err *err);
int tq_sqlite_on_exit_due(struct tq_queue *base, int *any, struct tq_err *err);
int tq_sqlite_on_exit_take(struct tq_queue *base, int64_t task_id, struct tq_task *t,
	struct tq_err *err);
int tq_sqlite_expired(struct tq_queue *base, int64_t now_ms, size_t max,
	struct tq_expired **list, size_t *n, struct tq_err *err);
int tq_sqlite_running_by(struct tq_queue *base, int64_t worker_id, size_t max,
	struct tq_expired **list, size_t *n, struct tq_err *err);
int tq_sqlite_runnable(struct tq_queue *base, int64_t now, int *any, struct tq_err *err);
int tq_sqlite_worker_add(struct tq_queue *base, const char *node, int pid,
			 int64_t proc_start, int slot, int supervisor_pid, int64_t *id,
			 struct tq_err *err);
int tq_sqlite_worker_beat(struct tq_queue *base, int64_t id, int64_t task_id,
	struct tq_err *err);
int tq_sqlite_worker_stop(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_sqlite_workers(struct tq_queue *base, struct tq_worker_info **list, size_t *n,
	struct tq_err *err);
int tq_sqlite_worker_results(struct tq_queue *base, const int64_t *ids, size_t n,
	int64_t *ran, int64_t *failed, int64_t *pending, struct tq_err *err);
int tq_sqlite_supervisor_beat(struct tq_queue *base, const struct tq_supervisor_info *s,
	struct tq_err *err);
int tq_sqlite_supervisor_stop(struct tq_queue *base, const char *node, int pid,
	struct tq_err *err);
int tq_sqlite_supervisors(struct tq_queue *base, struct tq_supervisor_info **list,
	size_t *n, struct tq_err *err);
int tq_sqlite_meta_set(struct tq_queue *base, const char *key, const char *value,
	struct tq_err *err);
int tq_sqlite_meta_get(struct tq_queue *base, const char *key, char **value,
	struct tq_err *err);
int tq_sqlite_stdin_write(struct tq_queue *base, int64_t id, const void *data, size_t len,
	int eof, struct tq_err *err);
int tq_sqlite_stdin_pending(struct tq_queue *base, int64_t id, int64_t after, size_t max,
	struct tq_stdin_chunk **list, size_t *n, struct tq_err *err);
int tq_sqlite_stdin_delivered(struct tq_queue *base, int64_t id, int64_t seq,
	struct tq_err *err);
int tq_sqlite_groups(struct tq_queue *base, struct tq_group **list, size_t *n,
	struct tq_err *err);
int tq_sqlite_group_pause(struct tq_queue *base, const char *name, struct tq_err *err);
int tq_sqlite_group_resume(struct tq_queue *base, const char *name, struct tq_err *err);
int tq_sqlite_cursor_get(struct tq_queue *base, int64_t id, const char *reader,
	int64_t *line, uint64_t *log_file, struct tq_err *err);
int tq_sqlite_cursor_advance(struct tq_queue *base, int64_t id, const char *reader,
	int64_t from, int64_t to, uint64_t log_file, struct tq_err *err);
int tq_sqlite_session_get(struct tq_queue *base, const char *key, char **agent_session,
	struct tq_err *err);
int tq_sqlite_session_show(struct tq_queue *base, const char *key,
	struct tq_session_info *s, struct tq_err *err);
int tq_sqlite_sessions(struct tq_queue *base, const char *key,
	struct tq_session_row **list, size_t *n, struct tq_err *err);
int tq_sqlite_warm_set(struct tq_queue *base, const char *key, const char *node, int pid,
	int64_t start, int64_t now, struct tq_err *err);
int tq_sqlite_warm_clear(struct tq_queue *base, const char *key, int pid, int64_t start,
	int *cleared, struct tq_err *err);
int tq_sqlite_warm_idle(struct tq_queue *base, const char *key, int pid, int64_t start,
	int64_t since, struct tq_err *err);
int tq_sqlite_warm_list(struct tq_queue *base, const char *node,
	struct tq_session_row **list, size_t *n, struct tq_err *err);
int tq_sqlite_session_close_request(struct tq_queue *base, const char *key, int64_t now,
	struct tq_session_row *row, struct tq_err *err);
int tq_sqlite_session_close_take(struct tq_queue *base, const char *key, int pid,
	int64_t start, int64_t *requested_at, struct tq_err *err);
int tq_sqlite_stats(struct tq_queue *base, const struct tq_stats_filter *f,
	struct tq_stats *s, struct tq_err *err);
int tq_sqlite_batches(struct tq_queue *base, struct tq_batch **list, size_t *n,
	struct tq_err *err);
int tq_sqlite_batch_get(struct tq_queue *base, const char *name, struct tq_batch *b,
	struct tq_err *err);
int tq_sqlite_batch_open(struct tq_queue *base, const char *name, int64_t *open,
	struct tq_err *err);
int tq_sqlite_group_set_parallel(struct tq_queue *base, const char *name,
	int64_t parallel, struct tq_err *err);
int tq_sqlite_clear_finished(struct tq_queue *base, int64_t before, size_t max,
	int64_t *removed, struct tq_err *err);
int tq_sqlite_clear_task(struct tq_queue *base, int64_t id, enum tq_state *was,
	struct tq_err *err);
int tq_sqlite_log_open(struct tq_queue *base, int64_t id, int64_t max_output,
	struct tq_log **lp, struct tq_err *err);
int tq_sqlite_log_write(struct tq_log *base, enum tq_stream stream, const void *buf,
	size_t n, int64_t now_ms, struct tq_err *err);
void tq_sqlite_log_hold(struct tq_log *base, size_t bytes, int64_t ms);
size_t tq_sqlite_log_held(const struct tq_log *base);
int tq_sqlite_log_flush(struct tq_log *base, struct tq_err *err);
int tq_sqlite_log_tick(struct tq_log *base, int64_t now_ms, int64_t *next_ms,
	struct tq_err *err);
int tq_sqlite_log_end_stream(struct tq_log *base, enum tq_stream stream,
	struct tq_err *err);
void tq_sqlite_log_position(const struct tq_log *base, int64_t *offset, int64_t *line);
int64_t tq_sqlite_log_output_bytes(const struct tq_log *base);
int tq_sqlite_log_exists(struct tq_queue *base, int64_t id);
int tq_sqlite_log_relinked(const struct tq_log *base);
int tq_sqlite_log_close(struct tq_log *base, struct tq_err *err);
int tq_sqlite_log_read(struct tq_queue *base, int64_t id, const struct tq_log_range *r,
	tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err);
int tq_sqlite_log_read_file(struct tq_queue *base, int64_t id,
	const struct tq_log_range *r, tq_log_line_cb cb, void *arg, int64_t *total,
	struct tq_log_file *file, struct tq_err *err);
int tq_sqlite_log_stat(struct tq_queue *base, int64_t id, enum tq_stream stream,
	int64_t *lines, int64_t *output_bytes, struct tq_err *err);
int tq_sqlite_log_remove(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_sqlite_log_export(struct tq_queue *base, int64_t id, char *buf, size_t n,
	struct tq_err *err);
int tq_sqlite_log_watch_open(struct tq_queue *base, int64_t id, struct tq_log_watch **wp,
	struct tq_err *err);
int tq_sqlite_log_watch_fd(struct tq_log_watch *base);
int tq_sqlite_log_watch_hit(struct tq_log_watch *base);
void tq_sqlite_log_watch_close(struct tq_log_watch *base);

/* The cached statement of slot id, prepared from its text in stmts.def on
 * first use (so a short-lived CLI process prepares only what it runs) and
 * kept. NULL on error (err filled). */
sqlite3_stmt *tq_db_stmt(struct tq_sqlite *q, enum tq_stmt id, struct tq_err *err);

/* Path of a task's log: HOME/logs/ID.log. Returns 0 or TQ_EINVAL (too
 * long). The files of logstore.c; no caller outside the backend names it. */
int tq_db_log_path(const struct tq_sqlite *q, int64_t id, char *buf, size_t n);

/* Reset and clear bindings: the end of every use of a cached statement. */
void tq_db_done(sqlite3_stmt *st);

/* Map an SQLite result code to TQ_E* and fill err with "what: errmsg". */
int tq_db_error(struct tq_sqlite *q, int rc, struct tq_err *err, const char *what);

/* Run a cached statement that returns no rows (or ignore them); resets it. */
int tq_db_exec_st(struct tq_sqlite *q, sqlite3_stmt *st, struct tq_err *err,
		  const char *what);

/* The writers' queue (lock.c): tq_db_lock waits (up to the busy timeout:
 * TQ_EBUSY) for the lock every transaction of taskq's takes, or goes on
 * without it where there is none; tq_db_unlock lets go (no-op when not
 * held); tq_db_lock_close after the connection is closed, never before. */
int tq_db_lock(struct tq_sqlite *q, struct tq_err *err);
void tq_db_unlock(struct tq_sqlite *q);
void tq_db_lock_close(struct tq_sqlite *q);

int tq_db_begin(struct tq_sqlite *q, struct tq_err *err);  /* BEGIN IMMEDIATE */
int tq_db_commit(struct tq_sqlite *q, struct tq_err *err);
void tq_db_rollback(struct tq_sqlite *q);                  /* keeps errno/err */

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
int tq_task_load(struct tq_sqlite *q, int64_t id, unsigned flags, struct tq_task *t,
		 struct tq_err *err);

/* A task reached a final state: unblock or cancel its dependents, in the
 * current transaction. */
int tq_deps_resolve(struct tq_sqlite *q, int64_t id, enum tq_state state,
		    int64_t now, struct tq_err *err);

#endif

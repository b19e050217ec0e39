/*
 * internal.h - what the files of the PostgreSQL backend share and nothing
 * else sees: libpq as loaded at run time (lib.c), the connection struct,
 * statements with their parameters, transactions, error mapping. The only
 * header that names libpq; libpq-fe.h gives the types, never a symbol to
 * link: taskq is not linked with libpq, so a client on SQLite never loads
 * it (nor libssl, libcrypto, gssapi, ldap that it pulls in).
 */
#ifndef TQ_QUEUE_PG_INTERNAL_H
#define TQ_QUEUE_PG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "queue/logstore.h"
#include "queue/queue.h"
#include "queue/store.h"

/* The libpq functions this backend calls, resolved by dlsym from
 * libpq.so.5 on the first open of a PostgreSQL store (tq_pq_load). */
struct tq_pq_api {
	PGconn *(*connectdb)(const char *conninfo);
	PGconn *(*connectdb_params)(const char *const *keywords,
		const char *const *values, int expand_dbname);
	PGPing (*ping_params)(const char *const *keywords, const char *const *values,
		int expand_dbname);
	ConnStatusType (*status)(const PGconn *conn);
	char *(*error_message)(const PGconn *conn);
	void (*finish)(PGconn *conn);
	void (*reset)(PGconn *conn);
	PGresult *(*exec)(PGconn *conn, const char *query);
	PGresult *(*exec_params)(PGconn *conn, const char *command, int nparams,
		const Oid *types, const char *const *values, const int *lengths,
		const int *formats, int result_format);
	ExecStatusType (*result_status)(const PGresult *res);
	char *(*result_error_field)(const PGresult *res, int code);
	char *(*result_error_message)(const PGresult *res);
	int (*ntuples)(const PGresult *res);
	char *(*getvalue)(const PGresult *res, int row, int col);
	int (*getisnull)(const PGresult *res, int row, int col);
	int (*getlength)(const PGresult *res, int row, int col);
	void (*clear)(PGresult *res);
	char *(*cmd_tuples)(PGresult *res);
	int (*socket)(const PGconn *conn);
	int (*consume_input)(PGconn *conn);
	PGnotify *(*notifies)(PGconn *conn);
	void (*freemem)(void *ptr);
	PQnoticeProcessor (*set_notice_processor)(PGconn *conn, PQnoticeProcessor proc,
		void *arg);
	PGTransactionStatusType (*transaction_status)(const PGconn *conn);
};

/* libpq, once loaded (NULL before tq_pq_load succeeded). */
extern const struct tq_pq_api *tq_pq;

/* Load libpq.so.5 and resolve every function of struct tq_pq_api, once per
 * process. 0, or TQ_EIO with one line: "PostgreSQL store: libpq.so.5 is not
 * installed (the Debian package libpq5): ..." or the missing symbol. */
int tq_pq_load(struct tq_err *err);

#define TQ_PG_URL_MAX 4096

struct tq_pg {
	struct tq_queue base;    /* first: tq_pg_of */
	PGconn *conn;            /* never NULL once open; may be a lost one */
	unsigned flags;
	int in_txn;
	/* the connection (db.c, "Outages"): made again when lost, with a
	 * backoff between failed tries */
	int64_t connected_at;    /* mono ms the one in use was made */
	int64_t epoch;           /* connections made: 1 after the open */
	int64_t next_connect;    /* mono ms: no new try before then */
	int64_t backoff;         /* ms: the wait after the last failed try */
	char down[256];          /* why the last try failed */
	int told;                /* the server spoke unasked (its FATAL before
				  * it closes the connection): dead() */
	int pinned;              /* > 0: a lost connection fails statements
				  * instead of being made again (tq_pg_pin) */
	int64_t busy_timeout;    /* ms: lock_timeout, as the callers want it */
	int64_t sent_timeout;    /* and as the session has it (-1: not known:
				  * a SET that failed, or one in a transaction
				  * that did not commit) */
	int timeout_in_txn;      /* the open transaction set it (its rollback
				  * undoes that) */
	char *url;               /* the locator as given: a log watch connects with it */
	char shown[TQ_PG_URL_MAX]; /* the locator with its password hidden */
	char *export_path;       /* tq_log_export's file, removed at close */
	char node[TQ_NODE_MAX + 1]; /* this process's node, what tq_pg_wake
				      * announces ("": not known) */
};

static inline struct tq_pg *tq_pg_of(struct tq_queue *base)
{
	return (struct tq_pg *)base;
}

/* Parameters of one statement: values as text, bytea as binary. */
#define TQ_PG_PARAMS_MAX 40
struct tq_pg_params {
	int n;
	const char *v[TQ_PG_PARAMS_MAX];
	int len[TQ_PG_PARAMS_MAX];
	int fmt[TQ_PG_PARAMS_MAX];
	char num[TQ_PG_PARAMS_MAX][24];
};

void tq_pg_i64(struct tq_pg_params *p, int64_t v);
/* NULL binds SQL NULL. */
void tq_pg_txt(struct tq_pg_params *p, const char *s);
void tq_pg_bin(struct tq_pg_params *p, const void *data, size_t len);
void tq_pg_null(struct tq_pg_params *p);
/* v == none binds NULL. */
void tq_pg_opt(struct tq_pg_params *p, int64_t v, int64_t none);
void tq_pg_dbl(struct tq_pg_params *p, double v);

/* A connection to url (a URL or key=value string) with taskq's defaults
 * (connect_timeout): 0 and *connp, or TQ_EOFFLINE when the server cannot be
 * reached or does not take connections now (starting, stopping: PQping
 * says so), TQ_EIO when it refused this one (a password, a database that is
 * not there), TQ_ENOMEM; why gets libpq's message, one line, no password.
 * Without classify, every failure is TQ_EOFFLINE (no ping). */
int tq_pg_connect(const char *url, int classify, PGconn **connp, char *why, size_t n);

/* The connection, made again first if it was lost (as a statement outside
 * a transaction does): 0, or TQ_EOFFLINE with err set. */
int tq_pg_connected(struct tq_pg *q, struct tq_err *err);

/* While pinned (nested), statements never make a lost connection again:
 * they fail with TQ_EOFFLINE. For work that holds on one connection (a log
 * writer's session lock): it calls tq_pg_connected first, and learns from
 * q->epoch whether that connection is still the one it knows. */
static inline void tq_pg_pin(struct tq_pg *q, int on)
{
	q->pinned += on ? 1 : -1;
}

/* Run sql with p (may be NULL): the result (caller clears with tq_pg_clear),
 * or NULL with err set ("what: message"). */
PGresult *tq_pg_query(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
	struct tq_err *err, const char *what);
/* Run a statement whose rows (if any) are not wanted; *changed (may be NULL)
 * gets the rows it touched. 0 or a TQ_E* code. */
int tq_pg_exec(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
	int64_t *changed, struct tq_err *err, const char *what);
void tq_pg_clear(PGresult *r);
/* Run sql holding several statements (no parameters): the schema. */
int tq_pg_script(struct tq_pg *q, const char *sql, struct tq_err *err, const char *what);
/* Migrate to this binary's schema now; *version gets the version after. */
int tq_pg_schema_migrate(struct tq_queue *base, int64_t *version, struct tq_err *err);

/* Row access (text format). */
int tq_pg_rows(const PGresult *r);
int tq_pg_isnull(const PGresult *r, int row, int col);
int64_t tq_pg_get_i64(const PGresult *r, int row, int col, int64_t none);
double tq_pg_get_dbl(const PGresult *r, int row, int col);
const char *tq_pg_get_txt(const PGresult *r, int row, int col); /* NULL for NULL */
/* A copy of a text column (NULL stays NULL). 0 or TQ_ENOMEM. */
int tq_pg_dup(const PGresult *r, int row, int col, char **out);
/* A bytea column decoded (hex format) into a malloc'd buffer (+1 NUL byte
 * after it); NULL column: *data NULL. 0 or TQ_ENOMEM / TQ_ECORRUPT. */
int tq_pg_bytea(const PGresult *r, int row, int col, unsigned char **data, size_t *len);

/*
 * A path (a working directory) in a text column, exactly: itself when it is
 * valid UTF-8, else "\x" and two hex digits a byte, as bytea shows itself;
 * the two cannot be confused, since a stored path is absolute and starts
 * with '/' (PostgreSQL's text takes UTF-8 only, and a directory's name may
 * be any bytes). tq_pg_path_enc: that text, malloc'd (NULL: out of memory).
 * tq_pg_path_dup: the path back from a column, as tq_pg_dup (NULL stays
 * NULL): 0, TQ_ENOMEM, or TQ_ECORRUPT (bad hex, a NUL).
 */
char *tq_pg_path_enc(const char *path);
int tq_pg_path_dup(const PGresult *r, int row, int col, char **out);

/* Transactions: READ COMMITTED; a claim's rows are locked FOR UPDATE. */
int tq_pg_begin(struct tq_pg *q, struct tq_err *err);
int tq_pg_commit(struct tq_pg *q, struct tq_err *err);
void tq_pg_rollback(struct tq_pg *q);

/* Announce to the other nodes' wake handles, at the commit of the
 * transaction q is in (or at once outside one), that a task became
 * runnable or due (wake.c; queue.h, tq_queue_wake_open). 0 or a TQ_E*
 * code, which fails the transaction like any statement. */
int tq_pg_wake(struct tq_pg *q, struct tq_err *err);

/* Task rows: the columns every task read selects (alias t), and the row
 * decoder (fills t; TQ_ENOMEM with t released). */
#define TQ_PG_TASK_COLS \
	"t.id, t.state, t.name, t.argv, t.shell, t.cwd, t.batch, t.grp, t.session," \
	" t.unique_key, t.priority, t.run_after, t.created_at, t.timeout_ms," \
	" t.kill_grace_ms, t.max_output, t.max_retries, t.retry_lost, t.backoff_ms," \
	" t.backoff_max_ms, t.stdin_mode, t.pty, t.on_exit, t.agent, t.model, t.prompt," \
	" t.isolate, t.sources, t.kill_signal, t.kill_requested_at, t.attempt," \
	" t.worker_id, t.lease_until, t.started_at, t.finished_at, t.exit_code," \
	" t.signal, t.outcome, t.category, t.reason, t.env_id, t.umask," \
	" t.stall_timeout_ms, t.deps_left, t.warm, t.idle_timeout_ms"
int tq_pg_task_from_row(const PGresult *r, int row, struct tq_task *t);
int tq_pg_task_load(struct tq_pg *q, int64_t id, unsigned flags, struct tq_task *t,
	struct tq_err *err);
int tq_pg_deps_resolve(struct tq_pg *q, int64_t id, enum tq_state state, int64_t now,
	struct tq_err *err);
int tq_pg_state_of(struct tq_pg *q, int64_t id, enum tq_state *s, struct tq_err *err);

#define TQ_PG_FINAL "('succeeded','failed','timed_out','killed','canceled')"
#define TQ_PG_UNFINISHED "('queued','scheduled','blocked','running')"

/* The operations (ops.c's table names each). */
int tq_pg_open(struct tq_queue **qp, const char *url, unsigned flags, struct tq_err *err);
void tq_pg_set_busy_timeout(struct tq_queue *base, int64_t ms);
void tq_pg_close(struct tq_queue *base);
const char *tq_pg_notice(const struct tq_queue *base);
int64_t tq_pg_connected_at(const struct tq_queue *base);
int tq_pg_schema_version(struct tq_queue *base, int64_t *version, struct tq_err *err);
int tq_pg_submit(struct tq_queue *base, const struct tq_task_spec *spec, int64_t *id,
	int *existed, struct tq_err *err);
int tq_pg_wants_worker(struct tq_queue *base, int64_t id);
int tq_pg_prune_tokens(struct tq_queue *base, int64_t before_ms, int *n,
	struct tq_err *err);
int tq_pg_token_first(struct tq_queue *base, const char *prefix, char *buf, size_t n,
	int64_t *id, struct tq_err *err);
int tq_pg_submit_many(struct tq_queue *base, const struct tq_task_spec *specs,
	size_t n, int64_t *ids, int *existed, struct tq_err *err);
int tq_pg_get(struct tq_queue *base, int64_t id, unsigned get_flags,
	struct tq_task *t, struct tq_err *err);
int tq_pg_list(struct tq_queue *base, const struct tq_filter *f,
	struct tq_task **tasks, size_t *n, struct tq_err *err);
int tq_pg_counts(struct tq_queue *base, int64_t *counts, struct tq_err *err);
int tq_pg_attempts(struct tq_queue *base, int64_t id, struct tq_attempt **list,
	size_t *n, struct tq_err *err);
int tq_pg_stdin_file(struct tq_queue *base, int64_t id, void **data, size_t *len,
	struct tq_err *err);
int tq_pg_cancel(struct tq_queue *base, int64_t id, const char *reason,
	enum tq_state *was, struct tq_err *err);
int tq_pg_remove(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_pg_retry(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_pg_retry_failed(struct tq_queue *base, const char *batch, int64_t *n,
	struct tq_err *err);
int tq_pg_request_kill(struct tq_queue *base, int64_t id, int sig, struct tq_err *err);
int tq_pg_claim(struct tq_queue *base, int64_t worker_id, int64_t lease_ms,
	struct tq_task *t, int *more, struct tq_err *err);
int tq_pg_next_wakeup(struct tq_queue *base, int64_t *at, struct tq_err *err);
int tq_pg_renew(struct tq_queue *base, int64_t id, int attempt, int64_t worker_id,
	int64_t lease_ms, int *kill_signal, struct tq_err *err);
int tq_pg_set_process(struct tq_queue *base, int64_t id, int attempt, int pid,
	int pgid, int64_t proc_start, int64_t log_offset, int64_t log_line,
	struct tq_err *err);
int tq_pg_finish(struct tq_queue *base, const struct tq_finish *f,
	enum tq_state *state, struct tq_err *err);
int tq_pg_on_exit_due(struct tq_queue *base, int *any, struct tq_err *err);
int tq_pg_on_exit_take(struct tq_queue *base, int64_t task_id, struct tq_task *t,
	struct tq_err *err);
int tq_pg_expired(struct tq_queue *base, int64_t now_ms, size_t max,
	struct tq_expired **list, size_t *n, struct tq_err *err);
int tq_pg_running_by(struct tq_queue *base, int64_t worker_id, size_t max,
	struct tq_expired **list, size_t *n, struct tq_err *err);
int tq_pg_runnable(struct tq_queue *base, int64_t now, int *any, struct tq_err *err);
int tq_pg_worker_add(struct tq_queue *base, const char *node, int pid,
	int64_t proc_start, int slot, int supervisor_pid, int64_t *id,
	struct tq_err *err);
int tq_pg_worker_beat(struct tq_queue *base, int64_t id, int64_t task_id,
	struct tq_err *err);
int tq_pg_worker_stop(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_pg_workers(struct tq_queue *base, struct tq_worker_info **list, size_t *n,
	struct tq_err *err);
int tq_pg_worker_results(struct tq_queue *base, const int64_t *ids, size_t n,
	int64_t *ran, int64_t *failed, int64_t *pending, struct tq_err *err);
int tq_pg_supervisor_beat(struct tq_queue *base, const struct tq_supervisor_info *s,
	struct tq_err *err);
int tq_pg_supervisor_stop(struct tq_queue *base, const char *node, int pid,
	struct tq_err *err);
int tq_pg_supervisors(struct tq_queue *base, struct tq_supervisor_info **list, size_t *n,
	struct tq_err *err);
int tq_pg_meta_set(struct tq_queue *base, const char *key, const char *value,
	struct tq_err *err);
int tq_pg_meta_get(struct tq_queue *base, const char *key, char **value,
	struct tq_err *err);
int tq_pg_stdin_write(struct tq_queue *base, int64_t id, const void *data, size_t len,
	int eof, struct tq_err *err);
int tq_pg_stdin_pending(struct tq_queue *base, int64_t id, int64_t after, size_t max,
	struct tq_stdin_chunk **list, size_t *n, struct tq_err *err);
int tq_pg_stdin_delivered(struct tq_queue *base, int64_t id, int64_t seq,
	struct tq_err *err);
int tq_pg_groups(struct tq_queue *base, struct tq_group **list, size_t *n,
	struct tq_err *err);
int tq_pg_group_pause(struct tq_queue *base, const char *name, struct tq_err *err);
int tq_pg_group_resume(struct tq_queue *base, const char *name, struct tq_err *err);
int tq_pg_cursor_get(struct tq_queue *base, int64_t id, const char *reader,
	int64_t *line, uint64_t *log_file, struct tq_err *err);
int tq_pg_cursor_advance(struct tq_queue *base, int64_t id, const char *reader,
	int64_t from, int64_t to, uint64_t log_file, struct tq_err *err);
int tq_pg_session_get(struct tq_queue *base, const char *key, char **agent_session,
	struct tq_err *err);
int tq_pg_session_show(struct tq_queue *base, const char *key,
	struct tq_session_info *s, struct tq_err *err);
int tq_pg_stats(struct tq_queue *base, const struct tq_stats_filter *f,
	struct tq_stats *s, struct tq_err *err);
int tq_pg_batches(struct tq_queue *base, struct tq_batch **list, size_t *n,
	struct tq_err *err);
int tq_pg_batch_get(struct tq_queue *base, const char *name, struct tq_batch *b,
	struct tq_err *err);
int tq_pg_batch_open(struct tq_queue *base, const char *name, int64_t *open,
	struct tq_err *err);
int tq_pg_group_set_parallel(struct tq_queue *base, const char *name,
	int64_t parallel, struct tq_err *err);
int tq_pg_clear_finished(struct tq_queue *base, int64_t before, size_t max,
	int64_t *removed, struct tq_err *err);
int tq_pg_clear_task(struct tq_queue *base, int64_t id, enum tq_state *was,
	struct tq_err *err);
int tq_pg_sessions(struct tq_queue *base, const char *key, struct tq_session_row **list,
	size_t *n, struct tq_err *err);
int tq_pg_warm_set(struct tq_queue *base, const char *key, const char *node, int pid,
	int64_t start, int64_t now, struct tq_err *err);
int tq_pg_warm_clear(struct tq_queue *base, const char *key, int pid, int64_t start,
	int *cleared, struct tq_err *err);
int tq_pg_warm_idle(struct tq_queue *base, const char *key, int pid, int64_t start,
	int64_t since, struct tq_err *err);
int tq_pg_warm_list(struct tq_queue *base, const char *node, struct tq_session_row **list,
	size_t *n, struct tq_err *err);
int tq_pg_session_close_request(struct tq_queue *base, const char *key, int64_t now,
	struct tq_session_row *row, struct tq_err *err);
int tq_pg_session_close_take(struct tq_queue *base, const char *key, int pid,
	int64_t start, int64_t *requested_at, struct tq_err *err);
int tq_pg_log_open(struct tq_queue *base, int64_t id, int64_t max_output,
	struct tq_log **lp, struct tq_err *err);
int tq_pg_log_write(struct tq_log *base, enum tq_stream stream, const void *buf,
	size_t n, int64_t now_ms, struct tq_err *err);
void tq_pg_log_hold(struct tq_log *base, size_t bytes, int64_t ms);
size_t tq_pg_log_held(const struct tq_log *base);
size_t tq_pg_log_away(const struct tq_log *base);
int tq_pg_log_flush(struct tq_log *base, struct tq_err *err);
int tq_pg_log_tick(struct tq_log *base, int64_t now_ms, int64_t *next_ms,
	struct tq_err *err);
int tq_pg_log_end_stream(struct tq_log *base, enum tq_stream stream,
	struct tq_err *err);
void tq_pg_log_position(const struct tq_log *base, int64_t *offset, int64_t *line);
int64_t tq_pg_log_output_bytes(const struct tq_log *base);
int tq_pg_log_exists(struct tq_queue *base, int64_t id);
int tq_pg_log_relinked(const struct tq_log *base);
int tq_pg_log_close(struct tq_log *base, struct tq_err *err);
int tq_pg_log_read(struct tq_queue *base, int64_t id, const struct tq_log_range *r,
	tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err);
int tq_pg_log_read_file(struct tq_queue *base, int64_t id,
	const struct tq_log_range *r, tq_log_line_cb cb, void *arg, int64_t *total,
	struct tq_log_file *file, struct tq_err *err);
int tq_pg_log_stat(struct tq_queue *base, int64_t id, enum tq_stream stream,
	int64_t *lines, int64_t *output_bytes, struct tq_err *err);
int tq_pg_log_remove(struct tq_queue *base, int64_t id, struct tq_err *err);
int tq_pg_log_export(struct tq_queue *base, int64_t id, char *buf, size_t n,
	struct tq_err *err);
int tq_pg_log_watch_open(struct tq_queue *base, int64_t id, struct tq_log_watch **wp,
	struct tq_err *err);
int tq_pg_log_watch_fd(struct tq_log_watch *base);
int tq_pg_log_watch_hit(struct tq_log_watch *base);
void tq_pg_log_watch_close(struct tq_log_watch *base);
int tq_pg_wake_open(struct tq_queue *base, const char *node, struct tq_wake **wp,
	struct tq_err *err);
int tq_pg_wake_fd(const struct tq_wake *base);
int tq_pg_wake_take(struct tq_wake *base, struct tq_err *err);
void tq_pg_wake_close(struct tq_wake *base);

/* Adding tasks (submit.c, bulk.c). What the tasks of one submit_many
 * stored before the next, valid for its transaction: the environment of
 * the previous spec (the --file import's specs share one array), the
 * group submit_one added last, and whether a task was stored queued or
 * scheduled (the other nodes are woken at the commit). */
struct tq_pg_batch {
	char *const *env;        /* the spec's env array: same pointer and
				  * count, the same environment */
	size_t envc;
	int64_t env_id;          /* 0: nothing cached */
	char group[TQ_NAME_MAX];
	int wake;
};

/* Encode n strings as "s\0s\0" (the layout of schema.sql); 0, TQ_ENOMEM or
 * TQ_EINVAL (over max bytes). */
int tq_pg_strv_encode(char *const *v, size_t n, size_t max, char **blob, size_t *len);
/* The id of s's environment, found or stored (bc's when it is the same). */
int tq_pg_env_cached(struct tq_pg *q, const struct tq_task_spec *s, struct tq_pg_batch *bc,
	int64_t *id, struct tq_err *err);
/* Whether tq_pg_submit_bulk takes s: no session, no dependency, no stdin
 * file (each needs reads of its own). */
int tq_pg_bulk_ok(const struct tq_task_spec *s);
/* Add n specs, each tq_pg_bulk_ok, in the transaction q is in, in a few
 * statements (bulk.c): ids[] and existed[] (may be NULL) as
 * tq_queue_submit_many fills them. On an error *bad is the index of the
 * spec it is about, or n when it is about none (a statement of the run);
 * the caller rolls back. */
int tq_pg_submit_bulk(struct tq_pg *q, const struct tq_task_spec *specs, size_t n,
	int64_t now, struct tq_pg_batch *bc, int64_t *ids, int *existed, size_t *bad,
	struct tq_err *err);

#endif

/*
 * store.h - what a backend of the store fills; no caller outside src/queue
 * includes it. One table of operations per backend (struct tq_store_ops:
 * one pointer per operation of queue.h and logstore.h, the shape of git's
 * struct ref_storage_be), and the heads of the handles a backend hands
 * out: a backend's queue begins with a struct tq_queue (SQLite's struct
 * tq_sqlite does), its log writer with a struct tq_log, its watch with a
 * struct tq_log_watch, its wake handle with a struct tq_wake, each naming
 * the backend's table. store.c's
 * functions are the interface: each calls through the handle's table, one
 * load and an indirect call (no lookup, no lock).
 *
 * Adding a backend (issue 20's PostgreSQL): a folder beside sqlite/ with a
 * table filling every pointer (tq_store_missing says which is not; the
 * unit test checks every table), its accepts() saying which locators are
 * its own, and its table added to store.c's list. Nothing outside
 * src/queue changes.
 */
#ifndef TQ_QUEUE_STORE_H
#define TQ_QUEUE_STORE_H

#include "queue/logstore.h"
#include "queue/queue.h"

struct tq_store_ops;

/* The longest submit token (tq_task_spec.token) a store keeps, in bytes. */
#define TQ_SUBMIT_TOKEN_MAX 64

/* What every backend refuses in a spec before storing anything (spec.c):
 * 0, or TQ_EINVAL with one line naming the field. err may be NULL. */
int tq_spec_check(const struct tq_task_spec *s, struct tq_err *err);

/* The heads of a backend's handles: the first member of each. */
struct tq_queue {
	const struct tq_store_ops *ops;
};

struct tq_log {
	const struct tq_store_ops *ops;
};

struct tq_log_watch {
	const struct tq_store_ops *ops;
};

struct tq_wake {
	const struct tq_store_ops *ops;
};

struct tq_store_ops {
	const char *name; /* "sqlite": for messages */
	/* Whether where (what tq_queue_open is given) names a store of this
	 * backend: SQLite takes a state directory's path. */
	int (*accepts)(const char *where);
	int (*open)(struct tq_queue **qp, const char *home, unsigned flags,
		struct tq_err *err);
	void (*set_busy_timeout)(struct tq_queue *q, int64_t ms);
	void (*close)(struct tq_queue *q);
	const char *(*notice)(const struct tq_queue *q);
	/* may be NULL (a store that never loses its connection: SQLite):
	 * tq_queue_connected_at is then 0 */
	int64_t (*connected_at)(const struct tq_queue *q);
	/* may be NULL (nothing to do later: PostgreSQL): tq_queue_tidy is a
	 * no-op then */
	void (*tidy)(struct tq_queue *q);
	int (*schema_version)(struct tq_queue *q, int64_t *version, struct tq_err *err);
	int (*submit)(struct tq_queue *q, const struct tq_task_spec *spec, int64_t *id,
		int *existed, struct tq_err *err);
	int (*wants_worker)(struct tq_queue *q, int64_t id);
	int (*prune_tokens)(struct tq_queue *q, int64_t before_ms, int *n,
		struct tq_err *err);
	int (*token_first)(struct tq_queue *q, const char *prefix, char *buf, size_t n,
		int64_t *id, struct tq_err *err);
	int (*submit_many)(struct tq_queue *q, const struct tq_task_spec *specs, size_t n,
		int64_t *ids, int *existed, struct tq_err *err);
	int (*get)(struct tq_queue *q, int64_t id, unsigned get_flags, struct tq_task *t,
		struct tq_err *err);
	int (*list)(struct tq_queue *q, const struct tq_filter *f, struct tq_task **tasks,
		size_t *n, struct tq_err *err);
	int (*counts)(struct tq_queue *q, int64_t *counts, struct tq_err *err);
	int (*attempts)(struct tq_queue *q, int64_t id, struct tq_attempt **list,
		size_t *n, struct tq_err *err);
	int (*stdin_file)(struct tq_queue *q, int64_t id, void **data, size_t *len,
		struct tq_err *err);
	int (*cancel)(struct tq_queue *q, int64_t id, const char *reason,
		enum tq_state *was, struct tq_err *err);
	int (*remove)(struct tq_queue *q, int64_t id, struct tq_err *err);
	int (*retry)(struct tq_queue *q, int64_t id, struct tq_err *err);
	int (*retry_failed)(struct tq_queue *q, const char *batch, int64_t *n,
		struct tq_err *err);
	int (*request_kill)(struct tq_queue *q, int64_t id, int sig, struct tq_err *err);
	int (*claim)(struct tq_queue *q, int64_t worker_id, int64_t lease_ms,
		struct tq_task *t, int *more, struct tq_err *err);
	int (*next_wakeup)(struct tq_queue *q, int64_t *at, struct tq_err *err);
	int (*renew)(struct tq_queue *q, int64_t id, int attempt, int64_t worker_id,
		int64_t lease_ms, int *kill_signal, struct tq_err *err);
	int (*set_process)(struct tq_queue *q, int64_t id, int attempt, int pid, int pgid,
		int64_t proc_start, int64_t log_offset, int64_t log_line,
		struct tq_err *err);
	int (*finish)(struct tq_queue *q, const struct tq_finish *f, enum tq_state *state,
		struct tq_err *err);
	/* may be NULL: tq_queue_finish_claim then finishes, then claims */
	int (*finish_claim)(struct tq_queue *q, const struct tq_finish *f,
		enum tq_state *state, int64_t lease_ms, struct tq_task *t, int *claimed,
		int *more, struct tq_err *err);
	int (*on_exit_due)(struct tq_queue *q, int *any, struct tq_err *err);
	int (*on_exit_take)(struct tq_queue *q, int64_t task_id, struct tq_task *t,
		struct tq_err *err);
	int (*expired)(struct tq_queue *q, int64_t now_ms, size_t max,
		struct tq_expired **list, size_t *n, struct tq_err *err);
	int (*running_by)(struct tq_queue *q, int64_t worker_id, size_t max,
		struct tq_expired **list, size_t *n, struct tq_err *err);
	int (*runnable)(struct tq_queue *q, int64_t now, int *any, struct tq_err *err);
	int (*worker_add)(struct tq_queue *q, const char *node, int pid,
			 int64_t proc_start, int slot, int supervisor_pid, int64_t *id,
			 struct tq_err *err);
	int (*worker_beat)(struct tq_queue *q, int64_t id, int64_t task_id,
		struct tq_err *err);
	int (*worker_stop)(struct tq_queue *q, int64_t id, struct tq_err *err);
	int (*workers)(struct tq_queue *q, struct tq_worker_info **list, size_t *n,
		struct tq_err *err);
	int (*worker_results)(struct tq_queue *q, const int64_t *ids, size_t n,
		int64_t *ran, int64_t *failed, int64_t *pending, struct tq_err *err);
	int (*supervisor_beat)(struct tq_queue *q, const struct tq_supervisor_info *s,
		struct tq_err *err);
	int (*supervisor_stop)(struct tq_queue *q, const char *node, int pid,
		struct tq_err *err);
	int (*supervisors)(struct tq_queue *q, struct tq_supervisor_info **list, size_t *n,
		struct tq_err *err);
	int (*meta_set)(struct tq_queue *q, const char *key, const char *value,
		struct tq_err *err);
	int (*meta_get)(struct tq_queue *q, const char *key, char **value,
		struct tq_err *err);
	int (*stdin_write)(struct tq_queue *q, int64_t id, const void *data, size_t len,
		int eof, struct tq_err *err);
	int (*stdin_pending)(struct tq_queue *q, int64_t id, int64_t after, size_t max,
		struct tq_stdin_chunk **list, size_t *n, struct tq_err *err);
	int (*stdin_delivered)(struct tq_queue *q, int64_t id, int64_t seq,
		struct tq_err *err);
	int (*groups)(struct tq_queue *q, struct tq_group **list, size_t *n,
		struct tq_err *err);
	int (*group_pause)(struct tq_queue *q, const char *name, struct tq_err *err);
	int (*group_resume)(struct tq_queue *q, const char *name, struct tq_err *err);
	int (*cursor_get)(struct tq_queue *q, int64_t id, const char *reader,
		int64_t *line, uint64_t *log_file, struct tq_err *err);
	int (*cursor_advance)(struct tq_queue *q, int64_t id, const char *reader,
		int64_t from, int64_t to, uint64_t log_file, struct tq_err *err);
	int (*session_get)(struct tq_queue *q, const char *key, char **agent_session,
		struct tq_err *err);
	int (*session_show)(struct tq_queue *q, const char *key,
		struct tq_session_info *s, struct tq_err *err);
	int (*sessions)(struct tq_queue *q, const char *key, struct tq_session_row **list,
		size_t *n, struct tq_err *err);
	int (*warm_set)(struct tq_queue *q, const char *key, const char *node, int pid,
		int64_t start, int64_t now, struct tq_err *err);
	int (*warm_clear)(struct tq_queue *q, const char *key, int pid, int64_t start,
		int *cleared, struct tq_err *err);
	int (*warm_idle)(struct tq_queue *q, const char *key, int pid, int64_t start,
		int64_t since, struct tq_err *err);
	int (*warm_list)(struct tq_queue *q, const char *node, struct tq_session_row **list,
		size_t *n, struct tq_err *err);
	int (*session_close_request)(struct tq_queue *q, const char *key, int64_t now,
		struct tq_session_row *row, struct tq_err *err);
	int (*session_close_take)(struct tq_queue *q, const char *key, int pid,
		int64_t start, int64_t *requested_at, struct tq_err *err);
	int (*stats)(struct tq_queue *q, const struct tq_stats_filter *f,
		struct tq_stats *s, struct tq_err *err);
	int (*batches)(struct tq_queue *q, struct tq_batch **list, size_t *n,
		struct tq_err *err);
	int (*batch_get)(struct tq_queue *q, const char *name, struct tq_batch *b,
		struct tq_err *err);
	int (*batch_open)(struct tq_queue *q, const char *name, int64_t *open,
		struct tq_err *err);
	int (*group_set_parallel)(struct tq_queue *q, const char *name, int64_t parallel,
		struct tq_err *err);
	int (*clear_finished)(struct tq_queue *q, int64_t before, size_t max,
		int64_t *removed, struct tq_err *err);
	int (*clear_task)(struct tq_queue *q, int64_t id, enum tq_state *was,
		struct tq_err *err);
	int (*log_open)(struct tq_queue *q, int64_t id, int64_t max_output,
		struct tq_log **lp, struct tq_err *err);
	int (*log_write)(struct tq_log *l, enum tq_stream stream, const void *buf,
		size_t n, int64_t now_ms, struct tq_err *err);
	void (*log_hold)(struct tq_log *l, size_t bytes, int64_t ms);
	size_t (*log_held)(const struct tq_log *l);
	/* may be NULL (a store that is never away: SQLite): tq_log_away 0 */
	size_t (*log_away)(const struct tq_log *l);
	int (*log_flush)(struct tq_log *l, struct tq_err *err);
	int (*log_tick)(struct tq_log *l, int64_t now_ms, int64_t *next_ms,
		struct tq_err *err);
	int (*log_end_stream)(struct tq_log *l, enum tq_stream stream, struct tq_err *err);
	void (*log_position)(const struct tq_log *l, int64_t *offset, int64_t *line);
	int64_t (*log_output_bytes)(const struct tq_log *l);
	int (*log_exists)(struct tq_queue *q, int64_t id);
	int (*log_relinked)(const struct tq_log *l);
	int (*log_close)(struct tq_log *l, struct tq_err *err);
	int (*log_read)(struct tq_queue *q, int64_t id, const struct tq_log_range *r,
		tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err);
	int (*log_read_file)(struct tq_queue *q, int64_t id, const struct tq_log_range *r,
		tq_log_line_cb cb, void *arg, int64_t *total, struct tq_log_file *file,
		struct tq_err *err);
	int (*log_stat)(struct tq_queue *q, int64_t id, enum tq_stream stream,
		int64_t *lines, int64_t *output_bytes, struct tq_err *err);
	int (*log_remove)(struct tq_queue *q, int64_t id, struct tq_err *err);
	int (*log_export)(struct tq_queue *q, int64_t id, char *buf, size_t n,
		struct tq_err *err);
	int (*log_watch_open)(struct tq_queue *q, int64_t id, struct tq_log_watch **wp,
		struct tq_err *err);
	int (*log_watch_fd)(struct tq_log_watch *w);
	int (*log_watch_hit)(struct tq_log_watch *w);
	void (*log_watch_close)(struct tq_log_watch *w);
	/* wake_open may leave *wp NULL (a backend of one node: SQLite) */
	int (*wake_open)(struct tq_queue *q, const char *node, struct tq_wake **wp,
		struct tq_err *err);
	int (*wake_fd)(const struct tq_wake *w);
	int (*wake_take)(struct tq_wake *w, struct tq_err *err);
	void (*wake_close)(struct tq_wake *w);
};

/* The SQLite backend (sqlite/ops.c). */
extern const struct tq_store_ops tq_sqlite_ops;

/* The PostgreSQL backend (pg/ops.c): postgresql:// and postgres:// URLs
 * and libpq's key=value strings. */
extern const struct tq_store_ops tq_pg_ops;

/* Whether where is a URL (scheme://...): the form of a store that is not
 * in a state directory. */
int tq_store_is_url(const char *where);

/* The name of the first operation ops leaves NULL, or NULL when it fills
 * every one. */
const char *tq_store_missing(const struct tq_store_ops *ops);

#endif

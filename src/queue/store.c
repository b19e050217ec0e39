/*
 * store.c - the store's interface as functions (queue.h, logstore.h): each
 * calls the operation of the backend that made the handle (store.h), and
 * tq_queue_open picks the backend from what it is given. No SQL, no
 * backend's type.
 */
#include "queue/store.h"

#include "queue/home.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

/* The backends, in the order they are asked whether a locator is theirs. */
static const struct tq_store_ops *const backends[] = {
	&tq_pg_ops,
	&tq_sqlite_ops,
};

/* The length of a URL scheme at the start of where ("postgresql" of
 * "postgresql://..."), or 0: RFC 3986's ALPHA *( ALPHA / DIGIT / "+" /
 * "-" / "." ) before "://". */
static size_t scheme_len(const char *where)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t n;

	if (where[0] == '\0' || strchr(alpha, where[0]) == NULL)
		return 0;
	n = strspn(where, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "0123456789+-.");
	return strncmp(where + n, "://", 3) == 0 ? n : 0;
}

/* Whether a backend other than SQLite takes where. */
static const struct tq_store_ops *database_backend(const char *where)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i] != &tq_sqlite_ops && backends[i]->accepts(where))
			return backends[i];
	return NULL;
}

int tq_queue_open(struct tq_queue **qp, const char *where, unsigned flags,
		  struct tq_err *err)
{
	const char *db = getenv(TQ_DB_VAR);
	const struct tq_store_ops *be;
	size_t n;
	int rc, made = 0;

	*qp = NULL;
	/* a state directory's store is $TASKQ_DB when that names a database
	 * (the CLI sets it from --db or the config file's "database", and
	 * every process serve starts inherits it) */
	if (db != NULL && db[0] != '\0' && tq_sqlite_ops.accepts(where)) {
		if ((be = database_backend(db)) == NULL)
			return tq_err_set(err, TQ_EINVAL, "%s: not a postgresql:// URL (the "
					  "SQLite store is the state directory's: unset %s)",
					  TQ_DB_VAR, TQ_DB_VAR);
		/* the state directory still holds this node's sockets, its
		 * supervisor's lock and log: made as for SQLite, unless the
		 * caller only reads (the store is the database's either way) */
		if (!(flags & TQ_OPEN_NOCREATE) &&
		    (rc = tq_home_prepare(where, 0, &made, NULL, err)) < 0)
			return rc;
		/* an open that fails leaves no directory it made, as SQLite's */
		if ((rc = be->open(qp, db, flags, err)) < 0)
			tq_home_unmake(where, made);
		return rc;
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->accepts(where))
			return backends[i]->open(qp, where, flags, err);
	n = scheme_len(where);
	return tq_err_set(err, TQ_EINVAL, "store \"%s\": no backend for %s%.*s%s (give "
			  "a state directory's path, or a postgresql:// URL)",
			  where, n ? "\"" : "this form", (int)n, where, n ? "://\"" : "");
}

int tq_queue_is_database(const char *where)
{
	return where != NULL && database_backend(where) != NULL;
}

int tq_queue_schema_version(struct tq_queue *q, int64_t *version, struct tq_err *err)
{
	return q->ops->schema_version(q, version, err);
}

int tq_store_is_url(const char *where)
{
	return scheme_len(where) > 0;
}

const char *tq_store_missing(const struct tq_store_ops *ops)
{
	if (ops->accepts == NULL)
		return "accepts";
	if (ops->open == NULL)
		return "open";
	if (ops->set_busy_timeout == NULL)
		return "set_busy_timeout";
	if (ops->close == NULL)
		return "close";
	if (ops->notice == NULL)
		return "notice";
	if (ops->schema_version == NULL)
		return "schema_version";
	if (ops->submit == NULL)
		return "submit";
	if (ops->wants_worker == NULL)
		return "wants_worker";
	if (ops->prune_tokens == NULL)
		return "prune_tokens";
	if (ops->token_first == NULL)
		return "token_first";
	if (ops->submit_many == NULL)
		return "submit_many";
	if (ops->get == NULL)
		return "get";
	if (ops->list == NULL)
		return "list";
	if (ops->counts == NULL)
		return "counts";
	if (ops->attempts == NULL)
		return "attempts";
	if (ops->stdin_file == NULL)
		return "stdin_file";
	if (ops->cancel == NULL)
		return "cancel";
	if (ops->remove == NULL)
		return "remove";
	if (ops->retry == NULL)
		return "retry";
	if (ops->retry_failed == NULL)
		return "retry_failed";
	if (ops->request_kill == NULL)
		return "request_kill";
	if (ops->claim == NULL)
		return "claim";
	if (ops->next_wakeup == NULL)
		return "next_wakeup";
	if (ops->renew == NULL)
		return "renew";
	if (ops->set_process == NULL)
		return "set_process";
	if (ops->finish == NULL)
		return "finish";
	if (ops->on_exit_due == NULL)
		return "on_exit_due";
	if (ops->on_exit_take == NULL)
		return "on_exit_take";
	if (ops->expired == NULL)
		return "expired";
	if (ops->running_by == NULL)
		return "running_by";
	if (ops->runnable == NULL)
		return "runnable";
	if (ops->worker_add == NULL)
		return "worker_add";
	if (ops->worker_beat == NULL)
		return "worker_beat";
	if (ops->worker_stop == NULL)
		return "worker_stop";
	if (ops->workers == NULL)
		return "workers";
	if (ops->worker_results == NULL)
		return "worker_results";
	if (ops->supervisor_beat == NULL)
		return "supervisor_beat";
	if (ops->supervisor_stop == NULL)
		return "supervisor_stop";
	if (ops->supervisors == NULL)
		return "supervisors";
	if (ops->meta_set == NULL)
		return "meta_set";
	if (ops->meta_get == NULL)
		return "meta_get";
	if (ops->stdin_write == NULL)
		return "stdin_write";
	if (ops->stdin_pending == NULL)
		return "stdin_pending";
	if (ops->stdin_delivered == NULL)
		return "stdin_delivered";
	if (ops->groups == NULL)
		return "groups";
	if (ops->group_pause == NULL)
		return "group_pause";
	if (ops->group_resume == NULL)
		return "group_resume";
	if (ops->cursor_get == NULL)
		return "cursor_get";
	if (ops->cursor_advance == NULL)
		return "cursor_advance";
	if (ops->session_get == NULL)
		return "session_get";
	if (ops->session_show == NULL)
		return "session_show";
	if (ops->sessions == NULL)
		return "sessions";
	if (ops->warm_set == NULL)
		return "warm_set";
	if (ops->warm_clear == NULL)
		return "warm_clear";
	if (ops->warm_idle == NULL)
		return "warm_idle";
	if (ops->warm_list == NULL)
		return "warm_list";
	if (ops->session_close_request == NULL)
		return "session_close_request";
	if (ops->session_close_take == NULL)
		return "session_close_take";
	if (ops->stats == NULL)
		return "stats";
	if (ops->batches == NULL)
		return "batches";
	if (ops->batch_get == NULL)
		return "batch_get";
	if (ops->batch_open == NULL)
		return "batch_open";
	if (ops->group_set_parallel == NULL)
		return "group_set_parallel";
	if (ops->clear_finished == NULL)
		return "clear_finished";
	if (ops->clear_task == NULL)
		return "clear_task";
	if (ops->log_open == NULL)
		return "log_open";
	if (ops->log_write == NULL)
		return "log_write";
	if (ops->log_hold == NULL)
		return "log_hold";
	if (ops->log_held == NULL)
		return "log_held";
	if (ops->log_flush == NULL)
		return "log_flush";
	if (ops->log_tick == NULL)
		return "log_tick";
	if (ops->log_end_stream == NULL)
		return "log_end_stream";
	if (ops->log_position == NULL)
		return "log_position";
	if (ops->log_output_bytes == NULL)
		return "log_output_bytes";
	if (ops->log_exists == NULL)
		return "log_exists";
	if (ops->log_relinked == NULL)
		return "log_relinked";
	if (ops->log_close == NULL)
		return "log_close";
	if (ops->log_read == NULL)
		return "log_read";
	if (ops->log_read_file == NULL)
		return "log_read_file";
	if (ops->log_stat == NULL)
		return "log_stat";
	if (ops->log_remove == NULL)
		return "log_remove";
	if (ops->log_export == NULL)
		return "log_export";
	if (ops->log_watch_open == NULL)
		return "log_watch_open";
	if (ops->log_watch_fd == NULL)
		return "log_watch_fd";
	if (ops->log_watch_hit == NULL)
		return "log_watch_hit";
	if (ops->log_watch_close == NULL)
		return "log_watch_close";
	if (ops->wake_open == NULL)
		return "wake_open";
	if (ops->wake_fd == NULL)
		return "wake_fd";
	if (ops->wake_take == NULL)
		return "wake_take";
	if (ops->wake_close == NULL)
		return "wake_close";
	return NULL;
}

void tq_queue_set_busy_timeout(struct tq_queue *q, int64_t ms)
{
	q->ops->set_busy_timeout(q, ms);
}

void tq_queue_close(struct tq_queue *q)
{
	if (q != NULL)
		q->ops->close(q);
}

const char *tq_queue_notice(const struct tq_queue *q)
{
	return q->ops->notice(q);
}

int64_t tq_queue_connected_at(const struct tq_queue *q)
{
	return q->ops->connected_at != NULL ? q->ops->connected_at(q) : 0;
}

void tq_queue_tidy(struct tq_queue *q)
{
	if (q != NULL && q->ops->tidy != NULL)
		q->ops->tidy(q);
}

int tq_queue_submit(struct tq_queue *q, const struct tq_task_spec *spec, int64_t *id,
	int *existed, struct tq_err *err)
{
	return q->ops->submit(q, spec, id, existed, err);
}

int tq_queue_wants_worker(struct tq_queue *q, int64_t id)
{
	return q->ops->wants_worker(q, id);
}

int tq_queue_prune_tokens(struct tq_queue *q, int64_t before_ms, int *n,
	struct tq_err *err)
{
	return q->ops->prune_tokens(q, before_ms, n, err);
}

int tq_queue_token_first(struct tq_queue *q, const char *prefix, char *buf, size_t n,
	int64_t *id, struct tq_err *err)
{
	return q->ops->token_first(q, prefix, buf, n, id, err);
}

int tq_queue_submit_many(struct tq_queue *q, const struct tq_task_spec *specs, size_t n,
	int64_t *ids, int *existed, struct tq_err *err)
{
	return q->ops->submit_many(q, specs, n, ids, existed, err);
}

int tq_queue_get(struct tq_queue *q, int64_t id, unsigned get_flags, struct tq_task *t,
	struct tq_err *err)
{
	return q->ops->get(q, id, get_flags, t, err);
}

int tq_queue_list(struct tq_queue *q, const struct tq_filter *f, struct tq_task **tasks,
	size_t *n, struct tq_err *err)
{
	return q->ops->list(q, f, tasks, n, err);
}

int tq_queue_counts(struct tq_queue *q, int64_t *counts, struct tq_err *err)
{
	return q->ops->counts(q, counts, err);
}

int tq_queue_attempts(struct tq_queue *q, int64_t id, struct tq_attempt **list, size_t *n,
	struct tq_err *err)
{
	return q->ops->attempts(q, id, list, n, err);
}

int tq_queue_stdin_file(struct tq_queue *q, int64_t id, void **data, size_t *len,
	struct tq_err *err)
{
	return q->ops->stdin_file(q, id, data, len, err);
}

int tq_queue_cancel(struct tq_queue *q, int64_t id, const char *reason,
	enum tq_state *was, struct tq_err *err)
{
	return q->ops->cancel(q, id, reason, was, err);
}

int tq_queue_remove(struct tq_queue *q, int64_t id, struct tq_err *err)
{
	return q->ops->remove(q, id, err);
}

int tq_queue_retry(struct tq_queue *q, int64_t id, struct tq_err *err)
{
	return q->ops->retry(q, id, err);
}

int tq_queue_retry_failed(struct tq_queue *q, const char *batch, int64_t *n,
	struct tq_err *err)
{
	return q->ops->retry_failed(q, batch, n, err);
}

int tq_queue_request_kill(struct tq_queue *q, int64_t id, int sig, struct tq_err *err)
{
	return q->ops->request_kill(q, id, sig, err);
}

int tq_queue_claim(struct tq_queue *q, int64_t worker_id, int64_t lease_ms,
	struct tq_task *t, int *more, struct tq_err *err)
{
	return q->ops->claim(q, worker_id, lease_ms, t, more, err);
}

int tq_queue_next_wakeup(struct tq_queue *q, int64_t *at, struct tq_err *err)
{
	return q->ops->next_wakeup(q, at, err);
}

int tq_queue_renew(struct tq_queue *q, int64_t id, int attempt, int64_t worker_id,
	int64_t lease_ms, int *kill_signal, struct tq_err *err)
{
	return q->ops->renew(q, id, attempt, worker_id, lease_ms, kill_signal, err);
}

int tq_queue_set_process(struct tq_queue *q, int64_t id, int attempt, int pid, int pgid,
	int64_t proc_start, int64_t log_offset, int64_t log_line, struct tq_err *err)
{
	return q->ops->set_process(q, id, attempt, pid, pgid, proc_start, log_offset, log_line, err);
}

/*
 * f, or a copy of it in *copy whose reason is valid UTF-8 (*fixed, the
 * caller frees it): a reason may quote bytes that are not (a program's
 * path that could not be started), and PostgreSQL's text takes none -- it
 * refused the end, and the task stayed running. Each bad byte becomes
 * U+FFFD, on both backends. Out of memory: f as it is.
 */
static const struct tq_finish *storable(const struct tq_finish *f, struct tq_finish *copy,
					char **fixed)
{
	*fixed = NULL;
	if (f->reason == NULL || tq_utf8_fix(f->reason, fixed) != 1)
		return f;
	*copy = *f;
	copy->reason = *fixed;
	return copy;
}

int tq_queue_finish(struct tq_queue *q, const struct tq_finish *f, enum tq_state *state,
	struct tq_err *err)
{
	struct tq_finish copy;
	char *fixed;
	int rc;

	f = storable(f, &copy, &fixed);
	rc = q->ops->finish(q, f, state, err);
	free(fixed);
	return rc;
}

int tq_queue_finish_claim(struct tq_queue *q, const struct tq_finish *f,
	enum tq_state *state, int64_t lease_ms, struct tq_task *t, int *claimed, int *more,
	struct tq_err *err)
{
	struct tq_err cerr = TQ_ERR_INIT;
	struct tq_finish copy;
	char *fixed;
	int rc;

	*claimed = 0;
	if (more)
		*more = 0;
	f = storable(f, &copy, &fixed);
	if (q->ops->finish_claim != NULL) {
		rc = q->ops->finish_claim(q, f, state, lease_ms, t, claimed, more, err);
		free(fixed);
		return rc;
	}
	/* one after the other: the end written, then a claim whose failure
	 * (nothing runnable, an error) leaves the caller to claim itself */
	rc = q->ops->finish(q, f, state, err);
	free(fixed);
	if (rc < 0)
		return rc;
	*claimed = q->ops->claim(q, f->worker_id, lease_ms, t, more, &cerr) == 0;
	return 0;
}

int tq_queue_on_exit_due(struct tq_queue *q, int *any, struct tq_err *err)
{
	return q->ops->on_exit_due(q, any, err);
}

int tq_queue_on_exit_take(struct tq_queue *q, int64_t task_id, struct tq_task *t,
	struct tq_err *err)
{
	return q->ops->on_exit_take(q, task_id, t, err);
}

int tq_queue_expired(struct tq_queue *q, int64_t now_ms, size_t max,
	struct tq_expired **list, size_t *n, struct tq_err *err)
{
	return q->ops->expired(q, now_ms, max, list, n, err);
}

int tq_queue_running_by(struct tq_queue *q, int64_t worker_id, size_t max,
	struct tq_expired **list, size_t *n, struct tq_err *err)
{
	return q->ops->running_by(q, worker_id, max, list, n, err);
}

int tq_queue_runnable(struct tq_queue *q, int64_t now, int *any, struct tq_err *err)
{
	return q->ops->runnable(q, now, any, err);
}

int tq_queue_worker_add(struct tq_queue *q, const char *node, int pid,
			 int64_t proc_start, int slot, int supervisor_pid, int64_t *id,
			 struct tq_err *err)
{
	return q->ops->worker_add(q, node, pid, proc_start, slot, supervisor_pid, id, err);
}

int tq_queue_worker_beat(struct tq_queue *q, int64_t id, int64_t task_id,
	struct tq_err *err)
{
	return q->ops->worker_beat(q, id, task_id, err);
}

int tq_queue_worker_stop(struct tq_queue *q, int64_t id, struct tq_err *err)
{
	return q->ops->worker_stop(q, id, err);
}

int tq_queue_workers(struct tq_queue *q, struct tq_worker_info **list, size_t *n,
	struct tq_err *err)
{
	return q->ops->workers(q, list, n, err);
}

int tq_queue_supervisor_beat(struct tq_queue *q, const struct tq_supervisor_info *s,
			     struct tq_err *err)
{
	return q->ops->supervisor_beat(q, s, err);
}

int tq_queue_supervisor_stop(struct tq_queue *q, const char *node, int pid,
			     struct tq_err *err)
{
	return q->ops->supervisor_stop(q, node, pid, err);
}

int tq_queue_supervisors(struct tq_queue *q, struct tq_supervisor_info **list, size_t *n,
			 struct tq_err *err)
{
	return q->ops->supervisors(q, list, n, err);
}

int tq_queue_worker_results(struct tq_queue *q, const int64_t *ids, size_t n,
	int64_t *ran, int64_t *failed, int64_t *pending, struct tq_err *err)
{
	return q->ops->worker_results(q, ids, n, ran, failed, pending, err);
}

int tq_queue_meta_set(struct tq_queue *q, const char *key, const char *value,
	struct tq_err *err)
{
	return q->ops->meta_set(q, key, value, err);
}

int tq_queue_meta_get(struct tq_queue *q, const char *key, char **value,
	struct tq_err *err)
{
	return q->ops->meta_get(q, key, value, err);
}

int tq_queue_stdin_write(struct tq_queue *q, int64_t id, const void *data, size_t len,
	int eof, struct tq_err *err)
{
	return q->ops->stdin_write(q, id, data, len, eof, err);
}

int tq_queue_stdin_pending(struct tq_queue *q, int64_t id, int64_t after, size_t max,
	struct tq_stdin_chunk **list, size_t *n, struct tq_err *err)
{
	return q->ops->stdin_pending(q, id, after, max, list, n, err);
}

int tq_queue_stdin_delivered(struct tq_queue *q, int64_t id, int64_t seq,
	struct tq_err *err)
{
	return q->ops->stdin_delivered(q, id, seq, err);
}

int tq_queue_groups(struct tq_queue *q, struct tq_group **list, size_t *n,
	struct tq_err *err)
{
	return q->ops->groups(q, list, n, err);
}

int tq_queue_group_pause(struct tq_queue *q, const char *name, struct tq_err *err)
{
	return q->ops->group_pause(q, name, err);
}

int tq_queue_group_resume(struct tq_queue *q, const char *name, struct tq_err *err)
{
	return q->ops->group_resume(q, name, err);
}

int tq_queue_cursor_get(struct tq_queue *q, int64_t id, const char *reader, int64_t *line,
	uint64_t *log_file, struct tq_err *err)
{
	return q->ops->cursor_get(q, id, reader, line, log_file, err);
}

int tq_queue_cursor_advance(struct tq_queue *q, int64_t id, const char *reader,
	int64_t from, int64_t to, uint64_t log_file, struct tq_err *err)
{
	return q->ops->cursor_advance(q, id, reader, from, to, log_file, err);
}

int tq_queue_session_get(struct tq_queue *q, const char *key, char **agent_session,
	struct tq_err *err)
{
	return q->ops->session_get(q, key, agent_session, err);
}

int tq_queue_session_show(struct tq_queue *q, const char *key, struct tq_session_info *s,
	struct tq_err *err)
{
	return q->ops->session_show(q, key, s, err);
}

int tq_queue_sessions(struct tq_queue *q, const char *key, struct tq_session_row **list,
	size_t *n, struct tq_err *err)
{
	return q->ops->sessions(q, key, list, n, err);
}

int tq_queue_warm_set(struct tq_queue *q, const char *key, const char *node, int pid,
	int64_t start, int64_t now, struct tq_err *err)
{
	return q->ops->warm_set(q, key, node, pid, start, now, err);
}

int tq_queue_warm_clear(struct tq_queue *q, const char *key, int pid, int64_t start,
	int *cleared, struct tq_err *err)
{
	return q->ops->warm_clear(q, key, pid, start, cleared, err);
}

int tq_queue_warm_idle(struct tq_queue *q, const char *key, int pid, int64_t start,
	int64_t since, struct tq_err *err)
{
	return q->ops->warm_idle(q, key, pid, start, since, err);
}

int tq_queue_warm_list(struct tq_queue *q, const char *node, struct tq_session_row **list,
	size_t *n, struct tq_err *err)
{
	return q->ops->warm_list(q, node, list, n, err);
}

int tq_queue_session_close_request(struct tq_queue *q, const char *key, int64_t now,
	struct tq_session_row *row, struct tq_err *err)
{
	return q->ops->session_close_request(q, key, now, row, err);
}

int tq_queue_session_close_take(struct tq_queue *q, const char *key, int pid,
	int64_t start, int64_t *requested_at, struct tq_err *err)
{
	return q->ops->session_close_take(q, key, pid, start, requested_at, err);
}

int tq_queue_stats(struct tq_queue *q, const struct tq_stats_filter *f,
	struct tq_stats *s, struct tq_err *err)
{
	return q->ops->stats(q, f, s, err);
}

int tq_queue_batches(struct tq_queue *q, struct tq_batch **list, size_t *n,
	struct tq_err *err)
{
	return q->ops->batches(q, list, n, err);
}

int tq_queue_batch_get(struct tq_queue *q, const char *name, struct tq_batch *b,
	struct tq_err *err)
{
	return q->ops->batch_get(q, name, b, err);
}

int tq_queue_batch_open(struct tq_queue *q, const char *name, int64_t *open,
	struct tq_err *err)
{
	return q->ops->batch_open(q, name, open, err);
}

int tq_queue_group_set_parallel(struct tq_queue *q, const char *name, int64_t parallel,
	struct tq_err *err)
{
	return q->ops->group_set_parallel(q, name, parallel, err);
}

int tq_queue_clear_finished(struct tq_queue *q, int64_t before, size_t max,
	int64_t *removed, struct tq_err *err)
{
	return q->ops->clear_finished(q, before, max, removed, err);
}

int tq_queue_clear_task(struct tq_queue *q, int64_t id, enum tq_state *was,
	struct tq_err *err)
{
	return q->ops->clear_task(q, id, was, err);
}

int tq_log_open(struct tq_queue *q, int64_t id, int64_t max_output, struct tq_log **lp,
	struct tq_err *err)
{
	return q->ops->log_open(q, id, max_output, lp, err);
}

int tq_log_write(struct tq_log *l, enum tq_stream stream, const void *buf, size_t n,
	int64_t now_ms, struct tq_err *err)
{
	return l->ops->log_write(l, stream, buf, n, now_ms, err);
}

void tq_log_hold(struct tq_log *l, size_t bytes, int64_t ms)
{
	l->ops->log_hold(l, bytes, ms);
}

size_t tq_log_held(const struct tq_log *l)
{
	return l->ops->log_held(l);
}

size_t tq_log_away(const struct tq_log *l)
{
	return l->ops->log_away != NULL ? l->ops->log_away(l) : 0;
}

int tq_log_flush(struct tq_log *l, struct tq_err *err)
{
	return l->ops->log_flush(l, err);
}

int tq_log_tick(struct tq_log *l, int64_t now_ms, int64_t *next_ms, struct tq_err *err)
{
	return l->ops->log_tick(l, now_ms, next_ms, err);
}

int tq_log_end_stream(struct tq_log *l, enum tq_stream stream, struct tq_err *err)
{
	return l->ops->log_end_stream(l, stream, err);
}

void tq_log_position(const struct tq_log *l, int64_t *offset, int64_t *line)
{
	l->ops->log_position(l, offset, line);
}

int64_t tq_log_output_bytes(const struct tq_log *l)
{
	return l->ops->log_output_bytes(l);
}

int tq_log_exists(struct tq_queue *q, int64_t id)
{
	return q->ops->log_exists(q, id);
}

int tq_log_relinked(const struct tq_log *l)
{
	return l->ops->log_relinked(l);
}

int tq_log_close(struct tq_log *l, struct tq_err *err)
{
	return l != NULL ? l->ops->log_close(l, err) : 0;
}

int tq_log_read(struct tq_queue *q, int64_t id, const struct tq_log_range *r,
	tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err)
{
	return q->ops->log_read(q, id, r, cb, arg, total, err);
}

int tq_log_read_file(struct tq_queue *q, int64_t id, const struct tq_log_range *r,
	tq_log_line_cb cb, void *arg, int64_t *total, struct tq_log_file *file,
	struct tq_err *err)
{
	return q->ops->log_read_file(q, id, r, cb, arg, total, file, err);
}

int tq_log_stat(struct tq_queue *q, int64_t id, enum tq_stream stream, int64_t *lines,
	int64_t *output_bytes, struct tq_err *err)
{
	return q->ops->log_stat(q, id, stream, lines, output_bytes, err);
}

int tq_log_remove(struct tq_queue *q, int64_t id, struct tq_err *err)
{
	return q->ops->log_remove(q, id, err);
}

int tq_log_export(struct tq_queue *q, int64_t id, char *buf, size_t n, struct tq_err *err)
{
	return q->ops->log_export(q, id, buf, n, err);
}

int tq_log_watch_open(struct tq_queue *q, int64_t id, struct tq_log_watch **wp,
	struct tq_err *err)
{
	return q->ops->log_watch_open(q, id, wp, err);
}

int tq_log_watch_fd(struct tq_log_watch *w)
{
	return w->ops->log_watch_fd(w);
}

int tq_log_watch_hit(struct tq_log_watch *w)
{
	return w->ops->log_watch_hit(w);
}

void tq_log_watch_close(struct tq_log_watch *w)
{
	if (w != NULL)
		w->ops->log_watch_close(w);
}

int tq_queue_wake_open(struct tq_queue *q, const char *node, struct tq_wake **wp,
	struct tq_err *err)
{
	*wp = NULL;
	return q->ops->wake_open(q, node, wp, err);
}

int tq_queue_wake_fd(const struct tq_wake *w)
{
	return w->ops->wake_fd(w);
}

int tq_queue_wake_take(struct tq_wake *w, struct tq_err *err)
{
	return w->ops->wake_take(w, err);
}

void tq_queue_wake_close(struct tq_wake *w)
{
	if (w != NULL)
		w->ops->wake_close(w);
}

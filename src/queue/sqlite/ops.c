/*
 * ops.c - the SQLite backend's table of operations (queue/store.h): every
 * operation of the store's interface, filled by the functions of this
 * folder (declared in internal.h).
 */
#include "internal.h"

/* A state directory's path: anything but a URL (scheme://...), which names
 * another backend's store. */
static int accepts(const char *where)
{
	return where != NULL && !tq_store_is_url(where);
}

/* Waking other nodes (queue.h, tq_queue_wake_open): a SQLite store is one
 * node's, and every writer rings the node's doorbell itself, so there is
 * no handle to hand out; the others are never called. */
static int wake_open(struct tq_queue *q, const char *node, struct tq_wake **wp,
		     struct tq_err *err)
{
	(void)q;
	(void)node;
	(void)err;
	*wp = NULL;
	return 0;
}

static int wake_fd(const struct tq_wake *w)
{
	(void)w;
	return -1;
}

static int wake_take(struct tq_wake *w, struct tq_err *err)
{
	(void)w;
	(void)err;
	return 0;
}

static void wake_close(struct tq_wake *w)
{
	(void)w;
}

const struct tq_store_ops tq_sqlite_ops = {
	.name = "sqlite",
	.accepts = accepts,
	.open = tq_sqlite_open,
	.set_busy_timeout = tq_sqlite_set_busy_timeout,
	.close = tq_sqlite_close,
	.tidy = tq_sqlite_tidy,
	.notice = tq_sqlite_notice,
	.schema_version = tq_sqlite_schema_version,
	.submit = tq_sqlite_submit,
	.wants_worker = tq_sqlite_wants_worker,
	.prune_tokens = tq_sqlite_prune_tokens,
	.token_first = tq_sqlite_token_first,
	.submit_many = tq_sqlite_submit_many,
	.get = tq_sqlite_get,
	.list = tq_sqlite_list,
	.counts = tq_sqlite_counts,
	.attempts = tq_sqlite_attempts,
	.stdin_file = tq_sqlite_stdin_file,
	.cancel = tq_sqlite_cancel,
	.remove = tq_sqlite_remove,
	.retry = tq_sqlite_retry,
	.retry_failed = tq_sqlite_retry_failed,
	.request_kill = tq_sqlite_request_kill,
	.claim = tq_sqlite_claim,
	.next_wakeup = tq_sqlite_next_wakeup,
	.renew = tq_sqlite_renew,
	.set_process = tq_sqlite_set_process,
	.finish = tq_sqlite_finish,
	.finish_claim = tq_sqlite_finish_claim,
	.on_exit_due = tq_sqlite_on_exit_due,
	.on_exit_take = tq_sqlite_on_exit_take,
	.expired = tq_sqlite_expired,
	.running_by = tq_sqlite_running_by,
	.runnable = tq_sqlite_runnable,
	.worker_add = tq_sqlite_worker_add,
	.worker_beat = tq_sqlite_worker_beat,
	.worker_stop = tq_sqlite_worker_stop,
	.workers = tq_sqlite_workers,
	.worker_results = tq_sqlite_worker_results,
	.supervisor_beat = tq_sqlite_supervisor_beat,
	.supervisor_stop = tq_sqlite_supervisor_stop,
	.supervisors = tq_sqlite_supervisors,
	.meta_set = tq_sqlite_meta_set,
	.meta_get = tq_sqlite_meta_get,
	.stdin_write = tq_sqlite_stdin_write,
	.stdin_pending = tq_sqlite_stdin_pending,
	.stdin_delivered = tq_sqlite_stdin_delivered,
	.groups = tq_sqlite_groups,
	.group_pause = tq_sqlite_group_pause,
	.group_resume = tq_sqlite_group_resume,
	.cursor_get = tq_sqlite_cursor_get,
	.cursor_advance = tq_sqlite_cursor_advance,
	.session_get = tq_sqlite_session_get,
	.session_show = tq_sqlite_session_show,
	.sessions = tq_sqlite_sessions,
	.warm_set = tq_sqlite_warm_set,
	.warm_clear = tq_sqlite_warm_clear,
	.warm_idle = tq_sqlite_warm_idle,
	.warm_list = tq_sqlite_warm_list,
	.session_close_request = tq_sqlite_session_close_request,
	.session_close_take = tq_sqlite_session_close_take,
	.stats = tq_sqlite_stats,
	.batches = tq_sqlite_batches,
	.batch_get = tq_sqlite_batch_get,
	.batch_open = tq_sqlite_batch_open,
	.group_set_parallel = tq_sqlite_group_set_parallel,
	.clear_finished = tq_sqlite_clear_finished,
	.clear_task = tq_sqlite_clear_task,
	.log_open = tq_sqlite_log_open,
	.log_write = tq_sqlite_log_write,
	.log_hold = tq_sqlite_log_hold,
	.log_held = tq_sqlite_log_held,
	.log_flush = tq_sqlite_log_flush,
	.log_tick = tq_sqlite_log_tick,
	.log_end_stream = tq_sqlite_log_end_stream,
	.log_position = tq_sqlite_log_position,
	.log_output_bytes = tq_sqlite_log_output_bytes,
	.log_exists = tq_sqlite_log_exists,
	.log_relinked = tq_sqlite_log_relinked,
	.log_close = tq_sqlite_log_close,
	.log_read = tq_sqlite_log_read,
	.log_read_file = tq_sqlite_log_read_file,
	.log_stat = tq_sqlite_log_stat,
	.log_remove = tq_sqlite_log_remove,
	.log_export = tq_sqlite_log_export,
	.log_watch_open = tq_sqlite_log_watch_open,
	.log_watch_fd = tq_sqlite_log_watch_fd,
	.log_watch_hit = tq_sqlite_log_watch_hit,
	.log_watch_close = tq_sqlite_log_watch_close,
	.wake_open = wake_open,
	.wake_fd = wake_fd,
	.wake_take = wake_take,
	.wake_close = wake_close,
};

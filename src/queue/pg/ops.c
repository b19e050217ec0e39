/*
 * ops.c - the PostgreSQL backend's table of operations (queue/store.h):
 * every operation of the store's interface, filled by this folder's
 * functions (internal.h), and the locators it takes.
 */
#include "internal.h"

#include <ctype.h>
#include <string.h>

/* libpq's connection keywords a key=value locator may begin with: a state
 * directory's path never does (the CLI makes it absolute). */
static const char *const keywords[] = {
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile",
	"service", "sslmode", "connect_timeout", "application_name", "options",
	"target_session_attrs", NULL,
};

/* A postgresql:// or postgres:// URL, or libpq's key=value form
 * ("host=db1 dbname=taskq"): libpq takes both. */
static int accepts(const char *where)
{
	size_t n;

	if (where == NULL)
		return 0;
	if (strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0)
		return 1;
	while (isspace((unsigned char)*where))
		where++;
	n = strcspn(where, " \t=");
	for (int i = 0; keywords[i] != NULL; i++)
		if (strlen(keywords[i]) == n && strncmp(where, keywords[i], n) == 0)
			return strchr(where + n, '=') != NULL &&
			       strspn(where + n, " \t") == strcspn(where + n, "=");
	return 0;
}

const struct tq_store_ops tq_pg_ops = {
	.name = "postgresql",
	.accepts = accepts,
	.open = tq_pg_open,
	.set_busy_timeout = tq_pg_set_busy_timeout,
	.close = tq_pg_close,
	.notice = tq_pg_notice,
	.connected_at = tq_pg_connected_at,
	.schema_version = tq_pg_schema_version,
	.submit = tq_pg_submit,
	.wants_worker = tq_pg_wants_worker,
	.prune_tokens = tq_pg_prune_tokens,
	.token_first = tq_pg_token_first,
	.submit_many = tq_pg_submit_many,
	.get = tq_pg_get,
	.list = tq_pg_list,
	.counts = tq_pg_counts,
	.attempts = tq_pg_attempts,
	.stdin_file = tq_pg_stdin_file,
	.cancel = tq_pg_cancel,
	.remove = tq_pg_remove,
	.retry = tq_pg_retry,
	.retry_failed = tq_pg_retry_failed,
	.request_kill = tq_pg_request_kill,
	.claim = tq_pg_claim,
	.next_wakeup = tq_pg_next_wakeup,
	.renew = tq_pg_renew,
	.set_process = tq_pg_set_process,
	.finish = tq_pg_finish,
	.on_exit_due = tq_pg_on_exit_due,
	.on_exit_take = tq_pg_on_exit_take,
	.expired = tq_pg_expired,
	.running_by = tq_pg_running_by,
	.runnable = tq_pg_runnable,
	.worker_add = tq_pg_worker_add,
	.worker_beat = tq_pg_worker_beat,
	.worker_stop = tq_pg_worker_stop,
	.workers = tq_pg_workers,
	.worker_results = tq_pg_worker_results,
	.supervisor_beat = tq_pg_supervisor_beat,
	.supervisor_stop = tq_pg_supervisor_stop,
	.supervisors = tq_pg_supervisors,
	.meta_set = tq_pg_meta_set,
	.meta_get = tq_pg_meta_get,
	.stdin_write = tq_pg_stdin_write,
	.stdin_pending = tq_pg_stdin_pending,
	.stdin_delivered = tq_pg_stdin_delivered,
	.groups = tq_pg_groups,
	.group_pause = tq_pg_group_pause,
	.group_resume = tq_pg_group_resume,
	.cursor_get = tq_pg_cursor_get,
	.cursor_advance = tq_pg_cursor_advance,
	.session_get = tq_pg_session_get,
	.session_show = tq_pg_session_show,
	.stats = tq_pg_stats,
	.batches = tq_pg_batches,
	.batch_get = tq_pg_batch_get,
	.batch_open = tq_pg_batch_open,
	.group_set_parallel = tq_pg_group_set_parallel,
	.clear_finished = tq_pg_clear_finished,
	.clear_task = tq_pg_clear_task,
	.sessions = tq_pg_sessions,
	.warm_set = tq_pg_warm_set,
	.warm_clear = tq_pg_warm_clear,
	.warm_idle = tq_pg_warm_idle,
	.warm_list = tq_pg_warm_list,
	.session_close_request = tq_pg_session_close_request,
	.session_close_take = tq_pg_session_close_take,
	.log_open = tq_pg_log_open,
	.log_write = tq_pg_log_write,
	.log_hold = tq_pg_log_hold,
	.log_held = tq_pg_log_held,
	.log_away = tq_pg_log_away,
	.log_flush = tq_pg_log_flush,
	.log_tick = tq_pg_log_tick,
	.log_end_stream = tq_pg_log_end_stream,
	.log_position = tq_pg_log_position,
	.log_output_bytes = tq_pg_log_output_bytes,
	.log_exists = tq_pg_log_exists,
	.log_relinked = tq_pg_log_relinked,
	.log_close = tq_pg_log_close,
	.log_read = tq_pg_log_read,
	.log_read_file = tq_pg_log_read_file,
	.log_stat = tq_pg_log_stat,
	.log_remove = tq_pg_log_remove,
	.log_export = tq_pg_log_export,
	.log_watch_open = tq_pg_log_watch_open,
	.log_watch_fd = tq_pg_log_watch_fd,
	.log_watch_hit = tq_pg_log_watch_hit,
	.log_watch_close = tq_pg_log_watch_close,
	.wake_open = tq_pg_wake_open,
	.wake_fd = tq_pg_wake_fd,
	.wake_take = tq_pg_wake_take,
	.wake_close = tq_pg_wake_close,
};

/*
 * stmt.h - the SQLite backend's statements: the slots of the statement
 * cache (enum tq_stmt, one per entry of stmts.def), their SQL, the SQL
 * fragments the entries share, and the one builder of a statement whose
 * text depends on its call (the list filter's shapes). Only src/queue/sqlite
 * includes it.
 */
#ifndef TQ_QUEUE_SQLITE_STMT_H
#define TQ_QUEUE_SQLITE_STMT_H

#include <stddef.h>

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
	" t.stall_timeout_ms, t.deps_left, t.warm, t.idle_timeout_ms"

/* A sessions row as sessions.c reads it (aliased s): its own columns, the
 * agent (recorded, else its latest task's), the idle timeout of its latest
 * warm task; SESSION_SUMS adds its tasks' count and cost (through the
 * tasks_session index), SESSION_NO_SUMS zeros where they are not asked. */
#define SESSION_COLS \
	"SELECT s.key, coalesce(s.agent, (SELECT t.agent FROM tasks t" \
	" WHERE t.session = s.key ORDER BY t.id DESC LIMIT 1)), s.agent_session," \
	" s.cwd, s.last_task_id, s.updated_at, s.warm_pid, s.warm_start," \
	" s.warm_node, s.warm_at, s.idle_since, s.close_requested_at," \
	" (SELECT t.idle_timeout_ms FROM tasks t WHERE t.session = s.key" \
	" AND t.warm != 0 ORDER BY t.id DESC LIMIT 1)"
#define SESSION_SUMS \
	", (SELECT count(*) FROM tasks t WHERE t.session = s.key)," \
	" (SELECT total(a.cost_usd) FROM tasks t JOIN attempts a ON a.task_id = t.id" \
	" WHERE t.session = s.key)," \
	" (SELECT count(a.cost_usd) FROM tasks t JOIN attempts a ON a.task_id = t.id" \
	" WHERE t.session = s.key) FROM sessions s"
#define SESSION_NO_SUMS ", 0, 0, 0 FROM sessions s"

/* The final states, for SQL. */
#define FINAL_STATES "('succeeded','failed','timed_out','killed','canceled')"

/*
 * One row per batch: the counts in enum tq_state order (columns 1-9), the
 * total, times, and the cost of every attempt. WHERE is the batch filter.
 */
#define BATCH_SQL(WHERE)                                                       \
	"WITH b AS (SELECT batch,"                                             \
	" sum(state = 'queued'), sum(state = 'scheduled'),"                    \
	" sum(state = 'blocked'), sum(state = 'running'),"                     \
	" sum(state = 'succeeded'), sum(state = 'failed'),"                    \
	" sum(state = 'timed_out'), sum(state = 'killed'),"                    \
	" sum(state = 'canceled'), count(*) AS n,"                             \
	" min(created_at), max(created_at), min(started_at), max(finished_at),"\
	" max(id) AS last_id"                                                  \
	" FROM tasks INDEXED BY tasks_batch WHERE " WHERE " GROUP BY batch),"  \
	" c AS (SELECT t.batch AS batch, total(a.cost_usd) AS cost,"           \
	" count(a.cost_usd) AS ncost FROM tasks t INDEXED BY tasks_batch"      \
	" JOIN attempts a ON a.task_id = t.id"                                 \
	" WHERE " WHERE " GROUP BY t.batch)"                                   \
	" SELECT b.*, c.cost, c.ncost FROM b LEFT JOIN c ON c.batch = b.batch" \
	" ORDER BY b.last_id DESC"

#define UNFINISHED "('queued','scheduled','blocked','running')"

/*
 * A group may start a task when it is not paused and not held by its probe.
 *
 * The half-open probe: a rate limit's pause sets groups.probe; when the
 * pause lifts, the claim starts one task of the group (its probe_task) and
 * holds the rest until that task's attempt ends (tq_queue_finish): without a
 * rate limit (tq_finish.probe_passed) the group is released; with one it is
 * paused again until the new retry time and probed again; an attempt that
 * tells nothing (killed, lost, stalled, interrupted) clears probe_task, so
 * the next claim starts the next probe. A probe_task that is no longer
 * running (its row removed, its state changed by a path that did not clear
 * it) holds nothing: the group never stays stuck. A pause by hand is not
 * probed: resume clears both.
 */
#define GROUP_OPEN(g, now)                                                   \
	g ".paused = 0 AND " g ".paused_until <= " now                        \
	" AND (" g ".probe = 0 OR " g ".probe_task IS NULL OR NOT EXISTS"     \
	" (SELECT 1 FROM tasks p WHERE p.id = " g ".probe_task"                \
	" AND p.state = 'running'))"


#define RUNNING_COLS_FROM(HOW) \
	"SELECT t.id, t.attempt, t.worker_id, a.pid, a.pgid, a.proc_start," \
	" t.retry_lost, t.max_retries, w.pid, w.proc_start, coalesce(a.node, w.host)" \
	" FROM tasks t" HOW \
	" LEFT JOIN attempts a ON a.task_id = t.id AND a.attempt = t.attempt" \
	" LEFT JOIN workers w ON w.id = t.worker_id"

/*
 * One row per (outcome, category, model) of the selected attempts; C adds
 * them up into the total, the outcome and category counts, and the
 * per-model rows. The number of groups is small whatever the number of
 * attempts. Without a batch the attempts are scanned; with one, the
 * batch's tasks come from tasks_batch and their attempts from the primary
 * key.
 */
#define STATS_COLS \
	"SELECT a.outcome, a.category, a.model, count(*), count(a.is_error)," \
	" coalesce(sum(a.is_error), 0), total(a.cost_usd), count(a.cost_usd)," \
	" coalesce(sum(a.input_tokens), 0), coalesce(sum(a.output_tokens), 0)," \
	" coalesce(sum(a.cache_read_tokens), 0)," \
	" coalesce(sum(a.cache_creation_tokens), 0), coalesce(sum(a.num_turns), 0)," \
	" coalesce(sum(CASE WHEN a.ended_at IS NOT NULL" \
	"  THEN a.ended_at - a.started_at END), 0), coalesce(sum(a.duration_ms), 0)," \
	" count(a.duration_ms)"
#define STATS_WHERE \
	" AND (?2 IS NULL OR t.grp = ?2) AND a.started_at >= ?3"

/* The slots of the statement cache, one per entry of stmts.def. */
enum tq_stmt {
#define STMT(name, sql) name,
#include "stmts.def"
#undef STMT
	ST_COUNT
};

/* The SQL of a slot, as stmts.def writes it; NULL for an id out of range. */
const char *tq_stmt_sql(enum tq_stmt id);

/* The name of a slot ("ST_CLAIM"), for a test's or an error's message. */
const char *tq_stmt_name(enum tq_stmt id);

/*
 * The list statement (tq_queue_list): one text per filter shape, the OR of
 * the TQ_LIST_F_* bits of the filters that are set; its parameters are ?1
 * states (a JSON array of names), ?2 name, ?3 ?4 label key and value, ?5
 * batch, ?6 group, ?7 category, ?8 limit, ?9 offset, whichever the shape
 * uses. Each shape's statement is cached in its own slot of
 * tq_queue.list_st.
 */
enum tq_list_shape {
	TQ_LIST_F_STATES = 1 << 0, TQ_LIST_F_NAME = 1 << 1, TQ_LIST_F_LABEL = 1 << 2,
	TQ_LIST_F_BATCH = 1 << 3, TQ_LIST_F_GROUP = 1 << 4, TQ_LIST_F_CATEGORY = 1 << 5,
	/* with TQ_LIST_F_STATES, what the states allow an index to be used for
	 * (tasks_state holds no queued or running task: schema.sql): none of
	 * those two, so tasks_state; or running only, so tasks_running */
	TQ_LIST_F_SETTLED = 1 << 6, TQ_LIST_F_RUNNING = 1 << 7,
};
#define TQ_LIST_VARIANTS 256 /* every OR of the TQ_LIST_F_* bits */

/* Write the list statement of shape into buf. Returns 0, or TQ_EINVAL for
 * a shape out of range or a buf too small (TQ_LIST_SQL_MAX is enough). */
#define TQ_LIST_SQL_MAX 2048
int tq_stmt_list_sql(unsigned shape, char *buf, size_t n);

#endif

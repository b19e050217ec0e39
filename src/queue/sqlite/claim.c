/*
 * claim.c - the worker side of the store: claim, lease renewal, process
 * identity, finish (fenced by attempt), recovery of expired leases, and the
 * dependency bookkeeping that runs when a task reaches a final state.
 *
 * Fencing: every write a worker makes names (task id, attempt[, worker]) and
 * changes nothing unless the task is still running under that attempt, so a
 * worker whose lease expired and was recovered cannot overwrite the newer
 * attempt's result.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "common/sys.h"

static int promote_due(struct tq_sqlite *q, int64_t now, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_DUE_ANY, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, now);
	rc = sqlite3_step(st);
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return 0; /* none due: nothing to promote */
	if (rc != SQLITE_ROW)
		return tq_db_error(q, rc, err, "look for due scheduled tasks");
	if ((st = tq_db_stmt(q, ST_PROMOTE_DUE, err)) == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, now);
	return tq_db_exec_st(q, st, err, "promote scheduled tasks");
}

/* The task to claim now: of the heads of the groups that may start one,
 * the highest priority, then the lowest id (the order of tasks_ready).
 * *id 0: none. */
static int pick_head(struct tq_sqlite *q, int64_t now, int64_t *id, int *attempt,
		     struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_CLAIM_HEADS, err);
	int64_t best_prio = 0;
	int rc;

	*id = 0;
	*attempt = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, now);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t hid = sqlite3_column_int64(st, 0), prio = sqlite3_column_int64(st, 1);

		if (*id == 0 || prio > best_prio || (prio == best_prio && hid < *id)) {
			*id = hid;
			best_prio = prio;
			*attempt = sqlite3_column_int(st, 2);
		}
	}
	tq_db_done(st);
	return rc == SQLITE_DONE ? 0 : tq_db_error(q, rc, err, "claim");
}

/* Task id, whose attempt so far is attempt, runs: attempt + 1 under the
 * worker's lease. */
static int take(struct tq_sqlite *q, int64_t id, int attempt, int64_t worker_id,
		int64_t lease_ms, int64_t now, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_CLAIM_TAKE, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, attempt + 1);
	sqlite3_bind_int64(st, 3, worker_id);
	sqlite3_bind_int64(st, 4, lease_ms);
	sqlite3_bind_int64(st, 5, now);
	if ((rc = tq_db_exec_st(q, st, err, "claim")) < 0)
		return rc;
	if (sqlite3_changes(q->db) != 1) /* cannot be: the head was read in
					   * this transaction */
		return tq_err_set(err, TQ_EIO, "claim: task %lld is no longer queued",
				  (long long)id);
	return 0;
}

/* The task just claimed is its group's probe, if the group is probing. */
static int probe_take(struct tq_sqlite *q, int64_t id, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_PROBE_TAKE, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	return tq_db_exec_st(q, st, err, "mark the group's probe");
}

static int add_attempt(struct tq_sqlite *q, int64_t id, int attempt, int64_t worker,
		       int64_t now, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_ATTEMPT_ADD, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, attempt);
	sqlite3_bind_int64(st, 3, worker);
	sqlite3_bind_int64(st, 4, now);
	if (worker != 0 && worker == q->worker_id)
		sqlite3_bind_text(st, 5, q->node, -1, SQLITE_STATIC);
	return tq_db_exec_st(q, st, err, "add attempt");
}

/* The claim's statements, in the caller's transaction: 0 with t filled,
 * TQ_ENOTFOUND when nothing is runnable (the promotions of due tasks
 * made), or an error, t released (the caller rolls back). */
static int claim_in(struct tq_sqlite *q, int64_t worker_id, int64_t lease_ms,
		    struct tq_task *t, int *more, struct tq_err *err)
{
	int64_t now = tq_now_ms(), id = 0;
	int attempt = 0, rc;

	memset(t, 0, sizeof(*t));
	if (more)
		*more = 0;
	if ((rc = promote_due(q, now, err)) < 0 ||
	    (rc = pick_head(q, now, &id, &attempt, err)) < 0)
		return rc;
	if (id == 0)
		return tq_err_set(err, TQ_ENOTFOUND, "no runnable task");
	if ((rc = take(q, id, attempt, worker_id, lease_ms, now, err)) < 0)
		return rc;
	attempt++;
	if ((rc = add_attempt(q, id, attempt, worker_id, now, err)) < 0 ||
	    (rc = probe_take(q, id, err)) < 0 ||
	    (more && (rc = tq_sqlite_runnable(&q->base, now, more, err)) < 0) ||
	    (rc = tq_task_load(q, id, TQ_GET_ENV, t, err)) < 0) {
		tq_task_release(t);
		return rc;
	}
	return 0;
}

int tq_sqlite_claim(struct tq_queue *base, int64_t worker_id, int64_t lease_ms,
		   struct tq_task *t, int *more, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	int rc;

	memset(t, 0, sizeof(*t));
	if (more)
		*more = 0;
	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	rc = claim_in(q, worker_id, lease_ms, t, more, err);
	if (rc == TQ_ENOTFOUND) {
		/* Nothing runnable; keep the promotions of due tasks. */
		if ((rc = tq_db_commit(q, err)) < 0)
			goto fail;
		return TQ_ENOTFOUND;
	}
	if (rc < 0)
		goto fail;
	if ((rc = tq_db_commit(q, err)) < 0) {
		tq_task_release(t);
		goto fail;
	}
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

static int min_of(struct tq_sqlite *q, enum tq_stmt slot, int64_t now, int64_t *out,
		  struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, slot, err);
	int rc;

	*out = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, now);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
		tq_db_error(q, rc, err, "read next wakeup");
}

int tq_sqlite_next_wakeup(struct tq_queue *base, int64_t *at, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	int64_t due = 0, pause = 0;
	int rc;

	*at = 0;
	if ((rc = min_of(q, ST_NEXT_DUE, 0, &due, err)) < 0 ||
	    (rc = min_of(q, ST_NEXT_PAUSE, tq_now_ms(), &pause, err)) < 0)
		return rc;
	*at = due == 0 ? pause : pause == 0 ? due : (due < pause ? due : pause);
	return 0;
}

int tq_sqlite_renew(struct tq_queue *base, int64_t id, int attempt, int64_t worker_id,
		   int64_t lease_ms, int *kill_signal, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_RENEW, err);
	int rc, sig = 0;

	if (kill_signal)
		*kill_signal = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, attempt);
	sqlite3_bind_int64(st, 3, worker_id);
	sqlite3_bind_int64(st, 4, tq_now_ms() + lease_ms);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		sig = sqlite3_column_int(st, 0);
		rc = sqlite3_step(st);
		tq_db_done(st);
		if (rc != SQLITE_DONE)
			return tq_db_error(q, rc, err, "renew lease");
		if (kill_signal)
			*kill_signal = sig;
		return 0;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "renew lease");
	return tq_err_set(err, TQ_ESTALE, "task %lld attempt %d: lease lost",
			  (long long)id, attempt);
}

int tq_sqlite_set_process(struct tq_queue *base, int64_t id, int attempt, int pid,
			 int pgid, int64_t proc_start, int64_t log_offset,
			 int64_t log_line, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_SET_PROCESS, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, attempt);
	sqlite3_bind_int(st, 3, pid);
	sqlite3_bind_int(st, 4, pgid);
	sqlite3_bind_int64(st, 5, proc_start);
	sqlite3_bind_int64(st, 6, log_offset);
	sqlite3_bind_int64(st, 7, log_line);
	if ((rc = tq_db_exec_st(q, st, err, "record process")) < 0)
		return rc;
	if (sqlite3_changes(q->db) == 0)
		return tq_err_set(err, TQ_ESTALE, "task %lld attempt %d: lease lost",
				  (long long)id, attempt);
	return 0;
}

/* ------------------------------------------------------------------ */
/* finish                                                             */

static enum tq_state final_state_of(enum tq_outcome o)
{
	switch (o) {
	case TQ_OUT_SUCCEEDED: return TQ_SUCCEEDED;
	case TQ_OUT_TIMED_OUT: return TQ_TIMED_OUT;
	case TQ_OUT_STALLED: return TQ_TIMED_OUT; /* stopped by a clock, as a timeout */
	case TQ_OUT_KILLED: return TQ_KILLED;
	case TQ_OUT_CANCELED: return TQ_CANCELED;
	default: return TQ_FAILED;
	}
}

/* Is (id, attempt[, worker]) still the running attempt? */
static int fence(struct tq_sqlite *q, const struct tq_finish *f, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_FENCE, err);
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, f->task_id);
	sqlite3_bind_int(st, 2, f->attempt);
	sqlite3_bind_int64(st, 3, f->worker_id);
	rc = sqlite3_step(st);
	tq_db_done(st);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "finish");
	return tq_err_set(err, TQ_ESTALE, "task %lld attempt %d: no longer running "
			  "under this attempt", (long long)f->task_id, f->attempt);
}

static int end_attempt(struct tq_sqlite *q, const struct tq_finish *f, int64_t now,
		       struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_ATTEMPT_END, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, f->task_id);
	sqlite3_bind_int(st, 2, f->attempt);
	sqlite3_bind_int64(st, 3, now);
	tq_bind_opt_i64(st, 4, f->exit_code, -1);
	tq_bind_opt_i64(st, 5, f->signal, 0);
	tq_bind_text(st, 6, tq_outcome_name(f->outcome));
	tq_bind_text(st, 7, f->category != TQ_CAT_NONE ? tq_category_name(f->category) : NULL);
	tq_bind_text(st, 8, f->reason);
	tq_bind_opt_i64(st, 9, f->next != TQ_NEXT_FINAL ? f->retry_at : 0, 0);
	sqlite3_bind_int(st, 10, f->next != TQ_NEXT_REQUEUE);
	if (f->pid > 0) {
		sqlite3_bind_int(st, 11, f->pid);
		sqlite3_bind_int(st, 12, f->pgid);
		sqlite3_bind_int64(st, 13, f->proc_start);
		sqlite3_bind_int64(st, 14, f->log_offset);
		sqlite3_bind_int64(st, 15, f->log_line);
	}
	if (f->output_known)
		sqlite3_bind_int64(st, 16, f->output_bytes);
	return tq_db_exec_st(q, st, err, "record attempt");
}

static int store_result(struct tq_sqlite *q, const struct tq_finish *f,
			struct tq_err *err)
{
	const struct tq_result *r = f->result;
	sqlite3_stmt *st;

	if (r == NULL || !r->has_result)
		return 0;
	st = tq_db_stmt(q, ST_ATTEMPT_RESULT, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, f->task_id);
	sqlite3_bind_int(st, 2, f->attempt);
	tq_bind_text(st, 3, r->result);
	sqlite3_bind_int(st, 4, r->is_error != 0);
	tq_bind_text(st, 5, r->subtype);
	tq_bind_text(st, 6, r->agent_session);
	if (r->cost_usd >= 0) /* < 0: the agent reported no cost (queue.h) */
		sqlite3_bind_double(st, 7, r->cost_usd);
	else
		sqlite3_bind_null(st, 7);
	if (r->duration_ms >= 0) /* < 0: the agent reported none (queue.h) */
		sqlite3_bind_int64(st, 8, r->duration_ms);
	else
		sqlite3_bind_null(st, 8);
	sqlite3_bind_int64(st, 9, r->num_turns);
	sqlite3_bind_int64(st, 10, r->input_tokens);
	sqlite3_bind_int64(st, 11, r->output_tokens);
	sqlite3_bind_int64(st, 12, r->cache_read_tokens);
	sqlite3_bind_int64(st, 13, r->cache_creation_tokens);
	tq_bind_text(st, 14, r->model);
	return tq_db_exec_st(q, st, err, "record result");
}

/*
 * A session's agent session advances on a succeeded link whose result is
 * not an error and names one (queue.h, "How a session advances"); never
 * backwards, to an older task of the key retried by hand. One statement:
 * the task's session key comes from its row, so a task without one
 * inserts nothing.
 */

static int advance_session(struct tq_sqlite *q, const struct tq_finish *f,
			   enum tq_state s, int64_t now, struct tq_err *err)
{
	const struct tq_result *r = f->result;
	sqlite3_stmt *st;

	if (s != TQ_SUCCEEDED || r == NULL || !r->has_result || r->is_error ||
	    r->agent_session == NULL || r->agent_session[0] == '\0')
		return 0;
	st = tq_db_stmt(q, ST_SESSION_ADVANCE, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, f->task_id);
	tq_bind_text(st, 2, r->agent_session);
	sqlite3_bind_int64(st, 3, now);
	return tq_db_exec_st(q, st, err, "advance session");
}

static int end_task(struct tq_sqlite *q, const struct tq_finish *f, enum tq_state state,
		    int64_t now, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_TASK_END, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, f->task_id);
	tq_bind_text(st, 2, tq_state_name(state));
	tq_bind_opt_i64(st, 3, tq_state_final(state) ? now : 0, 0);
	tq_bind_opt_i64(st, 4, f->exit_code, -1);
	tq_bind_opt_i64(st, 5, f->signal, 0);
	tq_bind_text(st, 6, tq_outcome_name(f->outcome));
	tq_bind_text(st, 7, f->category != TQ_CAT_NONE ? tq_category_name(f->category) : NULL);
	tq_bind_text(st, 8, f->reason);
	tq_bind_opt_i64(st, 9, f->next != TQ_NEXT_FINAL ? f->retry_at : 0, 0);
	/* a final end owes its hook, unless its writer runs it at once */
	sqlite3_bind_int(st, 10, tq_state_final(state) && !f->on_exit_started);
	return tq_db_exec_st(q, st, err, "record task");
}

int tq_sqlite_on_exit_due(struct tq_queue *base, int *any, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_ON_EXIT_DUE, err);
	int rc;

	*any = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*any = sqlite3_column_int(st, 0);
	tq_db_done(st);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read owed on-exit hooks");
}

int tq_sqlite_on_exit_take(struct tq_queue *base, int64_t task_id, struct tq_task *t,
			  struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	int64_t id = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	/* one statement finds and takes it: two takers never both get it */
	st = tq_db_stmt(q, ST_ON_EXIT_TAKE, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, task_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		rc = tq_db_error(q, rc, err, "take an on-exit hook");
		goto fail;
	}
	if (id == 0) {
		tq_db_rollback(q);
		return tq_err_set(err, TQ_ENOTFOUND, "no on-exit hook is owed");
	}
	if ((rc = tq_task_load(q, id, TQ_GET_ENV, t, err)) < 0 ||
	    (rc = tq_db_commit(q, err)) < 0) {
		tq_task_release(t);
		goto fail;
	}
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

static int pause_group(struct tq_sqlite *q, const struct tq_finish *f,
		       struct tq_err *err)
{
	sqlite3_stmt *st;

	if (f->pause_group == NULL || f->pause_until <= 0)
		return 0;
	st = tq_db_stmt(q, ST_GROUP_PAUSE, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, f->pause_group);
	sqlite3_bind_int64(st, 2, f->pause_until);
	tq_bind_text(st, 3, f->reason);
	return tq_db_exec_st(q, st, err, "pause group");
}

/* The end of an attempt of its group's probe (see GROUP_OPEN): release the
 * group when the attempt passed and no rate limit paused it since; else
 * let the next claim start the next probe. */
static int probe_end(struct tq_sqlite *q, const struct tq_finish *f, int64_t now,
		     struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_PROBE_END, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, f->task_id);
	sqlite3_bind_int(st, 2, f->probe_passed && f->pause_group == NULL &&
			 f->next != TQ_NEXT_REQUEUE);
	sqlite3_bind_int64(st, 3, now);
	return tq_db_exec_st(q, st, err, "end the group's probe");
}

static enum tq_state next_state(const struct tq_finish *f, int64_t now)
{
	switch (f->next) {
	case TQ_NEXT_RETRY:
		return f->retry_at > now ? TQ_SCHEDULED : TQ_QUEUED;
	case TQ_NEXT_REQUEUE:
		return f->retry_at > now ? TQ_SCHEDULED : TQ_QUEUED;
	default:
		return final_state_of(f->outcome);
	}
}

/* The end's statements, in the caller's transaction; *s: the task's new
 * state. */
static int finish_in(struct tq_sqlite *q, const struct tq_finish *f, enum tq_state *s,
		     struct tq_err *err)
{
	int64_t now = tq_now_ms();
	/* the end as it happened, not as late as it could be written */
	int64_t ended = f->ended_at > 0 && f->ended_at < now ? f->ended_at : now;
	int rc;

	*s = next_state(f, now);
	if ((rc = fence(q, f, err)) < 0 ||
	    (rc = end_attempt(q, f, ended, err)) < 0 ||
	    (rc = store_result(q, f, err)) < 0 ||
	    (rc = advance_session(q, f, *s, now, err)) < 0 ||
	    (rc = end_task(q, f, *s, ended, err)) < 0 ||
	    (rc = pause_group(q, f, err)) < 0 ||
	    (rc = probe_end(q, f, now, err)) < 0 ||
	    (tq_state_final(*s) && (rc = tq_deps_resolve(q, f->task_id, *s, now, err)) < 0))
		return rc;
	return 0;
}

int tq_sqlite_finish(struct tq_queue *base, const struct tq_finish *f,
		    enum tq_state *state, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	enum tq_state s;
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = finish_in(q, f, &s, err)) < 0 || (rc = tq_db_commit(q, err)) < 0) {
		tq_db_rollback(q);
		return rc;
	}
	if (state)
		*state = s;
	return 0;
}

/*
 * The end, then the claim, in one BEGIN IMMEDIATE (queue.h). When the claim
 * takes nothing it wrote nothing but the promotions of due tasks, which a
 * claim keeps: the end is committed with them. When it fails part-way (out
 * of memory, an I/O error) the whole transaction is undone and the end is
 * written alone, as tq_sqlite_finish; the claim's error is not the
 * caller's: the worker claims again in its loop and meets it there. (A
 * savepoint around the claim did the same for every task: each page the
 * claim changed was first copied into its journal.)
 */
int tq_sqlite_finish_claim(struct tq_queue *base, const struct tq_finish *f,
			   enum tq_state *state, int64_t lease_ms, struct tq_task *t,
			   int *claimed, int *more, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct tq_err cerr = TQ_ERR_INIT;
	enum tq_state s;
	int rc, crc;

	*claimed = 0;
	memset(t, 0, sizeof(*t));
	if (more)
		*more = 0;
	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = finish_in(q, f, &s, err)) < 0)
		goto fail;
	crc = claim_in(q, f->worker_id, lease_ms, t, more, &cerr);
	if (crc < 0 && crc != TQ_ENOTFOUND) {
		if (more)
			*more = 0;
		tq_db_rollback(q);
		return tq_sqlite_finish(base, f, state, err);
	}
	if ((rc = tq_db_commit(q, err)) < 0) {
		if (crc == 0)
			tq_task_release(t);
		goto fail;
	}
	*claimed = crc == 0;
	if (state)
		*state = s;
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

/* Read running tasks selected by st (?1 bound by the caller, ?2 = max). */
static int read_running(struct tq_sqlite *q, sqlite3_stmt *st, size_t max,
			struct tq_expired **list, size_t *n, struct tq_err *err)
{
	struct tq_expired *out = NULL;
	size_t count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	if (max == 0) {
		tq_db_done(st);
		return 0;
	}
	if ((out = calloc(max, sizeof(*out))) == NULL) {
		tq_db_done(st);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	sqlite3_bind_int64(st, 2, (int64_t)max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && count < max) {
		struct tq_expired *e = &out[count++];
		e->task_id = sqlite3_column_int64(st, 0);
		e->attempt = sqlite3_column_int(st, 1);
		e->worker_id = sqlite3_column_int64(st, 2);
		e->pid = sqlite3_column_int(st, 3);
		e->pgid = sqlite3_column_int(st, 4);
		e->proc_start = sqlite3_column_int64(st, 5);
		e->retry_lost = sqlite3_column_int(st, 6);
		e->max_retries = sqlite3_column_int64(st, 7);
		e->worker_pid = sqlite3_column_int(st, 8);
		e->worker_start = sqlite3_column_int64(st, 9);
		if (sqlite3_column_type(st, 10) == SQLITE_TEXT)
			strlcpy(e->node, (const char *)sqlite3_column_text(st, 10),
				sizeof(e->node));
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		free(out);
		return tq_db_error(q, rc, err, "read running tasks");
	}
	*list = out;
	*n = count;
	return 0;
}

int tq_sqlite_expired(struct tq_queue *base, int64_t now_ms, size_t max,
		     struct tq_expired **list, size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_EXPIRED, err);

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, now_ms);
	return read_running(q, st, max, list, n, err);
}

int tq_sqlite_running_by(struct tq_queue *base, int64_t worker_id, size_t max,
			struct tq_expired **list, size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_RUNNING_BY, err);

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, worker_id);
	return read_running(q, st, max, list, n, err);
}

/* Per group that may start a task, one probe of tasks_ready, as the claim
 * does; then the due scheduled tasks not yet promoted (a claim promotes
 * them, so there are few). Never a scan of the queue. */
int tq_sqlite_runnable(struct tq_queue *base, int64_t now, int *any, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_RUNNABLE, err);
	int rc;

	*any = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, now);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*any = sqlite3_column_int(st, 0) != 0;
	tq_db_done(st);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "look for runnable tasks");
}

/* ------------------------------------------------------------------ */
/* Dependencies                                                       */

static int cancel_task(struct tq_sqlite *q, int64_t id, const char *reason, int64_t now,
		       struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_CANCEL, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	tq_bind_text(st, 2, reason);
	sqlite3_bind_int64(st, 3, now);
	return tq_db_exec_st(q, st, err, "cancel task");
}

/*
 * Blocked task d has no dependency left that has not ended (its deps_left,
 * kept by the schema's triggers, reached 0): queue it, or schedule it when
 * its run_after is still ahead. One row written; the dependencies are never
 * counted here (they were, per finish, for every dependent: quadratic in a
 * task --after thousands of others).
 */
static int unblock(struct tq_sqlite *q, int64_t d, int64_t now, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_UNBLOCK, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, d);
	sqlite3_bind_int64(st, 2, now);
	return tq_db_exec_st(q, st, err, "unblock task");
}

struct worklist {
	int64_t *ids;
	enum tq_state *states;
	size_t n, cap;
};

static int push(struct worklist *w, int64_t id, enum tq_state s)
{
	if (w->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 16;
		int64_t *ni = reallocarray(w->ids, ncap, sizeof(*ni));
		enum tq_state *ns;
		if (ni == NULL)
			return TQ_ENOMEM;
		w->ids = ni;
		if ((ns = reallocarray(w->states, ncap, sizeof(*ns))) == NULL)
			return TQ_ENOMEM;
		w->states = ns;
		w->cap = ncap;
	}
	w->ids[w->n] = id;
	w->states[w->n] = s;
	w->n++;
	return 0;
}

/* The blocked dependents of one task that just ended in state s (or was
 * removed: as canceled), whose deps_left the triggers have already taken it
 * out of: canceled when they needed it to succeed, else queued when it was
 * the last one they waited for. */
static int resolve_one(struct tq_sqlite *q, struct worklist *w, int64_t id,
		       enum tq_state s, int64_t now, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_DEPENDENTS, err);
	struct { int64_t id; int any; int64_t left; } *ds = NULL;
	size_t n = 0, cap = 0;
	char reason[128];
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			void *nd = reallocarray(ds, ncap, sizeof(*ds));
			if (nd == NULL) {
				tq_db_done(st);
				free(ds);
				return tq_err_set(err, TQ_ENOMEM, "out of memory");
			}
			ds = nd;
			cap = ncap;
		}
		ds[n].id = sqlite3_column_int64(st, 0);
		ds[n].any = sqlite3_column_int(st, 1);
		ds[n].left = sqlite3_column_int64(st, 2);
		n++;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		free(ds);
		return tq_db_error(q, rc, err, "read dependents");
	}
	snprintf(reason, sizeof(reason), "dependency %lld ended %s", (long long)id,
		 tq_state_name(s));
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!ds[i].any && s != TQ_SUCCEEDED) {
			if ((rc = cancel_task(q, ds[i].id, reason, now, err)) == 0 &&
			    push(w, ds[i].id, TQ_CANCELED) < 0)
				rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		} else if (ds[i].left <= 0) {
			rc = unblock(q, ds[i].id, now, err);
		}
	}
	free(ds);
	return rc;
}

int tq_deps_resolve(struct tq_sqlite *q, int64_t id, enum tq_state state, int64_t now,
		    struct tq_err *err)
{
	struct worklist w = { 0 };
	int rc = 0;

	/* Cancellations cascade: a canceled dependent's own dependents are
	 * resolved in turn, iteratively (no recursion depth limit). */
	if (push(&w, id, state) < 0)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < w.n && rc == 0; i++)
		rc = resolve_one(q, &w, w.ids[i], w.states[i], now, err);
	free(w.ids);
	free(w.states);
	return rc;
}

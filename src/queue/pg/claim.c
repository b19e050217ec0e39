/*
 * claim.c - the worker side of the PostgreSQL store: claim, lease, process
 * identity, finish fenced by attempt, recovery reads, and the dependents
 * of a task that ended. The SQLite backend's claim.c with its semantics
 * (read its comments on fencing, leases, the claim order and the probe);
 * what differs is how concurrent writers are kept apart:
 *
 * - The claim takes the head of each open group FOR UPDATE SKIP LOCKED, so
 *   claimers on every node pass each other's rows instead of queueing on
 *   them (river, Oban, Solid Queue, graphile-worker claim so). The best
 *   head is taken; the others it locked are free again at its commit.
 * - A group with a parallel limit or a probe is also locked (FOR UPDATE of
 *   its groups row) and checked again after the lock, in a statement that
 *   sees every claim committed before it: two claimers never both take
 *   the last slot, or both start a probe. A group found full is left out
 *   and the claim tries the next best (a savepoint gives its task back).
 * - A finish locks its task's row in its fence, so a renewal, a recovery
 *   or a second finish of the same attempt waits and then fails its fence.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "common/sys.h"

/* How many full groups one claim leaves out before it gives up (each costs
 * a savepoint and a statement; a claim then says nothing is runnable, and
 * the worker waits for the next doorbell or finish). */
#define CLAIM_TRIES 16

/* A group may start a task now (SQLite's GROUP_OPEN, for the same probe). */
#define GROUP_OPEN(g, now)                                                   \
	g ".paused = 0 AND " g ".paused_until <= " now                        \
	" AND (" g ".probe = 0 OR " g ".probe_task IS NULL OR NOT EXISTS"     \
	" (SELECT 1 FROM tasks p WHERE p.id = " g ".probe_task"                \
	" AND p.state = 'running'))"

#define HAS_ROOM(g)                                                          \
	"(" g ".parallel = 0 OR (SELECT count(*) FROM tasks u WHERE u.state = 'running'" \
	" AND u.grp = " g ".name) < " g ".parallel)"

static int promote_due(struct tq_pg *q, int64_t now, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, now);
	/* not SKIP LOCKED: a claimer that passed a due task another is
	 * promoting would take the next one in its place (a group's probe
	 * would not be its first task); locked in id order, so promoters wait
	 * for each other without a deadlock, and find what the other promoted
	 * no longer scheduled */
	return tq_pg_exec(q, "UPDATE tasks SET state = 'queued' WHERE id IN (SELECT id FROM"
			  " tasks WHERE state = 'scheduled' AND run_after <= $1 ORDER BY id"
			  " FOR UPDATE)", &p, NULL, err, "promote scheduled tasks");
}

/* The best head of the open groups not in skip ("{a,b}"), locked: its id,
 * and whether its group has a limit or a probe to check under the group's
 * lock. *id 0: none. */
static int best_head(struct tq_pg *q, int64_t now, const char *skip, int64_t *id,
		     char *grp, size_t n, int *limited, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	*id = 0;
	tq_pg_i64(&p, now);
	tq_pg_txt(&p, skip);
	r = tq_pg_query(q, "SELECT h.id, g.name, (g.parallel != 0 OR g.probe != 0)::int"
			" FROM groups g CROSS JOIN LATERAL (SELECT r.id, r.priority FROM tasks r"
			"  WHERE r.state = 'queued' AND r.grp = g.name"
			"  ORDER BY r.priority DESC, r.id LIMIT 1 FOR UPDATE SKIP LOCKED) h"
			" WHERE " GROUP_OPEN("g", "$1") " AND NOT (g.name = ANY($2::text[]))"
			" AND " HAS_ROOM("g")
			" ORDER BY h.priority DESC, h.id LIMIT 1", &p, err, "claim");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0) {
		*id = tq_pg_get_i64(r, 0, 0, 0);
		strlcpy(grp, tq_pg_get_txt(r, 0, 1), n);
		*limited = (int)tq_pg_get_i64(r, 0, 2, 0);
	}
	tq_pg_clear(r);
	return 0;
}

/* With its group's row locked: may the group still start a task? */
static int group_still_open(struct tq_pg *q, const char *grp, int64_t now, int *open,
			    struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	*open = 0;
	tq_pg_txt(&p, grp);
	if (tq_pg_exec(q, "SELECT 1 FROM groups WHERE name = $1 FOR UPDATE", &p, NULL, err,
		       "lock group") < 0)
		return err ? err->code : TQ_EIO;
	tq_pg_i64(&p, now);
	r = tq_pg_query(q, "SELECT 1 FROM groups g WHERE g.name = $1 AND "
			GROUP_OPEN("g", "$2") " AND " HAS_ROOM("g"), &p, err, "claim");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	*open = tq_pg_rows(r) > 0;
	tq_pg_clear(r);
	return 0;
}

/* Append grp to the array literal skip ("{}" -> "{\"a\"}"), quoted. */
static int skip_add(char *skip, size_t n, const char *grp)
{
	size_t len = strlen(skip);
	char quoted[2 * TQ_NAME_MAX + 3];
	size_t k = 0;

	quoted[k++] = '"';
	for (const char *c = grp; *c && k < sizeof(quoted) - 3; c++) {
		if (*c == '"' || *c == '\\')
			quoted[k++] = '\\';
		quoted[k++] = *c;
	}
	quoted[k++] = '"';
	quoted[k] = '\0';
	if (len + k + 2 > n)
		return TQ_EINVAL;
	snprintf(skip + len - 1, n - len + 1, "%s%s}", len > 2 ? "," : "", quoted);
	return 0;
}

static int pick(struct tq_pg *q, int64_t now, int64_t *id, struct tq_err *err)
{
	char skip[CLAIM_TRIES * (2 * TQ_NAME_MAX + 4) + 4] = "{}";
	char grp[TQ_NAME_MAX + 1];
	int limited = 0, open = 0, rc;

	for (int i = 0; i < CLAIM_TRIES; i++) {
		if ((rc = tq_pg_exec(q, "SAVEPOINT head", NULL, NULL, err, "claim")) < 0 ||
		    (rc = best_head(q, now, skip, id, grp, sizeof(grp), &limited, err)) < 0)
			return rc;
		if (*id == 0 || !limited)
			return 0;
		if ((rc = group_still_open(q, grp, now, &open, err)) < 0)
			return rc;
		if (open)
			return 0;
		/* full (or probing) since the head was read: give its task
		 * back, leave the group out */
		if ((rc = tq_pg_exec(q, "ROLLBACK TO SAVEPOINT head", NULL, NULL, err,
				     "claim")) < 0 ||
		    skip_add(skip, sizeof(skip), grp) < 0)
			return rc;
		*id = 0;
	}
	return 0;
}

int tq_pg_claim(struct tq_queue *base, int64_t worker_id, int64_t lease_ms,
		struct tq_task *t, int *more, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	int64_t now = tq_now_ms(), id = 0, attempt = 0;
	PGresult *r;
	int rc;

	memset(t, 0, sizeof(*t));
	if (more)
		*more = 0;
	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	if ((rc = promote_due(q, now, err)) < 0 || (rc = pick(q, now, &id, err)) < 0)
		goto fail;
	if (id == 0) {
		if ((rc = tq_pg_commit(q, err)) < 0)
			goto fail;
		return tq_err_set(err, TQ_ENOTFOUND, "no runnable task");
	}
	tq_pg_i64(&p, id);
	tq_pg_i64(&p, worker_id);
	tq_pg_i64(&p, now);
	tq_pg_i64(&p, lease_ms);
	r = tq_pg_query(q, "UPDATE tasks SET state = 'running', attempt = attempt + 1,"
			" worker_id = $2, lease_until = $3::bigint + $4::bigint, started_at = $3,"
			" finished_at = NULL, exit_code = NULL, signal = NULL, outcome = NULL,"
			" category = NULL, reason = NULL, kill_signal = NULL,"
			" kill_requested_at = NULL WHERE id = $1 RETURNING attempt", &p, err,
			"claim");
	if (r == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	attempt = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	p.n = 0;
	tq_pg_i64(&p, id);
	tq_pg_i64(&p, attempt);
	tq_pg_i64(&p, worker_id);
	tq_pg_i64(&p, now);
	if ((rc = tq_pg_exec(q, "INSERT INTO attempts(task_id, attempt, worker_id, started_at,"
			     " node) VALUES ($1, $2, $3, $4, (SELECT host FROM workers"
			     " WHERE id = $3)) ON CONFLICT (task_id, attempt) DO UPDATE SET"
			     " worker_id = excluded.worker_id, started_at = excluded.started_at,"
			     " node = excluded.node, pid = NULL, pgid = NULL, proc_start = NULL,"
			     " ended_at = NULL, exit_code = NULL, signal = NULL, outcome = NULL,"
			     " category = NULL, reason = NULL, retry_at = NULL, counted = 1,"
			     " log_offset = NULL, log_line = NULL, result = NULL, is_error = NULL,"
			     " subtype = NULL, agent_session = NULL, cost_usd = NULL,"
			     " duration_ms = NULL, num_turns = NULL, input_tokens = NULL,"
			     " output_tokens = NULL, cache_read_tokens = NULL,"
			     " cache_creation_tokens = NULL, model = NULL", &p, NULL, err,
			     "add attempt")) < 0)
		goto fail;
	p.n = 0;
	tq_pg_i64(&p, id);
	if ((rc = tq_pg_exec(q, "UPDATE groups SET probe_task = $1 WHERE probe != 0"
			     " AND name = (SELECT grp FROM tasks WHERE id = $1)", &p, NULL, err,
			     "mark the group's probe")) < 0 ||
	    (more && (rc = tq_pg_runnable(&q->base, now, more, err)) < 0) ||
	    (rc = tq_pg_task_load(q, id, TQ_GET_ENV, t, err)) < 0 ||
	    (rc = tq_pg_commit(q, err)) < 0) {
		tq_task_release(t);
		goto fail;
	}
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

int tq_pg_next_wakeup(struct tq_queue *base, int64_t *at, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t due, pause;
	PGresult *r;

	*at = 0;
	tq_pg_i64(&p, tq_now_ms());
	r = tq_pg_query(tq_pg_of(base), "SELECT (SELECT min(run_after) FROM tasks"
			" WHERE state = 'scheduled'), (SELECT min(paused_until) FROM groups"
			" WHERE paused_until > $1)", &p, err, "read next wakeup");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	due = tq_pg_get_i64(r, 0, 0, 0);
	pause = tq_pg_get_i64(r, 0, 1, 0);
	tq_pg_clear(r);
	*at = due == 0 ? pause : pause == 0 ? due : (due < pause ? due : pause);
	return 0;
}

int tq_pg_renew(struct tq_queue *base, int64_t id, int attempt, int64_t worker_id,
		int64_t lease_ms, int *kill_signal, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rows;

	if (kill_signal)
		*kill_signal = 0;
	tq_pg_i64(&p, id);
	tq_pg_i64(&p, attempt);
	tq_pg_i64(&p, worker_id);
	tq_pg_i64(&p, tq_now_ms() + lease_ms);
	r = tq_pg_query(tq_pg_of(base), "UPDATE tasks SET lease_until = $4 WHERE id = $1"
			" AND state = 'running' AND attempt = $2 AND worker_id = $3"
			" RETURNING kill_signal", &p, err, "renew lease");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && kill_signal)
		*kill_signal = (int)tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	if (rows == 0)
		return tq_err_set(err, TQ_ESTALE, "task %lld attempt %d: lease lost",
				  (long long)id, attempt);
	return 0;
}

int tq_pg_set_process(struct tq_queue *base, int64_t id, int attempt, int pid,
		      int pgid, int64_t proc_start, int64_t log_offset, int64_t log_line,
		      struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	int rc;

	tq_pg_i64(&p, id);
	tq_pg_i64(&p, attempt);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, pgid);
	tq_pg_i64(&p, proc_start);
	tq_pg_i64(&p, log_offset);
	tq_pg_i64(&p, log_line);
	rc = tq_pg_exec(tq_pg_of(base), "UPDATE attempts SET pid = $3, pgid = $4,"
			" proc_start = $5, log_offset = $6, log_line = $7 WHERE task_id = $1"
			" AND attempt = $2 AND ended_at IS NULL AND EXISTS (SELECT 1 FROM tasks"
			" WHERE id = $1 AND state = 'running' AND attempt = $2)", &p, &changed,
			err, "record process");
	if (rc < 0)
		return rc;
	if (changed == 0)
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
	case TQ_OUT_STALLED: return TQ_TIMED_OUT;
	case TQ_OUT_KILLED: return TQ_KILLED;
	case TQ_OUT_CANCELED: return TQ_CANCELED;
	default: return TQ_FAILED;
	}
}

static enum tq_state next_state(const struct tq_finish *f, int64_t now)
{
	switch (f->next) {
	case TQ_NEXT_RETRY:
	case TQ_NEXT_REQUEUE:
		return f->retry_at > now ? TQ_SCHEDULED : TQ_QUEUED;
	default:
		return final_state_of(f->outcome);
	}
}

/* Is (id, attempt[, worker]) still the running attempt? Its row locked. */
static int fence(struct tq_pg *q, const struct tq_finish *f, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rows;

	tq_pg_i64(&p, f->task_id);
	tq_pg_i64(&p, f->attempt);
	tq_pg_i64(&p, f->worker_id);
	r = tq_pg_query(q, "SELECT 1 FROM tasks WHERE id = $1 AND state = 'running'"
			" AND attempt = $2 AND ($3 = 0 OR worker_id = $3) FOR UPDATE", &p, err,
			"finish");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	tq_pg_clear(r);
	if (rows > 0)
		return 0;
	return tq_err_set(err, TQ_ESTALE, "task %lld attempt %d: no longer running "
			  "under this attempt", (long long)f->task_id, f->attempt);
}

static int end_attempt(struct tq_pg *q, const struct tq_finish *f, int64_t ended,
		       struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, f->task_id);
	tq_pg_i64(&p, f->attempt);
	tq_pg_i64(&p, ended);
	tq_pg_opt(&p, f->exit_code, -1);
	tq_pg_opt(&p, f->signal, 0);
	tq_pg_txt(&p, tq_outcome_name(f->outcome));
	tq_pg_txt(&p, f->category != TQ_CAT_NONE ? tq_category_name(f->category) : NULL);
	tq_pg_txt(&p, f->reason);
	tq_pg_opt(&p, f->next != TQ_NEXT_FINAL ? f->retry_at : 0, 0);
	tq_pg_i64(&p, f->next != TQ_NEXT_REQUEUE);
	/* the process, when the end brings it (queue.h, tq_finish.pid) */
	tq_pg_opt(&p, f->pid > 0 ? f->pid : 0, 0);
	tq_pg_opt(&p, f->pid > 0 ? f->pgid : 0, 0);
	tq_pg_opt(&p, f->pid > 0 ? f->proc_start : -1, -1);
	tq_pg_opt(&p, f->pid > 0 ? f->log_offset : -1, -1);
	tq_pg_opt(&p, f->pid > 0 ? f->log_line : -1, -1);
	tq_pg_opt(&p, f->output_known ? f->output_bytes : -1, -1);
	return tq_pg_exec(q, "UPDATE attempts SET ended_at = $3, exit_code = $4, signal = $5,"
			  " outcome = $6, category = $7, reason = $8, retry_at = $9, counted = $10,"
			  " pid = coalesce($11, pid), pgid = coalesce($12, pgid),"
			  " proc_start = coalesce($13, proc_start),"
			  " log_offset = coalesce($14, log_offset), log_line = coalesce($15, log_line),"
			  " output_bytes = $16"
			  " WHERE task_id = $1 AND attempt = $2", &p, NULL, err, "record attempt");
}

static int store_result(struct tq_pg *q, const struct tq_finish *f, struct tq_err *err)
{
	const struct tq_result *r = f->result;
	struct tq_pg_params p = { 0 };

	if (r == NULL || !r->has_result)
		return 0;
	tq_pg_i64(&p, f->task_id);
	tq_pg_i64(&p, f->attempt);
	tq_pg_txt(&p, r->result);
	tq_pg_i64(&p, r->is_error != 0);
	tq_pg_txt(&p, r->subtype);
	tq_pg_txt(&p, r->agent_session);
	if (r->cost_usd >= 0)
		tq_pg_dbl(&p, r->cost_usd);
	else
		tq_pg_null(&p);
	if (r->duration_ms >= 0)
		tq_pg_i64(&p, r->duration_ms);
	else
		tq_pg_null(&p);
	tq_pg_i64(&p, r->num_turns);
	tq_pg_i64(&p, r->input_tokens);
	tq_pg_i64(&p, r->output_tokens);
	tq_pg_i64(&p, r->cache_read_tokens);
	tq_pg_i64(&p, r->cache_creation_tokens);
	tq_pg_txt(&p, r->model);
	return tq_pg_exec(q, "UPDATE attempts SET result = $3, is_error = $4, subtype = $5,"
			  " agent_session = $6, cost_usd = $7, duration_ms = $8, num_turns = $9,"
			  " input_tokens = $10, output_tokens = $11, cache_read_tokens = $12,"
			  " cache_creation_tokens = $13, model = $14 WHERE task_id = $1"
			  " AND attempt = $2", &p, NULL, err, "record result");
}

static int advance_session(struct tq_pg *q, const struct tq_finish *f, enum tq_state s,
			   int64_t now, struct tq_err *err)
{
	const struct tq_result *r = f->result;
	struct tq_pg_params p = { 0 };

	if (s != TQ_SUCCEEDED || r == NULL || !r->has_result || r->is_error ||
	    r->agent_session == NULL || r->agent_session[0] == '\0')
		return 0;
	tq_pg_i64(&p, f->task_id);
	tq_pg_txt(&p, r->agent_session);
	tq_pg_i64(&p, now);
	return tq_pg_exec(q, "INSERT INTO sessions(key, agent_session, last_task_id, updated_at,"
			  " cwd) SELECT session, $2, id, $3, cwd FROM tasks WHERE id = $1"
			  " AND session IS NOT NULL ON CONFLICT (key) DO UPDATE SET"
			  " agent_session = excluded.agent_session, last_task_id ="
			  " excluded.last_task_id, updated_at = excluded.updated_at"
			  " WHERE coalesce(sessions.last_task_id, 0) <= excluded.last_task_id",
			  &p, NULL, err, "advance session");
}

static int end_task(struct tq_pg *q, const struct tq_finish *f, enum tq_state state,
		    int64_t ended, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, f->task_id);
	tq_pg_txt(&p, tq_state_name(state));
	tq_pg_opt(&p, tq_state_final(state) ? ended : 0, 0);
	tq_pg_opt(&p, f->exit_code, -1);
	tq_pg_opt(&p, f->signal, 0);
	tq_pg_txt(&p, tq_outcome_name(f->outcome));
	tq_pg_txt(&p, f->category != TQ_CAT_NONE ? tq_category_name(f->category) : NULL);
	tq_pg_txt(&p, f->reason);
	tq_pg_opt(&p, f->next != TQ_NEXT_FINAL ? f->retry_at : 0, 0);
	tq_pg_i64(&p, tq_state_final(state) && !f->on_exit_started);
	return tq_pg_exec(q, "UPDATE tasks SET state = $2, finished_at = $3, exit_code = $4,"
			  " signal = $5, outcome = $6, category = $7, reason = $8,"
			  " worker_id = NULL, lease_until = NULL,"
			  " run_after = coalesce($9, run_after), kill_signal = NULL,"
			  " kill_requested_at = NULL, on_exit_due = CASE WHEN $10 != 0"
			  " AND on_exit IS NOT NULL THEN 1 ELSE 0 END WHERE id = $1", &p, NULL,
			  err, "record task");
}

static int pause_group(struct tq_pg *q, const struct tq_finish *f, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	if (f->pause_group == NULL || f->pause_until <= 0)
		return 0;
	tq_pg_txt(&p, f->pause_group);
	tq_pg_i64(&p, f->pause_until);
	tq_pg_txt(&p, f->reason);
	return tq_pg_exec(q, "INSERT INTO groups(name, paused_until, pause_reason, probe)"
			  " VALUES ($1, $2, $3, 1) ON CONFLICT (name) DO UPDATE SET"
			  " paused_until = greatest(groups.paused_until, excluded.paused_until),"
			  " pause_reason = excluded.pause_reason, probe = 1", &p, NULL, err,
			  "pause group");
}

/* *ended: a probe of the task's group ended (its next task may start). */
static int probe_end(struct tq_pg *q, const struct tq_finish *f, int64_t now,
		     int64_t *ended, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, f->task_id);
	tq_pg_i64(&p, f->probe_passed && f->pause_group == NULL && f->next != TQ_NEXT_REQUEUE);
	tq_pg_i64(&p, now);
	return tq_pg_exec(q, "UPDATE groups SET probe_task = NULL, probe = CASE WHEN $2 != 0"
			  " AND paused_until <= $3 THEN 0 ELSE probe END"
			  " WHERE name = (SELECT grp FROM tasks WHERE id = $1) AND probe_task = $1",
			  &p, ended, err, "end the group's probe");
}

int tq_pg_finish(struct tq_queue *base, const struct tq_finish *f, enum tq_state *state,
		 struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	int64_t now = tq_now_ms();
	int64_t ended = f->ended_at > 0 && f->ended_at < now ? f->ended_at : now;
	enum tq_state s = next_state(f, now);
	int64_t probed = 0;
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	/* Other nodes are woken (tq_pg_wake) for a retry or a requeue, and
	 * for a probe that ended; deps_resolve wakes them for a dependant it
	 * unblocked. A plain end wakes nobody: the worker that wrote it
	 * claims next, and a notification a finish would serialize every
	 * node's finishes on PostgreSQL's notification queue. */
	if ((rc = fence(q, f, err)) < 0 ||
	    (rc = end_attempt(q, f, ended, err)) < 0 ||
	    (rc = store_result(q, f, err)) < 0 ||
	    (rc = advance_session(q, f, s, now, err)) < 0 ||
	    (rc = end_task(q, f, s, ended, err)) < 0 ||
	    (rc = pause_group(q, f, err)) < 0 ||
	    (rc = probe_end(q, f, now, &probed, err)) < 0 ||
	    (tq_state_final(s) && (rc = tq_pg_deps_resolve(q, f->task_id, s, now, err)) < 0) ||
	    ((!tq_state_final(s) || probed > 0) && (rc = tq_pg_wake(q, err)) < 0) ||
	    (rc = tq_pg_commit(q, err)) < 0) {
		tq_pg_rollback(q);
		return rc;
	}
	if (state)
		*state = s;
	return 0;
}

int tq_pg_on_exit_due(struct tq_queue *base, int *any, struct tq_err *err)
{
	PGresult *r;

	*any = 0;
	r = tq_pg_query(tq_pg_of(base), "SELECT EXISTS (SELECT 1 FROM tasks WHERE on_exit_due"
			" != 0 AND state IN " TQ_PG_FINAL ")::int", NULL, err,
			"read owed on-exit hooks");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	*any = (int)tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

int tq_pg_on_exit_take(struct tq_queue *base, int64_t task_id, struct tq_task *t,
		       struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	int64_t id = 0;
	PGresult *r;
	int rc;

	memset(t, 0, sizeof(*t));
	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	tq_pg_i64(&p, task_id);
	/* one statement finds and takes it; a row another taker holds is
	 * skipped, and its hook is that taker's */
	r = tq_pg_query(q, "UPDATE tasks SET on_exit_due = 0 WHERE id = (SELECT id FROM tasks"
			" WHERE on_exit_due != 0 AND ($1 = 0 OR id = $1) AND state IN "
			TQ_PG_FINAL " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
			&p, err, "take an on-exit hook");
	if (r == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	if (tq_pg_rows(r) > 0)
		id = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	if (id == 0) {
		tq_pg_rollback(q);
		return tq_err_set(err, TQ_ENOTFOUND, "no on-exit hook is owed");
	}
	if ((rc = tq_pg_task_load(q, id, TQ_GET_ENV, t, err)) < 0 ||
	    (rc = tq_pg_commit(q, err)) < 0) {
		tq_task_release(t);
		goto fail;
	}
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

#define RUNNING_COLS \
	"SELECT t.id, t.attempt, t.worker_id, a.pid, a.pgid, a.proc_start," \
	" t.retry_lost, t.max_retries, w.pid, w.proc_start, coalesce(a.node, w.host)" \
	" FROM tasks t" \
	" LEFT JOIN attempts a ON a.task_id = t.id AND a.attempt = t.attempt" \
	" LEFT JOIN workers w ON w.id = t.worker_id"

static int read_running(struct tq_pg *q, const char *sql, int64_t arg, size_t max,
			struct tq_expired **list, size_t *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct tq_expired *out;
	PGresult *r;
	int rows;

	*list = NULL;
	*n = 0;
	if (max == 0)
		return 0;
	tq_pg_i64(&p, arg);
	tq_pg_i64(&p, (int64_t)max);
	if ((r = tq_pg_query(q, sql, &p, err, "read running tasks")) == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if ((out = calloc(max, sizeof(*out))) == NULL) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	for (int i = 0; i < rows && (size_t)i < max; i++) {
		struct tq_expired *e = &out[i];
		const char *node = tq_pg_get_txt(r, i, 10);

		e->task_id = tq_pg_get_i64(r, i, 0, 0);
		e->attempt = (int)tq_pg_get_i64(r, i, 1, 0);
		e->worker_id = tq_pg_get_i64(r, i, 2, 0);
		e->pid = (int)tq_pg_get_i64(r, i, 3, 0);
		e->pgid = (int)tq_pg_get_i64(r, i, 4, 0);
		e->proc_start = tq_pg_get_i64(r, i, 5, 0);
		e->retry_lost = (int)tq_pg_get_i64(r, i, 6, 0);
		e->max_retries = tq_pg_get_i64(r, i, 7, 0);
		e->worker_pid = (int)tq_pg_get_i64(r, i, 8, 0);
		e->worker_start = tq_pg_get_i64(r, i, 9, 0);
		if (node != NULL)
			strlcpy(e->node, node, sizeof(e->node));
	}
	tq_pg_clear(r);
	*list = out;
	*n = (size_t)rows < max ? (size_t)rows : max;
	return 0;
}

int tq_pg_expired(struct tq_queue *base, int64_t now_ms, size_t max,
		  struct tq_expired **list, size_t *n, struct tq_err *err)
{
	return read_running(tq_pg_of(base), RUNNING_COLS " WHERE t.state = 'running' AND"
			    " t.lease_until < $1 ORDER BY t.lease_until LIMIT $2", now_ms, max,
			    list, n, err);
}

int tq_pg_running_by(struct tq_queue *base, int64_t worker_id, size_t max,
		     struct tq_expired **list, size_t *n, struct tq_err *err)
{
	return read_running(tq_pg_of(base), RUNNING_COLS " WHERE t.state = 'running' AND"
			    " t.worker_id = $1 ORDER BY t.id LIMIT $2", worker_id, max, list, n,
			    err);
}

int tq_pg_runnable(struct tq_queue *base, int64_t now, int *any, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	*any = 0;
	tq_pg_i64(&p, now);
	/* A group's queued head is one probe of tasks_ready (LATERAL ... LIMIT
	 * 1, as best_head's): as a plain EXISTS the planner, its statistics
	 * older than the queue, made a semi-join that hashed every queued task
	 * first, at each claim -- a drain of N tasks cost N^2 (after_scale: 20,000
	 * queued took past 600 s). */
	r = tq_pg_query(tq_pg_of(base), "SELECT (EXISTS (SELECT 1 FROM groups g"
			" CROSS JOIN LATERAL (SELECT 1 FROM tasks r WHERE r.state = 'queued'"
			" AND r.grp = g.name LIMIT 1) h WHERE " GROUP_OPEN("g", "$1") ")"
			" OR EXISTS (SELECT 1 FROM tasks d JOIN groups g ON g.name = d.grp"
			" WHERE d.state = 'scheduled' AND d.run_after <= $1 AND "
			GROUP_OPEN("g", "$1") "))::int", &p, err, "read runnable");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	*any = (int)tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* dependents                                                         */

static int cancel_task(struct tq_pg *q, int64_t id, const char *reason, int64_t now,
		       struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, id);
	tq_pg_txt(&p, reason);
	tq_pg_i64(&p, now);
	return tq_pg_exec(q, "UPDATE tasks SET state = 'canceled', outcome = 'canceled',"
			  " reason = $2, finished_at = $3 WHERE id = $1 AND state IN"
			  " ('queued','scheduled','blocked')", &p, NULL, err, "cancel task");
}

struct worklist {
	int64_t *ids;
	enum tq_state *states;
	size_t n, cap;
	int64_t unblocked;       /* dependants made queued or scheduled */
};

static int unblock(struct tq_pg *q, struct worklist *w, int64_t d, int64_t now,
		   struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	int rc;

	tq_pg_i64(&p, d);
	tq_pg_i64(&p, now);
	rc = tq_pg_exec(q, "UPDATE tasks SET state = CASE WHEN run_after > $2 THEN"
			" 'scheduled' ELSE 'queued' END WHERE id = $1 AND state = 'blocked'",
			&p, &changed, err, "unblock task");
	w->unblocked += changed;
	return rc;
}

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

static int resolve_one(struct tq_pg *q, struct worklist *w, int64_t id, enum tq_state s,
		       int64_t now, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	char reason[128];
	PGresult *r;
	int rc = 0;

	tq_pg_i64(&p, id);
	/* the dependents' rows locked: a submit adding a dependency reads its
	 * dependency FOR SHARE, and a finish of another of their dependencies
	 * updates deps_left in the same order */
	r = tq_pg_query(q, "SELECT x.task_id, (x.kind = 'any')::int, t.deps_left FROM deps x"
			" JOIN tasks t ON t.id = x.task_id WHERE x.dep_id = $1"
			" AND t.state = 'blocked' ORDER BY x.task_id FOR UPDATE OF t", &p, err,
			"read dependents");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	snprintf(reason, sizeof(reason), "dependency %lld ended %s", (long long)id,
		 tq_state_name(s));
	for (int i = 0; i < tq_pg_rows(r) && rc == 0; i++) {
		int64_t d = tq_pg_get_i64(r, i, 0, 0);
		int any = (int)tq_pg_get_i64(r, i, 1, 0);
		int64_t left = tq_pg_get_i64(r, i, 2, 0);

		if (!any && s != TQ_SUCCEEDED) {
			if ((rc = cancel_task(q, d, reason, now, err)) == 0 &&
			    push(w, d, TQ_CANCELED) < 0)
				rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		} else if (left <= 0) {
			rc = unblock(q, w, d, now, err);
		}
	}
	tq_pg_clear(r);
	return rc;
}

int tq_pg_deps_resolve(struct tq_pg *q, int64_t id, enum tq_state state, int64_t now,
		       struct tq_err *err)
{
	struct worklist w = { 0 };
	int rc = 0;

	if (push(&w, id, state) < 0)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < w.n && rc == 0; i++)
		rc = resolve_one(q, &w, w.ids[i], w.states[i], now, err);
	/* a dependant that can start: the other nodes hear of it */
	if (rc == 0 && w.unblocked > 0)
		rc = tq_pg_wake(q, err);
	free(w.ids);
	free(w.states);
	return rc;
}

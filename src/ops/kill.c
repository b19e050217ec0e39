/*
 * ops/kill.c - reaching a running task through its worker (kill.h): a
 * kill request or stdin data stored, the worker poked through its
 * identity, the wait for the end.
 *
 * What it does not: signal a task's processes (the worker does, and
 * decides TERM then KILL by waitpid), print, or choose the words a front
 * end says about each outcome.
 */
#include "ops/kill.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sys.h"
#include "ops/wait.h"
#include "proc/proc.h"
#include "queue/home.h"
#include "worker/endrec.h"

int tq_ops_end_recording(const char *home, const struct tq_task *t, char *how, size_t n)
{
	struct tq_endrec rec;
	int r;

	if (t->state != TQ_RUNNING ||
	    tq_endrec_read(home, t->id, t->attempt, &rec, NULL) < 0)
		return 0;
	if (rec.f.exit_code >= 0)
		r = snprintf(how, n, "%s, exit code %d", tq_outcome_name(rec.f.outcome),
			     rec.f.exit_code);
	else if (rec.f.signal > 0)
		r = snprintf(how, n, "%s, signal %d", tq_outcome_name(rec.f.outcome),
			     rec.f.signal);
	else
		r = snprintf(how, n, "%s", tq_outcome_name(rec.f.outcome));
	if (r < 0 || (size_t)r >= n)
		snprintf(how, n, "%s", tq_outcome_name(rec.f.outcome));
	tq_endrec_release(&rec);
	return 1;
}

int tq_ops_task_worker(struct tq_queue *q, const struct tq_task *t, pid_t *pid,
		       int64_t *start, struct tq_err *err)
{
	struct tq_worker_info *ws = NULL;
	char self[TQ_NODE_MAX + 1];
	size_t n = 0;
	int found = 0, rc;

	if (t->worker_id == 0)
		return 0;
	if ((rc = tq_node_self(self, sizeof(self), err)) < 0 ||
	    (rc = tq_queue_workers(q, &ws, &n, err)) < 0)
		return rc;
	for (size_t i = 0; i < n && !found; i++) {
		if (ws[i].id != t->worker_id)
			continue;
		/* another node's pid means nothing here: its worker acts on a
		 * stored request at its renewal, and its lease says whether it
		 * lives (issue 20) */
		if (ws[i].node[0] != '\0' && strcmp(ws[i].node, self) != 0)
			found = 2;
		else if (tq_proc_alive(ws[i].pid, ws[i].proc_start)) {
			*pid = ws[i].pid;
			*start = ws[i].proc_start;
			found = 1;
		}
	}
	free(ws);
	return found;
}

int tq_ops_poke_worker(struct tq_queue *q, const struct tq_task *t)
{
	int64_t start = 0;
	pid_t pid = 0;

	if (t->state != TQ_RUNNING || tq_ops_task_worker(q, t, &pid, &start, NULL) != 1)
		return 0;
	/* through a pidfd opened for that identity: a pid reused since the
	 * read is never signalled */
	return tq_proc_signal(pid, start, SIGUSR1, NULL) == 0;
}

int tq_ops_write(struct tq_queue *q, int64_t id, const void *data, size_t len, int eof,
		 struct tq_err *err)
{
	struct tq_task t;
	int rc;

	if ((rc = tq_queue_stdin_write(q, id, data, len, eof, err)) < 0)
		return rc;
	if (tq_queue_get(q, id, 0, &t, NULL) == 0) {
		tq_ops_poke_worker(q, &t);
		tq_task_release(&t);
	}
	return 0;
}

int tq_ops_kill_request(struct tq_queue *q, const char *home, int64_t id, int sig,
			const char *cancel_reason, struct tq_ops_killed *k,
			struct tq_err *err)
{
	struct tq_task t;
	int64_t start = 0;
	pid_t pid = 0;
	int rc, live;

	if ((rc = tq_queue_get(q, id, 0, &t, err)) < 0)
		return rc;
	k->state = t.state;
	k->kill_grace_ms = t.kill_grace_ms;
	k->how[0] = '\0';
	/* Before any write: while its end waits for the store, so would a
	 * kill request, for the whole busy timeout, and then for an end that
	 * has happened already. */
	if (tq_ops_end_recording(home, &t, k->how, sizeof(k->how))) {
		rc = TQ_OPS_KILL_RECORDING;
		goto out;
	}
	if (t.state != TQ_RUNNING) {
		rc = TQ_OPS_KILL_NOT_RUNNING;
		/* Not started yet: killing it means it never runs. */
		if (cancel_reason != NULL && !tq_state_final(t.state))
			rc = tq_queue_cancel(q, id, cancel_reason, NULL, err) < 0
			     ? err->code : TQ_OPS_KILL_CANCELED;
		goto out;
	}
	/* Only the worker running the task acts on a kill request: with it
	 * dead, a wait for it would run into the deadline (20 s of nothing
	 * for a worker killed, or a zombie its stopped supervisor did not
	 * reap). A store that cannot list the workers (-1) is not a dead
	 * worker: the request is stored, and its worker acts at its renewal. */
	if ((live = tq_ops_task_worker(q, &t, &pid, &start, NULL)) == 0) {
		rc = TQ_OPS_KILL_NO_WORKER;
		goto out;
	}
	if ((rc = tq_queue_request_kill(q, id, sig, err)) < 0)
		goto out;
	if (live == 1) /* act now, not at its next renewal: a worker of this node */
		tq_proc_signal(pid, start, SIGUSR1, NULL);
	rc = TQ_OPS_KILL_REQUESTED;
out:
	tq_task_release(&t);
	return rc;
}

struct end_look {
	struct tq_queue *q;
	const char *home;
	int64_t id;
	struct tq_ops_killed *k;
	struct tq_err *err;
	int end;                 /* enum tq_ops_end once done */
};

/* ops/wait.h's look: 1 once the task no longer runs (or is gone, or its
 * end is being recorded: the store is busy, and the worker or the
 * supervisor writes the end as soon as it can; waiting on would only run
 * into the deadline). */
static int look_end(void *arg)
{
	struct end_look *l = arg;
	struct tq_task t;
	int rc = tq_queue_get(l->q, l->id, 0, &t, l->err);

	if (rc == TQ_ENOTFOUND) {
		l->end = TQ_OPS_GONE;
		return 1;
	}
	if (rc < 0)
		return rc;
	l->k->state = t.state;
	if (tq_ops_end_recording(l->home, &t, l->k->how, sizeof(l->k->how)))
		l->end = TQ_OPS_END_RECORDING;
	else if (t.state != TQ_RUNNING)
		l->end = TQ_OPS_ENDED;
	tq_task_release(&t);
	return l->end != TQ_OPS_STILL_RUNNING;
}

int tq_ops_kill_wait(struct tq_queue *q, const char *home, int64_t id, int64_t deadline_ms,
		     struct tq_ops_killed *k, struct tq_err *err)
{
	static const struct tq_ops_pace pace = TQ_OPS_PACE_FIXED(TQ_OPS_KILL_POLL_MS);
	struct end_look l = { q, home, id, k, err, TQ_OPS_STILL_RUNNING };
	int rc = tq_ops_wait(deadline_ms, &pace, look_end, &l);

	return rc < 0 ? rc : l.end;
}

/*
 * ops/remove.c - removing a task, killing it through its worker first when
 * it runs (remove.h). The row goes before the log, never the other way.
 */
#include "ops/remove.h"

#include <signal.h>
#include <string.h>

#include "common/sys.h"
#include "queue/logstore.h"

/* Kill running task id and wait until its end is recorded: TQ_OPS_REMOVED
 * once it no longer runs (it may be removed now), another enum value, or a
 * TQ_E* code. */
static int stop_running(struct tq_queue *q, const char *home, int64_t id, char *how,
			struct tq_err *err)
{
	struct tq_ops_killed k;
	int64_t deadline;
	int rc = tq_ops_kill_request(q, home, id, SIGTERM, NULL, &k, err);

	if (rc == TQ_OPS_KILL_RECORDING || rc == TQ_OPS_KILL_REQUESTED)
		memcpy(how, k.how, TQ_OPS_HOW_MAX);
	switch (rc) {
	case TQ_OPS_KILL_RECORDING: return TQ_OPS_REMOVE_RECORDING;
	case TQ_OPS_KILL_NOT_RUNNING: return TQ_OPS_REMOVED;
	case TQ_OPS_KILL_NO_WORKER: return TQ_OPS_REMOVE_NO_WORKER;
	case TQ_OPS_KILL_REQUESTED: break;
	default: /* ended between the read and the request: removable */
		return rc == TQ_ESTATE ? TQ_OPS_REMOVED : rc;
	}
	deadline = tq_mono_ms() + k.kill_grace_ms + TQ_OPS_REMOVE_WAIT_MARGIN_MS;
	rc = tq_ops_kill_wait(q, home, id, deadline, &k, err);
	memcpy(how, k.how, TQ_OPS_HOW_MAX);
	switch (rc) {
	case TQ_OPS_ENDED:
	case TQ_OPS_GONE: return TQ_OPS_REMOVED;
	case TQ_OPS_END_RECORDING: return TQ_OPS_REMOVE_RECORDING;
	case TQ_OPS_STILL_RUNNING: return TQ_OPS_REMOVE_STILL_RUNNING;
	default: return rc;
	}
}

int tq_ops_remove(struct tq_queue *q, const char *home, int64_t id, char how[TQ_OPS_HOW_MAX],
		  struct tq_err *err)
{
	struct tq_task t;
	int rc;

	how[0] = '\0';
	/* a read first: the delete is a write, which would wait out the busy
	 * timeout behind whatever keeps this task's end from being written */
	if (tq_queue_get(q, id, 0, &t, NULL) == 0) {
		rc = tq_ops_end_recording(home, &t, how, TQ_OPS_HOW_MAX);
		tq_task_release(&t);
		if (rc)
			return TQ_OPS_REMOVE_RECORDING;
	}
	for (int tries = 0; (rc = tq_queue_remove(q, id, err)) < 0; tries++) {
		if (rc == TQ_ENOTFOUND && tries > 0)
			break; /* removed by someone else meanwhile */
		if (rc != TQ_ESTATE || tries >= TQ_OPS_REMOVE_TRIES)
			return rc;
		if ((rc = stop_running(q, home, id, how, err)) != TQ_OPS_REMOVED)
			return rc;
		memset(err, 0, sizeof(*err));
	}
	if ((rc = tq_log_remove(q, id, err)) < 0)
		return TQ_OPS_REMOVE_LOG_LEFT;
	return TQ_OPS_REMOVED;
}

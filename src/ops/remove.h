/*
 * ops/remove.h - deleting a task with its attempts and its log, killing it
 * first through its worker when it runs: what `taskq remove` does, for any
 * front end.
 */
#ifndef TQ_OPS_REMOVE_H
#define TQ_OPS_REMOVE_H

#include <stdint.h>

#include "common/err.h"
#include "ops/kill.h"
#include "queue/queue.h"

/* How long a remove waits for a killed task's end beyond its kill grace. */
#define TQ_OPS_REMOVE_WAIT_MARGIN_MS 15000
/* Deletes refused because the task runs (a worker claimed it meanwhile)
 * before the refusal is the answer. */
#define TQ_OPS_REMOVE_TRIES 3

/* What tq_ops_remove did, beside a TQ_E* code. */
enum tq_ops_remove {
	TQ_OPS_REMOVED,              /* its row and its log are gone (or someone
				      * else removed it meanwhile) */
	TQ_OPS_REMOVE_RECORDING,     /* its process has ended, its end waits
				      * for the store: not removed (how) */
	TQ_OPS_REMOVE_NO_WORKER,     /* it runs, its worker is dead: not
				      * removed until it is recovered */
	TQ_OPS_REMOVE_STILL_RUNNING, /* killed, but its end was not recorded
				      * by the deadline: not removed */
	TQ_OPS_REMOVE_LOG_LEFT,      /* removed, but not its log (err says why) */
};

/*
 * Remove task id: read it first (a task whose end is being recorded is
 * refused before any write: the delete would wait out the busy timeout
 * behind what keeps that end out), then delete its row, and only then its
 * log and index (the other order would lose the log of a task whose
 * removal then failed; a log left behind is only disk space). A running
 * task is killed first (SIGTERM, ops/kill.h) and waited for until its kill
 * grace + TQ_OPS_REMOVE_WAIT_MARGIN_MS; a task a worker claims between the
 * read and the delete is killed the same way. how gets an ended attempt's
 * outcome (REMOVE_RECORDING). Returns the enum, or a TQ_E* code with err
 * set (TQ_ENOTFOUND: no such task). home: the state directory.
 */
int tq_ops_remove(struct tq_queue *q, const char *home, int64_t id, char how[TQ_OPS_HOW_MAX],
		  struct tq_err *err);

#endif

/*
 * ops/change.h - changes that make tasks runnable now: `taskq retry` (one
 * task, or every failed one), `taskq resume` (a group's pause lifted) and
 * `taskq group --parallel` (a group's limit), and `taskq pause` beside
 * them, for any front end.
 *
 * Each is the store's change and then, once it is committed, the doorbell
 * rung (ipc/doorbell.h), so that an idle worker claims what became
 * runnable at once instead of at its next timer. The ring is only latency:
 * a worker looks at the queue on its own timers anyway, so a ring that
 * cannot be made is not an error. A front end never rings itself.
 */
#ifndef TQ_OPS_CHANGE_H
#define TQ_OPS_CHANGE_H

#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

/* Queue finished task id again (tq_queue_retry); rings home's doorbell
 * when it was. Returns 0 or the store's TQ_E* code (err set). */
int tq_ops_retry(struct tq_queue *q, const char *home, int64_t id, struct tq_err *err);

/* Queue every failed or timed-out task again, of batch when not NULL
 * (tq_queue_retry_failed); *n how many. Rings when any was. */
int tq_ops_retry_failed(struct tq_queue *q, const char *home, const char *batch,
			int64_t *n, struct tq_err *err);

/* Hold group name's queued tasks (tq_queue_group_pause). Nothing becomes
 * runnable: no ring. */
int tq_ops_group_pause(struct tq_queue *q, const char *home, const char *name,
		       struct tq_err *err);

/* Lift group name's pause, a rate limit's included (tq_queue_group_resume);
 * rings: its tasks may start now. */
int tq_ops_group_resume(struct tq_queue *q, const char *home, const char *name,
			struct tq_err *err);

/* Set group name's limit of running tasks, 0 unlimited
 * (tq_queue_group_set_parallel); rings: a higher limit may let queued
 * tasks start now. */
int tq_ops_group_set_parallel(struct tq_queue *q, const char *home, const char *name,
			      int64_t parallel, struct tq_err *err);

#endif

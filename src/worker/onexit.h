/*
 * onexit.h - `submit --on-exit CMD`: run by a worker once after the task's
 * final end is recorded -- the worker that wrote it, or, for an end written
 * by recovery, the worker that takes the hook it left owed (queue.h,
 * tq_queue_on_exit_take) -- with TASKQ_ID, TASKQ_STATE, TASKQ_EXIT_CODE and
 * TASKQ_LOG in its environment, bounded by a timeout; its failure is logged
 * (the worker's log), never changes the task.
 */
#ifndef TQ_ONEXIT_H
#define TQ_ONEXIT_H

#include "worker_int.h"

/* How long a hook may run before its group gets SIGTERM (then SIGKILL 2 s
 * later); $TASKQ_ON_EXIT_TIMEOUT in the worker's environment (a duration)
 * overrides it. A shutdown shortens it to the shutdown grace. */
#define TQ_ON_EXIT_TIMEOUT_MS 60000
#define TQ_ON_EXIT_TIMEOUT_VAR "TASKQ_ON_EXIT_TIMEOUT"

/*
 * Run t->on_exit (if set) for task t which ended in state with exit_code
 * (-1: none), after its end was recorded: /bin/sh -c CMD in the task's cwd
 * (/ if it is gone) with the task's environment plus TASKQ_ID,
 * TASKQ_STATE (the state name), TASKQ_EXIT_CODE (empty when the task has
 * none: a signal, a spawn failure) and TASKQ_LOG (HOME/logs/ID.log), in its
 * own session and process group, stdin on /dev/null, its first lines of
 * output copied to the worker's log. Returns when the hook has exited or
 * was killed at its timeout, with every process it started reaped. Never
 * fails: what goes wrong is logged, and the task is not touched.
 * Precondition: the worker has no other child (the task is swept).
 */
void tq_on_exit_run(struct worker *w, const struct tq_task *t, enum tq_state state,
		    int exit_code);

#endif

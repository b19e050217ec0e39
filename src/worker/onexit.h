/*
 * onexit.h - `submit --on-exit CMD`: run by the worker after the task is
 * recorded, with TASKQ_ID, TASKQ_STATE, TASKQ_EXIT_CODE and TASKQ_LOG in
 * its environment, bounded by a timeout; its failure is logged (the
 * worker's log), never changes the task.
 */
#ifndef TQ_ONEXIT_H
#define TQ_ONEXIT_H

#include "worker_int.h"

/* Run t->on_exit (if set) for task t which ended in state with exit_code
 * (-1: none). Returns when the hook has exited or was killed at its
 * timeout, with every process it started reaped. */
void tq_on_exit_run(struct worker *w, const struct tq_task *t, enum tq_state state,
		    int exit_code);

#endif

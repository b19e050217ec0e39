/*
 * ops/kill.h - reaching a task through the worker that runs it: what
 * `taskq kill`, `taskq remove` (of a running task) and `taskq write` do,
 * for any front end.
 *
 * A front end never signals a task itself: the worker running it owns the
 * process and knows when it really exited. A kill is stored first
 * (tq_queue_request_kill), so it survives anything; then the worker is
 * poked with SIGUSR1 to act at once rather than at its next lease renewal.
 * The worker's pid is read back from the store, so it is signalled only
 * through its identity (pid and start time, proc/proc.h tq_proc_signal): a
 * pid reused by another process is never signalled.
 */
#ifndef TQ_OPS_KILL_H
#define TQ_OPS_KILL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "queue/queue.h"

/* Room for an ended attempt's "failed, exit code 3" (tq_ops_end_recording). */
#define TQ_OPS_HOW_MAX 96

/*
 * 1 when running task t has ended but its end is kept in an end record
 * until the store takes it (worker/endrec.h: a locked database, a full
 * disk), with how filled ("OUTCOME", "OUTCOME, exit code N", "OUTCOME,
 * signal N"); else 0 (t not running, or no record).
 */
int tq_ops_end_recording(const char *home, const struct tq_task *t, char *how, size_t n);

/*
 * The worker running task t, if it lives (checked by pid and start time; a
 * zombie is dead): 1 with *pid and *start, 0 when it is dead or t has none,
 * 2 when it is another node's (its pid names nothing here: never signalled,
 * taken as alive; its lease expiring says otherwise), TQ_E* when the store
 * could not say (err set).
 */
int tq_ops_task_worker(struct tq_queue *q, const struct tq_task *t, pid_t *pid,
		       int64_t *start, struct tq_err *err);

/*
 * Poke the worker of running task t (SIGUSR1, through its identity) so it
 * acts on what was just stored (a kill, stdin data) now. Returns 1 if
 * poked, 0 if there was no live worker to poke (t not running, its worker
 * dead or reused, the store silent): what was stored waits for its next
 * renewal, or for recovery.
 */
int tq_ops_poke_worker(struct tq_queue *q, const struct tq_task *t);

/*
 * Store len bytes of data for task id's standard input (with eof, then its
 * end), to be delivered by its worker (nothing is lost if the task has not
 * started yet), then poke its worker when it runs so it delivers them now:
 * what `taskq write` does. Returns 0, or a TQ_E* code with err set
 * (TQ_ESTATE: its stdin is not a pipe, it has finished, or its input was
 * ended already).
 */
int tq_ops_write(struct tq_queue *q, int64_t id, const void *data, size_t len, int eof,
		 struct tq_err *err);

/* What tq_ops_kill_request found. */
enum tq_ops_kill {
	TQ_OPS_KILL_REQUESTED,   /* the kill is stored and the worker poked */
	TQ_OPS_KILL_NOT_RUNNING, /* the task is not running: nothing done */
	TQ_OPS_KILL_CANCELED,    /* it had not started: canceled (never runs) */
	TQ_OPS_KILL_RECORDING,   /* it has ended, its end being recorded: how */
	TQ_OPS_KILL_NO_WORKER,   /* it runs, but its worker is dead: recovered
				  * when its lease expires; nothing stored */
};

/* A kill's task as it was read, and how it ended. */
struct tq_ops_killed {
	enum tq_state state;          /* its state when last read */
	int64_t kill_grace_ms;        /* its --kill-grace: a wait's deadline */
	char how[TQ_OPS_HOW_MAX];     /* TQ_OPS_KILL_RECORDING, TQ_OPS_END_RECORDING */
};

/*
 * Ask for task id to be killed with sig: read it; a task whose end is being
 * recorded is left alone (before any write: a write would wait out the busy
 * timeout behind what keeps that end out); a task not running is canceled
 * when cancel_reason is not NULL and it has not ended (TQ_OPS_KILL_CANCELED),
 * else left alone (NOT_RUNNING); a running task whose worker is dead is left
 * alone (NO_WORKER: waiting for a worker that cannot act would only run
 * into the deadline); otherwise the kill is stored and the worker poked
 * (REQUESTED). k is filled in every case. Returns the enum, or a TQ_E*
 * code with err set (TQ_ENOTFOUND: no such task; TQ_ESTATE: it ended
 * between the read and the request). home: the state directory, where
 * the end records are (the caller's: the store does not name it).
 */
int tq_ops_kill_request(struct tq_queue *q, const char *home, int64_t id, int sig,
			const char *cancel_reason, struct tq_ops_killed *k,
			struct tq_err *err);

/* How a killed task's wait ended (tq_ops_kill_wait). */
enum tq_ops_end {
	TQ_OPS_ENDED,            /* no longer running: k->state */
	TQ_OPS_END_RECORDING,    /* its process has ended, its end waits for
				  * the store: k->how */
	TQ_OPS_GONE,             /* the task was removed meanwhile */
	TQ_OPS_STILL_RUNNING,    /* deadline_ms passed first */
};

/*
 * Wait until task id no longer runs, looking every TQ_OPS_KILL_POLL_MS until
 * deadline_ms (tq_mono_ms clock; ops/wait.h). Returns the enum, or a TQ_E*
 * code with err set when the store fails. home as for tq_ops_kill_request.
 */
#define TQ_OPS_KILL_POLL_MS 20
int tq_ops_kill_wait(struct tq_queue *q, const char *home, int64_t id, int64_t deadline_ms,
		     struct tq_ops_killed *k, struct tq_err *err);

#endif

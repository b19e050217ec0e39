/*
 * worker.h - a worker process: claims tasks one at a time from the store and
 * runs each as the parent of its process group (runner.c), until told to
 * stop. Workers are started by the supervisor (supervisor.c) as separate
 * executions of the taskq binary (`taskq worker`), so each opens its own
 * database connection in a clean process.
 *
 * Signals: SIGTERM / SIGINT stop claiming; a running task gets the shutdown
 * grace to finish, then is stopped (TERM, then KILL after its kill grace)
 * and requeued without spending an attempt. The value sent with sigqueue(3),
 * when there is one, overrides the grace in ms (taskq shutdown --now sends
 * 0). SIGUSR1 means "look at the store now" (a kill request or stdin data).
 */
#ifndef TQ_WORKER_H
#define TQ_WORKER_H

#include <stdint.h>

#define TQ_DEFAULT_LEASE_MS 10000
#define TQ_DEFAULT_SHUTDOWN_GRACE_MS 30000

struct tq_worker_opts {
	const char *home;       /* state directory */
	int slot;               /* 1..N, for titles and logs */
	int64_t lease_ms;       /* renewed every lease_ms / 3 */
	int64_t grace_ms;       /* shutdown grace for a running task */
	int supervisor_pid;
};

/* Run the worker until stopped. Returns the process's exit status: 0, or
 * 128 + N after signal N asked it to stop, 1 on a fatal error. */
int tq_worker_main(const struct tq_worker_opts *o);

#endif

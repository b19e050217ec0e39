/*
 * ops/shutdown.h - stopping the supervisor of a state directory: what
 * `taskq shutdown` does, for any front end.
 */
#ifndef TQ_OPS_SHUTDOWN_H
#define TQ_OPS_SHUTDOWN_H

#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

/* How often a shutdown looks whether the supervisor has gone. */
#define TQ_OPS_SHUTDOWN_POLL_MS 20

/*
 * Ask the supervisor running for home to stop: SIGTERM, carrying grace_ms
 * (sigqueue's value: how long running tasks may go on) when grace_ms >= 0,
 * else a plain SIGTERM (its --grace or the default). Returns 1 with *pid
 * when it was asked, 0 when no supervisor runs there, or TQ_E* with err set
 * (the signal refused).
 */
int tq_ops_shutdown(const char *home, int64_t grace_ms, pid_t *pid, struct tq_err *err);

/* Wait until no supervisor holds home's lock, or deadline_ms (tq_mono_ms
 * clock) passes: 1 when it has stopped, 0 at the deadline. */
int tq_ops_shutdown_wait(const char *home, int64_t deadline_ms);

#endif

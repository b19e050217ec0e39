/*
 * ops/shutdown.c - asking a supervisor to stop and waiting for it to go
 * (shutdown.h). The supervisor is found by its lock and pid file
 * (worker/supervisor.h); it stops its workers and their tasks itself.
 */
#include "ops/shutdown.h"

#include <errno.h>
#include <signal.h>

#include "ops/wait.h"
#include "worker/supervisor.h"

int tq_ops_shutdown(const char *home, int64_t grace_ms, pid_t *pid, struct tq_err *err)
{
	int rc;

	if (!tq_supervisor_running(home, pid) || *pid <= 1)
		return 0;
	if (grace_ms >= 0) {
		union sigval v = { .sival_int = (int)grace_ms };
		rc = sigqueue(*pid, SIGTERM, v);
	} else {
		rc = kill(*pid, SIGTERM);
	}
	if (rc < 0)
		return tq_err_sys(err, "signal supervisor pid %d", (int)*pid);
	return 1;
}

static int look_stopped(void *arg)
{
	return !tq_supervisor_running(arg, NULL);
}

int tq_ops_shutdown_wait(const char *home, int64_t deadline_ms)
{
	static const struct tq_ops_pace pace = TQ_OPS_PACE_FIXED(TQ_OPS_SHUTDOWN_POLL_MS);

	return tq_ops_wait(deadline_ms, &pace, look_stopped, (void *)home);
}

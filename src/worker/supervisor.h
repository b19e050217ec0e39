/*
 * supervisor.h - `taskq serve` and `taskq drain`: one supervisor per state
 * directory (an exclusive lock on HOME/serve.pid, libbsd pidfile), which
 * starts N workers, restarts any that die (with backoff), recovers tasks
 * whose worker died or whose lease expired, adopts the live workers a
 * previous supervisor left, and on SIGTERM/SIGINT stops them gracefully.
 *
 * The supervisor never runs a task itself and holds no task state in
 * memory: everything is in the store, so it can be killed and restarted at
 * any moment without losing a task.
 */
#ifndef TQ_SUPERVISOR_H
#define TQ_SUPERVISOR_H

#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define TQ_DEFAULT_WORKERS 2
#define TQ_MAX_WORKERS 256
/* Live warm agent processes (issue 19: ask --warm), --max-warm and the
 * config's "max_warm": past it the least recently used idle one is ended. */
#define TQ_DEFAULT_MAX_WARM 4
#define TQ_MAX_WARM 256

struct tq_serve_opts {
	const char *home;        /* state directory (absolute) */
	const char *exe;         /* this binary, to start workers from */
	int workers;             /* how many to keep running */
	int foreground;          /* else daemonize, log to HOME/serve.log */
	int drain;               /* exit once nothing is left to run */
	int64_t grace_ms;        /* shutdown grace for running tasks */
	int64_t lease_ms;        /* workers' lease length */
	/* Retention: finished tasks (and their logs) older than this are
	 * removed at start and every minute; 0 keeps them forever. -1: the
	 * setting a previous supervisor stored (meta TQ_META_RETENTION), else
	 * TQ_DEFAULT_RETENTION_MS. A value >= 0 is stored for the next ones
	 * (an autostarted supervisor keeps what the user set) and for
	 * `taskq status`. */
	int64_t retention_ms;
	/* The background supervisor's HOME/serve.log: rotated at log_size
	 * bytes, keeping serve.log.1..log_files. 0: the setting a previous
	 * supervisor stored, else the default (diag.h); a value > 0 is
	 * stored for the next ones. */
	int64_t log_size;
	int log_files;
	/* Warm agent processes (ask --warm) kept up at most, 1 to
	 * TQ_MAX_WARM: --max-warm, else the config's "max_warm", else
	 * TQ_DEFAULT_MAX_WARM. */
	int max_warm;
};

/*
 * Run the supervisor. In the foreground returns the exit status when it
 * stops (0; 143 / 130 after SIGTERM / SIGINT; for drain 0 if every task it
 * ran succeeded, else 1). When daemonizing, the calling process exits 0
 * (_exit) once the daemon is up, and the daemon returns when it stops. A supervisor already
 * running for home is reported on stderr and is not an error (0). Startup
 * failures return 1 with a message on stderr.
 */
int tq_supervisor_main(const struct tq_serve_opts *o);

/* How often a supervisor says in the store that it runs (its node's row,
 * queue.h tq_queue_supervisor_beat), and after how long without a word
 * `taskq status` on another node calls it not heard from: three beats. */
#define TQ_SUPERVISOR_BEAT_MS 10000
#define TQ_SUPERVISOR_SILENT_MS (3 * TQ_SUPERVISOR_BEAT_MS)

/* The meta key where a supervisor says how its workers contain the
 * processes of each attempt: "cgroup v2 (DIR)" or "process-tree record
 * (WHY)" (contain.h); `taskq status` shows it. */
#define TQ_META_CONTAINMENT "supervisor_containment"

/* The meta key where a supervisor says its --max-warm (decimal), for
 * `taskq status`. */
#define TQ_META_MAX_WARM "supervisor_max_warm"

/* The meta keys of serve.log's bounds a supervisor stored (--log-size,
 * --log-files: decimal), for the next supervisors and `taskq status`. */
#define TQ_META_LOG_SIZE "serve_log_size"
#define TQ_META_LOG_FILES "serve_log_files"

/* Whether a supervisor holds home's lock; *pid (may be NULL) gets its pid
 * from the pid file when it does. Never takes the lock. */
int tq_supervisor_running(const char *home, pid_t *pid);

/* (A submit starts a supervisor with ops/submit.h, tq_ops_autostart.) */

/* The path of the running binary (readlink /proc/self/exe). */
int tq_self_exe(char *buf, size_t n, struct tq_err *err);

#endif

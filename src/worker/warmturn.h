/*
 * warmturn.h - a warm message's turn: the worker's side (issue 19). The
 * runner (runner.c) borrows the session's agent process from the
 * supervisor (warm.h) over HOME/warm.sock, writes the message line, reads
 * the turn into the task's log until its result line, and gives the
 * process back; or asks for its end and learns its wait status.
 *
 * The descriptors received (its stdin, stdout, stderr and a pidfd) are the
 * caller's, O_CLOEXEC; the supervisor keeps its own copies, so closing
 * ours never ends the process. The socket stays open for the turn: it is
 * the lease on the process (a worker that dies mid-turn closes it, and the
 * supervisor ends the process).
 */
#ifndef TQ_WARMTURN_H
#define TQ_WARMTURN_H

#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "ipc/warmsock.h"

/* Waiting for the supervisor's GIVE (it starts the process first when none
 * is up: an exec, not the CLI's own start). */
#define TQ_WARM_TAKE_MS 30000

struct tq_warm_turn {
	int sock;                  /* to the supervisor; -1: none */
	pid_t pid;                 /* the agent process (not our child) */
	int64_t start;             /* its start time */
	int fresh;                 /* started for this turn */
	int in_fd, out_fd, err_fd, pidfd;
	int end_asked;             /* END sent: STATUS awaited on sock */
	char state[TQ_WARM_STATE_MAX]; /* what the last turn on it left ("": a
				    * process started for this turn) */
};

#define TQ_WARM_TURN_INIT { .sock = -1, .pid = -1, .in_fd = -1, .out_fd = -1, \
	.err_fd = -1, .pidfd = -1 }

/* What a TAKE asks for: the session and the message, and what to start
 * when the session has no process up. */
struct tq_warm_take {
	const char *home;
	const char *key;           /* the session key */
	int64_t task;
	int attempt;
	char *const *argv;         /* the stream-input command (stream.c) */
	char *const *envp;         /* its whole environment */
	const char *cwd;
	int umask;                 /* -1: the supervisor's */
	int64_t idle_ms;           /* the session's idle timeout, 0: default */
	uint64_t fp[TQ_WARM_FP_N]; /* the command's fingerprint (warmsock.h) */
};

/*
 * Borrow the session's process: 0 with t filled; TQ_EBUSY when the
 * session's process is in another turn or ending (give the attempt back
 * and try again later); TQ_ENOTFOUND when no supervisor listens; another
 * code with err saying why it could not be started (a spawn error: the
 * attempt's reason). On failure t holds nothing.
 */
int tq_warm_turn_take(struct tq_warm_turn *t, const struct tq_warm_take *k,
		      struct tq_err *err);

/* The turn ended and the process lives: give it back, with the state the
 * turn leaves it in (state: at most TQ_WARM_STATE_MAX - 1 bytes, NULL
 * ""), and close ours. 0, or TQ_EIO when the supervisor is gone (then the
 * process was ended here: nobody would hold its stdin). */
int tq_warm_turn_done(struct tq_warm_turn *t, const char *state);

/* Ask the supervisor to end the process (TERM to its group, KILL after
 * grace_ms; -1: its default); the STATUS arrives on t->sock. When the
 * supervisor is gone, the process is ended here (TQ_EIO). */
int tq_warm_turn_end(struct tq_warm_turn *t, int64_t grace_ms);

/* After tq_warm_turn_end, when t->sock is readable: 0 with *status (its wait
 * status), TQ_EBUSY when not yet, TQ_EIO when the supervisor went (the
 * process was ended here; *status says SIGKILL). */
int tq_warm_turn_status(struct tq_warm_turn *t, int *status);

/* Close what t holds (not the process). */
void tq_warm_turn_release(struct tq_warm_turn *t);

#endif

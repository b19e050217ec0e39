/*
 * warm.h - warm agent processes (issue 19): the supervisor's side. A warm
 * session's agent CLI runs in its stream-input mode (agent/registry.h,
 * struct tq_agent_stream) as a child of the supervisor, which holds its
 * pipes between messages and lends them to the worker that runs a message's
 * turn, over HOME/warm.sock (ipc/warmsock.h). The worker's side of a turn
 * is warmturn.h.
 *
 * Why the supervisor, and not a worker slot or a holder process per
 * session: a message occupies a worker only while its turn runs (a worker
 * runs one task and sweeps every child it has after it, so a process that
 * must outlive the task cannot be its child); the supervisor already is
 * the long-lived parent, subreaper and signal loop of the node, so a warm
 * process costs one table entry and its descriptors, not one more process
 * per session. What that gives up: a supervisor that dies takes the
 * processes' stdin with it (only it holds the write end between turns), so
 * idle warm processes end (EOF: the CLI exits 0) rather than being adopted;
 * the next supervisor kills what is left of them, never by a bare pid: by
 * the identity its session's row records (pid, start time, node: queue.h,
 * tq_queue_warm_list) and by their mark (TQ_WARM_MARK, for one started but
 * not recorded yet), and each session's next message starts a new process that
 * resumes the conversation (--resume): one cold start per session after a
 * supervisor crash. A turn in flight at the crash goes on in its worker,
 * which ends the process itself when it cannot give it back.
 *
 * Lifecycle of one process (struct warm_proc in warm.c):
 *   (none) --TAKE, start--> LENT --DONE--> IDLE --TAKE--> LENT ...
 *   LENT --END, or its connection closed--> ENDING --reaped--> (none)
 *   IDLE --idle timeout, max-warm LRU, close request, stop, a TAKE whose
 *          command differs (its fingerprint, warmsock.h)--> ENDING
 *   any --reaped (it died)--> (none)
 * ENDING: stdin closed (the CLI's clean exit), SIGTERM to its group, then
 * SIGKILL to the group after the grace (proc/term.h), decided by waitpid.
 *
 * Single-threaded, driven by the supervisor's loop: it polls the fds
 * tq_warm_poll gives, calls tq_warm_serve after each wait, tq_warm_reaped
 * for each child reaped, tq_warm_tick each turn, and waits no later than
 * tq_warm_deadline. Nothing here prints: lines go through the log callback.
 */
#ifndef TQ_WARM_H
#define TQ_WARM_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "ipc/warmsock.h"
#include "proc/proc.h"

#define TQ_WARM_PROCS_MAX 256            /* warm processes held at once */
#define TQ_WARM_CONN_MAX 64              /* turns being lent at once */
#define TQ_WARM_POLL_MAX (1 + TQ_WARM_CONN_MAX)
#define TQ_WARM_DEFAULT_MAX 4            /* --max-warm's default */
#define TQ_WARM_IDLE_DEFAULT_MS (10 * 60 * 1000) /* a session's idle timeout */
#define TQ_WARM_GRACE_MS 5000            /* ending one: TERM to KILL */
/* The mark every warm process (and what it starts) carries with the
 * home's (TQ_TASK_HOME_VAR, proc.h) in place of a task's id: recovery of
 * the message that started it never kills it, and a supervisor finds what
 * a dead one left by it. */
#define TQ_WARM_MARK TQ_TASK_MARK_VAR "=warm"

struct tq_queue;
struct tq_warm;

/* Start listening on HOME/warm.sock. node: ours (tq_node_self), recorded
 * with each process in its session's row (queue.h). max_warm: live
 * processes kept at most (past it the least recently used idle one is
 * ended; < 1: the default). log: where lines go (the supervisor's log). */
int tq_warm_open(struct tq_warm **wp, const char *home, const char *node,
		 struct tq_queue *q, int max_warm, void (*log)(const char *fmt, ...),
		 struct tq_err *err);

/* End every process at once (TERM, no grace), close, unlink the socket. */
void tq_warm_close(struct tq_warm *w);

/* The fds to poll (at most TQ_WARM_POLL_MAX) into p; their count. */
size_t tq_warm_poll(struct tq_warm *w, struct pollfd *p);

/* After a wait: accept, read and answer what the fds of p (as
 * tq_warm_poll filled them, n of them) have. */
void tq_warm_serve(struct tq_warm *w, const struct pollfd *p, size_t n);

/* pid was reaped with status: 1 if it was a warm process (its end is
 * acted on: a worker waiting for it answered), else 0. */
int tq_warm_reaped(struct tq_warm *w, pid_t pid, int status);

/*
 * What the store says (the supervisor's tick, and at its start): each
 * session's close request (`taskq sessions close`: an idle process ended
 * now, a lent one when its turn gives it back), and processes recorded on
 * this node that are not ours (a dead supervisor's: ended if still the
 * process the row names, by pid and start time, and their rows cleared).
 */
void tq_warm_store_tick(struct tq_warm *w);

/* Timers: idle timeouts, the TERM-to-KILL graces. */
void tq_warm_tick(struct tq_warm *w, int64_t now);

/* The next timer (mono ms), or INT64_MAX. */
int64_t tq_warm_deadline(const struct tq_warm *w);

/* The live warm processes' pids into pids (TQ_WARM_PROCS_MAX room): a
 * sweep of the supervisor's children must spare them. Their count. */
size_t tq_warm_pids(const struct tq_warm *w, pid_t *pids);

/* 1 if pid is one of the warm processes (not reaped yet), else 0. A dead
 * worker's turn is recovered without signalling its process: the turn's
 * connection closed, and this module ends the process and says why. */
int tq_warm_holds(const struct tq_warm *w, pid_t pid);

/* A stop (shutdown, shutdown --now: grace_ms 0; -1 the default): every
 * idle process is ended now, as a group; a lent one once its turn gives it
 * back (its worker, stopping too, interrupts the turn) or its connection
 * closes. No process is started from here on. */
void tq_warm_stop(struct tq_warm *w, int64_t grace_ms);

/* Processes not reaped yet (the supervisor exits when none is left). */
int tq_warm_left(const struct tq_warm *w);

/* At the supervisor's start: kill what a dead supervisor of this home
 * left (processes carrying TQ_WARM_MARK and the home's mark). *killed. */
int tq_warm_sweep_leftovers(const char *home, size_t *killed, struct tq_err *err);

#endif

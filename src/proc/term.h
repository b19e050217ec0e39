/*
 * term.h - stopping a task: TERM to its process group, then KILL once a
 * grace period has passed and it has not exited, as a state machine its
 * owner's event loop drives. Used for a task (runner.c) and an on-exit
 * hook (onexit.c).
 *
 * Nothing here waits: tq_term_step sends what is due and says when the next
 * step is due (an absolute CLOCK_MONOTONIC deadline); the caller's loop
 * owns time. Not async-signal-safe (it formats error messages).
 */
#ifndef TQ_TERM_H
#define TQ_TERM_H

#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

/*
 * Stopping a task: sig (SIGTERM unless the caller sets another) to its
 * group, then SIGKILL to the group if the task has not exited by the end of
 * the grace period. "Exited" is only ever learnt from waitpid: the caller
 * feeds TQ_TERM_EXITED when it reaps the task's main process.
 *
 *   state \ event   TICK (now >= deadline)    STOP              EXITED
 *   RUNNING         timed_out, as STOP         sig to group,     DONE
 *                   (only with a timeout)      -> STOPPING
 *   STOPPING        SIGKILL to group,          -                 DONE
 *                   -> KILLING
 *   KILLING         -                          -                 DONE
 *   DONE            -                          -                 -
 *
 * STOP with sig == SIGKILL goes straight to KILLING. A TICK before the
 * deadline does nothing. deadline is absolute CLOCK_MONOTONIC milliseconds
 * (tq_mono_ms), TQ_TERM_NEVER when nothing is due; tq_term_poll_timeout
 * turns it into a poll(2) timeout. After DONE the caller sweeps
 * (tq_proc_sweep) what remains of the task.
 */
enum tq_term_state {
	TQ_TERM_RUNNING = 0,
	TQ_TERM_STOPPING,
	TQ_TERM_KILLING,
	TQ_TERM_DONE,
};

enum tq_term_event {
	TQ_TERM_TICK = 0,  /* time has passed; acts only at the deadline */
	TQ_TERM_STOP,      /* timeout, `taskq kill`, shutdown: stop the task */
	TQ_TERM_EXITED,    /* waitpid returned the task's main process */
};

#define TQ_TERM_NEVER INT64_MAX

struct tq_term {
	pid_t pgid;              /* the task's group (== its pid) */
	int sig;                 /* first signal, SIGTERM by default */
	int64_t grace_ms;        /* from sig to SIGKILL */
	enum tq_term_state state;
	int64_t deadline;        /* next TICK that acts, or TQ_TERM_NEVER */
	unsigned timed_out : 1;  /* the stop came from the timeout */
	unsigned killed : 1;     /* SIGKILL was sent */
};

/*
 * Start tracking a task in group pgid at monotonic time now: RUNNING, with
 * its timeout (ms, 0 for none) as the first deadline. Never fails.
 */
void tq_term_init(struct tq_term *t, pid_t pgid, int64_t now,
	int64_t timeout_ms, int64_t grace_ms);

/*
 * Feed one event at monotonic time now (the table above); sends the signals
 * itself. Returns 0, or a TQ_E* code with err set when a signal could not be
 * sent (the state has still moved, so the caller can carry on).
 */
int tq_term_step(struct tq_term *t, enum tq_term_event ev, int64_t now,
	struct tq_err *err);

/*
 * Bring a RUNNING t's deadline forward to at when at is sooner, as if its
 * timeout ended then: the TICK at at stops it as a timeout would
 * (timed_out). An on-exit hook's time is cut so when a shutdown's grace
 * ends first. Does nothing in any other state, or when at is later.
 */
void tq_term_due(struct tq_term *t, int64_t at);

/* Milliseconds from now to t's deadline, for poll(2): 0 if due, -1 if never,
 * capped at INT_MAX. */
int tq_term_poll_timeout(const struct tq_term *t, int64_t now);

#endif

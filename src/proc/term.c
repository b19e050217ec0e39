/*
 * term.c - TERM -> grace -> KILL of a task's process group (see term.h for
 * the contract and the table of states and events).
 *
 * Invariant: a signal goes to the group only through tq_proc_kill_group,
 * whose caller vouches for the group (its leader is our child, not reaped:
 * only EXITED, fed after waitpid, ends the machine, and nothing is sent
 * after it).
 */
#include "term.h"

#include <limits.h>
#include <signal.h>
#include <string.h>

#include "proc.h"

void tq_term_init(struct tq_term *t, pid_t pgid, int64_t now,
	int64_t timeout_ms, int64_t grace_ms)
{
	memset(t, 0, sizeof(*t));
	t->pgid = pgid;
	t->sig = SIGTERM;
	t->grace_ms = grace_ms;
	t->state = TQ_TERM_RUNNING;
	t->deadline = timeout_ms > 0 ? now + timeout_ms : TQ_TERM_NEVER;
}

static int term_kill(struct tq_term *t, struct tq_err *err)
{
	t->state = TQ_TERM_KILLING;
	t->deadline = TQ_TERM_NEVER;
	t->killed = 1;
	return tq_proc_kill_group(t->pgid, SIGKILL, err);
}

static int term_stop(struct tq_term *t, int64_t now, struct tq_err *err)
{
	if (t->sig == SIGKILL)
		return term_kill(t, err);
	t->state = TQ_TERM_STOPPING;
	t->deadline = now + t->grace_ms;
	return tq_proc_kill_group(t->pgid, t->sig, err);
}

int tq_term_step(struct tq_term *t, enum tq_term_event ev, int64_t now,
	struct tq_err *err)
{
	if (t->state == TQ_TERM_DONE)
		return 0;
	if (ev == TQ_TERM_EXITED) {
		t->state = TQ_TERM_DONE;
		t->deadline = TQ_TERM_NEVER;
		return 0;
	}
	if (ev == TQ_TERM_STOP)
		return t->state == TQ_TERM_RUNNING ? term_stop(t, now, err) : 0;
	if (now < t->deadline)
		return 0;
	if (t->state == TQ_TERM_RUNNING) {
		t->timed_out = 1;
		return term_stop(t, now, err);
	}
	if (t->state == TQ_TERM_STOPPING)
		return term_kill(t, err);
	return 0;
}

void tq_term_due(struct tq_term *t, int64_t at)
{
	if (t->state == TQ_TERM_RUNNING && at < t->deadline)
		t->deadline = at;
}

int tq_term_poll_timeout(const struct tq_term *t, int64_t now)
{
	if (t->deadline == TQ_TERM_NEVER)
		return -1;
	if (t->deadline <= now)
		return 0;
	if (t->deadline - now > INT_MAX)
		return INT_MAX;
	return (int)(t->deadline - now);
}

/*
 * ops/wait.h - the one way taskq's front ends wait on the store: look,
 * pause, look again, until the look says done or an absolute deadline
 * passes.
 *
 * Every loop that polls the store (kill and remove waiting for a task's
 * end, `taskq wait`, shutdown waiting for the supervisor to go, the pacing
 * between an import's chunks) calls this with its own look, its own pauses
 * and its own deadline. The deadline is an absolute CLOCK_MONOTONIC time in
 * tq_mono_ms's milliseconds (STYLE.md 7): a pause never runs past it, so a
 * wait ends at its deadline, not up to a pause later.
 */
#ifndef TQ_OPS_WAIT_H
#define TQ_OPS_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

/* A deadline that never comes. */
#define TQ_OPS_NO_DEADLINE INT64_MAX

/*
 * The pauses between two looks. The first pause is 2 x first_ms capped at
 * max_ms, each next one twice the last, capped (first_ms == max_ms: a fixed
 * pause). Once the wait has lasted slow_after_ms (0: never), the cap is
 * slow_max_ms instead: a wait of hours looks less often.
 */
struct tq_ops_pace {
	int64_t first_ms;
	int64_t max_ms;
	int64_t slow_after_ms;
	int64_t slow_max_ms;
};

/* A fixed pause of ms between looks. */
#define TQ_OPS_PACE_FIXED(ms) { (ms), (ms), 0, 0 }

/* One look at what is waited for: 1 done, 0 not yet, < 0 a TQ_E* code
 * (the wait stops and returns it). */
typedef int (*tq_ops_look_fn)(void *arg);

/*
 * Look at once, then after each pause, until look says done (returns 1),
 * or deadline_ms (tq_mono_ms clock) has passed with the last look, taken at
 * the deadline, saying not yet (returns 0), or look fails (returns its
 * code). Sleeps on the monotonic clock, resuming after signals.
 */
int tq_ops_wait(int64_t deadline_ms, const struct tq_ops_pace *pace, tq_ops_look_fn look,
		void *arg);

/*
 * Pause for ms, never past deadline_ms (TQ_OPS_NO_DEADLINE: none): what a
 * pacing loop (an import between two chunks) does. 1 when the deadline has
 * passed, else 0.
 */
int tq_ops_pause(int64_t deadline_ms, int64_t ms);

/*
 * Waiting for tasks or a batch to end (`taskq wait`). A look reads the
 * store: the first task still open (or the batch's open count, through its
 * index), every 20 ms at first, doubling to TQ_OPS_ENDED_POLL_MAX_MS, and
 * to TQ_OPS_ENDED_POLL_SLOW_MS once the wait has lasted
 * TQ_OPS_ENDED_SLOW_AFTER_MS. A read costs well under a millisecond (a few
 * for a batch of many thousands), so waiting costs next to nothing and
 * needs no supervisor, no lock and no file of its own. A task has ended in
 * a final state (tq_state_final); one waiting for a retry has not, and a
 * task of a batch retried by hand while we wait is open again.
 */
#define TQ_OPS_ENDED_POLL_MIN_MS 10
#define TQ_OPS_ENDED_POLL_MAX_MS 100
#define TQ_OPS_ENDED_POLL_SLOW_MS 500
#define TQ_OPS_ENDED_SLOW_AFTER_MS 60000

/* Tasks waited for: ids[i]'s last read in tasks[i] (each read once by the
 * caller first), gone[i] set when it was removed meanwhile. */
struct tq_ops_tasks {
	const int64_t *ids;
	struct tq_task *tasks;
	int *gone;
	size_t n;
};

/*
 * Read again the first of w's tasks still open; while it has ended, go on
 * to the next. Every task must end before the wait does, so a look reads
 * one task, not all of them: waiting on a thousand ids costs what waiting
 * on one does. A task read as ended is not read again. 1 when all have
 * ended (or are gone), 0 when not, or a TQ_E* code with err set.
 */
int tq_ops_tasks_ended(struct tq_queue *q, struct tq_ops_tasks *w, struct tq_err *err);

/*
 * Whether batch has ended: its open count, and once it is 0 its counts
 * into *b (replacing what *b held). 1 when ended (every task of it
 * removed meanwhile: *b released, total 0), 0 when not, or a TQ_E* code
 * with err set.
 */
int tq_ops_batch_ended(struct tq_queue *q, const char *batch, struct tq_batch *b,
		       struct tq_err *err);

/*
 * Wait for w's tasks (batch NULL) or for batch (its counts into *b) to end,
 * or deadline_ms (TQ_OPS_NO_DEADLINE: none), looking as said above. 1 when
 * ended, 0 at the deadline, or a TQ_E* code with err set.
 */
int tq_ops_wait_ended(struct tq_queue *q, struct tq_ops_tasks *w, const char *batch,
		      struct tq_batch *b, int64_t deadline_ms, struct tq_err *err);

#endif

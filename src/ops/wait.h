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

#include <stdint.h>

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

#endif

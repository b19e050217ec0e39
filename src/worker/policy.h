/*
 * policy.h - what happens after an attempt that did not succeed: retry it
 * later, or let the task end; and whether its group must pause.
 *
 * Retried: a transient category (rate_limit, overload, network, and exit 75
 * EX_TEMPFAIL) of a failed or stalled attempt, and `lost` with --retry-lost, while the attempts that count
 * (not those interrupted by a shutdown) stay within 1 + --retries. Never
 * retried: success, auth and unknown failures, timeouts, kills, output
 * overflow, spawn failures.
 *
 * The wait is exponential backoff with jitter: base * 2^(n-1) for the n-th
 * retry, capped at backoff_max, then "equal jitter" (a uniform draw from
 * [d/2, d]) so a batch that failed together does not retry together. A
 * retry time the provider gave is honoured: the task never retries before
 * it. A rate limit pauses the task's whole group until the retry time, so
 * the group's other queued tasks do not hit the same wall.
 *
 * When that pause lifts, one task of the group runs first (a half-open
 * probe, src/queue/sqlite/claim.c) and the rest wait until its attempt has ended.
 * The group is released when the attempt shows the limit has lifted
 * (tq_policy_probe_passed); it is paused again when the attempt hit the
 * limit again; any other end tells nothing about the limit, and the next
 * task becomes the probe.
 */
#ifndef TQ_POLICY_H
#define TQ_POLICY_H

#include <stdint.h>

#include "queue/queue.h"

struct tq_policy_input {
	enum tq_outcome outcome;
	enum tq_category category;
	int transient;             /* from the classifier */
	int64_t provider_retry_at; /* ms since the epoch; 0: none given */
	int counted;               /* attempts that count, this one included */
	int64_t max_retries;
	int retry_lost;
	int64_t backoff_ms;
	int64_t backoff_max_ms;
	int64_t now_ms;
};

struct tq_policy_decision {
	enum tq_next next;         /* FINAL or RETRY */
	int64_t retry_at;          /* RETRY: when */
	int pause_group;           /* 1: pause the task's group until retry_at */
};

/* The backoff before the n-th retry (n >= 1), before jitter: base * 2^(n-1),
 * capped at max. */
int64_t tq_policy_backoff(int64_t base_ms, int64_t max_ms, int n);

/*
 * 1 when an attempt that ended so shows its group's rate limit has lifted:
 * the provider answered and did not refuse with a rate limit. That is a
 * success, or a failure of any category but rate_limit (an overload or a
 * bad request is an answer; each such task backs off on its own). Not: a
 * rate limit, and the ends that say nothing about the provider: timed out,
 * stalled, killed, lost, interrupted, output overflow, spawn failure,
 * death by a signal taskq did not send.
 */
int tq_policy_probe_passed(enum tq_outcome outcome, enum tq_category category);

/* Decide. rnd is a uniform random 32-bit value (arc4random in the worker;
 * fixed in tests). */
void tq_policy_decide(const struct tq_policy_input *in, uint32_t rnd,
		      struct tq_policy_decision *out);

#endif

/*
 * policy.c - retry or end, and how long to wait (see policy.h). Pure
 * functions: no clock, no randomness of their own, so tests can pin both.
 */
#include "policy.h"

int64_t tq_policy_backoff(int64_t base_ms, int64_t max_ms, int n)
{
	int64_t d = base_ms > 0 ? base_ms : 0;

	for (int i = 1; i < n && d < max_ms; i++)
		d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
	return d < max_ms ? d : max_ms;
}

static int retryable(const struct tq_policy_input *in)
{
	switch (in->outcome) {
	case TQ_OUT_LOST:
		return in->retry_lost;
	case TQ_OUT_FAILED:
	case TQ_OUT_STALLED: /* classified network (or what its output shows) */
		return in->transient;
	default:
		/* succeeded; timed_out, killed, output_overflow, spawn_failed and
		 * death by signal are the runner's verdicts, decided first */
		return 0;
	}
}

int tq_policy_probe_passed(enum tq_outcome outcome, enum tq_category category)
{
	if (outcome == TQ_OUT_SUCCEEDED)
		return 1;
	return outcome == TQ_OUT_FAILED && category != TQ_CAT_RATE_LIMIT;
}

void tq_policy_decide(const struct tq_policy_input *in, uint32_t rnd,
		      struct tq_policy_decision *out)
{
	int64_t d, jittered;

	out->next = TQ_NEXT_FINAL;
	out->retry_at = 0;
	out->pause_group = 0;
	if (!retryable(in) || in->counted > in->max_retries)
		return;
	d = tq_policy_backoff(in->backoff_ms, in->backoff_max_ms, in->counted);
	/* equal jitter: d/2 + uniform[0, d/2] */
	/* in double: rnd * d would overflow 64 bits for a very long backoff */
	jittered = d / 2 + (int64_t)((double)rnd / UINT32_MAX * (double)(d - d / 2));
	out->next = TQ_NEXT_RETRY;
	out->retry_at = in->now_ms + jittered;
	if (in->provider_retry_at > out->retry_at)
		out->retry_at = in->provider_retry_at;
	out->pause_group = in->category == TQ_CAT_RATE_LIMIT;
}

/*
 * test_policy.c - the retry policy: what is retried, how many times, the
 * backoff and its jitter bounds, provider retry times, group pauses.
 */
#include "harness.h"

#include <stdint.h>

#include "worker/policy.h"

static struct tq_policy_input base(enum tq_outcome o, enum tq_category c, int transient,
				   int counted)
{
	struct tq_policy_input in = { .outcome = o, .category = c, .transient = transient,
		.counted = counted, .max_retries = 3, .backoff_ms = 30000,
		.backoff_max_ms = 1800000, .now_ms = 1000000 };
	return in;
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(tq_policy_backoff(30000, 1800000, 1), 30000);
	assert_int_equal(tq_policy_backoff(30000, 1800000, 2), 60000);
	assert_int_equal(tq_policy_backoff(30000, 1800000, 3), 120000);
	assert_int_equal(tq_policy_backoff(30000, 1800000, 7), 1800000); /* capped */
	assert_int_equal(tq_policy_backoff(30000, 1800000, 1000), 1800000);
	assert_int_equal(tq_policy_backoff(INT64_MAX / 2, INT64_MAX, 100), INT64_MAX);
}

static void test_transient_retried_until_budget(void **state)
{
	struct tq_policy_decision d;
	struct tq_policy_input in;

	(void)state;
	for (int n = 1; n <= 3; n++) {
		in = base(TQ_OUT_FAILED, TQ_CAT_OVERLOAD, 1, n);
		tq_policy_decide(&in, 0, &d);
		assert_int_equal(d.next, TQ_NEXT_RETRY);
		assert_int_equal(d.pause_group, 0);
	}
	in = base(TQ_OUT_FAILED, TQ_CAT_OVERLOAD, 1, 4);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
	in = base(TQ_OUT_FAILED, TQ_CAT_NETWORK, 1, 1);
	in.max_retries = 0;
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
}

static void test_not_retried(void **state)
{
	static const enum tq_outcome verdicts[] = {
		TQ_OUT_SUCCEEDED, TQ_OUT_TIMED_OUT, TQ_OUT_KILLED, TQ_OUT_OUTPUT_OVERFLOW,
		TQ_OUT_SPAWN_FAILED, TQ_OUT_SIGNALED, TQ_OUT_CANCELED,
	};
	struct tq_policy_decision d;
	struct tq_policy_input in;

	(void)state;
	in = base(TQ_OUT_FAILED, TQ_CAT_AUTH, 0, 1);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
	in = base(TQ_OUT_FAILED, TQ_CAT_UNKNOWN, 0, 1);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
	for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		in = base(verdicts[i], TQ_CAT_RATE_LIMIT, 1, 1);
		tq_policy_decide(&in, 0, &d);
		assert_int_equal(d.next, TQ_NEXT_FINAL);
	}
	in = base(TQ_OUT_LOST, TQ_CAT_NONE, 0, 1);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
	in.retry_lost = 1;
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_RETRY);
}

static void test_jitter_bounds(void **state)
{
	struct tq_policy_decision d;
	struct tq_policy_input in;

	(void)state;
	for (int n = 1; n <= 3; n++) {
		int64_t full = tq_policy_backoff(30000, 1800000, n);
		in = base(TQ_OUT_FAILED, TQ_CAT_NETWORK, 1, n);
		tq_policy_decide(&in, 0, &d);
		assert_int_equal(d.retry_at, in.now_ms + full / 2);
		tq_policy_decide(&in, UINT32_MAX, &d);
		assert_int_equal(d.retry_at, in.now_ms + full);
		tq_policy_decide(&in, UINT32_MAX / 2, &d);
		assert_true(d.retry_at > in.now_ms + full / 2);
		assert_true(d.retry_at < in.now_ms + full);
	}
}

static void test_rate_limit_provider_time_and_pause(void **state)
{
	struct tq_policy_decision d;
	struct tq_policy_input in = base(TQ_OUT_FAILED, TQ_CAT_RATE_LIMIT, 1, 1);

	(void)state;
	in.provider_retry_at = in.now_ms + 3600000; /* "resets in an hour" */
	tq_policy_decide(&in, UINT32_MAX, &d);
	assert_int_equal(d.next, TQ_NEXT_RETRY);
	assert_int_equal(d.retry_at, in.provider_retry_at);
	assert_int_equal(d.pause_group, 1);
	/* an earlier provider time never makes the retry earlier than backoff */
	in.provider_retry_at = in.now_ms + 1000;
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.retry_at, in.now_ms + 15000);
}

/* A stalled attempt is retried as its category says (network from the
 * classifier, or a rate limit its output showed, which pauses the group),
 * within the same budget as a failed one. */
static void test_stalled(void **state)
{
	struct tq_policy_decision d;
	struct tq_policy_input in;

	(void)state;
	in = base(TQ_OUT_STALLED, TQ_CAT_NETWORK, 1, 1);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_RETRY);
	assert_int_equal(d.retry_at, in.now_ms + 15000);
	assert_int_equal(d.pause_group, 0);
	in = base(TQ_OUT_STALLED, TQ_CAT_RATE_LIMIT, 1, 2);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_RETRY);
	assert_int_equal(d.pause_group, 1);
	in = base(TQ_OUT_STALLED, TQ_CAT_NETWORK, 1, 4);
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
	in = base(TQ_OUT_STALLED, TQ_CAT_NETWORK, 1, 1);
	in.max_retries = 0;
	tq_policy_decide(&in, 0, &d);
	assert_int_equal(d.next, TQ_NEXT_FINAL);
}

/* What releases a group held by its probe: an answer without a rate limit. */
static void test_probe_passed(void **state)
{
	(void)state;
	assert_true(tq_policy_probe_passed(TQ_OUT_SUCCEEDED, TQ_CAT_NONE));
	assert_true(tq_policy_probe_passed(TQ_OUT_FAILED, TQ_CAT_OVERLOAD));
	assert_true(tq_policy_probe_passed(TQ_OUT_FAILED, TQ_CAT_AUTH));
	assert_true(tq_policy_probe_passed(TQ_OUT_FAILED, TQ_CAT_UNKNOWN));
	assert_true(tq_policy_probe_passed(TQ_OUT_FAILED, TQ_CAT_NETWORK));
	assert_false(tq_policy_probe_passed(TQ_OUT_FAILED, TQ_CAT_RATE_LIMIT));
	assert_false(tq_policy_probe_passed(TQ_OUT_STALLED, TQ_CAT_NETWORK));
	assert_false(tq_policy_probe_passed(TQ_OUT_STALLED, TQ_CAT_RATE_LIMIT));
	assert_false(tq_policy_probe_passed(TQ_OUT_TIMED_OUT, TQ_CAT_UNKNOWN));
	assert_false(tq_policy_probe_passed(TQ_OUT_KILLED, TQ_CAT_UNKNOWN));
	assert_false(tq_policy_probe_passed(TQ_OUT_LOST, TQ_CAT_UNKNOWN));
	assert_false(tq_policy_probe_passed(TQ_OUT_SIGNALED, TQ_CAT_UNKNOWN));
	assert_false(tq_policy_probe_passed(TQ_OUT_SPAWN_FAILED, TQ_CAT_UNKNOWN));
	assert_false(tq_policy_probe_passed(TQ_OUT_OUTPUT_OVERFLOW, TQ_CAT_UNKNOWN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_transient_retried_until_budget),
		cmocka_unit_test(test_not_retried),
		cmocka_unit_test(test_jitter_bounds),
		cmocka_unit_test(test_rate_limit_provider_time_and_pause),
		cmocka_unit_test(test_stalled),
		cmocka_unit_test(test_probe_passed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_env.c - the task environment: scrubbing (defaults and
 * $TASKQ_SCRUB_ENV), --env/--unset semantics, secret-looking names, and
 * that a failed change leaves the environment as it was.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"

static void test_default_scrub_list(void **state)
{
	static const char *const scrubbed[] = {
		"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID",
		"CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SSE_PORT",
		"CLAUDE_CODE_EXECPATH", "AI_AGENT", "CLAUDE_EFFORT",
		"CLAUDE_CODE_RETRY_WATCHDOG",
	};
	/* the user's own settings pass through */
	static const char *const kept[] = {
		"CLAUDE_CODE_MAX_RETRIES", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
		"claudecode", "CLAUDECODE_", "AI_AGENTS", "PATH", "HOME", "",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(scrubbed) / sizeof(scrubbed[0]); i++)
		assert_true(tq_env_is_scrubbed(scrubbed[i], NULL));
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		assert_false(tq_env_is_scrubbed(kept[i], NULL));
}

static void test_extra_scrub_list(void **state)
{
	static const struct { const char *name, *extra; int want; } cases[] = {
		{ "FOO", "FOO", 1 },
		{ "FOO", "BAR,FOO", 1 },
		{ "FOO", " BAR , FOO ", 1 },
		{ "FOO", ",,FOO,,", 1 },
		{ "FOO", "FOOBAR", 0 },
		{ "FOO", "FO", 0 },
		{ "FOO", "foo", 0 },
		{ "FOO", "", 0 },
		{ "FOO", ",", 0 },
		{ "", ",", 0 },
		{ "", "", 0 },
		{ "CLAUDECODE", "OTHER", 1 }, /* the defaults stay */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = tq_env_is_scrubbed(cases[i].name, cases[i].extra);
		if (got != cases[i].want)
			fail_msg("is_scrubbed(\"%s\", \"%s\") = %d, want %d",
				 cases[i].name, cases[i].extra, got, cases[i].want);
	}
}

static void test_looks_secret(void **state)
{
	static const struct { const char *name; int want; } cases[] = {
		{ "ANTHROPIC_API_KEY", 1 }, { "GITHUB_TOKEN", 1 },
		{ "client_secret", 1 }, { "DB_PASSWORD", 1 }, { "Password", 1 },
		{ "apikey", 1 }, { "FOO_TOKEN=abc", 1 }, { "MONKEY", 1 },
		{ "PATH", 0 }, { "HOME", 0 }, { "KE", 0 }, { "", 0 },
		{ "PASS", 0 }, { "TOK=TOKEN", 0 }, /* only the name counts */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = tq_env_looks_secret(cases[i].name);
		if (got != cases[i].want)
			fail_msg("looks_secret(\"%s\") = %d, want %d",
				 cases[i].name, got, cases[i].want);
	}
}

static void test_build_scrubs_and_keeps_order(void **state)
{
	char *src[] = {
		"PATH=/bin", "CLAUDECODE=1", "FOO=bar", "AI_AGENT=x", "NOEQUALS",
		"EXTRA=1", "=odd", "EMPTY=", "FOO=second", "BIN=\xff\xfe", NULL,
	};
	static const char *const want[] = {
		"PATH=/bin", "FOO=bar", "=odd", "EMPTY=", "FOO=second", "BIN=\xff\xfe",
	};
	struct tq_env e = TQ_ENV_INIT;
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	assert_int_equal(tq_env_build(&e, src, "EXTRA", &err), 0);
	assert_int_equal(e.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < e.n; i++)
		assert_string_equal(e.vars[i], want[i]);
	assert_null(e.vars[e.n]);
	assert_string_equal(tq_env_get(&e, "FOO"), "bar"); /* getenv's answer */
	assert_string_equal(tq_env_get(&e, "EMPTY"), "");
	assert_null(tq_env_get(&e, "CLAUDECODE"));
	assert_null(tq_env_get(&e, "FO"));
	assert_null(tq_env_get(&e, ""));
	assert_int_equal(tq_env_bytes(&e), 10 + 8 + 5 + 7 + 11 + 7);
	tq_env_release(&e);
	assert_null(e.vars);
	assert_int_equal(e.n, 0);
	tq_env_release(&e); /* twice is fine */
	tq_env_release(NULL);
}

static void test_build_empty(void **state)
{
	char *src[] = { NULL };
	struct tq_env e = TQ_ENV_INIT;

	(void)state;
	assert_int_equal(tq_env_build(&e, src, NULL, NULL), 0);
	assert_int_equal(e.n, 0);
	assert_non_null(e.vars); /* an empty environ for execve, not NULL */
	assert_null(e.vars[0]);
	tq_env_release(&e);
	assert_int_equal(tq_env_build(&e, NULL, NULL, NULL), 0);
	assert_int_equal(e.n, 0);
	tq_env_release(&e);
}

static void test_set_and_unset(void **state)
{
	char *src[] = { "A=1", "B=2", "A=3", "C=4", NULL };
	struct tq_env e = TQ_ENV_INIT;
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	assert_int_equal(tq_env_build(&e, src, NULL, &err), 0);
	/* set replaces the first A in place and drops the duplicate */
	assert_int_equal(tq_env_set(&e, "A=new=value", &err), 0);
	assert_int_equal(e.n, 3);
	assert_string_equal(e.vars[0], "A=new=value");
	assert_string_equal(e.vars[1], "B=2");
	assert_string_equal(e.vars[2], "C=4");
	assert_string_equal(tq_env_get(&e, "A"), "new=value");
	/* set appends a new name, including an empty value */
	assert_int_equal(tq_env_set(&e, "D=", &err), 0);
	assert_string_equal(e.vars[3], "D=");
	/* bad syntax is refused and changes nothing */
	assert_int_equal(tq_env_set(&e, "NOEQ", &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "expected NAME=VALUE"));
	assert_int_equal(tq_env_set(&e, "=v", &err), TQ_EINVAL);
	assert_int_equal(e.n, 4);
	/* unset removes every entry of that name and nothing else */
	assert_int_equal(tq_env_unset(&e, "B"), 1);
	assert_int_equal(tq_env_unset(&e, "B"), 0);
	assert_int_equal(tq_env_unset(&e, ""), 0);
	assert_int_equal(tq_env_unset(&e, "C="), 0);
	assert_int_equal(e.n, 3);
	assert_null(e.vars[3]);
	tq_env_release(&e);
}

static void test_set_on_empty_and_many(void **state)
{
	struct tq_env e = TQ_ENV_INIT;
	char kv[32];

	(void)state;
	/* an env that was never built grows from nothing (--clean-env) */
	for (int i = 0; i < 1000; i++) {
		snprintf(kv, sizeof(kv), "V%d=%d", i, i);
		assert_int_equal(tq_env_set(&e, kv, NULL), 0);
	}
	assert_int_equal(e.n, 1000);
	assert_string_equal(tq_env_get(&e, "V999"), "999");
	assert_null(e.vars[1000]);
	for (int i = 0; i < 1000; i += 2) {
		snprintf(kv, sizeof(kv), "V%d", i);
		assert_int_equal(tq_env_unset(&e, kv), 1);
	}
	assert_int_equal(e.n, 500);
	assert_string_equal(e.vars[0], "V1=1");
	tq_env_release(&e);
}

static void test_name_len(void **state)
{
	(void)state;
	assert_int_equal(tq_env_name_len("A=1"), 1);
	assert_int_equal(tq_env_name_len("A"), 1);
	assert_int_equal(tq_env_name_len("=x"), 0);
	assert_int_equal(tq_env_name_len("LONG_NAME=a=b"), 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_scrub_list),
		cmocka_unit_test(test_extra_scrub_list),
		cmocka_unit_test(test_looks_secret),
		cmocka_unit_test(test_build_scrubs_and_keeps_order),
		cmocka_unit_test(test_build_empty),
		cmocka_unit_test(test_set_and_unset),
		cmocka_unit_test(test_set_on_empty_and_many),
		cmocka_unit_test(test_name_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

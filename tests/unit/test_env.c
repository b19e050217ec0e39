/*
 * test_env.c - the task environment: scrubbing (defaults and
 * $TASKQ_SCRUB_ENV), --env/--unset semantics, secret-looking names, and
 * that a failed change leaves the environment as it was.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/env.h"
#include "agent/scrub.h"

static void test_default_scrub_list(void **state)
{
	static const char *const scrubbed[] = {
		"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID",
		"CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SSE_PORT",
		"CLAUDE_CODE_EXECPATH", "AI_AGENT", "CLAUDE_EFFORT",
		"CLAUDE_CODE_RETRY_WATCHDOG",
		/* issue 17.8: the other CLIs' markers */
		"GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH", "OPENCODE", "OPENCODE_PID", "AGENT",
		"OPENCODE_TERMINAL", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
		"CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_CI", "CODEX_MANAGED_BY_NPM",
	};
	/* the user's own settings pass through */
	static const char *const kept[] = {
		"CLAUDE_CODE_MAX_RETRIES", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
		"claudecode", "CLAUDECODE_", "AI_AGENTS", "PATH", "HOME", "",
		"GEMINI_API_KEY", "GEMINI_CLI_TRUST_WORKSPACE", "CODEX_HOME", "OPENAI_API_KEY",
		"OPENCODE_CONFIG", "AGENTS", "AGENT_", "GIT_CONFIG_GLOBAL", "GIT_EDITOR",
		"npm_config_user_agent", /* only with their agent's marker: below */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(scrubbed) / sizeof(scrubbed[0]); i++)
		assert_true(tq_scrub_has(scrubbed[i], NULL));
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		assert_false(tq_scrub_has(kept[i], NULL));
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
		int got = tq_scrub_has(cases[i].name, cases[i].extra);
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
	assert_int_equal(tq_scrub_env(&e, src, "EXTRA", &err), 0);
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
	assert_int_equal(tq_scrub_env(&e, src, NULL, NULL), 0);
	assert_int_equal(e.n, 0);
	assert_non_null(e.vars); /* an empty environ for execve, not NULL */
	assert_null(e.vars[0]);
	tq_env_release(&e);
	assert_int_equal(tq_scrub_env(&e, NULL, NULL, NULL), 0);
	assert_int_equal(e.n, 0);
	tq_env_release(&e);
}

static void test_set_and_unset(void **state)
{
	char *src[] = { "A=1", "B=2", "A=3", "C=4", NULL };
	struct tq_env e = TQ_ENV_INIT;
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	assert_int_equal(tq_scrub_env(&e, src, NULL, &err), 0);
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

/* Build the environment of a file of "K=V" lines (a fixture). */
static void build_from_file(const char *name, struct tq_env *e)
{
	const char *dir = getenv("TASKQ_FIXTURES");
	char path[4096], *line = NULL, **src = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	FILE *f;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/agent-outputs/%s", dir, name);
	assert_non_null(f = fopen(path, "re"));
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		assert_non_null(src = realloc(src, (n + 2) * sizeof(*src)));
		assert_non_null(src[n++] = strdup(line));
		src[n] = NULL;
	}
	fclose(f);
	free(line);
	assert_int_equal(tq_scrub_env(e, src, NULL, NULL), 0);
	for (size_t i = 0; i < n; i++)
		free(src[i]);
	free(src);
}

/*
 * Issue 17.8: the environment each real CLI gave its shell tool's child
 * (recorded: claude 2.1.197, gemini 0.61.0, codex 0.169.0, opencode
 * 1.18.33) loses every marker, and what the agent set for git, while the
 * user's own variables stay.
 */
static void test_real_cli_children(void **state)
{
	static const struct { const char *file, *kept; } fx[] = {
		{ "claude-2.1-tool-child.env", "ANTHROPIC_BASE_URL" },
		{ "gemini-0.61-tool-child.env", "GOOGLE_GEMINI_BASE_URL" },
		{ "codex-0.169-tool-child.env", "OPENAI_API_KEY" },
		{ "opencode-1.18-tool-child.env", "OPENCODE_DISABLE_MODELS_FETCH" },
	};
	static const char *const gone[] = {
		"CLAUDECODE=", "CLAUDE_CODE_SESSION_ID=", "CLAUDE_CODE_ENTRYPOINT=", "AI_AGENT=",
		"CLAUDE_EFFORT=", "CLAUDE_CODE_CHILD_SESSION=", "CLAUDE_CODE_EXECPATH=",
		"GIT_EDITOR=", "GEMINI_CLI=", "GEMINI_CLI_NO_RELAUNCH=", "GIT_CONFIG_",
		"GIT_TERMINAL_PROMPT=", "CODEX_THREAD_ID=", "CODEX_SESSION_ID=", "CODEX_CI=",
		"CODEX_TOOL_CALL_ID=", "CODEX_MANAGED_", "CODEX_VERSION=", "OPENCODE=",
		"OPENCODE_PID=", "AGENT=", "npm_config_user_agent=",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
		struct tq_env e = TQ_ENV_INIT;

		build_from_file(fx[i].file, &e);
		for (size_t k = 0; k < e.n; k++)
			for (size_t g = 0; g < sizeof(gone) / sizeof(gone[0]); g++)
				if (strncmp(e.vars[k], gone[g], strlen(gone[g])) == 0)
					fail_msg("%s: %s kept", fx[i].file, e.vars[k]);
		assert_non_null(tq_env_get(&e, "PATH"));
		assert_non_null(tq_env_get(&e, "HOME"));
		assert_non_null(tq_env_get(&e, fx[i].kept));
		tq_env_release(&e);
	}
}

/* A "when" entry applies only with its marker: a user's own git settings
 * and AGENT-less npm stay. */
static void test_conditional(void **state)
{
	char *with[] = { "GEMINI_CLI=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_KEY_0=a",
			 "GIT_CONFIG_COUNT=1", "X=1", NULL };
	char *without[] = { "GIT_CONFIG_GLOBAL=/home/u/.gitconfig-work", "GIT_CONFIG_KEY_0=a",
			    "GIT_CONFIG_COUNT=1", "GIT_EDITOR=vim", "X=1", NULL };
	struct tq_env e = TQ_ENV_INIT;

	(void)state;
	assert_int_equal(tq_scrub_env(&e, with, NULL, NULL), 0);
	assert_int_equal(e.n, 1);
	assert_string_equal(e.vars[0], "X=1");
	tq_env_release(&e);
	assert_int_equal(tq_scrub_env(&e, without, NULL, NULL), 0);
	assert_int_equal(e.n, 5);
	tq_env_release(&e);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	fclose(f);
}

/* The user's "scrub_env": replace, disable, add; mistakes name the entry. */
static void test_config(void **state)
{
	char *dir = th_tempdir(), path[4096];
	struct tq_err err = TQ_ERR_INIT;
	struct tq_scrub *s = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/config.json", dir);
	write_file(path, "{\"scrub_env\": ["
		   "{\"id\": \"opencode.markers\", \"disabled\": true},"
		   "{\"id\": \"gemini.markers\", \"names\": [\"GEMINI_CLI\"]},"
		   "{\"id\": \"mine\", \"names\": [\"MY_AGENT\"], \"prefixes\": [\"MYA_\"],"
		   " \"_why\": \"comment\"}]}");
	assert_int_equal(tq_scrub_load(&s, path, &err), 0);
	assert_false(tq_scrub_match(s, "OPENCODE", 8, NULL, NULL));
	assert_true(tq_scrub_match(s, "GEMINI_CLI", 10, NULL, NULL));
	assert_false(tq_scrub_match(s, "GEMINI_CLI_NO_RELAUNCH", 22, NULL, NULL));
	assert_true(tq_scrub_match(s, "MY_AGENT", 8, NULL, NULL));
	assert_true(tq_scrub_match(s, "MYA_X", 5, NULL, NULL));
	assert_true(tq_scrub_match(s, "CLAUDECODE", 10, NULL, NULL));
	assert_true(tq_scrub_match(s, "FOO", 3, NULL, "FOO"));
	tq_scrub_free(s);
	write_file(path, "{\"scrub_env\": [{\"id\": \"x\", \"names\": [\"A\"], \"typo\": 1}]}");
	assert_int_equal(tq_scrub_load(&s, path, &err), TQ_EINVAL);
	assert_null(s);
	assert_non_null(strstr(err.msg, "scrub entry \"x\": unknown key"));
	write_file(path, "{\"scrub_env\": [{\"id\": \"nope\", \"disabled\": true}]}");
	assert_int_equal(tq_scrub_load(&s, path, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "disables an id no built-in entry has"));
	write_file(path, "{\"scrub_env\": [{\"id\": \"y\", \"names\": [\"A=B\"]}]}");
	assert_int_equal(tq_scrub_load(&s, path, &err), TQ_EINVAL);
	/* the built-in list alone */
	assert_int_equal(tq_scrub_load(&s, "", &err), 0);
	assert_true(tq_scrub_match(s, "OPENCODE", 8, NULL, NULL));
	tq_scrub_free(s);
	th_rmtree(dir);
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
		cmocka_unit_test(test_real_cli_children),
		cmocka_unit_test(test_conditional),
		cmocka_unit_test(test_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

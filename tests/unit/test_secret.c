/*
 * test_secret.c - masking credentials: URL passwords and credential query
 * parameters in any text, how `show` prints a variable, the values a task's
 * environment contributes (with the minimum length), masking inside reasons
 * and log lines, and that a full buffer cuts text rather than overflowing.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret.h"

/* Mask URLs in a copy of in (room: 3x, as for any text) and compare. */
static void check_urls(const char *in, const char *want)
{
	size_t n = strlen(in), cap = 3 * n + 1;
	char *buf = malloc(cap);
	size_t len;

	assert_non_null(buf);
	memcpy(buf, in, n + 1);
	len = tq_secret_mask_urls(buf, n, cap);
	if (strcmp(buf, want) != 0 || len != strlen(want))
		fail_msg("mask_urls(\"%s\") = \"%s\" (%zu), want \"%s\"", in, buf, len, want);
	free(buf);
}

static void test_url_userinfo(void **state)
{
	(void)state;
	check_urls("postgres://u:pw@h/db", "postgres://u:***@h/db");
	check_urls("postgres://u:pw@h", "postgres://u:***@h");
	check_urls("redis://:s3cret@cache:6379/0", "redis://:***@cache:6379/0");
	check_urls("https://user:p%40ss@example.com:8443/x?y=1",
		   "https://user:***@example.com:8443/x?y=1");
	/* the last '@' of the authority ends the userinfo */
	check_urls("ftp://u:p@ss@host/", "ftp://u:***@host/");
	/* a password with a ':' in it: the first ':' starts it */
	check_urls("amqp://guest:a:b@rabbit", "amqp://guest:***@rabbit");
	/* no password: a user name, shown */
	check_urls("ssh://git@github.com/x.git", "ssh://git@github.com/x.git");
	check_urls("https://u:@h/", "https://u:@h/");
	/* an '@' in the path is not userinfo */
	check_urls("https://registry.npmjs.org/@babel/core",
		   "https://registry.npmjs.org/@babel/core");
	check_urls("https://host:8080/@x", "https://host:8080/@x");
	/* in free text, several, and nested in a query */
	check_urls("connect postgres://a:one@h1 and mysql://b:two@h2: refused",
		   "connect postgres://a:***@h1 and mysql://b:***@h2: refused");
	check_urls("go https://x/?next=https://u:pw@y/ now",
		   "go https://x/?next=https://u:***@y/ now");
	check_urls("\"postgres://u:pw@h\"", "\"postgres://u:***@h\"");
	check_urls("DATABASE_URL=postgres://u:pw@h/db", "DATABASE_URL=postgres://u:***@h/db");
	/* not URLs */
	check_urls("a://", "a://");
	check_urls("://u:pw@h", "://u:pw@h");
	check_urls("1://u:pw@h", "1://u:pw@h");
	check_urls("time 12:30@noon", "time 12:30@noon");
	check_urls("", "");
	/* idempotent */
	check_urls("postgres://u:***@h/db", "postgres://u:***@h/db");
}

static void test_url_params(void **state)
{
	(void)state;
	check_urls("https://api.x.com/v1?token=abc123&page=2",
		   "https://api.x.com/v1?token=***&page=2");
	check_urls("https://x/?KEY=k&Password=p;sig=s#frag",
		   "https://x/?KEY=***&Password=***;sig=***#frag");
	check_urls("https://b.s3.amazonaws.com/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff",
		   "https://b.s3.amazonaws.com/o?X-Amz-Credential=***&X-Amz-Signature=***");
	check_urls("https://app/cb#access_token=eyJ&state=1",
		   "https://app/cb#access_token=***&state=1");
	check_urls("https://x/?tokens=1&keyword=a&token=&monkey=b",
		   "https://x/?tokens=1&keyword=a&token=&monkey=b");
	check_urls("https://u:p@x/?api_key=z", "https://u:***@x/?api_key=***");
	/* a query outside a URL is text */
	check_urls("token=abc password=x", "token=abc password=x");
	/* the list is named data */
	assert_true(tq_secret_param("token", 5));
	assert_true(tq_secret_param("SIG", 3));
	assert_false(tq_secret_param("tokens", 6));
	assert_false(tq_secret_param("", 0));
}

static void test_url_many_credentials(void **state)
{
	char in[4096], want[4096];
	size_t n = 0, m = 0;

	(void)state;
	n += (size_t)snprintf(in + n, sizeof(in) - n, "https://h/?");
	m += (size_t)snprintf(want + m, sizeof(want) - m, "https://h/?");
	for (int i = 0; i < 40; i++) {
		n += (size_t)snprintf(in + n, sizeof(in) - n, "%skey=v%d", i ? "&" : "", i);
		m += (size_t)snprintf(want + m, sizeof(want) - m, "%skey=***", i ? "&" : "");
	}
	check_urls(in, want);
}

static void test_url_growth_is_cut_at_cap(void **state)
{
	char buf[16] = "x://u:p@h/abcde"; /* 15 bytes: full */
	size_t len;

	(void)state;
	len = tq_secret_mask_urls(buf, strlen(buf), sizeof(buf));
	assert_int_equal(len, 15);
	assert_string_equal(buf, "x://u:***@h/abc");
	/* a mask cut short by cap still ends */
	char b2[10] = "x://u:p@h";
	len = tq_secret_mask_urls(b2, 9, sizeof(b2));
	assert_int_equal(len, 9);
	assert_string_equal(b2, "x://u:***");
}

static void test_env_display(void **state)
{
	static const struct { const char *in, *want; int masked; } cases[] = {
		{ "DATABASE_URL=postgres://u:pw@h/db", "DATABASE_URL=postgres://u:***@h/db", 1 },
		{ "CALLBACK=https://x/?sig=abc&a=1", "CALLBACK=https://x/?sig=***&a=1", 1 },
		{ "GITHUB_TOKEN=ghp_abc", "GITHUB_TOKEN=***", 1 },
		{ "GITHUB_TOKEN=", "GITHUB_TOKEN=***", 1 },
		{ "HOME=/root", "HOME=/root", 0 },
		{ "REPO=ssh://git@github.com/x", "REPO=ssh://git@github.com/x", 0 },
		{ "PATH=/usr/bin:/bin", "PATH=/usr/bin:/bin", 0 },
		{ "NOEQUALS", "NOEQUALS", 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = tq_secret_env_display(cases[i].in);
		assert_non_null(got);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("env_display(\"%s\") = \"%s\", want \"%s\"", cases[i].in, got,
				 cases[i].want);
		if (tq_secret_env_masked(cases[i].in) != cases[i].masked)
			fail_msg("env_masked(\"%s\") != %d", cases[i].in, cases[i].masked);
		free(got);
	}
}

/* Mask text with the values of env, room 2x. */
static void check_text(char **env, size_t n, const char *in, const char *want)
{
	struct tq_secrets s = TQ_SECRETS_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char buf[1024];

	assert_int_equal(tq_secrets_add_env(&s, env, n, &err), 0);
	snprintf(buf, sizeof(buf), "%s", in);
	tq_secrets_mask_str(&s, buf, sizeof(buf));
	if (strcmp(buf, want) != 0)
		fail_msg("mask(\"%s\") = \"%s\", want \"%s\"", in, buf, want);
	tq_secrets_release(&s);
}

static void test_values_in_text(void **state)
{
	char *env[] = {
		"OPENAI_API_KEY=sk-live-0123456789",
		"DATABASE_URL=postgres://app:hunter22@db.internal/prod",
		"HOOK=https://hooks.x/y?token=tok-abcdef&v=2",
		"SHORT_TOKEN=abc12",          /* under the minimum */
		"USE_KEY=1",                  /* a flag */
		"PLAIN=sk-live-0123456789x",  /* a secret's superstring: not masked for itself */
		"HOME=/root",
	};
	size_t n = sizeof(env) / sizeof(env[0]);

	(void)state;
	check_text(env, n, "Error: invalid key sk-live-0123456789 (401)",
		   "Error: invalid key *** (401)");
	/* the whole URL by its masked form, the password on its own */
	check_text(env, n, "could not connect to postgres://app:hunter22@db.internal/prod",
		   "could not connect to postgres://app:***@db.internal/prod");
	check_text(env, n, "password authentication failed: 'hunter22'",
		   "password authentication failed: '***'");
	check_text(env, n, "sent tok-abcdef twice", "sent *** twice");
	/* short values are not masked in text: exit code 1 stays readable */
	check_text(env, n, "exit code 1; abc12", "exit code 1; abc12");
	/* a URL from elsewhere is masked by its shape */
	check_text(env, n, "fetch https://bob:other@x.org/ failed",
		   "fetch https://bob:***@x.org/ failed");
	/* every occurrence; longest first */
	check_text(env, n, "sk-live-0123456789/sk-live-0123456789x",
		   "***/***x");
	check_text(NULL, 0, "no secrets here", "no secrets here");
}

static void test_values_dedup_and_order(void **state)
{
	char *env[] = { "A_KEY=secret-one", "B_KEY=secret-one", "C_TOKEN=secret-one-longer",
			"D=postgres://u:secret-one@h" };
	struct tq_secrets s = TQ_SECRETS_INIT;
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	assert_int_equal(tq_secrets_add_env(&s, env, 4, &err), 0);
	/* secret-one once, the longer one, the URL */
	assert_int_equal(s.n, 3);
	for (size_t i = 1; i < s.n; i++)
		assert_true(s.v[i - 1].len >= s.v[i].len);
	assert_string_equal(s.v[0].value, "postgres://u:secret-one@h");
	assert_string_equal(s.v[0].mask, "postgres://u:***@h");
	tq_secrets_release(&s);
	tq_secrets_release(&s); /* twice is fine */
	tq_secrets_release(NULL);
}

static void test_mask_cuts_at_cap(void **state)
{
	char *env[] = { "X=postgres://u:abcdef@h" };
	struct tq_secrets s = TQ_SECRETS_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char buf[12] = "abcdef abcd";
	size_t len;

	(void)state;
	assert_int_equal(tq_secrets_add_env(&s, env, 1, &err), 0);
	len = tq_secrets_mask(&s, buf, strlen(buf), sizeof(buf));
	assert_string_equal(buf, "*** abcd");
	assert_int_equal(len, 8);
	/* binary bytes and a NUL inside are text like any other */
	char bin[32];
	memcpy(bin, "a\0abcdef\xff", 10);
	len = tq_secrets_mask(&s, bin, 10, sizeof(bin));
	assert_int_equal(len, 7);
	assert_memory_equal(bin, "a\0***\xff", 7);
	tq_secrets_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_userinfo),
		cmocka_unit_test(test_url_params),
		cmocka_unit_test(test_url_many_credentials),
		cmocka_unit_test(test_url_growth_is_cut_at_cap),
		cmocka_unit_test(test_env_display),
		cmocka_unit_test(test_values_in_text),
		cmocka_unit_test(test_values_dedup_and_order),
		cmocka_unit_test(test_mask_cuts_at_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_parse.c - durations, sizes, ids and integers from text, and their
 * human formats. Table-driven: each table row is one input and what it must
 * give (a value, or a refusal whose message names the input). The edges are
 * the point: overflow past int64, the stated maxima, fractions, junk after a
 * number, and that what tq_format_* prints parses back.
 */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define BAD (-1) /* "want" for inputs that must be refused */

struct icase {
	const char *in;
	int64_t want;
};

/* Check that a refused input left a message quoting it and *out untouched. */
static void check_refused(const char *what, const char *in, int rc,
			  const struct tq_err *err, int64_t out)
{
	char quoted[256];

	if (rc != TQ_EINVAL)
		fail_msg("%s(\"%s\") = %d, want TQ_EINVAL", what, in, rc);
	assert_int_equal(err->code, TQ_EINVAL);
	snprintf(quoted, sizeof(quoted), "\"%s\"", in);
	if (strstr(err->msg, quoted) == NULL)
		fail_msg("%s(\"%s\"): message \"%s\" does not quote the input",
			 what, in, err->msg);
	if (out != 12345)
		fail_msg("%s(\"%s\") refused but wrote %lld", what, in,
			 (long long)out);
}

static void run_cases(const char *what, const struct icase *c, size_t n,
		      int (*fn)(const char *, int64_t *, struct tq_err *))
{
	for (size_t i = 0; i < n; i++) {
		struct tq_err err = TQ_ERR_INIT;
		int64_t out = 12345;
		int rc = fn(c[i].in, &out, &err);

		if (c[i].want == BAD) {
			check_refused(what, c[i].in, rc, &err, out);
			continue;
		}
		if (rc != 0)
			fail_msg("%s(\"%s\") refused: %s", what, c[i].in, err.msg);
		if (out != c[i].want)
			fail_msg("%s(\"%s\") = %lld, want %lld", what, c[i].in,
				 (long long)out, (long long)c[i].want);
	}
}

static void test_duration(void **state)
{
	static const struct icase cases[] = {
		{ "0", 0 }, { "30", 30000 }, { "30s", 30000 }, { "5m", 300000 },
		{ "2h", 7200000 }, { "1d", 86400000 }, { "1w", 604800000 },
		{ "250ms", 250 }, { "1h30m", 5400000 }, { "1.5h", 5400000 },
		{ "0.5s", 500 }, { ".5s", 500 }, { "1.s", 1000 }, { "5sec", 5000 },
		{ "2min", 120000 }, { "1m30s", 90000 }, { "1h1h", 7200000 },
		{ "1.0000009s", 1000 }, /* past a microsecond is dropped */
		{ "0s", 0 }, { "0ms", 0 }, { "007s", 7000 },
		{ "36500d", (int64_t)36500 * 86400000 }, /* the maximum: 100 years */
		{ "3153600000", (int64_t)3153600000 * 1000 },
		/* refused */
		{ "", BAD }, { "5x", BAD }, { "s", BAD }, { "-5s", BAD },
		{ "+5s", BAD }, { " 5s", BAD }, { "5s ", BAD }, { "5 s", BAD },
		{ "1h30", BAD }, { "5S", BAD }, { ".", BAD }, { ".s", BAD },
		{ "1e3s", BAD }, { "0x10s", BAD }, { "1,5s", BAD }, { "5mss", BAD },
		{ "36501d", BAD }, { "3153600001", BAD }, { "3153600000.001s", BAD },
		{ "36500d1ms", BAD }, { "1000000000000000w", BAD },
		/* int64 overflow inside the number itself */
		{ "9223372036853s", BAD }, { "9223372036854s", BAD },
		{ "9223372036859s", BAD }, { "9223372036854775807ms", BAD },
		{ "99999999999999999999999999s", BAD },
		{ "5\xc2\xb5s", BAD }, { "5m\n", BAD },
	};
	(void)state;
	run_cases("tq_parse_duration", cases, N(cases), tq_parse_duration);
}

static void test_duration_message(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t ms;

	(void)state;
	assert_int_equal(tq_parse_duration("5x", &ms, &err), TQ_EINVAL);
	assert_string_equal(err.msg,
			    "\"5x\": expected a duration such as 30s, 5m, 2h");
	/* NULL err and NULL text are fine */
	assert_int_equal(tq_parse_duration("5x", &ms, NULL), TQ_EINVAL);
	assert_int_equal(tq_parse_duration(NULL, &ms, &err), TQ_EINVAL);
}

static void test_size(void **state)
{
	static const struct icase cases[] = {
		{ "0", 0 }, { "1", 1 }, { "512", 512 }, { "512B", 512 },
		{ "512b", 512 }, { "1K", 1024 }, { "1k", 1024 }, { "1KB", 1024 },
		{ "1KiB", 1024 }, { "1kib", 1024 }, { "50M", 50 << 20 },
		{ "1G", (int64_t)1 << 30 }, { "2T", (int64_t)2 << 40 },
		{ "1P", (int64_t)1 << 50 }, /* the maximum */
		{ "1.5K", 1536 }, { "1.5G", (int64_t)3 << 29 }, { "0.5M", 512 << 10 },
		{ "1024P", BAD }, { "1.5P", BAD }, { "1125899906842625", BAD },
		{ "1125899906842624", (int64_t)1 << 50 },
		/* refused */
		{ "", BAD }, { "K", BAD }, { "-1K", BAD }, { "+1K", BAD },
		{ "1X", BAD }, { "1KK", BAD }, { "1KBB", BAD }, { "1 K", BAD },
		{ " 1K", BAD }, { "1K ", BAD }, { "1.5", BAD }, { "0.5B", BAD },
		{ "1Bi", BAD }, { "1iB", BAD }, { "1e3", BAD }, { "0x10", BAD },
		{ "9223372036854775807", BAD }, { "9223372036854775808", BAD },
		{ "9223372036859", (int64_t)9223372036859 },
		{ "99999999999999999999999999K", BAD },
	};
	(void)state;
	run_cases("tq_parse_size", cases, N(cases), tq_parse_size);
}

static void test_size_message(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t b;

	(void)state;
	assert_int_equal(tq_parse_size("12X", &b, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "\"12X\": expected a size such as 512K, 50M, 1G");
	assert_int_equal(tq_parse_size(NULL, &b, &err), TQ_EINVAL);
}

static void test_id(void **state)
{
	static const struct icase cases[] = {
		{ "1", 1 }, { "42", 42 }, { "007", 7 },
		{ "9223372036854775807", INT64_MAX },
		{ "0", BAD }, { "-1", BAD }, { "+1", BAD }, { "", BAD },
		{ "abc", BAD }, { "1a", BAD }, { " 1", BAD }, { "1 ", BAD },
		{ "1.0", BAD }, { "0x1", BAD }, { "1e3", BAD },
		{ "9223372036854775808", BAD }, { "99999999999999999999", BAD },
	};
	struct tq_err err = TQ_ERR_INIT;
	int64_t id;

	(void)state;
	run_cases("tq_parse_id", cases, N(cases), tq_parse_id);
	assert_int_equal(tq_parse_id("abc", &id, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "\"abc\": expected a task id"));
	assert_int_equal(tq_parse_id(NULL, &id, NULL), TQ_EINVAL);
}

static void test_int(void **state)
{
	static const struct {
		const char *in;
		int64_t min, max, want;
		int ok;
	} cases[] = {
		{ "0", 0, 10, 0, 1 }, { "10", 0, 10, 10, 1 }, { "-5", -10, 10, -5, 1 },
		{ "-9223372036854775808", INT64_MIN, INT64_MAX, INT64_MIN, 1 },
		{ "9223372036854775807", INT64_MIN, INT64_MAX, INT64_MAX, 1 },
		{ "11", 0, 10, 0, 0 }, { "-1", 0, 10, 0, 0 }, { "", 0, 10, 0, 0 },
		{ "+1", 0, 10, 0, 0 }, { " 1", 0, 10, 0, 0 }, { "1 ", 0, 10, 0, 0 },
		{ "1x", 0, 10, 0, 0 }, { "0x1", 0, 10, 0, 0 }, { "--1", -10, 10, 0, 0 },
		{ "9223372036854775808", INT64_MIN, INT64_MAX, 0, 0 },
		{ "-9223372036854775809", INT64_MIN, INT64_MAX, 0, 0 },
	};
	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		struct tq_err err = TQ_ERR_INIT;
		int64_t out = 12345;
		int rc = tq_parse_int(cases[i].in, cases[i].min, cases[i].max,
				      &out, &err);

		if (!cases[i].ok) {
			check_refused("tq_parse_int", cases[i].in, rc, &err, out);
			continue;
		}
		if (rc != 0 || out != cases[i].want)
			fail_msg("tq_parse_int(\"%s\") = %d/%lld: %s", cases[i].in,
				 rc, (long long)out, err.msg);
	}
}

static void test_int_message_names_range(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t v;

	(void)state;
	assert_int_equal(tq_parse_int("200", 1, 100, &v, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "\"200\""));
	assert_non_null(strstr(err.msg, "1 to 100"));
	assert_int_equal(tq_parse_int(NULL, 1, 100, &v, &err), TQ_EINVAL);
}

static void test_format_duration(void **state)
{
	static const struct { int64_t ms; const char *want; } cases[] = {
		{ 0, "0ms" }, { 450, "450ms" }, { 999, "999ms" }, { 1000, "1.0s" },
		{ 12345, "12.3s" }, { 59999, "59.9s" }, { 60000, "1m00s" },
		{ 185000, "3m05s" }, { 3599999, "59m59s" }, { 3600000, "1h00m" },
		{ 7800000, "2h10m" }, { 86399999, "23h59m" }, { 86400000, "1d00h" },
		{ 273600000, "3d04h" }, { -5, "0ms" },
		{ TQ_DURATION_MAX_MS, "36500d00h" },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		tq_format_duration(cases[i].ms, buf, sizeof(buf));
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("format_duration(%lld) = \"%s\", want \"%s\"",
				 (long long)cases[i].ms, buf, cases[i].want);
	}
	/* a short buffer is truncated but terminated */
	tq_format_duration(185000, buf, 3);
	assert_string_equal(buf, "3m");
	tq_format_duration(185000, buf, 1);
	assert_string_equal(buf, "");
}

/* What tq_format_duration prints is a duration tq_parse_duration accepts,
 * and it never claims more time than there was. */
static void test_format_duration_parses_back(void **state)
{
	static const int64_t ms[] = {
		0, 1, 450, 1000, 12345, 60000, 185000, 7800000, 273600000,
		TQ_DURATION_MAX_MS,
	};
	(void)state;
	for (size_t i = 0; i < N(ms); i++) {
		char buf[32];
		int64_t back = -1;
		struct tq_err err = TQ_ERR_INIT;

		tq_format_duration(ms[i], buf, sizeof(buf));
		if (tq_parse_duration(buf, &back, &err) != 0)
			fail_msg("\"%s\" does not parse back: %s", buf, err.msg);
		assert_true(back <= ms[i]);
	}
}

static void test_format_size(void **state)
{
	static const struct { int64_t b; const char *want; } cases[] = {
		{ 0, "0B" }, { 512, "512B" }, { 1023, "1.0K" }, { 1536, "1.5K" },
		{ 10239, "10K" }, { (int64_t)999 << 20, "999M" }, { (int64_t)1 << 50, "1.0P" },
		{ (int64_t)50 << 20, "50M" }, { (int64_t)1 << 30, "1.0G" },
	};
	char buf[16];

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		int64_t back = -1;

		tq_format_size(cases[i].b, buf, sizeof(buf));
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("format_size(%lld) = \"%s\", want \"%s\"",
				 (long long)cases[i].b, buf, cases[i].want);
		/* and it parses back to about the same size */
		assert_int_equal(tq_parse_size(buf, &back, NULL), 0);
		assert_true(back <= cases[i].b + cases[i].b / 10);
	}
	/* too small a buffer for humanize_number: the plain number, cut */
	tq_format_size(123456, buf, 4);
	assert_string_equal(buf, "123");
}

static void test_format_time(void **state)
{
	char buf[32];

	(void)state;
	tq_format_time(0, buf, sizeof(buf));
	assert_string_equal(buf, "-");
	tq_format_time(-1, buf, sizeof(buf));
	assert_string_equal(buf, "-");
	tq_format_time((int64_t)1700000000 * 1000, buf, sizeof(buf));
	assert_int_equal(strlen(buf), strlen("2023-11-14 22:13:20"));
	assert_true(buf[4] == '-' && buf[10] == ' ' && buf[13] == ':');
	/* too small a buffer gives "-" rather than a cut date */
	tq_format_time((int64_t)1700000000 * 1000, buf, 8);
	assert_string_equal(buf, "-");
}

/* What PostgreSQL's text takes: no stray or missing continuation byte, no
 * overlong form, no surrogate, nothing past U+10FFFF. */
static void test_utf8_valid(void **state)
{
	(void)state;
	assert_true(tq_utf8_valid(""));
	assert_true(tq_utf8_valid("plain"));
	assert_true(tq_utf8_valid("\xc3\xa9\xe2\x80\xae\xf0\x9f\x98\x80"));
	assert_true(tq_utf8_valid("\xf4\x8f\xbf\xbf"));       /* U+10FFFF */
	assert_false(tq_utf8_valid("n\xff"));
	assert_false(tq_utf8_valid("\xc3\x28"));               /* no continuation */
	assert_false(tq_utf8_valid("\xc3"));                   /* cut short */
	assert_false(tq_utf8_valid("\xc0\xaf"));               /* overlong '/' */
	assert_false(tq_utf8_valid("\xed\xa0\x80"));           /* a surrogate */
	assert_false(tq_utf8_valid("\xf4\x90\x80\x80"));       /* past U+10FFFF */
	assert_false(tq_utf8_valid("\x80"));                   /* stray continuation */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_duration_message),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_size_message),
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_int_message_names_range),
		cmocka_unit_test(test_format_duration),
		cmocka_unit_test(test_format_duration_parses_back),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_format_time),
		cmocka_unit_test(test_utf8_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

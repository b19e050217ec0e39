/*
 * test_stall.c - the progress clock of --stall-timeout: what resets it (a
 * new line on either stream, bytes of a line not ended yet) and what does
 * not (a repeated line, however it is split over writes, a spinner's
 * frames, an empty line), and the reason it gives.
 */
#include "harness.h"

#include <stdio.h>
#include <string.h>

#include "worker/stall.h"

#define T 1000 /* the stall timeout of these tests, ms */

static void feed(struct tq_stall *st, int stream, const char *s, int64_t now)
{
	tq_stall_feed(st, stream, s, strlen(s), now);
}

static void test_off(void **state)
{
	struct tq_stall st;

	(void)state;
	tq_stall_init(&st, 0, 5);
	assert_true(st.deadline == TQ_STALL_NEVER);
	assert_false(tq_stall_due(&st, INT64_MAX - 1));
	feed(&st, 0, "line\n", 10);
	assert_true(st.deadline == TQ_STALL_NEVER);
}

static void test_silence_is_due(void **state)
{
	struct tq_stall st;
	char why[256];

	(void)state;
	tq_stall_init(&st, T, 100);
	assert_false(tq_stall_due(&st, 100 + T - 1));
	assert_true(tq_stall_due(&st, 100 + T));
	assert_string_equal(tq_stall_describe(&st, why, sizeof(why)), "no output for 1.0s");
}

static void test_new_lines_reset(void **state)
{
	struct tq_stall st;

	(void)state;
	tq_stall_init(&st, T, 0);
	feed(&st, 0, "one\n", 500);
	assert_int_equal(st.deadline, 500 + T);
	feed(&st, 1, "two on stderr\n", 900); /* either stream: one clock */
	assert_int_equal(st.deadline, 900 + T);
	feed(&st, 0, "45%\r46%\r", 1200);     /* a progress bar that moves */
	assert_int_equal(st.deadline, 1200 + T);
	/* the same text on the other stream is new there */
	feed(&st, 1, "one\n", 1300);
	assert_int_equal(st.deadline, 1300 + T);
}

static void test_repeated_line_is_not_progress(void **state)
{
	static const char line[] = "Reconnecting... waiting for network (Connection failed: "
		"error sending request)\n";
	struct tq_stall st;
	char why[512];

	(void)state;
	tq_stall_init(&st, T, 0);
	feed(&st, 1, line, 100);
	assert_int_equal(st.deadline, 100 + T);
	for (int i = 1; i <= 50; i++)
		feed(&st, 1, line, 100 + i * 20);
	assert_int_equal(st.deadline, 100 + T);
	assert_true(tq_stall_due(&st, 100 + T));
	assert_int_equal(st.repeats, 50);
	tq_stall_describe(&st, why, sizeof(why));
	assert_string_equal(why, "no new output for 1.0s (50 repeated lines); the last: "
			    "Reconnecting... waiting for network (Connection failed: error "
			    "sending request)");
	/* a new line is progress again, and the count starts over */
	feed(&st, 1, "connected\n", 2000);
	assert_int_equal(st.deadline, 2000 + T);
	assert_int_equal(st.repeats, 0);
}

static void test_line_split_over_writes(void **state)
{
	struct tq_stall st;

	(void)state;
	tq_stall_init(&st, T, 0);
	feed(&st, 1, "Reconnecting... 1/5\n", 10);
	assert_int_equal(st.deadline, 10 + T);
	/* the same line again in three pieces: the pieces hold the clock only
	 * until the line ends as a repeat, then what they gave is taken back */
	feed(&st, 1, "Reconn", 400);
	feed(&st, 1, "ecting... 1/", 450);
	assert_int_equal(st.deadline, 450 + T);
	feed(&st, 1, "5\n", 500);
	assert_int_equal(st.deadline, 10 + T);
	assert_true(tq_stall_due(&st, 10 + T));
	/* a different line in pieces counts when it ends */
	feed(&st, 1, "Reconnecting... ", 600);
	assert_int_equal(st.deadline, 600 + T);
	feed(&st, 1, "2/5\n", 700);
	assert_int_equal(st.deadline, 700 + T);
}

static void test_spinner_and_empty_lines(void **state)
{
	static const char *const frames[] = { "|", "/", "-", "\\" };
	struct tq_stall st;

	(void)state;
	tq_stall_init(&st, T, 0);
	for (int i = 0; i < 4; i++) {
		feed(&st, 1, frames[i], 10);
		feed(&st, 1, "\r", 10);
	}
	assert_int_equal(st.deadline, 10 + T);
	/* the spinner keeps turning: its frames are all recent lines */
	for (int i = 0; i < 400; i++) {
		feed(&st, 1, frames[i % 4], 20 + i);
		feed(&st, 1, "\r", 20 + i);
	}
	assert_int_equal(st.deadline, 10 + T);
	feed(&st, 0, "\n\n\r\n\n", 900);
	assert_int_equal(st.deadline, 10 + T);
}

static void test_lines_cycle_beyond_memory(void **state)
{
	struct tq_stall st;
	char line[32];

	(void)state;
	tq_stall_init(&st, T, 0);
	/* TQ_STALL_RECENT + 1 lines in a cycle: each has left the memory by
	 * the time it comes round again, so each counts (a cycle that long is
	 * taken for output that changes) */
	for (int i = 0; i < 3 * (TQ_STALL_RECENT + 1); i++) {
		snprintf(line, sizeof(line), "step %d\n", i % (TQ_STALL_RECENT + 1));
		feed(&st, 0, line, 100 + i);
		assert_int_equal(st.deadline, 100 + i + T);
	}
}

/* Output that keeps coming without ending a line is not a stall: a dot a
 * little less often than the stall timeout (the clock ran out after 4096
 * bytes of an unended line only: a dot a minute was "stalled: no output
 * for 5m" after five minutes), binary output without a newline, one long
 * line. Then silence is due, and the reason quotes the unended line. */
static void test_unended_output_is_not_a_stall(void **state)
{
	struct tq_stall st;
	char why[512], bin[3] = { '\x01', '\xff', '\x7f' };
	int64_t now = 0;

	(void)state;
	tq_stall_init(&st, T, 0);
	for (int i = 0; i < 100; i++) {
		now += T - 1;
		assert_false(tq_stall_due(&st, now));
		feed(&st, 0, ".", now);
	}
	assert_int_equal(st.deadline, now + T);
	assert_false(tq_stall_due(&st, now + T - 1));
	assert_true(tq_stall_due(&st, now + T));
	tq_stall_describe(&st, why, sizeof(why));
	assert_int_equal(strncmp(why, "no new output for 1.0s; the last line, unended: .", 49),
			 0);
	assert_int_equal(strspn(why + 48, "."), 100);
	assert_int_equal(strlen(why), 48 + 100);
	/* binary output on stderr without a line end, a piece each T - 1 */
	tq_stall_init(&st, T, 0);
	now = 0;
	for (int i = 0; i < 50; i++) {
		now += T - 1;
		assert_false(tq_stall_due(&st, now));
		tq_stall_feed(&st, 1, bin, sizeof(bin), now);
	}
	assert_true(tq_stall_due(&st, now + T));
	/* a line that ends after all that is progress */
	feed(&st, 1, "\n", now + 5);
	assert_int_equal(st.deadline, now + 5 + T);
}

/* Text before any line ended, then nothing: the reason says what came. */
static void test_describe_unended_first_output(void **state)
{
	struct tq_stall st;
	char why[256];

	(void)state;
	tq_stall_init(&st, T, 0);
	feed(&st, 0, "Thinking", 10);
	assert_true(tq_stall_due(&st, 10 + T));
	assert_string_equal(tq_stall_describe(&st, why, sizeof(why)),
			    "no new output for 1.0s; the last line, unended: Thinking");
	/* blank lines alone are no output */
	tq_stall_init(&st, T, 0);
	feed(&st, 0, "\n\r\n", 10);
	assert_string_equal(tq_stall_describe(&st, why, sizeof(why)), "no output for 1.0s");
}

static void test_describe_shows_control_bytes_safely(void **state)
{
	struct tq_stall st;
	char why[512];

	(void)state;
	tq_stall_init(&st, 300000, 0);
	feed(&st, 0, "\x1b[31mred\x1b[0m\tend\n", 1);
	tq_stall_describe(&st, why, sizeof(why));
	assert_string_equal(why, "no new output for 5m00s; the last line: ?[31mred?[0m?end");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_silence_is_due),
		cmocka_unit_test(test_new_lines_reset),
		cmocka_unit_test(test_repeated_line_is_not_progress),
		cmocka_unit_test(test_line_split_over_writes),
		cmocka_unit_test(test_spinner_and_empty_lines),
		cmocka_unit_test(test_lines_cycle_beyond_memory),
		cmocka_unit_test(test_unended_output_is_not_a_stall),
		cmocka_unit_test(test_describe_unended_first_output),
		cmocka_unit_test(test_describe_shows_control_bytes_safely),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

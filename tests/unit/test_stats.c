/*
 * test_stats.c - agent results in the store: what tq_queue_finish stores
 * from a tq_result (a cost the agent did not report stays NULL), how a
 * session advances (only on a succeeded link whose result is not an
 * error; never on a failed, retried, fenced-out or older link), what
 * tq_queue_session_show, tq_queue_stats and the list's cost read back.
 * A real SQLite file in a temporary state directory, also read with
 * SQLite directly.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "common/sys.h"
#include "queue/queue.h"

struct fx {
	char *home;
	char state[512];
	struct tq_queue *q;
};

static char *argv_agent[] = { "claude", "-p", "hi", NULL };
static char *env_one[] = { "PATH=/usr/bin:/bin", NULL };

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tq_err err = TQ_ERR_INIT;

	assert_non_null(f);
	f->home = th_tempdir();
	assert_non_null(f->home);
	snprintf(f->state, sizeof(f->state), "%s/state", f->home);
	if (tq_queue_open(&f->q, f->state, 0, &err) != 0)
		fail_msg("open: %s", err.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	tq_queue_close(f->q);
	th_rmtree(f->home);
	free(f);
	return 0;
}

struct opts {
	const char *session, *batch, *group;
};

static int64_t submit(struct tq_queue *q, struct opts o)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = 0;

	s.argv = argv_agent;
	s.argc = 3;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	s.session = o.session;
	s.batch = o.batch;
	s.group = o.group;
	if (tq_queue_submit(q, &s, &id, NULL, &err) != 0)
		fail_msg("submit: %s", err.msg);
	return id;
}

/* Claim the next task; it must be want. Returns its attempt. */
static int claim(struct tq_queue *q, int64_t want)
{
	struct tq_task t = { 0 };
	struct tq_err err = TQ_ERR_INIT;
	int attempt;

	if (tq_queue_claim(q, 1, 60000, &t, NULL, &err) != 0)
		fail_msg("claim (want %lld): %s", (long long)want, err.msg);
	assert_int_equal(t.id, want);
	attempt = t.attempt;
	tq_task_release(&t);
	return attempt;
}

static struct tq_result agent_result(const char *session, int is_error, double cost)
{
	struct tq_result r = {
		.has_result = 1, .result = "the answer", .is_error = is_error,
		.subtype = "success", .agent_session = session, .cost_usd = cost,
		.duration_ms = 1500, .num_turns = 2, .input_tokens = 100,
		.output_tokens = 20, .cache_read_tokens = 1000, .cache_creation_tokens = 50,
		.model = "claude-opus-4-8",
	};

	return r;
}

static int finish(struct tq_queue *q, int64_t id, int attempt, enum tq_outcome o,
		  enum tq_next next, const struct tq_result *r)
{
	struct tq_finish f = { .task_id = id, .attempt = attempt, .worker_id = 1,
			       .outcome = o, .exit_code = o == TQ_OUT_SUCCEEDED ? 0 : 1,
			       .next = next, .result = r };
	struct tq_err err = TQ_ERR_INIT;

	if (o != TQ_OUT_SUCCEEDED)
		f.category = next == TQ_NEXT_RETRY ? TQ_CAT_RATE_LIMIT : TQ_CAT_UNKNOWN;
	return tq_queue_finish(q, &f, NULL, &err);
}

static char *session_of(struct tq_queue *q, const char *key)
{
	struct tq_err err = TQ_ERR_INIT;
	char *s = NULL;

	if (tq_queue_session_get(q, key, &s, &err) != 0)
		fail_msg("session get: %s", err.msg);
	return s;
}

static void assert_session(struct tq_queue *q, const char *key, const char *want)
{
	char *s = session_of(q, key);

	if (want == NULL && s != NULL)
		fail_msg("session %s: want none, got %s", key, s);
	if (want != NULL && (s == NULL || strcmp(s, want) != 0))
		fail_msg("session %s: want %s, got %s", key, want, s ? s : "(none)");
	free(s);
}

/* ------------------------------------------------------------------ */
/* Sessions                                                           */

/* The brief's chain: the first link fails (not retried), the session does
 * not advance; the second succeeds and it does. */
static void test_failed_link_does_not_advance(void **state)
{
	struct fx *f = *state;
	int64_t a = submit(f->q, (struct opts){ .session = "k" });
	int64_t b = submit(f->q, (struct opts){ .session = "k" });
	struct tq_result ra = agent_result("s-a", 1, 0.01), rb = agent_result("s-b", 0, 0.02);
	struct tq_session_info si = { 0 };
	struct tq_err err = TQ_ERR_INIT;

	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_FAILED, TQ_NEXT_FINAL, &ra), 0);
	assert_session(f->q, "k", NULL);
	/* b waited for a to end (however it ended) */
	assert_int_equal(finish(f->q, b, claim(f->q, b), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &rb), 0);
	assert_session(f->q, "k", "s-b");

	assert_int_equal(tq_queue_session_show(f->q, "k", &si, &err), 0);
	assert_string_equal(si.key, "k");
	assert_string_equal(si.agent_session, "s-b");
	assert_int_equal(si.last_task_id, b);
	assert_true(si.updated_at > 0);
	assert_int_equal(si.ntasks, 2);
	assert_int_equal(si.tasks[0].id, a);
	assert_int_equal(si.tasks[0].state, TQ_FAILED);
	assert_string_equal(si.tasks[0].agent_session, "s-a");
	assert_int_equal(si.tasks[1].id, b);
	assert_int_equal(si.tasks[1].state, TQ_SUCCEEDED);
	assert_string_equal(si.tasks[1].agent_session, "s-b");
	assert_true(si.tasks[1].finished_at > 0);
	tq_session_info_release(&si);
}

/* Succeeded but the result says is_error, or names no session (or an
 * empty one); a transient failure that is retried; a task with no session
 * key: nothing moves. */
static void test_no_advance_cases(void **state)
{
	struct fx *f = *state;
	int64_t a = submit(f->q, (struct opts){ .session = "k2" });
	int64_t b = submit(f->q, (struct opts){ .session = "k2" });
	int64_t c = submit(f->q, (struct opts){ .session = "k2" });
	int64_t d = submit(f->q, (struct opts){ 0 });
	int64_t e = submit(f->q, (struct opts){ .session = "k2" });
	struct tq_result err_r = agent_result("s-err", 1, 0);
	struct tq_result none = agent_result(NULL, 0, 0), empty = agent_result("", 0, 0);
	struct tq_result retry = agent_result("s-retry", 0, 0), ok = agent_result("s-c", 0, 0);
	struct tq_result dr = agent_result("s-d", 0, 0);
	struct tq_session_info si = { 0 };
	struct tq_err err = TQ_ERR_INIT;
	int at;

	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL,
				&err_r), 0);
	assert_session(f->q, "k2", NULL);
	assert_int_equal(finish(f->q, b, claim(f->q, b), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL,
				&none), 0);
	assert_session(f->q, "k2", NULL);
	/* c: a rate limit, retried at once (its result names a session, but
	 * the link did not succeed), then a retry that succeeds */
	assert_int_equal(finish(f->q, c, claim(f->q, c), TQ_OUT_FAILED, TQ_NEXT_RETRY,
				&retry), 0);
	assert_session(f->q, "k2", NULL);
	at = claim(f->q, c);
	assert_int_equal(at, 2);
	assert_int_equal(finish(f->q, c, at, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &ok), 0);
	assert_session(f->q, "k2", "s-c");
	/* a task without a key never makes a sessions row */
	assert_int_equal(finish(f->q, d, claim(f->q, d), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL,
				&dr), 0);
	assert_int_equal(tq_queue_session_show(f->q, "s-d", &si, &err), TQ_ENOTFOUND);
	tq_session_info_release(&si);
	/* an empty session id leaves the session as it was */
	assert_int_equal(finish(f->q, e, claim(f->q, e), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL,
				&empty), 0);
	assert_session(f->q, "k2", "s-c");
	assert_int_equal(tq_queue_session_show(f->q, "nope", &si, &err), TQ_ENOTFOUND);
	assert_non_null(strstr(err.msg, "nope"));
	tq_session_info_release(&si);
}

/* A worker fenced out (its lease moved on) cannot advance the session. */
static void test_fenced_finish_does_not_advance(void **state)
{
	struct fx *f = *state;
	int64_t a = submit(f->q, (struct opts){ .session = "k3" });
	struct tq_result r = agent_result("s-stale", 0, 0);
	int at = claim(f->q, a);

	assert_int_equal(finish(f->q, a, at + 1, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &r),
			 TQ_ESTALE);
	assert_session(f->q, "k3", NULL);
	assert_int_equal(finish(f->q, a, at, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &r), 0);
	assert_session(f->q, "k3", "s-stale");
}

/* An older link retried by hand and succeeding does not move the session
 * back from a later link's. */
static void test_older_link_does_not_move_back(void **state)
{
	struct fx *f = *state;
	int64_t a = submit(f->q, (struct opts){ .session = "k4" });
	int64_t b = submit(f->q, (struct opts){ .session = "k4" });
	struct tq_result ra = agent_result("s-a1", 0, 0), rb = agent_result("s-b", 0, 0);
	struct tq_result ra2 = agent_result("s-a2", 0, 0);
	struct tq_err err = TQ_ERR_INIT;

	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &ra), 0);
	assert_session(f->q, "k4", "s-a1");
	assert_int_equal(finish(f->q, b, claim(f->q, b), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &rb), 0);
	assert_session(f->q, "k4", "s-b");
	assert_int_equal(tq_queue_retry(f->q, a, &err), 0);
	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &ra2), 0);
	assert_session(f->q, "k4", "s-b");
}

/* ------------------------------------------------------------------ */
/* Stored fields, list cost                                           */

static void test_result_stored(void **state)
{
	struct fx *f = *state;
	int64_t a = submit(f->q, (struct opts){ 0 });
	int64_t b = submit(f->q, (struct opts){ 0 });
	int64_t c = submit(f->q, (struct opts){ 0 });
	struct tq_result r1 = agent_result("s1", 1, 0.125), r2 = agent_result("s2", 0, 0.25);
	struct tq_result nocost = agent_result("s3", 0, -1);
	struct tq_attempt *att = NULL;
	struct tq_task *tasks = NULL;
	struct tq_filter fl = TQ_FILTER_INIT;
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0;
	char path[600];
	sqlite3 *db;
	sqlite3_stmt *st;

	/* a: two attempts with results, costs summed; b: a cost not reported;
	 * c: no result at all */
	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_FAILED, TQ_NEXT_RETRY, &r1), 0);
	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &r2), 0);
	assert_int_equal(finish(f->q, b, claim(f->q, b), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL,
				&nocost), 0);
	assert_int_equal(finish(f->q, c, claim(f->q, c), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, NULL), 0);

	assert_int_equal(tq_queue_attempts(f->q, a, &att, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(att[0].has_result, 1);
	assert_int_equal(att[0].is_error, 1);
	assert_string_equal(att[0].result, "the answer");
	assert_string_equal(att[0].agent_session, "s1");
	assert_string_equal(att[0].model, "claude-opus-4-8");
	assert_true(att[0].cost_usd == 0.125);
	assert_int_equal(att[0].input_tokens, 100);
	assert_int_equal(att[0].output_tokens, 20);
	assert_int_equal(att[0].cache_read_tokens, 1000);
	assert_int_equal(att[0].cache_creation_tokens, 50);
	assert_int_equal(att[0].num_turns, 2);
	assert_int_equal(att[0].duration_ms, 1500);
	assert_int_equal(att[1].is_error, 0);
	tq_attempt_list_free(att, n);
	assert_int_equal(tq_queue_attempts(f->q, b, &att, &n, &err), 0);
	assert_int_equal(att[0].has_result, 1);
	assert_true(att[0].cost_usd < 0);
	tq_attempt_list_free(att, n);
	assert_int_equal(tq_queue_attempts(f->q, c, &att, &n, &err), 0);
	assert_int_equal(att[0].has_result, 0);
	assert_true(att[0].cost_usd == 0);
	tq_attempt_list_free(att, n);

	/* as the sqlite3 shell sees it: a cost not reported is NULL */
	snprintf(path, sizeof(path), "%s/taskq.db", f->state);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT cost_usd IS NULL, agent_session, result"
					    " FROM attempts WHERE task_id = ?1", -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, b);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	assert_string_equal((const char *)sqlite3_column_text(st, 1), "s3");
	assert_string_equal((const char *)sqlite3_column_text(st, 2), "the answer");
	sqlite3_finalize(st);
	sqlite3_close(db);

	/* list: newest first, a's cost summed, b's and c's absent */
	assert_int_equal(tq_queue_list(f->q, &fl, &tasks, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(tasks[2].id, a);
	assert_int_equal(tasks[2].has_cost, 1);
	assert_true(fabs(tasks[2].cost_usd - 0.375) < 1e-12);
	assert_int_equal(tasks[1].has_cost, 0);
	assert_int_equal(tasks[0].has_cost, 0);
	tq_task_list_free(tasks, n);
	/* a filtered list (a sorted plan) has the costs too */
	fl.states = 1u << TQ_SUCCEEDED;
	assert_int_equal(tq_queue_list(f->q, &fl, &tasks, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(tasks[2].has_cost, 1);
	tq_task_list_free(tasks, n);
}

/* ------------------------------------------------------------------ */
/* Stats                                                              */

static void get_stats(struct tq_queue *q, struct tq_stats_filter fl, struct tq_stats *s)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_stats(q, &fl, s, &err) != 0)
		fail_msg("stats: %s", err.msg);
}

static void test_stats(void **state)
{
	struct fx *f = *state;
	int64_t a = submit(f->q, (struct opts){ .batch = "b1", .group = "g1" });
	int64_t b = submit(f->q, (struct opts){ .batch = "b1", .group = "g1" });
	int64_t c = submit(f->q, (struct opts){ .batch = "b2", .group = "g1" });
	int64_t d = submit(f->q, (struct opts){ .group = "g1" });
	struct tq_result ra = agent_result("sa", 1, 0.5), rb = agent_result("sb", 0, 1.0);
	struct tq_result rc = agent_result("sc", 0, -1);
	struct tq_stats s;
	sqlite3 *db;
	char path[600];
	int at;

	rc.model = "gemini-2.5-pro";
	rc.input_tokens = 7;
	/* a: rate limit, retried, then succeeded with the same result
	 * shape; b: failed for good; c: gemini, no cost; d: a plain command
	 * still running */
	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_FAILED, TQ_NEXT_RETRY, &ra), 0);
	assert_int_equal(finish(f->q, a, claim(f->q, a), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &rb), 0);
	assert_int_equal(finish(f->q, b, claim(f->q, b), TQ_OUT_FAILED, TQ_NEXT_FINAL, &ra), 0);
	assert_int_equal(finish(f->q, c, claim(f->q, c), TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, &rc), 0);
	at = claim(f->q, d);
	assert_int_equal(at, 1);

	get_stats(f->q, (struct tq_stats_filter)TQ_STATS_FILTER_INIT, &s);
	assert_int_equal(s.tasks, 4);
	assert_int_equal(s.total.attempts, 5);
	assert_int_equal(s.total.results, 4);
	assert_int_equal(s.total.errors, 2);
	assert_int_equal(s.total.costed, 3);
	assert_true(fabs(s.total.cost_usd - 2.0) < 1e-12);
	assert_int_equal(s.total.input_tokens, 307);
	assert_int_equal(s.total.output_tokens, 80);
	assert_int_equal(s.total.cache_read_tokens, 4000);
	assert_int_equal(s.total.cache_creation_tokens, 200);
	assert_int_equal(s.total.num_turns, 8);
	assert_int_equal(s.total.agent_ms, 6000);
	assert_int_equal(s.outcomes[TQ_OUT_SUCCEEDED], 2);
	assert_int_equal(s.outcomes[TQ_OUT_FAILED], 2);
	assert_int_equal(s.outcomes[TQ_OUT_NONE], 1);
	assert_int_equal(s.categories[TQ_CAT_RATE_LIMIT], 1);
	assert_int_equal(s.categories[TQ_CAT_UNKNOWN], 1);
	assert_int_equal(s.categories[TQ_CAT_NONE], 3);
	/* per model, costliest first; the plain command has no row */
	assert_int_equal(s.nmodels, 2);
	assert_string_equal(s.models[0].model, "claude-opus-4-8");
	assert_int_equal(s.models[0].results, 3);
	assert_true(fabs(s.models[0].cost_usd - 2.0) < 1e-12);
	assert_string_equal(s.models[1].model, "gemini-2.5-pro");
	assert_int_equal(s.models[1].costed, 0);
	assert_int_equal(s.models[1].input_tokens, 7);
	tq_stats_release(&s);

	/* by batch (through its index), and by group */
	get_stats(f->q, (struct tq_stats_filter){ .batch = "b1" }, &s);
	assert_int_equal(s.tasks, 2);
	assert_int_equal(s.total.attempts, 3);
	assert_true(fabs(s.total.cost_usd - 2.0) < 1e-12);
	tq_stats_release(&s);
	get_stats(f->q, (struct tq_stats_filter){ .batch = "b2", .group = "g1" }, &s);
	assert_int_equal(s.tasks, 1);
	assert_int_equal(s.total.costed, 0);
	tq_stats_release(&s);
	get_stats(f->q, (struct tq_stats_filter){ .group = "other" }, &s);
	assert_int_equal(s.tasks, 0);
	assert_int_equal(s.total.attempts, 0);
	assert_int_equal(s.nmodels, 0);
	tq_stats_release(&s);
	get_stats(f->q, (struct tq_stats_filter){ .batch = "none" }, &s);
	assert_int_equal(s.total.attempts, 0);
	tq_stats_release(&s);

	/* since: move a's first attempt back a day; since 1h leaves it out */
	snprintf(path, sizeof(path), "%s/taskq.db", f->state);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, "UPDATE attempts SET started_at = started_at - 86400000,"
				      " ended_at = ended_at - 86400000 + 10"
				      " WHERE task_id = 1 AND attempt = 1", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	get_stats(f->q, (struct tq_stats_filter){ .since = tq_now_ms() - 3600 * 1000 }, &s);
	assert_int_equal(s.tasks, 4);
	assert_int_equal(s.total.attempts, 4);
	assert_true(fabs(s.total.cost_usd - 1.5) < 1e-12);
	assert_int_equal(s.categories[TQ_CAT_RATE_LIMIT], 0);
	tq_stats_release(&s);
	get_stats(f->q, (struct tq_stats_filter)TQ_STATS_FILTER_INIT, &s);
	assert_true(s.total.runtime_ms >= 10);
	tq_stats_release(&s);
}

static void test_stats_empty(void **state)
{
	struct fx *f = *state;
	struct tq_stats s;

	get_stats(f->q, (struct tq_stats_filter)TQ_STATS_FILTER_INIT, &s);
	assert_int_equal(s.tasks, 0);
	assert_int_equal(s.total.attempts, 0);
	assert_true(s.total.cost_usd == 0);
	assert_null(s.models);
	tq_stats_release(&s);
	tq_stats_release(NULL);
	tq_session_info_release(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_failed_link_does_not_advance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_advance_cases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fenced_finish_does_not_advance, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_older_link_does_not_move_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_result_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_empty, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_batch.c - batch.c against a real SQLite file in a temporary state
 * directory: batch counts, times and cost; group parallel limits (and the
 * claim honouring them); clearing finished tasks by age in bounded chunks
 * with their attempts, labels, cursors and logs, and one by one.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "common/sys.h"
#include "queue/logstore.h"
#include "queue/queue.h"

struct fx {
	char *home;
	struct tq_queue *q;
};

static char *argv_true[] = { "true", NULL };
static char *env_one[] = { "PATH=/usr/bin:/bin", NULL };

/* The state directory setup opened f->q in (the store does not say it). */
static char state_home[512];

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tq_err err = TQ_ERR_INIT;

	assert_non_null(f);
	f->home = th_tempdir();
	assert_non_null(f->home);
	snprintf(state_home, sizeof(state_home), "%s/state", f->home);
	if (tq_queue_open(&f->q, state_home, 0, &err) != 0)
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

static int64_t submit(struct tq_queue *q, const char *batch, const char *group)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	struct tq_label label = { "k", "v" };
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = 0;

	s.argv = argv_true;
	s.argc = 1;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	s.batch = batch;
	s.group = group;
	s.labels = &label;
	s.nlabels = 1;
	if (tq_queue_submit(q, &s, &id, NULL, &err) != 0)
		fail_msg("submit: %s", err.msg);
	return id;
}

/* Run SQL with SQLite itself; the first column of the first row, or 0. */
static int64_t sql_int(struct tq_queue *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int64_t sql_int(struct tq_queue *q, const char *fmt, ...)
{
	char path[1024], sql[1024];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = 0;
	va_list ap;
	int rc;
	(void)q; /* its database is state_home's */

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/taskq.db", state_home);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (v == 0)
			v = sqlite3_column_int64(st, 0);
	if (rc != SQLITE_DONE)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* Make task id finished in state at finished_at, with one attempt. */
static void finish_as(struct tq_queue *q, int64_t id, const char *state, int64_t at,
		      double cost)
{
	sql_int(q, "UPDATE tasks SET state = '%s', outcome = '%s', started_at = %lld,"
		" finished_at = %lld, attempt = 1 WHERE id = %lld", state,
		strcmp(state, "succeeded") == 0 ? "succeeded" : "failed",
		(long long)(at - 1000), (long long)at, (long long)id);
	if (cost >= 0)
		sql_int(q, "INSERT INTO attempts(task_id, attempt, started_at, ended_at, cost_usd)"
			" VALUES (%lld, 1, %lld, %lld, %f)", (long long)id,
			(long long)(at - 1000), (long long)at, cost);
	else
		sql_int(q, "INSERT INTO attempts(task_id, attempt, started_at, ended_at)"
			" VALUES (%lld, 1, %lld, %lld)", (long long)id,
			(long long)(at - 1000), (long long)at);
}

static void make_log(struct tq_queue *q, int64_t id)
{
	char path[1024];
	int fd;

	assert_int_equal(tq_log_export(q, id, path, sizeof(path), NULL), 0);
	fd = tq_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, "o\n", 2), 0);
	tq_close(fd);
	/* and its index */
	snprintf(path + strlen(path) - 4, 5, ".idx");
	fd = tq_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	tq_close(fd);
}

static int log_exists(struct tq_queue *q, int64_t id)
{
	char path[1024];

	assert_int_equal(tq_log_export(q, id, path, sizeof(path), NULL), 0);
	return access(path, F_OK) == 0;
}

/* ------------------------------------------------------------------ */

static void test_batches(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_batch *list = NULL, b;
	size_t n = 9;
	int64_t now = tq_now_ms();
	int64_t a1, a2, a3, b1, open = -1;

	assert_int_equal(tq_queue_batches(f->q, &list, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(list);
	a1 = submit(f->q, "a", NULL);
	a2 = submit(f->q, "a", NULL);
	a3 = submit(f->q, "a", NULL);
	submit(f->q, NULL, NULL);
	b1 = submit(f->q, "b", NULL);
	finish_as(f->q, a1, "succeeded", now - 5000, 0.25);
	finish_as(f->q, a2, "failed", now - 2000, 0.5);
	(void)a3;

	assert_int_equal(tq_queue_batch_get(f->q, "a", &b, &err), 0);
	assert_string_equal(b.name, "a");
	assert_int_equal(b.total, 3);
	assert_int_equal(b.counts[TQ_SUCCEEDED], 1);
	assert_int_equal(b.counts[TQ_FAILED], 1);
	assert_int_equal(b.counts[TQ_QUEUED], 1);
	assert_int_equal(b.counts[TQ_RUNNING], 0);
	assert_false(tq_batch_done(&b));
	assert_true(b.has_cost);
	assert_true(b.cost_usd > 0.749 && b.cost_usd < 0.751);
	assert_int_equal(b.first_started, now - 6000);
	assert_int_equal(b.last_finished, now - 2000);
	assert_true(b.first_created > 0 && b.first_created <= b.last_created);
	tq_batch_release(&b);

	/* a retry's backoff (scheduled) is not done either */
	sql_int(f->q, "UPDATE tasks SET state = 'scheduled', run_after = %lld WHERE id = %lld",
		(long long)(now + 60000), (long long)a3);
	assert_int_equal(tq_queue_batch_get(f->q, "a", &b, &err), 0);
	assert_int_equal(b.counts[TQ_SCHEDULED], 1);
	assert_false(tq_batch_done(&b));
	tq_batch_release(&b);
	assert_int_equal(tq_queue_batch_open(f->q, "a", &open, &err), 0);
	assert_int_equal(open, 1);
	finish_as(f->q, a3, "timed_out", now, -1);
	assert_int_equal(tq_queue_batch_get(f->q, "a", &b, &err), 0);
	assert_true(tq_batch_done(&b));
	assert_int_equal(b.counts[TQ_TIMED_OUT], 1);
	tq_batch_release(&b);

	/* no cost reported: has_cost 0 */
	assert_int_equal(tq_queue_batch_get(f->q, "b", &b, &err), 0);
	assert_int_equal(b.total, 1);
	assert_false(b.has_cost);
	assert_int_equal(b.first_started, 0);
	tq_batch_release(&b);

	assert_int_equal(tq_queue_batch_open(f->q, "a", &open, &err), 0);
	assert_int_equal(open, 0);
	assert_int_equal(tq_queue_batch_open(f->q, "b", &open, &err), 0);
	assert_int_equal(open, 1);
	assert_int_equal(tq_queue_batch_open(f->q, "nope", &open, &err), 0);
	assert_int_equal(open, 0);
	assert_int_equal(tq_queue_batch_get(f->q, "nope", &b, &err), TQ_ENOTFOUND);
	assert_non_null(strstr(err.msg, "batch nope"));
	assert_null(b.name);

	/* the list: the batch submitted to last first */
	assert_int_equal(tq_queue_batches(f->q, &list, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].name, "b");
	assert_string_equal(list[1].name, "a");
	assert_int_equal(list[1].total, 3);
	assert_int_equal(list[0].counts[TQ_QUEUED], 1);
	(void)b1;
	tq_batch_list_free(list, n);
}

static int64_t claim_id(struct tq_queue *q)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int64_t id;
	int rc = tq_queue_claim(q, 1, 60000, &t, NULL, &err);

	if (rc == TQ_ENOTFOUND)
		return 0;
	if (rc != 0)
		fail_msg("claim: %s", err.msg);
	id = t.id;
	tq_task_release(&t);
	return id;
}

static void test_group_parallel(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_group *gs = NULL;
	size_t n = 0;
	int64_t s1, s2, m1, m2, c1, c2, c3;

	/* a group nobody used yet is created with the limit */
	assert_int_equal(tq_queue_group_set_parallel(f->q, "solo", 1, &err), 0);
	assert_int_equal(sql_int(f->q, "SELECT parallel FROM groups WHERE name = 'solo'"), 1);
	assert_int_equal(tq_queue_group_set_parallel(f->q, "solo", -1, &err), TQ_EINVAL);
	assert_int_equal(tq_queue_group_set_parallel(f->q, "solo", TQ_PARALLEL_MAX + 1, &err),
			 TQ_EINVAL);
	assert_int_equal(tq_queue_group_set_parallel(f->q, "", 1, &err), TQ_EINVAL);

	s1 = submit(f->q, NULL, "solo");
	s2 = submit(f->q, NULL, "solo");
	m1 = submit(f->q, NULL, "multi");
	m2 = submit(f->q, NULL, "multi");
	/* one of solo runs; the other waits while multi's both start */
	c1 = claim_id(f->q);
	c2 = claim_id(f->q);
	c3 = claim_id(f->q);
	assert_int_equal(claim_id(f->q), 0);
	assert_true((c1 == s1) + (c2 == s1) + (c3 == s1) == 1);
	assert_true((c1 == m1 || c2 == m1 || c3 == m1) && (c1 == m2 || c2 == m2 || c3 == m2));
	assert_int_equal(tq_queue_groups(f->q, &gs, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(gs[i].name, "solo") == 0) {
			assert_int_equal(gs[i].parallel, 1);
			assert_int_equal(gs[i].running, 1);
			assert_int_equal(gs[i].queued, 1);
		}
	tq_group_list_free(gs, n);
	/* raising the limit lets the second start */
	assert_int_equal(tq_queue_group_set_parallel(f->q, "solo", 0, &err), 0);
	assert_int_equal(claim_id(f->q), s2);
}

static void test_clear_finished(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t now = tq_now_ms(), day = 24 * 3600 * 1000LL, got = -1;
	int64_t old[5], fresh, queued;

	for (int i = 0; i < 5; i++) {
		old[i] = submit(f->q, "x", NULL);
		finish_as(f->q, old[i], i % 2 ? "failed" : "succeeded", now - 10 * day + i, 0.1);
		make_log(f->q, old[i]);
	}
	sql_int(f->q, "INSERT INTO cursors(task_id, reader, line, updated_at) VALUES (%lld, 'r',"
		" 3, 1)", (long long)old[0]);
	fresh = submit(f->q, "x", NULL);
	finish_as(f->q, fresh, "succeeded", now - 1000, -1);
	make_log(f->q, fresh);
	queued = submit(f->q, "x", NULL);
	/* an old created_at/run_after does not matter: only finished tasks go */
	sql_int(f->q, "UPDATE tasks SET created_at = 1 WHERE id = %lld", (long long)queued);

	/* chunks of 2: 2, 2, 1, then nothing; the oldest first */
	assert_int_equal(tq_queue_clear_finished(f->q, now - 7 * day, 2, &got, &err), 0);
	assert_int_equal(got, 2);
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM tasks WHERE id IN (%lld, %lld)",
				 (long long)old[0], (long long)old[1]), 0);
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM tasks WHERE id = %lld",
				 (long long)old[2]), 1);
	assert_false(log_exists(f->q, old[0]));
	assert_true(log_exists(f->q, old[2]));
	assert_int_equal(tq_queue_clear_finished(f->q, now - 7 * day, 2, &got, &err), 0);
	assert_int_equal(got, 2);
	assert_int_equal(tq_queue_clear_finished(f->q, now - 7 * day, 2, &got, &err), 0);
	assert_int_equal(got, 1);
	assert_int_equal(tq_queue_clear_finished(f->q, now - 7 * day, 2, &got, &err), 0);
	assert_int_equal(got, 0);
	/* every row of theirs went with them */
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM attempts WHERE task_id < %lld",
				 (long long)fresh), 0);
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM labels WHERE task_id < %lld",
				 (long long)fresh), 0);
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM cursors"), 0);
	for (int i = 0; i < 5; i++)
		assert_false(log_exists(f->q, old[i]));
	/* the rest stays */
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM tasks"), 2);
	assert_true(log_exists(f->q, fresh));
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM attempts WHERE task_id = %lld",
				 (long long)fresh), 1);

	/* every finished task, whatever its age */
	assert_int_equal(tq_queue_clear_finished(f->q, INT64_MAX, 100, &got, &err), 0);
	assert_int_equal(got, 1);
	assert_false(log_exists(f->q, fresh));
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM tasks WHERE id = %lld",
				 (long long)queued), 1);
	assert_int_equal(tq_queue_clear_finished(f->q, INT64_MAX, 0, &got, &err), 0);
	assert_int_equal(got, 0);
}

static void test_clear_task(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	enum tq_state was = TQ_SUCCEEDED;
	int64_t done = submit(f->q, NULL, NULL), open = submit(f->q, NULL, NULL);

	finish_as(f->q, done, "failed", tq_now_ms(), -1);
	assert_int_equal(tq_queue_clear_task(f->q, open, &was, &err), TQ_ESTATE);
	assert_int_equal(was, TQ_QUEUED);
	assert_non_null(strstr(err.msg, "is queued, not finished"));
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM tasks WHERE id = %lld",
				 (long long)open), 1);
	assert_int_equal(tq_queue_clear_task(f->q, done, &was, &err), 0);
	assert_int_equal(was, TQ_FAILED);
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM tasks WHERE id = %lld",
				 (long long)done), 0);
	assert_int_equal(sql_int(f->q, "SELECT count(*) FROM attempts"), 0);
	assert_int_equal(tq_queue_clear_task(f->q, done, NULL, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_queue_clear_task(f->q, 9999, NULL, &err), TQ_ENOTFOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_parallel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clear_finished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clear_task, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

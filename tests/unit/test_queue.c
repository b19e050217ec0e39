/*
 * test_queue.c - the store against a real SQLite file in a temporary state
 * directory: creation and refused opens, submit/get round trips, claim order
 * and concurrency across processes, fencing, retries, dependencies, unique
 * keys, cancel and remove. Databases are inspected with SQLite directly too.
 *
 * With TASKQ_TEST_PG set to a PostgreSQL URL (tests/run starts a throwaway
 * cluster and sets it for the test "queue_pg"), the same tests run against
 * the PostgreSQL backend instead: each test gets a fresh schema of its own
 * (tq_t<pid>, through the URL's options=-csearch_path), and sql_int runs its
 * SQL there. The tests of SQLite's own files (modes, migrations, corrupt
 * and locked databases) are skipped there; test_pg_* are PostgreSQL's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "common/sys.h"
#include "queue/home.h"
#include "queue/queue.h"
#include "queue/store.h"
#include "queue/pg/internal.h"

struct fx {
	char *home;
	struct tq_queue *q;
};

static char *argv_true[] = { "true", NULL };
static char *env_one[] = { "PATH=/usr/bin:/bin", NULL };

/* The state directory setup opened f->q in (the store does not say it). */
static char state_home[512];

/* PostgreSQL (TASKQ_TEST_PG): the URL given, this process's schema, the
 * store's URL with that schema first on its search_path, and a connection
 * of the test's own for sql_int and the resets. */
static const char *pg_base;
static char pg_schema[32];
static char pg_url[1024];
static PGconn *pg_conn;

/* What setup opens the store at: the state directory, or the URL. */
static const char *store_at(void)
{
	return pg_base ? pg_url : state_home;
}

static void pg_run(const char *sql)
{
	PGresult *r = tq_pq->exec(pg_conn, sql);
	ExecStatusType st = r ? tq_pq->result_status(r) : PGRES_FATAL_ERROR;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, tq_pq->error_message(pg_conn));
	tq_pq->clear(r);
}

static int group_setup(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	char sql[128];

	(void)state;
	if (pg_base == NULL)
		return 0;
	if (tq_pq_load(&err) < 0)
		fail_msg("%s", err.msg);
	snprintf(pg_schema, sizeof(pg_schema), "tq_t%ld", (long)getpid());
	if ((size_t)snprintf(pg_url, sizeof(pg_url), "%s%soptions=-csearch_path%%3D%s", pg_base,
			     strchr(pg_base, '?') ? "&" : "?", pg_schema) >= sizeof(pg_url))
		fail_msg("TASKQ_TEST_PG is too long");
	pg_conn = tq_pq->connectdb(pg_base);
	if (tq_pq->status(pg_conn) != CONNECTION_OK)
		fail_msg("TASKQ_TEST_PG: %s", tq_pq->error_message(pg_conn));
	snprintf(sql, sizeof(sql), "SET client_min_messages = warning; SET search_path = %s",
		 pg_schema);
	pg_run(sql);
	return 0;
}

static int group_teardown(void **state)
{
	char sql[96];

	(void)state;
	if (pg_base == NULL)
		return 0;
	snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", pg_schema);
	pg_run(sql);
	tq_pq->finish(pg_conn);
	return 0;
}

/* A test of SQLite's own files: skipped on PostgreSQL. */
#define SQLITE_ONLY() do { if (pg_base != NULL) skip(); } while (0)

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tq_err err = TQ_ERR_INIT;
	char sql[128];

	assert_non_null(f);
	f->home = th_tempdir();
	assert_non_null(f->home);
	snprintf(state_home, sizeof(state_home), "%s/state", f->home);
	if (pg_base != NULL) {
		snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s",
			 pg_schema, pg_schema);
		pg_run(sql);
	}
	if (tq_queue_open(&f->q, store_at(), 0, &err) != 0)
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

static struct tq_task_spec spec_of(char **argv)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	size_t n = 0;

	while (argv[n])
		n++;
	s.argv = argv;
	s.argc = n;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	return s;
}

static int64_t submit(struct tq_queue *q, struct tq_task_spec *s)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = 0;

	if (tq_queue_submit(q, s, &id, NULL, &err) != 0)
		fail_msg("submit: %s", err.msg);
	return id;
}

static int64_t submit_simple(struct tq_queue *q, int64_t prio, const char *group)
{
	struct tq_task_spec s = spec_of(argv_true);

	s.priority = prio;
	s.group = group;
	return submit(q, &s);
}

static int64_t claim_id(struct tq_queue *q, int *attempt)
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
	if (attempt)
		*attempt = t.attempt;
	tq_task_release(&t);
	return id;
}

static void finish(struct tq_queue *q, int64_t id, int attempt, enum tq_outcome o,
		   enum tq_next next, int64_t retry_at)
{
	struct tq_finish f = { .task_id = id, .attempt = attempt, .worker_id = 1,
			       .outcome = o, .exit_code = o == TQ_OUT_SUCCEEDED ? 0 : 1,
			       .next = next, .retry_at = retry_at };
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_finish(q, &f, NULL, &err) != 0)
		fail_msg("finish %lld: %s", (long long)id, err.msg);
}

static enum tq_state state_of(struct tq_queue *q, int64_t id)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	enum tq_state s;

	if (tq_queue_get(q, id, 0, &t, &err) != 0)
		fail_msg("get %lld: %s", (long long)id, err.msg);
	s = t.state;
	tq_task_release(&t);
	return s;
}

/* Run one SQL statement on the database with SQLite itself; returns the
 * first column of the first row as an integer (or 0). */
static int64_t sql_int(const char *home, const char *sql)
{
	char path[512];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (pg_base != NULL) {
		PGresult *r = tq_pq->exec(pg_conn, sql);
		ExecStatusType rs = r ? tq_pq->result_status(r) : PGRES_FATAL_ERROR;

		if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK)
			fail_msg("%s: %s", sql, tq_pq->error_message(pg_conn));
		if (rs == PGRES_TUPLES_OK && tq_pq->ntuples(r) > 0 && !tq_pq->getisnull(r, 0, 0)) {
			const char *t = tq_pq->getvalue(r, 0, 0);

			/* a boolean reads as SQLite's 1 or 0 */
			v = strcmp(t, "t") == 0 ? 1 : strcmp(t, "f") == 0 ? 0 : strtoll(t, NULL, 10);
		}
		tq_pq->clear(r);
		return v;
	}
	snprintf(path, sizeof(path), "%s/taskq.db", home);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* ------------------------------------------------------------------ */

static void test_open_creates(void **state)
{
	const char *home = state_home;
	char path[600];
	struct stat sb;
	SQLITE_ONLY();

	(void)state;
	assert_int_equal(stat(home, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/taskq.db", home);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/logs", home);
	assert_int_equal(stat(path, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sql_int(home, "PRAGMA user_version"), 12);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM pragma_journal_mode "
				 "WHERE journal_mode = 'wal'"), 1);
	assert_int_equal(sql_int(home, "PRAGMA application_id"), 1953721201);
}

static void test_reopen_and_newer(void **state)
{
	struct fx *f = *state;
	struct tq_queue *q2 = NULL;
	struct tq_err err = TQ_ERR_INIT;
	char home[512];
	int64_t id = submit_simple(f->q, 0, NULL);
	SQLITE_ONLY();

	snprintf(home, sizeof(home), "%s", state_home);
	tq_queue_close(f->q);
	f->q = NULL;
	assert_int_equal(tq_queue_open(&q2, home, TQ_OPEN_CHECK, &err), 0);
	assert_int_equal(state_of(q2, id), TQ_QUEUED);
	tq_queue_close(q2);
	sql_int(home, "PRAGMA user_version = 99");
	assert_int_equal(tq_queue_open(&q2, home, 0, &err), TQ_ENEWER);
	assert_null(q2);
	assert_non_null(strstr(err.msg, "newer than this taskq"));
	/* Nothing stored was lost: the row is still there. */
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks"), 1);
}

/* The task a worker runs under its lease, as tq_queue_workers says; 0: none. */
static int64_t worker_task(struct tq_queue *q, int64_t wid)
{
	struct tq_worker_info *ws = NULL;
	struct tq_err err = TQ_ERR_INIT;
	int64_t task = -1;
	size_t n = 0;

	if (tq_queue_workers(q, &ws, &n, &err) != 0)
		fail_msg("workers: %s", err.msg);
	for (size_t i = 0; i < n; i++)
		if (ws[i].id == wid)
			task = ws[i].task_id;
	free(ws);
	return task;
}

/* The claim makes the worker's task the one it claimed and says whether more
 * is waiting (not counting a paused group); the finish leaves it idle; the
 * worker's row is written by neither (its heartbeat is its own);
 * tq_queue_runnable sees due scheduled tasks too. */
static void test_claim_marks_worker(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	const char *home = state_home;
	struct tq_task t;
	int64_t wid = 0, a, b;
	int more = -1;

	assert_int_equal(tq_queue_worker_add(f->q, "h1", (int)getpid(), 1, 1, (int)getppid(),
					     &wid, &err), 0);
	assert_int_equal(wid, 1); /* the id finish() and claim_id() use */
	a = submit_simple(f->q, 0, NULL);
	b = submit_simple(f->q, 0, NULL);
	submit_simple(f->q, 0, "held");
	assert_int_equal(tq_queue_group_pause(f->q, "held", &err), 0);

	assert_int_equal(tq_queue_claim(f->q, wid, 60000, &t, &more, &err), 0);
	assert_int_equal(t.id, a);
	assert_int_equal(more, 1);
	assert_int_equal(worker_task(f->q, wid), a);
	finish(f->q, a, t.attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	tq_task_release(&t);
	assert_int_equal(worker_task(f->q, wid), 0);
	/* neither wrote the worker's row: a page less in each transaction */
	assert_int_equal(sql_int(home, "SELECT task_id IS NULL AND heartbeat_at = started_at"
				 " FROM workers WHERE id = 1"), 1);

	assert_int_equal(tq_queue_claim(f->q, wid, 60000, &t, &more, &err), 0);
	assert_int_equal(t.id, b);
	assert_int_equal(more, 0); /* only the paused group's task is left */
	assert_int_equal(worker_task(f->q, wid), b);
	tq_task_release(&t);

	/* the same answer for drain: nothing; then a scheduled task falls due */
	assert_int_equal(tq_queue_runnable(f->q, tq_now_ms(), &more, &err), 0);
	assert_int_equal(more, 0);
	{
		struct tq_task_spec s = spec_of(argv_true);
		int64_t c;

		s.run_after = tq_now_ms() + 60000;
		c = submit(f->q, &s);
		assert_int_equal(state_of(f->q, c), TQ_SCHEDULED);
		assert_int_equal(tq_queue_runnable(f->q, tq_now_ms(), &more, &err), 0);
		assert_int_equal(more, 0);
		assert_int_equal(tq_queue_runnable(f->q, tq_now_ms() + 61000, &more, &err), 0);
		assert_int_equal(more, 1);
	}
}

/* An environment row goes with the last task that uses it. */
static void test_envs_collected(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	static char *env_two[] = { "B=2", NULL };
	struct tq_task_spec s = spec_of(argv_true);
	const char *home = state_home;
	int64_t a1 = submit(f->q, &s), a2 = submit(f->q, &s), b;

	s.env = env_two;
	b = submit(f->q, &s);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 2);
	assert_int_equal(tq_queue_remove(f->q, b, &err), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 1);
	assert_int_equal(tq_queue_remove(f->q, a1, &err), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 1);
	assert_int_equal(tq_queue_remove(f->q, a2, &err), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 0);
	/* the same environment again: a new row, used */
	a1 = submit(f->q, &s);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs e JOIN tasks t"
				 " ON t.env_id = e.id"), 1);
}

/* Schema 2 -> 3: the trigger comes, the rows schema 2 left are collected,
 * and meta becomes one b-tree with its rows. */
static void test_migrate_2_to_3(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q2 = NULL;
	char home[512];
	int64_t id = submit_simple(f->q, 0, NULL);
	SQLITE_ONLY();

	snprintf(home, sizeof(home), "%s", state_home);
	tq_queue_close(f->q);
	f->q = NULL;
	sql_int(home, "DROP TRIGGER envs_collect");
	sql_int(home, "INSERT INTO envs(hash, data) VALUES (7, x'413d3100')");
	sql_int(home, "DROP TABLE meta");
	sql_int(home, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)");
	sql_int(home, "INSERT INTO meta(key, value) VALUES ('x-test', '123')");
	sql_int(home, "PRAGMA user_version = 2");
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 2);
	/* 2 -> 3, then 3 -> 4 over columns the database already has */
	assert_int_equal(tq_queue_open(&q2, home, 0, &err), 0);
	assert_int_equal(sql_int(home, "PRAGMA user_version"), 12);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema"
				 " WHERE type = 'trigger' AND name = 'envs_collect'"), 1);
	/* meta is one b-tree now, its rows kept */
	assert_int_equal(sql_int(home, "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_schema"
				 " WHERE name = 'meta'"), 1);
	assert_int_equal(sql_int(home, "SELECT value FROM meta WHERE key = 'x-test'"), 123);
	assert_int_equal(state_of(q2, id), TQ_QUEUED);
	assert_int_equal(tq_queue_remove(q2, id, &err), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM envs"), 0);
	f->q = q2;
}

/*
 * A database made by taskq 3's own schema (tests/fixtures/schema-3.sql, the
 * schema.sql of version 3 byte for byte) in home, holding what its code
 * stored, with user_version set to `version` (3, or older as a user may set
 * it back by hand: every migration must run on it):
 *   1 succeeded, 2 queued, 3 blocked --after 1, 2 and a removed 99,
 *   4 blocked --after-any 3; session k: 5 succeeded in /a (it advanced the
 *   session), 6 queued in /b; session j: 7 queued in /c, no sessions row.
 */
static void make_v3(const char *home, int version)
{
	const char *fx = getenv("TASKQ_FIXTURES");
	char path[1024], *schema = NULL, sql[128];
	sqlite3 *db = NULL;
	FILE *fp;
	long n;

	assert_non_null(fx);
	snprintf(path, sizeof(path), "%s/schema-3.sql", fx);
	assert_non_null(fp = fopen(path, "re"));
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	assert_true((n = ftell(fp)) > 0);
	rewind(fp);
	assert_non_null(schema = calloc(1, (size_t)n + 1));
	assert_int_equal(fread(schema, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	assert_int_equal(mkdir(home, 0700), 0);
	snprintf(path, sizeof(path), "%s/taskq.db", home);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(chmod(path, 0600), 0);
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("schema-3.sql: %s", sqlite3_errmsg(db));
	free(schema);
	assert_int_equal(sql_int(home, "PRAGMA user_version"), 3);
#define V3_TASK(id, state, cwd, session) \
	"INSERT INTO tasks(id, state, name, argv, cwd, grp, session, created_at," \
	" timeout_ms, kill_grace_ms, max_output) VALUES (" #id ", '" state "', 't'," \
	" x'7472756500', '" cwd "', 'true', " session ", 1, 0, 0, 0);"
	if (sqlite3_exec(db, "BEGIN;"
		V3_TASK(1, "succeeded", "/", "NULL") V3_TASK(2, "queued", "/", "NULL")
		V3_TASK(3, "blocked", "/", "NULL") V3_TASK(4, "blocked", "/", "NULL")
		V3_TASK(5, "succeeded", "/a", "'k'") V3_TASK(6, "queued", "/b", "'k'")
		V3_TASK(7, "queued", "/c", "'j'")
		"INSERT INTO deps(task_id, dep_id, kind) VALUES (3, 1, 'success'),"
		" (3, 2, 'success'), (3, 99, 'success'), (4, 3, 'any');"
		"INSERT INTO groups(name) VALUES ('true');"
		"INSERT INTO sessions(key, agent_session, last_task_id, updated_at)"
		" VALUES ('k', 'S', 5, 7);"
		"COMMIT;", NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("v3 rows: %s", sqlite3_errmsg(db));
#undef V3_TASK
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* What migrations/004.sql (and 005.sql after it) must leave of make_v3's
 * database. */
static void check_v4(struct tq_queue *q, const char *home)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int attempt = 0;

	assert_int_equal(sql_int(home, "PRAGMA user_version"), 12);
	/* 010: the supervisors' rows, one a node */
	assert_int_equal(sql_int(home, "SELECT count(*) FROM supervisors"), 0);
	/* 009: no index on the lease (every claim, finish and renewal wrote it) */
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema"
				 " WHERE name = 'tasks_lease'"), 0);
	/* 005: no hook owed by a task stored before, and the index to find one */
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE on_exit_due != 0"), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema"
				 " WHERE type = 'index' AND name = 'tasks_on_exit'"), 1);
	/* the counts: 3 waits for 2 (1 ended, 99 is gone), 4 for 3 */
	assert_int_equal(sql_int(home, "SELECT deps_left FROM tasks WHERE id = 3"), 1);
	assert_int_equal(sql_int(home, "SELECT deps_left FROM tasks WHERE id = 4"), 1);
	assert_int_equal(sql_int(home, "SELECT sum(deps_left) FROM tasks"), 2);
	/* a session keeps the directory of the task that advanced it, else of
	 * its first task; the rows no task made yet are made */
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sessions WHERE key = 'k'"
				 " AND cwd = '/a' AND agent_session = 'S' AND updated_at = 7"), 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sessions WHERE key = 'j'"
				 " AND cwd = '/c' AND agent_session IS NULL AND updated_at = 0"), 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM groups WHERE probe = 0"
				 " AND probe_task IS NULL"), 1);
	/* tasks stored before: no umask (the worker's own), no stall timeout */
	assert_int_equal(tq_queue_get(q, 2, 0, &t, &err), 0);
	assert_int_equal(t.umask, -1);
	assert_int_equal(t.stall_timeout_ms, 0);
	tq_task_release(&t);
	assert_int_equal(tq_queue_get(q, 3, 0, &t, &err), 0);
	assert_int_equal(t.deps_left, 1);
	tq_task_release(&t);
	/* and the triggers keep them: 2 ends, 3 runs; 3 ends, 4 runs */
	assert_int_equal(tq_queue_cancel(q, 6, NULL, NULL, &err), 0);
	assert_int_equal(tq_queue_cancel(q, 7, NULL, NULL, &err), 0);
	assert_int_equal(claim_id(q, &attempt), 2);
	finish(q, 2, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(state_of(q, 3), TQ_QUEUED);
	assert_int_equal(claim_id(q, &attempt), 3);
	finish(q, 3, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	assert_int_equal(state_of(q, 4), TQ_QUEUED);
	assert_int_equal(sql_int(home, "SELECT sum(deps_left) FROM tasks"), 0);
}

/*
 * Schema 11 (migrations/011.sql): tasks without AUTOINCREMENT (its
 * sqlite_sequence row was a page of every submit), attempts WITHOUT ROWID
 * (its primary key was a second b-tree), tasks_state without the queued and
 * running tasks; ids never reused all the same. On a new database, and on
 * one of taskq 3 whose newest tasks were deleted before the migration (its
 * sqlite_sequence is past every id stored: the floor takes it over).
 */
static void check_schema_11(struct tq_queue *q, const char *home, int64_t newest)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t a, b;
	int attempt = 0;

	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema WHERE name = 'tasks'"
				 " AND sql LIKE '%PRIMARY KEY AUTOINCREMENT%'"), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema WHERE name = 'attempts'"
				 " AND sql LIKE '%WITHOUT ROWID'"), 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema"
				 " WHERE tbl_name = 'attempts' AND type = 'index'"), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_schema WHERE name = 'tasks_state'"
				 " AND sql LIKE '%WHERE state NOT IN (''queued'',''running'')'"), 1);
	/* the newest task deleted: its id is never given again, through a
	 * remove, nor through retention's clear of finished tasks */
	a = submit_simple(q, 0, NULL);
	assert_true(a > newest);
	b = submit_simple(q, 0, NULL);
	assert_int_equal(b, a + 1);
	assert_int_equal(tq_queue_remove(q, b, &err), 0);
	assert_int_equal(sql_int(home, "SELECT CAST(value AS INTEGER) FROM meta"
				 " WHERE key = 'tasks_id_floor'"), b);
	assert_int_equal(submit_simple(q, 0, NULL), b + 1);
	assert_int_equal(tq_queue_remove(q, b + 1, &err), 0);
	assert_int_equal(tq_queue_cancel(q, a, NULL, NULL, &err), 0);
	assert_int_equal(tq_queue_clear_task(q, a, NULL, &err), 0);
	assert_int_equal(submit_simple(q, 0, NULL), b + 2);
	/* tasks run (those queued before it first), each attempt one row of
	 * the one b-tree */
	for (int64_t id = 0; id != b + 2;) {
		assert_true((id = claim_id(q, &attempt)) > 0);
		finish(q, id, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	}
	assert_int_equal(sql_int(home, "SELECT count(*) FROM attempts WHERE task_id = "
				 "(SELECT max(id) FROM tasks) AND ended_at IS NOT NULL"), 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM pragma_integrity_check"
				 " WHERE integrity_check = 'ok'"), 1);
}

static void test_schema_11(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	char home[600];
	SQLITE_ONLY();

	check_schema_11(f->q, state_home, 0);
	/* taskq 3's database, its newest two tasks deleted (they had ids 6 and
	 * 7, the most sqlite_sequence holds) */
	snprintf(home, sizeof(home), "%s/v3", f->home);
	make_v3(home, 3);
	sql_int(home, "DELETE FROM tasks WHERE id >= 6");
	assert_int_equal(sql_int(home, "SELECT seq FROM sqlite_sequence WHERE name = 'tasks'"), 7);
	if (tq_queue_open(&q, home, 0, &err) != 0)
		fail_msg("open a version 3 database: %s", err.msg);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sqlite_sequence WHERE name = 'tasks'"), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks"), 5);
	assert_int_equal(sql_int(home, "SELECT deps_left FROM tasks WHERE id = 3"), 1);
	check_schema_11(q, home, 7);
	tq_queue_close(q);
}

/* Schema 3 -> 4 on a database taskq 3 made; and 1 -> 2 -> 3 -> 4 on the
 * same set back to version 1 by hand (every step over what it finds). */
static void test_migrate_3_to_4(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	char home[600];
	SQLITE_ONLY();

	for (int version = 3; version >= 1; version -= 2) {
		snprintf(home, sizeof(home), "%s/v%d", f->home, version);
		make_v3(home, version);
		if (tq_queue_open(&q, home, 0, &err) != 0)
			fail_msg("open a version %d database: %s", version, err.msg);
		check_v4(q, home);
		tq_queue_close(q);
		q = NULL;
		/* opened again: nothing more to do, nothing changed */
		assert_int_equal(tq_queue_open(&q, home, TQ_OPEN_CHECK, &err), 0);
		assert_int_equal(sql_int(home, "SELECT sum(deps_left) FROM tasks"), 0);
		tq_queue_close(q);
		q = NULL;
	}
}

/*
 * --on-exit hooks of ends no worker wrote: a final end written with
 * on_exit_started 0 (recovery: from an end record, a lost attempt) leaves
 * the hook owed, taken by exactly one of two connections; a worker's own
 * end (on_exit_started 1), an end that is not final (a retry), a task
 * without a hook owe nothing; a taken hook is never owed again.
 */
static void test_on_exit_owed_once(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q2 = NULL;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_task t;
	int64_t hooked, own, plain, retried;
	int attempt = 0, any = -1;

	s.on_exit = "echo done";
	hooked = submit(f->q, &s);
	own = submit(f->q, &s);
	retried = submit(f->q, &s);
	s.on_exit = NULL;
	plain = submit(f->q, &s);
	assert_int_equal(tq_queue_on_exit_due(f->q, &any, &err), 0);
	assert_int_equal(any, 0);

	/* recovery's end of hooked: owed */
	assert_int_equal(claim_id(f->q, &attempt), hooked);
	finish(f->q, hooked, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	/* a worker's own end: it runs the hook itself */
	assert_int_equal(claim_id(f->q, &attempt), own);
	{
		struct tq_finish fin = { .task_id = own, .attempt = attempt, .worker_id = 1,
					 .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0,
					 .on_exit_started = 1 };
		assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	}
	/* a retry is not the task's end */
	assert_int_equal(claim_id(f->q, &attempt), retried);
	finish(f->q, retried, attempt, TQ_OUT_FAILED, TQ_NEXT_RETRY, tq_now_ms() + 60000);
	/* no hook, nothing owed */
	assert_int_equal(claim_id(f->q, &attempt), plain);
	finish(f->q, plain, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);

	assert_int_equal(tq_queue_on_exit_due(f->q, &any, &err), 0);
	assert_int_equal(any, 1);
	assert_int_equal(tq_queue_open(&q2, store_at(), 0, &err), 0);
	/* another task's hook is not this one's */
	assert_int_equal(tq_queue_on_exit_take(q2, own, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_queue_on_exit_take(q2, 0, &t, &err), 0);
	assert_int_equal(t.id, hooked);
	assert_int_equal(t.state, TQ_FAILED);
	assert_int_equal(t.exit_code, 1);
	assert_string_equal(t.on_exit, "echo done");
	assert_non_null(t.env);
	tq_task_release(&t);
	/* taken: the other connection finds nothing, by id or not */
	assert_int_equal(tq_queue_on_exit_take(f->q, hooked, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_queue_on_exit_take(f->q, 0, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_queue_on_exit_due(f->q, &any, &err), 0);
	assert_int_equal(any, 0);
	tq_queue_close(q2);

	/* owed, then run again by hand before a worker took it: not owed
	 * while it is queued or running (its next end decides) */
	assert_int_equal(tq_queue_retry(f->q, own, &err), 0);
	assert_int_equal(claim_id(f->q, &attempt), own);
	finish(f->q, own, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_retry(f->q, own, &err), 0);
	assert_int_equal(tq_queue_on_exit_due(f->q, &any, &err), 0);
	assert_int_equal(any, 0);
	assert_int_equal(tq_queue_on_exit_take(f->q, 0, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(claim_id(f->q, &attempt), own);
	finish(f->q, own, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_on_exit_take(f->q, 0, &t, &err), 0);
	assert_int_equal(t.id, own);
	assert_int_equal(t.state, TQ_SUCCEEDED);
	tq_task_release(&t);
}

/*
 * A person reading the database with the sqlite3 shell learns what
 * tasks.outcome may hold from its comment (DESIGN: "a user can read the
 * database ... and understand it"; SQLite keeps the comment in
 * sqlite_schema): every outcome the code stores is named there, and every
 * category in category's (stalled and output_lost were missing).
 */
static void test_schema_names_every_outcome(void **state)
{
	char path[600];
	SQLITE_ONLY();

	(void)state;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	const char *sql, *from, *to;

	snprintf(path, sizeof(path), "%s/taskq.db", state_home);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE name ="
					    " 'tasks'", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_non_null(sql = (const char *)sqlite3_column_text(st, 0));
	/* the comment of outcome runs from its column to category's */
	assert_non_null(from = strstr(sql, "\n    outcome "));
	assert_non_null(to = strstr(from, "\n    category "));
	for (int o = TQ_OUT_NONE + 1; o < TQ_OUTCOME_COUNT; o++) {
		const char *name = tq_outcome_name((enum tq_outcome)o), *p = from;
		size_t n = strlen(name);
		int found = 0;
		/* a whole word: "lost" is not found in "output_lost" */
		while (!found && (p = strstr(p, name)) != NULL && p < to) {
			found = (p[-1] == ' ' || p[-1] == '|') &&
				(p[n] == '|' || p[n] == '\n' || p[n] == ' ');
			p += n;
		}
		if (!found)
			fail_msg("schema.sql: tasks.outcome's comment does not name \"%s\"", name);
	}
	assert_non_null(to = strstr(to, "-- "));
	for (int c = TQ_CAT_NONE + 1; c < TQ_CATEGORY_COUNT; c++)
		if (strstr(to, tq_category_name((enum tq_category)c)) == NULL)
			fail_msg("schema.sql: tasks.category's comment does not name \"%s\"",
				 tq_category_name((enum tq_category)c));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Schema 4's task fields: stored and read back; out of range refused. */
static void test_umask_stall_stored(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_task t, *list = NULL;
	size_t n = 0;
	int64_t id, id2;

	s.umask = 0027;
	s.stall_timeout_ms = 300000;
	id = submit(f->q, &s);
	s.umask = -1; /* not known: NULL, the worker's own */
	s.stall_timeout_ms = 0;
	id2 = submit(f->q, &s);
	assert_int_equal(tq_queue_get(f->q, id, 0, &t, &err), 0);
	assert_int_equal(t.umask, 0027);
	assert_int_equal(t.stall_timeout_ms, 300000);
	tq_task_release(&t);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"
				 " WHERE umask IS NULL AND stall_timeout_ms = 0"), 1);
	assert_int_equal(tq_queue_list(f->q, &(struct tq_filter)TQ_FILTER_INIT, &list, &n,
				       &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(list[0].id, id2);
	assert_int_equal(list[0].umask, -1);
	assert_int_equal(list[1].umask, 0027);
	assert_int_equal(list[1].stall_timeout_ms, 300000);
	tq_task_list_free(list, n);

	s.umask = 01000;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "umask 512 is not 0 to 0777"));
	s.umask = -2;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	s.umask = 0;
	s.stall_timeout_ms = -1;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 2);
}

static void write_file(const char *path, const char *data, size_t n)
{
	int fd = tq_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, data, n), 0);
	tq_close(fd);
}

static void test_refuse_not_db(void **state)
{
	struct fx *f = *state;
	struct tq_queue *q = NULL;
	struct tq_err err = TQ_ERR_INIT;
	char home[512], path[600];
	char junk[8192];
	SQLITE_ONLY();

	(void)f;
	snprintf(home, sizeof(home), "%s/junk", f->home);
	assert_int_equal(mkdir(home, 0700), 0);
	snprintf(path, sizeof(path), "%s/taskq.db", home);
	memset(junk, 'x', sizeof(junk));
	write_file(path, junk, sizeof(junk));
	assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_ENOTDB);
	assert_non_null(strstr(err.msg, "not a database"));

	/* An SQLite database that is not taskq's. */
	snprintf(home, sizeof(home), "%s/other", f->home);
	assert_int_equal(mkdir(home, 0700), 0);
	sql_int(home, "CREATE TABLE other(x)");
	assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_ENOTDB);
	assert_non_null(strstr(err.msg, "not a taskq database"));
}

static void test_refuse_corrupt(void **state)
{
	struct fx *f = *state;
	struct tq_queue *q = NULL;
	struct tq_err err = TQ_ERR_INIT;
	char home[512], path[600];
	char junk[4096];
	int fd;
	SQLITE_ONLY();

	for (int i = 0; i < 300; i++)
		submit_simple(f->q, i, NULL);
	snprintf(home, sizeof(home), "%s", state_home);
	tq_queue_close(f->q);
	f->q = NULL;
	sql_int(home, "PRAGMA wal_checkpoint(TRUNCATE)");
	/* Garbage over pages 3..4 (inside the tasks table and its indexes). */
	snprintf(path, sizeof(path), "%s/taskq.db", home);
	fd = tq_open(path, O_WRONLY, 0);
	assert_true(fd >= 0);
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 2 * 4096), (ssize_t)sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 3 * 4096), (ssize_t)sizeof(junk));
	tq_close(fd);
	assert_int_equal(tq_queue_open(&q, home, TQ_OPEN_CHECK, &err), TQ_ECORRUPT);
	assert_non_null(strstr(err.msg, "corrupt"));
}

static void test_refuse_modes(void **state)
{
	struct fx *f = *state;
	struct tq_queue *q = NULL;
	struct tq_err err = TQ_ERR_INIT;
	char home[512], path[600];
	SQLITE_ONLY();

	snprintf(home, sizeof(home), "%s", state_home);
	tq_queue_close(f->q);
	f->q = NULL;
	assert_int_equal(chmod(home, 0777), 0);
	assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_EPERM);
	assert_non_null(strstr(err.msg, "writable by everyone"));
	assert_int_equal(chmod(home, 0770), 0);
	assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_EPERM);
	assert_non_null(strstr(err.msg, "writable by its group"));
	assert_int_equal(chmod(home, 0700), 0);
	assert_int_equal(tq_queue_open(&q, home, 0, &err), 0);
	tq_queue_close(q);
	q = NULL;

	snprintf(path, sizeof(path), "%s/taskq.db", home);
	if (geteuid() == 0) {
		/* As root, ownership can be given away to test the check. */
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_EPERM);
		assert_non_null(strstr(err.msg, "owned by uid 65534"));
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(chown(home, 65534, 65534), 0);
		assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_EPERM);
		assert_non_null(strstr(err.msg, "state directory"));
		assert_int_equal(chown(home, 0, 0), 0);
		print_message("read-only database check skipped: running as root\n");
	} else {
		assert_int_equal(chmod(path, 0400), 0);
		assert_int_equal(tq_queue_open(&q, home, 0, &err), TQ_EREADONLY);
		assert_non_null(strstr(err.msg, "not writable"));
		assert_int_equal(chmod(path, 0600), 0);
		print_message("ownership checks skipped: not running as root\n");
	}
	assert_null(q);
	assert_int_equal(tq_queue_open(&f->q, home, 0, &err), 0);
}

static void test_locked(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	char path[600];
	sqlite3 *db;
	int64_t id = 0, t0;
	SQLITE_ONLY();

	snprintf(path, sizeof(path), "%s/taskq.db", state_home);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	tq_queue_set_busy_timeout(f->q, 200);
	t0 = tq_mono_ms();
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EBUSY);
	assert_true(tq_mono_ms() - t0 >= 150);
	assert_non_null(strstr(err.msg, "locked"));
	/* the time it really waited, not a figure from the settings */
	{
		const char *w = strstr(err.msg, "(waited ");
		long ms;

		assert_non_null(w);
		ms = strtol(w + 8, NULL, 10);
		assert_true(ms >= 150 && ms < 1000);
	}
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), 0);
}

static void test_roundtrip(void **state)
{
	struct fx *f = *state;
	char big[100 * 1024 + 1];
	char *argv[] = { "printf", "%s\\n", "two words", "", "quote\"s'", "\xff\xfe",
			 "tab\there\nnewline", big, NULL };
	char *env[] = { "A=1", "WEIRD=\x01\xff", "EMPTY=", NULL };
	struct tq_label labels[] = { { "team", "core" }, { "k", "v=w" } };
	struct tq_task_spec s = spec_of(argv);
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int64_t id;

	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	s.env = env;
	s.envc = 3;
	s.cwd = "/tmp";
	s.labels = labels;
	s.nlabels = 2;
	s.batch = "nightly";
	s.priority = -3;
	s.timeout_ms = 1234;
	id = submit(f->q, &s);
	assert_int_equal(tq_queue_get(f->q, id, TQ_GET_ALL, &t, &err), 0);
	assert_int_equal(t.argc, 8);
	for (size_t i = 0; i < 8; i++)
		assert_string_equal(t.argv[i], argv[i]);
	assert_null(t.argv[8]);
	assert_int_equal(t.envc, 3);
	assert_string_equal(t.env[1], "WEIRD=\x01\xff");
	assert_string_equal(t.cwd, "/tmp");
	assert_string_equal(t.batch, "nightly");
	assert_string_equal(t.name, "printf");
	assert_string_equal(t.group, "printf");
	assert_int_equal(t.priority, -3);
	assert_int_equal(t.timeout_ms, 1234);
	assert_int_equal(t.nlabels, 2);
	assert_string_equal(t.labels[0].key, "k");
	assert_string_equal(t.labels[0].value, "v=w");
	assert_int_equal(t.state, TQ_QUEUED);
	assert_int_equal(t.exit_code, -1);
	tq_task_release(&t);
	/* The same environment is stored once. */
	submit(f->q, &s);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM envs"), 1);
	assert_int_equal(tq_queue_get(f->q, 999, 0, &t, &err), TQ_ENOTFOUND);
	assert_non_null(strstr(err.msg, "no such task"));
}

static void test_derive_name(void **state)
{
	char *a1[] = { "/usr/bin/make", "all", NULL };
	char *a2[] = { "claude", "-p", "review src/", NULL };
	char *a3[] = { "/bin/sh", "-c", "make -j4 && ./run", NULL };
	char *a4[] = { "python3", "/home/x/train.py", "--epochs", "3", NULL };
	char buf[TQ_NAME_MAX];

	(void)state;
	tq_derive_name(a1, 2, 0, buf, sizeof(buf));
	assert_string_equal(buf, "make all");
	tq_derive_name(a2, 3, 0, buf, sizeof(buf));
	assert_string_equal(buf, "claude");
	tq_derive_name(a3, 3, 1, buf, sizeof(buf));
	assert_string_equal(buf, "make");
	tq_derive_group(a3, 3, 1, buf, sizeof(buf));
	assert_string_equal(buf, "make");
	tq_derive_name(a4, 4, 0, buf, sizeof(buf));
	assert_string_equal(buf, "python3 train.py");
}

static void test_claim_order(void **state)
{
	struct fx *f = *state;
	int64_t a = submit_simple(f->q, 0, NULL);
	int64_t b = submit_simple(f->q, 5, NULL);
	int64_t c = submit_simple(f->q, 0, "other");
	int64_t d = submit_simple(f->q, 5, "other");
	int64_t e = submit_simple(f->q, -1, NULL);
	int attempt = 0;

	/* Higher priority first, ties by id, across groups. */
	assert_int_equal(claim_id(f->q, &attempt), b);
	assert_int_equal(attempt, 1);
	assert_int_equal(claim_id(f->q, NULL), d);
	assert_int_equal(claim_id(f->q, NULL), a);
	assert_int_equal(claim_id(f->q, NULL), c);
	assert_int_equal(claim_id(f->q, NULL), e);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(state_of(f->q, a), TQ_RUNNING);
}

static void test_claim_scheduled(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_err err = TQ_ERR_INIT;
	int64_t id, at = 0, t;

	s.run_after = tq_now_ms() + 300;
	id = submit(f->q, &s);
	assert_int_equal(state_of(f->q, id), TQ_SCHEDULED);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(tq_queue_next_wakeup(f->q, &at, &err), 0);
	assert_int_equal(at, s.run_after);
	/* Poll until it becomes claimable; it must not be early. */
	for (t = 0; (t = claim_id(f->q, NULL)) == 0 && tq_now_ms() < s.run_after + 5000;)
		tq_sleep_ms(5);
	assert_int_equal(t, id);
	assert_true(tq_now_ms() >= s.run_after);
}

/*
 * The writers' queue (src/queue/sqlite/lock.c): a write transaction waits
 * for another's on the kernel lock (the OFD lock on byte 0x40000000 + 1024
 * of the database file, taken here by hand as a holder would), blocked in
 * fcntl -- not polling in the busy handler's sleeps -- and goes on the
 * moment it is let go; the wait keeps the busy timeout; a holder that dies
 * lets go with its death.
 */
#define WQ_BYTE (0x40000000 + 1024)

static int wq_take(const char *db)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = WQ_BYTE,
			    .l_len = 1 };
	int fd = open(db, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
	return fd;
}

/* A child submitting with a busy timeout of ms; it writes what the submit
 * returned and how long it took into fd, then exits. It closes hold, the
 * holder's descriptor (an OFD lock lasts while any copy of its descriptor
 * is open, a child's too). */
static pid_t wq_submitter(int fd, int64_t ms, int hold)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct tq_queue *q = NULL;
		struct tq_err err = TQ_ERR_INIT;
		struct tq_task_spec s = spec_of(argv_true);
		int64_t got[2] = { -1, 0 }, id = 0, t0;

		if (hold >= 0)
			close(hold);
		if (tq_queue_open(&q, state_home, 0, &err) == 0) {
			tq_queue_set_busy_timeout(q, ms);
			t0 = tq_mono_ms();
			got[0] = tq_queue_submit(q, &s, &id, NULL, &err);
			got[1] = tq_mono_ms() - t0;
			tq_queue_close(q);
		}
		tq_write_all(fd, got, sizeof(got));
		_exit(0);
	}
	return pid;
}

/* Whether pid is blocked in fcntl(2) (/proc/PID/syscall; 1 when it cannot
 * be read, where only the blocking itself is checked). */
static int wq_in_fcntl(pid_t pid)
{
	char path[64], buf[64] = "";
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 1;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	return strncmp(buf, "72 ", 3) == 0; /* SYS_fcntl, x86-64 */
}

/* The child's answer: 1 with got filled, 0 when none came within ms. */
static int wq_answer(int fd, int64_t got[2], int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return 0;
	assert_int_equal(tq_read_full(fd, got, 2 * sizeof(got[0])), 2 * sizeof(got[0]));
	return 1;
}

static void test_writers_queue(void **state)
{
	struct fx *f = *state;
	char db[600];
	int fds[2], hold, ready[2], in_fcntl = 0, status;
	int64_t got[2], t0;
	pid_t b, c;
	SQLITE_ONLY();

	(void)f;
	snprintf(db, sizeof(db), "%s/taskq.db", state_home);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);

	/* held: the submit waits, in fcntl, and goes on when it is let go */
	hold = wq_take(db);
	b = wq_submitter(fds[1], 10000, hold);
	for (t0 = tq_mono_ms(); tq_mono_ms() - t0 < 5000 && !in_fcntl; tq_sleep_ms(5))
		in_fcntl = wq_in_fcntl(b) && tq_mono_ms() - t0 > 100;
	assert_true(in_fcntl);
	assert_false(wq_answer(fds[0], got, 0));
	close(hold); /* lets go */
	assert_true(wq_answer(fds[0], got, 10000));
	assert_int_equal(got[0], 0);
	assert_int_equal(waitpid(b, &status, 0), b);

	/* held for longer than the busy timeout: TQ_EBUSY, after it */
	hold = wq_take(db);
	b = wq_submitter(fds[1], 300, hold);
	assert_true(wq_answer(fds[0], got, 10000));
	assert_int_equal(got[0], TQ_EBUSY);
	assert_true(got[1] >= 300 && got[1] < 5000);
	assert_int_equal(waitpid(b, &status, 0), b);
	close(hold);

	/* its holder killed: the kernel lets go, the submit goes on */
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		wq_take(db);
		tq_write_all(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	{
		struct pollfd p = { .fd = ready[0], .events = POLLIN };
		char x;

		assert_int_equal(poll(&p, 1, 10000), 1); /* c holds it */
		assert_int_equal(read(ready[0], &x, 1), 1);
	}
	b = wq_submitter(fds[1], 10000, -1);
	assert_false(wq_answer(fds[0], got, 200));
	assert_int_equal(kill(c, SIGKILL), 0);
	assert_int_equal(waitpid(c, &status, 0), c);
	assert_true(wq_answer(fds[0], got, 10000));
	assert_int_equal(got[0], 0);
	assert_int_equal(waitpid(b, &status, 0), b);
	close(ready[0]);
	close(ready[1]);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 2);
}

/* Several processes claim from one queue at once: every task is claimed
 * exactly once. Each child reports its ids over a pipe. */
static void test_claim_concurrent(void **state)
{
	struct fx *f = *state;
	enum { TASKS = 400, PROCS = 4 };
	struct tq_task_spec specs[TASKS];
	int64_t ids[TASKS];
	int seen[TASKS + 1] = { 0 };
	struct tq_err err = TQ_ERR_INIT;
	char home[1024];
	pid_t pids[PROCS];
	int fds[2];
	int64_t got;

	for (int i = 0; i < TASKS; i++)
		specs[i] = spec_of(argv_true);
	assert_int_equal(tq_queue_submit_many(f->q, specs, TASKS, ids, NULL, &err), 0);
	snprintf(home, sizeof(home), "%s", store_at());
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] == 0) {
			/* A connection is never used across fork: open a new one. */
			struct tq_queue *q = NULL;
			struct tq_task t;
			if (tq_queue_open(&q, home, 0, &err) != 0)
				_exit(3);
			while (tq_queue_claim(q, p + 1, 60000, &t, NULL, &err) == 0) {
				struct tq_finish fin = { .task_id = t.id, .attempt = t.attempt,
					.worker_id = p + 1, .outcome = TQ_OUT_SUCCEEDED,
					.exit_code = 0 };
				if (tq_write_all(fds[1], &t.id, sizeof(t.id)) < 0 ||
				    tq_queue_finish(q, &fin, NULL, &err) != 0)
					_exit(4);
				tq_task_release(&t);
			}
			tq_queue_close(q);
			_exit(err.code == TQ_ENOTFOUND ? 0 : 5);
		}
	}
	tq_close(fds[1]);
	while (tq_read_full(fds[0], &got, sizeof(got)) == (ssize_t)sizeof(got)) {
		assert_true(got >= ids[0] && got <= ids[TASKS - 1]);
		seen[got - ids[0]]++;
	}
	tq_close(fds[0]);
	for (int p = 0; p < PROCS; p++) {
		int st;
		assert_int_equal(tq_waitpid(pids[p], &st, 0), pids[p]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	for (int i = 0; i < TASKS; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE state = 'succeeded'"),
			 TASKS);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM attempts"), TASKS);
}

static void test_fencing(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = submit_simple(f->q, 0, NULL);
	int attempt = 0, sig = -1;
	struct tq_finish fin = { .task_id = id, .worker_id = 1,
				 .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0 };

	assert_int_equal(claim_id(f->q, &attempt), id);
	assert_int_equal(tq_queue_renew(f->q, id, attempt, 1, 1000, &sig, &err), 0);
	assert_int_equal(sig, 0);
	assert_int_equal(tq_queue_renew(f->q, id, attempt, 2, 1000, NULL, &err), TQ_ESTALE);
	assert_int_equal(tq_queue_renew(f->q, id, attempt + 1, 1, 1000, NULL, &err), TQ_ESTALE);
	assert_int_equal(tq_queue_set_process(f->q, id, attempt, 77, 77, 123, 0, 1, &err), 0);
	assert_int_equal(tq_queue_request_kill(f->q, id, SIGTERM, &err), 0);
	assert_int_equal(tq_queue_renew(f->q, id, attempt, 1, 1000, &sig, &err), 0);
	assert_int_equal(sig, SIGTERM);
	fin.attempt = attempt + 1;
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), TQ_ESTALE);
	fin.attempt = attempt;
	fin.worker_id = 9;
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), TQ_ESTALE);
	fin.worker_id = 1;
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	assert_int_equal(state_of(f->q, id), TQ_SUCCEEDED);
	/* A second finish of the same attempt is fenced out too. */
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), TQ_ESTALE);
	assert_int_equal(tq_queue_request_kill(f->q, id, SIGTERM, &err), TQ_ESTATE);
}

/*
 * An end that brings its attempt's process (tq_finish.pid: a task that ended
 * before its worker recorded the process) writes it with the end, in the
 * attempt row; an end without one keeps what set_process recorded.
 */
static void test_finish_records_process(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_attempt *a = NULL;
	size_t n = 0;
	int64_t quick = submit_simple(f->q, 0, NULL), slow = submit_simple(f->q, 0, NULL);
	int attempt = 0;
	struct tq_finish fin = { .task_id = quick, .worker_id = 1,
				 .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0,
				 .pid = 4321, .pgid = 4321, .proc_start = 777,
				 .log_offset = 12, .log_line = 3 };

	assert_int_equal(claim_id(f->q, &attempt), quick);
	fin.attempt = attempt;
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	assert_int_equal(tq_queue_attempts(f->q, quick, &a, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].pid, 4321);
	assert_int_equal(a[0].pgid, 4321);
	assert_int_equal(a[0].proc_start, 777);
	assert_int_equal(a[0].log_offset, 12);
	assert_int_equal(a[0].log_line, 3);
	assert_int_equal(a[0].outcome, TQ_OUT_SUCCEEDED);
	assert_true(a[0].ended_at > 0);
	tq_attempt_list_free(a, n);

	assert_int_equal(claim_id(f->q, &attempt), slow);
	assert_int_equal(tq_queue_set_process(f->q, slow, attempt, 55, 55, 66, 0, 1, &err), 0);
	fin = (struct tq_finish){ .task_id = slow, .attempt = attempt, .worker_id = 1,
				  .outcome = TQ_OUT_FAILED, .exit_code = 2 };
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	assert_int_equal(tq_queue_attempts(f->q, slow, &a, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].pid, 55);
	assert_int_equal(a[0].proc_start, 66);
	assert_int_equal(a[0].log_line, 1);
	assert_int_equal(a[0].exit_code, 2);
	tq_attempt_list_free(a, n);
}

static void test_retry_and_requeue(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_attempt *att = NULL;
	size_t n = 0;
	int64_t id = submit_simple(f->q, 0, NULL);
	int attempt = 0;

	assert_int_equal(claim_id(f->q, &attempt), id);
	finish(f->q, id, attempt, TQ_OUT_FAILED, TQ_NEXT_RETRY, tq_now_ms() + 60000);
	assert_int_equal(state_of(f->q, id), TQ_SCHEDULED);
	assert_int_equal(claim_id(f->q, NULL), 0);
	sql_int(state_home, "UPDATE tasks SET run_after = 1 WHERE state = 'scheduled'");
	assert_int_equal(claim_id(f->q, &attempt), id);
	assert_int_equal(attempt, 2);
	finish(f->q, id, attempt, TQ_OUT_KILLED, TQ_NEXT_REQUEUE, 0);
	assert_int_equal(state_of(f->q, id), TQ_QUEUED);
	assert_int_equal(claim_id(f->q, &attempt), id);
	assert_int_equal(attempt, 3);
	finish(f->q, id, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_attempts(f->q, id, &att, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(att[0].outcome, TQ_OUT_FAILED);
	assert_true(att[0].retry_at > 0);
	assert_int_equal(att[0].counted, 1);
	assert_int_equal(att[1].counted, 0);
	assert_int_equal(att[2].outcome, TQ_OUT_SUCCEEDED);
	assert_int_equal(att[2].exit_code, 0);
	tq_attempt_list_free(att, n);
}

static void test_group_pause(void **state)
{
	struct fx *f = *state;
	int64_t a = submit_simple(f->q, 0, "api");
	int64_t b = submit_simple(f->q, 0, "api");
	int64_t c = submit_simple(f->q, 0, "local");
	struct tq_finish fin = { .task_id = a, .attempt = 1, .worker_id = 1,
				 .outcome = TQ_OUT_FAILED, .exit_code = 1,
				 .category = TQ_CAT_RATE_LIMIT, .reason = "429",
				 .next = TQ_NEXT_RETRY, .pause_group = "api" };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_group *g = NULL;
	size_t n = 0;

	assert_int_equal(claim_id(f->q, NULL), a);
	fin.retry_at = fin.pause_until = tq_now_ms() + 60000;
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	/* The paused group's other task waits; another group's runs. */
	assert_int_equal(claim_id(f->q, NULL), c);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(state_of(f->q, b), TQ_QUEUED);
	assert_int_equal(tq_queue_groups(f->q, &g, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(g[0].name, "api");
	assert_int_equal(g[0].paused_until, fin.pause_until);
	assert_string_equal(g[0].pause_reason, "429");
	tq_group_list_free(g, n);
	sql_int(state_home, "UPDATE groups SET paused_until = 0");
	assert_int_equal(claim_id(f->q, NULL), b);
}

static void test_group_parallel(void **state)
{
	struct fx *f = *state;
	int64_t a = submit_simple(f->q, 0, "one");
	int64_t b = submit_simple(f->q, 0, "one");
	int64_t c = submit_simple(f->q, 0, "many");
	int attempt = 0;

	sql_int(state_home, "UPDATE groups SET parallel = 1 WHERE name = 'one'");
	assert_int_equal(claim_id(f->q, &attempt), a);
	assert_int_equal(claim_id(f->q, NULL), c);
	assert_int_equal(claim_id(f->q, NULL), 0);
	finish(f->q, a, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(claim_id(f->q, NULL), b);
}

static void test_cancel_remove(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	enum tq_state was;
	int64_t a = submit_simple(f->q, 0, NULL);
	int64_t b = submit_simple(f->q, 0, NULL);
	struct tq_task t;

	assert_int_equal(tq_queue_cancel(f->q, b, NULL, &was, &err), 0);
	assert_int_equal(was, TQ_QUEUED);
	assert_int_equal(tq_queue_get(f->q, b, 0, &t, &err), 0);
	assert_int_equal(t.state, TQ_CANCELED);
	assert_int_equal(t.outcome, TQ_OUT_CANCELED);
	assert_string_equal(t.reason, "canceled by user");
	assert_true(t.finished_at > 0);
	tq_task_release(&t);
	assert_int_equal(tq_queue_cancel(f->q, b, NULL, &was, &err), TQ_ESTATE);
	assert_int_equal(was, TQ_CANCELED);
	assert_int_equal(claim_id(f->q, NULL), a);
	assert_int_equal(tq_queue_cancel(f->q, a, NULL, &was, &err), TQ_ESTATE);
	assert_int_equal(was, TQ_RUNNING);
	assert_int_equal(tq_queue_remove(f->q, a, &err), TQ_ESTATE);
	assert_non_null(strstr(err.msg, "running"));
	assert_int_equal(tq_queue_cancel(f->q, 4242, NULL, NULL, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_queue_remove(f->q, 4242, &err), TQ_ENOTFOUND);
	finish(f->q, a, 1, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_remove(f->q, a, &err), 0);
	assert_int_equal(tq_queue_get(f->q, a, 0, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(sql_int(state_home,
				 "SELECT count(*) FROM attempts"), 0);
	/* Ids are never reused after a remove. */
	assert_true(submit_simple(f->q, 0, NULL) > b);
}

static void test_dependencies(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, NULL), b, c, d, e, g, id;
	int64_t after_a[1] = { a }, after_c[1], after_b[1];
	struct tq_task t;
	int attempt = 0;

	s.after = after_a;
	s.nafter = 1;
	b = submit(f->q, &s);                       /* needs a to succeed */
	c = submit(f->q, &s);
	after_c[0] = c;
	s.after = after_c;
	d = submit(f->q, &s);                       /* needs c */
	s.after = after_a;
	s.after_any = 1;
	e = submit(f->q, &s);                       /* runs after a, however a ends */
	assert_int_equal(state_of(f->q, b), TQ_BLOCKED);
	assert_int_equal(state_of(f->q, d), TQ_BLOCKED);
	assert_int_equal(claim_id(f->q, &attempt), a);
	assert_int_equal(claim_id(f->q, NULL), 0);
	finish(f->q, a, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	assert_int_equal(state_of(f->q, b), TQ_CANCELED);
	assert_int_equal(state_of(f->q, c), TQ_CANCELED);
	assert_int_equal(state_of(f->q, d), TQ_CANCELED);  /* the cascade */
	assert_int_equal(state_of(f->q, e), TQ_QUEUED);
	assert_int_equal(tq_queue_get(f->q, d, TQ_GET_DEPS, &t, &err), 0);
	assert_string_equal(t.reason, "dependency " "3" " ended canceled");
	assert_int_equal(t.nafter, 1);
	assert_int_equal(t.after[0], c);
	tq_task_release(&t);
	/* A task submitted after a dependency already failed is canceled at once. */
	s.after_any = 0;
	g = submit(f->q, &s);
	assert_int_equal(state_of(f->q, g), TQ_CANCELED);
	/* Success unblocks. */
	assert_int_equal(claim_id(f->q, &attempt), e);
	after_b[0] = e;
	s.after = after_b;
	id = submit(f->q, &s);
	assert_int_equal(state_of(f->q, id), TQ_BLOCKED);
	finish(f->q, e, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(state_of(f->q, id), TQ_QUEUED);
	/* An unknown dependency is refused and nothing is added. */
	after_b[0] = 9999;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_ENOTFOUND);
	assert_non_null(strstr(err.msg, "9999"));
}

/* ------------------------------------------------------------------ */
/* deps_left: every path that changes a dependency's count              */

static int64_t left_of(struct tq_queue *q, int64_t id)
{
	(void)q; /* its database is state_home's */
	char sql[96];

	snprintf(sql, sizeof(sql), "SELECT deps_left FROM tasks WHERE id = %lld", (long long)id);
	return sql_int(state_home, sql);
}

/* Every task's deps_left is what it stands for (schema.sql): its deps rows
 * whose task exists and has not ended. */
static void counts_true(struct tq_queue *q)
{
	(void)q; /* its database is state_home's */
	assert_int_equal(sql_int(state_home,
		"SELECT count(*) FROM tasks t WHERE t.deps_left != (SELECT count(*) FROM deps x"
		" JOIN tasks d ON d.id = x.dep_id WHERE x.task_id = t.id"
		" AND d.state IN ('queued','scheduled','blocked','running'))"), 0);
}

/* Claim task id (first in line for the claim by priority) and end it. */
static void run_as(struct tq_queue *q, int64_t id, enum tq_outcome o)
{
	char sql[96];
	int attempt = 0;

	snprintf(sql, sizeof(sql), "UPDATE tasks SET priority = 1000000 WHERE id = %lld",
		 (long long)id);
	sql_int(state_home, sql);
	assert_int_equal(claim_id(q, &attempt), id);
	finish(q, id, attempt, o, TQ_NEXT_FINAL, 0);
}

/* Submit a task waiting for ids (n of them; any: --after-any). */
static int64_t submit_after(struct tq_queue *q, const int64_t *ids, size_t n, int any)
{
	struct tq_task_spec s = spec_of(argv_true);

	s.group = "dependent"; /* paused: never claimed, so they stay put */
	s.after = ids;
	s.nafter = n;
	s.after_any = any;
	return submit(q, &s);
}

/* Submit: open dependencies count, ended ones not, one named twice once; a
 * session's previous task counts. Finish: one ending takes it out, the last
 * one queues the dependent, whatever the outcome for --after-any. */
static void test_deps_left_submit_finish(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	int64_t a = submit_simple(f->q, 0, NULL), b = submit_simple(f->q, 0, NULL);
	int64_t c = submit_simple(f->q, 0, NULL), d, e, s1, s2;
	int64_t ids[4];
	struct tq_task t;

	assert_int_equal(tq_queue_group_pause(f->q, "dependent", &err), 0);
	run_as(f->q, c, TQ_OUT_SUCCEEDED);
	ids[0] = a, ids[1] = b, ids[2] = c, ids[3] = a;
	d = submit_after(f->q, ids, 4, 1);
	assert_int_equal(state_of(f->q, d), TQ_BLOCKED);
	assert_int_equal(left_of(f->q, d), 2);            /* a (once) and b */
	assert_int_equal(tq_queue_get(f->q, d, 0, &t, &err), 0);
	assert_int_equal(t.deps_left, 2);
	tq_task_release(&t);
	ids[0] = c;
	e = submit_after(f->q, ids, 1, 0);                 /* c succeeded already */
	assert_int_equal(state_of(f->q, e), TQ_QUEUED);
	assert_int_equal(left_of(f->q, e), 0);
	s.session = "k";
	s1 = submit(f->q, &s);
	s2 = submit(f->q, &s);
	assert_int_equal(left_of(f->q, s1), 0);
	assert_int_equal(left_of(f->q, s2), 1);
	counts_true(f->q);

	run_as(f->q, a, TQ_OUT_FAILED);                    /* --after-any: ended */
	assert_int_equal(left_of(f->q, d), 1);
	assert_int_equal(state_of(f->q, d), TQ_BLOCKED);
	run_as(f->q, b, TQ_OUT_TIMED_OUT);
	assert_int_equal(left_of(f->q, d), 0);
	assert_int_equal(state_of(f->q, d), TQ_QUEUED);
	run_as(f->q, s1, TQ_OUT_SUCCEEDED);
	assert_int_equal(left_of(f->q, s2), 0);
	assert_int_equal(state_of(f->q, s2), TQ_QUEUED);
	counts_true(f->q);
}

/* Cancel: the canceled task's dependents lose it; one that needed it to
 * succeed is canceled, and that cascades, taking it out of its own
 * dependents' counts in turn. */
static void test_deps_left_cancel(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, NULL), o = submit_simple(f->q, 0, NULL);
	int64_t b, c, d, ids[2];

	assert_int_equal(tq_queue_group_pause(f->q, "dependent", &err), 0);
	ids[0] = a;
	b = submit_after(f->q, ids, 1, 0);                 /* needs a to succeed */
	ids[0] = b;
	ids[1] = o;
	c = submit_after(f->q, ids, 2, 1);                 /* after b and o */
	ids[0] = b;
	d = submit_after(f->q, ids, 1, 0);                 /* needs b */
	assert_int_equal(left_of(f->q, c), 2);
	assert_int_equal(tq_queue_cancel(f->q, a, NULL, NULL, &err), 0);
	assert_int_equal(state_of(f->q, b), TQ_CANCELED);
	assert_int_equal(state_of(f->q, d), TQ_CANCELED);
	assert_int_equal(left_of(f->q, c), 1);              /* b ended; o not */
	assert_int_equal(state_of(f->q, c), TQ_BLOCKED);
	assert_int_equal(tq_queue_cancel(f->q, o, NULL, NULL, &err), 0);
	assert_int_equal(left_of(f->q, c), 0);
	assert_int_equal(state_of(f->q, c), TQ_QUEUED);
	counts_true(f->q);
}

/*
 * Remove: a dependency removed before it ended counts as ended (canceled):
 * an --after-any dependent that waited only for it runs (it stayed blocked
 * for ever: its resolve ran before the delete and still counted it), one
 * that needed it to succeed is canceled; removing a task that had ended
 * changes no count; removing a dependent leaves the others alone.
 */
static void test_deps_left_remove(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, NULL), b = submit_simple(f->q, 0, NULL);
	int64_t m = submit_simple(f->q, 0, NULL), o = submit_simple(f->q, 0, NULL);
	int64_t c, d, g, h, ids[2];

	assert_int_equal(tq_queue_group_pause(f->q, "dependent", &err), 0);
	ids[0] = a;
	c = submit_after(f->q, ids, 1, 1);
	ids[0] = b;
	d = submit_after(f->q, ids, 1, 0);
	run_as(f->q, m, TQ_OUT_SUCCEEDED);
	ids[0] = m;
	ids[1] = o;
	g = submit_after(f->q, ids, 2, 1);
	h = submit_after(f->q, ids, 2, 1);
	assert_int_equal(left_of(f->q, g), 1);
	assert_int_equal(tq_queue_remove(f->q, a, &err), 0);
	assert_int_equal(left_of(f->q, c), 0);
	assert_int_equal(state_of(f->q, c), TQ_QUEUED);
	assert_int_equal(tq_queue_remove(f->q, b, &err), 0);
	assert_int_equal(state_of(f->q, d), TQ_CANCELED);
	assert_int_equal(tq_queue_remove(f->q, m, &err), 0); /* ended: no change */
	assert_int_equal(left_of(f->q, g), 1);
	assert_int_equal(state_of(f->q, g), TQ_BLOCKED);
	assert_int_equal(tq_queue_remove(f->q, h, &err), 0);  /* a dependent */
	assert_int_equal(left_of(f->q, g), 1);
	counts_true(f->q);
	assert_int_equal(tq_queue_remove(f->q, o, &err), 0);
	assert_int_equal(state_of(f->q, g), TQ_QUEUED);
	counts_true(f->q);
}

/* Retry (one task, or every failed one): a dependency that ended and runs
 * again counts again for dependents still waiting, and ends again. */
static void test_deps_left_retry(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, NULL), b = submit_simple(f->q, 0, NULL);
	int64_t o = submit_simple(f->q, 0, NULL), c, n = 0, ids[3];

	assert_int_equal(tq_queue_group_pause(f->q, "dependent", &err), 0);
	run_as(f->q, a, TQ_OUT_FAILED);
	run_as(f->q, b, TQ_OUT_TIMED_OUT);
	ids[0] = a, ids[1] = b, ids[2] = o;
	c = submit_after(f->q, ids, 3, 1);
	assert_int_equal(left_of(f->q, c), 1);
	assert_int_equal(tq_queue_retry(f->q, a, &err), 0);
	assert_int_equal(left_of(f->q, c), 2);
	assert_int_equal(tq_queue_retry_failed(f->q, NULL, &n, &err), 0);
	assert_int_equal(n, 1);                             /* b */
	assert_int_equal(left_of(f->q, c), 3);
	counts_true(f->q);
	run_as(f->q, a, TQ_OUT_SUCCEEDED);
	run_as(f->q, b, TQ_OUT_SUCCEEDED);
	assert_int_equal(state_of(f->q, c), TQ_BLOCKED);
	run_as(f->q, o, TQ_OUT_SUCCEEDED);
	assert_int_equal(state_of(f->q, c), TQ_QUEUED);
	counts_true(f->q);
}

/* What changes no count: a retry's backoff and a shutdown's requeue
 * (running -> scheduled / queued); a lost attempt recovered as final
 * (worker 0) does; clearing ended tasks does not. */
static void test_deps_left_requeue_lost_clear(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, NULL), m = submit_simple(f->q, 0, NULL);
	int64_t c, removed = 0, ids[2];
	struct tq_finish lost = { .outcome = TQ_OUT_LOST, .exit_code = -1,
				  .next = TQ_NEXT_FINAL };
	int attempt = 0;

	assert_int_equal(tq_queue_group_pause(f->q, "dependent", &err), 0);
	run_as(f->q, m, TQ_OUT_SUCCEEDED);
	ids[0] = a, ids[1] = m;
	c = submit_after(f->q, ids, 2, 1);
	assert_int_equal(left_of(f->q, c), 1);
	assert_int_equal(claim_id(f->q, &attempt), a);
	finish(f->q, a, attempt, TQ_OUT_FAILED, TQ_NEXT_RETRY, tq_now_ms() + 60000);
	assert_int_equal(state_of(f->q, a), TQ_SCHEDULED);
	assert_int_equal(left_of(f->q, c), 1);
	sql_int(state_home, "UPDATE tasks SET run_after = 0 WHERE state = 'scheduled'");
	assert_int_equal(claim_id(f->q, &attempt), a);
	finish(f->q, a, attempt, TQ_OUT_KILLED, TQ_NEXT_REQUEUE, 0);
	assert_int_equal(state_of(f->q, a), TQ_QUEUED);
	assert_int_equal(left_of(f->q, c), 1);
	assert_int_equal(tq_queue_clear_finished(f->q, INT64_MAX, 100, &removed, &err), 0);
	assert_int_equal(removed, 1);                       /* m */
	assert_int_equal(left_of(f->q, c), 1);
	assert_int_equal(claim_id(f->q, &attempt), a);
	lost.task_id = a;
	lost.attempt = attempt;
	assert_int_equal(tq_queue_finish(f->q, &lost, NULL, &err), 0);
	assert_int_equal(left_of(f->q, c), 0);
	assert_int_equal(state_of(f->q, c), TQ_QUEUED);
	counts_true(f->q);
}

static void test_sessions_in_order(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = spec_of(argv_true);
	int64_t a, b, c;
	int attempt = 0;

	s.session = "chat";
	a = submit(f->q, &s);
	b = submit(f->q, &s);
	c = submit(f->q, &s);
	assert_int_equal(state_of(f->q, b), TQ_BLOCKED);
	assert_int_equal(claim_id(f->q, &attempt), a);
	assert_int_equal(claim_id(f->q, NULL), 0);
	/* A failed link still lets the next one run. */
	finish(f->q, a, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	assert_int_equal(claim_id(f->q, &attempt), b);
	assert_int_equal(state_of(f->q, c), TQ_BLOCKED);
	finish(f->q, b, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(claim_id(f->q, NULL), c);
}

/* A session keeps its first task's directory: later tasks submitted from
 * elsewhere run there, one whose --cwd names another is refused; a session
 * with neither tasks nor an agent session to resume takes its next task's;
 * one whose agent session is stored keeps it after its tasks are gone. */
static void test_session_directory(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true), many[2];
	struct tq_result r = { .has_result = 1, .agent_session = "conv-1" };
	struct tq_session_info si = { 0 };
	struct tq_task t;
	const char *home = state_home;
	int64_t a, b, id, ids[2];
	int attempt = 0;

	s.session = "k";
	s.cwd = "/a";
	a = submit(f->q, &s);
	s.cwd = "/b";                                   /* submitted from /b */
	b = submit(f->q, &s);
	assert_int_equal(tq_queue_get(f->q, b, 0, &t, &err), 0);
	assert_string_equal(t.cwd, "/a");
	tq_task_release(&t);
	s.cwd_explicit = 1;                             /* --cwd /b */
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "session k runs in /a (its first task's directory), "
			    "not in --cwd /b: drop --cwd, or use another session key");
	s.cwd = "/a";                                   /* --cwd /a: the same */
	id = submit(f->q, &s);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE session = 'k'"
				 " AND cwd = '/a'"), 3);
	assert_int_equal(tq_queue_session_show(f->q, "k", &si, &err), 0);
	assert_string_equal(si.cwd, "/a");
	assert_int_equal(si.updated_at, 0);
	assert_null(si.agent_session);
	tq_session_info_release(&si);

	/* its agent session keeps the directory after its tasks are gone */
	assert_int_equal(claim_id(f->q, &attempt), a);
	{
		struct tq_finish fin = { .task_id = a, .attempt = attempt, .worker_id = 1,
					 .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0,
					 .next = TQ_NEXT_FINAL, .result = &r };

		assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	}
	assert_int_equal(tq_queue_cancel(f->q, b, NULL, NULL, &err), 0);
	assert_int_equal(tq_queue_cancel(f->q, id, NULL, NULL, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, a, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, b, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, id, &err), 0);
	s.cwd = "/c";
	s.cwd_explicit = 0;
	id = submit(f->q, &s);
	assert_int_equal(tq_queue_get(f->q, id, 0, &t, &err), 0);
	assert_string_equal(t.cwd, "/a");
	tq_task_release(&t);

	/* a plain session with no task left starts again where its next is */
	s.session = "plain";
	s.cwd = "/p";
	a = submit(f->q, &s);
	assert_int_equal(tq_queue_cancel(f->q, a, NULL, NULL, &err), 0);
	s.cwd = "/q";
	b = submit(f->q, &s);                           /* a is still stored */
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE id = (SELECT max(id)"
				 " FROM tasks) AND cwd = '/p'"), 1);
	assert_int_equal(tq_queue_cancel(f->q, b, NULL, NULL, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, a, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, b, &err), 0);
	s.cwd_explicit = 1;                             /* nothing to contradict */
	id = submit(f->q, &s);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE id = (SELECT max(id)"
				 " FROM tasks) AND cwd = '/q'"), 1);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM sessions WHERE key = 'plain'"
				 " AND cwd = '/q'"), 1);

	/* several in one transaction (submit --file): the first sets it */
	many[0] = spec_of(argv_true);
	many[0].session = "batch";
	many[0].cwd = "/x";
	many[1] = many[0];
	many[1].cwd = "/y";
	assert_int_equal(tq_queue_submit_many(f->q, many, 2, ids, NULL, &err), 0);
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE session = 'batch'"
				 " AND cwd = '/x'"), 2);
	many[1].cwd_explicit = 1;
	assert_int_equal(tq_queue_submit_many(f->q, many, 2, ids, NULL, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "task 1: session batch runs in /x"));
	assert_int_equal(sql_int(home, "SELECT count(*) FROM tasks WHERE session = 'batch'"), 2);
}

static void test_unique(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = 0, b = 0;
	int existed = -1, attempt = 0;

	s.unique_key = "nightly-report";
	assert_int_equal(tq_queue_submit(f->q, &s, &a, &existed, &err), 0);
	assert_int_equal(existed, 0);
	assert_int_equal(tq_queue_submit(f->q, &s, &b, &existed, &err), 0);
	assert_int_equal(existed, 1);
	assert_int_equal(b, a);
	assert_int_equal(claim_id(f->q, &attempt), a);
	assert_int_equal(tq_queue_submit(f->q, &s, &b, &existed, &err), 0);
	assert_int_equal(existed, 1);
	finish(f->q, a, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_submit(f->q, &s, &b, &existed, &err), 0);
	assert_int_equal(existed, 0);
	assert_true(b > a);
}

/* A submit token names the task its submit made, through any connection,
 * and even after the task ended: a retried submit (the supervisor's answer
 * was lost) returns it instead of adding a second one. */
static void test_submit_token(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q2 = NULL;
	int64_t a = 0, b = 0, c = 0;
	int existed = -1, attempt = 0, n = -1;

	s.token = "0123456789abcdef0123456789abcdef";
	assert_int_equal(tq_queue_submit(f->q, &s, &a, &existed, &err), 0);
	assert_int_equal(existed, 0);
	if (tq_queue_open(&q2, store_at(), TQ_OPEN_DURABLE | TQ_OPEN_LONG, &err) != 0)
		fail_msg("open: %s", err.msg);
	assert_int_equal(tq_queue_submit(q2, &s, &b, &existed, &err), 0);
	assert_int_equal(b, a);
	assert_int_equal(existed, 0);
	assert_int_equal(claim_id(f->q, &attempt), a);
	finish(f->q, a, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_submit(q2, &s, &b, &existed, &err), 0);
	assert_int_equal(b, a);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 1);
	/* another token: another task */
	s.token = "fedcba9876543210";
	assert_int_equal(tq_queue_submit(f->q, &s, &c, &existed, &err), 0);
	assert_true(c > a);
	/* bad tokens */
	s.token = "";
	assert_int_equal(tq_queue_submit(f->q, &s, &c, &existed, &err), TQ_EINVAL);
	/* pruning: only tokens stored before the cutoff */
	assert_int_equal(tq_queue_prune_tokens(f->q, 1, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tq_queue_prune_tokens(f->q, tq_now_ms() + 1000, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM meta WHERE key LIKE 'submit:%'"), 0);
	/* once forgotten, the same token adds a task again */
	s.token = "0123456789abcdef0123456789abcdef";
	assert_int_equal(tq_queue_submit(q2, &s, &b, &existed, &err), 0);
	assert_true(b > c);
	tq_queue_close(q2);
}

static void test_submit_many_atomic(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec specs[5];
	int64_t ids[5];
	struct tq_err err = TQ_ERR_INIT;
	char *empty[] = { "", NULL };

	for (int i = 0; i < 5; i++)
		specs[i] = spec_of(argv_true);
	specs[3] = spec_of(empty);
	assert_int_equal(tq_queue_submit_many(f->q, specs, 5, ids, NULL, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "task 3"));
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 0);
	specs[3] = spec_of(argv_true);
	specs[2].cwd = "relative/dir";
	assert_int_equal(tq_queue_submit_many(f->q, specs, 5, ids, NULL, &err), TQ_EINVAL);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 0);
	specs[2].cwd = "/";
	assert_int_equal(tq_queue_submit_many(f->q, specs, 5, ids, NULL, &err), 0);
	assert_int_equal(ids[4], ids[0] + 4);
}

/*
 * What one submit_many decides task by task, in the order of its specs,
 * also for specs of the same call (PostgreSQL stores a run of plain specs
 * in a few statements, queue/pg/bulk.c, and decides these in memory): a
 * token given twice is one task; a --unique key held by an earlier spec of
 * the call is that task, existed; a spec whose unique key is held keeps no
 * token, so a later spec with its token is added; specs with a session or
 * a dependency between plain ones keep the ids in order; a label key given
 * twice keeps its last value; a later bad spec stores none of them.
 */
static void test_submit_many_keys(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec sp[9];
	struct tq_label labs[2] = { { "k", "first" }, { "k", "last" } };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int64_t ids[9], held, tokb;
	int existed[9];

	held = submit_simple(f->q, 0, NULL);
	for (int i = 0; i < 9; i++)
		sp[i] = spec_of(argv_true);
	sp[0].token = "tok-a";
	sp[1].token = "tok-a";                  /* the same submit again */
	sp[2].unique_key = "u1";
	sp[3].unique_key = "u1";                /* held by sp[2] */
	sp[3].token = "tok-b";                  /* not kept: nothing added */
	sp[4].token = "tok-b";                  /* so this one is added */
	sp[5].session = "s";                    /* one by one, between */
	sp[6].after = &held;
	sp[6].nafter = 1;
	sp[7].labels = labs;
	sp[7].nlabels = 2;
	sp[8].unique_key = "u1";
	sp[8].token = "tok-a";                  /* the token first: sp[0]'s */
	assert_int_equal(tq_queue_submit_many(f->q, sp, 9, ids, existed, &err), 0);
	assert_int_equal(ids[1], ids[0]);
	assert_int_equal(existed[1], 0);
	assert_int_equal(ids[3], ids[2]);
	assert_int_equal(existed[3], 1);
	assert_int_equal(existed[4], 0);
	assert_int_equal(ids[2], ids[0] + 1);
	assert_int_equal(ids[4], ids[2] + 1);
	assert_int_equal(ids[5], ids[4] + 1);
	assert_int_equal(ids[6], ids[5] + 1);
	assert_int_equal(ids[7], ids[6] + 1);
	assert_int_equal(ids[8], ids[0]);
	assert_int_equal(existed[8], 0);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 7);
	assert_int_equal(state_of(f->q, ids[6]), TQ_BLOCKED);
	assert_int_equal(tq_queue_get(f->q, ids[7], TQ_GET_LABELS, &t, &err), 0);
	assert_int_equal(t.nlabels, 1);
	assert_string_equal(t.labels[0].value, "last");
	tq_task_release(&t);
	/* again, two of them changed: the tokens and keys stored are found */
	tokb = ids[4];
	sp[1].token = "tok-c";
	sp[2].unique_key = "u2";
	sp[3].token = NULL;
	assert_int_equal(tq_queue_submit_many(f->q, sp + 1, 4, ids, existed, &err), 0);
	assert_int_equal(existed[0] + existed[1] + existed[3], 0);
	assert_int_equal(existed[2], 1);
	assert_int_equal(ids[1], ids[0] + 1);
	assert_int_equal(ids[3], tokb);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 9);
	/* a bad spec last: nothing of the call stored, the spec named */
	sp[0].token = "tok-d";
	sp[8] = spec_of(argv_true);
	sp[8].cwd = "relative";
	assert_int_equal(tq_queue_submit_many(f->q, sp, 9, ids, existed, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "task 8"));
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 9);
}

/* PostgreSQL refuses a value SQLite stores (text that is not UTF-8): the
 * error names the spec, and nothing of the call is stored. */
static void test_submit_many_refused_value(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec sp[4];
	struct tq_err err = TQ_ERR_INIT;
	int64_t ids[4];

	if (pg_base == NULL)
		skip();
	for (int i = 0; i < 4; i++)
		sp[i] = spec_of(argv_true);
	sp[2].name = "bad \xff name";
	assert_int_equal(tq_queue_submit_many(f->q, sp, 4, ids, NULL, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "task 2: "));
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM tasks"), 0);
}

static void test_list_filters(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_label lab = { "team", "x" };
	struct tq_filter flt = TQ_FILTER_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task *ts = NULL;
	int64_t counts[TQ_STATE_COUNT];
	int64_t ids[6];
	size_t n = 0;

	for (int i = 0; i < 6; i++) {
		s.batch = i % 2 ? "odd" : NULL;
		s.name = i == 5 ? "special" : NULL;
		s.labels = i == 4 ? &lab : NULL;
		s.nlabels = i == 4;
		ids[i] = submit(f->q, &s);
	}
	assert_int_equal(claim_id(f->q, NULL), ids[0]);
	assert_int_equal(tq_queue_list(f->q, &flt, &ts, &n, &err), 0);
	assert_int_equal(n, 6);
	assert_int_equal(ts[0].id, ids[5]);             /* newest first */
	tq_task_list_free(ts, n);
	flt.states = 1u << TQ_RUNNING;
	assert_int_equal(tq_queue_list(f->q, &flt, &ts, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ts[0].id, ids[0]);
	tq_task_list_free(ts, n);
	flt.states = (1u << TQ_RUNNING) | (1u << TQ_QUEUED);
	flt.batch = "odd";
	assert_int_equal(tq_queue_list(f->q, &flt, &ts, &n, &err), 0);
	assert_int_equal(n, 3);
	tq_task_list_free(ts, n);
	flt = (struct tq_filter)TQ_FILTER_INIT;
	flt.name = "special";
	assert_int_equal(tq_queue_list(f->q, &flt, &ts, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ts[0].id, ids[5]);
	tq_task_list_free(ts, n);
	flt = (struct tq_filter)TQ_FILTER_INIT;
	flt.label_key = "team";
	flt.label_value = "x";
	assert_int_equal(tq_queue_list(f->q, &flt, &ts, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ts[0].id, ids[4]);
	tq_task_list_free(ts, n);
	flt = (struct tq_filter)TQ_FILTER_INIT;
	flt.limit = 2;
	flt.offset = 1;
	assert_int_equal(tq_queue_list(f->q, &flt, &ts, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ts[0].id, ids[4]);
	assert_int_equal(ts[1].id, ids[3]);
	tq_task_list_free(ts, n);
	assert_int_equal(tq_queue_counts(f->q, counts, &err), 0);
	assert_int_equal(counts[TQ_QUEUED], 5);
	assert_int_equal(counts[TQ_RUNNING], 1);
}

static void test_expired(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_expired *ex = NULL;
	size_t n = 0;
	int64_t id = submit_simple(f->q, 0, NULL);
	int attempt = 0;

	assert_int_equal(claim_id(f->q, &attempt), id);
	assert_int_equal(tq_queue_set_process(f->q, id, attempt, 4242, 4242, 99, 0, 1, &err), 0);
	assert_int_equal(tq_queue_expired(f->q, tq_now_ms(), 10, &ex, &n, &err), 0);
	assert_int_equal(n, 0);
	free(ex);
	assert_int_equal(tq_queue_expired(f->q, tq_now_ms() + 120000, 10, &ex, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ex[0].task_id, id);
	assert_int_equal(ex[0].pid, 4242);
	assert_int_equal(ex[0].proc_start, 99);
	free(ex);
	/* Recovery finishes it as lost with worker 0 (any). */
	struct tq_finish fin = { .task_id = id, .attempt = attempt, .worker_id = 0,
				 .outcome = TQ_OUT_LOST, .exit_code = -1 };
	assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	assert_int_equal(state_of(f->q, id), TQ_FAILED);
}

static void test_manual_retry(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	int64_t a, b, c, n = 0;
	int attempt = 0;

	a = submit_simple(f->q, 0, NULL);
	s.batch = "nightly";
	b = submit(f->q, &s);
	c = submit(f->q, &s);
	assert_int_equal(tq_queue_retry(f->q, a, &err), TQ_ESTATE);
	assert_non_null(strstr(err.msg, "only a finished task"));
	assert_int_equal(claim_id(f->q, &attempt), a);
	finish(f->q, a, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	assert_int_equal(claim_id(f->q, &attempt), b);
	finish(f->q, b, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	assert_int_equal(claim_id(f->q, &attempt), c);
	finish(f->q, c, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(tq_queue_retry(f->q, a, &err), 0);
	assert_int_equal(state_of(f->q, a), TQ_QUEUED);
	assert_int_equal(sql_int(state_home,
				 "SELECT count(*) FROM attempts WHERE counted = 1 AND task_id = 1"), 0);
	assert_int_equal(claim_id(f->q, &attempt), a);
	assert_int_equal(attempt, 2);       /* a new attempt, history kept */
	finish(f->q, a, attempt, TQ_OUT_FAILED, TQ_NEXT_FINAL, 0);
	/* --failed --batch: only the batch's failed task */
	assert_int_equal(tq_queue_retry_failed(f->q, "nightly", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(state_of(f->q, b), TQ_QUEUED);
	assert_int_equal(state_of(f->q, a), TQ_FAILED);
	assert_int_equal(state_of(f->q, c), TQ_SUCCEEDED);
	assert_int_equal(tq_queue_retry_failed(f->q, NULL, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(tq_queue_retry(f->q, 999, &err), TQ_ENOTFOUND);
}

static void test_group_pause_resume(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, "api");

	assert_int_equal(tq_queue_group_pause(f->q, "api", &err), 0);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(tq_queue_group_resume(f->q, "api", &err), 0);
	assert_int_equal(claim_id(f->q, NULL), a);
	assert_int_equal(tq_queue_group_resume(f->q, "nope", &err), TQ_ENOTFOUND);
	assert_non_null(strstr(err.msg, "no such group"));
}

/* A task waiting in a paused group is not worth a ring; any other is. */
static void test_wants_worker(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	char path[512], sql[256];
	int64_t a = submit_simple(f->q, 0, "api"), b, c, d;

	assert_int_equal(tq_queue_wants_worker(f->q, a), 1);
	assert_int_equal(tq_queue_group_pause(f->q, "api", &err), 0);
	b = submit_simple(f->q, 0, "api");
	assert_int_equal(tq_queue_wants_worker(f->q, b), 0);
	/* another group, and a later start in the paused one (its time is
	 * new to idle workers): rung for */
	assert_int_equal(tq_queue_wants_worker(f->q, submit_simple(f->q, 0, "other")), 1);
	s.group = "api";
	s.run_after = tq_now_ms() + 60000;
	c = submit(f->q, &s);
	assert_int_equal(tq_queue_wants_worker(f->q, c), 1);
	/* a rate limit's pause: until later, not worth it; over, worth it */
	assert_int_equal(tq_queue_group_resume(f->q, "api", &err), 0);
	snprintf(path, sizeof(path), "%s/state", f->home);
	snprintf(sql, sizeof(sql), "UPDATE groups SET paused_until = %lld WHERE name = 'api'",
		 (long long)(tq_now_ms() + 60000));
	sql_int(path, sql);
	d = submit_simple(f->q, 0, "api");
	assert_int_equal(tq_queue_wants_worker(f->q, d), 0);
	sql_int(path, "UPDATE groups SET paused_until = 1 WHERE name = 'api'");
	assert_int_equal(tq_queue_wants_worker(f->q, d), 1);
	/* no such task: on doubt, ring */
	assert_int_equal(tq_queue_wants_worker(f->q, 999999), 1);
}

/* ------------------------------------------------------------------ */
/* The half-open probe after a rate limit's pause (claim.c, GROUP_OPEN) */

/* End (id, attempt) with a rate limit that pauses its group for a minute
 * and retries it then. */
static void finish_rate_limited(struct tq_queue *q, int64_t id, int attempt,
				const char *group)
{
	struct tq_finish fin = { .task_id = id, .attempt = attempt, .worker_id = 1,
				 .outcome = TQ_OUT_FAILED, .exit_code = 1,
				 .category = TQ_CAT_RATE_LIMIT, .reason = "429",
				 .next = TQ_NEXT_RETRY, .pause_group = group };
	struct tq_err err = TQ_ERR_INIT;

	fin.retry_at = fin.pause_until = tq_now_ms() + 60000;
	if (tq_queue_finish(q, &fin, NULL, &err) != 0)
		fail_msg("finish %lld: %s", (long long)id, err.msg);
}

/* End (id, attempt) as o (category c), saying whether it passed as a probe. */
static void finish_probe(struct tq_queue *q, int64_t id, int attempt, enum tq_outcome o,
			 enum tq_category c, int passed)
{
	struct tq_finish fin = { .task_id = id, .attempt = attempt, .worker_id = 1,
				 .outcome = o, .exit_code = o == TQ_OUT_SUCCEEDED ? 0 : 1,
				 .category = c, .next = TQ_NEXT_FINAL,
				 .probe_passed = passed };
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_finish(q, &fin, NULL, &err) != 0)
		fail_msg("finish %lld: %s", (long long)id, err.msg);
}

/* The pause is over (and every retry it scheduled is due). */
static void lift_pause(struct tq_queue *q)
{
	(void)q; /* its database is state_home's */
	sql_int(state_home, "UPDATE groups SET paused_until = 1");
	sql_int(state_home, "UPDATE tasks SET run_after = 1 WHERE state = 'scheduled'");
}

/* The group's probe flag and the probe running now (0: none). */
static void group_probe(struct tq_queue *q, const char *name, int *probe, int64_t *task)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_group *g = NULL;
	size_t n = 0;

	assert_int_equal(tq_queue_groups(q, &g, &n, &err), 0);
	*probe = -1;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(g[i].name, name) == 0) {
			*probe = g[i].probe;
			*task = g[i].probe_task;
		}
	}
	tq_group_list_free(g, n);
	assert_int_not_equal(*probe, -1);
}

static int runnable(struct tq_queue *q)
{
	struct tq_err err = TQ_ERR_INIT;
	int any = -1;

	assert_int_equal(tq_queue_runnable(q, tq_now_ms(), &any, &err), 0);
	return any;
}

/* After a rate limit's pause one task runs first; the others wait while it
 * runs and start once it ended without a rate limit. */
static void test_probe_holds_group_until_it_passes(void **state)
{
	struct fx *f = *state;
	int64_t a = submit_simple(f->q, 0, "api"), b = submit_simple(f->q, 0, "api");
	int64_t c = submit_simple(f->q, 0, "api"), d, task = 0;
	int attempt = 0, probe = 0;

	assert_int_equal(claim_id(f->q, &attempt), a);
	finish_rate_limited(f->q, a, attempt, "api");
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(probe, 1);
	assert_int_equal(task, 0);
	assert_int_equal(claim_id(f->q, NULL), 0); /* paused */
	lift_pause(f->q);
	assert_int_equal(runnable(f->q), 1);
	/* the probe: the retried task, first in line */
	assert_int_equal(claim_id(f->q, &attempt), a);
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(probe, 1);
	assert_int_equal(task, a);
	/* held: b and c wait, another group's task runs, nothing else is
	 * runnable, and a task submitted now is not worth a ring */
	assert_int_equal(runnable(f->q), 0);
	d = submit_simple(f->q, 0, "other");
	assert_int_equal(claim_id(f->q, NULL), d);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(state_of(f->q, b), TQ_QUEUED);
	assert_int_equal(tq_queue_wants_worker(f->q, submit_simple(f->q, 0, "api")), 0);
	/* it passed: released, every queued task may start */
	finish_probe(f->q, a, attempt, TQ_OUT_SUCCEEDED, TQ_CAT_NONE, 1);
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(probe, 0);
	assert_int_equal(task, 0);
	assert_int_equal(runnable(f->q), 1);
	assert_int_equal(claim_id(f->q, NULL), b);
	assert_int_equal(claim_id(f->q, NULL), c);
}

/* A probe that hits the limit again pauses the group again until the new
 * retry time, and the next lift is probed again. */
static void test_probe_rate_limited_again(void **state)
{
	struct fx *f = *state;
	int64_t a = submit_simple(f->q, 0, "api"), b = submit_simple(f->q, 0, "api"), task = 0;
	int attempt = 0, probe = 0;

	assert_int_equal(claim_id(f->q, &attempt), a);
	finish_rate_limited(f->q, a, attempt, "api");
	lift_pause(f->q);
	assert_int_equal(claim_id(f->q, &attempt), a);
	finish_rate_limited(f->q, a, attempt, "api");
	assert_true(sql_int(state_home, "SELECT paused_until FROM groups"
			    " WHERE name = 'api'") > tq_now_ms() + 50000);
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(probe, 1);
	assert_int_equal(task, 0);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(state_of(f->q, b), TQ_QUEUED);
	lift_pause(f->q);
	assert_int_equal(claim_id(f->q, &attempt), a);
	assert_int_equal(claim_id(f->q, NULL), 0);
	/* a failure that is not a rate limit (an overload: the provider
	 * answered) passes */
	finish_probe(f->q, a, attempt, TQ_OUT_FAILED, TQ_CAT_OVERLOAD, 1);
	assert_int_equal(claim_id(f->q, NULL), b);
}

/* A probe that tells nothing -- lost with its worker, killed, or gone by a
 * path that did not end it -- lets the next task probe; the group never
 * stays held. */
static void test_probe_lost_next_probe(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, "api"), b = submit_simple(f->q, 0, "api");
	int64_t c = submit_simple(f->q, 0, "api"), d = submit_simple(f->q, 0, "api");
	int64_t e = submit_simple(f->q, 0, "api"), task = 0;
	int attempt = 0, probe = 0;
	char sql[128];

	assert_int_equal(claim_id(f->q, &attempt), a);
	finish_rate_limited(f->q, a, attempt, "api");
	lift_pause(f->q);
	assert_int_equal(claim_id(f->q, &attempt), a);
	/* its worker died: recovery ends it as lost (worker 0, no verdict) */
	struct tq_finish lost = { .task_id = a, .attempt = attempt, .worker_id = 0,
				  .outcome = TQ_OUT_LOST, .exit_code = -1 };
	assert_int_equal(tq_queue_finish(f->q, &lost, NULL, &err), 0);
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(probe, 1);
	assert_int_equal(task, 0);
	assert_int_equal(claim_id(f->q, &attempt), b);  /* the next probe */
	assert_int_equal(claim_id(f->q, NULL), 0);
	/* killed (taskq kill): the next one again */
	finish_probe(f->q, b, attempt, TQ_OUT_KILLED, TQ_CAT_UNKNOWN, 0);
	assert_int_equal(claim_id(f->q, &attempt), c);
	assert_int_equal(claim_id(f->q, NULL), 0);
	/* its row changed under it (removed, or ended by hand): holds nothing */
	snprintf(sql, sizeof(sql), "UPDATE tasks SET state = 'failed' WHERE id = %lld",
		 (long long)c);
	sql_int(state_home, sql);
	assert_int_equal(runnable(f->q), 1);
	assert_int_equal(claim_id(f->q, &attempt), d);
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(task, d);
	assert_int_equal(claim_id(f->q, NULL), 0);
	/* resume lifts the probe with the pause: everything may start */
	assert_int_equal(tq_queue_group_resume(f->q, "api", &err), 0);
	assert_int_equal(claim_id(f->q, NULL), e);
	group_probe(f->q, "api", &probe, &task);
	assert_int_equal(probe, 0);
}

/* A pause by hand is not probed: resume releases everything at once. */
static void test_pause_by_hand_not_probed(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t a = submit_simple(f->q, 0, "api"), b = submit_simple(f->q, 0, "api");

	assert_int_equal(tq_queue_group_pause(f->q, "api", &err), 0);
	assert_int_equal(claim_id(f->q, NULL), 0);
	assert_int_equal(tq_queue_group_resume(f->q, "api", &err), 0);
	assert_int_equal(claim_id(f->q, NULL), a);
	assert_int_equal(claim_id(f->q, NULL), b);
}

/* ------------------------------------------------------------------ */
/* The node in the recovery interface                                 */

/* A worker registers its node; the attempts it claims record it; what
 * recovery reads (expired leases, a worker's running tasks) and the
 * workers and attempts read back name it. An attempt stored before schema
 * 7 (node NULL) whose worker row is gone reads "": this node's. */
static void test_node_recorded_and_read(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_worker_info *ws = NULL;
	struct tq_expired *ex = NULL;
	struct tq_attempt *as = NULL;
	struct tq_task t;
	int64_t w1 = 0, w2 = 0, a, b;
	char sql[128];
	size_t n = 0;

	assert_int_equal(tq_queue_worker_add(f->q, "", 1, 1, 1, 0, &w1, &err), TQ_EINVAL);
	assert_int_equal(tq_queue_worker_add(f->q, "h1", (int)getpid(), 1, 1, 0, &w1, &err), 0);
	assert_int_equal(tq_queue_worker_add(f->q, "h2", (int)getpid(), 1, 2, 0, &w2, &err), 0);
	a = submit_simple(f->q, 0, NULL);
	b = submit_simple(f->q, 0, NULL);
	assert_int_equal(tq_queue_claim(f->q, w2, 1000, &t, NULL, &err), 0);
	assert_int_equal(t.id, a);
	tq_task_release(&t);
	assert_int_equal(tq_queue_claim(f->q, w1, 1000, &t, NULL, &err), 0);
	assert_int_equal(t.id, b);
	tq_task_release(&t);
	assert_int_equal(tq_queue_workers(f->q, &ws, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ws[0].node, "h1");
	assert_string_equal(ws[1].node, "h2");
	free(ws);
	assert_int_equal(tq_queue_attempts(f->q, a, &as, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(as[0].node, "h2");
	tq_attempt_list_free(as, n);
	assert_int_equal(tq_queue_expired(f->q, tq_now_ms() + 60000, 10, &ex, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(ex[i].node, ex[i].task_id == a ? "h2" : "h1");
	free(ex);
	assert_int_equal(tq_queue_running_by(f->q, w2, 10, &ex, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ex[0].node, "h2");
	free(ex);
	/* as stored before schema 7, by a worker whose row is gone */
	snprintf(sql, sizeof(sql), "UPDATE attempts SET node = NULL WHERE task_id = %lld",
		 (long long)a);
	sql_int(state_home, sql);
	snprintf(sql, sizeof(sql), "DELETE FROM workers WHERE id = %lld", (long long)w2);
	sql_int(state_home, sql);
	assert_int_equal(tq_queue_running_by(f->q, w2, 10, &ex, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ex[0].node, "");
	free(ex);
	assert_int_equal(tq_queue_attempts(f->q, a, &as, &n, &err), 0);
	assert_null(as[0].node);
	tq_attempt_list_free(as, n);
}

/* This node's name: $TASKQ_NODE, checked, else the host name. */
static void test_node_self(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	char buf[TQ_NODE_MAX + 1], host[256];

	(void)state;
	setenv(TQ_NODE_VAR, "h2.example-1_a", 1);
	assert_int_equal(tq_node_self(buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "h2.example-1_a");
	setenv(TQ_NODE_VAR, "two words", 1);
	assert_int_equal(tq_node_self(buf, sizeof(buf), &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "$TASKQ_NODE \"two words\""));
	unsetenv(TQ_NODE_VAR);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_int_equal(tq_node_self(buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, host);
	assert_int_equal(tq_node_self(buf, 2, &err), strlen(host) > 1 ? TQ_EINVAL : 0);
}

/* ------------------------------------------------------------------ */
/* The backend table (queue/store.h)                                  */

/* A locator no backend takes is refused with one line naming its form, and
 * nothing is made: before the table, "postgresql://h/db" was taken for a
 * relative state directory and a queue was made at ./postgresql:/h/db. */
static void test_unknown_locator_refused(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = (struct tq_queue *)1;
	char cwd[1024], made[1100];
	struct stat sb;
	SQLITE_ONLY();

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->home), 0);
	assert_int_equal(tq_queue_open(&q, "mysql://h/db", 0, &err), TQ_EINVAL);
	assert_null(q);
	assert_string_equal(err.msg, "store \"mysql://h/db\": no backend for "
			    "\"mysql://\" (give a state directory's path, or a postgresql:// "
			    "URL)");
	snprintf(made, sizeof(made), "%s/mysql:", f->home);
	assert_int_equal(lstat(made, &sb), -1);
	assert_int_equal(errno, ENOENT);
	/* a path that merely holds "://" later on is a state directory */
	assert_int_equal(tq_queue_open(&q, "./x://y", 0, &err), 0);
	tq_queue_close(q);
	assert_int_equal(chdir(cwd), 0);
	assert_true(tq_store_is_url("s3+x.y-z://b"));
	assert_false(tq_store_is_url("/home/u/.local/state/taskq"));
	assert_false(tq_store_is_url("1x://y"));
}

/* Every operation of the interface is filled, and a queue's handle names
 * the table of the backend that made it, as its writer and watch do. */
/*
 * Issue 19's stored shape: a task's warm flag and idle timeout stored and
 * read back (and refused without a session, an agent or an idle timeout);
 * a session row's agent; its tasks counted and their cost summed.
 */
static void test_warm_task_and_sessions_list(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_result r = { .has_result = 1, .agent_session = "conv-1", .cost_usd = 0.25,
			       .duration_ms = -1 };
	struct tq_session_row *rows = NULL;
	struct tq_task t;
	size_t n = 0;
	int64_t a, b, id, id_other;
	int attempt = 0;

	s.session = "w";
	s.agent = "claude";
	s.warm = 1;
	s.idle_timeout_ms = 0;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "a warm task needs an idle timeout");
	s.idle_timeout_ms = 90000;
	s.session = NULL;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "a warm task needs a session and an agent");
	s.session = "w";
	a = submit(f->q, &s);
	assert_int_equal(tq_queue_get(f->q, a, 0, &t, &err), 0);
	assert_int_equal(t.warm, 1);
	assert_int_equal(t.idle_timeout_ms, 90000);
	tq_task_release(&t);
	s.warm = 0;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "an idle timeout is for a warm task");
	s.idle_timeout_ms = 0;
	b = submit(f->q, &s);                   /* a cold message of the same session */
	assert_int_equal(tq_queue_get(f->q, b, 0, &t, &err), 0);
	assert_int_equal(t.warm, 0);
	assert_int_equal(t.idle_timeout_ms, 0);
	tq_task_release(&t);

	/* the first message's cost is the session's */
	assert_int_equal(claim_id(f->q, &attempt), a);
	{
		struct tq_finish fin = { .task_id = a, .attempt = attempt, .worker_id = 1,
					 .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0,
					 .next = TQ_NEXT_FINAL, .result = &r };

		assert_int_equal(tq_queue_finish(f->q, &fin, NULL, &err), 0);
	}
	s.session = "other";
	s.agent = NULL;
	id_other = submit(f->q, &s);

	assert_int_equal(tq_queue_sessions(f->q, NULL, &rows, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].key, "other");
	assert_null(rows[0].agent);
	assert_int_equal(rows[0].messages, 1);
	assert_int_equal(rows[0].has_cost, 0);
	assert_int_equal(rows[0].pid, 0);
	assert_string_equal(rows[1].key, "w");
	assert_string_equal(rows[1].agent, "claude");
	assert_string_equal(rows[1].agent_session, "conv-1");
	assert_string_equal(rows[1].cwd, "/");
	assert_int_equal(rows[1].messages, 2);
	assert_int_equal(rows[1].has_cost, 1);
	assert_true(rows[1].cost_usd > 0.249 && rows[1].cost_usd < 0.251);
	assert_int_equal(rows[1].idle_timeout_ms, 90000);
	assert_int_equal(rows[1].pid, 0);
	assert_null(rows[1].node);
	tq_session_row_list_free(rows, n);
	assert_int_equal(tq_queue_sessions(f->q, "w", &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].key, "w");
	tq_session_row_list_free(rows, n);
	assert_int_equal(tq_queue_sessions(f->q, "nope", &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(rows);

	/* a session with nothing left is not listed (asked by key, it is) */
	assert_int_equal(tq_queue_cancel(f->q, id_other, NULL, NULL, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, id_other, &err), 0);
	assert_int_equal(tq_queue_sessions(f->q, NULL, &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].key, "w");
	tq_session_row_list_free(rows, n);
	assert_int_equal(tq_queue_sessions(f->q, "other", &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].messages, 0);
	tq_session_row_list_free(rows, n);
}

/*
 * A session's warm process: recorded by pid + start on a node, refused
 * while another is recorded, marked idle and busy, listed per node, a
 * close request stored, taken once, and every change fenced by the
 * process's identity (a stale pid or start changes nothing).
 */
static void test_warm_process_recorded(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_session_row *rows = NULL, row;
	size_t n = 0;
	int64_t at = 0;
	int cleared = -1;

	s.session = "w";
	s.agent = "claude";
	s.warm = 1;
	s.idle_timeout_ms = 60000;
	submit(f->q, &s);

	/* close with no warm process: nothing stored */
	assert_int_equal(tq_queue_session_close_request(f->q, "w", 1000, &row, &err), 0);
	assert_int_equal(row.pid, 0);
	assert_int_equal(row.close_requested_at, 0);
	tq_session_row_release(&row);
	assert_int_equal(tq_queue_session_close_request(f->q, "nope", 1000, &row, &err),
			 TQ_ENOTFOUND);
	assert_string_equal(err.msg, "session \"nope\": no such session");
	tq_session_row_release(&row);

	assert_int_equal(tq_queue_warm_set(f->q, "w", "h1", 4242, 777, 5000, &err), 0);
	/* the same process again is fine; another is refused */
	assert_int_equal(tq_queue_warm_set(f->q, "w", "h1", 4242, 777, 6000, &err), 0);
	assert_int_equal(tq_queue_warm_set(f->q, "w", "h1", 4242, 778, 6000, &err),
			 TQ_EEXIST);
	assert_string_equal(err.msg, "session w: warm process 4242 on node h1 is recorded, "
			    "not 4242");
	assert_int_equal(tq_queue_warm_set(f->q, "w", "h2", 99, 1, 6000, &err), TQ_EEXIST);
	/* a session with no row yet gets one */
	assert_int_equal(tq_queue_warm_set(f->q, "fresh", "h2", 99, 1, 6000, &err), 0);

	assert_int_equal(tq_queue_sessions(f->q, "w", &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].pid, 4242);
	assert_int_equal(rows[0].start, 777);
	assert_string_equal(rows[0].node, "h1");
	assert_int_equal(rows[0].warm_at, 5000);
	assert_int_equal(rows[0].idle_since, 0);
	tq_session_row_list_free(rows, n);

	/* idle and busy, fenced */
	assert_int_equal(tq_queue_warm_idle(f->q, "w", 4242, 777, 7000, &err), 0);
	assert_int_equal(tq_queue_warm_idle(f->q, "w", 4242, 778, 8000, &err), TQ_ESTALE);
	assert_int_equal(tq_queue_warm_list(f->q, "h1", &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].key, "w");
	assert_int_equal(rows[0].idle_since, 7000);
	assert_int_equal(rows[0].idle_timeout_ms, 60000);
	assert_string_equal(rows[0].agent, "claude");
	tq_session_row_list_free(rows, n);
	assert_int_equal(tq_queue_warm_list(f->q, NULL, &rows, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].key, "fresh");
	assert_string_equal(rows[1].key, "w");
	tq_session_row_list_free(rows, n);
	assert_int_equal(tq_queue_warm_list(f->q, "h3", &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tq_queue_warm_idle(f->q, "w", 4242, 777, 0, &err), 0);
	assert_int_equal(tq_queue_warm_list(f->q, "h1", &rows, &n, &err), 0);
	assert_int_equal(rows[0].idle_since, 0);
	tq_session_row_list_free(rows, n);

	/* a close request: stored once (its first time kept), taken once */
	assert_int_equal(tq_queue_session_close_request(f->q, "w", 9000, &row, &err), 0);
	assert_int_equal(row.pid, 4242);
	assert_int_equal(row.close_requested_at, 9000);
	tq_session_row_release(&row);
	assert_int_equal(tq_queue_session_close_request(f->q, "w", 9500, &row, &err), 0);
	assert_int_equal(row.close_requested_at, 9000);
	tq_session_row_release(&row);
	assert_int_equal(tq_queue_session_close_take(f->q, "w", 4242, 778, &at, &err), 0);
	assert_int_equal(at, 0);                  /* not that process's */
	assert_int_equal(tq_queue_session_close_take(f->q, "w", 4242, 777, &at, &err), 0);
	assert_int_equal(at, 9000);
	assert_int_equal(tq_queue_session_close_take(f->q, "w", 4242, 777, &at, &err), 0);
	assert_int_equal(at, 0);                  /* taken */

	/* cleared only by its own identity; the request goes with it */
	assert_int_equal(tq_queue_session_close_request(f->q, "w", 9900, &row, &err), 0);
	tq_session_row_release(&row);
	assert_int_equal(tq_queue_warm_clear(f->q, "w", 4242, 778, &cleared, &err), 0);
	assert_int_equal(cleared, 0);
	assert_int_equal(tq_queue_warm_clear(f->q, "w", 4242, 777, &cleared, &err), 0);
	assert_int_equal(cleared, 1);
	assert_int_equal(tq_queue_sessions(f->q, "w", &rows, &n, &err), 0);
	assert_int_equal(rows[0].pid, 0);
	assert_null(rows[0].node);
	assert_int_equal(rows[0].close_requested_at, 0);
	tq_session_row_list_free(rows, n);
	/* a new process after it: recorded, no stale request */
	assert_int_equal(tq_queue_warm_set(f->q, "w", "h1", 5151, 888, 10000, &err), 0);
	assert_int_equal(tq_queue_warm_list(f->q, "h1", &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].pid, 5151);
	assert_int_equal(rows[0].close_requested_at, 0);
	tq_session_row_list_free(rows, n);
}

static void test_backend_table_whole(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	const struct tq_store_ops *ops = pg_base ? &tq_pg_ops : &tq_sqlite_ops;
	struct tq_store_ops partial = tq_sqlite_ops;
	struct tq_log_watch *w = NULL;
	struct tq_log *l = NULL;

	assert_null(tq_store_missing(&tq_sqlite_ops));
	assert_null(tq_store_missing(&tq_pg_ops));
	partial.claim = NULL;
	assert_string_equal(tq_store_missing(&partial), "claim");
	partial = tq_sqlite_ops;
	partial.log_watch_close = NULL;
	assert_string_equal(tq_store_missing(&partial), "log_watch_close");
	assert_ptr_equal(f->q->ops, ops);
	assert_int_equal(tq_log_open(f->q, 1, 0, &l, &err), 0);
	assert_ptr_equal(l->ops, ops);
	assert_int_equal(tq_log_close(l, &err), 0);
	assert_int_equal(tq_log_watch_open(f->q, 1, &w, &err), 0);
	assert_ptr_equal(w->ops, ops);
	tq_log_watch_close(w);
}

/*
 * tq_queue_finish_claim: the end written and the next task taken in one
 * transaction; nothing runnable: the end written, nothing taken; an end
 * fenced out: neither (the next task stays queued); a paused group's task
 * is not taken, as tq_queue_claim would not take it.
 */
static void test_finish_claim(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t, n;
	enum tq_state s = TQ_RUNNING;
	int claimed = -1, more = -1, attempt = 0;
	int64_t a = submit_simple(f->q, 0, NULL), b = submit_simple(f->q, 0, NULL), c;
	struct tq_finish fin = { .worker_id = 1, .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0,
				 .next = TQ_NEXT_FINAL };

	assert_int_equal(tq_queue_claim(f->q, 1, 60000, &t, NULL, &err), 0);
	assert_int_equal(t.id, a);
	fin.task_id = a;
	fin.attempt = t.attempt;
	tq_task_release(&t);
	assert_int_equal(tq_queue_finish_claim(f->q, &fin, &s, 60000, &n, &claimed, &more, &err),
			 0);
	assert_int_equal(s, TQ_SUCCEEDED);
	assert_int_equal(state_of(f->q, a), TQ_SUCCEEDED);
	assert_int_equal(claimed, 1);
	assert_int_equal(more, 0);
	assert_int_equal(n.id, b);
	assert_int_equal(n.attempt, 1);
	assert_int_equal(state_of(f->q, b), TQ_RUNNING);
	assert_non_null(n.argv);
	assert_string_equal(n.argv[0], "true");

	/* nothing runnable (c's group is paused): b's end is written all the same */
	c = submit_simple(f->q, 0, "held");
	assert_int_equal(tq_queue_group_pause(f->q, "held", &err), 0);
	fin.task_id = b;
	fin.attempt = n.attempt;
	tq_task_release(&n);
	claimed = -1;
	assert_int_equal(tq_queue_finish_claim(f->q, &fin, &s, 60000, &n, &claimed, &more, &err),
			 0);
	assert_int_equal(claimed, 0);
	assert_int_equal(state_of(f->q, b), TQ_SUCCEEDED);
	assert_int_equal(state_of(f->q, c), TQ_QUEUED);

	/* fenced out: an old attempt's end is refused, and nothing is taken */
	assert_int_equal(tq_queue_group_resume(f->q, "held", &err), 0);
	fin.task_id = b;
	fin.attempt = 1;
	claimed = -1;
	assert_int_equal(tq_queue_finish_claim(f->q, &fin, &s, 60000, &n, &claimed, &more, &err),
			 TQ_ESTALE);
	assert_int_equal(claimed, 0);
	assert_int_equal(state_of(f->q, c), TQ_QUEUED);
	assert_int_equal(claim_id(f->q, &attempt), c);
	assert_int_equal(attempt, 1);
}

/*
 * tq_queue_finish_claim when the claim fails part-way (here a trigger of the
 * test's own refuses every task becoming running): the end is written all
 * the same, nothing is taken, the next task stays queued and nothing of the
 * claim is left (its attempt row, the state counts).
 */
static void test_finish_claim_when_the_claim_fails(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t, n;
	enum tq_state s = TQ_RUNNING;
	int claimed = -1, more = -1;
	int64_t a = submit_simple(f->q, 0, NULL), b = submit_simple(f->q, 0, NULL);
	struct tq_finish fin = { .worker_id = 1, .outcome = TQ_OUT_SUCCEEDED, .exit_code = 0,
				 .next = TQ_NEXT_FINAL };
	SQLITE_ONLY();

	assert_int_equal(tq_queue_claim(f->q, 1, 60000, &t, NULL, &err), 0);
	assert_int_equal(t.id, a);
	fin.task_id = a;
	fin.attempt = t.attempt;
	tq_task_release(&t);
	sql_int(state_home, "CREATE TRIGGER no_claims BEFORE UPDATE OF state ON tasks"
		" WHEN NEW.state = 'running' BEGIN SELECT RAISE(ABORT, 'no claims'); END");
	assert_int_equal(tq_queue_finish_claim(f->q, &fin, &s, 60000, &n, &claimed, &more, &err),
			 0);
	assert_int_equal(claimed, 0);
	assert_int_equal(more, 0);
	assert_int_equal(s, TQ_SUCCEEDED);
	assert_int_equal(state_of(f->q, a), TQ_SUCCEEDED);
	assert_int_equal(state_of(f->q, b), TQ_QUEUED);
	assert_int_equal(sql_int(state_home, "SELECT count(*) FROM attempts"), 1);
	assert_int_equal(sql_int(state_home, "SELECT n FROM task_counts WHERE state = 'queued'"),
			 1);
	assert_int_equal(sql_int(state_home, "SELECT n FROM task_counts WHERE state = 'running'"),
			 0);
	/* the claim, once it may: b */
	sql_int(state_home, "DROP TRIGGER no_claims");
	assert_int_equal(claim_id(f->q, NULL), b);
}

/* ------------------------------------------------------------------ */
/* Output, on either backend (logstore.h)                             */

struct lines_got {
	char text[8][80];
	size_t len[8];
	int64_t n[8];
	int newline[8];
	int count;
	size_t long_len;
};

static int got_line(const struct tq_log_line *line, void *arg)
{
	struct lines_got *g = arg;
	int i = g->count++;

	if (i >= 8)
		return 1;
	g->n[i] = line->n;
	g->newline[i] = line->newline;
	g->len[i] = line->len;
	if (line->len > 60000)
		g->long_len = line->len;
	memcpy(g->text[i], line->text, line->len < 79 ? line->len : 79);
	return 0;
}

static struct lines_got read_range(struct tq_queue *q, int64_t id, enum tq_stream s,
				   int64_t offset, int64_t limit, int64_t tail, int64_t *total)
{
	struct tq_log_range r = { .stream = s, .offset = offset, .limit = limit, .tail = tail };
	struct tq_err err = TQ_ERR_INIT;
	struct lines_got g;

	memset(&g, 0, sizeof(g));
	if (tq_log_read(q, id, &r, got_line, &g, total, &err) != 0)
		fail_msg("log read: %s", err.msg);
	return g;
}

/* What a writer takes reads back byte for byte, numbered in each stream
 * and in both, paged by offset and by tail, with a long line cut in
 * pieces, a NUL kept, a partial line ended by its stream's end; the output
 * cap holds exactly; a watch hears a write. The same on both backends. */
static void test_log_roundtrip_paged(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = submit_simple(f->q, 0, NULL), id2, total = -1, lines = -1, bytes = -1;
	int64_t off = -1, line = -1;
	struct tq_log_watch *w = NULL;
	struct tq_log *l = NULL;
	struct lines_got g;
	static char big[70001];
	struct pollfd pfd;

	memset(big, 'x', 70000);
	big[70000] = '\n';
	assert_int_equal(tq_log_exists(f->q, id), 0);
	assert_int_equal(tq_log_open(f->q, id, 0, &l, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "a\nb", 3, 1, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, "E1\n", 3, 1, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "\nc\0d\n", 5, 1, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, "tail", 4, 1, &err), 0);
	assert_int_equal(tq_log_end_stream(l, TQ_STREAM_STDERR, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, big, sizeof(big), 1, &err), 0);
	tq_log_position(l, &off, &line);
	assert_int_equal(line, 8);
	assert_int_equal(tq_log_output_bytes(l), 70016);
	assert_int_equal(tq_log_close(l, &err), 0);
	assert_int_equal(tq_log_exists(f->q, id), 1);

	g = read_range(f->q, id, TQ_STREAM_ALL, 1, -1, 0, &total);
	assert_int_equal(total, 7);
	assert_int_equal(g.count, 7);
	assert_memory_equal(g.text[0], "a", 1);
	assert_memory_equal(g.text[1], "E1", 2);
	assert_memory_equal(g.text[2], "b", 1);
	assert_int_equal(g.len[3], 3);
	assert_memory_equal(g.text[3], "c\0d", 3);
	assert_int_equal(g.len[4], 4);
	assert_int_equal(g.newline[4], 0); /* "tail": a piece */
	assert_int_equal(g.len[5], TQ_LOG_LINE_MAX);
	assert_int_equal(g.newline[5], 0);
	assert_int_equal(g.len[6], 70000 - TQ_LOG_LINE_MAX);
	assert_int_equal(g.newline[6], 1);
	g = read_range(f->q, id, TQ_STREAM_STDOUT, 1, -1, 0, &total);
	assert_int_equal(total, 5);
	assert_int_equal(g.count, 5);
	assert_memory_equal(g.text[2], "c\0d", 3);
	g = read_range(f->q, id, TQ_STREAM_STDERR, 2, 5, 0, &total);
	assert_int_equal(total, 2);
	assert_int_equal(g.count, 1);
	assert_int_equal(g.n[0], 2);
	assert_memory_equal(g.text[0], "tail", 4);
	g = read_range(f->q, id, TQ_STREAM_ALL, 3, 2, 0, &total);
	assert_int_equal(g.count, 2);
	assert_int_equal(g.n[0], 3);
	assert_int_equal(g.n[1], 4);
	g = read_range(f->q, id, TQ_STREAM_ALL, 0, 0, 2, &total);
	assert_int_equal(g.count, 2);
	assert_int_equal(g.n[0], 6);
	g = read_range(f->q, id, TQ_STREAM_ALL, 9, 1, 0, &total);
	assert_int_equal(g.count, 0);
	assert_int_equal(tq_log_stat(f->q, id, TQ_STREAM_ALL, &lines, &bytes, &err), 0);
	assert_int_equal(lines, 7);
	assert_int_equal(bytes, 70016);
	assert_int_equal(tq_log_stat(f->q, id, TQ_STREAM_STDERR, &lines, &bytes, &err), 0);
	assert_int_equal(lines, 2);
	assert_int_equal(bytes, 7);

	/* the cap: exactly 10 bytes kept, the last as a piece */
	id2 = submit_simple(f->q, 0, NULL);
	assert_int_equal(tq_log_open(f->q, id2, 10, &l, &err), 0);
	assert_int_equal(tq_log_watch_open(f->q, id2, &w, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "0123456789abc\n", 14, 1, &err),
			 TQ_ECAP);
	assert_non_null(strstr(err.msg, "output cap"));
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "z", 1, 1, &err), TQ_ECAP);
	assert_int_equal(tq_log_close(l, &err), 0);
	g = read_range(f->q, id2, TQ_STREAM_ALL, 1, -1, 0, &total);
	assert_int_equal(g.count, 1);
	assert_int_equal(g.len[0], 10);
	assert_int_equal(g.newline[0], 0);
	/* the writes were heard */
	pfd.fd = tq_log_watch_fd(w);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(tq_log_watch_hit(w), 1);
	tq_log_watch_close(w);
	assert_int_equal(tq_log_remove(f->q, id2, &err), 0);
	assert_int_equal(tq_log_exists(f->q, id2), 0);
	g = read_range(f->q, id2, TQ_STREAM_ALL, 1, -1, 0, &total);
	assert_int_equal(total, 0);
}

/* PostgreSQL: a URL's password never shows in an error (common/secret.c),
 * the forms it takes are its own, and one writer holds a log. */
/* Each node's supervisor row (issue 20): a beat replaces the node's row
 * and clears its stop; a stop marks only the supervisor that wrote it;
 * every node's row is read back, stopped ones too. */
static void test_supervisor_rows(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_supervisor_info a = { .node = "h1", .pid = 100, .proc_start = 7,
					.started_at = 1000, .workers = 2, .max_warm = 4,
					.containment = "cgroup v2 (/x)" };
	struct tq_supervisor_info b = { .node = "h2", .pid = 200, .started_at = 2000,
					.workers = 3 }, bad = { .pid = 1 };
	struct tq_supervisor_info *list = NULL;
	int64_t before = tq_now_ms();
	size_t n = 9;

	assert_int_equal(tq_queue_supervisors(f->q, &list, &n, &err), 0);
	assert_int_equal(n, 0);
	tq_supervisor_list_free(list, n);
	assert_int_equal(tq_queue_supervisor_beat(f->q, &bad, &err), TQ_EINVAL);
	assert_int_equal(tq_queue_supervisor_beat(f->q, &b, &err), 0);
	assert_int_equal(tq_queue_supervisor_beat(f->q, &a, &err), 0);
	assert_int_equal(tq_queue_supervisors(f->q, &list, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].node, "h1");
	assert_int_equal(list[0].pid, 100);
	assert_int_equal(list[0].proc_start, 7);
	assert_int_equal(list[0].started_at, 1000);
	assert_true(list[0].heartbeat_at >= before);
	assert_int_equal(list[0].workers, 2);
	assert_int_equal(list[0].max_warm, 4);
	assert_string_equal(list[0].containment, "cgroup v2 (/x)");
	assert_int_equal(list[0].stopped_at, 0);
	assert_string_equal(list[1].node, "h2");
	assert_null(list[1].containment);
	tq_supervisor_list_free(list, n);
	/* h2's supervisor stops; a stop of another pid of h1 changes nothing */
	assert_int_equal(tq_queue_supervisor_stop(f->q, "h2", 200, &err), 0);
	assert_int_equal(tq_queue_supervisor_stop(f->q, "h1", 101, &err), 0);
	assert_int_equal(tq_queue_supervisors(f->q, &list, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(list[0].stopped_at, 0);
	assert_true(list[1].stopped_at >= before);
	tq_supervisor_list_free(list, n);
	/* a new supervisor of h2: its row, running */
	b.pid = 201;
	b.workers = 1;
	assert_int_equal(tq_queue_supervisor_beat(f->q, &b, &err), 0);
	assert_int_equal(tq_queue_supervisors(f->q, &list, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(list[1].pid, 201);
	assert_int_equal(list[1].workers, 1);
	assert_int_equal(list[1].stopped_at, 0);
	tq_supervisor_list_free(list, n);
}

/* ------------------------------------------------------------------ */
/* Waking other nodes (queue.h, tq_queue_wake_open)                   */

/* How many announcements of other nodes w took: until want arrived or ms
 * passed, then settle_ms more for any beyond want. */
static int wake_heard(struct tq_wake *w, int want, int64_t ms, int64_t settle_ms)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t until = tq_mono_ms() + ms;
	int got = 0, settled = 0;

	for (;;) {
		struct pollfd p = { tq_queue_wake_fd(w), POLLIN, 0 };
		int64_t left = until - tq_mono_ms();
		int n;

		if (got >= want && !settled) {
			until = tq_mono_ms() + settle_ms;
			left = settle_ms;
			settled = 1;
		}
		if (left <= 0)
			return got;
		if (poll(&p, 1, (int)left) < 0)
			fail_msg("poll: %s", strerror(errno));
		if ((n = tq_queue_wake_take(w, &err)) < 0)
			fail_msg("wake take: %s", err.msg);
		got += n;
	}
}

/* A store's changes that make a task runnable or due are announced to
 * every other node's wake handle, in their transaction; the handle's own
 * node's are not (its doorbell rang), nor ends that start nothing. SQLite,
 * one node's store, has no handle. */
static void test_wake_other_nodes(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = spec_of(argv_true);
	struct tq_queue *own = NULL;
	struct tq_wake *w = (struct tq_wake *)1;
	int64_t a, b, id, deps[1];
	int attempt = 0;

	assert_int_equal(tq_queue_wake_open(f->q, "hx", &w, &err), 0);
	if (pg_base == NULL) {
		assert_null(w);
		return;
	}
	assert_non_null(w);
	assert_true(tq_queue_wake_fd(w) >= 0);
	/* a connection of the handle's node, hx */
	setenv("TASKQ_NODE", "hx", 1);
	assert_int_equal(tq_queue_open(&own, store_at(), 0, &err), 0);
	unsetenv("TASKQ_NODE");

	/* a submit on another node: heard once; on its own node: not */
	id = submit_simple(f->q, 0, NULL);
	assert_int_equal(wake_heard(w, 1, 5000, 100), 1);
	submit_simple(own, 0, NULL);
	submit_simple(f->q, 0, NULL);
	assert_int_equal(wake_heard(w, 1, 5000, 200), 1);
	/* many in one transaction: one announcement */
	{
		struct tq_task_spec many[3] = { spec_of(argv_true), spec_of(argv_true),
						spec_of(argv_true) };
		int64_t ids[3];

		assert_int_equal(tq_queue_submit_many(f->q, many, 3, ids, NULL, &err), 0);
		assert_int_equal(wake_heard(w, 1, 5000, 200), 1);
	}
	/* a plain end starts nothing: silent (then one submit, heard alone) */
	assert_int_equal(claim_id(f->q, &attempt), id);
	finish(f->q, id, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	submit_simple(f->q, 0, NULL);
	assert_int_equal(wake_heard(w, 1, 5000, 200), 1);
	/* a retry by hand */
	assert_int_equal(tq_queue_retry(f->q, id, &err), 0);
	assert_int_equal(wake_heard(w, 1, 5000, 100), 1);
	/* a blocked submit is silent; its dependency's end unblocks it: heard */
	s.priority = 10;
	a = submit(f->q, &s);
	assert_int_equal(wake_heard(w, 1, 5000, 100), 1);
	deps[0] = a;
	s.after = deps;
	s.nafter = 1;
	b = submit(f->q, &s);
	assert_int_equal(state_of(f->q, b), TQ_BLOCKED);
	assert_int_equal(claim_id(f->q, &attempt), a);
	finish(f->q, a, attempt, TQ_OUT_SUCCEEDED, TQ_NEXT_FINAL, 0);
	assert_int_equal(wake_heard(w, 1, 5000, 200), 1);
	/* a retry written by a finish (scheduled: its time is news) */
	assert_int_equal(claim_id(f->q, &attempt), b);
	finish(f->q, b, attempt, TQ_OUT_FAILED, TQ_NEXT_RETRY, tq_now_ms() + 60000);
	assert_int_equal(state_of(f->q, b), TQ_SCHEDULED);
	assert_int_equal(wake_heard(w, 1, 5000, 100), 1);
	/* a pause is silent; a resume and a limit are heard */
	assert_int_equal(tq_queue_group_pause(f->q, "true", &err), 0);
	assert_int_equal(tq_queue_group_resume(f->q, "true", &err), 0);
	assert_int_equal(wake_heard(w, 1, 5000, 200), 1);
	assert_int_equal(tq_queue_group_set_parallel(f->q, "true", 3, &err), 0);
	assert_int_equal(wake_heard(w, 1, 5000, 100), 1);

	tq_queue_wake_close(w);
	tq_queue_close(own);
}

static void test_pg_locators_and_secrets(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = (struct tq_queue *)1;
	struct tq_log *l = NULL, *l2 = NULL;
	int64_t id;

	assert_true(tq_pg_ops.accepts("postgresql://u@h/db"));
	assert_true(tq_pg_ops.accepts("postgres://h/db"));
	assert_true(tq_pg_ops.accepts("host=/run/postgresql dbname=taskq"));
	assert_true(tq_pg_ops.accepts("dbname = taskq"));
	assert_false(tq_pg_ops.accepts("/home/u/.local/state/taskq"));
	assert_false(tq_pg_ops.accepts("mysql://h/db"));
	assert_false(tq_pg_ops.accepts("hostile=1"));
	assert_false(tq_sqlite_ops.accepts("postgresql://u@h/db"));
	/* nothing listens on port 1: one line, the password masked; a
	 * server that cannot be reached is an outage (a submit tries again) */
	assert_int_equal(tq_queue_open(&q, "postgresql://u:hunter2secret@127.0.0.1:1/db"
				       "?connect_timeout=5", 0, &err), TQ_EOFFLINE);
	assert_null(q);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strstr(err.msg, "hunter2secret"));
	assert_non_null(strstr(err.msg, "cannot connect"));
	assert_int_equal(tq_queue_open(&q, "host=127.0.0.1 port=1 password=hunter2secret "
				       "connect_timeout=5", 0, &err), TQ_EOFFLINE);
	assert_null(strstr(err.msg, "hunter2secret"));
	if (pg_base == NULL)
		return;
	/* one writer per log, across connections */
	id = submit_simple(f->q, 0, NULL);
	assert_int_equal(tq_queue_open(&q, store_at(), 0, &err), 0);
	assert_int_equal(tq_log_open(f->q, id, 0, &l, &err), 0);
	assert_int_equal(tq_log_open(q, id, 0, &l2, &err), TQ_EBUSY);
	assert_non_null(strstr(err.msg, "being written by another process"));
	assert_int_equal(tq_log_close(l, &err), 0);
	assert_int_equal(tq_log_open(q, id, 0, &l2, &err), 0);
	assert_int_equal(tq_log_close(l2, &err), 0);
	tq_queue_close(q);
	/* another store, in another schema of the same database, has a task
	 * of the same id: its writer is not this one's (advisory locks are the
	 * database's; the key has the schema) */
	{
		char sql[160], url[1100];
		int64_t id2;

		snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s_b CASCADE; CREATE SCHEMA %s_b",
			 pg_schema, pg_schema);
		pg_run(sql);
		snprintf(url, sizeof(url), "%s_b", pg_url);
		assert_int_equal(tq_queue_open(&q, url, 0, &err), 0);
		id2 = submit_simple(q, 0, NULL);
		assert_int_equal(id2, id);
		assert_int_equal(tq_log_open(f->q, id, 0, &l, &err), 0);
		assert_int_equal(tq_log_open(q, id2, 0, &l2, &err), 0);
		assert_int_equal(tq_log_close(l2, &err), 0);
		assert_int_equal(tq_log_close(l, &err), 0);
		tq_queue_close(q);
		snprintf(sql, sizeof(sql), "DROP SCHEMA %s_b CASCADE", pg_schema);
		pg_run(sql);
	}
}

int main(void)
{
	const char *backend = getenv("TASKQ_TEST_BACKEND");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_creates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_locator_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_table_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_recorded_and_read, setup, teardown),
		cmocka_unit_test(test_node_self),
		cmocka_unit_test_setup_teardown(test_reopen_and_newer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_marks_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_envs_collected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_2_to_3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_3_to_4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema_11, setup, teardown),
		cmocka_unit_test_setup_teardown(test_umask_stall_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_on_exit_owed_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema_names_every_outcome, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_task_and_sessions_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warm_process_recorded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deps_left_submit_finish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deps_left_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deps_left_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deps_left_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deps_left_requeue_lost_clear, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_not_db, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test(test_derive_name),
		cmocka_unit_test_setup_teardown(test_claim_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_scheduled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writers_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fencing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finish_records_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_and_requeue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_pause, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_parallel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dependencies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unique, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_many_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_many_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_many_refused_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expired, setup, teardown),
		cmocka_unit_test_setup_teardown(test_manual_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_pause_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wants_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe_holds_group_until_it_passes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_probe_rate_limited_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe_lost_next_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pause_by_hand_not_probed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finish_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finish_claim_when_the_claim_fails, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_log_roundtrip_paged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_supervisor_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wake_other_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pg_locators_and_secrets, setup, teardown),
	};

	/* the test "queue_pg": the same tests on PostgreSQL, at the database
	 * TASKQ_TEST_PG names (tests/run starts one); without one, skipped */
	if (backend != NULL && strcmp(backend, "postgresql") == 0) {
		pg_base = getenv("TASKQ_TEST_PG");
		if (pg_base == NULL || pg_base[0] == '\0') {
			printf("skipped: TASKQ_TEST_PG names no PostgreSQL database (tests/run "
			       "starts a throwaway cluster when postgresql is installed)\n");
			return 77;
		}
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/*
 * test_queue_stmt.c - the SQLite backend's statement table
 * (src/queue/sqlite/stmts.def): every statement prepares against a freshly
 * created database and against one migrated from taskq 3's schema, the
 * cache hands out each slot's own text, the list builder's every shape
 * prepares too. So a typo in a statement, or a column a migration renamed,
 * fails here instead of in a user's run of the one command that uses it.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "queue/queue.h"
#include "queue/sqlite/internal.h"

struct fx {
	char *dir;
	struct tq_queue *q;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_non_null(f->dir = th_tempdir());
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->q != NULL)
		tq_queue_close(f->q);
	th_rmtree(f->dir);
	free(f);
	return 0;
}

static void open_home(struct fx *f, const char *home)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_open(&f->q, home, 0, &err) != 0)
		fail_msg("open %s: %s", home, err.msg);
}

/* Every slot of the table prepares, and the cache hands out its own text. */
static void prepare_all(struct tq_queue *base)
{
	struct tq_sqlite *q = tq_sqlite_of(base);

	for (int id = 0; id < ST_COUNT; id++) {
		struct tq_err err = TQ_ERR_INIT;
		sqlite3_stmt *st = tq_db_stmt(q, (enum tq_stmt)id, &err);

		if (st == NULL)
			fail_msg("%s: %s", tq_stmt_name((enum tq_stmt)id), err.msg);
		if (strcmp(sqlite3_sql(st), tq_stmt_sql((enum tq_stmt)id)) != 0)
			fail_msg("%s: the cache holds another statement: %s",
				 tq_stmt_name((enum tq_stmt)id), sqlite3_sql(st));
		/* a second use is the cached statement itself */
		assert_ptr_equal(tq_db_stmt(q, (enum tq_stmt)id, &err), st);
	}
}

/* Every list filter shape's text prepares. */
static void prepare_list_shapes(struct tq_queue *base)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	char sql[TQ_LIST_SQL_MAX];

	for (unsigned shape = 0; shape < TQ_LIST_VARIANTS; shape++) {
		sqlite3_stmt *st = NULL;

		assert_int_equal(tq_stmt_list_sql(shape, sql, sizeof(sql)), 0);
		if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
			fail_msg("list shape %u: %s: %s", shape, sqlite3_errmsg(q->db), sql);
		sqlite3_finalize(st);
	}
}

static void test_every_statement_prepares_on_a_new_database(void **state)
{
	struct fx *f = *state;
	char home[1024];

	snprintf(home, sizeof(home), "%s/state", f->dir);
	open_home(f, home);
	prepare_all(f->q);
	prepare_list_shapes(f->q);
}

/* taskq 3's schema (tests/fixtures/schema-3.sql), then every migration since,
 * as a user's old state directory is opened. */
static void test_every_statement_prepares_on_a_migrated_database(void **state)
{
	struct fx *f = *state;
	const char *fixtures = getenv("TASKQ_FIXTURES");
	char home[1024], path[1100], *schema = NULL;
	sqlite3 *db = NULL;
	FILE *fp;
	long n;

	assert_non_null(fixtures);
	snprintf(path, sizeof(path), "%s/schema-3.sql", fixtures);
	assert_non_null(fp = fopen(path, "re"));
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	assert_true((n = ftell(fp)) > 0);
	rewind(fp);
	assert_non_null(schema = calloc(1, (size_t)n + 1));
	assert_int_equal(fread(schema, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	snprintf(home, sizeof(home), "%s/state", f->dir);
	assert_int_equal(mkdir(home, 0700), 0);
	snprintf(path, sizeof(path), "%s/taskq.db", home);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(chmod(path, 0600), 0);
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("schema-3.sql: %s", sqlite3_errmsg(db));
	free(schema);
	sqlite3_close(db);
	open_home(f, home);
	prepare_all(f->q);
	prepare_list_shapes(f->q);
}

/* One name and one text a slot, every text written once. */
static void test_table_names_each_statement_once(void **state)
{
	(void)state;
	for (int i = 0; i < ST_COUNT; i++) {
		const char *name = tq_stmt_name((enum tq_stmt)i);
		const char *sql = tq_stmt_sql((enum tq_stmt)i);

		assert_non_null(name);
		assert_non_null(sql);
		assert_true(strncmp(name, "ST_", 3) == 0);
		assert_true(sql[0] != '\0');
		for (int j = 0; j < i; j++) {
			if (strcmp(sql, tq_stmt_sql((enum tq_stmt)j)) == 0)
				fail_msg("%s and %s are the same statement", name,
					 tq_stmt_name((enum tq_stmt)j));
			assert_string_not_equal(name, tq_stmt_name((enum tq_stmt)j));
		}
	}
	assert_null(tq_stmt_sql(ST_COUNT));
	assert_null(tq_stmt_name(ST_COUNT));
}

/* The list builder: each filter adds its own condition; a shape out of
 * range or a buffer too small is refused, never truncated. */
static void test_list_builder(void **state)
{
	char sql[TQ_LIST_SQL_MAX], small[64];

	(void)state;
	assert_int_equal(tq_stmt_list_sql(0, sql, sizeof(sql)), 0);
	assert_null(strstr(sql, "?1"));
	assert_non_null(strstr(sql, "LIMIT ?8 OFFSET ?9"));
	assert_int_equal(tq_stmt_list_sql(TQ_LIST_F_NAME | TQ_LIST_F_GROUP, sql,
					  sizeof(sql)), 0);
	assert_non_null(strstr(sql, "t.name = ?2"));
	assert_non_null(strstr(sql, "t.grp = ?6"));
	assert_null(strstr(sql, "AND t.batch"));
	assert_int_equal(tq_stmt_list_sql(TQ_LIST_VARIANTS, sql, sizeof(sql)), TQ_EINVAL);
	assert_int_equal(tq_stmt_list_sql(0, small, sizeof(small)), TQ_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_statement_prepares_on_a_new_database,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_every_statement_prepares_on_a_migrated_database, setup, teardown),
		cmocka_unit_test(test_table_names_each_statement_once),
		cmocka_unit_test(test_list_builder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

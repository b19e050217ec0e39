/*
 * insert.c - benchmark baseline: the least a durable submit can cost.
 *
 *     insert DB
 *
 * Opens an existing SQLite database in WAL mode (creating its one table the
 * first time), inserts one row in a BEGIN IMMEDIATE transaction with
 * synchronous=FULL (the commit is on disk before the process exits, as an
 * acknowledged `taskq submit` is), closes, exits. With the same WAL policy
 * as taskq's CLI connections (no checkpoint on close; a TRUNCATE checkpoint
 * that never waits once the WAL passes 64 frames), so that it is not slowed
 * by a WAL that grows for ever. Linked against the same libraries as taskq.
 *
 * This is what any program that stores a task in SQLite, durably, from a
 * process of its own, pays: bench/run's submit benchmark shows taskq against
 * it next to the exec floor (bench/floor.c). The row is about the size of a
 * small task's (argv, cwd, an environment of ~2 KB).
 */
#include <pty.h>
#include <stdio.h>
#include <string.h>

#include <bsd/stdlib.h>
#include <cjson/cJSON.h>
#include <sqlite3.h>

/* As in floor.c: one cheap use of each library keeps it linked. */
static volatile int sink;

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)arg;
	if (frames >= 64) {
		sqlite3_busy_handler(db, NULL, NULL);
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
		sqlite3_busy_timeout(db, 10000);
	}
	return SQLITE_OK;
}

static int fail(sqlite3 *db, const char *what)
{
	fprintf(stderr, "insert: %s: %s\n", what, db ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_close(db);
	return 1;
}

int main(int argc, char **argv)
{
	static char env[2048];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	const char *e = NULL;
	int (*volatile pty)(int *, int *, char *, const struct termios *,
			    const struct winsize *) = openpty;

	sink = cJSON_Version()[0] + (int)strtonum("1", 0, 1, &e);
	if (argc == 99)
		sink += pty(NULL, NULL, NULL, NULL, NULL);
	if (argc != 2) {
		fprintf(stderr, "usage: insert DB\n");
		return 2;
	}
	memset(env, 'x', sizeof(env) - 1);
	if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
		return fail(db, "open");
	sqlite3_busy_timeout(db, 10000);
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
			 "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY,"
			 " argv BLOB, cwd TEXT, env BLOB)", NULL, NULL, NULL) != SQLITE_OK)
		return fail(db, "set up");
	sqlite3_wal_hook(db, wal_hook, NULL);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO t(argv, cwd, env) VALUES (?1, ?2, ?3)", -1,
			       &st, NULL) != SQLITE_OK)
		return fail(db, "begin");
	sqlite3_bind_blob(st, 1, "true", 5, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, "/tmp", -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, env, (int)sizeof(env), SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return fail(db, "insert");
	sqlite3_finalize(st);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return fail(db, "commit");
	if (sqlite3_close(db) != SQLITE_OK)
		return fail(db, "close");
	return 0;
}

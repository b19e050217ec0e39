/*
 * db.c - opening the database: the state directory's checks, the pragmas,
 * creating and migrating the schema; and the plumbing every other file of
 * src/queue uses (statement cache, error mapping, transactions).
 *
 * Invariants: one connection per struct tq_sqlite, opened in the process that
 * uses it; every cached statement is reset and unbound after each use
 * (tq_db_done); every multi-statement change runs inside BEGIN IMMEDIATE so
 * it takes the write lock up front and never fails half-way on an upgrade.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/sys.h"
#include "queue/home.h"
#include "schema.h"
#include "migration_002.h"
#include "migration_003.h"
#include "migration_004.h"
#include "migration_005.h"
#include "migration_006.h"
#include "migration_007.h"
#include "migration_008.h"
#include "migration_009.h"
#include "migration_010.h"
#include "migration_011.h"
#include "migration_012.h"

#define TQ_JOURNAL_SIZE_LIMIT (16 * 1024 * 1024)
/* The database's name in the state directory, and what create_db puts
 * between it and its creator's identity for the name it builds under. */
#define TQ_DB_NAME TQ_HOME_DB_NAME
#define NEW_DB_INFIX ".new-"
#define TQ_CLI_WAL_FRAMES 64 /* see cli_wal_hook */
#define TQ_TIDY_WAL_FRAMES 1000 /* see tidy_wal_hook; SQLite's autocheckpoint's */
#define TQ_WAL_AHEAD_FRAMES 128 /* see wal_make_room */
#define TQ_WAL_HEADER 32        /* bytes before a WAL's first frame */

/* ------------------------------------------------------------------ */
/* Errors                                                             */

static int code_of(struct tq_sqlite *q, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return TQ_EBUSY;
	case SQLITE_FULL:
		return TQ_ENOSPC;
	case SQLITE_CORRUPT:
		return TQ_ECORRUPT;
	case SQLITE_NOTADB:
		return TQ_ENOTDB;
	case SQLITE_READONLY:
		return TQ_EREADONLY;
	case SQLITE_NOMEM:
		return TQ_ENOMEM;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return TQ_EPERM;
	case SQLITE_CONSTRAINT:
		return TQ_EINVAL;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		if (q != NULL && q->db != NULL && sqlite3_system_errno(q->db) != 0)
			return tq_err_from_errno(sqlite3_system_errno(q->db));
		return TQ_EIO;
	default:
		return TQ_EIO;
	}
}

int tq_db_error(struct tq_sqlite *q, int rc, struct tq_err *err, const char *what)
{
	int code = code_of(q, rc);
	const char *msg = q && q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc);
	int sys = q && q->db ? sqlite3_system_errno(q->db) : 0;

	/* Say how long we waited only when we did: SQLite also answers busy
	 * without calling the handler (a snapshot too old to upgrade to a
	 * write, a lock held during WAL recovery). */
	if (code == TQ_EBUSY && q != NULL && q->busy_gave_up != 0 &&
	    tq_mono_ms() - q->busy_gave_up < 1000)
		return tq_err_set(err, code, "%s: database %s is locked (waited %lld ms)",
				  what, q->path, (long long)(q->busy_gave_up - q->busy_start));
	if (code == TQ_EBUSY)
		return tq_err_set(err, code, "%s: database %s is locked by another process",
				  what, q ? q->path : "");
	if (code == TQ_ECORRUPT)
		return tq_err_set(err, code, "%s: database %s is corrupt (%s)", what,
				  q ? q->path : "", msg);
	if ((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_FULL) {
		if (sys != 0)
			return tq_err_set(err, code, "%s: database %s: %s (%s)", what,
					  q ? q->path : "", strerror(sys), msg);
	}
	return tq_err_set(err, code, "%s: database %s: %s", what, q ? q->path : "", msg);
}

/* ------------------------------------------------------------------ */
/* Statements and transactions                                        */

sqlite3_stmt *tq_db_stmt(struct tq_sqlite *q, enum tq_stmt id, struct tq_err *err)
{
	int rc;

	if (q->st[id] != NULL)
		return q->st[id];
	rc = sqlite3_prepare_v3(q->db, tq_stmt_sql(id), -1, SQLITE_PREPARE_PERSISTENT, &q->st[id],
				NULL);
	if (rc != SQLITE_OK) {
		tq_db_error(q, rc, err, "prepare");
		q->st[id] = NULL;
		return NULL;
	}
	return q->st[id];
}

void tq_db_done(sqlite3_stmt *st)
{
	if (st == NULL)
		return;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int tq_db_exec_st(struct tq_sqlite *q, sqlite3_stmt *st, struct tq_err *err,
		  const char *what)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE) {
		tq_db_error(q, rc, err, what);
		tq_db_done(st);
		return err ? err->code : code_of(q, rc);
	}
	tq_db_done(st);
	return 0;
}

static int exec_cached(struct tq_sqlite *q, enum tq_stmt id, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, id, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	return tq_db_exec_st(q, st, err, tq_stmt_sql(id));
}

/* Every transaction of ours waits for the others' on the writers' queue
 * (lock.c) first, then takes SQLite's write lock, which is then free but
 * for writers outside the queue; it lets go of both together. */
int tq_db_begin(struct tq_sqlite *q, struct tq_err *err)
{
	int rc;

	q->wants_id = 0; /* a submit's answer holds until the next change */
	if ((rc = tq_db_lock(q, err)) < 0)
		return rc;
	if ((rc = exec_cached(q, ST_BEGIN, err)) < 0)
		tq_db_unlock(q);
	return rc;
}

int tq_db_commit(struct tq_sqlite *q, struct tq_err *err)
{
	int rc = exec_cached(q, ST_COMMIT, err);

	/* a COMMIT that failed may have ended the transaction too (then
	 * nobody rolls back); one still open is the caller's to roll back */
	if (sqlite3_get_autocommit(q->db))
		tq_db_unlock(q);
	return rc;
}

void tq_db_rollback(struct tq_sqlite *q)
{
	int saved = errno;

	if (!sqlite3_get_autocommit(q->db))
		exec_cached(q, ST_ROLLBACK, NULL);
	tq_db_unlock(q);
	errno = saved;
}

int tq_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s == NULL)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

int tq_bind_opt_i64(sqlite3_stmt *st, int i, int64_t v, int64_t none)
{
	if (v == none)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_int64(st, i, v);
}

int tq_col_strdup(sqlite3_stmt *st, int col, char **out)
{
	const unsigned char *s = sqlite3_column_text(st, col);
	int n = sqlite3_column_bytes(st, col);

	*out = NULL;
	if (s == NULL)
		return sqlite3_column_type(st, col) == SQLITE_NULL ? 0 : TQ_ENOMEM;
	*out = malloc((size_t)n + 1);
	if (*out == NULL)
		return TQ_ENOMEM;
	memcpy(*out, s, (size_t)n);
	(*out)[n] = '\0';
	return 0;
}


/* Check the database file itself: 0 when it is there and usable, 1 when it
 * does not exist and may be created (create_db), or an error. One others
 * could read is made 0600, with its -wal and -shm (SQLite gave them its
 * mode), when note is not NULL. */
static int check_dbfile(const char *path, unsigned flags, char **note,
			struct tq_err *err)
{
	static const char *const sfx[] = { "-wal", "-shm" };
	struct stat sb;
	char *side;

	if (lstat(path, &sb) < 0) {
		if (errno != ENOENT)
			return tq_err_sys(err, "database %s", path);
		if (flags & TQ_OPEN_NOCREATE)
			return tq_err_set(err, TQ_ENOTFOUND, "database %s does not exist",
					  path);
		return 1;
	}
	if (S_ISLNK(sb.st_mode))
		return tq_err_set(err, TQ_EPERM, "database %s is a symbolic link: refusing "
				  "to follow it", path);
	if (!S_ISREG(sb.st_mode))
		return tq_err_set(err, TQ_ENOTDB, "database %s is not a regular file", path);
	if (sb.st_uid != geteuid())
		return tq_err_set(err, TQ_EPERM,
				  "database %s is owned by uid %u, not by you (uid %u)",
				  path, (unsigned)sb.st_uid, (unsigned)geteuid());
	if (access(path, R_OK | W_OK) < 0)
		return tq_err_set(err, errno == EROFS ? TQ_EREADONLY : TQ_EREADONLY,
				  "database %s is not writable: %s", path, strerror(errno));
	if (note == NULL || !tq_home_tighten(path, &sb))
		return 0;
	tq_home_note_tightened(note, "database", path, sb.st_mode);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (asprintf(&side, "%s%s", path, sfx[i]) < 0)
			continue;
		/* said with the database */
		if (lstat(side, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid())
			tq_home_tighten(side, &sb);
		free(side);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Schema                                                             */

static int busy_handler(void *arg, int count)
{
	struct tq_sqlite *q = arg;
	int64_t now = tq_mono_ms();

	/* SQLite's default handler sleeps up to 100 ms between polls, so a
	 * waiter can starve behind a stream of short transactions (measured:
	 * one of four workers did 733 of 736 claims). Short sleeps that grow
	 * slowly keep waiters close to FIFO at a small CPU cost. */
	if (count == 0)
		q->busy_start = now;
	/* less what this transaction waited in the writers' queue already */
	if (now - q->busy_start + q->busy_spent >= q->busy_timeout) {
		q->busy_gave_up = now;
		return 0;
	}
	struct timespec ts = { 0, count < 20 ? 200000 : count < 200 ? 1000000 : 5000000 };
	nanosleep(&ts, NULL);
	return 1;
}

static int pragma_int(struct tq_sqlite *q, const char *sql, int64_t *out,
		      struct tq_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*out = sqlite3_column_int64(st, 0);
			rc = SQLITE_OK;
		}
	}
	if (rc != SQLITE_OK)
		tq_db_error(q, rc, err, "read schema version");
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : (err ? err->code : TQ_EIO);
}

static int create_schema(struct tq_sqlite *q, struct tq_err *err)
{
	int64_t version = 0, objects = 0;
	char *emsg = NULL;
	int rc;

	/* Two processes may create the same new database at once: the loser
	 * waits on BEGIN IMMEDIATE, then sees the version already set. */
	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = pragma_int(q, "PRAGMA user_version", &version, err)) < 0)
		goto fail;
	if (version != 0) {
		tq_db_rollback(q);
		return 0;
	}
	if ((rc = pragma_int(q, "SELECT count(*) FROM sqlite_master", &objects, err)) < 0)
		goto fail;
	if (objects != 0) {
		rc = tq_err_set(err, TQ_ENOTDB,
				"database %s: not a taskq database (it has tables but "
				"no taskq schema version)", q->path);
		goto fail;
	}
	if (sqlite3_exec(q->db, tq_schema_sql, NULL, NULL, &emsg) != SQLITE_OK) {
		rc = tq_err_set(err, code_of(q, sqlite3_errcode(q->db)),
				"database %s: create schema: %s", q->path,
				emsg ? emsg : "?");
		sqlite3_free(emsg);
		goto fail;
	}
	return tq_db_commit(q, err);
fail:
	tq_db_rollback(q);
	return rc;
}

/*
 * Run a migration's statements in order, in the caller's transaction. An
 * ALTER TABLE ... ADD COLUMN of a column the table already has is skipped
 * (SQLite has no ADD COLUMN IF NOT EXISTS): a database set back to an older
 * version by hand (a test, a user reading an old note) has the column, and
 * the migration must still run (schema.sql, the header). It is the only
 * error passed over: "duplicate column name" comes from nothing else.
 */
/* The end of the statement that starts at p: past the first ';' that
 * completes it (sqlite3_complete: a trigger's body holds several), or the
 * end of the text. Used only to skip a statement that failed to prepare,
 * where SQLite's tail points wherever its parser stopped. */
static const char *statement_end(const char *p, char *scratch)
{
	size_t n = strlen(p);
	const char *semi = p;

	memcpy(scratch, p, n + 1);
	while ((semi = strchr(semi, ';')) != NULL) {
		char keep = scratch[semi - p + 1];

		scratch[semi - p + 1] = '\0';
		if (sqlite3_complete(scratch)) {
			scratch[semi - p + 1] = keep;
			return semi + 1;
		}
		scratch[semi - p + 1] = keep;
		semi++;
	}
	return p + n;
}

static int run_migration(struct tq_sqlite *q, const char *sql, char **emsg)
{
	const char *p = sql, *tail = NULL;
	sqlite3_stmt *st = NULL;
	char *scratch = NULL;
	int rc = SQLITE_OK;

	while (*p != '\0') {
		rc = sqlite3_prepare_v2(q->db, p, -1, &st, &tail);
		if (rc != SQLITE_OK && strncmp(sqlite3_errmsg(q->db), "duplicate column name",
					       21) == 0) {
			if (scratch == NULL && (scratch = malloc(strlen(sql) + 1)) == NULL) {
				rc = SQLITE_NOMEM;
				*emsg = sqlite3_mprintf("out of memory");
				break;
			}
			p = statement_end(p, scratch);
			continue;
		}
		if (rc != SQLITE_OK) {
			*emsg = sqlite3_mprintf("%s", sqlite3_errmsg(q->db));
			break;
		}
		p = tail;
		if (st == NULL) /* only a comment or white space was left */
			continue;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		if (rc != SQLITE_DONE)
			*emsg = sqlite3_mprintf("%s", sqlite3_errmsg(q->db));
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			break;
		rc = SQLITE_OK;
	}
	free(scratch);
	return rc;
}

/*
 * One migrations/NNN.sql step from version `from`, in one transaction. Two
 * processes may open an old database at once: the loser waits on BEGIN
 * IMMEDIATE, then finds the version already moved and does nothing.
 */
static int migrate_step(struct tq_sqlite *q, int64_t from, const char *sql,
			struct tq_err *err)
{
	int64_t version = 0;
	char *emsg = NULL;
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = pragma_int(q, "PRAGMA user_version", &version, err)) < 0)
		goto fail;
	if (version != from) {
		tq_db_rollback(q);
		return 0;
	}
	/* A migration that makes a table again renames the copy into place;
	 * SQLite's own rename would first check every trigger and view against
	 * the schema of that moment, in which the table is missing: a database
	 * set back by hand, holding a later version's triggers, failed there
	 * (the trigger that reads meta, while 003 makes meta again). The
	 * legacy rename only renames; each migration makes the objects it
	 * needs once its tables are in place. */
	sqlite3_db_config(q->db, SQLITE_DBCONFIG_LEGACY_ALTER_TABLE, 1, NULL);
	rc = run_migration(q, sql, &emsg);
	sqlite3_db_config(q->db, SQLITE_DBCONFIG_LEGACY_ALTER_TABLE, 0, NULL);
	if (rc != SQLITE_OK) {
		rc = tq_err_set(err, code_of(q, rc),
				"database %s: migrate from schema version %lld: %s",
				q->path, (long long)from, emsg ? emsg : "?");
		sqlite3_free(emsg);
		goto fail;
	}
	return tq_db_commit(q, err);
fail:
	tq_db_rollback(q);
	return rc;
}

static int migrate(struct tq_sqlite *q, struct tq_err *err)
{
	int64_t version = 0;
	int rc;

	if ((rc = pragma_int(q, "PRAGMA user_version", &version, err)) < 0)
		return rc;
	if (version == TQ_SCHEMA_VERSION)
		return 0;
	if (version > TQ_SCHEMA_VERSION)
		return tq_err_set(err, TQ_ENEWER,
				  "database %s has schema version %lld, newer than this "
				  "taskq (%d): upgrade taskq", q->path, (long long)version,
				  TQ_SCHEMA_VERSION);
	if (version == 0) {
		if ((rc = create_schema(q, err)) < 0)
			return rc;
		return migrate(q, err);
	}
	if (version >= 1 && version < TQ_SCHEMA_VERSION) {
		/* migrations[v] moves a database of version v to v + 1 */
		static const char *const migrations[] = {
			[1] = tq_migration_002, [2] = tq_migration_003, [3] = tq_migration_004,
			[4] = tq_migration_005, [5] = tq_migration_006,
			[6] = tq_migration_007, [7] = tq_migration_008,
			[8] = tq_migration_009, [9] = tq_migration_010,
			[10] = tq_migration_011, [11] = tq_migration_012,
		};
		_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == TQ_SCHEMA_VERSION,
			       "a migration for every version below schema.sql's");
		if ((rc = migrate_step(q, version, migrations[version], err)) < 0)
			return rc;
		return migrate(q, err);
	}
	return tq_err_set(err, TQ_ENEWER, "database %s: no migration from schema "
			  "version %lld to %d", q->path, (long long)version,
			  TQ_SCHEMA_VERSION);
}

static int quick_check(struct tq_sqlite *q, struct tq_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, "PRAGMA quick_check(1)", -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);
		if (r != NULL && strcmp(r, "ok") == 0) {
			sqlite3_finalize(st);
			return 0;
		}
		rc = tq_err_set(err, TQ_ECORRUPT, "database %s is corrupt (quick_check: %s)",
				q->path, r ? r : "?");
		/* SQLite's report has a line per problem: keep the error one line */
		for (char *p = err != NULL ? err->msg : NULL; p != NULL && *p; p++)
			if (*p == '\n' || *p == '\r' || *p == '\t')
				*p = ' ';
		sqlite3_finalize(st);
		return rc;
	}
	tq_db_error(q, rc, err, "quick_check");
	sqlite3_finalize(st);
	return err ? err->code : TQ_ECORRUPT;
}

/*
 * The WAL policy of short-lived (durable, CLI) connections.
 *
 * A process that opens the database while no other connection is open
 * rebuilds the wal-index by reading every valid WAL frame, and the rebuilt
 * index has forgotten which frames were already checkpointed. SQLite restarts
 * the WAL only at the start of a write when every frame is checkpointed, so
 * with one write per process (a CLI with no supervisor running) the WAL never
 * restarts: it grows by ~5 frames a submit, every open reads all of it, and
 * past the autocheckpoint threshold every commit copies all of it again
 * (measured: 11 ms a submit after 200 submits, 1,100 preads). So these
 * connections replace the autocheckpoint with a TRUNCATE checkpoint once the
 * WAL passes TQ_CLI_WAL_FRAMES: the WAL then stays small and the next
 * process's recovery has little to read. Long-lived connections (workers)
 * keep SQLite's autocheckpoint, which works while they stay open.
 *
 * The checkpoint never waits. A TRUNCATE checkpoint calls the busy handler
 * until no other connection reads an old snapshot and no one writes, and it
 * holds other writers off meanwhile; with several submitters and workers at
 * once every submit past the threshold queued behind the others' checkpoints
 * (measured: 8 concurrent submitters, 18 submits/s in all against 90/s from
 * one). Busy means another connection is open, whose own checkpoints (or a
 * later lone CLI's) keep the WAL in bounds, so a busy checkpoint is skipped.
 */
static int cli_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct tq_sqlite *q = arg;

	if (frames < TQ_CLI_WAL_FRAMES)
		return SQLITE_OK;
	sqlite3_busy_handler(db, NULL, NULL);
	sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_busy_handler(db, busy_handler, q);
	return SQLITE_OK;
}

/*
 * The checkpoint of a TQ_OPEN_TIDY connection (the supervisor's submit
 * socket): SQLite's autocheckpoint ran in the commit that took the WAL past
 * its 1000 frames, before that commit returned, so the submit whose commit
 * it was waited for it to answer (a copy of the WAL's pages into the
 * database and an fdatasync of each: 1.6 ms median here, against 0.3 for the
 * commit's own). The commit notes the WAL's size instead; tq_queue_tidy,
 * called once the answers are sent, checkpoints (passive: it waits for
 * nobody). The WAL starts over at about the same size as before, its
 * frames written over the file's old ones (an fdatasync of a WAL that grows
 * costs twice that of one written over, here).
 */
static int tidy_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct tq_sqlite *q = arg;

	(void)db;
	(void)name;
	q->wal_frames = frames;
	q->wal_committed = 1;
	return SQLITE_OK;
}

static int64_t page_size_of(struct tq_sqlite *q)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;

	if (sqlite3_prepare_v2(q->db, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* The WAL file's handle, SQLite's own (a descriptor of ours on it, closed,
 * would drop the process's POSIX locks on it); NULL: none open. */
static sqlite3_file *wal_file(struct tq_sqlite *q)
{
	sqlite3_file *f = NULL;

	if (sqlite3_file_control(q->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) != SQLITE_OK ||
	    f == NULL || f->pMethods == NULL)
		return NULL;
	return f;
}

/*
 * Room in the WAL file for the frames to come, on a TQ_OPEN_TIDY connection
 * (the supervisor's submit socket), made once its answers are sent.
 *
 * A commit's fdatasync costs about twice as much when its frames make the
 * file longer as when they are written over bytes the file already holds
 * (the file system must also commit the file's new size and blocks: here
 * 0.6-1.2 ms against 0.3-0.5 for the six frames of a submit). After
 * tidy's checkpoint the WAL starts over and its frames go over the old
 * ones, but a new WAL grows with every commit of its first 1000 frames:
 * every supervisor's first ~160 submits, and all of them after a lone CLI's
 * TRUNCATE checkpoint (cli_wal_hook) emptied the file. So once a commit
 * leaves fewer than TQ_WAL_AHEAD_FRAMES frames of room, the file is made as
 * long as the WAL gets between checkpoints and twice that many frames more,
 * with zeros. SQLite reads a WAL only up to its last valid frame (a frame
 * carries its WAL's salts and a checksum, which zeros do not), so bytes past
 * it are never read, and nothing but the writer, whose lock this holds,
 * writes there. The zeros are made durable after the lock is let go: the
 * workers' claims do not wait for that fdatasync (~13 ms for 4 MiB here).
 *
 * Best effort: busy (another writer), it is tried again at the next commit's
 * tidy; a write that fails (a full disk) gives the space back and is not
 * tried again for a minute.
 */
static void wal_make_room(struct tq_sqlite *q, sqlite3_file *f)
{
	static const char zeros[64 * 1024];
	const int64_t chunk = (int64_t)sizeof(zeros);
	sqlite3_int64 size = 0, want, off;
	int frames = q->wal_frames > TQ_TIDY_WAL_FRAMES ? q->wal_frames : TQ_TIDY_WAL_FRAMES;
	int rc = SQLITE_OK;

	want = TQ_WAL_HEADER + (frames + 2 * TQ_WAL_AHEAD_FRAMES) * q->wal_frame_bytes;
	want = (want + chunk - 1) / chunk * chunk;
	if (want > TQ_JOURNAL_SIZE_LIMIT) /* what SQLite would cut it back to */
		want = TQ_JOURNAL_SIZE_LIMIT;
	if (sqlite3_exec(q->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return; /* busy: the next tidy */
	if (f->pMethods->xFileSize(f, &size) != SQLITE_OK)
		size = want;
	for (off = size; off < want && rc == SQLITE_OK; off += chunk)
		rc = f->pMethods->xWrite(f, zeros, (int)(want - off < chunk ? want - off : chunk),
					 off);
	if (rc != SQLITE_OK)
		f->pMethods->xTruncate(f, size);
	sqlite3_exec(q->db, "COMMIT", NULL, NULL, NULL);
	if (rc == SQLITE_OK && size < want)
		rc = f->pMethods->xSync(f, SQLITE_SYNC_NORMAL);
	if (rc != SQLITE_OK)
		q->wal_room_retry = tq_mono_ms() + 60000;
}

void tq_sqlite_tidy(struct tq_queue *base)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_file *f;
	sqlite3_int64 size = 0;

	if (!(q->flags & TQ_OPEN_TIDY) || !q->wal_committed)
		return;
	q->wal_committed = 0;
	sqlite3_busy_handler(q->db, NULL, NULL);
	if (q->wal_frames >= TQ_TIDY_WAL_FRAMES) {
		q->wal_frames = 0;
		sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	}
	if (q->wal_frame_bytes == 0)
		q->wal_frame_bytes = 24 + page_size_of(q);
	/* an fstat a commit: the file may have been emptied by someone else */
	if (q->wal_frame_bytes > 24 && (f = wal_file(q)) != NULL &&
	    f->pMethods->xFileSize(f, &size) == SQLITE_OK &&
	    size < TQ_WAL_HEADER + (q->wal_frames + TQ_WAL_AHEAD_FRAMES) * q->wal_frame_bytes &&
	    tq_mono_ms() >= q->wal_room_retry)
		wal_make_room(q, f);
	sqlite3_busy_handler(q->db, busy_handler, q);
}

static int set_pragmas(struct tq_sqlite *q, struct tq_err *err)
{
	char sql[256];
	char *emsg = NULL;
	int rc;

	snprintf(sql, sizeof(sql),
		 "PRAGMA foreign_keys=ON; PRAGMA synchronous=%s; "
		 "PRAGMA journal_size_limit=%d;",
		 (q->flags & TQ_OPEN_DURABLE) ? "FULL" : "NORMAL",
		 TQ_JOURNAL_SIZE_LIMIT);
	rc = sqlite3_exec(q->db, sql, NULL, NULL, &emsg);
	if (rc != SQLITE_OK) {
		rc = tq_err_set(err, code_of(q, rc), "database %s: %s", q->path,
				emsg ? emsg : sqlite3_errstr(rc));
		sqlite3_free(emsg);
		return rc;
	}
	if ((q->flags & TQ_OPEN_DURABLE) && !(q->flags & TQ_OPEN_LONG))
		sqlite3_wal_hook(q->db, cli_wal_hook, q);
	else if (q->flags & TQ_OPEN_TIDY)
		sqlite3_wal_hook(q->db, tidy_wal_hook, q); /* instead of SQLite's */
	return 0;
}

/* WAL is a property of the file; set it once (a new database) and check
 * it is still WAL when someone else may have changed it. */
static int ensure_wal(struct tq_sqlite *q, struct tq_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *m = (const char *)sqlite3_column_text(st, 0);
		rc = (m && strcmp(m, "wal") == 0) ? SQLITE_OK : SQLITE_ERROR;
		if (rc != SQLITE_OK)
			tq_err_set(err, TQ_EIO, "database %s: cannot use WAL mode (%s)",
				   q->path, m ? m : "?");
	} else {
		tq_db_error(q, rc, err, "set WAL mode");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : (err ? err->code : TQ_EIO);
}

/* Finalize the cached statements and close the connection (checkpointing
 * its WAL if it is the last one and the connection allows it). */
static void db_close(struct tq_sqlite *q)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(q->st[i]);
		q->st[i] = NULL;
	}
	for (int i = 0; i < TQ_LIST_VARIANTS; i++) {
		sqlite3_finalize(q->list_st[i]);
		q->list_st[i] = NULL;
	}
	sqlite3_close(q->db);
	q->db = NULL;
}

/* Remove path and the files SQLite keeps beside it (missing ones are fine). */
static void unlink_db_files(const char *path)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
	char *p;

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (asprintf(&p, "%s%s", path, sfx[i]) < 0)
			continue;
		unlink(p);
		free(p);
	}
}

/*
 * Make a new database whole under a temporary name in the state directory
 * (mode 0600 whatever SQLite's default, which -wal and -shm then take; WAL;
 * the schema), then link it into place. So HOME/taskq.db is never an empty
 * or half-made file, a failure leaves nothing behind (no taskq.db, -wal or
 * -shm), and when two processes create it at once the first link wins and
 * the other opens that one. Closing the temporary connection checkpoints
 * its WAL into the file and removes -wal and -shm, so the file linked is
 * complete by itself; the directory is synced so that the name survives a
 * power loss, as the first acknowledged submit must. The temporary name
 * is taskq.db.new-PID-START, its creator's identity (pid and start time):
 * a process killed in here leaves it behind, and the next open removes it
 * once that process is gone (sweep_new_dbs), never while it runs.
 */
static int create_db(struct tq_sqlite *q, struct tq_err *err)
{
	char *tmp = NULL;
	int64_t start = 0;
	int fd, rc;

	if (tq_pid_start_time(getpid(), &start) < 0)
		return tq_err_sys(err, "create database %s: read /proc/self/stat", q->path);
	if (asprintf(&tmp, "%s" NEW_DB_INFIX "%ld-%lld", q->path, (long)getpid(),
		     (long long)start) < 0)
		return tq_err_set(err, TQ_ENOMEM, "create database: out of memory");
	unlink_db_files(tmp);
	if ((fd = tq_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600)) < 0) {
		rc = tq_err_sys(err, "create database %s", q->path);
		goto out;
	}
	tq_close(fd);
	rc = sqlite3_open_v2(tmp, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		rc = tq_db_error(q, rc, err, "create");
		goto out;
	}
	sqlite3_extended_result_codes(q->db, 1);
	if ((rc = ensure_wal(q, err)) < 0 || (rc = migrate(q, err)) < 0)
		goto out;
	db_close(q);
	if (link(tmp, q->path) < 0 && errno != EEXIST) {
		rc = tq_err_sys(err, "create database %s", q->path);
		goto out;
	}
	if ((fd = tq_open(q->home, O_RDONLY | O_DIRECTORY, 0)) < 0 || fsync(fd) < 0)
		rc = tq_err_sys(err, "sync state directory %s", q->home);
	tq_close(fd);
out:
	db_close(q);
	unlink_db_files(tmp);
	free(tmp);
	return rc;
}

/*
 * Whether the temporary database entry name (taskq.db.new-PID-START, with
 * -wal, -shm or -journal after it) was left by a creator that is gone: its
 * pid names no running process, or one with another start time (a reused
 * pid). A name of the older form taskq.db.new-PID carries no start time:
 * its creator is gone only when no process has the pid. A name that is not
 * ours is never "left".
 */
static int new_db_left(const char *name)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
	const char *p = name + strlen(TQ_DB_NAME NEW_DB_INFIX);
	long long pid, start = -1, now;
	int64_t ticks;
	char *end;
	size_t i;

	if (*p < '1' || *p > '9')
		return 0;
	errno = 0;
	pid = strtoll(p, &end, 10);
	if (errno != 0 || pid <= 0 || pid > INT32_MAX)
		return 0;
	if (*end == '-' && end[1] >= '0' && end[1] <= '9') {
		start = strtoll(end + 1, &end, 10);
		if (errno != 0)
			return 0;
	}
	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]) && strcmp(end, sfx[i]) != 0; i++)
		;
	if (i == sizeof(sfx) / sizeof(sfx[0]))
		return 0;
	if (tq_pid_start_time((pid_t)pid, &ticks) < 0)
		return errno == ENOENT;
	now = ticks;
	return start >= 0 && now != start;
}

/*
 * Remove what creators killed in create_db left in the state directory
 * home: each taskq.db.new-* entry whose creator is gone (new_db_left). A
 * live creator's files are its own: left alone. Best effort, errors
 * ignored: nothing reads these files, and an open must not fail over
 * litter. One getdents of a small directory: a few microseconds an open.
 */
static void sweep_new_dbs(const char *home)
{
	struct dirent *de;
	DIR *d = opendir(home); /* O_CLOEXEC: glibc's opendir sets it */

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, TQ_DB_NAME NEW_DB_INFIX,
			    strlen(TQ_DB_NAME NEW_DB_INFIX)) == 0 && new_db_left(de->d_name))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

/*
 * SQLite's process-wide settings, before its first use in the process:
 * single-thread mode and no memory statistics. Every taskq process has one
 * thread (the spawn's clone shares our memory only until its exec, and runs
 * no SQLite), so the mutexes SQLite takes around every call, every malloc
 * and every page of its cache guard nothing: they were ~7% of the
 * instructions of a submit and of a task's claim and end. When SQLite is
 * in use already (a test's own connection opened first), it keeps what it
 * has: sqlite3_config refuses, harmlessly.
 */
static void configure_sqlite(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int tq_sqlite_open(struct tq_queue **qp, const char *home, unsigned flags,
		   struct tq_err *err)
{
	struct tq_sqlite *q = NULL;
	int64_t version = 0;
	int rc, made = 0;

	*qp = NULL;
	configure_sqlite();
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "open: out of memory");
	q->base.ops = &tq_sqlite_ops;
	q->flags = flags;
	q->busy_timeout = TQ_BUSY_TIMEOUT_MS;
	q->lock_fd = -1;
	if (strlcpy(q->home, home, sizeof(q->home)) >= sizeof(q->home)) {
		rc = tq_err_set(err, TQ_EINVAL, "state directory path is too long");
		goto fail;
	}
	/* canonical here too (tq_home_resolve made it so for the CLI): SQLite
	 * refuses a path through a link */
	if ((rc = tq_home_canonical(q->home, sizeof(q->home), err)) < 0)
		goto fail;
	if ((size_t)snprintf(q->path, sizeof(q->path), "%s/" TQ_DB_NAME, q->home) >=
	    sizeof(q->path)) {
		rc = tq_err_set(err, TQ_EINVAL, "state directory path is too long");
		goto fail;
	}
	if ((rc = tq_home_prepare(q->home, (flags & TQ_OPEN_NOCREATE) ? TQ_HOME_NOCREATE : 0,
				   &made, &q->notice, err)) < 0)
		goto fail;
	sweep_new_dbs(q->home);
	if ((rc = check_dbfile(q->path, flags, &q->notice, err)) < 0)
		goto fail;
	if (rc == 1 && (rc = create_db(q, err)) < 0)
		goto fail;
	rc = sqlite3_open_v2(q->path, &q->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		rc = tq_db_error(q, rc, err, "open");
		goto fail;
	}
	sqlite3_extended_result_codes(q->db, 1);
	sqlite3_busy_handler(q->db, busy_handler, q);
	/* A short-lived CLI must not pay for a checkpoint (an fsync and a WAL
	 * rewrite) each time it closes; checkpoints run as the WAL grows. */
	sqlite3_db_config(q->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	/* The first read: a file that is not a database fails here. */
	if ((rc = pragma_int(q, "PRAGMA user_version", &version, err)) < 0)
		goto fail;
	if (version != TQ_SCHEMA_VERSION) {
		if (version == 0 && (rc = ensure_wal(q, err)) < 0)
			goto fail;
		if ((rc = migrate(q, err)) < 0)
			goto fail;
		/* A migration that copied a table left all of it in the WAL
		 * (82 MB for 300,000 tasks), which every process opening the
		 * database alone would read again: folded in now, unless
		 * someone else is busy with it (then it goes by the usual
		 * checkpoints). */
		if (version != 0) {
			sqlite3_busy_handler(q->db, NULL, NULL);
			sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
						  NULL, NULL);
			sqlite3_busy_handler(q->db, busy_handler, q);
		}
	}
	if ((rc = set_pragmas(q, err)) < 0)
		goto fail;
	if ((flags & TQ_OPEN_CHECK) &&
	    ((rc = ensure_wal(q, err)) < 0 || (rc = quick_check(q, err)) < 0))
		goto fail;
	*qp = &q->base;
	return 0;
fail:
	db_close(q);
	tq_db_lock_close(q);
	tq_home_unmake(q->home, made);
	free(q->notice);
	free(q);
	return rc;
}

void tq_sqlite_set_busy_timeout(struct tq_queue *base, int64_t ms)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	q->busy_timeout = ms > 0 ? ms : 0;
}

void tq_sqlite_close(struct tq_queue *base)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	if (q == NULL)
		return;
	db_close(q);
	tq_db_lock_close(q); /* after: see lock.c */
	free(q->notice);
	free(q);
}

const char * tq_sqlite_notice(const struct tq_queue *base)
{
	const struct tq_sqlite *q = tq_sqlite_of_c(base);
	return q->notice;
}

int tq_db_log_path(const struct tq_sqlite *q, int64_t id, char *buf, size_t n)
{
	int r = snprintf(buf, n, "%s/logs/%lld.log", q->home, (long long)id);

	return (r < 0 || (size_t)r >= n) ? TQ_EINVAL : 0;
}

int tq_sqlite_schema_version(struct tq_queue *base, int64_t *version, struct tq_err *err)
{
	*version = 0;
	return pragma_int(tq_sqlite_of(base), "PRAGMA user_version", version, err);
}

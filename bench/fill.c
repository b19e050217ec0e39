/*
 * fill.c - benchmark helper: queue N tasks of `true` in a state directory.
 *
 *   fill HOME N [after]
 *
 * HOME may be a store's URL instead (postgresql://...: bench/run pg).
 *
 * With "after", one more task of `true` follows, --after all N of them (the
 * after benchmark: a task waiting for thousands of others must not make
 * their drain quadratic).
 *
 * Inserts N tasks (argv {"true"}, cwd "/", a small PATH environment) with
 * tq_queue_submit_many, CHUNK tasks per transaction, as bench/claim.c does:
 * the drain benchmark needs a backlog of 2000 tasks, and the list, status and
 * RSS benchmarks a database of a million; N `taskq submit` processes would
 * take far longer than what is being measured.
 *
 * Then it folds the WAL into the database and truncates it (a TRUNCATE
 * checkpoint on a plain SQLite connection), leaving the files as a `taskq
 * submit --file` import leaves them. Without that, the store's own
 * connection leaves up to ~150 MB of WAL behind (SQLite's autocheckpoint
 * copies frames but does not reset the WAL), and since a taskq CLI does not
 * checkpoint on close, every later command with no other connection open
 * reads the whole WAL again to rebuild its index: ~200 ms per `taskq list`
 * at 1M tasks, which would be measured instead of `list` itself.
 *
 * Prints the elapsed seconds (insert + checkpoint) on stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bsd/stdlib.h>
#include <sqlite3.h>

#include "queue/queue.h"

#define CHUNK 50000

static char *task_argv[] = { "true", NULL };
static char *task_env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int checkpoint(const char *home)
{
	char path[4096];
	sqlite3 *db = NULL;
	int log = 0, done = 0, rc;

	snprintf(path, sizeof path, "%s/taskq.db", home);
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(db, 10000);
		/* A connection that has not read yet has not opened the WAL,
		 * and its checkpoint would do nothing. */
		rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	}
	if (rc == SQLITE_OK) {
		rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
	}
	if (rc == SQLITE_OK && (log < 0 || done != log)) {
		fprintf(stderr, "fill: checkpoint %s: %d of %d frames\n", path, done, log);
		rc = SQLITE_ERROR;
	} else if (rc != SQLITE_OK)
		fprintf(stderr, "fill: checkpoint %s: %s\n", path, db ? sqlite3_errmsg(db) : "?");
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct tq_queue *q = NULL;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec *specs;
	int64_t *ids, last = 0;
	const char *e = NULL;
	long n, chunk;
	int after;
	double t0 = now_s();

	if (argc != 3 && (argc != 4 || strcmp(argv[3], "after") != 0)) {
		fprintf(stderr, "usage: fill HOME N [after]\n");
		return 2;
	}
	after = argc == 4;
	n = (long)strtonum(argv[2], 1, 10000000, &e);
	if (e) {
		fprintf(stderr, "fill: N \"%s\": %s\n", argv[2], e);
		return 2;
	}
	chunk = n < CHUNK ? n : CHUNK;
	specs = calloc((size_t)chunk, sizeof *specs);
	/* with "after", every id is kept for the last task's dependencies */
	ids = calloc((size_t)(after ? n : chunk), sizeof *ids);
	if (!specs || !ids) {
		perror("fill");
		return 1;
	}
	for (long i = 0; i < chunk; i++) {
		struct tq_task_spec s = TQ_TASK_SPEC_INIT;

		s.argv = task_argv;
		s.argc = 1;
		s.cwd = "/";
		s.env = task_env;
		s.envc = 2;
		specs[i] = s;
	}
	if (tq_queue_open(&q, argv[1], 0, &err)) {
		fprintf(stderr, "fill: %s\n", err.msg);
		return 1;
	}
	for (long done = 0; done < n; done += chunk) {
		size_t k = (size_t)(n - done < chunk ? n - done : chunk);

		if (tq_queue_submit_many(q, specs, k, ids + (after ? done : 0), NULL, &err)) {
			fprintf(stderr, "fill: %s\n", err.msg);
			return 1;
		}
	}
	if (after) {
		specs[0].after = ids;
		specs[0].nafter = (size_t)n;
		if (tq_queue_submit(q, &specs[0], &last, NULL, &err)) {
			fprintf(stderr, "fill: the task after all: %s\n", err.msg);
			return 1;
		}
	}
	tq_queue_close(q);
	/* a store at a URL (PostgreSQL, bench/run pg) has no WAL file here */
	if (strstr(argv[1], "://") == NULL && checkpoint(argv[1]))
		return 1;
	printf("%.3f\n", now_s() - t0);
	free(specs);
	free(ids);
	return 0;
}

/*
 * test_queue_cost.c - what the store writes per task, through a real SQLite
 * file: the WAL frames (pages) and commits (transactions) of a task's path
 * through the worker's calls (claim, set_process, finish) and of a submit,
 * read from the WAL itself. These are the counts bench/run counts shows per
 * task of a drain (issue 21); the bounds here keep a cut from coming back
 * unnoticed (a new index on a column every claim changes, a second
 * statement writing a row the first already wrote, a write moved out of the
 * claim's transaction into one of its own).
 *
 * Each measurement starts from an empty WAL (a TRUNCATE checkpoint on a
 * connection of the test's own), and stays far below the autocheckpoint's
 * 1000 frames, so that every frame in the file was written by what is
 * measured.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "harness.h"
#include "queue/queue.h"

#define TASKS 20          /* measured tasks (and submits) */
#define WARMUP 5          /* tasks run before the measure: first statements,
			   * the b-trees' first splits */

struct fx {
	char *tmp;
	char home[512];
	char db[600];
	struct tq_queue *q;
	int64_t worker;
};

static char *argv_true[] = { "true", NULL };
static char *env_one[] = { "PATH=/usr/bin:/bin", NULL };

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tq_err err = TQ_ERR_INIT;

	assert_non_null(f);
	assert_non_null(f->tmp = th_tempdir());
	snprintf(f->home, sizeof(f->home), "%s/state", f->tmp);
	snprintf(f->db, sizeof(f->db), "%s/taskq.db", f->home);
	if (tq_queue_open(&f->q, f->home, 0, &err) != 0)
		fail_msg("open: %s", err.msg);
	if (tq_queue_worker_add(f->q, "h1", (int)getpid(), 1, 1, 0, &f->worker, &err) != 0)
		fail_msg("worker: %s", err.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	tq_queue_close(f->q);
	th_rmtree(f->tmp);
	free(f);
	return 0;
}

static int64_t submit_one(struct fx *f)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = 0;

	s.argv = argv_true;
	s.argc = 1;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	if (tq_queue_submit(f->q, &s, &id, NULL, &err) != 0)
		fail_msg("submit: %s", err.msg);
	return id;
}

/* One task's path as a worker takes it: claim, the process recorded, the
 * end (succeeded, final). */
static void run_one(struct fx *f)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	struct tq_finish fin = { .worker_id = f->worker, .outcome = TQ_OUT_SUCCEEDED,
				 .exit_code = 0, .next = TQ_NEXT_FINAL };

	if (tq_queue_claim(f->q, f->worker, 60000, &t, NULL, &err) != 0)
		fail_msg("claim: %s", err.msg);
	if (tq_queue_set_process(f->q, t.id, t.attempt, (int)getpid(), (int)getpid(), 1, 0, 1,
				 &err) != 0)
		fail_msg("set_process: %s", err.msg);
	fin.task_id = t.id;
	fin.attempt = t.attempt;
	if (tq_queue_finish(f->q, &fin, NULL, &err) != 0)
		fail_msg("finish: %s", err.msg);
	tq_task_release(&t);
}

/* Empty the WAL: what it holds goes into the database, the file to 0. */
static void wal_reset(struct fx *f)
{
	sqlite3 *db = NULL;
	int log = -1, done = -1;

	assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	/* a read first: until then the connection has not seen the WAL */
	assert_int_equal(sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", NULL, NULL,
				      NULL), SQLITE_OK);
	assert_int_equal(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
						   &log, &done), SQLITE_OK);
	assert_int_equal(log, 0);
	sqlite3_close(db);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The frames in the WAL and how many of them end a transaction (a commit
 * frame holds the database's size in pages; the others 0). */
static void wal_count(struct fx *f, long *frames, long *commits)
{
	char path[640];
	unsigned char hdr[32], fh[24];
	uint32_t page;
	FILE *fp;

	*frames = *commits = 0;
	snprintf(path, sizeof(path), "%s-wal", f->db);
	assert_non_null(fp = fopen(path, "rbe"));
	assert_int_equal(fread(hdr, 1, sizeof(hdr), fp), sizeof(hdr));
	page = be32(hdr + 8);
	assert_true(page >= 512);
	while (fread(fh, 1, sizeof(fh), fp) == sizeof(fh)) {
		/* frames of this WAL generation carry its salts */
		if (memcmp(fh + 8, hdr + 16, 8) != 0)
			break;
		(*frames)++;
		if (be32(fh + 4) != 0)
			(*commits)++;
		if (fseek(fp, (long)page, SEEK_CUR) != 0)
			break;
	}
	fclose(fp);
}

/*
 * A task of `true` that succeeds, from its claim to its end: three
 * transactions (claim, the process, the end: each must be on disk before
 * what follows it) and at most TASK_MAX_FRAMES pages written in all. The
 * pages, by b-tree, in a database this small (one leaf each): claim: tasks,
 * tasks_ready, tasks_running, task_counts, attempts; the process: attempts;
 * the end: tasks, tasks_running, tasks_state, tasks_finished, task_counts,
 * attempts. The workers row is written by neither (its heartbeat is the
 * worker's own, once in a while): 18 before that; nor is an index of the
 * lease (schema 9): 16 before that; nor the attempts' primary key as a b-tree
 * of its own, nor tasks_state by the claim (schema 11): 14 before that.
 */
#define TASK_COMMITS 3
#define TASK_MAX_FRAMES 12.0

static void test_frames_per_task(void **state)
{
	struct fx *f = *state;
	long frames, commits;

	for (int i = 0; i < WARMUP + TASKS; i++)
		submit_one(f);
	for (int i = 0; i < WARMUP; i++)
		run_one(f);
	wal_reset(f);
	for (int i = 0; i < TASKS; i++)
		run_one(f);
	wal_count(f, &frames, &commits);
	print_message("per task: %.2f WAL frames, %.2f commits\n", (double)frames / TASKS,
		      (double)commits / TASKS);
	assert_int_equal(commits, TASK_COMMITS * TASKS);
	if ((double)frames / TASKS > TASK_MAX_FRAMES)
		fail_msg("%.2f WAL frames a task, more than %.1f", (double)frames / TASKS,
			 TASK_MAX_FRAMES);
}

/*
 * The worker's path in a drain: each end takes the next task with it
 * (tq_queue_finish_claim), so a task costs two transactions (its process,
 * its end with the next claim) and the pages its end and the next claim
 * share are written once: tasks (the two rows share a leaf), tasks_running,
 * task_counts, attempts; its own: tasks_ready, tasks_state, tasks_finished.
 * 12 frames and 3 commits a task without it; 9 frames before schema 11.
 */
#define CHAIN_COMMITS 2
#define CHAIN_MAX_FRAMES 8.0

static void test_frames_per_chained_task(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t, n;
	long frames, commits;
	int claimed = 0;

	for (int i = 0; i < WARMUP + TASKS + 1; i++)
		submit_one(f);
	for (int i = 0; i < WARMUP; i++)
		run_one(f);
	if (tq_queue_claim(f->q, f->worker, 60000, &t, NULL, &err) != 0)
		fail_msg("claim: %s", err.msg);
	wal_reset(f);
	for (int i = 0; i < TASKS; i++) {
		struct tq_finish fin = { .task_id = t.id, .attempt = t.attempt,
					 .worker_id = f->worker, .outcome = TQ_OUT_SUCCEEDED,
					 .exit_code = 0, .next = TQ_NEXT_FINAL };

		if (tq_queue_set_process(f->q, t.id, t.attempt, (int)getpid(), (int)getpid(), 1,
					 0, 1, &err) != 0)
			fail_msg("set_process: %s", err.msg);
		if (tq_queue_finish_claim(f->q, &fin, NULL, 60000, &n, &claimed, NULL, &err) != 0)
			fail_msg("finish_claim: %s", err.msg);
		assert_int_equal(claimed, 1);
		tq_task_release(&t);
		t = n;
	}
	tq_task_release(&t);
	wal_count(f, &frames, &commits);
	print_message("per chained task: %.2f WAL frames, %.2f commits\n",
		      (double)frames / TASKS, (double)commits / TASKS);
	assert_int_equal(commits, CHAIN_COMMITS * TASKS);
	if ((double)frames / TASKS > CHAIN_MAX_FRAMES)
		fail_msg("%.2f WAL frames a chained task, more than %.1f",
			 (double)frames / TASKS, CHAIN_MAX_FRAMES);
}

/*
 * The same, for a task that ends before its worker records its process
 * (runner.c, PROCESS_RECORD_MS: a `true`): the process is written with the
 * end (tq_finish.pid), so a task costs one transaction, its end with the
 * next claim, and no page more than that one writes.
 */
#define QUICK_COMMITS 1
#define QUICK_MAX_FRAMES 7.0

static void test_frames_per_quick_task(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t, n;
	long frames, commits;
	int claimed = 0;

	for (int i = 0; i < WARMUP + TASKS + 1; i++)
		submit_one(f);
	for (int i = 0; i < WARMUP; i++)
		run_one(f);
	if (tq_queue_claim(f->q, f->worker, 60000, &t, NULL, &err) != 0)
		fail_msg("claim: %s", err.msg);
	wal_reset(f);
	for (int i = 0; i < TASKS; i++) {
		struct tq_finish fin = { .task_id = t.id, .attempt = t.attempt,
					 .worker_id = f->worker, .outcome = TQ_OUT_SUCCEEDED,
					 .exit_code = 0, .next = TQ_NEXT_FINAL,
					 .pid = (int)getpid(), .pgid = (int)getpid(),
					 .proc_start = 1, .log_line = 1 };

		if (tq_queue_finish_claim(f->q, &fin, NULL, 60000, &n, &claimed, NULL, &err) != 0)
			fail_msg("finish_claim: %s", err.msg);
		assert_int_equal(claimed, 1);
		tq_task_release(&t);
		t = n;
	}
	tq_task_release(&t);
	wal_count(f, &frames, &commits);
	print_message("per quick task: %.2f WAL frames, %.2f commits\n",
		      (double)frames / TASKS, (double)commits / TASKS);
	assert_int_equal(commits, QUICK_COMMITS * TASKS);
	if ((double)frames / TASKS > QUICK_MAX_FRAMES)
		fail_msg("%.2f WAL frames a quick task, more than %.1f",
			 (double)frames / TASKS, QUICK_MAX_FRAMES);
}

/* A submit of `true` (no labels, dependencies or token): one transaction;
 * its pages: tasks, the indexes written at insert (tasks_ready, tasks_name,
 * tasks_env), task_counts. 7 before schema 11 (tasks_state, and
 * sqlite_sequence: ids are never reused, now without it). */
#define SUBMIT_MAX_FRAMES 5.0

static void test_frames_per_submit(void **state)
{
	struct fx *f = *state;
	long frames, commits;

	for (int i = 0; i < WARMUP; i++)
		submit_one(f);
	wal_reset(f);
	for (int i = 0; i < TASKS; i++)
		submit_one(f);
	wal_count(f, &frames, &commits);
	print_message("per submit: %.2f WAL frames, %.2f commits\n", (double)frames / TASKS,
		      (double)commits / TASKS);
	assert_int_equal(commits, TASKS);
	if ((double)frames / TASKS > SUBMIT_MAX_FRAMES)
		fail_msg("%.2f WAL frames a submit, more than %.1f", (double)frames / TASKS,
			 SUBMIT_MAX_FRAMES);
}

/* The connection made again as the supervisor's submit socket's is
 * (TQ_OPEN_TIDY), from an empty WAL. */
static void reopen_as_submit_socket(struct fx *f)
{
	struct tq_err err = TQ_ERR_INIT;

	tq_queue_close(f->q);
	if (tq_queue_open(&f->q, f->home, TQ_OPEN_DURABLE | TQ_OPEN_LONG | TQ_OPEN_TIDY,
			  &err) != 0)
		fail_msg("open: %s", err.msg);
	wal_reset(f);
}

/*
 * The submit socket's connection (TQ_OPEN_TIDY): its commits never
 * checkpoint, not even the one that takes the WAL past SQLite's 1000 frames
 * (the submit would wait for it to be answered); tq_queue_tidy, which
 * submitd.c calls once its answers are sent, does, and the next commit
 * starts the WAL over.
 */
static void test_checkpoint_left_to_tidy(void **state)
{
	struct fx *f = *state;
	long frames = 0, commits = 0;
	int n = 0;

	reopen_as_submit_socket(f);
	while (frames < 1100 && n++ < 1000) {
		submit_one(f);
		wal_count(f, &frames, &commits);
	}
	print_message("%d submits, %ld frames in the WAL, no checkpoint\n", n, frames);
	assert_true(frames >= 1100);
	assert_int_equal(commits, n);
	tq_queue_tidy(f->q);
	submit_one(f);
	wal_count(f, &frames, &commits);
	assert_int_equal(commits, 1);
	assert_true(frames <= 10);
	tq_queue_tidy(f->q); /* nothing due: nothing done */
	submit_one(f);
	wal_count(f, &frames, &commits);
	assert_int_equal(commits, 2);
}

static long long wal_size(struct fx *f)
{
	char path[640];
	struct stat sb;

	snprintf(path, sizeof(path), "%s-wal", f->db);
	return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

static long long sql_int(struct fx *f, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long n = -1;

	assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_type(st, 0) == SQLITE_TEXT
			    ? strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0
			    : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/*
 * The submit socket's connection makes the WAL file as long as the WAL gets
 * between its checkpoints before the WAL gets there (db.c, wal_make_room):
 * a commit's frames then go over bytes the file already holds, whose
 * fdatasync costs half that of one that makes the file longer. The zeros
 * past the last frame are never taken for frames: every task submitted is
 * read back, by this connection, by another and after a restart, and the
 * database passes quick_check. A TRUNCATE checkpoint of another connection
 * (a lone CLI's) empties the file; the next tidy makes the room again.
 */
#define ROOM_MIN (32 + 1000LL * (4096 + 24))

static void test_wal_room_made_by_tidy(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	long long room;
	long frames, commits;
	int n = 0;

	reopen_as_submit_socket(f);
	assert_int_equal(wal_size(f), 0);
	submit_one(f);
	n++;
	assert_true(wal_size(f) < 100000);
	tq_queue_tidy(f->q);
	room = wal_size(f);
	print_message("WAL file after the first tidy: %lld bytes\n", room);
	assert_true(room >= ROOM_MIN);
	assert_true(room <= 16 * 1024 * 1024);
	wal_count(f, &frames, &commits);
	assert_int_equal(commits, 1); /* the zeros are no frames */

	/* past a checkpoint and the WAL's start over: the file never grows */
	for (long seen = 0, restarts = 0; restarts < 1 || n < 50; n++) {
		submit_one(f);
		tq_queue_tidy(f->q);
		wal_count(f, &frames, &commits);
		if (frames < seen)
			restarts++;
		seen = frames;
		assert_int_equal(wal_size(f), room);
		assert_true(n < 2000);
	}
	assert_int_equal(sql_int(f, "SELECT count(*) FROM tasks"), n);

	/* emptied by someone else: made again */
	wal_reset(f);
	submit_one(f);
	n++;
	tq_queue_tidy(f->q);
	assert_int_equal(wal_size(f), room);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM tasks"), n);

	/* a new connection recovers the WAL from the file alone */
	tq_queue_close(f->q);
	f->q = NULL;
	assert_int_equal(sql_int(f, "SELECT count(*) FROM tasks"), n);
	assert_int_equal(sql_int(f, "PRAGMA quick_check"), 1);
	if (tq_queue_open(&f->q, f->home, 0, &err) != 0)
		fail_msg("open: %s", err.msg);
	submit_one(f);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM tasks"), n + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_frames_per_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frames_per_chained_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frames_per_quick_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frames_per_submit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_left_to_tidy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wal_room_made_by_tidy, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

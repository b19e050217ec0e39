/*
 * claim.c - benchmark: claim + finish rate against the depth of the queue.
 *
 * For each depth N (default 1000, 100000, 1000000): a fresh state directory,
 * N queued tasks inserted with tq_queue_submit_many in chunks, then, on a new
 * connection as a worker's (synchronous=NORMAL), one process claims a task
 * (tq_queue_claim) and finishes it as succeeded (tq_queue_finish), over and
 * over. The claim must not get slower as the queue
 * grows (issue 3: rate at 1M / rate at 1k >= 0.8).
 *
 * The depth stays N throughout: after each pair one task is submitted to
 * replace the one claimed. That submit is not timed; only claim + finish are.
 * After warmup_pairs untimed pairs, a measuring window lasts until it has
 * both min_pairs pairs and min_seconds of timed work; each depth gets
 * runs_per_depth windows on the same database and the median is reported
 * (re-inserting a million rows per window would triple the run time and
 * measure nothing new). All the databases are made first and the windows
 * run in rounds, one per depth in turn, so that the depths compared are
 * measured side by side, not minutes apart.
 *
 *   claim [-q] [-u URL] [DEPTH...]     (default depths 1000 100000 1000000)
 *
 * -u URL: the store is PostgreSQL at URL (bench/run pg), depth N's in the
 * schema claim_N, which must exist and be empty (the URL's search_path is
 * set to it: options=-csearch_path=claim_N); nothing is removed after.
 *
 * -q (quick, a smoke check): windows of at least 1000 pairs and 0.5 s
 * instead of 5000 pairs and 2 s.
 *
 * Output: progress on stderr; on stdout one line per depth and one for the
 * ratio, key=value, for bench/run to parse:
 *   claim depth=1000 insert_per_s=412000 runs=15210,15112,15388 median=15210
 *   claim_ratio value=0.974
 * Temporary state directories go under $TMPDIR (else /tmp) and are removed.
 */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "queue/queue.h"

#define CHUNK 10000          /* tasks per tq_queue_submit_many call */
#define MAX_RUNS 3
static int runs_per_depth = 3;
static const char *pg_url;   /* -u: PostgreSQL instead of state directories */
static long min_pairs = 5000;
static long warmup_pairs = 1000;  /* untimed, before the first window */
static double min_seconds = 2.0;
#define MAX_SECONDS 20.0     /* a window never runs longer than this */
#define MAX_DEPTHS 16
#define WORKER_ID 1
#define LEASE_MS (5 * 60 * 1000)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct tq_err *err)
{
	fprintf(stderr, "claim: %s: %s\n", what, err ? err->msg : strerror(errno));
	exit(1);
}

static int rm_entry(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP ? rmdir(path) : unlink(path))
		fprintf(stderr, "claim: remove %s: %s\n", path, strerror(errno));
	return 0;
}

static void rmtree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* One task as a worker would see it: a command, a cwd, a small environment. */
static char *task_argv[] = { "true", NULL };
static char *task_env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL };

static struct tq_task_spec task_spec(void)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;

	s.argv = task_argv;
	s.argc = 1;
	s.cwd = "/";
	s.env = task_env;
	s.envc = 2;
	return s;
}

/* Insert n tasks in chunks; returns tasks per second. */
static double insert(struct tq_queue *q, long n)
{
	static struct tq_task_spec specs[CHUNK];
	static int64_t ids[CHUNK];
	struct tq_err err = TQ_ERR_INIT;
	double t0 = now_s();
	long done = 0, next_report = 100000;

	for (size_t i = 0; i < CHUNK; i++)
		specs[i] = task_spec();
	while (done < n) {
		size_t k = (size_t)(n - done < CHUNK ? n - done : CHUNK);

		if (tq_queue_submit_many(q, specs, k, ids, NULL, &err))
			die("tq_queue_submit_many", &err);
		done += (long)k;
		if (done >= next_report || done == n) {
			fprintf(stderr, "claim: depth %ld: inserted %ld (%.1f s)\n",
				n, done, now_s() - t0);
			next_report += 100000;
		}
	}
	return (double)n / (now_s() - t0);
}

/* One measuring window: returns claim+finish pairs per second. With
 * warmup, runs warmup_pairs pairs and returns 0. */
static double window(struct tq_queue *q, int warmup)
{
	struct tq_task_spec spec = task_spec();
	struct tq_err err = TQ_ERR_INIT;
	double timed = 0, start = now_s();
	long pairs = 0;

	while (warmup ? pairs < warmup_pairs : pairs < min_pairs || timed < min_seconds) {
		struct tq_task t = { 0 };
		struct tq_finish f = { 0 };
		int64_t id;
		double t0 = now_s();

		if (tq_queue_claim(q, WORKER_ID, LEASE_MS, &t, NULL, &err))
			die("tq_queue_claim", &err);
		f.task_id = t.id;
		f.attempt = t.attempt;
		f.worker_id = WORKER_ID;
		f.outcome = TQ_OUT_SUCCEEDED;
		f.exit_code = 0;
		f.next = TQ_NEXT_FINAL;
		if (tq_queue_finish(q, &f, NULL, &err))
			die("tq_queue_finish", &err);
		timed += now_s() - t0;
		tq_task_release(&t);
		pairs++;
		/* Keep the depth: replace the task just finished (not timed). */
		if (tq_queue_submit(q, &spec, &id, NULL, &err))
			die("tq_queue_submit", &err);
		if (now_s() - start > MAX_SECONDS)
			break;
	}
	return warmup ? 0 : (double)pairs / timed;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One depth: its state directory and the worker's connection to it. */
struct depth {
	long n;
	char dir[4096];
	struct tq_queue *q;
	double ins;                /* insert rate, tasks/s */
	double rates[MAX_RUNS];
};

/* Make depth d's database: n queued tasks, inserted as a submitter would,
 * then a fresh connection to claim from, as a worker has (its own process,
 * its own connection), warmed up. */
static void depth_open(struct depth *d)
{
	const char *tmp = getenv("TMPDIR");
	struct tq_err err = TQ_ERR_INIT;

	if (pg_url != NULL) {
		if (snprintf(d->dir, sizeof d->dir, "%s%coptions=-csearch_path%%3Dclaim_%ld",
			     pg_url, strchr(pg_url, '?') ? '&' : '?', d->n) >= (int)sizeof d->dir)
			die("URL too long", NULL);
	} else if (snprintf(d->dir, sizeof d->dir, "%s/taskq-bench-claim-XXXXXX",
			    tmp && *tmp ? tmp : "/tmp") >= (int)sizeof d->dir ||
		   !mkdtemp(d->dir)) {
		die("mkdtemp", NULL);
	}
	if (tq_queue_open(&d->q, d->dir, 0, &err))
		die("tq_queue_open", &err);
	d->ins = insert(d->q, d->n);
	tq_queue_close(d->q);
	if (tq_queue_open(&d->q, d->dir, 0, &err))
		die("tq_queue_open (worker)", &err);
	/* The first pairs on a new connection pay one-time costs (statements
	 * prepared, a cold page cache, the checkpoint of the bulk insert's
	 * WAL); the windows measure the steady state. */
	window(d->q, 1);
}

/* Print depth d's result line; returns its median rate. */
static double depth_report(struct depth *d)
{
	double sorted[MAX_RUNS];

	memcpy(sorted, d->rates, (size_t)runs_per_depth * sizeof sorted[0]);
	qsort(sorted, (size_t)runs_per_depth, sizeof sorted[0], cmp_double);
	printf("claim depth=%ld insert_per_s=%.0f runs=", d->n, d->ins);
	for (int r = 0; r < runs_per_depth; r++)
		printf("%s%.0f", r ? "," : "", d->rates[r]);
	printf(" median=%.0f\n", sorted[runs_per_depth / 2]);
	fflush(stdout);
	return sorted[runs_per_depth / 2];
}

int main(int argc, char **argv)
{
	long depths[MAX_DEPTHS] = { 1000, 100000, 1000000 };
	static struct depth d[MAX_DEPTHS];
	double rates[MAX_DEPTHS];
	int n = 3;

	for (;;) {
		if (argc > 1 && strcmp(argv[1], "-q") == 0) {
			min_pairs = 1000;
			min_seconds = 0.5;
			argv++;
			argc--;
		} else if (argc > 2 && strcmp(argv[1], "-u") == 0) {
			pg_url = argv[2];
			argv += 2;
			argc -= 2;
		} else {
			break;
		}
	}
	if (argc > 1) {
		if (argc - 1 > MAX_DEPTHS) {
			fprintf(stderr, "claim: at most %d depths\n", MAX_DEPTHS);
			return 2;
		}
		for (n = 0; n < argc - 1; n++) {
			const char *e = NULL;

			depths[n] = (long)strtonum(argv[n + 1], 1, 100000000, &e);
			if (e) {
				fprintf(stderr, "usage: claim [-q] [-u URL] [DEPTH...]  (\"%s\": %s)\n",
					argv[n + 1], e);
				return 2;
			}
		}
	}
	/* All the databases first, then the windows in rounds, each round
	 * one window per depth, back to back. A ratio of depths measured
	 * minutes apart (after a million-row insert, with its writeback still
	 * going) measured the machine as much as the claim; windows side by
	 * side share its state, as bench/run's other baselines do. */
	for (int i = 0; i < n; i++) {
		d[i].n = depths[i];
		depth_open(&d[i]);
	}
	for (int r = 0; r < runs_per_depth; r++)
		for (int i = 0; i < n; i++) {
			d[i].rates[r] = window(d[i].q, 0);
			fprintf(stderr, "claim: depth %ld: run %d: %.0f claims/s\n",
				d[i].n, r + 1, d[i].rates[r]);
		}
	for (int i = 0; i < n; i++) {
		tq_queue_close(d[i].q);
		if (pg_url == NULL)
			rmtree(d[i].dir);
		rates[i] = depth_report(&d[i]);
	}
	/* The ratio the issue asks for: deepest over shallowest. */
	if (n > 1)
		printf("claim_ratio value=%.3f\n", rates[n - 1] / rates[0]);
	return 0;
}

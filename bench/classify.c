/*
 * classify.c - benchmark: what one classification costs on the biggest
 * input the runner hands over (tests/unit/classify_tails.h: 64 KiB of
 * Claude stream-json ending in a recorded 429 result, and 64 KiB of log
 * text on stderr), in the two cases that bound it: decided by the final
 * JSON, and nothing matches (every stage and every text rule run). The
 * rules' load (once per worker) is timed too.
 *
 * Baseline, measured in the same rounds over the same bytes: one plain
 * pass that reads them as a program that only looks would, memchr for
 * every line end and strstr for a string that is not there. The ratio says
 * how many such passes a classification costs; the unit test
 * (test_classify's test_big_tails_bounded_work) holds what is the same on
 * every machine: the answers, and the bytes handed to regexec.
 *
 *   classify [-q] [-r ROUNDS] FIXTURE   (FIXTURE: claude-2.1-429.jsonl's path)
 *
 * -q (quick, a smoke check): 50 calls a round instead of 400. -r: rounds
 * (default 3, at most ROUNDS_MAX).
 *
 * Output: progress on stderr; on stdout one line per figure, key=value,
 * for bench/run to parse (ms per call, per round):
 *   classify case=load runs=2.1,2.0,2.2
 *   classify case=json runs=3.3,3.2,3.4 base=0.021,0.020,0.021 regex_bytes=1515
 *   classify case=none runs=3.6,3.5,3.6 base=0.021,0.020,0.021 regex_bytes=576
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "common/sys.h"
#include "classify/classify.h"
#include "classify_tails.h"

#define ROUNDS_MAX 16
#define LOADS 20             /* rule loads timed per round */
#define FIXTURE_MAX 4096     /* bytes of the final lines (classify_tails.h) */

static int reps = 400;       /* classifications (and baseline passes) a round */
static int rounds = 3;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "classify: %s: %s\n", what, why);
	exit(1);
}

static size_t read_small(const char *path, char *buf, size_t n)
{
	int fd = tq_open(path, O_RDONLY, 0);
	ssize_t k;

	if (fd < 0)
		die(path, "cannot open");
	k = tq_read_full(fd, buf, n);
	tq_close(fd);
	if (k <= 0 || (size_t)k >= n)
		die(path, "empty, unreadable or over 4 KiB");
	return (size_t)k;
}

/* The baseline: every line end found, and a string that is not there
 * searched for, over both tails. The count is returned so that the
 * compiler keeps the work. */
static size_t plain_pass(const struct classify_tails *t)
{
	const char *s[2] = { t->out, t->err };
	size_t n[2] = { t->on, t->en }, lines = 0;

	for (int i = 0; i < 2; i++) {
		const char *p = s[i], *e = s[i] + n[i], *nl;

		while (p < e && (nl = memchr(p, '\n', (size_t)(e - p))) != NULL) {
			lines++;
			p = nl + 1;
		}
		/* strstr needs a terminated string: the tails are, one past n */
		if (strstr(s[i], "Too Many Requests") != NULL)
			lines++;
	}
	return lines;
}

static double time_classify(const struct tq_rules *r, const struct classify_tails *t,
			    struct tq_classification *c)
{
	struct tq_classify_input in = {
		.outcome = TQ_OUT_FAILED, .exit_code = 1, .program = "claude",
		.out_tail = t->out, .out_len = t->on, .err_tail = t->err, .err_len = t->en,
		.now_ms = 1768478400000,
	};
	double t0 = now_ms();

	for (int i = 0; i < reps; i++)
		tq_classify(r, &in, c, NULL, 0);
	return (now_ms() - t0) / reps;
}

static double time_plain(const struct classify_tails *t, size_t *sink)
{
	double t0 = now_ms();

	for (int i = 0; i < reps; i++)
		*sink += plain_pass(t);
	return (now_ms() - t0) / reps;
}

static void print_runs(const char *name, const double *v, const double *base, size_t rb)
{
	printf("classify case=%s runs=", name);
	for (int i = 0; i < rounds; i++)
		printf("%s%.4f", i ? "," : "", v[i]);
	if (base != NULL) {
		printf(" base=");
		for (int i = 0; i < rounds; i++)
			printf("%s%.4f", i ? "," : "", base[i]);
		printf(" regex_bytes=%zu", rb);
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	static char fin[FIXTURE_MAX];
	double load[ROUNDS_MAX], json[ROUNDS_MAX], none[ROUNDS_MAX], bj[ROUNDS_MAX],
	       bn[ROUNDS_MAX];
	struct classify_tails tj, tn;
	struct tq_classification cj, cn;
	struct tq_rules *r = NULL;
	struct tq_err err = TQ_ERR_INIT;
	size_t fn, sink = 0;

	for (;;) {
		const char *e = NULL;

		if (argc > 1 && strcmp(argv[1], "-q") == 0) {
			reps = 50;
		} else if (argc > 2 && strcmp(argv[1], "-r") == 0) {
			rounds = (int)strtonum(argv[2], 1, ROUNDS_MAX, &e);
			if (e != NULL) {
				fprintf(stderr, "classify: -r \"%s\": %s (1 to %d)\n", argv[2], e,
					ROUNDS_MAX);
				return 2;
			}
			argv++;
			argc--;
		} else {
			break;
		}
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: classify [-q] [-r ROUNDS] FIXTURE\n");
		return 2;
	}
	fn = read_small(argv[1], fin, sizeof(fin));
	if (classify_tails_make(&tj, fin, fn) < 0 || classify_tails_make(&tn, fin, fn) < 0)
		die("inputs", "out of memory");
	tj.out[tj.on] = tj.err[tj.en] = '\0';
	classify_tails_odd(&tn);
	tn.out[tn.on] = tn.err[tn.en] = '\0';
	/* only the built-in rules: a user's config must not change the figure */
	if (tq_rules_load(&r, "", &err) < 0)
		die("rules", err.msg);
	for (int k = 0; k < rounds; k++) {
		double t0 = now_ms();

		for (int i = 0; i < LOADS; i++) {
			struct tq_rules *x = NULL;

			if (tq_rules_load(&x, "", &err) < 0)
				die("rules", err.msg);
			tq_rules_free(x);
		}
		load[k] = (now_ms() - t0) / LOADS;
		bj[k] = time_plain(&tj, &sink);
		json[k] = time_classify(r, &tj, &cj);
		bn[k] = time_plain(&tn, &sink);
		none[k] = time_classify(r, &tn, &cn);
		fprintf(stderr, "classify: round %d: load %.2f ms, json %.3f ms, none %.3f ms, "
			"plain pass %.4f ms\n", k + 1, load[k], json[k], none[k], bj[k]);
	}
	if (cj.category != TQ_CAT_RATE_LIMIT || cn.category != TQ_CAT_UNKNOWN)
		die("inputs", "not classified as the unit test says (rate_limit, unknown)");
	print_runs("load", load, NULL, 0);
	print_runs("json", json, bj, cj.regex_bytes);
	print_runs("none", none, bn, cn.regex_bytes);
	fprintf(stderr, "classify: (%zu lines seen by the plain passes)\n", sink);
	tq_rules_free(r);
	classify_tails_free(&tj);
	classify_tails_free(&tn);
	return 0;
}

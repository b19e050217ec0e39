/*
 * fill.c - benchmark helper: queue N tasks of `true` in a state directory.
 *
 *   fill HOME N
 *
 * Inserts N tasks (argv {"true"}, cwd "/", a small PATH environment) with
 * tq_queue_submit_many in one transaction, as bench/claim.c does: the drain
 * benchmark needs a backlog of 2000 tasks, and 2000 `taskq submit` processes
 * would take longer than the drain being measured. There is no bulk import
 * command yet.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <bsd/stdlib.h>

#include "queue/queue.h"

static char *task_argv[] = { "true", NULL };
static char *task_env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL };

int main(int argc, char **argv)
{
	struct tq_queue *q = NULL;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec *specs;
	int64_t *ids;
	const char *e = NULL;
	long n;

	if (argc != 3) {
		fprintf(stderr, "usage: fill HOME N\n");
		return 2;
	}
	n = (long)strtonum(argv[2], 1, 10000000, &e);
	if (e) {
		fprintf(stderr, "fill: N \"%s\": %s\n", argv[2], e);
		return 2;
	}
	specs = calloc((size_t)n, sizeof *specs);
	ids = calloc((size_t)n, sizeof *ids);
	if (!specs || !ids) {
		perror("fill");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		struct tq_task_spec s = TQ_TASK_SPEC_INIT;

		s.argv = task_argv;
		s.argc = 1;
		s.cwd = "/";
		s.env = task_env;
		s.envc = 2;
		specs[i] = s;
	}
	if (tq_queue_open(&q, argv[1], 0, &err) ||
	    tq_queue_submit_many(q, specs, (size_t)n, ids, NULL, &err)) {
		fprintf(stderr, "fill: %s\n", err.msg);
		return 1;
	}
	tq_queue_close(q);
	free(specs);
	free(ids);
	return 0;
}

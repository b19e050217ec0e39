/*
 * latency.c - benchmark: submit-to-start latency with an idle worker.
 *
 *   latency N STAMP CMD [ARGS...]
 *
 * N times: reads CLOCK_REALTIME, spawns `CMD [ARGS...] STAMP FILE` (the
 * submit command of a queue: `taskq submit --`, `tsp`, `nq`; TASKQ_HOME,
 * TS_SOCKET, NQDIR etc. from the environment; its runner must be up and
 * idle), waits for it, then waits (deadline 10 s) until the task has
 * appended its start time to FILE (bench/stamp), so the runner is idle
 * again before the next submit. Latency = the task's start - the time read
 * just before the submit process was spawned (so it includes the submit
 * process itself). FILE is $TMPDIR/taskq-latency-PID.
 *
 * Prints on stdout: latency runs=MS,MS,... median=MS p99=MS
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

extern char **environ;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The number of lines in FILE, and the last value. */
static int read_stamps(const char *file, long long *last)
{
	FILE *f = fopen(file, "r");
	long long v;
	int n = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%lld", &v) == 1) {
		*last = v;
		n++;
	}
	fclose(f);
	return n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR"), *e = NULL;
	posix_spawn_file_actions_t fa;
	char file[4096];
	double *ms, *sorted;
	char **cmd;
	long n;
	int base;

	if (argc < 4) {
		fprintf(stderr, "usage: latency N STAMP CMD [ARGS...]\n");
		return 2;
	}
	n = (long)strtonum(argv[1], 1, 100000, &e);
	if (e) {
		fprintf(stderr, "latency: N: %s\n", e);
		return 2;
	}
	snprintf(file, sizeof file, "%s/taskq-latency-%ld", tmp && *tmp ? tmp : "/tmp",
		 (long)getpid());
	unlink(file);
	base = argc - 3;
	cmd = calloc((size_t)base + 3, sizeof *cmd);
	ms = calloc((size_t)n, sizeof *ms);
	sorted = calloc((size_t)n, sizeof *sorted);
	for (int i = 0; i < base; i++)
		cmd[i] = argv[3 + i];
	cmd[base] = argv[2];
	cmd[base + 1] = file;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	for (long i = 0; i < n; i++) {
		long long t0 = now_ns(), start = 0, deadline;
		pid_t pid;
		int st, rc;

		rc = posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ);
		if (rc) {
			fprintf(stderr, "latency: spawn %s: %s\n", cmd[0], strerror(rc));
			return 1;
		}
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				return 1;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "latency: submit %ld failed\n", i + 1);
			return 1;
		}
		deadline = now_ns() + 10000000000LL;
		while (read_stamps(file, &start) < i + 1) {
			if (now_ns() > deadline) {
				fprintf(stderr, "latency: task %ld did not start within 10 s\n", i + 1);
				return 1;
			}
			usleep(1000);
		}
		ms[i] = (double)(start - t0) / 1e6;
		/* Let the worker record the task and go idle again. */
		usleep(20000);
	}
	unlink(file);
	memcpy(sorted, ms, (size_t)n * sizeof *ms);
	qsort(sorted, (size_t)n, sizeof *sorted, cmp);
	printf("latency runs=");
	for (long i = 0; i < n; i++)
		printf("%s%.3f", i ? "," : "", ms[i]);
	{
		long p99 = (long)((double)n * 0.99 + 0.999999) - 1;

		if (p99 >= n)
			p99 = n - 1;
		if (p99 < 0)
			p99 = 0;
		printf(" median=%.3f p99=%.3f\n",
		       n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
		       sorted[p99]);
	}
	return 0;
}

/*
 * spawn2.c - benchmark baseline: the raw floor of running tasks.
 *
 *   spawn2 [-j JOBS] N
 *
 * Runs `true` N times, JOBS (default 2) at a time, each with posix_spawnp in
 * a new session (POSIX_SPAWN_SETSID), stdin/stdout/stderr on /dev/null, and
 * waited for; a new one is started as soon as one exits. Prints the elapsed
 * wall time in seconds on stdout. This is what a runner with JOBS workers
 * cannot beat (issue 4: drain >= 60% of this rate).
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char *cmd[] = { "true", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	const char *e = NULL;
	long n, jobs = 2, started = 0, done = 0, running = 0;
	double t0;
	int opt;

	while ((opt = getopt(argc, argv, "j:")) != -1) {
		if (opt != 'j')
			goto usage;
		jobs = (long)strtonum(optarg, 1, 64, &e);
		if (e)
			goto usage;
	}
	if (argc - optind != 1)
		goto usage;
	n = (long)strtonum(argv[optind], 1, 10000000, &e);
	if (e)
		goto usage;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
	t0 = now_s();
	while (done < n) {
		int st;

		while (running < jobs && started < n) {
			pid_t pid;
			int rc = posix_spawnp(&pid, cmd[0], &fa, &at, cmd, environ);

			if (rc) {
				fprintf(stderr, "spawn2: spawn: %s\n", strerror(rc));
				return 1;
			}
			started++;
			running++;
		}
		if (wait(&st) < 0) {
			if (errno == EINTR)
				continue;
			perror("spawn2: wait");
			return 1;
		}
		running--;
		done++;
	}
	printf("%.6f\n", now_s() - t0);
	return 0;
usage:
	fprintf(stderr, "usage: spawn2 [-j JOBS] N\n");
	return 2;
}

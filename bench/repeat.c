/*
 * repeat.c - run a command COUNT times, one after another, and time it.
 *
 *   repeat [-t SECONDS] [-e VAR=V1:V2...] COUNT CMD [ARGS...]
 *
 * Each run is posix_spawnp + waitpid, stdin and stdout on /dev/null (stderr
 * is kept, for errors). Prints the elapsed wall time of all runs, in seconds,
 * on stdout. A run that does not exit 0 stops it with exit status 1. With -t,
 * a run still going SECONDS after the start is killed (SIGKILL) and repeat
 * exits 124, as timeout(1) does: task-spooler's client blocks for ever when
 * its queue is full, and a benchmark must not. With -e, run i gets VAR set to
 * the (i mod k)-th of the k colon-separated values: `-e NQDIR=a:b` submits
 * to two nq queues in turn, without a shell or env(1) in between.
 *
 * bench/run uses it for every per-process benchmark (taskq submit, tsp, nq,
 * the exec floor) so they share one harness whose own cost is as small as it
 * can be: a shell loop adds a fork of the shell per run, which would hide
 * the differences being measured. It runs in the foreground of bench/run,
 * so Ctrl-C reaches it and its current child.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

extern char **environ;

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for pid; on the alarm, kill it and return -1. */
static int wait_child(pid_t pid, int *st)
{
	for (;;) {
		if (waitpid(pid, st, 0) == pid)
			return 0;
		if (errno != EINTR) {
			perror("repeat: waitpid");
			exit(1);
		}
		if (timed_out) {
			kill(pid, SIGKILL);
			while (waitpid(pid, st, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: repeat [-t SECONDS] [-e VAR=V1:V2...] COUNT CMD [ARGS...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	posix_spawn_file_actions_t fa;
	const char *e = NULL;
	long count, limit = 0;
	double t0;
	int opt;
	char *var = NULL, *vals[64];
	int nvals = 0;

	while ((opt = getopt(argc, argv, "+t:e:")) != -1) {
		if (opt == 'e') {
			char *eq = strchr(optarg, '='), *tok, *save = NULL;

			if (!eq || eq == optarg)
				usage();
			*eq = '\0';
			var = optarg;
			for (tok = strtok_r(eq + 1, ":", &save); tok && nvals < 64;
			     tok = strtok_r(NULL, ":", &save))
				vals[nvals++] = tok;
			if (!nvals)
				usage();
			continue;
		}
		if (opt != 't')
			usage();
		limit = (long)strtonum(optarg, 1, 86400, &e);
		if (e) {
			fprintf(stderr, "repeat: -t \"%s\": %s\n", optarg, e);
			return 2;
		}
	}
	if (argc - optind < 2)
		usage();
	count = (long)strtonum(argv[optind], 1, 10000000, &e);
	if (e) {
		fprintf(stderr, "repeat: COUNT \"%s\": %s\n", argv[optind], e);
		return 2;
	}
	argv += optind + 1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	t0 = now_s();
	alarm((unsigned)limit);
	for (long i = 0; i < count; i++) {
		pid_t pid;
		int st, rc;

		if (var && setenv(var, vals[i % nvals], 1)) {
			perror("repeat: setenv");
			return 1;
		}
		rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
		if (rc) {
			fprintf(stderr, "repeat: spawn %s: %s\n", argv[0], strerror(rc));
			return 1;
		}
		if (wait_child(pid, &st) < 0 || timed_out) {
			fprintf(stderr, "repeat: %s: time limit of %ld s reached after %ld runs\n",
				argv[0], limit, i);
			return 124;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "repeat: run %ld of %s: %s %d\n", i + 1, argv[0],
				WIFEXITED(st) ? "exit status" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			return 1;
		}
	}
	alarm(0);
	printf("%.6f\n", now_s() - t0);
	posix_spawn_file_actions_destroy(&fa);
	return 0;
}

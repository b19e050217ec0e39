/*
 * reaper.c - run a command and make sure nothing it started outlives it.
 *
 *   reaper [-d DIR] CMD [ARGS...]
 *
 * Becomes a child subreaper (PR_SET_CHILD_SUBREAPER), runs CMD and waits for
 * it. Every process CMD starts that daemonizes (a `taskq serve` supervisor
 * and its workers, task-spooler's server, nq's waiting jobs) is reparented
 * here rather than to init, so it stays a descendant. When CMD has exited,
 * every descendant still alive gets SIGTERM, and SIGKILL after 3 s; all are
 * reaped. With -d, DIR (CMD's scratch directory) is then removed, whether
 * or not CMD cleaned up. Exits with CMD's status (128 + N if it died of
 * signal N).
 *
 * bench/run re-executes itself under this, after building it: its own
 * cleanup stops what it knows about (taskq shutdown, tsp -K); this is the
 * guarantee for the rest. It cannot find processes by their environment:
 * setproctitle overwrites the environment block that /proc/PID/environ shows
 * (taskq's supervisor and workers), so it walks the process tree instead.
 *
 * SIGINT, SIGTERM and SIGHUP are passed on to CMD (a Ctrl-C reaches both
 * anyway, as they share the terminal's process group); the sweep follows
 * when CMD has exited.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid, got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* The parent pid in /proc/PID/stat, or -1 (gone, or a kernel thread). */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;
	int ppid;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the state follows the last ')'. */
	if (!(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

/* Fill pids with every descendant of self (at most max); returns how many. */
static size_t descendants(pid_t self, pid_t *pids, size_t max)
{
	static pid_t all[65536], par[65536];
	size_t n = 0, k = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < sizeof all / sizeof all[0]) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0)
			continue;
		all[n] = (pid_t)v;
		par[n] = parent_of((pid_t)v);
		n++;
	}
	closedir(d);
	/* Breadth first from self: add the children of every pid added. */
	for (size_t i = 0; i < n; i++)
		if (par[i] == self && k < max)
			pids[k++] = all[i];
	for (size_t j = 0; j < k; j++)
		for (size_t i = 0; i < n; i++)
			if (par[i] == pids[j] && k < max)
				pids[k++] = all[i];
	return k;
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* TERM every descendant, KILL what is left after 3 s; returns how many
 * there were at first. */
static size_t sweep(void)
{
	static pid_t pids[65536];
	pid_t self = getpid();
	size_t n, first;
	struct timespec tick = { 0, 50 * 1000 * 1000 };

	reap_all();
	first = n = descendants(self, pids, sizeof pids / sizeof pids[0]);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	for (int t = 0; t < 60 && n; t++) {
		nanosleep(&tick, NULL);
		reap_all();
		n = descendants(self, pids, sizeof pids / sizeof pids[0]);
	}
	for (int t = 0; t < 40 && n; t++) {
		for (size_t i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		nanosleep(&tick, NULL);
		reap_all();
		n = descendants(self, pids, sizeof pids / sizeof pids[0]);
	}
	if (n)
		fprintf(stderr, "reaper: %zu processes still alive after SIGKILL\n", n);
	return first;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP ? rmdir(path) : unlink(path))
		fprintf(stderr, "reaper: remove %s: %s\n", path, strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	pid_t pid;
	int st = 0, rc;
	size_t left;
	const char *dir = NULL;

	if (argc > 2 && strcmp(argv[1], "-d") == 0) {
		dir = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: reaper [-d DIR] CMD [ARGS...]\n");
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		perror("reaper: PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	if ((pid = fork()) < 0) {
		perror("reaper: fork");
		return 1;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "reaper: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* Orphans reparented here are reaped as they exit; wait for CMD. */
	for (;;) {
		pid_t w = waitpid(-1, &st, 0);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			perror("reaper: waitpid");
			return 1;
		}
	}
	child_pid = 0;
	if ((left = sweep()))
		fprintf(stderr, "reaper: stopped %zu leftover processes\n", left);
	if (dir && access(dir, F_OK) == 0)
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return rc;
}

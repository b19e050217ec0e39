/*
 * test_diag.c - the log of long-running processes (src/common/diag.h):
 * serve.log rotated by size by whichever process writes it, followed across
 * rotations, nothing lost; repeats folded with an exact count.
 *
 * Real processes: the "supervisor" is a child that owns the log
 * (tq_diag_log_open dup2s onto its fds 1 and 2), the "workers" are its
 * children, which inherit its stderr as workers do and follow it.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/diag.h"
#include "common/sys.h"
#include "harness.h"

#define SIZE (64 * 1024)
#define FILES 9
#define WRITERS 4
#define LINES 1000 /* each: 5 x 1000 lines of ~93 bytes, ~7 rotations, none dropped */

static void say(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(const char *who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tq_diag(who, fmt, ap);
	va_end(ap);
}

static void say_loose(const char *who, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say_loose(const char *who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tq_diag_loose(who, fmt, ap);
	va_end(ap);
}

/* A worker: follow the log it inherited, write LINES distinct lines. */
static int writer(const char *home, int k)
{
	char who[32];

	if (tq_diag_log_follow(home, SIZE, FILES) != 1)
		return 3;
	snprintf(who, sizeof(who), "writer %d", k);
	for (int i = 0; i < LINES; i++)
		say(who, "line %05d of writer %d %040d", i, k, 0);
	return 0;
}

/* The supervisor: own the log, start the writers, write lines of its own
 * meanwhile, wait for them. */
static int owner(const char *home, int writers)
{
	pid_t pids[WRITERS];
	int st, bad = 0;

	if (tq_diag_log_open(home, SIZE, FILES, NULL) < 0)
		return 2;
	for (int k = 0; k < writers; k++) {
		if ((pids[k] = fork()) < 0)
			return 4;
		if (pids[k] == 0)
			_exit(writer(home, k));
	}
	for (int i = 0; i < LINES; i++) {
		say("owner", "line %05d of the owner %040d", i, 0);
		if (i % 100 == 0)
			tq_diag_tick(0);
	}
	for (int k = 0; k < writers; k++)
		if (tq_waitpid(pids[k], &st, 0) != pids[k] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	tq_diag_tick(0);
	return bad ? 5 : 0;
}

/* Count, across serve.log and serve.log.1..FILES, each distinct line;
 * each file must be at most max bytes. */
static void check_files(const char *home, off_t max, int writers, int *files_seen)
{
	char path[PATH_MAX], line[512];
	static unsigned char seen[WRITERS + 1][LINES];
	int n = 0;

	memset(seen, 0, sizeof(seen));
	for (int k = 0; k <= FILES + 1; k++) {
		struct stat sb;
		FILE *f;

		if (k == 0)
			snprintf(path, sizeof(path), "%s/serve.log", home);
		else
			snprintf(path, sizeof(path), "%s/serve.log.%d", home, k);
		if (stat(path, &sb) < 0)
			continue;
		assert_true(k <= FILES);
		n++;
		if (sb.st_size > max)
			fail_msg("%s is %lld bytes, over %lld", path, (long long)sb.st_size,
				 (long long)max);
		assert_non_null(f = fopen(path, "re"));
		while (fgets(line, sizeof(line), f) != NULL) {
			const char *p;
			int i, w;

			if ((p = strstr(line, ": line ")) == NULL)
				continue;
			if (sscanf(p, ": line %d of writer %d", &i, &w) == 2)
				seen[w][i]++;
			else if (sscanf(p, ": line %d of the owner", &i) == 1)
				seen[WRITERS][i]++;
			else
				fail_msg("a line cut or mixed: %s", line);
		}
		fclose(f);
	}
	for (int w = 0; w <= WRITERS; w++)
		for (int i = 0; i < LINES; i++)
			if (seen[w][i] != (w < writers || w == WRITERS ? 1 : 0))
				fail_msg("line %d of %s %d is there %d times", i,
					 w == WRITERS ? "the owner" : "writer", w, seen[w][i]);
	*files_seen = n;
}

/*
 * Five processes write one log as fast as they can; whichever finds it
 * full rotates it: every line there once, none cut, files rotated and no
 * more of them than asked. (A file may pass the bound by what the others
 * write while one rotates it, which a machine this busy can stretch: the
 * bound itself is checked with one writer below, and in
 * test_serve_log_bounded with a real supervisor and workers.)
 */
static void test_rotate_concurrent(void **state)
{
	char *home = th_tempdir();
	int st, files = 0;
	pid_t pid;

	(void)state;
	assert_non_null(home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(owner(home, WRITERS));
	assert_int_equal(tq_waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	check_files(home, (off_t)1 << 40, WRITERS, &files);
	/* ~470 KB through 64 KB files: rotated (~7 times, fewer if a
	 * rotating writer was descheduled while the others wrote), and
	 * none dropped yet */
	assert_true(files >= 2);
	th_rmtree(home);
}

/* One writer: every file within the bound, exactly. */
static void test_rotate_bound(void **state)
{
	char *home = th_tempdir();
	int st, files = 0;
	pid_t pid;

	(void)state;
	assert_non_null(home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(owner(home, 0));
	assert_int_equal(tq_waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check_files(home, SIZE, 0, &files);
	assert_true(files >= 2);
	th_rmtree(home);
}

/* A worker that sits idle while the supervisor rotates the log writes its
 * next line to the new serve.log, not into serve.log.1. */
static void test_follow(void **state)
{
	static char buf[SIZE + 1];
	char *home = th_tempdir(), path[PATH_MAX];
	int st, go[2];
	pid_t pid;
	FILE *f;

	(void)state;
	assert_non_null(home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t w;
		char c;

		if (tq_diag_log_open(home, SIZE, FILES, NULL) < 0 || pipe(go) < 0)
			_exit(2);
		if ((w = fork()) == 0) {
			close(go[1]);
			if (tq_diag_log_follow(home, SIZE, FILES) != 1 || read(go[0], &c, 1) != 1)
				_exit(3);
			say("worker", "after the rotation");
			_exit(0);
		}
		close(go[0]);
		for (int i = 0; i < 1000; i++)
			say("owner", "line %05d of the owner %040d", i, 0);
		if (write(go[1], "g", 1) != 1 || tq_waitpid(w, &st, 0) != w || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			_exit(4);
		_exit(0);
	}
	assert_int_equal(tq_waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/serve.log", home);
	assert_non_null(f = fopen(path, "re"));
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	/* the newest file ends with the worker's line */
	assert_non_null(strstr(buf, "worker: after the rotation\n"));
	assert_null(strstr(strstr(buf, "worker: after the rotation\n"), "owner"));
	th_rmtree(home);
}

/* The log's owner recreates a serve.log removed under it; a follower
 * writes on into the file it has until one exists again. */
static void test_removed(void **state)
{
	char *home = th_tempdir(), path[PATH_MAX];
	struct stat sb;
	int st;
	pid_t pid;

	(void)state;
	assert_non_null(home);
	snprintf(path, sizeof(path), "%s/serve.log", home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (tq_diag_log_open(home, SIZE, FILES, NULL) < 0)
			_exit(2);
		say("owner", "first");
		unlink(path);
		say("owner", "second");
		_exit(0);
	}
	assert_int_equal(tq_waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size > 0 && sb.st_size < 100); /* "second" only */
	th_rmtree(home);
}

/* Not our log (a terminal, a foreground supervisor's file): nothing to
 * follow. */
static void test_follow_other(void **state)
{
	char *home = th_tempdir();

	(void)state;
	assert_non_null(home);
	/* the test's stderr is not home/serve.log */
	assert_int_equal(tq_diag_log_follow(home, SIZE, FILES), 0);
	th_rmtree(home);
}

/*
 * Folding, in a child whose stderr is a file we read: the first of a run of
 * repeats is printed, the rest counted; the count comes at the end of the
 * window or at tick(1); lines with other numbers are other lines, unless
 * loose; a quiet line after a window is printed again.
 */
static void test_fold(void **state)
{
	char *home = th_tempdir(), path[PATH_MAX], buf[8192];
	FILE *f;
	size_t n;
	int st;
	pid_t pid;

	(void)state;
	assert_non_null(home);
	snprintf(path, sizeof(path), "%s/serve.log", home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (tq_diag_log_open(home, SIZE, FILES, NULL) < 0)
			_exit(2);
		tq_diag_fold_on();
		for (int i = 0; i < 1000; i++)
			say("sup", "bad magic");
		say("sup", "task 1 lost");
		say("sup", "task 2 lost");
		say("sup", "task 1 lost");
		for (int i = 0; i < 50; i++)
			say_loose("sup", "timed out (%d of 8 bytes)", i % 8);
		say("other", "bad magic"); /* another process's line */
		tq_diag_tick(0);           /* no window has ended: nothing */
		say("sup", "marker");
		tq_diag_tick(1);
		_exit(0);
	}
	assert_int_equal(tq_waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_non_null(f = fopen(path, "re"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	/* strip the timestamps: "YYYY-MM-DD HH:MM:SS " is 20 bytes a line */
	{
		char out[8192] = "", *line = buf, *nl;

		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			assert_true(strlen(line) > 20);
			strcat(out, line + 20);
			strcat(out, "\n");
			line = nl + 1;
		}
		assert_string_equal(out,
			"sup: bad magic\n"
			"sup: task 1 lost\n"
			"sup: task 2 lost\n"
			"sup: timed out (0 of 8 bytes)\n"
			"other: bad magic\n"
			"sup: marker\n"
			"sup: bad magic (repeated 999 times in the last 1 s)\n"
			"sup: task 1 lost (repeated 1 time in the last 1 s)\n"
			"sup: timed out (1 of 8 bytes) (repeated 49 times in the last 1 s)\n");
	}
	th_rmtree(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotate_concurrent),
		cmocka_unit_test(test_rotate_bound),
		cmocka_unit_test(test_follow),
		cmocka_unit_test(test_removed),
		cmocka_unit_test(test_follow_other),
		cmocka_unit_test(test_fold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

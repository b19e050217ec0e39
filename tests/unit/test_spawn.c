/*
 * test_spawn.c - tq_spawn_start on real processes: exit statuses, exec and
 * chdir failures as errors, PATH from the task's environment, the exact
 * environment, fds 0-2 only, reset signals, a new session, stdin through a
 * pipe with backpressure (and EPIPE), a pty, and the umask asked for.
 *
 * The test process is a subreaper and every test ends with a sweep, so no
 * process a test starts outlives it. Every wait is a poll with a deadline.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sys.h"
#include "proc/proc.h"
#include "proc/spawn.h"

/* How long any one event may take before a test fails. */
#define WAIT_MS 10000
#define OUT_MAX 65536

static char *test_env[] = { "PATH=/usr/bin:/bin", NULL };

/* Start argv with stdin mode in; asserts success. */
static void start(struct tq_child *c, char **argv, char **envp,
	const char *cwd, enum tq_spawn_stdin in)
{
	struct tq_err err = TQ_ERR_INIT;
	int rc;

	c->argv = argv;
	c->envp = envp;
	c->cwd = cwd;
	c->in = in;
	rc = tq_spawn_start(c, &err);
	if (rc != 0)
		fail_msg("spawn %s: %s", argv[0], err.msg);
	assert_true(c->pid > 0);
}

/*
 * Read fd (non-blocking) into buf until EOF (EIO from a pty master counts as
 * EOF) or, if want is not NULL, until want has been read. NUL-terminates;
 * returns the length. Fails the test at the deadline.
 */
static size_t read_until(int fd, char *buf, size_t cap, const char *want)
{
	int64_t deadline = tq_mono_ms() + WAIT_MS;
	size_t len = 0;

	buf[0] = '\0';
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - tq_mono_ms();
		ssize_t n;

		if (want != NULL && strstr(buf, want) != NULL)
			return len;
		if (left <= 0)
			fail_msg("timed out reading; got \"%s\"", buf);
		poll(&p, 1, (int)left);
		n = tq_read(fd, buf + len, cap - 1 - len);
		if (n == 0 || (n < 0 && errno == EIO))
			return len;
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		len += (size_t)n;
		buf[len] = '\0';
		assert_true(len < cap - 1);
	}
}

static int wait_status(struct tq_child *c)
{
	struct tq_err err = TQ_ERR_INIT;
	int status;

	if (tq_spawn_wait(c, &status, &err) != 0)
		fail_msg("%s", err.msg);
	return status;
}

/* Run argv to the end with output ignored; its waitpid status. */
static int run(char **argv)
{
	struct tq_child c = TQ_CHILD_INIT;
	char buf[OUT_MAX];
	int status;

	start(&c, argv, test_env, NULL, TQ_SPAWN_STDIN_NULL);
	read_until(c.out_fd, buf, sizeof(buf), NULL);
	status = wait_status(&c);
	tq_spawn_release(&c);
	return status;
}

static void kill_and_wait(struct tq_child *c)
{
	kill(c->pid, SIGKILL);
	wait_status(c);
	tq_spawn_release(c);
}

/* Expect argv to fail to start with code and exactly msg. */
static void expect_fail(char **argv, char **envp, const char *cwd,
	enum tq_spawn_stdin in, int code, const char *msg)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;

	c.argv = argv;
	c.envp = envp;
	c.cwd = cwd;
	c.in = in;
	assert_int_equal(tq_spawn_start(&c, &err), code);
	assert_int_equal(err.code, code);
	assert_string_equal(err.msg, msg);
	assert_int_equal(c.pid, -1);
	assert_int_equal(c.in_fd, -1);
	assert_int_equal(c.out_fd, -1);
	assert_int_equal(c.err_fd, -1);
}

static void write_file(const char *dir, const char *name, const char *text,
	mode_t mode)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = tq_open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, text, strlen(text)), 0);
	tq_close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

/* ---- tests ----------------------------------------------------------- */

static void test_exit_statuses(void **state)
{
	(void)state;
	int st;

	st = run((char *[]){ "true", NULL });
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = run((char *[]){ "false", NULL });
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	st = run((char *[]){ "sh", "-c", "exit 7", NULL });
	assert_int_equal(tq_proc_exit_code(st), 7);
	st = run((char *[]){ "sh", "-c", "kill -KILL $$", NULL });
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(tq_proc_exit_code(st), 137);
}

static void test_missing_command(void **state)
{
	(void)state;
	for (int in = TQ_SPAWN_STDIN_NULL; in <= TQ_SPAWN_STDIN_PTY; in++) {
		expect_fail((char *[]){ "nosuchcmd-taskq", NULL }, test_env,
			NULL, in, TQ_ENOTFOUND,
			"exec \"nosuchcmd-taskq\": No such file or directory");
		expect_fail((char *[]){ "/no/such/dir/cmd", NULL }, test_env,
			NULL, in, TQ_ENOTFOUND,
			"exec \"/no/such/dir/cmd\": No such file or directory");
	}
	expect_fail((char *[]){ "", NULL }, test_env, NULL, 0, TQ_ENOTFOUND,
		"exec \"\": No such file or directory");
	expect_fail((char *[]){ NULL }, test_env, NULL, 0, TQ_EINVAL,
		"spawn: empty argv");
}

static void test_missing_cwd(void **state)
{
	char *dir = th_tempdir(), gone[4096], msg[4200];

	(void)state;
	snprintf(gone, sizeof(gone), "%s/gone", dir);
	snprintf(msg, sizeof(msg),
		"chdir \"%s\": No such file or directory", gone);
	for (int in = TQ_SPAWN_STDIN_NULL; in <= TQ_SPAWN_STDIN_PTY; in++)
		expect_fail((char *[]){ "true", NULL }, test_env, gone, in,
			TQ_ENOTFOUND, msg);
	/* A cwd that is a file. */
	write_file(dir, "file", "x", 0644);
	snprintf(gone, sizeof(gone), "%s/file", dir);
	snprintf(msg, sizeof(msg), "chdir \"%s\": Not a directory", gone);
	expect_fail((char *[]){ "true", NULL }, test_env, gone, 0, TQ_EIO, msg);
	th_rmtree(dir);
}

/*
 * Commands that exist but cannot run. "Exec format error" is found by the
 * spawn itself (the pre-checks cannot see it), so it tests that path.
 */
static void test_not_executable(void **state)
{
	char *dir = th_tempdir();

	(void)state;
	write_file(dir, "notes.txt", "hello\n", 0644);
	write_file(dir, "garbage", "\x7f" "ELF garbage\n", 0755);
	for (int in = TQ_SPAWN_STDIN_NULL; in <= TQ_SPAWN_STDIN_PTY; in++) {
		expect_fail((char *[]){ "./notes.txt", NULL }, test_env, dir,
			in, TQ_EPERM, "exec \"./notes.txt\": Permission denied");
		expect_fail((char *[]){ "./garbage", NULL }, test_env, dir, in,
			TQ_EIO, "exec \"./garbage\": Exec format error");
		expect_fail((char *[]){ "/tmp", NULL }, test_env, NULL, in,
			TQ_EPERM, "exec \"/tmp\": Permission denied");
	}
	th_rmtree(dir);
}

/* argv[0] is looked up in the task's PATH, relative to the task's cwd. */
static void test_path_is_the_tasks(void **state)
{
	char *dir = th_tempdir(), buf[OUT_MAX];
	struct tq_child c = TQ_CHILD_INIT;

	(void)state;
	write_file(dir, "mytool", "#!/bin/sh\necho mytool ran in $PWD\n", 0755);
	/* Found through a relative PATH entry, from the task's cwd. */
	start(&c, (char *[]){ "mytool", NULL },
		(char *[]){ "PATH=/nonexistent:bin-missing::/bin", NULL }, dir,
		TQ_SPAWN_STDIN_NULL);
	read_until(c.out_fd, buf, sizeof(buf), NULL);
	assert_true(strncmp(buf, "mytool ran in ", 14) == 0);
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	tq_spawn_release(&c);
	/* The worker's PATH finds `true`; the task's must not. */
	expect_fail((char *[]){ "true", NULL },
		(char *[]){ "PATH=/nonexistent", NULL }, NULL, 0, TQ_ENOTFOUND,
		"exec \"true\": No such file or directory");
	/* No PATH at all: the default one. */
	start(&c, (char *[]){ "true", NULL }, NULL, NULL, TQ_SPAWN_STDIN_NULL);
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	tq_spawn_release(&c);
	/* A relative argv[0] is relative to the cwd, not ours. */
	start(&c, (char *[]){ "./mytool", NULL }, test_env, dir,
		TQ_SPAWN_STDIN_NULL);
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	tq_spawn_release(&c);
	th_rmtree(dir);
}

static void test_stdout_and_stderr_pipes(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	char out[OUT_MAX], err[OUT_MAX];

	(void)state;
	start(&c, (char *[]){ "sh", "-c", "echo to-out; echo to-err >&2; "
		"echo more-out", NULL }, test_env, NULL, TQ_SPAWN_STDIN_NULL);
	assert_int_equal(c.in_fd, -1);
	assert_true(fcntl(c.out_fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(c.err_fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(c.out_fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(c.err_fd, F_GETFD) & FD_CLOEXEC);
	/* small pipes: the bound of the output order (spawn.h) */
	long page = sysconf(_SC_PAGESIZE);
	long want = TQ_SPAWN_PIPE_SIZE > page ? TQ_SPAWN_PIPE_SIZE : page;
	assert_int_equal(fcntl(c.out_fd, F_GETPIPE_SZ), want);
	assert_int_equal(fcntl(c.err_fd, F_GETPIPE_SZ), want);
	read_until(c.out_fd, out, sizeof(out), NULL);
	read_until(c.err_fd, err, sizeof(err), NULL);
	assert_string_equal(out, "to-out\nmore-out\n");
	assert_string_equal(err, "to-err\n");
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	tq_spawn_release(&c);
	tq_spawn_release(&c); /* twice is fine */
}

static void test_env_exact(void **state)
{
	char *envp[] = { "A=1", "B=two words", "C=", "D==x", NULL };
	struct tq_child c = TQ_CHILD_INIT;
	char out[OUT_MAX];

	(void)state;
	start(&c, (char *[]){ "/usr/bin/env", NULL }, envp, NULL,
		TQ_SPAWN_STDIN_NULL);
	read_until(c.out_fd, out, sizeof(out), NULL);
	assert_string_equal(out, "A=1\nB=two words\nC=\nD==x\n");
	wait_status(&c);
	tq_spawn_release(&c);
	/* NULL: an empty environment, not ours. */
	start(&c, (char *[]){ "/usr/bin/env", NULL }, NULL, NULL,
		TQ_SPAWN_STDIN_NULL);
	read_until(c.out_fd, out, sizeof(out), NULL);
	assert_string_equal(out, "");
	wait_status(&c);
	tq_spawn_release(&c);
}

/* The fds of a live process, as "0 1 2 ". */
static void list_fds(pid_t pid, char *buf, size_t cap)
{
	char path[64];
	int n = 0, nums[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL && n < 64)
		if (de->d_name[0] != '.')
			nums[n++] = atoi(de->d_name);
	closedir(d);
	/* readdir order is not numeric order. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && nums[j - 1] > nums[j]; j--) {
			int t = nums[j];
			nums[j] = nums[j - 1];
			nums[j - 1] = t;
		}
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), cap - strlen(buf), "%d ", nums[i]);
}

struct fd_probe {
	pid_t pid;
	char list[256];
};

static int fds_are_std(void *arg)
{
	struct fd_probe *p = arg;

	list_fds(p->pid, p->list, sizeof(p->list));
	return strcmp(p->list, "0 1 2 ") == 0;
}

/*
 * posix_spawn and the pty path return after exec, but the new program's
 * dynamic loader briefly holds fd 3 (ld.so.cache, libc), so wait for the
 * list to settle: an inherited fd would never go away. Ours (>= 20, not
 * CLOEXEC) must not be there.
 */
static void test_only_fds_0_to_2(void **state)
{
	static const char *const first[] = { "/dev/null", "pipe:", "/dev/pts/" };
	int leak = fcntl(2, F_DUPFD, 20); /* no CLOEXEC, on purpose */
	char link[256], path[64];

	(void)state;
	assert_true(leak >= 20);
	for (int in = TQ_SPAWN_STDIN_NULL; in <= TQ_SPAWN_STDIN_PTY; in++) {
		struct tq_child c = TQ_CHILD_INIT;
		struct fd_probe probe;
		ssize_t n;

		start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL, in);
		probe.pid = c.pid;
		if (!th_wait_for(fds_are_std, &probe, WAIT_MS))
			fail_msg("child fds: %s", probe.list);
		snprintf(path, sizeof(path), "/proc/%ld/fd/0", (long)c.pid);
		n = readlink(path, link, sizeof(link) - 1);
		assert_true(n > 0);
		link[n] = '\0';
		assert_true(strncmp(link, first[in], strlen(first[in])) == 0);
		kill_and_wait(&c);
	}
	tq_close(leak);
}

/* A field of /proc/PID/status as a number (hex for the Sig* masks). */
static unsigned long long status_field(pid_t pid, const char *name)
{
	char path[64], line[256];
	unsigned long long v = ~0ULL;
	size_t len = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, len) == 0 && line[len] == ':')
			v = strtoull(line + len + 1, NULL, 16);
	fclose(f);
	return v;
}

/* With 1, the same child making its own mark (TQ_SPAWN_MARK_SELF), which
 * once took a path of its own (every child is cloned by hand now). */
static unsigned clone_path(int i)
{
	return i ? TQ_SPAWN_MARK_SELF : 0;
}

/*
 * glibc's two internal signals (32 and 33, below SIGRTMIN): glibc 2.36's
 * posix_spawn left them SIG_IGN in every child (its clone child ignored
 * them while it shared our memory, and an ignore survives exec); our own
 * clone child leaves them at their default, as every other signal. The
 * tests of a kept disposition below still allow them.
 */
#define GLIBC_INTERNAL_SIGS ((1ULL << (32 - 1)) | (1ULL << (33 - 1)))

static void on_signal_noop(int sig)
{
	(void)sig;
}

/*
 * Block SIGTERM, ignore SIGINT and a real-time signal, catch SIGUSR1 here
 * (SIGPIPE is ignored too): every child, on every path, must have an
 * empty mask and nothing ignored or caught, glibc's internal signals
 * included. SIGQUIT is ignored only after the first child started: what
 * is reset is read at each spawn, never remembered from an earlier one.
 */
static void test_signals_reset(void **state)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, catch = { .sa_handler = on_signal_noop };
	struct sigaction old_int, old_rt, old_usr1, old_quit;
	sigset_t term, old_mask;

	(void)state;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGRTMIN + 2, &ign, &old_rt);
	sigaction(SIGUSR1, &catch, &old_usr1);
	sigaction(SIGQUIT, NULL, &old_quit);
	assert_true(status_field(getpid(), "SigBlk") != 0);
	assert_true(status_field(getpid(), "SigCgt") & (1ULL << (SIGUSR1 - 1)));
	for (int i = 0; i < 2; i++)
		for (int in = TQ_SPAWN_STDIN_NULL; in <= TQ_SPAWN_STDIN_PTY; in++) {
			struct tq_child c = TQ_CHILD_INIT;

			c.flags = clone_path(i);
			start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL, in);
			assert_int_equal(status_field(c.pid, "SigBlk"), 0);
			assert_int_equal(status_field(c.pid, "SigIgn"), 0);
			assert_int_equal(status_field(c.pid, "SigCgt"), 0);
			kill_and_wait(&c);
			sigaction(SIGQUIT, &ign, NULL);
		}
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigaction(SIGRTMIN + 2, &old_rt, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
}

static void test_new_session(void **state)
{
	(void)state;
	for (int in = TQ_SPAWN_STDIN_NULL; in <= TQ_SPAWN_STDIN_PTY; in++) {
		struct tq_child c = TQ_CHILD_INIT;

		start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL, in);
		assert_int_equal(getpgid(c.pid), c.pid);
		assert_int_equal(getsid(c.pid), c.pid);
		kill_and_wait(&c);
	}
}

#define BIG (10 * 1024 * 1024)
#define CHUNK 65536

/* 10 MB into cat and back, never blocking: poll decides who may go. */
static void test_stdin_pipe_10mb(void **state)
{
	char *in = malloc(BIG), *out = malloc(BIG + 1);
	struct tq_child c = TQ_CHILD_INIT;
	int64_t deadline = tq_mono_ms() + 6 * WAIT_MS;
	size_t wr = 0, rd = 0;
	int eof = 0, status;

	(void)state;
	assert_non_null(in);
	assert_non_null(out);
	for (size_t i = 0; i < BIG; i++)
		in[i] = (char)((i * 7 + i / 4093) & 0xff);
	start(&c, (char *[]){ "cat", NULL }, test_env, NULL,
		TQ_SPAWN_STDIN_PIPE);
	assert_true(fcntl(c.in_fd, F_GETFL) & O_NONBLOCK);
	while (!eof) {
		struct pollfd p[2] = { { .fd = c.out_fd, .events = POLLIN },
			{ .fd = c.in_fd, .events = POLLOUT } };
		ssize_t n;

		assert_true(tq_mono_ms() < deadline);
		poll(p, 2, 1000);
		if (c.in_fd >= 0 && (p[1].revents & (POLLOUT | POLLERR))) {
			size_t len = BIG - wr < CHUNK ? BIG - wr : CHUNK;
			n = tq_write(c.in_fd, in + wr, len);
			if (n < 0)
				assert_int_equal(errno, EAGAIN);
			else
				wr += (size_t)n;
			if (wr == BIG) { /* EOF for cat */
				tq_close(c.in_fd);
				c.in_fd = -1;
			}
		}
		n = tq_read(c.out_fd, out + rd, BIG + 1 - rd);
		if (n < 0)
			assert_int_equal(errno, EAGAIN);
		else if (n == 0)
			eof = 1;
		else
			rd += (size_t)n;
	}
	assert_int_equal(rd, BIG);
	assert_memory_equal(in, out, BIG);
	status = wait_status(&c);
	assert_int_equal(tq_proc_exit_code(status), 0);
	tq_spawn_release(&c);
	free(in);
	free(out);
}

/* A child that exits without reading: EPIPE, not SIGPIPE (ignored here). */
static void test_stdin_pipe_epipe(void **state)
{
	static char chunk[CHUNK];
	struct tq_child c = TQ_CHILD_INIT;
	int64_t deadline = tq_mono_ms() + WAIT_MS;
	int saw_epipe = 0;

	(void)state;
	start(&c, (char *[]){ "true", NULL }, test_env, NULL,
		TQ_SPAWN_STDIN_PIPE);
	while (!saw_epipe) {
		struct pollfd p = { .fd = c.in_fd, .events = POLLOUT };

		assert_true(tq_mono_ms() < deadline);
		poll(&p, 1, 1000);
		if (tq_write(c.in_fd, chunk, sizeof(chunk)) < 0) {
			assert_true(errno == EAGAIN || errno == EPIPE);
			saw_epipe = errno == EPIPE;
		}
	}
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	tq_spawn_release(&c);
}

static void test_pty(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	char out[OUT_MAX];

	(void)state;
	start(&c, (char *[]){ "sh", "-c", "test -t 0 && test -t 1 && "
		"test -t 2 && : </dev/tty && echo tty-ok; read line; "
		"echo \"got:$line\"; stty size", NULL },
		test_env, NULL, TQ_SPAWN_STDIN_PTY);
	assert_int_equal(c.in_fd, -1);
	assert_int_equal(c.err_fd, -1);
	assert_true(fcntl(c.out_fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(c.out_fd, F_GETFD) & FD_CLOEXEC);
	read_until(c.out_fd, out, sizeof(out), "tty-ok\r\n");
	/* Input goes in through the master too. */
	assert_int_equal(tq_write_all(c.out_fd, "hello\n", 6), 0);
	read_until(c.out_fd, out, sizeof(out), NULL);
	assert_non_null(strstr(out, "got:hello\r\n"));
	assert_non_null(strstr(out, "24 80\r\n"));
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	tq_spawn_release(&c);
}

/* ---- the callers that are not tasks (spawn.h, enum tq_spawn_flags) ---- */

/* readlink /proc/PID/fd/FD into buf; 0, or -1 when there is no such fd. */
static int fd_link(pid_t pid, int fd, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)pid, fd);
	n = readlink(path, buf, cap - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* O_RDONLY, O_WRONLY or O_RDWR: how PID's fd FD was opened (its fdinfo). */
static int fd_accmode(pid_t pid, int fd)
{
	char path[64], line[256];
	int mode = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%d", (long)pid, fd);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "flags:", 6) == 0)
			mode = (int)(strtoul(line + 6, NULL, 8) & O_ACCMODE);
	fclose(f);
	return mode;
}


/* A worker, the daemon, an agent in the terminal: our session, process
 * group and fds 0-2, and no other fd of ours. */
static void test_keep_session_and_streams(void **state)
{
	int leak = fcntl(2, F_DUPFD, 20); /* no CLOEXEC, on purpose */
	char ours[256], theirs[256];

	(void)state;
	assert_true(leak >= 20);
	for (int i = 0; i <= 1; i++) {
		struct tq_child c = TQ_CHILD_INIT;
		struct fd_probe probe;

		c.flags = TQ_SPAWN_KEEP_SESSION | clone_path(i);
		start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL,
		      TQ_SPAWN_STDIO_INHERIT);
		assert_int_equal(c.in_fd, -1);
		assert_int_equal(c.out_fd, -1);
		assert_int_equal(c.err_fd, -1);
		assert_int_equal(getpgid(c.pid), getpgrp());
		assert_int_equal(getsid(c.pid), getsid(0));
		probe.pid = c.pid;
		if (!th_wait_for(fds_are_std, &probe, WAIT_MS))
			fail_msg("child fds: %s", probe.list);
		for (int fd = 0; fd <= 2; fd++) {
			assert_int_equal(fd_link(getpid(), fd, ours, sizeof(ours)), 0);
			assert_int_equal(fd_link(c.pid, fd, theirs, sizeof(theirs)), 0);
			assert_string_equal(theirs, ours);
		}
		kill_and_wait(&c);
	}
	tq_close(leak);
}

/* The daemon's start: stdin /dev/null read-only, stdout and stderr
 * /dev/null write-only. */
static void test_stdio_null(void **state)
{
	char link[256];

	(void)state;
	for (int i = 0; i <= 1; i++) {
		struct tq_child c = TQ_CHILD_INIT;
		struct fd_probe probe;

		c.flags = clone_path(i);
		start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL,
		      TQ_SPAWN_STDIO_NULL);
		assert_int_equal(c.out_fd, -1);
		probe.pid = c.pid;
		if (!th_wait_for(fds_are_std, &probe, WAIT_MS))
			fail_msg("child fds: %s", probe.list);
		for (int fd = 0; fd <= 2; fd++) {
			assert_int_equal(fd_link(c.pid, fd, link, sizeof(link)), 0);
			assert_string_equal(link, "/dev/null");
			assert_int_equal(fd_accmode(c.pid, fd), fd == 0 ? O_RDONLY : O_WRONLY);
		}
		assert_int_equal(getsid(c.pid), c.pid);
		kill_and_wait(&c);
	}
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* TQ_SPAWN_KEEP_SIGMASK keeps our mask; sigdefault resets only its
 * signals, so what we ignore stays ignored (SIGINT, and SIGPIPE as main
 * ignores it: as across fork + exec); a handler of ours never survives, on
 * every path. */
static void test_keep_sigmask_sigdefault(void **state)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, usr1 = { .sa_handler = on_usr1 };
	struct sigaction old_int, old_usr1, old_usr2;
	static const enum tq_spawn_stdin ins[] = { TQ_SPAWN_STDIN_NULL, TQ_SPAWN_STDIN_NULL,
						   TQ_SPAWN_STDIN_PTY };
	sigset_t term, old_mask, usr2;

	(void)state;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigprocmask(SIG_BLOCK, &term, &old_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGUSR2, &ign, &old_usr2);
	sigaction(SIGUSR1, &usr1, &old_usr1);
	for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
		struct tq_child c = TQ_CHILD_INIT;

		c.flags = TQ_SPAWN_KEEP_SIGMASK | clone_path(i == 1);
		c.sigdefault = &usr2;
		/* what we ignore, whatever we were started with (a shell's
		 * background job ignores SIGINT and SIGQUIT, nohup SIGHUP),
		 * but SIGUSR2, which sigdefault resets */
		unsigned long long ours = status_field(getpid(), "SigIgn") &
					  ~GLIBC_INTERNAL_SIGS & ~(1ULL << (SIGUSR2 - 1));

		assert_int_equal(ours & (1ULL << (SIGINT - 1) | 1ULL << (SIGPIPE - 1)),
				 1ULL << (SIGINT - 1) | 1ULL << (SIGPIPE - 1));
		start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL, ins[i]);
		assert_int_equal(status_field(c.pid, "SigBlk"), 1ULL << (SIGTERM - 1));
		assert_int_equal(status_field(c.pid, "SigIgn") & ~GLIBC_INTERNAL_SIGS, ours);
		assert_int_equal(status_field(c.pid, "SigCgt"), 0);
		kill_and_wait(&c);
	}
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigaction(SIGUSR2, &old_usr2, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
}

struct proc_file {
	pid_t pid;
	const char *name;        /* "environ", "cmdline" */
	char buf[4096];
	ssize_t len;
};

/* Read /proc/PID/NAME; true once it is not empty: the spawn returns when
 * the exec has begun, and the new program's arguments and environment
 * are shown only once the kernel has set them up. */
static int proc_file_read(void *arg)
{
	struct proc_file *f = arg;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)f->pid, f->name);
	fd = tq_open(path, O_RDONLY, 0);
	assert_true(fd >= 0);
	f->len = tq_read_full(fd, f->buf, sizeof(f->buf) - 1);
	tq_close(fd);
	assert_true(f->len >= 0);
	f->buf[f->len] = '\0';
	return f->len > 0;
}

/* The child's environment, one entry a line, in envbuf. */
static void read_environ(pid_t pid, char *envbuf, size_t cap)
{
	struct proc_file f = { .pid = pid, .name = "environ" };

	if (!th_wait_for(proc_file_read, &f, WAIT_MS))
		fail_msg("no environment shown for %ld", (long)pid);
	assert_true((size_t)f.len < cap);
	for (ssize_t i = 0; i < f.len; i++)
		envbuf[i] = f.buf[i] == '\0' ? '\n' : f.buf[i];
	envbuf[f.len] = '\0';
}

/* TQ_SPAWN_MARK_SELF: the child carries its own pid and start time, in
 * place of the mark in envp, on the clone path and the pty's fork path. */
static void test_mark_self(void **state)
{
	static const enum tq_spawn_stdin ins[] = { TQ_SPAWN_STDIN_NULL, TQ_SPAWN_STDIO_INHERIT,
						   TQ_SPAWN_STDIN_PTY };
	char *env[] = { "PATH=/usr/bin:/bin", TQ_WORKER_MARK_VAR "=1.2", "A=b", NULL };
	char got[4096], want[256], mark[TQ_SPAWN_MARK_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
		struct tq_child c = TQ_CHILD_INIT;
		int64_t start_time = 0;

		c.flags = TQ_SPAWN_MARK_SELF;
		start(&c, (char *[]){ "sleep", "1000", NULL }, env, NULL, ins[i]);
		assert_int_equal(tq_proc_start_time(c.pid, &start_time, NULL), 0);
		tq_proc_worker_mark(c.pid, start_time, mark, sizeof(mark));
		snprintf(want, sizeof(want), "PATH=/usr/bin:/bin\nA=b\n%s\n", mark);
		read_environ(c.pid, got, sizeof(got));
		assert_string_equal(got, want);
		kill_and_wait(&c);
	}
}

/* TQ_SPAWN_KEEP_FDS: our fds without CLOEXEC stay open in the child, as
 * across fork + exec; CLOEXEC ones do not. */
static void test_keep_fds(void **state)
{
	int leak = fcntl(2, F_DUPFD, 20), cloexec = fcntl(2, F_DUPFD_CLOEXEC, 40);
	char ours[256], theirs[256];

	(void)state;
	assert_true(leak >= 20 && leak < 40 && cloexec >= 40);
	assert_int_equal(fd_link(getpid(), leak, ours, sizeof(ours)), 0);
	for (int i = 0; i <= 1; i++) {
		struct tq_child c = TQ_CHILD_INIT;

		c.flags = TQ_SPAWN_KEEP_FDS | clone_path(i);
		start(&c, (char *[]){ "sleep", "1000", NULL }, test_env, NULL,
		      TQ_SPAWN_STDIO_INHERIT);
		assert_int_equal(fd_link(c.pid, leak, theirs, sizeof(theirs)), 0);
		assert_string_equal(theirs, ours);
		assert_int_equal(fd_link(c.pid, cloexec, theirs, sizeof(theirs)), -1);
		kill_and_wait(&c);
	}
	tq_close(cloexec);
	tq_close(leak);
}

/* exe: the program, when it is not argv[0]; looked up and named in errors
 * as argv[0] would be. */
static void test_exe(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct proc_file f = { .name = "cmdline" };

	(void)state;
	c.exe = "sleep";
	start(&c, (char *[]){ "renamed", "1000", NULL }, test_env, NULL, TQ_SPAWN_STDIN_NULL);
	f.pid = c.pid;
	if (!th_wait_for(proc_file_read, &f, WAIT_MS))
		fail_msg("no cmdline shown");
	assert_string_equal(f.buf, "renamed");
	assert_string_equal(f.buf + strlen(f.buf) + 1, "1000");
	kill_and_wait(&c);

	c = (struct tq_child)TQ_CHILD_INIT;
	c.exe = "nosuchcmd-taskq";
	{
		struct tq_err err = TQ_ERR_INIT;

		c.argv = (char *[]){ "sleep", NULL };
		c.envp = test_env;
		assert_int_equal(tq_spawn_start(&c, &err), TQ_ENOTFOUND);
		assert_string_equal(err.msg, "exec \"nosuchcmd-taskq\": No such file or directory");
		assert_int_equal(errno, ENOENT);
	}
	/* found, and refused by exec itself, on each path: named too */
	{
		static const enum tq_spawn_stdin ins[] = { TQ_SPAWN_STDIN_NULL, TQ_SPAWN_STDIN_PTY,
							   TQ_SPAWN_STDIO_INHERIT };
		char *dir = th_tempdir();

		write_file(dir, "noformat", "\x01\x02 not a program\n", 0755);
		for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
			struct tq_err err = TQ_ERR_INIT;

			c = (struct tq_child)TQ_CHILD_INIT;
			c.argv = (char *[]){ "renamed", NULL };
			c.exe = "./noformat";
			c.cwd = dir;
			c.in = ins[i];
			/* the last through the clone path */
			c.flags = ins[i] == TQ_SPAWN_STDIO_INHERIT ? TQ_SPAWN_MARK_SELF : 0;
			assert_int_equal(tq_spawn_start(&c, &err), TQ_EIO);
			assert_string_equal(err.msg, "exec \"./noformat\": Exec format error");
		}
		th_rmtree(dir);
	}
}

/* A terminal needs a session of its own: asked for with KEEP_SESSION, the
 * spawn refuses and starts nothing. */
static void test_pty_needs_its_session(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	c.argv = (char *[]){ "sleep", "1", NULL };
	c.envp = test_env;
	c.in = TQ_SPAWN_STDIN_PTY;
	c.flags = TQ_SPAWN_KEEP_SESSION;
	assert_int_equal(tq_spawn_start(&c, &err), TQ_EINVAL);
	assert_string_equal(err.msg, "spawn \"sleep\": a terminal needs a session of its own");
	assert_int_equal(c.pid, -1);
	assert_int_equal(c.out_fd, -1);
}

/* What the detached process saw, sent back to the test. */
struct detached {
	pid_t pid, sid;
	char cwd[64];
};

/*
 * In a child of the test: detach, report from the daemon side, and say
 * ready (or not). The parent side never returns from tq_spawn_detach.
 */
static void detach_and_report(int rep_fd, int say_ready)
{
	struct tq_err err = TQ_ERR_INIT;
	struct detached d = { 0 };
	int ready = -1;

	if (tq_spawn_detach(&ready, &err) < 0)
		_exit(3);
	d.pid = getpid();
	d.sid = getsid(0);
	if (getcwd(d.cwd, sizeof(d.cwd)) == NULL)
		d.cwd[0] = '\0';
	tq_write_all(rep_fd, &d, sizeof(d));
	if (say_ready)
		tq_write_all(ready, "R", 1);
	_exit(0);
}

/* tq_spawn_detach: the parent exits 0 once the daemon says 'R', 1 when it
 * ends without; the daemon leads its own session in /. */
static void test_detach(void **state)
{
	(void)state;
	for (int say = 0; say <= 1; say++) {
		struct detached d;
		int rep[2], status;
		pid_t pid;

		assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
		if ((pid = fork()) == 0)
			detach_and_report(rep[1], say);
		assert_true(pid > 0);
		tq_close(rep[1]);
		assert_int_equal(tq_waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), say ? 0 : 1);
		assert_int_equal(tq_read_full(rep[0], &d, sizeof(d)), (ssize_t)sizeof(d));
		tq_close(rep[0]);
		assert_true(d.pid != pid && d.pid > 0);
		assert_int_equal(d.sid, d.pid);
		assert_string_equal(d.cwd, "/");
	}
}

/* Every test leaves no child behind, even when it failed half-way. */
static int teardown(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;

	(void)state;
	if (tq_proc_sweep(NULL, 0, &killed, &err) != 0)
		fprintf(stderr, "teardown sweep: %s\n", err.msg);
	return 0;
}

/* Each path gives the child the umask asked for (its files' modes follow)
 * and leaves the caller's as it was; -1 is the caller's own. */
static void test_umask(void **state)
{
	static const enum tq_spawn_stdin ins[] = {
		TQ_SPAWN_STDIN_NULL, TQ_SPAWN_STDIN_PIPE, TQ_SPAWN_STDIN_PTY,
	};
	char *argv[] = { "/bin/sh", "-c", "umask; touch f; stat -c %a f; rm f", NULL };
	char buf[OUT_MAX], *dir = th_tempdir();
	mode_t mine = umask(0022);

	(void)state;
	assert_non_null(dir);
	for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
		struct tq_child c = TQ_CHILD_INIT;

		assert_int_equal(c.umask, -1);
		c.umask = 0077;
		start(&c, argv, test_env, dir, ins[i]);
		read_until(c.out_fd, buf, sizeof(buf), NULL);
		assert_int_equal(wait_status(&c), 0);
		tq_spawn_release(&c);
		if (strcmp(buf, ins[i] == TQ_SPAWN_STDIN_PTY ? "0077\r\n600\r\n" : "0077\n600\n"))
			fail_msg("stdin mode %d: \"%s\"", (int)ins[i], buf);
		assert_int_equal(umask(0022), 0022); /* ours is back */

		c = (struct tq_child)TQ_CHILD_INIT; /* -1: ours */
		start(&c, argv, test_env, dir, ins[i]);
		read_until(c.out_fd, buf, sizeof(buf), NULL);
		assert_int_equal(wait_status(&c), 0);
		tq_spawn_release(&c);
		if (strcmp(buf, ins[i] == TQ_SPAWN_STDIN_PTY ? "0022\r\n644\r\n" : "0022\n644\n"))
			fail_msg("stdin mode %d, our umask: \"%s\"", (int)ins[i], buf);
	}
	/* an exec that fails (after ours was set) puts ours back too */
	for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
		struct tq_child c = TQ_CHILD_INIT;
		struct tq_err err = TQ_ERR_INIT;
		char *bad[] = { "./noformat", NULL };

		write_file(dir, "noformat", "\x01\x02 not a program\n", 0755);
		c.argv = bad;
		c.cwd = dir;
		c.in = ins[i];
		c.umask = 0;
		assert_int_equal(tq_spawn_start(&c, &err), TQ_EIO);
		assert_non_null(strstr(err.msg, "Exec format error"));
		assert_int_equal(umask(0022), 0022);
	}
	umask(mine);
	th_rmtree(dir);
}

int main(void)
{
	struct tq_err err = TQ_ERR_INIT;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exit_statuses, teardown),
		cmocka_unit_test_teardown(test_missing_command, teardown),
		cmocka_unit_test_teardown(test_missing_cwd, teardown),
		cmocka_unit_test_teardown(test_not_executable, teardown),
		cmocka_unit_test_teardown(test_path_is_the_tasks, teardown),
		cmocka_unit_test_teardown(test_stdout_and_stderr_pipes, teardown),
		cmocka_unit_test_teardown(test_env_exact, teardown),
		cmocka_unit_test_teardown(test_only_fds_0_to_2, teardown),
		cmocka_unit_test_teardown(test_signals_reset, teardown),
		cmocka_unit_test_teardown(test_new_session, teardown),
		cmocka_unit_test_teardown(test_stdin_pipe_10mb, teardown),
		cmocka_unit_test_teardown(test_stdin_pipe_epipe, teardown),
		cmocka_unit_test_teardown(test_pty, teardown),
		cmocka_unit_test_teardown(test_umask, teardown),
		cmocka_unit_test_teardown(test_keep_session_and_streams, teardown),
		cmocka_unit_test_teardown(test_stdio_null, teardown),
		cmocka_unit_test_teardown(test_keep_sigmask_sigdefault, teardown),
		cmocka_unit_test_teardown(test_mark_self, teardown),
		cmocka_unit_test_teardown(test_keep_fds, teardown),
		cmocka_unit_test_teardown(test_exe, teardown),
		cmocka_unit_test_teardown(test_pty_needs_its_session, teardown),
		cmocka_unit_test_teardown(test_detach, teardown),
	};

	/* As a worker does: SIGPIPE ignored, a subreaper, fds 0-2 open. */
	signal(SIGPIPE, SIG_IGN);
	tq_sanitize_stdfds();
	if (tq_proc_set_subreaper(&err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

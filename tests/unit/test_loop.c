/*
 * test_loop.c - the event loop (proc/loop.h) on real signals, pipes and
 * children: the signalfd blocks what it reads and puts the mask back; a
 * wait ends at its deadline, at a ready descriptor or at a signal, and a
 * signal that interrupts poll is a turn with nothing ready; descriptors'
 * callbacks run in their order, before the signals or after them as asked;
 * one SIGCHLD reaps every child that has exited, and on_signal sees the
 * SIGCHLD only after on_child saw them all.
 *
 * The test process is a subreaper and every test ends with a sweep, so no
 * process a test starts outlives it. Every wait has a deadline.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sys.h"
#include "proc/loop.h"
#include "proc/proc.h"

#define WAIT_MS 10000
#define EVENTS_MAX 32

/* What the callbacks saw, in order: "fd0", "fd1", "USR1", "child", "CHLD". */
struct seen {
	char ev[EVENTS_MAX][16];
	int n;
	int children;
	pid_t pids[EVENTS_MAX];
};

static void note(struct seen *s, const char *what)
{
	assert_true(s->n < EVENTS_MAX);
	snprintf(s->ev[s->n++], sizeof(s->ev[0]), "%s", what);
}

static void on_fd0(void *arg, short revents)
{
	assert_true(revents & POLLIN);
	note(arg, "fd0");
}

static void on_fd1(void *arg, short revents)
{
	assert_true(revents & POLLIN);
	note(arg, "fd1");
}

static void on_child(pid_t pid, int status, void *arg)
{
	struct seen *s = arg;

	assert_true(WIFEXITED(status));
	s->pids[s->children++] = pid;
	note(s, "child");
}

static void on_signal(const struct signalfd_siginfo *si, void *arg)
{
	note(arg, si->ssi_signo == SIGCHLD ? "CHLD" : si->ssi_signo == SIGUSR1 ? "USR1" : "other");
}

static const int sigs[] = { SIGCHLD, SIGUSR1 };

static int open_sigfd(sigset_t *old)
{
	struct tq_err err = TQ_ERR_INIT;
	int fd = tq_loop_sigfd_open(sigs, 2, old, &err);

	if (fd < 0)
		fail_msg("%s", err.msg);
	return fd;
}

static void test_timeout(void **state)
{
	(void)state;
	assert_int_equal(tq_loop_timeout(TQ_LOOP_NEVER, 5), -1);
	assert_int_equal(tq_loop_timeout(100, 100), 0);
	assert_int_equal(tq_loop_timeout(99, 100), 0);
	assert_int_equal(tq_loop_timeout(150, 100), 50);
	assert_int_equal(tq_loop_timeout(INT64_MAX - 1, 0), INT_MAX);
}

/* The signals are blocked while the fd is open, and the mask is put back. */
static void test_sigfd_mask(void **state)
{
	sigset_t old, now;
	int fd;

	(void)state;
	fd = open_sigfd(&old);
	assert_false(sigismember(&old, SIGUSR1));
	sigprocmask(SIG_SETMASK, NULL, &now);
	assert_true(sigismember(&now, SIGUSR1));
	assert_true(sigismember(&now, SIGCHLD));
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	tq_loop_sigfd_close(fd, &old);
	sigprocmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGUSR1));
}

/* Nothing ready: the wait ends at its deadline, not before, and an empty
 * signalfd reads nothing. */
static void test_deadline(void **state)
{
	struct seen s = { .n = 0 };
	struct tq_loop l = { .sigfd = -1, .on_signal = on_signal, .arg = &s };
	int p[2];
	struct pollfd fd;
	sigset_t old;
	int64_t t0;

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	l.sigfd = open_sigfd(&old);
	fd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	t0 = tq_mono_ms();
	assert_int_equal(tq_loop_wait(&l, &fd, NULL, 1, t0 + 100, NULL), 0);
	assert_true(tq_mono_ms() - t0 >= 100);
	assert_int_equal(fd.revents, 0);
	assert_int_equal(s.n, 0);
	/* a deadline passed: a poll that does not wait */
	assert_int_equal(tq_loop_wait(&l, &fd, NULL, 1, t0, NULL), 0);
	assert_int_equal(tq_loop_signals(&l, NULL), 0);
	assert_int_equal(s.n, 0);
	tq_loop_sigfd_close(l.sigfd, &old);
	tq_close(p[0]);
	tq_close(p[1]);
}

/* Callbacks in the descriptors' order, then the signals; with
 * signals_first the signals before them. An fd without a callback gets
 * its revents all the same. */
static void test_order(void **state)
{
	struct tq_loop_cb cb[3] = { { on_fd0, NULL }, { on_fd1, NULL }, { NULL, NULL } };
	int a[2], b[2], c[2];
	sigset_t old;

	(void)state;
	assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(pipe2(c, O_CLOEXEC | O_NONBLOCK), 0);
	for (int first = 0; first <= 1; first++) {
		struct seen s = { .n = 0 };
		struct tq_loop l = { .signals_first = first, .on_signal = on_signal, .arg = &s };
		struct pollfd p[3] = {
			{ .fd = a[0], .events = POLLIN },
			{ .fd = b[0], .events = POLLIN },
			{ .fd = c[0], .events = POLLIN },
		};

		cb[0].arg = cb[1].arg = &s;
		l.sigfd = open_sigfd(&old);
		assert_int_equal(tq_write_all(b[1], "x", 1), 0);
		assert_int_equal(tq_write_all(a[1], "x", 1), 0);
		assert_int_equal(tq_write_all(c[1], "x", 1), 0);
		kill(getpid(), SIGUSR1);
		assert_int_equal(tq_loop_wait(&l, p, cb, 3, tq_mono_ms() + WAIT_MS, NULL), 0);
		assert_int_equal(s.n, 3);
		assert_string_equal(s.ev[first ? 0 : 2], "USR1");
		assert_string_equal(s.ev[first ? 1 : 0], "fd0");
		assert_string_equal(s.ev[first ? 2 : 1], "fd1");
		assert_true(p[2].revents & POLLIN);
		tq_loop_sigfd_close(l.sigfd, &old);
		for (int i = 0; i < 3; i++) {
			char x;
			assert_int_equal(tq_read((int[]){ a[0], b[0], c[0] }[i], &x, 1), 1);
		}
	}
	tq_close(a[0]);
	tq_close(a[1]);
	tq_close(b[0]);
	tq_close(b[1]);
	tq_close(c[0]);
	tq_close(c[1]);
}

static int children_seen(void *arg)
{
	struct seen *s = arg;

	return s->children >= 3;
}

struct turn {
	const struct tq_loop *l;
	struct seen *s;
};

static int turn_until_children(void *arg)
{
	struct turn *t = arg;

	assert_int_equal(tq_loop_wait(t->l, NULL, NULL, 0, tq_mono_ms() + 50, NULL), 0);
	return children_seen(t->s);
}

/* Three children exit (their SIGCHLDs may merge into one): every one is
 * reaped, and on_signal sees each SIGCHLD after the children it stood
 * for. */
static void test_reaps_every_child(void **state)
{
	struct seen s = { .n = 0 };
	struct tq_loop l = { .on_child = on_child, .on_signal = on_signal, .arg = &s };
	struct turn t = { &l, &s };
	pid_t pids[3];
	sigset_t old;

	(void)state;
	l.sigfd = open_sigfd(&old);
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(0);
		assert_true(pids[i] > 0);
	}
	if (!th_wait_for(turn_until_children, &t, WAIT_MS))
		fail_msg("reaped %d of 3 children", s.children);
	assert_int_equal(s.children, 3);
	for (int i = 0; i < 3; i++) {
		int found = 0;
		for (int j = 0; j < 3; j++)
			found |= s.pids[j] == pids[i];
		assert_true(found);
	}
	/* every "child" comes before the "CHLD" that follows it, and the last
	 * event is a CHLD */
	assert_string_equal(s.ev[s.n - 1], "CHLD");
	assert_string_equal(s.ev[0], "child");
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	tq_loop_sigfd_close(l.sigfd, &old);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A signal with a handler interrupts poll: a turn with nothing ready. */
static void test_eintr(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
	/* again every 50 ms: one that came before the poll began is not the
	 * one that must interrupt it */
	struct itimerval it = { .it_value = { .tv_sec = 0, .tv_usec = 50000 },
				.it_interval = { .tv_sec = 0, .tv_usec = 50000 } };
	struct itimerval off = { .it_value = { 0, 0 } };
	struct tq_loop l = TQ_LOOP_INIT;
	struct pollfd fd;
	int p[2];
	int64_t t0;

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	fd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	sigaction(SIGALRM, &sa, &old_sa);
	setitimer(ITIMER_REAL, &it, NULL);
	t0 = tq_mono_ms();
	assert_int_equal(tq_loop_wait(&l, &fd, NULL, 1, t0 + WAIT_MS, NULL), 0);
	assert_true(tq_mono_ms() - t0 < WAIT_MS);
	assert_int_equal(fd.revents, 0);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old_sa, NULL);
	tq_close(p[0]);
	tq_close(p[1]);
}

/* More descriptors than one wait takes: refused, nothing waited for. */
static void test_too_many(void **state)
{
	static struct pollfd p[TQ_LOOP_FD_MAX + 1];
	struct tq_loop l = TQ_LOOP_INIT;
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	for (size_t i = 0; i < TQ_LOOP_FD_MAX + 1; i++)
		p[i] = (struct pollfd){ .fd = -1 };
	assert_int_equal(tq_loop_wait(&l, p, NULL, TQ_LOOP_FD_MAX + 1, TQ_LOOP_NEVER, &err),
			 TQ_EINVAL);
	assert_non_null(strstr(err.msg, "at most"));
	assert_int_equal(tq_loop_wait(&l, p, NULL, TQ_LOOP_FD_MAX, 0, &err), 0);
}

/* More descriptors than RLIMIT_NOFILE's soft limit, lowered under us (as
 * prlimit does): poll(2) refuses the set (EINVAL); the wait still sees
 * the last one ready, and with none ready returns a turn with nothing (as
 * at EINTR), not an error. */
static void test_over_rlimit(void **state)
{
	struct tq_loop l = TQ_LOOP_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct pollfd fds[6];
	struct rlimit was, low;
	int p[6][2];
	int64_t t0;

	(void)state;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(pipe2(p[i], O_CLOEXEC | O_NONBLOCK), 0);
		fds[i] = (struct pollfd){ .fd = p[i][0], .events = POLLIN };
	}
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	low = (struct rlimit){ .rlim_cur = 3, .rlim_max = was.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(tq_write_all(p[5][1], "x", 1), 0);
	t0 = tq_mono_ms();
	assert_int_equal(tq_loop_wait(&l, fds, NULL, 6, t0 + WAIT_MS, &err), 0);
	assert_true(tq_mono_ms() - t0 < WAIT_MS / 2);
	for (int i = 0; i < 5; i++)
		assert_int_equal(fds[i].revents, 0);
	assert_true(fds[5].revents & POLLIN);
	assert_int_equal(tq_read(p[5][0], (char[1]){ 0 }, 1), 1);
	t0 = tq_mono_ms();
	assert_int_equal(tq_loop_wait(&l, fds, NULL, 6, t0 + 250, &err), 0);
	assert_true(tq_mono_ms() - t0 < WAIT_MS / 2);
	for (int i = 0; i < 6; i++)
		assert_int_equal(fds[i].revents, 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
	for (int i = 0; i < 6; i++) {
		tq_close(p[i][0]);
		tq_close(p[i][1]);
	}
}

static int teardown(void **state)
{
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	if (tq_proc_sweep(NULL, 0, NULL, &err) != 0)
		fprintf(stderr, "teardown sweep: %s\n", err.msg);
	return 0;
}

int main(void)
{
	struct tq_err err = TQ_ERR_INIT;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_timeout, teardown),
		cmocka_unit_test_teardown(test_sigfd_mask, teardown),
		cmocka_unit_test_teardown(test_deadline, teardown),
		cmocka_unit_test_teardown(test_order, teardown),
		cmocka_unit_test_teardown(test_reaps_every_child, teardown),
		cmocka_unit_test_teardown(test_eintr, teardown),
		cmocka_unit_test_teardown(test_too_many, teardown),
		cmocka_unit_test_teardown(test_over_rlimit, teardown),
	};

	tq_sanitize_stdfds();
	if (tq_proc_set_subreaper(&err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

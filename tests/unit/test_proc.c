/*
 * test_proc.c - process control on real processes: /proc/PID/stat parsing
 * (odd comm names), pid identity by start time (with a forced pid reuse when
 * permitted), verified signals, group kills, the TERM -> grace -> KILL state
 * machine driven by a poll loop like the worker's, the sweep of escaped
 * descendants (fixtures daemonize.sh and tree.sh), reaping, exit statuses.
 *
 * The test process is a subreaper, as a worker is; every test ends with a
 * sweep, so nothing a test starts outlives it. Waits are polls with deadlines.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "common/sys.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "proc/term.h"

#define WAIT_MS 10000
#define OUT_MAX 4096
#define GRACE_MS 300
#define REUSE_TRIES 5

static char *test_env[] = { "PATH=/usr/bin:/bin", NULL };

static void start(struct tq_child *c, char **argv)
{
	struct tq_err err = TQ_ERR_INIT;

	c->argv = argv;
	c->envp = test_env;
	if (tq_spawn_start(c, &err) != 0)
		fail_msg("spawn %s: %s", argv[0], err.msg);
}

static void start_sleep(struct tq_child *c)
{
	start(c, (char *[]){ "sleep", "1000", NULL });
}

static int wait_status(struct tq_child *c)
{
	struct tq_err err = TQ_ERR_INIT;
	int status;

	if (tq_spawn_wait(c, &status, &err) != 0)
		fail_msg("%s", err.msg);
	tq_spawn_release(c);
	return status;
}

/* Read until want appears (or EOF); fails at the deadline. */
static void read_until(int fd, char *buf, size_t cap, const char *want)
{
	int64_t deadline = tq_mono_ms() + WAIT_MS;
	size_t len = 0;

	buf[0] = '\0';
	while (want == NULL || strstr(buf, want) == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (tq_mono_ms() > deadline)
			fail_msg("timed out reading; got \"%s\"", buf);
		poll(&p, 1, 100);
		n = tq_read(fd, buf + len, cap - 1 - len);
		if (n == 0)
			return;
		if (n > 0) {
			len += (size_t)n;
			buf[len] = '\0';
		}
	}
}

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *dir = getenv("TASKQ_FIXTURES");

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* kill(pid, 0) says ESRCH: gone and reaped (a zombie still answers). */
static int gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

struct orphan {
	pid_t pid;
	int need_own_session;
};

static int is_our_orphan(void *arg)
{
	struct orphan *o = arg;
	struct tq_proc_stat st;

	return tq_proc_stat(o->pid, &st, NULL) == 0 && st.ppid == getpid() &&
	       (!o->need_own_session || st.sid == o->pid);
}

/* Wait until pid has been reparented to us (and leads a session). */
static void wait_orphan(pid_t pid, int need_own_session)
{
	struct orphan o = { pid, need_own_session };

	assert_true(th_wait_for(is_our_orphan, &o, WAIT_MS));
}

/* ---- identity -------------------------------------------------------- */

static void test_subreaper(void **state)
{
	int on = 0;

	(void)state;
	assert_int_equal(prctl(PR_GET_CHILD_SUBREAPER, &on, 0, 0, 0), 0);
	assert_int_equal(on, 1);
}

/* comm may contain ") (" and spaces: fields are counted from the last ')'. */
static void test_stat_odd_comm(void **state)
{
	char old[16] = { 0 }, *dir = th_tempdir(), link[4096];
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_proc_stat st;

	(void)state;
	prctl(PR_GET_NAME, old, 0, 0, 0);
	assert_int_equal(prctl(PR_SET_NAME, "x) (y) 1 2 ) w", 0, 0, 0), 0);
	assert_int_equal(tq_proc_stat(getpid(), &st, &err), 0);
	prctl(PR_SET_NAME, old, 0, 0, 0);
	assert_int_equal(st.pid, getpid());
	assert_int_equal(st.ppid, getppid());
	assert_int_equal(st.pgid, getpgrp());
	assert_int_equal(st.sid, getsid(0));
	assert_int_equal(st.state, 'R');
	assert_true(st.start_time > 0);

	/* Another process named so: exec sleep through a symlink. */
	snprintf(link, sizeof(link), "%s/sl) 1 2 (3", dir);
	assert_int_equal(symlink("/bin/sleep", link), 0);
	start(&c, (char *[]){ link, "1000", NULL });
	assert_int_equal(tq_proc_stat(c.pid, &st, &err), 0);
	assert_int_equal(st.ppid, getpid());
	assert_int_equal(st.pgid, c.pid);
	assert_int_equal(st.sid, c.pid);
	kill(c.pid, SIGKILL);
	wait_status(&c);
	th_rmtree(dir);
}

static void test_stat_errors(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_proc_stat st;
	int64_t t;
	pid_t pid;

	(void)state;
	start(&c, (char *[]){ "true", NULL });
	pid = c.pid;
	wait_status(&c);
	assert_int_equal(tq_proc_stat(pid, &st, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_proc_start_time(pid, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_proc_stat(0, &st, &err), TQ_EINVAL);
	assert_int_equal(tq_proc_stat(-3, &st, &err), TQ_EINVAL);
}

static void test_start_time_identity(void **state)
{
	struct tq_child a = TQ_CHILD_INIT, b = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	int64_t sa, sb, self;
	int status;
	pid_t pa;

	(void)state;
	assert_int_equal(tq_proc_start_time(getpid(), &self, &err), 0);
	assert_true(tq_proc_same(getpid(), self));
	start_sleep(&a);
	start_sleep(&b);
	assert_int_equal(tq_proc_start_time(a.pid, &sa, &err), 0);
	assert_int_equal(tq_proc_start_time(b.pid, &sb, &err), 0);
	assert_true(sa >= self && sb >= sa);
	assert_true(tq_proc_same(a.pid, sa));
	assert_false(tq_proc_same(a.pid, sa + 1));
	/* A wrong start time: nothing is sent (SIGUSR1 would kill sleep). */
	assert_int_equal(tq_proc_signal(a.pid, sa + 1, SIGUSR1, &err),
		TQ_ENOTFOUND);
	assert_int_equal(tq_proc_signal(a.pid, sa, SIGTERM, &err), 0);
	pa = a.pid;
	status = wait_status(&a);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	/* Dead and reaped: not the same any more, and not signalled. */
	assert_false(tq_proc_same(pa, sa));
	assert_int_equal(tq_proc_signal(pa, sa, SIGKILL, &err), TQ_ENOTFOUND);
	assert_true(tq_proc_same(b.pid, sb));
	kill(b.pid, SIGKILL);
	wait_status(&b);
}

static int64_t boot_ticks(void)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * hz + ts.tv_nsec / (1000000000L / hz);
}

static int64_t after_tick;

static int tick_passed(void *arg)
{
	(void)arg;
	return boot_ticks() > after_tick + 1;
}

/* Make the next pid the kernel hands out be pid (root only). */
static int set_last_pid(pid_t pid)
{
	char num[32];
	int fd = tq_open("/proc/sys/kernel/ns_last_pid", O_WRONLY, 0);
	int rc;

	if (fd < 0)
		return -1;
	snprintf(num, sizeof(num), "%ld", (long)pid - 1);
	rc = tq_write_all(fd, num, strlen(num));
	tq_close(fd);
	return rc;
}

/* The real hazard: the same pid, now another process. */
static void test_pid_reuse(void **state)
{
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	for (int i = 0; i < REUSE_TRIES; i++) {
		struct tq_child a = TQ_CHILD_INIT, b = TQ_CHILD_INIT;
		int64_t sa, sb;
		pid_t p;

		start_sleep(&a);
		p = a.pid;
		assert_int_equal(tq_proc_start_time(p, &sa, &err), 0);
		kill(p, SIGKILL);
		wait_status(&a);
		after_tick = sa;
		assert_true(th_wait_for(tick_passed, NULL, WAIT_MS));
		if (set_last_pid(p) < 0)
			skip(); /* not root, or no ns_last_pid */
		start_sleep(&b);
		if (b.pid != p) { /* another process took it first */
			kill(b.pid, SIGKILL);
			wait_status(&b);
			continue;
		}
		assert_int_equal(tq_proc_start_time(p, &sb, &err), 0);
		assert_true(sb > sa);
		assert_false(tq_proc_same(p, sa));
		assert_int_equal(tq_proc_signal(p, sa, SIGKILL, &err),
			TQ_ENOTFOUND);
		assert_int_equal(tq_proc_signal(p, sb, SIGTERM, &err), 0);
		assert_int_equal(WTERMSIG(wait_status(&b)), SIGTERM);
		return;
	}
	skip();
}

static void test_kill_group(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	pid_t pid;
	int status;

	(void)state;
	assert_int_equal(tq_proc_kill_group(0, SIGTERM, &err), TQ_EINVAL);
	assert_int_equal(tq_proc_kill_group(1, SIGTERM, &err), TQ_EINVAL);
	assert_int_equal(tq_proc_kill_group(-7, SIGTERM, &err), TQ_EINVAL);
	assert_int_equal(tq_proc_kill_group(getpgrp(), SIGTERM, &err),
		TQ_EINVAL);
	start(&c, (char *[]){ "sh", "-c", "sleep 1000 & sleep 1000; wait",
		NULL });
	pid = c.pid;
	assert_int_equal(tq_proc_kill_group(pid, SIGKILL, &err), 0);
	status = wait_status(&c);
	assert_int_equal(WTERMSIG(status), SIGKILL);
	/* An empty group is not an error. */
	assert_int_equal(tq_proc_kill_group(pid, SIGKILL, &err), 0);
}

/* ---- TERM -> grace -> KILL ------------------------------------------- */

/*
 * The worker's loop in miniature: poll a pidfd with the machine's deadline
 * as the timeout; TICK on every wake-up, EXITED once waitpid returns the
 * task. Returns the task's status.
 */
static int drive(struct tq_term *t, pid_t pid)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t limit = tq_mono_ms() + WAIT_MS;
	int fd = pidfd_open(pid, 0), status = -1;

	assert_true(fd >= 0);
	while (t->state != TQ_TERM_DONE) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t now = tq_mono_ms();
		int timeout = tq_term_poll_timeout(t, now);

		assert_true(now < limit);
		poll(&p, 1, timeout < 0 || timeout > 1000 ? 1000 : timeout);
		now = tq_mono_ms();
		if (tq_waitpid(pid, &status, WNOHANG) == pid)
			assert_int_equal(tq_term_step(t, TQ_TERM_EXITED, now,
				&err), 0);
		else
			assert_int_equal(tq_term_step(t, TQ_TERM_TICK, now,
				&err), 0);
	}
	tq_close(fd);
	return status;
}

static void test_term_table(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_term t;

	(void)state;
	start_sleep(&c);
	tq_term_init(&t, c.pid, 1000, 0, GRACE_MS);
	assert_int_equal(t.state, TQ_TERM_RUNNING);
	assert_int_equal(tq_term_poll_timeout(&t, 1000), -1);
	assert_int_equal(tq_term_step(&t, TQ_TERM_TICK, 999999, &err), 0);
	assert_int_equal(t.state, TQ_TERM_RUNNING); /* no timeout, no-op */
	tq_term_init(&t, c.pid, 1000, 500, GRACE_MS);
	assert_int_equal(tq_term_poll_timeout(&t, 1000), 500);
	assert_int_equal(tq_term_poll_timeout(&t, 1499), 1);
	assert_int_equal(tq_term_poll_timeout(&t, 2000), 0);
	assert_int_equal(tq_term_step(&t, TQ_TERM_TICK, 1499, &err), 0);
	assert_int_equal(t.state, TQ_TERM_RUNNING);
	/* EXITED wins from any state; DONE ignores everything. */
	assert_int_equal(tq_term_step(&t, TQ_TERM_EXITED, 1600, &err), 0);
	assert_int_equal(t.state, TQ_TERM_DONE);
	assert_int_equal(tq_term_step(&t, TQ_TERM_STOP, 1700, &err), 0);
	assert_int_equal(t.state, TQ_TERM_DONE);
	assert_int_equal(t.deadline, TQ_TERM_NEVER);
	kill(c.pid, SIGKILL);
	wait_status(&c);
}

/* The timeout fires, TERM is enough: no KILL. */
static void test_term_timeout(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_term t;
	int status;

	(void)state;
	start_sleep(&c);
	tq_term_init(&t, c.pid, tq_mono_ms(), 100, 5000);
	status = drive(&t, c.pid);
	tq_spawn_release(&c);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	assert_true(t.timed_out);
	assert_false(t.killed);
}

/* A task that ignores TERM (sleep inherits the ignore) gets KILL after the
 * grace period, decided by the real status, not by "TERM was sent". */
static void test_term_escalates(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char out[OUT_MAX];
	struct tq_term t;
	int64_t t0;
	int status;

	(void)state;
	start(&c, (char *[]){ "sh", "-c", "trap '' TERM; echo ready; "
		"sleep 1000", NULL });
	read_until(c.out_fd, out, sizeof(out), "ready\n");
	t0 = tq_mono_ms();
	tq_term_init(&t, c.pid, t0, 0, GRACE_MS);
	assert_int_equal(tq_term_step(&t, TQ_TERM_STOP, t0, &err), 0);
	assert_int_equal(t.state, TQ_TERM_STOPPING);
	assert_int_equal(t.deadline, t0 + GRACE_MS);
	/* A second STOP does not restart the grace period. */
	assert_int_equal(tq_term_step(&t, TQ_TERM_STOP, t0 + 10, &err), 0);
	assert_int_equal(t.deadline, t0 + GRACE_MS);
	status = drive(&t, c.pid);
	tq_spawn_release(&c);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(tq_proc_exit_code(status), 137);
	assert_true(t.killed);
	assert_false(t.timed_out);
	assert_true(tq_mono_ms() - t0 >= GRACE_MS);
}

/* tq_term_due: a sooner deadline while RUNNING (a shutdown's grace ending
 * before an on-exit hook's timeout) stops it as its timeout would; a later
 * one, or one in any other state, changes nothing. */
static void test_term_due(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_term t;
	int64_t t0;
	int status;

	(void)state;
	start_sleep(&c);
	t0 = tq_mono_ms();
	tq_term_init(&t, c.pid, t0, 60000, 5000);
	tq_term_due(&t, t0 + 120000);
	assert_int_equal(t.deadline, t0 + 60000);
	tq_term_due(&t, t0 + 100);
	assert_int_equal(t.deadline, t0 + 100);
	status = drive(&t, c.pid);
	tq_spawn_release(&c);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	assert_true(t.timed_out);
	assert_false(t.killed);
	/* not RUNNING any more: nothing moves */
	tq_term_due(&t, t0);
	assert_int_equal(t.deadline, TQ_TERM_NEVER);
	t.state = TQ_TERM_STOPPING;
	t.deadline = t0 + 5000;
	tq_term_due(&t, t0);
	assert_int_equal(t.deadline, t0 + 5000);
}

static void test_term_sigkill_first(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_term t;

	(void)state;
	start_sleep(&c);
	tq_term_init(&t, c.pid, tq_mono_ms(), 0, GRACE_MS);
	t.sig = SIGKILL;
	assert_int_equal(tq_term_step(&t, TQ_TERM_STOP, tq_mono_ms(), &err), 0);
	assert_int_equal(t.state, TQ_TERM_KILLING);
	assert_int_equal(t.deadline, TQ_TERM_NEVER);
	assert_int_equal(WTERMSIG(drive(&t, c.pid)), SIGKILL);
	tq_spawn_release(&c);
}

/* ---- the sweep ------------------------------------------------------- */

static pid_t read_pid(int fd)
{
	char out[OUT_MAX];

	read_until(fd, out, sizeof(out), "\n");
	return (pid_t)atol(out);
}

/* A task leaves a setsid'd daemon; the group kill misses it; the sweep
 * does not. */
static void test_sweep_daemon(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;
	pid_t task, daemon;

	(void)state;
	start(&c, (char *[]){ "sh", (char *)fixture("daemonize.sh"), NULL });
	task = c.pid;
	daemon = read_pid(c.out_fd);
	assert_true(daemon > 0);
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	wait_orphan(daemon, 1);
	assert_int_equal(tq_proc_kill_group(task, SIGKILL, &err), 0);
	assert_false(gone(daemon)); /* escaped the group kill */
	assert_int_equal(tq_proc_sweep(NULL, 0, &killed, &err), 0);
	assert_int_equal(killed, 1);
	assert_true(gone(daemon));
	/* Nothing left: a second sweep finds nothing. */
	assert_int_equal(tq_proc_sweep(NULL, 0, &killed, &err), 0);
	assert_int_equal(killed, 0);
}

/* Three sessions deep: takes more than one round. */
static void test_sweep_tree(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char out[OUT_MAX];
	size_t killed = 0;
	long sh, a, b;

	(void)state;
	start(&c, (char *[]){ "sh", (char *)fixture("tree.sh"), NULL });
	read_until(c.out_fd, out, sizeof(out), "\n");
	assert_int_equal(sscanf(out, "%ld %ld %ld", &sh, &a, &b), 3);
	assert_int_equal(tq_proc_exit_code(wait_status(&c)), 0);
	wait_orphan((pid_t)sh, 1);
	assert_int_equal(tq_proc_sweep(NULL, 0, &killed, &err), 0);
	assert_true(killed >= 2);
	assert_true(gone((pid_t)sh));
	assert_true(gone((pid_t)a));
	assert_true(gone((pid_t)b));
}

/*
 * A process's children are those of all its threads: one made by a second
 * thread is in that thread's children file, not the first's. The listing
 * of /proc/PID/task is skipped only for a process of one thread (its link
 * count says so); with two, the child of the second is still found.
 */
static int has_pid(const struct tq_proc_id *ids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i].pid == pid)
			return 1;
	return 0;
}

static void test_descendants_of_every_thread(void **state)
{
	static const char script[] =
		"import subprocess, sys, threading, time\n"
		"def run(): print(subprocess.Popen(['sleep', '1000']).pid, flush=True); time.sleep(1000)\n"
		"if sys.argv[1] == 'thread':\n"
		"    threading.Thread(target=run, daemon=True).start(); time.sleep(1000)\n"
		"else:\n"
		"    run()\n";
	const char *modes[] = { "thread", "main" };

	(void)state;
	for (size_t m = 0; m < 2; m++) {
		struct tq_child c = TQ_CHILD_INIT;
		struct tq_proc_id *ids = NULL;
		char out[OUT_MAX];
		size_t n = 0;
		long kid;

		start(&c, (char *[]){ "python3", "-c", (char *)script, (char *)modes[m], NULL });
		read_until(c.out_fd, out, sizeof(out), "\n");
		assert_int_equal(sscanf(out, "%ld", &kid), 1);
		assert_int_equal(tq_proc_descendants(c.pid, &ids, &n, NULL), 0);
		if (!has_pid(ids, n, (pid_t)kid))
			fail_msg("%s: child %ld of python3 %ld not among its %zu descendants",
				 modes[m], kid, (long)c.pid, n);
		free(ids);
		tq_proc_kill_group(c.pid, SIGKILL, NULL);
		wait_status(&c);
		tq_spawn_release(&c);
	}
}

/* keep[] spares those pids; everything else goes. */
static void test_sweep_keep(void **state)
{
	struct tq_child k = TQ_CHILD_INIT, v = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;
	pid_t victim;

	(void)state;
	start_sleep(&k);
	start_sleep(&v);
	victim = v.pid;
	assert_int_equal(tq_proc_sweep(&k.pid, 1, &killed, &err), 0);
	assert_int_equal(killed, 1);
	assert_true(gone(victim));
	tq_spawn_release(&v);
	assert_false(gone(k.pid));
	kill(k.pid, SIGKILL);
	wait_status(&k);
}

/* Keeping a running task also spares its orphans still in its session. */
static void test_sweep_keep_session(void **state)
{
	struct tq_child t = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;
	pid_t task, orphan;

	(void)state;
	start(&t, (char *[]){ "sh", "-c", "(sleep 1000 </dev/null >/dev/null "
		"2>&1 & echo $!); exec sleep 1000", NULL });
	task = t.pid;
	orphan = read_pid(t.out_fd);
	wait_orphan(orphan, 0);
	assert_int_equal(getsid(orphan), task);
	assert_int_equal(tq_proc_sweep(&task, 1, &killed, &err), 0);
	assert_int_equal(killed, 0);
	assert_false(gone(task));
	assert_false(gone(orphan));
	/* Unkept, both go (and the sweep reaps the task itself). */
	assert_int_equal(tq_proc_sweep(NULL, 0, &killed, &err), 0);
	assert_true(killed >= 1);
	assert_true(gone(task));
	assert_true(gone(orphan));
	tq_spawn_release(&t);
}

/* ---- reaping and statuses -------------------------------------------- */

struct reaped {
	pid_t pids[8];
	int status[8];
	int n;
};

static void on_reap(pid_t pid, int status, void *arg)
{
	struct reaped *r = arg;

	if (r->n < 8) {
		r->pids[r->n] = pid;
		r->status[r->n] = status;
	}
	r->n++;
}

static int reaped_three(void *arg)
{
	struct tq_err err = TQ_ERR_INIT;

	assert_true(tq_proc_reap(on_reap, arg, &err) >= 0);
	return ((struct reaped *)arg)->n >= 3;
}

/* Whether the process shows an environment yet: the spawn returns once
 * the exec has begun, and /proc/PID/environ is empty until the kernel has
 * set the new program's up (a scan before that would miss its marks). */
static int environ_shown(void *arg)
{
	char path[64], buf[16];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)*(pid_t *)arg);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return 0;
	n = tq_read(fd, buf, sizeof(buf));
	tq_close(fd);
	return n > 0;
}

/*
 * tq_proc_kill_marked kills exactly what carries the marks: a task's
 * processes (task and home entries both, whole entries only) and a
 * worker's (its entry), never the worker itself. The marks are unique to
 * this run, since the scan covers every process of the machine.
 */
static void test_kill_marked(void **state)
{
	char task[64], task_longer[80], home[64], other_home[80], worker[64];
	struct tq_child c[5];
	size_t killed = 99;
	struct tq_err err = TQ_ERR_INIT;
	unsigned long u = (unsigned long)getpid() * 100000UL + arc4random_uniform(100000);

	(void)state;
	snprintf(task, sizeof(task), TQ_TASK_MARK_VAR "=9%lu", u);
	snprintf(task_longer, sizeof(task_longer), "%s1", task);
	snprintf(home, sizeof(home), TQ_TASK_HOME_VAR "=/nonexistent/test-proc-%lu", u);
	snprintf(other_home, sizeof(other_home), "%s-other", home);
	snprintf(worker, sizeof(worker), TQ_WORKER_MARK_VAR "=0.%lu", u);
	char *envs[5][4] = {
		{ "PATH=/usr/bin:/bin", task, home, NULL },        /* killed */
		{ "PATH=/usr/bin:/bin", task, other_home, NULL },  /* another home's */
		{ "PATH=/usr/bin:/bin", worker, NULL },            /* killed */
		{ "PATH=/usr/bin:/bin", worker, NULL },            /* the worker: spared */
		{ "PATH=/usr/bin:/bin", task_longer, home, NULL }, /* another task */
	};
	for (int i = 0; i < 5; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].argv = (char *[]){ "sleep", "1000", NULL };
		c[i].envp = envs[i];
		if (tq_spawn_start(&c[i], &err) != 0)
			fail_msg("spawn: %s", err.msg);
		assert_true(th_wait_for(environ_shown, &c[i].pid, WAIT_MS));
	}
	struct tq_marks m = { .task = task, .home = home, .worker = worker,
			      .worker_pid = c[3].pid };
	assert_int_equal(tq_proc_kill_marked(&m, &killed, &err), 2);
	assert_int_equal(killed, 2);
	for (int i = 0; i < 5; i++) {
		if (i != 0 && i != 2)
			kill(c[i].pid, SIGTERM);
		int st = wait_status(&c[i]);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), i == 0 || i == 2 ? SIGKILL : SIGTERM);
	}
	/* Nothing marked: nothing killed, and no worker entry looked for. */
	m.worker = NULL;
	assert_int_equal(tq_proc_kill_marked(&m, &killed, &err), 0);
	assert_int_equal(killed, 0);
}

static void test_reap(void **state)
{
	struct tq_child c[3] = { TQ_CHILD_INIT, TQ_CHILD_INIT, TQ_CHILD_INIT };
	struct tq_err err = TQ_ERR_INIT;
	struct reaped r = { .n = 0 };

	(void)state;
	assert_int_equal(tq_proc_reap(on_reap, &r, &err), 0); /* ECHILD: 0 */
	start(&c[0], (char *[]){ "true", NULL });
	start(&c[1], (char *[]){ "false", NULL });
	start(&c[2], (char *[]){ "sh", "-c", "exit 7", NULL });
	assert_true(th_wait_for(reaped_three, &r, WAIT_MS));
	assert_int_equal(r.n, 3);
	for (int i = 0; i < 3; i++) {
		int code = -1;
		for (int j = 0; j < 3; j++)
			if (r.pids[j] == c[i].pid)
				code = tq_proc_exit_code(r.status[j]);
		assert_int_equal(code, i == 0 ? 0 : i == 1 ? 1 : 7);
		tq_spawn_release(&c[i]);
	}
}

static void test_exit_codes(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(tq_proc_exit_code(W_EXITCODE(0, 0)), 0);
	assert_int_equal(tq_proc_exit_code(W_EXITCODE(7, 0)), 7);
	assert_int_equal(tq_proc_exit_code(W_EXITCODE(0, SIGKILL)), 137);
	assert_int_equal(tq_proc_exit_code(W_EXITCODE(0, SIGTERM)), 143);
	assert_int_equal(tq_proc_exit_code(W_STOPCODE(SIGSTOP)), -1);
	assert_string_equal(tq_proc_status_str(W_EXITCODE(7, 0), buf,
		sizeof(buf)), "exit 7");
	assert_string_equal(tq_proc_status_str(W_EXITCODE(0, SIGKILL), buf,
		sizeof(buf)), "signal 9 (SIGKILL)");
	assert_string_equal(tq_proc_status_str(W_EXITCODE(0, SIGSEGV) | 0x80,
		buf, sizeof(buf)), "signal 11 (SIGSEGV, core dumped)");
	assert_string_equal(tq_proc_status_str(W_EXITCODE(0, SIGKILL), buf, 7),
		"signal");
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
		cmocka_unit_test_teardown(test_subreaper, teardown),
		cmocka_unit_test_teardown(test_stat_odd_comm, teardown),
		cmocka_unit_test_teardown(test_stat_errors, teardown),
		cmocka_unit_test_teardown(test_start_time_identity, teardown),
		cmocka_unit_test_teardown(test_pid_reuse, teardown),
		cmocka_unit_test_teardown(test_kill_group, teardown),
		cmocka_unit_test_teardown(test_term_table, teardown),
		cmocka_unit_test_teardown(test_term_timeout, teardown),
		cmocka_unit_test_teardown(test_term_escalates, teardown),
		cmocka_unit_test_teardown(test_term_sigkill_first, teardown),
		cmocka_unit_test_teardown(test_term_due, teardown),
		cmocka_unit_test_teardown(test_sweep_daemon, teardown),
		cmocka_unit_test_teardown(test_sweep_tree, teardown),
		cmocka_unit_test_teardown(test_descendants_of_every_thread, teardown),
		cmocka_unit_test_teardown(test_sweep_keep, teardown),
		cmocka_unit_test_teardown(test_sweep_keep_session, teardown),
		cmocka_unit_test_teardown(test_kill_marked, teardown),
		cmocka_unit_test_teardown(test_reap, teardown),
		cmocka_unit_test_teardown(test_exit_codes, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	tq_sanitize_stdfds();
	if (tq_proc_set_subreaper(&err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_ops.c - src/ops, what any front end does to tasks, with real
 * processes and a real store: a task killed through a real worker (taskq
 * drain), a worker row whose pid now names another process never
 * signalled, waits that end at their deadline, a submit that stores its
 * task itself when the socket answers garbage.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sys.h"
#include "ipc/doorbell.h"
#include "ops/change.h"
#include "ops/import.h"
#include "ops/kill.h"
#include "ops/poll.h"
#include "ops/remove.h"
#include "ops/sessions.h"
#include "ops/submit.h"
#include "ops/wait.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "queue/home.h"

#define WAIT_MS 20000

extern char **environ;

static char *argv_sleep[] = { "sleep", "60", NULL };
static char *env_one[] = { "PATH=/usr/bin:/bin", NULL };

/* In the environment of what a test starts (so its workers and tasks
 * have it too): "TASKQ_OPS_TEST=DIR". */
#define MARK_VAR "TASKQ_OPS_TEST"

struct fx {
	char mark[600];
	char *dir;
	char home[512];
	struct tq_queue *q;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tq_err err = TQ_ERR_INIT;

	assert_non_null(f);
	f->dir = th_tempdir();
	assert_non_null(f->dir);
	snprintf(f->home, sizeof(f->home), "%s/state", f->dir);
	snprintf(f->mark, sizeof(f->mark), "%s=%s", MARK_VAR, f->dir);
	setenv(MARK_VAR, f->dir, 1);
	if (tq_queue_open(&f->q, f->home, TQ_OPEN_DURABLE, &err) != 0)
		fail_msg("open: %s", err.msg);
	*state = f;
	return 0;
}

/* Every process a test starts, so that one a failed assertion left
 * running (cmocka jumps out of the test) does not outlive it: teardown
 * kills and reaps those still our children. */
#define KIDS_MAX 16
static pid_t kids[KIDS_MAX];
static size_t nkids;

/* The processes whose environment holds mark (as its own entry): what a
 * drain this test started left (its workers, their tasks), found as
 * lib.sh's cleanup finds them. With sig, each is sent it, and passes repeat
 * while one finds some. Returns how many the last pass found. */
static size_t marked(const char *mark, int sig)
{
	size_t found = 1, mlen = strlen(mark);

	for (int pass = 0; found > 0 && pass < (sig ? 10 : 1); pass++) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		found = 0;
		while (d != NULL && (e = readdir(d)) != NULL) {
			char path[64], env[65536];
			pid_t pid = (pid_t)atoi(e->d_name);
			ssize_t n;
			int fd;

			if (pid <= 1 || pid == getpid())
				continue;
			snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				continue;
			n = tq_read_full(fd, env, sizeof(env) - 1);
			close(fd);
			for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(env + i) + 1) {
				env[n] = '\0';
				if (strncmp(env + i, mark, mlen) == 0 && env[i + mlen] == '\0') {
					if (sig)
						kill(pid, sig);
					found++;
					break;
				}
			}
		}
		if (d != NULL)
			closedir(d);
	}
	return found;
}

/* A drain that has exited has stopped and reaped every worker it started:
 * none is left running (reparented, on a state directory the test removes
 * next). */
static void drain_exited(struct fx *f, struct tq_child *drain)
{
	struct tq_err err = TQ_ERR_INIT;
	int status;

	assert_int_equal(tq_spawn_wait(drain, &status, &err), 0);
	tq_spawn_release(drain);
	assert_int_equal(marked(f->mark, 0), 0);
}

static void reap_kids(void)
{
	for (size_t i = 0; i < nkids; i++) {
		int status;
		if (tq_waitpid(kids[i], &status, WNOHANG) == 0) { /* ours, running */
			kill(kids[i], SIGKILL);
			tq_waitpid(kids[i], &status, 0);
		}
	}
	nkids = 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	reap_kids();
	marked(f->mark, SIGKILL);
	unsetenv(MARK_VAR);

	tq_queue_close(f->q);
	th_rmtree(f->dir);
	free(f);
	return 0;
}

static int64_t submit_sleep(struct tq_queue *q)
{
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	struct tq_err err = TQ_ERR_INIT;
	static int n;
	char group[32];
	int64_t id = 0;

	/* a group each: a group's running task does not hold the next back */
	snprintf(group, sizeof(group), "g%d", n++);
	s.group = group;
	s.argv = argv_sleep;
	s.argc = 2;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	s.kill_grace_ms = 1000;
	if (tq_queue_submit(q, &s, &id, NULL, &err) != 0)
		fail_msg("submit: %s", err.msg);
	return id;
}

static struct tq_task_spec true_spec(void)
{
	static char *argv_true[] = { "true", NULL };
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;

	s.argv = argv_true;
	s.argc = 1;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	return s;
}

static void spawn(struct tq_child *c, char **argv)
{
	struct tq_err err = TQ_ERR_INIT;

	c->argv = argv;
	c->envp = environ;
	if (tq_spawn_start(c, &err) != 0)
		fail_msg("spawn %s: %s", argv[0], err.msg);
	if (nkids < KIDS_MAX)
		kids[nkids++] = c->pid;
}

static enum tq_state state_of(struct tq_queue *q, int64_t id)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	enum tq_state s;

	if (tq_queue_get(q, id, 0, &t, &err) != 0)
		fail_msg("get %lld: %s", (long long)id, err.msg);
	s = t.state;
	tq_task_release(&t);
	return s;
}

struct running { struct tq_queue *q; int64_t id; };

static int is_running(void *arg)
{
	struct running *r = arg;

	return state_of(r->q, r->id) == TQ_RUNNING;
}

/* ------------------------------------------------------------------ */
/* kill                                                               */

/* A task run by a real worker (taskq drain) is killed through it: the
 * request is stored, the worker poked, and the wait sees it end killed. */
static void test_kill_through_real_worker(void **state)
{
	struct fx *f = *state;
	struct tq_child drain = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_killed k;
	struct running r = { f->q, submit_sleep(f->q) };
	const char *bin = getenv("TASKQ_BIN");
	int rc;
	int64_t t0;

	assert_non_null(bin);
	spawn(&drain, (char *[]){ (char *)bin, "--home", f->home, "drain", "--workers", "1",
				  NULL });
	assert_true(th_wait_for(is_running, &r, WAIT_MS));
	rc = tq_ops_kill_request(f->q, f->home, r.id, SIGTERM, NULL, &k, &err);
	assert_int_equal(rc, TQ_OPS_KILL_REQUESTED);
	assert_int_equal(k.kill_grace_ms, 1000);
	/* poked: the worker acts at once, not at its next lease renewal */
	t0 = tq_mono_ms();
	rc = tq_ops_kill_wait(f->q, f->home, r.id, tq_mono_ms() + WAIT_MS, &k, &err);
	assert_int_equal(rc, TQ_OPS_ENDED);
	assert_int_equal(k.state, TQ_KILLED);
	assert_true(tq_mono_ms() - t0 < WAIT_MS);
	/* the drain has nothing left: it exits */
	drain_exited(f, &drain);
	/* a task that has ended is not killed again */
	assert_int_equal(tq_ops_kill_request(f->q, f->home, r.id, SIGTERM, "x", &k, &err),
			 TQ_OPS_KILL_NOT_RUNNING);
	assert_int_equal(k.state, TQ_KILLED);
}

/* A worker row naming a live process: with its true start time the process
 * is poked (SIGUSR1 kills a sleep); with another start time (the pid
 * reused since the worker died) it is a dead worker, never signalled. */
static int64_t claim_on(struct tq_queue *q, const char *node, pid_t pid, int64_t start)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int64_t wid = 0, id;

	if (tq_queue_worker_add(q, node, (int)pid, start, 0, 0, &wid, &err) != 0)
		fail_msg("worker_add: %s", err.msg);
	if (tq_queue_claim(q, wid, 60000, &t, NULL, &err) != 0)
		fail_msg("claim: %s", err.msg);
	id = t.id;
	tq_task_release(&t);
	return id;
}

/* As this node's worker. */
static int64_t claim_as(struct tq_queue *q, pid_t pid, int64_t start)
{
	struct tq_err err = TQ_ERR_INIT;
	char self[TQ_NODE_MAX + 1];

	if (tq_node_self(self, sizeof(self), &err) != 0)
		fail_msg("node: %s", err.msg);
	return claim_on(q, self, pid, start);
}

static void test_kill_refuses_reused_pid(void **state)
{
	struct fx *f = *state;
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_killed k;
	struct tq_task t;
	int64_t start = 0, id;
	int status;

	spawn(&c, argv_sleep);
	assert_int_equal(tq_proc_start_time(c.pid, &start, &err), 0);
	submit_sleep(f->q);
	id = claim_as(f->q, c.pid, start + 1); /* another process had this pid */
	assert_int_equal(tq_ops_kill_request(f->q, f->home, id, SIGTERM, NULL, &k, &err),
			 TQ_OPS_KILL_NO_WORKER);
	assert_int_equal(tq_queue_get(f->q, id, 0, &t, &err), 0);
	assert_int_equal(tq_ops_poke_worker(f->q, &t), 0);
	tq_task_release(&t);
	/* still alive: not signalled, by the kill or the poke */
	assert_int_equal(tq_waitpid(c.pid, &status, WNOHANG), 0);
	assert_true(tq_proc_alive(c.pid, start));

	/* the true identity: poked (SIGUSR1's default action ends a sleep) */
	submit_sleep(f->q);
	id = claim_as(f->q, c.pid, start);
	assert_int_equal(tq_ops_kill_request(f->q, f->home, id, SIGTERM, NULL, &k, &err),
			 TQ_OPS_KILL_REQUESTED);
	assert_int_equal(tq_spawn_wait(&c, &status, &err), 0);
	tq_spawn_release(&c);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGUSR1);
}

/* Another node's worker (issue 20): a kill is only stored, for that worker
 * to act on at its renewal, and its pid -- which on this node may name any
 * process, here a live sleep with the very start time recorded -- is never
 * signalled, by the kill or by a poke (taskq write). */
static void test_kill_of_another_nodes_worker_only_stored(void **state)
{
	struct fx *f = *state;
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_killed k;
	struct tq_task t;
	int64_t start = 0, id;
	int status;

	spawn(&c, argv_sleep);
	assert_int_equal(tq_proc_start_time(c.pid, &start, &err), 0);
	submit_sleep(f->q);
	id = claim_on(f->q, "another-node", c.pid, start);
	assert_int_equal(tq_ops_kill_request(f->q, f->home, id, SIGTERM, NULL, &k, &err),
			 TQ_OPS_KILL_REQUESTED);
	assert_int_equal(tq_queue_get(f->q, id, 0, &t, &err), 0);
	assert_int_equal(t.kill_signal, SIGTERM); /* stored for its worker */
	assert_int_equal(tq_ops_poke_worker(f->q, &t), 0);
	tq_task_release(&t);
	assert_int_equal(tq_waitpid(c.pid, &status, WNOHANG), 0);
	assert_true(tq_proc_alive(c.pid, start));
	kill(c.pid, SIGKILL);
	assert_int_equal(tq_spawn_wait(&c, &status, &err), 0);
	tq_spawn_release(&c);
}

/* A task not started is canceled when the caller says so (kill), left
 * alone otherwise (remove). */
static void test_kill_not_started(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_killed k;
	int64_t id = submit_sleep(f->q);

	assert_int_equal(tq_ops_kill_request(f->q, f->home, id, SIGTERM, NULL, &k, &err),
			 TQ_OPS_KILL_NOT_RUNNING);
	assert_int_equal(state_of(f->q, id), TQ_QUEUED);
	assert_int_equal(tq_ops_kill_request(f->q, f->home, id, SIGTERM, "gone", &k, &err),
			 TQ_OPS_KILL_CANCELED);
	assert_int_equal(state_of(f->q, id), TQ_CANCELED);
	assert_int_equal(tq_ops_kill_request(f->q, f->home, id + 100, SIGTERM, NULL, &k, &err),
			 TQ_ENOTFOUND);
}

static int has_log(void *arg)
{
	struct running *r = arg;

	return tq_log_exists(r->q, r->id) == 1;
}

/* remove: a task running under a real worker is killed through it, then
 * its row and log go; one whose worker is dead (a reused pid) is refused
 * and stays. */
static void test_remove_running(void **state)
{
	struct fx *f = *state;
	struct tq_child drain = TQ_CHILD_INIT, c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct running r = { f->q, submit_sleep(f->q) };
	const char *bin = getenv("TASKQ_BIN");
	char how[TQ_OPS_HOW_MAX];
	struct tq_task t;
	int64_t start = 0, id;
	int status;

	assert_non_null(bin);
	spawn(&drain, (char *[]){ (char *)bin, "--home", f->home, "drain", "--workers", "1",
				  NULL });
	assert_true(th_wait_for(is_running, &r, WAIT_MS));
	/* the worker opens the log after the claim made it running */
	assert_true(th_wait_for(has_log, &r, WAIT_MS));
	assert_int_equal(tq_ops_remove(f->q, f->home, r.id, how, &err), TQ_OPS_REMOVED);
	assert_int_equal(tq_queue_get(f->q, r.id, 0, &t, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_log_exists(f->q, r.id), 0);
	drain_exited(f, &drain);
	assert_int_equal(tq_ops_remove(f->q, f->home, r.id, how, &err), TQ_ENOTFOUND);

	spawn(&c, argv_sleep);
	assert_int_equal(tq_proc_start_time(c.pid, &start, &err), 0);
	submit_sleep(f->q);
	id = claim_as(f->q, c.pid, start + 1);
	assert_int_equal(tq_ops_remove(f->q, f->home, id, how, &err), TQ_OPS_REMOVE_NO_WORKER);
	assert_int_equal(state_of(f->q, id), TQ_RUNNING);
	assert_int_equal(tq_waitpid(c.pid, &status, WNOHANG), 0);
	kill(c.pid, SIGKILL);
	tq_spawn_wait(&c, &status, &err);
	tq_spawn_release(&c);
}

struct ended { struct tq_queue *q; int64_t id; };

static int has_ended(void *arg)
{
	struct ended *e = arg;

	return tq_state_final(state_of(e->q, e->id));
}

/* write: stdin data stored for a task that reads a pipe: `cat` under a
 * real worker gets it and its end, and input once ended is refused. (The
 * poke is test_kill_refuses_reused_pid's: this worker delivers stdin
 * without it as fast.) */
static void test_write_delivers(void **state)
{
	static char *argv_cat[] = { "cat", NULL };
	struct fx *f = *state;
	struct tq_task_spec s = true_spec();
	struct tq_child drain = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_poll p;
	struct running r = { f->q, 0 };
	struct ended e = { f->q, 0 };
	const char *bin = getenv("TASKQ_BIN");

	s.argv = argv_cat;
	s.argc = 1;
	s.stdin_mode = TQ_STDIN_PIPE;
	assert_int_equal(tq_queue_submit(f->q, &s, &r.id, NULL, &err), 0);
	e.id = r.id;
	assert_non_null(bin);
	spawn(&drain, (char *[]){ (char *)bin, "--home", f->home, "drain", "--workers", "1",
				  NULL });
	assert_true(th_wait_for(is_running, &r, WAIT_MS));
	assert_int_equal(tq_ops_write(f->q, r.id, "hello\n", 6, 1, &err), 0);
	assert_true(th_wait_for(has_ended, &e, WAIT_MS));
	drain_exited(f, &drain);
	assert_int_equal(state_of(f->q, r.id), TQ_SUCCEEDED);
	memset(&p, 0, sizeof(p));
	assert_int_equal(tq_ops_poll(f->q, r.id, "t", &p, &err), 0);
	assert_int_equal(p.n, 1);
	assert_memory_equal(tq_ops_poll_line(&p, 0).text, "hello", 5);
	tq_ops_poll_release(&p);
	/* its input has ended: refused */
	assert_int_equal(tq_ops_write(f->q, r.id, "x", 1, 0, &err), TQ_ESTATE);
}

/* ------------------------------------------------------------------ */
/* wait                                                               */

struct looks { int n; int64_t last; int done_at; };

static int look_count(void *arg)
{
	struct looks *l = arg;

	l->last = tq_mono_ms();
	return ++l->n == l->done_at;
}

/* A wait that is never done ends at its deadline, not a pause later, with
 * a last look taken at the deadline. */
static void test_wait_reaches_deadline(void **state)
{
	static const struct tq_ops_pace pace = TQ_OPS_PACE_FIXED(300);
	struct looks l = { 0, 0, -1 };
	int64_t t0 = tq_mono_ms(), deadline = t0 + 400, took;

	(void)state;
	assert_int_equal(tq_ops_wait(deadline, &pace, look_count, &l), 0);
	took = tq_mono_ms() - t0;
	assert_true(took >= 400);
	assert_true(took < 400 + 150); /* not after the next whole pause (600) */
	assert_true(l.last >= deadline);
	assert_int_equal(l.n, 3);  /* at 0, 300, 400 */
}

/* Done on a look: at once, the look's answer; an error stops it too. */
static int look_fail(void *arg)
{
	(void)arg;
	return TQ_EIO;
}

static void test_wait_done_and_backoff(void **state)
{
	static const struct tq_ops_pace pace = { 10, 40, 0, 0 };
	struct looks l = { 0, 0, 4 };
	int64_t t0 = tq_mono_ms(), took;

	(void)state;
	assert_int_equal(tq_ops_wait(TQ_OPS_NO_DEADLINE, &pace, look_count, &l), 1);
	took = tq_mono_ms() - t0;
	assert_int_equal(l.n, 4);
	assert_true(took >= 20 + 40 + 40); /* pauses 20, 40, 40 */
	assert_int_equal(tq_ops_wait(TQ_OPS_NO_DEADLINE, &pace, look_fail, NULL), TQ_EIO);
	/* a pause never runs past its deadline */
	t0 = tq_mono_ms();
	assert_int_equal(tq_ops_pause(t0 + 30, 5000), 1);
	assert_true(tq_mono_ms() - t0 < 1000);
}

/* A kill's wait on a task that goes on (its worker is not there to act)
 * ends at the deadline: still running. */
static void test_kill_wait_deadline(void **state)
{
	struct fx *f = *state;
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_killed k;
	int64_t start = 0, id, t0;
	int status;

	spawn(&c, argv_sleep);
	assert_int_equal(tq_proc_start_time(c.pid, &start, &err), 0);
	submit_sleep(f->q);
	id = claim_as(f->q, c.pid, start + 1);
	t0 = tq_mono_ms();
	assert_int_equal(tq_ops_kill_wait(f->q, f->home, id, t0 + 300, &k, &err), TQ_OPS_STILL_RUNNING);
	assert_true(tq_mono_ms() - t0 >= 300);
	assert_true(tq_mono_ms() - t0 < 300 + 2000);
	assert_int_equal(k.state, TQ_RUNNING);
	kill(c.pid, SIGKILL);
	tq_spawn_wait(&c, &status, &err);
	tq_spawn_release(&c);
}

/* Waiting for tasks and a batch to end: at the deadline while one is
 * open; done once it is canceled; a task removed meanwhile is gone. */
static void test_wait_ended(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = TQ_TASK_SPEC_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task tasks[2];
	struct tq_batch b;
	int64_t ids[2] = { 0, 0 }, t0;
	int gone[2] = { 0, 0 };
	struct tq_ops_tasks w = { ids, tasks, gone, 2 };

	s.argv = argv_sleep;
	s.argc = 2;
	s.cwd = "/";
	s.env = env_one;
	s.envc = 1;
	s.batch = "b1";
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tq_queue_submit(f->q, &s, &ids[i], NULL, &err), 0);
		assert_int_equal(tq_queue_get(f->q, ids[i], 0, &tasks[i], &err), 0);
	}
	assert_int_equal(tq_queue_batch_get(f->q, "b1", &b, &err), 0);
	t0 = tq_mono_ms();
	assert_int_equal(tq_ops_wait_ended(f->q, &w, NULL, NULL, t0 + 250, &err), 0);
	assert_true(tq_mono_ms() - t0 >= 250);
	assert_int_equal(tq_ops_wait_ended(f->q, NULL, "b1", &b, tq_mono_ms() + 100, &err), 0);
	assert_int_equal(tq_queue_cancel(f->q, ids[0], "test", NULL, &err), 0);
	assert_int_equal(tq_queue_remove(f->q, ids[1], &err), 0);
	assert_int_equal(tq_ops_wait_ended(f->q, &w, NULL, NULL, TQ_OPS_NO_DEADLINE, &err), 1);
	assert_int_equal(tasks[0].state, TQ_CANCELED);
	assert_false(gone[0]);
	assert_true(gone[1]);
	assert_int_equal(tq_ops_wait_ended(f->q, NULL, "b1", &b, TQ_OPS_NO_DEADLINE, &err), 1);
	assert_int_equal(b.total, 1);
	assert_int_equal(b.counts[TQ_CANCELED], 1);
	tq_batch_release(&b);
	for (int i = 0; i < 2; i++)
		tq_task_release(&tasks[i]);
}

/* ------------------------------------------------------------------ */
/* submit                                                             */

/* A process listening on HOME/submit.sock that reads each request frame
 * whole, answers it with the bytes given (hex) and closes: a supervisor of
 * another version, or something that is not taskq. */
static const char fake_sock_py[] =
	"import os, socket, struct, sys\n"
	"path, ans = sys.argv[1], bytes.fromhex(sys.argv[2])\n"
	"s = socket.socket(socket.AF_UNIX); s.settimeout(60)\n"
	"s.bind(path + '.new'); s.listen(8); os.rename(path + '.new', path)\n"
	"def take(c, n):\n"
	"    b = b''\n"
	"    while len(b) < n:\n"
	"        x = c.recv(n - len(b))\n"
	"        if not x: break\n"
	"        b += x\n"
	"    return b\n"
	"while True:\n"
	"    c, _ = s.accept()\n"
	"    h = take(c, 8)\n"
	"    take(c, struct.unpack('<I', h[4:8])[0])\n"
	"    c.sendall(ans); c.close()\n";

struct fake { char sock[600]; };

static int sock_there(void *arg)
{
	return access(((struct fake *)arg)->sock, F_OK) == 0;
}

static void fake_supervisor(struct fx *f, struct tq_child *c, const char *answer_hex)
{
	struct fake fk;

	snprintf(fk.sock, sizeof(fk.sock), "%s/submit.sock", f->home);
	spawn(c, (char *[]){ "python3", "-c", (char *)fake_sock_py, fk.sock,
			     (char *)answer_hex, NULL });
	assert_true(th_wait_for(sock_there, &fk, WAIT_MS));
}

static void stop_fake(struct fx *f, struct tq_child *c)
{
	struct tq_err err = TQ_ERR_INIT;
	char sock[600];
	int status;

	kill(c->pid, SIGKILL);
	tq_spawn_wait(c, &status, &err);
	tq_spawn_release(c);
	snprintf(sock, sizeof(sock), "%s/submit.sock", f->home);
	unlink(sock);
}

/* "HELLO, NOT TASKQ": no frame this taskq reads. */
#define GARBAGE_HEX "48454c4c4f2c204e4f54205441534b51"
/* "TQR3", 26 bytes, "ERR -1 wire: test says no!": a supervisor that
 * could not decode the request. */
#define UNREAD_HEX "545152331a000000" "455252202d312077697265"	\
	"3a20746573742073617973206e6f21"

/* A socket that answers garbage: the task is stored directly, once, and
 * the front end is told why (GARBLED); the token it sent is stored with
 * it, so the supervisor storing it too would give the same task. */
static void test_submit_garbage_falls_back(void **state)
{
	struct fx *f = *state;
	struct tq_ops_submit o = TQ_OPS_SUBMIT_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = true_spec();
	struct tq_child c = TQ_CHILD_INIT;
	int64_t again = 0;
	int existed = 0;

	fake_supervisor(f, &c, GARBAGE_HEX);
	o.home = f->home;
	assert_int_equal(tq_ops_submit(&o, &s, &err), 0);
	assert_int_equal(o.fallback, TQ_OPS_FALLBACK_GARBLED);
	assert_false(o.by_supervisor);
	assert_non_null(o.q);
	assert_true(o.id > 0);
	assert_int_equal(state_of(f->q, o.id), TQ_QUEUED);
	assert_int_equal(strlen(o.token), 32);
	assert_ptr_equal(s.token, o.token);
	/* the same token again is the same task: exactly once */
	assert_int_equal(tq_queue_submit(f->q, &s, &again, &existed, &err), 0);
	assert_int_equal(again, o.id);
	tq_queue_close(o.q);

	/* TASKQ_SUBMIT_VIA=supervisor: no fallback, an error */
	o = (struct tq_ops_submit)TQ_OPS_SUBMIT_INIT;
	o.home = f->home;
	o.via = TQ_OPS_VIA_SUPERVISOR;
	s = true_spec();
	assert_int_equal(tq_ops_submit(&o, &s, &err), TQ_EIO);
	assert_int_equal(o.failed_at, TQ_OPS_AT_SOCKET);
	assert_null(o.q);
	assert_non_null(strstr(err.msg, "TASKQ_SUBMIT_VIA=supervisor: "));
	stop_fake(f, &c);
}

/* A supervisor that could not read the request (another version): stored
 * directly, UNREAD and its message; no socket at all: stored directly,
 * nothing to say, no token. */
static void test_submit_unread_and_none(void **state)
{
	struct fx *f = *state;
	struct tq_ops_submit o = TQ_OPS_SUBMIT_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task_spec s = true_spec();
	struct tq_child c = TQ_CHILD_INIT;

	fake_supervisor(f, &c, UNREAD_HEX);
	o.home = f->home;
	assert_int_equal(tq_ops_submit(&o, &s, &err), 0);
	assert_int_equal(o.fallback, TQ_OPS_FALLBACK_UNREAD);
	assert_non_null(strstr(o.why.msg, "test says no!"));
	assert_true(o.id > 0);
	tq_queue_close(o.q);
	stop_fake(f, &c);

	o = (struct tq_ops_submit)TQ_OPS_SUBMIT_INIT;
	o.home = f->home;
	s = true_spec();
	assert_int_equal(tq_ops_submit(&o, &s, &err), 0);
	assert_int_equal(o.fallback, 0);
	assert_null(s.token);
	assert_int_equal(state_of(f->q, o.id), TQ_QUEUED);
	/* started: no supervisor asked for, none started */
	assert_int_equal(tq_ops_submit_started(&o, 0, &err), 0);
	tq_queue_close(o.q);
}

/* ------------------------------------------------------------------ */
/* import                                                             */

struct lines {
	uint64_t sums[600];
	size_t chunks, got, stop_after;
	int64_t ids[600];
};

static void line_of(void *arg, size_t i, size_t *line, uint64_t *sum)
{
	struct lines *l = arg;

	*line = i + 1;
	*sum = l->sums[i];
}

static void got_chunk(void *arg, const int64_t *ids, const int *existed, size_t k)
{
	struct lines *l = arg;

	(void)existed;
	memcpy(l->ids + l->got, ids, k * sizeof(*ids));
	l->got += k;
	l->chunks++;
}

static int stop_at(void *arg)
{
	struct lines *l = arg;

	return l->stop_after > 0 && l->chunks >= l->stop_after ? SIGINT : 0;
}

static void import_init(struct tq_ops_import *im, struct fx *f, struct tq_task_spec *specs,
			size_t n, struct lines *l)
{
	memset(im, 0, sizeof(*im));
	im->q = f->q;
	im->home = f->home;
	im->specs = specs;
	im->n = n;
	im->line = line_of;
	im->stored = got_chunk;
	im->stop = stop_at;
	im->arg = l;
}

/* 600 specs: chunks (the first of 256), stopped by a signal between two,
 * resumed under the same run: every line stored once, the ids of the whole
 * file in its order; a resume whose line 1 is another line is refused
 * before anything is stored; an unknown run is refused. */
static void test_import_chunks_stop_resume(void **state)
{
	static struct tq_task_spec specs[600];
	static struct lines l, l2;
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_import im;
	char run[TQ_OPS_IMPORT_RUN_MAX];

	for (size_t i = 0; i < 600; i++) {
		specs[i] = true_spec();
		l.sums[i] = l2.sums[i] = 1000 + i;
	}
	tq_ops_import_new_run(run);
	assert_true(tq_ops_import_run_ok(run));
	l.stop_after = 1;
	import_init(&im, f, specs, 600, &l);
	memcpy(im.run, run, sizeof(run));
	assert_int_equal(tq_ops_import(&im, &err), TQ_OPS_IMPORT_STOPPED);
	assert_int_equal(im.signal, SIGINT);
	assert_int_equal(im.done, 256);
	assert_int_equal(l.got, 256);

	/* resumed from the start: the first 256 found, the rest stored */
	import_init(&im, f, specs, 600, &l2);
	memcpy(im.run, run, sizeof(run));
	im.resumed = 1;
	assert_int_equal(tq_ops_import(&im, &err), 0);
	assert_int_equal(im.done, 600);
	assert_int_equal(l2.got, 600);
	assert_memory_equal(l2.ids, l.ids, 256 * sizeof(int64_t));
	for (size_t i = 1; i < 600; i++)
		assert_int_equal(l2.ids[i], l2.ids[i - 1] + 1);

	/* line 1 is another line now: refused, nothing stored */
	memset(&l2, 0, sizeof(l2));
	for (size_t i = 0; i < 600; i++)
		l2.sums[i] = 1000 + i;
	l2.sums[0] = 7;
	import_init(&im, f, specs, 600, &l2);
	memcpy(im.run, run, sizeof(run));
	im.resumed = 1;
	assert_int_equal(tq_ops_import(&im, &err), TQ_OPS_IMPORT_OTHER_LINE);
	assert_int_equal(im.bad_line, 1);
	assert_int_equal(im.bad_id, l.ids[0]);
	assert_int_equal(l2.got, 0);

	/* a run never seen here */
	import_init(&im, f, specs, 600, &l2);
	memcpy(im.run, "0123456789abcdef", TQ_OPS_IMPORT_RUN_MAX);
	im.resumed = 1;
	assert_int_equal(tq_ops_import(&im, &err), TQ_OPS_IMPORT_UNKNOWN_RUN);
	assert_false(im.started);
	assert_false(tq_ops_import_run_ok("0123456789ABCDEF"));
}

/* ------------------------------------------------------------------ */
/* poll                                                               */

/* 1500 lines run by a real worker: a reader takes them a page at a time
 * (1000, then 500, then none), in order; another reader starts at the
 * first line. */
static void test_poll_pages_per_reader(void **state)
{
	static char *argv_seq[] = { "seq", "1", "1500", NULL };
	struct fx *f = *state;
	struct tq_task_spec s = true_spec();
	struct tq_child drain = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_ops_poll p;
	struct tq_log_line l;
	struct ended e = { f->q, 0 };
	const char *bin = getenv("TASKQ_BIN");

	s.argv = argv_seq;
	s.argc = 3;
	assert_int_equal(tq_queue_submit(f->q, &s, &e.id, NULL, &err), 0);
	assert_non_null(bin);
	spawn(&drain, (char *[]){ (char *)bin, "--home", f->home, "drain", "--workers", "1",
				  NULL });
	drain_exited(f, &drain);
	assert_true(has_ended(&e));

	memset(&p, 0, sizeof(p));
	assert_int_equal(tq_ops_poll(f->q, e.id, "a", &p, &err), 0);
	assert_int_equal(p.task.state, TQ_SUCCEEDED);
	assert_int_equal(p.n, TQ_OPS_POLL_MAX_LINES);
	assert_int_equal(p.shown, 0);
	assert_int_equal(p.total, 1500);
	l = tq_ops_poll_line(&p, 999);
	assert_int_equal(l.n, 1000);
	assert_memory_equal(l.text, "1000", 4);
	assert_int_equal(tq_ops_poll(f->q, e.id, "a", &p, &err), 0);
	assert_int_equal(p.shown, 1000);
	assert_int_equal(p.n, 500);
	l = tq_ops_poll_line(&p, 0);
	assert_memory_equal(l.text, "1001", 4);
	assert_int_equal(tq_ops_poll(f->q, e.id, "a", &p, &err), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.shown, 1500);
	assert_int_equal(tq_ops_poll(f->q, e.id, "b", &p, &err), 0);
	assert_int_equal(p.shown, 0);
	assert_int_equal(p.n, 1000);
	tq_ops_poll_release(&p);
	assert_int_equal(tq_ops_poll(f->q, e.id + 1, "a", &p, &err), TQ_ENOTFOUND);
	tq_ops_poll_release(&p);
}

/* What makes tasks runnable rings the doorbell after the store's change,
 * once; what does not (a pause, a retry refused, nothing to retry) does
 * not: the byte an idle worker would read is counted on the doorbell's
 * read end (a FIFO of the state directory, as the worker opens it). */
static void test_changes_ring_the_doorbell(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = true_spec();
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = 0, n = -1;
	int fd = tq_doorbell_open(f->home, &err);

	assert_true(fd >= 0);
	s.group = "g";
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), 0);

	assert_int_equal(tq_ops_group_pause(f->q, f->home, "g", &err), 0);
	assert_int_equal(tq_doorbell_drain(fd), 0);
	assert_int_equal(tq_ops_group_resume(f->q, f->home, "g", &err), 0);
	assert_int_equal(tq_doorbell_drain(fd), 1);
	assert_int_equal(tq_ops_group_set_parallel(f->q, f->home, "g", 2, &err), 0);
	assert_int_equal(tq_doorbell_drain(fd), 1);

	/* queued, not finished: refused, no ring */
	assert_int_equal(tq_ops_retry(f->q, f->home, id, &err), TQ_ESTATE);
	assert_int_equal(tq_doorbell_drain(fd), 0);
	assert_int_equal(tq_ops_retry_failed(f->q, f->home, NULL, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tq_doorbell_drain(fd), 0);

	/* canceled is finished: queued again, one ring */
	assert_int_equal(tq_queue_cancel(f->q, id, "test", NULL, &err), 0);
	assert_int_equal(tq_ops_retry(f->q, f->home, id, &err), 0);
	assert_int_equal(state_of(f->q, id), TQ_QUEUED);
	assert_int_equal(tq_doorbell_drain(fd), 1);
	close(fd);
}

/*
 * The runtime's side of a close, played by a child process on a store
 * connection of its own: wait for key's close request on node (the warm
 * processes listed, as a supervisor's tick reads them), take it, then
 * clear the process, as a supervisor does once it has ended it. Exits 0,
 * or 1 when no request came within WAIT_MS.
 *
 * It starts only once bell (the doorbell's read end, drained by the
 * parent) rings: the request it takes is stored already, by the parent's
 * earlier close, so without that the stand-in could end the process before
 * the parent's close had looked, which then saw no process ("none").
 */
static void stand_in_runtime(const char *home, const char *node, const char *key, int bell)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_queue *q = NULL;
	int64_t until = tq_mono_ms() + WAIT_MS, at = 0;
	int cleared = 0;
	struct pollfd pfd = { .fd = bell, .events = POLLIN };
	int pr;

	do
		pr = poll(&pfd, 1, WAIT_MS);
	while (pr < 0 && errno == EINTR);
	if (pr != 1)
		_exit(5);
	if (tq_queue_open(&q, home, 0, &err) != 0)
		_exit(2);
	while (tq_mono_ms() < until) {
		struct tq_session_row *rows = NULL;
		size_t n = 0;
		int pid = 0;
		int64_t start = 0;

		if (tq_queue_warm_list(q, node, &rows, &n, &err) != 0)
			_exit(3);
		for (size_t i = 0; i < n; i++)
			if (strcmp(rows[i].key, key) == 0 && rows[i].close_requested_at != 0) {
				pid = rows[i].pid;
				start = rows[i].start;
			}
		tq_session_row_list_free(rows, n);
		if (pid != 0) {
			if (tq_queue_session_close_take(q, key, pid, start, &at, &err) != 0 ||
			    at == 0 ||
			    tq_queue_warm_clear(q, key, pid, start, &cleared, &err) != 0 ||
			    !cleared)
				_exit(4);
			tq_queue_close(q);
			_exit(0);
		}
		usleep(10000);
	}
	_exit(1);
}

/*
 * `taskq sessions close`'s operation: an unknown key refused (TQ_ENOTFOUND,
 * naming it), a session without a warm process told so with nothing stored
 * and no ring; with one: the request stored on the row and the doorbell
 * rung (deadline 0: not waited for), the wait ending at its deadline while
 * no supervisor acts (PENDING, this node's, no supervisor here), and ENDED
 * once the process is cleared by the runtime, here a stand-in in a child.
 */
static void test_session_close_through_store(void **state)
{
	struct fx *f = *state;
	struct tq_task_spec s = true_spec();
	struct tq_err err = TQ_ERR_INIT;
	struct tq_session_row *rows = NULL;
	struct tq_ops_close r;
	char node[TQ_NODE_MAX + 1];
	size_t n = 0;
	int64_t id = 0, t0;
	int fd = tq_doorbell_open(f->home, &err), status = 0;
	pid_t kid;

	assert_true(fd >= 0);
	assert_int_equal(tq_node_self(node, sizeof(node), &err), 0);
	s.session = "w";
	s.agent = "claude";
	s.warm = 1;
	s.idle_timeout_ms = 60000;
	assert_int_equal(tq_queue_submit(f->q, &s, &id, NULL, &err), 0);

	assert_int_equal(tq_ops_session_close(f->q, f->home, "nope", 0, &r, &err),
			 TQ_ENOTFOUND);
	assert_string_equal(err.msg, "session \"nope\": no such session");
	assert_int_equal(tq_ops_session_close(f->q, f->home, "w", tq_mono_ms() + WAIT_MS, &r,
					      &err), 0);
	assert_int_equal(r.outcome, TQ_OPS_CLOSE_NONE);
	assert_int_equal(r.pid, 0);
	assert_int_equal(tq_doorbell_drain(fd), 0);

	assert_int_equal(tq_queue_warm_set(f->q, "w", node, 4242, 777, tq_now_ms(), &err), 0);
	assert_int_equal(tq_ops_session_close(f->q, f->home, "w", 0, &r, &err), 0);
	assert_int_equal(r.outcome, TQ_OPS_CLOSE_ASKED);
	assert_int_equal(r.pid, 4242);
	assert_int_equal(r.start, 777);
	assert_string_equal(r.node, node);
	assert_true(r.requested_at > 0);
	assert_int_equal(tq_doorbell_drain(fd), 1);
	assert_int_equal(tq_queue_sessions(f->q, "w", &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].close_requested_at, r.requested_at);
	tq_session_row_list_free(rows, n);

	t0 = tq_mono_ms();
	assert_int_equal(tq_ops_session_close(f->q, f->home, "w", t0 + 300, &r, &err), 0);
	assert_int_equal(r.outcome, TQ_OPS_CLOSE_PENDING);
	assert_true(tq_mono_ms() - t0 >= 300);
	assert_int_equal(r.this_node, 1);
	assert_int_equal(r.supervisor_here, 0);

	assert_true(tq_doorbell_drain(fd) >= 0); /* the PENDING close's ring */
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0)
		stand_in_runtime(f->home, node, "w", fd);
	assert_int_equal(tq_ops_session_close(f->q, f->home, "w", tq_mono_ms() + WAIT_MS, &r,
					      &err), 0);
	assert_int_equal(r.outcome, TQ_OPS_CLOSE_ENDED);
	assert_int_equal(r.pid, 4242);
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(tq_queue_sessions(f->q, "w", &rows, &n, &err), 0);
	assert_int_equal(rows[0].pid, 0);
	assert_int_equal(rows[0].close_requested_at, 0);
	tq_session_row_list_free(rows, n);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kill_through_real_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill_refuses_reused_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill_of_another_nodes_worker_only_stored, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kill_not_started, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_delivers, setup, teardown),
		cmocka_unit_test(test_wait_reaches_deadline),
		cmocka_unit_test(test_wait_done_and_backoff),
		cmocka_unit_test_setup_teardown(test_kill_wait_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_ended, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_garbage_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_unread_and_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_chunks_stop_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_pages_per_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changes_ring_the_doorbell, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_close_through_store, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

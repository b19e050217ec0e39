/*
 * test_contain.c - an attempt's processes known the way the kernel knows
 * them (contain.h, cgroup.h), on real processes: the process-tree record
 * (what it lists, that it follows the tree, its file), its recovery (a
 * descendant that left the session and cleared its environment is killed,
 * and so is a child born after the last look; a reused pid is never hit; a
 * damaged file is removed), the housekeeping sweep, and where the machine
 * delegates a cgroup v2 group to us, the group per attempt: the child joins
 * it before exec, one kill ends the whole tree, the group goes; the
 * fallback kill for kernels without cgroup.kill; paths read back from a
 * file that are not a task's group are left alone.
 *
 * The test process plays the worker: a subreaper, the parent of its tasks.
 * Every test kills and reaps what it started; waits are polls with
 * deadlines.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sys.h"
#include "proc/cgroup.h"
#include "proc/contain.h"
#include "proc/proc.h"
#include "proc/spawn.h"

#define WAIT_MS 10000
#define TASK 41
#define ATTEMPT 2

static char *test_env[] = { "PATH=/usr/bin:/bin", "TQ_TEST_MARK=1", NULL };

/* A state directory with procs/ and our record file in it, for one test
 * (the test process is the worker). */
struct fixture {
	char *home;
	int dirfd;                   /* procs/ */
	struct tq_contain_file file; /* procs/w<our pid>.<start> */
};

static void fixture_open(struct fixture *f)
{
	struct tq_err err = TQ_ERR_INIT;

	f->home = th_tempdir();
	f->dirfd = tq_contain_dir(f->home, &err);
	if (f->dirfd < 0 || tq_contain_file_open(&f->file, f->home, &err) < 0)
		fail_msg("%s", err.msg);
}

static void fixture_close(struct fixture *f)
{
	tq_contain_file_close(&f->file);
	tq_close(f->dirfd);
	th_rmtree(f->home);
}

/* What a worker's file holds between attempts. */
#define IDLE "taskq-procs 2 idle\n"

/* A dead worker's file name (no process has pid INT_MAX - 1). */
#define DEAD_FILE "w2147483646.1"

/* A shell that starts, when it reads a line, a descendant that leaves its
 * session and clears its environment, and says "up PID" for it. */
static char *escaper_argv[] = { "sh", "-c",
	"read x; setsid env -i sleep 1000 </dev/null >/dev/null 2>&1 & echo up $!; "
	"exec sleep 1000", NULL };

static void spawn(struct tq_child *c, char **argv, int cgroup_fd)
{
	struct tq_err err = TQ_ERR_INIT;

	c->argv = argv;
	c->envp = test_env;
	c->in = TQ_SPAWN_STDIN_PIPE;
	c->cgroup_fd = cgroup_fd;
	if (tq_spawn_start(c, &err) != 0)
		fail_msg("spawn %s: %s", argv[0], err.msg);
}

/* Tell the escaper to start its escapee; returns the escapee's pid. */
static pid_t escape(struct tq_child *c)
{
	int64_t deadline = tq_mono_ms() + WAIT_MS;
	char buf[64] = "";
	size_t len = 0;
	long pid = 0;

	assert_int_equal(tq_write_all(c->in_fd, "go\n", 3), 0);
	while (sscanf(buf, "up %ld\n", &pid) != 1 || strchr(buf, '\n') == NULL) {
		ssize_t n = tq_read(c->out_fd, buf + len, sizeof(buf) - 1 - len);
		if (n > 0) {
			len += (size_t)n;
			buf[len] = '\0';
		} else if (tq_mono_ms() > deadline) {
			fail_msg("no \"up PID\" from the escaper: \"%s\"", buf);
		} else {
			tq_sleep_ms(5);
		}
	}
	return (pid_t)pid;
}

/* A process that has left its session and whose environment is empty. */
struct escapee {
	pid_t pid;
};

static int escaped(void *arg)
{
	struct escapee *e = arg;
	struct tq_proc_stat st;
	char path[64], buf[16];
	ssize_t n;
	int fd;

	if (tq_proc_stat(e->pid, &st, NULL) < 0 || st.sid != e->pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)e->pid);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return 0;
	n = tq_read_full(fd, buf, sizeof(buf) - 1);
	tq_close(fd);
	if (n < 6 || memcmp(buf, "sleep", 6) != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)e->pid);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return 0;
	n = tq_read_full(fd, buf, sizeof(buf));
	tq_close(fd);
	return n == 0;
}

static void wait_escaped(pid_t pid)
{
	struct escapee e = { pid };

	assert_true(th_wait_for(escaped, &e, WAIT_MS));
}

/* Gone, or a zombie (killed, not yet reaped): not running any more. */
static int dead(pid_t pid)
{
	struct tq_proc_stat st;

	return tq_proc_stat(pid, &st, NULL) < 0 || st.state == 'Z';
}

static int dead_cond(void *arg)
{
	return dead(*(pid_t *)arg);
}

static void wait_dead(pid_t pid)
{
	if (!th_wait_for(dead_cond, &pid, WAIT_MS))
		fail_msg("pid %ld still alive", (long)pid);
}

/* Kill and reap everything we started (children and adopted orphans). */
static int teardown(void **state)
{
	(void)state;
	tq_proc_sweep(NULL, 0, NULL, NULL);
	return 0;
}

static int file_exists(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Our record file, whole. */
/* The record in f's file as a reader takes it: "idle", or up to its first
 * end line. What a longer record before left after it (the file is never
 * cut) is dropped; *raw (may be NULL) gets the file's whole length. */
static void read_record_raw(const struct fixture *f, char *buf, size_t n, size_t *raw)
{
	ssize_t got = tq_pread_full(f->file.fd, buf, n - 1, 0);
	char *end;

	assert_true(got >= 0);
	buf[got] = '\0';
	if (raw != NULL)
		*raw = (size_t)got;
	if (strncmp(buf, IDLE, strlen(IDLE)) == 0)
		buf[strlen(IDLE)] = '\0';
	else if ((end = strstr(buf, "\nend ")) != NULL && strchr(end + 1, '\n') != NULL)
		strchr(end + 1, '\n')[1] = '\0';
}

static void read_record(const struct fixture *f, char *buf, size_t n)
{
	read_record_raw(f, buf, n, NULL);
}

/* "<pid> <start>" of pid, as a record line would have it. */
static void id_line(pid_t pid, char *buf, size_t n)
{
	int64_t start = 0;

	assert_int_equal(tq_proc_start_time(pid, &start, NULL), 0);
	snprintf(buf, n, "\n%ld %lld\n", (long)pid, (long long)start);
}

static const struct tq_cgroup_base no_cgroup = { .usable = 0, .fd = -1 };

/* ---- the tree ------------------------------------------------------- */

static int has_n(void *arg)
{
	struct tq_proc_id *ids = NULL;
	size_t n = 0;
	int ok;

	if (tq_proc_descendants(getpid(), &ids, &n, NULL) < 0)
		return 0;
	ok = n == *(size_t *)arg;
	free(ids);
	return ok;
}

/* Every descendant, parents first, each with its start time. */
static void test_descendants(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_proc_id *ids = NULL;
	size_t n = 0, want = 2;
	pid_t e;

	(void)state;
	spawn(&c, escaper_argv, -1);
	e = escape(&c);
	wait_escaped(e);
	/* the shell (now sleep 1000) and its escapee, nothing else */
	assert_true(th_wait_for(has_n, &want, WAIT_MS));
	assert_int_equal(tq_proc_descendants(getpid(), &ids, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0].pid, c.pid);
	for (size_t i = 0; i < n; i++) {
		int64_t start = 0;
		assert_int_equal(tq_proc_start_time(ids[i].pid, &start, NULL), 0);
		assert_true(start == ids[i].start);
	}
	int found = 0;
	for (size_t i = 0; i < n; i++)
		found |= ids[i].pid == e;
	assert_true(found);
	free(ids);
	kill(c.pid, SIGKILL);
	kill(e, SIGKILL);
	tq_spawn_release(&c);
}

/* ---- the record ----------------------------------------------------- */

struct ticking {
	struct tq_contain *c;
	pid_t want;
	const struct fixture *f;
};

/* Tick the record as the runner's loop would, until it lists want. */
static int record_lists(void *arg)
{
	struct ticking *t = arg;
	char buf[4096], line[64];

	tq_contain_tick(t->c, tq_mono_ms() + TQ_CONTAIN_SCAN_MAX_MS, NULL);
	read_record(t->f, buf, sizeof(buf));
	id_line(t->want, line, sizeof(line));
	return strstr(buf, line) != NULL;
}

/* At the spawn the file names the child; later looks add what it starts,
 * however it left; the file is 0600 and written whole. */
static void test_record_follows_tree(void **state)
{
	struct tq_contain c = TQ_CONTAIN_INIT;
	struct tq_child ch = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct fixture f;
	struct stat st;
	char buf[4096], want[256];
	int64_t start = 0, now;
	uint64_t seq;
	size_t raw = 0;
	pid_t e;

	(void)state;
	fixture_open(&f);
	assert_int_equal(fstat(f.file.fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	read_record(&f, buf, sizeof(buf));
	assert_string_equal(buf, IDLE);
	assert_int_equal(tq_contain_begin(&c, &no_cgroup, &f.file, TASK, ATTEMPT, &err), 0);
	assert_int_equal(c.kind, TQ_CONTAIN_RECORD);
	assert_int_equal(tq_contain_cgroup_fd(&c), -1);
	assert_true(tq_contain_deadline(&c) == TQ_CONTAIN_NEVER);
	spawn(&ch, escaper_argv, tq_contain_cgroup_fd(&c));
	tq_proc_start_time(ch.pid, &start, NULL);
	now = tq_mono_ms();
	tq_contain_spawned(&c, ch.pid, start, now);
	assert_true(tq_contain_deadline(&c) == now + TQ_CONTAIN_SCAN_MIN_MS);
	read_record(&f, buf, sizeof(buf));
	snprintf(want, sizeof(want), "taskq-procs 2 41 2 %llu tree\n%ld %lld\nend %llu\n",
		 (unsigned long long)c.seq, (long)ch.pid, (long long)start,
		 (unsigned long long)c.seq);
	assert_string_equal(buf, want);
	seq = c.seq;

	/* Unchanged: the next look comes later, nothing is written. */
	now = tq_contain_deadline(&c);
	assert_int_equal(tq_contain_tick(&c, now, &err), 0);
	if (tq_contain_deadline(&c) != now + 2 * TQ_CONTAIN_SCAN_MIN_MS)
		fail_msg("next look at %lld, want %lld; %zu listed (first %ld)",
			 (long long)(tq_contain_deadline(&c) - now), 2LL * TQ_CONTAIN_SCAN_MIN_MS,
			 c.nids, c.nids ? (long)c.ids[0].pid : 0L);
	assert_true(c.seq == seq);

	e = escape(&ch);
	wait_escaped(e);
	struct ticking t = { &c, e, &f };
	assert_true(th_wait_for(record_lists, &t, WAIT_MS));
	assert_true(c.every == TQ_CONTAIN_SCAN_MIN_MS || c.every == 2 * TQ_CONTAIN_SCAN_MIN_MS);
	read_record(&f, buf, sizeof(buf));
	snprintf(want, sizeof(want), "end %llu\n", (unsigned long long)c.seq);
	assert_true(strlen(buf) > strlen(want));
	assert_string_equal(buf + strlen(buf) - strlen(want), want);

	/* The end marks the file idle; a second end does nothing. */
	kill(ch.pid, SIGKILL);
	kill(e, SIGKILL);
	tq_proc_sweep(NULL, 0, NULL, NULL);
	assert_int_equal(tq_contain_end(&c, NULL, &err), 0);
	read_record_raw(&f, buf, sizeof(buf), &raw);
	assert_string_equal(buf, IDLE);
	assert_true(raw > strlen(IDLE)); /* written over, never cut */
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, NULL, NULL, &err),
			 TQ_ENOTFOUND);
	assert_int_equal(tq_contain_end(&c, NULL, &err), 0);
	tq_spawn_release(&ch);

	/* The next attempt's shorter record over that longer one's tail: read
	 * as itself, with a sequence number of its own. */
	assert_int_equal(tq_contain_begin(&c, &no_cgroup, &f.file, TASK, ATTEMPT + 1, &err),
			 0);
	spawn(&ch, (char *[]){ "sleep", "1000", NULL }, -1);
	tq_proc_start_time(ch.pid, &start, NULL);
	tq_contain_spawned(&c, ch.pid, start, tq_mono_ms());
	assert_true(c.seq > seq);
	read_record_raw(&f, buf, sizeof(buf), &raw);
	snprintf(want, sizeof(want), "taskq-procs 2 41 3 %llu tree\n%ld %lld\nend %llu\n",
		 (unsigned long long)c.seq, (long)ch.pid, (long long)start,
		 (unsigned long long)c.seq);
	assert_string_equal(buf, want);
	assert_true(raw > strlen(want));
	size_t killed = 0;
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT + 1, NULL, &killed, &err), 0);
	assert_int_equal(killed, 1);
	wait_dead(ch.pid);
	tq_proc_sweep(NULL, 0, NULL, NULL);
	tq_contain_end(&c, NULL, NULL);
	tq_spawn_release(&ch);
	fixture_close(&f);
}

/* The worker is gone (nothing ends the attempt): recovery kills what the
 * file names, and a child born after the last look, and removes it. */
static void test_record_recover(void **state)
{
	struct tq_contain c = TQ_CONTAIN_INIT;
	struct tq_child ch = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	enum tq_contain_kind kind = TQ_CONTAIN_NONE;
	struct fixture f;
	struct stat st;
	char buf[256];
	int64_t start = 0;
	size_t killed = 0;
	pid_t e;

	(void)state;
	fixture_open(&f);
	tq_contain_begin(&c, &no_cgroup, &f.file, TASK, ATTEMPT, &err);
	spawn(&ch, escaper_argv, -1);
	tq_proc_start_time(ch.pid, &start, NULL);
	tq_contain_spawned(&c, ch.pid, start, tq_mono_ms());
	/* No look after this: the record names only the shell. */
	e = escape(&ch);
	wait_escaped(e);
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, 1, &kind, &killed, &err), TQ_ENOTFOUND);
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, &kind, &killed, &err), 0);
	assert_int_equal(kind, TQ_CONTAIN_RECORD);
	assert_int_equal(killed, 2);
	wait_dead(ch.pid);
	wait_dead(e);
	/* the file of a live worker (ours) stays, marked idle */
	assert_int_equal(fstatat(f.dirfd, f.file.name, &st, 0), 0);
	read_record(&f, buf, sizeof(buf));
	assert_string_equal(buf, IDLE);
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, &kind, &killed, &err),
			 TQ_ENOTFOUND);
	tq_contain_end(&c, NULL, NULL);
	tq_spawn_release(&ch);
	fixture_close(&f);
}

static int live_none(int64_t task, int attempt, void *arg)
{
	(void)task;
	(void)attempt;
	(void)arg;
	return 0;
}

static void write_file(int dirfd, const char *name, const char *body)
{
	int fd = tq_openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, body, strlen(body)), 0);
	tq_close(fd);
}

/* A pid whose start time is not the recorded one is another process now:
 * never signalled. Records that do not parse, or were cut short by their
 * writer's death, are not taken; one naming a cgroup that is not a task's
 * kills nothing. A dead worker's file goes once recovered. */
static void test_record_reused_and_bad(void **state)
{
	struct tq_child ch = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct fixture f;
	int64_t start = 0;
	size_t killed = 9, n = 0;
	char body[256];

	(void)state;
	fixture_open(&f);
	spawn(&ch, (char *[]){ "sleep", "1000", NULL }, -1);
	tq_proc_start_time(ch.pid, &start, NULL);
	snprintf(body, sizeof(body), "taskq-procs 2 41 2 7 tree\n%ld %lld\nend 7\n",
		 (long)ch.pid, (long long)start + 1);
	write_file(f.dirfd, DEAD_FILE, body);
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, NULL, &killed, &err), 0);
	assert_int_equal(killed, 0);
	assert_false(dead(ch.pid));
	assert_false(file_exists(f.dirfd, DEAD_FILE));

	/* a new head on an old tail: refused */
	snprintf(body, sizeof(body), "taskq-procs 2 41 2 8 tree\n%ld %lld\nend 7\n",
		 (long)ch.pid, (long long)start);
	write_file(f.dirfd, DEAD_FILE, body);
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, NULL, &killed, &err),
			 TQ_ENOTFOUND);
	assert_false(dead(ch.pid));
	/* no end line at all */
	snprintf(body, sizeof(body), "taskq-procs 2 41 2 8 tree\n%ld %lld\n", (long)ch.pid,
		 (long long)start);
	write_file(f.dirfd, "w2147483645.1", body);
	write_file(f.dirfd, "w2147483644.1", "taskq-procs 2 41 2 1 tree\n12 x\nend 1\n");
	write_file(f.dirfd, "w2147483643.1", "something else\n");
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, NULL, &killed, &err),
			 TQ_ECORRUPT);
	assert_false(dead(ch.pid));
	/* the housekeeping removes what names nothing it could kill */
	assert_int_equal(tq_contain_sweep(f.dirfd, NULL, live_none, NULL, &n, &killed, &err), 0);
	assert_int_equal(n, 0);
	assert_false(file_exists(f.dirfd, DEAD_FILE));
	assert_false(file_exists(f.dirfd, "w2147483645.1"));
	assert_false(file_exists(f.dirfd, "w2147483644.1"));
	assert_false(file_exists(f.dirfd, "w2147483643.1"));
	assert_false(dead(ch.pid));

	/* a path that is no task's group: refused, and the file goes */
	write_file(f.dirfd, DEAD_FILE, "taskq-procs 2 41 2 1 cgroup\n/sys/fs/cgroup\nend 1\n");
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, NULL, &killed, &err),
			 TQ_EINVAL);
	assert_false(file_exists(f.dirfd, DEAD_FILE));
	/* a group that is gone already: done */
	write_file(f.dirfd, DEAD_FILE,
		   "taskq-procs 2 41 2 1 cgroup\n/nonexistent/taskq.1.2.41.2\nend 1\n");
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, NULL, &killed, &err), 0);
	assert_false(file_exists(f.dirfd, DEAD_FILE));
	assert_false(dead(ch.pid));
	kill(ch.pid, SIGKILL);
	tq_spawn_release(&ch);
	fixture_close(&f);
}

static int live_41_2(int64_t task, int attempt, void *arg)
{
	(void)arg;
	return task == TASK && attempt == ATTEMPT;
}

/* Housekeeping: a dead worker's file whose attempt no longer runs is
 * recovered and removed; an empty one removed; one whose attempt still runs
 * left (to that attempt's recovery); a live worker's file never touched. */
static void test_sweep(void **state)
{
	struct tq_child a = TQ_CHILD_INIT, b = TQ_CHILD_INIT;
	struct tq_contain c = TQ_CONTAIN_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct fixture f;
	int64_t sa = 0, sb = 0;
	size_t n = 0, killed = 0;
	char body[256];

	(void)state;
	fixture_open(&f);
	spawn(&a, (char *[]){ "sleep", "1000", NULL }, -1);
	spawn(&b, (char *[]){ "sleep", "1000", NULL }, -1);
	tq_proc_start_time(a.pid, &sa, NULL);
	tq_proc_start_time(b.pid, &sb, NULL);
	snprintf(body, sizeof(body), "taskq-procs 2 41 2 1 tree\n%ld %lld\nend 1\n",
		 (long)a.pid, (long long)sa);
	write_file(f.dirfd, "w2147483646.1", body);  /* 41.2 runs */
	snprintf(body, sizeof(body), "taskq-procs 2 40 1 3 tree\n%ld %lld\nend 3\n",
		 (long)b.pid, (long long)sb);
	write_file(f.dirfd, "w2147483645.1", body);  /* 40.1 ended */
	write_file(f.dirfd, "w2147483644.1", IDLE);  /* idle */
	write_file(f.dirfd, "notes.txt", body);
	/* our own file (a live worker's) names the ended 40.1 too */
	tq_contain_begin(&c, &no_cgroup, &f.file, 40, 1, &err);
	tq_contain_spawned(&c, a.pid, sa, tq_mono_ms());
	assert_int_equal(tq_contain_sweep(f.dirfd, NULL, live_41_2, NULL, &n, &killed, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(killed, 1);
	wait_dead(b.pid);
	assert_false(dead(a.pid));
	assert_true(file_exists(f.dirfd, "w2147483646.1"));
	assert_false(file_exists(f.dirfd, "w2147483645.1"));
	assert_false(file_exists(f.dirfd, "w2147483644.1"));
	assert_true(file_exists(f.dirfd, "notes.txt"));
	assert_true(file_exists(f.dirfd, f.file.name));
	tq_contain_end(&c, NULL, NULL);
	kill(a.pid, SIGKILL);
	tq_spawn_release(&a);
	tq_spawn_release(&b);
	fixture_close(&f);
}

/* A child that cannot join its group: the spawn fails, says so, and says
 * it was the join (the runner then starts it without one). */
static void test_join_failed(void **state)
{
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	int fd = tq_open("/dev/null", O_RDONLY, 0);

	(void)state;
	c.argv = (char *[]){ "true", NULL };
	c.envp = test_env;
	c.cgroup_fd = fd; /* no cgroup: clone3 refuses it, and so does a join */
	assert_true(tq_spawn_start(&c, &err) < 0);
	assert_int_equal(c.join_failed, 1);
	assert_int_equal(c.pid, -1);
	assert_non_null(strstr(err.msg, "join its cgroup"));
	tq_spawn_force_join(1);
	assert_true(tq_spawn_start(&c, &err) < 0);
	tq_spawn_force_join(0);
	assert_int_equal(c.join_failed, 1);
	assert_non_null(strstr(err.msg, "join its cgroup"));
	c.cgroup_fd = -1;
	assert_int_equal(tq_spawn_start(&c, &err), 0);
	assert_int_equal(c.join_failed, 0);
	int status = 0;
	assert_int_equal(tq_spawn_wait(&c, &status, &err), 0);
	assert_int_equal(status, 0);
	tq_spawn_release(&c);
	tq_close(fd);
}

/* ---- cgroups, where we have one --------------------------------------- */

static struct tq_cgroup_base cgroup_base;

static int cgroup_teardown(void **state)
{
	(void)state;
	tq_cgroup_base_release(&cgroup_base);
	return 0;
}

static int cgroup_setup(void **state)
{
	struct tq_cgroup_base *b = &cgroup_base;
	char *home = th_tempdir();

	unsetenv(TQ_CGROUP_VAR);
	if (!tq_cgroup_probe(b, home)) {
		fprintf(stderr, "no cgroup here (%s): the cgroup tests are skipped\n", b->why);
		th_rmtree(home);
		*state = NULL;
		return 0;
	}
	th_rmtree(home);
	*state = b;
	return 0;
}

/* Whether /proc/PID/cgroup's v2 line names cg's group. */
static int in_group(pid_t pid, const struct tq_cgroup *cg)
{
	char path[64], buf[4096], want[256], *line;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return 0;
	n = tq_read_full(fd, buf, sizeof(buf) - 1);
	tq_close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if ((line = strstr(buf, "0::")) == NULL)
		return 0;
	line[strcspn(line, "\n")] = '\0';
	snprintf(want, sizeof(want), "/%s", cg->name);
	return strlen(line) >= strlen(want) &&
	       strcmp(line + strlen(line) - strlen(want), want) == 0;
}

static int dir_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* The child is started in the group (clone3; or it joins before exec);
 * its escapee is in the group too; one kill ends both; the end removes
 * the group. */
static void cgroup_attempt(void **state)
{
	struct tq_cgroup_base *b = *state;
	struct tq_cgroup cg = TQ_CGROUP_INIT;
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;
	pid_t e;

	if (b == NULL)
		skip();
	assert_int_equal(tq_cgroup_create(b, TASK, ATTEMPT, &cg, &err), 0);
	assert_true(dir_exists(cg.path));
	spawn(&c, escaper_argv, cg.dir_fd);
	assert_true(in_group(c.pid, &cg));
	e = escape(&c);
	wait_escaped(e);
	assert_true(in_group(e, &cg));
	/* the worker's order: kill, sweep (reaps), end */
	assert_int_equal(tq_cgroup_kill_group(&cg, &err), 0);
	wait_dead(c.pid);
	wait_dead(e);
	tq_proc_sweep(NULL, 0, NULL, NULL);
	assert_int_equal(tq_cgroup_end(&cg, &killed, &err), 0);
	assert_int_equal(killed, 0);
	assert_false(dir_exists(cg.path));
	assert_int_equal(tq_cgroup_end(&cg, &killed, &err), 0);
	tq_spawn_release(&c);
}

static void test_cgroup_attempt(void **state)
{
	cgroup_attempt(state);
}

/* The same where clone3 cannot start a child in a group: it joins. */
static void test_cgroup_attempt_join(void **state)
{
	tq_spawn_force_join(1);
	cgroup_attempt(state);
	tq_spawn_force_join(0);
}

/* A --pty child (the fork path) joins its group before it execs. */
static void test_cgroup_pty(void **state)
{
	struct tq_cgroup_base *b = *state;
	struct tq_cgroup cg = TQ_CGROUP_INIT;
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;

	if (b == NULL)
		skip();
	assert_int_equal(tq_cgroup_create(b, TASK, ATTEMPT, &cg, &err), 0);
	c.argv = (char *[]){ "sleep", "1000", NULL };
	c.envp = test_env;
	c.in = TQ_SPAWN_STDIN_PTY;
	c.cgroup_fd = cg.dir_fd;
	if (tq_spawn_start(&c, &err) != 0)
		fail_msg("spawn: %s", err.msg);
	assert_true(in_group(c.pid, &cg));
	assert_int_equal(tq_cgroup_end(&cg, NULL, &err), 0);
	wait_dead(c.pid);
	tq_spawn_release(&c);
}

/* The end of a group still holding processes kills them and waits; the
 * fallback for kernels without cgroup.kill does the same, one pid at a
 * time. */
static void test_cgroup_end_and_fallback(void **state)
{
	struct tq_cgroup_base *b = *state;
	struct tq_cgroup cg = TQ_CGROUP_INIT;
	struct tq_child c = TQ_CHILD_INIT, d = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;
	pid_t e;

	if (b == NULL)
		skip();
	assert_int_equal(tq_cgroup_create(b, TASK, ATTEMPT, &cg, &err), 0);
	spawn(&c, escaper_argv, cg.dir_fd);
	e = escape(&c);
	wait_escaped(e);
	assert_int_equal(tq_cgroup_kill_procs(cg.path, &killed, &err), 0);
	assert_int_equal(killed, 2);
	wait_dead(c.pid);
	wait_dead(e);
	tq_proc_sweep(NULL, 0, NULL, NULL);
	/* the fallback froze the group: thaw it for the next member */
	int fd = tq_open(cg.path, O_RDONLY | O_DIRECTORY, 0);
	int ffd = fd >= 0 ? tq_openat(fd, "cgroup.freeze", O_WRONLY, 0) : -1;
	if (ffd >= 0)
		assert_int_equal(tq_write_all(ffd, "0", 1), 0);
	tq_close(ffd);
	tq_close(fd);
	spawn(&d, (char *[]){ "sleep", "1000", NULL }, cg.dir_fd);
	assert_int_equal(tq_cgroup_end(&cg, &killed, &err), 0);
	assert_int_equal(killed, 1);
	wait_dead(d.pid);
	assert_false(dir_exists(cg.path));
	tq_spawn_release(&c);
	tq_spawn_release(&d);
}

/* The cgroup path of contain: the worker's group, named in its file;
 * recovery after a crash kills the group's processes and removes group and
 * file (the worker makes it again for its next attempt); the sweep removes
 * a group whose attempt ended, and a dead worker's group unless its file
 * still names an attempt that runs. */
static void test_contain_cgroup_recover(void **state)
{
	struct tq_cgroup_base *b = *state, mine;
	struct tq_contain c = TQ_CONTAIN_INIT;
	struct tq_child ch = TQ_CHILD_INIT;
	struct tq_cgroup left = TQ_CGROUP_INIT, dead = TQ_CGROUP_INIT, busy = TQ_CGROUP_INIT;
	struct tq_err err = TQ_ERR_INIT;
	enum tq_contain_kind kind = TQ_CONTAIN_NONE;
	struct fixture f;
	char buf[8192], path[4096], want[4200];
	size_t killed = 0, n = 0;
	int64_t start = 0;
	pid_t e;

	if (b == NULL)
		skip();
	fixture_open(&f);
	assert_true(tq_cgroup_probe(&mine, f.home));
	assert_int_equal(tq_proc_start_time(getpid(), &start, NULL), 0);
	assert_int_equal(tq_contain_begin(&c, &mine, &f.file, TASK, ATTEMPT, &err), 0);
	assert_int_equal(c.kind, TQ_CONTAIN_CGROUP);
	read_record(&f, buf, sizeof(buf));
	assert_int_equal(tq_cgroup_worker_path(&mine, getpid(), start, path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "taskq-procs 2 41 2 %llu cgroup\n%s\nend %llu\n",
		 (unsigned long long)c.seq, path, (unsigned long long)c.seq);
	assert_string_equal(buf, want);
	spawn(&ch, escaper_argv, tq_contain_cgroup_fd(&c));
	tq_contain_spawned(&c, ch.pid, 0, tq_mono_ms());
	assert_true(tq_contain_deadline(&c) == TQ_CONTAIN_NEVER);
	e = escape(&ch);
	wait_escaped(e);
	assert_int_equal(tq_contain_recover(f.dirfd, TASK, ATTEMPT, &kind, &killed, &err), 0);
	assert_int_equal(kind, TQ_CONTAIN_CGROUP);
	assert_int_equal(killed, 2);
	wait_dead(ch.pid);
	wait_dead(e);
	assert_false(dir_exists(path));
	read_record(&f, buf, sizeof(buf));
	assert_string_equal(buf, IDLE);
	tq_proc_sweep(NULL, 0, NULL, NULL);
	tq_contain_end(&c, NULL, NULL);
	tq_spawn_release(&ch);
	/* gone under the worker: made again for its next attempt */
	assert_int_equal(tq_contain_begin(&c, &mine, &f.file, TASK, ATTEMPT + 1, &err), 0);
	assert_int_equal(c.kind, TQ_CONTAIN_CGROUP);
	assert_true(dir_exists(path));
	assert_int_equal(tq_contain_end(&c, NULL, &err), 0);
	assert_true(dir_exists(path));

	/* a group left without its record, for an attempt that ended */
	assert_int_equal(tq_cgroup_create(&mine, 40, 1, &left, &err), 0);
	tq_close(left.dir_fd);
	tq_close(left.events_fd);
	/* a dead worker's group, its file gone: removed */
	assert_int_equal(tq_cgroup_create_worker(&mine, INT_MAX - 1, 1, &dead, &err), 0);
	tq_close(dead.dir_fd);
	tq_close(dead.events_fd);
	/* a dead worker's group whose file names an attempt that runs: left
	 * to that attempt's recovery */
	assert_int_equal(tq_cgroup_create_worker(&mine, INT_MAX - 2, 1, &busy, &err), 0);
	tq_close(busy.dir_fd);
	tq_close(busy.events_fd);
	snprintf(want, sizeof(want), "taskq-procs 2 41 2 3 cgroup\n%s\nend 3\n", busy.path);
	write_file(f.dirfd, "w2147483645.1", want);
	assert_int_equal(tq_contain_sweep(f.dirfd, &mine, live_41_2, NULL, &n, &killed, &err), 0);
	assert_int_equal(n, 2);
	assert_false(dir_exists(left.path));
	assert_false(dir_exists(dead.path));
	assert_true(dir_exists(busy.path));
	assert_true(dir_exists(path)); /* ours: we run */
	assert_true(file_exists(f.dirfd, "w2147483645.1"));
	/* its attempt ended: the file and the group go */
	assert_int_equal(tq_contain_sweep(f.dirfd, &mine, live_none, NULL, &n, &killed, &err), 0);
	assert_false(dir_exists(busy.path));
	assert_false(file_exists(f.dirfd, "w2147483645.1"));
	assert_true(dir_exists(path));
	/* the worker stops: its group goes with its file */
	tq_contain_file_close(&f.file);
	assert_false(dir_exists(path));
	tq_cgroup_base_release(&mine);
	fixture_close(&f);
}

/* The worker's group is kept between its attempts: what an attempt left is
 * killed and the group seen empty before the next one starts in it, the
 * same group, with a record of its own; a group that will not do (here:
 * the worker gave up on it) makes the next attempts take a group each. */
static void test_contain_cgroup_kept(void **state)
{
	struct tq_cgroup_base *b = *state, mine;
	struct tq_contain c = TQ_CONTAIN_INIT;
	struct tq_child ch = TQ_CHILD_INIT;
	struct tq_err err = TQ_ERR_INIT;
	struct fixture f;
	char buf[8192], path[4096], own[4096];
	size_t killed = 0;
	uint64_t seq;
	int status;
	pid_t e;

	if (b == NULL)
		skip();
	fixture_open(&f);
	assert_true(tq_cgroup_probe(&mine, f.home));
	assert_int_equal(tq_contain_begin(&c, &mine, &f.file, TASK, ATTEMPT, &err), 0);
	snprintf(path, sizeof(path), "%s", f.file.cg.path);
	spawn(&ch, escaper_argv, tq_contain_cgroup_fd(&c));
	e = escape(&ch);
	wait_escaped(e);
	assert_true(in_group(e, &f.file.cg));
	/* the shell exits; its escapee is left in the group */
	kill(ch.pid, SIGKILL);
	wait_dead(ch.pid);
	assert_int_equal(tq_contain_kill(&c, &err), 0);
	tq_proc_sweep(NULL, 0, NULL, NULL);
	assert_int_equal(tq_contain_end(&c, &killed, &err), 0);
	wait_dead(e);
	read_record(&f, buf, sizeof(buf));
	assert_string_equal(buf, IDLE);
	seq = c.seq;
	tq_spawn_release(&ch);

	/* the next attempt: the same group, its own record */
	assert_int_equal(tq_contain_begin(&c, &mine, &f.file, TASK, ATTEMPT + 1, &err), 0);
	assert_int_equal(c.kind, TQ_CONTAIN_CGROUP);
	assert_string_equal(f.file.cg.path, path);
	assert_true(c.seq > seq);
	read_record(&f, buf, sizeof(buf));
	assert_non_null(strstr(buf, path));
	assert_non_null(strstr(buf, "taskq-procs 2 41 3 "));
	/* (a group killed in is made anew: a child cloned into it would be
	 * SIGKILLed at birth here) */
	assert_true(dir_exists(path));
	spawn(&ch, (char *[]){ "true", NULL }, tq_contain_cgroup_fd(&c));
	status = -1;
	assert_true(tq_spawn_wait(&ch, &status, &err) == 0);
	assert_int_equal(status, 0);
	assert_int_equal(tq_contain_kill(&c, &err), 0);
	assert_false(f.file.cg.killed);
	assert_int_equal(tq_contain_end(&c, &killed, &err), 0);
	assert_int_equal(killed, 0);
	tq_spawn_release(&ch);

	/* nothing left, nothing killed: the same group, kept as it was */
	int dir_fd = f.file.cg.dir_fd;
	assert_int_equal(f.file.cg_state, 1);
	assert_int_equal(tq_contain_begin(&c, &mine, &f.file, TASK, ATTEMPT + 3, &err), 0);
	assert_int_equal(f.file.cg.dir_fd, dir_fd);
	spawn(&ch, (char *[]){ "true", NULL }, tq_contain_cgroup_fd(&c));
	status = -1;
	assert_true(tq_spawn_wait(&ch, &status, &err) == 0);
	assert_int_equal(status, 0);
	assert_int_equal(tq_contain_kill(&c, &err), 0);
	assert_int_equal(tq_contain_end(&c, NULL, &err), 0);
	tq_spawn_release(&ch);

	/* given up on: a group each from then on, the worker's left alone */
	f.file.cg_state = -1;
	assert_int_equal(tq_contain_begin(&c, &mine, &f.file, TASK, ATTEMPT + 4, &err), 0);
	assert_int_equal(c.kind, TQ_CONTAIN_CGROUP);
	assert_int_equal(tq_cgroup_path(&mine, TASK, ATTEMPT + 4, own, sizeof(own)), 0);
	assert_true(dir_exists(own));
	read_record(&f, buf, sizeof(buf));
	assert_non_null(strstr(buf, own));
	assert_int_equal(tq_contain_end(&c, NULL, &err), 0);
	assert_false(dir_exists(own));
	assert_true(dir_exists(path));
	tq_contain_file_close(&f.file);
	assert_false(dir_exists(path));
	tq_cgroup_base_release(&mine);
	fixture_close(&f);
}

/* Paths read back from a file are checked: only a task's group, on a
 * cgroup2 file system, never our own cgroup. */
static void test_cgroup_destroy_refuses(void **state)
{
	struct tq_cgroup_base *b = *state;
	struct tq_err err = TQ_ERR_INIT;
	char path[4096 + 64];

	if (b == NULL)
		skip();
	assert_int_equal(tq_cgroup_destroy(b->dir, NULL, &err), TQ_EINVAL);
	snprintf(path, sizeof(path), "%s/../x/taskq.1", b->dir);
	assert_int_equal(tq_cgroup_destroy(path, NULL, &err), TQ_EINVAL);
	assert_int_equal(tq_cgroup_destroy("relative/taskq.1.2.3.4", NULL, &err), TQ_EINVAL);
	char *tmp = th_tempdir();
	snprintf(path, sizeof(path), "%s/taskq.1.2.3.4", tmp); /* fits: a temp dir */
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(tq_cgroup_destroy(path, NULL, &err), TQ_EINVAL);
	assert_true(dir_exists(path));
	th_rmtree(tmp);
	/* a group already gone is success */
	assert_int_equal(tq_cgroup_path(b, 99999, 1, path, sizeof(path)), 0);
	assert_int_equal(tq_cgroup_destroy(path, NULL, &err), 0);
}

/* TASKQ_CGROUP=0 forces the record, and says so. */
static void test_probe_forced_off(void **state)
{
	struct tq_cgroup_base b;
	char desc[8192], *home = th_tempdir();

	(void)state;
	setenv(TQ_CGROUP_VAR, "0", 1);
	assert_int_equal(tq_cgroup_probe(&b, home), 0);
	unsetenv(TQ_CGROUP_VAR);
	assert_string_equal(b.why, "TASKQ_CGROUP=0");
	tq_contain_describe(&b, desc, sizeof(desc));
	assert_string_equal(desc, "process-tree record (TASKQ_CGROUP=0)");
	tq_cgroup_base_release(&b);
	th_rmtree(home);
}

int main(void)
{
	struct tq_err err = TQ_ERR_INIT;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_descendants, teardown),
		cmocka_unit_test_teardown(test_record_follows_tree, teardown),
		cmocka_unit_test_teardown(test_record_recover, teardown),
		cmocka_unit_test_teardown(test_record_reused_and_bad, teardown),
		cmocka_unit_test_teardown(test_sweep, teardown),
		cmocka_unit_test_teardown(test_join_failed, teardown),
		cmocka_unit_test_teardown(test_probe_forced_off, teardown),
	};
	const struct CMUnitTest cgroup_tests[] = {
		cmocka_unit_test_teardown(test_cgroup_attempt, teardown),
		cmocka_unit_test_teardown(test_cgroup_attempt_join, teardown),
		cmocka_unit_test_teardown(test_cgroup_pty, teardown),
		cmocka_unit_test_teardown(test_cgroup_end_and_fallback, teardown),
		cmocka_unit_test_teardown(test_contain_cgroup_recover, teardown),
		cmocka_unit_test_teardown(test_contain_cgroup_kept, teardown),
		cmocka_unit_test_teardown(test_cgroup_destroy_refuses, teardown),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	tq_sanitize_stdfds();
	if (tq_proc_set_subreaper(&err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	rc = cmocka_run_group_tests_name("record", tests, NULL, NULL);
	return rc | cmocka_run_group_tests_name("cgroup", cgroup_tests, cgroup_setup,
						  cgroup_teardown);
}

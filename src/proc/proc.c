/*
 * proc.c - process control (see proc.h for the contract).
 *
 * Identity: a pid alone is not a process (pids are reused), (pid, start
 * time) is. Whenever we signal a process we did not just reap-check as our
 * own child, we hold a pidfd first and verify through /proc after opening
 * it, so a pid that is recycled in between gets ESRCH, not the signal.
 *
 * Not here: spawning (spawn.c), TERM -> KILL (term.c), the event loop and
 * its clock (the caller), anything that touches the database.
 */
#include "proc.h"

#include <bsd/stdlib.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sys.h"

/* The stat fields we want, numbered as in proc(5). */
#define STAT_PPID 4
#define STAT_PGRP 5
#define STAT_SESSION 6
#define STAT_STARTTIME 22

int tq_proc_set_subreaper(struct tq_err *err)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return tq_err_sys(err, "prctl PR_SET_CHILD_SUBREAPER");
	return 0;
}

/*
 * Parse the decimal token at *p (an optional '-', digits, then ' ', '\n' or
 * NUL; within int64_t); advance *p past the token and one separator. 0 or
 * -1. By hand, not strtonum: a spawned child reads its own stat before its
 * exec (tq_proc_self_mark), where only async-signal-safe calls are allowed.
 */
static int stat_number(const char **p, int64_t *v)
{
	const char *s = *p;
	int neg = *s == '-';
	int64_t acc = 0;

	s += neg;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		int d = *s - '0';
		if (acc > (INT64_MAX - d) / 10)
			return -1;
		acc = acc * 10 + d;
	}
	if (*s != ' ' && *s != '\n' && *s != '\0')
		return -1;
	*v = neg ? -acc : acc;
	*p = s + (*s != '\0');
	return 0;
}

/* Fields 3..22 of a stat line; buf is NUL-terminated. 0 or -1.
 * Async-signal-safe (strrchr is, by POSIX.1-2008 TC2). */
static int parse_stat(const char *buf, struct tq_proc_stat *st)
{
	const char *p = strrchr(buf, ')');
	int64_t v;

	if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
		return -1;
	st->state = p[2];
	p += 4; /* now at field 4 */
	for (int field = STAT_PPID; field <= STAT_STARTTIME; field++) {
		if (stat_number(&p, &v) < 0)
			return -1;
		if (field == STAT_PPID)
			st->ppid = (pid_t)v;
		else if (field == STAT_PGRP)
			st->pgid = (pid_t)v;
		else if (field == STAT_SESSION)
			st->sid = (pid_t)v;
	}
	st->start_time = v;
	return 0;
}

/* ESRCH (the process went between open and read) is "not found" too. */
static int stat_err(struct tq_err *err, const char *what, pid_t pid)
{
	if (errno == ESRCH)
		errno = ENOENT;
	return tq_err_sys(err, "%s /proc/%ld/stat", what, (long)pid);
}

int tq_proc_stat(pid_t pid, struct tq_proc_stat *st, struct tq_err *err)
{
	char path[64], buf[TQ_PROC_STAT_MAX];
	ssize_t n;
	int fd;

	if (pid <= 0)
		return tq_err_set(err, TQ_EINVAL, "stat: bad pid %ld", (long)pid);
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = tq_open(path, O_RDONLY, 0);
	if (fd < 0)
		return stat_err(err, "open", pid);
	/* one read: /proc makes the file whole for a read with room for it
	 * (a full buffer is refused below), as every procfs reader relies on */
	n = tq_read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		int rc = stat_err(err, "read", pid);
		tq_close(fd);
		return rc;
	}
	tq_close(fd);
	buf[n] = '\0';
	st->pid = pid;
	if (n == 0 || n == (ssize_t)sizeof(buf) - 1 || parse_stat(buf, st) < 0)
		return tq_err_set(err, TQ_ECORRUPT, "parse /proc/%ld/stat",
			(long)pid);
	return 0;
}

int tq_proc_start_time(pid_t pid, int64_t *ticks, struct tq_err *err)
{
	struct tq_proc_stat st;
	int rc = tq_proc_stat(pid, &st, err);

	if (rc == 0)
		*ticks = st.start_time;
	return rc;
}

/* Append s to buf (n bytes, used so far *len), truncating as snprintf
 * would; async-signal-safe. */
static void put_str(char *buf, size_t n, size_t *len, const char *s)
{
	for (; *s != '\0' && *len + 1 < n; s++)
		buf[(*len)++] = *s;
	buf[*len] = '\0';
}

/* Append v (>= 0) in decimal, likewise. */
static void put_dec(char *buf, size_t n, size_t *len, int64_t v)
{
	char digits[24];
	size_t k = sizeof(digits) - 1;

	digits[k] = '\0';
	do {
		digits[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0 && k > 0);
	put_str(buf, n, len, digits + k);
}

void tq_proc_worker_mark(pid_t pid, int64_t start, char *buf, size_t n)
{
	size_t len = 0;

	if (n == 0)
		return;
	buf[0] = '\0';
	put_str(buf, n, &len, TQ_WORKER_MARK_VAR "=");
	put_dec(buf, n, &len, pid > 0 ? pid : 0);
	put_str(buf, n, &len, ".");
	put_dec(buf, n, &len, start > 0 ? start : 0);
}

void tq_proc_self_mark(char *buf, size_t n)
{
	char stat[TQ_PROC_STAT_MAX];
	struct tq_proc_stat st = { .start_time = 0 };
	ssize_t got = -1;
	int fd;

	if ((fd = tq_open("/proc/self/stat", O_RDONLY, 0)) >= 0) {
		got = tq_read(fd, stat, sizeof(stat) - 1); /* whole: tq_proc_stat */
		tq_close(fd);
	}
	if (got > 0 && got < (ssize_t)sizeof(stat) - 1) {
		stat[got] = '\0';
		if (parse_stat(stat, &st) < 0)
			st.start_time = 0;
	}
	tq_proc_worker_mark(getpid(), st.start_time, buf, n);
}

int tq_proc_same(pid_t pid, int64_t start_time)
{
	struct tq_proc_stat st;

	return tq_proc_stat(pid, &st, NULL) == 0 && st.start_time == start_time;
}

int tq_proc_alive(pid_t pid, int64_t start_time)
{
	struct tq_proc_stat st;

	/* A zombie has ended: only its parent's wait is missing (a stopped
	 * supervisor, an init that does not reap). */
	return pid > 0 && tq_proc_stat(pid, &st, NULL) == 0 &&
	       st.start_time == start_time && st.state != 'Z' && st.state != 'X';
}

/*
 * pidfd_open failed because no process has the pid: ESRCH, or EINVAL when
 * the pid number is still referenced (say as a pgid) but names no process.
 */
static int pidfd_gone(int e)
{
	return e == ESRCH || e == EINVAL;
}

int tq_proc_signal(pid_t pid, int64_t start_time, int sig, struct tq_err *err)
{
	int fd, rc = 0;

	if (pid <= 0)
		return tq_err_set(err, TQ_EINVAL, "signal: bad pid %ld", (long)pid);
	fd = pidfd_open(pid, 0);
	if (fd < 0) {
		if (pidfd_gone(errno))
			return tq_err_set(err, TQ_ENOTFOUND, "pid %ld: gone",
				(long)pid);
		return tq_err_sys(err, "pidfd_open %ld", (long)pid);
	}
	/* Checked after the pidfd exists: if pid was the right process now,
	 * the pidfd refers to it (or to an older holder, now dead: ESRCH). */
	if (!tq_proc_same(pid, start_time))
		rc = tq_err_set(err, TQ_ENOTFOUND,
			"pid %ld: gone or reused", (long)pid);
	else if (pidfd_send_signal(fd, sig, NULL, 0) < 0)
		rc = errno == ESRCH ? tq_err_set(err, TQ_ENOTFOUND,
			"pid %ld: gone", (long)pid)
			: tq_err_sys(err, "pidfd_send_signal %ld", (long)pid);
	tq_close(fd);
	return rc;
}

/* Whether the NUL-separated environment env (n bytes) has the entry m. */
static int env_has(const char *env, size_t n, const char *m, size_t mlen)
{
	for (size_t i = 0; i < n;) {
		const char *end = memchr(env + i, '\0', n - i);
		size_t len = end != NULL ? (size_t)(end - (env + i)) : n - i;
		if (len == mlen && memcmp(env + i, m, mlen) == 0)
			return 1;
		i += len + 1;
	}
	return 0;
}

int tq_proc_kill_group(pid_t pgid, int sig, struct tq_err *err)
{
	if (pgid <= 1 || pgid == getpgrp())
		return tq_err_set(err, TQ_EINVAL,
			"kill group %ld: refusing (not a task's group)", (long)pgid);
	if (kill(-pgid, sig) < 0 && errno != ESRCH)
		return tq_err_sys(err, "kill group %ld with signal %d",
			(long)pgid, sig);
	return 0;
}

/* ---- the sweep ------------------------------------------------------- */

struct pidlist {
	pid_t *v;
	size_t n, cap;
};

static int pidlist_add(struct pidlist *l, pid_t pid)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		pid_t *v = reallocarray(l->v, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = pid;
	return 0;
}

static int pidlist_has(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

/* A decimal directory name as a pid, or 0. */
static pid_t dirent_pid(const struct dirent *de)
{
	const char *errstr = NULL;
	long long v = strtonum(de->d_name, 1, INT_MAX, &errstr);

	return errstr == NULL ? (pid_t)v : 0;
}

#define ENVIRON_READ_MAX (1024 * 1024)
#define KILL_MARKED_ROUNDS 4

/*
 * Whether the process's environment (read into buf) marks it as m's. The
 * file reads the memory the process had when we opened it: one that execs
 * meanwhile is judged by its old environment (a worker's, when it was the
 * child of a worker's spawn), or shows none at all if that memory is
 * already freed; the caller's next pass sees its new one.
 */
static int marked(pid_t pid, const struct tq_marks *m, char *buf)
{
	char path[64];
	size_t n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return 0;
	while (n < ENVIRON_READ_MAX &&
	       (r = tq_read(fd, buf + n, ENVIRON_READ_MAX - n)) > 0)
		n += (size_t)r;
	tq_close(fd);
	if (m->task != NULL && m->home != NULL &&
	    env_has(buf, n, m->task, strlen(m->task)) &&
	    env_has(buf, n, m->home, strlen(m->home)))
		return 1;
	return m->worker != NULL && pid != m->worker_pid &&
	       env_has(buf, n, m->worker, strlen(m->worker));
}

/* One pass over /proc: SIGKILL every marked process not already in done
 * (and add it there). *found: how many this pass killed. */
static int kill_marked_pass(const struct tq_marks *m, char *buf, struct pidlist *done,
			    size_t *found)
{
	struct dirent *de;
	DIR *d;
	pid_t pid;

	*found = 0;
	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if ((pid = dirent_pid(de)) <= 1 || pid == getpid() ||
		    pidlist_has(done->v, done->n, pid) || !marked(pid, m, buf))
			continue;
		if (kill(pid, SIGKILL) == 0) {
			(*found)++;
			if (pidlist_add(done, pid) < 0) {
				closedir(d);
				errno = ENOMEM;
				return -1;
			}
		}
	}
	closedir(d);
	return 0;
}

int tq_proc_kill_marked(const struct tq_marks *m, size_t *killed, struct tq_err *err)
{
	struct pidlist done = { NULL, 0, 0 };
	size_t found = 0;
	char *buf;
	int rc = 0;

	if (killed != NULL)
		*killed = 0;
	if ((buf = malloc(ENVIRON_READ_MAX)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	/* Again while a pass kills something: a process we killed may have
	 * forked just before, and its child, given a pid below where the
	 * pass had got to (pids wrap), was not seen. With a worker's mark,
	 * at least twice: a child of its spawn that execs during the
	 * first pass may show neither environment then (see marked()). */
	for (int round = 0; round < KILL_MARKED_ROUNDS; round++) {
		if (kill_marked_pass(m, buf, &done, &found) < 0) {
			rc = errno == ENOMEM ? tq_err_set(err, TQ_ENOMEM, "out of memory")
					     : tq_err_sys(err, "scan /proc");
			break;
		}
		if (found == 0 && (round > 0 || m->worker == NULL))
			break;
	}
	free(buf);
	free(done.v);
	if (killed != NULL)
		*killed = done.n;
	return rc < 0 ? rc : (int)done.n;
}

/*
 * Add the pids in one children file ("12 345 6789 "): read in pieces,
 * carrying a pid cut by the end of a read over to the next one. ENOENT (the
 * thread has just exited, or is not one) adds nothing and returns 1.
 */
static int read_children_file(int dirfd, const char *tid, struct pidlist *l)
{
	char path[64], buf[8192];
	size_t have = 0;
	int fd, rc = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/children", tid);
	fd = tq_openat(dirfd, path, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	while ((n = tq_read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		char *p = buf, *end;

		buf[have + (size_t)n] = '\0';
		for (;;) {
			long v = strtol(p, &end, 10);
			if (end == p || *end == '\0')
				break; /* done, or a pid cut short */
			if (v > 0 && l->n < TQ_PROC_SWEEP_BATCH &&
			    pidlist_add(l, (pid_t)v) < 0) {
				errno = ENOMEM;
				rc = -1;
				goto out;
			}
			p = end + strspn(end, " \n");
		}
		have = strlen(p);
		memmove(buf, p, have + 1);
	}
	if (n < 0)
		rc = -1;
out:
	tq_close(fd);
	return rc;
}

/* Does this kernel have /proc/TID/children (CONFIG_PROC_CHILDREN)? */
static int have_children_files(void)
{
	static int known = -1;

	if (known < 0)
		known = access("/proc/thread-self/children", R_OK) == 0;
	return known;
}

/* The children of pid, from its threads' children files, into kids (reset
 * first). A pid that is gone has none. 0, or -1 with errno. */
static int children_of(pid_t pid, struct pidlist *kids)
{
	char path[64], one[96];
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int fd, rc = 0;

	kids->n = 0;
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	/*
	 * One thread, as nearly every process (a worker, a task): the link
	 * count of its task directory is 2 + its threads. Then its one
	 * children file, by name, without listing the directory: a sweep
	 * after every task made an open, two getdents64 and a close for it
	 * (strace -f -c, drain of 300 `true`). The one thread is the
	 * process's first (tid == pid) unless that one exited before another:
	 * then the file is not there, and the listing below finds it.
	 */
	if (stat(path, &sb) < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -1;
	if (sb.st_nlink == 3) {
		snprintf(one, sizeof(one), "%s/%ld", path, (long)pid);
		if ((rc = read_children_file(AT_FDCWD, one, kids)) <= 0)
			return rc;
		rc = 0;
	}
	if ((fd = tq_open(path, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -1;
	if ((d = fdopendir(fd)) == NULL) {
		tq_close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (dirent_pid(de) > 0)
			rc = read_children_file(dirfd(d), de->d_name, kids) < 0 ? -1 : 0;
	closedir(d);
	return rc;
}

/* Children by scanning every /proc/PID/stat for ppid == us. */
static int children_from_stat_scan(struct pidlist *l)
{
	int fd = tq_open("/proc", O_RDONLY | O_DIRECTORY, 0);
	pid_t self = getpid(), pid;
	struct tq_proc_stat st;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		tq_close(fd);
		return -1;
	}
	while (rc == 0 && l->n < TQ_PROC_SWEEP_BATCH &&
	       (de = readdir(d)) != NULL) {
		if ((pid = dirent_pid(de)) <= 0 || pid == self)
			continue;
		if (tq_proc_stat(pid, &st, NULL) == 0 && st.ppid == self &&
		    pidlist_add(l, pid) < 0) {
			errno = ENOMEM;
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

/* Our children now (a snapshot: new ones may appear, hence the rounds). */
static int list_children(struct pidlist *l, struct tq_err *err)
{
	l->n = 0;
	if (have_children_files()) {
		if (children_of(getpid(), l) < 0)
			return tq_err_sys(err,
				"sweep: read /proc/self/task/*/children");
		return 0;
	}
	if (children_from_stat_scan(l) < 0)
		return tq_err_sys(err, "sweep: scan /proc");
	return 0;
}

/* What a sweep spares, and what it must never group-kill. */
struct sweep_scope {
	const pid_t *keep;
	size_t nkeep;
	pid_t self;
	pid_t own_sid;
	pid_t own_pgid;
};

static int spared(const struct sweep_scope *s, const struct tq_proc_stat *st)
{
	return pidlist_has(s->keep, s->nkeep, st->pid) ||
	       pidlist_has(s->keep, s->nkeep, st->sid);
}

/*
 * SIGKILL one child, and its whole group when that group lies in a session
 * other than ours (such a group holds only strays: its session was made by
 * a descendant that called setsid, and sessions are closed to outsiders).
 * Returns a pidfd to wait on; -1 if the child was spared or is no longer
 * ours; -2 with errno set on failure.
 */
static int kill_child(const struct sweep_scope *s, pid_t pid)
{
	struct tq_proc_stat st;
	int fd = pidfd_open(pid, 0);

	if (fd < 0)
		return pidfd_gone(errno) ? -1 : -2;
	/* Verify after opening: if pid is our child now, fd refers to it. */
	if (tq_proc_stat(pid, &st, NULL) < 0 || st.ppid != s->self ||
	    spared(s, &st)) {
		tq_close(fd);
		return -1;
	}
	if (st.sid != s->own_sid && st.pgid > 1 && st.pgid != s->own_pgid)
		kill(-st.pgid, SIGKILL); /* ESRCH: already empty */
	if (pidfd_send_signal(fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH) {
		int e = errno;
		tq_close(fd);
		errno = e;
		return -2;
	}
	return fd;
}

/* Wait (until deadline) for the process behind pidfd to exit; reap it. */
static int reap_victim(pid_t pid, int fd, int64_t deadline, struct tq_err *err)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int st;

	for (;;) {
		int64_t left = deadline - tq_mono_ms();
		int r = poll(&pfd, 1, left > 0 ? (int)left : 0);
		if (r > 0)
			break;
		if (r == 0)
			return tq_err_set(err, TQ_EBUSY, "sweep: pid %ld still "
				"alive %d ms after SIGKILL", (long)pid,
				TQ_PROC_SWEEP_WAIT_MS);
		if (errno != EINTR)
			return tq_err_sys(err, "sweep: poll pidfd of %ld",
				(long)pid);
	}
	/* ECHILD: someone else (a tq_proc_reap in the caller) reaped it. */
	if (tq_waitpid(pid, &st, WNOHANG) < 0 && errno != ECHILD)
		return tq_err_sys(err, "sweep: waitpid %ld", (long)pid);
	return 0;
}

struct victim {
	pid_t pid;
	int pidfd;
};

/*
 * One round: SIGKILL every unspared child first (so they die in parallel),
 * then wait for and reap each. *found gets the number killed.
 */
static int sweep_round(const struct sweep_scope *s, const struct pidlist *kids,
	struct victim *vic, size_t *found, struct tq_err *err)
{
	int64_t deadline;
	size_t nv = 0;
	int rc = 0;

	for (size_t i = 0; i < kids->n; i++) {
		int fd = kill_child(s, kids->v[i]);
		if (fd == -2) {
			rc = tq_err_sys(err, "sweep: kill %ld", (long)kids->v[i]);
			break;
		}
		if (fd >= 0)
			vic[nv++] = (struct victim){ kids->v[i], fd };
	}
	deadline = tq_mono_ms() + TQ_PROC_SWEEP_WAIT_MS;
	for (size_t j = 0; j < nv; j++) {
		if (rc == 0)
			rc = reap_victim(vic[j].pid, vic[j].pidfd, deadline, err);
		tq_close(vic[j].pidfd);
	}
	*found = nv;
	return rc;
}

/* Whether this process has no child at all, alive or a zombie: one
 * system call, where listing them takes five. */
static int childless(void)
{
	siginfo_t si;

	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

int tq_proc_sweep(const pid_t *keep, size_t nkeep, size_t *killed,
	struct tq_err *err)
{
	struct sweep_scope s = { keep, nkeep, 0, 0, 0 };
	struct pidlist kids = { NULL, 0, 0 };
	struct victim *vic = NULL;
	size_t total = 0, found = 0;
	int rc = TQ_EBUSY;

	/* Nearly always so after a task: its orphans, were there any, became
	 * our children (we are a subreaper) before its exit reached us. */
	if (killed != NULL)
		*killed = 0;
	if (childless())
		return 0;
	s.self = getpid();
	s.own_sid = getsid(0);
	s.own_pgid = getpgrp();
	for (int round = 0; round < TQ_PROC_SWEEP_ROUNDS; round++) {
		int r = list_children(&kids, err);
		struct victim *grown;

		if (r == 0 && kids.n > 0) {
			grown = reallocarray(vic, kids.cap, sizeof(*vic));
			if (grown == NULL)
				r = tq_err_set(err, TQ_ENOMEM,
					"sweep: out of memory");
			else
				vic = grown;
		}
		if (r == 0)
			r = sweep_round(&s, &kids, vic, &found, err);
		if (r < 0) {
			rc = r;
			goto out;
		}
		total += found;
		if (found == 0) {
			rc = 0;
			goto out;
		}
	}
	tq_err_set(err, TQ_EBUSY, "sweep: children still appearing after "
		"%d rounds", TQ_PROC_SWEEP_ROUNDS);
out:
	if (killed != NULL)
		*killed = total;
	free(kids.v);
	free(vic);
	return rc;
}

/* ---- process trees ---------------------------------------------------- */

struct idlist {
	struct tq_proc_id *v;
	size_t n, cap;
};

static int idlist_add(struct idlist *l, pid_t pid, int64_t start)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct tq_proc_id *v = reallocarray(l->v, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct tq_proc_id){ pid, start };
	return 0;
}

static int idlist_has(const struct idlist *l, pid_t pid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == pid)
			return 1;
	return 0;
}


/* Add the children of parent (listed in kids) whose stat still names
 * parent as theirs: a pid read from a children file that has since been
 * reused by another process is not one of them. */
static int add_children(struct idlist *out, pid_t parent, const struct pidlist *kids)
{
	struct tq_proc_stat st;

	for (size_t i = 0; i < kids->n && out->n < TQ_PROC_TREE_MAX; i++) {
		if (tq_proc_stat(kids->v[i], &st, NULL) < 0 || st.ppid != parent ||
		    idlist_has(out, kids->v[i]))
			continue;
		if (idlist_add(out, kids->v[i], st.start_time) < 0)
			return -1;
	}
	return 0;
}

/* Without children files: one pass over /proc for (pid, ppid, start), then
 * the tree walked in it. */
static int descendants_by_scan(pid_t root, struct idlist *out)
{
	struct idlist all = { NULL, 0, 0 };
	struct pidlist parents = { NULL, 0, 0 };
	struct tq_proc_stat st;
	struct dirent *de;
	DIR *d;
	pid_t pid;
	int rc = 0;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if ((pid = dirent_pid(de)) > 0 && tq_proc_stat(pid, &st, NULL) == 0 &&
		    (idlist_add(&all, pid, st.start_time) < 0 ||
		     pidlist_add(&parents, st.ppid) < 0))
			rc = -1;
	closedir(d);
	/* out grows as we walk it: each entry's children are appended */
	for (size_t k = 0; rc == 0 && k <= out->n && out->n < TQ_PROC_TREE_MAX; k++) {
		pid_t p = k == 0 ? root : out->v[k - 1].pid;
		for (size_t i = 0; i < all.n && out->n < TQ_PROC_TREE_MAX; i++)
			if (parents.v[i] == p && !idlist_has(out, all.v[i].pid) &&
			    idlist_add(out, all.v[i].pid, all.v[i].start) < 0)
				rc = -1;
	}
	free(all.v);
	free(parents.v);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

static int descendants(pid_t root, struct idlist *out)
{
	struct pidlist kids = { NULL, 0, 0 };
	int rc = 0;

	if (!have_children_files())
		return descendants_by_scan(root, out);
	for (size_t k = 0; rc == 0 && k <= out->n && out->n < TQ_PROC_TREE_MAX; k++) {
		pid_t p = k == 0 ? root : out->v[k - 1].pid;
		if ((rc = children_of(p, &kids)) == 0)
			rc = add_children(out, p, &kids);
	}
	free(kids.v);
	return rc;
}

int tq_proc_descendants(pid_t root, struct tq_proc_id **ids, size_t *n,
	struct tq_err *err)
{
	struct idlist out = { NULL, 0, 0 };

	*ids = NULL;
	*n = 0;
	if (descendants(root, &out) < 0) {
		int rc = errno == ENOMEM ? tq_err_set(err, TQ_ENOMEM, "out of memory")
					 : tq_err_sys(err, "list the descendants of %ld",
						      (long)root);
		free(out.v);
		return rc;
	}
	*ids = out.v;
	*n = out.n;
	return 0;
}

/* The children of one process, with start times, into out (reset first). */
static int direct_children(pid_t parent, struct idlist *out)
{
	struct pidlist kids = { NULL, 0, 0 };
	struct tq_proc_stat st;
	struct dirent *de;
	DIR *d;
	pid_t pid;
	int rc = 0;

	out->n = 0;
	if (have_children_files()) {
		if ((rc = children_of(parent, &kids)) == 0)
			rc = add_children(out, parent, &kids);
		free(kids.v);
		return rc;
	}
	if ((d = opendir("/proc")) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if ((pid = dirent_pid(de)) > 0 && tq_proc_stat(pid, &st, NULL) == 0 &&
		    st.ppid == parent && idlist_add(out, pid, st.start_time) < 0) {
			errno = ENOMEM;
			rc = -1;
		}
	closedir(d);
	return rc;
}

/* Stop one process if it is still the one named; add it to held. */
static int hold(struct idlist *held, pid_t pid, int64_t start)
{
	if (idlist_has(held, pid) || tq_proc_signal(pid, start, SIGSTOP, NULL) < 0)
		return 0;
	return idlist_add(held, pid, start);
}

int tq_proc_kill_tree(const struct tq_proc_id *ids, size_t n, size_t *killed,
	struct tq_err *err)
{
	struct idlist held = { NULL, 0, 0 }, kids = { NULL, 0, 0 };
	size_t done = 0;
	int rc = 0;

	if (killed != NULL)
		*killed = 0;
	for (size_t i = 0; rc == 0 && i < n && held.n < TQ_PROC_TREE_MAX; i++)
		if (ids[i].pid > 1 && ids[i].pid != getpid())
			rc = hold(&held, ids[i].pid, ids[i].start);
	/* Stopped, a process forks no more: its children now are all it
	 * will have. Stop them in turn (held grows as we walk it). */
	for (size_t k = 0; rc == 0 && k < held.n && held.n < TQ_PROC_TREE_MAX; k++) {
		kids.n = 0;
		if (direct_children(held.v[k].pid, &kids) < 0) {
			rc = -1;
			break;
		}
		for (size_t i = 0; rc == 0 && i < kids.n && held.n < TQ_PROC_TREE_MAX; i++)
			rc = hold(&held, kids.v[i].pid, kids.v[i].start);
	}
	/* Kill what is held even when the walk failed part way. */
	for (size_t i = 0; i < held.n; i++)
		if (tq_proc_signal(held.v[i].pid, held.v[i].start, SIGKILL, NULL) == 0)
			done++;
	if (killed != NULL)
		*killed = done;
	if (rc < 0)
		rc = errno == ENOMEM ? tq_err_set(err, TQ_ENOMEM, "out of memory")
				     : tq_err_sys(err, "kill a process tree");
	free(held.v);
	free(kids.v);
	return rc;
}

/* ---- reaping and statuses -------------------------------------------- */

int tq_proc_reap(void (*cb)(pid_t pid, int status, void *arg), void *arg,
	struct tq_err *err)
{
	int n = 0, status;
	pid_t pid;

	while ((pid = tq_waitpid(-1, &status, WNOHANG)) > 0) {
		n++;
		if (cb != NULL)
			cb(pid, status, arg);
	}
	if (pid < 0 && errno != ECHILD)
		return tq_err_sys(err, "waitpid -1");
	return n;
}

int tq_proc_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

char *tq_proc_status_str(int status, char *buf, size_t n)
{
	if (WIFEXITED(status)) {
		snprintf(buf, n, "exit %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));
		snprintf(buf, n, "signal %d (SIG%s%s)", WTERMSIG(status),
			abbrev ? abbrev : "?",
			WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		snprintf(buf, n, "status 0x%x", (unsigned)status);
	}
	return buf;
}

/*
 * cgroup.c - a cgroup v2 group per worker, kept for its attempts (or, once
 * one would not empty, per task attempt; see cgroup.h).
 *
 * Everything goes through the cgroup2 file system: mkdir makes a group,
 * writing "0" to its cgroup.procs moves the writer in, "1" to cgroup.kill
 * kills all its members, cgroup.events says "populated 0" once none is left
 * (a zombie does not count), rmdir removes an empty group. No controller is
 * enabled anywhere, so no write here can fail for cgroup v2's rule about
 * processes in groups that have controllers for their children.
 *
 * Paths read back from a record (recovery) are checked before anything is
 * written through them: a taskq group's name, on a cgroup2 file system, and
 * never the cgroup we ourselves are in or one above it.
 *
 * Not here: deciding which attempt gets a group (contain.c), joining one
 * (the spawned child, spawn.c).
 */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>
#include <linux/magic.h>

#include "common/sys.h"
#include "proc.h"

/* Largest cgroup.procs we read at once, in bytes (a pid a line). */
#define PROCS_READ_MAX (256 * 1024)
/* Largest /proc/PID/cgroup or cgroup.events we read. */
#define SMALL_READ_MAX 4096
/* Rounds of the fallback kill before it gives up on new members. */
#define KILL_PROCS_ROUNDS 64
/* How long one wait on cgroup.events sleeps before looking again, in case a
 * change notification was missed. */
#define EVENTS_POLL_MS 100

/* ---- where our cgroup is -------------------------------------------- */

static void whyf(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A reason for people: truncation is fine (its start says what happened). */
static void whyf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

void tq_cgroup_unusable(struct tq_cgroup_base *b, const char *fmt, ...)
{
	va_list ap;

	b->usable = 0;
	va_start(ap, fmt);
	vsnprintf(b->why, sizeof(b->why), fmt, ap);
	va_end(ap);
}

/* Undo mountinfo's octal escapes (\040 for a space, ...) in place. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/*
 * The first cgroup2 mount in /proc/self/mountinfo: its root inside the
 * hierarchy and its mount point. 0, or -1 when there is none.
 */
static int cgroup2_mount(char *root, size_t rn, char *point, size_t pn)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *sep, *fields[5], *save = NULL;
	size_t cap = 0;
	int rc = -1;

	if (f == NULL)
		return -1;
	while (rc < 0 && getline(&line, &cap, f) > 0) {
		/* "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE ..." */
		if ((sep = strstr(line, " - ")) == NULL || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = '\0';
		fields[0] = strtok_r(line, " ", &save);
		for (int i = 1; i < 5 && fields[i - 1] != NULL; i++)
			fields[i] = strtok_r(NULL, " ", &save);
		if (fields[0] == NULL || fields[4] == NULL)
			continue;
		unescape(fields[3]);
		unescape(fields[4]);
		if (strlcpy(root, fields[3], rn) < rn && strlcpy(point, fields[4], pn) < pn)
			rc = 0;
	}
	free(line);
	fclose(f);
	return rc;
}

/* Our cgroup v2 path ("0::PATH" in /proc/self/cgroup). 0 or -1. */
static int own_cgroup(char *path, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = -1;

	if (f == NULL)
		return -1;
	while (rc < 0 && (len = getline(&line, &cap, f)) > 0) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		/* a group removed under us: nothing to build on */
		if (strstr(line, " (deleted)") == NULL && strlcpy(path, line + 3, n) < n)
			rc = 0;
	}
	free(line);
	fclose(f);
	return rc;
}

/*
 * Our cgroup as a directory: the mount point plus our path below the
 * mount's root. A cgroup outside what is mounted (another namespace's
 * view) has no directory here. 0 or -1.
 */
static int own_cgroup_dir(char *dir, size_t n, char *why, size_t wn)
{
	char root[PATH_MAX], point[PATH_MAX], cg[PATH_MAX];
	size_t rl;
	int r;

	if (cgroup2_mount(root, sizeof(root), point, sizeof(point)) < 0) {
		whyf(why, wn, "no cgroup v2 hierarchy is mounted");
		return -1;
	}
	if (own_cgroup(cg, sizeof(cg)) < 0) {
		whyf(why, wn, "this process is in no cgroup v2 group (/proc/self/cgroup)");
		return -1;
	}
	rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
	if (strncmp(cg, root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0')) {
		whyf(why, wn, "our cgroup %s is outside the cgroup2 mount at %s", cg, point);
		return -1;
	}
	r = snprintf(dir, n, "%s%s", point, strcmp(cg + rl, "/") == 0 ? "" : cg + rl);
	if (r < 0 || (size_t)r >= n || strchr(dir, '\n') != NULL) {
		whyf(why, wn, "the path of our cgroup is too long or odd");
		return -1;
	}
	return 0;
}

static int write_str(int dfd, const char *file, const char *s)
{
	int fd = tq_openat(dfd, file, O_WRONLY, 0), rc;

	if (fd < 0)
		return -1;
	rc = tq_write_all(fd, s, strlen(s));
	tq_close(fd);
	return rc;
}

int tq_cgroup_probe(struct tq_cgroup_base *b, const char *home)
{
	const char *v = getenv(TQ_CGROUP_VAR);
	char probe[96];
	struct stat st;
	int dfd = -1;

	memset(b, 0, sizeof(*b));
	b->fd = -1;
	if (v != NULL && strcmp(v, "0") == 0) {
		tq_cgroup_unusable(b, "%s=0", TQ_CGROUP_VAR);
		return 0;
	}
	if (stat(home, &st) < 0) {
		tq_cgroup_unusable(b, "stat %s: %s", home, strerror(errno));
		return 0;
	}
	snprintf(b->prefix, sizeof(b->prefix), TQ_CGROUP_PREFIX "%llu.%llu.",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	if (own_cgroup_dir(b->dir, sizeof(b->dir), b->why, sizeof(b->why)) < 0)
		return 0;
	if ((dfd = tq_open(b->dir, O_RDONLY | O_DIRECTORY, 0)) < 0 || fstat(dfd, &st) < 0) {
		tq_cgroup_unusable(b, "open %s: %s", b->dir, strerror(errno));
		goto out;
	}
	/* Delegated to us: ours, and writable (a systemd unit with
	 * Delegate=yes gets both; root owns and may write its own). */
	if (st.st_uid != geteuid()) {
		tq_cgroup_unusable(b, "our cgroup %s belongs to uid %u, not to us "
			 "(uid %u): not delegated", b->dir, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		goto out;
	}
	if (faccessat(dfd, ".", W_OK, AT_EACCESS) < 0 ||
	    faccessat(dfd, "cgroup.procs", W_OK, AT_EACCESS) < 0) {
		tq_cgroup_unusable(b, "our cgroup %s is not writable by us: %s",
			 b->dir, strerror(errno));
		goto out;
	}
	snprintf(probe, sizeof(probe), "%sprobe.%ld", b->prefix, (long)getpid());
	if (mkdirat(dfd, probe, 0755) < 0 && errno != EEXIST) {
		tq_cgroup_unusable(b, "mkdir in our cgroup %s: %s", b->dir,
			 strerror(errno));
		goto out;
	}
	unlinkat(dfd, probe, AT_REMOVEDIR);
	b->usable = 1;
	b->fd = dfd;
	dfd = -1;
out:
	tq_close(dfd);
	return b->usable;
}

void tq_cgroup_base_release(struct tq_cgroup_base *b)
{
	tq_close(b->fd);
	b->fd = -1;
	b->usable = 0;
}

/* ---- one attempt's group -------------------------------------------- */

int tq_cgroup_path(const struct tq_cgroup_base *b, int64_t task, int attempt,
		   char *buf, size_t n)
{
	int r = snprintf(buf, n, "%s/%s%lld.%d", b->dir, b->prefix, (long long)task, attempt);

	return r < 0 || (size_t)r >= n ? -1 : 0;
}

int tq_cgroup_worker_path(const struct tq_cgroup_base *b, pid_t pid, int64_t start,
			  char *buf, size_t n)
{
	int r = snprintf(buf, n, "%s/%sw%ld.%lld", b->dir, b->prefix, (long)pid,
			 (long long)start);

	return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* Make the group named cg->name (set) under b and open it. */
static int create(const struct tq_cgroup_base *b, struct tq_cgroup *cg, struct tq_err *err)
{
	char file[sizeof(cg->name) + 16];
	int rc;

	/* Everything relative to the base's descriptor: a few system calls an
	 * attempt, no path walked from the root. */
	if (mkdirat(b->fd, cg->name, 0755) < 0) {
		/* The same attempt number again (a database restored from a
		 * backup), or a worker's pid and start time again (after a
		 * reboot, were a group to survive one): what it holds is a
		 * leftover. */
		if (errno != EEXIST)
			return tq_err_sys(err, "mkdir %s", cg->path);
		if ((rc = tq_cgroup_destroy(cg->path, NULL, err)) < 0)
			return rc;
		if (mkdirat(b->fd, cg->name, 0755) < 0)
			return tq_err_sys(err, "mkdir %s", cg->path);
	}
	cg->basefd = b->fd;
	if ((cg->dir_fd = tq_openat(b->fd, cg->name, O_RDONLY | O_DIRECTORY, 0)) < 0) {
		rc = tq_err_sys(err, "open %s", cg->path);
		goto fail;
	}
	snprintf(file, sizeof(file), "%s/cgroup.events", cg->name);
	if ((cg->events_fd = tq_openat(b->fd, file, O_RDONLY, 0)) < 0) {
		rc = tq_err_sys(err, "open %s/cgroup.events", cg->path);
		goto fail;
	}
	return 0;
fail:
	tq_close(cg->dir_fd);
	unlinkat(b->fd, cg->name, AT_REMOVEDIR);
	*cg = (struct tq_cgroup)TQ_CGROUP_INIT;
	return rc;
}

int tq_cgroup_create(const struct tq_cgroup_base *b, int64_t task, int attempt,
		     struct tq_cgroup *cg, struct tq_err *err)
{
	*cg = (struct tq_cgroup)TQ_CGROUP_INIT;
	if (!b->usable || b->fd < 0)
		return tq_err_set(err, TQ_EINVAL, "no cgroup to use: %s", b->why);
	if (tq_cgroup_path(b, task, attempt, cg->path, sizeof(cg->path)) < 0 ||
	    (size_t)snprintf(cg->name, sizeof(cg->name), "%s%lld.%d", b->prefix,
			     (long long)task, attempt) >= sizeof(cg->name))
		return tq_err_set(err, TQ_EINVAL, "cgroup path too long under %s", b->dir);
	return create(b, cg, err);
}

int tq_cgroup_create_worker(const struct tq_cgroup_base *b, pid_t pid, int64_t start,
			    struct tq_cgroup *cg, struct tq_err *err)
{
	*cg = (struct tq_cgroup)TQ_CGROUP_INIT;
	if (!b->usable || b->fd < 0)
		return tq_err_set(err, TQ_EINVAL, "no cgroup to use: %s", b->why);
	if (tq_cgroup_worker_path(b, pid, start, cg->path, sizeof(cg->path)) < 0 ||
	    (size_t)snprintf(cg->name, sizeof(cg->name), "%sw%ld.%lld", b->prefix, (long)pid,
			     (long long)start) >= sizeof(cg->name))
		return tq_err_set(err, TQ_EINVAL, "cgroup path too long under %s", b->dir);
	return create(b, cg, err);
}

/* ---- checks on a path read back ------------------------------------- */

/*
 * Whether path may be killed and removed: absolute, no "." or ".."
 * component, a taskq group's name, on a cgroup2 file system, and neither
 * our own cgroup nor one above it.
 */
static int path_ok(const char *path)
{
	char own[PATH_MAX], why[64];
	const char *base = strrchr(path, '/');
	struct statfs sf;
	size_t n = strlen(path);

	if (path[0] != '/' || base == NULL || strstr(path, "/./") != NULL ||
	    strstr(path, "/../") != NULL ||
	    strncmp(base + 1, TQ_CGROUP_PREFIX, strlen(TQ_CGROUP_PREFIX)) != 0)
		return 0;
	if (statfs(path, &sf) == 0 && sf.f_type != CGROUP2_SUPER_MAGIC)
		return 0;
	if (own_cgroup_dir(own, sizeof(own), why, sizeof(why)) == 0 &&
	    strncmp(own, path, n) == 0 && (own[n] == '\0' || own[n] == '/'))
		return 0;
	return 1;
}

/* ---- killing and removing ------------------------------------------- */

/* 1 if the group's cgroup.events says populated, 0 if not, -1 on error.
 * One pread: the kernel makes the file whole for a read with room for it
 * (a second, to see its end, was a system call more at every look, two
 * of them after every task). */
static int populated(int events_fd)
{
	char buf[SMALL_READ_MAX];
	ssize_t n = tq_pread(events_fd, buf, sizeof(buf) - 1, 0);
	const char *p;

	if (n < 0)
		return -1;
	buf[n] = '\0';
	if ((p = strstr(buf, "populated ")) == NULL) {
		errno = EPROTO;
		return -1;
	}
	return p[10] == '1';
}

int tq_cgroup_kill(const char *path, struct tq_err *err)
{
	int dfd = tq_open(path, O_RDONLY | O_DIRECTORY, 0), efd = -1, rc = 0, pop;

	if (dfd < 0)
		return errno == ENOENT ? 0 : tq_err_sys(err, "open %s", path);
	if ((efd = tq_openat(dfd, "cgroup.events", O_RDONLY, 0)) < 0) {
		rc = tq_err_sys(err, "open %s/cgroup.events", path);
		goto out;
	}
	if ((pop = populated(efd)) <= 0) {
		if (pop < 0)
			rc = tq_err_sys(err, "read %s/cgroup.events", path);
		goto out;
	}
	if (write_str(dfd, "cgroup.kill", "1") == 0)
		goto out;
	if (errno != ENOENT) {
		rc = tq_err_sys(err, "write %s/cgroup.kill", path);
		goto out;
	}
	rc = tq_cgroup_kill_procs(path, NULL, err);
out:
	tq_close(efd);
	tq_close(dfd);
	return rc;
}

/* Whether /proc/PID/cgroup puts pid in the group whose v2 path is rel. */
static int member_of(pid_t pid, const char *rel)
{
	char path[64], buf[SMALL_READ_MAX], want[PATH_MAX + 8];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	if ((fd = tq_open(path, O_RDONLY, 0)) < 0)
		return 0;
	n = tq_read_full(fd, buf, sizeof(buf) - 1);
	tq_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the v2 line, "0::PATH", first or after the v1 lines */
	snprintf(want, sizeof(want), "\n0::%s\n", rel);
	return strncmp(buf, want + 1, strlen(want + 1)) == 0 || strstr(buf, want) != NULL;
}

/* The v2 path of the group at directory path, as /proc/PID/cgroup shows
 * it: the mount's root plus the part of path below the mount point. */
static int rel_path(const char *path, char *rel, size_t n)
{
	char root[PATH_MAX], point[PATH_MAX];
	size_t pl;
	int r;

	if (cgroup2_mount(root, sizeof(root), point, sizeof(point)) < 0)
		return -1;
	pl = strlen(point);
	if (strncmp(path, point, pl) != 0 || path[pl] != '/')
		return -1;
	r = snprintf(rel, n, "%s%s", strcmp(root, "/") == 0 ? "" : root, path + pl);
	return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* The pids the fallback has killed (it counts each once, and does not
 * signal again one that is still dying). */
struct killed_set {
	pid_t *v;
	size_t n, cap;
};

static int killed_has(const struct killed_set *k, pid_t pid)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i] == pid)
			return 1;
	return 0;
}

static int killed_add(struct killed_set *k, pid_t pid)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 32;
		pid_t *v = reallocarray(k->v, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = pid;
	return 0;
}

/* One pass of the fallback over the group at path (and its subgroups, to
 * depth): SIGKILL every member listed that is not in done yet. */
static int kill_listed(const char *path, int depth, struct killed_set *done)
{
	char file[PATH_MAX + 16], rel[PATH_MAX], *buf = NULL, *p, *end;
	struct dirent *de;
	ssize_t n;
	DIR *d;
	int fd, rc = 0;

	if (depth > TQ_CGROUP_DEPTH_MAX || rel_path(path, rel, sizeof(rel)) < 0)
		return 0;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	if ((fd = tq_open(file, O_RDONLY, 0)) < 0)
		return errno == ENOENT ? 0 : -1;
	if ((buf = malloc(PROCS_READ_MAX)) == NULL) {
		tq_close(fd);
		errno = ENOMEM;
		return -1;
	}
	n = tq_read_full(fd, buf, PROCS_READ_MAX - 1);
	tq_close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (p = buf; rc == 0 && *p; p = end + (*end != '\0')) {
		long pid = strtol(p, &end, 10);
		int pfd;

		if (end == p)
			break;
		if (pid <= 1 || killed_has(done, (pid_t)pid))
			continue;
		/* Checked after the pidfd exists: if pid is a member now, the
		 * pidfd is that process. */
		if ((pfd = pidfd_open((pid_t)pid, 0)) < 0)
			continue;
		if (member_of((pid_t)pid, rel) && pidfd_send_signal(pfd, SIGKILL, NULL, 0) == 0 &&
		    killed_add(done, (pid_t)pid) < 0) {
			errno = ENOMEM;
			rc = -1;
		}
		tq_close(pfd);
	}
	free(buf);
	if (rc < 0 || (d = opendir(path)) == NULL)
		return rc < 0 ? rc : errno == ENOENT ? 0 : -1;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(file, sizeof(file), "%s/%s", path, de->d_name) <
		    sizeof(file))
			rc = kill_listed(file, depth + 1, done);
	}
	closedir(d);
	return rc;
}

int tq_cgroup_kill_procs(const char *path, size_t *killed, struct tq_err *err)
{
	struct killed_set done = { NULL, 0, 0 };
	int dfd = tq_open(path, O_RDONLY | O_DIRECTORY, 0);
	size_t before;
	int rc = 0;

	if (killed != NULL)
		*killed = 0;
	if (dfd < 0)
		return errno == ENOENT ? 0 : tq_err_sys(err, "open %s", path);
	/* Frozen members fork no more while we read the list (Linux 5.2);
	 * SIGKILL still ends a frozen process. */
	write_str(dfd, "cgroup.freeze", "1");
	tq_close(dfd);
	/* Again while a pass finds members not yet killed (without a freezer,
	 * one may have forked before it died). The dying stay listed for a
	 * moment: they are not signalled again; the caller waits for them. */
	for (int round = 0; round < KILL_PROCS_ROUNDS; round++) {
		before = done.n;
		if (kill_listed(path, 0, &done) < 0) {
			rc = errno == ENOMEM ? tq_err_set(err, TQ_ENOMEM, "out of memory")
					     : tq_err_sys(err, "kill the members of %s", path);
			break;
		}
		if (done.n == before)
			break;
	}
	if (killed != NULL)
		*killed = done.n;
	free(done.v);
	return rc;
}

int tq_cgroup_kill_group(struct tq_cgroup *cg, struct tq_err *err)
{
	char file[sizeof(cg->name) + 16];
	int pop, fd;

	if (cg->events_fd < 0)
		return 0;
	if ((pop = populated(cg->events_fd)) <= 0)
		return pop < 0 ? tq_err_sys(err, "read %s/cgroup.events", cg->path) : 0;
	snprintf(file, sizeof(file), "%s/cgroup.kill", cg->name);
	cg->killed = 1;
	if ((fd = tq_openat(cg->basefd, file, O_WRONLY, 0)) >= 0) {
		pop = tq_write_all(fd, "1", 1);
		tq_close(fd);
		return pop < 0 ? tq_err_sys(err, "write %s/cgroup.kill", cg->path) : 0;
	}
	if (errno != ENOENT)
		return tq_err_sys(err, "open %s/cgroup.kill", cg->path);
	return tq_cgroup_kill_procs(cg->path, NULL, err);
}

/* Members listed in the group and its subgroups (for the count of what a
 * kill ended; a bound, not exact: the list can change as we read). */
static size_t count_members(const char *path, int depth)
{
	char file[PATH_MAX + 16], buf[8192];
	struct dirent *de;
	size_t count = 0;
	ssize_t n;
	DIR *d;
	int fd;

	if (depth > TQ_CGROUP_DEPTH_MAX)
		return 0;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	if ((fd = tq_open(file, O_RDONLY, 0)) >= 0) {
		while ((n = tq_read(fd, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < n; i++)
				count += buf[i] == '\n';
		tq_close(fd);
	}
	if ((d = opendir(path)) == NULL)
		return count;
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    (size_t)snprintf(file, sizeof(file), "%s/%s", path, de->d_name) <
			    sizeof(file))
			count += count_members(file, depth + 1);
	closedir(d);
	return count;
}

/* Wait until the group is empty or the deadline passes. 0, 1 (still
 * populated at the deadline) or -1 with errno. */
static int wait_empty(int events_fd, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = events_fd, .events = POLLPRI };
		int64_t left;
		int pop = populated(events_fd);

		if (pop <= 0)
			return pop;
		if ((left = deadline - tq_mono_ms()) <= 0)
			return 1;
		/* cgroup.events signals a change with POLLPRI; look again at
		 * least every EVENTS_POLL_MS anyway. */
		if (poll(&p, 1, left < EVENTS_POLL_MS ? (int)left : EVENTS_POLL_MS) < 0 &&
		    errno != EINTR)
			return -1;
	}
}

/* rmdir name in parent and every group below it, deepest first. */
static int remove_groups(int parent, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (depth > TQ_CGROUP_DEPTH_MAX) {
		errno = ELOOP;
		return -1;
	}
	fd = tq_openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if ((d = fdopendir(fd)) == NULL) {
		tq_close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    remove_groups(dirfd(d), de->d_name, depth + 1) < 0) {
			closedir(d);
			return -1;
		}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

int tq_cgroup_end(struct tq_cgroup *cg, size_t *killed, struct tq_err *err)
{
	int rc = 0, r = 0;

	if (killed != NULL)
		*killed = 0;
	if (cg->events_fd < 0)
		goto out;
	if ((r = populated(cg->events_fd)) > 0) {
		if (killed != NULL)
			*killed = count_members(cg->path, 0);
		if ((rc = tq_cgroup_kill_group(cg, err)) < 0)
			goto out;
		r = wait_empty(cg->events_fd, tq_mono_ms() + TQ_CGROUP_EMPTY_WAIT_MS);
	}
	if (r != 0) {
		rc = r > 0 ? tq_err_set(err, TQ_EBUSY, "%s: still has processes %d ms after "
					"cgroup.kill", cg->path, TQ_CGROUP_EMPTY_WAIT_MS)
			   : tq_err_sys(err, "read %s/cgroup.events", cg->path);
		goto out;
	}
	/* Empty: one rmdir, unless the task made groups of its own inside. */
	if (unlinkat(cg->basefd, cg->name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
	    remove_groups(cg->basefd, cg->name, 0) < 0)
		rc = tq_err_sys(err, "rmdir %s", cg->path);
out:
	tq_close(cg->dir_fd);
	tq_close(cg->events_fd);
	*cg = (struct tq_cgroup)TQ_CGROUP_INIT;
	return rc;
}

int tq_cgroup_empty(struct tq_cgroup *cg, size_t *killed, struct tq_err *err)
{
	int r, rc;

	if (killed != NULL)
		*killed = 0;
	if (cg->events_fd < 0)
		return 0;
	if ((r = populated(cg->events_fd)) > 0) {
		if (killed != NULL)
			*killed = count_members(cg->path, 0);
		if ((rc = tq_cgroup_kill_group(cg, err)) < 0)
			return rc;
		r = wait_empty(cg->events_fd, tq_mono_ms() + TQ_CGROUP_EMPTY_WAIT_MS);
	}
	if (r > 0)
		return tq_err_set(err, TQ_EBUSY, "%s: still has processes %d ms after "
				  "cgroup.kill", cg->path, TQ_CGROUP_EMPTY_WAIT_MS);
	if (r < 0)
		return tq_err_sys(err, "read %s/cgroup.events", cg->path);
	return 0;
}

int tq_cgroup_destroy(const char *path, size_t *killed, struct tq_err *err)
{
	char parent[PATH_MAX];
	const char *name;
	int dfd = -1, efd = -1, pfd = -1, rc = 0, r;

	if (killed != NULL)
		*killed = 0;
	if (!path_ok(path))
		return tq_err_set(err, TQ_EINVAL, "%s: not a task's cgroup; left alone", path);
	if ((dfd = tq_open(path, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return errno == ENOENT ? 0 : tq_err_sys(err, "open %s", path);
	if ((efd = tq_openat(dfd, "cgroup.events", O_RDONLY, 0)) < 0) {
		rc = tq_err_sys(err, "open %s/cgroup.events", path);
		goto out;
	}
	if ((r = populated(efd)) > 0) {
		if (killed != NULL)
			*killed = count_members(path, 0);
		if ((rc = tq_cgroup_kill(path, err)) < 0)
			goto out;
		r = wait_empty(efd, tq_mono_ms() + TQ_CGROUP_EMPTY_WAIT_MS);
	}
	if (r != 0) {
		rc = r > 0 ? tq_err_set(err, TQ_EBUSY, "%s: still has processes %d ms after "
					"cgroup.kill", path, TQ_CGROUP_EMPTY_WAIT_MS)
			   : tq_err_sys(err, "read %s/cgroup.events", path);
		goto out;
	}
	name = strrchr(path, '/') + 1;
	if ((size_t)(name - path) >= sizeof(parent)) {
		rc = tq_err_set(err, TQ_EINVAL, "%s: path too long", path);
		goto out;
	}
	memcpy(parent, path, (size_t)(name - path));
	parent[name - path] = '\0';
	if ((pfd = tq_open(parent, O_RDONLY | O_DIRECTORY, 0)) < 0 ||
	    remove_groups(pfd, name, 0) < 0)
		rc = tq_err_sys(err, "rmdir %s", path);
out:
	tq_close(pfd);
	tq_close(efd);
	tq_close(dfd);
	return rc;
}

/* "w<pid>.<start>" after our prefix, a worker's kept group: 0 with both
 * parsed, else -1. */
static int parse_worker_group(const char *rest, pid_t *pid, int64_t *start)
{
	char buf[64];
	const char *errstr = NULL;
	char *dot;

	if (rest[0] != 'w' || strlcpy(buf, rest + 1, sizeof(buf)) >= sizeof(buf) ||
	    (dot = strchr(buf, '.')) == NULL)
		return -1;
	*dot = '\0';
	*pid = (pid_t)strtonum(buf, 1, INT_MAX, &errstr);
	if (errstr != NULL)
		return -1;
	*start = strtonum(dot + 1, 0, INT64_MAX, &errstr);
	return errstr == NULL ? 0 : -1;
}

/* "<task>.<attempt>" after our prefix: 0 with both parsed, else -1. */
static int parse_group(const char *rest, int64_t *task, int *attempt)
{
	char buf[64];
	const char *errstr = NULL;
	char *dot;

	if (strlcpy(buf, rest, sizeof(buf)) >= sizeof(buf) || (dot = strchr(buf, '.')) == NULL)
		return -1;
	*dot = '\0';
	*task = strtonum(buf, 1, INT64_MAX, &errstr);
	if (errstr != NULL)
		return -1;
	*attempt = (int)strtonum(dot + 1, 1, INT_MAX, &errstr);
	return errstr == NULL ? 0 : -1;
}

int tq_cgroup_sweep(const struct tq_cgroup_base *b,
		    int (*live)(int64_t task, int attempt, void *arg),
		    int (*keep_worker)(pid_t pid, int64_t start, void *arg), void *arg,
		    size_t *removed, struct tq_err *err)
{
	char path[PATH_MAX];
	size_t plen = strlen(b->prefix);
	struct dirent *de;
	int64_t task, start;
	int attempt, rc = 0, r;
	pid_t pid;
	DIR *d;

	if (removed != NULL)
		*removed = 0;
	if (!b->usable)
		return 0;
	if ((d = opendir(b->dir)) == NULL)
		return tq_err_sys(err, "open %s", b->dir);
	/* The listing comes first and the question to live() after, so a
	 * group made by a claim that committed meanwhile is seen live. */
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || strncmp(de->d_name, b->prefix, plen) != 0)
			continue;
		/* a probe a crash interrupted (never has members) */
		if (strncmp(de->d_name + plen, "probe.", 6) == 0) {
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
			continue;
		}
		if (parse_worker_group(de->d_name + plen, &pid, &start) == 0) {
			if (keep_worker(pid, start, arg))
				continue;
		} else if (parse_group(de->d_name + plen, &task, &attempt) < 0 ||
			   live(task, attempt, arg)) {
			continue;
		}
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", b->dir, de->d_name) >=
		    sizeof(path))
			continue;
		if ((r = tq_cgroup_destroy(path, NULL, err)) < 0)
			rc = r;
		else if (removed != NULL)
			(*removed)++;
	}
	closedir(d);
	return rc;
}

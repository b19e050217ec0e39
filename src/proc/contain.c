/*
 * contain.c - an attempt's processes, by cgroup or by a record of its
 * process tree (see contain.h for the contract and the file format).
 *
 * Invariants: a record names a group before the group exists (so no group
 * of ours is without a record saying whose it is, unless its worker's file
 * was removed by hand), and a record is emptied only after the group is
 * gone or the tree killed. A record is written whole by one pwrite at the
 * start of the worker's file, then the file is cut to its length; the
 * sequence number in its head and in its end line makes a record cut by
 * its writer's death, or mixed with an older one's tail, show as such.
 *
 * Not here: the cgroup mechanics (cgroup.c), the tree walk and its kill
 * (proc.c), the database (the supervisor passes live()).
 */
#include "contain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

#include "common/sys.h"

#define MAGIC "taskq-procs 2 "
#define KIND_CGROUP "cgroup"
#define KIND_TREE "tree"
/* What the file holds between attempts. Never emptied: the file keeps its
 * block, so a record that fits in it is written even on a full disk (and
 * its end frees no room that another file would take meanwhile). */
#define IDLE MAGIC "idle\n"
/* The head and the end line of a record, at most. */
#define FRAME_MAX 128

int tq_contain_dir(const char *home, struct tq_err *err)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/" TQ_CONTAIN_DIR, home) >= sizeof(path))
		return tq_err_set(err, TQ_EINVAL, "%s/" TQ_CONTAIN_DIR ": path too long", home);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return tq_err_sys(err, "mkdir %s", path);
	if ((fd = tq_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return tq_err_sys(err, "open %s", path);
	return fd;
}

/* Mark the file idle: nothing running, nothing to recover. Whatever an
 * earlier record left after it is read past (record_read). */
static int set_idle(int fd)
{
	return tq_pwrite_all(fd, IDLE, strlen(IDLE), 0) < 0 ? -1 : 0;
}

int tq_contain_file_open(struct tq_contain_file *f, const char *home, struct tq_err *err)
{
	int64_t start = 0;
	int rc;

	*f = (struct tq_contain_file)TQ_CONTAIN_FILE_INIT;
	if ((f->dirfd = tq_contain_dir(home, err)) < 0) {
		rc = f->dirfd;
		f->dirfd = -1;
		return rc;
	}
	tq_proc_start_time(getpid(), &start, NULL);
	snprintf(f->name, sizeof(f->name), "w%ld.%lld", (long)getpid(), (long long)start);
	f->fd = tq_openat(f->dirfd, f->name, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	if (f->fd < 0 || set_idle(f->fd) < 0) {
		rc = tq_err_sys(err, "create %s/%s", TQ_CONTAIN_DIR, f->name);
		tq_contain_file_close(f);
		return rc;
	}
	return 0;
}

void tq_contain_file_close(struct tq_contain_file *f)
{
	/* The group first. One that would not empty stays, for the
	 * housekeeping, which removes a dead worker's group. */
	if (f->cg.dir_fd >= 0)
		tq_cgroup_end(&f->cg, NULL, NULL);
	f->cg_state = 0;
	if (f->fd >= 0)
		unlinkat(f->dirfd, f->name, 0);
	tq_close(f->fd);
	tq_close(f->dirfd);
	f->fd = f->dirfd = -1;
}

/* ---- writing a record --------------------------------------------------- */

/* The last sequence number written by this process, whose one record file
 * takes every attempt's records: numbers never repeat in a file, so what an
 * earlier attempt's record left after a later one's can never complete
 * the later one's cut short. */
static uint64_t last_seq;

/* Write body (the lines between head and end) as c's record, in place. */
static int record_write(struct tq_contain *c, const char *kind, const char *body, size_t len)
{
	char head[FRAME_MAX], end[FRAME_MAX];
	size_t hl, el, total;
	char *buf;
	int rc = -1;

	if (c->fd < 0)
		return 0;
	c->seq = ++last_seq;
	hl = (size_t)snprintf(head, sizeof(head), MAGIC "%lld %d %" PRIu64 " %s\n",
			      (long long)c->task, c->attempt, c->seq, kind);
	el = (size_t)snprintf(end, sizeof(end), "end %" PRIu64 "\n", c->seq);
	total = hl + len + el;
	if ((buf = malloc(total)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(buf, head, hl);
	memcpy(buf + hl, body, len);
	memcpy(buf + hl + len, end, el);
	/* One write, never a cut: a reader stops at the first end line, so
	 * what a longer record before left after this one is never read, and
	 * after a crash it sees this record, or the old one, or a mix that the
	 * sequence numbers refuse. (An ftruncate each time, twice an attempt,
	 * cost more than the write: 13 against 2.5 us of CPU here.) */
	if (tq_pwrite_all(c->fd, buf, total, 0) == 0) {
		c->filed = 1;
		rc = 0;
	}
	free(buf);
	return rc;
}

static int ids_cmp(const void *a, const void *b)
{
	const struct tq_proc_id *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Write the tree in ids (sorted by the caller) as c's record. */
static int write_tree(struct tq_contain *c, const struct tq_proc_id *ids, size_t n)
{
	size_t cap = n * 48 + 1, len = 0;
	char *body = malloc(cap);
	int rc;

	if (body == NULL) {
		errno = ENOMEM;
		return -1;
	}
	body[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(body + len, cap - len, "%ld %lld\n", (long)ids[i].pid,
					(long long)ids[i].start);
	rc = record_write(c, KIND_TREE, body, len);
	free(body);
	return rc;
}

/* Note a failed write: the first one is returned for the log. */
static int write_failed(struct tq_contain *c, struct tq_err *err, const char *what)
{
	int first = !c->failed;

	c->failed = 1;
	if (!first)
		return 0;
	return tq_err_sys(err, "%s/w%ld...: %s", TQ_CONTAIN_DIR, (long)getpid(), what);
}

/* ---- the worker's side -------------------------------------------------- */

/* The group of c's attempt: the worker's, or its own. */
static struct tq_cgroup *attempt_group(struct tq_contain *c)
{
	return c->kept ? &c->file->cg : &c->cg;
}

int tq_contain_begin(struct tq_contain *c, const struct tq_cgroup_base *b,
		     struct tq_contain_file *f, int64_t task, int attempt, struct tq_err *err)
{
	char path[PATH_MAX + 1];
	int64_t start = 0;
	int rc, r;

	*c = (struct tq_contain)TQ_CONTAIN_INIT;
	c->file = f;
	c->fd = f != NULL ? f->fd : -1;
	c->task = task;
	c->attempt = attempt;
	c->kind = TQ_CONTAIN_RECORD;
	if (!b->usable)
		return 0;
	/* The worker's group, made at its first attempt and kept; a group of
	 * the attempt's own once the worker's would not empty. */
	c->kept = f != NULL && f->cg_state >= 0;
	if (c->kept && f->cg_state == 0)
		tq_proc_start_time(getpid(), &start, NULL);
	r = !c->kept ? tq_cgroup_path(b, task, attempt, path, sizeof(path) - 1)
	    : f->cg_state == 1 ? (strlcpy(path, f->cg.path, sizeof(path) - 1) <
				  sizeof(path) - 1 ? 0 : -1)
	    : tq_cgroup_worker_path(b, getpid(), start, path, sizeof(path) - 1);
	if (r < 0)
		return tq_err_set(err, TQ_EINVAL, "cgroup path too long under %s "
				  "(a process-tree record instead)", b->dir);
	/* The record first: a group never exists without one naming it. */
	strlcat(path, "\n", sizeof(path));
	if (record_write(c, KIND_CGROUP, path, strlen(path)) < 0)
		return tq_err_sys(err, "write the record of task %lld (a process-tree "
				  "record instead of a cgroup)", (long long)task);
	rc = !c->kept ? tq_cgroup_create(b, task, attempt, &c->cg, err)
	     : f->cg_state == 1 ? 0
	     : tq_cgroup_create_worker(b, getpid(), start, &f->cg, err);
	if (rc < 0) {
		if (c->filed)
			set_idle(c->fd);
		c->filed = 0;
		return tq_err_prefix(err, "no cgroup for this attempt (a process-tree "
				     "record instead)");
	}
	if (c->kept)
		f->cg_state = 1;
	c->kind = TQ_CONTAIN_CGROUP;
	return 0;
}

int tq_contain_cgroup_fd(const struct tq_contain *c)
{
	if (c->kind != TQ_CONTAIN_CGROUP)
		return -1;
	return c->kept ? c->file->cg.dir_fd : c->cg.dir_fd;
}

int tq_contain_join_failed(struct tq_contain *c, struct tq_cgroup_base *b,
			   const struct tq_err *why)
{
	if (c->kind != TQ_CONTAIN_CGROUP)
		return 0;
	/* the worker's stays until it stops (tq_contain_file_close) */
	if (!c->kept)
		tq_cgroup_end(&c->cg, NULL, NULL);
	c->kind = TQ_CONTAIN_RECORD;
	tq_cgroup_unusable(b, "a task could not join its cgroup: %s", why->msg);
	return 0;
}

void tq_contain_spawned(struct tq_contain *c, pid_t pid, int64_t start, int64_t now)
{
	struct tq_proc_id first = { pid, start };

	if (c->kind != TQ_CONTAIN_RECORD)
		return;
	if (write_tree(c, &first, 1) < 0)
		c->failed = 1;
	if ((c->ids = malloc(sizeof(*c->ids))) != NULL) {
		c->ids[0] = first;
		c->nids = 1;
	}
	c->every = TQ_CONTAIN_SCAN_MIN_MS;
	c->next_scan = now + c->every;
}

int64_t tq_contain_deadline(const struct tq_contain *c)
{
	return c->kind == TQ_CONTAIN_RECORD ? c->next_scan : TQ_CONTAIN_NEVER;
}

int tq_contain_tick(struct tq_contain *c, int64_t now, struct tq_err *err)
{
	struct tq_proc_id *ids = NULL;
	size_t n = 0;
	int changed;

	if (c->kind != TQ_CONTAIN_RECORD || now < c->next_scan)
		return 0;
	if (tq_proc_descendants(getpid(), &ids, &n, NULL) < 0) {
		c->next_scan = now + c->every;
		return 0; /* a later look may do better; the old record stands */
	}
	if (n > 1)
		qsort(ids, n, sizeof(*ids), ids_cmp);
	changed = n != c->nids;
	for (size_t i = 0; !changed && i < n; i++)
		changed = ids[i].pid != c->ids[i].pid || ids[i].start != c->ids[i].start;
	/* Sooner while the tree changes, later while it does not. */
	c->every = changed ? TQ_CONTAIN_SCAN_MIN_MS
			   : (c->every * 2 < TQ_CONTAIN_SCAN_MAX_MS ? c->every * 2
								     : TQ_CONTAIN_SCAN_MAX_MS);
	c->next_scan = now + c->every;
	/* An empty tree (the main process reaped, between its exit and the
	 * sweep) keeps the last one written: it names what may be left. */
	if (!changed || n == 0) {
		free(ids);
		return 0;
	}
	if (write_tree(c, ids, n) < 0) {
		free(ids);
		return write_failed(c, err, "cannot write the process tree");
	}
	free(c->ids);
	c->ids = ids;
	c->nids = n;
	return 0;
}

int tq_contain_kill(struct tq_contain *c, struct tq_err *err)
{
	if (c->kind != TQ_CONTAIN_CGROUP)
		return 0;
	return tq_cgroup_kill_group(attempt_group(c), err);
}

int tq_contain_end(struct tq_contain *c, size_t *killed, struct tq_err *err)
{
	int rc = 0;

	if (killed != NULL)
		*killed = 0;
	if (c->kind == TQ_CONTAIN_NONE)
		return 0;
	if (c->kind == TQ_CONTAIN_CGROUP && c->kept) {
		/* Seen empty, the worker's group takes its next attempt; one
		 * that would not empty keeps this record, and the worker's
		 * later attempts get a group each. */
		rc = tq_cgroup_empty(&c->file->cg, killed, err);
		if (rc == TQ_EBUSY) {
			c->file->cg_state = -1;
		} else if (rc < 0 || c->file->cg.killed) {
			/* gone (removed by hand, or by a recovery that took
			 * this worker for dead), or killed in, which a group
			 * never takes a child after (cgroup.h): made anew for
			 * the next attempt */
			tq_cgroup_end(&c->file->cg, NULL, NULL);
			c->file->cg_state = 0;
		}
	} else if (c->kind == TQ_CONTAIN_CGROUP) {
		rc = tq_cgroup_end(&c->cg, killed, err);
	}
	/* A group that would not go keeps its record, for the housekeeping. */
	if (rc == 0 && c->filed && set_idle(c->fd) < 0)
		rc = tq_err_sys(err, "clear the process record of task %lld",
				(long long)c->task);
	free(c->ids);
	c->ids = NULL;
	c->nids = 0;
	c->kind = TQ_CONTAIN_NONE;
	c->next_scan = TQ_CONTAIN_NEVER;
	return rc;
}

/* ---- reading records back ----------------------------------------------- */

/* A record read back: what it names, or nothing (empty file). */
struct record {
	int64_t task;
	int attempt;
	enum tq_contain_kind kind;
	char *body;                  /* the lines between head and end, in buf */
	char *buf;                   /* the file, NUL-terminated, malloc'd */
};

/*
 * Read the file name in dirfd into r. 0 with r->kind set (NONE: empty, an
 * idle worker's); TQ_ENOTFOUND when the file is gone; TQ_ECORRUPT when it
 * is not a whole record.
 */
static int record_read(int dirfd, const char *name, struct record *r, struct tq_err *err)
{
	char kind[16], *end;
	struct stat st;
	uint64_t seq = 0, eseq = 0;
	long long task = 0;
	ssize_t n;
	int fd = tq_openat(dirfd, name, O_RDONLY | O_NOFOLLOW, 0), used = 0, rc = 0;

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return errno == ENOENT ? TQ_ENOTFOUND
				       : tq_err_sys(err, "open %s/%s", TQ_CONTAIN_DIR, name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TQ_CONTAIN_RECORD_MAX) {
		rc = tq_err_set(err, TQ_ECORRUPT, "%s/%s: not a record", TQ_CONTAIN_DIR, name);
		goto out;
	}
	if ((r->buf = malloc((size_t)st.st_size + 1)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	if ((n = tq_read_full(fd, r->buf, (size_t)st.st_size)) < 0) {
		rc = tq_err_sys(err, "read %s/%s", TQ_CONTAIN_DIR, name);
		goto out;
	}
	r->buf[n] = '\0';
	if (n == 0 || strncmp(r->buf, IDLE, strlen(IDLE)) == 0)
		goto out; /* idle (empty: made, not yet marked); a record's tail after */
	/* "taskq-procs 2 TASK ATTEMPT SEQ KIND\n" ... "end SEQ\n" */
	if (sscanf(r->buf, MAGIC "%lld %d %" SCNu64 " %15s%n", &task, &r->attempt, &seq, kind,
		   &used) != 4 || r->buf[used] != '\n' || task < 1 || r->attempt < 1 ||
	    (strcmp(kind, KIND_CGROUP) != 0 && strcmp(kind, KIND_TREE) != 0)) {
		rc = tq_err_set(err, TQ_ECORRUPT, "%s/%s: not a record", TQ_CONTAIN_DIR, name);
		goto out;
	}
	r->task = task;
	r->body = r->buf + used + 1;
	/* The end line: the first line that starts with "end ". */
	for (end = r->body; *end && strncmp(end, "end ", 4) != 0;
	     end = strchr(end, '\n') ? strchr(end, '\n') + 1 : end + strlen(end))
		;
	if (*end == '\0' || sscanf(end, "end %" SCNu64, &eseq) != 1 || eseq != seq) {
		rc = tq_err_set(err, TQ_ECORRUPT, "%s/%s: a record cut short (its writer died "
				"while writing it)", TQ_CONTAIN_DIR, name);
		goto out;
	}
	*end = '\0';
	r->kind = strcmp(kind, KIND_CGROUP) == 0 ? TQ_CONTAIN_CGROUP : TQ_CONTAIN_RECORD;
out:
	tq_close(fd);
	if (rc < 0) {
		free(r->buf);
		r->buf = NULL;
		r->kind = TQ_CONTAIN_NONE;
	}
	return rc;
}

/* The pids of a tree record's body ("<pid> <start>\n"...). */
static int parse_tree(char *body, struct tq_proc_id **ids, size_t *n)
{
	char *line, *save = NULL, *sp;
	const char *e1 = NULL, *e2 = NULL;
	size_t cap = 0;

	*ids = NULL;
	*n = 0;
	for (line = strtok_r(body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct tq_proc_id id;
		if ((sp = strchr(line, ' ')) == NULL)
			return -1;
		*sp = '\0';
		id.pid = (pid_t)strtonum(line, 2, INT_MAX, &e1);
		id.start = strtonum(sp + 1, 0, INT64_MAX, &e2);
		if (e1 != NULL || e2 != NULL || *n >= TQ_PROC_TREE_MAX)
			return -1;
		if (*n == cap) {
			struct tq_proc_id *v = reallocarray(*ids, cap ? cap * 2 : 16, sizeof(*v));
			if (v == NULL)
				return -1;
			*ids = v;
			cap = cap ? cap * 2 : 16;
		}
		(*ids)[(*n)++] = id;
	}
	return 0;
}

/* Kill what a record names. */
static int kill_recorded(struct record *r, const char *name, size_t *killed,
			 struct tq_err *err)
{
	struct tq_proc_id *ids = NULL;
	size_t n = 0;
	int rc;

	if (r->kind == TQ_CONTAIN_CGROUP) {
		r->body[strcspn(r->body, "\n")] = '\0';
		return tq_cgroup_destroy(r->body, killed, err);
	}
	if (parse_tree(r->body, &ids, &n) < 0) {
		free(ids);
		return tq_err_set(err, TQ_ECORRUPT, "%s/%s: not a record", TQ_CONTAIN_DIR, name);
	}
	rc = tq_proc_kill_tree(ids, n, killed, err);
	free(ids);
	return rc;
}

/* "w<pid>.<start>": the worker whose file it is. 0, or -1 for any other name. */
static int file_owner(const char *name, pid_t *pid, int64_t *start)
{
	char buf[48];
	const char *errstr = NULL;
	char *dot;

	if (name[0] != 'w' || strlcpy(buf, name + 1, sizeof(buf)) >= sizeof(buf) ||
	    (dot = strchr(buf, '.')) == NULL)
		return -1;
	*dot = '\0';
	*pid = (pid_t)strtonum(buf, 1, INT_MAX, &errstr);
	if (errstr != NULL)
		return -1;
	*start = strtonum(dot + 1, 0, INT64_MAX, &errstr);
	return errstr == NULL ? 0 : -1;
}

/* Whether the worker that owns the file name still runs. */
static int owner_alive(const char *name)
{
	int64_t start;
	pid_t pid;

	return file_owner(name, &pid, &start) == 0 && tq_proc_same(pid, start);
}

/*
 * Kill what the record in name holds, then remove what is done with: the
 * group (tq_cgroup_destroy did), the file if its worker is dead, else its
 * record (the live worker, late, writes the next). A group that would not
 * empty keeps its record, for the next try.
 */
static int recover_record(int dirfd, const char *name, struct record *r, size_t *killed,
			  struct tq_err *err)
{
	int rc = kill_recorded(r, name, killed, err), fd;

	/* A path that is no task's group names nothing we could ever kill. */
	if (rc < 0 && rc != TQ_ECORRUPT && rc != TQ_EINVAL)
		return rc;
	if (!owner_alive(name)) {
		unlinkat(dirfd, name, 0);
	} else if ((fd = tq_openat(dirfd, name, O_WRONLY | O_NOFOLLOW, 0)) >= 0) {
		set_idle(fd);
		tq_close(fd);
	}
	return rc;
}

int tq_contain_recover(int dirfd, int64_t task, int attempt,
		       enum tq_contain_kind *kind, size_t *killed, struct tq_err *err)
{
	struct record r;
	struct dirent *de;
	DIR *d;
	int fd, rc = TQ_ENOTFOUND;

	if (kind != NULL)
		*kind = TQ_CONTAIN_NONE;
	if (killed != NULL)
		*killed = 0;
	if (dirfd < 0)
		return TQ_ENOTFOUND;
	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3)) < 0 || (d = fdopendir(fd)) == NULL) {
		tq_close(fd);
		return tq_err_sys(err, "open %s", TQ_CONTAIN_DIR);
	}
	rewinddir(d);
	while (rc == TQ_ENOTFOUND && (de = readdir(d)) != NULL) {
		if (de->d_name[0] != 'w' || record_read(dirfd, de->d_name, &r, NULL) < 0)
			continue;
		if (r.kind != TQ_CONTAIN_NONE && r.task == task && r.attempt == attempt) {
			if (kind != NULL)
				*kind = r.kind;
			rc = recover_record(dirfd, de->d_name, &r, killed, err);
		}
		free(r.buf);
	}
	closedir(d);
	return rc;
}

/* What the sweep of groups asks, through tq_cgroup_sweep. */
struct sweep_ctx {
	int (*live)(int64_t task, int attempt, void *arg);
	void *arg;
	int dirfd;
};

static int ctx_live(int64_t task, int attempt, void *p)
{
	struct sweep_ctx *x = p;

	return x->live(task, attempt, x->arg);
}

/* A worker's group is kept while the worker runs, and after its death
 * while its record file is there: the files were swept first, so a dead
 * worker's file left names an attempt that still runs, whose recovery
 * ends the group. */
static int ctx_keep_worker(pid_t pid, int64_t start, void *p)
{
	struct sweep_ctx *x = p;
	char name[48];

	if (tq_proc_same(pid, start))
		return 1;
	snprintf(name, sizeof(name), "w%ld.%lld", (long)pid, (long long)start);
	return x->dirfd >= 0 && faccessat(x->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int tq_contain_sweep(int dirfd, const struct tq_cgroup_base *b,
		     int (*live)(int64_t task, int attempt, void *arg), void *arg,
		     size_t *n, size_t *killed, struct tq_err *err)
{
	struct sweep_ctx ctx = { live, arg, dirfd };
	struct dirent *de;
	struct record r;
	size_t done = 0, dead = 0, k = 0;
	int rc = 0, r2, fd;
	DIR *d;

	if (n != NULL)
		*n = 0;
	if (killed != NULL)
		*killed = 0;
	if (dirfd >= 0 && (fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3)) >= 0) {
		if ((d = fdopendir(fd)) == NULL) {
			tq_close(fd);
			return tq_err_sys(err, "open %s", TQ_CONTAIN_DIR);
		}
		rewinddir(d);
		/* A live worker's file is its own business. Of a dead one's,
		 * the record is read first and live() asked after: an attempt
		 * whose claim committed meanwhile is seen running. */
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] != 'w' || owner_alive(de->d_name))
				continue;
			r2 = record_read(dirfd, de->d_name, &r, NULL);
			if (r2 == TQ_ENOTFOUND)
				continue;
			if (r2 < 0 || r.kind == TQ_CONTAIN_NONE) {
				unlinkat(dirfd, de->d_name, 0);
			} else if (!live(r.task, r.attempt, arg)) {
				if ((r2 = recover_record(dirfd, de->d_name, &r, &k, err)) < 0)
					rc = r2;
				done++;
				dead += k;
			}
			free(r.buf);
		}
		closedir(d);
	}
	if (b != NULL && (r2 = tq_cgroup_sweep(b, ctx_live, ctx_keep_worker, &ctx, &k, err)) < 0)
		rc = r2;
	else if (b != NULL)
		done += k;
	if (n != NULL)
		*n = done;
	if (killed != NULL)
		*killed = dead;
	return rc;
}

void tq_contain_describe(const struct tq_cgroup_base *b, char *buf, size_t n)
{
	if (b->usable)
		snprintf(buf, n, "cgroup v2 (%s)", b->dir);
	else
		snprintf(buf, n, "process-tree record (%s)", b->why);
}

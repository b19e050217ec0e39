/*
 * diag.c - diagnostic lines, the serve.log they go to (rotated by size,
 * followed across rotations), and repeats folded into a count. See diag.h
 * for the design.
 *
 * Per process, one static state: the supervisor and each worker is one
 * single-threaded process with one stderr. Nothing here prints anything but
 * log lines, exits or blocks on another process: a line is one write(2) to
 * a regular file opened O_APPEND.
 *
 * Invariants: fds 1 and 2 are only ever replaced by dup2 of a regular file
 * of ours (O_NOFOLLOW, owned by the effective uid), so a failed reopen
 * keeps the file they had; log files are renamed and removed only under
 * the state directory's flock, and only after checking, under it, that
 * serve.log is still the file found over its bound; a missing serve.log is
 * created only by the supervisor (or by a rotation, under the lock), never
 * on a worker's whim.
 */
#define LIBBSD_NETBSD_VIS /* the NetBSD vis API; silences libbsd's #warning */
#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>
#include <bsd/vis.h>

#include "sys.h"

#define LINE_MAX_BYTES (TQ_ERR_MAX + 512)  /* one log line, at most */
#define MSG_MAX_BYTES (TQ_ERR_MAX + 256)   /* its message */
#define KEY_MAX_BYTES 256      /* what folding compares of a message */
#define WHO_MAX_BYTES 64
#define ROTATE_RETRY_MS 60000  /* after a failed rotation, try again then */

enum log_mode {
	LOG_NONE,   /* stderr is not serve.log (a terminal, a foreground log) */
	LOG_FOLLOW, /* a worker: reopen serve.log when it is another file,
		     * rotate it when over */
	LOG_OWN,    /* the supervisor: that, and create it when missing */
};

struct fold {
	int used;
	int loose;
	char who[WHO_MAX_BYTES];
	char key[KEY_MAX_BYTES];  /* the message, digit runs as '#' when loose */
	char last[MSG_MAX_BYTES]; /* the last repeat, for the count's line */
	int64_t since;            /* mono ms: this window's start */
	unsigned long long count; /* repeats in this window, not printed */
};

static struct {
	int fold;
	struct fold f[TQ_DIAG_FOLD_SLOTS];
	enum log_mode mode;
	char home[PATH_MAX];      /* the state directory: rotation's lock */
	char path[PATH_MAX];
	int stdout_too;           /* fd 1 is the log as well */
	int64_t size;
	int files;
	int64_t rotate_after;     /* mono ms; 0: any time */
} D = { .size = TQ_DIAG_LOG_SIZE, .files = TQ_DIAG_LOG_FILES };

/* ------------------------------------------------------------------ */
/* The log file                                                       */

/* path, or path.k for k > 0. */
static int log_name(int k, char *buf, size_t n)
{
	int r = k > 0 ? snprintf(buf, n, "%s.%d", D.path, k) : snprintf(buf, n, "%s", D.path);

	return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* Open the log path (creating it when create) on fds 2 (and 1). -1 with
 * errno when it cannot be opened or is not a regular file of ours (EPERM):
 * the fds keep what they had. Whatever someone put at the path, opening it
 * neither waits nor follows it: O_NONBLOCK (a FIFO with no reader would
 * hold the open, and the process, for ever; one with a reader opens and
 * is refused), O_NOFOLLOW, O_NOCTTY. */
static int reopen(int create)
{
	struct stat sb;
	int fd;

	fd = tq_open(D.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		     (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
		tq_close(fd);
		errno = EPERM;
		return -1;
	}
	/* O_NONBLOCK means nothing to a regular file; dropped all the same,
	 * since the fds it lands on are the stdio the workers inherit */
	if (fcntl(fd, F_SETFL, O_APPEND) < 0) {
		tq_close(fd);
		return -1;
	}
	/* stdio, so not close-on-exec: workers inherit it as their stderr
	 * (a task never does: its spawn sets fds 0-2). */
	if (dup2(fd, 2) < 0 || (D.stdout_too && dup2(fd, 1) < 0)) {
		tq_close(fd);
		return -1;
	}
	tq_close(fd);
	return 0;
}

static void put_line(const char *who, const char *msg, const char *suffix);

/*
 * serve.log -> serve.log.1 -> ... -> serve.log.FILES (the oldest is
 * replaced; files past FILES, from a larger setting before, removed), then
 * a new serve.log on fds 2 (and 1), when fd 2 is still serve.log and len
 * more bytes would take it past the size. Any process writing the log may
 * find it so, at the same moment: the rotation holds an exclusive flock on
 * the state directory, never waited for (one that does not get it leaves
 * the rotation to the process that has it). Not on the log file: a
 * supervisor and the workers it started share that open file description,
 * and so its lock. A process writing to a file being renamed writes on into
 * it under its new name: nothing is lost. On failure the log goes on as it
 * is, and this process tries again after ROTATE_RETRY_MS.
 */
static void rotate(size_t len)
{
	char from[PATH_MAX + 8], to[PATH_MAX + 8];
	const char *what = "rename";
	struct stat fsb, psb;
	int dfd, k;

	if ((dfd = tq_open(D.home, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return;
	if (flock(dfd, LOCK_EX | LOCK_NB) < 0)
		goto out; /* another process rotates it */
	/* under the lock: is it still the file to rotate? */
	if (fstat(2, &fsb) < 0 || lstat(D.path, &psb) < 0 || psb.st_dev != fsb.st_dev ||
	    psb.st_ino != fsb.st_ino || fsb.st_size == 0 || fsb.st_size + (off_t)len <= D.size)
		goto out;
	for (k = TQ_DIAG_LOG_FILES_MAX; k > D.files; k--)
		if (log_name(k, to, sizeof(to)) == 0)
			unlink(to);
	for (k = D.files; k >= 1; k--) {
		if (log_name(k - 1, from, sizeof(from)) < 0 || log_name(k, to, sizeof(to)) < 0)
			goto fail;
		if (rename(from, to) < 0 && (errno != ENOENT || k == 1))
			goto fail;
	}
	what = "open";
	snprintf(from, sizeof(from), "%s", D.path);
	if (reopen(1) < 0)
		goto fail;
	D.rotate_after = 0;
	goto out;
fail:
	/* set first: the line below must not try again */
	D.rotate_after = tq_mono_ms() + ROTATE_RETRY_MS;
	{
		char msg[MSG_MAX_BYTES], who[WHO_MAX_BYTES];
		int e = errno, n;

		snprintf(who, sizeof(who), "taskq (pid %d)", (int)getpid());
		n = snprintf(msg, sizeof(msg), "cannot rotate the log: %s %s: %s; trying again "
			     "in %d s", what, from, strerror(e), ROTATE_RETRY_MS / 1000);
		if (n < 0 || (size_t)n >= sizeof(msg))
			memcpy(msg + sizeof(msg) - 4, "...", 4);
		tq_close(dfd); /* unlocks */
		dfd = -1;
		put_line(who, msg, "");
	}
out:
	tq_close(dfd);
}

/*
 * serve.log is missing and fd 2 is serve.log.1: a rotation stopped between
 * its rename and its create (its process was killed there). With no
 * supervisor to create the file at its next tick, every writer would write
 * on into serve.log.1 for ever (a rotation needs serve.log to be fd 2's
 * file), so whichever process finds it so finishes that rotation, under
 * the rotation's lock (a rotation under way is left to its process). Not
 * when fd 2 is any other file: a follower whose state directory was
 * removed and made again must not create the new one's log.
 */
static void finish_rotation(const struct stat *fsb)
{
	char one[PATH_MAX + 8];
	struct stat sb;
	int dfd;

	if (log_name(1, one, sizeof(one)) < 0 || lstat(one, &sb) < 0 ||
	    sb.st_dev != fsb->st_dev || sb.st_ino != fsb->st_ino)
		return;
	if ((dfd = tq_open(D.home, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return;
	if (flock(dfd, LOCK_EX | LOCK_NB) == 0 && lstat(D.path, &sb) < 0 && errno == ENOENT)
		reopen(1);
	tq_close(dfd); /* unlocks */
}

/* Before writing len bytes: make fd 2 the current log file (another
 * process rotated it, or someone moved it), and, owning it, rotate it when
 * the line would take it past its size. */
static void log_check(size_t len)
{
	struct stat fsb, psb;

	if (D.mode == LOG_NONE || fstat(2, &fsb) < 0)
		return;
	if (lstat(D.path, &psb) < 0) {
		/* gone (or a rotation under way, for a follower: its line
		 * goes to the file it has, under its new name) */
		if (errno == ENOENT && D.mode == LOG_OWN) {
			if (reopen(1) == 0)
				fstat(2, &fsb);
		} else if (errno == ENOENT) {
			finish_rotation(&fsb);
			fstat(2, &fsb);
		}
	} else if (psb.st_dev != fsb.st_dev || psb.st_ino != fsb.st_ino) {
		if (reopen(D.mode == LOG_OWN) == 0)
			fstat(2, &fsb);
	}
	if (fsb.st_size == 0 || fsb.st_size + (off_t)len <= D.size)
		return;
	/* Over the bound in a file no directory holds any more (serve.log
	 * removed and the path now something we must not open: a directory, a
	 * FIFO, a symlink; or removed while no supervisor runs to make it
	 * again): no rotation can reach it and nobody can read it, but it
	 * still fills the disk. Emptied: what it held was already lost. */
	if (fsb.st_nlink == 0) {
		int rc = ftruncate(2, 0); /* a failure leaves only this to do */

		(void)rc;
		return;
	}
	if (D.rotate_after == 0 || tq_mono_ms() >= D.rotate_after)
		rotate(len);
}

/* D.home and D.path for home: 0, or -1 when too long (with room for
 * ".N" after the path). */
static int log_paths(const char *home)
{
	int r = snprintf(D.path, sizeof(D.path), "%s/%s", home, TQ_DIAG_LOG);

	if (r < 0 || (size_t)r + 3 >= sizeof(D.path) ||
	    strlcpy(D.home, home, sizeof(D.home)) >= sizeof(D.home))
		return -1;
	return 0;
}

/* What is at path, for a message: "a FIFO", "a directory", ... */
static const char *what_is(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return "gone";
	switch (sb.st_mode & S_IFMT) {
	case S_IFREG: return sb.st_uid == geteuid() ? "a regular file" : "another user's file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFLNK: return "a symbolic link";
	case S_IFSOCK: return "a socket";
	default: return "a device";
	}
}

int tq_diag_log_open(const char *home, int64_t size, int files, struct tq_err *err)
{
	if (log_paths(home) < 0) {
		D.path[0] = '\0';
		return tq_err_set(err, TQ_EINVAL, "%s/%s: path too long", home, TQ_DIAG_LOG);
	}
	D.stdout_too = 1;
	if (reopen(1) < 0) {
		int rc = errno == EPERM || errno == ENXIO || errno == ELOOP || errno == EISDIR ?
			 tq_err_set(err, TQ_EEXIST, "%s is not a regular file of ours (%s): "
				    "remove it", D.path, what_is(D.path)) :
			 tq_err_sys(err, "open %s", D.path);

		D.path[0] = '\0';
		return rc;
	}
	D.mode = LOG_OWN;
	tq_diag_log_limits(size, files);
	return 0;
}

void tq_diag_log_limits(int64_t size, int files)
{
	if (size >= TQ_DIAG_LOG_SIZE_MIN && size <= TQ_DIAG_LOG_SIZE_MAX)
		D.size = size;
	if (files >= 1 && files <= TQ_DIAG_LOG_FILES_MAX)
		D.files = files;
}

int tq_diag_log_active(int64_t *size, int *files)
{
	if (D.mode == LOG_NONE)
		return 0;
	*size = D.size;
	*files = D.files;
	return 1;
}

int tq_diag_log_follow(const char *home, int64_t size, int files)
{
	struct stat err2, out1, sb;
	char name[PATH_MAX + 8];

	if (log_paths(home) < 0 || fstat(2, &err2) < 0 || !S_ISREG(err2.st_mode))
		goto no;
	for (int k = 0; k <= TQ_DIAG_LOG_FILES_MAX; k++) {
		if (log_name(k, name, sizeof(name)) < 0 || lstat(name, &sb) < 0)
			continue;
		if (sb.st_dev == err2.st_dev && sb.st_ino == err2.st_ino) {
			D.stdout_too = fstat(1, &out1) == 0 && out1.st_dev == err2.st_dev &&
				       out1.st_ino == err2.st_ino;
			D.mode = LOG_FOLLOW;
			tq_diag_log_limits(size, files);
			return 1;
		}
	}
no:
	D.path[0] = '\0';
	return 0;
}

/* ------------------------------------------------------------------ */
/* Lines                                                              */

/* "WHEN WHO: MSGSUFFIX\n" in one write(2). */
static void put_line(const char *who, const char *msg, const char *suffix)
{
	char line[LINE_MAX_BYTES], when[32];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	if (localtime_r(&now, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, sizeof(when), "-");
	n = snprintf(line, sizeof(line), "%s %s: %s%s\n", when, who, msg, suffix);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		/* cut, and say so */
		n = (int)sizeof(line) - 1;
		memcpy(line + n - 4, "...\n", 4);
	}
	log_check((size_t)n);
	(void)tq_write_all(2, line, (size_t)n);
}

/* The message as folding compares it: loose, each run of digits is '#'. */
static void fold_key(const char *msg, int loose, char *key, size_t n)
{
	size_t k = 0;

	for (const char *p = msg; *p != '\0' && k + 1 < n; p++) {
		if (loose && *p >= '0' && *p <= '9') {
			if (k == 0 || key[k - 1] != '#')
				key[k++] = '#';
			continue;
		}
		key[k++] = *p;
	}
	key[k] = '\0';
}

/* The count of f's window, if it has one; the window starts again. */
static void fold_say(struct fold *f, int64_t now)
{
	char suffix[96];
	long long secs = (now - f->since + 500) / 1000;

	if (f->count == 0)
		return;
	snprintf(suffix, sizeof(suffix), " (repeated %llu time%s in the last %lld s)",
		 f->count, f->count == 1 ? "" : "s", secs > 0 ? secs : 1);
	put_line(f->who, f->last, suffix);
	f->since = now;
	f->count = 0;
}

/*
 * A message as one line: its control characters (a newline or a tab in a
 * state directory's path, an escape in a client's bytes) written as vis(3)
 * C-style escapes, so that one message is one line of serve.log and no
 * name can forge another line or drive a terminal that shows the log.
 * Other bytes, UTF-8 or not, stay as they are. Cut at n - 1 bytes.
 */
static void one_line(const char *in, char *out, size_t n)
{
	char esc[5];
	size_t k = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p != '\0'; p++) {
		size_t len = 1;
		const char *put = (const char *)p;
		if (*p < 0x20 || *p == 0x7f) {
			vis(esc, *p, VIS_CSTYLE | VIS_OCTAL | VIS_TAB | VIS_NL, p[1]);
			put = esc;
			len = strlen(esc);
		}
		if (k + len >= n)
			break;
		memcpy(out + k, put, len);
		k += len;
	}
	out[k] = '\0';
}

static void say(const char *who, int loose, const char *fmt, va_list ap)
{
	char raw[MSG_MAX_BYTES], msg[MSG_MAX_BYTES], key[KEY_MAX_BYTES];
	struct fold *f = NULL, *oldest = NULL;
	int64_t now;

	vsnprintf(raw, sizeof(raw), fmt, ap);
	one_line(raw, msg, sizeof(msg));
	if (!D.fold) {
		put_line(who, msg, "");
		return;
	}
	now = tq_mono_ms();
	fold_key(msg, loose, key, sizeof(key));
	for (int i = 0; i < TQ_DIAG_FOLD_SLOTS && f == NULL; i++) {
		struct fold *g = &D.f[i];

		if (g->used && g->loose == loose && strcmp(g->key, key) == 0 &&
		    strcmp(g->who, who) == 0)
			f = g;
		else if (oldest == NULL || (oldest->used && (!g->used || g->since < oldest->since)))
			oldest = g; /* the first free slot, else the oldest */
	}
	if (f != NULL && (now - f->since < TQ_DIAG_FOLD_MS || f->count > 0)) {
		/* a repeat: counted (a window that ended says its count
		 * first, and this one opens the next) */
		if (now - f->since >= TQ_DIAG_FOLD_MS)
			fold_say(f, now);
		f->count++;
		snprintf(f->last, sizeof(f->last), "%s", msg);
		return;
	}
	if (f == NULL) {
		/* a new line: in a free slot, or in the oldest one's, whose
		 * count is said first */
		f = oldest;
		if (f->used)
			fold_say(f, now);
		f->used = 1;
		f->loose = loose;
		snprintf(f->who, sizeof(f->who), "%s", who);
		snprintf(f->key, sizeof(f->key), "%s", key);
	}
	f->since = now;
	f->count = 0;
	put_line(who, msg, "");
}

void tq_diag(const char *who, const char *fmt, va_list ap)
{
	say(who, 0, fmt, ap);
}

void tq_diag_loose(const char *who, const char *fmt, va_list ap)
{
	say(who, 1, fmt, ap);
}

void tq_diag_fold_on(void)
{
	D.fold = 1;
}

void tq_diag_tick(int all)
{
	int64_t now = tq_mono_ms();

	for (int i = 0; i < TQ_DIAG_FOLD_SLOTS; i++) {
		struct fold *f = &D.f[i];
		int repeats;

		if (!f->used || (!all && now - f->since < TQ_DIAG_FOLD_MS))
			continue;
		/* a window with repeats says so and goes on (a loud source
		 * usually is not done); a quiet one is forgotten, and at the
		 * end every one is */
		repeats = f->count > 0;
		fold_say(f, now);
		if (all || !repeats)
			f->used = 0;
	}
	log_check(0);
}

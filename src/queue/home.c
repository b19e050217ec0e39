/*
 * home.c - the state directory: where it is (--home, $TASKQ_HOME,
 * $XDG_STATE_HOME, ~/.local/state/taskq), made canonical, and the checks
 * and creation that make it a private directory of taskq's. It is the local
 * node's, whatever the store: the sockets, ends/, procs/ and the SQLite
 * store's files live there. No SQL here.
 *
 * Invariants: an existing directory that is not taskq's is never changed;
 * what a failed open made is taken back (tq_home_unmake) only while empty.
 */
#include "queue/home.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/sys.h"
#include "queue/queue.h"
#include "queue/store.h"

/*
 * The longest state directory path. SQLite's unix VFS opens no database
 * path longer than 504 bytes (MAX_PATHNAME, 512, less room for "-journal";
 * measured with 3.40), and create_db's temporary name is the longest it is
 * given: HOME + "/taskq.db.new-" (14) + a pid (at most 7 digits) + "-" + a
 * start time (12 digits: clock ticks for 300 years of uptime). A longer
 * path failed only at the database's open, after its directories were
 * made, with an error cut short by the path it quoted.
 */
#define TQ_HOME_PATH_MAX (504 - 1 - 14 - 7 - 1 - 12)


/* A relative state directory in buf, made absolute against the current
 * directory. Out of line and on the heap: the common, absolute case keeps
 * no PATH_MAX buffers on the stack (each page of stack a short-lived CLI
 * touches is a page fault, 10-15 us here). */
static int home_absolute(char *buf, size_t n, struct tq_err *err)
{
	char *cwd = getcwd(NULL, 0), *rel = strdup(buf);
	int r, rc = 0;

	if (cwd == NULL || rel == NULL) {
		rc = tq_err_sys(err, "%s", cwd == NULL ? "getcwd" : "resolve the state directory");
	} else {
		r = snprintf(buf, n, "%s/%s", cwd, rel);
		if (r < 0 || (size_t)r >= n)
			rc = tq_err_set(err, TQ_EINVAL, "state directory path is too long");
	}
	free(cwd);
	free(rel);
	return rc;
}

/* Append the components of rel to the canonical directory in buf (n bytes),
 * "." dropped and ".." taking one back: rel does not exist yet, so this is
 * the path that creating it makes. */
static int append_components(char *buf, size_t n, const char *rel)
{
	size_t len = strlen(buf);

	for (const char *p = rel; *p != '\0';) {
		size_t k = strcspn(p, "/");
		if (k == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = strrchr(buf, '/');
			len = slash == NULL || slash == buf ? 1 : (size_t)(slash - buf);
			buf[len] = '\0';
		} else if (k > 0 && !(k == 1 && p[0] == '.')) {
			if (len + (len > 1) + k >= n)
				return TQ_EINVAL;
			if (len > 1)
				buf[len++] = '/';
			memcpy(buf + len, p, k);
			len += k;
			buf[len] = '\0';
		}
		p += k;
		p += *p == '/';
	}
	return 0;
}

/*
 * The absolute state directory path in buf made canonical: every symbolic
 * link in it resolved, "." and ".." gone. SQLite refuses a database path
 * that passes through a link (SQLITE_OPEN_NOFOLLOW, which keeps it from
 * following a link planted in place of the database), and the CLI, the
 * supervisor, its workers, the socket and the logs must all name one path.
 *
 * A link in the parents is followed without a question: whoever controls a
 * parent directory can move the state directory whether or not a link is
 * on the way, and the checks that protect the store are made on the state
 * directory itself (tq_home_prepare: owned by you, not writable by others). A
 * link as the state directory's own last component decides where the store
 * lives, so it is followed only when it is yours or root's. The database
 * file and logs/ are never followed (sqlite/db.c check_dbfile,
 * tq_home_prepare).
 *
 * A path that does not exist yet: its deepest existing ancestor resolved,
 * the rest appended as it will be created. Errors other than a missing path
 * (EACCES, ENOTDIR) leave buf as it was: opening reports them.
 */
static int canonical(char *buf, size_t n, struct tq_err *err)
{
	char *real = NULL, *work = NULL, *rest = NULL, *cut;
	struct stat sb;
	int rc = 0;

	if (lstat(buf, &sb) == 0) {
		if (S_ISLNK(sb.st_mode) && sb.st_uid != geteuid() && sb.st_uid != 0)
			return tq_err_set(err, TQ_EPERM,
					  "state directory %s is a symbolic link owned by uid %u,"
					  " not by you (uid %u) or root: refusing to follow it",
					  buf, (unsigned)sb.st_uid, (unsigned)geteuid());
		if ((real = realpath(buf, NULL)) == NULL)
			return errno == ENOMEM ? tq_err_set(err, TQ_ENOMEM, "out of memory") : 0;
		if (strlcpy(buf, real, n) >= n)
			rc = tq_err_set(err, TQ_EINVAL, "state directory path is too long");
		free(real);
		return rc;
	}
	if (errno != ENOENT)
		return 0;
	if ((work = strdup(buf)) == NULL || (rest = strdup(buf)) == NULL) {
		free(work);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	/* cut the path at each '/' from the end until what is left exists;
	 * rest keeps what was cut off */
	while ((cut = strrchr(work, '/')) != NULL) {
		*cut = '\0';
		real = realpath(cut == work ? "/" : work, NULL);
		if (real != NULL || errno != ENOENT)
			break;
	}
	if (real != NULL && (strlcpy(buf, real, n) >= n ||
			     append_components(buf, n, rest + (cut - work) + 1) < 0))
		rc = tq_err_set(err, TQ_EINVAL, "state directory path is too long");
	free(real);
	free(work);
	free(rest);
	return rc;
}

/* Where the state directory comes from, in the order of precedence; *base
 * the value that names it. One place, for tq_home_resolve and
 * tq_home_source. */
enum home_from { HOME_FLAG, HOME_ENV, HOME_XDG, HOME_DEFAULT, HOME_NONE };

static enum home_from home_from(const char *flag, const char **base)
{
	enum home_from from = HOME_NONE;

	if ((*base = flag) != NULL && **base != '\0')
		from = HOME_FLAG;
	else if ((*base = getenv("TASKQ_HOME")) != NULL && **base != '\0')
		from = HOME_ENV;
	else if ((*base = getenv("XDG_STATE_HOME")) != NULL && **base == '/')
		from = HOME_XDG;
	else if ((*base = getenv("HOME")) != NULL && **base != '\0')
		from = HOME_DEFAULT;
	return from;
}

const char *tq_home_source(const char *flag)
{
	static const char *const names[] = {
		[HOME_FLAG] = "--home", [HOME_ENV] = "TASKQ_HOME",
		[HOME_XDG] = "XDG_STATE_HOME", [HOME_DEFAULT] = "the default, ~/.local/state/taskq",
		[HOME_NONE] = "none",
	};
	const char *base;

	return names[home_from(flag, &base)];
}

/* A canonical state directory path SQLite can open the database in. */
static int home_fits(const char *home, struct tq_err *err)
{
	size_t len = strlen(home);

	if (len > TQ_HOME_PATH_MAX)
		return tq_err_set(err, TQ_EINVAL, "state directory path is too long: %zu bytes, "
				  "at most %d (SQLite's bound on a database's path)", len,
				  TQ_HOME_PATH_MAX);
	return 0;
}

int tq_home_canonical(char *buf, size_t n, struct tq_err *err)
{
	int rc;

	if (buf[0] == '/' && (rc = canonical(buf, n, err)) < 0)
		return rc;
	return home_fits(buf, err);
}

int tq_home_resolve(const char *flag, char *buf, size_t n, struct tq_err *err)
{
	const char *base;
	int r;

	switch (home_from(flag, &base)) {
	case HOME_FLAG:
	case HOME_ENV:
		r = snprintf(buf, n, "%s", base);
		break;
	case HOME_XDG:
		r = snprintf(buf, n, "%s/taskq", base);
		break;
	case HOME_DEFAULT:
		r = snprintf(buf, n, "%s/.local/state/taskq", base);
		break;
	default:
		return tq_err_set(err, TQ_EINVAL,
				  "no state directory: set --home, TASKQ_HOME or HOME");
	}
	if (r < 0 || (size_t)r >= n)
		return tq_err_set(err, TQ_EINVAL, "state directory path is too long");
	/* a URL here would become a directory named "postgresql:" */
	if (tq_store_is_url(buf))
		return tq_err_set(err, TQ_EINVAL, "%s names a URL, not a state directory: "
				  "give a PostgreSQL store with --db URL (or TASKQ_DB), and "
				  "the state directory's path with %s", tq_home_source(flag),
				  tq_home_source(flag));
	if (buf[0] != '/' && (r = home_absolute(buf, n, err)) < 0)
		return r;
	if ((r = canonical(buf, n, err)) < 0)
		return r;
	return home_fits(buf, err);
}


/* mkdir -p home, noting TQ_HOME_MADE_DIR only when this call made home itself (a
 * process creating it at the same time may have). */
static int make_home(const char *home, int *made, struct tq_err *err)
{
	char *parent, *slash;
	int r = mkdir(home, 0700);

	if (r < 0 && errno == ENOENT) {
		/* its parents first (on the heap: see home_absolute) */
		if ((parent = strdup(home)) == NULL)
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		slash = strrchr(parent, '/');
		r = 0;
		if (slash != NULL && slash != parent) { /* not a child of / */
			*slash = '\0';
			r = tq_mkdir_p(parent, 0700);
		}
		free(parent);
		if (r == 0)
			r = mkdir(home, 0700);
	}
	if (r == 0)
		*made |= TQ_HOME_MADE_DIR;
	else if (errno != EEXIST)
		return tq_err_sys(err, "create state directory %s", home);
	return 0;
}

/*
 * Take group and others' bits off path (lstat'ed as sb, ours), which they
 * could read: the queue holds every task's command, environment and output.
 * Through an fd opened O_NOFOLLOW, so a link swapped in meanwhile is not
 * what changes. 1 when it changed the mode; 0 when there was nothing to do
 * or it could not (no error: the mode was accepted before).
 */
int tq_home_tighten(const char *path, const struct stat *sb)
{
	mode_t mode = sb->st_mode & 07777, want = mode & ~(mode_t)077;
	int fd, done = 0;

	if (mode == want)
		return 0;
	fd = tq_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		     (S_ISDIR(sb->st_mode) ? O_DIRECTORY : 0), 0);
	if (fd >= 0)
		done = fchmod(fd, want) == 0;
	tq_close(fd);
	return done;
}

/* Append to *note "WHAT PATH 0755 -> 0700", after a ", " or, first, after
 * what it is about. */
void tq_home_note_tightened(char **note, const char *what, const char *path, mode_t mode)
{
	char *more = NULL;

	mode &= 07777;
	if (asprintf(&more, "%s%s%s %s %04o -> %04o",
		     *note ? *note : "others could read your queue; made private: ",
		     *note ? ", " : "", what, path, (unsigned)mode,
		     (unsigned)(mode & ~(mode_t)077)) >= 0) {
		free(*note);
		*note = more;
	}
}

/* Whether name is one taskq keeps in a state directory (a new one must be
 * added here: test_home_not_taskqs_is_never_changed makes a state
 * directory with everything taskq puts there, removes taskq.db, and
 * expects the next submit to take it). */
static int taskq_name(const char *name)
{
	static const char *const exact[] = {
		".", "..", "logs", "serve.pid", "submit.sock", "doorbell", "ends", "work",
		"procs", "warm.sock",
	};
	static const char *const prefix[] = { TQ_HOME_DB_NAME, "serve.log" };

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(name, exact[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncmp(name, prefix[i], strlen(prefix[i])) == 0)
			return 1;
	return 0;
}

/*
 * Whether the existing directory home is a state directory taskq may take
 * as its own (change its mode, put a database in): it holds a taskq.db, or
 * nothing but the names taskq keeps there (an empty directory too). 0 with
 * *other set to a name of someone else's (TASKQ_HOME=$HOME, or / as root:
 * the mode of a directory others use must never change, and a database
 * beside their files is a typo, not a queue); 1; or an error.
 */
static int home_is_ours(const char *home, char *other, size_t n, struct tq_err *err)
{
	struct dirent *de;
	struct stat sb;
	char *db = NULL;
	DIR *d;
	int ours = 1;

	if (asprintf(&db, "%s/" TQ_HOME_DB_NAME, home) < 0)
		return tq_err_set(err, TQ_ENOMEM, "state directory: out of memory");
	ours = lstat(db, &sb) == 0;
	free(db);
	if (ours)
		return 1;
	if ((d = opendir(home)) == NULL)
		return tq_err_sys(err, "state directory %s", home);
	ours = 1;
	while (ours && (de = readdir(d)) != NULL)
		if (!taskq_name(de->d_name)) {
			strlcpy(other, de->d_name, n);
			ours = 0;
		}
	closedir(d);
	return ours;
}

/* Create (if allowed) and check the state directory: a directory owned by
 * us, not writable by group or others (anyone who can write it can replace
 * the database or a log), whose logs/ is a directory and not a symbolic
 * link (a link would send every task's output, and a reader's view of it,
 * wherever it points). An existing directory that is not taskq's (see
 * home_is_ours) is never changed: refused when a database would be made
 * in it, left for the store (sqlite/db.c check_dbfile) to say there is
 * none otherwise. One readable by others is made 0700 (tq_home_tighten),
 * when note is not NULL.
 * *made (may be NULL) says what was created. */
int tq_home_prepare(const char *home, unsigned flags, int *made, char **note,
		    struct tq_err *err)
{
	struct stat sb;
	char *logs = NULL, other[NAME_MAX + 1];
	int rc = 0, dummy;

	if (made == NULL)
		made = &dummy;
	*made = 0;
	if (stat(home, &sb) < 0) {
		if (errno != ENOENT)
			return tq_err_sys(err, "state directory %s", home);
		if (flags & TQ_HOME_NOCREATE)
			return tq_err_set(err, TQ_ENOTFOUND,
					  "state directory %s does not exist", home);
		if ((rc = make_home(home, made, err)) < 0)
			return rc;
		if (stat(home, &sb) < 0)
			return tq_err_sys(err, "state directory %s", home);
	}
	if (!S_ISDIR(sb.st_mode))
		return tq_err_set(err, TQ_EINVAL, "state directory %s is not a directory",
				  home);
	if (sb.st_uid != geteuid())
		return tq_err_set(err, TQ_EPERM,
				  "state directory %s is owned by uid %u, not by you (uid %u)",
				  home, (unsigned)sb.st_uid, (unsigned)geteuid());
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		return tq_err_set(err, TQ_EPERM,
				  "state directory %s is writable by %s (mode %04o); "
				  "run: chmod go-w %s", home,
				  (sb.st_mode & S_IWOTH) ? "everyone" : "its group",
				  (unsigned)(sb.st_mode & 07777), home);
	if (!(*made & TQ_HOME_MADE_DIR) && (rc = home_is_ours(home, other, sizeof(other), err)) <= 0) {
		if (rc < 0)
			return rc;
		if (flags & TQ_HOME_NOCREATE)
			return 0; /* no database there: the store says so */
		return tq_err_set(err, TQ_EINVAL,
				  "state directory %s holds files that are not taskq's (\"%s\") "
				  "and no " TQ_HOME_DB_NAME ": refusing to make a queue there; "
				  "choose a new or empty directory", home, other);
	}
	rc = 0;
	if (note != NULL && tq_home_tighten(home, &sb))
		tq_home_note_tightened(note, "state directory", home, sb.st_mode);
	/* on the heap: see home_absolute */
	if (asprintf(&logs, "%s/logs", home) < 0)
		return tq_err_set(err, TQ_ENOMEM, "state directory: out of memory");
	if (lstat(logs, &sb) == 0) {
		if (S_ISLNK(sb.st_mode))
			rc = tq_err_set(err, TQ_EPERM, "%s is a symbolic link: refusing to "
					"follow it (task output goes there); make it a "
					"directory", logs);
		else if (!S_ISDIR(sb.st_mode))
			rc = tq_err_set(err, TQ_EINVAL, "%s is not a directory", logs);
	} else if (errno != ENOENT) {
		rc = tq_err_sys(err, "%s", logs);
	} else if (!(flags & TQ_HOME_NOCREATE)) {
		if (mkdir(logs, 0700) == 0)
			*made |= TQ_HOME_MADE_LOGS;
		else if (errno != EEXIST)
			rc = tq_err_sys(err, "create %s", logs);
	}
	free(logs);
	return rc;
}

int tq_home_check(const char *home, struct tq_err *err)
{
	return tq_home_prepare(home, TQ_HOME_NOCREATE, NULL, NULL, err);
}

/* Take back the directories a failed open made (rmdir: only while empty,
 * so never what another process has put there since). */
void tq_home_unmake(const char *home, int made)
{
	char *logs;

	if ((made & TQ_HOME_MADE_LOGS) && asprintf(&logs, "%s/logs", home) >= 0) {
		rmdir(logs);
		free(logs);
	}
	if (made & TQ_HOME_MADE_DIR)
		rmdir(home);
}

/* ------------------------------------------------------------------ */
/* The node                                                           */

static int node_name_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > TQ_NODE_MAX)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789.-_") == len;
}

int tq_node_self(char *buf, size_t n, struct tq_err *err)
{
	const char *v = getenv(TQ_NODE_VAR);
	char host[TQ_NODE_MAX + 2];

	if (v != NULL && v[0] != '\0') {
		if (!node_name_ok(v))
			return tq_err_set(err, TQ_EINVAL, "$" TQ_NODE_VAR " \"%.*s\": expected a "
					  "node name of 1 to %d letters, digits, '.', '-' or '_'",
					  TQ_NODE_MAX, v, TQ_NODE_MAX);
	} else {
		/* a longer name does not fit: ENAMETOOLONG */
		if (gethostname(host, sizeof(host)) < 0)
			return tq_err_sys(err, "gethostname");
		host[sizeof(host) - 1] = '\0';
		if (!node_name_ok(host))
			return tq_err_set(err, TQ_EINVAL, "host name \"%.*s\" is no node name "
					  "(1 to %d letters, digits, '.', '-' or '_'): set $"
					  TQ_NODE_VAR, TQ_NODE_MAX, host, TQ_NODE_MAX);
		v = host;
	}
	if (strlcpy(buf, v, n) >= n)
		return tq_err_set(err, TQ_EINVAL, "node name \"%s\": longer than %zu bytes",
				  v, n - 1);
	return 0;
}

/*
 * endrec.c - end records (endrec.h): the outcome of an attempt kept in
 * HOME/ends/TASK.ATTEMPT until the store has it.
 *
 * A record is text a person can read with less(1), and binary-safe:
 *
 *     taskq end record 1
 *     task 42
 *     attempt 1
 *     ...                      one "KEY NUMBER" line per number
 *     s reason 17              a string: its length, a newline, its bytes,
 *     exit code 3; no rule     a newline
 *     sum 9f0c3e1a2b4d5e6f     FNV-1a 64 of every byte before this line
 *
 * Every field is written every time (absent strings are left out), in a
 * fixed order; a reader refuses what it does not know: an unknown key, a
 * number out of range, a string longer than the file, a missing or wrong
 * checksum, a file that does not end with the checksum line, another
 * version. A record is never partly trusted: the checksum is checked before
 * a field is read.
 *
 * Writing is the usual dance for a file that must survive a power loss:
 * a temporary name (".TASK.ATTEMPT.tmp", skipped by readers), write,
 * fsync, rename over the final name, fsync the directory. Every file is
 * opened O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, relative to the directory's
 * descriptor, so a symlink planted in ends/ is never followed and a FIFO
 * never blocks; whatever is found under a record's name that is not a
 * regular file is refused as damaged (set aside, never trusted).
 */
#include "endrec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "common/sys.h"

#define ENDREC_MAGIC "taskq end record 1\n"
#define ENDREC_NAME_MAX 48   /* "TASK.ATTEMPT.damaged" and ".TASK.ATTEMPT.tmp" */
#define ENDREC_SUM_LEN 21    /* "sum " + 16 hex digits + "\n" */

/* ------------------------------------------------------------------ */
/* Names and the directory                                            */

static int name_of(char *buf, size_t n, const char *fmt, int64_t task, int attempt)
{
	int r = snprintf(buf, n, fmt, (long long)task, attempt);

	return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* Open HOME/ends (creating it 0700 when create). The directory must be a
 * real directory of ours: never a symlink. */
static int open_dir(const char *home, int create, struct tq_err *err)
{
	char path[4096];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/" TQ_ENDREC_DIR, home) >= sizeof(path))
		return tq_err_set(err, TQ_EINVAL, "state directory path is too long");
	if (create && mkdir(path, 0700) < 0 && errno != EEXIST)
		return tq_err_sys(err, "mkdir %s", path);
	fd = tq_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	/* a symlink or a file in its place holds no record we could trust */
	if (fd < 0 && !create && (errno == ELOOP || errno == ENOTDIR))
		return tq_err_set(err, TQ_ECORRUPT, "%s is not a directory of taskq's: its "
				  "end records are not trusted", path);
	if (fd < 0)
		return tq_err_sys(err, "open %s", path);
	return fd;
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */

struct out {
	char *buf;
	size_t len, cap;
	int failed;    /* out of memory, or past TQ_ENDREC_MAX */
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n > TQ_ENDREC_MAX) {
		o->failed = TQ_EINVAL;
		return;
	}
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 1024;
		char *nb;
		while (cap < o->len + n)
			cap *= 2;
		if ((nb = realloc(o->buf, cap)) == NULL) {
			o->failed = TQ_ENOMEM;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct out *o, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= sizeof(line)) {
		o->failed = TQ_EINVAL;
		return;
	}
	put(o, line, (size_t)r);
}

static void put_int(struct out *o, const char *key, int64_t v)
{
	putf(o, "%s %lld\n", key, (long long)v);
}

static void put_str(struct out *o, const char *key, const char *s)
{
	size_t n;

	if (s == NULL)
		return;
	n = strlen(s);
	putf(o, "s %s %zu\n", key, n);
	put(o, s, n);
	put(o, "\n", 1);
}

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static const char *next_name(enum tq_next n)
{
	return n == TQ_NEXT_RETRY ? "retry" : n == TQ_NEXT_REQUEUE ? "requeue" : "final";
}

static void encode(struct out *o, const struct tq_finish *f, int with_result)
{
	const struct tq_result *r = with_result ? f->result : NULL;

	put(o, ENDREC_MAGIC, sizeof(ENDREC_MAGIC) - 1);
	put_int(o, "task", f->task_id);
	put_int(o, "attempt", f->attempt);
	put_int(o, "worker", f->worker_id);
	put_int(o, "ended_at", f->ended_at);
	putf(o, "outcome %s\n", tq_outcome_name(f->outcome));
	put_int(o, "exit_code", f->exit_code);
	put_int(o, "signal", f->signal);
	putf(o, "category %s\n", f->category == TQ_CAT_NONE ? "none"
						: tq_category_name(f->category));
	putf(o, "next %s\n", next_name(f->next));
	put_int(o, "retry_at", f->retry_at);
	put_int(o, "pause_until", f->pause_until);
	put_int(o, "probe_passed", f->probe_passed);
	put_str(o, "reason", f->reason);
	put_str(o, "pause_group", f->pause_group);
	if (r != NULL && r->has_result) {
		put_int(o, "has_result", 1);
		put_int(o, "is_error", r->is_error);
		/* %a: the exact double, not a rounded decimal */
		putf(o, "cost_usd %a\n", r->cost_usd);
		put_int(o, "duration_ms", r->duration_ms);
		put_int(o, "num_turns", r->num_turns);
		put_int(o, "input_tokens", r->input_tokens);
		put_int(o, "output_tokens", r->output_tokens);
		put_int(o, "cache_read_tokens", r->cache_read_tokens);
		put_int(o, "cache_creation_tokens", r->cache_creation_tokens);
		put_str(o, "result", r->result);
		put_str(o, "subtype", r->subtype);
		put_str(o, "agent_session", r->agent_session);
		put_str(o, "model", r->model);
	}
	if (!o->failed)
		putf(o, "sum %016" PRIx64 "\n", fnv1a(o->buf, o->len));
}

/* Write buf to dfd/tmp, fsync it, rename it to name, fsync the directory.
 * Whatever holds the temporary name (one of ours a crash left, a FIFO, a
 * symlink someone planted) is unlinked first and the file made anew
 * (O_EXCL): opening a FIFO for writing would wait for a reader for ever,
 * and O_NONBLOCK keeps even a FIFO made between the two calls from doing
 * so. */
static int publish(int dfd, const char *tmp, const char *name, const struct out *o,
		   const char *home, struct tq_err *err)
{
	int fd, rc = 0;

	unlinkat(dfd, tmp, 0);
	fd = tq_openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
		       0600);
	if (fd < 0)
		return tq_err_sys(err, "create %s/" TQ_ENDREC_DIR "/%s", home, tmp);
	if (tq_write_all(fd, o->buf, o->len) < 0)
		rc = tq_err_sys(err, "write %s/" TQ_ENDREC_DIR "/%s", home, tmp);
	else if (fsync(fd) < 0)
		rc = tq_err_sys(err, "fsync %s/" TQ_ENDREC_DIR "/%s", home, tmp);
	tq_close(fd);
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
		rc = tq_err_sys(err, "rename %s/" TQ_ENDREC_DIR "/%s", home, tmp);
	if (rc < 0) {
		int e = errno;
		unlinkat(dfd, tmp, 0);
		errno = e;
		return rc;
	}
	/* the rename is durable only once the directory is */
	if (fsync(dfd) < 0)
		return tq_err_sys(err, "fsync %s/" TQ_ENDREC_DIR, home);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The reserve: room for one record on a full disk                    */

int tq_endrec_reserve(const char *home, int *fd, struct tq_err *err)
{
	int dfd, rc;

	*fd = -1;
	if ((dfd = open_dir(home, 1, err)) < 0)
		return dfd;
	/* a file without a name: nothing to clean up after a crash, and its
	 * room goes back when its worker dies */
	*fd = tq_openat(dfd, ".", O_TMPFILE | O_RDWR, 0600);
	if (*fd < 0) {
		rc = tq_err_sys(err, "create an unnamed file in %s/" TQ_ENDREC_DIR, home);
		tq_close(dfd);
		return rc;
	}
	tq_close(dfd);
	/* posix_fallocate returns the error; the room is really taken (a
	 * sparse file would fail at the write, on the full disk) */
	if ((rc = posix_fallocate(*fd, 0, TQ_ENDREC_RESERVE)) != 0) {
		errno = rc;
		rc = tq_err_sys(err, "hold %d bytes in %s/" TQ_ENDREC_DIR, TQ_ENDREC_RESERVE,
				home);
		tq_close(*fd);
		*fd = -1;
		return rc;
	}
	return 0;
}

/*
 * The record in o, written into the reserve's room (no new block needed:
 * the write lands in blocks it holds, the rest is cut off), then given its
 * temporary name (linkat of /proc/self/fd/N: an unnamed file takes a name
 * only that way without CAP_DAC_READ_SEARCH), renamed into place, and the
 * directory fsynced. The reserve is used up either way (*reserve -1).
 */
static int publish_reserved(int dfd, int *reserve, const char *tmp, const char *name,
			    const struct out *o, const char *home, struct tq_err *err)
{
	char proc[64];
	int fd = *reserve, rc = 0;

	*reserve = -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (lseek(fd, 0, SEEK_SET) < 0 || tq_write_all(fd, o->buf, o->len) < 0 ||
	    ftruncate(fd, (off_t)o->len) < 0 || fsync(fd) < 0)
		rc = tq_err_sys(err, "write %s/" TQ_ENDREC_DIR "/%s in the room held for it",
				home, tmp);
	if (rc == 0)
		unlinkat(dfd, tmp, 0);
	if (rc == 0 && linkat(AT_FDCWD, proc, dfd, tmp, AT_SYMLINK_FOLLOW) < 0)
		rc = tq_err_sys(err, "link %s/" TQ_ENDREC_DIR "/%s", home, tmp);
	tq_close(fd);
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0) {
		rc = tq_err_sys(err, "rename %s/" TQ_ENDREC_DIR "/%s", home, tmp);
		unlinkat(dfd, tmp, 0);
	}
	if (rc == 0 && fsync(dfd) < 0)
		rc = tq_err_sys(err, "fsync %s/" TQ_ENDREC_DIR, home);
	return rc;
}

int tq_endrec_write(const char *home, const struct tq_finish *f, struct tq_err *err)
{
	return tq_endrec_keep(home, f, NULL, err);
}

int tq_endrec_keep(const char *home, const struct tq_finish *f, int *reserve,
		   struct tq_err *err)
{
	struct out o = { 0 };
	char name[ENDREC_NAME_MAX], tmp[ENDREC_NAME_MAX];
	int dfd = -1, rc;

	if (f->task_id <= 0 || f->attempt <= 0 ||
	    name_of(name, sizeof(name), "%lld.%d", f->task_id, f->attempt) < 0 ||
	    name_of(tmp, sizeof(tmp), ".%lld.%d.tmp", f->task_id, f->attempt) < 0)
		return tq_err_set(err, TQ_EINVAL, "end record: bad task %lld attempt %d",
				  (long long)f->task_id, f->attempt);
	encode(&o, f, 1);
	if (o.failed) {
		rc = o.failed == TQ_ENOMEM
			     ? tq_err_set(err, TQ_ENOMEM, "end record: out of memory")
			     : tq_err_set(err, TQ_EINVAL, "end record of task %lld: larger "
					  "than %d bytes", (long long)f->task_id, TQ_ENDREC_MAX);
		goto out;
	}
	if ((dfd = open_dir(home, 1, err)) < 0) {
		rc = dfd;
		goto out;
	}
	rc = publish(dfd, tmp, name, &o, home, err);
	if (rc == TQ_ENOSPC && reserve != NULL && *reserve >= 0) {
		/* the disk is full: the room held for this. An agent's result
		 * that does not fit is left out (the outcome is what must not
		 * be lost; the result is kept in the log's output). */
		if (o.len > TQ_ENDREC_RESERVE) {
			free(o.buf);
			o = (struct out){ 0 };
			encode(&o, f, 0);
		}
		if (!o.failed && o.len <= TQ_ENDREC_RESERVE)
			rc = publish_reserved(dfd, reserve, tmp, name, &o, home, err);
	}
out:
	tq_close(dfd);
	free(o.buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */

struct in {
	const char *p, *end;
	const char *path;
	struct tq_err *err;
};

static int bad(struct in *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct in *in, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tq_err_set(in->err, TQ_ECORRUPT, "end record %s is damaged (%s): not trusted",
			  in->path, what);
}

/* The next line (without its newline) into key and value. */
static int next_line(struct in *in, char *key, size_t keyn, const char **val,
		     size_t *vlen)
{
	const char *nl = memchr(in->p, '\n', (size_t)(in->end - in->p));
	const char *sp;
	size_t kl;

	if (nl == NULL)
		return bad(in, "a line without its end");
	sp = memchr(in->p, ' ', (size_t)(nl - in->p));
	if (sp == NULL)
		return bad(in, "a line without a value");
	kl = (size_t)(sp - in->p);
	if (kl == 0 || kl >= keyn)
		return bad(in, "a bad field name");
	memcpy(key, in->p, kl);
	key[kl] = '\0';
	*val = sp + 1;
	*vlen = (size_t)(nl - sp - 1);
	in->p = nl + 1;
	return 0;
}

static int num(struct in *in, const char *key, const char *v, size_t n, int64_t min,
	       int64_t max, int64_t *out)
{
	char buf[32];
	const char *errstr = NULL;

	if (n == 0 || n >= sizeof(buf))
		return bad(in, "%s: not a number", key);
	memcpy(buf, v, n);
	buf[n] = '\0';
	*out = strtonum(buf, min, max, &errstr);
	if (errstr != NULL)
		return bad(in, "%s \"%s\": %s", key, buf, errstr);
	return 0;
}

/* "s KEY LEN\n" has been read as key "s", value "KEY LEN": take the bytes. */
static int take_str(struct in *in, const char *v, size_t vn, char *skey, size_t skeyn,
		    char **out)
{
	const char *sp = memchr(v, ' ', vn);
	int64_t len = 0; /* set by num(); gcc -O3 cannot tell (-Wmaybe-uninitialized) */
	size_t kl;

	if (sp == NULL || (kl = (size_t)(sp - v)) == 0 || kl >= skeyn)
		return bad(in, "a bad string field");
	memcpy(skey, v, kl);
	skey[kl] = '\0';
	if (num(in, skey, sp + 1, vn - kl - 1, 0, TQ_ENDREC_MAX, &len) < 0)
		return in->err ? in->err->code : TQ_ECORRUPT;
	if ((int64_t)(in->end - in->p) < len + 1 || in->p[len] != '\n')
		return bad(in, "%s: shorter than its length", skey);
	if (memchr(in->p, '\0', (size_t)len) != NULL)
		return bad(in, "%s: a NUL byte", skey);
	if ((*out = malloc((size_t)len + 1)) == NULL)
		return tq_err_set(in->err, TQ_ENOMEM, "out of memory");
	memcpy(*out, in->p, (size_t)len);
	(*out)[len] = '\0';
	in->p += len + 1;
	return 0;
}

static char **str_slot(struct tq_endrec *r, const char *key)
{
	if (strcmp(key, "reason") == 0) return &r->reason;
	if (strcmp(key, "pause_group") == 0) return &r->pause_group;
	if (strcmp(key, "result") == 0) return &r->result;
	if (strcmp(key, "subtype") == 0) return &r->subtype;
	if (strcmp(key, "agent_session") == 0) return &r->agent_session;
	if (strcmp(key, "model") == 0) return &r->model;
	return NULL;
}

static int64_t *int_slot(struct tq_endrec *r, const char *key, int64_t *min, int64_t *max)
{
	struct { const char *k; int64_t *p; int64_t min, max; } t[] = {
		{ "task", &r->f.task_id, 1, INT64_MAX },
		{ "worker", &r->f.worker_id, 0, INT64_MAX },
		{ "ended_at", &r->f.ended_at, 0, INT64_MAX },
		{ "retry_at", &r->f.retry_at, 0, INT64_MAX },
		{ "pause_until", &r->f.pause_until, 0, INT64_MAX },
		{ "duration_ms", &r->res.duration_ms, INT64_MIN, INT64_MAX },
		{ "num_turns", &r->res.num_turns, INT64_MIN, INT64_MAX },
		{ "input_tokens", &r->res.input_tokens, INT64_MIN, INT64_MAX },
		{ "output_tokens", &r->res.output_tokens, INT64_MIN, INT64_MAX },
		{ "cache_read_tokens", &r->res.cache_read_tokens, INT64_MIN, INT64_MAX },
		{ "cache_creation_tokens", &r->res.cache_creation_tokens, INT64_MIN,
		  INT64_MAX },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(key, t[i].k) == 0) {
			*min = t[i].min;
			*max = t[i].max;
			return t[i].p;
		}
	return NULL;
}

/* The small int fields (attempt, exit_code, ...) and the named ones. */
static int small_field(struct in *in, struct tq_endrec *r, const char *key,
		       const char *v, size_t n, int *done)
{
	char name[32];
	int64_t x = 0; /* set by num(); gcc -O3 cannot tell (-Wmaybe-uninitialized) */

	*done = 1;
	if (strcmp(key, "outcome") == 0 || strcmp(key, "category") == 0 ||
	    strcmp(key, "next") == 0) {
		if (n == 0 || n >= sizeof(name))
			return bad(in, "%s: a bad name", key);
		memcpy(name, v, n);
		name[n] = '\0';
		if (strcmp(key, "outcome") == 0) {
			if (tq_outcome_parse(name, &r->f.outcome) < 0 ||
			    r->f.outcome == TQ_OUT_NONE)
				return bad(in, "unknown outcome \"%s\"", name);
		} else if (strcmp(key, "category") == 0) {
			if (strcmp(name, "none") == 0)
				r->f.category = TQ_CAT_NONE;
			else if (tq_category_parse(name, &r->f.category) < 0)
				return bad(in, "unknown category \"%s\"", name);
		} else if (strcmp(name, "final") == 0) {
			r->f.next = TQ_NEXT_FINAL;
		} else if (strcmp(name, "retry") == 0) {
			r->f.next = TQ_NEXT_RETRY;
		} else if (strcmp(name, "requeue") == 0) {
			r->f.next = TQ_NEXT_REQUEUE;
		} else {
			return bad(in, "unknown next step \"%s\"", name);
		}
		return 0;
	}
	if (strcmp(key, "probe_passed") == 0) {
		/* absent in a record of a taskq before the probe: 0, the next
		 * task probes (never a release on doubt) */
		if (num(in, key, v, n, 0, 1, &x) < 0)
			return in->err ? in->err->code : TQ_ECORRUPT;
		r->f.probe_passed = (int)x;
		return 0;
	}
	if (strcmp(key, "cost_usd") == 0) {
		char *end = NULL;
		if (n == 0 || n >= sizeof(name))
			return bad(in, "cost_usd: not a number");
		memcpy(name, v, n);
		name[n] = '\0';
		r->res.cost_usd = strtod(name, &end);
		if (end == NULL || *end != '\0')
			return bad(in, "cost_usd \"%s\": not a number", name);
		return 0;
	}
	if (strcmp(key, "attempt") == 0 || strcmp(key, "exit_code") == 0 ||
	    strcmp(key, "signal") == 0 || strcmp(key, "has_result") == 0 ||
	    strcmp(key, "is_error") == 0) {
		int64_t lo = key[0] == 'a' ? 1 : key[0] == 'e' ? -1 : 0;
		int64_t hi = key[0] == 'h' || key[0] == 'i' ? 1 : key[0] == 's' ? 128 : INT32_MAX;
		if (num(in, key, v, n, lo, hi, &x) < 0)
			return in->err ? in->err->code : TQ_ECORRUPT;
		if (key[0] == 'a')
			r->f.attempt = (int)x;
		else if (key[0] == 'e')
			r->f.exit_code = (int)x;
		else if (key[0] == 's')
			r->f.signal = (int)x;
		else if (key[0] == 'h')
			r->res.has_result = (int)x;
		else
			r->res.is_error = (int)x;
		return 0;
	}
	*done = 0;
	return 0;
}

static int parse_fields(struct in *in, struct tq_endrec *r)
{
	while (in->p < in->end) {
		char key[32], skey[32];
		const char *v = NULL;
		size_t n = 0;
		int64_t *slot, min, max;
		int done = 0, rc;

		if ((rc = next_line(in, key, sizeof(key), &v, &n)) < 0)
			return rc;
		if (strcmp(key, "s") == 0) {
			char *s = NULL, **dst;
			if ((rc = take_str(in, v, n, skey, sizeof(skey), &s)) < 0)
				return rc;
			if ((dst = str_slot(r, skey)) == NULL || *dst != NULL) {
				free(s);
				return bad(in, "unknown or repeated field \"%s\"", skey);
			}
			*dst = s;
			continue;
		}
		if ((rc = small_field(in, r, key, v, n, &done)) < 0)
			return rc;
		if (done)
			continue;
		if ((slot = int_slot(r, key, &min, &max)) == NULL)
			return bad(in, "unknown field \"%s\"", key);
		if ((rc = num(in, key, v, n, min, max, slot)) < 0)
			return rc;
	}
	return 0;
}

/* Check the magic line and the checksum line; narrow in to the fields. */
static int check_frame(struct in *in, const char *buf, size_t len)
{
	const char *last;
	char want[24];

	if (len < sizeof(ENDREC_MAGIC) - 1 ||
	    memcmp(buf, ENDREC_MAGIC, sizeof(ENDREC_MAGIC) - 1) != 0) {
		if (len >= 17 && memcmp(buf, "taskq end record ", 17) == 0)
			return bad(in, "a version this taskq does not know");
		return bad(in, "not an end record");
	}
	if (len < sizeof(ENDREC_MAGIC) - 1 + ENDREC_SUM_LEN || buf[len - 1] != '\n')
		return bad(in, "truncated: no checksum at its end");
	last = buf + len - (ENDREC_SUM_LEN);
	if (memcmp(last, "sum ", 4) != 0)
		return bad(in, "truncated: no checksum at its end");
	snprintf(want, sizeof(want), "sum %016" PRIx64 "\n", fnv1a(buf, (size_t)(last - buf)));
	if (memcmp(last, want, ENDREC_SUM_LEN) != 0)
		return bad(in, "its checksum does not match its contents");
	in->p = buf + sizeof(ENDREC_MAGIC) - 1;
	in->end = last;
	return 0;
}

/* Not a record: a symlink, a FIFO, a directory, a device, too big. Such a
 * file is refused as damaged (TQ_ECORRUPT: set aside by recovery, which
 * then goes on), never read through: O_NONBLOCK, as opening a FIFO for
 * reading would wait for a writer for ever (kill, remove, wait and the
 * supervisor's recovery all read records), and O_NOFOLLOW (ELOOP). */
static int not_a_record(const char *path, struct tq_err *err)
{
	return tq_err_set(err, TQ_ECORRUPT, "end record %s is not a regular file of at "
			  "most %d bytes: not trusted", path, TQ_ENDREC_MAX);
}

static int read_file(int dfd, const char *name, const char *path, char **buf,
		     size_t *len, struct tq_err *err)
{
	struct stat sb;
	int fd = tq_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	ssize_t got;

	*buf = NULL;
	if (fd < 0 && (errno == ELOOP || errno == ENXIO || errno == ENODEV))
		return not_a_record(path, err);
	if (fd < 0)
		return errno == ENOENT ? tq_err_set(err, TQ_ENOTFOUND, "no end record %s", path)
				       : tq_err_sys(err, "open %s", path);
	if (fstat(fd, &sb) < 0) {
		tq_close(fd);
		return tq_err_sys(err, "stat %s", path);
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > TQ_ENDREC_MAX) {
		tq_close(fd);
		return not_a_record(path, err);
	}
	if ((*buf = malloc((size_t)sb.st_size + 1)) == NULL) {
		tq_close(fd);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	got = tq_read_full(fd, *buf, (size_t)sb.st_size);
	tq_close(fd);
	if (got < 0)
		return tq_err_sys(err, "read %s", path);
	*len = (size_t)got;
	return 0;
}

void tq_endrec_release(struct tq_endrec *r)
{
	free(r->reason);
	free(r->pause_group);
	free(r->result);
	free(r->subtype);
	free(r->agent_session);
	free(r->model);
	memset(r, 0, sizeof(*r));
}

int tq_endrec_read(const char *home, int64_t task, int attempt, struct tq_endrec *r,
		   struct tq_err *err)
{
	char name[ENDREC_NAME_MAX], path[4200];
	struct in in = { .path = path, .err = err };
	char *buf = NULL;
	size_t len = 0;
	int dfd, rc;

	memset(r, 0, sizeof(*r));
	if (name_of(name, sizeof(name), "%lld.%d", task, attempt) < 0)
		return tq_err_set(err, TQ_EINVAL, "bad task %lld attempt %d", (long long)task,
				  attempt);
	snprintf(path, sizeof(path), "%s/" TQ_ENDREC_DIR "/%s", home, name);
	if ((dfd = open_dir(home, 0, err)) < 0)
		return dfd == TQ_ENOTFOUND
			       ? tq_err_set(err, TQ_ENOTFOUND, "no end record %s", path)
			       : dfd;
	rc = read_file(dfd, name, path, &buf, &len, err);
	tq_close(dfd);
	if (rc < 0)
		goto out;
	r->f.exit_code = -1;
	if ((rc = check_frame(&in, buf, len)) < 0 || (rc = parse_fields(&in, r)) < 0)
		goto out;
	if (r->f.task_id != task || r->f.attempt != attempt) {
		rc = bad(&in, "it names task %lld attempt %d", (long long)r->f.task_id,
			 r->f.attempt);
		goto out;
	}
	if (r->f.outcome == TQ_OUT_NONE) {
		rc = bad(&in, "no outcome");
		goto out;
	}
	r->f.reason = r->reason;
	r->f.pause_group = r->pause_group;
	if (r->res.has_result) {
		r->res.result = r->result;
		r->res.subtype = r->subtype;
		r->res.agent_session = r->agent_session;
		r->res.model = r->model;
		r->f.result = &r->res;
	}
out:
	free(buf);
	if (rc < 0) {
		tq_endrec_release(r);
		r->f.exit_code = -1;
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Removing, listing                                                  */

int tq_endrec_remove(const char *home, int64_t task, int attempt, struct tq_err *err)
{
	char name[ENDREC_NAME_MAX];
	int dfd;

	if (name_of(name, sizeof(name), "%lld.%d", task, attempt) < 0)
		return tq_err_set(err, TQ_EINVAL, "bad task %lld attempt %d", (long long)task,
				  attempt);
	if ((dfd = open_dir(home, 0, err)) < 0)
		return dfd == TQ_ENOTFOUND ? 0 : dfd;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
		tq_err_sys(err, "remove %s/" TQ_ENDREC_DIR "/%s", home, name);
		tq_close(dfd);
		return err ? err->code : TQ_EIO;
	}
	tq_close(dfd);
	return 0;
}

int tq_endrec_set_aside(const char *home, int64_t task, int attempt, struct tq_err *err)
{
	char name[ENDREC_NAME_MAX], aside[ENDREC_NAME_MAX];
	int dfd, rc = 0;

	if (name_of(name, sizeof(name), "%lld.%d", task, attempt) < 0 ||
	    name_of(aside, sizeof(aside), "%lld.%d.damaged", task, attempt) < 0)
		return tq_err_set(err, TQ_EINVAL, "bad task %lld attempt %d", (long long)task,
				  attempt);
	if ((dfd = open_dir(home, 0, err)) < 0)
		return dfd;
	if (renameat(dfd, name, dfd, aside) < 0 && errno != ENOENT)
		rc = tq_err_sys(err, "rename %s/" TQ_ENDREC_DIR "/%s", home, name);
	tq_close(dfd);
	return rc;
}

int tq_endrec_exists(const char *home, int64_t task, int attempt)
{
	char path[4200];
	struct stat sb;
	int r = snprintf(path, sizeof(path), "%s/" TQ_ENDREC_DIR "/%lld.%d", home,
			 (long long)task, attempt);

	if (r < 0 || (size_t)r >= sizeof(path))
		return 0;
	return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* "TASK.ATTEMPT", both positive decimal numbers, nothing else. */
static int parse_name(const char *s, struct tq_endrec_id *id)
{
	const char *dot = strchr(s, '.'), *errstr = NULL;
	char buf[24];
	size_t n;

	if (dot == NULL || (n = (size_t)(dot - s)) == 0 || n >= sizeof(buf) ||
	    strchr(dot + 1, '.') != NULL || s[0] == '0' || dot[1] == '0')
		return -1;
	for (const char *p = s; *p; p++)
		if (p != dot && (*p < '0' || *p > '9'))
			return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	id->task = strtonum(buf, 1, INT64_MAX, &errstr);
	if (errstr != NULL)
		return -1;
	id->attempt = (int)strtonum(dot + 1, 1, INT32_MAX, &errstr);
	return errstr != NULL ? -1 : 0;
}

int tq_endrec_list(const char *home, size_t max, struct tq_endrec_id **list, size_t *n,
		   struct tq_err *err)
{
	struct tq_endrec_id *out = NULL, id;
	size_t count = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	int dfd;

	*list = NULL;
	*n = 0;
	if ((dfd = open_dir(home, 0, err)) < 0)
		return dfd == TQ_ENOTFOUND ? 0 : dfd;
	if ((d = fdopendir(dfd)) == NULL) {
		tq_close(dfd);
		return tq_err_sys(err, "read %s/" TQ_ENDREC_DIR, home);
	}
	while (count < max && (e = readdir(d)) != NULL) {
		if (parse_name(e->d_name, &id) < 0)
			continue;
		if (count == cap) {
			size_t nc = cap ? cap * 2 : 8;
			struct tq_endrec_id *v = reallocarray(out, nc, sizeof(*v));
			if (v == NULL) {
				closedir(d);
				free(out);
				return tq_err_set(err, TQ_ENOMEM, "out of memory");
			}
			out = v;
			cap = nc;
		}
		out[count++] = id;
	}
	closedir(d);
	*list = out;
	*n = count;
	return 0;
}

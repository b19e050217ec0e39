/*
 * logstore.c - a task's output log (logs/ID.log) and its sparse index
 * (logs/ID.idx): the writer the worker feeds from the task's pipes, and the
 * readers behind `taskq log`, `poll` and `wait`.
 *
 * What it does not do: decide what happens at the cap or on a full disk (the
 * worker kills the task), escape bytes for a terminal (the CLI), or fsync
 * (the log survives a crash of any process as it is; see "Crashes").
 *
 * Invariants
 * - Only bytes before the last '\n' of the log are trusted; they are whole
 *   records. Everything after it is a torn record: a writer that died inside
 *   write(2), or one writing right now.
 * - A record is valid when its first byte is o, e, O or E and it is at most
 *   RECORD_MAX bytes with its '\n'. Anything else ("garbage": a damaged disk,
 *   a stray append) is skipped up to the next '\n' by every scanner alike
 *   (forward, backward, index rebuild, writer reopen), so it never crashes,
 *   loops or disagrees about numbering; it is simply not a line.
 * - A record never spans two write(2)s. The records one tq_log_write makes
 *   go out together, up to BATCH_MAX per write(2): one syscall per line would
 *   make capture several times slower than writing the output to a file.
 *   With a hold (tq_log_hold) the records of several calls go out together:
 *   the worker reads its task's pipes a page at a time (spawn.h), and a
 *   write(2) per page read would cost as much again.
 * - A log file is made by its first output (issue 21): a task that prints
 *   nothing makes none, and a new inode a task was the costliest part of a
 *   short one on a busy ext4 (45-65% of a drain's CPU here went to ext4's
 *   inode allocation). Until then the writer has no descriptor (fd -1,
 *   later set) and the state of an empty log; its first write opens or
 *   makes the file as tq_log_open did before, so a file that appeared
 *   meanwhile is taken up where it ends. A reader finds no file, which reads
 *   as an empty log; tq_log_exists tells a log never made from one deleted
 *   by what the attempts stored (attempts.output_bytes).
 * - One writer per log, enforced with flock(LOCK_EX) on the log: a second
 *   writer is refused with TQ_EBUSY, at its tq_log_open when the first has
 *   made the file, else at its own first write, instead of interleaving its
 *   records and index entries with the first one's.
 * - Index entry k (INDEX_ENTRY = 64 bytes: eight little-endian int64s) is the
 *   state before record number k*TQ_LOG_INDEX_EVERY+1 (all numbering): its
 *   byte offset, the stdout records before it, the stdout and the stderr
 *   output bytes before it, a check word over those and k, and three reserved
 *   zero words. (The stderr record count is k*EVERY minus the stdout one.) The
 *   counts are what make per-stream totals, the output size and "line N of
 *   stderr" cost at most EVERY records of scanning however the two streams
 *   interleave; a per-stream offset index could not, since the other stream
 *   may write millions of lines after a stream's last indexed one. 64 divides
 *   the page size, so a reader never sees an entry half-written.
 * - The writer appends an entry after the log write holding its record, so
 *   an entry never points past complete data except after a power loss.
 *   Readers drop entries that fail the check or point at or past the end of
 *   complete records, make sure the last kept one sits on a record start,
 *   and fall back to a full scan when the one they seek to does not. The
 *   index is a cache: the log is the truth; an index write error only stops
 *   the writer from keeping it, and the next tq_log_open (or each reader, in
 *   memory) rebuilds what is missing.
 *
 * Crashes and errors
 * - A torn last record (no '\n') is repaired by the next tq_log_open: if it
 *   has a valid tag and at least one byte, it is cut off and written again as
 *   a piece (O/E) with a '\n' (its bytes were output, so they are kept, and an
 *   uppercase tag never claims a newline the task did not write); otherwise it
 *   is truncated. No reader ever saw it as a record, so rewriting it changes
 *   nothing anyone read.
 * - A failed log write (ENOSPC, EFBIG) keeps the whole records that reached
 *   the file and truncates the torn one after them, so nothing written before
 *   is damaged and the next record does not glue onto half a record; the
 *   records of that call that did not get out are lost, and so are the
 *   partial lines still buffered (they would follow the gap); the worker
 *   kills the task anyway. If even the truncate fails the writer refuses further
 *   writes.
 * - A log deleted under its writer (its file, or the whole logs/ directory,
 *   removed by hand or by a cleanup job) would swallow everything the task
 *   writes after: the writer would go on appending to a file no one can open
 *   again. So before each write the writer checks its file still has a name
 *   (fstat's st_nlink); when not, it starts a new log at the same path (and
 *   logs/ again if need be), whose first line, on stderr, says the lines
 *   before it were lost, and goes on there. The output cap still counts
 *   everything the task wrote. Only what was deleted is lost.
 */
#include "internal.h"
#include "queue/logstore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/sys.h"

#define RECORD_MAX (TQ_LOG_LINE_MAX + 2)          /* tag + bytes + '\n' */
#define CHUNK (64 * 1024)                          /* one pread */
#define SCAN_CAP (RECORD_MAX + CHUNK)              /* a record + one read */
#define BATCH_MAX (256 * 1024)                     /* records per write(2) */
#define INDEX_ENTRY 64                             /* eight int64 */
#define TRUST_BACK 8                               /* see disk_trusted */
#define PENDING_MAX (BATCH_MAX / 2 / TQ_LOG_INDEX_EVERY + 2)
#define NAME_MAX_LEN 64                            /* "logs/<int64>.log" */

/* The state before a record: where it starts and what came before it. */
struct lstate {
	int64_t off;
	int64_t rec;    /* records before it (the all numbering) */
	int64_t olines; /* stdout records before it */
	int64_t obytes; /* stdout output bytes before it */
	int64_t ebytes; /* stderr output bytes before it */
};

static int tag_valid(int c)
{
	return c == 'o' || c == 'e' || c == 'O' || c == 'E';
}

static enum tq_stream tag_stream(int c)
{
	return (c == 'o' || c == 'O') ? TQ_STREAM_STDOUT : TQ_STREAM_STDERR;
}

static int stream_valid(enum tq_stream s)
{
	return s == TQ_STREAM_ALL || s == TQ_STREAM_STDOUT || s == TQ_STREAM_STDERR;
}

static int64_t st_count(const struct lstate *s, enum tq_stream stream)
{
	if (stream == TQ_STREAM_STDOUT)
		return s->olines;
	if (stream == TQ_STREAM_STDERR)
		return s->rec - s->olines;
	return s->rec;
}

/* Account one valid record of len bytes (without tag and '\n'). */
static void st_apply(struct lstate *s, int tag, size_t len)
{
	int64_t out = (int64_t)len + (tag == 'o' || tag == 'e');

	s->off += (int64_t)len + 2;
	s->rec++;
	if (tag_stream(tag) == TQ_STREAM_STDOUT) {
		s->olines++;
		s->obytes += out;
	} else {
		s->ebytes += out;
	}
}

static void put_le64(unsigned char *p, int64_t v)
{
	uint64_t u = (uint64_t)v;

	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(u >> (8 * i));
}

static int64_t get_le64(const unsigned char *p)
{
	uint64_t u = 0;

	for (int i = 0; i < 8; i++)
		u |= (uint64_t)p[i] << (8 * i);
	return (int64_t)u;
}

/* splitmix64's finalizer: every input bit moves every output bit. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

/* The check word of entry k: catches an entry torn by a crash, zeroes from
 * a power loss, and an entry in the wrong place. */
static int64_t entry_check(int64_t k, const struct lstate *s)
{
	uint64_t h = mix((uint64_t)s->ebytes);

	h = mix((uint64_t)s->obytes ^ h);
	h = mix((uint64_t)s->olines ^ h);
	h = mix((uint64_t)s->off ^ h);
	return (int64_t)mix((uint64_t)k ^ h);
}

static void entry_encode(unsigned char *p, const struct lstate *s)
{
	memset(p, 0, INDEX_ENTRY); /* words 5-7: reserved, zero */
	put_le64(p, s->off);
	put_le64(p + 8, s->olines);
	put_le64(p + 16, s->obytes);
	put_le64(p + 24, s->ebytes);
	put_le64(p + 32, entry_check(s->rec / TQ_LOG_INDEX_EVERY, s));
}

/* 0: *s is entry k; 1: the check word does not match. */
static int entry_decode(const unsigned char *p, int64_t k, struct lstate *s)
{
	s->off = get_le64(p);
	s->olines = get_le64(p + 8);
	s->obytes = get_le64(p + 16);
	s->ebytes = get_le64(p + 24);
	s->rec = k * TQ_LOG_INDEX_EVERY;
	return get_le64(p + 32) == entry_check(k, s) ? 0 : 1;
}

static int retry_ftruncate(int fd, int64_t len)
{
	int r;

	do
		r = ftruncate(fd, (off_t)len);
	while (r < 0 && errno == EINTR);
	return r;
}

/* ------------------------------------------------------------------ */
/* Paths                                                              */

struct paths {
	char log[PATH_MAX], idx[PATH_MAX];
	char name[NAME_MAX_LEN], iname[NAME_MAX_LEN]; /* for messages */
};

static int paths_init(struct tq_sqlite *q, int64_t id, struct paths *p, struct tq_err *err)
{
	size_t n;

	if (tq_db_log_path(q, id, p->log, sizeof(p->log)) < 0)
		return tq_err_set(err, TQ_EINVAL, "log of task %lld: path too long", (long long)id);
	n = strlen(p->log);
	if (n < 4 || strcmp(p->log + n - 4, ".log") != 0)
		return tq_err_set(err, TQ_EINVAL, "log path %s does not end in .log", p->log);
	memcpy(p->idx, p->log, n - 4);
	memcpy(p->idx + n - 4, ".idx", 5);
	/* Both fit: an int64 has at most 20 digits. */
	snprintf(p->name, sizeof(p->name), "logs/%lld.log", (long long)id);
	snprintf(p->iname, sizeof(p->iname), "logs/%lld.idx", (long long)id);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Forward scanning                                                   */

struct scan {
	int fd;
	const char *name;
	int64_t base;      /* file offset of buf[0] */
	int64_t end;       /* stop here (a record boundary) */
	char *buf;         /* SCAN_CAP bytes, borrowed */
	size_t at, len;    /* unread records are buf[at, len) */
	int skipping;      /* inside a record longer than RECORD_MAX */
	int64_t skip_from; /* where that record began */
};

struct rec {
	int64_t off;      /* of the tag */
	int64_t size;     /* the whole record with tag and '\n' */
	int tag;          /* 0: garbage, skip it */
	const char *text; /* valid until the next scan_next */
	size_t len;
};

static void scan_init(struct scan *s, int fd, const char *name, char *buf,
		      int64_t from, int64_t end)
{
	*s = (struct scan){ .fd = fd, .name = name, .buf = buf, .base = from, .end = end };
}

/* Read more of the file behind buf[at, len). 1: read some; 0: nothing left. */
static int scan_fill(struct scan *s, struct tq_err *err)
{
	int64_t want;
	ssize_t got;

	if (s->at > 0) {
		memmove(s->buf, s->buf + s->at, s->len - s->at);
		s->base += (int64_t)s->at;
		s->len -= s->at;
		s->at = 0;
	}
	want = s->end - (s->base + (int64_t)s->len);
	if (want > CHUNK)
		want = CHUNK;
	if (want <= 0)
		return 0;
	got = tq_pread_full(s->fd, s->buf + s->len, (size_t)want, (off_t)(s->base + (int64_t)s->len));
	if (got < 0)
		return tq_err_sys(err, "read %s", s->name);
	s->len += (size_t)got;
	return got > 0; /* 0: the file shrank under us; stop there */
}

/* The next record in [from, end). Returns 1 with *r, 0 at the end, or an
 * error. Garbage comes back with tag 0 so callers can keep offsets right. */
static int scan_next(struct scan *s, struct rec *r, struct tq_err *err)
{
	for (;;) {
		char *p = s->buf + s->at;
		char *nl;
		int rc;

		if (s->base + (int64_t)s->at >= s->end)
			return 0;
		nl = memchr(p, '\n', s->len - s->at);
		if (nl != NULL) {
			int64_t stop = s->base + (nl - s->buf) + 1;
			r->off = s->skipping ? s->skip_from : s->base + (int64_t)s->at;
			r->size = stop - r->off;
			r->tag = (!s->skipping && r->size >= 2 && r->size <= RECORD_MAX &&
				  tag_valid((unsigned char)*p)) ? *p : 0;
			r->text = p + 1;
			r->len = r->tag ? (size_t)r->size - 2 : 0;
			s->at = (size_t)(nl - s->buf) + 1;
			s->skipping = 0;
			return 1;
		}
		if (s->len - s->at >= RECORD_MAX) {
			/* No '\n' within a record's bound: garbage; drop what we hold. */
			if (!s->skipping) {
				s->skipping = 1;
				s->skip_from = s->base + (int64_t)s->at;
			}
			s->base += (int64_t)s->len;
			s->at = s->len = 0;
		}
		if ((rc = scan_fill(s, err)) <= 0)
			return rc;
	}
}

/* Offset just past the last '\n' before size (0 if none): the end of the
 * complete records. Reads backwards in CHUNK blocks into buf. */
static int find_end(int fd, const char *name, char *buf, int64_t size, int64_t *end,
		    struct tq_err *err)
{
	int64_t pos = size;
	int rc = 0;

	*end = 0;
	while (pos > 0) {
		int64_t from = pos > CHUNK ? pos - CHUNK : 0;
		ssize_t got = tq_pread_full(fd, buf, (size_t)(pos - from), (off_t)from);
		char *nl;

		if (got < 0) {
			rc = tq_err_sys(err, "read %s", name);
			break;
		}
		if ((nl = memrchr(buf, '\n', (size_t)got)) != NULL) {
			*end = from + (nl - buf) + 1;
			break;
		}
		pos = from;
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* The index as a reader sees it: the valid entries on disk, then entries
 * made in memory by scanning the log past the last one.                */

struct view {
	const char *name;
	int fd, ifd;            /* owned by the reader, borrowed by the writer */
	char *buf;              /* SCAN_CAP bytes for every read of the log */
	int64_t end;            /* end of complete records */
	struct tq_log_file file; /* which file at the log's path was read */
	int64_t ndisk;          /* trusted entries in the index file */
	struct lstate *mem;     /* entries ndisk, ndisk + 1, ... */
	size_t nmem, capmem;
	struct lstate last;     /* the state at end: the totals */
};

/* Entry k from the file. 0: *s set; 1: missing or unreadable (the index
 * is a cache: any trouble with it means "do not use it"). */
static int disk_entry(const struct view *v, int64_t k, struct lstate *s)
{
	unsigned char b[INDEX_ENTRY];

	if (v->ifd < 0 ||
	    tq_pread_full(v->ifd, b, sizeof(b), (off_t)(k * INDEX_ENTRY)) != (ssize_t)sizeof(b))
		return 1;
	return entry_decode(b, k, s);
}

/* Is entry s plausible and does it sit on a record start? 1 yes, 0 no. */
static int entry_ok(const struct view *v, const struct lstate *s)
{
	unsigned char b[2];
	int64_t at = s->off > 0 ? s->off - 1 : 0;
	size_t n = s->off > 0 ? 2 : 1;

	if (s->off < 0 || s->off >= v->end || s->olines < 0 || s->olines > s->rec ||
	    s->obytes < 0 || s->ebytes < 0 || s->obytes > s->off ||
	    s->ebytes > s->off - s->obytes)
		return 0;
	if (tq_pread_full(v->fd, b, n, (off_t)at) != (ssize_t)n)
		return 0;
	return n == 1 ? tag_valid(b[0]) : (b[0] == '\n' && tag_valid(b[1]));
}

static int64_t view_count(const struct view *v)
{
	return v->ndisk + (int64_t)v->nmem;
}

static int view_entry(const struct view *v, int64_t k, struct lstate *s)
{
	if (k >= v->ndisk) {
		*s = v->mem[k - v->ndisk];
		return 0;
	}
	return disk_entry(v, k, s);
}

static int view_push(struct view *v, const struct lstate *s, struct tq_err *err)
{
	if (v->nmem == v->capmem) {
		size_t cap = v->capmem ? v->capmem * 2 : 64;
		struct lstate *m = reallocarray(v->mem, cap, sizeof(*m));
		if (m == NULL)
			return tq_err_set(err, TQ_ENOMEM, "read %s: out of memory", v->name);
		v->mem = m;
		v->capmem = cap;
	}
	v->mem[v->nmem++] = *s;
	return 0;
}

/* How many entries of the index file to trust: those before the first that
 * is damaged or points at or past the end (a crash, or a writer ahead of
 * our snapshot), back to the last that checks out and sits on a record
 * start; if none of the last TRUST_BACK does, none (rebuild from the log). */
static int64_t disk_trusted(const struct view *v)
{
	struct stat sb;
	struct lstate s;
	int64_t lo = 0, hi;

	if (v->ifd < 0 || fstat(v->ifd, &sb) < 0)
		return 0;
	hi = (int64_t)sb.st_size / INDEX_ENTRY;
	/* Offsets grow with k: find the first entry at or past the end. */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (disk_entry(v, mid, &s) == 0 && s.off < v->end)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int64_t k = lo - 1; k >= 0 && k >= lo - TRUST_BACK; k--)
		if (disk_entry(v, k, &s) == 0 && entry_ok(v, &s))
			return k + 1;
	return 0;
}

/* Find the totals (and entries past the file's) by scanning from the last
 * trusted entry to the end: at most EVERY records when the index is current. */
static int view_build(struct view *v, int use_disk, struct tq_err *err)
{
	struct lstate s = { 0 };
	struct scan sc;
	struct rec r;
	int rc;

	v->nmem = 0;
	v->ndisk = use_disk ? disk_trusted(v) : 0;
	if (v->ndisk > 0 && disk_entry(v, v->ndisk - 1, &s) != 0)
		v->ndisk = 0, s = (struct lstate){ 0 };
	scan_init(&sc, v->fd, v->name, v->buf, s.off, v->end);
	while ((rc = scan_next(&sc, &r, err)) > 0) {
		if (!r.tag)
			continue;
		s.off = r.off;
		if (s.rec % TQ_LOG_INDEX_EVERY == 0 && s.rec / TQ_LOG_INDEX_EVERY >= v->ndisk &&
		    (rc = view_push(v, &s, err)) < 0)
			break;
		st_apply(&s, r.tag, r.len);
	}
	s.off = v->end;
	v->last = s;
	return rc;
}

static void view_release(struct view *v)
{
	free(v->mem);
	free(v->buf);
	v->mem = NULL;
	v->buf = NULL;
	v->nmem = v->capmem = 0;
}

/* The entry to start from for line o (1-based) of stream: the last one
 * with fewer than o lines of that stream before it. 0 with *s; 1 if the
 * entry on disk proved wrong (rebuild without the index). */
static int view_seek(const struct view *v, enum tq_stream stream, int64_t o,
		     struct lstate *s)
{
	int64_t n = view_count(v), k;

	if (n == 0) {
		*s = (struct lstate){ 0 };
		return 0;
	}
	if (stream == TQ_STREAM_ALL) {
		k = (o - 1) / TQ_LOG_INDEX_EVERY;
		if (k > n - 1)
			k = n - 1;
	} else {
		int64_t lo = 0, hi = n - 1;
		while (lo < hi) {
			int64_t mid = lo + (hi - lo + 1) / 2;
			if (view_entry(v, mid, s) != 0)
				return 1;
			if (st_count(s, stream) <= o - 1)
				lo = mid;
			else
				hi = mid - 1;
		}
		k = lo;
	}
	if (view_entry(v, k, s) != 0)
		return 1;
	return (k < v->ndisk && !entry_ok(v, s)) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */

/* Deliver count lines of stream numbered from `first`, scanning from
 * offset `from` where `base` lines of that stream came before. */
static int deliver(const struct view *v, int64_t from, enum tq_stream stream,
		   int64_t base, int64_t first, int64_t count, tq_log_line_cb cb,
		   void *arg, struct tq_err *err)
{
	struct scan sc;
	struct rec r;
	int64_t n = base, done = 0;
	int rc = 0;

	scan_init(&sc, v->fd, v->name, v->buf, from, v->end);
	while (done < count && (rc = scan_next(&sc, &r, err)) > 0) {
		struct tq_log_line line;

		if (!r.tag || (stream != TQ_STREAM_ALL && tag_stream(r.tag) != stream))
			continue;
		if (++n < first)
			continue;
		line = (struct tq_log_line){ .n = n, .stream = tag_stream(r.tag),
					     .newline = r.tag == 'o' || r.tag == 'e',
					     .text = r.text, .len = r.len };
		done++;
		if (cb(&line, arg) != 0)
			break;
	}
	return rc < 0 ? rc : 0;
}

/* Read exactly n bytes at off. */
static int pread_exact(const struct view *v, void *buf, size_t n, int64_t off,
		       struct tq_err *err)
{
	ssize_t got = tq_pread_full(v->fd, buf, n, (off_t)off);

	if (got < 0)
		return tq_err_sys(err, "read %s", v->name);
	if ((size_t)got != n)
		return tq_err_set(err, TQ_EIO, "read %s: file shrank while reading", v->name);
	return 0;
}

/* Where the last `want` valid records before v->end begin, reading
 * backwards in CHUNK blocks; *found may be less than want for a short log. */
static int tail_start(const struct view *v, int64_t want, int64_t *start,
		      int64_t *found, struct tq_err *err)
{
	unsigned char *buf = (unsigned char *)v->buf;
	int64_t pos = v->end - 1, rec_end = v->end; /* skip the final '\n' */
	int rc;

	*start = v->end;
	*found = 0;
	while (*found < want && pos > 0) {
		int64_t from = pos > CHUNK ? pos - CHUNK : 0;
		size_t lim = (size_t)(pos - from);
		unsigned char *nl;

		/* One extra byte: the tag after a '\n' at the block's end. */
		if ((rc = pread_exact(v, buf, lim + 1, from, err)) < 0)
			return rc;
		while (*found < want && (nl = memrchr(buf, '\n', lim)) != NULL) {
			int64_t rstart = from + (nl - buf) + 1;
			if (rec_end - rstart <= RECORD_MAX && tag_valid(nl[1])) {
				(*found)++;
				*start = rstart;
			}
			rec_end = rstart;
			lim = (size_t)(nl - buf);
		}
		pos = from;
	}
	if (*found < want && pos == 0 && rec_end > 0) {
		/* The first record of the file has no '\n' before it. */
		if ((rc = pread_exact(v, buf, 1, 0, err)) < 0)
			return rc;
		if (rec_end <= RECORD_MAX && tag_valid(buf[0])) {
			(*found)++;
			*start = 0;
		}
	}
	return 0;
}

/* Open a log for reading: the log, its index if any (trouble with the
 * index is ignored: it is a cache), a buffer, the end of complete records.
 * A log that does not exist leaves v->fd at -1 and returns 0. */
static int view_open(struct view *v, const struct paths *p, struct tq_err *err)
{
	struct stat sb;

	*v = (struct view){ .name = p->name, .fd = -1, .ifd = -1 };
	if ((v->fd = tq_open(p->log, O_RDONLY | O_NOFOLLOW, 0)) < 0) {
		if (errno == ENOENT)
			return 0;
		return tq_err_sys(err, "open %s", p->name);
	}
	if (fstat(v->fd, &sb) < 0)
		return tq_err_sys(err, "stat %s", p->name);
	if (!S_ISREG(sb.st_mode))
		return tq_err_set(err, TQ_EINVAL, "%s is not a regular file", p->name);
	v->file = (struct tq_log_file){ (uint64_t)sb.st_dev, (uint64_t)sb.st_ino };
	if ((v->buf = malloc(SCAN_CAP)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "read %s: out of memory", p->name);
	v->ifd = tq_open(p->idx, O_RDONLY | O_NOFOLLOW, 0);
	return find_end(v->fd, p->name, v->buf, (int64_t)sb.st_size, &v->end, err);
}

static void view_close(struct view *v)
{
	view_release(v);
	tq_close(v->ifd);
	tq_close(v->fd);
	v->ifd = v->fd = -1;
}

static int check_range(const struct tq_log_range *r, struct tq_err *err)
{
	if (r == NULL || !stream_valid(r->stream) || r->offset < 0 || r->limit < -1 ||
	    (r->offset == 0 && r->tail < 0))
		return tq_err_set(err, TQ_EINVAL, "log read: bad range");
	return 0;
}

/* The lines [first, first + count) that range r asks for, of `all`. */
static int64_t range_lines(const struct tq_log_range *r, int64_t all, int64_t *first)
{
	int64_t count;

	if (r->offset > 0) {
		*first = r->offset;
		count = all - r->offset + 1;
		if (r->limit >= 0 && r->limit < count)
			count = r->limit;
	} else {
		count = r->tail < all ? r->tail : all;
		*first = all - count + 1;
	}
	return count;
}

int tq_sqlite_log_read(struct tq_queue *base, int64_t id, const struct tq_log_range *r,
		tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	return tq_sqlite_log_read_file(&q->base, id, r, cb, arg, total, NULL, err);
}

int tq_sqlite_log_read_file(struct tq_queue *base, int64_t id, const struct tq_log_range *r,
		     tq_log_line_cb cb, void *arg, int64_t *total, struct tq_log_file *file,
		     struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct view v = { .fd = -1, .ifd = -1 };
	struct paths p;
	struct lstate s;
	int64_t all, first = 1, count, start = 0, found = 0;
	int use_disk = 1, rc;

	if (total)
		*total = 0;
	if ((rc = check_range(r, err)) < 0 || (rc = paths_init(q, id, &p, err)) < 0)
		return rc;
	if ((rc = view_open(&v, &p, err)) < 0 || v.fd < 0)
		goto out;
	if (file != NULL) {
		/* another file than the reader's: its lines are numbered from
		 * 1 again, so none is read at the reader's offset */
		int moved = file->ino != 0 && (file->ino != v.file.ino ||
					       (file->dev != 0 && file->dev != v.file.dev));
		*file = v.file;
		if (moved) {
			rc = TQ_ESTALE;
			goto out;
		}
	}
again:
	if ((rc = view_build(&v, use_disk, err)) < 0)
		goto out;
	all = st_count(&v.last, r->stream);
	if (total)
		*total = all;
	if ((count = range_lines(r, all, &first)) <= 0)
		goto out;
	if (r->offset == 0 && r->stream == TQ_STREAM_ALL) {
		/* The tail of everything: read backwards from the end. */
		if ((rc = tail_start(&v, count, &start, &found, err)) == 0)
			rc = deliver(&v, start, TQ_STREAM_ALL, all - found, all - found + 1,
				     found, cb, arg, err);
		goto out;
	}
	if (view_seek(&v, r->stream, first, &s) != 0) {
		/* The index lied about an entry: do without it. */
		use_disk = 0;
		goto again;
	}
	rc = deliver(&v, s.off, r->stream, st_count(&s, r->stream), first, count, cb, arg, err);
out:
	view_close(&v);
	return rc;
}

int tq_sqlite_log_exists(struct tq_queue *base, int64_t id)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct tq_err err = TQ_ERR_INIT;
	struct paths p;
	struct stat sb;
	sqlite3_stmt *st;
	int rc;

	if ((rc = paths_init(q, id, &p, &err)) < 0)
		return rc;
	if (lstat(p.log, &sb) == 0)
		return 1;
	if (errno != ENOENT)
		return tq_err_from_errno(errno);
	/* no file: there never was one if the task started and printed
	 * nothing (the first output makes it); else it is gone, or there is
	 * no log yet (a task that never ran) */
	if ((st = tq_db_stmt(q, ST_LOG_NEVER, &err)) == NULL)
		return err.code;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	rc = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : tq_db_error(q, rc, &err, "log");
	tq_db_done(st);
	return rc;
}

int tq_sqlite_log_stat(struct tq_queue *base, int64_t id, enum tq_stream stream,
		int64_t *lines, int64_t *output_bytes, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct view v = { .fd = -1, .ifd = -1 };
	struct paths p;
	int rc;

	if (lines)
		*lines = 0;
	if (output_bytes)
		*output_bytes = 0;
	if (!stream_valid(stream))
		return tq_err_set(err, TQ_EINVAL, "log stat: bad stream");
	if ((rc = paths_init(q, id, &p, err)) < 0)
		return rc;
	if ((rc = view_open(&v, &p, err)) < 0 || v.fd < 0 ||
	    (rc = view_build(&v, 1, err)) < 0)
		goto out;
	if (lines)
		*lines = st_count(&v.last, stream);
	if (output_bytes)
		*output_bytes = stream == TQ_STREAM_STDOUT ? v.last.obytes :
				stream == TQ_STREAM_STDERR ? v.last.ebytes :
				v.last.obytes + v.last.ebytes;
out:
	view_close(&v);
	return rc;
}

int tq_sqlite_log_remove(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct paths p;
	int rc;

	if ((rc = paths_init(q, id, &p, err)) < 0)
		return rc;
	/* The index first: an index without its log is never read, a log
	 * without its index is. */
	if (unlink(p.idx) < 0 && errno != ENOENT)
		return tq_err_sys(err, "remove %s", p.iname);
	if (unlink(p.log) < 0 && errno != ENOENT)
		return tq_err_sys(err, "remove %s", p.name);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */

struct part {
	char *buf;       /* TQ_LOG_LINE_MAX bytes */
	size_t len;
	int64_t since;   /* when its first byte arrived */
};

struct tq_sqlite_log {
	struct tq_log base;        /* first: tq_sqlite_log_of */
	char name[NAME_MAX_LEN];
	struct paths paths;        /* to start the log again if it is deleted */
	int fd, ifd;
	int64_t cap;               /* 0: none */
	int64_t taken;             /* output bytes accepted (stored, batched, buffered) */
	int capped;
	int broken;                /* a failed write could not be undone */
	struct lstate done;        /* what is in the file */
	struct lstate pend;        /* ... plus the batch */
	int64_t nidx;              /* entries in the index file; -1: not kept */
	int idx_later;             /* no index file yet: made when entry 1 is due */
	struct lstate pidx[PENDING_MAX]; /* entries for records in the batch */
	int npidx;
	char *batch;
	size_t blen;
	struct part part[2];       /* stdout, stderr */
	int relinked;              /* times the log was started again */
	int later;                 /* no file yet: made by the first write */
	size_t hold;               /* complete records kept back up to this */
	int64_t hold_ms;           /* ... and for at most this long */
	int64_t held_since;        /* when the first record kept back was taken */
};

/* The writer behind a handle this backend made (base is its first member). */
static struct tq_sqlite_log *tq_sqlite_log_of(struct tq_log *base)
{
	return (struct tq_sqlite_log *)base;
}

static const struct tq_sqlite_log *tq_sqlite_log_of_c(const struct tq_log *base)
{
	return (const struct tq_sqlite_log *)base;
}

static int broken_error(const struct tq_sqlite_log *l, struct tq_err *err)
{
	return tq_err_set(err, TQ_EIO, "log %s: unusable after a failed write", l->name);
}

static int cap_error(const struct tq_sqlite_log *l, struct tq_err *err)
{
	char size[32];

	tq_format_size(l->cap, size, sizeof(size));
	return tq_err_set(err, TQ_ECAP, "output cap of %s reached", size);
}

/*
 * Append the batch's index entries; on any error stop keeping the index
 * (trimmed to whole entries) rather than fail a write that succeeded.
 *
 * A log's index file is made only when its second entry is due (record
 * TQ_LOG_INDEX_EVERY + 1): entry 0, the state before record 1, is all
 * zeros, and a reader without an index starts there anyway (view_build),
 * so a log of fewer records reads the same without one. Most tasks' logs
 * are that small, and a new inode an attempt is the costliest part of a
 * short task on a busy ext4 (contain.h; measured here: 45% of a drain's
 * CPU was ext4's inode allocation for the log and its index). Until then
 * entry 0 is held (nidx counts it) and written first into the new file.
 */
static void write_index(struct tq_sqlite_log *l)
{
	unsigned char b[(PENDING_MAX + 1) * INDEX_ENTRY];
	size_t n = 0;
	int64_t on_disk = l->nidx;

	if (l->nidx < 0 || l->npidx == 0)
		return;
	if (l->idx_later) {
		if (l->nidx + l->npidx <= 1) {
			l->nidx += l->npidx; /* entry 0: held */
			return;
		}
		l->idx_later = 0;
		l->ifd = tq_open(l->paths.idx, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
		if (l->ifd < 0) {
			l->nidx = -1;
			return;
		}
		if (l->nidx == 1)
			entry_encode(b, &(struct lstate){ 0 });
		n = (size_t)l->nidx;
		on_disk = 0;
	}
	for (int i = 0; i < l->npidx; i++)
		entry_encode(b + (n + (size_t)i) * INDEX_ENTRY, &l->pidx[i]);
	n += (size_t)l->npidx;
	if (tq_write_all(l->ifd, b, n * INDEX_ENTRY) < 0) {
		retry_ftruncate(l->ifd, on_disk * INDEX_ENTRY);
		l->nidx = -1;
		return;
	}
	l->nidx = on_disk + (int64_t)n;
}

/* A batch write failed after put bytes reached the file. Keep the whole
 * records among them (a reader may have seen them already), cut the torn
 * one so the next record does not glue onto it, drop the rest. */
static int write_failed(struct tq_sqlite_log *l, size_t put, struct tq_err *err)
{
	int saved = errno; /* the caller reports it (ENOSPC, EFBIG, EIO) */
	int rc = tq_err_sys(err, "log write %s", l->name);
	const char *nl = put > 0 ? memrchr(l->batch, '\n', put) : NULL;
	size_t keep = nl ? (size_t)(nl - l->batch) + 1 : 0;
	struct lstate s = l->done;
	int npidx = 0;

	if (retry_ftruncate(l->fd, l->done.off + (int64_t)keep) < 0)
		l->broken = 1;
	for (const char *p = l->batch; p < l->batch + keep; ) {
		const char *e = memchr(p, '\n', (size_t)(l->batch + keep - p));
		st_apply(&s, (unsigned char)*p, (size_t)(e - p) - 1);
		p = e + 1;
	}
	while (npidx < l->npidx && l->pidx[npidx].off < s.off)
		npidx++;
	l->npidx = npidx;
	l->done = l->pend = s;
	l->blen = 0;
	/* A partial line still buffered would follow the lost records: written
	 * later (at close, or when space returns) it would glue a fragment onto
	 * output that is missing. Drop it with them. */
	l->part[0].len = l->part[1].len = 0;
	write_index(l);
	l->npidx = 0;
	errno = saved;
	return rc;
}

static int flush_batch(struct tq_sqlite_log *l, struct tq_err *err)
{
	size_t put = 0;

	/* Not tq_write_all: on failure we need to know how much got out. */
	while (put < l->blen) {
		ssize_t w = tq_write(l->fd, l->batch + put, l->blen - put);
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return write_failed(l, put, err);
		}
		put += (size_t)w;
	}
	l->done = l->pend;
	l->blen = 0;
	write_index(l);
	l->npidx = 0;
	return 0;
}

/* Add one record (tag, a, b, '\n') to the batch. */
static int add_record(struct tq_sqlite_log *l, int tag, const char *a, size_t na,
		      const char *b, size_t nb, struct tq_err *err)
{
	size_t size = na + nb + 2;
	char *p;
	int rc;

	if ((l->blen + size > BATCH_MAX || l->npidx == PENDING_MAX) &&
	    (rc = flush_batch(l, err)) < 0)
		return rc;
	if (l->pend.rec % TQ_LOG_INDEX_EVERY == 0 && l->nidx >= 0) {
		if (l->pend.rec / TQ_LOG_INDEX_EVERY == l->nidx + l->npidx)
			l->pidx[l->npidx++] = l->pend;
		else
			l->nidx = -1; /* out of step (cannot happen): stop keeping it */
	}
	p = l->batch + l->blen;
	*p++ = (char)tag;
	if (na > 0)
		memcpy(p, a, na);
	if (nb > 0)
		memcpy(p + na, b, nb);
	p[na + nb] = '\n';
	l->blen += size;
	st_apply(&l->pend, tag, na + nb);
	return 0;
}

static int flush_part(struct tq_sqlite_log *l, enum tq_stream s, struct tq_err *err)
{
	struct part *pt = &l->part[s - 1];
	int rc;

	if (pt->len == 0)
		return 0;
	if ((rc = add_record(l, s == TQ_STREAM_STDOUT ? 'O' : 'E', pt->buf, pt->len,
			     NULL, 0, err)) < 0)
		return rc;
	pt->len = 0;
	return 0;
}

/* Cut n bytes of stream s into records; keep an unfinished line. */
static int feed(struct tq_sqlite_log *l, enum tq_stream s, const char *p, size_t n,
		int64_t now_ms, struct tq_err *err)
{
	struct part *pt = &l->part[s - 1];
	int lower = s == TQ_STREAM_STDOUT ? 'o' : 'e';
	int upper = s == TQ_STREAM_STDOUT ? 'O' : 'E';
	int rc;

	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t seg = nl ? (size_t)(nl - p) : n;

		if (pt->len + seg > TQ_LOG_LINE_MAX) {
			/* The line is longer than a record: cut a piece. */
			size_t t = TQ_LOG_LINE_MAX - pt->len;
			if ((rc = add_record(l, upper, pt->buf, pt->len, p, t, err)) < 0)
				return rc;
			pt->len = 0;
			p += t;
			n -= t;
		} else if (nl != NULL) {
			if ((rc = add_record(l, lower, pt->buf, pt->len, p, seg, err)) < 0)
				return rc;
			pt->len = 0;
			p += seg + 1;
			n -= seg + 1;
		} else {
			if (pt->len == 0)
				pt->since = now_ms;
			memcpy(pt->buf + pt->len, p, seg);
			pt->len += seg;
			n = 0;
		}
	}
	return 0;
}

static int open_locked(struct tq_sqlite_log *l, const struct paths *p, int flags,
		       int64_t *size, struct tq_err *err);
static int load_state(struct tq_sqlite_log *l, const struct paths *p, int64_t size,
		      struct tq_err *err);

/* The first output of a log that had no file at tq_log_open: open or make
 * it now, as tq_log_open would have (a file made meanwhile, by a writer
 * that has ended, is taken up where it ends). */
static int make_file(struct tq_sqlite_log *l, struct tq_err *err)
{
	int64_t size = 0;
	int rc;

	if ((rc = open_locked(l, &l->paths, O_CREAT, &size, err)) < 0 ||
	    (rc = load_state(l, &l->paths, size, err)) < 0) {
		tq_close(l->ifd);
		tq_close(l->fd); /* and its flock: the next write tries again */
		l->ifd = l->fd = -1;
		return rc;
	}
	l->later = 0;
	return 0;
}

/*
 * The log's file has lost its last name (deleted by hand, or logs/ with it):
 * start a new log at its path, first a line that says the lines before it
 * were lost, and go on writing there (see "Crashes and errors" above). When
 * no new log can be made, or someone else's file is at the path already, go
 * on as before; the next write tries again.
 */
static void relink_if_deleted(struct tq_sqlite_log *l)
{
	struct tq_err e = TQ_ERR_INIT;
	struct stat sb;
	int old_fd = l->fd, old_ifd = l->ifd, n;
	int64_t taken = l->taken, size = 0;
	char note[128];

	if (l->fd < 0 || l->broken || l->blen != 0 || fstat(l->fd, &sb) < 0 ||
	    sb.st_nlink > 0)
		return;
	l->fd = l->ifd = -1;
	if (open_locked(l, &l->paths, O_CREAT, &size, &e) < 0 || size != 0) {
		tq_close(l->fd);
		l->fd = old_fd;
		l->ifd = old_ifd;
		return;
	}
	tq_close(old_ifd);
	tq_close(old_fd);
	/* the index of the deleted log, if only the .log went */
	(void)unlink(l->paths.idx);
	if (load_state(l, &l->paths, 0, &e) < 0) {
		l->broken = 1; /* out of memory: the next write says so */
		return;
	}
	l->taken = taken; /* the cap counts all the task wrote */
	l->relinked++;
	n = snprintf(note, sizeof(note),
		     "taskq: %s was deleted while the task ran; the lines before this one are lost",
		     l->name);
	if (add_record(l, 'e', note, (size_t)n, NULL, 0, &e) == 0)
		(void)flush_batch(l, &e);
}

int tq_sqlite_log_write(struct tq_log *base, enum tq_stream stream, const void *buf, size_t n,
		 int64_t now_ms, struct tq_err *err)
{
	struct tq_sqlite_log *l = tq_sqlite_log_of(base);
	size_t take = n;
	int over = 0, rc, was_held;

	if (stream != TQ_STREAM_STDOUT && stream != TQ_STREAM_STDERR)
		return tq_err_set(err, TQ_EINVAL, "log write %s: bad stream", l->name);
	if (l->broken)
		return broken_error(l, err);
	if (l->capped)
		return cap_error(l, err);
	if (n == 0)
		return 0;
	if (l->later && (rc = make_file(l, err)) < 0)
		return rc;
	relink_if_deleted(l);
	if (l->cap > 0 && (l->taken >= l->cap || (uint64_t)(l->cap - l->taken) < n)) {
		take = l->taken >= l->cap ? 0 : (size_t)(l->cap - l->taken);
		over = 1;
	}
	l->taken += (int64_t)take;
	was_held = l->blen > 0;
	rc = feed(l, stream, buf, take, now_ms, err);
	if (rc == 0 && over) {
		/* The last bytes before the cap go out as pieces, both streams. */
		l->capped = 1;
		if ((rc = flush_part(l, TQ_STREAM_STDOUT, err)) == 0)
			rc = flush_part(l, TQ_STREAM_STDERR, err);
	}
	if (rc == 0 && (over || l->blen >= l->hold))
		rc = flush_batch(l, err);
	else if (rc == 0 && !was_held)
		l->held_since = now_ms;
	if (rc == 0 && over)
		rc = cap_error(l, err);
	return rc;
}

void tq_sqlite_log_hold(struct tq_log *base, size_t bytes, int64_t ms)
{
	struct tq_sqlite_log *l = tq_sqlite_log_of(base);
	l->hold = bytes;
	l->hold_ms = ms;
}

size_t tq_sqlite_log_held(const struct tq_log *base)
{
	const struct tq_sqlite_log *l = tq_sqlite_log_of_c(base);
	return l->blen;
}

int tq_sqlite_log_flush(struct tq_log *base, struct tq_err *err)
{
	struct tq_sqlite_log *l = tq_sqlite_log_of(base);
	if (l->broken)
		return broken_error(l, err);
	return flush_batch(l, err);
}

int tq_sqlite_log_tick(struct tq_log *base, int64_t now_ms, int64_t *next_ms, struct tq_err *err)
{
	struct tq_sqlite_log *l = tq_sqlite_log_of(base);
	int64_t next = -1, due;
	int rc = 0, pieces = 0;

	if (l->part[0].len > 0 || l->part[1].len > 0)
		relink_if_deleted(l);
	if (l->broken)
		rc = broken_error(l, err);
	for (int s = TQ_STREAM_STDOUT; rc == 0 && s <= TQ_STREAM_STDERR; s++) {
		struct part *pt = &l->part[s - 1];
		due = pt->since + TQ_LOG_PARTIAL_MS;
		if (pt->len == 0)
			continue;
		if (now_ms >= due) {
			rc = flush_part(l, (enum tq_stream)s, err);
			pieces = 1;
		} else if (next < 0 || due - now_ms < next) {
			next = due - now_ms;
		}
	}
	/* held records go out when their time is up (or with due pieces) */
	due = l->held_since + l->hold_ms;
	if (rc == 0 && (pieces || l->blen >= l->hold || now_ms >= due))
		rc = flush_batch(l, err);
	else if (rc == 0 && l->blen > 0 && (next < 0 || due - now_ms < next))
		next = due - now_ms;
	if (next_ms)
		*next_ms = next;
	return rc;
}

int tq_sqlite_log_end_stream(struct tq_log *base, enum tq_stream stream, struct tq_err *err)
{
	struct tq_sqlite_log *l = tq_sqlite_log_of(base);
	int rc;

	if (stream != TQ_STREAM_STDOUT && stream != TQ_STREAM_STDERR)
		return tq_err_set(err, TQ_EINVAL, "log %s: bad stream", l->name);
	if (l->part[stream - 1].len > 0)
		relink_if_deleted(l);
	if (l->broken)
		return broken_error(l, err);
	if ((rc = flush_part(l, stream, err)) < 0)
		return rc;
	return flush_batch(l, err);
}

void tq_sqlite_log_position(const struct tq_log *base, int64_t *offset, int64_t *line)
{
	const struct tq_sqlite_log *l = tq_sqlite_log_of_c(base);
	if (offset)
		*offset = l->done.off;
	if (line)
		*line = l->done.rec + 1;
}

int64_t tq_sqlite_log_output_bytes(const struct tq_log *base)
{
	const struct tq_sqlite_log *l = tq_sqlite_log_of_c(base);
	return l->done.obytes + l->done.ebytes;
}

int tq_sqlite_log_relinked(const struct tq_log *base)
{
	const struct tq_sqlite_log *l = tq_sqlite_log_of_c(base);
	return l->relinked;
}

static void log_free(struct tq_sqlite_log *l)
{
	tq_close(l->ifd);
	tq_close(l->fd); /* releases the flock */
	free(l->batch);
	free(l->part[0].buf);
	free(l->part[1].buf);
	free(l);
}

int tq_sqlite_log_close(struct tq_log *base, struct tq_err *err)
{
	struct tq_sqlite_log *l = tq_sqlite_log_of(base);
	int rc = 0;

	if (l == NULL)
		return 0;
	if (l->part[0].len > 0 || l->part[1].len > 0)
		relink_if_deleted(l);
	if (!l->broken) {
		rc = flush_part(l, TQ_STREAM_STDOUT, err);
		if (rc == 0)
			rc = flush_part(l, TQ_STREAM_STDERR, err);
		if (rc == 0)
			rc = flush_batch(l, err);
	}
	log_free(l);
	return rc;
}

/* Bring the index file up to the log: keep its trusted entries, append the
 * ones the scan made. Failure only means the index is not kept. */
static void heal_index(struct tq_sqlite_log *l, const struct view *v)
{
	unsigned char *b = NULL;
	size_t n = v->nmem;

	l->nidx = -1;
	if (l->ifd < 0 || retry_ftruncate(l->ifd, v->ndisk * INDEX_ENTRY) < 0 ||
	    lseek(l->ifd, (off_t)(v->ndisk * INDEX_ENTRY), SEEK_SET) < 0)
		return;
	if (n > 0) {
		if ((b = reallocarray(NULL, n, INDEX_ENTRY)) == NULL)
			return;
		for (size_t i = 0; i < n; i++)
			entry_encode(b + i * INDEX_ENTRY, &v->mem[i]);
		if (tq_write_all(l->ifd, b, n * INDEX_ENTRY) < 0) {
			retry_ftruncate(l->ifd, v->ndisk * INDEX_ENTRY);
			free(b);
			return;
		}
		free(b);
	}
	l->nidx = v->ndisk + (int64_t)n;
}

/* After a crash: a torn last record in [end, size). Keep its bytes as a
 * piece if it looks like a record (see the top of the file), else drop it.
 * Its bytes go to *torn (n: how many, 0: none). */
static int read_torn(struct tq_sqlite_log *l, int64_t end, int64_t size, char *torn,
		     size_t *n, struct tq_err *err)
{
	int64_t len = size - end;

	*n = 0;
	if (len >= 2 && len < RECORD_MAX) {
		if (tq_pread_full(l->fd, torn, (size_t)len, (off_t)end) != (ssize_t)len)
			return tq_err_sys(err, "read %s", l->name);
		if (tag_valid((unsigned char)torn[0]) && memchr(torn, '\n', (size_t)len) == NULL)
			*n = (size_t)len;
	}
	if (retry_ftruncate(l->fd, end) < 0)
		return tq_err_sys(err, "truncate %s", l->name);
	return 0;
}

static struct tq_sqlite_log *log_alloc(const struct paths *p, int64_t cap)
{
	struct tq_sqlite_log *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->fd = l->ifd = -1;
	l->cap = cap;
	memcpy(l->name, p->name, sizeof(l->name));
	l->paths = *p;
	if ((l->batch = malloc(BATCH_MAX)) == NULL ||
	    (l->part[0].buf = malloc(TQ_LOG_LINE_MAX)) == NULL ||
	    (l->part[1].buf = malloc(TQ_LOG_LINE_MAX)) == NULL) {
		log_free(l);
		return NULL;
	}
	return l;
}

/* Open the log (flags O_CREAT: or make it) and become its one writer;
 * *size: its size. Without O_CREAT, a log not there is TQ_ENOTFOUND. */
static int open_locked(struct tq_sqlite_log *l, const struct paths *p, int flags,
		       int64_t *size, struct tq_err *err)
{
	struct stat sb;

	/* O_APPEND: even a stray second writer could not overwrite records. */
	l->fd = tq_open(p->log, O_RDWR | O_APPEND | O_NOFOLLOW | flags, 0600);
	if (l->fd < 0 && errno == ENOENT && !(flags & O_CREAT))
		return TQ_ENOTFOUND;
	if (l->fd < 0 && errno == ENOENT) {
		/* logs/ itself is gone (removed by hand while tasks were
		 * queued): make it again, as opening the store would */
		char dir[PATH_MAX], *slash;

		memcpy(dir, p->log, sizeof(dir));
		if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0700) == 0 || errno == EEXIST)
				l->fd = tq_open(p->log, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW,
						0600);
		}
	}
	if (l->fd < 0)
		return tq_err_sys(err, "open %s", p->name);
	if (flock(l->fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ?
		       tq_err_set(err, TQ_EBUSY, "log %s is being written by another process",
				  p->name) :
		       tq_err_sys(err, "lock %s", p->name);
	if (fstat(l->fd, &sb) < 0)
		return tq_err_sys(err, "stat %s", p->name);
	if (!S_ISREG(sb.st_mode))
		return tq_err_set(err, TQ_EINVAL, "%s is not a regular file", p->name);
	*size = (int64_t)sb.st_size;
	return 0;
}

/* Find where the last attempt stopped: end, counts, output size; repair a
 * torn last record and bring the index file up to date. */
static int load_state(struct tq_sqlite_log *l, const struct paths *p, int64_t size,
		      struct tq_err *err)
{
	/* The view borrows the writer's descriptors. */
	struct view v = { .name = p->name, .fd = l->fd, .ifd = -1 };
	size_t ntorn = 0;
	int rc, missing;

	if ((v.buf = malloc(SCAN_CAP)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "open %s: out of memory", p->name);
	/* The torn record is held in the (still empty) batch buffer. */
	if ((rc = find_end(l->fd, p->name, v.buf, size, &v.end, err)) == 0 && v.end < size)
		rc = read_torn(l, v.end, size, l->batch, &ntorn, err);
	if (rc == 0) {
		v.ifd = l->ifd = tq_open(p->idx, O_RDWR | O_NOFOLLOW, 0);
		missing = l->ifd < 0 && errno == ENOENT;
		l->idx_later = 0;
		if ((rc = view_build(&v, 1, err)) == 0 && missing && v.nmem <= 1) {
			/* at most entry 0 so far: the file comes later (write_index) */
			l->idx_later = 1;
			l->nidx = (int64_t)v.nmem;
		} else if (rc == 0) {
			if (missing)
				v.ifd = l->ifd = tq_open(p->idx, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
			heal_index(l, &v);
		}
	}
	view_release(&v);
	if (rc < 0)
		return rc;
	l->done = l->pend = v.last;
	l->taken = l->done.obytes + l->done.ebytes;
	if (ntorn > 0) {
		/* Into its stream's partial buffer, then out as a piece. */
		enum tq_stream s = tag_stream((unsigned char)l->batch[0]);
		struct part *pt = &l->part[s - 1];
		memcpy(pt->buf, l->batch + 1, ntorn - 1);
		pt->len = ntorn - 1;
		l->taken += (int64_t)pt->len;
		if ((rc = flush_part(l, s, err)) < 0 || (rc = flush_batch(l, err)) < 0)
			return rc;
	}
	return 0;
}

int tq_sqlite_log_open(struct tq_queue *base, int64_t id, int64_t max_output,
		       struct tq_log **lp, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct tq_sqlite_log *l;
	struct paths p;
	int64_t size = 0;
	int rc;

	*lp = NULL;
	if (max_output < 0)
		return tq_err_set(err, TQ_EINVAL, "log: negative output cap");
	if ((rc = paths_init(q, id, &p, err)) < 0)
		return rc;
	if ((l = log_alloc(&p, max_output)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "open %s: out of memory", p.name);
	rc = open_locked(l, &p, 0, &size, err);
	if (rc == TQ_ENOTFOUND) {
		/* no file: the first write makes it; until then an empty log,
		 * whose index would come at its second entry (load_state on an
		 * empty file) */
		l->fd = -1;
		l->later = 1;
		l->idx_later = 1;
		l->nidx = 0;
		rc = 0;
	} else if (rc < 0 || (rc = load_state(l, &p, size, err)) < 0) {
		log_free(l);
		return rc;
	}
	l->base.ops = &tq_sqlite_ops;
	*lp = &l->base;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Handing the output to another program; waiting for more of it     */

int tq_sqlite_log_export(struct tq_queue *base, int64_t id, char *buf, size_t n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	if (tq_db_log_path(q, id, buf, n) < 0)
		return tq_err_set(err, TQ_EINVAL, "log of task %lld: path too long",
				  (long long)id);
	return 0;
}

struct tq_sqlite_log_watch {
	struct tq_log_watch base;  /* first: tq_sqlite_watch_of */
	int fd;                    /* inotify, watching logs/ */
	char name[NAME_MAX_LEN];   /* "ID.log" */
};

static struct tq_sqlite_log_watch *tq_sqlite_watch_of(struct tq_log_watch *base)
{
	return (struct tq_sqlite_log_watch *)base;
}

static const struct tq_sqlite_log_watch *tq_sqlite_watch_of_c(const struct tq_log_watch *base)
{
	return (const struct tq_sqlite_log_watch *)base;
}

int tq_sqlite_log_watch_open(struct tq_queue *base, int64_t id, struct tq_log_watch **wp,
			     struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct tq_sqlite_log_watch *w;
	char dir[PATH_MAX];
	int r;

	*wp = NULL;
	r = snprintf(dir, sizeof(dir), "%s/logs", q->home);
	if (r < 0 || (size_t)r >= sizeof(dir))
		return tq_err_set(err, TQ_EINVAL, "logs of %s: path too long", q->home);
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "watch log: out of memory");
	snprintf(w->name, sizeof(w->name), "%lld.log", (long long)id);
	/* logs/ and not the log: it may not exist yet, and a log deleted and
	 * made again is another inode at the same name */
	if ((w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0 ||
	    inotify_add_watch(w->fd, dir, IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE) < 0) {
		r = tq_err_sys(err, "watch %s", dir);
		tq_sqlite_log_watch_close(&w->base);
		return r;
	}
	w->base.ops = &tq_sqlite_ops;
	*wp = &w->base;
	return 0;
}

int tq_sqlite_log_watch_fd(struct tq_log_watch *base)
{
	const struct tq_sqlite_log_watch *w = tq_sqlite_watch_of_c(base);
	return w->fd;
}

int tq_sqlite_log_watch_hit(struct tq_log_watch *base)
{
	struct tq_sqlite_log_watch *w = tq_sqlite_watch_of(base);
	_Alignas(struct inotify_event) char buf[4096];
	ssize_t n;
	int hit = 0;

	while ((n = tq_read(w->fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)(void *)p;
			if ((ev->mask & IN_Q_OVERFLOW) ||
			    (ev->len > 0 && strcmp(ev->name, w->name) == 0))
				hit = 1;
			p += sizeof(*ev) + ev->len;
		}
	}
	return hit;
}

void tq_sqlite_log_watch_close(struct tq_log_watch *base)
{
	struct tq_sqlite_log_watch *w = tq_sqlite_watch_of(base);
	if (w == NULL)
		return;
	tq_close(w->fd);
	free(w);
}

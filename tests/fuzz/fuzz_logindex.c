/*
 * fuzz_logindex.c - libFuzzer harness for the log store's readers and its
 * writer's reopen (src/queue/logstore.h), on a log + index pair made of the
 * fuzz input: the damaged, torn or forged files a crash, a full disk or a
 * stray write can leave.
 *
 * Input: byte 0 = choices (bit 0: no index file at all), bytes 1-4 = the
 * log's length n (little-endian, clamped), then n bytes of logs/1.log, then
 * the rest as logs/1.idx. Both are written into a state directory made once
 * ($TASKQ_FUZZ_TMP, else /dev/shm when there is one), then read.
 *
 * Checked beyond "no crash, no sanitizer report, no hang":
 *   - every read returns 0 or a negative TQ_E* code with a message;
 *   - lines come numbered consecutively from the first asked for, never
 *     more than asked, each of the stream asked for, holding no '\n' and at
 *     most TQ_LOG_LINE_MAX bytes;
 *   - after tq_log_open + a line + tq_log_close (which repairs a torn end
 *     and the index), that line is the log's last;
 *   - when there is no index file (bit 0), so that every count comes from
 *     the log itself: a whole read returns exactly its total, the last
 *     `tail` lines end at the total, no line is numbered past it, and
 *     tq_log_stat agrees. Not with an index from the input: an index that
 *     passes its checks but was written for other log bytes (the log
 *     damaged in place after it, e.g. a tag byte changed) is trusted, and
 *     its counts then differ from a scan's by the lines the damage made or
 *     unmade. That is the price of a cache that is not re-verified (it
 *     would cost a whole scan), not a bug: the fuzzer found it at once.
 * A failed check abort()s (libFuzzer reports it as a crash).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "queue/logstore.h"
#include "queue/queue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct tq_queue *q;
static int strict; /* no index file: counts must agree exactly */
static char logp[4096], idxp[4096];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_logindex: %s\n", what);
	abort();
}

static char home_parent[256];

/* At exit: close the store and remove the temporary directory. */
static void cleanup(void)
{
	char cmd[300];

	tq_queue_close(q);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home_parent);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_logindex: could not remove %s\n", home_parent);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char tmpl[256], logs[300];
	struct tq_err err = TQ_ERR_INIT;
	const char *base = getenv("TASKQ_FUZZ_TMP");

	if (base == NULL || *base == '\0')
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc;
	(void)argv;
	snprintf(tmpl, sizeof(tmpl), "%s/taskq-fuzz-XXXXXX", base);
	if (mkdtemp(tmpl) == NULL)
		die("mkdtemp");
	strncat(tmpl, "/home", sizeof(tmpl) - strlen(tmpl) - 1);
	if (tq_queue_open(&q, tmpl, 0, &err) < 0) {
		fprintf(stderr, "fuzz_logindex: open %s: %s\n", tmpl, err.msg);
		abort();
	}
	if (tq_log_export(q, 1, logp, sizeof(logp), NULL) < 0)
		die("log path");
	snprintf(idxp, sizeof(idxp), "%.*s.idx", (int)(strlen(logp) - 4), logp);
	snprintf(logs, sizeof(logs), "%s/logs", tmpl);
	mkdir(logs, 0700);
	/* the parent of home is ours too: remove it all at exit */
	*strrchr(tmpl, '/') = '\0';
	snprintf(home_parent, sizeof(home_parent), "%s", tmpl);
	atexit(cleanup);
	return 0;
}

static void put_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t w;

	if (fd < 0)
		die("open a fuzz file");
	while (n > 0) {
		w = write(fd, p, n);
		if (w <= 0)
			die("write a fuzz file");
		p += w;
		n -= (size_t)w;
	}
	close(fd);
}

/* What a read delivered, checked line by line as it arrives. */
struct seen {
	int64_t first;       /* the number the first line must have */
	int64_t next;        /* the number the next line must have */
	int64_t count;
	int64_t max;         /* at most this many (-1: any) */
	enum tq_stream stream;
	const char *last;    /* copy of the last line's text (for the writer check) */
	size_t last_len;
	int last_newline;
	enum tq_stream last_stream;
	char lastbuf[16];
};

static int on_line(const struct tq_log_line *l, void *arg)
{
	struct seen *s = arg;

	if (s->count == 0 && s->first > 0 && l->n != s->first)
		die("the first line has the wrong number");
	if (s->count > 0 && l->n != s->next)
		die("lines are not numbered consecutively");
	if (l->n < 1)
		die("a line numbered below 1");
	if (s->max >= 0 && s->count >= s->max)
		die("more lines than asked for");
	if (l->stream != TQ_STREAM_STDOUT && l->stream != TQ_STREAM_STDERR)
		die("a line of no stream");
	if (s->stream != TQ_STREAM_ALL && l->stream != s->stream)
		die("a line of the other stream");
	if (l->len > TQ_LOG_LINE_MAX)
		die("a line longer than TQ_LOG_LINE_MAX");
	if (l->len > 0 && memchr(l->text, '\n', l->len) != NULL)
		die("a line holding a newline");
	s->next = l->n + 1;
	s->count++;
	s->last_len = l->len;
	s->last_newline = l->newline;
	s->last_stream = l->stream;
	memcpy(s->lastbuf, l->text, l->len < sizeof(s->lastbuf) ? l->len : sizeof(s->lastbuf));
	s->last = s->lastbuf;
	return 0;
}

/* Read range r; returns the total, or -1 after a (well-formed) error. */
static int64_t read_range(enum tq_stream stream, int64_t offset, int64_t limit,
			  int64_t tail, struct seen *s)
{
	struct tq_log_range r = { stream, offset, limit, tail };
	struct tq_err err = TQ_ERR_INIT;
	int64_t total = -1;
	int rc;

	memset(s, 0, sizeof(*s));
	s->stream = stream;
	s->first = offset;
	s->max = offset > 0 ? limit : tail;
	rc = tq_log_read(q, 1, &r, on_line, s, &total, &err);
	if (rc < 0) {
		if (err.msg[0] == '\0')
			die("a read error without a message");
		return -1;
	}
	if (total < 0)
		die("a negative total");
	if (!strict)
		return total;
	if (s->count > 0 && s->next - 1 > total)
		die("a line numbered past the total");
	if (offset == 0 && tail > 0 && s->count > 0 && s->next - 1 != total)
		die("the tail does not end at the total");
	if (offset == 0 && tail > 0 && s->count != (tail < total ? tail : total))
		die("the tail has the wrong number of lines");
	return total;
}

static void check_whole(void)
{
	static const enum tq_stream streams[] = {
		TQ_STREAM_ALL, TQ_STREAM_STDOUT, TQ_STREAM_STDERR
	};
	struct tq_err err = TQ_ERR_INIT;
	struct seen s;
	int64_t total, lines = -1, bytes = -1;
	size_t i;

	for (i = 0; i < 3; i++) {
		total = read_range(streams[i], 1, -1, 0, &s);
		if (total < 0 || !strict)
			continue;
		if (s.count != total) {
			fprintf(stderr, "fuzz_logindex: stream %d: %lld lines read, total %lld\n",
				(int)streams[i], (long long)s.count, (long long)total);
			die("a whole read does not return its total");
		}
		if (tq_log_stat(q, 1, streams[i], &lines, &bytes, &err) < 0)
			continue;
		if (lines != total) {
			fprintf(stderr, "fuzz_logindex: stream %d: stat %lld lines, read total %lld\n",
				(int)streams[i], (long long)lines, (long long)total);
			die("tq_log_stat's lines differ from a whole read's total");
		}
		if (bytes < 0)
			die("negative output bytes");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = NULL;
	struct seen s;
	uint32_t n;
	int64_t total;
	uint8_t flags;

	if (size < 5)
		return 0;
	flags = data[0];
	n = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
	    (uint32_t)data[4] << 24;
	data += 5;
	size -= 5;
	if (n > size)
		n = (uint32_t)size;
	put_file(logp, data, n);
	strict = flags & 1;
	if (strict)
		unlink(idxp);
	else
		put_file(idxp, data + n, size - n);

	check_whole();
	total = read_range(TQ_STREAM_ALL, 0, 0, 5, &s);
	read_range(TQ_STREAM_STDERR, 0, 0, 3, &s);
	if (total >= 0)
		read_range(TQ_STREAM_ALL, 1 + (int64_t)(flags >> 1) % (total + 2), 3, 0, &s);
	read_range(TQ_STREAM_STDOUT, 1 + (flags >> 4), 2, 0, &s);

	/* The writer's reopen repairs what it finds; a line written then is
	 * the last line of the log. */
	if (tq_log_open(q, 1, 0, &l, &err) < 0) {
		if (err.msg[0] == '\0')
			die("an open error without a message");
		return 0;
	}
	if (tq_log_write(l, TQ_STREAM_STDOUT, "zz\n", 3, 0, &err) < 0)
		die("writing a line after the reopen failed");
	if (tq_log_close(l, &err) < 0)
		die("closing the writer failed");
	check_whole();
	total = read_range(TQ_STREAM_ALL, 0, 0, 1, &s);
	if (total < 0)
		die("reading the log after the writer closed failed");
	if (s.count != 1 || s.last_len != 2 || memcmp(s.last, "zz", 2) != 0 ||
	    !s.last_newline || s.last_stream != TQ_STREAM_STDOUT)
		die("the line written after the reopen is not the last line");
	return 0;
}

/*
 * test_log.c - the log store on real files in a temporary state directory:
 * the record format byte for byte, exact round trips, paging and tails in
 * every numbering, the index missing, short or wrong, torn and garbage
 * records, the output cap across attempts, partial lines and long lines, a
 * concurrent reader, and write errors (a full tmpfs as root; RLIMIT_FSIZE).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "common/sys.h"
#include "queue/logstore.h"

#define E TQ_LOG_INDEX_EVERY

struct fx {
	char *home;
	char state[512];
	struct tq_queue *q;
	int mounted; /* a tmpfs on state/logs */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tq_err err = TQ_ERR_INIT;

	assert_non_null(f);
	f->home = th_tempdir();
	assert_non_null(f->home);
	snprintf(f->state, sizeof(f->state), "%s/state", f->home);
	if (tq_queue_open(&f->q, f->state, 0, &err) != 0)
		fail_msg("open: %s", err.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char logs[600];

	if (f->mounted) {
		snprintf(logs, sizeof(logs), "%s/logs", f->state);
		umount2(logs, MNT_DETACH);
	}
	tq_queue_close(f->q);
	th_rmtree(f->home);
	free(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                            */

static void path_of(struct fx *f, int64_t id, const char *ext, char *buf, size_t n)
{
	snprintf(buf, n, "%s/logs/%lld.%s", f->state, (long long)id, ext);
}

static struct tq_log *wopen(struct fx *f, int64_t id, int64_t cap)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = NULL;

	if (tq_log_open(f->q, id, cap, &l, &err) != 0)
		fail_msg("log open %lld: %s", (long long)id, err.msg);
	return l;
}

static void wr(struct tq_log *l, enum tq_stream s, const char *text, int64_t now)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_log_write(l, s, text, strlen(text), now, &err) != 0)
		fail_msg("log write: %s", err.msg);
}

static void wclose(struct tq_log *l)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_log_close(l, &err) != 0)
		fail_msg("log close: %s", err.msg);
}

struct line {
	int64_t n;
	enum tq_stream stream;
	int newline;
	char *text;
	size_t len;
};

struct lines {
	struct line *v;
	size_t n, cap;
	size_t stop_after; /* 0: never stop early */
};

static int collect(const struct tq_log_line *l, void *arg)
{
	struct lines *ls = arg;
	struct line *x;

	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 64;
		ls->v = reallocarray(ls->v, ls->cap, sizeof(*ls->v));
		assert_non_null(ls->v);
	}
	x = &ls->v[ls->n++];
	x->n = l->n;
	x->stream = l->stream;
	x->newline = l->newline;
	x->len = l->len;
	x->text = malloc(l->len + 1);
	assert_non_null(x->text);
	if (l->len)
		memcpy(x->text, l->text, l->len);
	x->text[l->len] = '\0';
	return ls->stop_after && ls->n >= ls->stop_after;
}

static void lines_free(struct lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->v[i].text);
	free(ls->v);
	memset(ls, 0, sizeof(*ls));
}

static int64_t rd(struct fx *f, int64_t id, enum tq_stream s, int64_t offset,
		  int64_t limit, int64_t tail, struct lines *out)
{
	struct tq_log_range r = { .stream = s, .offset = offset, .limit = limit, .tail = tail };
	struct tq_err err = TQ_ERR_INIT;
	int64_t total = -1;

	if (tq_log_read(f->q, id, &r, collect, out, &total, &err) != 0)
		fail_msg("log read: %s", err.msg);
	return total;
}

static void st(struct fx *f, int64_t id, enum tq_stream s, int64_t *lines, int64_t *bytes)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_log_stat(f->q, id, s, lines, bytes, &err) != 0)
		fail_msg("log stat: %s", err.msg);
}

static char *slurp(const char *path, size_t *n)
{
	struct stat sb;
	char *buf;
	int fd = tq_open(path, O_RDONLY, 0);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	buf = malloc((size_t)sb.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(tq_read_full(fd, buf, (size_t)sb.st_size), sb.st_size);
	tq_close(fd);
	*n = (size_t)sb.st_size;
	return buf;
}

static void append_raw(const char *path, const void *buf, size_t n)
{
	int fd = tq_open(path, O_WRONLY | O_APPEND, 0);

	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, buf, n), 0);
	tq_close(fd);
}

static int64_t file_size(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return -1;
	return (int64_t)sb.st_size;
}

static void put_le64(unsigned char *p, int64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)((uint64_t)v >> (8 * i));
}

static int64_t get_le64(const unsigned char *p)
{
	uint64_t u = 0;

	for (int i = 0; i < 8; i++)
		u |= (uint64_t)p[i] << (8 * i);
	return (int64_t)u;
}

/* The index entry's check word, as logstore.c documents it (splitmix64's
 * finalizer chained over ebytes, obytes, olines, off, k). Kept here on
 * purpose: a change to the on-disk format must break this test. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

static int64_t entry_check(int64_t k, int64_t off, int64_t olines, int64_t obytes,
			   int64_t ebytes)
{
	uint64_t h = mix((uint64_t)ebytes);

	h = mix((uint64_t)obytes ^ h);
	h = mix((uint64_t)olines ^ h);
	h = mix((uint64_t)off ^ h);
	return (int64_t)mix((uint64_t)k ^ h);
}

/* The output of one stream, rebuilt from records as the header says. */
struct bytes {
	char *p;
	size_t n, cap;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void rebuild(const struct lines *ls, enum tq_stream s, struct bytes *b)
{
	for (size_t i = 0; i < ls->n; i++) {
		if (ls->v[i].stream != s)
			continue;
		bytes_add(b, ls->v[i].text, ls->v[i].len);
		if (ls->v[i].newline)
			bytes_add(b, "\n", 1);
	}
}

/* ------------------------------------------------------------------ */
/* Format                                                             */

static void write_numbered(struct fx *f, int64_t id, int from, int to);

static void test_format_bytes(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 1, 0);
	char path[600];
	unsigned char zero[64] = { 0 };
	size_t n;
	char *got;
	int64_t off, line;
	const char want[] = "ohello\nEerr\nox\nOy\n";

	tq_log_position(l, &off, &line);
	assert_int_equal(off, 0);
	assert_int_equal(line, 1);
	wr(l, TQ_STREAM_STDOUT, "hello\n", 0);
	wr(l, TQ_STREAM_STDERR, "err", 0);
	assert_int_equal(tq_log_end_stream(l, TQ_STREAM_STDERR, &err), 0);
	wr(l, TQ_STREAM_STDOUT, "x\ny", 0);
	assert_int_equal(tq_log_output_bytes(l), 6 + 3 + 2);
	wclose(l);
	path_of(f, 1, "log", path, sizeof(path));
	got = slurp(path, &n);
	assert_int_equal(n, sizeof(want) - 1);
	assert_memory_equal(got, want, n);
	free(got);
	/* No index file: a log of fewer than E records reads from its start
	 * anyway (test_index_made_when_second_entry_due). */
	path_of(f, 1, "idx", path, sizeof(path));
	assert_int_equal(file_size(path), -1);
	/* Entry 0 of a log that has an index: record 1 at offset 0, nothing
	 * before it; its check word; three reserved zero words. */
	write_numbered(f, 2, 1, E + 1);
	path_of(f, 2, "idx", path, sizeof(path));
	got = slurp(path, &n);
	assert_int_equal(n, 2 * 64);
	assert_memory_equal(got, zero, 32);
	assert_int_equal(get_le64((unsigned char *)got + 32), entry_check(0, 0, 0, 0, 0));
	assert_memory_equal(got + 40, zero, 24);
	free(got);
	/* The log's file mode. */
	path_of(f, 1, "log", path, sizeof(path));
	{
		struct stat sb;
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
	}
}

static void test_roundtrip_bytes(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 2, 0);
	const char out[] = "a\0b\xff\r\n\r\rprogress 10%\rprogress 20%\n\n\xc3(\x00\x01tail-no-newline";
	const char errs[] = "\xff\xfe\n\0\0\0\nlast";
	struct bytes bo = { 0 }, be = { 0 };
	struct lines ls = { 0 };
	int64_t lines, bytes;

	/* Feed in awkward pieces: one byte, then the rest split at odd places. */
	for (size_t i = 0; i < sizeof(out) - 1; i += (i % 5) + 1) {
		size_t k = (i % 5) + 1;
		if (i + k > sizeof(out) - 1)
			k = sizeof(out) - 1 - i;
		assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, out + i, k, 0, &err), 0);
		if (i < sizeof(errs) - 1) {
			size_t m = i + k <= sizeof(errs) - 1 ? k : sizeof(errs) - 1 - i;
			assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, errs + i, m, 0, &err), 0);
		}
	}
	wclose(l);
	rd(f, 2, TQ_STREAM_ALL, 1, -1, 0, &ls);
	rebuild(&ls, TQ_STREAM_STDOUT, &bo);
	rebuild(&ls, TQ_STREAM_STDERR, &be);
	assert_int_equal(bo.n, sizeof(out) - 1);
	assert_memory_equal(bo.p, out, bo.n);
	assert_int_equal(be.n, sizeof(errs) - 1);
	assert_memory_equal(be.p, errs, be.n);
	/* The final pieces are not lines that ended. */
	assert_false(ls.v[ls.n - 1].newline);
	st(f, 2, TQ_STREAM_ALL, &lines, &bytes);
	assert_int_equal(lines, (int64_t)ls.n);
	assert_int_equal(bytes, (int64_t)(sizeof(out) - 1 + sizeof(errs) - 1));
	st(f, 2, TQ_STREAM_STDERR, &lines, &bytes);
	assert_int_equal(bytes, (int64_t)(sizeof(errs) - 1));
	lines_free(&ls);
	free(bo.p);
	free(be.p);
}

static void test_missing_log(void **state)
{
	struct fx *f = *state;
	struct lines ls = { 0 };
	int64_t lines = -1, bytes = -1;
	struct tq_err err = TQ_ERR_INIT;

	assert_int_equal(rd(f, 404, TQ_STREAM_ALL, 0, -1, 200, &ls), 0);
	assert_int_equal(ls.n, 0);
	st(f, 404, TQ_STREAM_STDOUT, &lines, &bytes);
	assert_int_equal(lines, 0);
	assert_int_equal(bytes, 0);
	assert_int_equal(tq_log_remove(f->q, 404, &err), 0);
	{
		struct tq_log_range bad = { .stream = 7, .offset = 1, .limit = 1 };
		assert_int_equal(tq_log_read(f->q, 1, &bad, collect, &ls, NULL, &err), TQ_EINVAL);
	}
}

/* ------------------------------------------------------------------ */
/* Paging against a model                                             */

#define PAGED_N (3 * E + 123)

/* Line i (all numbering) is stderr when i % 3 == 0. */
static enum tq_stream model_stream(int64_t i)
{
	return i % 3 == 0 ? TQ_STREAM_STDERR : TQ_STREAM_STDOUT;
}

static void model_text(int64_t i, char *buf, size_t n)
{
	snprintf(buf, n, "line %lld of %s", (long long)i,
		 model_stream(i) == TQ_STREAM_STDERR ? "stderr" : "stdout");
}

static void write_paged(struct fx *f, int64_t id)
{
	struct tq_log *l = wopen(f, id, 0);
	char buf[96];

	for (int64_t i = 1; i <= PAGED_N; i++) {
		model_text(i, buf, sizeof(buf));
		strcat(buf, "\n");
		wr(l, model_stream(i), buf, 0);
	}
	wclose(l);
}

/* The all-numbers of stream s's lines, in order; returns the count. */
static int64_t model_select(enum tq_stream s, int64_t *out)
{
	int64_t n = 0;

	for (int64_t i = 1; i <= PAGED_N; i++)
		if (s == TQ_STREAM_ALL || model_stream(i) == s)
			out[n++] = i;
	return n;
}

static void check_query(struct fx *f, int64_t id, enum tq_stream s, int64_t offset,
			int64_t limit, int64_t tail)
{
	static int64_t sel[PAGED_N + 1];
	int64_t total = model_select(s, sel), first, count;
	struct lines ls = { 0 };
	char want[96];

	if (offset > 0) {
		first = offset;
		count = offset > total ? 0 : total - offset + 1;
		if (limit >= 0 && limit < count)
			count = limit;
	} else {
		count = tail < total ? tail : total;
		first = total - count + 1;
	}
	assert_int_equal(rd(f, id, s, offset, limit, tail, &ls), total);
	if ((int64_t)ls.n != count)
		fail_msg("stream %d offset %lld limit %lld tail %lld: %zu lines, want %lld",
			 s, (long long)offset, (long long)limit, (long long)tail, ls.n,
			 (long long)count);
	for (int64_t j = 0; j < count; j++) {
		int64_t i = sel[first - 1 + j];
		model_text(i, want, sizeof(want));
		assert_int_equal(ls.v[j].n, first + j);
		assert_int_equal(ls.v[j].stream, model_stream(i));
		assert_true(ls.v[j].newline);
		assert_string_equal(ls.v[j].text, want);
	}
	lines_free(&ls);
}

/* Every kind of query at the edges of the index chunks (full), or a sample
 * of them (for the many damaged-index variants: a damaged index costs a
 * full scan per query, and the answers are what matters). */
static void check_queries(struct fx *f, int64_t id, int full)
{
	static const int64_t offs[] = { 1, 2, E - 1, E, E + 1, 2 * E + 7, PAGED_N / 2,
					PAGED_N / 3 - 200, PAGED_N - 200, PAGED_N - 1,
					PAGED_N, PAGED_N + 1, PAGED_N + 1000 };
	static const int64_t limits[] = { 1, 10, 200, -1, 0 };
	static const int64_t tails[] = { 0, 1, 10, 200, E, E + 1, PAGED_N / 3,
					 PAGED_N - 1, PAGED_N, PAGED_N + 5 };
	size_t step = full ? 1 : 3;

	for (int s = 0; s <= 2; s++) {
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i += step)
			for (size_t j = 0; j < sizeof(limits) / sizeof(limits[0]); j += step)
				check_query(f, id, (enum tq_stream)s, offs[i], limits[j], 0);
		for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i += step)
			check_query(f, id, (enum tq_stream)s, 0, -1, tails[i]);
	}
}

static void check_all_queries(struct fx *f, int64_t id)
{
	check_queries(f, id, 1);
}

static void check_some_queries(struct fx *f, int64_t id)
{
	check_queries(f, id, 0);
}

static void test_paging(void **state)
{
	struct fx *f = *state;
	struct lines ls = { 0 };
	int64_t lines, bytes, o, e;
	char path[600];

	write_paged(f, 3);
	check_all_queries(f, 3);
	st(f, 3, TQ_STREAM_ALL, &lines, &bytes);
	assert_int_equal(lines, PAGED_N);
	st(f, 3, TQ_STREAM_STDOUT, &o, NULL);
	st(f, 3, TQ_STREAM_STDERR, &e, NULL);
	assert_int_equal(o + e, PAGED_N);
	assert_int_equal(e, PAGED_N / 3);
	/* The index: an entry per E lines, entry 0 at offset 0. */
	path_of(f, 3, "idx", path, sizeof(path));
	assert_int_equal(file_size(path), ((PAGED_N - 1) / E + 1) * 64);
	/* The callback can stop early. */
	ls.stop_after = 3;
	rd(f, 3, TQ_STREAM_STDERR, 5, 100, 0, &ls);
	assert_int_equal(ls.n, 3);
	assert_int_equal(ls.v[2].n, 7);
	lines_free(&ls);
}

/* Rewrite entry k of an index file; with a check word that matches when
 * good, so the reader's other defences are tested too. */
static void poke_entry(const char *path, int64_t k, int64_t off, int64_t olines, int good)
{
	unsigned char b[64] = { 0 };
	int fd = tq_open(path, O_WRONLY, 0);

	put_le64(b, off);
	put_le64(b + 8, olines);
	put_le64(b + 32, entry_check(k, off, olines, 0, 0) ^ (good ? 0 : 1));
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, (off_t)(k * 64), SEEK_SET), (off_t)(k * 64));
	assert_int_equal(tq_write_all(fd, b, sizeof(b)), 0);
	tq_close(fd);
}

static void put_index(const char *path, const char *data, size_t n)
{
	int fd = tq_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, data, n), 0);
	tq_close(fd);
}

static void test_index_damage(void **state)
{
	struct fx *f = *state;
	char idx[600];
	size_t n, m;
	char *good, *healed;

	write_paged(f, 4);
	path_of(f, 4, "idx", idx, sizeof(idx));
	good = slurp(idx, &n);
	assert_int_equal(n, 4 * 64);

	/* Missing. */
	assert_int_equal(unlink(idx), 0);
	check_some_queries(f, 4);
	/* Empty, short by entries, short mid-entry. */
	for (int64_t len = 0; len < (int64_t)n; len += 64 + 3) {
		put_index(idx, good, (size_t)len);
		check_some_queries(f, 4);
	}
	/* An entry past the end (a crash that kept the index, not the log). */
	put_index(idx, good, n);
	poke_entry(idx, 4, (int64_t)1 << 40, 0, 1);
	check_some_queries(f, 4);
	/* Entries that fail their check: the last (torn), one in the middle. */
	put_index(idx, good, n);
	poke_entry(idx, 3, 7, 1, 0);
	check_some_queries(f, 4);
	put_index(idx, good, n);
	poke_entry(idx, 1, 7, 1, 0);
	check_some_queries(f, 4);
	/* All zero (what a power loss can leave). */
	{
		char *z = calloc(1, n);
		assert_non_null(z);
		put_index(idx, z, n);
		check_some_queries(f, 4);
		free(z);
	}
	/* Checked but wrong: in the middle, not on a record start. */
	put_index(idx, good, n);
	poke_entry(idx, 1, 5, 0, 1);
	check_some_queries(f, 4);
	/* ... and the last one. */
	put_index(idx, good, n);
	poke_entry(idx, 3, 7, 1, 1);
	check_some_queries(f, 4);
	/* A writer reopening the log heals the index on disk. */
	wclose(wopen(f, 4, 0));
	healed = slurp(idx, &m);
	assert_int_equal(m, n);
	assert_memory_equal(healed, good, n);
	free(healed);
	assert_int_equal(unlink(idx), 0);
	wclose(wopen(f, 4, 0));
	healed = slurp(idx, &m);
	assert_int_equal(m, n);
	assert_memory_equal(healed, good, n);
	free(healed);
	free(good);
}

/* ------------------------------------------------------------------ */
/* Crashes and garbage                                                */

static void write_numbered(struct fx *f, int64_t id, int from, int to)
{
	struct tq_log *l = wopen(f, id, 0);
	char buf[64];

	for (int i = from; i <= to; i++) {
		snprintf(buf, sizeof(buf), "line %d\n", i);
		wr(l, TQ_STREAM_STDOUT, buf, 0);
	}
	wclose(l);
}

/*
 * A log's index file is made only when its second entry is due (issue 21:
 * an inode fewer for every task of fewer than E lines, most of them): E
 * records, written by one writer and closed, leave no .idx and read as
 * before; a second writer (a retry) that adds record E + 1 makes the file
 * with entries 0 and 1, each as a reader checks it, and every read agrees.
 */
static void test_index_made_when_second_entry_due(void **state)
{
	struct fx *f = *state;
	struct lines ls = { 0 };
	char ipath[600], buf[64];
	unsigned char zero[32] = { 0 };
	int64_t lines, bytes, off1 = 0;
	struct tq_log *l;
	size_t n;
	char *got;

	write_numbered(f, 20, 1, E);
	path_of(f, 20, "idx", ipath, sizeof(ipath));
	assert_int_equal(file_size(ipath), -1);
	st(f, 20, TQ_STREAM_ALL, &lines, &bytes);
	assert_int_equal(lines, E);
	assert_int_equal(rd(f, 20, TQ_STREAM_STDOUT, E, 1, 0, &ls), E);
	assert_int_equal(ls.n, 1);
	snprintf(buf, sizeof(buf), "line %d", E);
	assert_string_equal(ls.v[0].text, buf);
	lines_free(&ls);
	for (int i = 1; i <= E; i++) {
		snprintf(buf, sizeof(buf), "line %d\n", i);
		off1 += (int64_t)strlen(buf) + 1; /* its tag */
	}

	l = wopen(f, 20, 0);
	wr(l, TQ_STREAM_STDERR, "one more\n", 0);
	assert_int_equal(file_size(ipath), 2 * 64);
	wclose(l);
	got = slurp(ipath, &n);
	assert_int_equal(n, 2 * 64);
	assert_memory_equal(got, zero, 32);
	assert_int_equal(get_le64((unsigned char *)got + 32), entry_check(0, 0, 0, 0, 0));
	/* entry 1: the state before record E + 1 */
	assert_int_equal(get_le64((unsigned char *)got + 64), off1);
	assert_int_equal(get_le64((unsigned char *)got + 72), E);
	assert_int_equal(get_le64((unsigned char *)got + 80), off1 - E);
	assert_int_equal(get_le64((unsigned char *)got + 88), 0);
	assert_int_equal(get_le64((unsigned char *)got + 96),
			 entry_check(1, off1, E, off1 - E, 0));
	free(got);
	st(f, 20, TQ_STREAM_ALL, &lines, NULL);
	assert_int_equal(lines, E + 1);
	assert_int_equal(rd(f, 20, TQ_STREAM_STDERR, 1, -1, 0, &ls), 1);
	assert_int_equal(ls.n, 1);
	assert_string_equal(ls.v[0].text, "one more");
	lines_free(&ls);
	assert_int_equal(rd(f, 20, TQ_STREAM_ALL, E + 1, 1, 0, &ls), E + 1);
	assert_string_equal(ls.v[0].text, "one more");
	lines_free(&ls);
}

static void test_torn_record(void **state)
{
	struct fx *f = *state;
	struct lines ls = { 0 };
	char path[600];
	int64_t size, off, line, bytes;
	struct tq_log *l;

	write_numbered(f, 5, 1, 10);
	path_of(f, 5, "log", path, sizeof(path));
	size = file_size(path);
	/* "oline 10\n" cut to "oline 1": a writer that died inside write(2). */
	assert_int_equal(truncate(path, size - 2), 0);
	assert_int_equal(rd(f, 5, TQ_STREAM_ALL, 0, -1, 3, &ls), 9);
	assert_int_equal(ls.n, 3);
	assert_string_equal(ls.v[2].text, "line 9");
	lines_free(&ls);
	assert_int_equal(rd(f, 5, TQ_STREAM_STDOUT, 1, -1, 0, &ls), 9);
	lines_free(&ls);
	st(f, 5, TQ_STREAM_ALL, NULL, &bytes);
	assert_int_equal(bytes, 9 * 7); /* "line N\n" x9 */

	/* Reopen: the torn bytes become a piece; numbering goes on. */
	l = wopen(f, 5, 0);
	tq_log_position(l, &off, &line);
	assert_int_equal(line, 11);
	assert_int_equal(off, file_size(path));
	assert_int_equal(tq_log_output_bytes(l), 9 * 7 + 6);
	wr(l, TQ_STREAM_STDOUT, "more\n", 0);
	wclose(l);
	assert_int_equal(rd(f, 5, TQ_STREAM_ALL, 9, -1, 0, &ls), 11);
	assert_int_equal(ls.n, 3);
	assert_string_equal(ls.v[1].text, "line 1");
	assert_false(ls.v[1].newline);
	assert_string_equal(ls.v[2].text, "more");
	assert_int_equal(ls.v[2].n, 11);
	lines_free(&ls);

	/* Torn inside the tag's record with nothing but the tag: dropped. */
	size = file_size(path);
	append_raw(path, "o", 1);
	assert_int_equal(rd(f, 5, TQ_STREAM_ALL, 0, -1, 1, &ls), 11);
	lines_free(&ls);
	l = wopen(f, 5, 0);
	tq_log_position(l, &off, &line);
	assert_int_equal(off, size);
	assert_int_equal(line, 12);
	wclose(l);
	assert_int_equal(file_size(path), size);
}

static void test_garbage(void **state)
{
	struct fx *f = *state;
	struct lines ls = { 0 };
	char path[600];
	char *junk = malloc(200001);
	int64_t lines, bytes;

	assert_non_null(junk);
	write_numbered(f, 6, 1, 5);
	path_of(f, 6, "log", path, sizeof(path));
	append_raw(path, "Xbad tag\n", 9);
	append_raw(path, "\n", 1);
	memset(junk, 'z', 200000);
	junk[200000] = '\n';
	append_raw(path, junk, 200001);          /* no '\n' for 200000 bytes */
	junk[0] = 'e';
	junk[TQ_LOG_LINE_MAX + 2] = '\n';        /* valid tag, one byte too long */
	append_raw(path, junk, TQ_LOG_LINE_MAX + 3);
	write_numbered(f, 6, 6, 10);
	assert_int_equal(rd(f, 6, TQ_STREAM_ALL, 1, -1, 0, &ls), 10);
	assert_int_equal(ls.n, 10);
	for (size_t i = 0; i < ls.n; i++) {
		char want[32];
		snprintf(want, sizeof(want), "line %zu", i + 1);
		assert_string_equal(ls.v[i].text, want);
		assert_int_equal(ls.v[i].n, (int64_t)i + 1);
	}
	lines_free(&ls);
	assert_int_equal(rd(f, 6, TQ_STREAM_ALL, 0, -1, 7, &ls), 10);
	assert_int_equal(ls.n, 7);
	assert_string_equal(ls.v[0].text, "line 4");
	assert_int_equal(ls.v[0].n, 4);
	lines_free(&ls);
	assert_int_equal(rd(f, 6, TQ_STREAM_STDERR, 0, -1, 7, &ls), 0);
	lines_free(&ls);
	st(f, 6, TQ_STREAM_STDOUT, &lines, &bytes);
	assert_int_equal(lines, 10);
	assert_int_equal(bytes, 9 * 7 + 8);

	/* Garbage at the very start: the tail must not miss record 1. */
	path_of(f, 7, "log", path, sizeof(path));
	{
		int fd = tq_open(path, O_WRONLY | O_CREAT, 0600);
		assert_true(fd >= 0);
		assert_int_equal(tq_write_all(fd, "Zjunk\nofirst\nesecond\n", 21), 0);
		tq_close(fd);
	}
	assert_int_equal(rd(f, 7, TQ_STREAM_ALL, 0, -1, 5, &ls), 2);
	assert_int_equal(ls.n, 2);
	assert_string_equal(ls.v[0].text, "first");
	lines_free(&ls);
	{
		int fd = tq_open(path, O_WRONLY | O_TRUNC, 0600);
		assert_int_equal(tq_write_all(fd, "ofirst\nesecond\n", 15), 0);
		tq_close(fd);
	}
	assert_int_equal(rd(f, 7, TQ_STREAM_ALL, 0, -1, 5, &ls), 2);
	assert_int_equal(ls.n, 2);
	assert_string_equal(ls.v[0].text, "first");
	assert_int_equal(ls.v[1].stream, TQ_STREAM_STDERR);
	lines_free(&ls);
	free(junk);
}

/* ------------------------------------------------------------------ */
/* Writer behaviour                                                   */

static void test_cap(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 8, 1000);
	struct bytes in = { 0 }, bo = { 0 }, be = { 0 };
	struct lines ls = { 0 };
	char buf[80];
	int rc = 0, i;
	int64_t off, line;

	/* A partial stderr line waiting when stdout passes the cap. */
	wr(l, TQ_STREAM_STDERR, "warn", 0);
	for (i = 0; i < 100 && rc == 0; i++) {
		snprintf(buf, sizeof(buf), "%063d\n", i);
		bytes_add(&in, buf, 64);
		rc = tq_log_write(l, TQ_STREAM_STDOUT, buf, 64, 0, &err);
	}
	assert_int_equal(rc, TQ_ECAP);
	assert_non_null(strstr(err.msg, "output cap of"));
	assert_int_equal(tq_log_output_bytes(l), 1000);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, "x\n", 2, 0, &err), TQ_ECAP);
	wclose(l);
	rd(f, 8, TQ_STREAM_ALL, 1, -1, 0, &ls);
	rebuild(&ls, TQ_STREAM_STDOUT, &bo);
	rebuild(&ls, TQ_STREAM_STDERR, &be);
	assert_int_equal(be.n, 4);
	assert_memory_equal(be.p, "warn", 4);
	assert_int_equal(bo.n, 996);
	assert_memory_equal(bo.p, in.p, 996);
	assert_false(ls.v[ls.n - 1].newline);
	lines_free(&ls);

	/* The next attempt keeps the cap: nothing more is accepted. */
	l = wopen(f, 8, 1000);
	assert_int_equal(tq_log_output_bytes(l), 1000);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "y\n", 2, 0, &err), TQ_ECAP);
	tq_log_position(l, &off, &line);
	wclose(l);
	st(f, 8, TQ_STREAM_ALL, NULL, &off);
	assert_int_equal(off, 1000);
	/* A larger cap lets exactly the difference in, numbering continues. */
	l = wopen(f, 8, 1010);
	wr(l, TQ_STREAM_STDOUT, "12345\n", 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "abcdefgh\n", 9, 0, &err), TQ_ECAP);
	wclose(l);
	assert_int_equal(rd(f, 8, TQ_STREAM_ALL, line, -1, 0, &ls), line + 1);
	assert_int_equal(ls.n, 2);
	assert_string_equal(ls.v[0].text, "12345");
	assert_string_equal(ls.v[1].text, "abcd");
	assert_false(ls.v[1].newline);
	lines_free(&ls);

	/* Exactly at the cap is not past it. */
	l = wopen(f, 9, 10);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "123456789\n", 10, 0, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "z", 1, 0, &err), TQ_ECAP);
	wclose(l);
	st(f, 9, TQ_STREAM_ALL, &line, &off);
	assert_int_equal(line, 1);
	assert_int_equal(off, 10);
	free(in.p);
	free(bo.p);
	free(be.p);
}

static void test_reopen(void **state)
{
	struct fx *f = *state;
	struct tq_log *l = wopen(f, 10, 0);
	struct lines ls = { 0 };
	char path[600];
	int64_t off, line, n;

	for (int i = 0; i < 5; i++)
		wr(l, TQ_STREAM_STDOUT, "out\n", 0);
	for (int i = 0; i < 3; i++)
		wr(l, TQ_STREAM_STDERR, "err\n", 0);
	wclose(l);
	l = wopen(f, 10, 0);
	path_of(f, 10, "log", path, sizeof(path));
	tq_log_position(l, &off, &line);
	assert_int_equal(off, file_size(path));
	assert_int_equal(line, 9);
	assert_int_equal(tq_log_output_bytes(l), 8 * 4);
	wr(l, TQ_STREAM_STDERR, "second attempt\n", 0);
	wclose(l);
	st(f, 10, TQ_STREAM_STDERR, &n, NULL);
	assert_int_equal(n, 4);
	assert_int_equal(rd(f, 10, TQ_STREAM_STDERR, 0, -1, 1, &ls), 4);
	assert_int_equal(ls.v[0].n, 4);
	assert_string_equal(ls.v[0].text, "second attempt");
	lines_free(&ls);
}

/* The log deleted under its writer (by hand, or with logs/): what the task
 * writes after is kept in a new log at the same path, whose first line says
 * what was lost; partial lines and the cap carry over. */
static void test_deleted_under_writer(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 12, 60);
	struct lines ls = { 0 };
	char path[600], ipath[600], xs[41];
	const char *note = "taskq: logs/12.log was deleted while the task ran;"
			   " the lines before this one are lost";

	path_of(f, 12, "log", path, sizeof(path));
	path_of(f, 12, "idx", ipath, sizeof(ipath));
	for (int i = 0; i < 3; i++)
		wr(l, TQ_STREAM_STDOUT, "before\n", 0);      /* 21 bytes */
	wr(l, TQ_STREAM_STDERR, "part", 0);                  /* 25, buffered */
	assert_int_equal(tq_log_exists(f->q, 12), 1);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(file_size(ipath), -1); /* fewer than E records: none */
	assert_int_equal(tq_log_exists(f->q, 12), 0);
	assert_int_equal(tq_log_relinked(l), 0);
	wr(l, TQ_STREAM_STDOUT, "after\n", 0);              /* 31 */
	assert_int_equal(tq_log_relinked(l), 1);
	assert_int_equal(tq_log_exists(f->q, 12), 1);
	/* 40 more bytes pass the cap of 60 after 29 of them */
	memset(xs, 'x', 39);
	xs[39] = '\n';
	xs[40] = '\0';
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, xs, 40, 0, &err), TQ_ECAP);
	wclose(l);
	assert_int_equal(rd(f, 12, TQ_STREAM_ALL, 1, -1, 0, &ls), 4);
	assert_int_equal(ls.v[0].stream, TQ_STREAM_STDERR);
	assert_string_equal(ls.v[0].text, note);
	assert_string_equal(ls.v[1].text, "after");
	assert_int_equal(ls.v[2].len, 29);
	assert_false(ls.v[2].newline);
	assert_string_equal(ls.v[3].text, "part");
	assert_int_equal(ls.v[3].stream, TQ_STREAM_STDERR);
	lines_free(&ls);
	/* the new log pages like any other */
	assert_int_equal(rd(f, 12, TQ_STREAM_STDOUT, 1, 1, 0, &ls), 2);
	assert_int_equal(ls.n, 1);
	assert_string_equal(ls.v[0].text, "after");
	lines_free(&ls);

	/* the whole logs/ directory deleted: made again */
	l = wopen(f, 13, 0);
	wr(l, TQ_STREAM_STDOUT, "one\n", 0);
	path_of(f, 13, "log", path, sizeof(path));
	path_of(f, 13, "idx", ipath, sizeof(ipath));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(file_size(ipath), -1);
	path_of(f, 12, "log", path, sizeof(path));
	path_of(f, 12, "idx", ipath, sizeof(ipath));
	assert_int_equal(unlink(path), 0);
	unlink(ipath);
	*strrchr(path, '/') = '\0';
	assert_int_equal(rmdir(path), 0);
	wr(l, TQ_STREAM_STDOUT, "two\n", 0);
	wclose(l);
	assert_int_equal(rd(f, 13, TQ_STREAM_ALL, 1, -1, 0, &ls), 2);
	assert_non_null(strstr(ls.v[0].text, "logs/13.log was deleted"));
	assert_string_equal(ls.v[1].text, "two");
	lines_free(&ls);
	(void)err;
}

/* One writer a log: a second is refused at its open once the first has
 * made the file (its first output), else at its own first write; the
 * first goes on. */
static void test_busy(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *a = wopen(f, 11, 0), *b = NULL;
	struct lines ls = { 0 };

	wr(a, TQ_STREAM_STDOUT, "a1\n", 0);
	assert_int_equal(tq_log_open(f->q, 11, 0, &b, &err), TQ_EBUSY);
	assert_null(b);
	assert_non_null(strstr(err.msg, "logs/11.log"));
	wclose(a);
	wclose(wopen(f, 11, 0));
	/* two open before either wrote: the second to write is refused */
	a = wopen(f, 21, 0);
	b = wopen(f, 21, 0);
	wr(b, TQ_STREAM_STDOUT, "b1\n", 0);
	assert_int_equal(tq_log_write(a, TQ_STREAM_STDOUT, "a1\n", 3, 0, &err), TQ_EBUSY);
	assert_non_null(strstr(err.msg, "logs/21.log"));
	wr(b, TQ_STREAM_STDOUT, "b2\n", 0);
	wclose(a);
	wclose(b);
	assert_int_equal(rd(f, 21, TQ_STREAM_ALL, 1, -1, 0, &ls), 2);
	assert_string_equal(ls.v[0].text, "b1");
	assert_string_equal(ls.v[1].text, "b2");
	lines_free(&ls);
	assert_int_equal(tq_log_close(NULL, &err), 0);
}

/*
 * A log file is made by the first output (issue 21): a writer that writes
 * nothing leaves none, and reads as an empty log; one whose first output
 * comes later makes it then, with what it wrote numbered from line 1, and a
 * log already there (an earlier attempt's) is taken up where it ends.
 */
static void test_made_by_first_output(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 31, 0);
	struct lines ls = { 0 };
	int64_t off = -1, line = -1, total = -1;
	char path[600];

	path_of(f, 31, "log", path, sizeof(path));
	tq_log_position(l, &off, &line);
	assert_int_equal(off, 0);
	assert_int_equal(line, 1);
	assert_int_equal(tq_log_flush(l, &err), 0);
	assert_int_equal(tq_log_end_stream(l, TQ_STREAM_STDOUT, &err), 0);
	wclose(l);
	assert_int_equal(file_size(path), -1);
	assert_int_equal(rd(f, 31, TQ_STREAM_ALL, 1, -1, 0, &ls), 0);
	lines_free(&ls);
	assert_int_equal(tq_log_stat(f->q, 31, TQ_STREAM_ALL, &total, NULL, &err), 0);
	assert_int_equal(total, 0);
	/* the next attempt prints */
	l = wopen(f, 31, 0);
	assert_int_equal(file_size(path), -1);
	wr(l, TQ_STREAM_STDERR, "one\n", 0);
	assert_true(file_size(path) > 0);
	wclose(l);
	/* and the one after it goes on after its lines */
	l = wopen(f, 31, 0);
	tq_log_position(l, &off, &line);
	assert_int_equal(line, 2);
	wr(l, TQ_STREAM_STDOUT, "two\n", 0);
	wclose(l);
	assert_int_equal(rd(f, 31, TQ_STREAM_ALL, 1, -1, 0, &ls), 2);
	assert_string_equal(ls.v[0].text, "one");
	assert_string_equal(ls.v[1].text, "two");
	lines_free(&ls);
}

static void test_partial_tick(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 12, 0);
	struct lines ls = { 0 };
	int64_t next = 0, n;

	wr(l, TQ_STREAM_STDOUT, "ab", 1000);
	wr(l, TQ_STREAM_STDOUT, "cd", 1600);
	wr(l, TQ_STREAM_STDERR, "x", 1900);
	assert_int_equal(tq_log_tick(l, 1500, &next, &err), 0);
	assert_int_equal(next, 500);
	st(f, 12, TQ_STREAM_ALL, &n, NULL);
	assert_int_equal(n, 0);
	assert_int_equal(tq_log_tick(l, 1999, &next, &err), 0);
	assert_int_equal(next, 1);
	assert_int_equal(tq_log_tick(l, 2000, &next, &err), 0);
	assert_int_equal(next, 900); /* stderr's "x" is due at 2900 */
	assert_int_equal(rd(f, 12, TQ_STREAM_ALL, 1, -1, 0, &ls), 1);
	assert_string_equal(ls.v[0].text, "abcd");
	assert_false(ls.v[0].newline);
	lines_free(&ls);
	assert_int_equal(tq_log_tick(l, 2900, &next, &err), 0);
	assert_int_equal(next, -1);
	wr(l, TQ_STREAM_STDOUT, "ef\n", 3000);
	assert_int_equal(tq_log_tick(l, 9000, &next, &err), 0);
	assert_int_equal(next, -1);
	wclose(l);
	assert_int_equal(rd(f, 12, TQ_STREAM_STDOUT, 1, -1, 0, &ls), 2);
	assert_string_equal(ls.v[1].text, "ef");
	assert_true(ls.v[1].newline);
	lines_free(&ls);
}

/* tq_log_hold: complete lines wait in memory (readers do not see them)
 * until their time is up at a tick (which says when), tq_log_flush, or the
 * hold is full; they go out in the order taken, both streams; close writes
 * them. */
static void test_hold(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 14, 0);
	struct lines ls = { 0 };
	int64_t n = -1, next = 0;
	char big[600];

	tq_log_hold(l, 512, 100);
	wr(l, TQ_STREAM_STDOUT, "o1\n", 1000);
	wr(l, TQ_STREAM_STDERR, "e1\n", 1030);
	wr(l, TQ_STREAM_STDOUT, "o2\n", 1060);
	assert_int_equal(tq_log_held(l), 12); /* tag, 2 bytes, newline */
	assert_int_equal(tq_log_tick(l, 1050, &next, &err), 0);
	assert_int_equal(next, 50); /* 100 ms after the first was taken */
	st(f, 14, TQ_STREAM_ALL, &n, NULL);
	assert_int_equal(n, 0);
	assert_int_equal(tq_log_tick(l, 1100, &next, &err), 0);
	assert_int_equal(next, -1);
	assert_int_equal(tq_log_held(l), 0);
	assert_int_equal(rd(f, 14, TQ_STREAM_ALL, 1, -1, 0, &ls), 3);
	assert_string_equal(ls.v[0].text, "o1");
	assert_int_equal(ls.v[1].stream, TQ_STREAM_STDERR);
	assert_string_equal(ls.v[2].text, "o2");
	lines_free(&ls);
	/* the time starts again with the next record; flush writes at once */
	wr(l, TQ_STREAM_STDERR, "e2\n", 5000);
	assert_int_equal(tq_log_tick(l, 5099, &next, &err), 0);
	assert_int_equal(next, 1);
	assert_int_equal(tq_log_flush(l, &err), 0);
	st(f, 14, TQ_STREAM_ALL, &n, NULL);
	assert_int_equal(n, 4);
	/* a full hold goes out by itself */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	wr(l, TQ_STREAM_STDERR, "e3\n", 6000);
	wr(l, TQ_STREAM_STDOUT, big, 6000);
	assert_int_equal(tq_log_held(l), 0);
	st(f, 14, TQ_STREAM_ALL, &n, NULL);
	assert_int_equal(n, 6);
	/* close writes what is held */
	wr(l, TQ_STREAM_STDOUT, "o3\n", 7000);
	wclose(l);
	assert_int_equal(rd(f, 14, TQ_STREAM_ALL, 5, -1, 0, &ls), 7);
	assert_string_equal(ls.v[0].text, "e3");
	assert_string_equal(ls.v[2].text, "o3");
	lines_free(&ls);
}

static void test_long_line(void **state)
{
	struct fx *f = *state;
	struct tq_log *l = wopen(f, 13, 0);
	struct lines ls = { 0 };
	struct bytes b = { 0 };
	size_t big = 3 * TQ_LOG_LINE_MAX + 5;
	char *p = malloc(big + 1);
	struct tq_err err = TQ_ERR_INIT;

	assert_non_null(p);
	for (size_t i = 0; i < big; i++)
		p[i] = (char)('a' + i % 26);
	p[big] = '\n';
	/* In uneven chunks, so cuts fall inside and across writes. */
	for (size_t i = 0; i <= big; i += 10007) {
		size_t k = big + 1 - i < 10007 ? big + 1 - i : 10007;
		assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, p + i, k, 0, &err), 0);
	}
	/* Exactly LINE_MAX: one record; 2 x LINE_MAX: a piece and a line. */
	memset(p, 'q', 2 * TQ_LOG_LINE_MAX);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, p, TQ_LOG_LINE_MAX, 0, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, "\n", 1, 0, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, p, 2 * TQ_LOG_LINE_MAX, 0, &err), 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDERR, "\n", 1, 0, &err), 0);
	wclose(l);
	assert_int_equal(rd(f, 13, TQ_STREAM_STDOUT, 1, -1, 0, &ls), 4);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ls.v[i].len, TQ_LOG_LINE_MAX);
		assert_false(ls.v[i].newline);
	}
	assert_int_equal(ls.v[3].len, 5);
	assert_true(ls.v[3].newline);
	rebuild(&ls, TQ_STREAM_STDOUT, &b);
	assert_int_equal(b.n, big + 1);
	for (size_t i = 0; i < big; i++)
		if (b.p[i] != (char)('a' + i % 26))
			fail_msg("byte %zu differs", i);
	lines_free(&ls);
	assert_int_equal(rd(f, 13, TQ_STREAM_STDERR, 1, -1, 0, &ls), 3);
	assert_int_equal(ls.v[0].len, TQ_LOG_LINE_MAX);
	assert_true(ls.v[0].newline);
	assert_int_equal(ls.v[1].len, TQ_LOG_LINE_MAX);
	assert_false(ls.v[1].newline);
	assert_int_equal(ls.v[2].len, TQ_LOG_LINE_MAX);
	assert_true(ls.v[2].newline);
	lines_free(&ls);
	/* The tail of everything reads backwards across those big records. */
	assert_int_equal(rd(f, 13, TQ_STREAM_ALL, 0, -1, 4, &ls), 7);
	assert_int_equal(ls.n, 4);
	assert_int_equal(ls.v[0].n, 4);
	assert_int_equal(ls.v[0].len, 5);
	for (int i = 1; i < 4; i++) {
		assert_int_equal(ls.v[i].stream, TQ_STREAM_STDERR);
		assert_int_equal(ls.v[i].len, TQ_LOG_LINE_MAX);
		assert_int_equal(ls.v[i].text[0], 'q');
	}
	lines_free(&ls);
	free(b.p);
	free(p);
}

static void test_remove(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	char log[600], idx[600];
	struct lines ls = { 0 };

	write_numbered(f, 14, 1, E + 1); /* an index too */
	path_of(f, 14, "log", log, sizeof(log));
	path_of(f, 14, "idx", idx, sizeof(idx));
	assert_true(file_size(log) > 0 && file_size(idx) > 0);
	assert_int_equal(tq_log_remove(f->q, 14, &err), 0);
	assert_int_equal(file_size(log), -1);
	assert_int_equal(file_size(idx), -1);
	assert_int_equal(tq_log_remove(f->q, 14, &err), 0);
	assert_int_equal(rd(f, 14, TQ_STREAM_ALL, 0, -1, 10, &ls), 0);
	lines_free(&ls);
}

/* ------------------------------------------------------------------ */
/* Volume: 100 MB byte-exact                                          */

struct gen {
	uint64_t s;
	int64_t run; /* bytes left in a long run without '\n' */
};

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Arbitrary bytes ('\n' about 1 in 256, so lines of ~256 bytes), with an
 * occasional run of 70-200 KB without a newline. */
static void gen_fill(struct gen *g, unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = xs(&g->s);
		if (g->run > 0) {
			g->run--;
			p[i] = (unsigned char)('A' + r % 26);
		} else if (r % 400000 == 0) {
			g->run = 70000 + (int64_t)((r >> 20) % 130000);
			p[i] = 'A';
		} else {
			p[i] = (unsigned char)(r >> 24);
		}
	}
}

struct verify {
	struct gen g[2];
	unsigned char *buf;
	int64_t lines, bytes[2];
	int bad;
};

static int verify_line(const struct tq_log_line *l, void *arg)
{
	struct verify *v = arg;
	struct gen *g = &v->g[l->stream - 1];

	gen_fill(g, v->buf, l->len + (size_t)l->newline);
	if ((l->len && memcmp(v->buf, l->text, l->len) != 0) ||
	    (l->newline && v->buf[l->len] != '\n') ||
	    memchr(l->text, '\n', l->len) != NULL || l->n != v->lines + 1) {
		v->bad = 1;
		return 1;
	}
	v->lines++;
	v->bytes[l->stream - 1] += (int64_t)(l->len + (size_t)l->newline);
	return 0;
}

static void test_100mb(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 15, 0);
	struct gen g[2] = { { 0x1234567, 0 }, { 0x7654321, 0 } };
	uint64_t pick = 42;
	unsigned char *buf = malloc(200000);
	struct verify v = { .g = { { 0x1234567, 0 }, { 0x7654321, 0 } } };
	int64_t total = 0, written[2] = { 0, 0 }, lines, bytes;
	const int64_t want = 100 * 1000 * 1000;
	struct tq_log_range r = { .stream = TQ_STREAM_ALL, .limit = 100000 };

	assert_non_null(buf);
	while (total < want) {
		uint64_t x = xs(&pick);
		int s = (x & 3) == 0 ? 1 : 0; /* a quarter to stderr */
		size_t n = 1 + (size_t)((x >> 8) % 150000);
		gen_fill(&g[s], buf, n);
		if (tq_log_write(l, (enum tq_stream)(s + 1), buf, n, 0, &err) != 0)
			fail_msg("write: %s", err.msg);
		total += (int64_t)n;
		written[s] += (int64_t)n;
	}
	wclose(l);
	st(f, 15, TQ_STREAM_ALL, &lines, &bytes);
	assert_int_equal(bytes, total);
	st(f, 15, TQ_STREAM_STDERR, NULL, &bytes);
	assert_int_equal(bytes, written[1]);
	v.buf = malloc(TQ_LOG_LINE_MAX + 1);
	assert_non_null(v.buf);
	for (r.offset = 1; r.offset <= lines; r.offset += r.limit) {
		int64_t t;
		if (tq_log_read(f->q, 15, &r, verify_line, &v, &t, &err) != 0)
			fail_msg("read: %s", err.msg);
		assert_int_equal(t, lines);
		if (v.bad)
			fail_msg("line %lld differs", (long long)v.lines + 1);
	}
	assert_int_equal(v.lines, lines);
	assert_int_equal(v.bytes[0], written[0]);
	assert_int_equal(v.bytes[1], written[1]);
	free(v.buf);
	free(buf);
}

/* ------------------------------------------------------------------ */
/* A writer in another process, readers here                          */

#define CONC_LINES 200000

static void conc_writer(struct fx *f)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = NULL;
	char buf[256];
	int64_t seq[2] = { 0, 0 };
	uint64_t r = 99;

	if (tq_log_open(f->q, 16, 0, &l, &err) != 0)
		_exit(10);
	for (int i = 0; i < CONC_LINES; i++) {
		int s = (int)(xs(&r) & 1);
		int pad = (int)(xs(&r) % 120);
		int k = snprintf(buf, sizeof(buf), "%c:%07lld:%.*s\n", s ? 'e' : 'o',
				 (long long)++seq[s], pad,
				 "................................................................"
				 "........................................................");
		/* Write a random prefix of the line now, the rest later, as a pipe
		 * would deliver it; the other stream may come in between. */
		size_t cut = (size_t)(xs(&r) % (uint64_t)k);
		if (tq_log_write(l, (enum tq_stream)(s + 1), buf, cut, i, &err) != 0 ||
		    tq_log_write(l, (enum tq_stream)(s + 1), buf + cut, (size_t)k - cut, i, &err) != 0)
			_exit(11);
	}
	if (tq_log_close(l, &err) != 0)
		_exit(12);
	_exit(0);
}

/* Every record whole, numbered in order, each stream's lines in order. */
static void conc_check(const struct lines *ls, enum tq_stream s)
{
	int64_t last[2] = { 0, 0 };

	for (size_t i = 0; i < ls->n; i++) {
		const struct line *x = &ls->v[i];
		long long seq;
		char tag;
		int k = x->stream - 1;
		assert_true(x->newline);
		if (sscanf(x->text, "%c:%7lld:", &tag, &seq) != 2 || x->len < 10)
			fail_msg("torn line: %s", x->text);
		assert_int_equal(tag, x->stream == TQ_STREAM_STDOUT ? 'o' : 'e');
		for (size_t j = 10; j < x->len; j++)
			assert_int_equal(x->text[j], '.');
		if (last[k] != 0)
			assert_int_equal(seq, last[k] + 1);
		last[k] = seq;
		if (s != TQ_STREAM_ALL)
			assert_int_equal(x->n, seq);
		if (i > 0)
			assert_int_equal(x->n, ls->v[i - 1].n + 1);
	}
}

static void test_concurrent_reader(void **state)
{
	struct fx *f = *state;
	int64_t deadline = tq_mono_ms() + 120000, total;
	int status = 0, rounds = 0;
	uint64_t r = 7;
	pid_t pid = fork();
	struct lines ls = { 0 };

	assert_true(pid >= 0);
	if (pid == 0)
		conc_writer(f);
	while (tq_waitpid(pid, &status, WNOHANG) == 0) {
		enum tq_stream s = (enum tq_stream)(xs(&r) % 3);
		if (tq_mono_ms() > deadline) {
			kill(pid, SIGKILL);
			tq_waitpid(pid, &status, 0);
			fail_msg("writer did not finish in time");
		}
		total = rd(f, 16, s, 0, -1, 50, &ls);
		conc_check(&ls, s);
		lines_free(&ls);
		if (total > 0) {
			int64_t at = 1 + (int64_t)(xs(&r) % (uint64_t)total);
			rd(f, 16, s, at, 100, 0, &ls);
			conc_check(&ls, s);
			lines_free(&ls);
		}
		rounds++;
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(rd(f, 16, TQ_STREAM_ALL, 1, -1, 0, &ls), CONC_LINES);
	conc_check(&ls, TQ_STREAM_ALL);
	lines_free(&ls);
	print_message("concurrent reader: %d rounds while writing\n", rounds);
}

/* ------------------------------------------------------------------ */
/* Write errors                                                       */

/* Write numbered 100-byte lines, one call each, until an error. Returns the
 * number that succeeded; *rc and err hold the failure. */
static int fill_until_error(struct tq_log *l, int *rc, struct tq_err *err)
{
	char buf[128];
	int i;

	for (i = 0; i < 1000000; i++) {
		snprintf(buf, sizeof(buf), "%05d %093d\n", i, 0);
		if ((*rc = tq_log_write(l, TQ_STREAM_STDOUT, buf, 100, 0, err)) != 0)
			return i;
	}
	return i;
}

static void check_filled(struct fx *f, int64_t id, int ok)
{
	struct lines ls = { 0 };
	char path[600];

	assert_int_equal(rd(f, id, TQ_STREAM_ALL, 1, -1, 0, &ls), ok);
	for (int i = 0; i < ok; i++) {
		char want[128];
		snprintf(want, sizeof(want), "%05d %093d", i, 0);
		assert_string_equal(ls.v[i].text, want);
	}
	lines_free(&ls);
	path_of(f, id, "log", path, sizeof(path));
	assert_int_equal(file_size(path), (int64_t)ok * 101);
}

static void test_enospc_tmpfs(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l;
	char logs[600];
	int rc = 0, ok;

	if (geteuid() != 0) {
		print_message("skipped: full-disk test needs root to mount a tmpfs\n");
		skip();
	}
	snprintf(logs, sizeof(logs), "%s/logs", f->state);
	if (mount("tmpfs", logs, "tmpfs", 0, "size=64k,mode=0700") < 0) {
		print_message("skipped: mount tmpfs on %s: %s\n", logs, strerror(errno));
		skip();
	}
	f->mounted = 1;
	l = wopen(f, 17, 0);
	ok = fill_until_error(l, &rc, &err);
	assert_int_equal(rc, TQ_ENOSPC);
	print_message("full disk after %d lines: %s\n", ok, err.msg);
	assert_non_null(strstr(err.msg, "log write logs/17.log"));
	assert_non_null(strstr(err.msg, "No space left on device"));
	assert_true(ok > 100);
	assert_int_equal(tq_log_output_bytes(l), (int64_t)ok * 100);
	tq_log_close(l, NULL);
	check_filled(f, 17, ok);
	/* A retry on the full disk opens and reports the same error cleanly. */
	l = wopen(f, 17, 0);
	assert_int_equal(fill_until_error(l, &rc, &err), 0);
	assert_int_equal(rc, TQ_ENOSPC);
	tq_log_close(l, NULL);
	check_filled(f, 17, ok);
	assert_int_equal(umount2(logs, MNT_DETACH), 0);
	f->mounted = 0;
}

static void test_efbig_rlimit(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 18, 0);
	struct rlimit old, lim;
	struct sigaction ign = { .sa_handler = SIG_IGN }, oldsa;
	int rc = 0, ok;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 50000;
	assert_int_equal(sigaction(SIGXFSZ, &ign, &oldsa), 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	ok = fill_until_error(l, &rc, &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(sigaction(SIGXFSZ, &oldsa, NULL), 0);
	assert_int_equal(rc, TQ_ENOSPC);
	assert_non_null(strstr(err.msg, "log write logs/18.log: File too large"));
	assert_int_equal(ok, 50000 / 101);
	/* The writer stays usable once the limit is gone. */
	{
		char buf[128];
		snprintf(buf, sizeof(buf), "%05d %093d\n", ok, 0);
		assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, buf, 100, 0, &err), 0);
	}
	wclose(l);
	check_filled(f, 18, ok + 1);

	/* Many lines in one call: the whole records that reached the file
	 * before the limit stay (a reader may have seen them), the torn one
	 * goes, and so does the partial line the call ended with: written at
	 * close, once there is room, it would follow the lost records. */
	{
		static const char partial[] = "partial-no-newline";
		char *big = malloc(1000 * 100 + sizeof(partial));
		assert_non_null(big);
		memcpy(big + 1000 * 100, partial, sizeof(partial) - 1);
		for (int i = 0; i < 1000; i++) {
			char buf[128];
			snprintf(buf, sizeof(buf), "%05d %093d\n", i, 0);
			memcpy(big + i * 100, buf, 100);
		}
		l = wopen(f, 19, 0);
		assert_int_equal(sigaction(SIGXFSZ, &ign, &oldsa), 0);
		assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
		rc = tq_log_write(l, TQ_STREAM_STDOUT, big,
				  1000 * 100 + sizeof(partial) - 1, 0, &err);
		assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
		assert_int_equal(sigaction(SIGXFSZ, &oldsa, NULL), 0);
		assert_int_equal(rc, TQ_ENOSPC);
		assert_int_equal(tq_log_output_bytes(l), (50000 / 101) * 100);
		wclose(l);
		check_filled(f, 19, 50000 / 101);
		free(big);
	}
}

/* ------------------------------------------------------------------ */
/* The store's operations for readers that are not taskq's: export, watch */

/* An --on-exit hook reads the output from the file tq_log_export names:
 * with SQLite the log itself, in its record format. */
static void test_export_names_the_log(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log *l = wopen(f, 7, 0);
	char path[600], want[600], buf[64];
	ssize_t n;
	int fd;

	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "hi\n", 3, 0, &err), 0);
	assert_int_equal(tq_log_close(l, &err), 0);
	assert_int_equal(tq_log_export(f->q, 7, path, sizeof(path), &err), 0);
	path_of(f, 7, "log", want, sizeof(want));
	assert_string_equal(path, want);
	assert_true((fd = tq_open(path, O_RDONLY, 0)) >= 0);
	n = tq_read(fd, buf, sizeof(buf));
	tq_close(fd);
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "ohi\n", 4);
	/* a buffer too small is refused, not cut */
	assert_int_equal(tq_log_export(f->q, 7, buf, 8, &err), TQ_EINVAL);
}

/* Whether the watch's descriptor turns readable within ms, and if so what
 * tq_log_watch_hit says. -1: it did not. */
static int watch_wait(struct tq_log_watch *w, int ms)
{
	struct pollfd p = { .fd = tq_log_watch_fd(w), .events = POLLIN };
	int64_t deadline = tq_mono_ms() + ms, left;

	while ((left = deadline - tq_mono_ms()) > 0) {
		if (poll(&p, 1, (int)left) > 0 && (p.revents & POLLIN))
			return tq_log_watch_hit(w);
	}
	return -1;
}

/* A follower waits on the watch: a line of its task's output wakes it (and
 * the log's creation before it); another task's output wakes it for
 * nothing (hit 0). */
static void test_watch_wakes_for_its_task(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_log_watch *w = NULL;
	struct tq_log *l;

	assert_int_equal(tq_log_watch_open(f->q, 9, &w, &err), 0);
	assert_non_null(w);
	assert_true(tq_log_watch_fd(w) >= 0);
	/* nothing written yet: no wake within a short wait */
	assert_int_equal(watch_wait(w, 50), -1);
	/* another task's log: the descriptor wakes, the hit says not ours */
	l = wopen(f, 10, 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "x\n", 2, 0, &err), 0);
	assert_int_equal(tq_log_close(l, &err), 0);
	assert_int_equal(watch_wait(w, 5000), 0);
	/* ours: created, written */
	l = wopen(f, 9, 0);
	assert_int_equal(tq_log_write(l, TQ_STREAM_STDOUT, "y\n", 2, 0, &err), 0);
	assert_int_equal(tq_log_flush(l, &err), 0);
	assert_int_equal(watch_wait(w, 5000), 1);
	assert_int_equal(tq_log_close(l, &err), 0);
	tq_log_watch_close(w);
	tq_log_watch_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_format_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_names_the_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_wakes_for_its_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_made_when_second_entry_due, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_torn_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_under_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_made_by_first_output, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_tick, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_100mb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enospc_tmpfs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_efbig_rlimit, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * log.c - a task's output in the PostgreSQL store (logstore.h), so that
 * log, poll, log --follow and result read it from any node.
 *
 * The records are logstore.h's, byte for byte (TAG BYTES '\n'; o/e a
 * line, O/E a piece), cut as the SQLite backend cuts them (pieces of
 * TQ_LOG_LINE_MAX, a partial line written after TQ_LOG_PARTIAL_MS, the
 * output cap exact). Instead of a file they go to log_chunks: each flush
 * of the writer is one chunk of whole records, inserted with the log's
 * counts (logs row) in one statement, which also notifies the channel
 * tq_log with the task id (log --follow LISTENs there). A chunk knows its
 * first line and the stdout and stderr lines before it, so line N of any
 * numbering is one index probe and a scan of one chunk (at most the
 * writer's batch, 256 KiB): paging costs O(page) whatever the log's size.
 *
 * One writer per log: a session advisory lock on (schema, task id), released by
 * close or by the writer's connection ending (the process dying). A log
 * removed while its task runs (tq_log_remove) is started again with a new
 * generation (the logs row's gen, a file's inode to the SQLite backend:
 * tq_log_file.ino, a poll cursor's log_file), its first line saying the
 * lines before it were lost.
 *
 * The store away (TQ_EOFFLINE: the server restarting, the connection it
 * ended): a chunk that could not be stored is kept, in order, with the
 * ones after it (l->away, counted in l->away_bytes), and the writer takes
 * output as before; the next flush or tick after AWAY_RETRY_MS tries
 * again. The connection that comes back is a new one: the writer's lock
 * went with the old one, so it is taken again first (resync), and the
 * logs row says whether the chunk that was on the wire was stored (its
 * answer lost) or not, so that none is stored twice or skipped. A lock
 * another writer took meanwhile (the lease was taken over: a new attempt
 * writes this log) is TQ_EBUSY: this writer's output is not the log's any
 * more. The caller bounds what is held (tq_log_away, TQ_LOG_AWAY_MAX);
 * only close drops it, saying how much.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/parse.h"
#include "common/sys.h"

#define BATCH_MAX (256 * 1024)      /* bytes of records in one chunk */
#define AWAY_RETRY_MS 250           /* the store away: the next try (the
				     * connection's backoff paces connects) */
#define CHUNKS_PER_READ 64          /* chunks a reader fetches at a time */
/* The advisory lock of task id's writer, in the two-key space: the store's
 * schema (advisory locks are the database's: two stores in two schemas of
 * one database, each with its task 1, must not share one) and the id. */
#define LOCK_SQL(f) "SELECT " f "(hashtext(current_schema()), ($1 % 2147483648)::int)"

struct counts {
	int64_t lines, out_lines, bytes, obytes, ebytes;
};

struct part {
	char *buf;
	size_t len;
	int64_t since;
};

/* A chunk the store could not take yet: its records and the counts before
 * and after it. */
struct chunk {
	struct chunk *next;
	struct counts before, after;
	size_t len;
	char data[];
};

struct tq_pg_log {
	struct tq_log base;       /* first */
	struct tq_pg *q;
	int64_t id;
	int64_t gen;
	int64_t cap;
	int64_t taken;            /* output bytes accepted, every attempt's */
	int capped;
	int relinked;
	struct counts done;       /* stored */
	struct counts bat;        /* before the batch: done, or the last away
				   * chunk's after */
	struct counts pend;       /* stored, away and batched */
	struct chunk *away;       /* not stored yet, the store away: in order */
	struct chunk **away_tail;
	size_t away_bytes;
	int64_t epoch;            /* the connection our lock was taken on */
	int64_t retry_at;         /* mono ms: the next try at storing away */
	char *batch;
	size_t blen;
	size_t hold;
	int64_t hold_ms;
	int64_t held_since;
	struct part part[2];
};

static struct tq_pg_log *log_of(struct tq_log *base)
{
	return (struct tq_pg_log *)base;
}

static const struct tq_pg_log *log_of_c(const struct tq_log *base)
{
	return (const struct tq_pg_log *)base;
}

static void apply(struct counts *c, int tag, size_t n)
{
	c->lines++;
	c->bytes += (int64_t)n + 2;
	if (tag == 'o' || tag == 'O') {
		c->out_lines++;
		c->obytes += (int64_t)n + (tag == 'o');
	} else {
		c->ebytes += (int64_t)n + (tag == 'e');
	}
}

static int cap_error(const struct tq_pg_log *l, struct tq_err *err)
{
	char size[32];

	tq_format_size(l->cap, size, sizeof(size));
	return tq_err_set(err, TQ_ECAP, "output cap of %s reached", size);
}

/* Make the log's row (a new generation when there was none). */
static int log_row(struct tq_pg *q, int64_t id, int64_t *gen, struct counts *c,
		   struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rc;

	tq_pg_i64(&p, id);
	if ((rc = tq_pg_exec(q, "INSERT INTO logs(task_id) VALUES ($1) ON CONFLICT DO NOTHING",
			     &p, NULL, err, "open log")) < 0)
		return rc;
	if ((r = tq_pg_query(q, "SELECT gen, lines, out_lines, bytes, out_bytes, err_bytes"
			     " FROM logs WHERE task_id = $1", &p, err, "open log")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) == 0) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_EBUSY, "open log of task %lld: removed meanwhile",
				  (long long)id);
	}
	*gen = tq_pg_get_i64(r, 0, 0, 0);
	c->lines = tq_pg_get_i64(r, 0, 1, 0);
	c->out_lines = tq_pg_get_i64(r, 0, 2, 0);
	c->bytes = tq_pg_get_i64(r, 0, 3, 0);
	c->obytes = tq_pg_get_i64(r, 0, 4, 0);
	c->ebytes = tq_pg_get_i64(r, 0, 5, 0);
	tq_pg_clear(r);
	return 0;
}

int tq_pg_log_open(struct tq_queue *base, int64_t id, int64_t max_output,
		   struct tq_log **lp, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	struct tq_pg_log *l;
	PGresult *r;
	int rc, got;

	*lp = NULL;
	if (max_output < 0)
		return tq_err_set(err, TQ_EINVAL, "log: negative output cap");
	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(q, LOCK_SQL("pg_try_advisory_lock"), &p, err, "open log")) == NULL)
		return err ? err->code : TQ_EIO;
	got = strcmp(tq_pg_get_txt(r, 0, 0), "t") == 0;
	tq_pg_clear(r);
	if (!got)
		return tq_err_set(err, TQ_EBUSY, "log of task %lld is being written by another "
				  "process", (long long)id);
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->batch = malloc(BATCH_MAX + 2 * TQ_LOG_LINE_MAX + 4)) == NULL ||
	    (l->part[0].buf = malloc(TQ_LOG_LINE_MAX)) == NULL ||
	    (l->part[1].buf = malloc(TQ_LOG_LINE_MAX)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto fail;
	}
	l->base.ops = &tq_pg_ops;
	l->q = q;
	l->id = id;
	l->cap = max_output;
	if ((rc = log_row(q, id, &l->gen, &l->done, err)) < 0)
		goto fail;
	l->epoch = q->epoch;
	l->away_tail = &l->away;
	l->bat = l->pend = l->done;
	l->taken = l->done.obytes + l->done.ebytes;
	*lp = &l->base;
	return 0;
fail:
	tq_pg_exec(q, LOCK_SQL("pg_advisory_unlock"), &p, NULL, NULL, "close log");
	if (l != NULL) {
		free(l->batch);
		free(l->part[0].buf);
		free(l->part[1].buf);
		free(l);
	}
	return rc;
}

/* Store records data[0..len) as one chunk, with the log's counts (before
 * and after it), and notify its readers: one statement, so a reader sees
 * both or neither. 0 rows: the log's row is gone (removed) or has another
 * generation. */
static int store_chunk(struct tq_pg_log *l, const char *data, size_t len,
		       const struct counts *b, const struct counts *a, int *gone,
		       struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	*gone = 0;
	tq_pg_i64(&p, l->id);
	tq_pg_i64(&p, l->gen);
	tq_pg_i64(&p, b->lines + 1);
	tq_pg_i64(&p, a->lines - b->lines);
	tq_pg_i64(&p, b->out_lines);
	tq_pg_i64(&p, b->lines - b->out_lines);
	tq_pg_i64(&p, a->out_lines - b->out_lines);
	tq_pg_i64(&p, b->bytes);
	tq_pg_bin(&p, data, len);
	tq_pg_i64(&p, a->lines);
	tq_pg_i64(&p, a->out_lines);
	tq_pg_i64(&p, a->bytes);
	tq_pg_i64(&p, a->obytes);
	tq_pg_i64(&p, a->ebytes);
	r = tq_pg_query(l->q, "WITH u AS (UPDATE logs SET lines = $10, out_lines = $11,"
			" bytes = $12, out_bytes = $13, err_bytes = $14 WHERE task_id = $1"
			" AND gen = $2 RETURNING task_id)"
			" INSERT INTO log_chunks(task_id, first_line, lines, out_before, err_before,"
			" out_lines, byte_off, data) SELECT u.task_id, $3, $4, $5, $6, $7, $8, $9"
			" FROM u CROSS JOIN LATERAL (SELECT pg_notify('tq_log', $1::text)) n"
			" RETURNING 1", &p, err, "log write");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	*gone = tq_pg_rows(r) == 0;
	tq_pg_clear(r);
	return 0;
}

static int add_record(struct tq_pg_log *l, int tag, const char *a, size_t na,
		      const char *b, size_t nb, struct tq_err *err);

/* A note on stderr, then the records old[0..len) again (renumbered: their
 * counts are recomputed from them); old is freed. */
static int add_again(struct tq_pg_log *l, const char *note, size_t n, char *old, size_t len,
		     struct tq_err *err)
{
	int rc = add_record(l, 'e', note, n, NULL, 0, err);

	for (const char *p = old; rc == 0 && p < old + len; ) {
		const char *e = memchr(p, '\n', (size_t)(old + len - p));

		rc = add_record(l, (unsigned char)*p, p + 1, (size_t)(e - p) - 1, NULL, 0, err);
		p = e + 1;
	}
	free(old);
	return rc;
}

/*
 * The log was removed under the writer: a new generation, its first line
 * saying the lines before it were lost, then what was batched (renumbered:
 * its counts are recomputed from its records). The cap still counts all.
 */
static int relink(struct tq_pg_log *l, struct tq_err *err)
{
	char note[160];
	char *old = NULL;
	size_t olen = l->blen;
	int n, rc;

	if (olen > 0 && (old = malloc(olen)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	if (olen > 0)
		memcpy(old, l->batch, olen);
	memset(&l->done, 0, sizeof(l->done));
	if ((rc = log_row(l->q, l->id, &l->gen, &l->done, err)) < 0) {
		free(old);
		return rc;
	}
	l->bat = l->pend = l->done;
	l->blen = 0;
	l->relinked++;
	n = snprintf(note, sizeof(note), "taskq: the log of task %lld was deleted while the "
		     "task ran; the lines before this one are lost", (long long)l->id);
	return add_again(l, note, (size_t)n, old, olen, err);
}

static void drop_away(struct tq_pg_log *l)
{
	while (l->away != NULL) {
		struct chunk *c = l->away;

		l->away = c->next;
		free(c);
	}
	l->away_tail = &l->away;
	l->away_bytes = 0;
}

/* The first chunk kept is stored: off the list. */
static void stored_first(struct tq_pg_log *l)
{
	struct chunk *c = l->away;

	l->done = c->after;
	l->away = c->next;
	if (l->away == NULL)
		l->away_tail = &l->away;
	l->away_bytes -= c->len;
	free(c);
}

/* The batch, as the last chunk waiting for the store. */
static int keep_away(struct tq_pg_log *l, struct tq_err *err)
{
	struct chunk *c;

	if ((c = malloc(sizeof(*c) + l->blen)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "log of task %lld: out of memory",
				  (long long)l->id);
	c->next = NULL;
	c->before = l->bat;
	c->after = l->pend;
	c->len = l->blen;
	memcpy(c->data, l->batch, l->blen);
	*l->away_tail = c;
	l->away_tail = &c->next;
	l->away_bytes += l->blen;
	l->bat = l->pend;
	l->blen = 0;
	return 0;
}

/*
 * The store has fewer of the log's lines than this writer stored: its
 * server crashed, and with it the last commits it had not yet flushed (a
 * worker's connection commits without waiting for the disk: README,
 * "Durability"). Those lines are gone; what the writer still holds goes
 * on after the store's last line, behind a line that says so.
 */
static int rebase(struct tq_pg_log *l, const struct counts *now, int64_t lost,
		  struct tq_err *err)
{
	size_t total = l->away_bytes + l->blen, off = 0;
	char note[160], *old = NULL;
	int n;

	if (total > 0 && (old = malloc(total)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (struct chunk *c = l->away; c != NULL; c = c->next) {
		memcpy(old + off, c->data, c->len);
		off += c->len;
	}
	if (l->blen > 0)
		memcpy(old + off, l->batch, l->blen);
	drop_away(l);
	l->blen = 0;
	l->done = l->bat = l->pend = *now;
	n = snprintf(note, sizeof(note), "taskq: the store lost the %lld lines of task %lld "
		     "before this one (its server crashed)", (long long)lost, (long long)l->id);
	return add_again(l, note, (size_t)n, old, total, err);
}

/*
 * A new connection since our lock was taken (the store was away): take it
 * again, and learn from the logs row whether the first chunk not known to
 * be stored was (its answer lost with the connection): then it is done.
 * 0 as it was, 1 when what waits changed (a chunk found stored, the held
 * records put after lines the store lost: rebase); TQ_EBUSY when another
 * writer holds the log now, or wrote it meanwhile.
 */
static int resync(struct tq_pg_log *l, struct tq_err *err)
{
	const struct counts *b = l->away ? &l->away->before : &l->bat;
	struct tq_pg_params p = { 0 };
	struct counts now = { 0 };
	int64_t gen = 0, lines = 0;
	PGresult *r;
	int got, found;

	if (l->q->epoch == l->epoch)
		return 0;
	tq_pg_i64(&p, l->id);
	if ((r = tq_pg_query(l->q, LOCK_SQL("pg_try_advisory_lock"), &p, err,
			     "log write")) == NULL)
		return err ? err->code : TQ_EIO;
	got = strcmp(tq_pg_get_txt(r, 0, 0), "t") == 0;
	tq_pg_clear(r);
	if (!got)
		return tq_err_set(err, TQ_EBUSY, "log of task %lld: another process writes "
				  "it now (its lease was taken over while the store was away)",
				  (long long)l->id);
	l->epoch = l->q->epoch;
	if ((r = tq_pg_query(l->q, "SELECT gen, lines, out_lines, bytes, out_bytes, err_bytes"
			     " FROM logs WHERE task_id = $1", &p, err, "log write")) == NULL)
		return err ? err->code : TQ_EIO;
	if ((found = tq_pg_rows(r) > 0)) {
		gen = tq_pg_get_i64(r, 0, 0, 0);
		lines = tq_pg_get_i64(r, 0, 1, 0);
		now.lines = lines;
		now.out_lines = tq_pg_get_i64(r, 0, 2, 0);
		now.bytes = tq_pg_get_i64(r, 0, 3, 0);
		now.obytes = tq_pg_get_i64(r, 0, 4, 0);
		now.ebytes = tq_pg_get_i64(r, 0, 5, 0);
	}
	tq_pg_clear(r);
	if (!found || gen != l->gen || lines == b->lines)
		return 0; /* gone (removed: the store's answer says so), or as we left it */
	if (lines < b->lines)
		return (got = rebase(l, &now, b->lines - lines, err)) < 0 ? got : 1;
	if (l->away != NULL && lines == l->away->after.lines) {
		stored_first(l);
		return 1;
	}
	return tq_err_set(err, TQ_EBUSY, "log of task %lld: the store holds %lld lines, this "
			  "writer %lld: written by another process while the store was away",
			  (long long)l->id, (long long)lines, (long long)b->lines);
}

/* Store the chunks kept while the store was away, in order. */
static int store_away(struct tq_pg_log *l, struct tq_err *err)
{
	int gone = 0, rc;

	while (l->away != NULL) {
		struct chunk *c = l->away;

		if ((rc = store_chunk(l, c->data, c->len, &c->before, &c->after, &gone,
				      err)) < 0)
			return rc;
		if (gone) {
			/* removed while the store was away: what it kept goes
			 * with it, the new log's first line says lines are lost */
			drop_away(l);
			return relink(l, err);
		}
		stored_first(l);
	}
	return 0;
}

/* What waits, on the connection our lock is on: first made again, if it
 * was lost, and then resynced; pinned meanwhile, so that no statement of
 * ours goes on a connection made again behind our back (one that holds
 * no lock, and whose store may have lost what we stored: resync). */
static int store_all(struct tq_pg_log *l, struct tq_err *err)
{
	int gone = 0, rc;

	if ((rc = tq_pg_connected(l->q, err)) < 0)
		return rc;
	tq_pg_pin(l->q, 1);
	if ((rc = resync(l, err)) >= 0)
		rc = store_away(l, err);
	if (rc == 0 && l->blen > 0 &&
	    (rc = store_chunk(l, l->batch, l->blen, &l->bat, &l->pend, &gone, err)) == 0 &&
	    gone && (rc = relink(l, err)) == 0)
		rc = store_chunk(l, l->batch, l->blen, &l->bat, &l->pend, &gone, err);
	tq_pg_pin(l->q, 0);
	return rc;
}

/*
 * Store what waits: the chunks kept while the store was away, then the
 * batch. The store away: the batch is kept with them (TQ_EOFFLINE). Any
 * other error: what did not get out is lost, and a partial line that
 * would follow it with it; the writer stays usable.
 */
static int flush_batch(struct tq_pg_log *l, struct tq_err *err)
{
	int rc;

	if (l->blen == 0 && l->away == NULL)
		return 0;
	rc = store_all(l, err);
	if (rc == TQ_EOFFLINE) {
		l->retry_at = tq_mono_ms() + AWAY_RETRY_MS;
		if (l->blen > 0 && keep_away(l, err) < 0)
			return TQ_ENOMEM;
		return rc;
	}
	if (rc < 0) {
		drop_away(l);
		l->bat = l->pend = l->done;
		l->blen = 0;
		l->part[0].len = l->part[1].len = 0;
		return rc;
	}
	l->done = l->bat = l->pend;
	l->blen = 0;
	return 0;
}

/* flush_batch for a writer: records kept for a store that is away are
 * not an error (0); the caller bounds them with tq_log_away. Before the
 * store's next try the batch only grows, and joins the kept chunks when
 * full (the batch cannot take the next record). */
static int flush_or_keep(struct tq_pg_log *l, int full, struct tq_err *err)
{
	int rc;

	if (l->away != NULL && tq_mono_ms() < l->retry_at)
		return full && l->blen > 0 ? keep_away(l, err) : 0;
	rc = flush_batch(l, err);
	return rc == TQ_EOFFLINE ? 0 : rc;
}

static int add_record(struct tq_pg_log *l, int tag, const char *a, size_t na,
		      const char *b, size_t nb, struct tq_err *err)
{
	size_t size = na + nb + 2;
	char *p;
	int rc;

	if (l->blen > 0 && l->blen + size > BATCH_MAX && (rc = flush_or_keep(l, 1, err)) < 0)
		return rc;
	p = l->batch + l->blen;
	*p++ = (char)tag;
	if (na > 0)
		memcpy(p, a, na);
	if (nb > 0)
		memcpy(p + na, b, nb);
	p[na + nb] = '\n';
	l->blen += size;
	apply(&l->pend, tag, na + nb);
	return 0;
}

static int flush_part(struct tq_pg_log *l, enum tq_stream s, struct tq_err *err)
{
	struct part *pt = &l->part[s - 1];
	int rc;

	if (pt->len == 0)
		return 0;
	if ((rc = add_record(l, s == TQ_STREAM_STDOUT ? 'O' : 'E', pt->buf, pt->len, NULL, 0,
			     err)) < 0)
		return rc;
	pt->len = 0;
	return 0;
}

static int feed(struct tq_pg_log *l, enum tq_stream s, const char *p, size_t n,
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

int tq_pg_log_write(struct tq_log *base, enum tq_stream stream, const void *buf, size_t n,
		    int64_t now_ms, struct tq_err *err)
{
	struct tq_pg_log *l = log_of(base);
	size_t take = n;
	int over = 0, rc, was_held;

	if (stream != TQ_STREAM_STDOUT && stream != TQ_STREAM_STDERR)
		return tq_err_set(err, TQ_EINVAL, "log write of task %lld: bad stream",
				  (long long)l->id);
	if (l->capped)
		return cap_error(l, err);
	if (n == 0)
		return 0;
	if (l->cap > 0 && (l->taken >= l->cap || (uint64_t)(l->cap - l->taken) < n)) {
		take = l->taken >= l->cap ? 0 : (size_t)(l->cap - l->taken);
		over = 1;
	}
	l->taken += (int64_t)take;
	was_held = l->blen > 0;
	rc = feed(l, stream, buf, take, now_ms, err);
	if (rc == 0 && over) {
		l->capped = 1;
		if ((rc = flush_part(l, TQ_STREAM_STDOUT, err)) == 0)
			rc = flush_part(l, TQ_STREAM_STDERR, err);
	}
	if (rc == 0 && (over || l->blen >= l->hold))
		rc = flush_or_keep(l, 0, err);
	else if (rc == 0 && !was_held)
		l->held_since = now_ms;
	if (rc == 0 && over)
		rc = cap_error(l, err);
	return rc;
}

void tq_pg_log_hold(struct tq_log *base, size_t bytes, int64_t ms)
{
	struct tq_pg_log *l = log_of(base);

	l->hold = bytes < BATCH_MAX ? bytes : BATCH_MAX;
	l->hold_ms = ms;
}

size_t tq_pg_log_held(const struct tq_log *base)
{
	return log_of_c(base)->blen;
}

size_t tq_pg_log_away(const struct tq_log *base)
{
	const struct tq_pg_log *l = log_of_c(base);

	return l->away != NULL ? l->away_bytes + l->blen : 0;
}

int tq_pg_log_flush(struct tq_log *base, struct tq_err *err)
{
	return flush_or_keep(log_of(base), 0, err);
}

int tq_pg_log_tick(struct tq_log *base, int64_t now_ms, int64_t *next_ms, struct tq_err *err)
{
	struct tq_pg_log *l = log_of(base);
	int64_t next = -1, due;
	int rc = 0, pieces = 0;

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
	due = l->held_since + l->hold_ms;
	if (l->away != NULL) /* waiting for the store: its next try */
		due = l->retry_at;
	if (rc == 0 && (pieces || l->blen >= l->hold || now_ms >= due))
		rc = flush_or_keep(l, 0, err);
	if (rc == 0 && l->away != NULL)
		due = l->retry_at;
	else if (rc == 0 && l->blen == 0)
		due = -1;
	if (rc == 0 && due >= 0 && (next < 0 || due - now_ms < next))
		next = due > now_ms ? due - now_ms : 0;
	if (next_ms)
		*next_ms = next;
	return rc;
}

int tq_pg_log_end_stream(struct tq_log *base, enum tq_stream stream, struct tq_err *err)
{
	struct tq_pg_log *l = log_of(base);
	int rc;

	if (stream != TQ_STREAM_STDOUT && stream != TQ_STREAM_STDERR)
		return tq_err_set(err, TQ_EINVAL, "log of task %lld: bad stream",
				  (long long)l->id);
	if ((rc = flush_part(l, stream, err)) < 0)
		return rc;
	return flush_or_keep(l, 0, err);
}

void tq_pg_log_position(const struct tq_log *base, int64_t *offset, int64_t *line)
{
	const struct tq_pg_log *l = log_of_c(base);

	if (offset)
		*offset = l->done.bytes;
	if (line)
		*line = l->done.lines + 1;
}

int64_t tq_pg_log_output_bytes(const struct tq_log *base)
{
	const struct tq_pg_log *l = log_of_c(base);

	return l->done.obytes + l->done.ebytes;
}

int tq_pg_log_relinked(const struct tq_log *base)
{
	return log_of_c(base)->relinked;
}

int tq_pg_log_close(struct tq_log *base, struct tq_err *err)
{
	struct tq_pg_log *l = log_of(base);
	struct tq_pg_params p = { 0 };
	int rc;

	if (l == NULL)
		return 0;
	rc = flush_part(l, TQ_STREAM_STDOUT, err);
	if (rc == 0)
		rc = flush_part(l, TQ_STREAM_STDERR, err);
	if (rc == 0)
		rc = flush_batch(l, err);
	if (rc == TQ_EOFFLINE) {
		char m[TQ_ERR_MAX];

		strlcpy(m, err ? err->msg : "", sizeof(m));
		rc = tq_err_set(err, rc, "log of task %lld: %zu bytes of records not "
				"stored: %s", (long long)l->id, tq_pg_log_away(base), m);
	}
	drop_away(l);
	/* on the connection that took it (a new one holds nothing) */
	tq_pg_i64(&p, l->id);
	if (l->epoch == l->q->epoch)
		tq_pg_exec(l->q, LOCK_SQL("pg_advisory_unlock"), &p, NULL, NULL, "close log");
	free(l->batch);
	free(l->part[0].buf);
	free(l->part[1].buf);
	free(l);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */

int tq_pg_log_exists(struct tq_queue *base, int64_t id)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rows;

	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(tq_pg_of(base), "SELECT 1 FROM logs WHERE task_id = $1", &p, NULL,
			     "read log")) == NULL)
		return TQ_EIO;
	rows = tq_pg_rows(r);
	tq_pg_clear(r);
	return rows > 0;
}

struct head {
	int found;
	int64_t gen, lines, out_lines, obytes, ebytes;
};

static int read_head(struct tq_pg *q, int64_t id, struct head *h, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	memset(h, 0, sizeof(*h));
	tq_pg_i64(&p, id);
	if ((r = tq_pg_query(q, "SELECT gen, lines, out_lines, out_bytes, err_bytes FROM logs"
			     " WHERE task_id = $1", &p, err, "read log")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0) {
		h->found = 1;
		h->gen = tq_pg_get_i64(r, 0, 0, 0);
		h->lines = tq_pg_get_i64(r, 0, 1, 0);
		h->out_lines = tq_pg_get_i64(r, 0, 2, 0);
		h->obytes = tq_pg_get_i64(r, 0, 3, 0);
		h->ebytes = tq_pg_get_i64(r, 0, 4, 0);
	}
	tq_pg_clear(r);
	return 0;
}

static int64_t total_of(const struct head *h, enum tq_stream s)
{
	return s == TQ_STREAM_STDOUT ? h->out_lines :
	       s == TQ_STREAM_STDERR ? h->lines - h->out_lines : h->lines;
}

/* The records of one chunk, numbered in stream s from base + 1: those
 * numbered from..to go to cb. *stop set when cb stopped or to was passed. */
static int emit(const unsigned char *d, size_t len, enum tq_stream s, int64_t *num,
		int64_t from, int64_t to, tq_log_line_cb cb, void *arg, int *stop)
{
	for (const unsigned char *p = d; p < d + len && !*stop; ) {
		const unsigned char *e = memchr(p, '\n', (size_t)(d + len - p));
		struct tq_log_line line;
		enum tq_stream rs;
		int tag = *p;

		if (e == NULL)
			break;
		rs = tag == 'o' || tag == 'O' ? TQ_STREAM_STDOUT : TQ_STREAM_STDERR;
		if (tag != 'o' && tag != 'O' && tag != 'e' && tag != 'E') {
			p = e + 1;
			continue; /* not a record: skipped, not numbered */
		}
		if (s == TQ_STREAM_ALL || s == rs) {
			(*num)++;
			if (*num > to) {
				*stop = 1;
				break;
			}
			if (*num >= from) {
				line.n = *num;
				line.stream = rs;
				line.newline = tag == 'o' || tag == 'e';
				line.text = (const char *)p + 1;
				line.len = (size_t)(e - p) - 1;
				if (cb(&line, arg) != 0)
					*stop = 1;
			}
		}
		p = e + 1;
	}
	return 0;
}

static int read_lines(struct tq_pg *q, int64_t id, enum tq_stream s, int64_t from,
		      int64_t to, tq_log_line_cb cb, void *arg, struct tq_err *err)
{
	static const char *const first[] = {
		[TQ_STREAM_ALL] = "SELECT first_line FROM log_chunks WHERE task_id = $1"
			" AND first_line <= $2 ORDER BY first_line DESC LIMIT 1",
		[TQ_STREAM_STDOUT] = "SELECT first_line FROM log_chunks WHERE task_id = $1"
			" AND out_before < $2 ORDER BY out_before DESC, first_line DESC LIMIT 1",
		[TQ_STREAM_STDERR] = "SELECT first_line FROM log_chunks WHERE task_id = $1"
			" AND err_before < $2 ORDER BY err_before DESC, first_line DESC LIMIT 1",
	};
	struct tq_pg_params p = { 0 };
	int64_t at, num = 0;
	int stop = 0, rc = 0;
	PGresult *r;

	tq_pg_i64(&p, id);
	tq_pg_i64(&p, from);
	if ((r = tq_pg_query(q, first[s], &p, err, "read log")) == NULL)
		return err ? err->code : TQ_EIO;
	at = tq_pg_rows(r) > 0 ? tq_pg_get_i64(r, 0, 0, 0) : 1;
	tq_pg_clear(r);
	while (!stop && rc == 0) {
		int rows;

		p.n = 0;
		tq_pg_i64(&p, id);
		tq_pg_i64(&p, at);
		tq_pg_i64(&p, CHUNKS_PER_READ);
		if ((r = tq_pg_query(q, "SELECT first_line, lines, out_before, err_before, data"
				     " FROM log_chunks WHERE task_id = $1 AND first_line >= $2"
				     " ORDER BY first_line LIMIT $3", &p, err, "read log")) == NULL)
			return err ? err->code : TQ_EIO;
		rows = tq_pg_rows(r);
		for (int i = 0; i < rows && !stop && rc == 0; i++) {
			unsigned char *d = NULL;
			size_t len = 0;

			if (num == 0)
				num = s == TQ_STREAM_STDOUT ? tq_pg_get_i64(r, i, 2, 0) :
				      s == TQ_STREAM_STDERR ? tq_pg_get_i64(r, i, 3, 0) :
				      tq_pg_get_i64(r, i, 0, 1) - 1;
			if ((rc = tq_pg_bytea(r, i, 4, &d, &len)) < 0) {
				rc = tq_err_set(err, rc, "read log of task %lld: %s", (long long)id,
						rc == TQ_ENOMEM ? "out of memory" : "bad chunk");
				break;
			}
			emit(d, len, s, &num, from, to, cb, arg, &stop);
			free(d);
			at = tq_pg_get_i64(r, i, 0, 0) + tq_pg_get_i64(r, i, 1, 0);
		}
		tq_pg_clear(r);
		if (rows < CHUNKS_PER_READ)
			break;
	}
	return rc;
}

static int check_range(const struct tq_log_range *r, struct tq_err *err)
{
	if (r->stream != TQ_STREAM_ALL && r->stream != TQ_STREAM_STDOUT &&
	    r->stream != TQ_STREAM_STDERR)
		return tq_err_set(err, TQ_EINVAL, "log read: bad stream");
	if (r->offset < 0 || r->tail < 0 || r->limit < -1)
		return tq_err_set(err, TQ_EINVAL, "log read: bad range");
	return 0;
}

int tq_pg_log_read_file(struct tq_queue *base, int64_t id, const struct tq_log_range *r,
			tq_log_line_cb cb, void *arg, int64_t *total, struct tq_log_file *file,
			struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct head h;
	int64_t n, from, to;
	int rc;

	if (total)
		*total = 0;
	if ((rc = check_range(r, err)) < 0 || (rc = read_head(q, id, &h, err)) < 0)
		return rc;
	if (!h.found)
		return 0;
	if (file != NULL) {
		if (file->ino != 0 && file->ino != (uint64_t)h.gen)
			return TQ_ESTALE;
		file->dev = 0;
		file->ino = (uint64_t)h.gen;
	}
	n = total_of(&h, r->stream);
	if (total)
		*total = n;
	if (r->offset == 0) {
		if (r->tail == 0)
			return 0;
		from = n - r->tail + 1 > 1 ? n - r->tail + 1 : 1;
		to = n;
	} else {
		from = r->offset;
		to = r->limit < 0 ? n : (r->offset + r->limit - 1 < n ? r->offset + r->limit - 1 : n);
	}
	if (from > to || from > n)
		return 0;
	return read_lines(q, id, r->stream, from, to, cb, arg, err);
}

int tq_pg_log_read(struct tq_queue *base, int64_t id, const struct tq_log_range *r,
		   tq_log_line_cb cb, void *arg, int64_t *total, struct tq_err *err)
{
	return tq_pg_log_read_file(base, id, r, cb, arg, total, NULL, err);
}

int tq_pg_log_stat(struct tq_queue *base, int64_t id, enum tq_stream stream,
		   int64_t *lines, int64_t *output_bytes, struct tq_err *err)
{
	struct head h;
	int rc;

	if (lines)
		*lines = 0;
	if (output_bytes)
		*output_bytes = 0;
	if (stream != TQ_STREAM_ALL && stream != TQ_STREAM_STDOUT && stream != TQ_STREAM_STDERR)
		return tq_err_set(err, TQ_EINVAL, "log stat: bad stream");
	if ((rc = read_head(tq_pg_of(base), id, &h, err)) < 0)
		return rc;
	if (lines)
		*lines = total_of(&h, stream);
	if (output_bytes)
		*output_bytes = stream == TQ_STREAM_STDOUT ? h.obytes :
				stream == TQ_STREAM_STDERR ? h.ebytes : h.obytes + h.ebytes;
	return 0;
}

int tq_pg_log_remove(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, id);
	return tq_pg_exec(tq_pg_of(base), "WITH c AS (DELETE FROM log_chunks WHERE task_id = $1)"
			  " DELETE FROM logs WHERE task_id = $1", &p, NULL, err, "remove log");
}

struct export_ctx {
	int fd;
	int rc;
};

static int export_line(const struct tq_log_line *line, void *arg)
{
	struct export_ctx *x = arg;
	char tag = line->stream == TQ_STREAM_STDOUT ? (line->newline ? 'o' : 'O') :
		   (line->newline ? 'e' : 'E');

	if (tq_write_all(x->fd, &tag, 1) < 0 || tq_write_all(x->fd, line->text, line->len) < 0 ||
	    tq_write_all(x->fd, "\n", 1) < 0) {
		x->rc = -errno;
		return 1;
	}
	return 0;
}

/* The output in logstore.h's format, in a file of its own under $TMPDIR
 * (0600), removed at the next export or at close (logstore.h). */
int tq_pg_log_export(struct tq_queue *base, int64_t id, char *buf, size_t n,
		     struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_log_range all = { .stream = TQ_STREAM_ALL, .offset = 1, .limit = -1 };
	struct export_ctx x = { -1, 0 };
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int rc;

	if (dir == NULL || dir[0] != '/')
		dir = "/tmp";
	if ((size_t)snprintf(path, sizeof(path), "%s/taskq-log-%lld.XXXXXX", dir,
			     (long long)id) >= sizeof(path))
		return tq_err_set(err, TQ_EINVAL, "log export: $TMPDIR is too long");
	if ((size_t)strlen(path) >= n)
		return tq_err_set(err, TQ_EINVAL, "log export: path longer than %zu bytes",
				  n ? n - 1 : 0);
	if ((x.fd = mkostemp(path, O_CLOEXEC)) < 0)
		return tq_err_sys(err, "log export: create %s", path);
	rc = tq_pg_log_read(base, id, &all, export_line, &x, NULL, err);
	if (rc == 0 && x.rc < 0)
		rc = tq_err_set(err, tq_err_from_errno(-x.rc), "log export: write %s: %s", path,
				strerror(-x.rc));
	tq_close(x.fd);
	if (rc < 0) {
		unlink(path);
		return rc;
	}
	if (q->export_path != NULL) {
		unlink(q->export_path);
		free(q->export_path);
	}
	if ((q->export_path = strdup(path)) == NULL) {
		unlink(path);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	strlcpy(buf, path, n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Watching                                                           */

struct tq_pg_watch {
	struct tq_log_watch base; /* first */
	PGconn *conn;             /* its own: LISTEN tq_log; NULL: lost, to be
				   * made again (watch_fd) */
	char *url;
	int64_t id;
	int64_t next_try;         /* mono ms: no new connection before then */
	int64_t backoff;
};

#define WATCH_RETRY_MIN_MS 100
#define WATCH_RETRY_MAX_MS 2000

/* A connection that LISTENs on tq_log: 0, or -1 with nothing made. */
static int watch_connect(struct tq_pg_watch *w, char *why, size_t n)
{
	PGresult *r;
	int ok;

	if (tq_pg_connect(w->url, 0, &w->conn, why, n) < 0)
		return -1;
	r = tq_pq->exec(w->conn, "LISTEN tq_log");
	ok = r != NULL && tq_pq->result_status(r) == PGRES_COMMAND_OK;
	tq_pg_clear(r);
	if (ok)
		return 0;
	strlcpy(why, "LISTEN failed", n);
	tq_pq->finish(w->conn);
	w->conn = NULL;
	return -1;
}

int tq_pg_log_watch_open(struct tq_queue *base, int64_t id, struct tq_log_watch **wp,
			 struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_watch *w;
	char why[256];

	*wp = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL || (w->url = strdup(q->url)) == NULL) {
		free(w);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	w->base.ops = &tq_pg_ops;
	w->id = id;
	if (watch_connect(w, why, sizeof(why)) < 0) {
		free(w->url);
		free(w);
		return tq_err_set(err, TQ_EIO, "watch log: %s: %s", q->shown, why);
	}
	*wp = &w->base;
	return 0;
}

/* The socket, after making the connection again if it was lost (a restart
 * of the server: notifications sent meanwhile are gone, and the reader
 * reads at its own pace anyway). */
int tq_pg_log_watch_fd(struct tq_log_watch *base)
{
	struct tq_pg_watch *w = (struct tq_pg_watch *)base;
	int64_t now = tq_mono_ms();
	char why[256];

	if (w->conn != NULL && tq_pq->status(w->conn) == CONNECTION_BAD) {
		tq_pq->finish(w->conn);
		w->conn = NULL;
	}
	if (w->conn == NULL && now >= w->next_try && watch_connect(w, why, sizeof(why)) < 0) {
		w->backoff = w->backoff ? w->backoff * 2 : WATCH_RETRY_MIN_MS;
		if (w->backoff > WATCH_RETRY_MAX_MS)
			w->backoff = WATCH_RETRY_MAX_MS;
		w->next_try = now + w->backoff;
	} else if (w->conn != NULL) {
		w->backoff = 0;
	}
	return w->conn != NULL ? tq_pq->socket(w->conn) : -1;
}

int tq_pg_log_watch_hit(struct tq_log_watch *base)
{
	struct tq_pg_watch *w = (struct tq_pg_watch *)base;
	char want[24];
	PGnotify *n;
	int hit = 0;

	if (w->conn == NULL)
		return 0;
	snprintf(want, sizeof(want), "%lld", (long long)w->id);
	if (tq_pq->consume_input(w->conn) == 0) {
		/* the connection broke (the server restarting): made again
		 * by watch_fd; say so, the reader reads again */
		tq_pq->finish(w->conn);
		w->conn = NULL;
		return 1;
	}
	while ((n = tq_pq->notifies(w->conn)) != NULL) {
		if (n->extra != NULL && strcmp(n->extra, want) == 0)
			hit = 1;
		tq_pq->freemem(n);
	}
	return hit;
}

void tq_pg_log_watch_close(struct tq_log_watch *base)
{
	struct tq_pg_watch *w = (struct tq_pg_watch *)base;

	if (w == NULL)
		return;
	if (w->conn != NULL)
		tq_pq->finish(w->conn);
	free(w->url);
	free(w);
}

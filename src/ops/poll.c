/*
 * ops/poll.c - a reader's lines since its cursor, the cursor moved by
 * compare-and-set (poll.h). Reads the state before the log, always.
 */
#include "ops/poll.h"

#include <stdlib.h>
#include <string.h>

static void lines_release(struct tq_ops_poll *p)
{
	free(p->v);
	free(p->bytes);
	p->v = NULL;
	p->bytes = NULL;
	p->n = p->cap = p->len = p->bcap = 0;
	p->oom = 0;
}

void tq_ops_poll_release(struct tq_ops_poll *p)
{
	lines_release(p);
	tq_task_release(&p->task);
	memset(p, 0, sizeof(*p));
}

static int grow(struct tq_ops_poll *p, size_t len)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct tq_ops_poll_line *v = reallocarray(p->v, cap, sizeof(*v));
		if (v == NULL)
			return TQ_ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	if (p->len + len > p->bcap) {
		size_t cap = p->bcap ? p->bcap : 65536;
		char *b;
		while (cap < p->len + len)
			cap *= 2;
		if ((b = realloc(p->bytes, cap)) == NULL)
			return TQ_ENOMEM;
		p->bytes = b;
		p->bcap = cap;
	}
	return 0;
}

/* tq_log_line_cb: keep a copy; stop before the byte bound (a single line,
 * at most TQ_LOG_LINE_MAX, always fits). */
static int take(const struct tq_log_line *l, void *arg)
{
	struct tq_ops_poll *p = arg;

	if (p->n > 0 && p->len + l->len > TQ_OPS_POLL_MAX_BYTES)
		return 1;
	if (grow(p, l->len) < 0) {
		p->oom = 1;
		return 1;
	}
	memcpy(p->bytes + p->len, l->text, l->len);
	p->v[p->n++] = (struct tq_ops_poll_line){ l->n, l->stream, l->newline, p->len, l->len };
	p->len += l->len;
	return 0;
}

struct tq_log_line tq_ops_poll_line(const struct tq_ops_poll *p, size_t i)
{
	const struct tq_ops_poll_line *x = &p->v[i];

	return (struct tq_log_line){ .n = x->n, .stream = x->stream, .newline = x->newline,
				     .text = p->bytes + x->off, .len = x->len };
}

/* One round: the task, the reader's cursor, the lines after it; then the
 * cursor moves past them. TQ_ESTALE: another poll under the same name won
 * the race; nothing was taken. */
static int round_once(struct tq_queue *q, int64_t id, const char *reader,
		      struct tq_ops_poll *p, struct tq_err *err)
{
	struct tq_log_range range = { .stream = TQ_STREAM_ALL, .limit = TQ_OPS_POLL_MAX_LINES };
	struct tq_log_file file = { 0, 0 };
	int64_t cursor = 0;
	int rc;

	if ((rc = tq_queue_get(q, id, 0, &p->task, err)) < 0 ||
	    (rc = tq_queue_cursor_get(q, id, reader, &cursor, &file.ino, err)) < 0)
		return rc;
	p->shown = cursor;
	range.offset = cursor + 1;
	rc = tq_log_read_file(q, id, &range, take, p, &p->total, &file, err);
	if (rc == TQ_ESTALE || (rc == 0 && p->total < cursor)) {
		/* Another file than the one this reader's count is in (or
		 * fewer lines than it was shown, from a cursor stored before
		 * the file was known): the log was deleted while its task ran
		 * and started again, numbered from 1, its first line saying
		 * what was lost. Its lines from the first (before: none until
		 * it grew past the old count, and those up to it never). */
		p->shown = 0;
		range.offset = 1;
		file.ino = 0;
		lines_release(p);
		rc = tq_log_read_file(q, id, &range, take, p, &p->total, &file, err);
	}
	if (rc < 0)
		return rc;
	if (p->oom)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	if (p->n == 0)
		return 0;
	return tq_queue_cursor_advance(q, id, reader, cursor, p->shown + (int64_t)p->n,
				       file.ino, err);
}

int tq_ops_poll(struct tq_queue *q, int64_t id, const char *reader, struct tq_ops_poll *p,
		struct tq_err *err)
{
	int rc, tries = 0;

	do {
		tq_ops_poll_release(p);
		rc = round_once(q, id, reader, p, err);
	} while (rc == TQ_ESTALE && ++tries < TQ_OPS_POLL_RETRIES);
	return rc;
}

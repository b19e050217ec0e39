/*
 * evidence.c - read an attempt's output tails for the classifier (see
 * evidence.h). Memory stays bounded: each tail keeps about the last
 * TQ_CLASSIFY_TAIL bytes plus one line while it is filled.
 */
#include "evidence.h"

#include <stdlib.h>
#include <string.h>

#include "queue/logstore.h"
#include "classify/classify.h"

static int tail_line(const struct tq_log_line *l, void *arg)
{
	struct tq_tails *t = arg;
	int s = l->stream == TQ_STREAM_STDERR;
	size_t need = t->len[s] + l->len + 1;

	if (need > t->cap[s]) {
		size_t cap = need > 2 * TQ_CLASSIFY_TAIL ? need : 2 * TQ_CLASSIFY_TAIL;
		char *nb = realloc(t->buf[s], cap);
		if (nb == NULL)
			return t->oom = 1; /* stop reading */
		t->buf[s] = nb;
		t->cap[s] = cap;
	}
	memcpy(t->buf[s] + t->len[s], l->text, l->len);
	t->len[s] += l->len;
	t->buf[s][t->len[s]++] = '\n';
	if (t->len[s] > TQ_CLASSIFY_TAIL + TQ_LOG_LINE_MAX) {
		/* keep about the last TQ_CLASSIFY_TAIL bytes, from a line start */
		const char *cut = memchr(t->buf[s] + t->len[s] - TQ_CLASSIFY_TAIL, '\n',
					 TQ_CLASSIFY_TAIL);
		size_t drop = cut ? (size_t)(cut + 1 - t->buf[s]) : t->len[s] - TQ_CLASSIFY_TAIL;
		memmove(t->buf[s], t->buf[s] + drop, t->len[s] - drop);
		t->len[s] -= drop;
	}
	return 0;
}

int tq_tails_read(struct tq_queue *q, int64_t id, int64_t first, int64_t last,
		  struct tq_tails *t, struct tq_err *err)
{
	struct tq_log_range r = { .stream = TQ_STREAM_ALL };
	int64_t total = 0;
	int rc;

	if ((rc = tq_log_read(q, id, &r, NULL, NULL, &total, err)) < 0)
		return rc;
	if (first < 1)
		first = 1;
	if (last < 0 || last > total)
		last = total;
	if (last < first)
		return 0;
	r.offset = last - first + 1 > TQ_EVIDENCE_LINES ? last - TQ_EVIDENCE_LINES + 1 : first;
	r.limit = last - r.offset + 1;
	if ((rc = tq_log_read(q, id, &r, tail_line, t, NULL, err)) < 0)
		return rc;
	return t->oom ? tq_err_set(err, TQ_ENOMEM, "read log: out of memory") : 0;
}

void tq_tails_release(struct tq_tails *t)
{
	free(t->buf[0]);
	free(t->buf[1]);
	memset(t, 0, sizeof(*t));
}

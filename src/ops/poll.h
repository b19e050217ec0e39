/*
 * ops/poll.h - the output of a task that arrived since a named reader's
 * last poll: what `taskq poll ID [--as NAME]` does, for any front end.
 *
 * A reader's cursor (the last line it was given) is kept in the store. One
 * poll reads the task's state FIRST, then its log after the cursor (a final
 * state read before the log means the log read after it is whole: the
 * worker closes the log before it records the end), then moves the cursor
 * past the lines it took by compare-and-set: two polls racing under one
 * name never both take a line. The lines are the caller's to print only
 * after that move (a lost race takes nothing), at the price of losing a
 * page if printing it fails.
 */
#ifndef TQ_OPS_POLL_H
#define TQ_OPS_POLL_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/logstore.h"
#include "queue/queue.h"

#define TQ_OPS_POLL_MAX_LINES 1000           /* lines one poll takes at most */
#define TQ_OPS_POLL_MAX_BYTES (1024 * 1024)  /* bytes of text one poll takes */
#define TQ_OPS_POLL_RETRIES 16               /* lost compare-and-sets in a row */

/* A line taken: its text at bytes + off. */
struct tq_ops_poll_line {
	int64_t n;
	enum tq_stream stream;
	int newline;
	size_t off, len;
};

/* One poll's result; owned, freed by tq_ops_poll_release. */
struct tq_ops_poll {
	struct tq_task task;             /* as read before the log */
	int64_t shown;                   /* lines given before these */
	int64_t total;                   /* lines in the log */
	struct tq_ops_poll_line *v;      /* the lines taken, n of them */
	size_t n, cap;
	char *bytes;
	size_t len, bcap;
	int oom;
};

/*
 * Take task id's lines after reader's cursor (at most TQ_OPS_POLL_MAX_LINES
 * and TQ_OPS_POLL_MAX_BYTES, but always one), moving the cursor past them;
 * a race lost to another poll under the same name is tried again, up to
 * TQ_OPS_POLL_RETRIES times. A log deleted and started again while its
 * task ran (another file) is read from its first line. p must be zeroed
 * (or released) before; on return it holds the task and the lines (release
 * it in every case). Returns 0 or a TQ_E* code with err set (TQ_ENOTFOUND:
 * no such task; TQ_ESTALE: every try lost its race).
 */
int tq_ops_poll(struct tq_queue *q, int64_t id, const char *reader, struct tq_ops_poll *p,
		struct tq_err *err);

/* Line i of p as a struct tq_log_line (its text in p). */
struct tq_log_line tq_ops_poll_line(const struct tq_ops_poll *p, size_t i);

/* Free what p holds and zero it. */
void tq_ops_poll_release(struct tq_ops_poll *p);

#endif

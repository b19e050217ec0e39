/*
 * evidence.h - the output the classifier looks at: the last
 * TQ_CLASSIFY_TAIL bytes of each stream of one attempt's lines, in whole
 * lines. One function, so the worker (which classifies as an attempt ends)
 * and `taskq classify` (which explains it later) read the same evidence.
 */
#ifndef TQ_EVIDENCE_H
#define TQ_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

#define TQ_EVIDENCE_LINES 4000 /* at most this many lines are read */

struct tq_tails {
	char *buf[2];           /* stdout, stderr; each line ends in '\n' */
	size_t len[2], cap[2];
	int oom;
};

#define TQ_TAILS_INIT { { NULL, NULL }, { 0, 0 }, { 0, 0 }, 0 }

/*
 * Read the tails of task id's log lines [first, last] (1-based, both streams'
 * numbering; last -1: to the end of the log). Returns 0 (an empty or
 * missing log gives empty tails) or a TQ_E* code. t must be released with
 * tq_tails_release either way.
 */
int tq_tails_read(struct tq_queue *q, int64_t id, int64_t first, int64_t last,
		  struct tq_tails *t, struct tq_err *err);

void tq_tails_release(struct tq_tails *t);

#endif

/*
 * ops/import.h - storing many task specs in short chunks, each its own
 * transaction, that a later run can resume: what `taskq submit --file`
 * does once its lines are parsed, for any front end.
 *
 * Why chunks: one transaction of 600k lines held the store's write lock for
 * 21 s and more on a loaded machine, and a task that ended meanwhile could
 * not be recorded. A chunk's size follows the rate of the one before,
 * aiming at TQ_OPS_IMPORT_CHUNK_MS of lock; between chunks a gap lets the
 * writers that wait in (import.c says how long, and why).
 *
 * Resuming: every task carries a submit token (queue.h) made of the run's
 * id, its line number and a checksum of the line's bytes, so the same
 * specs stored again under the same run id store each line once: a line
 * stored already gives back the id it got (within a day, while the tokens
 * are kept). A resume first checks that the run is known
 * (TQ_OPS_IMPORT_UNKNOWN_RUN: a run id mistyped, or forgotten after a day,
 * would store everything again) and, chunk by chunk, that a line number the
 * run stored holds the same line (TQ_OPS_IMPORT_OTHER_LINE: another file,
 * or one edited above the line that failed, would have its lines taken for
 * stored ones and never stored).
 *
 * The parsing of the lines stays with the front end (the CLI's lines take
 * its options as defaults): this takes specs and, for each, its line
 * number and checksum.
 */
#ifndef TQ_OPS_IMPORT_H
#define TQ_OPS_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

#define TQ_OPS_IMPORT_RUN_BYTES 8        /* a run id: 16 hex digits */
#define TQ_OPS_IMPORT_RUN_MAX (2 * TQ_OPS_IMPORT_RUN_BYTES + 1)
#define TQ_OPS_IMPORT_TOKEN_MAX 64       /* "import:RUN:LINE:SUM" */
#define TQ_OPS_IMPORT_CHUNK_MS 250       /* the lock a chunk aims at */

/* Where an import stopped, beside 0 (all stored) and a TQ_E* code. */
enum tq_ops_import_stop {
	TQ_OPS_IMPORT_STOPPED = 1,   /* im->stop said so (im->signal) */
	TQ_OPS_IMPORT_UNKNOWN_RUN,   /* --resume: no line of the run is stored */
	TQ_OPS_IMPORT_OTHER_LINE,    /* --resume: line im->bad_line was stored
				      * as task im->bad_id, from another line */
};

struct tq_ops_import {
	/* in */
	struct tq_queue *q;              /* open, durable */
	const char *home;                /* its state directory (the doorbell) */
	const struct tq_task_spec *specs;
	size_t n;
	char run[TQ_OPS_IMPORT_RUN_MAX]; /* tq_ops_import_new_run's, or resumed */
	int resumed;
	int autostart;                   /* start a supervisor after the first
					  * chunk that added a task */
	int64_t retry_ms;                /* a chunk the store could not take
					  * while unreachable: tried again for
					  * this long (submit.h, tq_ops_retry) */
	/* spec i's line number and the checksum of its bytes (the token) */
	void (*line)(void *arg, size_t i, size_t *line, uint64_t *sum);
	/* a chunk stored: k ids, in order, existed[j] when a --unique key
	 * was held (the id is the holder's) */
	void (*stored)(void *arg, const int64_t *ids, const int *existed, size_t k);
	/* before each chunk: a signal number to stop at, or 0 (may be NULL) */
	int (*stop)(void *arg);
	/* the autostart failed (the tasks are stored all the same) */
	void (*not_started)(void *arg, const struct tq_err *err);
	void *arg;
	/* out */
	int started;                     /* chunks began (a resumed run was
					  * known; there were specs) */
	size_t done;                     /* specs stored (or found stored) */
	size_t held;                     /* of those, present under --unique */
	size_t failed_k;                 /* a store error storing a chunk: its
					  * size, its first spec at done (0: the
					  * error came from a resume's check) */
	int signal;                      /* TQ_OPS_IMPORT_STOPPED */
	size_t bad_line;                 /* TQ_OPS_IMPORT_OTHER_LINE */
	int64_t bad_id;
};

/* A new run id (TQ_OPS_IMPORT_RUN_MAX bytes, hex, NUL-terminated). */
void tq_ops_import_new_run(char *run);

/* 1 when s is a run id ("0123456789abcdef"), else 0. */
int tq_ops_import_run_ok(const char *s);

/*
 * Store im->specs[im->done..n) in chunks, calling im->stored after each,
 * ringing the doorbell (and, with im->autostart, starting a supervisor)
 * after the first chunk that added a task. Returns 0 when every spec is
 * stored, an enum tq_ops_import_stop, or the store's TQ_E* code (err set;
 * "task I: ..." names spec done + I of the chunk).
 */
int tq_ops_import(struct tq_ops_import *im, struct tq_err *err);

#endif

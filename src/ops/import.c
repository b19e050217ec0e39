/*
 * ops/import.c - storing many specs in chunks that can be resumed
 * (import.h).
 *
 * Pacing. Between chunks IMPORT_GAP_MS lets the writers that wait in (they
 * look every 5 ms at most: queue/sqlite/db.c, busy_handler). Once
 * IMPORT_GAP_LONG_EVERY_MS a gap is IMPORT_GAP_LONG_MS instead, longer than
 * the 100 ms that SQLite's own default busy handler sleeps between looks
 * (another program writing the database -- the sqlite3 shell with
 * .timeout, python's sqlite3 -- polls no more often): such a writer finds
 * the lock free within about a second and a chunk, not by chance (measured
 * with 20 ms gaps alone: waits of 2.6 s during a 100k-line import, and
 * tries with a 1 s timeout failed). It costs the import at most
 * IMPORT_GAP_LONG_MS a second.
 *
 * Measured here, one transaction stores a line in 35 to 110 us (a quiet or
 * a loaded machine); a worker recording a task's end waits at most 2 s a
 * try (runner.c), every other writer TQ_BUSY_TIMEOUT_MS.
 */
#include "ops/import.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <bsd/stdlib.h>

#include "common/sys.h"
#include "ops/submit.h"
#include "ops/wait.h"

#define IMPORT_GAP_MS 20
#define IMPORT_GAP_LONG_MS 110
#define IMPORT_GAP_LONG_EVERY_MS 1000
#define IMPORT_CHUNK_FIRST 256
#define IMPORT_CHUNK_MIN 16
#define IMPORT_CHUNK_MAX 65536

int tq_ops_import_run_ok(const char *s)
{
	size_t n = strlen(s);

	if (n != 2 * TQ_OPS_IMPORT_RUN_BYTES)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

void tq_ops_import_new_run(char *run)
{
	unsigned char raw[TQ_OPS_IMPORT_RUN_BYTES];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		arc4random_buf(raw, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(run + 2 * i, 3, "%02x", raw[i]);
}

/* The next chunk: k specs from im->done, each with its token. */
static void fill_chunk(struct tq_ops_import *im, size_t k, struct tq_task_spec *cs,
		       char (*tokens)[TQ_OPS_IMPORT_TOKEN_MAX])
{
	for (size_t i = 0; i < k; i++) {
		size_t line = 0;
		uint64_t sum = 0;

		im->line(im->arg, im->done + i, &line, &sum);
		cs[i] = im->specs[im->done + i];
		snprintf(tokens[i], TQ_OPS_IMPORT_TOKEN_MAX, "import:%s:%zu:%016" PRIx64,
			 im->run, line, sum);
		cs[i].token = tokens[i];
	}
}

/* --resume: the run is known here (some line of it is stored). */
static int resume_known(struct tq_ops_import *im, struct tq_err *err)
{
	char prefix[TQ_OPS_IMPORT_TOKEN_MAX], tok[TQ_OPS_IMPORT_TOKEN_MAX];
	int64_t id = 0;
	int rc;

	snprintf(prefix, sizeof(prefix), "import:%s:", im->run);
	if ((rc = tq_queue_token_first(im->q, prefix, tok, sizeof(tok), &id, err)) < 0)
		return rc;
	return id == 0 ? TQ_OPS_IMPORT_UNKNOWN_RUN : 0;
}

/*
 * --resume: each of the next k lines that the run stored under its line
 * number is the same line (the same bytes) now. A line number holding
 * another line is refused before anything of the chunk is stored: its
 * tasks would be taken for stored ones.
 */
static int resume_same_lines(struct tq_ops_import *im, size_t k,
			     char (*tokens)[TQ_OPS_IMPORT_TOKEN_MAX], struct tq_err *err)
{
	char prefix[TQ_OPS_IMPORT_TOKEN_MAX], tok[TQ_OPS_IMPORT_TOKEN_MAX];

	for (size_t i = 0; i < k; i++) {
		size_t line = 0;
		uint64_t sum = 0;
		int64_t id = 0;
		int rc;

		im->line(im->arg, im->done + i, &line, &sum);
		snprintf(prefix, sizeof(prefix), "import:%s:%zu:", im->run, line);
		if ((rc = tq_queue_token_first(im->q, prefix, tok, sizeof(tok), &id, err)) < 0)
			return rc;
		if (id == 0 || strcmp(tok, tokens[i]) == 0)
			continue;
		im->bad_line = line;
		im->bad_id = id;
		return TQ_OPS_IMPORT_OTHER_LINE;
	}
	return 0;
}

/* The next chunk at the rate this one went (k specs in dt ms), no more
 * than twice its size (the rate of a small chunk is a rough guess). */
static size_t next_chunk(size_t k, int64_t dt)
{
	size_t chunk = (size_t)((int64_t)k * TQ_OPS_IMPORT_CHUNK_MS / (dt > 0 ? dt : 1));

	if (chunk > 2 * k)
		chunk = 2 * k;
	return chunk < IMPORT_CHUNK_MIN ? IMPORT_CHUNK_MIN :
	       chunk > IMPORT_CHUNK_MAX ? IMPORT_CHUNK_MAX : chunk;
}

/* One chunk of k: checked (a resume), stored, handed to im->stored. */
static int one_chunk(struct tq_ops_import *im, size_t k, struct tq_task_spec *cs,
		     char (*tokens)[TQ_OPS_IMPORT_TOKEN_MAX], int64_t *ids, int *existed,
		     int *rang, int64_t *dt, struct tq_err *err)
{
	size_t added = 0;
	int64_t t0;
	int rc;

	struct tq_ops_retry r;

	fill_chunk(im, k, cs, tokens);
	/* the store unreachable: the chunk again, the same tokens keeping
	 * each line once however far the lost try went */
	tq_ops_retry_start(&r, im->retry_ms);
	for (;;) {
		if (im->resumed && (rc = resume_same_lines(im, k, tokens, err)) != 0) {
			if (rc < 0 && tq_ops_retry_again(&r, rc, err))
				continue;
			return rc;
		}
		t0 = tq_mono_ms();
		if ((rc = tq_queue_submit_many(im->q, cs, k, ids, existed, err)) == 0)
			break;
		if (!tq_ops_retry_again(&r, rc, err)) {
			im->failed_k = k;
			return rc;
		}
	}
	*dt = tq_mono_ms() - t0; /* the lock it held, not the printing */
	im->stored(im->arg, ids, existed, k);
	im->done += k;
	for (size_t i = 0; i < k; i++) {
		added += !existed[i];
		im->held += existed[i] != 0;
	}
	if (added > 0 && !(*rang)++) {
		struct tq_err serr = TQ_ERR_INIT;
		if (tq_ops_started(im->home, 1, im->autostart, &serr) < 0 &&
		    im->not_started != NULL)
			im->not_started(im->arg, &serr);
	}
	return 0;
}

int tq_ops_import(struct tq_ops_import *im, struct tq_err *err)
{
	struct tq_task_spec *cs = NULL;
	char (*tokens)[TQ_OPS_IMPORT_TOKEN_MAX] = NULL;
	int64_t *ids = NULL, long_gap_at = tq_mono_ms() + IMPORT_GAP_LONG_EVERY_MS;
	int *existed = NULL, rang = 0, rc = 0;
	size_t chunk = IMPORT_CHUNK_FIRST;

	if (im->n == 0 || (im->resumed && (rc = resume_known(im, err)) != 0))
		return rc;
	im->started = 1;
	cs = reallocarray(NULL, IMPORT_CHUNK_MAX, sizeof(*cs));
	tokens = reallocarray(NULL, IMPORT_CHUNK_MAX, sizeof(*tokens));
	ids = reallocarray(NULL, IMPORT_CHUNK_MAX, sizeof(*ids));
	existed = reallocarray(NULL, IMPORT_CHUNK_MAX, sizeof(*existed));
	if (cs == NULL || tokens == NULL || ids == NULL || existed == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	while (im->done < im->n) {
		size_t k = chunk < im->n - im->done ? chunk : im->n - im->done;
		int64_t dt = 0;

		if (im->stop != NULL && (im->signal = im->stop(im->arg)) != 0) {
			rc = TQ_OPS_IMPORT_STOPPED;
			goto out;
		}
		if ((rc = one_chunk(im, k, cs, tokens, ids, existed, &rang, &dt, err)) != 0)
			goto out;
		chunk = next_chunk(k, dt);
		if (im->done < im->n && tq_mono_ms() >= long_gap_at) {
			/* a turn for writers that look only every 100 ms */
			tq_ops_pause(TQ_OPS_NO_DEADLINE, IMPORT_GAP_LONG_MS);
			long_gap_at = tq_mono_ms() + IMPORT_GAP_LONG_EVERY_MS;
		} else if (im->done < im->n) {
			tq_ops_pause(TQ_OPS_NO_DEADLINE, IMPORT_GAP_MS); /* the others' turn */
		}
	}
out:
	free(cs);
	free(tokens);
	free(ids);
	free(existed);
	return rc;
}

/*
 * classify_tails.h - the biggest input the classifier is handed: 64 KiB of
 * Claude stream-json (assistant lines, then a recorded final result) and
 * 64 KiB of log text on stderr that no rule matches. Shared by
 * tests/unit/test_classify.c (what these classify as, and the work counted
 * in bytes) and bench/classify.c (how long that takes), so that both speak
 * of the same input. Header-only: static functions, no state.
 */
#ifndef TQ_CLASSIFY_TAILS_H
#define TQ_CLASSIFY_TAILS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify/classify.h"

/* What the last line becomes for the case where nothing matches: an error
 * result no rule knows, so every stage and every text rule runs. */
#define CLASSIFY_TAILS_ODD "{\"type\":\"result\",\"is_error\":true,\"result\":\"odd\"}\n"

struct classify_tails {
	char *out, *err;           /* malloc'd, each TQ_CLASSIFY_TAIL + 1024 */
	size_t on, en;             /* bytes of each, at most TQ_CLASSIFY_TAIL */
	size_t fn;                 /* bytes of the final lines at out's end */
};

static inline void classify_tails_free(struct classify_tails *t)
{
	free(t->out);
	free(t->err);
	t->out = t->err = NULL;
}

/* Fill t: stdout ends with fin (fn bytes, a fixture's lines, under 4 KiB).
 * 0, or -1 when out of memory or fin is too big. */
static inline int classify_tails_make(struct classify_tails *t, const char *fin, size_t fn)
{
	size_t cap = TQ_CLASSIFY_TAIL;
	int k = 0;

	*t = (struct classify_tails){ .fn = fn };
	if (fn > 4096 || (t->out = malloc(cap + 1024)) == NULL ||
	    (t->err = malloc(cap + 1024)) == NULL) {
		classify_tails_free(t);
		return -1;
	}
	while (t->on + fn + 400 < cap)
		t->on += (size_t)sprintf(t->out + t->on, "{\"type\":\"assistant\",\"message\":"
					 "{\"id\":\"msg_%d\",\"content\":[{\"type\":\"text\","
					 "\"text\":\"Looking at src/foo%d.c line %d: the status "
					 "is fine and the error path returns early\"}]},"
					 "\"session_id\":\"s\"}\n", k, k, k * 7), k++;
	memcpy(t->out + t->on, fin, fn);
	t->on += fn;
	while (t->en + 200 < cap)
		t->en += (size_t)sprintf(t->err + t->en, "2026-01-15T12:00:%02d.123Z INFO request "
					 "%d to /v1/messages took %d ms, status 200, error "
					 "none\n", k % 60, k, k % 977), k++;
	return 0;
}

/* Replace the final lines by CLASSIFY_TAILS_ODD. */
static inline void classify_tails_odd(struct classify_tails *t)
{
	size_t n = strlen(CLASSIFY_TAILS_ODD);

	memcpy(t->out + t->on - t->fn, CLASSIFY_TAILS_ODD, n);
	t->on = t->on - t->fn + n;
	t->fn = n;
}

#endif

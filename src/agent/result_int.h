/*
 * result_int.h - what result.c lends the agents' result readers (each in
 * its agent's file under src/agent, named by the registry): the parser's
 * state, which a reader fills, and the helpers to read an object by key
 * and keep what it found. Static inline: the framer (result.c) calls the
 * buffer helpers for every byte range it frames. Not for use outside
 * src/agent.
 */
#ifndef TQ_RESULT_INT_H
#define TQ_RESULT_INT_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "registry.h"
#include "result.h"

struct stream_turn;

enum frame {
	FR_START, /* at the start of a line (blanks skipped) */
	FR_SKIP,  /* in a line that is not JSON: skip to its end */
	FR_OBJ,   /* inside an object */
	FR_AFTER  /* after an object's closing brace: only blanks may follow */
};

/* Give the framing buffer back after an object bigger than this. */
#define KEEP_BUF ((size_t)256 * 1024)
/* Bytes of a refused session id its note shows ("..." after them). */
#define NOTE_ID_SHOWN 40

/* A growable byte buffer, always NUL-terminated when p != NULL. */
struct text {
	char *p;
	size_t len, cap;
};

struct tq_result_parser {
	const struct tq_agent_def *def; /* the agent whose output it reads; NULL: none */

	/* framing */
	enum frame fr;
	int pretty;        /* the object began with a line holding only "{" */
	int in_str, esc;
	size_t depth;
	struct text obj;   /* the object being framed */

	/* what was found */
	int has_result, is_error;
	char *result;      /* the result text the agent gave in one piece */
	char *error;       /* an error's text */
	char *subtype, *session, *model, *init_model;
	double cost;
	int has_cost;
	int64_t duration_ms;  /* < 0: the agent reported none */
	int64_t num_turns, in, out, cache_read, cache_creation;
	struct text text;  /* a result text a reader builds from pieces (the
			    * result when not empty) */
	int step_fresh;    /* a reader's own flag (a step began and has no
			    * text yet) */
	char note[4 * NOTE_ID_SHOWN + 160]; /* why the session id was refused */
	struct stream_turn *st;    /* a warm turn's protocol (stream_int.h);
				    * NULL: a one-shot run */
};

/* ------------------------------------------------------------------ */
/* Buffers                                                            */

static inline void text_free(struct text *t)
{
	free(t->p);
	*t = (struct text){ 0 };
}

/* Append n bytes, growing up to max. 0, or -1 (over max, or no memory:
 * nothing appended). */
static inline int text_add(struct text *t, const char *s, size_t n, size_t max)
{
	if (n > max || t->len > max - n)
		return -1;
	if (t->p == NULL || t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *np;
		while (cap < t->len + n + 1)
			cap = cap > SIZE_MAX / 2 ? t->len + n + 1 : cap * 2;
		if (cap > max + 1)
			cap = max + 1;
		if ((np = realloc(t->p, cap)) == NULL)
			return -1;
		t->p = np;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
	return 0;
}

/* Empty t; free its memory if it grew past keep. */
static inline void text_clear(struct text *t, size_t keep)
{
	if (t->cap > keep) {
		text_free(t);
		return;
	}
	t->len = 0;
	if (t->p != NULL)
		t->p[0] = '\0';
}

/* *dst = a copy of s (NULL for NULL); when out of memory *dst is NULL. */
static inline void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s != NULL ? strdup(s) : NULL;
}

/* ------------------------------------------------------------------ */
/* JSON helpers: read by key, tolerate any type                       */

static inline const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline int jnum(const cJSON *o, const char *key, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return 0;
	*out = v->valuedouble;
	return 1;
}

/* An integer count: negative, fractional or absurd values clamp to a sane
 * int64 (tokens and milliseconds are never negative). */
static inline int64_t jint(const cJSON *o, const char *key)
{
	double d = 0;

	if (!jnum(o, key, &d) || d <= 0)
		return 0;
	return d >= 9.0e18 ? INT64_C(9000000000000000000) : (int64_t)d;
}

static inline const cJSON *jobj(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsObject(v) ? v : NULL;
}

static inline int64_t sat_add(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static inline int64_t sat_sub0(int64_t a, int64_t b)
{
	return a > b ? a - b : 0;
}

/* ------------------------------------------------------------------ */
/* Text                                                               */

static inline void append_text(struct tq_result_parser *p, const char *s)
{
	size_t n = strlen(s), room = TQ_RESULT_TEXT_MAX - p->text.len;

	/* Past the bound the text is cut (the log keeps all of it). */
	text_add(&p->text, s, n < room ? n : room, TQ_RESULT_TEXT_MAX);
}

#endif

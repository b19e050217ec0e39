/*
 * result.c - an agent's final result from its stdout, as it arrives
 * (result.h says what each agent's parser reads).
 *
 * Two layers. The framer cuts the byte stream into candidate JSON objects
 * with a small state machine (string- and escape-aware brace depth), in any
 * chunking, holding at most TQ_RESULT_LINE_MAX bytes of one object. The
 * handlers read a parsed object by key (cJSON), never by position, and keep
 * only the fields of the final result, so memory is bounded whatever the
 * length of the output.
 *
 * It does not classify (classify.c decides success, retry, rate limits);
 * it only extracts what is stored on the attempt.
 */
#include "result.h"

#define LIBBSD_NETBSD_VIS /* the NetBSD vis API; silences libbsd's #warning */
#include <bsd/vis.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "registry.h"

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
	int64_t duration_ms;  /* < 0: the agent reported none (codex, opencode) */
	int64_t num_turns, in, out, cache_read, cache_creation;
	struct text text;  /* gemini: assistant text; opencode: last step's text */
	int step_fresh;    /* opencode: a step began and has no text yet */
	char note[4 * NOTE_ID_SHOWN + 160]; /* why the session id was refused */
};

/* ------------------------------------------------------------------ */
/* Buffers                                                            */

static void text_free(struct text *t)
{
	free(t->p);
	*t = (struct text){ 0 };
}

/* Append n bytes, growing up to max. 0, or -1 (over max, or no memory:
 * nothing appended). */
static int text_add(struct text *t, const char *s, size_t n, size_t max)
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
static void text_clear(struct text *t, size_t keep)
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
static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s != NULL ? strdup(s) : NULL;
}

/* ------------------------------------------------------------------ */
/* JSON helpers: read by key, tolerate any type                       */

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jnum(const cJSON *o, const char *key, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return 0;
	*out = v->valuedouble;
	return 1;
}

/* An integer count: negative, fractional or absurd values clamp to a sane
 * int64 (tokens and milliseconds are never negative). */
static int64_t jint(const cJSON *o, const char *key)
{
	double d = 0;

	if (!jnum(o, key, &d) || d <= 0)
		return 0;
	return d >= 9.0e18 ? INT64_C(9000000000000000000) : (int64_t)d;
}

static const cJSON *jobj(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsObject(v) ? v : NULL;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t sat_sub0(int64_t a, int64_t b)
{
	return a > b ? a - b : 0;
}

/* ------------------------------------------------------------------ */
/* Claude                                                             */

/* The key of modelUsage whose costUSD is highest (first on a tie). */
static const char *claude_usage_model(const cJSON *mu)
{
	const cJSON *m, *best = NULL;
	double best_cost = -1;

	cJSON_ArrayForEach(m, mu) {
		double c = 0;
		if (!cJSON_IsObject(m) || m->string == NULL)
			continue;
		jnum(m, "costUSD", &c);
		if (c > best_cost) {
			best = m;
			best_cost = c;
		}
	}
	return best != NULL ? best->string : NULL;
}

/* The "errors" array of an error subtype, joined by newlines. */
static void claude_errors(struct tq_result_parser *p, const cJSON *errs)
{
	struct text t = { 0 };
	const cJSON *e;

	cJSON_ArrayForEach(e, errs) {
		if (!cJSON_IsString(e))
			continue;
		if ((t.len > 0 && text_add(&t, "\n", 1, TQ_RESULT_TEXT_MAX) < 0) ||
		    text_add(&t, e->valuestring, strlen(e->valuestring),
			     TQ_RESULT_TEXT_MAX) < 0)
			break;
	}
	free(p->result);
	p->result = t.p; /* NULL when there was none */
}

static void claude_result(struct tq_result_parser *p, const cJSON *o)
{
	const cJSON *usage = jobj(o, "usage"), *errs;
	const char *s;
	double cost = 0, d = 0;

	p->has_result = 1;
	p->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "is_error"));
	set_str(&p->subtype, jstr(o, "subtype"));
	if ((s = jstr(o, "result")) != NULL)
		set_str(&p->result, s);
	else if (cJSON_IsArray(errs = cJSON_GetObjectItemCaseSensitive(o, "errors")))
		claude_errors(p, errs);
	else
		set_str(&p->result, NULL);
	if ((s = jstr(o, "session_id")) != NULL)
		set_str(&p->session, s);
	/* total_cost_usd since 1.0; cost_usd in the first releases */
	p->has_cost = jnum(o, "total_cost_usd", &cost) || jnum(o, "cost_usd", &cost);
	p->cost = p->has_cost ? cost : 0;
	p->duration_ms = jnum(o, "duration_ms", &d) ? jint(o, "duration_ms") : -1;
	p->num_turns = jint(o, "num_turns");
	p->in = jint(usage, "input_tokens");
	p->out = jint(usage, "output_tokens");
	p->cache_read = jint(usage, "cache_read_input_tokens");
	p->cache_creation = jint(usage, "cache_creation_input_tokens");
	set_str(&p->model, claude_usage_model(jobj(o, "modelUsage")));
}

void tq_result_claude(struct tq_result_parser *p, const cJSON *o)
{
	const char *type = jstr(o, "type"), *sub = jstr(o, "subtype");

	if (type == NULL)
		return;
	if (strcmp(type, "result") == 0) {
		claude_result(p, o);
	} else if (strcmp(type, "system") == 0 && sub != NULL && strcmp(sub, "init") == 0) {
		if (jstr(o, "model") != NULL)
			set_str(&p->init_model, jstr(o, "model"));
		if (p->session == NULL && jstr(o, "session_id") != NULL)
			set_str(&p->session, jstr(o, "session_id"));
	}
}

/* ------------------------------------------------------------------ */
/* Gemini                                                             */

static void append_text(struct tq_result_parser *p, const char *s)
{
	size_t n = strlen(s), room = TQ_RESULT_TEXT_MAX - p->text.len;

	/* Past the bound the text is cut (the log keeps all of it). */
	text_add(&p->text, s, n < room ? n : room, TQ_RESULT_TEXT_MAX);
}

/* -o json: stats.models.{M}.tokens, summed over models; the model that
 * wrote the most is the model (a router's model may be listed first). */
static void gemini_models(struct tq_result_parser *p, const cJSON *models)
{
	const cJSON *m;
	int64_t best = -1;

	p->in = p->out = p->cache_read = 0;
	cJSON_ArrayForEach(m, models) {
		const cJSON *tok = jobj(m, "tokens");
		int64_t cached = jint(tok, "cached"), cand = jint(tok, "candidates");
		double in = 0;

		if (tok == NULL)
			continue;
		/* "input" is the prompt less what came from the cache */
		if (jnum(tok, "input", &in))
			p->in = sat_add(p->in, jint(tok, "input"));
		else
			p->in = sat_add(p->in, sat_sub0(jint(tok, "prompt"), cached));
		p->out = sat_add(p->out, sat_add(cand, jint(tok, "thoughts")));
		p->cache_read = sat_add(p->cache_read, cached);
		if (cand > best && m->string != NULL) {
			best = cand;
			set_str(&p->model, m->string);
		}
	}
}

/* The stream-json result line's stats. */
static void gemini_stats(struct tq_result_parser *p, const cJSON *st)
{
	const cJSON *models = jobj(st, "models"), *m;
	int64_t best = -1;
	double v = 0;

	if (st == NULL)
		return;
	p->cache_read = jint(st, "cached");
	p->in = jnum(st, "input", &v) ? jint(st, "input")
				      : sat_sub0(jint(st, "input_tokens"), p->cache_read);
	p->out = jint(st, "output_tokens");
	p->duration_ms = jnum(st, "duration_ms", &v) ? jint(st, "duration_ms") : -1;
	/* the model that wrote the most (a router's model may come first) */
	cJSON_ArrayForEach(m, models) {
		int64_t out = jint(m, "output_tokens");
		if (cJSON_IsObject(m) && m->string != NULL && out > best) {
			best = out;
			set_str(&p->model, m->string);
		}
	}
}

static void gemini_error(struct tq_result_parser *p, const cJSON *err)
{
	const char *msg = jstr(err, "message");

	p->is_error = 1;
	set_str(&p->error, msg != NULL ? msg : "error");
}

/* -o json: one object with response, session_id, stats (or error). */
static void gemini_doc(struct tq_result_parser *p, const cJSON *o)
{
	const cJSON *err = jobj(o, "error"), *st = jobj(o, "stats");

	p->has_result = 1;
	set_str(&p->result, jstr(o, "response"));
	if (jstr(o, "session_id") != NULL)
		set_str(&p->session, jstr(o, "session_id"));
	if (err != NULL)
		gemini_error(p, err);
	gemini_models(p, jobj(st, "models"));
}

void tq_result_gemini(struct tq_result_parser *p, const cJSON *o)
{
	const char *type = jstr(o, "type"), *s;

	if (type == NULL) {
		if (cJSON_GetObjectItemCaseSensitive(o, "response") != NULL ||
		    jobj(o, "error") != NULL)
			gemini_doc(p, o);
	} else if (strcmp(type, "init") == 0) {
		if ((s = jstr(o, "session_id")) != NULL)
			set_str(&p->session, s);
		if ((s = jstr(o, "model")) != NULL)
			set_str(&p->init_model, s);
	} else if (strcmp(type, "message") == 0) {
		if ((s = jstr(o, "role")) != NULL && strcmp(s, "assistant") == 0 &&
		    (s = jstr(o, "content")) != NULL)
			append_text(p, s);
	} else if (strcmp(type, "result") == 0) {
		p->has_result = 1;
		s = jstr(o, "status");
		set_str(&p->subtype, s);
		p->is_error = s == NULL || strcmp(s, "success") != 0;
		if (jobj(o, "error") != NULL)
			gemini_error(p, jobj(o, "error"));
		gemini_stats(p, jobj(o, "stats"));
	}
}

/* ------------------------------------------------------------------ */
/* Codex                                                              */

void tq_result_codex(struct tq_result_parser *p, const cJSON *o)
{
	const char *type = jstr(o, "type"), *s;
	const cJSON *it, *u, *e;

	if (type == NULL)
		return;
	if (strcmp(type, "thread.started") == 0) {
		if ((s = jstr(o, "thread_id")) != NULL)
			set_str(&p->session, s);
	} else if (strcmp(type, "item.completed") == 0) {
		it = jobj(o, "item");
		if ((s = jstr(it, "type")) != NULL && strcmp(s, "agent_message") == 0 &&
		    (s = jstr(it, "text")) != NULL)
			set_str(&p->result, s);
	} else if (strcmp(type, "turn.completed") == 0) {
		int64_t cached;
		p->has_result = 1;
		p->num_turns = sat_add(p->num_turns, 1);
		u = jobj(o, "usage");
		cached = jint(u, "cached_input_tokens");
		/* input_tokens counts the cached part too; output_tokens the
		 * reasoning too (OpenAI's usage) */
		p->in = sat_add(p->in, sat_sub0(jint(u, "input_tokens"), cached));
		p->cache_read = sat_add(p->cache_read, cached);
		p->cache_creation = sat_add(p->cache_creation,
					    jint(u, "cache_write_input_tokens"));
		p->out = sat_add(p->out, jint(u, "output_tokens"));
	} else if (strcmp(type, "turn.failed") == 0) {
		p->has_result = 1;
		p->num_turns = sat_add(p->num_turns, 1);
		p->is_error = 1;
		e = jobj(o, "error");
		s = jstr(e, "message");
		set_str(&p->error, s != NULL ? s : "turn failed");
	}
}

/* ------------------------------------------------------------------ */
/* OpenCode                                                           */

static void opencode_finish(struct tq_result_parser *p, const cJSON *part)
{
	const cJSON *tok = jobj(part, "tokens"), *cache = jobj(tok, "cache");
	double cost = 0;

	p->has_result = 1;
	p->num_turns = sat_add(p->num_turns, 1);
	if (jnum(part, "cost", &cost) && cost >= 0) {
		p->cost += cost;
		p->has_cost = 1;
	}
	p->in = sat_add(p->in, jint(tok, "input"));
	p->out = sat_add(p->out, sat_add(jint(tok, "output"), jint(tok, "reasoning")));
	p->cache_read = sat_add(p->cache_read, jint(cache, "read"));
	p->cache_creation = sat_add(p->cache_creation, jint(cache, "write"));
}

static void opencode_error(struct tq_result_parser *p, const cJSON *o)
{
	const cJSON *e = jobj(o, "error"), *data = jobj(e, "data");
	const char *msg = jstr(data, "message");

	p->has_result = 1;
	p->is_error = 1;
	if (msg == NULL)
		msg = jstr(e, "message");
	if (msg == NULL)
		msg = jstr(e, "name");
	set_str(&p->error, msg != NULL ? msg : "error");
	set_str(&p->subtype, jstr(e, "name"));
}

void tq_result_opencode(struct tq_result_parser *p, const cJSON *o)
{
	const char *type = jstr(o, "type"), *s;
	const cJSON *part = jobj(o, "part");

	if (type == NULL)
		return;
	if (p->session == NULL &&
	    ((s = jstr(o, "sessionID")) != NULL || (s = jstr(part, "sessionID")) != NULL))
		set_str(&p->session, s);
	if (strcmp(type, "step_start") == 0) {
		p->step_fresh = 1;
	} else if (strcmp(type, "text") == 0) {
		if ((s = jstr(part, "text")) == NULL)
			return;
		if (p->step_fresh) {
			text_clear(&p->text, KEEP_BUF);
			p->step_fresh = 0;
		}
		append_text(p, s);
	} else if (strcmp(type, "step_finish") == 0) {
		opencode_finish(p, part);
	} else if (strcmp(type, "error") == 0) {
		opencode_error(p, o);
	}
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                           */

/* Is the object framed worth parsing: does it hold one of the agent's
 * needles (registry.c says why they are enough)? */
static int worth_parsing(const struct tq_result_parser *p)
{
	const char *const *n = p->def != NULL ? p->def->needles : NULL;

	if (n == NULL)
		return 1;
	for (; *n != NULL; n++)
		if (memmem(p->obj.p, p->obj.len, *n, strlen(*n)) != NULL)
			return 1;
	return 0;
}

static void dispatch(struct tq_result_parser *p)
{
	cJSON *o;

	if (p->obj.p == NULL || !worth_parsing(p))
		return;
	/* obj is NUL-terminated; cJSON 1.7.15 reads up to length */
	o = cJSON_ParseWithLength(p->obj.p, p->obj.len);
	if (cJSON_IsObject(o) && p->def != NULL)
		p->def->read_obj(p, o);
	cJSON_Delete(o);
}

/* ------------------------------------------------------------------ */
/* Framing                                                            */

static void obj_reset(struct tq_result_parser *p, enum frame next)
{
	text_clear(&p->obj, KEEP_BUF);
	p->fr = next;
	p->pretty = p->in_str = p->esc = 0;
	p->depth = 0;
}

/* Add n bytes to the object; over the cap (or out of memory) the object is
 * dropped and the rest of its line skipped. 0, or -1 when dropped. */
static int obj_add(struct tq_result_parser *p, const char *s, size_t n)
{
	if (n == 0 || text_add(&p->obj, s, n, TQ_RESULT_LINE_MAX) == 0)
		return 0;
	obj_reset(p, FR_SKIP);
	return -1;
}

/* Only blanks between the opening '{' and this first newline? */
static int only_brace(const struct tq_result_parser *p, const char *s, size_t n)
{
	for (size_t i = 1; i < p->obj.len; i++)
		if (p->obj.p[i] != ' ' && p->obj.p[i] != '\t' && p->obj.p[i] != '\r')
			return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* Scan s[0..n) inside an object; returns how many bytes were consumed. */
static size_t frame_obj(struct tq_result_parser *p, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n' && (p->in_str || (!p->pretty && !only_brace(p, s, i)))) {
			/* a one-line object that does not end on its line, or a raw
			 * newline inside a string: not JSON */
			obj_reset(p, FR_START);
			return i + 1;
		}
		if (c == '\n') {
			p->pretty = 1;
		} else if (p->in_str) {
			if (p->esc)
				p->esc = 0;
			else if (c == '\\')
				p->esc = 1;
			else if (c == '"')
				p->in_str = 0;
		} else if (c == '"') {
			p->in_str = 1;
		} else if (c == '{' || c == '[') {
			p->depth++;
		} else if ((c == '}' || c == ']') && --p->depth == 0) {
			if (obj_add(p, s, i + 1) < 0)
				return i + 1;
			p->fr = FR_AFTER;
			return i + 1;
		}
	}
	obj_add(p, s, n);
	return n;
}

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

void tq_result_feed(struct tq_result_parser *p, const void *buf, size_t len)
{
	const char *s = buf;
	size_t i = 0;

	if (p == NULL || p->def == NULL)
		return;
	while (i < len) {
		const char *nl;

		switch (p->fr) {
		case FR_START:
			if (blank(s[i]) || s[i] == '\n') {
				i++;
			} else if (s[i] == '{') {
				obj_reset(p, FR_OBJ);
				p->depth = 1;
				if (obj_add(p, "{", 1) == 0)
					p->fr = FR_OBJ;
				i++;
			} else {
				p->fr = FR_SKIP;
			}
			break;
		case FR_SKIP:
			if ((nl = memchr(s + i, '\n', len - i)) == NULL)
				return;
			i = (size_t)(nl - s) + 1;
			p->fr = FR_START;
			break;
		case FR_OBJ:
			i += frame_obj(p, s + i, len - i);
			break;
		case FR_AFTER:
			if (s[i] == '\n') {
				dispatch(p);
				obj_reset(p, FR_START);
			} else if (!blank(s[i])) {
				obj_reset(p, FR_SKIP);
				break;
			}
			i++;
			break;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Session ids                                                        */

static int is_uuid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return 0;
		} else if (!isxdigit(c)) {
			return 0;
		}
	}
	return s[36] == '\0';
}

const char *tq_result_session_uuid(const char *id, size_t len)
{
	(void)len;
	return is_uuid(id) ? NULL : "not a uuid";
}

const char *tq_result_session_opencode(const char *id, size_t len)
{
	if (strncmp(id, "ses_", 4) != 0 || len == 4 ||
	    strspn(id + 4, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "abcdefghijklmnopqrstuvwxyz") != len - 4)
		return "not ses_ and letters and digits";
	return NULL;
}

int tq_result_session_check(const char *parser, const char *id, char *why, size_t n)
{
	const struct tq_agent_def *def = tq_registry_find(parser);
	const char *bad = NULL;
	size_t len = id != NULL ? strlen(id) : 0;

	if (len == 0)
		bad = "empty";
	else if (id[0] == '-')
		bad = "starts with '-'";
	else if (len > TQ_RESULT_SESSION_MAX)
		bad = "too long";
	else if (def != NULL && def->session_bad != NULL)
		bad = def->session_bad(id, len);
	else if (strspn(id, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "abcdefghijklmnopqrstuvwxyz-_.:") != len)
		bad = "has characters other than letters, digits and -_.:";
	if (bad == NULL)
		return 0;
	if (why != NULL && n > 0)
		snprintf(why, n, "%s", bad);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                         */

struct tq_result_parser *tq_result_parser_new(const char *parser)
{
	struct tq_result_parser *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->duration_ms = -1;
	p->def = tq_registry_find(parser);
	return p;
}

void tq_result_parser_free(struct tq_result_parser *p)
{
	if (p == NULL)
		return;
	text_free(&p->obj);
	text_free(&p->text);
	free(p->result);
	free(p->error);
	free(p->subtype);
	free(p->session);
	free(p->model);
	free(p->init_model);
	free(p);
}

void tq_result_end(struct tq_result_parser *p, struct tq_result *r)
{
	*r = (struct tq_result){ 0 };
	if (p == NULL)
		return;
	/* A last object without its '\n' (output that ends at '}'). */
	if (p->fr == FR_AFTER) {
		dispatch(p);
		obj_reset(p, FR_START);
	}
	if (!p->has_result)
		return;
	r->has_result = 1;
	r->is_error = p->is_error;
	if (p->is_error && p->error != NULL)
		r->result = p->error;
	else if (p->text.len > 0)
		r->result = p->text.p;
	else
		r->result = p->result != NULL ? p->result : p->error;
	r->subtype = p->subtype;
	r->agent_session = p->session;
	p->note[0] = '\0';
	if (p->session != NULL) {
		/* vis(3): each byte shown takes at most 4 characters (\ooo) */
		char why[64], shown[4 * NOTE_ID_SHOWN + 1];

		if (tq_result_session_check(p->def != NULL ? p->def->name : NULL, p->session, why,
					    sizeof(why)) < 0) {
			/* never stored, so never put in the next link's argv */
			r->agent_session = NULL;
			strvisx(shown, p->session, strnlen(p->session, NOTE_ID_SHOWN),
				VIS_CSTYLE | VIS_DQ | VIS_NL | VIS_TAB | VIS_OCTAL);
			snprintf(p->note, sizeof(p->note),
				 "agent session id \"%s%s\" refused (%s); the session cannot continue",
				 shown, strlen(p->session) > NOTE_ID_SHOWN ? "..." : "", why);
		}
	}
	r->cost_usd = p->has_cost ? p->cost : -1;
	r->duration_ms = p->duration_ms;
	r->num_turns = p->num_turns;
	r->input_tokens = p->in;
	r->output_tokens = p->out;
	r->cache_read_tokens = p->cache_read;
	r->cache_creation_tokens = p->cache_creation;
	/* the init line names the model the run used; modelUsage (claude) or
	 * stats (gemini) otherwise */
	r->model = p->init_model != NULL ? p->init_model : p->model;
}

const char *tq_result_note(const struct tq_result_parser *p)
{
	return p != NULL && p->note[0] != '\0' ? p->note : NULL;
}

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
 * it only extracts what is stored on the attempt. What each agent's
 * objects hold is read in that agent's file (src/agent/NAME.c), through
 * result_int.h.
 */
#include "result.h"

#define LIBBSD_NETBSD_VIS /* the NetBSD vis API; silences libbsd's #warning */
#include <bsd/string.h>
#include <bsd/vis.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/sys.h"

#include "agent_int.h"
#include "registry.h"
#include "result_int.h"
#include "stream_int.h"

/* ------------------------------------------------------------------ */
/* Dispatch                                                           */

/* Is the object framed worth parsing: does it hold one of the agent's
 * needles (registry.c says why they are enough)? */
static int worth_parsing(const struct tq_result_parser *p)
{
	const char *const *n = p->st != NULL ? p->st->def->needles :
			       p->def != NULL ? p->def->needles : NULL;

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
	if (cJSON_IsObject(o) && p->st != NULL)
		p->st->def->read(p, o);
	else if (cJSON_IsObject(o) && p->def != NULL)
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

/* Feed len bytes; with stop, return after the line that ended a quiet
 * start (stream_int.h), else after all of them. The bytes taken. */
static size_t feed(struct tq_result_parser *p, const char *s, size_t len, int stop)
{
	size_t i = 0;

	if (p == NULL || p->def == NULL)
		return len;
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
				return len;
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
				if (stop && !tq_result_quiet(p))
					return i + 1;
			} else if (!blank(s[i])) {
				obj_reset(p, FR_SKIP);
				break;
			}
			i++;
			break;
		}
	}
	return len;
}

void tq_result_feed(struct tq_result_parser *p, const void *buf, size_t len)
{
	feed(p, buf, len, 0);
}

size_t tq_result_feed_quiet(struct tq_result_parser *p, const void *buf, size_t len)
{
	return tq_result_quiet(p) ? feed(p, buf, len, 1) : 0;
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

static void stream_free(struct stream_turn *st)
{
	if (st == NULL)
		return;
	free(st->sid);
	free(st->turn);
	free(st->prompt);
	free(st->model);
	free(st->cwd);
	free(st->resume);
	free(st->extra);
	text_free(&st->in);
	free(st);
}

void tq_result_parser_free(struct tq_result_parser *p)
{
	if (p == NULL)
		return;
	stream_free(p->st);
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

/* A copy of s, or of "" for NULL; -1 when out of memory. */
static int dup_to(char **dst, const char *s)
{
	*dst = strdup(s != NULL ? s : "");
	return *dst != NULL ? 0 : -1;
}

struct tq_result_parser *tq_result_parser_stream(const char *parser,
						 const struct tq_stream_turn *turn)
{
	const struct tq_agent_def *def = tq_registry_find(parser);
	struct tq_result_parser *p;
	struct stream_turn *st;

	if (def == NULL || def->stream == NULL || (p = tq_result_parser_new(parser)) == NULL)
		return NULL;
	if ((st = p->st = calloc(1, sizeof(*st))) == NULL ||
	    dup_to(&st->prompt, turn->prompt) < 0 || dup_to(&st->cwd, turn->cwd) < 0 ||
	    (turn->model != NULL && dup_to(&st->model, turn->model) < 0) ||
	    (turn->resume != NULL && dup_to(&st->resume, turn->resume) < 0)) {
		tq_result_parser_free(p);
		return NULL;
	}
	st->def = def->stream;
	st->fresh = turn->fresh;
	snprintf(st->ids, sizeof(st->ids), "taskq-%lld-%d-", (long long)turn->task,
		 turn->attempt);
	/* a kept process's conversation goes on: what the last turn left */
	strlcpy(st->state, turn->fresh || turn->state == NULL ? "" : turn->state,
		sizeof(st->state));
	st->arg = turn;
	st->def->begin(p);
	st->arg = NULL;
	return p;
}

int tq_result_stream_input(struct tq_result_parser *p, char **buf, size_t *len, int64_t *at)
{
	struct stream_turn *st = p != NULL ? p->st : NULL;

	*buf = NULL;
	*len = 0;
	*at = 0;
	if (st == NULL || st->in.len == 0)
		return 0;
	if (st->not_before > 0 && tq_now_ms() < st->not_before) {
		*at = st->not_before;
		return 0;
	}
	st->not_before = 0;
	if (st->settle_on_release) { /* what was held is the turn's start */
		st->settle_on_release = 0;
		st->quiet = 0;
	}
	*buf = st->in.p;
	*len = st->in.len;
	st->in = (struct text){ 0 };
	return 1;
}

int tq_result_quiet(const struct tq_result_parser *p)
{
	return p != NULL && p->st != NULL && p->st->quiet;
}

int tq_result_interrupt(struct tq_result_parser *p)
{
	if (p == NULL || p->st == NULL || p->st->def->interrupt == NULL)
		return -1;
	return p->st->def->interrupt(p);
}

const char *tq_result_stream_state(const struct tq_result_parser *p)
{
	return p != NULL && p->st != NULL ? p->st->state : "";
}

int tq_result_seen(const struct tq_result_parser *p)
{
	return p != NULL && p->has_result;
}

/*
 * What the store keeps of a result is text (PostgreSQL's takes UTF-8
 * only: a result with a byte 0xff left its task running for ever there,
 * its end refused): each byte that does not start a valid UTF-8 sequence
 * becomes U+FFFD, on either backend. The task's log keeps the exact bytes.
 * Out of memory, s stays as it is.
 */
static int storable(char **s)
{
	char *fixed;

	if (*s == NULL || tq_utf8_fix(*s, &fixed) != 1)
		return 0;
	free(*s);
	*s = fixed;
	return 1;
}

static void storable_text(struct text *t)
{
	if (storable(&t->p)) {
		t->len = strlen(t->p);
		t->cap = t->len + 1;
	}
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
	storable(&p->result);
	storable(&p->error);
	storable(&p->subtype);
	storable(&p->session);
	storable(&p->model);
	storable(&p->init_model);
	storable_text(&p->text);
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
	/* the init line names the model the run used; what else the reader
	 * found (usage or stats by model) otherwise */
	r->model = p->init_model != NULL ? p->init_model : p->model;
}

const char *tq_result_note(const struct tq_result_parser *p)
{
	return p != NULL && p->note[0] != '\0' ? p->note : NULL;
}

/*
 * rpc.c - the lines a warm turn writes to its agent process (stream_int.h):
 * queued in the turn's parser for the runner to write, as plain lines or
 * as JSON-RPC 2.0 requests, notifications and answers; the state the turn
 * leaves for the next one; a turn that ends in error.
 *
 * What it does not: write to a descriptor (the worker's runner does), or
 * read (each protocol reads its objects itself, with the tests below).
 *
 * A request's id is a string, "taskq-TASK-ATTEMPT-N": unique across the
 * turns of one process, so an answer that comes late (after its turn
 * ended) is never taken for one of the next turn's, and readable in a log.
 * Every JSON-RPC mode measured takes string ids (research agent-clis.md
 * 4.1, 5.1, 6.1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>
#include <cjson/cJSON.h>

#include "stream_int.h"

void tq_stream_write(struct tq_result_parser *p, const char *s)
{
	struct text *in = &p->st->in;
	size_t n = strlen(s), old = in->len;

	/* the line whole or not at all: a half line would make the next one
	 * garbage too */
	if (text_add(in, s, n, TQ_RESULT_LINE_MAX) < 0 ||
	    text_add(in, "\n", 1, TQ_RESULT_LINE_MAX) < 0) {
		in->len = old;
		if (in->p != NULL)
			in->p[old] = '\0';
	}
}

void tq_stream_write_json(struct tq_result_parser *p, cJSON *o)
{
	char *s = o != NULL ? cJSON_PrintUnformatted(o) : NULL;

	if (s != NULL)
		tq_stream_write(p, s);
	cJSON_free(s);
	cJSON_Delete(o);
}

void tq_stream_set_state(struct tq_result_parser *p, const char *conv)
{
	snprintf(p->st->state, sizeof(p->st->state), "i%s%s", conv != NULL ? " " : "",
		 conv != NULL ? conv : "");
}

const char *tq_stream_state_conv(const char *state)
{
	return state != NULL && strncmp(state, "i ", 2) == 0 && state[2] != '\0' ? state + 2 :
	       NULL;
}

void tq_stream_fail(struct tq_result_parser *p, const char *what, const cJSON *error)
{
	const char *msg = jstr(error, "message"), *details = jstr(jobj(error, "data"), "details");
	char *text = NULL;

	p->has_result = 1;
	p->is_error = 1;
	set_str(&p->subtype, "error");
	if (error == NULL)
		set_str(&p->error, what != NULL ? what : "an error");
	else if (asprintf(&text, "%s%s%s%s%s", what != NULL ? what : "", what != NULL ? ": " : "",
			  msg != NULL ? msg : "an error", details != NULL ? ": " : "",
			  details != NULL ? details : "") >= 0) {
		free(p->error);
		p->error = text;
	}
}

int tq_stream_opened(struct tq_result_parser *p, const char *verb, const cJSON *error,
		     const char *id)
{
	struct stream_turn *st = p->st;
	char what[TQ_RESULT_SESSION_MAX + 64];

	if (error != NULL || id == NULL) {
		snprintf(what, sizeof(what), "%s%s%s", verb, st->resume ? " " : "",
			 st->resume ? st->resume : "");
		tq_stream_fail(p, what, error);
		return -1;
	}
	set_str(&st->sid, id);
	set_str(&p->session, id);
	tq_stream_set_state(p, id);
	return 0;
}

/* ------------------------------------------------------------------ */
/* JSON-RPC 2.0                                                       */

static cJSON *message(const char *method)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && (cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
			  (method != NULL && cJSON_AddStringToObject(o, "method", method) == NULL))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Add params (taken) to o; o is deleted when that fails. */
static cJSON *with(cJSON *o, const char *key, cJSON *params)
{
	if (params == NULL)
		return o;
	if (o == NULL || !cJSON_AddItemToObject(o, key, params)) {
		cJSON_Delete(params);
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

const char *tq_rpc_request(struct tq_result_parser *p, const char *method, cJSON *params)
{
	struct stream_turn *st = p->st;
	cJSON *o = message(method);

	snprintf(st->wait, sizeof(st->wait), "%s%d", st->ids, ++st->n);
	if (o != NULL && cJSON_AddStringToObject(o, "id", st->wait) == NULL) {
		cJSON_Delete(o);
		o = NULL;
	}
	tq_stream_write_json(p, with(o, "params", params));
	return st->wait;
}

void tq_rpc_notify(struct tq_result_parser *p, const char *method, cJSON *params)
{
	tq_stream_write_json(p, with(message(method), "params", params));
}

/* A copy of request o's id into a new answer, or NULL. */
static cJSON *answer_to(const cJSON *o)
{
	cJSON *a = message(NULL), *id = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(o, "id"),
							     1);

	if (a == NULL || id == NULL || !cJSON_AddItemToObject(a, "id", id)) {
		cJSON_Delete(id);
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

void tq_rpc_answer(struct tq_result_parser *p, const cJSON *o, cJSON *result)
{
	tq_stream_write_json(p, with(answer_to(o), "result", result));
}

void tq_rpc_refuse(struct tq_result_parser *p, const cJSON *o, int code, const char *msg)
{
	cJSON *e = cJSON_CreateObject();

	if (e != NULL && (cJSON_AddNumberToObject(e, "code", code) == NULL ||
			  cJSON_AddStringToObject(e, "message", msg) == NULL)) {
		cJSON_Delete(e);
		e = NULL;
	}
	if (e != NULL)
		tq_stream_write_json(p, with(answer_to(o), "error", e));
}

int tq_rpc_answers(const cJSON *o, const char *id)
{
	const char *got = jstr(o, "id");

	return got != NULL && id[0] != '\0' && strcmp(got, id) == 0 &&
	       cJSON_GetObjectItemCaseSensitive(o, "method") == NULL &&
	       (cJSON_GetObjectItemCaseSensitive(o, "result") != NULL ||
		cJSON_GetObjectItemCaseSensitive(o, "error") != NULL);
}

int tq_rpc_is_request(const cJSON *o)
{
	return jstr(o, "method") != NULL && cJSON_GetObjectItemCaseSensitive(o, "id") != NULL;
}

int tq_rpc_is_notification(const cJSON *o)
{
	return jstr(o, "method") != NULL && cJSON_GetObjectItemCaseSensitive(o, "id") == NULL;
}

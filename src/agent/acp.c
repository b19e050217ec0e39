/*
 * acp.c - the Agent Client Protocol, a stream-input mode more than one CLI
 * speaks (registry.h, struct tq_agent_stream; stream_int.h): JSON-RPC 2.0
 * over the process's stdin and stdout, one object a line (research
 * agent-clis.md 4.1, 6.1). The CLIs whose mode it is point their entry's
 * begin, read and interrupt here and tune it (struct tq_acp_tune).
 *
 * A turn on a process started for it (its state ""): initialize; then
 * session/load of the session to resume (the history it replays comes as
 * session/update, before the answer or after it), or session/new; then,
 * when the CLI takes the model so, session/set_config_option "model"; then
 * session/prompt, once the agent's start is over (prompt()). Until the
 * prompt is written all of it is the process's start, quiet (not the
 * turn's log). On a kept process (its state "i ID")
 * the turn is session/prompt alone; "i" (started, no session: the last
 * turn failed to open one) opens one first.
 *
 * The turn ends with session/prompt's answer: its stopReason (end_turn is
 * success; cancelled, max_tokens, max_turn_requests, refusal are errors,
 * the reason the subtype), its usage (result.usage, or the _meta.quota
 * token counts), or a JSON-RPC error (the error's message is the result,
 * its code the evidence the rules read: 429 is the API's status where the
 * CLI passes it). The result text is the agent_message_chunk texts of the
 * session during the prompt. A failed initialize, load or new session
 * ends the turn in error too, saying which.
 *
 * Interrupt: session/cancel, once the prompt is written (the answer comes
 * with stopReason cancelled); before, the process is in its start and
 * cannot be (-1).
 *
 * The agent's own requests are answered so a turn never waits for a
 * person: a permission is refused (its reject option; a headless one-shot
 * run denies such tools too); any other request (files, terminals: the
 * client capabilities say we have none) gets "method not found".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/sys.h"

#include "registry.h"
#include "stream_int.h"

enum { ACP_INIT = 1, ACP_SESSION, ACP_MODEL, ACP_PROMPT };

/* How long a new session's prompt waits for the agent's
 * available_commands_update, which ends its start (below), when none
 * comes. */
#define SETTLE_MS 2000

/* "method not found" (JSON-RPC 2.0). */
#define RPC_NO_METHOD (-32601)

const char *const tq_acp_needles[] = { "\"id\"", "\"agent_message_chunk\"",
					"\"available_commands_update\"", NULL };

static const struct tq_acp_tune *tune(const struct tq_result_parser *p)
{
	static const struct tq_acp_tune none = { 0 };
	const struct tq_acp_tune *t = p->st->def->tune;

	return t != NULL ? t : &none;
}

/* {"sessionId": sid} and, when value, key: value; NULL on no memory. */
static cJSON *with_session(const char *sid)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && cJSON_AddStringToObject(o, "sessionId", sid) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void initialize(struct tq_result_parser *p)
{
	cJSON *o = cJSON_CreateObject(), *caps, *fs;

	if (o == NULL || cJSON_AddNumberToObject(o, "protocolVersion", 1) == NULL ||
	    (caps = cJSON_AddObjectToObject(o, "clientCapabilities")) == NULL ||
	    (fs = cJSON_AddObjectToObject(caps, "fs")) == NULL ||
	    cJSON_AddFalseToObject(fs, "readTextFile") == NULL ||
	    cJSON_AddFalseToObject(fs, "writeTextFile") == NULL ||
	    cJSON_AddFalseToObject(caps, "terminal") == NULL) {
		cJSON_Delete(o);
		o = NULL;
	}
	p->st->phase = ACP_INIT;
	tq_rpc_request(p, "initialize", o);
}

/* session/load of the session to resume, or session/new. */
static void open_session(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	cJSON *o = st->resume != NULL ? with_session(st->resume) : cJSON_CreateObject();

	if (o != NULL && (cJSON_AddStringToObject(o, "cwd", st->cwd) == NULL ||
			  cJSON_AddArrayToObject(o, "mcpServers") == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	st->phase = ACP_SESSION;
	st->fresh_session = 1;
	tq_rpc_request(p, st->resume != NULL ? "session/load" : "session/new", o);
}

/*
 * The prompt. On a session just opened it waits until the agent's start
 * is over: an agent may answer session/load before it replays the
 * session's history (research agent-clis.md 4.1: its replay not awaited),
 * and a history replayed after the prompt would be taken for the turn's
 * text; the ACP agents measured end their start with an
 * available_commands_update (a timer after the answer, after the replay).
 * So the prompt is held, still quiet, until that update comes (update())
 * or SETTLE_MS pass (tq_result_stream_input, settle_on_release).
 */
static void prompt(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	cJSON *o = with_session(st->sid), *arr, *b;

	if (o != NULL && ((arr = cJSON_AddArrayToObject(o, "prompt")) == NULL ||
			  (b = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(arr, b) ||
			  cJSON_AddStringToObject(b, "type", "text") == NULL ||
			  cJSON_AddStringToObject(b, "text", st->prompt) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	st->phase = ACP_PROMPT;
	tq_rpc_request(p, "session/prompt", o);
	if (st->fresh_session && !st->settled) {
		st->not_before = tq_now_ms() + SETTLE_MS;
		st->settle_on_release = 1;
		return;
	}
	st->quiet = 0; /* what comes from here on is the turn's */
}

/* The session is open: its model, when the CLI takes it so; the prompt. */
static void opened(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	cJSON *o;

	if (st->model == NULL || !tune(p)->model_by_option) {
		prompt(p);
		return;
	}
	if ((o = with_session(st->sid)) != NULL &&
	    (cJSON_AddStringToObject(o, "configId", "model") == NULL ||
	     cJSON_AddStringToObject(o, "value", st->model) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	st->phase = ACP_MODEL;
	tq_rpc_request(p, "session/set_config_option", o);
}

void tq_acp_begin(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	const char *conv = tq_stream_state_conv(st->state);

	if (conv != NULL) {
		/* a kept process: its session goes on */
		set_str(&st->sid, conv);
		set_str(&p->session, conv);
		prompt(p);
		return;
	}
	st->quiet = 1;
	/* a CLI that loses a session loaded too soon waits (its tune) */
	if (st->resume != NULL && tune(p)->load_not_before != NULL)
		st->not_before = tune(p)->load_not_before(st->resume, st->arg->envp);
	if (st->state[0] != '\0')
		open_session(p);
	else
		initialize(p);
}

/* The agent asks: a permission is refused, anything else not offered. */
static void agent_request(struct tq_result_parser *p, const cJSON *o)
{
	const char *method = jstr(o, "method");
	const cJSON *opt, *pick = NULL;
	cJSON *r, *out;
	char why[160];

	if (strcmp(method, "session/request_permission") != 0) {
		snprintf(why, sizeof(why), "%s is not offered: taskq runs the turn unattended",
			 method);
		tq_rpc_refuse(p, o, RPC_NO_METHOD, why);
		return;
	}
	cJSON_ArrayForEach(opt, cJSON_GetObjectItemCaseSensitive(jobj(o, "params"), "options")) {
		const char *kind = jstr(opt, "kind");
		if (kind != NULL && (strcmp(kind, "reject_once") == 0 ||
				     (pick == NULL && strcmp(kind, "reject_always") == 0)))
			pick = opt;
	}
	if ((r = cJSON_CreateObject()) == NULL || (out = cJSON_AddObjectToObject(r, "outcome")) ==
	    NULL || cJSON_AddStringToObject(out, "outcome", pick ? "selected" : "cancelled") ==
	    NULL || (pick != NULL && (jstr(pick, "optionId") == NULL ||
				      cJSON_AddStringToObject(out, "optionId",
							      jstr(pick, "optionId")) == NULL))) {
		cJSON_Delete(r);
		return;
	}
	tq_rpc_answer(p, o, r);
}

/* session/update: the end of a new session's start (the prompt held for
 * it goes), and during the prompt the agent's text, which is the result. */
static void update(struct tq_result_parser *p, const cJSON *o)
{
	struct stream_turn *st = p->st;
	const cJSON *params = jobj(o, "params"), *u = jobj(params, "update");
	const cJSON *content = jobj(u, "content");
	const char *kind = jstr(u, "sessionUpdate"), *sid = jstr(params, "sessionId"), *text;

	if (kind != NULL && strcmp(kind, "available_commands_update") == 0 && !st->settled) {
		st->settled = 1;
		if (st->settle_on_release) { /* the held prompt goes now */
			st->not_before = 0;
			st->settle_on_release = 0;
			st->quiet = 0;
		}
		return;
	}
	if (st->phase != ACP_PROMPT || st->quiet || kind == NULL || sid == NULL ||
	    st->sid == NULL || strcmp(sid, st->sid) != 0 ||
	    strcmp(kind, "agent_message_chunk") != 0)
		return;
	if ((text = jstr(content, "text")) != NULL)
		append_text(p, text);
}

/* The model the session runs: its models, or its model option. */
static void session_model(struct tq_result_parser *p, const cJSON *res)
{
	const cJSON *opt;
	const char *m = jstr(jobj(res, "models"), "currentModelId");

	cJSON_ArrayForEach(opt, cJSON_GetObjectItemCaseSensitive(res, "configOptions"))
		if (m == NULL && jstr(opt, "id") != NULL && strcmp(jstr(opt, "id"), "model") == 0)
			m = jstr(opt, "currentValue");
	if (m != NULL)
		set_str(&p->init_model, m);
}

/* session/prompt's answer: the turn's end. */
static void prompt_end(struct tq_result_parser *p, const cJSON *res)
{
	const cJSON *u = jobj(res, "usage"), *q = jobj(jobj(jobj(res, "_meta"), "quota"),
						       "token_count");
	const cJSON *mu = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
		jobj(jobj(res, "_meta"), "quota"), "model_usage"), 0);
	const char *stop = jstr(res, "stopReason");

	p->has_result = 1;
	p->num_turns = 1;
	set_str(&p->subtype, stop != NULL ? stop : "end_turn");
	p->is_error = stop != NULL && strcmp(stop, "end_turn") != 0;
	if (u != NULL) {
		/* ACP's usage: input without the cache, output without the
		 * thinking, which counts as output here (result.h) */
		p->in = jint(u, "inputTokens");
		p->out = sat_add(jint(u, "outputTokens"), jint(u, "thoughtTokens"));
		p->cache_read = jint(u, "cachedReadTokens");
		p->cache_creation = jint(u, "cachedWriteTokens");
	} else if (q != NULL) {
		p->in = jint(q, "input_tokens");
		p->out = jint(q, "output_tokens");
	}
	if (jstr(mu, "model") != NULL)
		set_str(&p->model, jstr(mu, "model"));
}

/* The answer to the request awaited, in phase order. */
static void answered(struct tq_result_parser *p, const cJSON *o)
{
	struct stream_turn *st = p->st;
	const cJSON *err = jobj(o, "error"), *res = jobj(o, "result");

	switch (st->phase) {
	case ACP_INIT:
		if (err != NULL) {
			tq_stream_fail(p, "initialize", err);
			return;
		}
		tq_stream_set_state(p, NULL);
		open_session(p);
		return;
	case ACP_SESSION:
		if (tq_stream_opened(p, st->resume ? "session/load" : "session/new", err,
				     st->resume != NULL ? st->resume : jstr(res, "sessionId")) < 0)
			return;
		session_model(p, res);
		opened(p);
		return;
	case ACP_MODEL:
		if (err != NULL) {
			tq_stream_fail(p, "session/set_config_option model", err);
			return;
		}
		set_str(&p->init_model, st->model);
		prompt(p);
		return;
	case ACP_PROMPT:
		if (err != NULL)
			tq_stream_fail(p, NULL, err);
		else
			prompt_end(p, res);
		return;
	}
}

void tq_acp_read(struct tq_result_parser *p, const cJSON *o)
{
	const char *method = jstr(o, "method");

	if (tq_rpc_is_request(o))
		agent_request(p, o);
	else if (method != NULL && strcmp(method, "session/update") == 0)
		update(p, o);
	else if (!p->has_result && tq_rpc_answers(o, p->st->wait))
		answered(p, o);
	/* anything else: another turn's late answer, a notification of
	 * nothing we keep */
}

int tq_acp_interrupt(struct tq_result_parser *p)
{
	if (p->st->phase != ACP_PROMPT)
		return -1;
	tq_rpc_notify(p, "session/cancel", with_session(p->st->sid));
	return 0;
}

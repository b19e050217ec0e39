/*
 * claude.c - Claude Code (claude), its registry entry (registry.h): its
 * result read from stream-json or json, a session id a uuid, and its own
 * retries capped for a plain command. An isolated run is kept from the
 * user's MCP servers by its profile's flags (--mcp-config with the
 * workspace's empty .mcp.json, --strict-mcp-config: profiles.json).
 *
 * Its result (result.h): the last {"type":"result"} object (stream-json or
 * json): result (or, on error subtypes that have none, the "errors" array
 * joined by newlines; an error's result is its API error text), is_error,
 * subtype, session_id, total_cost_usd, duration_ms, num_turns, usage (its
 * tokens are the normalised meaning as they are); the model from the
 * {"type":"system","subtype":"init"} line, else the modelUsage entry that
 * cost the most.
 *
 * Its stream-input mode (registry.h, struct tq_agent_stream; research
 * agent-clis.md 3.8, claude 2.1.197): `claude -p --input-format stream-json
 * --output-format stream-json --verbose` takes one JSON line per message,
 * {"type":"user","message":{"role":"user","content":[{"type":"text",
 * "text":...}]}}, and answers each with a turn that ends in its result line
 * (same session_id for the process's life); the system/init line comes
 * after the first message. A turn is interrupted, the process kept, by
 * {"type":"control_request","request_id":ID,"request":{"subtype":
 * "interrupt"}}: a control_response, then a result error_during_execution.
 * EOF on stdin ends it with exit 0 after the turn. No handshake: each turn
 * is its message line, and a process started for a session resumes it by
 * its command's --resume; a turn leaves no state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "agent_int.h"
#include "result_int.h"
#include "stream_int.h"

/* ------------------------------------------------------------------ */
/* Result                                                             */

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

static void read_obj(struct tq_result_parser *p, const cJSON *o)
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
/* Its own retries (issue 17.3)                                       */

/* claude: CLAUDE_CODE_MAX_RETRIES=0 for a plain command unless its
 * environment sets it. */
static int cap_retries(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err)
{
	int rc = 0;

	(void)q;
	(void)ar;
	/* an ask task has it from its profile's env, unless the user --unset
	 * it: that choice stands */
	if (t->agent == NULL && tq_env_get(env, "CLAUDE_CODE_MAX_RETRIES") == NULL)
		rc = tq_env_set(env, "CLAUDE_CODE_MAX_RETRIES=0", err);
	if (rc < 0)
		tq_err_prefix(err, "capping the agent's own retries");
	return rc;
}

/* ------------------------------------------------------------------ */
/* Stream input (issue 19)                                            */

/* The message line: the prompt as one text block. */
static void stream_begin(struct tq_result_parser *p)
{
	cJSON *o = cJSON_CreateObject(), *m, *content, *block;

	if (o == NULL || cJSON_AddStringToObject(o, "type", "user") == NULL ||
	    (m = cJSON_AddObjectToObject(o, "message")) == NULL ||
	    cJSON_AddStringToObject(m, "role", "user") == NULL ||
	    (content = cJSON_AddArrayToObject(m, "content")) == NULL ||
	    (block = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(o);
		return;
	}
	cJSON_AddItemToArray(content, block);
	if (cJSON_AddStringToObject(block, "type", "text") == NULL ||
	    cJSON_AddStringToObject(block, "text", p->st->prompt) == NULL) {
		cJSON_Delete(o);
		return;
	}
	tq_stream_write_json(p, o);
}

/* The interrupt control message; its request id one of the turn's. */
static int stream_interrupt(struct tq_result_parser *p)
{
	cJSON *o = cJSON_CreateObject(), *r;
	char id[TQ_RPC_ID_MAX];

	snprintf(id, sizeof(id), "%s%d", p->st->ids, ++p->st->n);
	if (o == NULL || cJSON_AddStringToObject(o, "type", "control_request") == NULL ||
	    cJSON_AddStringToObject(o, "request_id", id) == NULL ||
	    (r = cJSON_AddObjectToObject(o, "request")) == NULL ||
	    cJSON_AddStringToObject(r, "subtype", "interrupt") == NULL) {
		cJSON_Delete(o);
		return -1;
	}
	tq_stream_write_json(p, o);
	return 0;
}

static const char *const stream_args[] = { "--input-format", "stream-json", NULL };

/* The result line and the init line (the entry's needles). */
static const char *const needles[] = { "\"result\"", "\"init\"", NULL };

/* Every option of the one-shot command goes (its --resume, --model, MCP
 * flags); the prompt and what follows "--" do not. The turn's output is
 * what a one-shot run prints, read by the same reader. */
static const struct tq_agent_stream stream = {
	.args = stream_args,
	.keep_other = 1,
	.needles = needles,
	.begin = stream_begin,
	.read = read_obj,
	.interrupt = stream_interrupt,
};

/* ------------------------------------------------------------------ */
/* The entry                                                          */

/* needles (above): the multi-MB tool result lines of a run are skipped
 * after one scan. */
const struct tq_agent_def tq_agent_claude = {
	.name = "claude",
	.needles = needles,
	.read_obj = read_obj,
	.session_bad = tq_result_session_uuid,
	.cap_retries = cap_retries,
	.stream = &stream,
};

/*
 * test_stream.c - a warm turn's protocol (src/agent: result.h's
 * tq_result_parser_stream, acp.c, codex.c, rpc.c, stream.c): what a turn
 * writes to its agent process for what the process answers, line by line,
 * as the real CLIs answered (research agent-clis.md 4.1, 5.1, 6.1): the
 * handshake of a new process (quiet: not the turn's log), the session
 * resumed or made, the model, the prompt, the turn's result, usage and
 * session; the state a turn leaves for the next on the same process; the
 * agent's own requests answered; errors; the interrupt; gemini's wait
 * before loading a session made this minute; the stream-input commands.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>
#include <cjson/cJSON.h>

#include "harness.h"
#include "agent/agent.h"
#include "agent/profile.h"
#include "agent/result.h"
#include "common/sys.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                            */

/* The parser's pending input as one string ("" when none), taken. */
static char *input(struct tq_result_parser *p)
{
	char *buf = NULL;
	size_t len = 0;
	int64_t at = 0;
	int rc = tq_result_stream_input(p, &buf, &len, &at);

	assert_true(rc >= 0);
	if (rc == 0) {
		assert_int_equal(at, 0);
		return strdup("");
	}
	assert_int_equal(strlen(buf), len);
	return buf;
}

static void assert_no_input(struct tq_result_parser *p)
{
	char *s = input(p);

	assert_string_equal(s, "");
	free(s);
}

/* Input is pending but held: nothing now, a time to write it at. */
static void assert_held(struct tq_result_parser *p)
{
	char *buf = NULL;
	size_t len = 0;
	int64_t at = 0;

	assert_int_equal(tq_result_stream_input(p, &buf, &len, &at), 0);
	assert_null(buf);
	assert_true(at > tq_now_ms());
}

static int released(void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	int64_t at = 0;
	int rc = tq_result_stream_input(arg, &buf, &len, &at);

	free(buf);
	return rc == 1;
}

/* The one line pending, parsed; fails unless there is exactly one. */
static cJSON *one_line(struct tq_result_parser *p)
{
	char *s = input(p), *nl = strchr(s, '\n');
	cJSON *o;

	assert_non_null(nl);
	assert_string_equal(nl + 1, ""); /* nothing after the first line */
	o = cJSON_Parse(s);
	assert_non_null(o);
	free(s);
	return o;
}

static const char *str(const cJSON *o, const char *path)
{
	char buf[256], *save = NULL, *k;
	const cJSON *v = o;

	strlcpy(buf, path, sizeof(buf));
	for (k = strtok_r(buf, ".", &save); k != NULL && v != NULL; k = strtok_r(NULL, ".", &save))
		v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(k)) :
		    cJSON_GetObjectItemCaseSensitive(v, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A request line: its method and id checked; the line returned. */
static cJSON *request(struct tq_result_parser *p, const char *method, const char *id)
{
	cJSON *o = one_line(p);

	assert_string_equal(str(o, "jsonrpc"), "2.0");
	assert_string_equal(str(o, "method"), method);
	if (id != NULL)
		assert_string_equal(str(o, "id"), id);
	else
		assert_null(cJSON_GetObjectItem(o, "id"));
	return o;
}

static void feed(struct tq_result_parser *p, const char *line)
{
	tq_result_feed(p, line, strlen(line));
	tq_result_feed(p, "\n", 1);
}

static struct tq_result_parser *turn(const char *agent, const char *state, int fresh,
				     const char *resume, const char *model)
{
	struct tq_stream_turn t = { .prompt = "say \"hi\"", .cwd = "/w", .state = state,
				    .fresh = fresh, .resume = resume, .model = model,
				    .task = 9, .attempt = 2 };
	struct tq_result_parser *p = tq_result_parser_stream(agent, &t);

	assert_non_null(p);
	return p;
}

/* ------------------------------------------------------------------ */
/* The Agent Client Protocol (gemini --acp, opencode acp)             */

/* A new process, a new session: initialize, session/new, the prompt; the
 * handshake quiet; the result, tokens and model as gemini 0.61 gave them. */
static void test_acp_new_session(void **state)
{
	struct tq_result_parser *p = turn("gemini", "", 1, NULL, NULL);
	const char *hs = "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"result\":{\"protocolVersion\":1}}\n"
			 "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-2\",\"result\":{\"sessionId\":\"0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f\","
			 "\"models\":{\"currentModelId\":\"gemini-2.5-flash\"}}}\n"
			 "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
			 "\"0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f\",\"update\":{\"sessionUpdate\":"
			 "\"available_commands_update\",\"availableCommands\":[]}}}\n"
			 "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f\","
			 "\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":"
			 "\"text\",\"text\":\"Hello\"}}}}\n";
	struct tq_result r;
	cJSON *o;
	size_t took;

	(void)state;
	assert_true(tq_result_quiet(p));
	o = request(p, "initialize", "taskq-9-2-1");
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "params"),
						       "protocolVersion")));
	cJSON_Delete(o);
	/* fed at once: it stops after the line that ends the quiet start, the
	 * agent's available_commands_update after the new session */
	took = tq_result_feed_quiet(p, hs, strlen(hs));
	assert_int_equal(took, (size_t)(strstr(hs, "\"availableCommands\":[]}}}\n") -
					hs + strlen("\"availableCommands\":[]}}}\n")));
	assert_false(tq_result_quiet(p));
	tq_result_feed(p, hs + took, strlen(hs) - took);
	{
		char *s = input(p), *second = strchr(s, '\n') + 1;
		cJSON *a = cJSON_Parse(s), *b = cJSON_Parse(second);
		assert_string_equal(str(a, "method"), "session/new");
		assert_string_equal(str(a, "params.cwd"), "/w");
		assert_true(cJSON_IsArray(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "params"),
							      "mcpServers")));
		assert_string_equal(str(b, "method"), "session/prompt");
		assert_string_equal(str(b, "id"), "taskq-9-2-3");
		assert_string_equal(str(b, "params.sessionId"), "0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f");
		assert_string_equal(str(b, "params.prompt.0.type"), "text");
		assert_string_equal(str(b, "params.prompt.0.text"), "say \"hi\"");
		cJSON_Delete(a);
		cJSON_Delete(b);
		free(s);
	}
	assert_string_equal(tq_result_stream_state(p), "i 0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f");
	assert_false(tq_result_seen(p));
	feed(p, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		"\"0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		"{\"type\":\"text\",\"text\":\" there.\"}}}}");
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-3\",\"result\":{\"stopReason\":"
		"\"end_turn\",\"_meta\":{\"quota\":{\"token_count\":{\"input_tokens\":12,"
		"\"output_tokens\":6},\"model_usage\":[{\"model\":\"gemini-2.5-flash\","
		"\"token_count\":{\"input_tokens\":12,\"output_tokens\":6}}]}}}}");
	assert_true(tq_result_seen(p));
	tq_result_end(p, &r);
	assert_false(r.is_error);
	assert_string_equal(r.result, "Hello there.");
	assert_string_equal(r.subtype, "end_turn");
	assert_string_equal(r.agent_session, "0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f");
	assert_string_equal(r.model, "gemini-2.5-flash");
	assert_int_equal(r.input_tokens, 12);
	assert_int_equal(r.output_tokens, 6);
	assert_true(r.cost_usd < 0);
	assert_no_input(p);
	tq_result_parser_free(p);
}

/* A kept process: the prompt alone, on the session its state names. */
static void test_acp_kept(void **state)
{
	struct tq_result_parser *p = turn("opencode", "i ses_abc", 0, "ses_other", "m/x");
	struct tq_result r;
	cJSON *o;

	(void)state;
	assert_false(tq_result_quiet(p));
	o = request(p, "session/prompt", "taskq-9-2-1");
	assert_string_equal(str(o, "params.sessionId"), "ses_abc");
	cJSON_Delete(o);
	/* another turn's late answer, another session's text: not this turn's */
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-8-1-3\",\"result\":{\"stopReason\":\"end_turn\"}}");
	feed(p, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		"\"ses_zzz\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		"{\"type\":\"text\",\"text\":\"no\"}}}}");
	assert_false(tq_result_seen(p));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"result\":{\"stopReason\":\"end_turn\","
		"\"usage\":{\"inputTokens\":12,\"outputTokens\":6,\"thoughtTokens\":2,"
		"\"cachedReadTokens\":3,\"totalTokens\":23},\"_meta\":{}}}");
	tq_result_end(p, &r);
	assert_true(r.has_result);
	assert_false(r.is_error);
	assert_string_equal(r.agent_session, "ses_abc");
	assert_int_equal(r.input_tokens, 12);
	assert_int_equal(r.output_tokens, 8);
	assert_int_equal(r.cache_read_tokens, 3);
	assert_string_equal(tq_result_stream_state(p), "i ses_abc");
	tq_result_parser_free(p);
}

/* A new process resumes: session/load (its replayed history is not the
 * turn's text), the model by session/set_config_option (opencode). */
static void test_acp_load_and_model(void **state)
{
	struct tq_result_parser *p = turn("opencode", "", 1, "ses_old", "mockant/m2");
	struct tq_result r;
	cJSON *o;

	(void)state;
	cJSON_Delete(request(p, "initialize", "taskq-9-2-1"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"result\":{\"protocolVersion\":1}}");
	o = request(p, "session/load", "taskq-9-2-2");
	assert_string_equal(str(o, "params.sessionId"), "ses_old");
	assert_string_equal(str(o, "params.cwd"), "/w");
	cJSON_Delete(o);
	feed(p, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		"\"ses_old\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		"{\"type\":\"text\",\"text\":\"an old answer\"}}}}");
	assert_true(tq_result_quiet(p));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-2\",\"result\":{\"configOptions\":[{\"id\":"
		"\"model\",\"currentValue\":\"mockant/claude-mock\"}]}}");
	o = request(p, "session/set_config_option", "taskq-9-2-3");
	assert_string_equal(str(o, "params.sessionId"), "ses_old");
	assert_string_equal(str(o, "params.configId"), "model");
	assert_string_equal(str(o, "params.value"), "mockant/m2");
	cJSON_Delete(o);
	assert_true(tq_result_quiet(p));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-3\",\"result\":{\"configOptions\":[]}}");
	/* the prompt waits for the end of the agent's start; a history
	 * replayed after the load's answer (gemini) is not the turn's text */
	assert_held(p);
	feed(p, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		"\"ses_old\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		"{\"type\":\"text\",\"text\":\"a replayed answer\"}}}}");
	assert_true(tq_result_quiet(p));
	feed(p, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":"
		"\"ses_old\",\"update\":{\"sessionUpdate\":\"available_commands_update\"}}}");
	assert_false(tq_result_quiet(p));
	cJSON_Delete(request(p, "session/prompt", "taskq-9-2-4"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-4\",\"result\":{\"stopReason\":\"end_turn\"}}");
	tq_result_end(p, &r);
	assert_false(r.is_error);
	assert_null(r.result); /* no text of this turn: not the replayed one */
	assert_string_equal(r.agent_session, "ses_old");
	assert_string_equal(r.model, "mockant/m2");
	tq_result_parser_free(p);
}

/* A new session whose agent never says its start is over: the prompt goes
 * after a bound, and then the turn is loud. */
static void test_acp_settle_bound(void **state)
{
	struct tq_result_parser *p = turn("opencode", "i", 0, NULL, NULL);

	(void)state;
	cJSON_Delete(request(p, "session/new", "taskq-9-2-1"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"result\":{\"sessionId\":\"ses_n\"}}");
	assert_held(p);
	assert_true(tq_result_quiet(p));
	assert_true(th_wait_for(released, p, 10000));
	assert_false(tq_result_quiet(p));
	tq_result_parser_free(p);
}

/* Errors: the prompt's (its message the result), a load's (what failed,
 * the message, its details), a new session's; the state after each. */
static void test_acp_errors(void **state)
{
	struct tq_result_parser *p = turn("gemini", "i s-1", 0, NULL, NULL);
	struct tq_result r;

	(void)state;
	cJSON_Delete(request(p, "session/prompt", "taskq-9-2-1"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"error\":{\"code\":429,\"message\":"
		"\"Resource has been exhausted (e.g. check quota).\"}}");
	tq_result_end(p, &r);
	assert_true(r.is_error);
	assert_string_equal(r.result, "Resource has been exhausted (e.g. check quota).");
	assert_string_equal(tq_result_stream_state(p), "i s-1");
	tq_result_parser_free(p);

	p = turn("gemini", "", 1, "163a10a6-b4a7-41a1-86a0-b9441639843a", NULL);
	cJSON_Delete(request(p, "initialize", "taskq-9-2-1"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"result\":{}}");
	cJSON_Delete(request(p, "session/load", "taskq-9-2-2"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-2\",\"error\":{\"code\":-32603,\"message\":"
		"\"Internal error\",\"data\":{\"details\":\"Invalid session identifier\"}}}");
	tq_result_end(p, &r);
	assert_true(r.is_error);
	assert_string_equal(r.result, "session/load 163a10a6-b4a7-41a1-86a0-b9441639843a: "
			    "Internal error: Invalid session identifier");
	assert_string_equal(tq_result_stream_state(p), "i"); /* started, no session */
	assert_no_input(p);
	tq_result_parser_free(p);

	/* "i": the next turn opens a session first, without initialize */
	p = turn("gemini", "i", 0, NULL, NULL);
	assert_true(tq_result_quiet(p));
	cJSON_Delete(request(p, "session/new", "taskq-9-2-1"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"error\":{\"code\":-32000,"
		"\"message\":\"Authentication required.\"}}");
	tq_result_end(p, &r);
	assert_string_equal(r.result, "session/new: Authentication required.");
	tq_result_parser_free(p);
}

/* The interrupt: not in the handshake; session/cancel during the prompt,
 * whose answer says cancelled. */
static void test_acp_interrupt(void **state)
{
	struct tq_result_parser *p = turn("gemini", "", 1, NULL, NULL);
	struct tq_result r;
	cJSON *o;

	(void)state;
	cJSON_Delete(request(p, "initialize", "taskq-9-2-1"));
	assert_int_equal(tq_result_interrupt(p), -1);
	tq_result_parser_free(p);

	p = turn("gemini", "i s-1", 0, NULL, NULL);
	cJSON_Delete(request(p, "session/prompt", "taskq-9-2-1"));
	assert_int_equal(tq_result_interrupt(p), 0);
	o = request(p, "session/cancel", NULL);
	assert_string_equal(str(o, "params.sessionId"), "s-1");
	cJSON_Delete(o);
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"taskq-9-2-1\",\"result\":{\"stopReason\":\"cancelled\"}}");
	tq_result_end(p, &r);
	assert_true(r.is_error);
	assert_string_equal(r.subtype, "cancelled");
	tq_result_parser_free(p);
}

/* The agent's own requests: a permission refused by its reject option,
 * anything else "method not found", each answered with its own id. */
static void test_acp_agent_requests(void **state)
{
	struct tq_result_parser *p = turn("gemini", "i s-1", 0, NULL, NULL);
	cJSON *o;

	(void)state;
	cJSON_Delete(request(p, "session/prompt", "taskq-9-2-1"));
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"session/request_permission\",\"params\":"
		"{\"sessionId\":\"s-1\",\"options\":[{\"optionId\":\"proceed_always\",\"kind\":"
		"\"allow_always\"},{\"optionId\":\"proceed_once\",\"kind\":\"allow_once\"},"
		"{\"optionId\":\"cancel\",\"name\":\"Reject\",\"kind\":\"reject_once\"}]}}");
	o = one_line(p);
	assert_int_equal(cJSON_GetObjectItem(o, "id")->valueint, 0);
	assert_string_equal(str(o, "result.outcome.outcome"), "selected");
	assert_string_equal(str(o, "result.outcome.optionId"), "cancel");
	cJSON_Delete(o);
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":\"x7\",\"method\":\"fs/read_text_file\",\"params\":{}}");
	o = one_line(p);
	assert_string_equal(str(o, "id"), "x7");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "code")->valueint,
			 -32601);
	cJSON_Delete(o);
	/* no reject option: the permission is cancelled */
	feed(p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/request_permission\",\"params\":"
		"{\"options\":[{\"optionId\":\"ok\",\"kind\":\"allow_once\"}]}}");
	o = one_line(p);
	assert_string_equal(str(o, "result.outcome.outcome"), "cancelled");
	assert_null(str(o, "result.outcome.optionId"));
	cJSON_Delete(o);
	assert_false(tq_result_seen(p));
	tq_result_parser_free(p);
}

/* gemini loses a session loaded in the minute its chat file was made
 * (research 4.1): such a load waits until a second into the next minute;
 * one made earlier is loaded at once. */
static void test_gemini_load_waits(void **state)
{
	char *home = th_tempdir(), dir[512], path[700], now[32], envh[600];
	const char *sid = "163a10a6-b4a7-41a1-86a0-b9441639843a";
	char *envp[] = { envh, NULL };
	struct tq_stream_turn t = { .prompt = "p", .cwd = "/w", .fresh = 1, .resume = sid,
				    .envp = envp, .task = 1, .attempt = 1 };
	struct tq_result_parser *p;
	char *buf = NULL;
	size_t len;
	int64_t at = 0, before, after;
	time_t secs;
	struct tm tm;
	int fd;

	(void)state;
	snprintf(envh, sizeof(envh), "HOME=%s", home);
	snprintf(dir, sizeof(dir), "%s/.gemini/tmp/proj/chats", home);
	snprintf(path, sizeof(path), "%s/.gemini", home);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.gemini/tmp", home);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.gemini/tmp/proj", home);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	/* a file of this minute; again if the minute turned meanwhile */
	do {
		before = tq_now_ms() / 60000;
		secs = (time_t)(before * 60);
		gmtime_r(&secs, &tm);
		strftime(now, sizeof(now), "%Y-%m-%dT%H-%M", &tm);
		snprintf(path, sizeof(path), "%s/session-%s-163a10a6.jsonl", dir, now);
		fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
		p = tq_result_parser_stream("gemini", &t);
		assert_non_null(p);
		assert_int_equal(tq_result_stream_input(p, &buf, &len, &at), 0);
		after = tq_now_ms() / 60000;
		if (after != before) {
			tq_result_parser_free(p);
			unlink(path);
		}
	} while (after != before);
	assert_int_equal(at, (before + 1) * 60000 + 1000);
	assert_true(tq_result_quiet(p));
	tq_result_parser_free(p);
	/* made a minute earlier: no wait */
	unlink(path);
	secs = (time_t)((before - 1) * 60);
	gmtime_r(&secs, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H-%M", &tm);
	snprintf(path, sizeof(path), "%s/session-%s-163a10a6.jsonl", dir, now);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	p = tq_result_parser_stream("gemini", &t);
	assert_int_equal(tq_result_stream_input(p, &buf, &len, &at), 1);
	assert_non_null(strstr(buf, "\"initialize\""));
	free(buf);
	tq_result_parser_free(p);
	/* a new session (nothing to load) never waits */
	t.resume = NULL;
	p = tq_result_parser_stream("gemini", &t);
	assert_int_equal(tq_result_stream_input(p, &buf, &len, &at), 1);
	free(buf);
	tq_result_parser_free(p);
	th_rmtree(home);
}

/* ------------------------------------------------------------------ */
/* Codex's app-server                                                 */

/* A new process: initialize, initialized, thread/start with exec's
 * approvals and sandbox and the model asked, turn/start; then the turn's
 * text, usage and end as codex 0.169 wrote them (no "jsonrpc"). */
static void test_codex_new_thread(void **state)
{
	char *cmd[] = { "codex", "exec", "--json", "-s", "workspace-write", "--", "p" };
	struct tq_stream_turn t = { .prompt = "say \"hi\"", .cwd = "/w", .fresh = 1,
				    .model = "gpt-mock", .argv = cmd, .argc = 7,
				    .task = 9, .attempt = 2 };
	struct tq_result_parser *p = tq_result_parser_stream("codex", &t);
	const char *tid = "01a23397-8b85-7ce0-b32a-357bf48eeb9b";
	struct tq_result r;
	char *s, line[1024];
	cJSON *o;

	(void)state;
	assert_non_null(p);
	assert_true(tq_result_quiet(p));
	o = request(p, "initialize", "taskq-9-2-1");
	assert_string_equal(str(o, "params.clientInfo.name"), "taskq");
	cJSON_Delete(o);
	feed(p, "{\"id\":\"taskq-9-2-1\",\"result\":{\"userAgent\":\"taskq/0.169.0\"}}");
	s = input(p);
	{
		char *second = strchr(s, '\n') + 1;
		cJSON *a = cJSON_Parse(s), *b = cJSON_Parse(second);
		assert_string_equal(str(a, "method"), "initialized");
		assert_null(cJSON_GetObjectItem(a, "id"));
		assert_string_equal(str(b, "method"), "thread/start");
		assert_string_equal(str(b, "id"), "taskq-9-2-2");
		assert_string_equal(str(b, "params.cwd"), "/w");
		assert_string_equal(str(b, "params.approvalPolicy"), "never");
		assert_string_equal(str(b, "params.sandbox"), "workspace-write");
		assert_string_equal(str(b, "params.model"), "gpt-mock");
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	free(s);
	snprintf(line, sizeof(line), "{\"id\":\"taskq-9-2-2\",\"result\":{\"thread\":{\"id\":\"%s\"},"
		 "\"model\":\"gpt-mock\"}}", tid);
	feed(p, line);
	o = request(p, "turn/start", "taskq-9-2-3");
	assert_string_equal(str(o, "params.threadId"), tid);
	assert_string_equal(str(o, "params.input.0.text"), "say \"hi\"");
	cJSON_Delete(o);
	assert_true(tq_result_quiet(p)); /* until turn/start's answer */
	feed(p, "{\"id\":\"taskq-9-2-3\",\"result\":{\"turn\":{\"id\":\"turn-1\",\"status\":"
		"\"inProgress\"}}}");
	assert_false(tq_result_quiet(p));
	snprintf(line, sizeof(line), "{\"method\":\"item/completed\",\"params\":{\"item\":{\"type\":"
		 "\"agentMessage\",\"id\":\"msg_1\",\"text\":\"Hello from the mock.\"},\"threadId\":"
		 "\"%s\",\"turnId\":\"turn-1\"}}", tid);
	feed(p, line);
	snprintf(line, sizeof(line), "{\"method\":\"thread/tokenUsage/updated\",\"params\":{"
		 "\"threadId\":\"%s\",\"turnId\":\"turn-1\",\"tokenUsage\":{\"total\":{\"inputTokens\":"
		 "99},\"last\":{\"inputTokens\":12,\"cachedInputTokens\":2,\"outputTokens\":6}}}}", tid);
	feed(p, line);
	feed(p, line);
	assert_false(tq_result_seen(p));
	snprintf(line, sizeof(line), "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"%s\","
		 "\"turn\":{\"id\":\"turn-1\",\"items\":[],\"status\":\"completed\",\"error\":null,"
		 "\"durationMs\":111}}}", tid);
	feed(p, line);
	assert_true(tq_result_seen(p));
	tq_result_end(p, &r);
	assert_false(r.is_error);
	assert_string_equal(r.result, "Hello from the mock.");
	assert_string_equal(r.subtype, "completed");
	assert_string_equal(r.agent_session, tid);
	assert_string_equal(r.model, "gpt-mock");
	assert_int_equal(r.input_tokens, 20);
	assert_int_equal(r.cache_read_tokens, 4);
	assert_int_equal(r.output_tokens, 12);
	assert_int_equal(r.duration_ms, 111);
	snprintf(line, sizeof(line), "i %s", tid);
	assert_string_equal(tq_result_stream_state(p), line);
	assert_no_input(p);
	tq_result_parser_free(p);
}

/* A kept process: turn/start alone. The interrupt asked before turn/start
 * answered goes once its id is known; the turn ends interrupted. A failed
 * turn: its error's message is the result. A resumed thread. */
static void test_codex_kept_interrupt_error(void **state)
{
	struct tq_result_parser *p = turn("codex", "i th-1", 0, NULL, NULL);
	struct tq_result r;
	cJSON *o;

	(void)state;
	assert_true(tq_result_quiet(p)); /* until turn/start's answer */
	cJSON_Delete(request(p, "turn/start", "taskq-9-2-1"));
	assert_int_equal(tq_result_interrupt(p), 0);
	assert_no_input(p); /* no turn id yet */
	feed(p, "{\"id\":\"taskq-9-2-1\",\"result\":{\"turn\":{\"id\":\"turn-7\"}}}");
	o = request(p, "turn/interrupt", "taskq-9-2-2");
	assert_string_equal(str(o, "params.threadId"), "th-1");
	assert_string_equal(str(o, "params.turnId"), "turn-7");
	cJSON_Delete(o);
	feed(p, "{\"id\":\"taskq-9-2-2\",\"result\":{}}");
	assert_false(tq_result_seen(p));
	feed(p, "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"th-1\",\"turn\":{\"id\":"
		"\"turn-7\",\"items\":[],\"status\":\"interrupted\",\"error\":null}}}");
	tq_result_end(p, &r);
	assert_true(r.is_error);
	assert_string_equal(r.subtype, "interrupted");
	tq_result_parser_free(p);

	p = turn("codex", "i th-1", 0, NULL, NULL);
	cJSON_Delete(request(p, "turn/start", "taskq-9-2-1"));
	feed(p, "{\"id\":\"taskq-9-2-1\",\"result\":{\"turn\":{\"id\":\"turn-8\"}}}");
	/* another turn's end is not this one's */
	feed(p, "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"th-1\",\"turn\":{\"id\":"
		"\"turn-7\",\"status\":\"completed\"}}}");
	assert_false(tq_result_seen(p));
	feed(p, "{\"method\":\"error\",\"params\":{\"error\":{\"message\":\"exceeded retry limit, "
		"last status: 429 Too Many Requests\",\"codexErrorInfo\":{"
		"\"responseTooManyFailedAttempts\":{\"httpStatusCode\":429}}},\"willRetry\":false,"
		"\"threadId\":\"th-1\",\"turnId\":\"turn-8\"}}");
	feed(p, "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"th-1\",\"turn\":{\"id\":"
		"\"turn-8\",\"status\":\"failed\",\"error\":{\"message\":\"exceeded retry limit, last "
		"status: 429 Too Many Requests\"}}}}");
	tq_result_end(p, &r);
	assert_true(r.is_error);
	assert_string_equal(r.result, "exceeded retry limit, last status: 429 Too Many Requests");
	assert_string_equal(r.subtype, "failed");
	tq_result_parser_free(p);

	/* a new process resumes: initialize, then thread/resume without its
	 * turns */
	p = turn("codex", "", 1, "th-old", NULL);
	cJSON_Delete(request(p, "initialize", "taskq-9-2-1"));
	assert_int_equal(tq_result_interrupt(p), -1); /* in its start */
	feed(p, "{\"id\":\"taskq-9-2-1\",\"result\":{}}");
	{
		char *s = input(p), *second = strchr(s, '\n') + 1;
		cJSON *b = cJSON_Parse(second);
		assert_string_equal(str(b, "method"), "thread/resume");
		assert_string_equal(str(b, "params.threadId"), "th-old");
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "params"),
							      "excludeTurns")));
		assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "params"), "model"));
		cJSON_Delete(b);
		free(s);
	}
	feed(p, "{\"id\":\"taskq-9-2-2\",\"error\":{\"code\":-32600,\"message\":\"no rollout "
		"found for thread id th-old\"}}");
	tq_result_end(p, &r);
	assert_string_equal(r.result, "thread/resume th-old: no rollout found for thread id th-old");
	assert_string_equal(tq_result_stream_state(p), "i");
	tq_result_parser_free(p);
}

/* An approval it asks is declined; any other request refused. */
static void test_codex_agent_requests(void **state)
{
	struct tq_result_parser *p = turn("codex", "i th-1", 0, NULL, NULL);
	cJSON *o;

	(void)state;
	cJSON_Delete(request(p, "turn/start", "taskq-9-2-1"));
	feed(p, "{\"id\":4,\"method\":\"item/commandExecution/requestApproval\",\"params\":{}}");
	o = one_line(p);
	assert_int_equal(cJSON_GetObjectItem(o, "id")->valueint, 4);
	assert_string_equal(str(o, "result.decision"), "decline");
	cJSON_Delete(o);
	feed(p, "{\"id\":5,\"method\":\"item/tool/requestUserInput\",\"params\":{}}");
	o = one_line(p);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "code")->valueint,
			 -32601);
	cJSON_Delete(o);
	tq_result_parser_free(p);
}

/* ------------------------------------------------------------------ */
/* The stream-input commands                                          */

static void assert_argv(const char *agent, char **cmd, size_t n, const char *prompt,
			const char *const *want)
{
	struct tq_agent_run ar = TQ_AGENT_RUN_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char **v = NULL;
	size_t got = 0, k = 0;

	strcpy(ar.parser, agent);
	ar.argv = cmd;
	ar.argc = n;
	assert_int_equal(tq_agent_stream_argv(&ar, prompt, &v, &got, &err), 0);
	for (; want[k] != NULL; k++) {
		assert_true(k < got);
		assert_string_equal(v[k], want[k]);
	}
	assert_int_equal(got, k);
	assert_null(v[got]);
	tq_profile_argv_free(v);
}

/* gemini: --acp, its options but the output format, the prompt and the
 * session to resume; opencode: acp, run's options gone; codex: app-server
 * with exec's -c overrides only. */
static void test_stream_commands(void **state)
{
	char *gem[] = { "gemini", "--output-format", "stream-json", "--model=g2",
			"--resume=163a10a6-b4a7-41a1-86a0-b9441639843a",
			"--allowed-mcp-server-names=taskq-none", "-y", "--prompt=the prompt" };
	static const char *const gem_want[] = { "gemini", "--acp", "--model=g2",
						"--allowed-mcp-server-names=taskq-none", "-y",
						NULL };
	char *gem2[] = { "gemini", "-o", "json", "-m", "g3", "-r", "latest", "-p", "hi" };
	static const char *const gem2_want[] = { "gemini", "--acp", "-m", "g3", NULL };
	char *cx[] = { "codex", "-c", "model_providers.mock.request_max_retries=0", "exec",
		       "--json", "--skip-git-repo-check", "-m", "gpt-5", "-s", "read-only",
		       "--config=x=1", "resume", "01a23397-8b85-7ce0-b32a-357bf48eeb9b", "--",
		       "the prompt" };
	static const char *const cx_want[] = { "codex", "app-server", "-c",
					       "model_providers.mock.request_max_retries=0",
					       "--config=x=1", NULL };
	char *oc[] = { "opencode", "run", "--format", "json", "--model=a/b", "--session=ses_x",
		       "--log-level", "DEBUG", "--print-logs", "--", "the prompt" };
	static const char *const oc_want[] = { "opencode", "acp", "--log-level", "DEBUG",
					       "--print-logs", NULL };

	(void)state;
	assert_argv("gemini", gem, 8, "the prompt", gem_want);
	assert_argv("gemini", gem2, 9, "hi", gem2_want);
	assert_argv("opencode", oc, 11, "the prompt", oc_want);
	assert_argv("codex", cx, 15, "the prompt", cx_want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acp_new_session),
		cmocka_unit_test(test_acp_kept),
		cmocka_unit_test(test_acp_load_and_model),
		cmocka_unit_test(test_acp_settle_bound),
		cmocka_unit_test(test_acp_errors),
		cmocka_unit_test(test_acp_interrupt),
		cmocka_unit_test(test_acp_agent_requests),
		cmocka_unit_test(test_gemini_load_waits),
		cmocka_unit_test(test_codex_new_thread),
		cmocka_unit_test(test_codex_kept_interrupt_error),
		cmocka_unit_test(test_codex_agent_requests),
		cmocka_unit_test(test_stream_commands),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

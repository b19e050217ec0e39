/*
 * codex.c - Codex CLI (codex), its registry entry (registry.h): its result
 * read from exec --json, a session id a uuid (its thread ids, v7), its own
 * retries capped by -c options, in an isolated workspace a CODEX_HOME
 * without the user's MCP servers, the model its config.toml names.
 *
 * Its result (result.h): thread.started (thread_id: the session),
 * item.completed of type agent_message (the last one is the result text),
 * turn.completed (usage, summed; one turn each), turn.failed (is_error,
 * its message the result). Input tokens are input_tokens -
 * cached_input_tokens. No cost, no duration, no model (conf_model below).
 *
 * Its stream-input mode (research agent-clis.md 5.1, codex 0.169.0):
 * codex app-server, JSON-RPC over stdio (its lines carry no "jsonrpc"):
 * a new process's initialize and initialized, then thread/resume of the
 * session to resume or thread/start (cwd, approvals never, exec's sandbox,
 * the model asked), then turn/start a message, whose turn/completed ends
 * it (status completed, failed with its error, interrupted); the text is
 * the last agentMessage item, the usage the turn's tokenUsage "last"
 * counts summed. The interrupt is turn/interrupt of the turn's id (from
 * turn/start's answer). No cost.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/sys.h"
#include "agent.h"
#include "agent_int.h"
#include "result_int.h"
#include "stream_int.h"

/* Its CODEX_HOME in an isolated workspace: the user's, without its MCP
 * servers (issue 17.1); a name sources may not take. */
#define WS_HOME ".taskq-codex-home"
/* Its provider's request_max_retries and stream_max_retries on every run,
 * isolated or not (issue 17.3). */
#define MAX_RETRIES 0

/* ------------------------------------------------------------------ */
/* Result                                                             */

static void read_obj(struct tq_result_parser *p, const cJSON *o)
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
/* Its config.toml                                                    */

/*
 * The string value of a top-level key of a TOML file (before its first
 * table header): `key = "value"` or `key = 'value'`, comments and blank
 * lines skipped. Enough for codex's config.toml, whose model_provider and
 * model are plain strings; anything else is "not found" (NULL). malloc'd.
 */
static char *toml_top_string(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p != NULL && *p != '\0') {
		const char *line = p, *nl = strchr(p, '\n'), *v;
		size_t n;

		p = nl != NULL ? nl + 1 : NULL;
		line += strspn(line, " \t");
		if (*line == '[')
			return NULL; /* the first table: no more top-level keys */
		if (strncmp(line, key, klen) != 0)
			continue;
		v = line + klen;
		v += strspn(v, " \t");
		if (*v++ != '=')
			continue;
		v += strspn(v, " \t");
		if (*v != '"' && *v != '\'')
			return NULL;
		n = strcspn(v + 1, *v == '"' ? "\"\\\n" : "'\n");
		if (v[1 + n] != *v)
			return NULL; /* escapes or a multi-line string: not ours to read */
		return strndup(v + 1, n);
	}
	return NULL;
}

/* The user's codex home as the task sees it: $CODEX_HOME, else ~/.codex. */
static int codex_home(const struct tq_env *env, char *buf, size_t n)
{
	const char *ch = tq_env_get(env, "CODEX_HOME"), *home = tq_env_get(env, "HOME");
	int k;

	if (ch != NULL && ch[0] == '/')
		k = snprintf(buf, n, "%s", ch);
	else if (home != NULL && home[0] == '/')
		k = snprintf(buf, n, "%s/.codex", home);
	else
		return -1;
	return k > 0 && (size_t)k < n ? 0 : -1;
}

/* Providers codex 0.169 will not let a config redefine ("Built-in providers
 * cannot be overridden"): their retries cannot be capped. */
static int codex_builtin_provider(const char *p)
{
	static const char *const builtin[] = { "openai", "oss", "ollama", "lmstudio", NULL };

	for (size_t i = 0; builtin[i] != NULL; i++)
		if (strcmp(p, builtin[i]) == 0)
			return 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Its own retries (issue 17.3)                                       */

/*
 * codex: its provider's request_max_retries and stream_max_retries to 0
 * (30 requests for a 503 by default), by `-c` after the program name (a
 * global option, before the subcommand; a later -c of the user's wins).
 * The provider is the config's model_provider; the built-in "openai" (the
 * default) cannot be capped.
 */
static int cap_retries(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], a[192], b[192], *text, *prov;
	char *const *argv = ar->argv != NULL ? ar->argv : t->argv;
	size_t argc = ar->argv != NULL ? ar->argc : t->argc;
	char *extra[4];
	int rc = 0;

	(void)q;
	if (codex_home(env, dir, sizeof(dir)) < 0 ||
	    snprintf(path, sizeof(path), "%s/config.toml", dir) >= (int)sizeof(path) ||
	    (text = tq_cliconf_read(path, TQ_AGENT_CONFIG_MAX)) == NULL)
		return 0; /* no config: the built-in openai provider */
	prov = toml_top_string(text, "model_provider");
	free(text);
	if (prov == NULL || codex_builtin_provider(prov) ||
	    strspn(prov, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
	    strlen(prov) || strlen(prov) > 100) {
		free(prov);
		return 0;
	}
	snprintf(a, sizeof(a), "model_providers.%s.request_max_retries=%d", prov,
		 MAX_RETRIES);
	snprintf(b, sizeof(b), "model_providers.%s.stream_max_retries=%d", prov,
		 MAX_RETRIES);
	extra[0] = "-c";
	extra[1] = a;
	extra[2] = "-c";
	extra[3] = b;
	rc = tq_cliconf_argv_insert(ar, argv, argc, extra, 4, err);
	free(prov);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Its MCP servers hidden (issue 17.1)                                */

/* The key a TOML table header names first ("[mcp_servers.x]" and
 * "[ \"mcp_servers\" . x ]" both give mcp_servers), into buf; 0 if line
 * is no header. */
static int toml_header_key(const char *line, char *buf, size_t n)
{
	const char *p = line + strspn(line, " \t");
	size_t len;

	if (*p != '[')
		return 0;
	p += p[1] == '[' ? 2 : 1;
	p += strspn(p, " \t");
	if (*p == '"' || *p == '\'') {
		len = strcspn(p + 1, *p == '"' ? "\"" : "'");
		p++;
	} else {
		len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");
	}
	if (len >= n)
		len = n - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return 1;
}

/* A key/value line whose key starts with the key mcp_servers
 * ("mcp_servers = {...}", "mcp_servers.x.command = ..."). */
static int toml_mcp_key(const char *line)
{
	const char *p = line + strspn(line, " \t");

	if (*p == '"' || *p == '\'')
		p++;
	if (strncmp(p, "mcp_servers", 11) != 0)
		return 0;
	p += 11;
	if (*p == '"' || *p == '\'')
		p++;
	p += strspn(p, " \t");
	return *p == '.' || *p == '=';
}

/* Bracket depth change of a line's value outside strings, and whether it
 * opens or closes a multi-line string (an odd number of """ or '''). */
static int toml_depth(const char *line, int *ml_toggle)
{
	int depth = 0, in = 0;
	char q = 0;

	*ml_toggle = 0;
	for (const char *p = line; *p != '\0' && *p != '\n'; p++) {
		if ((strncmp(p, "\"\"\"", 3) == 0 || strncmp(p, "'''", 3) == 0)) {
			*ml_toggle ^= 1;
			p += 2;
			continue;
		}
		if (in) {
			if (*p == '\\' && q == '"' && p[1] != '\0')
				p++;
			else if (*p == q)
				in = 0;
		} else if (*p == '"' || *p == '\'') {
			in = 1;
			q = *p;
		} else if (*p == '#') {
			break;
		} else if (*p == '[' || *p == '{') {
			depth++;
		} else if (*p == ']' || *p == '}') {
			depth--;
		}
	}
	return depth;
}

/*
 * A codex config.toml without its MCP servers: every [mcp_servers...] table
 * (and [[...]] array of tables) and every mcp_servers key of the root
 * table, with the lines their values continue on, left out; the rest kept
 * byte for byte. malloc'd; NULL when out of memory.
 */
static char *toml_without_mcp(const char *text)
{
	size_t n = strlen(text), w = 0;
	char *out = malloc(n + 1), key[64];
	const char *p = text;
	int skip_table = 0, root = 1, ml = 0, skip_value = 0, depth = 0;

	if (out == NULL)
		return NULL;
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl != NULL ? (size_t)(nl - p) + 1 : strlen(p);
		int drop, tog, d;

		if (ml || skip_value) {
			/* inside a value that began on an earlier line */
			drop = skip_value || skip_table;
			d = toml_depth(p, &tog);
			if (tog)
				ml = !ml;
			if (skip_value && !ml && (depth += d) <= 0)
				skip_value = 0;
		} else if (toml_header_key(p, key, sizeof(key))) {
			skip_table = strcmp(key, "mcp_servers") == 0;
			root = 0;
			drop = skip_table;
		} else {
			drop = skip_table || (root && toml_mcp_key(p));
			d = toml_depth(p, &tog);
			if (tog)
				ml = 1;
			if (drop && (d > 0 || tog)) {
				skip_value = 1;
				depth = d;
			}
		}
		if (!drop) {
			memcpy(out + w, p, len);
			w += len;
		}
		p += len;
	}
	out[w] = '\0';
	return out;
}

/*
 * codex --isolate: the user's MCP servers hidden (codex 0.169 ignores
 * `-c mcp_servers={}`: a server of ~/.codex/config.toml starts all the
 * same). CODEX_HOME names a private copy of the user's codex home in the
 * workspace dir (WS_HOME: in the workspace, whose path is
 * the same for every task of a --session, because codex records a
 * session's file by its path under CODEX_HOME and looks for it there to
 * resume):
 * config.toml without its MCP servers (its provider, model, projects and
 * the rest kept), and every other entry (auth.json, sessions, the state
 * databases, skills) a symlink to the user's, so that login, sessions and
 * --resume stay the user's (codex writes auth.json through the link, and
 * its lock beside the real file). Nothing to do when the user's config
 * names no MCP server.
 */
static int isolate_codex(const struct tq_env *env, int dfd, const char *dir,
			 struct tq_env *out_env, struct tq_err *err)
{
	char user[PATH_MAX], path[PATH_MAX + 16], *text = NULL, *kept = NULL, *kv = NULL;
	int rc = 0;

	if (codex_home(env, user, sizeof(user)) < 0 ||
	    snprintf(path, sizeof(path), "%s/config.toml", user) >= (int)sizeof(path) ||
	    (text = tq_cliconf_read(path, TQ_AGENT_CONFIG_MAX)) == NULL ||
	    strstr(text, "mcp_servers") == NULL)
		goto out;
	if ((kept = toml_without_mcp(text)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	/* sessions must outlive the copy: ~/.codex/sessions */
	if ((rc = tq_cliconf_overlay(dfd, dir, WS_HOME, user, "sessions", NULL,
				     "config.toml", kept, "codex home", err)) < 0)
		goto out;
	if (asprintf(&kv, "CODEX_HOME=%s/" WS_HOME, dir) < 0) {
		kv = NULL;
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	rc = tq_env_set(out_env, kv, err);
out:
	free(text);
	free(kept);
	free(kv);
	if (rc < 0)
		tq_err_prefix(err, "hiding your MCP servers from codex");
	return rc;
}

/* codex in an isolated workspace: its CODEX_HOME without MCP servers. */
static int isolate(struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err)
{
	int rc, dfd;

	if ((dfd = tq_open(ar->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return tq_err_sys(err, "open %s", ar->workspace);
	rc = isolate_codex(env, dfd, ar->workspace, env, err);
	tq_close(dfd);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The model its config names (issue 17.9)                            */

/* codex's `-c model=V` / `--config model=V` (the last one): V is TOML, and
 * a bare word is taken as a string, as codex does. malloc'd, or NULL. */
static char *codex_cli_model(char *const *v, size_t n)
{
	const char *val = NULL;

	for (size_t i = 1; i < n; i++) {
		const char *kv = NULL, *p;

		if (strcmp(v[i], "--") == 0)
			break;
		if ((strcmp(v[i], "-c") == 0 || strcmp(v[i], "--config") == 0) && i + 1 < n)
			kv = v[++i];
		else if (strncmp(v[i], "--config=", 9) == 0)
			kv = v[i] + 9;
		if (kv == NULL)
			continue;
		p = kv + strspn(kv, " \t");
		if (strncmp(p, "model", 5) != 0)
			continue;
		p += 5;
		p += strspn(p, " \t");
		if (*p == '=')
			val = p + 1;
	}
	if (val == NULL)
		return NULL;
	val += strspn(val, " \t");
	if (*val == '"' || *val == '\'') {
		size_t k = strcspn(val + 1, *val == '"' ? "\"\\" : "'");

		return val[1 + k] == *val && k > 0 ? strndup(val + 1, k) : NULL;
	}
	return *val != '\0' ? strndup(val, strcspn(val, " \t")) : NULL;
}

/* A top-level string of the TOML file dir/name, malloc'd, or NULL. */
static char *toml_file_string(const char *dir, const char *name, const char *key)
{
	char path[PATH_MAX];
	char *text, *v;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    (text = tq_cliconf_read(path, TQ_AGENT_CONFIG_MAX)) == NULL)
		return NULL;
	v = toml_top_string(text, key);
	free(text);
	return v;
}

/*
 * codex 0.169: `-c model=V` on the command line, else the model of the
 * profile --profile/-p names ($CODEX_HOME/NAME.config.toml: 0.169 refuses
 * the older `profile = ` key and [profiles.NAME] tables), else config.toml's.
 */
static char *conf_model(char *const *v, size_t n, const struct tq_env *env, const char *cwd)
{
	char dir[PATH_MAX], file[NAME_MAX + 1];
	const char *prof = tq_cliconf_opt(v, n, "--profile", "-p");
	char *m = codex_cli_model(v, n);

	(void)cwd;
	if (m != NULL || codex_home(env, dir, sizeof(dir)) < 0)
		return m;
	if (prof != NULL && prof[0] != '\0' && strchr(prof, '/') == NULL &&
	    snprintf(file, sizeof(file), "%s.config.toml", prof) < (int)sizeof(file) &&
	    (m = toml_file_string(dir, file, "model")) != NULL)
		return m;
	return toml_file_string(dir, "config.toml", "model");
}

/* ------------------------------------------------------------------ */
/* Stream input (issue 19): codex app-server                          */

enum { CX_INIT = 1, CX_THREAD, CX_TURN };

/* "method not found" (JSON-RPC 2.0). */
#define RPC_NO_METHOD (-32601)

/* The sandbox the one-shot command asks for (exec's -s, --full-auto, the
 * bypass), or NULL: codex's default (read-only, as exec's). */
static const char *cx_sandbox(char *const *v, size_t n)
{
	const char *s = tq_cliconf_opt(v, n, "--sandbox", "-s");

	for (size_t i = 1; i < n && strcmp(v[i], "--") != 0; i++) {
		if (strcmp(v[i], "--dangerously-bypass-approvals-and-sandbox") == 0 ||
		    strcmp(v[i], "--yolo") == 0)
			return "danger-full-access";
		if (strcmp(v[i], "--full-auto") == 0 && s == NULL)
			s = "workspace-write";
	}
	return s;
}

static void cx_initialize(struct tq_result_parser *p)
{
	cJSON *o = cJSON_CreateObject(), *ci;

	if (o == NULL || (ci = cJSON_AddObjectToObject(o, "clientInfo")) == NULL ||
	    cJSON_AddStringToObject(ci, "name", "taskq") == NULL ||
	    cJSON_AddStringToObject(ci, "title", "taskq") == NULL ||
	    cJSON_AddStringToObject(ci, "version", "1") == NULL) {
		cJSON_Delete(o);
		o = NULL;
	}
	p->st->phase = CX_INIT;
	tq_rpc_request(p, "initialize", o);
}

/* thread/resume of the session to resume (its turns left out of the
 * answer: they can be many), or thread/start; exec's approvals (never
 * asked: the turn runs unattended), its sandbox, the model asked. */
static void cx_thread(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && ((st->resume != NULL &&
			   (cJSON_AddStringToObject(o, "threadId", st->resume) == NULL ||
			    cJSON_AddTrueToObject(o, "excludeTurns") == NULL)) ||
			  cJSON_AddStringToObject(o, "cwd", st->cwd) == NULL ||
			  cJSON_AddStringToObject(o, "approvalPolicy", "never") == NULL ||
			  (st->model != NULL &&
			   cJSON_AddStringToObject(o, "model", st->model) == NULL) ||
			  (st->extra != NULL &&
			   cJSON_AddStringToObject(o, "sandbox", st->extra) == NULL))) {
		cJSON_Delete(o);
		o = NULL;
	}
	st->phase = CX_THREAD;
	tq_rpc_request(p, st->resume != NULL ? "thread/resume" : "thread/start", o);
}

static void cx_turn_start(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	cJSON *o = cJSON_CreateObject(), *arr, *b;

	if (o != NULL && (cJSON_AddStringToObject(o, "threadId", st->sid) == NULL ||
			  (arr = cJSON_AddArrayToObject(o, "input")) == NULL ||
			  (b = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(arr, b) ||
			  cJSON_AddStringToObject(b, "type", "text") == NULL ||
			  cJSON_AddStringToObject(b, "text", st->prompt) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	st->phase = CX_TURN;
	tq_rpc_request(p, "turn/start", o);
}

static void cx_begin(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	const char *conv = tq_stream_state_conv(st->state), *sb;

	/* quiet until turn/start is answered: the turn's output is from its
	 * turn/started on (before, a new thread's notices) */
	st->quiet = 1;
	if (conv != NULL) {
		set_str(&st->sid, conv);
		set_str(&p->session, conv);
		cx_turn_start(p);
		return;
	}
	if (st->arg->argv != NULL && (sb = cx_sandbox(st->arg->argv, st->arg->argc)) != NULL)
		set_str(&st->extra, sb);
	if (st->state[0] != '\0')
		cx_thread(p);
	else
		cx_initialize(p);
}

/* turn/interrupt of the turn running; its answer is not awaited (the
 * turn's end, turn/completed, is). */
static void cx_send_interrupt(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;
	char keep[TQ_RPC_ID_MAX];
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && (cJSON_AddStringToObject(o, "threadId", st->sid) == NULL ||
			  cJSON_AddStringToObject(o, "turnId", st->turn) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	memcpy(keep, st->wait, sizeof(keep));
	tq_rpc_request(p, "turn/interrupt", o);
	memcpy(st->wait, keep, sizeof(keep));
}

static int cx_interrupt(struct tq_result_parser *p)
{
	struct stream_turn *st = p->st;

	if (st->phase != CX_TURN)
		return -1;
	if (st->turn != NULL)
		cx_send_interrupt(p);
	else
		st->interrupt_asked = 1; /* once turn/start says its id */
	return 0;
}

/* The agent asks: an approval is declined (exec never asks one: the turn
 * runs unattended), anything else is not offered. */
static void cx_request(struct tq_result_parser *p, const cJSON *o)
{
	const char *m = jstr(o, "method");
	size_t n = strlen(m);
	cJSON *r;

	if (n > 15 && strcmp(m + n - 15, "requestApproval") == 0) {
		if ((r = cJSON_CreateObject()) != NULL &&
		    cJSON_AddStringToObject(r, "decision", "decline") == NULL) {
			cJSON_Delete(r);
			r = NULL;
		}
		if (r != NULL)
			tq_rpc_answer(p, o, r);
		return;
	}
	tq_rpc_refuse(p, o, RPC_NO_METHOD, "not offered: taskq runs the turn unattended");
}

/* A notification of this thread (and of this turn, when it says). */
static const cJSON *cx_ours(const struct tq_result_parser *p, const cJSON *o)
{
	const cJSON *params = jobj(o, "params");
	const char *tid = jstr(params, "threadId"), *turn = jstr(params, "turnId");
	const struct stream_turn *st = p->st;

	if (st->phase != CX_TURN || tid == NULL || st->sid == NULL || strcmp(tid, st->sid) != 0 ||
	    (turn != NULL && st->turn != NULL && strcmp(turn, st->turn) != 0))
		return NULL;
	return params;
}

/* thread/tokenUsage/updated: the last request's counts, summed over the
 * turn (input without the cache; output with the reasoning, as exec). */
static void cx_usage(struct tq_result_parser *p, const cJSON *params)
{
	const cJSON *u = jobj(jobj(params, "tokenUsage"), "last");
	int64_t cached = jint(u, "cachedInputTokens");

	p->in = sat_add(p->in, sat_sub0(jint(u, "inputTokens"), cached));
	p->cache_read = sat_add(p->cache_read, cached);
	p->cache_creation = sat_add(p->cache_creation, jint(u, "cacheWriteInputTokens"));
	p->out = sat_add(p->out, jint(u, "outputTokens"));
}

/* turn/completed: the turn's end. */
static void cx_completed(struct tq_result_parser *p, const cJSON *params)
{
	const cJSON *turn = jobj(params, "turn"), *it;
	const char *status = jstr(turn, "status"), *msg = jstr(jobj(turn, "error"), "message");
	double d = 0;

	p->has_result = 1;
	p->num_turns = 1;
	set_str(&p->subtype, status != NULL ? status : "completed");
	p->is_error = status != NULL && strcmp(status, "completed") != 0;
	if (p->is_error && msg != NULL)
		set_str(&p->error, msg);
	if (jnum(turn, "durationMs", &d))
		p->duration_ms = jint(turn, "durationMs");
	/* the last agent message, when its item/completed was not read */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(turn, "items"))
		if (p->result == NULL && jstr(it, "type") != NULL &&
		    strcmp(jstr(it, "type"), "agentMessage") == 0 && jstr(it, "text") != NULL)
			set_str(&p->result, jstr(it, "text"));
}

static void cx_notification(struct tq_result_parser *p, const cJSON *o)
{
	const char *m = jstr(o, "method"), *s;
	const cJSON *params = cx_ours(p, o), *it;

	if (params == NULL)
		return;
	if (strcmp(m, "item/completed") == 0) {
		it = jobj(params, "item");
		if ((s = jstr(it, "type")) != NULL && strcmp(s, "agentMessage") == 0 &&
		    (s = jstr(it, "text")) != NULL)
			set_str(&p->result, s);
	} else if (strcmp(m, "thread/tokenUsage/updated") == 0) {
		cx_usage(p, params);
	} else if (strcmp(m, "error") == 0) {
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, "willRetry")) &&
		    (s = jstr(jobj(params, "error"), "message")) != NULL)
			set_str(&p->error, s);
	} else if (strcmp(m, "turn/completed") == 0) {
		/* its turn's id is inside: another turn's end is not ours */
		s = jstr(jobj(params, "turn"), "id");
		if (s == NULL || p->st->turn == NULL || strcmp(s, p->st->turn) == 0)
			cx_completed(p, params);
	}
}

static void cx_answered(struct tq_result_parser *p, const cJSON *o)
{
	struct stream_turn *st = p->st;
	const cJSON *err = jobj(o, "error"), *res = jobj(o, "result");

	switch (st->phase) {
	case CX_INIT:
		if (err != NULL) {
			tq_stream_fail(p, "initialize", err);
			return;
		}
		tq_rpc_notify(p, "initialized", cJSON_CreateObject());
		tq_stream_set_state(p, NULL);
		cx_thread(p);
		return;
	case CX_THREAD:
		if (tq_stream_opened(p, st->resume ? "thread/resume" : "thread/start", err,
				     st->resume != NULL ? st->resume :
				     jstr(jobj(res, "thread"), "id")) < 0)
			return;
		if (jstr(res, "model") != NULL)
			set_str(&p->init_model, jstr(res, "model"));
		cx_turn_start(p);
		return;
	case CX_TURN:
		if (err != NULL) {
			st->quiet = 0;
			tq_stream_fail(p, "turn/start", err);
			return;
		}
		set_str(&st->turn, jstr(jobj(res, "turn"), "id"));
		st->quiet = 0;
		if (st->interrupt_asked && st->turn != NULL)
			cx_send_interrupt(p);
		return;
	}
}

static void cx_read(struct tq_result_parser *p, const cJSON *o)
{
	if (tq_rpc_is_request(o))
		cx_request(p, o);
	else if (tq_rpc_is_notification(o))
		cx_notification(p, o);
	else if (!p->has_result && tq_rpc_answers(o, p->st->wait))
		cx_answered(p, o);
}

/* What codex app-server takes of exec's command: its -c overrides (the
 * retry cap among them), its features; the model, the sandbox and the
 * session go in the protocol. */
static const struct tq_stream_opt stream_opts[] = {
	{ "-c", 1, 1 }, { "--config", 1, 1 }, { "--enable", 1, 1 }, { "--disable", 1, 1 },
	{ "--strict-config", 0, 1 }, { NULL, 0, 0 },
};

static const char *const stream_args[] = { "app-server", NULL };

static const char *const stream_needles[] = { "\"id\"", "\"turn/completed\"",
					      "\"thread/tokenUsage/updated\"", NULL };

static const struct tq_agent_stream stream = {
	.args = stream_args,
	.opts = stream_opts,
	.keep_other = 0,
	.needles = stream_needles,
	.begin = cx_begin,
	.read = cx_read,
	.interrupt = cx_interrupt,
};

/* ------------------------------------------------------------------ */
/* The entry                                                          */

static const char *const needles[] = {
	"\"thread.started\"", "\"agent_message\"", "\"turn.completed\"",
	"\"turn.failed\"", NULL,
};

static const char *const ws_names[] = { WS_HOME, NULL };

/* Its retries capped first, then isolated: an error says which failed. */
const struct tq_agent_def tq_agent_codex = {
	.name = "codex",
	.needles = needles,
	.read_obj = read_obj,
	.session_bad = tq_result_session_uuid,
	.cap_retries = cap_retries,
	.isolate = isolate,
	.conf_model = conf_model,
	.ws_names = ws_names,
	.stream = &stream,
};

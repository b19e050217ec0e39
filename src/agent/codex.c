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
	/* No stream-input mode: codex exec takes one prompt a run, stdin
	 * read as more of it (research agent-clis.md 5), so a session of it
	 * cannot be warm. */
	.stream = NULL,
};

/*
 * opencode.c - OpenCode (opencode), its registry entry (registry.h): its
 * result read from run --format json, its session id form (ses_...,
 * measured: ses_df1ffcc88ffe7PukM9Ns2Jg3ay, 30 bytes), the model its config
 * layers name, and a workspace's opencode.json with no MCP servers (its
 * global config's still start: nothing taskq can set hides them). It has
 * no setting for its own retries (5 of its own).
 *
 * Its result (result.h): sessionID, text parts (the text of the last step
 * that had any is the result), step_finish (tokens and cost, summed; one
 * turn each; output tokens are output + reasoning), error (is_error, its
 * data.message the result, subtype its name). No duration, no model
 * (conf_model below).
 *
 * Its stream-input mode (research agent-clis.md 6.1, opencode 1.18.33):
 * opencode acp, the Agent Client Protocol (acp.c), its model set by
 * session/set_config_option; the turn's usage in the prompt's answer, no
 * cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>
#include <cjson/cJSON.h>

#include "agent.h"
#include "agent_int.h"
#include "result_int.h"
#include "stream_int.h"

/* ------------------------------------------------------------------ */
/* Result                                                             */

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

static void read_obj(struct tq_result_parser *p, const cJSON *o)
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

/* Its session ids: "ses_" and letters and digits (registry.h's
 * session_bad). */
static const char *session_bad(const char *id, size_t len)
{
	if (strncmp(id, "ses_", 4) != 0 || len == 4 ||
	    strspn(id + 4, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "abcdefghijklmnopqrstuvwxyz") != len - 4)
		return "not ses_ and letters and digits";
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The model its config names (issue 17.9)                            */

/* The model a parsed opencode config names for agent (its
 * agent.AGENT.model) or for every agent ("model"), as asked by top. */
static const char *oc_model_of(const cJSON *j, const char *agent, int top)
{
	const cJSON *m;

	if (top)
		m = cJSON_GetObjectItemCaseSensitive(j, "model");
	else
		m = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "agent"),
							 agent), "model");
	return cJSON_IsString(m) && m->valuestring[0] != '\0' ? m->valuestring : NULL;
}

/* One opencode config layer: JSON text (comments allowed) or, when path is
 * not NULL, the file. 1 with *out (malloc'd) when it names the model asked
 * for; 0 when not, or it cannot be read. */
static int oc_layer(const char *path, const char *text, const char *agent, int top, char **out)
{
	char *buf = path != NULL ? tq_cliconf_read(path, TQ_AGENT_CONFIG_MAX) :
		    text != NULL ? strdup(text) : NULL;
	cJSON *j;
	const char *m;

	if (buf == NULL)
		return 0;
	tq_cliconf_strip_comments(buf);
	j = cJSON_Parse(buf);
	free(buf);
	if ((m = oc_model_of(j, agent, top)) != NULL)
		*out = strdup(m);
	cJSON_Delete(j);
	return m != NULL;
}

/* In dir/sub (sub "" or ".opencode"): opencode.json, then opencode.jsonc. */
static int oc_dir(const char *dir, const char *sub, const char *agent, int top, char **out)
{
	static const char *const names[] = { "opencode.json", "opencode.jsonc" };
	char path[PATH_MAX];

	for (size_t i = 0; i < 2; i++)
		if (snprintf(path, sizeof(path), "%s%s%s/%s", dir, *sub ? "/" : "", sub,
			     names[i]) < (int)sizeof(path) &&
		    oc_layer(path, NULL, agent, top, out))
			return 1;
	return 0;
}

/* The project's layers from cwd up to its git root (a directory holding
 * .git), or up to / outside a repository, as opencode 1.18 searches: the
 * .opencode directories first (they are merged last), then opencode.json,
 * the nearest first in each. */
static int oc_project(const char *cwd, const char *agent, int top, char **out)
{
	static const char *const subs[] = { ".opencode", "" };
	char dir[PATH_MAX], git[PATH_MAX + 8];

	for (size_t s = 0; s < 2; s++) {
		if (strlcpy(dir, cwd, sizeof(dir)) >= sizeof(dir) || dir[0] != '/')
			return 0;
		for (;;) {
			char *slash;

			if (oc_dir(dir, subs[s], agent, top, out))
				return 1;
			snprintf(git, sizeof(git), "%s/.git", dir);
			if (access(git, F_OK) == 0 || (slash = strrchr(dir, '/')) == NULL ||
			    dir[1] == '\0')
				break;
			slash[slash == dir ? 1 : 0] = '\0';
		}
	}
	return 0;
}

/*
 * opencode 1.18, highest first: $OPENCODE_CONFIG_CONTENT, the project's
 * files (oc_project; not with $OPENCODE_DISABLE_PROJECT_CONFIG), the file
 * $OPENCODE_CONFIG names, the global ($XDG_CONFIG_HOME, else
 * ~/.config)/opencode/{opencode.json,opencode.jsonc,config.json}. The
 * agent it runs (--agent, else "build") may have a model of its own in
 * any layer (agent.NAME.model), which wins over "model" in every one.
 */
static char *conf_model(char *const *v, size_t n, const struct tq_env *env, const char *cwd)
{
	const char *agent = tq_cliconf_opt(v, n, "--agent", NULL);
	const char *xdg = tq_env_get(env, "XDG_CONFIG_HOME"), *home = tq_env_get(env, "HOME");
	const char *file = tq_env_get(env, "OPENCODE_CONFIG");
	int project = tq_env_get(env, "OPENCODE_DISABLE_PROJECT_CONFIG") == NULL;
	char global[PATH_MAX], path[PATH_MAX + 32];
	char *m = NULL;

	if (agent == NULL || agent[0] == '\0')
		agent = "build";
	global[0] = '\0';
	if (xdg != NULL && xdg[0] == '/')
		snprintf(global, sizeof(global), "%s/opencode", xdg);
	else if (home != NULL && home[0] == '/')
		snprintf(global, sizeof(global), "%s/.config/opencode", home);
	for (int top = 0; top < 2; top++) {
		if (oc_layer(NULL, tq_env_get(env, "OPENCODE_CONFIG_CONTENT"), agent, top, &m) ||
		    (project && cwd != NULL && oc_project(cwd, agent, top, &m)) ||
		    (file != NULL && file[0] != '\0' && oc_layer(file, NULL, agent, top, &m)) ||
		    (global[0] != '\0' && oc_dir(global, "", agent, top, &m)))
			return m;
		if (global[0] != '\0' &&
		    snprintf(path, sizeof(path), "%s/config.json", global) < (int)sizeof(path) &&
		    oc_layer(path, NULL, agent, top, &m))
			return m;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Stream input (issue 19): opencode acp                              */

/* What opencode acp takes of its one-shot command: its logging and
 * plugin options; not run's (the model goes by session/set_config_option,
 * the session by session/load). */
static const struct tq_stream_opt stream_opts[] = {
	{ "--print-logs", 0, 1 }, { "--log-level", 1, 1 }, { "--pure", 0, 1 },
	{ NULL, 0, 0 },
};

static const char *const stream_args[] = { "acp", NULL };

static const struct tq_acp_tune acp_tune = { .model_by_option = 1 };

/* opencode acp (research agent-clis.md 6.1): the Agent Client Protocol
 * (acp.c). */
static const struct tq_agent_stream stream = {
	.args = stream_args,
	.opts = stream_opts,
	.keep_other = 0,
	.needles = tq_acp_needles,
	.begin = tq_acp_begin,
	.read = tq_acp_read,
	.interrupt = tq_acp_interrupt,
	.tune = &acp_tune,
};

/* ------------------------------------------------------------------ */
/* The entry                                                          */

static const char *const needles[] = {
	"\"step_start\"", "\"text\"", "\"step_finish\"", "\"error\"", NULL,
};

static const struct tq_agent_file ws_files[] = {
	{ "opencode.json", "{\"$schema\":\"https://opencode.ai/config.json\",\"mcp\":{}}\n" },
	{ NULL, NULL },
};

const struct tq_agent_def tq_agent_opencode = {
	.name = "opencode",
	.needles = needles,
	.read_obj = read_obj,
	.session_bad = session_bad,
	.conf_model = conf_model,
	.ws_files = ws_files,
	.stream = &stream,
};

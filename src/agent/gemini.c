/*
 * gemini.c - Gemini CLI (gemini), its registry entry (registry.h): its
 * result read from -o json or stream-json, a session id a uuid, its own
 * retries capped through an overlay of the user's ~/.gemini, and a
 * workspace's .gemini/settings.json (no MCP servers, no retries of its
 * own; the profile's --allowed-mcp-server-names hides the user's, which an
 * empty mcpServers does not).
 *
 * Its result (result.h): -o json: the one (pretty-printed, multi-line)
 * object: response, session_id, error, stats.models.*.tokens; -o
 * stream-json: init (session_id, model), the assistant message contents
 * (concatenated: the result text), and the result line (status, error,
 * stats). An error's result is error.message. Output tokens are candidates
 * + thoughts. No cost; no duration with -o json.
 *
 * Its stream-input mode (research agent-clis.md 4.1, gemini 0.61.0):
 * gemini --acp, the Agent Client Protocol (acp.c); the one-shot command's
 * options but for its output format, prompt and --resume, which ACP mode
 * ignores (session/load resumes); the model its --model. A session is not
 * loaded in the minute its chat file was made (load_not_before).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/sys.h"
#include "agent.h"
#include "agent_int.h"
#include "result_int.h"
#include "stream_int.h"

/* general.maxAttempts on every run, isolated or not (its default is 10):
 * no retries of its own, taskq's are in charge (issue 17.3). */
#define MAX_ATTEMPTS 1
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* ------------------------------------------------------------------ */
/* Result                                                             */

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

static void read_obj(struct tq_result_parser *p, const cJSON *o)
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
/* Its own retries (issue 17.3)                                       */

/* The user's gemini settings with general.maxAttempts set, as JSON text
 * (malloc'd), or NULL when they cannot be read as JSON (then no cap: a
 * settings file taskq cannot merge is not replaced). */
static char *gemini_settings(const char *user_dir)
{
	char path[PATH_MAX + 32], *text, *out = NULL;
	cJSON *j, *gen;

	if (snprintf(path, sizeof(path), "%s/settings.json", user_dir) >= (int)sizeof(path))
		return NULL;
	text = tq_cliconf_read(path, TQ_AGENT_CONFIG_MAX);
	if (text == NULL && errno != ENOENT)
		return NULL;
	if (text != NULL)
		tq_cliconf_strip_comments(text);
	j = text != NULL ? cJSON_Parse(text) : cJSON_CreateObject();
	free(text);
	if (!cJSON_IsObject(j))
		goto out;
	gen = cJSON_GetObjectItemCaseSensitive(j, "general");
	if (gen == NULL)
		gen = cJSON_AddObjectToObject(j, "general");
	if (!cJSON_IsObject(gen))
		goto out;
	cJSON_DeleteItemFromObjectCaseSensitive(gen, "maxAttempts");
	if (cJSON_AddNumberToObject(gen, "maxAttempts", MAX_ATTEMPTS) != NULL)
		out = cJSON_PrintUnformatted(j);
out:
	cJSON_Delete(j);
	return out;
}

/* What gemini may create at the top of ~/.gemini on a first run: linked
 * even before they exist, so its writes (which follow a symlink) land in
 * the user's own directory, not in the overlay removed after the run. */
static const char *const gemini_files[] = { "projects.json", "installation_id", "user_id",
					    "state.json", "google_accounts.json", NULL };

/*
 * gemini: general.maxAttempts 1 (10 by default: 9 requests in 184 s for a
 * 429). Its system settings file would do, but gemini 0.61 reads one only
 * when root owns it and every directory above it; so the user's own
 * ~/.gemini is overlaid instead: GEMINI_CLI_HOME names a private directory
 * (dir, removed after the run) whose .gemini holds the user's settings.json
 * with maxAttempts set and a symlink to every other entry of the user's
 * ~/.gemini (sessions, credentials, history stay the user's); ~/.agents
 * likewise. The user's files are not touched, except that ~/.gemini and
 * its tmp/ (where sessions live) are made when missing.
 */
static int cap_gemini(const struct tq_env *env, int dfd, const char *dir,
		      struct tq_env *out_env, struct tq_err *err)
{
	const char *home = tq_env_get(env, "GEMINI_CLI_HOME");
	char user[PATH_MAX], agents[PATH_MAX], *settings = NULL, *kv = NULL;
	int rc = 0;

	if (home == NULL || home[0] != '/')
		home = tq_env_get(env, "HOME");
	if (home == NULL || home[0] != '/' ||
	    snprintf(user, sizeof(user), "%s/.gemini", home) >= (int)sizeof(user) ||
	    snprintf(agents, sizeof(agents), "%s/.agents", home) >= (int)sizeof(agents))
		return 0;
	if ((settings = gemini_settings(user)) == NULL)
		return 0;
	/* sessions must outlive the overlay: ~/.gemini/tmp */
	if ((rc = tq_cliconf_overlay(dfd, dir, ".gemini", user, "tmp", gemini_files,
				     "settings.json", settings, "gemini retries", err)) < 0)
		goto out;
	if (access(agents, F_OK) == 0 && symlinkat(agents, dfd, ".agents") < 0) {
		rc = tq_err_sys(err, "gemini retries: link %s", agents);
		goto out;
	}
	if (asprintf(&kv, "GEMINI_CLI_HOME=%s", dir) < 0) {
		kv = NULL;
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	rc = tq_env_set(out_env, kv, err);
out:
	free(settings);
	free(kv);
	return rc;
}

/* gemini: its settings overlaid in the run's private directory. */
static int cap_retries(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err)
{
	int rc, dfd = -1;

	if ((rc = tq_workspace_aux(q, t, ar, &dfd, err)) == 0)
		rc = cap_gemini(env, dfd, ar->aux, env, err);
	tq_close(dfd);
	if (rc < 0)
		tq_err_prefix(err, "capping the agent's own retries");
	return rc;
}

/* ------------------------------------------------------------------ */
/* Stream input (issue 19): gemini --acp                              */

/* A variable of envp ("NAME=value"), or NULL. */
static const char *env_of(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* Whether a chats directory dir holds a file of session sid made in the
 * UTC minute now ("YYYY-MM-DDTHH-MM"): session-<minute>-<8 of the id>. */
static int made_in(const char *dir, const char *sid, const char *now)
{
	char want[64];
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (d == NULL)
		return 0;
	snprintf(want, sizeof(want), "session-%s-%.8s.json", now, sid);
	while (!found && (e = readdir(d)) != NULL)
		found = strncmp(e->d_name, want, strlen(want)) == 0;
	closedir(d);
	return found;
}

/*
 * gemini 0.61's session/load loses the session when it comes in the UTC
 * minute its chat file was made (research agent-clis.md 4.1: the load's
 * new chat recording opens session-<minute>-<id8>.jsonl, the session's own
 * file then, and writes it empty), so a session whose file has this
 * minute's name is loaded in the next minute, a second into it. Its chats
 * are under $GEMINI_CLI_HOME (else $HOME)/.gemini/tmp/<project>/chats.
 */
static int64_t load_not_before(const char *sid, char *const *envp)
{
	const char *home = env_of(envp, "GEMINI_CLI_HOME");
	char tmp[PATH_MAX], dir[PATH_MAX + 300], now[32];
	int64_t ms = tq_now_ms();
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	struct dirent *e;
	DIR *d;
	int found = 0;

	if (home == NULL || home[0] != '/')
		home = env_of(envp, "HOME");
	if (home == NULL || home[0] != '/' || gmtime_r(&t, &tm) == NULL ||
	    strftime(now, sizeof(now), "%Y-%m-%dT%H-%M", &tm) == 0 ||
	    snprintf(tmp, sizeof(tmp), "%s/.gemini/tmp", home) >= (int)sizeof(tmp) ||
	    (d = opendir(tmp)) == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL)
		found = e->d_name[0] != '.' &&
			snprintf(dir, sizeof(dir), "%s/%s/chats", tmp, e->d_name) <
			(int)sizeof(dir) && made_in(dir, sid, now);
	closedir(d);
	return found ? (ms / 60000 + 1) * 60000 + 1000 : 0;
}

/* What its one-shot command has that --acp does not take: the output
 * format, the prompt, the session to resume (session/load does). */
static const struct tq_stream_opt stream_opts[] = {
	{ "-o", 1, 0 }, { "--output-format", 1, 0 }, { "-p", 1, 0 }, { "--prompt", 1, 0 },
	{ "-i", 1, 0 }, { "--prompt-interactive", 1, 0 }, { "-r", 1, 0 }, { "--resume", 1, 0 },
	{ "--session-id", 1, 0 }, { "--acp", 0, 0 }, { "--experimental-acp", 0, 0 },
	{ NULL, 0, 0 },
};

static const char *const stream_args[] = { "--acp", NULL };

static const struct tq_acp_tune acp_tune = { .load_not_before = load_not_before };

/* gemini --acp (research agent-clis.md 4.1): the Agent Client Protocol
 * (acp.c), its model the command's --model. */
static const struct tq_agent_stream stream = {
	.args = stream_args,
	.opts = stream_opts,
	.keep_other = 1,
	.needles = tq_acp_needles,
	.begin = tq_acp_begin,
	.read = tq_acp_read,
	.interrupt = tq_acp_interrupt,
	.tune = &acp_tune,
};

/* ------------------------------------------------------------------ */
/* The entry                                                          */

/* In a workspace (read when GEMINI_CLI_TRUST_WORKSPACE trusts it, as its
 * profile sets): no MCP servers of the project, no retries of its own. */
static const struct tq_agent_file ws_files[] = {
	{ ".gemini/settings.json",
	  "{\"mcpServers\":{},\"general\":{\"maxAttempts\":" TEXT(MAX_ATTEMPTS) "}}\n" },
	{ NULL, NULL },
};

/* No needles: small lines, and the -o json document. */
const struct tq_agent_def tq_agent_gemini = {
	.name = "gemini",
	.read_obj = read_obj,
	.session_bad = tq_result_session_uuid,
	.cap_retries = cap_retries,
	.ws_files = ws_files,
	.stream = &stream,
};

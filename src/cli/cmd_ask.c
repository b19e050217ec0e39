/*
 * cmd_ask.c - `taskq ask`: submit a prompt to an agent CLI (claude, gemini,
 * codex, opencode, or a profile of the user's) as a task, or with
 * --interactive run the agent now on this terminal.
 *
 * The task is an ordinary one built by the submit code (submit.h) with
 * every submit option, plus what cli_ask_apply takes from the agent's
 * profile (src/agent/profile.h): the command template, stored with its
 * placeholders for the worker to expand (src/agent/agent.h), the parser,
 * the environment settings, the default timeout. Nothing here runs a queued
 * agent; --interactive hands its run to tq_agent_interactive.
 */
#include "ask.h"
#include "cli.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <cjson/cJSON.h>

#include "agent/agent.h"
#include "agent/profile.h"
#include "agent/registry.h"
#include "common/parse.h"
#include "common/sys.h"

static const char ask_help[] =
	"Submits PROMPT to an agent CLI as a task and prints its id, as submit\n"
	"does. The command is the agent profile's template (taskq show ID shows it\n"
	"with its {placeholders}); the worker fills them in when the task starts.\n"
	"The prompt is the PROMPT argument (after -- if it starts with '-'), or\n"
	"the contents of --prompt-file F, or standard input when neither is given\n"
	"and it is not a terminal.\n"
	"\n"
	"Options:\n"
	"  --agent NAME     the profile: claude (default), gemini, codex, opencode,\n"
	"                   or one from your config file\n"
	"  --model M        the model ({model}; default: the profile's, else the\n"
	"                   CLI's own)\n"
	"  --source NAME=PATH  link PATH into the workspace as NAME (repeatable;\n"
	"                   implies --isolate); PATH must exist and be readable\n"
	"  --isolate        run in a fresh workspace, removed when the task ends:\n"
	"                   STATE/work/taskq-UUID with the sources, prompt.md and\n"
	"                   empty MCP configs, so the agent sees none of your MCP\n"
	"                   servers (codex: a CODEX_HOME of its own, your config\n"
	"                   without them). Not OpenCode: it reads your global ones\n"
	"  --no-isolate     run in the current directory even if the profile isolates\n"
	"  --session KEY    tasks of one KEY run one at a time, in order, in the\n"
	"                   directory of the first (another --cwd is refused), each\n"
	"                   resuming the agent session of the last one that succeeded\n"
	"  --warm           with --session: a turn on the session's agent process,\n"
	"                   kept up between messages (taskq help sessions): claude,\n"
	"                   gemini (--acp), opencode (acp), codex (app-server).\n"
	"                   kill, --timeout: the turn interrupted, the process kept\n"
	"                   (another --model, --env, ...: a new one that resumes)\n"
	"  --idle-timeout DUR  with --warm: end it after DUR idle (default 10m)\n"
	"  --no-warm        not warm, whatever the profile says\n"
	"  --prompt-file F  read the prompt from F\n"
	"  --interactive    run the agent now, in the foreground on this terminal\n"
	"                   (its interactive command, stdin and stdout yours), in a\n"
	"                   fresh workspace removed afterwards; exit with its status.\n"
	"                   Not a queued task: nothing is stored, and only --agent,\n"
	"                   --model, --source, --session, --env, --unset and\n"
	"                   --clean-env apply\n"
	"  --wait[=DUR]     wait (default 10s; 0: no limit), then print the answer\n"
	"                   as taskq result does (--json: its object); the id on\n"
	"                   stderr. Exit: the task's status; 124 if DUR ran out\n"
	"  and every submit option (taskq help submit): --timeout,\n"
	"  --stall-timeout, --retries, --batch, --group, --name, --priority,\n"
	"  --label, --after, --unique, --json, --env, ...\n"
	"\n"
	"Defaults from the profile: the name is the agent's, the group the\n"
	"program's (a rate limit pauses every task of that CLI), the timeout the\n"
	"profile's (1h for the built-in ones, above each CLI's own retries), the\n"
	"stall timeout the profile's (5m: an agent that prints nothing new for 5\n"
	"minutes -- Claude waiting on a hung API, Codex repeating \"Reconnecting...\"\n"
	"-- is stopped and retried as a network failure; --stall-timeout 0 turns\n"
	"it off for a task that runs long silent tool calls), and\n"
	"its environment settings (claude: CLAUDE_CODE_MAX_RETRIES=0), which --env\n"
	"and --unset override. Every run caps the agent's own retries (gemini\n"
	"maxAttempts 1 via GEMINI_CLI_HOME, codex provider retries 0 via -c); not\n"
	"codex's built-in openai provider, nor opencode: no setting.\n"
	"A prompt over 100 KiB goes to the agent on stdin instead of in argv.\n"
	"Profiles are data: see profiles.json; your config file\n"
	"(~/.config/taskq/config.json or $TASKQ_CONFIG) may change or add them\n"
	"under \"profiles\".\n"
	"\n"
	"Examples:\n"
	"  taskq ask \"review src/ for leaks\"\n"
	"  taskq ask --agent gemini --model gemini-2.5-pro --wait=10m \"summarize\"\n"
	"  taskq ask --isolate --source repo=. --session fix --prompt-file task.md\n"
	"  git diff | taskq ask --batch nightly --timeout 2h\n"
	"  taskq ask --session fix --warm \"now the tests\"\n"
	"  taskq ask --interactive --session fix\n";

enum {
	OPT_AGENT = 512, OPT_MODEL, OPT_SOURCE, OPT_ISOLATE, OPT_NO_ISOLATE,
	OPT_PROMPT_FILE, OPT_INTERACTIVE, OPT_WARM, OPT_NO_WARM, OPT_IDLE_TIMEOUT,
};

static const struct cli_opt ask_own_opts[] = {
	{ "agent", OPT_AGENT, 1, 0 },
	{ "model", OPT_MODEL, 1, 0 },
	{ "source", OPT_SOURCE, 1, 0 },
	{ "isolate", OPT_ISOLATE, 0, 0 },
	{ "no-isolate", OPT_NO_ISOLATE, 0, 0 },
	{ "prompt-file", OPT_PROMPT_FILE, 1, 0 },
	{ "interactive", OPT_INTERACTIVE, 0, 0 },
	{ "warm", OPT_WARM, 0, 0 },
	{ "no-warm", OPT_NO_WARM, 0, 0 },
	{ "idle-timeout", OPT_IDLE_TIMEOUT, 1, 0 },
	{ NULL, 0, 0, 0 },
};

/* The submit options --interactive takes. */
static const char *const interactive_ok[] = { "session", "env", "unset", "clean-env", NULL };

/* Everything ask collects beside the submit state. */
struct ask {
	struct cli_ask a;
	struct cli_strv sources;
	const char *prompt_arg;
	const char *prompt_file;
	char *prompt_buf;          /* a prompt read from a file or stdin */
	int interactive;
	const char *not_interactive; /* the first option --interactive refuses
				      * (its name, without "--") */
};

static int oom(const struct cli_ctx *c)
{
	return cli_runtime(c, "out of memory");
}

/* ------------------------------------------------------------------ */
/* What the profile gives a task                                      */

/* The profile named name (NULL: the default), with profiles loaded into
 * *ps (free with tq_profiles_free). */
static int find_profile(const char *name, struct tq_profiles **ps,
			const struct tq_profile **p, struct tq_err *err)
{
	char names[512];
	int rc;

	*p = NULL;
	if ((rc = tq_profiles_load(ps, err)) < 0)
		return rc;
	if ((*p = tq_profiles_find(*ps, name)) != NULL)
		return 0;
	tq_profiles_names(*ps, names, sizeof(names));
	return tq_err_set(err, TQ_EINVAL, "unknown agent \"%s\" (known: %s)", name, names);
}

/* The sources as {"NAME": "/abs/path", ...} (NULL when there are none),
 * each checked; owned by s. */
static int sources_json(struct cli_submit *s, const struct cli_ask *a, const char **out,
			struct tq_err *err)
{
	cJSON *o = NULL;
	char *json;
	int rc = 0;

	*out = NULL;
	if (a->nsources == 0)
		return 0;
	if ((o = cJSON_CreateObject()) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < a->nsources && rc == 0; i++) {
		const char *src = a->sources[i], *eq = strchr(src, '=');
		char name[NAME_MAX + 2], path[PATH_MAX];
		size_t nl = eq != NULL ? (size_t)(eq - src) : 0;

		if (eq == NULL || nl == 0 || eq[1] == '\0' || nl >= sizeof(name)) {
			rc = tq_err_set(err, TQ_EINVAL, "--source \"%s\": expected NAME=PATH", src);
			break;
		}
		memcpy(name, src, nl);
		name[nl] = '\0';
		if (cJSON_GetObjectItemCaseSensitive(o, name) != NULL) {
			rc = tq_err_set(err, TQ_EINVAL, "source \"%s\": given twice", name);
			break;
		}
		/* absolute now: the worker runs elsewhere; realpath also says
		 * what is missing, in the user's own words */
		if (realpath(eq + 1, path) == NULL) {
			rc = tq_err_set(err, TQ_EINVAL, "source \"%s\": %s: %s", name, eq + 1,
					strerror(errno));
			break;
		}
		if ((rc = tq_workspace_check_source(name, path, err)) < 0)
			break;
		if (cJSON_AddStringToObject(o, name, path) == NULL)
			rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	if (rc == 0) {
		json = cJSON_PrintUnformatted(o);
		if (json == NULL || (*out = cli_submit_own(s, json)) == NULL)
			rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	cJSON_Delete(o);
	return rc;
}

/* 1 if the "K=V" or "K" entry names the variable name. */
static int names_var(const char *entry, const char *name)
{
	size_t n = tq_env_name_len(name);

	return tq_env_name_len(entry) == n && strncmp(entry, name, n) == 0;
}

/* The profile's env settings into s: its sets before the user's --env (so
 * theirs win), none of a variable the user --unset; its unsets added. */
static int apply_env(struct cli_submit *s, const struct tq_profile *p, struct tq_err *err)
{
	size_t cap = s->sets.n + p->nenv_set + 1, k = 0;
	const char **v = reallocarray(NULL, cap, sizeof(*v));

	if (v == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < p->nenv_set; i++) {
		int unset = 0;
		char *kv;

		for (size_t j = 0; j < s->unsets.n; j++)
			unset |= names_var(p->env_set[i], s->unsets.v[j]);
		if (unset)
			continue;
		if ((kv = cli_submit_own(s, strdup(p->env_set[i]))) == NULL) {
			free(v);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
		v[k++] = kv;
	}
	for (size_t i = 0; i < s->sets.n; i++)
		v[k++] = s->sets.v[i];
	free(s->sets.v);
	s->sets.v = v;
	s->sets.n = k;
	s->sets.cap = cap;
	/* copies: the profiles are freed before the environment is built */
	for (size_t i = 0; i < p->nenv_unset; i++) {
		char *name = cli_submit_own(s, strdup(p->env_unset[i]));

		if (name == NULL || cli_strv_push(&s->unsets, name) < 0)
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	return 0;
}

/* The stored command: the template, or for a prompt too long for one
 * argument the template that takes it on stdin. */
static int apply_argv(struct cli_submit *s, const struct cli_ask *a, const struct tq_profile *p,
		      struct tq_err *err)
{
	size_t len = strlen(a->prompt), n = 0;
	char **tmpl = NULL, **argv;
	int rc;

	if (len > TQ_PROMPT_ARG_MAX) {
		if (p->stdin_prompt == NULL)
			return tq_err_set(err, TQ_EINVAL, "the prompt is %zu bytes, more than one "
					  "argument takes (%d), and the %s profile cannot read it "
					  "from stdin", len, TQ_PROMPT_ARG_MAX, p->name);
		if (s->stdin_file != NULL || s->spec.stdin_mode != TQ_STDIN_NULL)
			return tq_err_set(err, TQ_EINVAL, "the prompt (%zu bytes) goes to the "
					  "agent on stdin: --stdin and --stdin-file do not apply",
					  len);
		rc = tq_profile_prompt_on_stdin(p->argv, p->argc, p->stdin_prompt, &tmpl, &n, err);
		if (rc < 0)
			return rc;
		s->spec.stdin_mode = TQ_STDIN_FILE;
		s->spec.stdin_data = a->prompt;
		s->spec.stdin_len = len;
	} else if ((tmpl = calloc(p->argc + 1, sizeof(*tmpl))) != NULL) {
		for (n = 0; n < p->argc; n++)
			if ((tmpl[n] = strdup(p->argv[n])) == NULL)
				break;
	}
	if (tmpl == NULL || (len <= TQ_PROMPT_ARG_MAX && n < p->argc)) {
		tq_profile_argv_free(tmpl);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	/* the strings go to s's owned list, the array to owned_argv */
	if ((argv = calloc(n + 1, sizeof(*argv))) == NULL) {
		tq_profile_argv_free(tmpl);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		argv[i] = cli_submit_own(s, tmpl[i]);
		tmpl[i] = NULL;
		if (argv[i] == NULL) {
			for (size_t j = i + 1; j < n; j++)
				free(tmpl[j]);
			free(tmpl);
			free(argv);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
	}
	free(tmpl);
	free(s->owned_argv);
	s->owned_argv = argv;
	s->spec.argv = argv;
	s->spec.argc = n;
	s->spec.shell = 0;
	return 0;
}

/*
 * --warm, --no-warm, --idle-timeout and the profile's "warm" and
 * "idle_timeout" into s->spec (ask.h). The agent is the profile's parser:
 * a warm process speaks its CLI's stream-input mode, so a CLI without one
 * is refused here, before anything is stored, not when the worker finds
 * out.
 */
static int apply_warm(struct cli_submit *s, const struct cli_ask *a, const struct tq_profile *p,
		      struct tq_err *err)
{
	const struct tq_agent_def *d = tq_registry_find(p->parser);
	int warm = a->warm > 0 || (a->warm == 0 && p->warm && s->spec.session != NULL);

	if (a->warm > 0 && s->spec.session == NULL)
		return tq_err_set(err, TQ_EINVAL, "--warm needs --session KEY: a warm agent "
				  "process is a session's");
	if (a->idle_timeout_ms > 0 && !warm)
		return tq_err_set(err, TQ_EINVAL, "--idle-timeout is for a warm task: add --warm "
				  "(with --session KEY)");
	if (!warm)
		return 0;
	if (d == NULL)
		return tq_err_set(err, TQ_EINVAL, "--warm: profile %s runs no agent taskq knows "
				  "(\"parser\": \"%s\"), so no stream-input mode to keep it in; "
				  "drop --warm%s", p->name, p->parser,
				  a->warm > 0 ? "" : " (the profile's \"warm\": use --no-warm)");
	if (d->stream == NULL)
		return tq_err_set(err, TQ_EINVAL, "--warm: %s has no stream-input mode (it takes "
				  "one prompt a process); drop --warm%s", d->name,
				  a->warm > 0 ? "" : " (the profile's \"warm\": use --no-warm)");
	s->spec.warm = 1;
	s->spec.idle_timeout_ms = a->idle_timeout_ms > 0 ? a->idle_timeout_ms :
				  p->idle_timeout_ms > 0 ? p->idle_timeout_ms :
				  TQ_DEFAULT_IDLE_TIMEOUT_MS;
	return 0;
}

/* A string copy owned by s (NULL in, NULL out). */
static int own_copy(struct cli_submit *s, const char *src, const char **dst, struct tq_err *err)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	if ((*dst = cli_submit_own(s, strdup(src))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	return 0;
}

int cli_ask_apply(struct cli_submit *s, const struct cli_ask *a, struct tq_err *err)
{
	struct tq_profiles *ps = NULL;
	const struct tq_profile *p;
	const char *name = NULL, *model = NULL;
	int rc;

	if (a->prompt == NULL || a->prompt[a->prompt[0] ? strspn(a->prompt, " \t\r\n") : 0] == '\0')
		return tq_err_set(err, TQ_EINVAL, "the prompt is empty");
	if (strlen(a->prompt) > CLI_ASK_PROMPT_MAX)
		return tq_err_set(err, TQ_EINVAL, "the prompt is longer than %d bytes",
				  CLI_ASK_PROMPT_MAX);
	if (s->shell != NULL)
		return tq_err_set(err, TQ_EINVAL, "--shell does not apply to an agent task");
	if (a->isolate < 0 && a->nsources > 0)
		return tq_err_set(err, TQ_EINVAL, "--source links into a workspace: it does not "
				  "go with --no-isolate");
	if ((rc = find_profile(a->agent, &ps, &p, err)) < 0)
		goto out;
	if ((rc = apply_warm(s, a, p, err)) < 0 ||
	    (rc = sources_json(s, a, &s->spec.sources_json, err)) < 0 ||
	    (rc = apply_argv(s, a, p, err)) < 0 ||
	    (rc = apply_env(s, p, err)) < 0 ||
	    (rc = own_copy(s, p->name, &name, err)) < 0 ||
	    (rc = own_copy(s, a->model != NULL ? a->model : p->model, &model, err)) < 0)
		goto out;
	s->spec.agent = name;
	s->spec.model = model != NULL && *model != '\0' ? model : NULL;
	s->spec.prompt = a->prompt;
	s->spec.isolate = a->isolate > 0 || a->nsources > 0 || (a->isolate == 0 && p->isolate);
	if (s->spec.name == NULL)
		s->spec.name = name;
	if (!a->keep_timeout && p->timeout_ms > 0)
		s->spec.timeout_ms = p->timeout_ms;
	if (!a->keep_stall)
		s->spec.stall_timeout_ms = p->stall_timeout_ms;
out:
	tq_profiles_free(ps);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The prompt                                                         */

/* Read fd to the end into st->prompt_buf. */
static int read_prompt(const struct cli_ctx *c, struct ask *st, int fd, const char *what)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;

	for (;;) {
		ssize_t n;

		if (len + 65536 + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 65536 * 2;
			char *nb = realloc(buf, ncap);

			if (nb == NULL) {
				free(buf);
				return oom(c);
			}
			buf = nb;
			cap = ncap;
		}
		if ((n = tq_read(fd, buf + len, cap - len - 1)) < 0) {
			int e = errno;

			free(buf);
			return cli_runtime(c, "read %s: %s", what, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CLI_ASK_PROMPT_MAX) {
			free(buf);
			return cli_usage(c, "%s: the prompt is longer than %d bytes", what,
					 CLI_ASK_PROMPT_MAX);
		}
	}
	buf[len] = '\0';
	if (memchr(buf, '\0', len) != NULL) {
		free(buf);
		return cli_usage(c, "%s: the prompt holds a NUL byte", what);
	}
	st->prompt_buf = buf;
	st->a.prompt = buf;
	return CLI_OK;
}

static int get_prompt(const struct cli_ctx *c, struct ask *st)
{
	int fd, rc;

	if (st->prompt_arg != NULL && st->prompt_file != NULL)
		return cli_usage(c, "give either PROMPT or --prompt-file F, not both");
	if (st->prompt_arg != NULL) {
		st->a.prompt = st->prompt_arg;
		return CLI_OK;
	}
	if (st->prompt_file != NULL) {
		if ((fd = tq_open(st->prompt_file, O_RDONLY, 0)) < 0)
			return cli_usage(c, "--prompt-file %s: %s", st->prompt_file,
					 strerror(errno));
		rc = read_prompt(c, st, fd, st->prompt_file);
		tq_close(fd);
		return rc;
	}
	if (st->interactive || isatty(STDIN_FILENO))
		return CLI_OK; /* none: an error for a task, fine for --interactive */
	return read_prompt(c, st, STDIN_FILENO, "stdin");
}

/* ------------------------------------------------------------------ */
/* Options                                                            */

/* submit's options and ask's, one table (malloc'd). */
static struct cli_opt *merged_opts(void)
{
	size_t ns = 0, na = sizeof(ask_own_opts) / sizeof(ask_own_opts[0]);
	struct cli_opt *o;

	while (cli_submit_opts[ns].name != NULL)
		ns++;
	if ((o = calloc(ns + na, sizeof(*o))) == NULL)
		return NULL;
	memcpy(o, cli_submit_opts, ns * sizeof(*o));
	memcpy(o + ns, ask_own_opts, na * sizeof(*o)); /* with its terminator */
	return o;
}

/* The long name of option key k in opts, or NULL. */
static const char *opt_name(const struct cli_opt *opts, int k)
{
	for (; opts->name != NULL; opts++)
		if (opts->key == k)
			return opts->name;
	return NULL;
}

static int take_own(const struct cli_ctx *c, struct ask *st, int k, const char *val)
{
	struct tq_err err = TQ_ERR_INIT;

	switch (k) {
	case OPT_AGENT:
		if (*val == '\0')
			return cli_usage(c, "--agent: empty name");
		st->a.agent = val;
		return CLI_OK;
	case OPT_MODEL:
		st->a.model = val;
		return cli_check_text(c, "--model", val);
	case OPT_SOURCE:
		if (cli_check_text(c, "--source", val) != CLI_OK)
			return CLI_USAGE;
		return cli_strv_push(&st->sources, val) < 0 ? oom(c) : CLI_OK;
	case OPT_ISOLATE:
		st->a.isolate = 1;
		return CLI_OK;
	case OPT_NO_ISOLATE:
		st->a.isolate = -1;
		return CLI_OK;
	case OPT_PROMPT_FILE:
		st->prompt_file = val;
		return CLI_OK;
	case OPT_INTERACTIVE:
		st->interactive = 1;
		return CLI_OK;
	case OPT_WARM:
	case OPT_NO_WARM:
		st->a.warm = k == OPT_WARM ? 1 : -1;
		if (st->not_interactive == NULL)
			st->not_interactive = k == OPT_WARM ? "warm" : "no-warm";
		return CLI_OK;
	case OPT_IDLE_TIMEOUT:
		if (tq_parse_duration(val, &st->a.idle_timeout_ms, &err) < 0)
			return cli_usage(c, "--idle-timeout: %s", err.msg);
		if (st->a.idle_timeout_ms <= 0)
			return cli_usage(c, "--idle-timeout: must be more than 0");
		if (st->not_interactive == NULL)
			st->not_interactive = "idle-timeout";
		return CLI_OK;
	default:
		return CLI_USAGE;
	}
}

/* Remember a submit option --interactive cannot take. */
static void note_option(struct ask *st, const struct cli_opt *opts, int k)
{
	const char *name = opt_name(opts, k);

	if (name != NULL && strcmp(name, "timeout") == 0)
		st->a.keep_timeout = 1;
	if (name != NULL && strcmp(name, "stall-timeout") == 0)
		st->a.keep_stall = 1;
	for (size_t i = 0; name != NULL && interactive_ok[i] != NULL; i++)
		if (strcmp(name, interactive_ok[i]) == 0)
			return;
	if (st->not_interactive == NULL)
		st->not_interactive = name;
}

/* --wait ran out before the task ended: as taskq wait, as timeout(1) */
#define ASK_WAIT_TIMEOUT 124

int cli_ask_waited(const struct cli_ctx *c, struct tq_queue *q, const struct tq_task *t,
		   int done, int json)
{
	int rc;

	if (!done) {
		fprintf(stderr, "taskq: %s: task %lld is still %s; taskq result %lld once it ends "
			"(taskq wait %lld, taskq log %lld --follow)\n", c->cmd->name,
			(long long)t->id, tq_state_name(t->state), (long long)t->id,
			(long long)t->id, (long long)t->id);
		return ASK_WAIT_TIMEOUT;
	}
	rc = cli_result_print(c, q, t, json);
	fflush(stdout);
	if (t->state != TQ_SUCCEEDED) {
		char *why = t->reason != NULL ? cli_esc(t->reason, 0, NULL) : NULL;

		fprintf(stderr, "taskq: %s: task %lld %s%s%s\n", c->cmd->name, (long long)t->id,
			tq_state_name(t->state), why != NULL ? ": " : "", why != NULL ? why : "");
		free(why);
	}
	/* a result printed or not, the task's own status decides */
	return rc == CLI_OK || rc == CLI_RUNTIME ? cli_task_status(t) : rc;
}

static int parse(const struct cli_ctx *c, struct cli_submit *s, struct ask *st,
		 const struct cli_opt *opts, int argc, char **argv)
{
	struct cli_args a;
	int k, rc;

	cli_args_init(&a, argc, argv, 0);
	for (;;) {
		if (cli_submit_take_wait(c, s, &a, &rc)) {
			if (rc != CLI_OK)
				return rc;
			s->wait_result = 1; /* the answer, not the raw stream */
			if (st->not_interactive == NULL)
				st->not_interactive = "wait";
			continue;
		}
		if ((k = cli_next(c, &a, opts)) == CLI_OPT_END)
			break;
		if (k == CLI_OPT_ERR)
			return CLI_USAGE;
		if (k == CLI_OPT_HELP) {
			cli_print_help(c->cmd, stdout);
			return -1;
		}
		if (k == CLI_OPT_ARG) {
			if (st->prompt_arg != NULL)
				return cli_usage(c, "more than one PROMPT argument (\"%.20s\", "
						 "\"%.20s\"): quote the prompt", st->prompt_arg,
						 a.val);
			st->prompt_arg = a.val;
			continue;
		}
		if (k >= 512) {
			if ((rc = take_own(c, st, k, a.val)) != CLI_OK)
				return rc;
			continue;
		}
		note_option(st, opts, k);
		if ((rc = cli_submit_take_opt(c, s, k, &a)) != CLI_OK)
			return rc;
	}
	st->a.sources = st->sources.v;
	st->a.nsources = st->sources.n;
	return CLI_OK;
}

/* ------------------------------------------------------------------ */
/* --interactive                                                      */

static int run_interactive(const struct cli_ctx *c, struct cli_submit *s, struct ask *st)
{
	struct tq_agent_interactive in = { 0 };
	struct tq_err err = TQ_ERR_INIT;
	struct tq_profiles *ps = NULL;
	const struct tq_profile *p;
	struct tq_queue *q = NULL;
	char home[PATH_MAX], *sid = NULL;
	int rc, status = 0;

	if (st->not_interactive != NULL)
		return cli_usage(c, "--%s does not apply to --interactive: the agent runs now, on "
				 "this terminal, and is not queued", st->not_interactive);
	if (st->a.isolate < 0)
		return cli_usage(c, "--interactive always runs in a fresh workspace: "
				 "--no-isolate does not apply");
	if (find_profile(st->a.agent, &ps, &p, &err) < 0)
		return cli_fail(c, &err);
	if (p->interactive == NULL) {
		rc = cli_usage(c, "the %s profile has no interactive command", p->name);
		goto out;
	}
	if (sources_json(s, &st->a, &in.sources_json, &err) < 0 || apply_env(s, p, &err) < 0) {
		rc = cli_fail(c, &err);
		goto out;
	}
	if ((rc = cli_submit_prepare(c, s)) != CLI_OK)
		goto out;
	if (tq_home_resolve(c->home_flag, home, sizeof(home), &err) < 0) {
		rc = cli_fail(c, &err);
		goto out;
	}
	if (s->spec.session != NULL) {
		if ((rc = cli_open_if_exists(c, 0, &q)) != CLI_OK)
			goto out;
		if (q != NULL && tq_queue_session_get(q, s->spec.session, &sid, &err) < 0) {
			rc = cli_fail(c, &err);
			goto out;
		}
	}
	in.home = home;
	in.q = q;
	in.argv = p->interactive;
	in.argc = p->ninteractive;
	in.prompt = st->a.prompt;
	in.model = st->a.model != NULL ? st->a.model : p->model;
	in.session_key = s->spec.session;
	in.session_id = sid;
	in.envp = s->env.vars;
	fflush(stdout);
	if (tq_agent_interactive(&in, &status, &err) < 0)
		rc = cli_fail(c, &err);
	else
		rc = status >= 0 ? status : CLI_RUNTIME;
out:
	free(sid);
	tq_queue_close(q);
	tq_profiles_free(ps);
	return rc;
}

/* ------------------------------------------------------------------ */

static int run_ask(struct cli_ctx *c, int argc, char **argv)
{
	struct tq_err err = TQ_ERR_INIT;
	struct cli_opt *opts = merged_opts();
	struct cli_submit s;
	struct ask st;
	int rc;

	if (opts == NULL)
		return oom(c);
	memset(&st, 0, sizeof(st));
	cli_submit_init(&s);
	if ((rc = parse(c, &s, &st, opts, argc, argv)) != CLI_OK ||
	    (rc = get_prompt(c, &st)) != CLI_OK)
		goto out;
	if (st.interactive) {
		rc = run_interactive(c, &s, &st);
		goto out;
	}
	if (st.a.prompt == NULL) {
		rc = cli_usage(c, "no PROMPT given (an argument, --prompt-file F, or stdin)");
		goto out;
	}
	if (cli_ask_apply(&s, &st.a, &err) < 0) {
		rc = cli_fail(c, &err);
		goto out;
	}
	if ((rc = cli_submit_prepare(c, &s)) == CLI_OK)
		rc = cli_submit_store(c, &s);
out:
	cli_submit_release(&s);
	free(st.sources.v);
	free(st.prompt_buf);
	free(opts);
	return rc < 0 ? CLI_OK : rc; /* -1: --help was printed */
}

const struct cli_cmd cli_cmd_ask = {
	.name = "ask",
	.synopsis = "taskq ask [--agent NAME] [--model M] [--source NAME=PATH]... [--session KEY [--warm [--idle-timeout DUR]]] [--isolate] [--prompt-file F] [--interactive] [submit options] [PROMPT]",
	.summary = "Submit a prompt to an agent CLI (claude, gemini, codex, opencode).",
	.help = ask_help,
	.run = run_ask,
};

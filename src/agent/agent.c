/*
 * agent.c - agent tasks around their run (agent.h): the command template
 * expanded at spawn time in the isolated workspace (workspace.c), what the
 * agent's registry entry does for a run (its own retries capped, the
 * user's MCP servers hidden, the model its config names: each in the
 * agent's file), and `taskq ask --interactive`.
 *
 * Not here: the store's SQL (queue.h), spawning queued tasks (spawn.c; the
 * interactive agent is the one exception, because it must share the
 * terminal's process group, which a task never does), the result parser.
 */
#include "agent.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>
#define LIBBSD_NETBSD_VIS /* the NetBSD vis API; silences libbsd's #warning */
#include <bsd/vis.h>
#include <cjson/cJSON.h>

#include "proc/loop.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "agent_int.h"
#include "profile.h"
#include "registry.h"
#include "result.h"
#include "scrub.h"

/* ------------------------------------------------------------------ */
/* Queued agent tasks                                                 */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s != NULL && s[1] ? s + 1 : p;
}

/* The parser of t's profile; when the profile is gone from the config (or
 * the config broke since the submit: the task still runs), the agent's or
 * the program's name if it is one of the known CLIs. */
static void pick_parser(const struct tq_task *t, char *buf, size_t n)
{
	struct tq_profiles *ps = NULL;
	const struct tq_profile *p;
	const char *name = NULL;

	if (tq_profiles_load(&ps, NULL) == 0 && (p = tq_profiles_find(ps, t->agent)) != NULL)
		name = p->parser;
	else if (tq_registry_find(t->agent) != NULL)
		name = t->agent;
	else if (tq_registry_find(base_name(t->argv[0])) != NULL)
		name = base_name(t->argv[0]);
	strlcpy(buf, tq_registry_find(name) != NULL ? name : "", n); /* not "none" */
	tq_profiles_free(ps);
}

/*
 * Cap the agent CLI's own retries (taskq's retries and group pauses are in
 * charge) for every run of a CLI taskq recognises (def: the registry's
 * cap_retries; NULL for a CLI with no setting), then in an
 * isolated workspace keep the user's MCP servers from it (isolate). Each
 * says what failed.
 */
static int cap_retries(struct tq_queue *q, const struct tq_task *t,
		       const struct tq_agent_def *def, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err)
{
	int rc = 0;

	if (def->cap_retries != NULL)
		rc = def->cap_retries(q, t, env, ar, err);
	if (rc == 0 && def->isolate != NULL && ar->workspace[0] != '\0')
		rc = def->isolate(env, ar, err);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The model a CLI's own config names (issue 17.9)                    */

/*
 * Some CLIs print no model. When the command line names none
 * (tq_agent_model looks there first), the one the run uses is in the CLI's
 * config, read here at spawn time (the entry's conf_model) as the task's
 * environment and directory point at it, so a result can name it. Each
 * agent's file says which releases it was measured with, against the mock
 * (the model of the request it sent): tests/integration/test_ask_real_clis.sh.
 */

/* ar->conf_model for a run of the CLI def (argv: what runs). */
static void conf_model(const struct tq_agent_def *def, char *const *v, size_t n,
		       const struct tq_env *env, struct tq_agent_run *ar)
{
	free(ar->conf_model);
	ar->conf_model = NULL;
	if (def->conf_model != NULL)
		ar->conf_model = def->conf_model(v, n, env, ar->cwd);
}

/* The stored agent session id goes into argv (--resume ID): only one of
 * the agent's own form (a store written by an older taskq, or by hand, may
 * hold anything, "--dangerously-skip-permissions" included). */
static int check_session(const char *parser, const char *sid, struct tq_err *err)
{
	char why[64], shown[4 * 40 + 1];

	if (tq_result_session_check(parser[0] ? parser : NULL, sid, why, sizeof(why)) == 0)
		return 0;
	strvisx(shown, sid, strnlen(sid, 40), VIS_CSTYLE | VIS_DQ | VIS_NL | VIS_TAB | VIS_OCTAL);
	return tq_err_set(err, TQ_EINVAL,
			  "agent session id \"%s%s\" of the session refused (%s); the "
			  "session cannot continue", shown, strlen(sid) > 40 ? "..." : "", why);
}

int tq_agent_prepare(struct tq_queue *q, const char *home, const struct tq_task *t,
		     struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err)
{
	struct tq_placeholders v = { 0 };
	struct tq_ws_spec ws = { .q = q, .home = home, .prompt = t->prompt };
	const struct tq_agent_def *def;
	char *sid = NULL, *owner = NULL, *pwd = NULL, idbuf[32];
	char pfile[PATH_MAX + 16], mcp[PATH_MAX + 16];
	cJSON *sources = NULL;
	int rc = 0;

	ar->home = home;
	ar->cwd = t->cwd;
	if (t->agent == NULL) {
		/* a plain command that runs an agent CLI (`taskq submit --
		 * NAME ...`), recognised by its program's name */
		def = tq_registry_find(base_name(t->argv[0]));
		if (def == NULL)
			return 0;
		if ((rc = cap_retries(q, t, def, env, ar, err)) == 0)
			conf_model(def, ar->argv != NULL ? ar->argv : t->argv,
				   ar->argv != NULL ? ar->argc : t->argc, env, ar);
		return rc;
	}
	pick_parser(t, ar->parser, sizeof(ar->parser));
	if (t->session != NULL && (rc = tq_queue_session_get(q, t->session, &sid, err)) < 0)
		goto out;
	if (sid != NULL && (rc = check_session(ar->parser, sid, err)) < 0)
		goto out;
	if (t->isolate) {
		if ((rc = tq_workspace_sources(t->sources_json, &sources, err)) < 0)
			goto out;
		if ((owner = tq_workspace_owner(ws.home, t->id, t->attempt, 0, 0)) == NULL) {
			rc = tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
			goto out;
		}
		ws.session_key = t->session;
		ws.owner = owner;
		ws.sources = sources;
		rc = tq_workspace_create(&ws, ar->workspace, sizeof(ar->workspace),
					 &ar->ws_dev, &ar->ws_ino, err);
		if (rc < 0)
			goto out;
		ar->cwd = ar->workspace;
		snprintf(pfile, sizeof(pfile), "%s/" TQ_WORKSPACE_PROMPT, ar->workspace);
		snprintf(mcp, sizeof(mcp), "%s/" TQ_WORKSPACE_MCP, ar->workspace);
		v.prompt_file = pfile;
		v.mcp_config = mcp;
		/* a program that trusts $PWD must see where it really is */
		if (asprintf(&pwd, "PWD=%s", ar->workspace) < 0 ||
		    (rc = tq_env_set(env, pwd, err)) < 0) {
			rc = tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
			goto out;
		}
	}
	snprintf(idbuf, sizeof(idbuf), "%lld", (long long)t->id);
	v.prompt = t->prompt;
	v.workdir = ar->cwd;
	v.session_id = sid;
	v.task_id = idbuf;
	v.model = t->model;
	rc = tq_profile_expand(t->argv, t->argc, &v, &ar->argv, &ar->argc, err);
	if (rc < 0)
		tq_err_prefix(err, "command template");
	else if ((def = tq_registry_find(ar->parser)) != NULL &&
		 (rc = cap_retries(q, t, def, env, ar, err)) == 0)
		conf_model(def, ar->argv, ar->argc, env, ar);
out:
	ar->session_id = sid; /* the stream-input mode resumes it (stream.c) */
	free(owner);
	free(pwd);
	cJSON_Delete(sources);
	return rc;
}

const char *tq_agent_model_asked(const struct tq_task *t, const struct tq_agent_run *ar)
{
	char *const *v = ar != NULL && ar->argv != NULL ? ar->argv : t->argv;
	size_t n = ar != NULL && ar->argv != NULL ? ar->argc : t->argc;

	if (t->model != NULL && t->model[0] != '\0')
		return t->model;
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i], "--") == 0)
			break; /* the prompt and what follows are not options */
		if ((strcmp(v[i], "-m") == 0 || strcmp(v[i], "--model") == 0) && i + 1 < n)
			return v[i + 1][0] != '\0' ? v[i + 1] : NULL;
		if (strncmp(v[i], "--model=", 8) == 0 && v[i][8] != '\0')
			return v[i] + 8;
	}
	return NULL;
}

const char *tq_agent_model(const struct tq_task *t, const struct tq_agent_run *ar)
{
	const char *m = tq_agent_model_asked(t, ar);

	return m != NULL ? m : ar != NULL ? ar->conf_model : NULL;
}

void tq_agent_cleanup(struct tq_agent_run *ar)
{
	tq_profile_argv_free(ar->argv);
	ar->argv = NULL;
	ar->argc = 0;
	if (ar->workspace[0] != '\0')
		tq_workspace_remove(ar->workspace, ar->ws_dev, ar->ws_ino);
	ar->workspace[0] = '\0';
	if (ar->aux[0] != '\0')
		tq_workspace_remove(ar->aux, ar->aux_dev, ar->aux_ino);
	ar->aux[0] = '\0';
	free(ar->conf_model);
	ar->conf_model = NULL;
	free(ar->session_id);
	ar->session_id = NULL;
}

/* ------------------------------------------------------------------ */
/* --interactive                                                      */

/* The agent in the foreground, while we wait for it. */
struct foreground {
	pid_t pid;
	int status;
	int done;                  /* reaped: its pid is no longer ours */
};

static void fg_child(pid_t pid, int status, void *arg)
{
	struct foreground *f = arg;

	if (pid == f->pid) {
		f->status = status;
		f->done = 1;
	}
}

static void fg_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct foreground *f = arg;

	/* INT/QUIT: the terminal sent them to the whole foreground group, the
	 * agent included; passing them on would make one ^C two (two ^C end an
	 * interactive session of some agent CLIs). TERM and HUP are passed on. */
	if ((si->ssi_signo == SIGTERM || si->ssi_signo == SIGHUP) && !f->done)
		kill(f->pid, (int)si->ssi_signo);
}

/*
 * Run argv in the foreground and wait: stdio, session and process group are
 * ours (the spawn's flags: spawn.h), cwd its workspace. The terminal's
 * SIGINT/SIGQUIT reach the agent by themselves (it is in the foreground
 * group); we ignore them meanwhile, and pass SIGTERM and SIGHUP on. The
 * wait is the event loop (loop.h) with no descriptor and no deadline.
 */
static int run_foreground(char *const *argv, char *const *envp, const char *cwd, int *status,
			  struct tq_err *err)
{
	static const int sigs[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD };
	struct tq_child c = TQ_CHILD_INIT;
	struct foreground f = { .pid = -1 };
	struct tq_loop l = { .on_child = fg_child, .on_signal = fg_signal, .arg = &f };
	struct tq_loop drain = TQ_LOOP_INIT;
	sigset_t old, deflt;
	int rc;

	sigemptyset(&deflt);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&deflt, sigs[i]);
	sigaddset(&deflt, SIGPIPE);
	c.argv = argv;
	c.envp = envp;
	c.cwd = cwd;
	c.in = TQ_SPAWN_STDIO_INHERIT;
	c.flags = TQ_SPAWN_KEEP_SESSION;
	c.sigdefault = &deflt;
	/* block first: a signal between the spawn and the wait is not lost */
	if ((l.sigfd = tq_loop_sigfd_open(sigs, sizeof(sigs) / sizeof(sigs[0]), &old, err)) < 0)
		return l.sigfd;
	if ((rc = tq_spawn_start(&c, err)) < 0) {
		tq_loop_sigfd_close(l.sigfd, &old);
		return rc;
	}
	f.pid = c.pid;
	/* until it is reaped; a failed turn (poll out of memory) is tried
	 * again, as there is nothing else to do */
	while (!f.done)
		tq_loop_wait(&l, NULL, NULL, 0, TQ_LOOP_NEVER, NULL);
	/* a last ^C that came with the exit is not ours to die of: read, and
	 * dropped, before the mask is put back */
	drain.sigfd = l.sigfd;
	tq_loop_signals(&drain, NULL);
	tq_loop_sigfd_close(l.sigfd, &old);
	*status = tq_proc_exit_code(f.status);
	return 0;
}

int tq_agent_interactive(const struct tq_agent_interactive *in, int *status,
			 struct tq_err *err)
{
	struct tq_ws_spec ws = { .q = in->q, .home = in->home, .session_key = in->session_key,
			      .prompt = in->prompt };
	struct tq_placeholders v = { 0 };
	struct tq_env env = TQ_ENV_INIT;
	char path[PATH_MAX], pfile[PATH_MAX + 16], mcp[PATH_MAX + 16];
	char *owner = NULL, *pwd = NULL;
	char **argv = NULL;
	cJSON *sources = NULL;
	int64_t start = 0;
	size_t argc = 0;
	dev_t dev = 0;
	ino_t ino = 0;
	int rc;

	path[0] = '\0';
	*status = 0;
	if ((rc = tq_workspace_sources(in->sources_json, &sources, err)) < 0)
		return rc;
	tq_proc_start_time(getpid(), &start, NULL);
	if ((owner = tq_workspace_owner(in->home, 0, 0, getpid(), start)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
		goto out;
	}
	ws.owner = owner;
	ws.sources = sources;
	if ((rc = tq_workspace_create(&ws, path, sizeof(path), &dev, &ino, err)) < 0)
		goto out;
	snprintf(pfile, sizeof(pfile), "%s/" TQ_WORKSPACE_PROMPT, path);
	snprintf(mcp, sizeof(mcp), "%s/" TQ_WORKSPACE_MCP, path);
	v = (struct tq_placeholders){ .prompt = in->prompt, .prompt_file = pfile,
				      .mcp_config = mcp, .workdir = path,
				      .session_id = in->session_id, .model = in->model };
	if ((rc = tq_profile_expand(in->argv, in->argc, &v, &argv, &argc, err)) < 0) {
		tq_err_prefix(err, "interactive command template");
		goto out;
	}
	if ((rc = tq_scrub_env(&env, in->envp, NULL, err)) < 0)
		goto out;
	if (asprintf(&pwd, "PWD=%s", path) < 0) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = tq_env_set(&env, pwd, err)) < 0)
		goto out;
	rc = run_foreground(argv, env.vars, path, status, err);
out:
	if (path[0] != '\0')
		tq_workspace_remove(path, dev, ino);
	tq_profile_argv_free(argv);
	tq_env_release(&env);
	cJSON_Delete(sources);
	free(owner);
	free(pwd);
	return rc;
}

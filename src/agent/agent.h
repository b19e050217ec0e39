/*
 * agent.h - what a worker does for an agent task (t->agent != NULL) around
 * its run: expand the stored command template, set up the isolated
 * workspace, and clean up after; the supervisor's sweep of workspaces a
 * crash left behind; and `taskq ask --interactive`, which runs an agent in
 * the foreground on the terminal in the same kind of workspace.
 *
 * A workspace is a fresh directory HOME/work/taskq-<uuid> (HOME: the state
 * directory; when HOME/work cannot be created, $TMPDIR/taskq-<uuid>), mode
 * 0700, holding:
 *   .taskq-task            who owns it: {"task":ID,"attempt":N,"home":HOME}
 *                          or, for --interactive, {"pid":P,"start":T,...}
 *   prompt.md              the prompt
 *   .mcp.json, .cursor/mcp.json   {"mcpServers":{}}
 *   each agent's files     its registry entry's ws_files (registry.h;
 *                          e.g. its project settings), whatever agent the
 *                          task runs; later, the names its run takes
 *                          (ws_names: a config home of its own)
 *   NAME -> PATH           one symlink per source
 * The empty MCP configs keep the agent from the user's MCP servers where the
 * CLI honours a project file (with the profile's flags: see profiles.json).
 * The tasks of one --session use one workspace path in turn (derived from
 * the key), because some CLIs find a session to resume by the directory
 * it ran in; it is still created fresh and removed after each.
 */
#ifndef TQ_AGENT_H
#define TQ_AGENT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/env.h"
#include "queue/queue.h"

/* The workspace directory's name prefix, its owner file, its prompt and
 * the empty MCP config {mcp_config} names. */
#define TQ_WORKSPACE_PREFIX "taskq-"
#define TQ_WORKSPACE_OWNER ".taskq-task"
#define TQ_WORKSPACE_PROMPT "prompt.md"
#define TQ_WORKSPACE_MCP ".mcp.json"
/* A workspace with no owner file (a crash between mkdir and writing it) is
 * removed by the sweep once it is this old. */
#define TQ_WORKSPACE_ORPHAN_MS (60 * 60 * 1000)
/* Directory depth the removal descends; deeper trees are left for a person. */
#define TQ_WORKSPACE_DEPTH_MAX 128
/* Bytes of a CLI's config file read to cap its retries. */
#define TQ_AGENT_CONFIG_MAX (1024 * 1024)

struct tq_agent_stream;

struct tq_agent_run {
	char **argv;               /* the expanded command (owned), or NULL:
				    * not an agent task, run t->argv */
	size_t argc;
	const char *cwd;           /* where to run: workspace or t->cwd */
	char workspace[PATH_MAX];  /* "" when not isolated */
	char parser[32];           /* output parser name for result.h; "" none */
	dev_t ws_dev;              /* the workspace's identity: cleanup removes */
	ino_t ws_ino;              /* that directory only, never a newer one of
				    * the same name (the next task of a session) */
	char aux[PATH_MAX];        /* the run's private directory (an agent's
				    * overlaid config home), "" when none */
	dev_t aux_dev;
	ino_t aux_ino;
	char *conf_model;          /* the model the CLI's own config names
				    * (its entry's conf_model), or NULL */
	const char *home;          /* the state directory (tq_agent_prepare's
				    * caller's): workspaces live under it */
	char *session_id;          /* the agent session the run resumes (the
				    * session's, {session_id}), or NULL */
};

#define TQ_AGENT_RUN_INIT { .argv = NULL }

/*
 * Prepare task t (claimed, attempt started) to run: for an agent task,
 * resolve {session_id} from the task's session (the agent session of the
 * previous succeeded task with that key, tq_queue_session_get), create the
 * workspace when t->isolate (sources as symlinks, prompt.md, empty MCP
 * configs), expand the template, and adjust env (PWD is the workspace).
 * For an agent task, and for a plain command whose program is an agent of
 * the registry (registry.h), apply its entry: cap the CLI's own retries
 * (issue 17.3: an environment variable, options added to argv, or an
 * overlay of its config home in a private directory, ar->aux), hide the
 * user's MCP servers in an isolated workspace, read the model its config
 * names. Otherwise only ar->cwd = t->cwd. On error (a source gone, the
 * workspace not creatable) returns < 0 with err: the runner records
 * spawn_failed. Whatever it returns, tq_agent_cleanup(ar) undoes it.
 * home is the state directory (the worker's), kept in ar->home: the
 * workspaces are made under it.
 */
int tq_agent_prepare(struct tq_queue *q, const char *home, const struct tq_task *t,
		     struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err);

/* The model task t asked for, for a result that names none (some CLIs
 * print no model): t->model (`taskq ask --model`, or the
 * profile's), else the value of "-m M", "--model M" or "--model=M" in the
 * command run (ar->argv, else t->argv). NULL: none. Points into t or ar. */
const char *tq_agent_model(const struct tq_task *t, const struct tq_agent_run *ar);

/* The model task t asked for: t->model, else the value of "-m M", "--model
 * M" or "--model=M" in the command run; not the one its CLI's config names
 * (tq_agent_model's last resort). NULL: none. Points into t or ar. */
const char *tq_agent_model_asked(const struct tq_task *t, const struct tq_agent_run *ar);

/* The stream-input mode (registry.h) of the agent ar runs, after
 * tq_agent_prepare; NULL when it has none (or ar runs no agent). */
const struct tq_agent_stream *tq_agent_stream_of(const struct tq_agent_run *ar);

/*
 * The command that starts ar's agent in its stream-input mode (stream.c):
 * ar->argv, as tq_agent_prepare expanded it, with the entry's stream args
 * after the program, without the prompt (what follows "--", and an
 * argument equal to prompt) and with only the options the mode takes
 * (registry.h, struct tq_agent_stream). *out is NULL-terminated, *outc
 * elements, freed with tq_profile_argv_free. TQ_EINVAL when the agent has
 * no such mode.
 */
int tq_agent_stream_argv(const struct tq_agent_run *ar, const char *prompt, char ***out,
			 size_t *outc, struct tq_err *err);

/*
 * A warm process (pid, its start time) was started for run ar: ar's
 * isolated workspace and its private directory become the process's (their
 * owner file names it, so the sweep removes them once the process is gone),
 * and tq_agent_cleanup leaves them. Nothing without either. Errors say what
 * failed; what was not handed over is then still the task's.
 */
int tq_agent_stream_keep(struct tq_agent_run *ar, pid_t pid, int64_t start,
			 struct tq_err *err);

/* After the task ended, whatever the outcome: remove the workspace, free. */
void tq_agent_cleanup(struct tq_agent_run *ar);

/*
 * Remove workspaces under HOME/work whose task is finished or gone (never
 * one of a task that is running or waiting), or whose --interactive process
 * is gone; also those in $TMPDIR that name this HOME. A running task's
 * workspace of an earlier attempt (its worker died) goes too. The
 * supervisor calls this at start and now and then. *removed (may be NULL)
 * counts them. An error reading one workspace skips it; the return is < 0
 * only when the store cannot be read.
 */
int tq_workspace_sweep(struct tq_queue *q, const char *home, int *removed,
		       struct tq_err *err);

/*
 * Check one source as a workspace will link it: name is a plain file name
 * (no '/', not "." or "..", not one of the workspace's own files) and path
 * exists and is readable (a directory also searchable). TQ_EINVAL with
 * "source \"NAME\": ..." otherwise. The CLI calls it at submit; the worker
 * again before linking (the path may have gone since).
 */
int tq_workspace_check_source(const char *name, const char *path, struct tq_err *err);

/* `taskq ask --interactive`: what to run. Pointers are borrowed. */
struct tq_agent_interactive {
	const char *home;          /* the state directory: workspaces in HOME/work */
	struct tq_queue *q;        /* to tell whether a session's workspace is in
				    * use; NULL: never reuse one */
	char *const *argv;         /* the profile's interactive template */
	size_t argc;
	const char *prompt;        /* NULL or "": none (the agent starts empty) */
	const char *model;
	const char *session_key;   /* --session: the workspace path to use */
	const char *session_id;    /* the agent session to resume, or NULL */
	const char *sources_json;  /* {"NAME":"PATH",...}, or NULL */
	char *const *envp;         /* the agent's whole environment */
};

/*
 * Create a workspace, run the expanded interactive command in it in the
 * foreground (the caller's stdin, stdout, stderr and process group, so the
 * terminal's ^C reaches the agent; taskq itself ignores the terminal's
 * SIGINT/SIGQUIT meanwhile and passes SIGTERM/SIGHUP on), wait for it,
 * remove the workspace. *status: the agent's exit status the shell's way
 * (its code, or 128+N for signal N). Returns 0, or < 0 with err when the
 * agent could not be started (workspace, a source, exec). The caller's
 * signal mask is restored.
 */
int tq_agent_interactive(const struct tq_agent_interactive *in, int *status,
			 struct tq_err *err);

#endif

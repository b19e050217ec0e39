/*
 * agent_int.h - what the files of src/agent lend each other: the helpers
 * an agent's file (src/agent/NAME.c) may use for its registry entry, and the
 * workspace ones the run (agent.c) uses too. Not for use outside
 * src/agent; everyone else asks the registry (registry.h) and agent.h.
 */
#ifndef TQ_AGENT_INT_H
#define TQ_AGENT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cJSON;
struct tq_agent_run;
struct tq_err;
struct tq_queue;
struct tq_task;

/* The session id form of the CLIs whose ids are uuids (registry.h's
 * session_bad; result.c). */
const char *tq_result_session_uuid(const char *id, size_t len);

/* Append a malloc'd string s to the NULL-terminated *v of *n (takes s,
 * freeing it on failure). 0 or TQ_ENOMEM. (template.c; profile.c uses it
 * too.) */
int tq_profile_argv_push(char ***v, size_t *n, char *s);

/* ------------------------------------------------------------------ */
/* Workspaces (workspace.c)                                           */

/* What goes into a new workspace. */
struct tq_ws_spec {
	struct tq_queue *q;        /* NULL: a session's workspace in use is never
				    * taken over */
	const char *home;
	const char *session_key;   /* NULL: a random name */
	const char *owner;         /* the owner file's JSON */
	const char *prompt;        /* NULL: an empty prompt.md */
	const struct cJSON *sources; /* checked; NULL: none */
	int bare;                  /* only the owner file (a run's private
				    * directory, not a place to work in) */
};

/* Make a workspace: path (n bytes) receives its absolute path, *dev and
 * *ino its identity. On failure nothing is left behind and path is "". */
int tq_workspace_create(const struct tq_ws_spec *s, char *path, size_t n, dev_t *dev,
			ino_t *ino, struct tq_err *err);

/* Remove the workspace at path if it is still (dev, ino). */
void tq_workspace_remove(const char *path, dev_t dev, ino_t ino);

/* The owner file's JSON for a task (pid 0), or for an interactive process
 * (pid, its start time), malloc'd; NULL when out of memory. */
char *tq_workspace_owner(const char *home, int64_t task, int attempt, pid_t pid, int64_t start);

/* The sources of a task ({"NAME": "PATH", ...}, or NULL), each checked
 * (tq_workspace_check_source). *out NULL when there are none. */
int tq_workspace_sources(const char *json, struct cJSON **out, struct tq_err *err);

/* Write text as the new file name in dfd (0600; refuses to follow or
 * replace anything). Errors say "workspace: create NAME". */
int tq_workspace_write(int dfd, const char *name, const char *text, struct tq_err *err);

/* The private directory of run ar of task t (ar->aux), made on first
 * need, open as *dfd. */
int tq_workspace_aux(struct tq_queue *q, const struct tq_task *t, struct tq_agent_run *ar,
		     int *dfd, struct tq_err *err);

/* ------------------------------------------------------------------ */
/* A CLI's own config (cliconf.c)                                     */

/* A whole small file (at most max bytes), malloc'd and terminated; NULL
 * when it cannot be read. */
char *tq_cliconf_read(const char *path, size_t max);

/* Strip // and / * * / comments outside strings, in place. */
void tq_cliconf_strip_comments(char *s);

/* argv with extra inserted after its first element, into ar->argv. */
int tq_cliconf_argv_insert(struct tq_agent_run *ar, char *const *argv, size_t argc,
			   char *const *extra, size_t nextra, struct tq_err *err);

/* A private copy of the user's config directory user as dir/name (dfd:
 * dir) with file's text changed, every other entry linked (cliconf.c says
 * all). */
int tq_cliconf_overlay(int dfd, const char *dir, const char *name, const char *user,
		       const char *keep, const char *const *ahead, const char *file,
		       const char *text, const char *what, struct tq_err *err);

/* The value of option name (or alias) last given in argv before "--". */
const char *tq_cliconf_opt(char *const *v, size_t n, const char *name, const char *alias);

#endif

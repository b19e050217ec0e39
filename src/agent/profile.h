/*
 * profile.h - agent profiles: how to run an agent CLI (claude, gemini,
 * codex, opencode, or one the user defines) unattended.
 *
 * Built-in profiles are data (profiles.json at the top of the tree, compiled
 * in; its "_doc" is the manual of the format); $TASKQ_CONFIG, else
 * $XDG_CONFIG_HOME/taskq/config.json, else ~/.config/taskq/config.json may
 * override or add profiles under its "profiles" key, field by field (the
 * same file holds the classification rules of src/classify/rules.c under
 * "rules"; each module reads only its own keys).
 *
 * A command template is a list of argv elements with placeholders {prompt},
 * {prompt_file}, {mcp_config}, {workdir}, {session_id}, {task_id},
 * {model}. An element whose placeholder has no value is dropped; an element
 * written "{?NAME}TEXT" is TEXT when NAME has a value and dropped otherwise
 * (so "{?session_id}--resume", "{session_id}" adds the pair only when
 * resuming). See tq_profile_expand.
 *
 * Nothing here prints, exits or touches the store; safe to use in the CLI
 * and in a worker.
 */
#ifndef TQ_PROFILE_H
#define TQ_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* A prompt longer than this goes on the agent's stdin (when its profile
 * can take it there) instead of in one argument: Linux refuses a single
 * argument of 128 KiB or more (MAX_ARG_STRLEN) with E2BIG at exec. */
#define TQ_PROMPT_ARG_MAX (100 * 1024)
/* Bytes of a config file that holds profiles. */
#define TQ_PROFILE_CONFIG_MAX (1024 * 1024)
/* Bytes of a profile name. */
#define TQ_PROFILE_NAME_MAX 64

struct tq_profile {
	char *name;
	char **argv;       /* the queued command's template, NULL-terminated */
	size_t argc;
	char **interactive; /* the --interactive template, or NULL: none */
	size_t ninteractive;
	char *parser;      /* output parser: an agent of the registry
			    * (registry.h), or "none" */
	char **env_set;    /* "K=V" set in the task's environment */
	size_t nenv_set;
	char **env_unset;  /* names removed from it */
	size_t nenv_unset;
	char *model;       /* default model, or NULL */
	int isolate;       /* run in an isolated workspace by default */
	int64_t timeout_ms; /* default task timeout for this agent; 0: taskq's */
	int64_t stall_timeout_ms; /* default --stall-timeout; 0: off */
	int warm;          /* "warm": ask --session tasks are --warm by default */
	int64_t idle_timeout_ms; /* "idle_timeout": --idle-timeout's default;
				  * 0: taskq's (TQ_DEFAULT_IDLE_TIMEOUT_MS) */
	char *stdin_prompt; /* what replaces an element holding {prompt} when the
			     * prompt goes on stdin ("": drop it); NULL: this
			     * CLI cannot read its prompt from stdin */
};

struct tq_profiles; /* every profile known: built-in plus the user's */

/* Load the built-in profiles and the user's config over them. A broken
 * config is TQ_EINVAL with a message naming the file and what is wrong. */
int tq_profiles_load(struct tq_profiles **pp, struct tq_err *err);

/* The same with the config file named: path NULL looks it up as above
 * (a missing default file is fine; a missing $TASKQ_CONFIG is an error),
 * "" reads none (built-in profiles only), anything else must exist. */
int tq_profiles_load_file(struct tq_profiles **pp, const char *path, struct tq_err *err);

void tq_profiles_free(struct tq_profiles *p);

/* The profile called name, or NULL. The default profile (name NULL) is the
 * config's "default_agent", else "claude". */
const struct tq_profile *tq_profiles_find(const struct tq_profiles *p, const char *name);

/* Known profile names, comma-separated, for messages ("claude, codex, ..."). */
void tq_profiles_names(const struct tq_profiles *p, char *buf, size_t n);

/* Values for the placeholders; NULL (or ""): no value. */
struct tq_placeholders {
	const char *prompt, *prompt_file, *mcp_config, *workdir, *session_id,
		*task_id, *model;
};

/* Expand template argv (argc elements) with values into *out (a malloc'd
 * NULL-terminated array of malloc'd strings, *outc elements; free with
 * tq_profile_argv_free). Values are inserted as they are, never expanded
 * again. An unknown placeholder is TQ_EINVAL naming it; *out is NULL on
 * any error. */
int tq_profile_expand(char *const *argv, size_t argc, const struct tq_placeholders *v,
		      char ***out, size_t *outc, struct tq_err *err);
void tq_profile_argv_free(char **v);

/* Check a template: TQ_EINVAL for an unknown placeholder, naming it and the
 * element. */
int tq_profile_check(char *const *argv, size_t argc, struct tq_err *err);

/* 1 if the element refers to placeholder name ("prompt" finds "{prompt}",
 * "--prompt={prompt}" and "{?prompt}TEXT"). */
int tq_profile_uses(const char *element, const char *name);

/*
 * The template for a run whose prompt goes on stdin: argv (argc elements)
 * with each element that uses {prompt} replaced by repl, or dropped when
 * repl is "". *out as for tq_profile_expand (a copy; the template keeps
 * its other placeholders).
 */
int tq_profile_prompt_on_stdin(char *const *argv, size_t argc, const char *repl,
			       char ***out, size_t *outc, struct tq_err *err);

#endif

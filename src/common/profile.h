/*
 * profile.h - agent profiles: how to run an agent CLI (claude, gemini,
 * codex, opencode, or one the user defines) unattended.
 *
 * Built-in profiles are data (profiles.json at the top of the tree, compiled
 * in); $XDG_CONFIG_HOME/taskq/config.json (or $TASKQ_CONFIG) may override
 * or add profiles under its "profiles" key, field by field.
 *
 * A command template is a list of argv elements with placeholders {prompt},
 * {prompt_file}, {mcp_config}, {workdir}, {session_id}, {task_id},
 * {model}. An element whose placeholder has no value is dropped; an element
 * written "{?NAME}TEXT" is TEXT when NAME has a value and dropped otherwise
 * (so "{?session_id}--resume", "{session_id}" adds the pair only when
 * resuming). See tq_profile_expand.
 */
#ifndef TQ_PROFILE_H
#define TQ_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct tq_profile {
	char *name;
	char **argv;       /* the template, NULL-terminated */
	size_t argc;
	char *parser;      /* output parser: claude, gemini, codex, opencode, none */
	char **env_set;    /* "K=V" set in the task's environment */
	size_t nenv_set;
	char **env_unset;  /* names removed from it */
	size_t nenv_unset;
	char *model;       /* default model, or NULL */
	int isolate;       /* run in an isolated workspace by default */
	int64_t timeout_ms; /* default task timeout for this agent; 0: taskq's */
};

struct tq_profiles; /* every profile known: built-in plus the user's */

/* Load the built-in profiles and the user's config over them. A broken
 * config is TQ_EINVAL with a message naming the file and what is wrong. */
int tq_profiles_load(struct tq_profiles **pp, struct tq_err *err);
void tq_profiles_free(struct tq_profiles *p);

/* The profile called name, or NULL. The default profile (name NULL) is the
 * config's "default_agent", else "claude". */
const struct tq_profile *tq_profiles_find(const struct tq_profiles *p, const char *name);

/* Known profile names, comma-separated, for messages ("claude, codex, ..."). */
void tq_profiles_names(const struct tq_profiles *p, char *buf, size_t n);

/* Values for the placeholders; NULL: no value. */
struct tq_placeholders {
	const char *prompt, *prompt_file, *mcp_config, *workdir, *session_id,
		*task_id, *model;
};

/* Expand template argv (argc elements) with values into *out (a malloc'd
 * NULL-terminated array of malloc'd strings, *outc elements; free with
 * tq_profile_argv_free). An unknown placeholder is TQ_EINVAL. */
int tq_profile_expand(char *const *argv, size_t argc, const struct tq_placeholders *v,
		      char ***out, size_t *outc, struct tq_err *err);
void tq_profile_argv_free(char **v);

#endif

/*
 * scrub.h - the variables left out of a task's environment because an agent
 * CLI set them for its own children (CLAUDECODE, GEMINI_CLI, CODEX_THREAD_ID,
 * OPENCODE, AGENT, ...): a task submitted from inside an agent must not run
 * as part of that agent's session.
 *
 * The list is data: agent-env.json at the top of the tree (compiled in; its
 * "_doc" is the manual of the format, and each entry says where it was
 * found), plus the user's config file's "scrub_env" array (same shape; an
 * entry of a built-in id replaces it, {"id": ID, "disabled": true} removes
 * it). An entry names variables, or prefixes, and may apply only "when"
 * the environment holds the agent's marker (Gemini's GIT_CONFIG_GLOBAL is a
 * user's own setting elsewhere). tq_scrub_env applies it at submit and at
 * spawn.
 *
 * Nothing here prints or exits.
 */
#ifndef TQ_SCRUB_H
#define TQ_SCRUB_H

#include <stddef.h>

#include "common/env.h"
#include "common/err.h"

/* Bytes of a config file read for its "scrub_env" (as for profiles). */
#define TQ_SCRUB_CONFIG_MAX (1024 * 1024)

struct tq_scrub; /* a loaded list */

/*
 * Load the built-in list and the user's config over it. path: the config
 * file, NULL for the default location ($TASKQ_CONFIG, ...), "" for the
 * built-in list alone. A config that is not JSON, an entry with an unknown
 * key, no id, a bad name, or disabling an id no built-in has is TQ_EINVAL
 * naming the file and the entry. *out owns the list (tq_scrub_free); NULL
 * on failure.
 */
int tq_scrub_load(struct tq_scrub **out, const char *path, struct tq_err *err);
void tq_scrub_free(struct tq_scrub *s);

/*
 * The list every environment is built with: loaded on first use with the
 * default config, or the built-in list alone when the user's config is
 * broken (a typo must not let agent markers through, nor stop a submit;
 * tq_scrub_default_error says what was wrong). Lives until exit. NULL only
 * when out of memory.
 */
const struct tq_scrub *tq_scrub_default(void);
/* Why the user's config was not used by tq_scrub_default, or NULL. */
const char *tq_scrub_default_error(void);

/*
 * 1 if the variable name (n bytes, no '=') is to be left out of an
 * environment src (NULL-terminated "K=V" strings, for the "when" markers;
 * NULL: no marker is present), by list s (NULL: none) or by extra, a
 * comma-separated list of names ($TASKQ_SCRUB_ENV; NULL or "" for none).
 */
int tq_scrub_match(const struct tq_scrub *s, const char *name, size_t n, char *const *src,
		   const char *extra);

/*
 * 1 if name (a variable name, without "=") is on the scrub list
 * (tq_scrub_default: built in, and the user's "scrub_env") without a "when"
 * condition, or on extra, a comma-separated list of names such as the value
 * of $TASKQ_SCRUB_ENV (NULL or "" for none; empty items and spaces around
 * names are ignored). Case-sensitive, as variable names are.
 */
int tq_scrub_has(const char *name, const char *extra);

/*
 * Fill e (which must be empty: TQ_ENV_INIT or released) with copies of the
 * entries of src (a NULL-terminated environ-style array; NULL is empty),
 * leaving out every scrubbed name (tq_scrub_match with tq_scrub_default over
 * src: an entry with a "when" marker applies when src holds the marker;
 * with extra) and entries with no "=" (tq_env_copy). Order and duplicates
 * are kept. Returns 0 or TQ_ENOMEM (e is left empty).
 */
int tq_scrub_env(struct tq_env *e, char *const *src, const char *extra,
		 struct tq_err *err);

#endif

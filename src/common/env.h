/*
 * env.h - the environment a task runs with: the submitter's, minus a scrub
 * list, plus the user's --env / --unset / --clean-env changes.
 *
 * The scrub list (agent/scrub.h, which builds a task's environment with
 * tq_env_copy) holds variables that describe the submitting process rather
 * than the user's wishes: an agent CLI marks its own children with them
 * (CLAUDECODE=1 makes a nested `claude` refuse to start or change behaviour,
 * the session id would tie the task to a session that has ended; GEMINI_CLI,
 * CODEX_THREAD_ID, OPENCODE, AGENT, ...). The user's own settings
 * (CLAUDE_CODE_MAX_RETRIES, ANTHROPIC_API_KEY, base URLs) pass through.
 * $TASKQ_SCRUB_ENV (comma-separated names) adds to the list; the caller
 * passes its value in, so the same code serves the CLI at submit and a
 * worker at spawn time.
 *
 * Entries are "K=V" byte strings; any byte but NUL is kept exactly. Nothing
 * here prints or exits; allocation failure is TQ_ENOMEM and leaves the
 * struct as it was before the call (still valid, still to be released).
 */
#ifndef TQ_ENV_H
#define TQ_ENV_H

#include <stddef.h>

#include "err.h"

/* The variable whose comma-separated names are scrubbed too. */
#define TQ_ENV_SCRUB_VAR "TASKQ_SCRUB_ENV"

/*
 * A growable environment. vars holds n "K=V" strings followed by a NULL, so
 * it can be handed to execve as is; every string and the array are owned.
 */
struct tq_env {
	char **vars;
	size_t n;
	size_t cap;
};

#define TQ_ENV_INIT { NULL, 0, 0 }

/*
 * 1 if a value of this variable is likely a credential: its name contains
 * KEY, TOKEN, SECRET or PASSWORD, in any case. Used to mask values on
 * display; false positives (MONKEY) only cost a masked value.
 */
int tq_env_looks_secret(const char *name);

/* Length of the name part of "K=V" (up to the first '='; strlen if none). */
size_t tq_env_name_len(const char *entry);

/*
 * 1 if tq_env_copy is to leave out the entry of src whose name is name
 * (n bytes, no '='); src is the whole array being copied (a rule may look
 * for a marker in it), arg the caller's.
 */
typedef int tq_env_drop_fn(const char *name, size_t n, char *const *src, void *arg);

/*
 * Fill e (which must be empty: TQ_ENV_INIT or released) with copies of the
 * entries of src (a NULL-terminated environ-style array; NULL is empty),
 * leaving out every entry drop (NULL: none) says to and entries with no "="
 * (no program can look them up by name). Order and duplicates are kept.
 * Returns 0 or TQ_ENOMEM (e is left empty).
 */
int tq_env_copy(struct tq_env *e, char *const *src, tq_env_drop_fn *drop, void *arg,
		struct tq_err *err);

/*
 * Set "K=V": replaces the first entry named K in place and removes any later
 * duplicates, or appends. TQ_EINVAL if kv has no '=' or an empty name;
 * TQ_ENOMEM. e is unchanged on failure.
 */
int tq_env_set(struct tq_env *e, const char *kv, struct tq_err *err);

/* Remove every entry named name. Returns how many were removed. */
size_t tq_env_unset(struct tq_env *e, const char *name);

/* The value of name (pointing into e), or NULL if absent. */
const char *tq_env_get(const struct tq_env *e, const char *name);

/* Total bytes of the entries, each with its NUL (what the store keeps). */
size_t tq_env_bytes(const struct tq_env *e);

/* Free what e owns and reset it to empty. NULL is fine. */
void tq_env_release(struct tq_env *e);

#endif

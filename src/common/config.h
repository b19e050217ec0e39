/*
 * config.h - the user's config file: $TASKQ_CONFIG, else
 * $XDG_CONFIG_HOME/taskq/config.json, else ~/.config/taskq/config.json. One
 * JSON object shared by several modules, each reading only its own keys:
 * "profiles" and "default_agent" (agent/profile.c), "rules"
 * (classify/rules.c), "scrub_env" (agent/scrub.c), "max_warm"
 * (cli/cmd_serve.c: serve's --max-warm).
 *
 * Nothing here prints or exits.
 */
#ifndef TQ_CONFIG_H
#define TQ_CONFIG_H

#include <stddef.h>

#include "err.h"

/*
 * Its path: $TASKQ_CONFIG (then it must exist), else
 * $XDG_CONFIG_HOME/taskq/config.json, else ~/.config/taskq/config.json.
 * 0 with buf set; 1 when there is none to look for (no HOME).
 */
int tq_config_path(char *buf, size_t n, int *must_exist, struct tq_err *err);

/* Read a config file whole (at most max bytes). *text (malloc'd,
 * NUL-terminated) NULL when it does not exist and need not; one that must
 * exist and does not is TQ_ENOTFOUND. */
int tq_config_read(const char *path, int must_exist, size_t max, char **text,
		   size_t *len, struct tq_err *err);

/*
 * From now on, keep what tq_config_read reads: a later read of the same
 * path gets a copy of the first one's text (or its absence) without
 * opening the file again. For a short-lived process (a CLI command, where
 * main reads the file for "database" and the environment's scrub reads it
 * for "scrub_env"); never for a long-running one, which reads the file
 * again to see a user's edit (a worker's agent profiles, per task).
 */
void tq_config_keep(void);

struct cJSON;
/* Parse a config file's text (n bytes) as one JSON value with nothing but
 * white space after it; TQ_EINVAL names file and the line and column of the
 * error. *out: the document (cJSON_Delete it). */
int tq_config_parse(const char *file, const char *text, size_t n, struct cJSON **out,
		    struct tq_err *err);

#endif

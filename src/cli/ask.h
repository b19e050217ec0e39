/*
 * ask.h - turning an agent request into a task spec: shared by `taskq ask`
 * (cmd_ask.c) and agent lines of `taskq submit --file` (import.c).
 */
#ifndef TQ_CLI_ASK_H
#define TQ_CLI_ASK_H

#include "submit.h"

struct cli_ask {
	const char *agent;          /* profile name; NULL: the default profile */
	const char *model;          /* NULL: the profile's default, if any */
	const char *prompt;         /* the prompt text (required) */
	const char *const *sources; /* "NAME=PATH" strings */
	size_t nsources;
	int isolate;                /* 1: --isolate; 0: the profile's default */
};

/*
 * Fill s->spec for an agent task from the profile named a->agent: argv from
 * the profile's command template (placeholders kept, expanded by the worker
 * at spawn), agent, model, prompt, isolate, sources_json (each source
 * checked to exist and be readable: a clear usage error otherwise), the
 * profile's environment settings added to s->sets/unsets (so call it before
 * cli_submit_prepare). Owned memory goes to cli_submit_own.
 *
 * Returns 0, or TQ_EINVAL (unknown profile: the message names the known
 * ones; a missing or unreadable source; an empty prompt) or TQ_ENOMEM with
 * a one-line message in err that does not name the command, so that ask
 * prints it as is and the --file importer prefixes its line number.
 */
int cli_ask_apply(struct cli_submit *s, const struct cli_ask *a, struct tq_err *err);

#endif

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
	int isolate;                /* 1: --isolate; -1: --no-isolate; 0: the
				     * profile's default (sources imply 1) */
	int keep_timeout;           /* 1: the timeout was given (--timeout):
				     * the profile's default timeout does not
				     * replace s->spec.timeout_ms */
	int keep_stall;             /* likewise --stall-timeout and the
				     * profile's stall_timeout */
	int warm;                   /* 1: --warm; -1: --no-warm; 0: the
				     * profile's "warm" (with a session) */
	int64_t idle_timeout_ms;    /* --idle-timeout; 0: not given (the
				     * profile's, else TQ_DEFAULT_IDLE_TIMEOUT_MS) */
};

/* Bytes of a prompt (argument, --prompt-file, stdin). */
#define CLI_ASK_PROMPT_MAX (8 * 1024 * 1024)

/*
 * Fill s->spec for an agent task from the profile named a->agent: argv from
 * the profile's command template (placeholders kept, expanded by the worker
 * at spawn), agent, model, prompt, isolate, sources_json (each source
 * checked to exist and be readable: a clear usage error otherwise; a
 * relative PATH is taken from the current directory), the name (the
 * profile's, unless s->spec.name is set), the profile's timeout (unless
 * a->keep_timeout) and stall timeout (unless a->keep_stall), the profile's environment settings added to
 * s->sets/unsets (before the user's own --env, which win; a variable the
 * user --unset is not set by the profile; so call it before
 * cli_submit_prepare). A prompt longer than TQ_PROMPT_ARG_MAX goes on the
 * task's stdin (spec.stdin_mode TQ_STDIN_FILE) with the template's {prompt}
 * elements replaced as the profile says; TQ_EINVAL when the profile cannot
 * take it there or the user gave a stdin of their own. Owned memory goes to
 * cli_submit_own; a->prompt is borrowed and must live until the store.
 *
 * A warm task (a->warm, or the profile's "warm" for a task of a session;
 * issue 19) gets spec.warm and its idle timeout; refused with TQ_EINVAL:
 * --warm without a session, --idle-timeout on a task that is not warm, and
 * --warm for an agent whose registry entry has no stream-input mode (the
 * message names the agent).
 *
 * Returns 0, or TQ_EINVAL (unknown profile: the message names the known
 * ones; a missing or unreadable source; an empty prompt) or TQ_ENOMEM with
 * a one-line message in err that does not name the command, so that ask
 * prints it as is and the --file importer prefixes its line number.
 */
int cli_ask_apply(struct cli_submit *s, const struct cli_ask *a, struct tq_err *err);

struct tq_queue;
struct tq_task;

/*
 * `taskq ask --wait`, once the wait is over (cmd_submit.c calls it when
 * s->wait_result): task t ended (done) or the wait ran out. Ended: print
 * its result as `taskq result` does (the text; with json the result
 * object), a line on stderr when it did not succeed (its state and
 * reason), and return the task's status (cli_task_status: 0, its exit
 * code, 124 timed out, 128+N). Not ended: one line on stderr saying how to
 * get the result later, and 124, as `taskq wait` does when it times out.
 */
int cli_ask_waited(const struct cli_ctx *c, struct tq_queue *q, const struct tq_task *t,
		   int done, int json);

/*
 * Print task t's last agent result as `taskq result` does (cmd_result.c):
 * the text exactly (escaped line by line on a terminal), or with json the
 * result object. CLI_OK, or an exit code after printing the error (no
 * result: "task N has no result: ..."; exit 1).
 */
int cli_result_print(const struct cli_ctx *c, struct tq_queue *q, const struct tq_task *t,
		     int json);

#endif

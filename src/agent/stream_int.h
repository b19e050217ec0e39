/*
 * stream_int.h - a turn in an agent's stream-input mode (registry.h, struct
 * tq_agent_stream; result.h, tq_result_parser_stream): what the turn keeps
 * in its result parser, and the helpers its protocol's functions use: what
 * to write to the process, JSON-RPC 2.0 lines (rpc.c), and the Agent
 * Client Protocol that more than one CLI speaks (acp.c). Not for use
 * outside src/agent.
 *
 * A protocol's functions run inside the parser's calls: begin inside
 * tq_result_parser_stream (the turn's arguments are in st->arg then, and
 * only then), read inside tq_result_feed for each object, interrupt inside
 * tq_result_interrupt. They never block and never fail: out of memory, a
 * line is not queued, and the turn ends by its timeout.
 */
#ifndef TQ_STREAM_INT_H
#define TQ_STREAM_INT_H

#include <stdint.h>

#include "result.h"
#include "result_int.h"

struct cJSON;

/* A request id: "taskq-TASK-ATTEMPT-N". */
#define TQ_RPC_ID_MAX 64

struct stream_turn {
	const struct tq_agent_stream *def;
	const struct tq_stream_turn *arg; /* begin only: the turn's arguments */
	int phase;                 /* the protocol's own */
	int quiet;                 /* the process's start: not the turn's output */
	int fresh;                 /* the process was started for this turn */
	int n;                     /* requests sent */
	char ids[TQ_RPC_ID_MAX - 12]; /* "taskq-TASK-ATTEMPT-" */
	char wait[TQ_RPC_ID_MAX];  /* the request whose answer is awaited */
	char *sid;                 /* the conversation (a session, a thread) */
	char *turn;                /* the turn running, where it has an id */
	int interrupt_asked;       /* before the turn's id was known */
	char *prompt, *model, *cwd, *resume, *extra;
	struct text in;            /* what to write to the process */
	int64_t not_before;        /* wall ms: nothing written before */
	int settle_on_release;     /* quiet until the held input is taken */
	int fresh_session;         /* the turn opened its session (ACP) */
	int settled;               /* the agent said its start is over (ACP) */
	char state[TQ_STREAM_STATE_MAX];
};

/* ------------------------------------------------------------------ */
/* Writing (rpc.c)                                                    */

/* Queue line s and a newline for the process. */
void tq_stream_write(struct tq_result_parser *p, const char *s);

/* Queue o as one line (unformatted JSON), and delete o (NULL: nothing). */
void tq_stream_write_json(struct tq_result_parser *p, struct cJSON *o);

/* The turn's state for the next turn on its process: "i" (started, no
 * conversation yet) or "i ID" (its conversation ID), or "" (nothing to
 * keep). */
void tq_stream_set_state(struct tq_result_parser *p, const char *conv);

/* The conversation a state holds ("i ID": ID), or NULL; whether the
 * process behind a state was started (any state but ""). */
const char *tq_stream_state_conv(const char *state);

/* The turn ends in error: the result is an error whose text is what
 * ("session/load ID"; NULL: nothing) and the JSON-RPC error's message (and
 * its data's details when a string), or just what when error is NULL. */
void tq_stream_fail(struct tq_result_parser *p, const char *what, const struct cJSON *error);

/* The answer to the request that opens the turn's conversation (verb:
 * "session/load"): 0 when it opened conversation id (NULL: the answer
 * named none; the one resumed, st->resume, when it was resumed), which is
 * then the turn's (st->sid), the result's session and the state's; -1 when
 * error (or no id) says it failed: the turn ends in error, saying verb and
 * the id resumed. */
int tq_stream_opened(struct tq_result_parser *p, const char *verb, const struct cJSON *error,
		     const char *id);

/* ------------------------------------------------------------------ */
/* JSON-RPC 2.0 (rpc.c)                                               */

/* Queue a request (params: taken, NULL: none); its id is the next of the
 * turn, copied into st->wait, which it returns. */
const char *tq_rpc_request(struct tq_result_parser *p, const char *method,
			   struct cJSON *params);

/* Queue a notification (params taken). */
void tq_rpc_notify(struct tq_result_parser *p, const char *method, struct cJSON *params);

/* Answer request o (the agent's) with result (taken), or refuse it with an
 * error (code, message). */
void tq_rpc_answer(struct tq_result_parser *p, const struct cJSON *o, struct cJSON *result);
void tq_rpc_refuse(struct tq_result_parser *p, const struct cJSON *o, int code,
		   const char *msg);

/* Whether o answers the request id (a result or an error, no method). */
int tq_rpc_answers(const struct cJSON *o, const char *id);

/* Whether o is a request of the agent's (a method and an id), and a
 * notification (a method, no id). */
int tq_rpc_is_request(const struct cJSON *o);
int tq_rpc_is_notification(const struct cJSON *o);

/* ------------------------------------------------------------------ */
/* The Agent Client Protocol (acp.c)                                  */

/* What a CLI that speaks ACP tunes of it (struct tq_agent_stream's tune). */
struct tq_acp_tune {
	/* the model is set by session/set_config_option "model" (else it is
	 * the command's, e.g. its -m) */
	int model_by_option;
	/* The wall-clock time (ms) before which session sid must not be
	 * loaded by a process of environment envp, or 0 (a CLI that loses a
	 * session loaded too soon). NULL: none. */
	int64_t (*load_not_before)(const char *sid, char *const *envp);
};

void tq_acp_begin(struct tq_result_parser *p);
void tq_acp_read(struct tq_result_parser *p, const struct cJSON *o);
int tq_acp_interrupt(struct tq_result_parser *p);

/* The needles of an ACP turn's objects. */
extern const char *const tq_acp_needles[];

#endif

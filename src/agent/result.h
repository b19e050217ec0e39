/*
 * result.h - an agent's final result, parsed from its stdout as it arrives
 * (stream-json or json lines; by key, never by key order; unknown keys
 * ignored; a line that is not JSON skipped).
 *
 * What each agent's parser reads of its objects is said at the top of the
 * agent's file, src/agent/NAME.c (shared/research/agent-clis.md has the
 * shapes); the registry (registry.h) names its reader.
 *
 * Tokens are normalised to one meaning, so that sums across agents add
 * up: input_tokens is input not read from or written to a cache,
 * cache_read_tokens and cache_creation_tokens the cached input,
 * output_tokens the output including reasoning/thinking (each agent's file
 * says how its counts map). When the agent reports no cost, cost_usd is
 * negative and is stored as NULL (not as a cost of 0); so is duration_ms
 * when the agent reports no duration of its own: "-", not "0ms".
 *
 * An error result has the error's text as its result (each agent's file
 * says which text).
 *
 * Bounds: a JSON object (one line, or one pretty-printed document) longer
 * than TQ_RESULT_LINE_MAX bytes is skipped; the result text built from
 * pieces is cut at TQ_RESULT_TEXT_MAX bytes. Only lines that can matter are
 * parsed into a cJSON tree (a cheap substring check first), so a multi-MB
 * tool result line costs a scan, not a parse. Memory stays below about
 * twice TQ_RESULT_LINE_MAX, whatever the output's size; the framing buffer
 * is given back after a big line.
 *
 * Framing: an object starts at a '{' that begins a line (after blanks). A
 * line that holds only "{" starts a pretty-printed document, which may run
 * over many lines until its braces balance; any other object must end on
 * its line (after it, only blanks). Anything else is noise and skipped.
 */
#ifndef TQ_RESULT_H
#define TQ_RESULT_H

#include <stddef.h>

#include <stdint.h>

#include "queue/queue.h"

#define TQ_RESULT_LINE_MAX ((size_t)16 * 1024 * 1024)
#define TQ_RESULT_TEXT_MAX ((size_t)16 * 1024 * 1024)

struct tq_result_parser;

/* parser: the name of an agent of the registry (registry.h); any other
 * name (or NULL) gives a parser that finds nothing. NULL on no memory. */
struct tq_result_parser *tq_result_parser_new(const char *parser);
/* NULL is a no-op. */
void tq_result_parser_free(struct tq_result_parser *p);

/* Feed raw stdout bytes, in any chunking (the parser splits lines itself,
 * with a cap on a line's length). p may be NULL (nothing happens). Never
 * fails: when memory runs out the line at hand is skipped. */
void tq_result_feed(struct tq_result_parser *p, const void *buf, size_t len);

/* End of output: parse a last line without '\n'. Then fill r with what was
 * found (r->has_result 0 if nothing); r's strings stay owned by p, valid
 * until the next feed or free. May be called again (same answer). A
 * session id that is not of the agent's own form (see
 * tq_result_session_check) is left out of r: tq_result_note says why. */
void tq_result_end(struct tq_result_parser *p, struct tq_result *r);

/* Whether the agent's result object has been read from what was fed so
 * far: in an agent's stream-input mode (registry.h, struct
 * tq_agent_stream), the end of the turn. 0 for NULL. */
int tq_result_seen(const struct tq_result_parser *p);

/* ------------------------------------------------------------------ */
/* A warm turn (issue 19): the parser speaks the agent's stream-input mode */

/* What a turn's state (tq_result_stream_state) may take, NUL included. */
#define TQ_STREAM_STATE_MAX 256

/* One turn on a warm agent process. Strings are borrowed for the call of
 * tq_result_parser_stream only. */
struct tq_stream_turn {
	const char *prompt;        /* the message */
	const char *model;         /* the model asked for (tq_agent_model_asked),
				    * NULL: the CLI's own */
	const char *cwd;           /* the process's working directory */
	const char *resume;        /* the agent session a process started for
				    * this turn resumes, NULL: a new one */
	const char *state;         /* what the last turn on the process left
				    * (tq_result_stream_state); "" or NULL for
				    * a process started for this turn */
	int fresh;                 /* the process was started for this turn */
	char *const *argv;         /* the agent's expanded one-shot command */
	size_t argc;
	char *const *envp;         /* the process's environment */
	int64_t task;              /* the message's task and attempt: the */
	int attempt;               /* requests' ids ("taskq-T-A-N") */
};

/*
 * A parser for one turn of agent parser's stream-input mode (registry.h,
 * struct tq_agent_stream): it reads the turn's output (its result, as
 * tq_result_end gives it, is the turn's) and says what to write to the
 * process (tq_result_stream_input). NULL when the agent has no such mode,
 * or on no memory.
 */
struct tq_result_parser *tq_result_parser_stream(const char *parser,
						 const struct tq_stream_turn *turn);

/*
 * What to write to the turn's process now, in order: 1 with *buf (malloc'd,
 * the caller's) and *len; 0 when there is nothing, or when it must wait:
 * then *at is the wall-clock time (ms) before which nothing is written, or
 * 0. TQ_ENOMEM. Call after creating the parser and after each feed and
 * interrupt.
 */
int tq_result_stream_input(struct tq_result_parser *p, char **buf, size_t *len, int64_t *at);

/* Whether the output read so far is still the process's start for this
 * turn (a handshake, a resumed session's history replayed), which is not
 * the turn's: not for its log. 0 for a one-shot parser. */
int tq_result_quiet(const struct tq_result_parser *p);

/* As tq_result_feed, while the parser is quiet: it stops after the line
 * that ended the quiet start. Returns the bytes it took (len when still
 * quiet at their end); feed the rest with tq_result_feed. */
size_t tq_result_feed_quiet(struct tq_result_parser *p, const void *buf, size_t len);

/* Interrupt the turn running, keeping the process: 0 with what to write
 * queued (tq_result_stream_input), -1 when the protocol cannot now (then
 * the process must be ended). */
int tq_result_interrupt(struct tq_result_parser *p);

/* The state the turn leaves its process in, for the next turn on it
 * (struct tq_stream_turn's state): a string of at most
 * TQ_STREAM_STATE_MAX - 1 bytes, owned by p. "" for a one-shot parser. */
const char *tq_result_stream_state(const struct tq_result_parser *p);

/* After tq_result_end: NULL, or one line saying why the agent's session id
 * was not kept ("agent session id \"--x\" refused: ...; the session cannot
 * continue"), for the attempt's reason. Owned by p. */
const char *tq_result_note(const struct tq_result_parser *p);

/* Longest agent session id accepted (uuids are 36, the longest measured
 * form 30). */
#define TQ_RESULT_SESSION_MAX 128

/*
 * Is id a session id of the agent whose parser is named: of the form its
 * registry entry checks (session_bad: a uuid, or its own form, each said
 * in the agent's file); for any other parser letters, digits and "-_.:"
 * not starting with '-'. Never one that starts with '-' (it would be read
 * as an option where it is put in argv: --resume ID), is empty, or is longer than TQ_RESULT_SESSION_MAX.
 * 0 if it is; -1 with why (n bytes, "not a uuid") if not.
 */
int tq_result_session_check(const char *parser, const char *id, char *why, size_t n);

#endif

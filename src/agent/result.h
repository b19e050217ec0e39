/*
 * result.h - an agent's final result, parsed from its stdout as it arrives
 * (stream-json or json lines; by key, never by key order; unknown keys
 * ignored; a line that is not JSON skipped).
 *
 * What each parser reads (shared/research/agent-clis.md has the shapes):
 *
 *   claude    the last {"type":"result"} object (stream-json or json):
 *             result (or, on error subtypes that have none, the "errors"
 *             array joined by newlines), is_error, subtype, session_id,
 *             total_cost_usd, duration_ms, num_turns, usage; the model from
 *             the {"type":"system","subtype":"init"} line, else the
 *             modelUsage entry that cost the most.
 *   gemini    -o json: the one (pretty-printed, multi-line) object:
 *             response, session_id, error, stats.models.*.tokens;
 *             -o stream-json: init (session_id, model), the assistant
 *             message contents (concatenated: the result text), and the
 *             result line (status, error, stats).
 *   codex     exec --json: thread.started (thread_id: the session),
 *             item.completed of type agent_message (the last one is the
 *             result text), turn.completed (usage, summed; one turn each),
 *             turn.failed (is_error, its message).
 *   opencode  run --format json: sessionID, text parts (the text of the
 *             last step that had any is the result), step_finish (tokens
 *             and cost, summed; one turn each), error (is_error, its
 *             data.message, subtype its name).
 *
 * Tokens are normalised to Claude's meaning, so that sums across agents
 * add up: input_tokens is input not read from or written to a cache
 * (codex: input_tokens - cached_input_tokens), cache_read_tokens and
 * cache_creation_tokens the cached input, output_tokens the output
 * including reasoning/thinking (gemini: candidates + thoughts; opencode:
 * output + reasoning). When the agent reports no cost (gemini, codex),
 * cost_usd is negative and is stored as NULL (not as a cost of 0); so is
 * duration_ms when the agent reports no duration of its own (codex,
 * opencode, gemini -o json): "-", not "0ms".
 *
 * An error result has the error's text as its result (Claude's API error
 * text, Codex's turn.failed message, Gemini's error.message).
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

#include "queue/queue.h"

#define TQ_RESULT_LINE_MAX ((size_t)16 * 1024 * 1024)
#define TQ_RESULT_TEXT_MAX ((size_t)16 * 1024 * 1024)

struct tq_result_parser;

/* parser: the name of an agent of the registry (registry.h: "claude",
 * "gemini", "codex", "opencode"); any other name (or NULL) gives a parser
 * that finds nothing. NULL on no memory. */
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

/* After tq_result_end: NULL, or one line saying why the agent's session id
 * was not kept ("agent session id \"--x\" refused: ...; the session cannot
 * continue"), for the attempt's reason. Owned by p. */
const char *tq_result_note(const struct tq_result_parser *p);

/* Longest agent session id accepted (uuids are 36, opencode's ids 30). */
#define TQ_RESULT_SESSION_MAX 128

/*
 * Is id a session id of the agent whose parser is named: a uuid for claude,
 * gemini and codex (codex's thread ids, v7), "ses_" and letters and digits
 * for opencode (measured: ses_df1ffcc88ffe7PukM9Ns2Jg3ay); for any other
 * parser letters, digits and "-_.:" not starting with '-'. Never one that
 * starts with '-' (it would be read as an option where it is put in argv:
 * claude --resume ID), is empty, or is longer than TQ_RESULT_SESSION_MAX.
 * 0 if it is; -1 with why (n bytes, "not a uuid") if not.
 */
int tq_result_session_check(const char *parser, const char *id, char *why, size_t n);

#endif

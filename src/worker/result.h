/*
 * result.h - an agent's final result, parsed from its stdout as it arrives
 * (stream-json or json lines; by key, never by key order; unknown keys
 * ignored; a line that is not JSON skipped).
 */
#ifndef TQ_RESULT_H
#define TQ_RESULT_H

#include <stddef.h>

#include "../queue/queue.h"

struct tq_result_parser;

/* parser: "claude", "gemini", "codex", "opencode" (profile.h); any other
 * name (or NULL) gives a parser that finds nothing. NULL on no memory. */
struct tq_result_parser *tq_result_parser_new(const char *parser);
void tq_result_parser_free(struct tq_result_parser *p);

/* Feed raw stdout bytes, in any chunking (the parser splits lines itself,
 * with a cap on a line's length). */
void tq_result_feed(struct tq_result_parser *p, const void *buf, size_t len);

/* End of output: parse a last line without '\n'. Then fill r with what was
 * found (r->has_result 0 if nothing); r's strings stay owned by p. */
void tq_result_end(struct tq_result_parser *p, struct tq_result *r);

#endif

/*
 * fuzz_result.c - libFuzzer harness for the agent output parsers
 * (src/agent/result.h: tq_result_parser_new/feed/end), which read an
 * agent CLI's stdout as it arrives: stream-json or JSON lines from claude,
 * gemini, codex and opencode, or anything else a broken run prints.
 *
 * Input: byte 0 picks the parser (claude, gemini, codex, opencode, or an
 * unknown name) and seeds the chunking; the rest is stdout.
 * Checked beyond "no crash, no sanitizer report, no hang":
 *   - the result does not depend on how the output was split ("in any
 *     chunking", result.h): fed whole, and fed in pieces of 1..64 bytes,
 *     the two results are equal field by field;
 *   - an unknown parser finds nothing;
 *   - strings in a result are NUL-terminated (read with strlen under ASan).
 * A failed check abort()s.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const parsers[] = { "claude", "gemini", "codex", "opencode", "nosuch" };

static void die(const char *parser, const char *what)
{
	fprintf(stderr, "fuzz_result: %s: %s\n", parser, what);
	abort();
}

static int same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static int same_num(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

static void touch_strings(const struct tq_result *r)
{
	volatile size_t n = 0;

	if (r->result)
		n += strlen(r->result);
	if (r->subtype)
		n += strlen(r->subtype);
	if (r->agent_session)
		n += strlen(r->agent_session);
	if (r->model)
		n += strlen(r->model);
	(void)n;
}

static void compare(const char *p, const struct tq_result *a, const struct tq_result *b)
{
	if (a->has_result != b->has_result)
		die(p, "has_result depends on the chunking");
	if (!a->has_result)
		return;
	if (!same_str(a->result, b->result) || !same_str(a->subtype, b->subtype) ||
	    !same_str(a->agent_session, b->agent_session) || !same_str(a->model, b->model))
		die(p, "a string field depends on the chunking");
	if (a->is_error != b->is_error || !same_num(a->cost_usd, b->cost_usd) ||
	    a->duration_ms != b->duration_ms || a->num_turns != b->num_turns ||
	    a->input_tokens != b->input_tokens || a->output_tokens != b->output_tokens ||
	    a->cache_read_tokens != b->cache_read_tokens ||
	    a->cache_creation_tokens != b->cache_creation_tokens)
		die(p, "a number field depends on the chunking");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tq_result_parser *whole, *pieces;
	struct tq_result a, b;
	const char *name;
	uint32_t seed;
	size_t at, n;

	if (size < 1)
		return 0;
	name = parsers[data[0] % 5];
	seed = data[0] * 2654435761u + 1;
	data++;
	size--;

	whole = tq_result_parser_new(name);
	pieces = tq_result_parser_new(name);
	if (whole == NULL || pieces == NULL)
		die(name, "no parser (out of memory?)");
	tq_result_feed(whole, data, size);
	for (at = 0; at < size; at += n) {
		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 64;
		if (n > size - at)
			n = size - at;
		tq_result_feed(pieces, data + at, n);
	}
	tq_result_end(whole, &a);
	tq_result_end(pieces, &b);
	touch_strings(&a);
	touch_strings(&b);
	compare(name, &a, &b);
	if (data[-1] % 5 == 4 && a.has_result)
		die(name, "an unknown parser found a result");
	tq_result_parser_free(whole);
	tq_result_parser_free(pieces);
	return 0;
}

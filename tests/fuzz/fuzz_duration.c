/*
 * fuzz_duration.c - libFuzzer harness for tq_parse_duration and
 * tq_format_duration (src/common/parse.h).
 *
 * The input is the text of a --timeout/--backoff value. Checked beyond "no
 * crash, no sanitizer report": a parse either succeeds with 0 <= ms <=
 * TQ_DURATION_MAX_MS or fails with TQ_EINVAL and a message; and, as the
 * header promises, every formatted duration parses back (to a value in
 * range). Failures abort(), which libFuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what, const char *in)
{
	if (!ok) {
		fprintf(stderr, "fuzz_duration: %s (input \"%s\")\n", what, in);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct tq_err err = TQ_ERR_INIT;
	char buf[64];
	int64_t ms = -1, back = -1;
	int rc;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';   /* a C string, as from argv: stops at a NUL */
	rc = tq_parse_duration(s, &ms, &err);
	if (rc == 0) {
		check(ms >= 0 && ms <= TQ_DURATION_MAX_MS, "parsed duration out of range", s);
		tq_format_duration(ms, buf, sizeof(buf));
		check(memchr(buf, '\0', sizeof(buf)) != NULL, "format not terminated", s);
		rc = tq_parse_duration(buf, &back, &err);
		check(rc == 0, "a formatted duration does not parse back", buf);
		check(back >= 0 && back <= TQ_DURATION_MAX_MS, "parsed-back duration out of range", buf);
	} else {
		check(rc == TQ_EINVAL, "error other than TQ_EINVAL", s);
		check(err.msg[0] != '\0', "error without a message", s);
	}
	free(s);
	return 0;
}

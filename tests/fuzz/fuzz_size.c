/*
 * fuzz_size.c - libFuzzer harness for tq_parse_size, tq_parse_id,
 * tq_parse_int and tq_format_size (src/common/parse.h).
 *
 * The input is the text of a --max-output value (or an id, or a count).
 * Checked beyond "no crash, no sanitizer report": a parse succeeds with a
 * value in its documented range (0..TQ_SIZE_MAX, id >= 1, within
 * [min, max]) or fails with TQ_EINVAL and a message; a formatted size is
 * NUL-terminated within its buffer. abort() on a failed check.
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
		fprintf(stderr, "fuzz_size: %s (input \"%s\")\n", what, in);
		abort();
	}
}

static void failed_well(int rc, const struct tq_err *err, const char *s)
{
	check(rc == TQ_EINVAL, "error other than TQ_EINVAL", s);
	check(err->msg[0] != '\0', "error without a message", s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct tq_err err = TQ_ERR_INIT;
	char buf[32];
	int64_t v = -1;
	int rc;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	rc = tq_parse_size(s, &v, &err);
	if (rc == 0) {
		check(v >= 0 && v <= TQ_SIZE_MAX, "size out of range", s);
		tq_format_size(v, buf, sizeof(buf));
		check(memchr(buf, '\0', sizeof(buf)) != NULL, "format not terminated", s);
	} else {
		failed_well(rc, &err, s);
	}
	err = (struct tq_err)TQ_ERR_INIT;
	rc = tq_parse_id(s, &v, &err);
	if (rc == 0)
		check(v >= 1, "id below 1", s);
	else
		failed_well(rc, &err, s);
	err = (struct tq_err)TQ_ERR_INIT;
	rc = tq_parse_int(s, -5, 1000, &v, &err);
	if (rc == 0)
		check(v >= -5 && v <= 1000, "int out of [min, max]", s);
	else
		failed_well(rc, &err, s);
	free(s);
	return 0;
}

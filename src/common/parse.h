/*
 * parse.h - the one parser for durations, sizes and task ids, and their
 * human formats. Used by every flag and config value that takes one.
 */
#ifndef TQ_PARSE_H
#define TQ_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Longest accepted duration: 100 years, in ms. */
#define TQ_DURATION_MAX_MS ((int64_t)100 * 365 * 24 * 3600 * 1000)
/* Largest accepted size: 1 PiB. */
#define TQ_SIZE_MAX ((int64_t)1 << 50)

/*
 * Parse a duration: one or more NUMBER UNIT pairs ("30s", "5m", "2h", "1d",
 * "1w", "250ms", "1h30m", "1.5h"); a bare number is seconds. Returns 0 and
 * *ms, or TQ_EINVAL with err naming the text and showing an example.
 */
int tq_parse_duration(const char *s, int64_t *ms, struct tq_err *err);

/*
 * Parse a size: NUMBER with an optional binary suffix K, M, G, T, P (also
 * KB, KiB, ...; case-insensitive); a bare number or B is bytes. "1.5G" is
 * accepted, a fraction of a byte is not.
 * Returns 0 and *bytes, or TQ_EINVAL.
 */
int tq_parse_size(const char *s, int64_t *bytes, struct tq_err *err);

/* Parse a task id: a decimal integer >= 1. Returns 0 or TQ_EINVAL. */
int tq_parse_id(const char *s, int64_t *id, struct tq_err *err);

/* Parse a decimal integer within [min, max] (libbsd strtonum). */
int tq_parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
		 struct tq_err *err);

/* "450ms", "12.3s", "3m05s", "2h10m", "3d04h" (each parses back with
 * tq_parse_duration). Always NUL-terminates. */
void tq_format_duration(int64_t ms, char *buf, size_t n);

/* "512B", "1.5K", "50M" (humanize_number). Always NUL-terminates. */
void tq_format_size(int64_t bytes, char *buf, size_t n);

/* ISO-8601 local time "2026-11-22 19:25:43" of a ms timestamp; "-" for 0. */
void tq_format_time(int64_t ms, char *buf, size_t n);

/*
 * Length (1..4) of the valid UTF-8 sequence at s, with its code point in
 * *cp; 0 if s does not start one (a stray continuation byte, an overlong
 * form, a surrogate, past U+10FFFF, or cut short by the end of the string).
 * s is NUL-terminated.
 */
size_t tq_utf8_seq(const unsigned char *s, uint32_t *cp);

/* 1 if the string s is valid UTF-8 (as tq_utf8_seq, and as PostgreSQL's
 * text takes it), else 0. */
int tq_utf8_valid(const char *s);

/*
 * s with every byte that does not start a valid UTF-8 sequence replaced by
 * U+FFFD. Returns 0 when s is valid (nothing allocated), 1 with *out
 * malloc'd when it was not, TQ_ENOMEM.
 */
int tq_utf8_fix(const char *s, char **out);

#endif

/*
 * parse.c - durations, sizes and ids from text, and back; whether text is
 * valid UTF-8.
 *
 * Numbers are parsed by hand here (digits, an optional fraction) because
 * strtod would accept hex, exponents and locale-dependent commas; every
 * accumulation is checked against the bound before it can overflow.
 */
#include "parse.h"

#include <bsd/stdlib.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/*
 * Parse "DIGITS[.DIGITS]" at *p into its whole part and its fraction in
 * millionths; fraction digits past the sixth are dropped. A whole part past
 * INT64_MAX is refused before it can overflow.
 */
static int parse_decimal(const char **p, int64_t *whole, int64_t *micro)
{
	const char *s = *p;
	int64_t w = 0, frac = 0, scale = 100000;
	int digits = 0;

	while (isdigit((unsigned char)*s)) {
		int d = *s++ - '0';
		if (w > (INT64_MAX - d) / 10)
			return -1;
		w = w * 10 + d;
		digits++;
	}
	if (*s == '.') {
		s++;
		while (isdigit((unsigned char)*s)) {
			frac += (*s++ - '0') * scale;
			scale /= 10;
			digits++;
		}
	}
	if (digits == 0)
		return -1;
	*whole = w;
	*micro = frac;
	*p = s;
	return 0;
}

static int64_t unit_ms(const char *u, size_t n)
{
	static const struct { const char *name; int64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "sec", 1000 }, { "m", 60000 },
		{ "min", 60000 }, { "h", 3600000 }, { "d", 86400000 },
		{ "w", 604800000 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == n && strncmp(units[i].name, u, n) == 0)
			return units[i].ms;
	return -1;
}

int tq_parse_duration(const char *s, int64_t *ms, struct tq_err *err)
{
	const char *p = s;
	int64_t total = 0;

	if (s == NULL || *s == '\0')
		goto bad;
	while (*p != '\0') {
		const char *start = p, *u;
		int64_t whole, micro, mult;

		if (parse_decimal(&p, &whole, &micro) < 0)
			goto bad;
		u = p;
		while (isalpha((unsigned char)*p))
			p++;
		if (p == u) {
			if (*p != '\0' || start != s)
				goto bad; /* a bare number must be the whole text */
			mult = 1000;      /* and means seconds */
		} else if ((mult = unit_ms(u, (size_t)(p - u))) < 0) {
			goto bad;
		}
		if (whole > TQ_DURATION_MAX_MS / mult)
			goto bad;
		/* micro is in millionths of a unit; mult is ms per unit */
		total += whole * mult + micro * mult / 1000000;
		if (total > TQ_DURATION_MAX_MS)
			goto bad;
	}
	*ms = total;
	return 0;
bad:
	return tq_err_set(err, TQ_EINVAL,
			  "\"%s\": expected a duration such as 30s, 5m, 2h", s ? s : "");
}

int tq_parse_size(const char *s, int64_t *bytes, struct tq_err *err)
{
	const char *p = s;
	int64_t whole, micro, mult = 1, v;

	if (s == NULL || parse_decimal(&p, &whole, &micro) < 0)
		goto bad;
	if (*p != '\0' && strcasecmp(p, "B") != 0) {
		static const char sfx[] = "KMGTP";
		const char *k = strchr(sfx, toupper((unsigned char)*p));
		if (k == NULL)
			goto bad;
		for (int i = 0; i <= k - sfx; i++)
			mult *= 1024;
		p++;
		if (strcasecmp(p, "") != 0 && strcasecmp(p, "B") != 0 &&
		    strcasecmp(p, "iB") != 0)
			goto bad;
	} else if (micro != 0) {
		goto bad; /* a fraction of a byte ("1.5", "0.5B") */
	}
	if (whole > TQ_SIZE_MAX / mult)
		goto bad;
	/* micro * mult / 1e6 overflows int64 for P; mult is 1024^k, so divide
	 * 2^6 out of both: micro < 2^20, mult >> 6 <= 2^44, fits in uint64. */
	v = whole * mult + (int64_t)((uint64_t)micro * ((uint64_t)mult >> 6) / 15625);
	if (v > TQ_SIZE_MAX)
		goto bad;
	*bytes = v;
	return 0;
bad:
	return tq_err_set(err, TQ_EINVAL,
			  "\"%s\": expected a size such as 512K, 50M, 1G", s ? s : "");
}

int tq_parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
		 struct tq_err *err)
{
	const char *errstr = NULL;
	long long v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s) || *s == '+')
		return tq_err_set(err, TQ_EINVAL, "\"%s\": expected a number",
				  s ? s : "");
	v = strtonum(s, min, max, &errstr);
	if (errstr != NULL)
		return tq_err_set(err, TQ_EINVAL,
				  "\"%s\": expected a number from %lld to %lld (%s)",
				  s, (long long)min, (long long)max, errstr);
	*out = v;
	return 0;
}

int tq_parse_id(const char *s, int64_t *id, struct tq_err *err)
{
	const char *errstr = NULL;
	long long v;

	if (s == NULL || !isdigit((unsigned char)*s))
		goto bad;
	v = strtonum(s, 1, INT64_MAX, &errstr);
	if (errstr != NULL)
		goto bad;
	*id = v;
	return 0;
bad:
	return tq_err_set(err, TQ_EINVAL, "\"%s\": expected a task id (a number such as 42)",
			  s ? s : "");
}

void tq_format_duration(int64_t ms, char *buf, size_t n)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		ms = 0, s = 0;
	if (ms < 1000)
		snprintf(buf, n, "%lldms", (long long)ms);
	else if (s < 60)
		snprintf(buf, n, "%lld.%llds", (long long)s,
			 (long long)(ms % 1000 / 100));
	else if (s < 3600)
		snprintf(buf, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600),
			 (long long)(s % 3600 / 60));
	else
		snprintf(buf, n, "%lldd%02lldh", (long long)(s / 86400),
			 (long long)(s % 86400 / 3600));
}

/* humanize_number scales only as far as the text must shrink to fit its
 * length argument, so it always gets 5 (four characters and the NUL),
 * whatever n is: "512B", "1.5K", "50M", never "52428800B". */
#define SIZE_TEXT 5

void tq_format_size(int64_t bytes, char *buf, size_t n)
{
	if (n < SIZE_TEXT ||
	    humanize_number(buf, SIZE_TEXT, bytes, "", HN_AUTOSCALE,
			    HN_DECIMAL | HN_NOSPACE | HN_B) < 0)
		snprintf(buf, n, "%lld", (long long)bytes);
}

void tq_format_time(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || localtime_r(&t, &tm) == NULL ||
	    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, n, "-");
}

size_t tq_utf8_seq(const unsigned char *s, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, c &= 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		n = 3, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

int tq_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t n;

	while (*p) {
		if ((n = tq_utf8_seq(p, &cp)) == 0)
			return 0;
		p += n;
	}
	return 1;
}

int tq_utf8_fix(const char *s, char **out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t bad = 0, len = 0;
	uint32_t cp;
	char *o;

	for (size_t n; p[len] != '\0'; len += n ? n : 1)
		if ((n = tq_utf8_seq(p + len, &cp)) == 0)
			bad++;
	if (bad == 0)
		return 0;
	*out = o = malloc(len + bad * 2 + 1); /* 1 byte -> 3 bytes of U+FFFD */
	if (o == NULL)
		return TQ_ENOMEM;
	for (size_t i = 0, n; i < len; i += n ? n : 1) {
		if ((n = tq_utf8_seq(p + i, &cp)) == 0) {
			memcpy(o, "\xef\xbf\xbd", 3), o += 3;
			continue;
		}
		memcpy(o, p + i, n), o += n;
	}
	*o = '\0';
	return 1;
}

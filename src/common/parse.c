/*
 * parse.c - durations, sizes and ids from text, and back.
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
#include <string.h>
#include <strings.h>
#include <time.h>

/* Parse "DIGITS[.DIGITS]" at *p into a value scaled by 1e6 (micro-units). */
static int parse_decimal(const char **p, int64_t *micro)
{
	const char *s = *p;
	int64_t whole = 0, frac = 0, scale = 100000;
	int digits = 0;

	while (isdigit((unsigned char)*s)) {
		if (whole > (INT64_MAX / 10 - 9) / 1000000)
			return -1;
		whole = whole * 10 + (*s++ - '0');
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
	*micro = whole * 1000000 + frac;
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
		int64_t micro, mult;

		if (parse_decimal(&p, &micro) < 0)
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
		if (micro / 1000000 > TQ_DURATION_MAX_MS / mult)
			goto bad;
		/* micro is in millionths of a unit; mult is ms per unit */
		total += micro / 1000000 * mult + micro % 1000000 * mult / 1000000;
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
	int64_t micro, mult = 1;

	if (s == NULL || parse_decimal(&p, &micro) < 0)
		goto bad;
	if (*p != '\0') {
		static const char sfx[] = "KMGTP";
		const char *k = strchr(sfx, toupper((unsigned char)*p));
		if (k == NULL || *p == '\0')
			goto bad;
		for (int i = 0; i <= k - sfx; i++)
			mult *= 1024;
		p++;
		if (strcasecmp(p, "") != 0 && strcasecmp(p, "B") != 0 &&
		    strcasecmp(p, "iB") != 0)
			goto bad;
	} else if (micro % 1000000 != 0) {
		goto bad; /* a fraction of a byte */
	}
	if (micro / 1000000 > TQ_SIZE_MAX / mult)
		goto bad;
	*bytes = micro / 1000000 * mult + micro % 1000000 * mult / 1000000;
	if (*bytes > TQ_SIZE_MAX)
		goto bad;
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

void tq_format_size(int64_t bytes, char *buf, size_t n)
{
	if (n < 5 || humanize_number(buf, n, bytes, "", HN_AUTOSCALE,
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

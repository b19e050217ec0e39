/*
 * resets.c - a wall-clock retry time as providers write it: what follows
 * "resets" in "resets 3pm (Europe/Paris)", "resets Jan 5 at 3:45 pm UTC",
 * "resets Monday", and the next such time after now, in the zone named
 * (local time when none is named, or the zone has no tzdata file).
 *
 * A named zone is applied by setting $TZ around mktime and restoring it:
 * the C library has no other way to convert in a zone. So: not
 * thread-safe, and not for use between fork and exec (classify.h says so);
 * $TZ is always restored, to its old value or unset.
 *
 * Invariants: a zone name goes into $TZ only when it is a plain relative
 * name with a file under $TZDIR (or /usr/share/zoneinfo); a time that
 * passed less than JUST_PASSED_MS ago is returned as is (the limit has
 * reset), not pushed to tomorrow.
 */
#include "classify_int.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define JUST_PASSED_MS (15 * 60 * 1000) /* "resets 3pm" read at 3:05pm:
					 * it has reset, not "tomorrow" */

static const char *const wday_names[7] = { "sunday", "monday", "tuesday", "wednesday",
					   "thursday", "friday", "saturday" };
static const char *const mon_names[12] = { "january", "february", "march", "april", "may",
					   "june", "july", "august", "september", "october",
					   "november", "december" };

/* The index of the name that w (n letters, at least 3) abbreviates, or -1. */
static int name_idx(const char *w, size_t n, const char *const *names, int count)
{
	for (int i = 0; n >= 3 && i < count; i++)
		if (n <= strlen(names[i]) && strncasecmp(w, names[i], n) == 0)
			return i;
	return -1;
}

static const char *skip_sp(const char *p)
{
	while (*p == ' ' || *p == ',' || *p == '\t')
		p++;
	return p;
}

static const char *skip_at(const char *p)
{
	p = skip_sp(p);
	if (strncasecmp(p, "at", 2) == 0 && !isalnum((unsigned char)p[2]))
		p = skip_sp(p + 2);
	return p;
}

/* "3pm", "3:45 pm", "15:30", "12am". Returns the text after it, or NULL. */
static const char *parse_hm(const char *p, int *hour, int *min)
{
	int h = 0, m = 0, colon = 0, ampm = 0;
	const char *q = p;

	if (!isdigit((unsigned char)*q))
		return NULL;
	while (isdigit((unsigned char)*q) && q - p < 2)
		h = h * 10 + (*q++ - '0');
	if (*q == ':' && isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2])) {
		m = (q[1] - '0') * 10 + (q[2] - '0');
		colon = 1;
		q += 3;
	}
	if (*q == ' ')
		q++;
	if ((tolower((unsigned char)q[0]) == 'a' || tolower((unsigned char)q[0]) == 'p') &&
	    tolower((unsigned char)q[1]) == 'm' && !isalpha((unsigned char)q[2])) {
		ampm = tolower((unsigned char)q[0]);
		q += 2;
	}
	if (m > 59 || (ampm && (h < 1 || h > 12)) || (!ampm && (!colon || h > 23)))
		return NULL;
	*hour = ampm ? h % 12 + (ampm == 'p' ? 12 : 0) : h;
	*min = m;
	return q;
}

/*
 * What follows "resets": [at] [weekday | month day[,]] [at] [time] [zone],
 * where a zone is "(Area/City)", "(UTC)" or "UTC". 0, or -1 if it names no
 * time or day.
 */
int tq_resets_parse(const char *s, struct clk *k)
{
	const char *p = skip_at(s), *w = p, *q;
	size_t n;
	int i;

	*k = (struct clk){ .wday = -1, .mon = -1, .mday = -1, .hour = -1 };
	while (isalpha((unsigned char)*p))
		p++;
	n = (size_t)(p - w);
	if (n > 0 && (i = name_idx(w, n, wday_names, 7)) >= 0) {
		k->wday = i;
	} else if (n > 0 && (i = name_idx(w, n, mon_names, 12)) >= 0) {
		p = skip_sp(p);
		if (!isdigit((unsigned char)*p))
			return -1;
		k->mday = (int)strtol(p, (char **)&p, 10);
		if (k->mday < 1 || k->mday > 31)
			return -1;
		k->mon = i;
	} else if (n > 0) {
		return -1;
	}
	p = skip_at(p);
	if ((q = parse_hm(p, &k->hour, &k->min)) != NULL)
		p = q;
	if (k->hour < 0 && k->wday < 0 && k->mon < 0)
		return -1;
	p = skip_sp(p);
	if (*p == '(') {
		const char *e = strchr(p, ')');

		if (e != NULL && e - p - 1 > 0 && (size_t)(e - p - 1) < sizeof(k->zone))
			memcpy(k->zone, p + 1, (size_t)(e - p - 1));
	} else if ((strncasecmp(p, "UTC", 3) == 0 || strncasecmp(p, "GMT", 3) == 0) &&
		   !isalnum((unsigned char)p[3])) {
		strcpy(k->zone, "UTC");
	}
	k->utc = strcasecmp(k->zone, "UTC") == 0 || strcasecmp(k->zone, "GMT") == 0 ||
		 strcasecmp(k->zone, "Etc/UTC") == 0 || strcasecmp(k->zone, "Z") == 0;
	return 0;
}

/* A zone name that is safe to put in TZ and has a tzdata file. */
static int zone_ok(const char *z)
{
	const char *dir = getenv("TZDIR");
	char path[PATH_MAX];
	int k;

	if (z[0] == '/' || strstr(z, "..") != NULL ||
	    strspn(z, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/") !=
	    strlen(z))
		return 0;
	k = snprintf(path, sizeof(path), "%s/%s",
		     dir != NULL && dir[0] == '/' ? dir : "/usr/share/zoneinfo", z);
	return k > 0 && (size_t)k < sizeof(path) && access(path, R_OK) == 0;
}

static time_t mk_time(int utc, struct tm tm, int days, int years)
{
	tm.tm_mday += days;
	tm.tm_year += years;
	tm.tm_isdst = -1;
	return utc ? timegm(&tm) : mktime(&tm);
}

/*
 * The next time after now that k names, in its zone (local time if none,
 * or one without tzdata: *note says so). A time that passed less than
 * JUST_PASSED_MS ago has come (the limit has reset): returns a time <= now.
 *
 * A named zone is applied by setting TZ around mktime and restoring it: the
 * C library has no other way to convert in a zone. Not thread-safe; the
 * processes that classify have one thread.
 */
int64_t tq_resets_next(const struct clk *k, int64_t now_ms, char *note, size_t nn)
{
	time_t now = (time_t)(now_ms / 1000), t;
	int swapped = 0, utc = k->utc;
	char *old = NULL;
	struct tm b;

	note[0] = '\0';
	if (!utc && k->zone[0] != '\0') {
		const char *cur = getenv("TZ");

		if (!zone_ok(k->zone)) {
			snprintf(note, nn, " (no time zone \"%s\": local time used)", k->zone);
		} else if ((cur == NULL || (old = strdup(cur)) != NULL) &&
			   setenv("TZ", k->zone, 1) == 0) {
			tzset();
			swapped = 1;
		}
	}
	if (utc)
		gmtime_r(&now, &b);
	else
		localtime_r(&now, &b);
	b.tm_sec = 0;
	b.tm_hour = k->hour >= 0 ? k->hour : 0;
	b.tm_min = k->hour >= 0 ? k->min : 0;
	if (k->mon >= 0) {
		b.tm_mon = k->mon;
		b.tm_mday = k->mday;
		if ((t = mk_time(utc, b, 0, 0)) <= now - JUST_PASSED_MS / 1000)
			t = mk_time(utc, b, 0, 1);
	} else if (k->wday >= 0) {
		int d = (k->wday - b.tm_wday + 7) % 7;

		if ((t = mk_time(utc, b, d, 0)) <= now - JUST_PASSED_MS / 1000)
			t = mk_time(utc, b, d + 7, 0);
	} else if ((t = mk_time(utc, b, 0, 0)) <= now - JUST_PASSED_MS / 1000) {
		t = mk_time(utc, b, 1, 0);
	}
	if (swapped) {
		if (old != NULL)
			setenv("TZ", old, 1);
		else
			unsetenv("TZ");
		tzset();
	}
	free(old);
	return t == (time_t)-1 ? 0 : (int64_t)t * 1000;
}

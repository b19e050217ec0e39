/*
 * import.c - taskq submit --file: many tasks from JSON lines; and the
 * checks the flags of submit share with those lines (names, id lists, --at
 * times).
 *
 * Each line is one JSON object whose fields are submit's options (see
 * `taskq submit --help`), laid over the options of the command line. The
 * whole file is parsed before anything is stored, so a bad line stops the
 * import with its number and nothing is added; cmd_submit.c then stores
 * the specs in short chunks (store_chunks: one transaction each).
 *
 * The parser takes any bytes (it is fuzzed): a NUL byte or a \u0000 escape
 * is refused rather than cut a string short; numbers are range-checked
 * before any conversion; an unknown field is an error, so a typo never
 * passes silently; cJSON bounds the nesting depth. Strings the specs point
 * to are copied into an arena owned by the import; each line's JSON tree is
 * freed as soon as the line is read, so memory grows with the tasks, not
 * with the JSON.
 *
 * Nothing here prints, exits or touches the database.
 */
#include "ask.h"
#include "submit.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>
#include <cjson/cJSON.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/parse.h"
#include "common/sys.h"

/* ------------------------------------------------------------------ */
/* The state of a submit                                              */

/* Here rather than in cmd_submit.c so that the importer, agent lines
 * included, links without the rest of the CLI. */

int cli_strv_push(struct cli_strv *s, const char *p)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		const char **v = reallocarray(s->v, cap, sizeof(*v));
		if (v == NULL)
			return TQ_ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = p;
	return 0;
}

void cli_submit_init(struct cli_submit *s)
{
	memset(s, 0, sizeof(*s));
	s->spec = (struct tq_task_spec)TQ_TASK_SPEC_INIT;
	s->env = (struct tq_env)TQ_ENV_INIT;
}

void cli_submit_release(struct cli_submit *s)
{
	free(s->sets.v);
	free(s->unsets.v);
	for (size_t i = 0; i < s->nlabels; i++)
		free(s->label_bufs[i]);
	free(s->label_bufs);
	free(s->labels);
	free(s->after);
	free(s->stdin_data);
	tq_env_release(&s->env);
	for (size_t i = 0; i < s->owned.n; i++)
		free((char *)s->owned.v[i]);
	free(s->owned.v);
	free(s->owned_argv);
	free(s->cwd);
	cli_submit_init(s);
}

char *cli_submit_own(struct cli_submit *s, char *p)
{
	if (p != NULL && cli_strv_push(&s->owned, p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* Checks shared with the flags                                       */

int cli_check_name(const char *s, struct tq_err *err)
{
	if (*s == '\0')
		return tq_err_set(err, TQ_EINVAL, "empty name");
	if (strlen(s) >= TQ_NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "longer than %d bytes", TQ_NAME_MAX - 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < ' ' || *p == 0x7f)
			return tq_err_set(err, TQ_EINVAL, "contains a control character");
	if (!tq_utf8_valid(s))
		return tq_err_set(err, TQ_EINVAL, "not valid UTF-8");
	return 0;
}

/* More dependencies than this in one task is a mistake (a fan-in of a
 * whole batch belongs in taskq wait --batch). */
#define CLI_AFTER_MAX 100000

static int ids_bad(const char *s, size_t n, struct tq_err *err)
{
	return tq_err_set(err, TQ_EINVAL, "\"%.*s\": expected a task id such as 42, "
			  "or ids such as 3,4,5", (int)(n > 40 ? 40 : n), s);
}

int cli_ids_parse(const char *s, int64_t **ids, size_t *n, size_t *cap,
		  struct tq_err *err)
{
	const char *p = s;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char buf[24];
		const char *errstr = NULL;
		long long v;

		/* strtonum takes a NUL-terminated string: a piece longer than
		 * any int64 is no id */
		if (len == 0 || len >= sizeof(buf) || !isdigit((unsigned char)*p))
			return ids_bad(s, strlen(s), err);
		memcpy(buf, p, len);
		buf[len] = '\0';
		v = strtonum(buf, 1, INT64_MAX, &errstr);
		if (errstr != NULL)
			return ids_bad(s, strlen(s), err);
		if (*n >= CLI_AFTER_MAX)
			return tq_err_set(err, TQ_EINVAL, "more than %d dependencies",
					  CLI_AFTER_MAX);
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 4;
			int64_t *v2 = reallocarray(*ids, nc, sizeof(**ids));
			if (v2 == NULL)
				return tq_err_set(err, TQ_ENOMEM, "out of memory");
			*ids = v2;
			*cap = nc;
		}
		(*ids)[(*n)++] = v;
		if (end == NULL)
			return 0;
		p = end + 1;
	}
}

/* Exactly k digits at *p (advanced): their value, or -1. */
static int digits(const char **p, int k)
{
	int v = 0;

	for (int i = 0; i < k; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += k;
	return v;
}

static int days_in_month(int y, int m)
{
	static const int d[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return d[m - 1];
}

/* "HH:MM[:SS[.fff]]" at *p: fills tm and *frac_ms; -1 if malformed. */
static int parse_clock(const char **p, struct tm *tm, int *frac_ms)
{
	int h, m, s = 0;

	*frac_ms = 0;
	if ((h = digits(p, 2)) < 0 || **p != ':')
		return -1;
	(*p)++;
	if ((m = digits(p, 2)) < 0)
		return -1;
	if (**p == ':') {
		(*p)++;
		if ((s = digits(p, 2)) < 0)
			return -1;
		if (**p == '.' || **p == ',') {
			int scale = 100;
			(*p)++;
			if (!isdigit((unsigned char)**p))
				return -1;
			for (; isdigit((unsigned char)**p); (*p)++, scale /= 10)
				*frac_ms += (**p - '0') * scale;
		}
	}
	if (h > 23 || m > 59 || s > 59)
		return -1;
	tm->tm_hour = h;
	tm->tm_min = m;
	tm->tm_sec = s;
	return 0;
}

/* "Z", "+HH", "+HH:MM", "+HHMM" (or '-') at *p: the offset east of UTC in
 * seconds; -1 when malformed. *p is left at the end. */
static int parse_zone(const char **p, long *off)
{
	int sign, h, m = 0;

	if (**p == 'Z' || **p == 'z') {
		(*p)++;
		*off = 0;
		return 0;
	}
	if (**p != '+' && **p != '-')
		return -1;
	sign = **p == '-' ? -1 : 1;
	(*p)++;
	if ((h = digits(p, 2)) < 0)
		return -1;
	if (**p == ':')
		(*p)++;
	if (isdigit((unsigned char)**p) && (m = digits(p, 2)) < 0)
		return -1;
	if (h > 23 || m > 59)
		return -1;
	*off = sign * (h * 3600L + m * 60L);
	return 0;
}

static int time_bad(const char *s, struct tq_err *err)
{
	return tq_err_set(err, TQ_EINVAL, "\"%.60s\": expected a time such as 04:00 "
			  "(the next one), 2026-11-23T04:00 (local) or "
			  "2026-11-23T04:00:00Z", s);
}

/* HH:MM[:SS]: today at that local time, or tomorrow if it has passed. */
static int next_clock(const char *s, const struct tm *clock, int frac, int64_t now_ms,
		      int64_t *ms, struct tq_err *err)
{
	time_t now = (time_t)(now_ms / 1000), t;
	struct tm tm;

	if (localtime_r(&now, &tm) == NULL)
		return time_bad(s, err);
	for (int day = 0; day < 2; day++) {
		struct tm x = tm;
		x.tm_mday += day;
		x.tm_hour = clock->tm_hour;
		x.tm_min = clock->tm_min;
		x.tm_sec = clock->tm_sec;
		x.tm_isdst = -1;
		if ((t = mktime(&x)) == (time_t)-1)
			return time_bad(s, err);
		*ms = (int64_t)t * 1000 + frac;
		if (*ms > now_ms)
			return 0;
	}
	return 0;
}

int cli_time_parse(const char *s, int64_t now_ms, int64_t *ms, struct tq_err *err)
{
	const char *p = s;
	struct tm tm = { 0 };
	int y, mo, d, frac = 0, zoned = 0;
	long off = 0;
	time_t t;

	if (strlen(s) == 5 || strlen(s) == 8) {
		if (parse_clock(&p, &tm, &frac) < 0 || *p != '\0')
			return time_bad(s, err);
		return next_clock(s, &tm, frac, now_ms, ms, err);
	}
	if ((y = digits(&p, 4)) < 0 || *p++ != '-' || (mo = digits(&p, 2)) < 0 ||
	    *p++ != '-' || (d = digits(&p, 2)) < 0)
		return time_bad(s, err);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return time_bad(s, err);
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (parse_clock(&p, &tm, &frac) < 0)
			return time_bad(s, err);
		if (*p != '\0') {
			if (parse_zone(&p, &off) < 0)
				return time_bad(s, err);
			zoned = 1;
		}
	}
	if (*p != '\0')
		return time_bad(s, err);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	if (zoned) {
		t = timegm(&tm) - off;
	} else {
		tm.tm_isdst = -1;
		if ((t = mktime(&tm)) == (time_t)-1)
			return time_bad(s, err);
	}
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The importer                                                       */

/* Bounds of one import (each named in its error). */
#define IMPORT_TASKS_MAX 1000000          /* tasks in one file */
#define IMPORT_LINE_MAX (64 * 1024 * 1024) /* bytes of one line */
#define IMPORT_ENV_MAX 4096               /* entries of one line's env */
#define IMPORT_LABELS_MAX 256             /* labels of one line */
#define IMPORT_SOURCES_MAX 256            /* sources of one agent line */
#define ARENA_CHUNK (256 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, size;
	/* the bytes follow, aligned for any object */
	max_align_t data[];
};

struct cli_import {
	struct tq_task_spec *specs;
	size_t *lines;                /* the file's line of each spec */
	uint64_t *sums;               /* and a checksum of that line's bytes */
	uint64_t cur_sum;             /* the line being parsed's */
	size_t n, cap;
	struct chunk *arena;          /* strings and arrays the specs point to */
	struct tq_env *envs;          /* lines with an env of their own */
	size_t nenvs, envs_cap;
	struct cli_submit **asks;     /* agent lines: what cli_ask_apply built */
	size_t nasks, asks_cap;
	char *scratch;                /* the line being parsed, NUL-terminated */
	size_t scratch_cap;
	int64_t now;                  /* one "now" for every delay and at */
	const struct cli_submit *defaults;
	char base_cwd[PATH_MAX];      /* what a relative cwd is relative to */
};

static void *arena_alloc(struct cli_import *im, size_t n)
{
	struct chunk *c = im->arena;
	size_t a = sizeof(max_align_t), size;

	n = (n + a - 1) / a * a;
	if (c == NULL || c->size - c->used < n) {
		size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		if ((c = malloc(sizeof(*c) + size)) == NULL)
			return NULL;
		c->used = 0;
		c->size = size;
		/* a big block goes behind the current chunk, which keeps its room */
		if (im->arena != NULL && size > ARENA_CHUNK) {
			c->next = im->arena->next;
			im->arena->next = c;
		} else {
			c->next = im->arena;
			im->arena = c;
		}
	}
	c->used += n;
	return (char *)c->data + c->used - n;
}

static char *arena_strdup(struct cli_import *im, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc(im, n);

	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

/* The fields of a line, in the order they are applied. */
enum field {
	F_NAME, F_GROUP, F_BATCH, F_UNIQUE, F_SESSION, F_ON_EXIT,
	F_TIMEOUT, F_STALL_TIMEOUT, F_KILL_GRACE, F_BACKOFF, F_BACKOFF_MAX, F_RETRIES,
	F_PRIORITY,
	F_MAX_OUTPUT, F_RETRY_LOST, F_PTY, F_DELAY, F_AT, F_AFTER, F_AFTER_ANY,
	F_LABELS, F_CWD, F_CMD, F_SHELL, F_AGENT, F_PROMPT, F_MODEL, F_SOURCES,
	F_WARM, F_IDLE_TIMEOUT, F_ISOLATE, F_ENV, F_COUNT
};

static const char *const field_names[F_COUNT] = {
	[F_NAME] = "name", [F_GROUP] = "group", [F_BATCH] = "batch",
	[F_UNIQUE] = "unique", [F_SESSION] = "session", [F_ON_EXIT] = "on_exit",
	[F_TIMEOUT] = "timeout", [F_STALL_TIMEOUT] = "stall_timeout",
	[F_KILL_GRACE] = "kill_grace",
	[F_BACKOFF] = "backoff", [F_BACKOFF_MAX] = "backoff_max",
	[F_RETRIES] = "retries", [F_PRIORITY] = "priority",
	[F_MAX_OUTPUT] = "max_output", [F_RETRY_LOST] = "retry_lost",
	[F_PTY] = "pty", [F_DELAY] = "delay", [F_AT] = "at", [F_AFTER] = "after",
	[F_AFTER_ANY] = "after_any", [F_LABELS] = "labels", [F_CWD] = "cwd",
	[F_CMD] = "cmd", [F_SHELL] = "shell", [F_AGENT] = "agent",
	[F_PROMPT] = "prompt", [F_MODEL] = "model", [F_SOURCES] = "sources",
	[F_WARM] = "warm", [F_IDLE_TIMEOUT] = "idle_timeout",
	[F_ISOLATE] = "isolate", [F_ENV] = "env",
};

/* One line being turned into a spec. */
struct line {
	struct cli_import *im;
	const cJSON *f[F_COUNT];      /* each field's value, or NULL */
	struct tq_task_spec spec;
	struct tq_env env;            /* when the line has its own */
	int has_env;
	struct cli_submit *ask;       /* an agent line's */
};

static int oom(struct tq_err *err)
{
	return tq_err_set(err, TQ_ENOMEM, "out of memory");
}

static int expected(struct tq_err *err, enum field f, const char *what)
{
	return tq_err_set(err, TQ_EINVAL, "\"%s\": expected %s", field_names[f], what);
}

/* A string field: copied into the arena. */
static int get_string(struct line *l, enum field f, const char **out, struct tq_err *err)
{
	const cJSON *v = l->f[f];

	if (!cJSON_IsString(v))
		return expected(err, f, "a string");
	if ((*out = arena_strdup(l->im, v->valuestring)) == NULL)
		return oom(err);
	return 0;
}

static int get_name(struct line *l, enum field f, const char **out, struct tq_err *err)
{
	int rc;

	if ((rc = get_string(l, f, out, err)) < 0)
		return rc;
	if (cli_check_name(*out, err) < 0)
		return tq_err_prefix(err, "\"%s\"", field_names[f]);
	return 0;
}

/* A JSON number that is an integer in [min, max]. The range is checked on
 * the double, before the conversion (which would be undefined outside). */
static int get_int(struct line *l, enum field f, int64_t min, int64_t max,
		   int64_t *out, struct tq_err *err)
{
	const cJSON *v = l->f[f];
	double d;

	if (!cJSON_IsNumber(v))
		return expected(err, f, "a number");
	d = v->valuedouble;
	if (!(d >= (double)min && d <= (double)max) || (double)(int64_t)d != d)
		return tq_err_set(err, TQ_EINVAL, "\"%s\": expected a whole number "
				  "from %lld to %lld", field_names[f], (long long)min,
				  (long long)max);
	*out = (int64_t)d;
	return 0;
}

/* A duration: "30m" as the flags take it, or a number of seconds. */
static int get_duration(struct line *l, enum field f, int64_t *ms, struct tq_err *err)
{
	const cJSON *v = l->f[f];
	double d;

	if (cJSON_IsString(v)) {
		if (tq_parse_duration(v->valuestring, ms, err) < 0)
			return tq_err_prefix(err, "\"%s\"", field_names[f]);
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return expected(err, f, "a duration such as \"30m\", or seconds as a number");
	d = v->valuedouble;
	if (!(d >= 0 && d <= (double)(TQ_DURATION_MAX_MS / 1000)))
		return tq_err_set(err, TQ_EINVAL, "\"%s\": expected from 0 to %lld seconds",
				  field_names[f], (long long)(TQ_DURATION_MAX_MS / 1000));
	*ms = (int64_t)(d * 1000 + 0.5);
	return 0;
}

static int get_bool(struct line *l, enum field f, int *out, struct tq_err *err)
{
	if (!cJSON_IsBool(l->f[f]))
		return expected(err, f, "true or false");
	*out = cJSON_IsTrue(l->f[f]);
	return 0;
}

/* name, group, batch, unique, session, on_exit: each replaces the default. */
static int apply_strings(struct line *l, struct tq_err *err)
{
	static const enum field names[] = { F_NAME, F_GROUP, F_BATCH, F_UNIQUE, F_SESSION };
	const char **dst[] = { &l->spec.name, &l->spec.group, &l->spec.batch,
			       &l->spec.unique_key, &l->spec.session };
	int rc;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (l->f[names[i]] != NULL &&
		    (rc = get_name(l, names[i], dst[i], err)) < 0)
			return rc;
	if (l->f[F_ON_EXIT] != NULL) {
		if ((rc = get_string(l, F_ON_EXIT, &l->spec.on_exit, err)) < 0)
			return rc;
		if (*l->spec.on_exit == '\0')
			return tq_err_set(err, TQ_EINVAL, "\"on_exit\": empty command");
		if (strlen(l->spec.on_exit) > CLI_ON_EXIT_MAX)
			return tq_err_set(err, TQ_EINVAL, "\"on_exit\": longer than %d bytes",
					  CLI_ON_EXIT_MAX);
	}
	return 0;
}

static int apply_numbers(struct line *l, struct tq_err *err)
{
	static const enum field durs[] = { F_TIMEOUT, F_STALL_TIMEOUT, F_KILL_GRACE, F_BACKOFF,
					   F_BACKOFF_MAX };
	int64_t *dst[] = { &l->spec.timeout_ms, &l->spec.stall_timeout_ms,
			   &l->spec.kill_grace_ms, &l->spec.backoff_ms, &l->spec.backoff_max_ms };
	const cJSON *v;
	int rc;

	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++)
		if (l->f[durs[i]] != NULL && (rc = get_duration(l, durs[i], dst[i], err)) < 0)
			return rc;
	if (l->f[F_RETRIES] != NULL &&
	    (rc = get_int(l, F_RETRIES, 0, CLI_RETRIES_MAX, &l->spec.max_retries, err)) < 0)
		return rc;
	if (l->f[F_PRIORITY] != NULL &&
	    (rc = get_int(l, F_PRIORITY, -CLI_PRIORITY_MAX, CLI_PRIORITY_MAX,
			  &l->spec.priority, err)) < 0)
		return rc;
	if ((v = l->f[F_MAX_OUTPUT]) != NULL) {
		if (cJSON_IsString(v)) {
			if (tq_parse_size(v->valuestring, &l->spec.max_output, err) < 0)
				return tq_err_prefix(err, "\"max_output\"");
		} else if ((rc = get_int(l, F_MAX_OUTPUT, 0, TQ_SIZE_MAX,
					 &l->spec.max_output, err)) < 0) {
			return rc;
		}
	}
	if (l->f[F_RETRY_LOST] != NULL &&
	    (rc = get_bool(l, F_RETRY_LOST, &l->spec.retry_lost, err)) < 0)
		return rc;
	if (l->f[F_PTY] != NULL && (rc = get_bool(l, F_PTY, &l->spec.pty, err)) < 0)
		return rc;
	return 0;
}

/* delay or at: either replaces the default's start time. */
static int apply_when(struct line *l, struct tq_err *err)
{
	int64_t ms;
	int rc;

	if (l->f[F_DELAY] != NULL && l->f[F_AT] != NULL)
		return tq_err_set(err, TQ_EINVAL, "give \"delay\" or \"at\", not both");
	if (l->f[F_DELAY] != NULL) {
		if ((rc = get_duration(l, F_DELAY, &ms, err)) < 0)
			return rc;
		l->spec.run_after = ms > 0 ? l->im->now + ms : 0;
	} else if (l->f[F_AT] != NULL) {
		if (!cJSON_IsString(l->f[F_AT]))
			return expected(err, F_AT, "a time such as \"04:00\" or "
					"\"2026-11-23T04:00:00Z\"");
		if (cli_time_parse(l->f[F_AT]->valuestring, l->im->now,
				   &l->spec.run_after, err) < 0)
			return tq_err_prefix(err, "\"at\"");
	}
	return 0;
}

/* One id of "after": a number, or a string of ids ("3,4"). */
static int take_ids(const cJSON *v, enum field f, int64_t **ids, size_t *n, size_t *cap,
		    struct tq_err *err)
{
	double d;

	if (cJSON_IsString(v)) {
		if (cli_ids_parse(v->valuestring, ids, n, cap, err) < 0)
			return tq_err_prefix(err, "\"%s\"", field_names[f]);
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return expected(err, f, "a task id, an array of ids, or \"3,4\"");
	d = v->valuedouble;
	/* ids beyond 2^53 cannot come exactly through a JSON number */
	if (!(d >= 1 && d <= 9007199254740992.0) || (double)(int64_t)d != d)
		return tq_err_set(err, TQ_EINVAL, "\"%s\": %.17g is not a task id",
				  field_names[f], d);
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		int64_t *v2 = reallocarray(*ids, nc, sizeof(**ids));
		if (v2 == NULL)
			return oom(err);
		*ids = v2;
		*cap = nc;
	}
	(*ids)[(*n)++] = (int64_t)d;
	return 0;
}

/* after or after_any (one kind per task: the store has one flag). */
static int apply_after(struct line *l, struct tq_err *err)
{
	enum field f = l->f[F_AFTER] != NULL ? F_AFTER : F_AFTER_ANY;
	const cJSON *v = l->f[f], *e;
	int64_t *ids = NULL, *copy;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (l->f[F_AFTER] != NULL && l->f[F_AFTER_ANY] != NULL)
		return tq_err_set(err, TQ_EINVAL, "give \"after\" or \"after_any\", not "
				  "both: a task waits for all of its dependencies the "
				  "same way");
	if (v == NULL)
		return 0;
	if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(e, v) {
			if (n >= CLI_AFTER_MAX) {
				rc = tq_err_set(err, TQ_EINVAL, "\"%s\": more than %d "
						"dependencies", field_names[f], CLI_AFTER_MAX);
				break;
			}
			if ((rc = take_ids(e, f, &ids, &n, &cap, err)) < 0)
				break;
		}
	} else {
		rc = take_ids(v, f, &ids, &n, &cap, err);
	}
	if (rc == 0 && n > 0 && (copy = arena_alloc(l->im, n * sizeof(*ids))) == NULL)
		rc = oom(err);
	if (rc == 0) {
		if (n > 0)
			memcpy(copy, ids, n * sizeof(*ids));
		l->spec.after = n > 0 ? copy : NULL;
		l->spec.nafter = n;
		l->spec.after_any = f == F_AFTER_ANY;
	}
	free(ids);
	return rc;
}

/* labels: the defaults' labels, then the line's (a key given in both takes
 * the line's value). */
static int apply_labels(struct line *l, struct tq_err *err)
{
	const cJSON *v = l->f[F_LABELS], *e;
	size_t nd = l->spec.nlabels, n = nd, max;
	struct tq_label *lab;

	if (v == NULL)
		return 0;
	if (!cJSON_IsObject(v))
		return expected(err, F_LABELS, "an object such as {\"kind\":\"review\"}");
	max = nd + (size_t)cJSON_GetArraySize(v);
	if (max - nd > IMPORT_LABELS_MAX)
		return tq_err_set(err, TQ_EINVAL, "\"labels\": more than %d",
				  IMPORT_LABELS_MAX);
	if ((lab = arena_alloc(l->im, (max ? max : 1) * sizeof(*lab))) == NULL)
		return oom(err);
	if (nd > 0)
		memcpy(lab, l->spec.labels, nd * sizeof(*lab));
	cJSON_ArrayForEach(e, v) {
		size_t i;
		if (cli_check_name(e->string, err) < 0)
			return tq_err_prefix(err, "\"labels\": key \"%.40s\"", e->string);
		if (!cJSON_IsString(e))
			return tq_err_set(err, TQ_EINVAL, "\"labels\": \"%s\": expected a "
					  "string", e->string);
		if (strlen(e->valuestring) > CLI_LABEL_VALUE_MAX)
			return tq_err_set(err, TQ_EINVAL, "\"labels\": \"%s\": value longer "
					  "than %d bytes", e->string, CLI_LABEL_VALUE_MAX);
		for (i = 0; i < n; i++)
			if (strcmp(lab[i].key, e->string) == 0)
				break;
		if (i >= nd && i < n)
			return tq_err_set(err, TQ_EINVAL, "\"labels\": \"%s\" given twice",
					  e->string);
		if (i == n)
			n++;
		lab[i].key = arena_strdup(l->im, e->string);
		lab[i].value = arena_strdup(l->im, e->valuestring);
		if (lab[i].key == NULL || lab[i].value == NULL)
			return oom(err);
	}
	l->spec.labels = lab;
	l->spec.nlabels = n;
	return 0;
}

/* cwd: absolute as written (as --cwd), relative to the import's base. It
 * must be a directory now. */
static int apply_cwd(struct line *l, struct tq_err *err)
{
	char joined[PATH_MAX], real[PATH_MAX];
	const char *dir, *use;
	struct stat sb;
	int rc;

	if (l->f[F_CWD] == NULL)
		return 0;
	if ((rc = get_string(l, F_CWD, &dir, err)) < 0)
		return rc;
	if (*dir == '\0')
		return tq_err_set(err, TQ_EINVAL, "\"cwd\": empty directory name");
	if (dir[0] == '/') {
		use = dir;
	} else {
		rc = snprintf(joined, sizeof(joined), "%s/%s", l->im->base_cwd, dir);
		if (rc < 0 || (size_t)rc >= sizeof(joined))
			return tq_err_set(err, TQ_EINVAL, "\"cwd\": longer than %d bytes",
					  PATH_MAX - 1);
		if (realpath(joined, real) == NULL)
			return tq_err_set(err, TQ_EINVAL, "\"cwd\": \"%.200s\": %s", dir,
					  strerror(errno));
		use = real;
	}
	if (strlen(use) >= PATH_MAX)
		return tq_err_set(err, TQ_EINVAL, "\"cwd\": longer than %d bytes",
				  PATH_MAX - 1);
	if (stat(use, &sb) < 0)
		return tq_err_set(err, TQ_EINVAL, "\"cwd\": \"%.200s\": %s", dir,
				  strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return tq_err_set(err, TQ_EINVAL, "\"cwd\": \"%.200s\": not a directory", dir);
	if ((l->spec.cwd = use == dir ? dir : arena_strdup(l->im, use)) == NULL)
		return oom(err);
	l->spec.cwd_explicit = 1; /* as --cwd: a --session's directory is not moved to */
	return 0;
}

/* cmd (an array of strings) or shell (a string). */
static int apply_command(struct line *l, struct tq_err *err)
{
	const cJSON *v = l->f[F_CMD], *e;
	size_t argc = 0, bytes = 0, i = 0;
	char **argv;

	if (v != NULL && l->f[F_SHELL] != NULL)
		return tq_err_set(err, TQ_EINVAL, "give \"cmd\" or \"shell\", not both");
	if (l->f[F_SHELL] != NULL) {
		const char *sh;
		int rc = get_string(l, F_SHELL, &sh, err);
		if (rc < 0)
			return rc;
		if (*sh == '\0')
			return tq_err_set(err, TQ_EINVAL, "\"shell\": empty script");
		if ((argv = arena_alloc(l->im, 4 * sizeof(*argv))) == NULL)
			return oom(err);
		argv[0] = (char *)"/bin/sh";
		argv[1] = (char *)"-c";
		argv[2] = (char *)sh;
		argv[3] = NULL;
		l->spec.argv = argv;
		l->spec.argc = 3;
		l->spec.shell = 1;
		return strlen(sh) + 12 > TQ_ARGV_MAX ?
		       tq_err_set(err, TQ_EINVAL, "\"shell\": longer than %d bytes",
				  TQ_ARGV_MAX) : 0;
	}
	if (v == NULL)
		return tq_err_set(err, TQ_EINVAL, "no command: give \"cmd\" (an array of "
				  "strings) or \"shell\" (a string)");
	if (!cJSON_IsArray(v))
		return expected(err, F_CMD, "an array of strings such as [\"make\",\"all\"]");
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsString(e))
			return tq_err_set(err, TQ_EINVAL, "\"cmd\": item %zu: expected a "
					  "string", argc + 1);
		bytes += strlen(e->valuestring) + 1;
		if (bytes > TQ_ARGV_MAX)
			return tq_err_set(err, TQ_EINVAL, "\"cmd\": longer than %d bytes",
					  TQ_ARGV_MAX);
		argc++;
	}
	if (argc == 0)
		return tq_err_set(err, TQ_EINVAL, "\"cmd\": empty; the first item is "
				  "the program");
	if (*v->child->valuestring == '\0')
		return tq_err_set(err, TQ_EINVAL, "\"cmd\": the command name is empty");
	if ((argv = arena_alloc(l->im, (argc + 1) * sizeof(*argv))) == NULL)
		return oom(err);
	cJSON_ArrayForEach(e, v)
		if ((argv[i++] = arena_strdup(l->im, e->valuestring)) == NULL)
			return oom(err);
	argv[argc] = NULL;
	l->spec.argv = argv;
	l->spec.argc = argc;
	l->spec.shell = 0;
	return 0;
}

static int push_ask(struct cli_import *im, struct cli_submit *s)
{
	if (im->nasks == im->asks_cap) {
		size_t nc = im->asks_cap ? im->asks_cap * 2 : 8;
		struct cli_submit **v = reallocarray(im->asks, nc, sizeof(*v));
		if (v == NULL)
			return TQ_ENOMEM;
		im->asks = v;
		im->asks_cap = nc;
	}
	im->asks[im->nasks++] = s;
	return 0;
}

/* sources: {"NAME": "PATH", ...} as "NAME=PATH" strings for cli_ask. */
static int ask_sources(struct line *l, struct cli_ask *a, struct tq_err *err)
{
	const cJSON *v = l->f[F_SOURCES], *e;
	const char **src;
	size_t n = 0;

	if (v == NULL)
		return 0;
	if (!cJSON_IsObject(v))
		return expected(err, F_SOURCES, "an object such as {\"spec\":\"docs/spec.md\"}");
	if (cJSON_GetArraySize(v) > IMPORT_SOURCES_MAX)
		return tq_err_set(err, TQ_EINVAL, "\"sources\": more than %d",
				  IMPORT_SOURCES_MAX);
	if ((src = arena_alloc(l->im, ((size_t)cJSON_GetArraySize(v) + 1) * sizeof(*src))) == NULL)
		return oom(err);
	cJSON_ArrayForEach(e, v) {
		size_t kl = strlen(e->string), vl;
		char *kv;
		if (kl == 0 || strchr(e->string, '=') != NULL)
			return tq_err_set(err, TQ_EINVAL, "\"sources\": \"%.40s\": expected a "
					  "name without '='", e->string);
		if (!cJSON_IsString(e) || *e->valuestring == '\0')
			return tq_err_set(err, TQ_EINVAL, "\"sources\": \"%.40s\": expected "
					  "a path", e->string);
		/* a relative path is relative to the line's cwd, as its
		 * command would see it, not to where taskq submit runs */
		const char *dir = e->valuestring[0] != '/' && l->spec.cwd != NULL ?
				  l->spec.cwd : NULL;
		size_t dl = dir != NULL ? strlen(dir) + 1 : 0;
		vl = strlen(e->valuestring);
		if ((kv = arena_alloc(l->im, kl + dl + vl + 2)) == NULL)
			return oom(err);
		memcpy(kv, e->string, kl);
		kv[kl] = '=';
		if (dir != NULL) {
			memcpy(kv + kl + 1, dir, dl - 1);
			kv[kl + dl] = '/';
		}
		memcpy(kv + kl + 1 + dl, e->valuestring, vl + 1);
		src[n++] = kv;
	}
	a->sources = src;
	a->nsources = n;
	return 0;
}

/* An agent line: prompt (required), agent, model, sources, warm,
 * idle_timeout, isolate, built
 * into argv and the agent fields by cli_ask_apply (ask.h), which may add
 * the profile's environment settings to the cli_submit's sets/unsets. */
static int apply_agent(struct line *l, struct tq_err *err)
{
	struct cli_ask a = { 0 };
	struct cli_submit *s;
	int rc;

	if (l->f[F_CMD] != NULL || l->f[F_SHELL] != NULL)
		return tq_err_set(err, TQ_EINVAL, "an agent task takes \"prompt\", not "
				  "\"cmd\" or \"shell\"");
	if (l->f[F_PROMPT] == NULL)
		return tq_err_set(err, TQ_EINVAL, "an agent task needs \"prompt\"");
	if ((rc = get_string(l, F_PROMPT, &a.prompt, err)) < 0 ||
	    (l->f[F_AGENT] != NULL && (rc = get_string(l, F_AGENT, &a.agent, err)) < 0) ||
	    (l->f[F_MODEL] != NULL && (rc = get_string(l, F_MODEL, &a.model, err)) < 0) ||
	    (l->f[F_ISOLATE] != NULL && (rc = get_bool(l, F_ISOLATE, &a.isolate, err)) < 0) ||
	    (l->f[F_WARM] != NULL && (rc = get_bool(l, F_WARM, &a.warm, err)) < 0) ||
	    (l->f[F_IDLE_TIMEOUT] != NULL &&
	     (rc = get_duration(l, F_IDLE_TIMEOUT, &a.idle_timeout_ms, err)) < 0) ||
	    (rc = ask_sources(l, &a, err)) < 0)
		return rc;
	/* "warm": false is --no-warm; "idle_timeout" 0 is no timeout, refused
	 * as --idle-timeout 0 is */
	if (l->f[F_WARM] != NULL && !a.warm)
		a.warm = -1;
	if (l->f[F_IDLE_TIMEOUT] != NULL && a.idle_timeout_ms <= 0)
		return tq_err_set(err, TQ_EINVAL, "\"idle_timeout\": must be more than 0");
	/* "isolate": false says no, where a missing key means the profile's
	 * default; a timeout given (on the line, or --timeout for every line)
	 * is kept over the profile's */
	if (l->f[F_ISOLATE] != NULL && !a.isolate)
		a.isolate = -1;
	a.keep_timeout = l->f[F_TIMEOUT] != NULL ||
			 (l->im->defaults != NULL &&
			  l->im->defaults->spec.timeout_ms != TQ_DEFAULT_TIMEOUT_MS);
	a.keep_stall = l->f[F_STALL_TIMEOUT] != NULL ||
		       (l->im->defaults != NULL && l->im->defaults->keep_stall);
	if ((s = malloc(sizeof(*s))) == NULL)
		return oom(err);
	cli_submit_init(s);
	if (push_ask(l->im, s) < 0) {
		free(s);
		return oom(err);
	}
	l->ask = s;
	s->spec = l->spec;
	if (l->spec.cwd != NULL) {
		if ((s->cwd = strdup(l->spec.cwd)) == NULL)
			return oom(err);
		s->spec.cwd = s->cwd;
	}
	if ((rc = cli_ask_apply(s, &a, err)) < 0)
		return rc;
	l->spec = s->spec;
	return 0;
}

/* A copy of the defaults' environment, to change for one line. */
static int env_copy(struct tq_env *dst, const struct cli_submit *d, struct tq_err *err)
{
	size_t n = d != NULL ? d->env.n : 0;

	if ((dst->vars = calloc(n + 1, sizeof(*dst->vars))) == NULL)
		return oom(err);
	dst->cap = n + 1;
	for (size_t i = 0; i < n; i++) {
		if ((dst->vars[i] = strdup(d->env.vars[i])) == NULL)
			return oom(err);
		dst->n++;
	}
	return 0;
}

/* env: {"K":"V"} added to the defaults' environment, {"K":null} removes K;
 * an agent profile's settings first, so that the line has the last word. */
static int apply_env(struct line *l, struct tq_err *err)
{
	const cJSON *v = l->f[F_ENV], *e;
	struct cli_submit *s = l->ask;
	char *kv = NULL;
	int rc;

	if (v == NULL && (s == NULL || (s->sets.n == 0 && s->unsets.n == 0)))
		return 0;
	if (v != NULL && !cJSON_IsObject(v))
		return expected(err, F_ENV, "an object such as {\"LANG\":\"C\"}");
	if (v != NULL && cJSON_GetArraySize(v) > IMPORT_ENV_MAX)
		return tq_err_set(err, TQ_EINVAL, "\"env\": more than %d variables",
				  IMPORT_ENV_MAX);
	l->has_env = 1;
	if ((rc = env_copy(&l->env, l->im->defaults, err)) < 0)
		return rc;
	for (size_t i = 0; s != NULL && i < s->unsets.n; i++)
		tq_env_unset(&l->env, s->unsets.v[i]);
	for (size_t i = 0; s != NULL && i < s->sets.n; i++)
		if ((rc = tq_env_set(&l->env, s->sets.v[i], err)) < 0)
			return rc;
	if (v != NULL) {
		cJSON_ArrayForEach(e, v) {
			size_t kl = strlen(e->string), vl;
			if (kl == 0 || strchr(e->string, '=') != NULL)
				return tq_err_set(err, TQ_EINVAL, "\"env\": \"%.40s\": expected "
						  "a variable name", e->string);
			if (cJSON_IsNull(e)) {
				tq_env_unset(&l->env, e->string);
				continue;
			}
			if (!cJSON_IsString(e))
				return tq_err_set(err, TQ_EINVAL, "\"env\": \"%.40s\": expected a "
						  "string, or null to unset it", e->string);
			vl = strlen(e->valuestring);
			if (kl + vl + 2 > TQ_ENV_MAX)
				return tq_err_set(err, TQ_EINVAL, "\"env\": larger than %d bytes",
						  TQ_ENV_MAX);
			if ((kv = malloc(kl + vl + 2)) == NULL)
				return oom(err);
			memcpy(kv, e->string, kl);
			kv[kl] = '=';
			memcpy(kv + kl + 1, e->valuestring, vl + 1);
			rc = tq_env_set(&l->env, kv, err);
			free(kv);
			if (rc < 0)
				return rc;
		}
	}
	if (tq_env_bytes(&l->env) > TQ_ENV_MAX)
		return tq_err_set(err, TQ_EINVAL, "\"env\": the environment is larger than "
				  "%d bytes", TQ_ENV_MAX);
	l->spec.env = l->env.vars;
	l->spec.envc = l->env.n;
	return 0;
}

/* Which field each key of the object is; unknown and repeated keys are
 * errors. */
static int sort_fields(struct line *l, const cJSON *o, struct tq_err *err)
{
	const cJSON *e;
	size_t f;

	cJSON_ArrayForEach(e, o) {
		for (f = 0; f < F_COUNT; f++)
			if (strcmp(e->string, field_names[f]) == 0)
				break;
		if (f == F_COUNT)
			return tq_err_set(err, TQ_EINVAL, "unknown field \"%.40s\"%s",
					  e->string, strlen(e->string) > 40 ? "..." : "");
		if (l->f[f] != NULL)
			return tq_err_set(err, TQ_EINVAL, "field \"%s\" given twice",
					  field_names[f]);
		l->f[f] = e;
	}
	return 0;
}

static int apply_line(struct line *l, const cJSON *o, struct tq_err *err)
{
	int agent = 0, rc;

	if (!cJSON_IsObject(o))
		return tq_err_set(err, TQ_EINVAL, "expected a JSON object such as "
				  "{\"cmd\":[\"make\",\"all\"]}");
	if ((rc = sort_fields(l, o, err)) < 0)
		return rc;
	for (int f = F_AGENT; f <= F_ISOLATE; f++)
		agent |= l->f[f] != NULL;
	if ((rc = apply_strings(l, err)) < 0 ||
	    (rc = apply_numbers(l, err)) < 0 ||
	    (rc = apply_when(l, err)) < 0 ||
	    (rc = apply_after(l, err)) < 0 ||
	    (rc = apply_labels(l, err)) < 0 ||
	    (rc = apply_cwd(l, err)) < 0 ||
	    (rc = agent ? apply_agent(l, err) : apply_command(l, err)) < 0 ||
	    (rc = apply_env(l, err)) < 0)
		return rc;
	return 0;
}

/*
 * Refuse what cJSON would turn into a shorter string than was written: a
 * NUL byte, or a \u0000 escape inside a string. Only strings are looked at
 * for the escape; a backslash always takes the next byte with it.
 */
static int check_nul(const char *p, size_t n, struct tq_err *err)
{
	int in_str = 0;

	if (memchr(p, '\0', n) != NULL)
		return tq_err_set(err, TQ_EINVAL, "holds a NUL byte");
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '"') {
			in_str = !in_str;
		} else if (in_str && p[i] == '\\' && i + 1 < n) {
			if (p[i + 1] == 'u' && i + 5 < n && memcmp(p + i + 2, "0000", 4) == 0)
				return tq_err_set(err, TQ_EINVAL, "a string holds U+0000 "
						  "(NUL), which no argument or variable can");
			i++;
		}
	}
	return 0;
}

/* Room for n specs; 0 or TQ_ENOMEM. */
static int reserve_specs(struct cli_import *im, size_t nc)
{
	struct tq_task_spec *v;
	uint64_t *sums;
	size_t *ln;

	if (nc <= im->cap)
		return 0;
	if ((v = reallocarray(im->specs, nc, sizeof(*v))) == NULL)
		return TQ_ENOMEM;
	im->specs = v;
	if ((ln = reallocarray(im->lines, nc, sizeof(*ln))) == NULL)
		return TQ_ENOMEM;
	im->lines = ln;
	if ((sums = reallocarray(im->sums, nc, sizeof(*sums))) == NULL)
		return TQ_ENOMEM;
	im->sums = sums;
	im->cap = nc;
	return 0;
}

static int push_spec(struct cli_import *im, const struct tq_task_spec *s, size_t lineno,
		     struct tq_err *err)
{
	if (im->n >= IMPORT_TASKS_MAX)
		return tq_err_set(err, TQ_EINVAL, "more than %d tasks in one file",
				  IMPORT_TASKS_MAX);
	if (im->n == im->cap && reserve_specs(im, im->cap ? im->cap * 2 : 256) < 0)
		return oom(err);
	im->specs[im->n] = *s;
	im->sums[im->n] = im->cur_sum;
	im->lines[im->n++] = lineno;
	return 0;
}

/* FNV-1a 64 of a line's bytes: what --resume knows a stored line by. */
static uint64_t line_sum(const char *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static int push_env(struct cli_import *im, struct tq_env *e, struct tq_err *err)
{
	if (im->nenvs == im->envs_cap) {
		size_t nc = im->envs_cap ? im->envs_cap * 2 : 16;
		struct tq_env *v = reallocarray(im->envs, nc, sizeof(*v));
		if (v == NULL)
			return oom(err);
		im->envs = v;
		im->envs_cap = nc;
	}
	im->envs[im->nenvs++] = *e;
	*e = (struct tq_env)TQ_ENV_INIT;
	return 0;
}

/* One non-blank line (p, n bytes, without its newline) into a spec. */
static int parse_line(struct cli_import *im, const char *p, size_t n, size_t lineno,
		      struct tq_err *err)
{
	struct line l = { .im = im, .env = TQ_ENV_INIT };
	const char *end = NULL;
	cJSON *o = NULL;
	int rc;

	if (n > IMPORT_LINE_MAX)
		return tq_err_set(err, TQ_EINVAL, "longer than %d bytes", IMPORT_LINE_MAX);
	if ((rc = check_nul(p, n, err)) < 0)
		return rc;
	if (n + 1 > im->scratch_cap) {
		char *b = realloc(im->scratch, n + 1);
		if (b == NULL)
			return oom(err);
		im->scratch = b;
		im->scratch_cap = n + 1;
	}
	memcpy(im->scratch, p, n);
	im->scratch[n] = '\0';
	if ((o = cJSON_ParseWithOpts(im->scratch, &end, 1)) == NULL) {
		size_t at = end != NULL && end >= im->scratch && end <= im->scratch + n ?
			    (size_t)(end - im->scratch) + 1 : 0;
		return at ? tq_err_set(err, TQ_EINVAL, "not valid JSON (at byte %zu)", at) :
		       tq_err_set(err, TQ_EINVAL, "not valid JSON");
	}
	if (im->defaults != NULL)
		l.spec = im->defaults->spec;
	else
		l.spec = (struct tq_task_spec)TQ_TASK_SPEC_INIT;
	if (l.spec.cwd == NULL)
		l.spec.cwd = im->base_cwd;
	l.spec.argv = NULL;
	l.spec.argc = 0;
	l.spec.shell = 0;
	rc = apply_line(&l, o, err);
	if (rc == 0 && l.has_env)
		rc = push_env(im, &l.env, err);
	if (rc == 0)
		rc = push_spec(im, &l.spec, lineno, err);
	tq_env_release(&l.env);
	cJSON_Delete(o);
	return rc;
}

/* Only spaces, tabs and carriage returns. */
static int blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return 0;
	return 1;
}

/* How many lines buf holds (the last may have no newline), at most
 * IMPORT_TASKS_MAX. */
static size_t count_lines(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	size_t n = 1;

	while (len > 0 && p < end && n < IMPORT_TASKS_MAX &&
	       (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		p++;
		n++;
	}
	return n;
}

int cli_import_parse(const char *buf, size_t len, const struct cli_submit *defaults,
		     struct cli_import **out, struct tq_err *err)
{
	struct cli_import *im;
	size_t lineno = 0, off = 0;
	int rc = 0;

	*out = NULL;
	if ((im = calloc(1, sizeof(*im))) == NULL)
		return oom(err);
	im->defaults = defaults;
	im->now = tq_now_ms();
	/* a relative cwd is relative to the defaults' (--cwd or the current
	 * directory), as a relative --cwd is */
	if (defaults != NULL && defaults->spec.cwd != NULL)
		strlcpy(im->base_cwd, defaults->spec.cwd, sizeof(im->base_cwd));
	else if (getcwd(im->base_cwd, sizeof(im->base_cwd)) == NULL)
		strlcpy(im->base_cwd, "/", sizeof(im->base_cwd));
	/* one allocation for the specs: a line is at most one task */
	if (reserve_specs(im, count_lines(buf, len)) < 0) {
		cli_import_free(im);
		return oom(err);
	}
	/* a byte order mark some editors write is no part of the JSON */
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		off = 3;
	while (off < len) {
		const char *p = buf + off, *nl = memchr(p, '\n', len - off);
		size_t n = nl != NULL ? (size_t)(nl - p) : len - off;

		off += n + (nl != NULL);
		lineno++;
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (blank(p, n))
			continue;
		im->cur_sum = line_sum(p, n);
		if ((rc = parse_line(im, p, n, lineno, err)) < 0) {
			if (rc != TQ_ENOMEM)
				tq_err_prefix(err, "line %zu", lineno);
			break;
		}
	}
	free(im->scratch);
	im->scratch = NULL;
	im->scratch_cap = 0;
	if (rc < 0) {
		cli_import_free(im);
		return rc;
	}
	*out = im;
	return 0;
}

const struct tq_task_spec *cli_import_specs(const struct cli_import *im, size_t *n)
{
	*n = im ? im->n : 0;
	return im ? im->specs : NULL;
}

size_t cli_import_line(const struct cli_import *im, size_t i)
{
	return im != NULL && i < im->n ? im->lines[i] : 0;
}

uint64_t cli_import_line_sum(const struct cli_import *im, size_t i)
{
	return im != NULL && i < im->n ? im->sums[i] : 0;
}

void cli_import_free(struct cli_import *im)
{
	struct chunk *c, *next;

	if (im == NULL)
		return;
	for (c = im->arena; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	for (size_t i = 0; i < im->nenvs; i++)
		tq_env_release(&im->envs[i]);
	for (size_t i = 0; i < im->nasks; i++) {
		cli_submit_release(im->asks[i]);
		free(im->asks[i]);
	}
	free(im->envs);
	free(im->asks);
	free(im->scratch);
	free(im->specs);
	free(im->lines);
	free(im->sums);
	free(im);
}

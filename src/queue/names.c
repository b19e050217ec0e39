/*
 * names.c - the names of states, outcomes and categories as stored; deriving
 * a task's default name and group from its argv. No SQL (the string vector
 * encoding of argv and env blobs is the SQLite backend's: sqlite/strv.c).
 */
#include "queue/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[TQ_STATE_COUNT] = {
	"queued", "scheduled", "blocked", "running", "succeeded", "failed",
	"timed_out", "killed", "canceled",
};

static const char *const outcome_names[TQ_OUTCOME_COUNT] = {
	"", "succeeded", "failed", "signaled", "timed_out", "killed",
	"output_overflow", "spawn_failed", "lost", "canceled", "stalled",
	"output_lost",
};

static const char *const category_names[TQ_CATEGORY_COUNT] = {
	"", "rate_limit", "overload", "network", "auth", "unknown",
};

const char *tq_state_name(enum tq_state s)
{
	return (unsigned)s < TQ_STATE_COUNT ? state_names[s] : "?";
}

const char *tq_outcome_name(enum tq_outcome o)
{
	return (unsigned)o < TQ_OUTCOME_COUNT ? outcome_names[o] : "?";
}

const char *tq_category_name(enum tq_category c)
{
	return (unsigned)c < TQ_CATEGORY_COUNT ? category_names[c] : "?";
}

const char *tq_stdin_mode_name(enum tq_stdin_mode m)
{
	switch (m) {
	case TQ_STDIN_FILE: return "file";
	case TQ_STDIN_PIPE: return "pipe";
	default: return "null";
	}
}

static int parse_name(const char *s, const char *const *names, int n, int first)
{
	if (s == NULL)
		return -1;
	for (int i = first; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

int tq_state_parse(const char *s, enum tq_state *out)
{
	int i = parse_name(s, state_names, TQ_STATE_COUNT, 0);

	if (i < 0)
		return TQ_EINVAL;
	*out = (enum tq_state)i;
	return 0;
}

int tq_outcome_parse(const char *s, enum tq_outcome *out)
{
	int i = parse_name(s, outcome_names, TQ_OUTCOME_COUNT, 1);

	if (i < 0)
		return TQ_EINVAL;
	*out = (enum tq_outcome)i;
	return 0;
}

int tq_category_parse(const char *s, enum tq_category *out)
{
	int i = parse_name(s, category_names, TQ_CATEGORY_COUNT, 1);

	if (i < 0)
		return TQ_EINVAL;
	*out = (enum tq_category)i;
	return 0;
}

int tq_state_final(enum tq_state s)
{
	return s >= TQ_SUCCEEDED && s < TQ_STATE_COUNT;
}

/* ------------------------------------------------------------------ */

static const char *base_name(const char *p)
{
	const char *slash = strrchr(p, '/');

	return slash && slash[1] ? slash + 1 : p;
}

/* A "plain word": short, no spaces, not an option, nothing odd. */
static int plain_word(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c >= 0x7f || strchr("\"'`$&|;<>()*?[]{}\\=", c))
			return 0;
	}
	return 1;
}

/* Copy the first word of a shell script into buf. */
static void first_word(const char *script, char *buf, size_t n, int nth)
{
	const char *p = script;
	size_t len;

	for (;;) {
		p += strspn(p, " \t\n");
		len = strcspn(p, " \t\n;&|()<>");
		if (nth-- == 0 || *p == '\0')
			break;
		p += len;
	}
	if (len >= n)
		len = n - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
}

void tq_derive_group(char *const *argv, size_t argc, int shell, char *buf, size_t n)
{
	char word[TQ_NAME_MAX];
	const char *prog = argc > 0 ? argv[0] : "";

	if (n == 0)
		return;
	if (shell && argc >= 3) {
		first_word(argv[2], word, sizeof(word), 0);
		prog = word;
	}
	snprintf(buf, n, "%s", *prog ? base_name(prog) : "sh");
	if (!plain_word(buf, n))
		snprintf(buf, n, "%s", "default");
}

void tq_derive_name(char *const *argv, size_t argc, int shell, char *buf, size_t n)
{
	char w0[TQ_NAME_MAX], w1[TQ_NAME_MAX];
	const char *arg1 = argc > 1 ? argv[1] : "";

	if (n == 0)
		return;
	tq_derive_group(argv, argc, shell, w0, sizeof(w0));
	if (shell && argc >= 3) {
		first_word(argv[2], w1, sizeof(w1), 1);
		arg1 = w1;
	}
	if (plain_word(arg1, 40))
		snprintf(buf, n, "%s %s", w0, base_name(arg1));
	else
		snprintf(buf, n, "%s", w0);
}

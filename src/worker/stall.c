/*
 * stall.c - the progress clock behind --stall-timeout (see stall.h for what
 * counts as progress and why).
 *
 * Invariants: deadline is TQ_STALL_NEVER exactly when the clock is off; it
 * only ever moves to now + timeout_ms on progress; a stream's recent[] holds
 * the hashes of its last nrecent non-empty lines, oldest overwritten first.
 */
#include "stall.h"

#include <stdio.h>
#include <string.h>

#include "../common/parse.h"

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

void tq_stall_init(struct tq_stall *st, int64_t timeout_ms, int64_t now)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; i < 2; i++)
		st->s[i].hash = FNV_OFFSET;
	st->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	st->deadline = st->timeout_ms > 0 && now <= TQ_STALL_NEVER - st->timeout_ms ?
		now + st->timeout_ms : TQ_STALL_NEVER;
}

static void progress(struct tq_stall *st, int64_t now)
{
	st->repeats = 0;
	if (st->timeout_ms > 0 && now <= TQ_STALL_NEVER - st->timeout_ms)
		st->deadline = now + st->timeout_ms;
}

static int seen(const struct tq_stall_stream *s, uint64_t h)
{
	for (size_t i = 0; i < s->nrecent; i++)
		if (s->recent[i] == h)
			return 1;
	return 0;
}

/* The unended line of s has just ended. */
static void line_end(struct tq_stall *st, struct tq_stall_stream *s, int64_t now)
{
	size_t shown = s->len < sizeof(s->cur) ? s->len : sizeof(s->cur);

	if (s->len == 0)
		return; /* an empty line (or the '\n' of a "\r\n") says nothing */
	st->lines++;
	memcpy(st->last, s->cur, shown);
	st->last_len = shown;
	if (seen(s, s->hash)) {
		st->repeats++;
	} else {
		s->recent[s->next] = s->hash;
		s->next = (s->next + 1) % TQ_STALL_RECENT;
		if (s->nrecent < TQ_STALL_RECENT)
			s->nrecent++;
		progress(st, now);
	}
	s->hash = FNV_OFFSET;
	s->len = 0;
}

void tq_stall_feed(struct tq_stall *st, int stream, const char *buf, size_t n,
		   int64_t now)
{
	struct tq_stall_stream *s = &st->s[stream ? 1 : 0];

	/* Off: nothing reads what follows, and hashing every byte was 40% of
	 * the worker's CPU capturing a flood (bench/run log). */
	if (st->timeout_ms == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n' || c == '\r') {
			line_end(st, s, now);
			continue;
		}
		if (s->len < sizeof(s->cur))
			s->cur[s->len] = (char)c;
		s->hash = (s->hash ^ c) * FNV_PRIME;
		if (++s->len % TQ_STALL_LONG_LINE == 0)
			progress(st, now);
	}
}

int tq_stall_due(const struct tq_stall *st, int64_t now)
{
	return st->deadline != TQ_STALL_NEVER && now >= st->deadline;
}

char *tq_stall_describe(const struct tq_stall *st, char *buf, size_t n)
{
	char dur[32], line[TQ_STALL_SHOWN + 1];
	size_t i;

	tq_format_duration(st->timeout_ms, dur, sizeof(dur));
	for (i = 0; i < st->last_len; i++) {
		unsigned char c = (unsigned char)st->last[i];
		line[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	line[i] = '\0';
	if (st->lines == 0)
		snprintf(buf, n, "no output for %s", dur);
	else if (st->repeats > 0)
		snprintf(buf, n, "no new output for %s (%lld repeated line%s); the last: %s",
			 dur, (long long)st->repeats, st->repeats == 1 ? "" : "s", line);
	else
		snprintf(buf, n, "no new output for %s; the last line: %s", dur, line);
	return buf;
}

/*
 * stall.c - the progress clock behind --stall-timeout (see stall.h for what
 * counts as progress and why).
 *
 * Invariants: deadline is TQ_STALL_NEVER exactly when the clock is off;
 * otherwise it is the latest of progress_deadline (moved to now +
 * timeout_ms on progress only) and grew_at + timeout_ms of each stream
 * whose unended line has bytes (the provisional clock, taken back when the
 * line ends as a repeat); a stream's recent[] holds the hashes of its last
 * nrecent non-empty lines, oldest overwritten first.
 */
#include "stall.h"

#include <stdio.h>
#include <string.h>

#include "common/parse.h"

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
	st->progress_deadline = st->deadline;
}

/* now + the timeout, without overflow (a huge timeout is never). */
static int64_t after(const struct tq_stall *st, int64_t now)
{
	return now <= TQ_STALL_NEVER - st->timeout_ms ? now + st->timeout_ms
						      : TQ_STALL_NEVER;
}

/* The deadline from progress and the unended lines (the invariant). */
static void settle(struct tq_stall *st)
{
	int64_t d = st->progress_deadline;

	for (int i = 0; i < 2; i++)
		if (st->s[i].grew_at > 0 && after(st, st->s[i].grew_at) > d)
			d = after(st, st->s[i].grew_at);
	st->deadline = d;
}

static void progress(struct tq_stall *st, int64_t now)
{
	st->repeats = 0;
	st->progress_deadline = after(st, now);
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
	st->tail_unended = 0;
	if (seen(s, s->hash)) {
		st->repeats++; /* and what its pieces gave is taken back */
	} else {
		s->recent[s->next] = s->hash;
		s->next = (s->next + 1) % TQ_STALL_RECENT;
		if (s->nrecent < TQ_STALL_RECENT)
			s->nrecent++;
		progress(st, now);
	}
	s->hash = FNV_OFFSET;
	s->len = 0;
	s->grew_at = 0;
}

void tq_stall_feed(struct tq_stall *st, int stream, const char *buf, size_t n,
		   int64_t now)
{
	struct tq_stall_stream *s = &st->s[stream ? 1 : 0];

	/* Off: nothing reads what follows, and hashing every byte was 40% of
	 * the worker's CPU capturing a flood (bench/run log). */
	if (st->timeout_ms == 0)
		return;
	st->bytes += (int64_t)n;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n' || c == '\r') {
			line_end(st, s, now);
			continue;
		}
		if (s->len < sizeof(s->cur))
			s->cur[s->len] = (char)c;
		s->hash = (s->hash ^ c) * FNV_PRIME;
		s->len++;
		s->grew_at = now > 0 ? now : 1;
		st->tail_unended = 1;
		st->tail_stream = stream ? 1 : 0;
	}
	settle(st);
}

void tq_stall_pause(struct tq_stall *st, int64_t ms)
{
	if (st->timeout_ms == 0 || ms <= 0)
		return;
	if (st->progress_deadline <= TQ_STALL_NEVER - ms)
		st->progress_deadline += ms;
	for (int i = 0; i < 2; i++)
		if (st->s[i].grew_at > 0)
			st->s[i].grew_at += ms;
	settle(st);
}

int tq_stall_due(const struct tq_stall *st, int64_t now)
{
	return st->deadline != TQ_STALL_NEVER && now >= st->deadline;
}

char *tq_stall_describe(const struct tq_stall *st, char *buf, size_t n)
{
	char dur[32], line[TQ_STALL_SHOWN + 1];
	const struct tq_stall_stream *u = &st->s[st->tail_stream];
	const char *src = st->tail_unended ? u->cur : st->last;
	size_t i, len = st->tail_unended ? (u->len < sizeof(u->cur) ? u->len : sizeof(u->cur))
					 : st->last_len;

	tq_format_duration(st->timeout_ms, dur, sizeof(dur));
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];
		line[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	line[i] = '\0';
	if (st->bytes == 0 || (st->lines == 0 && !st->tail_unended))
		snprintf(buf, n, "no output for %s", dur);
	else if (st->tail_unended)
		snprintf(buf, n, "no new output for %s; the last line, unended: %s", dur, line);
	else if (st->repeats > 0)
		snprintf(buf, n, "no new output for %s (%lld repeated line%s); the last: %s",
			 dur, (long long)st->repeats, st->repeats == 1 ? "" : "s", line);
	else
		snprintf(buf, n, "no new output for %s; the last line: %s", dur, line);
	return buf;
}

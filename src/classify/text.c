/*
 * text.c - the text classification shows people: the explain trace (the
 * lines of `taskq classify --explain`, appended while room is left, the
 * last EXPLAIN_RESERVE bytes kept for the verdict), and reasons made
 * harmless to store and show (valid UTF-8, no control characters, a long
 * line cut around its match).
 *
 * Invariants: nothing here allocates; every output is terminated and never
 * longer than its buffer; a UTF-8 sequence is never cut in two.
 */
#include "classify_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WINDOW_BEFORE 120       /* bytes of a long line shown before a match */
#define EXPLAIN_RESERVE 320     /* kept for the trace's last lines */

static void xp_vadd(struct xp *x, size_t reserve, const char *fmt, va_list ap)
{
	size_t room;
	int k;

	if (x->p == NULL || x->n == 0)
		return;
	if (x->full && reserve > 0)
		return;
	room = x->n - x->len;
	if (room <= reserve + 1) {
		x->full = 1;
		return;
	}
	k = vsnprintf(x->p + x->len, room - reserve, fmt, ap);
	if (k < 0 || (size_t)k + 1 >= room - reserve) {
		/* cut: end the partial line, mark the trace */
		x->p[x->len] = '\0';
		if (!x->full && room > 32)
			x->len += (size_t)snprintf(x->p + x->len, room, "... (trace cut)\n");
		x->full = 1;
		return;
	}
	x->len += (size_t)k;
	x->p[x->len++] = '\n';
	x->p[x->len] = '\0';
}

__attribute__((format(printf, 2, 3)))
void tq_xp_add(struct xp *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xp_vadd(x, EXPLAIN_RESERVE, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3)))
void tq_xp_last(struct xp *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xp_vadd(x, 0, fmt, ap);
	va_end(ap);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, c = s[0] & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (k == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	if (c >= 0x80 && c <= 0x9f)
		return 0; /* C1 controls */
	return k;
}

/*
 * Copy n bytes of s to dst (size cap) so that they are harmless where a
 * reason is stored and shown: tab, CR and LF become spaces, other control
 * characters and invalid UTF-8 become '?', leading and trailing spaces are
 * dropped, and a UTF-8 sequence is never cut. *cut (may be NULL) is set
 * when dst was too small. Returns the bytes written (dst is terminated).
 */
size_t tq_clean_copy(char *dst, size_t cap, const char *s, size_t n, int *cut)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0, i = 0;

	if (cut != NULL)
		*cut = 0;
	if (cap == 0)
		return 0;
	while (i < n && isspace(u[i]))
		i++;
	while (i < n) {
		size_t k = utf8_len(u + i, n - i);

		if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f))
			k = 0; /* a control character: replaced */
		if (o + (k > 0 ? k : 1) >= cap) {
			while (i < n && isspace(u[i]))
				i++;
			if (cut != NULL && i < n)
				*cut = 1;
			break;
		}
		if (k == 0) {
			dst[o++] = u[i] == '\t' || u[i] == '\r' || u[i] == '\n' ? ' ' : '?';
			i++;
		} else {
			memcpy(dst + o, s + i, k);
			o += k;
			i += k;
		}
	}
	while (o > 0 && dst[o - 1] == ' ')
		o--;
	dst[o] = '\0';
	return o;
}

/* Back up to the start of a UTF-8 sequence. */
static size_t char_start(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

/*
 * Set dst (cap bytes) to the line [ls, le) of s made harmless (tq_clean_copy).
 * A line too long for it is shown from WINDOW_BEFORE bytes before the match
 * at ms, with "..." where it is cut.
 */
void tq_reason_line(char *dst, size_t cap, const char *s, size_t ls, size_t le,
		    size_t ms)
{
	size_t o = 0, start = ls;
	int cut = 0;

	if (le - ls + 1 > cap && ms > ls + WINDOW_BEFORE)
		start = char_start(s, ms - WINDOW_BEFORE);
	if (start > ls) {
		memcpy(dst, "...", 4);
		o = 3;
	}
	o += tq_clean_copy(dst + o, cap - o, s + start, le - start, &cut);
	if (cut) {
		size_t at = o + 4 <= cap ? o : char_start(dst, cap - 4);

		memcpy(dst + at, "...", 4);
	}
}

/*
 * secret.c - masking credentials (see secret.h).
 *
 * A URL here is what text makes of one: a scheme (a letter, then letters,
 * digits, '+', '-', '.'), "://", and every byte up to the first space,
 * control byte, quote, '<', '>' or '`'. Its authority ends at the first '/',
 * '?' or '#'; the userinfo is what comes before the authority's last '@',
 * and its password what follows the userinfo's first ':'. Parameters are
 * the '&'- or ';'-separated NAME=VALUE items after the first '?' or '#' (a
 * fragment carries them too: an OAuth implicit grant's #access_token=).
 * A "://" inside a URL starts a URL of its own as well (a redirect target in
 * a query), so nested credentials are found.
 *
 * Masking edits the caller's buffer in place, left to right, never reading
 * or writing past cap; a credential already reading TQ_SECRET_MASK is left
 * alone, which makes masking idempotent and lets a URL with more credentials
 * than one pass holds be finished in further passes.
 */
#include "secret.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"

#define MASK_LEN (sizeof(TQ_SECRET_MASK) - 1)
#define URL_SPANS 16 /* credentials masked per pass over one URL */

const char *const tq_secret_params[] = {
	"token", "access_token", "refresh_token", "id_token", "auth_token",
	"private_token", "jwt", "auth", "authorization",
	"key", "api_key", "apikey", "api-key",
	"password", "passwd", "pwd", "pass",
	"secret", "client_secret",
	"sig", "signature",
	"x-amz-signature", "x-amz-credential", "x-amz-security-token",
	"x-goog-signature", "x-goog-credential",
	NULL,
};

struct span {
	size_t at, n;
};

int tq_secret_param(const char *name, size_t n)
{
	for (size_t i = 0; tq_secret_params[i] != NULL; i++)
		if (strlen(tq_secret_params[i]) == n &&
		    strncasecmp(tq_secret_params[i], name, n) == 0)
			return 1;
	return 0;
}

static int scheme_char(unsigned char c)
{
	return isalnum(c) || c == '+' || c == '-' || c == '.';
}

static int url_char(unsigned char c)
{
	return c > ' ' && c != 0x7f && c != '"' && c != '\'' && c != '<' && c != '>' &&
	       c != '`';
}

/* The end of the URL whose "://" is at sep, or 0 when no scheme precedes
 * it (":// alone", "1://"). */
static size_t url_end(const char *s, size_t len, size_t sep)
{
	size_t u0 = sep, u1 = sep + 3;

	while (u0 > 0 && scheme_char((unsigned char)s[u0 - 1]))
		u0--;
	while (u0 < sep && !isalpha((unsigned char)s[u0]))
		u0++;
	if (u0 == sep)
		return 0;
	while (u1 < len && url_char((unsigned char)s[u1]))
		u1++;
	return u1;
}

static int is_mask(const char *s, size_t n)
{
	return n == MASK_LEN && memcmp(s, TQ_SECRET_MASK, MASK_LEN) == 0;
}

/* Add [at, at+n) to sp unless empty or masked already; *more when full. */
static void take(const char *s, size_t at, size_t n, struct span *sp, size_t *k,
		 size_t max, int *more)
{
	if (n == 0 || is_mask(s + at, n))
		return;
	if (*k == max) {
		*more = 1;
		return;
	}
	sp[*k].at = at;
	sp[*k].n = n;
	(*k)++;
}

/* The credentials of the URL from sep (its "://") to u1, in order, up to
 * max of them; *more if there were others. */
static size_t url_creds(const char *s, size_t sep, size_t u1, struct span *sp,
			size_t max, int *more)
{
	size_t a = sep + 3, e = a, k = 0;
	const char *at = NULL;

	*more = 0;
	while (e < u1 && s[e] != '/' && s[e] != '?' && s[e] != '#')
		e++;
	for (size_t i = a; i < e; i++)
		if (s[i] == '@')
			at = s + i;
	if (at != NULL) {
		const char *colon = memchr(s + a, ':', (size_t)(at - (s + a)));
		if (colon != NULL)
			take(s, (size_t)(colon + 1 - s), (size_t)(at - colon - 1), sp, &k,
			     max, more);
	}
	while (e < u1 && s[e] != '?' && s[e] != '#')
		e++;
	for (size_t p = e + 1; p < u1;) {
		size_t q = p;
		const char *eq;

		while (q < u1 && s[q] != '&' && s[q] != ';' && s[q] != '#' && s[q] != '?')
			q++;
		eq = memchr(s + p, '=', q - p);
		if (eq != NULL && tq_secret_param(s + p, (size_t)(eq - (s + p))))
			take(s, (size_t)(eq + 1 - s), (size_t)(s + q - eq - 1), sp, &k, max,
			     more);
		p = q + 1;
	}
	return k;
}

/* Replace buf[at, at+del) with ins (nins bytes); keep at most cap - 1
 * bytes, NUL after them. at <= len < cap. Returns the new length. */
static size_t splice(char *buf, size_t len, size_t cap, size_t at, size_t del,
		     const char *ins, size_t nins)
{
	size_t room = cap - 1, tail = len - at - del, dst, keep;

	if (nins > room - at)
		nins = room - at;
	dst = at + nins;
	keep = tail < room - dst ? tail : room - dst;
	memmove(buf + dst, buf + at + del, keep);
	memcpy(buf + at, ins, nins);
	buf[dst + keep] = '\0';
	return dst + keep;
}

size_t tq_secret_mask_urls(char *buf, size_t len, size_t cap)
{
	struct span sp[URL_SPANS];
	size_t pos = 0;
	const char *p;

	buf[len] = '\0';
	while (pos + 3 <= len && (p = memmem(buf + pos, len - pos, "://", 3)) != NULL) {
		size_t sep = (size_t)(p - buf), u1 = url_end(buf, len, sep), k;
		/* A URL of u bytes holds at most u / 2 credentials; the bound on
		 * passes only matters when cap cut a mask short, which a further
		 * pass would find again. */
		size_t passes = u1 > sep ? (u1 - sep) / (2 * URL_SPANS) + 1 : 0;
		int more = 1;

		while (u1 > 0 && more && passes-- > 0) {
			k = url_creds(buf, sep, u1, sp, URL_SPANS, &more);
			/* last first: the earlier spans stay where they were */
			for (size_t i = k; i-- > 0;)
				if (sp[i].at < len)
					len = splice(buf, len, cap, sp[i].at, sp[i].n,
						     TQ_SECRET_MASK, MASK_LEN);
			u1 = sep + 3 <= len ? url_end(buf, len, sep) : 0;
		}
		pos = sep + 3;
	}
	return len;
}

/* Does text hold a URL with a credential? */
static int has_url_creds(const char *s, size_t len)
{
	struct span sp[1];
	size_t pos = 0;
	const char *p;

	while (pos + 3 <= len && (p = memmem(s + pos, len - pos, "://", 3)) != NULL) {
		size_t sep = (size_t)(p - s), u1 = url_end(s, len, sep);
		int more;

		if (u1 > 0 && url_creds(s, sep, u1, sp, 1, &more) > 0)
			return 1;
		pos = sep + 3;
	}
	return 0;
}

int tq_secret_env_masked(const char *entry)
{
	const char *eq = strchr(entry, '=');

	if (eq == NULL)
		return 0;
	return tq_env_looks_secret(entry) || has_url_creds(eq + 1, strlen(eq + 1));
}

/* A copy of s[0, n) with its URL credentials masked (malloc'd). Each
 * credential is at least one byte and grows by at most 2, so 3n + 1 bytes
 * always hold the result. */
static char *masked_copy(const char *s, size_t n)
{
	char *m = malloc(3 * n + 1);

	if (m == NULL)
		return NULL;
	memcpy(m, s, n);
	tq_secret_mask_urls(m, n, 3 * n + 1);
	return m;
}

char *tq_secret_env_display(const char *entry)
{
	size_t n = tq_env_name_len(entry);
	char *v;

	if (entry[n] == '=' && tq_env_looks_secret(entry)) {
		if ((v = malloc(n + 1 + MASK_LEN + 1)) != NULL) {
			memcpy(v, entry, n + 1);
			memcpy(v + n + 1, TQ_SECRET_MASK, MASK_LEN + 1);
		}
		return v;
	}
	return masked_copy(entry, strlen(entry));
}

/* ------------------------------------------------------------------ */
/* The values of one task                                             */

/* Add value (n bytes) with its mask (copied), longest first; skip short
 * values and ones already there. */
static int add_value(struct tq_secrets *s, const char *value, size_t n, const char *mask,
		     struct tq_err *err)
{
	struct tq_secret_value nv = { NULL, n, NULL };
	size_t i;

	if (n < TQ_SECRET_MIN_LEN)
		return 0;
	for (i = 0; i < s->n; i++)
		if (s->v[i].len == n && memcmp(s->v[i].value, value, n) == 0)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct tq_secret_value *v = reallocarray(s->v, cap, sizeof(*v));
		if (v == NULL)
			return tq_err_set(err, TQ_ENOMEM, "secrets: out of memory");
		s->v = v;
		s->cap = cap;
	}
	nv.value = strndup(value, n);
	nv.mask = strdup(mask);
	if (nv.value == NULL || nv.mask == NULL) {
		free(nv.value);
		free(nv.mask);
		return tq_err_set(err, TQ_ENOMEM, "secrets: out of memory");
	}
	for (i = s->n; i > 0 && s->v[i - 1].len < n; i--)
		s->v[i] = s->v[i - 1];
	s->v[i] = nv;
	s->n++;
	return 0;
}

/* Add each URL credential in value on its own, masked as TQ_SECRET_MASK. */
static int add_url_creds(struct tq_secrets *s, const char *value, struct tq_err *err)
{
	struct span sp[URL_SPANS];
	size_t len = strlen(value), pos = 0;
	const char *p;
	int rc = 0;

	while (rc == 0 && pos + 3 <= len &&
	       (p = memmem(value + pos, len - pos, "://", 3)) != NULL) {
		size_t sep = (size_t)(p - value), u1 = url_end(value, len, sep), k = 0;
		int more = 0;

		/* one pass: past URL_SPANS credentials in one URL, the rest are
		 * masked in text as part of the URL only */
		if (u1 > 0)
			k = url_creds(value, sep, u1, sp, URL_SPANS, &more);
		for (size_t i = 0; rc == 0 && i < k; i++)
			rc = add_value(s, value + sp[i].at, sp[i].n, TQ_SECRET_MASK, err);
		pos = sep + 3;
	}
	return rc;
}

int tq_secrets_add_env(struct tq_secrets *s, char *const *env, size_t n,
		       struct tq_err *err)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *eq = env[i] != NULL ? strchr(env[i], '=') : NULL;
		const char *v = eq != NULL ? eq + 1 : NULL;
		size_t len;
		char *m;

		if (v == NULL)
			continue;
		len = strlen(v);
		if (tq_env_looks_secret(env[i])) {
			rc = add_value(s, v, len, TQ_SECRET_MASK, err);
		} else if (len >= TQ_SECRET_MIN_LEN && has_url_creds(v, len)) {
			if ((m = masked_copy(v, len)) == NULL)
				return tq_err_set(err, TQ_ENOMEM, "secrets: out of memory");
			rc = add_value(s, v, len, m, err);
			free(m);
		}
		if (rc == 0)
			rc = add_url_creds(s, v, err);
	}
	return rc;
}

size_t tq_secrets_mask(const struct tq_secrets *s, char *buf, size_t len, size_t cap)
{
	buf[len] = '\0';
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		const struct tq_secret_value *v = &s->v[i];
		size_t pos = 0, mlen = strlen(v->mask);
		const char *p;

		while (pos + v->len <= len &&
		       (p = memmem(buf + pos, len - pos, v->value, v->len)) != NULL) {
			size_t at = (size_t)(p - buf);
			len = splice(buf, len, cap, at, v->len, v->mask, mlen);
			pos = at + mlen;
		}
	}
	return tq_secret_mask_urls(buf, len, cap);
}

void tq_secrets_mask_str(const struct tq_secrets *s, char *str, size_t cap)
{
	tq_secrets_mask(s, str, strnlen(str, cap - 1), cap);
}

void tq_secrets_release(struct tq_secrets *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].value);
		free(s->v[i].mask);
	}
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

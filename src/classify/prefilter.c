/*
 * prefilter.c - the literal prefilter (prefilter.h): why tq_classify stays
 * fast over 2 x 64 KiB. glibc's regexec costs about 1 ms per pattern per
 * 64 KiB, so the text rules are not run over the whole tail: at load, a set
 * of literals that every match of a pattern must contain is taken from its
 * ERE source (lit_*), and one Aho-Corasick automaton over all of them
 * (ac_*) finds, in one pass over each tail, the lines where a pattern can
 * match; regexec then runs on those lines only (view.c).
 *
 * The extractor reads the pattern, not regcomp's program: a run of literal
 * bytes outside groups, or the literals of a group every match goes
 * through, one set per alternative of an alternation. Anything it does not
 * understand (brackets, '.', anchors, escapes of letters, non-ASCII bytes,
 * an optional atom) ends a run, so it can only find fewer literals, never a
 * wrong one; a pattern with no literal of LIT_MIN bytes is not served.
 * Literals are lowercased and the automaton folds ASCII letters, so it
 * serves REG_ICASE patterns and, over-approximating, the others.
 *
 * Invariant: the literals of a pattern are necessary (a line where the
 * pattern matches holds one of them), so a scan never misses a line where
 * regexec would match (tests/fuzz/fuzz_prefilter.c checks it against
 * regexec).
 */
#include "prefilter.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "classify_int.h"

#define LIT_MIN 3               /* shortest literal worth prefiltering on */

/* ------------------------------------------------------------------ */
/* Literals: strings every match of a pattern contains                */

struct lits {
	char **v;
	size_t n;
};

static void lits_free(struct lits *l)
{
	strv_free(l->v, l->n);
	l->v = NULL;
	l->n = 0;
}

static int lits_add(struct lits *l, const char *s, size_t n)
{
	char **v = reallocarray(l->v, l->n + 1, sizeof(*v));

	if (v == NULL)
		return TQ_ENOMEM;
	l->v = v;
	if ((v[l->n] = strndup(s, n)) == NULL)
		return TQ_ENOMEM;
	l->n++;
	return 0;
}

/*
 * How selective a literal is likely to be: its length, with digits counted
 * three times and other non-letters twice, since log text is mostly
 * letters ("429" beats "status": every access log line has a status).
 */
static size_t lit_score(const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += isdigit((unsigned char)s[i]) ? 3 : isalpha((unsigned char)s[i]) ||
		     s[i] == ' ' ? 1 : 2;
	return k;
}

/* A set is as selective as its least selective member. */
static size_t lits_score(const struct lits *l)
{
	size_t m = SIZE_MAX;

	for (size_t i = 0; i < l->n; i++)
		if (lit_score(l->v[i], strlen(l->v[i])) < m)
			m = lit_score(l->v[i], strlen(l->v[i]));
	return l->n > 0 ? m : 0;
}

static size_t lits_minlen(const struct lits *l)
{
	size_t m = SIZE_MAX;

	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->v[i]) < m)
			m = strlen(l->v[i]);
	return l->n > 0 ? m : 0;
}

/* Index just past the bracket expression that starts at p[i] == '['. */
static size_t skip_bracket(const char *p, size_t i, size_t n)
{
	i++;
	if (i < n && p[i] == '^')
		i++;
	if (i < n && p[i] == ']')
		i++;
	while (i < n && p[i] != ']') {
		if (p[i] == '[' && i + 1 < n && strchr(":.=", p[i + 1]) != NULL) {
			char t = p[i + 1];

			i += 2;
			while (i + 1 < n && !(p[i] == t && p[i + 1] == ']'))
				i++;
			i += 2;
		} else {
			i++;
		}
	}
	return i < n ? i + 1 : n;
}

/* Index of the ')' that closes the '(' at p[i], or n. */
static size_t skip_group(const char *p, size_t i, size_t n)
{
	int depth = 0;

	while (i < n) {
		if (p[i] == '\\') {
			i += 2;
			continue;
		}
		if (p[i] == '[') {
			i = skip_bracket(p, i, n);
			continue;
		}
		if (p[i] == '(')
			depth++;
		else if (p[i] == ')' && --depth == 0)
			return i;
		i++;
	}
	return n;
}

static int lit_alts(const char *p, size_t n, struct lits *out, int depth);

/* A run of literal bytes in one alternative (lowercased). */
struct run {
	char cur[128], best[128];
	size_t clen, blen;
};

static void run_end(struct run *r)
{
	if (lit_score(r->cur, r->clen) > lit_score(r->best, r->blen)) {
		memcpy(r->best, r->cur, r->clen);
		r->blen = r->clen;
	}
	r->clen = 0;
}

/* A group that every match goes through: its literal set competes with
 * the best run. 0 or TQ_ENOMEM. */
static int lit_group(const char *p, size_t n, struct lits *g, int depth)
{
	struct lits t = { 0 };
	int rc = lit_alts(p, n, &t, depth + 1);

	if (rc < 0) {
		lits_free(&t);
		return rc;
	}
	if (rc == 1 && lits_minlen(&t) >= LIT_MIN && lits_score(&t) > lits_score(g)) {
		lits_free(g);
		*g = t;
	} else {
		lits_free(&t);
	}
	return 0;
}

/* A quantifier at p[i]: how far it goes, and whether it allows zero. */
static size_t quantifier(const char *p, size_t i, size_t n, int *optional)
{
	if (p[i] != '{') {
		*optional = p[i] != '+';
		return i + 1;
	}
	*optional = i + 1 >= n || p[i + 1] == '0' || p[i + 1] == ',';
	while (i < n && p[i] != '}')
		i++;
	return i < n ? i + 1 : n;
}

/*
 * The literals of one alternative (no top-level '|'): the most selective
 * run of literal bytes outside groups (lit_score), or the set of a group
 * that is not optional, whichever is more selective. A byte followed by a
 * quantifier, a bracket, '.', anchors, escapes of letters (\b, \w, \1) and
 * non-ASCII bytes (case folding is ASCII only) end a run. 1: found (at
 * least LIT_MIN bytes); 0: none; <0: error.
 */
static int lit_alt(const char *p, size_t n, struct lits *out, int depth)
{
	struct run r = { .clen = 0, .blen = 0 };
	struct lits g = { 0 };
	size_t i = 0, gs = 0, ge = 0;
	int last_lit = 0, pending = 0, rc = 0;

	while (i < n && rc == 0) {
		unsigned char c = (unsigned char)p[i];
		int lit = -1, optional;
		size_t next = i + 1;

		if (c == '*' || c == '+' || c == '?' || c == '{') {
			next = quantifier(p, i, n, &optional);
			if (last_lit && r.clen > 0)
				r.clen--;
			if (pending && !optional)
				rc = lit_group(p + gs, ge - gs, &g, depth);
			pending = 0;
			last_lit = 0;
			run_end(&r);
			i = next;
			continue;
		}
		if (pending) /* the group before this atom is not optional */
			rc = lit_group(p + gs, ge - gs, &g, depth);
		pending = 0;
		if (c == '\\' && i + 1 < n) {
			unsigned char e = (unsigned char)p[i + 1];

			next = i + 2;
			if (e < 0x80 && !isalnum(e) && strchr("<>`'", e) == NULL)
				lit = e;
		} else if (c == '[') {
			next = skip_bracket(p, i, n);
		} else if (c == '(') {
			gs = i + 1;
			ge = skip_group(p, i, n);
			pending = ge < n;
			next = ge + 1;
		} else if (c < 0x80 && c != '.' && c != '^' && c != '$' && c != '\\') {
			lit = c;
		}
		if (lit >= 0 && r.clen < sizeof(r.cur)) {
			r.cur[r.clen++] = (char)tolower(lit);
			last_lit = 1;
		} else {
			run_end(&r);
			last_lit = 0;
		}
		i = next;
	}
	if (rc == 0 && pending)
		rc = lit_group(p + gs, ge - gs, &g, depth);
	run_end(&r);
	if (rc == 0 && r.blen >= LIT_MIN && lit_score(r.best, r.blen) >= lits_score(&g)) {
		rc = lits_add(out, r.best, r.blen);
		rc = rc < 0 ? rc : 1;
	} else if (rc == 0 && g.n > 0) { /* lit_group keeps only sets of LIT_MIN+ bytes */
		for (size_t k = 0; rc == 0 && k < g.n; k++)
			rc = lits_add(out, g.v[k], strlen(g.v[k]));
		rc = rc < 0 ? rc : 1;
	}
	lits_free(&g);
	return rc;
}

/* The literals of an alternation: one set per alternative, joined; every
 * alternative must have one. 1: found; 0: none; <0: error. */
static int lit_alts(const char *p, size_t n, struct lits *out, int depth)
{
	size_t i = 0, start = 0;

	if (depth > 8)
		return 0;
	for (;;) {
		if (i >= n || p[i] == '|') {
			int rc = lit_alt(p + start, (i < n ? i : n) - start, out, depth);

			if (rc <= 0 || i >= n)
				return rc;
			start = ++i;
		} else if (p[i] == '\\') {
			i += 2;
		} else if (p[i] == '[') {
			i = skip_bracket(p, i, n);
		} else if (p[i] == '(') {
			i = skip_group(p, i, n) + 1;
		} else {
			i++;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Aho-Corasick over every pattern's literals                         */

void tq_prefilter_release(struct tq_prefilter *a)
{
	free(a->delta);
	free(a->out_off);
	free(a->out_n);
	free(a->outs);
	memset(a, 0, sizeof(*a));
}

/* Append owner o to a->outs (cap in *cap). */
static int ac_out(struct tq_prefilter *a, size_t *len, size_t *cap, uint32_t o)
{
	if (*len == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		uint32_t *v = reallocarray(a->outs, nc, sizeof(*v));

		if (v == NULL)
			return TQ_ENOMEM;
		a->outs = v;
		*cap = nc;
	}
	a->outs[(*len)++] = o;
	return 0;
}

/*
 * Build the automaton for n literals (lowercase ASCII); own[i] is the
 * index of the rule literal i belongs to. The transition table is complete
 * (a DFA), so a scan is one lookup per byte. 0 or TQ_ENOMEM.
 */
static int ac_build(struct tq_prefilter *a, char *const *lit, const uint32_t *own, size_t n)
{
	size_t maxst = 1, ns = 1, qh = 0, qt = 0, nouts = 0, capouts = 0, k;
	int32_t *fail = NULL, *q = NULL, *endst = NULL;
	int rc = TQ_ENOMEM;

	memset(a, 0, sizeof(*a));
	a->nclass = 1;
	for (size_t i = 0; i < n; i++) {
		for (const unsigned char *c = (const unsigned char *)lit[i]; *c; c++)
			if (a->cls[*c] == 0) {
				a->cls[*c] = (unsigned char)a->nclass++;
				if (*c >= 'a' && *c <= 'z')
					a->cls[toupper(*c)] = a->cls[*c];
			}
		maxst += strlen(lit[i]);
	}
	k = a->nclass;
	a->delta = calloc(maxst * k, sizeof(*a->delta));
	a->out_off = calloc(maxst, sizeof(*a->out_off));
	a->out_n = calloc(maxst, sizeof(*a->out_n));
	fail = calloc(maxst, sizeof(*fail));
	q = calloc(maxst, sizeof(*q));
	endst = calloc(n + 1, sizeof(*endst));
	if (a->delta == NULL || a->out_off == NULL || a->out_n == NULL || fail == NULL ||
	    q == NULL || endst == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		int32_t s = 0;

		for (const unsigned char *c = (const unsigned char *)lit[i]; *c; c++) {
			int32_t *d = &a->delta[(size_t)s * k + a->cls[*c]];
			if (*d == 0)
				*d = (int32_t)ns++;
			s = *d;
		}
		endst[i] = s;
	}
	a->nstates = ns;
	/* Breadth first, so a state's failure target is complete before it:
	 * a row is filled in only when its state is taken from the queue,
	 * so until then its nonzero entries are exactly its trie edges. */
	q[qt++] = 0;
	while (qh < qt) {
		int32_t u = q[qh++];

		a->out_off[u] = (uint32_t)nouts;
		for (size_t i = 0; i < n; i++)
			if (endst[i] == u && ac_out(a, &nouts, &capouts, own[i]) < 0)
				goto out;
		for (uint32_t j = 0; u != 0 && j < a->out_n[fail[u]]; j++)
			if (ac_out(a, &nouts, &capouts, a->outs[a->out_off[fail[u]] + j]) < 0)
				goto out;
		a->out_n[u] = (uint32_t)(nouts - a->out_off[u]);
		for (size_t c = 1; c < k; c++) {
			int32_t *d = &a->delta[(size_t)u * k + c];
			int32_t f = u == 0 ? 0 : a->delta[(size_t)fail[u] * k + c];

			if (*d != 0) {
				fail[*d] = f;
				q[qt++] = *d;
			} else {
				*d = f;
			}
		}
	}
	rc = 0;
out:
	free(fail);
	free(q);
	free(endst);
	if (rc < 0)
		tq_prefilter_release(a);
	return rc;
}

static void cand_add(struct tq_cands *c, size_t line)
{
	if (c->n > 0 && c->v[c->n - 1] == line)
		return;
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 16;
		size_t *v = reallocarray(c->v, nc, sizeof(*v));

		if (v == NULL)
			return; /* a lost candidate only costs a match */
		c->v = v;
		c->cap = nc;
	}
	c->v[c->n++] = line;
}

void tq_prefilter_scan(const struct tq_prefilter *a, const char *t, size_t n,
		       struct tq_cands *c)
{
	size_t k = a->nclass, line = 0;
	int32_t s = 0;

	if (a->delta == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)t[i];

		if (b == '\n') {
			s = 0;
			line = i + 1;
			continue;
		}
		s = a->delta[(size_t)s * k + a->cls[b]];
		for (uint32_t j = 0; j < a->out_n[s]; j++)
			cand_add(&c[a->outs[a->out_off[s] + j]], line);
	}
}

/* ------------------------------------------------------------------ */
/* The set: every pattern's literals in one automaton                 */

int tq_prefilter_build(struct tq_prefilter *pf, const char *const *pat, size_t n,
		       unsigned char *served)
{
	char **lit = NULL;
	uint32_t *own = NULL;
	size_t nlit = 0;
	int rc = 0;

	memset(pf, 0, sizeof(*pf));
	memset(served, 0, n);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct lits l = { 0 };

		rc = lit_alts(pat[i], strlen(pat[i]), &l, 0);
		if (rc == 1) {
			char **nl = reallocarray(lit, nlit + l.n, sizeof(*lit));
			uint32_t *no = reallocarray(own, nlit + l.n, sizeof(*own));

			if (nl != NULL)
				lit = nl;
			if (no != NULL)
				own = no;
			if (nl == NULL || no == NULL) {
				rc = TQ_ENOMEM;
			} else {
				for (size_t k = 0; k < l.n; k++) {
					lit[nlit] = l.v[k];
					own[nlit++] = (uint32_t)i;
				}
				l.n = 0;
				served[i] = 1;
				rc = 0;
			}
		}
		lits_free(&l);
	}
	if (rc == 0)
		rc = ac_build(pf, lit, own, nlit);
	strv_free(lit, nlit);
	free(own);
	return rc < 0 ? TQ_ENOMEM : 0;
}

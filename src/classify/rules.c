/*
 * classify.c - why an attempt failed, and whether trying again can help
 * (see classify.h): the rules, compiled once, and tq_classify, which weighs
 * one attempt's evidence against them.
 *
 * Rules are data. The built-in set is rules.json at the top of the source
 * tree, compiled in as tq_rules_json (tools/embed.py); a user's config file
 * adds to it. Its "_doc" field is the schema's manual; in short, each rule
 * has an "id", optional "program"/"agent"/"stream"/"stage" filters, and ONE
 * of these kinds:
 *
 *   pattern      ERE over each line of the text, with a "category"
 *   exit_code    N, [N, ...] or {"min", "max"}, with a "category"
 *   json         {"type", "where", "path", and equals | in | min/max |
 *                pattern | exists} over the LAST selected JSON object of a
 *                stream, with a "category"
 *   text_from    {"type", "where", "path"}: that string field is text
 *                evidence; every pattern rule runs over it at this stage
 *   retry_after  a retry time the provider gave: a pattern's group or a
 *                JSON field, in s, ms, epoch seconds or a wall clock
 *   ignore       {"type", "where"}: JSON lines that are the model's words or
 *                tool output, which the text rules must not read
 *
 * Order of evidence: the worker's verdict (timeout, signal, ... : ids
 * "outcome.*"), then the stages "final" (json and text_from by default: an
 * agent's final answer), "text" (pattern by default) and "exit" (exit_code
 * by default). The first stage with a match decides. Within a stage every
 * rule is checked, and the match of the highest-priority category wins
 * (rate_limit > overload > network > auth > unknown; the enum's order);
 * within a category the first rule in list order gives the reason. A match
 * through text_from is reported as rule "FROM+PATTERN".
 *
 * Speed: the runner calls tq_classify once per failed attempt over up to
 * 2 x 64 KiB. glibc's regexec costs about 1 ms per pattern per 64 KiB, so
 * the text rules are not run over the whole tail: at load, a set of
 * literals that every match of a pattern must contain is taken from it
 * (lit_*), and one Aho-Corasick automaton over all of them (ac_*) finds,
 * in one pass over each tail, the lines where a pattern can match; regexec
 * then runs on those lines only, from the last one back. A pattern with no
 * usable literal falls back to a whole-tail regexec (the explain trace says
 * so). JSON objects are parsed once per call.
 *
 * Not here: the store, the log, processes, the clock (now_ms comes in).
 * Invariant: a loaded struct tq_rules is never modified; tq_classify only
 * reads it.
 */
#include "classify.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h> /* macros only (HUGE_VAL, isfinite): no libm */
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/profile.h"
#include "common/parse.h"
#include "common/sys.h"
#include "rules_json.h"

#define RULES_MAX 4096          /* rules in one file */
#define RULE_ID_MAX 63          /* bytes of a rule id: "A+B" fits rule[128] */
#define PATH_SEG_MAX 16         /* segments of a JSON path */
#define PATH_TEXT_MAX 255       /* bytes of a JSON path */
#define LIT_MIN 3               /* shortest literal worth prefiltering on */
#define CAND_BULK 64            /* candidate lines above which one whole-tail
				 * regexec decides first whether to look */
#define MULTILINE_TRIES 8       /* pretty-printed objects tried per stream */
#define JUST_PASSED_MS (15 * 60 * 1000) /* "resets 3pm" read at 3:05pm:
					 * it has reset, not "tomorrow" */
#define WINDOW_BEFORE 120       /* bytes of a long line shown before a match */
#define EXPLAIN_RESERVE 320     /* kept for the trace's last lines */

enum kind { K_PATTERN, K_EXIT, K_JSON, K_TEXT_FROM, K_RETRY, K_IGNORE };
enum stage { ST_FINAL, ST_TEXT, ST_EXIT, ST_COUNT };
enum unit { U_S, U_MS, U_EPOCH, U_CLOCK };
enum op { OP_NONE, OP_EQUALS, OP_IN, OP_RANGE, OP_PATTERN, OP_EXISTS };

static const char *const stage_names[ST_COUNT] = { "final", "text", "exit" };

/* A dotted JSON path, split at load. */
struct jpath {
	char *text;
	char *seg[PATH_SEG_MAX];
	size_t n;
};

/* where: PATH equals VALUE */
struct cond {
	struct jpath path;
	cJSON *value;
};

/* Which object of a stream: the last one whose fields equal all conds. */
struct sel {
	struct cond *where;
	size_t nwhere;
	char label[96];            /* "assistant", "system/api_retry", "" */
};

struct jtest {
	struct jpath path;
	enum op op;
	cJSON *value;              /* equals: a scalar; in: an array */
	double min, max;
	regex_t re;
	int has_re;
	int exists;
};

struct rule {
	char *id;
	char *doc;
	enum kind kind;
	enum stage stage;
	enum tq_category cat;
	int transient;
	char **programs;
	size_t nprog;
	char **agents;
	size_t nagent;
	unsigned streams;          /* bit 0 stdout, bit 1 stderr */
	/* pattern, retry_after with a pattern */
	char *pattern;
	regex_t re;
	int has_re;
	int group;
	int prefilter;             /* its literals are in the automaton */
	size_t pidx;               /* index among the text-matching rules */
	/* exit_code */
	int64_t *codes;
	size_t ncodes;
	int64_t emin, emax;
	int erange;
	/* json, text_from, ignore, retry_after with json */
	int has_sel;
	struct sel sel;
	struct jtest test;
	enum unit unit;
};

/* Aho-Corasick over byte classes: letters folded, bytes in no literal are
 * class 0, which always leads back to the root. */
struct ac {
	size_t nclass;
	unsigned char cls[256];
	int32_t *delta;            /* nstates x nclass */
	size_t nstates;
	uint32_t *out_off, *out_n; /* per state: owners in outs[] */
	uint32_t *outs;
};

struct tq_rules {
	struct rule **r;
	size_t n;
	struct rule **pat;         /* the rules with a compiled pattern */
	size_t npat;
	struct ac ac;
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The explain trace: lines appended while room is left; the last
 * EXPLAIN_RESERVE bytes are kept for the verdict (xp_last). */
struct xp {
	char *p;
	size_t n, len;
	int full;
};

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
static void xp_add(struct xp *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xp_vadd(x, EXPLAIN_RESERVE, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3)))
static void xp_last(struct xp *x, const char *fmt, ...)
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
static size_t clean_copy(char *dst, size_t cap, const char *s, size_t n, int *cut)
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
 * Set dst (cap bytes) to the line [ls, le) of s made harmless (clean_copy).
 * A line too long for it is shown from WINDOW_BEFORE bytes before the match
 * at ms, with "..." where it is cut.
 */
static void reason_line(char *dst, size_t cap, const char *s, size_t ls, size_t le,
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
	o += clean_copy(dst + o, cap - o, s + start, le - start, &cut);
	if (cut) {
		size_t at = o + 4 <= cap ? o : char_start(dst, cap - 4);

		memcpy(dst + at, "...", 4);
	}
}

/* ------------------------------------------------------------------ */
/* JSON values and paths                                              */

static void jpath_free(struct jpath *p)
{
	free(p->text);
	for (size_t i = 0; i < p->n; i++)
		free(p->seg[i]);
	memset(p, 0, sizeof(*p));
}

/* Split "a.b.0" into segments. 0, TQ_EINVAL (*why set) or TQ_ENOMEM. */
static int jpath_init(struct jpath *p, const char *s, const char **why)
{
	const char *q = s;

	memset(p, 0, sizeof(*p));
	if (*s == '\0' || strlen(s) > PATH_TEXT_MAX) {
		*why = "a path is 1 to 255 bytes";
		return TQ_EINVAL;
	}
	if ((p->text = strdup(s)) == NULL)
		return TQ_ENOMEM;
	while (q != NULL) {
		const char *dot = strchr(q, '.');
		size_t len = dot != NULL ? (size_t)(dot - q) : strlen(q);

		if (len == 0 || p->n == PATH_SEG_MAX) {
			*why = len == 0 ? "empty segment in path" : "path has more than 16 segments";
			return TQ_EINVAL;
		}
		if ((p->seg[p->n] = strndup(q, len)) == NULL)
			return TQ_ENOMEM;
		p->n++;
		q = dot != NULL ? dot + 1 : NULL;
	}
	return 0;
}

static const cJSON *jpath_get(const cJSON *o, const struct jpath *p)
{
	for (size_t i = 0; o != NULL && i < p->n; i++) {
		const char *s = p->seg[i];

		if (cJSON_IsObject(o)) {
			o = cJSON_GetObjectItemCaseSensitive(o, s);
		} else if (cJSON_IsArray(o) && s[0] >= '0' && s[0] <= '9' &&
			   strspn(s, "0123456789") == strlen(s) && strlen(s) < 6) {
			o = cJSON_GetArrayItem(o, atoi(s));
		} else {
			return NULL;
		}
	}
	return o;
}

/* A whole number of safe size (no libm: the library links without it). */
static int whole(double d)
{
	return d >= -1e15 && d <= 1e15 && d == (double)(long long)d;
}

static int jscalar(const cJSON *v)
{
	return cJSON_IsString(v) || cJSON_IsNumber(v) || cJSON_IsBool(v) || cJSON_IsNull(v);
}

/* Two scalars equal: same JSON type and value (429 is not "429"). */
static int jeq(const cJSON *a, const cJSON *b)
{
	if (a == NULL || b == NULL)
		return 0;
	if (cJSON_IsString(a) && cJSON_IsString(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsBool(a) && cJSON_IsBool(b))
		return cJSON_IsTrue(a) == cJSON_IsTrue(b);
	return cJSON_IsNull(a) && cJSON_IsNull(b);
}

/* A value for the trace and reasons: strings bare, others as JSON. */
static void jval_str(const cJSON *v, char *buf, size_t n)
{
	if (v == NULL)
		snprintf(buf, n, "(absent)");
	else if (cJSON_IsString(v))
		clean_copy(buf, n, v->valuestring, strlen(v->valuestring), NULL);
	else if (cJSON_IsNumber(v) && whole(v->valuedouble))
		snprintf(buf, n, "%lld", (long long)v->valuedouble);
	else if (cJSON_IsNumber(v))
		snprintf(buf, n, "%g", v->valuedouble);
	else if (cJSON_IsBool(v))
		snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNull(v))
		snprintf(buf, n, "null");
	else
		snprintf(buf, n, "%s", cJSON_IsArray(v) ? "[...]" : "{...}");
}

static int sel_match(const struct sel *s, const cJSON *o)
{
	for (size_t i = 0; i < s->nwhere; i++)
		if (!jeq(jpath_get(o, &s->where[i].path), s->where[i].value))
			return 0;
	return 1;
}

/* "type=result, status=error" (or "any") for the trace. */
static void sel_desc(const struct sel *s, char *buf, size_t n)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->nwhere && o + 1 < n; i++) {
		char v[64];
		int k;

		jval_str(s->where[i].value, v, sizeof(v));
		k = snprintf(buf + o, n - o, "%s%s=%s", i ? ", " : "", s->where[i].path.text, v);
		if (k < 0)
			break;
		o += (size_t)k;
	}
	if (s->nwhere == 0)
		snprintf(buf, n, "any");
}

static int jtest_match(const struct jtest *t, const cJSON *v)
{
	const cJSON *it;

	switch (t->op) {
	case OP_EQUALS:
		return jeq(v, t->value);
	case OP_IN:
		cJSON_ArrayForEach(it, t->value)
			if (jeq(v, it))
				return 1;
		return 0;
	case OP_RANGE:
		return cJSON_IsNumber(v) && v->valuedouble >= t->min && v->valuedouble <= t->max;
	case OP_PATTERN:
		return cJSON_IsString(v) && regexec(&t->re, v->valuestring, 0, NULL, 0) == 0;
	case OP_EXISTS:
		return (v != NULL && !cJSON_IsNull(v)) == t->exists;
	case OP_NONE:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Literal prefilter: strings every match of a pattern contains       */

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

static void ac_free(struct ac *a)
{
	free(a->delta);
	free(a->out_off);
	free(a->out_n);
	free(a->outs);
	memset(a, 0, sizeof(*a));
}

/* Append owner o to a->outs (cap in *cap). */
static int ac_out(struct ac *a, size_t *len, size_t *cap, uint32_t o)
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
static int ac_build(struct ac *a, char *const *lit, const uint32_t *own, size_t n)
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
		ac_free(a);
	return rc;
}

/* Lines where each rule's literals occur, per text-matching rule. */
struct cands {
	size_t *v;
	size_t n, cap;
};

static void cand_add(struct cands *c, size_t line)
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

static void ac_scan(const struct ac *a, const char *t, size_t n, struct cands *c)
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
/* Rules: parsing and checking                                        */

static void sel_release(struct sel *s)
{
	for (size_t i = 0; i < s->nwhere; i++) {
		jpath_free(&s->where[i].path);
		cJSON_Delete(s->where[i].value);
	}
	free(s->where);
	memset(s, 0, sizeof(*s));
}

static void rule_free(struct rule *r)
{
	if (r == NULL)
		return;
	free(r->id);
	free(r->doc);
	strv_free(r->programs, r->nprog);
	strv_free(r->agents, r->nagent);
	free(r->pattern);
	if (r->has_re)
		regfree(&r->re);
	free(r->codes);
	sel_release(&r->sel);
	jpath_free(&r->test.path);
	cJSON_Delete(r->test.value);
	if (r->test.has_re)
		regfree(&r->test.re);
	free(r);
}

/* Where a rule comes from, for messages: "config.json: rule \"x\": ..." */
struct origin {
	const char *file;
	const char *id;     /* NULL before the id is known */
	size_t index;       /* 1-based position in "rules" */
	struct tq_err *err;
};

__attribute__((format(printf, 2, 3)))
static int bad(const struct origin *o, const char *fmt, ...)
{
	char msg[TQ_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o->id != NULL)
		return tq_err_set(o->err, TQ_EINVAL, "%s: rule \"%s\": %s", o->file, o->id, msg);
	return tq_err_set(o->err, TQ_EINVAL, "%s: rule %zu: %s", o->file, o->index, msg);
}

static int oom(const struct origin *o)
{
	return tq_err_set(o->err, TQ_ENOMEM, "%s: out of memory", o->file);
}

/* Is key one of keys (NULL-terminated), or a comment ("_...")? */
static int key_known(const char *key, const char *const *keys)
{
	if (key[0] == '_')
		return 1;
	for (size_t i = 0; keys[i] != NULL; i++)
		if (strcmp(key, keys[i]) == 0)
			return 1;
	return 0;
}

static int check_keys(const struct origin *o, const char *what, const cJSON *obj,
		      const char *const *keys)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, obj)
		if (!key_known(it->string, keys))
			return bad(o, "%s%sunknown key \"%s\"", what, *what ? ": " : "",
				   it->string);
	return 0;
}

static int valid_id(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= RULE_ID_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* "name" or ["a", "b"]: non-empty strings. */
static int parse_names(const struct origin *o, const char *key, const cJSON *v,
		       char ***out, size_t *n)
{
	const cJSON *it;
	size_t cnt = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 1;

	if (!cJSON_IsString(v) && !(cJSON_IsArray(v) && cnt > 0))
		return bad(o, "\"%s\" must be a name or a list of names", key);
	if ((*out = calloc(cnt, sizeof(**out))) == NULL)
		return oom(o);
	if (cJSON_IsString(v)) {
		if (v->valuestring[0] == '\0')
			return bad(o, "\"%s\" must not be empty", key);
		if (((*out)[(*n)++] = strdup(v->valuestring)) == NULL)
			return oom(o);
		return 0;
	}
	cJSON_ArrayForEach(it, v) {
		if (!cJSON_IsString(it) || it->valuestring[0] == '\0')
			return bad(o, "\"%s\" must be a name or a list of names", key);
		if (((*out)[(*n)++] = strdup(it->valuestring)) == NULL)
			return oom(o);
	}
	return 0;
}

/*
 * Compile an ERE. Refused: empty, a compile error (regerror's words), a
 * pattern that matches empty text (it would match every line).
 */
static int compile_re(const struct origin *o, const char *what, const char *pat,
		      int flags, regex_t *re, int *has)
{
	char msg[160];
	int rc;

	if (pat[0] == '\0')
		return bad(o, "%s: empty pattern", what);
	if ((rc = regcomp(re, pat, REG_EXTENDED | REG_NEWLINE | flags)) != 0) {
		regerror(rc, re, msg, sizeof(msg));
		regfree(re);
		return bad(o, "%s: bad pattern \"%s\": %s", what, pat, msg);
	}
	*has = 1;
	if (regexec(re, "", 0, NULL, 0) == 0)
		return bad(o, "%s: pattern \"%s\" matches empty text, so every line", what, pat);
	return 0;
}

static int set_path(const struct origin *o, const char *what, const cJSON *v,
		    struct jpath *p)
{
	const char *why = NULL;
	int rc;

	if (!cJSON_IsString(v))
		return bad(o, "%s: \"path\" must be a string such as \"error.code\"", what);
	if ((rc = jpath_init(p, v->valuestring, &why)) == TQ_ENOMEM)
		return oom(o);
	if (rc < 0)
		return bad(o, "%s: path \"%s\": %s", what, v->valuestring, why);
	return 0;
}

static int add_cond(const struct origin *o, const char *what, struct sel *s,
		    const char *path, const cJSON *value)
{
	struct cond *w = reallocarray(s->where, s->nwhere + 1, sizeof(*w));
	int rc;

	if (w == NULL)
		return oom(o);
	s->where = w;
	memset(&w[s->nwhere], 0, sizeof(w[0]));
	if (!jscalar(value))
		return bad(o, "%s: where \"%s\": the value must be a string, number, "
			   "true, false or null", what, path);
	if ((w[s->nwhere].value = cJSON_Duplicate(value, 1)) == NULL)
		return oom(o);
	s->nwhere++;
	if ((rc = jpath_init(&w[s->nwhere - 1].path, path, &(const char *){ NULL })) ==
	    TQ_ENOMEM)
		return oom(o);
	if (rc < 0)
		return bad(o, "%s: where: bad path \"%s\"", what, path);
	if (cJSON_IsString(value) && strlen(s->label) + strlen(value->valuestring) + 2 <
	    sizeof(s->label)) {
		if (s->label[0] != '\0')
			strcat(s->label, "/");
		strcat(s->label, value->valuestring);
	}
	return 0;
}

/* SELECT: "type" and "where". */
static int parse_sel(const struct origin *o, const char *what, const cJSON *m,
		     struct sel *s)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
	const cJSON *where = cJSON_GetObjectItemCaseSensitive(m, "where");
	const cJSON *it;
	int rc;

	if (type != NULL) {
		if (!cJSON_IsString(type))
			return bad(o, "%s: \"type\" must be a string", what);
		if ((rc = add_cond(o, what, s, "type", type)) < 0)
			return rc;
	}
	if (where == NULL)
		return 0;
	if (!cJSON_IsObject(where))
		return bad(o, "%s: \"where\" must be an object of path: value", what);
	cJSON_ArrayForEach(it, where)
		if (it->string[0] != '_' && (rc = add_cond(o, what, s, it->string, it)) < 0)
			return rc;
	return 0;
}

/* TEST: exactly one of equals, in, min/max, pattern, exists. */
static int parse_test(const struct origin *o, const char *what, const cJSON *m,
		      struct jtest *t)
{
	const cJSON *eq = cJSON_GetObjectItemCaseSensitive(m, "equals");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(m, "in");
	const cJSON *mn = cJSON_GetObjectItemCaseSensitive(m, "min");
	const cJSON *mx = cJSON_GetObjectItemCaseSensitive(m, "max");
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(m, "pattern");
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(m, "exists");
	const cJSON *it;
	int k = (eq != NULL) + (in != NULL) + (mn != NULL || mx != NULL) + (pat != NULL) +
		(ex != NULL);

	if (k != 1)
		return bad(o, "%s: give exactly one of \"equals\", \"in\", \"min\"/\"max\", "
			   "\"pattern\", \"exists\"", what);
	if (eq != NULL) {
		if (!jscalar(eq))
			return bad(o, "%s: \"equals\" must be a string, number, true, false "
				   "or null", what);
		t->op = OP_EQUALS;
		return (t->value = cJSON_Duplicate(eq, 1)) != NULL ? 0 : oom(o);
	}
	if (in != NULL) {
		if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) == 0)
			return bad(o, "%s: \"in\" must be a non-empty list", what);
		cJSON_ArrayForEach(it, in)
			if (!jscalar(it))
				return bad(o, "%s: \"in\" holds only strings, numbers, true, "
					   "false or null", what);
		t->op = OP_IN;
		return (t->value = cJSON_Duplicate(in, 1)) != NULL ? 0 : oom(o);
	}
	if (mn != NULL || mx != NULL) {
		if ((mn != NULL && !cJSON_IsNumber(mn)) || (mx != NULL && !cJSON_IsNumber(mx)))
			return bad(o, "%s: \"min\" and \"max\" must be numbers", what);
		t->op = OP_RANGE;
		t->min = mn != NULL ? mn->valuedouble : -HUGE_VAL;
		t->max = mx != NULL ? mx->valuedouble : HUGE_VAL;
		if (t->min > t->max)
			return bad(o, "%s: \"min\" is above \"max\"", what);
		return 0;
	}
	if (pat != NULL) {
		if (!cJSON_IsString(pat))
			return bad(o, "%s: \"pattern\" must be a string", what);
		t->op = OP_PATTERN;
		return compile_re(o, what, pat->valuestring, REG_ICASE | REG_NOSUB, &t->re,
				  &t->has_re);
	}
	if (!cJSON_IsBool(ex))
		return bad(o, "%s: \"exists\" must be true or false", what);
	t->op = OP_EXISTS;
	t->exists = cJSON_IsTrue(ex);
	return 0;
}

/* The object of "json", "text_from", "ignore" or retry_after's "json".
 * test: 2 a path and a test; 1 a path only; 0 neither. */
static int parse_matcher(const struct origin *o, const char *what, const cJSON *m,
			 int test, struct rule *r)
{
	static const char *const k2[] = { "type", "where", "path", "equals", "in", "min",
					  "max", "pattern", "exists", NULL };
	static const char *const k1[] = { "type", "where", "path", NULL };
	static const char *const k0[] = { "type", "where", NULL };
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
	int rc;

	if (!cJSON_IsObject(m))
		return bad(o, "\"%s\" must be an object", what);
	if ((rc = check_keys(o, what, m, test == 2 ? k2 : test == 1 ? k1 : k0)) < 0)
		return rc;
	r->has_sel = 1;
	if ((rc = parse_sel(o, what, m, &r->sel)) < 0)
		return rc;
	if (test == 0)
		return 0;
	if (path == NULL)
		return bad(o, "%s: \"path\" is missing", what);
	if ((rc = set_path(o, what, path, &r->test.path)) < 0)
		return rc;
	return test == 2 ? parse_test(o, what, m, &r->test) : 0;
}

static int exit_int(const cJSON *v, int64_t *out)
{
	if (!cJSON_IsNumber(v) || !whole(v->valuedouble) || v->valuedouble < 0 ||
	    v->valuedouble > 255)
		return -1;
	*out = (int64_t)v->valuedouble;
	return 0;
}

/* N, [N, ...] or {"min": A, "max": B}; 0 <= N <= 255. */
static int parse_exit(const struct origin *o, const cJSON *v, struct rule *r)
{
	static const char *const keys[] = { "min", "max", NULL };
	const char *msg = "\"exit_code\" must be a number 0-255, a list of them, or "
			  "{\"min\": A, \"max\": B}";
	const cJSON *it;
	int rc;

	if (cJSON_IsObject(v)) {
		if ((rc = check_keys(o, "exit_code", v, keys)) < 0)
			return rc;
		r->erange = 1;
		if (exit_int(cJSON_GetObjectItemCaseSensitive(v, "min"), &r->emin) < 0 ||
		    exit_int(cJSON_GetObjectItemCaseSensitive(v, "max"), &r->emax) < 0 ||
		    r->emin > r->emax)
			return bad(o, "%s", msg);
		return 0;
	}
	if (!cJSON_IsArray(v) && !cJSON_IsNumber(v))
		return bad(o, "%s", msg);
	r->codes = calloc(cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) + 1 : 1,
			  sizeof(*r->codes));
	if (r->codes == NULL)
		return oom(o);
	if (cJSON_IsNumber(v))
		return exit_int(v, &r->codes[r->ncodes++]) < 0 ? bad(o, "%s", msg) : 0;
	if (cJSON_GetArraySize(v) == 0)
		return bad(o, "%s", msg);
	cJSON_ArrayForEach(it, v)
		if (exit_int(it, &r->codes[r->ncodes++]) < 0)
			return bad(o, "%s", msg);
	return 0;
}

/* {"pattern": ERE, "group": N, "unit": U} or {"json": {...}, "unit": U} */
static int parse_retry(const struct origin *o, const cJSON *v, struct rule *r)
{
	static const char *const keys[] = { "pattern", "group", "unit", "json", NULL };
	static const char *const units[] = { "s", "ms", "epoch", "clock" };
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(v, "pattern");
	const cJSON *grp = cJSON_GetObjectItemCaseSensitive(v, "group");
	const cJSON *unit = cJSON_GetObjectItemCaseSensitive(v, "unit");
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(v, "json");
	size_t u;
	int rc;

	if (!cJSON_IsObject(v))
		return bad(o, "\"retry_after\" must be an object");
	if ((rc = check_keys(o, "retry_after", v, keys)) < 0)
		return rc;
	for (u = 0; cJSON_IsString(unit) && u < 4; u++)
		if (strcmp(unit->valuestring, units[u]) == 0)
			break;
	if (!cJSON_IsString(unit) || u == 4)
		return bad(o, "retry_after: \"unit\" must be \"s\", \"ms\", \"epoch\" or \"clock\"");
	r->unit = (enum unit)u;
	if ((pat != NULL) == (js != NULL))
		return bad(o, "retry_after: give either \"pattern\" or \"json\"");
	if (js != NULL) {
		if (grp != NULL)
			return bad(o, "retry_after: \"group\" goes with \"pattern\"");
		return parse_matcher(o, "retry_after: json", js, 1, r);
	}
	if (!cJSON_IsString(pat))
		return bad(o, "retry_after: \"pattern\" must be a string");
	r->group = 1;
	if (grp != NULL && (!cJSON_IsNumber(grp) || grp->valuedouble < 1 ||
			    grp->valuedouble > 9 || !whole(grp->valuedouble)))
		return bad(o, "retry_after: \"group\" must be a number 1-9");
	if (grp != NULL)
		r->group = (int)grp->valuedouble;
	if ((r->pattern = strdup(pat->valuestring)) == NULL)
		return oom(o);
	if ((rc = compile_re(o, "retry_after", r->pattern, REG_ICASE, &r->re, &r->has_re)) < 0)
		return rc;
	if (r->re.re_nsub < (size_t)r->group)
		return bad(o, "retry_after: pattern \"%s\" has no group %d", r->pattern, r->group);
	return 0;
}

/* The kind-independent fields: category, transient, stage, filters. */
static int parse_common(const struct origin *o, const cJSON *j, struct rule *r)
{
	const cJSON *cat = cJSON_GetObjectItemCaseSensitive(j, "category");
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "transient");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "stage");
	const cJSON *prog = cJSON_GetObjectItemCaseSensitive(j, "program");
	const cJSON *ag = cJSON_GetObjectItemCaseSensitive(j, "agent");
	const cJSON *sm = cJSON_GetObjectItemCaseSensitive(j, "stream");
	const cJSON *doc = cJSON_GetObjectItemCaseSensitive(j, "doc");
	int decides = r->kind == K_PATTERN || r->kind == K_EXIT || r->kind == K_JSON;
	int rc;

	if (decides && cat == NULL)
		return bad(o, "\"category\" is missing (rate_limit, overload, network, auth "
			   "or unknown)");
	if (!decides && (cat != NULL || tr != NULL))
		return bad(o, "\"category\" and \"transient\" go with pattern, exit_code "
			   "and json rules only");
	if (cat != NULL && (!cJSON_IsString(cat) ||
			    tq_category_parse(cat->valuestring, &r->cat) < 0 ||
			    r->cat == TQ_CAT_NONE))
		return bad(o, "unknown category %s%s%s (rate_limit, overload, network, auth "
			   "or unknown)", cJSON_IsString(cat) ? "\"" : "",
			   cJSON_IsString(cat) ? cat->valuestring : "(not a string)",
			   cJSON_IsString(cat) ? "\"" : "");
	r->transient = r->cat == TQ_CAT_RATE_LIMIT || r->cat == TQ_CAT_OVERLOAD ||
		       r->cat == TQ_CAT_NETWORK;
	if (tr != NULL && !cJSON_IsBool(tr))
		return bad(o, "\"transient\" must be true or false");
	if (tr != NULL)
		r->transient = cJSON_IsTrue(tr);
	r->stage = r->kind == K_PATTERN ? ST_TEXT : r->kind == K_EXIT ? ST_EXIT : ST_FINAL;
	if (st != NULL && (r->kind == K_RETRY || r->kind == K_IGNORE))
		return bad(o, "\"stage\" does not apply to retry_after and ignore rules");
	if (st != NULL) {
		size_t i;

		for (i = 0; cJSON_IsString(st) && i < ST_COUNT; i++)
			if (strcmp(st->valuestring, stage_names[i]) == 0)
				break;
		if (!cJSON_IsString(st) || i == ST_COUNT)
			return bad(o, "\"stage\" must be \"final\", \"text\" or \"exit\"");
		r->stage = (enum stage)i;
	}
	r->streams = 3;
	if (sm != NULL && r->kind == K_EXIT)
		return bad(o, "\"stream\" does not apply to exit_code");
	if (sm != NULL) {
		if (cJSON_IsString(sm) && strcmp(sm->valuestring, "stdout") == 0)
			r->streams = 1;
		else if (cJSON_IsString(sm) && strcmp(sm->valuestring, "stderr") == 0)
			r->streams = 2;
		else if (!cJSON_IsString(sm) || strcmp(sm->valuestring, "any") != 0)
			return bad(o, "\"stream\" must be \"stdout\", \"stderr\" or \"any\"");
	}
	if (doc != NULL && (!cJSON_IsString(doc) || (r->doc = strdup(doc->valuestring)) == NULL))
		return cJSON_IsString(doc) ? oom(o) : bad(o, "\"doc\" must be a string");
	if (prog != NULL && (rc = parse_names(o, "program", prog, &r->programs, &r->nprog)) < 0)
		return rc;
	if (ag != NULL && (rc = parse_names(o, "agent", ag, &r->agents, &r->nagent)) < 0)
		return rc;
	return 0;
}

static const char *const kind_keys[] = { "pattern", "exit_code", "json", "text_from",
					 "retry_after", "ignore" };

/* The kind's own field. */
static int parse_kind(const struct origin *o, const cJSON *j, const cJSON *v,
		      struct rule *r)
{
	const cJSON *icase = cJSON_GetObjectItemCaseSensitive(j, "icase");

	if (icase != NULL && (r->kind != K_PATTERN || !cJSON_IsBool(icase)))
		return bad(o, "\"icase\" is true or false, for pattern rules");
	switch (r->kind) {
	case K_PATTERN:
		if (!cJSON_IsString(v))
			return bad(o, "\"pattern\" must be a string");
		if ((r->pattern = strdup(v->valuestring)) == NULL)
			return oom(o);
		return compile_re(o, "pattern", r->pattern,
				  cJSON_IsFalse(icase) ? 0 : REG_ICASE, &r->re, &r->has_re);
	case K_EXIT:
		return parse_exit(o, v, r);
	case K_JSON:
		return parse_matcher(o, "json", v, 2, r);
	case K_TEXT_FROM:
		return parse_matcher(o, "text_from", v, 1, r);
	case K_IGNORE:
		return parse_matcher(o, "ignore", v, 0, r);
	case K_RETRY:
		return parse_retry(o, v, r);
	}
	return 0;
}

/*
 * One entry of "rules". *rp receives the rule (or NULL for a disabling
 * entry, whose id goes to *disable). 0 or a TQ_E* code with err set.
 */
static int parse_rule(struct origin *o, const cJSON *j, struct rule **rp, char **disable)
{
	static const char *const keys[] = { "id", "doc", "program", "agent", "stream",
		"stage", "category", "transient", "disabled", "icase", "pattern",
		"exit_code", "json", "text_from", "retry_after", "ignore", NULL };
	static const char *const dis_keys[] = { "id", "doc", "disabled", NULL };
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	const cJSON *dis = cJSON_GetObjectItemCaseSensitive(j, "disabled");
	const cJSON *kv = NULL;
	struct rule *r = NULL;
	int rc, nk = 0;

	*rp = NULL;
	*disable = NULL;
	if (!cJSON_IsObject(j))
		return bad(o, "must be an object");
	if (!cJSON_IsString(id) || !valid_id(id->valuestring))
		return bad(o, "\"id\" must be 1-%d of A-Z a-z 0-9 _ . -", RULE_ID_MAX);
	o->id = id->valuestring;
	if (dis != NULL && !cJSON_IsBool(dis))
		return bad(o, "\"disabled\" must be true or false");
	if (cJSON_IsTrue(dis)) {
		if ((rc = check_keys(o, "a disabling entry", j, dis_keys)) < 0)
			return rc;
		return (*disable = strdup(o->id)) != NULL ? 0 : oom(o);
	}
	if ((rc = check_keys(o, "", j, keys)) < 0)
		return rc;
	if ((r = calloc(1, sizeof(*r))) == NULL || (r->id = strdup(o->id)) == NULL) {
		rule_free(r);
		return oom(o);
	}
	for (size_t k = 0; k < sizeof(kind_keys) / sizeof(kind_keys[0]); k++)
		if ((kv = cJSON_GetObjectItemCaseSensitive(j, kind_keys[k])) != NULL) {
			r->kind = (enum kind)k;
			nk++;
		}
	if (nk != 1)
		rc = bad(o, "give exactly one of pattern, exit_code, json, text_from, "
			 "retry_after, ignore");
	else
		rc = parse_common(o, j, r);
	if (rc == 0)
		rc = parse_kind(o, j, cJSON_GetObjectItemCaseSensitive(j, kind_keys[r->kind]), r);
	if (rc < 0) {
		rule_free(r);
		return rc;
	}
	*rp = r;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Loading: the built-in rules, then the user's                       */

/* The parsed "rules" of one file: rules, and ids to disable. */
struct ruleset {
	struct rule **r;
	size_t n;
	char **disable;
	size_t ndisable;
};

static void ruleset_release(struct ruleset *s)
{
	for (size_t i = 0; i < s->n; i++)
		rule_free(s->r[i]);
	free(s->r);
	strv_free(s->disable, s->ndisable);
	memset(s, 0, sizeof(*s));
}


/*
 * Read the "rules" of one file (its text is n bytes). The built-in file is
 * strict about its top-level keys; a user's config may hold other settings
 * beside "rules", which are not this module's business.
 */
static int parse_rules_file(const char *file, const char *text, size_t n, int builtin,
			    struct ruleset *set, struct tq_err *err)
{
	static const char *const top_keys[] = { "rules", NULL };
	struct origin o = { .file = file, .err = err };
	cJSON *doc = NULL;
	const cJSON *rules, *it;
	size_t cnt;
	int rc;

	memset(set, 0, sizeof(*set));
	if ((rc = tq_config_parse(file, text, n, &doc, err)) < 0)
		return rc;
	rc = TQ_EINVAL;
	if (!cJSON_IsObject(doc)) {
		tq_err_set(err, TQ_EINVAL, "%s: expected a JSON object with \"rules\": [...]", file);
		goto out;
	}
	if (builtin && (rc = check_keys(&o, "top level", doc, top_keys)) < 0)
		goto out;
	rc = 0;
	if ((rules = cJSON_GetObjectItemCaseSensitive(doc, "rules")) == NULL)
		goto out;
	rc = TQ_EINVAL;
	if (!cJSON_IsArray(rules)) {
		tq_err_set(err, TQ_EINVAL, "%s: \"rules\" must be a list", file);
		goto out;
	}
	if ((cnt = (size_t)cJSON_GetArraySize(rules)) > RULES_MAX) {
		tq_err_set(err, TQ_EINVAL, "%s: more than %d rules", file, RULES_MAX);
		goto out;
	}
	set->r = calloc(cnt + 1, sizeof(*set->r));
	set->disable = calloc(cnt + 1, sizeof(*set->disable));
	if (set->r == NULL || set->disable == NULL) {
		rc = oom(&o);
		goto out;
	}
	cJSON_ArrayForEach(it, rules) {
		struct rule *r;
		char *dis;

		o.index++;
		o.id = NULL;
		if ((rc = parse_rule(&o, it, &r, &dis)) < 0)
			goto out;
		for (size_t i = 0; i < set->n; i++)
			if (strcmp(set->r[i]->id, o.id) == 0)
				rc = bad(&o, "duplicate id");
		for (size_t i = 0; i < set->ndisable; i++)
			if (strcmp(set->disable[i], o.id) == 0)
				rc = bad(&o, "duplicate id");
		if (r != NULL)
			set->r[set->n++] = r;
		if (dis != NULL)
			set->disable[set->ndisable++] = dis;
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(doc);
	if (rc < 0)
		ruleset_release(set);
	return rc;
}

static ssize_t find_rule(struct rule *const *r, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (r[i] != NULL && strcmp(r[i]->id, id) == 0)
			return (ssize_t)i;
	return -1;
}

/*
 * The user's rules over the built-ins: same id replaces in place, a
 * disabling entry removes, the rest go first. Takes the rules out of u.
 */
static int merge(struct tq_rules *R, struct ruleset *u, const char *file,
		 struct tq_err *err)
{
	struct rule **all;
	size_t n = 0;

	for (size_t i = 0; i < u->ndisable; i++) {
		ssize_t k = find_rule(R->r, R->n, u->disable[i]);

		if (k < 0)
			return tq_err_set(err, TQ_EINVAL, "%s: rule \"%s\": disabled, but there "
					  "is no built-in rule with this id", file,
					  u->disable[i]);
		rule_free(R->r[k]);
		R->r[k] = NULL;
	}
	if ((all = calloc(R->n + u->n + 1, sizeof(*all))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "%s: out of memory", file);
	for (size_t i = 0; i < u->n; i++) {
		ssize_t k = find_rule(R->r, R->n, u->r[i]->id);

		if (k >= 0) {
			rule_free(R->r[k]);
			R->r[k] = u->r[i];
		} else {
			all[n++] = u->r[i];
		}
		u->r[i] = NULL;
	}
	for (size_t i = 0; i < R->n; i++)
		if (R->r[i] != NULL)
			all[n++] = R->r[i];
	free(R->r);
	R->r = all;
	R->n = n;
	return 0;
}

/* The prefilter: every compiled pattern of a text rule or retry hint, with
 * its literals in one automaton. */
static int build_prefilter(struct tq_rules *R, struct tq_err *err)
{
	char **lit = NULL;
	uint32_t *own = NULL;
	size_t nlit = 0;
	int rc = 0;

	if ((R->pat = calloc(R->n + 1, sizeof(*R->pat))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "rules: out of memory");
	for (size_t i = 0; i < R->n && rc == 0; i++) {
		struct rule *r = R->r[i];
		struct lits l = { 0 };

		if (!r->has_re || (r->kind != K_PATTERN && r->kind != K_RETRY))
			continue;
		r->pidx = R->npat;
		R->pat[R->npat++] = r;
		rc = lit_alts(r->pattern, strlen(r->pattern), &l, 0);
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
					own[nlit++] = (uint32_t)r->pidx;
				}
				l.n = 0;
				r->prefilter = 1;
				rc = 0;
			}
		}
		lits_free(&l);
	}
	if (rc == 0)
		rc = ac_build(&R->ac, lit, own, nlit);
	strv_free(lit, nlit);
	free(own);
	return rc < 0 ? tq_err_set(err, TQ_ENOMEM, "rules: out of memory") : 0;
}

void tq_rules_free(struct tq_rules *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		rule_free(r->r[i]);
	free(r->r);
	free(r->pat);
	ac_free(&r->ac);
	free(r);
}

int tq_rules_load(struct tq_rules **rp, const char *path, struct tq_err *err)
{
	struct tq_rules *R = calloc(1, sizeof(*R));
	struct ruleset b = { 0 }, u = { 0 };
	char file[PATH_MAX], *text = NULL;
	size_t len = 0;
	int rc, must_exist = 1;

	*rp = NULL;
	if (R == NULL)
		return tq_err_set(err, TQ_ENOMEM, "rules: out of memory");
	rc = parse_rules_file("rules.json (built in)", tq_rules_json, sizeof(tq_rules_json) - 1,
			      1, &b, err);
	if (rc < 0)
		goto out;
	R->r = b.r;
	R->n = b.n;
	b.r = NULL;
	b.n = 0;
	if (b.ndisable > 0) {
		rc = tq_err_set(err, TQ_EINVAL, "rules.json (built in): disabling entries "
				"belong in a config file");
		goto out;
	}
	if (path == NULL) {
		if ((rc = tq_config_path(file, sizeof(file), &must_exist, err)) < 0)
			goto out;
		path = rc == 0 ? file : "";
	}
	if (*path != '\0' &&
	    (rc = tq_config_read(path, must_exist, TQ_CLASSIFY_CONFIG_MAX, &text, &len,
				 err)) < 0)
		goto out;
	if (text != NULL && ((rc = parse_rules_file(path, text, len, 0, &u, err)) < 0 ||
			     (rc = merge(R, &u, path, err)) < 0))
		goto out;
	rc = build_prefilter(R, err);
out:
	ruleset_release(&b);
	ruleset_release(&u);
	free(text);
	if (rc < 0) {
		tq_rules_free(R);
		return rc;
	}
	*rp = R;
	return 0;
}

/* ------------------------------------------------------------------ */
/* One classification: the streams                                   */

struct jobj {
	cJSON *o;
	size_t off, end;           /* its lines in the stream's text: [off, end) */
	int ignored;
};

struct view {
	const char *name;          /* "stdout", "stderr" */
	unsigned bit;
	char *text;                /* the tail, NUL bytes as spaces; after
				    * compact(), without the ignored objects */
	size_t len;
	size_t bytes, lines;       /* examined, for the trace */
	struct jobj *obj;          /* in order of appearance */
	size_t nobj, capobj;
	size_t nignored;
	struct cands *cand;        /* per rule in R->pat; after the scan */
	int scanned;
};

struct cls {
	const struct tq_rules *R;
	const struct tq_classify_input *in;
	struct view v[2];
	struct xp xp;
	int64_t now;
	size_t regex_bytes;        /* tq_classification.regex_bytes */
};

static void view_release(struct view *v, size_t npat)
{
	for (size_t i = 0; i < v->nobj; i++)
		cJSON_Delete(v->obj[i].o);
	free(v->obj);
	for (size_t i = 0; v->cand != NULL && i < npat; i++)
		free(v->cand[i].v);
	free(v->cand);
	free(v->text);
}

static void obj_add(struct view *v, cJSON *o, size_t off, size_t end)
{
	if (v->nobj == v->capobj) {
		size_t nc = v->capobj ? v->capobj * 2 : 64;
		struct jobj *a = reallocarray(v->obj, nc, sizeof(*a));

		if (a == NULL) {
			cJSON_Delete(o);
			return;
		}
		v->obj = a;
		v->capobj = nc;
	}
	v->obj[v->nobj++] = (struct jobj){ .o = o, .off = off, .end = end };
}

static size_t line_end(const char *t, size_t len, size_t i)
{
	const char *nl = memchr(t + i, '\n', len - i);

	return nl != NULL ? (size_t)(nl - t) : len;
}

static int blank(const char *s, const char *e)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	return s == e;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct jobj *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * The JSON objects of a stream: each line that starts with '{' and is one
 * object (NDJSON: Claude, Codex, OpenCode, Gemini's stream-json), and
 * objects pretty-printed from a line "{" to their closing brace (Gemini's
 * error on stderr). Those are tried only for the last MULTILINE_TRIES
 * such lines, so text full of "{" lines cannot make this quadratic.
 */
static void find_objects(struct view *v)
{
	size_t tries[MULTILINE_TRIES], ntries = 0, done = 0;

	for (size_t ls = 0, le; ls < v->len; ls = le + 1) {
		const char *end = NULL;
		cJSON *o;

		le = line_end(v->text, v->len, ls);
		v->lines++;
		if (v->text[ls] != '{')
			continue;
		o = cJSON_ParseWithLengthOpts(v->text + ls, le - ls, &end, 0);
		if (o != NULL && blank(end, v->text + le))
			obj_add(v, o, ls, le);
		else if (o == NULL && blank(v->text + ls + 1, v->text + le))
			tries[ntries++ % MULTILINE_TRIES] = ls;
		else
			cJSON_Delete(o);
	}
	for (size_t k = ntries > MULTILINE_TRIES ? ntries - MULTILINE_TRIES : 0; k < ntries; k++) {
		size_t ls = tries[k % MULTILINE_TRIES], e;
		const char *end = NULL;
		cJSON *o;

		if (ls < done)
			continue;
		o = cJSON_ParseWithLengthOpts(v->text + ls, v->len - ls, &end, 0);
		if (o == NULL)
			continue;
		e = line_end(v->text, v->len, (size_t)(end - v->text));
		if (!blank(end, v->text + e)) {
			cJSON_Delete(o);
			continue;
		}
		obj_add(v, o, ls, e);
		done = e;
	}
	if (ntries > 0)
		qsort(v->obj, v->nobj, sizeof(*v->obj), obj_cmp);
}

static int name_in(const char *s, char *const *v, size_t n)
{
	for (size_t i = 0; s != NULL && i < n; i++)
		if (strcmp(s, v[i]) == 0)
			return 1;
	return 0;
}

/* Does rule r apply to this task (program, agent)? */
static int applies(const struct rule *r, const struct tq_classify_input *in)
{
	return (r->nprog == 0 || name_in(in->program, r->programs, r->nprog)) &&
	       (r->nagent == 0 || name_in(in->agent, r->agents, r->nagent));
}

/* Mark the objects the ignore rules select; drop their lines from the
 * text the text rules read. The objects stay for the json rules. */
static void compact(struct cls *c, struct view *v)
{
	size_t w = 0, r = 0;

	for (size_t i = 0; i < v->nobj; i++)
		for (size_t k = 0; k < c->R->n && !v->obj[i].ignored; k++) {
			const struct rule *x = c->R->r[k];

			if (x->kind == K_IGNORE && (x->streams & v->bit) && applies(x, c->in) &&
			    sel_match(&x->sel, v->obj[i].o)) {
				v->obj[i].ignored = 1;
				v->nignored++;
			}
		}
	for (size_t i = 0; i < v->nobj; i++) {
		const struct jobj *o = &v->obj[i];

		if (!o->ignored || o->off < r)
			continue;
		memmove(v->text + w, v->text + r, o->off - r);
		w += o->off - r;
		r = o->end < v->len ? o->end + 1 : v->len;
	}
	memmove(v->text + w, v->text + r, v->len - r);
	w += v->len - r;
	v->len = w;
	v->text[w] = '\0';
}

/* Take the last TQ_CLASSIFY_TAIL bytes of a stream, from a line start. */
static void view_load(struct cls *c, struct view *v, const char *s, size_t n)
{
	size_t start = 0;

	if (s == NULL)
		n = 0;
	if (n > TQ_CLASSIFY_TAIL) {
		const char *nl;

		start = n - TQ_CLASSIFY_TAIL;
		if (s[start - 1] != '\n' && (nl = memchr(s + start, '\n', n - start)) != NULL)
			start = (size_t)(nl - s) + 1;
	}
	v->bytes = n - start;
	if ((v->text = malloc(v->bytes + 1)) == NULL) {
		xp_add(&c->xp, "%s: out of memory: not examined", v->name);
		v->bytes = 0;
		return;
	}
	if (v->bytes > 0) /* s may be NULL */
		memcpy(v->text, s + start, v->bytes);
	for (size_t i = 0; i < v->bytes; i++)
		if (v->text[i] == '\0')
			v->text[i] = ' ';
	v->text[v->bytes] = '\0';
	v->len = v->bytes;
	find_objects(v);
	compact(c, v);
	xp_add(&c->xp, "%s: %zu bytes, %zu lines, %zu JSON objects (%zu of them the "
	       "model's words or tool output, skipped by text rules)", v->name, v->bytes,
	       v->lines, v->nobj, v->nignored);
}

/* The index of the last object of v that sel selects, or -1. */
static ssize_t last_obj(const struct view *v, const struct sel *s)
{
	for (size_t i = v->nobj; i-- > 0;)
		if (sel_match(s, v->obj[i].o))
			return (ssize_t)i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Matching text                                                      */

/*
 * regexec over t[ls, le). 1 on a match (m[0..nm) filled, offsets into t).
 * The string handed over starts at ls: glibc prepares (and with REG_ICASE
 * upper-cases) its input from the string's start, so passing the whole
 * tail with REG_STARTEND would cost the tail's size on every line.
 */
static int re_range(const regex_t *re, const char *t, size_t ls, size_t le, regmatch_t *m,
		    size_t nm, size_t *work)
{
	regmatch_t one[1];

	*work += le - ls;

	if (nm == 0)
		m = one;
	m[0].rm_so = 0;
	m[0].rm_eo = (regoff_t)(le - ls);
	if (regexec(re, t + ls, nm, m, REG_STARTEND) != 0)
		return 0;
	for (size_t i = 0; i < nm; i++)
		if (m[i].rm_so >= 0) {
			m[i].rm_so += (regoff_t)ls;
			m[i].rm_eo += (regoff_t)ls;
		}
	return 1;
}

/* The last line of t (len bytes) where re matches, trying lines from the
 * end. 1 with *ls, *le and m[] set; 0 none. */
static int last_line(const regex_t *re, const char *t, size_t len, size_t *ls,
		     size_t *le, regmatch_t *m, size_t nm, size_t *work)
{
	size_t e = len;

	for (;;) {
		size_t s = e;

		while (s > 0 && t[s - 1] != '\n')
			s--;
		if (re_range(re, t, s, e, m, nm, work)) {
			*ls = s;
			*le = e;
			return 1;
		}
		if (s == 0)
			return 0;
		e = s - 1;
	}
}

/* The last line of view v where pattern rule p matches: through its
 * literal candidates when it has them. */
static int view_match(struct cls *c, struct view *v, const struct rule *p, size_t *ls,
		      size_t *le, regmatch_t *m, size_t nm)
{
	const struct cands *k;

	if (v->text == NULL || v->len == 0)
		return 0;
	if (!p->prefilter)
		return re_range(&p->re, v->text, 0, v->len, NULL, 0, &c->regex_bytes) &&
		       last_line(&p->re, v->text, v->len, ls, le, m, nm, &c->regex_bytes);
	if (!v->scanned) {
		v->scanned = 1;
		if ((v->cand = calloc(c->R->npat + 1, sizeof(*v->cand))) == NULL) {
			xp_add(&c->xp, "%s: out of memory: text rules not run", v->name);
			return 0;
		}
		ac_scan(&c->R->ac, v->text, v->len, v->cand);
	}
	if (v->cand == NULL || (k = &v->cand[p->pidx])->n == 0)
		return 0;
	if (k->n > CAND_BULK && !re_range(&p->re, v->text, 0, v->len, NULL, 0, &c->regex_bytes))
		return 0;
	for (size_t i = k->n; i-- > 0;) {
		*ls = k->v[i];
		*le = line_end(v->text, v->len, *ls);
		if (re_range(&p->re, v->text, *ls, *le, m, nm, &c->regex_bytes))
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The stages                                                         */

struct hit {
	const struct rule *r;      /* the rule that matched */
	const struct rule *via;    /* the text_from that gave the text, or NULL */
	struct view *v;            /* where (NULL: the exit status) */
	char reason[TQ_CLASSIFY_REASON_MAX];
};

struct hits {
	int have[TQ_CATEGORY_COUNT];
	struct hit h[TQ_CATEGORY_COUNT];
};

/* Record a match unless its category already has one (the first in list
 * order gives the reason). Returns the slot to fill, or NULL. */
static struct hit *hit(struct hits *hs, enum tq_category cat, const struct rule *r,
		       const struct rule *via, struct view *v)
{
	if (hs->have[cat])
		return NULL;
	hs->have[cat] = 1;
	hs->h[cat] = (struct hit){ .r = r, .via = via, .v = v };
	return &hs->h[cat];
}

static void eval_json(struct cls *c, const struct rule *r, struct hits *hs)
{
	int seen = 0;

	for (int s = 0; s < 2; s++) {
		struct view *v = &c->v[s];
		const char *lab = r->sel.label[0] ? r->sel.label : "";
		char val[96], field[320];
		const cJSON *x;
		struct hit *h;
		ssize_t i;

		if (!(r->streams & v->bit) || (i = last_obj(v, &r->sel)) < 0)
			continue;
		seen = 1;
		x = jpath_get(v->obj[i].o, &r->test.path);
		jval_str(x, val, sizeof(val));
		snprintf(field, sizeof(field), "%s%s%s=%s", lab, *lab ? "." : "", r->test.path.text,
			 val);
		if (!jtest_match(&r->test, x)) {
			xp_add(&c->xp, "  json %s: %s%s: no match", r->id,
			       s == 1 ? "stderr " : "", field);
			continue;
		}
		xp_add(&c->xp, "  json %s: %s%s -> %s", r->id, s == 1 ? "stderr " : "", field,
		       tq_category_name(r->cat));
		if ((h = hit(hs, r->cat, r, NULL, v)) != NULL)
			clean_copy(h->reason, sizeof(h->reason), field, strlen(field), NULL);
		return;
	}
	if (!seen) {
		char d[160];

		sel_desc(&r->sel, d, sizeof(d));
		xp_add(&c->xp, "  json %s: no object (%s)", r->id, d);
	}
}

static int exit_known(const struct tq_classify_input *in)
{
	return in->signal == 0 && in->exit_code >= 0;
}

static void eval_exit(struct cls *c, const struct rule *r, struct hits *hs)
{
	int64_t e = c->in->exit_code;
	int match = 0;
	struct hit *h;

	if (!exit_known(c->in)) {
		xp_add(&c->xp, "  exit %s: no exit code", r->id);
		return;
	}
	match = r->erange && e >= r->emin && e <= r->emax;
	for (size_t i = 0; i < r->ncodes; i++)
		match |= r->codes[i] == e;
	if (!match) {
		xp_add(&c->xp, "  exit %s: exit code %lld: no match", r->id, (long long)e);
		return;
	}
	xp_add(&c->xp, "  exit %s: exit code %lld -> %s", r->id, (long long)e,
	       tq_category_name(r->cat));
	if ((h = hit(hs, r->cat, r, NULL, NULL)) != NULL)
		snprintf(h->reason, sizeof(h->reason), "exit code %lld%s%.400s", (long long)e,
			 r->doc ? ": " : "", r->doc ? r->doc : "");
}

static void eval_pattern(struct cls *c, const struct rule *r, struct hits *hs)
{
	for (int s = 0; s < 2; s++) {
		struct view *v = &c->v[s];
		char why[TQ_CLASSIFY_REASON_MAX];
		regmatch_t m[1];
		size_t ls, le;
		struct hit *h;

		if (!(r->streams & v->bit) || !view_match(c, v, r, &ls, &le, m, 1))
			continue;
		reason_line(why, sizeof(why), v->text, ls, le, (size_t)m[0].rm_so);
		xp_add(&c->xp, "  text %s: %s: \"%.200s\" -> %s", r->id, v->name, why,
		       tq_category_name(r->cat));
		if ((h = hit(hs, r->cat, r, NULL, v)) != NULL)
			memcpy(h->reason, why, sizeof(why));
		return;
	}
	xp_add(&c->xp, "  text %s: no match%s", r->id,
	       r->prefilter ? "" : " (no literal to prefilter on: whole text searched)");
}

/* The string a text_from rule reads in view v, or NULL. */
static const char *from_text(const struct rule *r, const struct view *v)
{
	ssize_t i;
	const cJSON *x;

	if (!(r->streams & v->bit) || (i = last_obj(v, &r->sel)) < 0)
		return NULL;
	x = jpath_get(v->obj[i].o, &r->test.path);
	return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* Every text rule over the string a text_from rule reads. */
static void eval_from(struct cls *c, const struct rule *r, struct hits *hs)
{
	int seen = 0;

	for (int s = 0; s < 2; s++) {
		struct view *v = &c->v[s];
		const char *t = from_text(r, v);
		const char *lab = r->sel.label;
		char shown[160];
		int any = 0;

		if (t == NULL)
			continue;
		seen = 1;
		clean_copy(shown, sizeof(shown), t, strlen(t), NULL);
		xp_add(&c->xp, "  text_from %s: %s%s%s%s = \"%s\"", r->id, s == 1 ? "stderr " : "",
		       lab, *lab ? "." : "", r->test.path.text, shown);
		for (size_t k = 0; k < c->R->n; k++) {
			const struct rule *p = c->R->r[k];
			regmatch_t m[1];
			size_t ls, le;
			struct hit *h;

			if (p->kind != K_PATTERN || !(p->streams & v->bit) || !applies(p, c->in) ||
			    !last_line(&p->re, t, strlen(t), &ls, &le, m, 1, &c->regex_bytes))
				continue;
			any = 1;
			xp_add(&c->xp, "    text %s matches -> %s", p->id, tq_category_name(p->cat));
			if ((h = hit(hs, p->cat, p, r, v)) != NULL)
				reason_line(h->reason, sizeof(h->reason), t, ls, le,
					    (size_t)m[0].rm_so);
		}
		if (!any)
			xp_add(&c->xp, "    no text rule matches it");
	}
	if (!seen) {
		char d[160];

		sel_desc(&r->sel, d, sizeof(d));
		xp_add(&c->xp, "  text_from %s: no string %s (%s)", r->id, r->test.path.text, d);
	}
}

/* Run one stage. Returns the winning category's hit, or NULL. */
static const struct hit *run_stage(struct cls *c, enum stage st, struct hits *hs)
{
	size_t skipped = 0;

	memset(hs, 0, sizeof(*hs));
	xp_add(&c->xp, "stage %s:", stage_names[st]);
	for (size_t i = 0; i < c->R->n; i++) {
		const struct rule *r = c->R->r[i];

		if (r->stage != st || r->kind == K_RETRY || r->kind == K_IGNORE)
			continue;
		if (!applies(r, c->in)) {
			skipped++;
			continue;
		}
		switch (r->kind) {
		case K_JSON:
			eval_json(c, r, hs);
			break;
		case K_EXIT:
			eval_exit(c, r, hs);
			break;
		case K_PATTERN:
			eval_pattern(c, r, hs);
			break;
		case K_TEXT_FROM:
			eval_from(c, r, hs);
			break;
		case K_RETRY:
		case K_IGNORE:
			break;
		}
	}
	if (skipped > 0)
		xp_add(&c->xp, "  (%zu rules for other programs or agents not checked)", skipped);
	for (int k = TQ_CAT_RATE_LIMIT; k < TQ_CATEGORY_COUNT; k++)
		if (hs->have[k])
			return &hs->h[k];
	xp_add(&c->xp, "  nothing matched");
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Retry times                                                        */

struct clk {
	int wday, mon, mday;       /* -1: not given */
	int hour, min;             /* hour -1: no time given */
	int utc;
	char zone[64];
};

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
static int clock_parse(const char *s, struct clk *k)
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
static int64_t clock_next(const struct clk *k, int64_t now_ms, char *note, size_t nn)
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

/* A hint's value (the text of its group, or a JSON number as text) as an
 * absolute time in ms; 0 if it is not one. */
static int64_t hint_time(struct cls *c, const struct rule *r, const char *s, size_t n,
			 char *note, size_t nn)
{
	char buf[96];
	char *e;
	double d;
	struct clk k;

	note[0] = '\0';
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (r->unit == U_CLOCK)
		return clock_parse(buf, &k) == 0 ? clock_next(&k, c->now, note, nn) : 0;
	d = strtod(buf, &e);
	if (e == buf || !isfinite(d) || d < 0 || d > 1e13)
		return 0;
	switch (r->unit) {
	case U_S:
		return c->now + (int64_t)(d * 1000);
	case U_MS:
		return c->now + (int64_t)d;
	case U_EPOCH:
		return (int64_t)(d * 1000);
	case U_CLOCK:
		break;
	}
	return 0;
}

/* Consider one hint: trace it, keep the latest. */
static void hint_seen(struct cls *c, const struct rule *r, const char *where, const char *s,
		      size_t n, int64_t *best)
{
	char shown[80], when[32], in[32], note[96];
	int64_t t = hint_time(c, r, s, n, note, sizeof(note));

	clean_copy(shown, sizeof(shown), s, n, NULL);
	if (t <= c->now) {
		xp_add(&c->xp, "  retry %s: %s\"%s\": %s%s", r->id, where, shown,
		       t == 0 ? "not a time" : "already passed", note);
		return;
	}
	tq_format_time(t, when, sizeof(when));
	tq_format_duration(t - c->now, in, sizeof(in));
	xp_add(&c->xp, "  retry %s: %s\"%s\" -> %s (in %s)%s", r->id, where, shown, when, in,
	       note);
	if (t > *best)
		*best = t;
}

/* The text of group g of a match in t, as (pointer, length); 0 if unset. */
static int group_text(const char *t, const regmatch_t *m, int g, const char **s, size_t *n)
{
	if (m[g].rm_so < 0 || m[g].rm_eo < m[g].rm_so)
		return 0;
	*s = t + m[g].rm_so;
	*n = (size_t)(m[g].rm_eo - m[g].rm_so);
	return 1;
}

static void retry_pattern(struct cls *c, const struct rule *r, int64_t *best)
{
	regmatch_t m[10];
	const char *s;
	size_t ls, le, n;

	/* the fields text_from reads (the agent's error message) ... */
	for (size_t k = 0; k < c->R->n; k++) {
		const struct rule *f = c->R->r[k];

		for (int v = 0; f->kind == K_TEXT_FROM && applies(f, c->in) && v < 2; v++) {
			const char *t = from_text(f, &c->v[v]);

			if (t != NULL && (r->streams & c->v[v].bit) &&
			    last_line(&r->re, t, strlen(t), &ls, &le, m, (size_t)r->group + 1,
				      &c->regex_bytes) &&
			    group_text(t, m, r->group, &s, &n))
				hint_seen(c, r, "", s, n, best);
		}
	}
	/* ... and the text */
	for (int v = 0; v < 2; v++)
		if ((r->streams & c->v[v].bit) &&
		    view_match(c, &c->v[v], r, &ls, &le, m, (size_t)r->group + 1) &&
		    group_text(c->v[v].text, m, r->group, &s, &n))
			hint_seen(c, r, v == 1 ? "stderr " : "", s, n, best);
}

static void retry_json(struct cls *c, const struct rule *r, int64_t *best)
{
	for (int v = 0; v < 2; v++) {
		ssize_t i;
		const cJSON *x;
		char num[40];

		if (!(r->streams & c->v[v].bit) || (i = last_obj(&c->v[v], &r->sel)) < 0)
			continue;
		x = jpath_get(c->v[v].obj[i].o, &r->test.path);
		if (!cJSON_IsNumber(x))
			continue;
		snprintf(num, sizeof(num), "%.17g", x->valuedouble);
		hint_seen(c, r, "", num, strlen(num), best);
	}
}

/* The latest retry time any hint gives, capped at TQ_CLASSIFY_RETRY_MAX_MS
 * from now; 0 if none. */
static int64_t retry_time(struct cls *c)
{
	int64_t best = 0;

	xp_add(&c->xp, "retry hints:");
	for (size_t i = 0; i < c->R->n; i++) {
		const struct rule *r = c->R->r[i];

		if (r->kind != K_RETRY || !applies(r, c->in))
			continue;
		if (r->has_sel)
			retry_json(c, r, &best);
		else
			retry_pattern(c, r, &best);
	}
	if (best == 0)
		xp_add(&c->xp, "  none");
	if (best > c->now + TQ_CLASSIFY_RETRY_MAX_MS) {
		best = c->now + TQ_CLASSIFY_RETRY_MAX_MS;
		xp_add(&c->xp, "  capped at %d days from now (TQ_CLASSIFY_RETRY_MAX_MS)",
		       (int)(TQ_CLASSIFY_RETRY_MAX_MS / 86400000));
	}
	return best;
}

/* ------------------------------------------------------------------ */
/* The verdict                                                        */

/* Step 1: the worker's own verdict decides, whatever the output says.
 * Returns 1 when it decided. */
static int verdict(struct cls *c, struct tq_classification *out)
{
	const struct tq_classify_input *in = c->in;
	enum tq_outcome o = in->outcome;
	const char *abbr;

	if (o == TQ_OUT_SUCCEEDED || (o == TQ_OUT_NONE && in->exit_code == 0 && in->signal == 0)) {
		out->category = TQ_CAT_NONE;
		snprintf(out->rule, sizeof(out->rule), "outcome.succeeded");
		snprintf(out->reason, sizeof(out->reason), "succeeded");
		xp_add(&c->xp, "step 1, the worker's verdict: succeeded; nothing to classify");
		return 1;
	}
	if (o == TQ_OUT_STALLED) {
		/* Stopped by --stall-timeout: the agent waited on something that
		 * did not answer. network, unless its output shows it was waiting
		 * out a rate limit or an overload, which the output decides (a
		 * rate limit then pauses the group until its retry time). */
		xp_add(&c->xp, "step 1, the worker's verdict: stalled: network, unless the "
		       "output shows a rate_limit or an overload");
		return 0;
	}
	if ((o == TQ_OUT_FAILED || o == TQ_OUT_NONE) && in->signal == 0) {
		xp_add(&c->xp, "step 1, the worker's verdict: failed: the output decides");
		return 0;
	}
	if (o == TQ_OUT_FAILED || o == TQ_OUT_NONE)
		o = TQ_OUT_SIGNALED;
	out->category = TQ_CAT_UNKNOWN;
	out->transient = 0;
	snprintf(out->rule, sizeof(out->rule), "outcome.%s", tq_outcome_name(o));
	switch (o) {
	case TQ_OUT_SIGNALED:
		abbr = sigabbrev_np(in->signal);
		snprintf(out->reason, sizeof(out->reason), "killed by signal %d%s%s%s",
			 in->signal, abbr ? " (SIG" : "", abbr ? abbr : "", abbr ? ")" : "");
		break;
	case TQ_OUT_TIMED_OUT:
		snprintf(out->reason, sizeof(out->reason), "timed out");
		break;
	case TQ_OUT_KILLED:
		snprintf(out->reason, sizeof(out->reason), "killed with taskq kill");
		break;
	case TQ_OUT_OUTPUT_OVERFLOW:
		snprintf(out->reason, sizeof(out->reason), "output cap exceeded");
		break;
	case TQ_OUT_SPAWN_FAILED:
		snprintf(out->reason, sizeof(out->reason), "the command could not be started");
		break;
	case TQ_OUT_LOST:
		snprintf(out->reason, sizeof(out->reason), "its worker died (lease expired)");
		break;
	case TQ_OUT_OUTPUT_LOST:
		snprintf(out->reason, sizeof(out->reason), "its output could not all be stored");
		break;
	default:
		snprintf(out->reason, sizeof(out->reason), "%s", tq_outcome_name(o));
		break;
	}
	xp_add(&c->xp, "step 1, the worker's verdict: %s (%s): decides, whatever the output "
	       "says", tq_outcome_name(o), out->reason);
	return 1;
}

/* For a json rule's reason: the agent's own message, when a text_from
 * rule finds one in the same stream ("assistant.error=rate_limit: API
 * Error: Request rejected (429) ..."). */
static void add_context(struct cls *c, const struct hit *h, char *reason, size_t n)
{
	size_t len = strlen(reason);

	if (h->r->kind != K_JSON || h->v == NULL || len + 8 >= n)
		return;
	for (size_t k = 0; k < c->R->n; k++) {
		const struct rule *f = c->R->r[k];
		const char *t;
		size_t e;

		if (f->kind != K_TEXT_FROM || !applies(f, c->in) || (t = from_text(f, h->v)) == NULL)
			continue;
		while (isspace((unsigned char)*t))
			t++;
		e = strcspn(t, "\n");
		if (e == 0)
			continue;
		memcpy(reason + len, ": ", 3);
		clean_copy(reason + len + 2, n - len - 2, t, e, NULL);
		return;
	}
}

static void decide(struct cls *c, const struct hit *h, struct tq_classification *out)
{
	const struct rule *r = h->r;

	out->category = r->cat;
	out->transient = r->transient;
	if (h->via != NULL)
		snprintf(out->rule, sizeof(out->rule), "%s+%s", h->via->id, r->id);
	else
		snprintf(out->rule, sizeof(out->rule), "%s", r->id);
	memcpy(out->reason, h->reason, sizeof(out->reason));
	add_context(c, h, out->reason, sizeof(out->reason));
	xp_add(&c->xp, "  => %s (rule %s), the highest-priority match of this stage",
	       tq_category_name(r->cat), out->rule);
}

void tq_classify(const struct tq_rules *R, const struct tq_classify_input *in,
		 struct tq_classification *out, char *explain, size_t n)
{
	struct cls c = {
		.R = R, .in = in, .now = in->now_ms,
		.v = { { .name = "stdout", .bit = 1 }, { .name = "stderr", .bit = 2 } },
		.xp = { .p = explain, .n = explain != NULL ? n : 0 },
	};
	const struct hit *h = NULL;
	struct hits *hs = NULL;
	char when[32];

	memset(out, 0, sizeof(*out));
	if (explain != NULL && n > 0)
		explain[0] = '\0';
	xp_add(&c.xp, "input: outcome %s, exit code %d, signal %d, program %s, agent %s",
	       in->outcome != TQ_OUT_NONE ? tq_outcome_name(in->outcome) : "(none)",
	       in->exit_code, in->signal, in->program ? in->program : "-",
	       in->agent ? in->agent : "-");
	if (verdict(&c, out))
		goto done;
	if (R == NULL || (hs = malloc(sizeof(*hs))) == NULL) {
		xp_add(&c.xp, "%s: no rules checked", R == NULL ? "no rules loaded" : "out of memory");
	} else {
		view_load(&c, &c.v[0], in->out_tail, in->out_len);
		view_load(&c, &c.v[1], in->err_tail, in->err_len);
		for (int st = 0; st < ST_COUNT && h == NULL; st++)
			h = run_stage(&c, (enum stage)st, hs);
	}
	if (h != NULL)
		decide(&c, h, out);
	if (in->outcome == TQ_OUT_STALLED && (h == NULL || (out->category != TQ_CAT_RATE_LIMIT &&
						       out->category != TQ_CAT_OVERLOAD))) {
		out->category = TQ_CAT_NETWORK;
		out->transient = 1;
		snprintf(out->rule, sizeof(out->rule), "outcome.stalled");
		snprintf(out->reason, sizeof(out->reason), "stalled: no new output");
		xp_add(&c.xp, "stalled, and the output shows no rate_limit or overload: network");
		goto done;
	}
	if (h == NULL) {
		out->category = TQ_CAT_UNKNOWN;
		snprintf(out->rule, sizeof(out->rule), "default");
		snprintf(out->reason, sizeof(out->reason), "exit code %d; no rule matched",
			 in->exit_code);
	}
	if (out->transient && R != NULL)
		out->retry_at = retry_time(&c);
done:
	out->examined_bytes = c.v[0].bytes + c.v[1].bytes;
	out->regex_bytes = c.regex_bytes;
	tq_format_time(out->retry_at, when, sizeof(when));
	xp_last(&c.xp, "result: %s, %s, retry at %s, rule %s",
		out->category != TQ_CAT_NONE ? tq_category_name(out->category) : "none",
		out->transient ? "transient" : "not transient", out->retry_at ? when : "-",
		out->rule);
	xp_last(&c.xp, "reason: %.200s", out->reason);
	free(hs);
	view_release(&c.v[0], R != NULL ? R->npat : 0);
	view_release(&c.v[1], R != NULL ? R->npat : 0);
}

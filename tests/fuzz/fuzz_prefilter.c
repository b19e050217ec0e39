/*
 * fuzz_prefilter.c - differential libFuzzer harness for the literal
 * prefilter of the text rules (src/classify/prefilter.h) against glibc's
 * regexec.
 *
 * The prefilter names, in one pass over a text, the lines where each
 * pattern can match; the classifier runs regexec on those lines only. So
 * its one promise, checked here: every line on which regexec finds a match
 * of a pattern the prefilter serves is a candidate line of that pattern
 * (more candidates cost time, a missing one loses a match). Also checked:
 * candidates are line starts, ascending, each once. A failed check prints
 * the patterns, the flags and the line, and abort()s.
 *
 * Input, byte 0: bit 0 REG_ICASE, bit 1 the mode, bits 2-3 how many
 * patterns (1-4). The patterns are compiled as the rules' are (regcomp,
 * REG_EXTENDED | REG_NEWLINE [| REG_ICASE]) and run as view.c runs them
 * (one line at a time, REG_STARTEND); one regcomp refuses is left out.
 *   mode 0, generated: the rest drives a small grammar of what rules.json
 *     patterns use (literals, escaped specials, '.', bracket expressions
 *     with ranges, classes and negation, groups, alternation with empty
 *     alternatives, ? * + {m} {m,} {m,n} {,n}, ^ $ \b \B \< \> \w \s);
 *     the text is lines sampled from the patterns (a string each pattern
 *     matches, letters' case flipped, bytes changed or added around it)
 *     and lines of raw input bytes;
 *   mode 1, raw: NUL-terminated pattern sources, then the text (the seed
 *     corpus holds rules.json's patterns with lines of
 *     tests/fixtures/agent-outputs this way). A pattern outside the subset
 *     above (a back-reference, an escaped letter other than b B w W s S) is
 *     left out.
 * NUL bytes in the text become spaces, as view.c makes them.
 *
 * The C locale, as taskq classifies (nothing calls setlocale before a
 * classification: cli_output_init sets LC_CTYPE only to print). In a UTF-8
 * locale glibc's REG_ICASE also matches U+0131 (dotless i) for "i" and
 * U+017F (long s) for "s", which the prefilter does not fold.
 *
 * TASKQ_FUZZ_SHOW=1 prints each pattern before regcomp (which one hangs).
 * Patterns are kept to what regcomp builds quickly (see in_subset and
 * gen_atom): a slow regcomp is glibc's, not a finding.
 *
 * Checked that it fails: with a bug planted in a scratch copy of
 * prefilter.c (lit_alts dropping the last alternative of an alternation),
 * tests/fuzz/run fuzz_prefilter failed at once, printing the pattern and
 * the line: from an empty corpus after 37 inputs (/aaaaaa|/ on an empty
 * line), and on the saved corpus while reading it (a generated seed:
 * /[a-z][A-Za-z_]{2,3}PgJ8@\{?|._q7Pd/ on a line holding "_q7Pd").
 */
#include <ctype.h>
#include <locale.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify/prefilter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define NPAT_MAX 4
#define PAT_MAX 512         /* bytes of one pattern's source */
#define TEXT_MAX 8192       /* bytes of the text */
#define DEPTH_MAX 3         /* nested groups */
#define SEQ_MAX 6           /* atoms in one alternative */
#define ALT_MAX 4           /* alternatives in one alternation */
#define NODES_MAX 256
#define LINES_MAX 16
#define LINE_MAX 256        /* bytes of one generated line */

/* The input, read a byte at a time; 0 once it is used up. */
struct in {
	const uint8_t *p;
	size_t n, i;
};

static unsigned take(struct in *in)
{
	return in->i < in->n ? in->p[in->i++] : 0;
}

/* ------------------------------------------------------------------ */
/* Generated patterns: a tree, rendered as ERE and sampled            */

enum atom { A_LIT, A_ANY, A_CLASS, A_GROUP, A_BOL, A_EOL, A_WORDB, A_NWORDB,
	    A_WSTART, A_WEND, A_WORD, A_SPACE };

struct node {
	enum atom kind;
	unsigned char c;            /* A_LIT */
	char cls[24];               /* A_CLASS: its source, "[^a-z]" */
	unsigned char set[256];     /* A_CLASS: the bytes it matches */
	int have_set;
	int alts[ALT_MAX], nalt;    /* A_GROUP: first node of each alternative */
	int next;                   /* next atom of the same alternative, -1 */
	int qmin, qmax;             /* repeat; qmax -1: unbounded */
	char q[8];                  /* the quantifier's source, "" or "{1,3}" */
};

struct gen {
	struct node n[NODES_MAX];
	int nn;
	int top;                    /* the top-level group (no parentheses) */
};

static const char lit_chars[] =
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	"-_:\"'/=,!@#%&~<>;.[]()|*+?{}^$\\";
/* words of rules.json's patterns */
static const char *const words[] = {
	"rate", "limit", "429", "Error", "API", "overloaded", "retry", "status",
	"reset", "HTTP/", "ECONNRESET", "Too Many", "quota", "529", "Request",
	"exhausted", "after", "seconds", "timed out", "\"type\":",
};
static const char *const class_tpl[] = {
	"[a-z ]", "[ :=\"]", "[0-9.]", "[^\"\\]", "[0-9]", "[a-z]", "[^a]", "[]a]",
	"[^]a]", "[[:alpha:]]", "[[:digit:]]", "[[:space:]]", "[A-Za-z_]", "[-x]",
	"[^ ]", "[[:upper:]s]",
};
static const char *const quant_tpl[] = {
	"?", "*", "+", "{1}", "{2}", "{0}", "{1,}", "{0,1}", "{1,3}", "{2,3}", "{,2}",
	"{0,}",
};

static int new_node(struct gen *g, enum atom k)
{
	struct node *x;

	if (g->nn == NODES_MAX)
		return -1;
	x = &g->n[g->nn];
	memset(x, 0, sizeof(*x));
	x->kind = k;
	x->next = -1;
	x->qmin = x->qmax = 1;
	return g->nn++;
}

static void quantify(struct node *x, unsigned b)
{
	const char *q = quant_tpl[b % (sizeof(quant_tpl) / sizeof(quant_tpl[0]))];
	int lo = 1, hi = 1;

	if (strcmp(q, "?") == 0)
		lo = 0, hi = 1;
	else if (strcmp(q, "*") == 0 || strcmp(q, "{0,}") == 0)
		lo = 0, hi = -1;
	else if (strcmp(q, "+") == 0 || strcmp(q, "{1,}") == 0)
		lo = 1, hi = -1;
	else if (strcmp(q, "{,2}") == 0)
		lo = 0, hi = 2;
	else if (sscanf(q, "{%d,%d}", &lo, &hi) == 2)
		;
	else if (sscanf(q, "{%d}", &lo) == 1)
		hi = lo;
	snprintf(x->q, sizeof(x->q), "%s", q);
	x->qmin = lo;
	x->qmax = hi;
}

static int gen_alts(struct gen *g, struct in *in, int depth, int qgroup);

static int zero_width(enum atom k)
{
	return k == A_BOL || k == A_EOL || k == A_WORDB || k == A_NWORDB || k == A_WSTART ||
	       k == A_WEND;
}

/*
 * One atom, quantified or not; -1 when the tree is full. qgroup: inside a
 * quantified group, where no group is quantified again and no atom is
 * zero-width: glibc's regcomp takes exponential time on stars over what can
 * be empty ("((8*\\B)*\\B)*", "((n*\\B\\B)\\B\\B)*"), which rules do not
 * have and is not what we test.
 */
static int gen_atom(struct gen *g, struct in *in, int depth, int qgroup, int *last)
{
	unsigned b = take(in), k = b % 16;
	int id, quant = (b & 0x80) != 0;

	if (k >= 4 && k < 8) {
		/* a word: literal atoms in a row, the quantifier on the last */
		unsigned w = take(in);
		const char *s = words[w % (sizeof(words) / sizeof(words[0]))];
		char mine[8];
		int prev = -1;

		if (w & 0x80) {
			size_t n = 2 + take(in) % 5;

			for (size_t i = 0; i < n; i++)
				mine[i] = lit_chars[take(in) % (sizeof(lit_chars) - 1)];
			mine[n] = '\0';
			s = mine;
		}
		for (id = -1; *s; s++) {
			int x = new_node(g, A_LIT);

			if (x < 0)
				return -1;
			g->n[x].c = (unsigned char)*s;
			if (prev >= 0)
				g->n[prev].next = x;
			else
				id = x;
			prev = x;
		}
		*last = prev;
		if (quant)
			quantify(&g->n[prev], take(in));
		return id;
	}
	if (k < 8 || (k == 8 && depth >= DEPTH_MAX) || (k > 10 && qgroup)) {
		if ((id = new_node(g, A_LIT)) < 0)
			return -1;
		g->n[id].c = (unsigned char)lit_chars[take(in) % (sizeof(lit_chars) - 1)];
	} else if (k == 8) {
		quant = quant && !qgroup;
		if ((id = gen_alts(g, in, depth + 1, qgroup || quant)) < 0)
			return -1;
	} else if (k == 9) {
		id = new_node(g, A_ANY);
	} else if (k == 10) {
		if ((id = new_node(g, A_CLASS)) < 0)
			return -1;
		snprintf(g->n[id].cls, sizeof(g->n[id].cls), "%s",
			 class_tpl[take(in) % (sizeof(class_tpl) / sizeof(class_tpl[0]))]);
	} else {
		static const enum atom zero[] = { A_BOL, A_EOL, A_WORDB, A_NWORDB, A_WSTART,
						  A_WEND, A_WORD, A_SPACE };

		id = new_node(g, zero[take(in) % 8]);
	}
	if (id < 0)
		return -1;
	/* bit 7: a quantifier, not on a zero-width atom (glibc may refuse) */
	if (quant && !zero_width(g->n[id].kind))
		quantify(&g->n[id], take(in));
	*last = id;
	return id;
}

/* A group: 1-ALT_MAX alternatives of 0-SEQ_MAX atoms. */
static int gen_alts(struct gen *g, struct in *in, int depth, int qgroup)
{
	int id = new_node(g, A_GROUP);
	unsigned b = take(in);

	if (id < 0)
		return -1;
	g->n[id].nalt = 1 + (int)(b % ALT_MAX);
	for (int a = 0; a < g->n[id].nalt; a++) {
		int len = (int)(take(in) % (SEQ_MAX + 1)), prev = -1;

		g->n[id].alts[a] = -1;
		for (int s = 0; s < len; s++) {
			int end, x = gen_atom(g, in, depth, qgroup, &end);

			if (x < 0)
				return -1;
			if (prev < 0)
				g->n[id].alts[a] = x;
			else
				g->n[prev].next = x;
			prev = end;
		}
	}
	return id;
}

struct buf {
	char *p;
	size_t n, cap;
	int over;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n >= b->cap) {
		b->over = 1;
		return;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void render(const struct gen *g, int id, int top, struct buf *b);

static void render_seq(const struct gen *g, int id, struct buf *b)
{
	for (; id >= 0; id = g->n[id].next)
		render(g, id, 0, b);
}

static void render(const struct gen *g, int id, int top, struct buf *b)
{
	const struct node *x = &g->n[id];
	char e[3] = { '\\', (char)x->c, '\0' };

	switch (x->kind) {
	case A_LIT:
		if (strchr(".[]()|*+?{}^$\\", x->c) != NULL)
			puts_(b, e);
		else
			put(b, (const char *)&x->c, 1);
		break;
	case A_ANY: puts_(b, "."); break;
	case A_CLASS: puts_(b, x->cls); break;
	case A_BOL: puts_(b, "^"); break;
	case A_EOL: puts_(b, "$"); break;
	case A_WORDB: puts_(b, "\\b"); break;
	case A_NWORDB: puts_(b, "\\B"); break;
	case A_WSTART: puts_(b, "\\<"); break;
	case A_WEND: puts_(b, "\\>"); break;
	case A_WORD: puts_(b, "\\w"); break;
	case A_SPACE: puts_(b, "\\s"); break;
	case A_GROUP:
		if (!top || x->q[0] != '\0')
			puts_(b, "(");
		for (int a = 0; a < x->nalt; a++) {
			if (a > 0)
				puts_(b, "|");
			render_seq(g, x->alts[a], b);
		}
		if (!top || x->q[0] != '\0')
			puts_(b, ")");
		break;
	}
	puts_(b, x->q);
}

/* The bytes a bracket expression matches, found by asking regexec. */
static void class_set(const char *cls, int flags, unsigned char set[256])
{
	regex_t re;

	memset(set, 0, 256);
	if (regcomp(&re, cls, REG_EXTENDED | REG_NEWLINE | REG_NOSUB | flags) != 0)
		return;
	for (int c = 1; c < 256; c++) {
		char s[2] = { (char)c, '\0' };

		set[c] = regexec(&re, s, 0, NULL, 0) == 0;
	}
	regfree(&re);
}

/* A byte of set, the k-th one round; 'x' if it is empty. */
static char pick(const unsigned char set[256], unsigned k)
{
	int n = 0;

	for (int c = 1; c < 256; c++)
		n += set[c];
	if (n == 0)
		return 'x';
	k %= (unsigned)n;
	for (int c = 1; c < 256; c++)
		if (set[c] && k-- == 0)
			return (char)c;
	return 'x';
}

/* Append to b a string node id likely matches, its choices from in. */
static void sample(struct gen *g, int id, int flags, struct in *in, struct buf *b,
		   int depth)
{
	struct node *x = &g->n[id];
	int reps = x->qmin;

	if (depth > 2 * DEPTH_MAX + 2)
		return;
	if (x->qmax < 0 || x->qmax > x->qmin)
		reps += (int)(take(in) % (unsigned)((x->qmax < 0 ? 3 : x->qmax - x->qmin) + 1));
	for (int r = 0; r < reps && !b->over; r++) {
		unsigned m = take(in);
		char c;

		switch (x->kind) {
		case A_LIT:
			c = (char)x->c;
			if ((m & 3) == 1 && isalpha((unsigned char)c))
				c = (char)(islower((unsigned char)c) ? toupper((unsigned char)c)
								     : tolower((unsigned char)c));
			else if ((m & 15) == 2) /* a near miss */
				c = (char)(take(in) | 1);
			put(b, &c, 1);
			break;
		case A_ANY:
			c = (char)(m == '\n' || m == 0 ? 'y' : m);
			put(b, &c, 1);
			break;
		case A_CLASS:
			if (!x->have_set) {
				class_set(x->cls, flags, x->set);
				x->have_set = 1;
			}
			c = pick(x->set, m);
			put(b, &c, 1);
			break;
		case A_WORD:
			put(b, m & 1 ? "w" : "_", 1);
			break;
		case A_SPACE:
			put(b, " ", 1);
			break;
		case A_GROUP: {
			int a = (int)(m % (unsigned)x->nalt);

			for (int s = x->alts[a]; s >= 0; s = g->n[s].next)
				sample(g, s, flags, in, b, depth + 1);
			break;
		}
		default: /* zero width */
			break;
		}
	}
}

/* ------------------------------------------------------------------ */
/* The check                                                          */

struct pat {
	char src[PAT_MAX];
	regex_t re;
	int ok;
	struct gen g;               /* mode 0: the tree it came from */
};

static struct pat pats[NPAT_MAX];

/* What the runs checked, said at exit: a target whose regexes never match
 * would pass without testing anything. */
static struct {
	unsigned long compiled, served, matched;
} seen;

static void say_seen(void)
{
	fprintf(stderr, "fuzz_prefilter: stats: %lu patterns compiled, %lu served by the "
		"prefilter, %lu lines matched by one of those (each a candidate)\n",
		seen.compiled, seen.served, seen.matched);
}

/*
 * The subset rules.json uses: no back-reference, no escaped letter other
 * than the GNU word and space operators. And what regcomp builds stays
 * small: repeat counts of rules' size, at most two intervals, no quantifier
 * on a quantifier ("a++++": regcomp copies the tree for each), and in a
 * quantified group no quantified group and no anchor (stars over what can
 * be empty can take it exponential time). A hang is not the finding we are
 * after.
 */
static int in_subset(const char *p)
{
	int intervals = 0, depth = 0, prevq = 0, inner[DEPTH_MAX * 4 + 1] = { 0 };

	for (; *p; p++) {
		int q = strchr("?*+{", *p) != NULL;

		if (q && prevq)
			return 0;
		prevq = q;
		if (*p == '[') { /* a bracket: skipped, ']' first is a member */
			p += p[1] == '^';
			p += p[1] == ']';
			while (p[1] != '\0' && p[1] != ']')
				p++;
		} else if (*p == '(') {
			if (++depth >= (int)(sizeof(inner) / sizeof(inner[0])))
				return 0;
			inner[depth] = 0;
		} else if (*p == ')' && depth > 0) {
			q = p[1] != '\0' && strchr("?*+{", p[1]) != NULL;
			if (q && inner[depth])
				return 0;
			depth--;
			inner[depth] |= inner[depth + 1] | q;
		} else if (*p == '^' || *p == '$') {
			inner[depth] |= 2;
		} else if (*p == '\\' && p[1] != '\0') {
			p++;
			if (isalnum((unsigned char)*p) && strchr("bBwWsS", *p) == NULL)
				return 0;
			if (strchr("bB<>`'", *p) != NULL)
				inner[depth] |= 2;
		} else if (*p == '{') {
			intervals++;
			for (; isdigit((unsigned char)p[1]) || p[1] == ','; p++)
				if (isdigit((unsigned char)p[1]) && strtol(p + 1, NULL, 10) > 64)
					return 0;
			p += p[1] == '}';
		}
	}
	return intervals <= 2;
}

static void miss(int npat, int flags, int i, const char *line, size_t len,
		 const struct tq_cands *c)
{
	fprintf(stderr, "fuzz_prefilter: a line where regexec matches is not a candidate\n");
	fprintf(stderr, "fuzz_prefilter: flags:%s%s\n", flags & REG_ICASE ? " REG_ICASE" : "",
		" REG_EXTENDED REG_NEWLINE");
	for (int k = 0; k < npat; k++)
		if (pats[k].ok)
			fprintf(stderr, "fuzz_prefilter: pattern %d%s: /%s/\n", k,
				k == i ? " (missed)" : "", pats[k].src);
	fprintf(stderr, "fuzz_prefilter: line (%zu bytes): \"", len);
	for (size_t k = 0; k < len; k++) {
		unsigned char u = (unsigned char)line[k];

		if (u >= 0x20 && u < 0x7f && u != '"' && u != '\\')
			fputc(u, stderr);
		else
			fprintf(stderr, "\\x%02x", u);
	}
	fprintf(stderr, "\"\n");
	fprintf(stderr, "fuzz_prefilter: %zu candidate lines for it\n", c->n);
	abort();
}

static void bad(const char *what)
{
	fprintf(stderr, "fuzz_prefilter: %s\n", what);
	abort();
}

/* Is ls one of c's candidates? (ascending: a binary search) */
static int has(const struct tq_cands *c, size_t ls)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid] == ls)
			return 1;
		if (c->v[mid] < ls)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static void check(int npat, int flags, const char *text, size_t len)
{
	const char *src[NPAT_MAX];
	unsigned char served[NPAT_MAX];
	struct tq_cands cand[NPAT_MAX];
	struct tq_prefilter pf;
	int idx[NPAT_MAX], m = 0;

	for (int k = 0; k < npat; k++)
		if (pats[k].ok) {
			idx[m] = k;
			src[m++] = pats[k].src;
		}
	if (m == 0)
		return;
	memset(cand, 0, sizeof(cand));
	if (tq_prefilter_build(&pf, src, (size_t)m, served) < 0)
		bad("tq_prefilter_build failed");
	tq_prefilter_scan(&pf, text, len, cand);
	seen.compiled += (unsigned long)m;
	for (int j = 0; j < m; j++)
		seen.served += served[j];
	for (int j = 0; j < m; j++) {
		const struct tq_cands *c = &cand[j];

		for (size_t k = 0; k < c->n; k++)
			if ((k > 0 && c->v[k] <= c->v[k - 1]) || c->v[k] > len ||
			    (c->v[k] > 0 && text[c->v[k] - 1] != '\n'))
				bad("a candidate is not a line start, or out of order");
		for (size_t ls = 0, le; served[j] && ls <= len; ls = le + 1) {
			const char *nl = memchr(text + ls, '\n', len - ls);
			regmatch_t rm[1];

			le = nl != NULL ? (size_t)(nl - text) : len;
			rm[0].rm_so = 0;
			rm[0].rm_eo = (regoff_t)(le - ls);
			if (regexec(&pats[idx[j]].re, text + ls, 1, rm, REG_STARTEND) != 0)
				continue;
			if (!has(c, ls))
				miss(npat, flags, idx[j], text + ls, le - ls, c);
			seen.matched++;
		}
	}
	for (int j = 0; j < m; j++)
		free(cand[j].v);
	tq_prefilter_release(&pf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setlocale(LC_ALL, "C");
	atexit(say_seen);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { .p = data, .n = size };
	unsigned h = take(&in);
	int flags = REG_EXTENDED | REG_NEWLINE | (h & 1 ? REG_ICASE : 0);
	int npat = 1 + (int)((h >> 2) & 3), raw = (h >> 1) & 1;
	static char text[TEXT_MAX + 1];
	struct buf t = { .p = text, .cap = sizeof(text) };

	text[0] = '\0';
	for (int k = 0; k < npat; k++) {
		struct pat *p = &pats[k];
		struct buf b = { .p = p->src, .cap = sizeof(p->src) };

		p->ok = 0;
		p->src[0] = '\0';
		if (raw) {
			const uint8_t *z = memchr(in.p + in.i, '\0', in.n - in.i);
			size_t n = z != NULL ? (size_t)(z - (in.p + in.i)) : in.n - in.i;

			put(&b, (const char *)in.p + in.i, n);
			in.i += n + (z != NULL);
		} else {
			p->g.nn = 0;
			p->g.top = gen_alts(&p->g, &in, 1, 0);
			if (p->g.top >= 0)
				render(&p->g, p->g.top, 1, &b);
		}
		if (b.over || p->src[0] == '\0' || (!raw && p->g.top < 0) ||
		    (raw && !in_subset(p->src)))
			continue;
		if (getenv("TASKQ_FUZZ_SHOW") != NULL)
			fprintf(stderr, "pattern %d: /%s/\n", k, p->src);
		p->ok = regcomp(&p->re, p->src, flags) == 0;
	}
	if (raw) {
		put(&t, (const char *)in.p + in.i, in.n - in.i);
	} else {
		/* lines: each a sample of a pattern, or raw input bytes */
		for (int l = 0; l < LINES_MAX && in.i < in.n && !t.over; l++) {
			unsigned b = take(&in), k = (b >> 1) % (unsigned)npat;
			char line[LINE_MAX + 1];
			struct buf lb = { .p = line, .cap = sizeof(line) };

			line[0] = '\0';
			if ((b & 1) && pats[k].ok) {
				unsigned pre = take(&in) % 4, post = take(&in) % 4;

				for (unsigned i = 0; i < pre; i++)
					put(&lb, (const char[]){ (char)(take(&in) | 1) }, 1);
				sample(&pats[k].g, pats[k].g.top, flags, &in, &lb, 0);
				for (unsigned i = 0; i < post; i++)
					put(&lb, (const char[]){ (char)(take(&in) | 1) }, 1);
			} else {
				size_t n = take(&in) % 64;

				for (size_t i = 0; i < n && in.i < in.n; i++)
					put(&lb, (const char[]){ (char)take(&in) }, 1);
			}
			for (size_t i = 0; i < lb.n; i++) /* one line */
				if (line[i] == '\n')
					line[i] = ' ';
			put(&t, line, lb.n);
			put(&t, "\n", 1);
		}
	}
	for (size_t i = 0; i < t.n; i++)
		if (text[i] == '\0')
			text[i] = ' ';
	check(npat, flags, text, t.n);
	for (int k = 0; k < npat; k++)
		if (pats[k].ok)
			regfree(&pats[k].re);
	return 0;
}

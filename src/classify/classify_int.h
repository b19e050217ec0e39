/*
 * classify_int.h - what the files of src/classify share and nothing else
 * sees: a loaded rule set (struct rule, struct tq_rules), the JSON paths,
 * selectors and tests its rules hold, the state of one classification
 * (struct view per stream, struct cls), and the functions each file lends
 * the others. The public contract is classify.h; the prefilter's is
 * prefilter.h.
 *
 *   rules.c      one file's "rules": each rule parsed and checked
 *   load.c       the built-in rules.json plus the user's config: merged,
 *                the prefilter built over them (tq_rules_load)
 *   prefilter.c  the literals every match of a pattern contains, and an
 *                Aho-Corasick automaton over them
 *   jpath.c      JSON paths ("error.code"), selectors ("where") and tests
 *   text.c       the explain trace; text made harmless to store and show
 *   view.c       one classification's streams: the tail, its JSON
 *                objects, the lines the text rules read, regexec on them
 *   resets.c     "resets 3pm (Area/City)": the next such time
 *   verdict.c    the stages, the retry hints, the verdict (tq_classify)
 *
 * Invariant: a loaded struct tq_rules is never modified; tq_classify only
 * reads it. Names local to one file stay static there.
 */
#ifndef TQ_CLASSIFY_INT_H
#define TQ_CLASSIFY_INT_H

#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "classify.h"
#include "prefilter.h"

#define PATH_SEG_MAX 16         /* segments of a JSON path */

enum kind { K_PATTERN, K_EXIT, K_JSON, K_TEXT_FROM, K_RETRY, K_IGNORE };
enum stage { ST_FINAL, ST_TEXT, ST_EXIT, ST_COUNT };
enum unit { U_S, U_MS, U_EPOCH, U_CLOCK };
enum op { OP_NONE, OP_EQUALS, OP_IN, OP_RANGE, OP_PATTERN, OP_EXISTS };

/* Stage names as rules.json spells them ("final", "text", "exit"). */
extern const char *const tq_stage_names[ST_COUNT];

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

struct tq_rules {
	struct rule **r;
	size_t n;
	struct rule **pat;         /* the rules with a compiled pattern */
	size_t npat;
	struct tq_prefilter pf;    /* over the literals of pat[] */
};

/* The explain trace: lines appended while room is left; the last
 * EXPLAIN_RESERVE bytes are kept for the verdict (tq_xp_last; text.c). */
struct xp {
	char *p;
	size_t n, len;
	int full;
};

/* The parsed "rules" of one file: rules, and ids to disable. */
struct ruleset {
	struct rule **r;
	size_t n;
	char **disable;
	size_t ndisable;
};

/* One classification (verdict.c, view.c): a JSON object of a stream, ... */
struct jobj {
	cJSON *o;
	size_t off, end;           /* its lines in the stream's text: [off, end) */
	int ignored;
};

/* ... a stream as the rules read it, ... */
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
	struct tq_cands *cand;     /* per rule in R->pat; after the scan */
	int scanned;
};

/* ... and the whole call. */
struct cls {
	const struct tq_rules *R;
	const struct tq_classify_input *in;
	struct view v[2];
	struct xp xp;
	int64_t now;
	size_t regex_bytes;        /* tq_classification.regex_bytes */
};

/* What follows "resets" (resets.c). */
struct clk {
	int wday, mon, mday;       /* -1: not given */
	int hour, min;             /* hour -1: no time given */
	int utc;
	char zone[64];
};

/* Free n strings and their vector. */
static inline void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* text.c */
/* Append a line to the explain trace while room is left, keeping the last
 * EXPLAIN_RESERVE bytes for the verdict, which tq_xp_last writes there. */
__attribute__((format(printf, 2, 3)))
void tq_xp_add(struct xp *x, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void tq_xp_last(struct xp *x, const char *fmt, ...);
/* Copy n bytes of s to dst so they are harmless to store and show. */
size_t tq_clean_copy(char *dst, size_t cap, const char *s, size_t n, int *cut);
/* dst := the line [ls, le) of s made harmless, around the match at ms. */
void tq_reason_line(char *dst, size_t cap, const char *s, size_t ls, size_t le,
		    size_t ms);
/* jpath.c */
int tq_jpath_init(struct jpath *p, const char *s, const char **why);
void tq_jpath_free(struct jpath *p);
const cJSON *tq_jpath_get(const cJSON *o, const struct jpath *p);
int tq_jnum_whole(double d);
int tq_jscalar(const cJSON *v);
void tq_jval_str(const cJSON *v, char *buf, size_t n);
int tq_sel_match(const struct sel *s, const cJSON *o);
ssize_t tq_sel_last(const struct sel *s, const struct view *v);
void tq_sel_desc(const struct sel *s, char *buf, size_t n);
void tq_sel_release(struct sel *s);
int tq_jtest_match(const struct jtest *t, const cJSON *v);
/* rules.c */
void tq_rule_free(struct rule *r);
/* The "rules" of one file (builtin: strict about its top-level keys). */
int tq_ruleset_parse(const char *file, const char *text, size_t n, int builtin,
		     struct ruleset *set, struct tq_err *err);
void tq_ruleset_release(struct ruleset *s);
/* view.c */
/* Does rule r apply to this task (program, agent)? */
int tq_rule_applies(const struct rule *r, const struct tq_classify_input *in);
void tq_view_load(struct cls *c, struct view *v, const char *s, size_t n);
void tq_view_release(struct view *v, size_t npat);
/* The last line of t where re matches (any text: a JSON field's too). */
int tq_last_line(const regex_t *re, const char *t, size_t len, size_t *ls,
		 size_t *le, regmatch_t *m, size_t nm, size_t *work);
/* The last line of view v where pattern rule p matches (prefiltered). */
int tq_view_match(struct cls *c, struct view *v, const struct rule *p, size_t *ls,
		  size_t *le, regmatch_t *m, size_t nm);
/* resets.c */
/* Parse what follows "resets"; 0, or -1 if it names no time or day. */
int tq_resets_parse(const char *s, struct clk *k);
/* The next time after now_ms that k names (ms since the epoch; 0: none). */
int64_t tq_resets_next(const struct clk *k, int64_t now_ms, char *note, size_t nn);
#endif

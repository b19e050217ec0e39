/*
 * rules.c - the "rules" of one file (the built-in rules.json, or a user's
 * config), each parsed and checked: the kind, its fields, the filters,
 * every regex compiled once here. load.c merges the files.
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
 * Invariants: a rule that parsed is whole (every field its kind needs is
 * set, every regex compiled); anything wrong is TQ_EINVAL with one message
 * naming the file, the rule (id, else position) and what is wrong; an
 * unknown key is an error, except comments ("_..."); on failure nothing
 * is leaked and nothing is half-returned.
 */
#include "classify_int.h"

#include <math.h> /* macros only (HUGE_VAL): no libm */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/parse.h"

#define RULES_MAX 4096          /* rules in one file */
#define RULE_ID_MAX 63          /* bytes of a rule id: "A+B" fits rule[128] */

const char *const tq_stage_names[ST_COUNT] = { "final", "text", "exit" };

void tq_rule_free(struct rule *r)
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
	tq_sel_release(&r->sel);
	tq_jpath_free(&r->test.path);
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
	if ((rc = tq_jpath_init(p, v->valuestring, &why)) == TQ_ENOMEM)
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
	if (!tq_jscalar(value))
		return bad(o, "%s: where \"%s\": the value must be a string, number, "
			   "true, false or null", what, path);
	if ((w[s->nwhere].value = cJSON_Duplicate(value, 1)) == NULL)
		return oom(o);
	s->nwhere++;
	if ((rc = tq_jpath_init(&w[s->nwhere - 1].path, path, &(const char *){ NULL })) ==
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
		if (!tq_jscalar(eq))
			return bad(o, "%s: \"equals\" must be a string, number, true, false "
				   "or null", what);
		t->op = OP_EQUALS;
		return (t->value = cJSON_Duplicate(eq, 1)) != NULL ? 0 : oom(o);
	}
	if (in != NULL) {
		if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) == 0)
			return bad(o, "%s: \"in\" must be a non-empty list", what);
		cJSON_ArrayForEach(it, in)
			if (!tq_jscalar(it))
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
	if (!cJSON_IsNumber(v) || !tq_jnum_whole(v->valuedouble) || v->valuedouble < 0 ||
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
			    grp->valuedouble > 9 || !tq_jnum_whole(grp->valuedouble)))
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
			if (strcmp(st->valuestring, tq_stage_names[i]) == 0)
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
		tq_rule_free(r);
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
		tq_rule_free(r);
		return rc;
	}
	*rp = r;
	return 0;
}

void tq_ruleset_release(struct ruleset *s)
{
	for (size_t i = 0; i < s->n; i++)
		tq_rule_free(s->r[i]);
	free(s->r);
	strv_free(s->disable, s->ndisable);
	memset(s, 0, sizeof(*s));
}

/*
 * Read the "rules" of one file (its text is n bytes). The built-in file is
 * strict about its top-level keys; a user's config may hold other settings
 * beside "rules", which are not this module's business.
 */
int tq_ruleset_parse(const char *file, const char *text, size_t n, int builtin,
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
		tq_ruleset_release(set);
	return rc;
}

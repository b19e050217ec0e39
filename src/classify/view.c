/*
 * view.c - what one classification reads of each stream: the last
 * TQ_CLASSIFY_TAIL bytes from a line start (NUL bytes as spaces), the JSON
 * objects in it (NDJSON lines and pretty-printed objects, parsed once a
 * call), the lines the text rules read (without the objects an ignore rule
 * selects: the model's own words, tool output), and regexec over those
 * lines: on the prefilter's candidate lines of the pattern, from the last
 * one back; a pattern with no usable literal gets one whole-tail regexec
 * first (the explain trace says so). The bytes handed to regexec are
 * counted (tq_classification.regex_bytes).
 *
 * Invariants: the text a view holds is terminated and holds no NUL before
 * its end; a regexec gets one line (or, to decide whether to look at all,
 * the whole text), never more; matches are reported as offsets into the
 * view's text. Out of memory only loses evidence (a stream not examined,
 * said in the trace; an object or a candidate line dropped).
 */
#include "classify_int.h"

#include <ctype.h>
#include <string.h>

#define CAND_BULK 64            /* candidate lines above which one whole-tail
				 * regexec decides first whether to look */
#define MULTILINE_TRIES 8       /* pretty-printed objects tried per stream */

void tq_view_release(struct view *v, size_t npat)
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
int tq_rule_applies(const struct rule *r, const struct tq_classify_input *in)
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

			if (x->kind == K_IGNORE && (x->streams & v->bit) &&
			    tq_rule_applies(x, c->in) && tq_sel_match(&x->sel, v->obj[i].o)) {
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
void tq_view_load(struct cls *c, struct view *v, const char *s, size_t n)
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
		tq_xp_add(&c->xp, "%s: out of memory: not examined", v->name);
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
	tq_xp_add(&c->xp, "%s: %zu bytes, %zu lines, %zu JSON objects (%zu of them the "
		  "model's words or tool output, skipped by text rules)", v->name, v->bytes,
		  v->lines, v->nobj, v->nignored);
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
int tq_last_line(const regex_t *re, const char *t, size_t len, size_t *ls,
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
int tq_view_match(struct cls *c, struct view *v, const struct rule *p, size_t *ls,
		  size_t *le, regmatch_t *m, size_t nm)
{
	const struct tq_cands *k;

	if (v->text == NULL || v->len == 0)
		return 0;
	if (!p->prefilter)
		return re_range(&p->re, v->text, 0, v->len, NULL, 0, &c->regex_bytes) &&
		       tq_last_line(&p->re, v->text, v->len, ls, le, m, nm, &c->regex_bytes);
	if (!v->scanned) {
		v->scanned = 1;
		if ((v->cand = calloc(c->R->npat + 1, sizeof(*v->cand))) == NULL) {
			tq_xp_add(&c->xp, "%s: out of memory: text rules not run", v->name);
			return 0;
		}
		tq_prefilter_scan(&c->R->pf, v->text, v->len, v->cand);
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

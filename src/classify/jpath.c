/*
 * jpath.c - the JSON side of the rules: dotted paths ("error.code",
 * "content.0.text") split at load and looked up in a parsed object,
 * selectors ("type" and "where": which object of a stream a rule reads)
 * and tests on a field (equals, in, min/max, pattern, exists), and JSON
 * values shown as text for the trace and reasons.
 *
 * Invariants: two values are equal only with the same JSON type (429 is
 * not "429"); a path never reads past PATH_SEG_MAX segments; nothing here
 * modifies the objects it reads.
 */
#include "classify_int.h"

#include <stdio.h>
#include <string.h>

#define PATH_TEXT_MAX 255       /* bytes of a JSON path */

void tq_jpath_free(struct jpath *p)
{
	free(p->text);
	for (size_t i = 0; i < p->n; i++)
		free(p->seg[i]);
	memset(p, 0, sizeof(*p));
}

/* Split "a.b.0" into segments. 0, TQ_EINVAL (*why set) or TQ_ENOMEM. */
int tq_jpath_init(struct jpath *p, const char *s, const char **why)
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

/* Static, with tq_jpath_get its exported twin, so that calls in this file
 * inline it: the library is built -fPIC, where an exported function may be
 * interposed and is not inlined (tq_sel_last runs it for every object). */
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

const cJSON *tq_jpath_get(const cJSON *o, const struct jpath *p)
{
	return jpath_get(o, p);
}

/* A whole number of safe size (no libm: the library links without it). */
int tq_jnum_whole(double d)
{
	return d >= -1e15 && d <= 1e15 && d == (double)(long long)d;
}

int tq_jscalar(const cJSON *v)
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
void tq_jval_str(const cJSON *v, char *buf, size_t n)
{
	if (v == NULL)
		snprintf(buf, n, "(absent)");
	else if (cJSON_IsString(v))
		tq_clean_copy(buf, n, v->valuestring, strlen(v->valuestring), NULL);
	else if (cJSON_IsNumber(v) && tq_jnum_whole(v->valuedouble))
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

int tq_sel_match(const struct sel *s, const cJSON *o)
{
	return sel_match(s, o);
}

/* The index of the last object of view v that s selects, or -1. Here,
 * beside sel_match, so that the loop over every object of a stream (for
 * each json, text_from and retry rule) inlines it. */
ssize_t tq_sel_last(const struct sel *s, const struct view *v)
{
	for (size_t i = v->nobj; i-- > 0;)
		if (sel_match(s, v->obj[i].o))
			return (ssize_t)i;
	return -1;
}

/* "type=result, status=error" (or "any") for the trace. */
void tq_sel_desc(const struct sel *s, char *buf, size_t n)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->nwhere && o + 1 < n; i++) {
		char v[64];
		int k;

		tq_jval_str(s->where[i].value, v, sizeof(v));
		k = snprintf(buf + o, n - o, "%s%s=%s", i ? ", " : "", s->where[i].path.text, v);
		if (k < 0)
			break;
		o += (size_t)k;
	}
	if (s->nwhere == 0)
		snprintf(buf, n, "any");
}

int tq_jtest_match(const struct jtest *t, const cJSON *v)
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

void tq_sel_release(struct sel *s)
{
	for (size_t i = 0; i < s->nwhere; i++) {
		tq_jpath_free(&s->where[i].path);
		cJSON_Delete(s->where[i].value);
	}
	free(s->where);
	memset(s, 0, sizeof(*s));
}

/*
 * scrub.c - the list of agent marker variables (scrub.h): agent-env.json
 * compiled in, the user's "scrub_env" over it, and the match.
 *
 * The built-in entries are a C table made from agent-env.json at build
 * time (tools/scrub_table.py, which checks them as merge() checks a
 * user's): every submit scrubs its environment, and parsing the JSON was a
 * fifth of its instructions. Only a user's config is parsed here.
 *
 * Invariant: a loaded list owns the strings of its user entries (owned
 * set) and points into the table for the built-in ones; entries are in
 * file order, the user's additions after the built-ins. The match is by
 * exact name or by prefix, case-sensitive as variable names are.
 */
#include "scrub.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>
#include <cjson/cJSON.h>

#include "common/config.h"

#define ID_MAX 63

/* One entry of the built-in table (agent_env_table.h). */
struct tq_scrub_builtin {
	const char *id;
	const char *const *names;
	size_t nnames;
	const char *const *prefixes;
	size_t nprefixes;
	const char *when;
};

#include "agent_env_table.h"

struct entry {
	const char *id;
	const char *const *names;
	size_t nnames;
	const char *const *prefixes;
	size_t nprefixes;
	const char *when;  /* marker variable, or NULL: always */
	int owned;         /* a user's: its strings and arrays are ours to free */
};

struct tq_scrub {
	struct entry *e;
	size_t n;
};

static void strv_free(const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((void *)v[i]);
	free((void *)v);
}

static void entry_release(struct entry *e)
{
	if (e->owned) {
		free((void *)e->id);
		strv_free(e->names, e->nnames);
		strv_free(e->prefixes, e->nprefixes);
		free((void *)e->when);
	}
	*e = (struct entry){ 0 };
}

void tq_scrub_free(struct tq_scrub *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		entry_release(&s->e[i]);
	free(s->e);
	free(s);
}

/* A variable name as execve and shells see one: no '=', no NUL, not empty,
 * at most NAME_MAX bytes. */
static int valid_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= NAME_MAX && strchr(s, '=') == NULL;
}

static int bad(struct tq_err *err, const char *file, const char *id, const char *what)
{
	return tq_err_set(err, TQ_EINVAL, "%s: scrub entry \"%s\": %s", file,
			  id != NULL ? id : "?", what);
}

/* A JSON array of names into *out, *n (the entry's, owned). */
static int names_of(const cJSON *a, const char *const **out, size_t *n, const char *file,
		    const char *id, const char *key, struct tq_err *err)
{
	const cJSON *it;
	size_t cnt = 0;
	char **v;

	*out = NULL;
	*n = 0;
	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a))
		return bad(err, file, id, key[0] == 'n' ? "names: expected an array of strings"
							: "prefixes: expected an array of strings");
	if ((v = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*v))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
	*out = (const char *const *)v;
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it) || !valid_name(it->valuestring))
			return bad(err, file, id, "a name is not a variable name");
		if ((v[cnt] = strdup(it->valuestring)) == NULL)
			return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
		*n = ++cnt;
	}
	return 0;
}

/* One entry object into *e (released by the caller on any return). */
static int parse_entry(const cJSON *o, struct entry *e, int *disabled, const char *file,
		       struct tq_err *err)
{
	static const char *const keys[] = { "id", "names", "prefixes", "when", "disabled", NULL };
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id"), *k;
	const cJSON *when = cJSON_GetObjectItemCaseSensitive(o, "when");
	int rc;

	*disabled = 0;
	if (!cJSON_IsObject(o))
		return bad(err, file, NULL, "expected an object");
	if (!cJSON_IsString(id) || id->valuestring[0] == '\0' || strlen(id->valuestring) > ID_MAX)
		return bad(err, file, NULL, "\"id\" must be a string of 1-63 bytes");
	cJSON_ArrayForEach(k, o) {
		size_t i;

		if (k->string[0] == '_')
			continue; /* comments */
		for (i = 0; keys[i] != NULL && strcmp(keys[i], k->string) != 0; i++)
			;
		if (keys[i] == NULL)
			return bad(err, file, id->valuestring, "unknown key");
	}
	e->owned = 1;
	if ((e->id = strdup(id->valuestring)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "disabled"))) {
		*disabled = 1;
		return 0;
	}
	if ((rc = names_of(cJSON_GetObjectItemCaseSensitive(o, "names"), &e->names, &e->nnames,
			   file, e->id, "names", err)) < 0 ||
	    (rc = names_of(cJSON_GetObjectItemCaseSensitive(o, "prefixes"), &e->prefixes,
			   &e->nprefixes, file, e->id, "prefixes", err)) < 0)
		return rc;
	if (e->nnames == 0 && e->nprefixes == 0)
		return bad(err, file, e->id, "no names and no prefixes");
	if (when != NULL) {
		if (!cJSON_IsString(when) || !valid_name(when->valuestring))
			return bad(err, file, e->id, "\"when\" must be a variable name");
		if ((e->when = strdup(when->valuestring)) == NULL)
			return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
	}
	return 0;
}

static ssize_t find(const struct tq_scrub *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->e[i].id, id) == 0)
			return (ssize_t)i;
	return -1;
}

/* Merge the entries of a user's array a (from file) into s. */
static int merge(struct tq_scrub *s, const cJSON *a, const char *file, struct tq_err *err)
{
	const cJSON *o;

	if (!cJSON_IsArray(a))
		return tq_err_set(err, TQ_EINVAL, "%s: \"scrub_env\" must be an array of entries",
				  file);
	cJSON_ArrayForEach(o, a) {
		struct entry e = { 0 };
		int disabled, rc = parse_entry(o, &e, &disabled, file, err);
		ssize_t at;

		if (rc < 0) {
			entry_release(&e);
			return rc;
		}
		at = find(s, e.id);
		if (disabled) {
			if (at < 0) {
				rc = bad(err, file, e.id, "disables an id no built-in entry has");
				entry_release(&e);
				return rc;
			}
			entry_release(&s->e[at]);
			memmove(&s->e[at], &s->e[at + 1], (s->n - (size_t)at - 1) * sizeof(*s->e));
			s->n--;
			entry_release(&e);
			continue;
		}
		if (at >= 0) {
			entry_release(&s->e[at]);
			s->e[at] = e;
			continue;
		}
		{
			struct entry *ne = reallocarray(s->e, s->n + 1, sizeof(*s->e));

			if (ne == NULL) {
				entry_release(&e);
				return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
			}
			s->e = ne;
			s->e[s->n++] = e;
		}
	}
	return 0;
}

/* Parse a user's config text (n bytes) of file and merge its "scrub_env". */
static int load_text(struct tq_scrub *s, const char *file, const char *text, size_t n,
		     struct tq_err *err)
{
	cJSON *doc = NULL;
	const cJSON *a;
	int rc;

	if ((rc = tq_config_parse(file, text, n, &doc, err)) < 0)
		return rc;
	a = cJSON_GetObjectItemCaseSensitive(doc, "scrub_env");
	rc = a == NULL ? 0 : merge(s, a, file, err);
	cJSON_Delete(doc);
	return rc;
}

/* The built-in entries, pointing into the table. */
static int load_builtin(struct tq_scrub *s, struct tq_err *err)
{
	size_t n = sizeof(tq_agent_env) / sizeof(tq_agent_env[0]);

	if ((s->e = calloc(n, sizeof(*s->e))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct tq_scrub_builtin *b = &tq_agent_env[i];

		s->e[i] = (struct entry){ b->id, b->names, b->nnames, b->prefixes,
					  b->nprefixes, b->when, 0 };
	}
	s->n = n;
	return 0;
}

int tq_scrub_load(struct tq_scrub **out, const char *path, struct tq_err *err)
{
	struct tq_scrub *s = calloc(1, sizeof(*s));
	char file[PATH_MAX], *text = NULL;
	size_t len = 0;
	int rc, must_exist = 1;

	*out = NULL;
	if (s == NULL)
		return tq_err_set(err, TQ_ENOMEM, "scrub list: out of memory");
	rc = load_builtin(s, err);
	if (rc == 0 && path == NULL) {
		if ((rc = tq_config_path(file, sizeof(file), &must_exist, err)) >= 0) {
			path = rc == 0 ? file : "";
			rc = 0;
		}
	}
	if (rc == 0 && *path != '\0')
		rc = tq_config_read(path, must_exist, TQ_SCRUB_CONFIG_MAX, &text, &len, err);
	if (rc == 0 && text != NULL)
		rc = load_text(s, path, text, len, err);
	free(text);
	if (rc < 0) {
		tq_scrub_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static struct tq_scrub *default_list;
static int default_loaded;
static char default_error[TQ_ERR_MAX];

const struct tq_scrub *tq_scrub_default(void)
{
	struct tq_err err = TQ_ERR_INIT;

	if (default_loaded)
		return default_list;
	if (tq_scrub_load(&default_list, NULL, &err) < 0) {
		snprintf(default_error, sizeof(default_error), "%s", err.msg);
		if (tq_scrub_load(&default_list, "", NULL) < 0)
			default_list = NULL;
	}
	default_loaded = 1;
	return default_list;
}

const char *tq_scrub_default_error(void)
{
	tq_scrub_default();
	return default_error[0] ? default_error : NULL;
}

/* Does src hold a variable named name? */
static int present(char *const *src, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; src != NULL && src[i] != NULL; i++)
		if (strncmp(src[i], name, n) == 0 && src[i][n] == '=')
			return 1;
	return 0;
}

/* Does the name of length n equal one item of the comma-separated list? */
static int in_list(const char *name, size_t n, const char *list)
{
	const char *p = list;

	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		const char *s = p;

		while (len > 0 && (*s == ' ' || *s == '\t'))
			s++, len--;
		while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		if (len == n && len > 0 && memcmp(s, name, n) == 0)
			return 1;
		p = end != NULL ? end + 1 : NULL;
	}
	return 0;
}

/* Whether the name of n bytes (no NUL in them) is s. Stops at the first
 * byte that differs, most often the first: no strlen of every name of the
 * list for every variable of an environment. */
static int same_name(const char *name, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != name[i])
			return 0; /* also where s ends first */
	return s[n] == '\0';
}

/* Whether prefix p begins the name of n bytes. */
static int has_prefix(const char *name, size_t n, const char *p)
{
	for (size_t i = 0; p[i] != '\0'; i++)
		if (i >= n || p[i] != name[i])
			return 0;
	return 1;
}

int tq_scrub_match(const struct tq_scrub *s, const char *name, size_t n, char *const *src,
		   const char *extra)
{
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		const struct entry *e = &s->e[i];
		int hit = 0;

		for (size_t k = 0; !hit && k < e->nnames; k++)
			hit = same_name(name, n, e->names[k]);
		for (size_t k = 0; !hit && k < e->nprefixes; k++)
			hit = has_prefix(name, n, e->prefixes[k]);
		if (hit && (e->when == NULL || present(src, e->when)))
			return 1;
	}
	return extra != NULL && in_list(name, n, extra);
}

int tq_scrub_has(const char *name, const char *extra)
{
	return tq_scrub_match(tq_scrub_default(), name, strlen(name), NULL, extra);
}

struct env_drop {
	const struct tq_scrub *scrub;
	const char *extra;
};

static int env_drop(const char *name, size_t n, char *const *src, void *arg)
{
	const struct env_drop *d = arg;

	return tq_scrub_match(d->scrub, name, n, src, d->extra);
}

int tq_scrub_env(struct tq_env *e, char *const *src, const char *extra,
		 struct tq_err *err)
{
	struct env_drop d = { tq_scrub_default(), extra };

	return tq_env_copy(e, src, env_drop, &d, err);
}

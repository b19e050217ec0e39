/*
 * profile.c - agent profiles (profile.h): the built-in set (profiles.json,
 * compiled in as tq_profiles_json) and the user's config over it, loaded
 * and checked (their command templates: template.c).
 *
 * Loading is strict: an unknown field, a wrong type, an unknown parser or
 * placeholder, a profile that extends one that does not exist, is an error
 * naming the file and the profile, so a typo in a config shows at `taskq
 * ask` instead of as a task that runs something else. The config's other
 * top-level keys ("rules", ...) belong to other modules and are not looked
 * at.
 *
 * Invariant: a loaded struct tq_profiles is never modified afterwards; every
 * profile in it has a non-empty command whose program is literal, a known
 * parser, and templates whose placeholders are all known.
 */
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>
#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/parse.h"
#include "common/sys.h"
#include "profiles_json.h"
#include "agent_int.h"
#include "registry.h"

#define BUILTIN_FILE "profiles.json (built in)"
#define DEFAULT_AGENT "claude"

struct tq_profiles {
	struct tq_profile *v;
	size_t n, cap;
	char *default_name;
};

/* A profile's parser: an agent of the registry, or this: none. */
#define PARSER_NONE "none"

/* ------------------------------------------------------------------ */
/* String arrays                                                      */

/* A NULL-terminated copy of v[0..n). NULL when out of memory. */
static char **strv_dup(char *const *v, size_t n)
{
	char **o = calloc(n + 1, sizeof(*o));

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if ((o[i] = strdup(v[i])) == NULL) {
			tq_profile_argv_free(o);
			return NULL;
		}
	}
	return o;
}

/* ------------------------------------------------------------------ */
/* Profiles                                                           */

static void profile_release(struct tq_profile *p)
{
	free(p->name);
	tq_profile_argv_free(p->argv);
	tq_profile_argv_free(p->interactive);
	free(p->parser);
	tq_profile_argv_free(p->env_set);
	tq_profile_argv_free(p->env_unset);
	free(p->model);
	free(p->stdin_prompt);
	memset(p, 0, sizeof(*p));
}

static char *dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

/* A deep copy of src named name. 0 or TQ_ENOMEM (dst zeroed). */
static int profile_copy(struct tq_profile *dst, const struct tq_profile *src, const char *name)
{
	memset(dst, 0, sizeof(*dst));
	dst->name = strdup(name);
	dst->argv = src->argv ? strv_dup(src->argv, src->argc) : NULL;
	dst->argc = src->argc;
	dst->interactive = src->interactive ? strv_dup(src->interactive, src->ninteractive) : NULL;
	dst->ninteractive = src->ninteractive;
	dst->parser = dup_or_null(src->parser);
	dst->env_set = strv_dup(src->env_set, src->nenv_set);
	dst->nenv_set = src->nenv_set;
	dst->env_unset = strv_dup(src->env_unset, src->nenv_unset);
	dst->nenv_unset = src->nenv_unset;
	dst->model = dup_or_null(src->model);
	dst->isolate = src->isolate;
	dst->timeout_ms = src->timeout_ms;
	dst->stall_timeout_ms = src->stall_timeout_ms;
	dst->warm = src->warm;
	dst->idle_timeout_ms = src->idle_timeout_ms;
	dst->stdin_prompt = dup_or_null(src->stdin_prompt);
	if (dst->name == NULL || (src->argv && dst->argv == NULL) ||
	    (src->interactive && dst->interactive == NULL) ||
	    (src->parser && dst->parser == NULL) || dst->env_set == NULL ||
	    dst->env_unset == NULL || (src->model && dst->model == NULL) ||
	    (src->stdin_prompt && dst->stdin_prompt == NULL)) {
		profile_release(dst);
		return TQ_ENOMEM;
	}
	return 0;
}

/* An empty profile called name (env lists allocated, empty). */
static int profile_new(struct tq_profile *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->name = strdup(name);
	p->env_set = calloc(1, sizeof(char *));
	p->env_unset = calloc(1, sizeof(char *));
	if (p->name == NULL || p->env_set == NULL || p->env_unset == NULL) {
		profile_release(p);
		return TQ_ENOMEM;
	}
	return 0;
}

static ssize_t find_index(const struct tq_profiles *ps, const char *name)
{
	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(ps->v[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/* Add p (taken) at the end. */
static int profiles_add(struct tq_profiles *ps, struct tq_profile *p)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 8;
		struct tq_profile *v = reallocarray(ps->v, cap, sizeof(*v));

		if (v == NULL)
			return TQ_ENOMEM;
		ps->v = v;
		ps->cap = cap;
	}
	ps->v[ps->n++] = *p;
	memset(p, 0, sizeof(*p));
	return 0;
}

void tq_profiles_free(struct tq_profiles *ps)
{
	if (ps == NULL)
		return;
	for (size_t i = 0; i < ps->n; i++)
		profile_release(&ps->v[i]);
	free(ps->v);
	free(ps->default_name);
	free(ps);
}

const struct tq_profile *tq_profiles_find(const struct tq_profiles *ps, const char *name)
{
	ssize_t i;

	if (ps == NULL)
		return NULL;
	if (name == NULL)
		name = ps->default_name != NULL ? ps->default_name : DEFAULT_AGENT;
	i = find_index(ps, name);
	return i < 0 ? NULL : &ps->v[i];
}

void tq_profiles_names(const struct tq_profiles *ps, char *buf, size_t n)
{
	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; ps != NULL && i < ps->n; i++) {
		if (i > 0)
			strlcat(buf, ", ", n);
		strlcat(buf, ps->v[i].name, n);
	}
}

/* ------------------------------------------------------------------ */
/* Reading one profile's fields                                       */

/* What names the object being read, for messages. */
struct where {
	const char *file;
	const char *profile;
	struct tq_err *err;
};

static int bad(const struct where *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(const struct where *w, const char *fmt, ...)
{
	char what[TQ_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tq_err_set(w->err, TQ_EINVAL, "%s: profile \"%s\": %s", w->file, w->profile,
			  what);
}

static int oom(const struct where *w)
{
	return tq_err_set(w->err, TQ_ENOMEM, "%s: out of memory", w->file);
}

/* A non-empty array of strings, copied into *v / *n (replacing them). */
static int take_argv(const struct where *w, const char *key, const cJSON *j, char ***v,
		     size_t *n)
{
	char **o;
	size_t k = 0;
	const cJSON *it;
	int rc;

	if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) == 0)
		return bad(w, "\"%s\" must be a non-empty list of strings", key);
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return oom(w);
	cJSON_ArrayForEach(it, j) {
		if (!cJSON_IsString(it)) {
			tq_profile_argv_free(o);
			return bad(w, "\"%s\" must be a non-empty list of strings", key);
		}
		if (tq_profile_argv_push(&o, &k, strdup(it->valuestring)) < 0) {
			tq_profile_argv_free(o);
			return oom(w);
		}
	}
	if (o[0][0] == '\0' || strchr(o[0], '{') != NULL) {
		rc = bad(w, "\"%s\": the program (first element) must be a plain name, "
			 "not \"%s\"", key, o[0]);
		tq_profile_argv_free(o);
		return rc;
	}
	if ((rc = tq_profile_check(o, k, w->err)) < 0) {
		char msg[TQ_ERR_MAX];

		snprintf(msg, sizeof(msg), "%s", w->err->msg);
		tq_profile_argv_free(o);
		return bad(w, "\"%s\": %s", key, msg);
	}
	tq_profile_argv_free(*v);
	*v = o;
	*n = k;
	return 0;
}

/* A string or null into *dst (replacing it). */
static int take_str(const struct where *w, const char *key, const cJSON *j, char **dst)
{
	char *s = NULL;

	if (!cJSON_IsNull(j) && !cJSON_IsString(j))
		return bad(w, "\"%s\" must be a string or null", key);
	if (cJSON_IsString(j) && (s = strdup(j->valuestring)) == NULL)
		return oom(w);
	free(*dst);
	*dst = s;
	return 0;
}

static int valid_var(const char *s)
{
	return *s != '\0' && strchr(s, '=') == NULL;
}

/* "env": {"K": "V" | null}: set or drop each variable in p->env_set. */
static int take_env(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	const cJSON *it;

	if (!cJSON_IsObject(j))
		return bad(w, "\"env\" must be an object of \"NAME\": \"value\"");
	cJSON_ArrayForEach(it, j) {
		size_t len = strlen(it->string), k = 0;
		char *kv;

		if (!valid_var(it->string))
			return bad(w, "\"env\": \"%s\" is not a variable name", it->string);
		if (!cJSON_IsString(it) && !cJSON_IsNull(it))
			return bad(w, "\"env\": \"%s\" must be a string, or null to drop it",
				   it->string);
		/* drop the variable's current setting */
		for (size_t i = 0; i < p->nenv_set; i++) {
			if (strncmp(p->env_set[i], it->string, len) == 0 &&
			    p->env_set[i][len] == '=')
				free(p->env_set[i]);
			else
				p->env_set[k++] = p->env_set[i];
		}
		p->nenv_set = k;
		p->env_set[k] = NULL;
		if (cJSON_IsNull(it))
			continue;
		if (asprintf(&kv, "%s=%s", it->string, it->valuestring) < 0)
			return oom(w);
		if (tq_profile_argv_push(&p->env_set, &p->nenv_set, kv) < 0)
			return oom(w);
	}
	return 0;
}

/* "unset_env": ["NAME", ...], replacing the list. */
static int take_unset(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	char **o;
	size_t k = 0;
	const cJSON *it;

	if (!cJSON_IsArray(j))
		return bad(w, "\"unset_env\" must be a list of variable names");
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return oom(w);
	cJSON_ArrayForEach(it, j) {
		if (!cJSON_IsString(it) || !valid_var(it->valuestring)) {
			tq_profile_argv_free(o);
			return bad(w, "\"unset_env\" must be a list of variable names");
		}
		if (tq_profile_argv_push(&o, &k, strdup(it->valuestring)) < 0) {
			tq_profile_argv_free(o);
			return oom(w);
		}
	}
	tq_profile_argv_free(p->env_unset);
	p->env_unset = o;
	p->nenv_unset = k;
	return 0;
}

static int take_parser(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	char names[256];

	if (cJSON_IsString(j) && (tq_registry_find(j->valuestring) != NULL ||
				  strcmp(j->valuestring, PARSER_NONE) == 0))
		return take_str(w, "parser", j, &p->parser);
	tq_registry_names(names, sizeof(names));
	return bad(w, "\"parser\" must be one of %s, " PARSER_NONE "%s%s", names,
		   cJSON_IsString(j) ? ", not " : "",
		   cJSON_IsString(j) ? j->valuestring : "");
}

static int take_timeout(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	struct tq_err e = TQ_ERR_INIT;
	int64_t ms;

	if (cJSON_IsNull(j)) {
		p->timeout_ms = 0;
		return 0;
	}
	if (!cJSON_IsString(j))
		return bad(w, "\"timeout\" must be a duration such as \"1h\", or null");
	if (tq_parse_duration(j->valuestring, &ms, &e) < 0)
		return bad(w, "\"timeout\" %s", e.msg);
	p->timeout_ms = ms;
	return 0;
}

/* "stall_timeout": a duration; "0" or null: off. */
static int take_stall_timeout(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	struct tq_err e = TQ_ERR_INIT;
	int64_t ms;

	if (cJSON_IsNull(j)) {
		p->stall_timeout_ms = 0;
		return 0;
	}
	if (!cJSON_IsString(j))
		return bad(w, "\"stall_timeout\" must be a duration such as \"5m\", \"0\" or null");
	if (tq_parse_duration(j->valuestring, &ms, &e) < 0)
		return bad(w, "\"stall_timeout\" %s", e.msg);
	p->stall_timeout_ms = ms;
	return 0;
}

/* "idle_timeout": a duration above 0, or null: taskq's default. */
static int take_idle_timeout(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	struct tq_err e = TQ_ERR_INIT;
	int64_t ms;

	if (cJSON_IsNull(j)) {
		p->idle_timeout_ms = 0;
		return 0;
	}
	if (!cJSON_IsString(j))
		return bad(w, "\"idle_timeout\" must be a duration such as \"10m\" or null");
	if (tq_parse_duration(j->valuestring, &ms, &e) < 0)
		return bad(w, "\"idle_timeout\" %s", e.msg);
	if (ms <= 0)
		return bad(w, "\"idle_timeout\" must be more than 0");
	p->idle_timeout_ms = ms;
	return 0;
}

/* Apply the fields of object j to p. */
static int apply_fields(const struct where *w, const cJSON *j, struct tq_profile *p)
{
	const cJSON *it;
	int rc = 0;

	cJSON_ArrayForEach(it, j) {
		const char *k = it->string;

		if (strcmp(k, "_doc") == 0 || strcmp(k, "doc") == 0 || strcmp(k, "extends") == 0)
			continue;
		if (strcmp(k, "command") == 0)
			rc = take_argv(w, k, it, &p->argv, &p->argc);
		else if (strcmp(k, "interactive") == 0 && cJSON_IsNull(it)) {
			tq_profile_argv_free(p->interactive);
			p->interactive = NULL;
			p->ninteractive = 0;
		} else if (strcmp(k, "interactive") == 0)
			rc = take_argv(w, k, it, &p->interactive, &p->ninteractive);
		else if (strcmp(k, "parser") == 0)
			rc = take_parser(w, it, p);
		else if (strcmp(k, "env") == 0)
			rc = take_env(w, it, p);
		else if (strcmp(k, "unset_env") == 0)
			rc = take_unset(w, it, p);
		else if (strcmp(k, "model") == 0)
			rc = take_str(w, k, it, &p->model);
		else if (strcmp(k, "stdin_prompt") == 0)
			rc = take_str(w, k, it, &p->stdin_prompt);
		else if (strcmp(k, "timeout") == 0)
			rc = take_timeout(w, it, p);
		else if (strcmp(k, "stall_timeout") == 0)
			rc = take_stall_timeout(w, it, p);
		else if (strcmp(k, "idle_timeout") == 0)
			rc = take_idle_timeout(w, it, p);
		else if (strcmp(k, "isolate") == 0) {
			if (!cJSON_IsBool(it))
				return bad(w, "\"isolate\" must be true or false");
			p->isolate = cJSON_IsTrue(it);
		} else if (strcmp(k, "warm") == 0) {
			if (!cJSON_IsBool(it))
				return bad(w, "\"warm\" must be true or false");
			p->warm = cJSON_IsTrue(it);
		} else
			rc = bad(w, "unknown field \"%s\" (known: command, interactive, parser, "
				 "env, unset_env, model, isolate, timeout, stall_timeout, "
				 "warm, idle_timeout, stdin_prompt, extends)",
				 k);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= TQ_PROFILE_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

/* One entry of a "profiles" object: j is an object, or null (remove). */
static int take_profile(struct tq_profiles *ps, const char *file, const cJSON *j,
			struct tq_err *err)
{
	struct where w = { .file = file, .profile = j->string, .err = err };
	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(j, "extends");
	ssize_t at = find_index(ps, j->string);
	struct tq_profile np;
	int rc;

	if (!valid_name(j->string))
		return bad(&w, "a name is 1 to %d letters, digits, '-', '_' or '.'",
			   TQ_PROFILE_NAME_MAX - 1);
	if (cJSON_IsNull(j)) {
		if (at < 0)
			return bad(&w, "null removes a profile, but there is none of this name");
		profile_release(&ps->v[at]);
		memmove(&ps->v[at], &ps->v[at + 1], (ps->n - (size_t)at - 1) * sizeof(*ps->v));
		ps->n--;
		return 0;
	}
	if (!cJSON_IsObject(j))
		return bad(&w, "must be an object of fields, or null to remove it");
	if (at >= 0 && ext == NULL) /* a change to one that exists */
		return apply_fields(&w, j, &ps->v[at]);
	if (ext != NULL) {
		ssize_t base;

		if (!cJSON_IsString(ext))
			return bad(&w, "\"extends\" must name a profile");
		if ((base = find_index(ps, ext->valuestring)) < 0)
			return bad(&w, "extends \"%s\", which is not a built-in profile or one "
				   "defined above it", ext->valuestring);
		rc = profile_copy(&np, &ps->v[base], j->string);
	} else {
		rc = profile_new(&np, j->string);
	}
	if (rc < 0)
		return oom(&w);
	if ((rc = apply_fields(&w, j, &np)) < 0)
		goto fail;
	if (np.argv == NULL) {
		rc = bad(&w, "no \"command\" (a list such as [\"mycli\", \"-p\", \"{prompt}\"]), "
			 "and it extends no profile");
		goto fail;
	}
	if (np.parser == NULL && (np.parser = strdup(PARSER_NONE)) == NULL) {
		rc = oom(&w);
		goto fail;
	}
	if (at >= 0) { /* "extends" on a name that exists: replaced */
		profile_release(&ps->v[at]);
		ps->v[at] = np;
		return 0;
	}
	if (profiles_add(ps, &np) < 0) {
		rc = oom(&w);
		goto fail;
	}
	return 0;
fail:
	profile_release(&np);
	return rc;
}

/* Parse one file's text: "profiles" and "default_agent" over ps. */
static int parse_file(struct tq_profiles *ps, const char *file, const char *text, size_t len,
		      int builtin, struct tq_err *err)
{
	const cJSON *profs, *def, *it;
	cJSON *doc = NULL;
	int rc;

	if ((rc = tq_config_parse(file, text, len, &doc, err)) < 0)
		return rc;
	rc = TQ_EINVAL;
	if (!cJSON_IsObject(doc)) {
		tq_err_set(err, TQ_EINVAL, "%s: expected a JSON object", file);
		goto out;
	}
	profs = cJSON_GetObjectItemCaseSensitive(doc, "profiles");
	def = cJSON_GetObjectItemCaseSensitive(doc, "default_agent");
	if (profs != NULL && !cJSON_IsObject(profs)) {
		tq_err_set(err, TQ_EINVAL, "%s: \"profiles\" must be an object of "
			   "\"NAME\": {...}", file);
		goto out;
	}
	if (builtin && profs == NULL) {
		tq_err_set(err, TQ_EINVAL, "%s: no \"profiles\"", file);
		goto out;
	}
	if (def != NULL && !cJSON_IsString(def)) {
		tq_err_set(err, TQ_EINVAL, "%s: \"default_agent\" must be a profile name", file);
		goto out;
	}
	cJSON_ArrayForEach(it, profs) {
		if ((rc = take_profile(ps, file, it, err)) < 0)
			goto out;
	}
	rc = 0;
	if (def != NULL) {
		char *d = strdup(def->valuestring);

		if (d == NULL) {
			rc = tq_err_set(err, TQ_ENOMEM, "%s: out of memory", file);
			goto out;
		}
		free(ps->default_name);
		ps->default_name = d;
	}
out:
	cJSON_Delete(doc);
	return rc;
}

int tq_profiles_load_file(struct tq_profiles **pp, const char *path, struct tq_err *err)
{
	struct tq_profiles *ps = calloc(1, sizeof(*ps));
	char file[PATH_MAX], *text = NULL;
	size_t len = 0;
	int rc, must_exist = 1;

	*pp = NULL;
	if (ps == NULL)
		return tq_err_set(err, TQ_ENOMEM, "profiles: out of memory");
	rc = parse_file(ps, BUILTIN_FILE, tq_profiles_json, sizeof(tq_profiles_json) - 1, 1,
			err);
	if (rc < 0)
		goto out;
	if (path == NULL) {
		if ((rc = tq_config_path(file, sizeof(file), &must_exist, err)) < 0)
			goto out;
		path = rc == 0 ? file : "";
		rc = 0;
	}
	if (*path != '\0' &&
	    (rc = tq_config_read(path, must_exist, TQ_PROFILE_CONFIG_MAX, &text, &len,
				 err)) < 0) {
		/* a config named but missing is the user's mistake, not the store's */
		if (rc == TQ_ENOTFOUND) {
			rc = TQ_EINVAL;
			if (err != NULL)
				err->code = TQ_EINVAL;
		}
		goto out;
	}
	if (text != NULL && (rc = parse_file(ps, path, text, len, 0, err)) < 0)
		goto out;
	if (tq_profiles_find(ps, NULL) == NULL) {
		char names[256];

		tq_profiles_names(ps, names, sizeof(names));
		rc = tq_err_set(err, TQ_EINVAL, "%s: \"default_agent\" is \"%s\", which is not a "
				"profile (known: %s)", text != NULL ? path : BUILTIN_FILE,
				ps->default_name ? ps->default_name : DEFAULT_AGENT, names);
	}
out:
	free(text);
	if (rc < 0) {
		tq_profiles_free(ps);
		return rc;
	}
	*pp = ps;
	return 0;
}

int tq_profiles_load(struct tq_profiles **pp, struct tq_err *err)
{
	return tq_profiles_load_file(pp, NULL, err);
}

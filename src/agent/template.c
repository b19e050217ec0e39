/*
 * template.c - command templates of agent profiles (profile.h): the
 * placeholders a template may hold, checked when a profile is loaded and
 * expanded when a task starts, and the prompt moved to stdin when it is too
 * long for one argument. profile.c loads the profiles that hold them.
 */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>

#include "agent_int.h"

static const char *const placeholder_names[] = { "prompt", "prompt_file", "mcp_config",
						 "workdir", "session_id", "task_id",
						 "model", NULL };

/* ------------------------------------------------------------------ */
/* String arrays                                                      */

void tq_profile_argv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

/* Append a malloc'd string s to the NULL-terminated *v of *n (takes s,
 * freeing it on failure). 0 or TQ_ENOMEM. */
int tq_profile_argv_push(char ***v, size_t *n, char *s)
{
	char **nv;

	if (s == NULL)
		return TQ_ENOMEM;
	nv = reallocarray(*v, *n + 2, sizeof(**v));
	if (nv == NULL) {
		free(s);
		return TQ_ENOMEM;
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Templates                                                          */

static int known_placeholder(const char *name, size_t len)
{
	for (size_t i = 0; placeholder_names[i] != NULL; i++)
		if (strlen(placeholder_names[i]) == len &&
		    memcmp(placeholder_names[i], name, len) == 0)
			return 1;
	return 0;
}

/* The value of placeholder name (len bytes), or NULL when it has none
 * (NULL or ""). v NULL: every placeholder has the value "x" (checking). */
static const char *value_of(const struct tq_placeholders *v, const char *name, size_t len)
{
	const char *vals[sizeof(placeholder_names) / sizeof(placeholder_names[0])];

	if (v == NULL)
		return "x";
	/* in the order of placeholder_names */
	vals[0] = v->prompt;
	vals[1] = v->prompt_file;
	vals[2] = v->mcp_config;
	vals[3] = v->workdir;
	vals[4] = v->session_id;
	vals[5] = v->task_id;
	vals[6] = v->model;
	for (size_t i = 0; placeholder_names[i] != NULL; i++)
		if (strlen(placeholder_names[i]) == len &&
		    memcmp(placeholder_names[i], name, len) == 0)
			return vals[i] != NULL && *vals[i] != '\0' ? vals[i] : NULL;
	return NULL;
}

/* Length of a placeholder name at s ([a-z_][a-z0-9_]*) followed by '}',
 * or 0 when s does not start one. */
static size_t name_len(const char *s)
{
	size_t n = 0;

	if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return 0;
	while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
		n++;
	return s[n] == '}' ? n : 0;
}

/* A growing string. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		if ((np = realloc(b->p, cap)) == NULL)
			return TQ_ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/*
 * Expand one element: *out the malloc'd result, or NULL when the element is
 * dropped. v NULL only checks (every placeholder has a value).
 */
static int expand_one(const char *el, const struct tq_placeholders *v, char **out,
		      struct tq_err *err)
{
	struct sbuf b = { 0 };
	const char *s = el;
	size_t n;

	*out = NULL;
	if (s[0] == '{' && s[1] == '?') {
		if ((n = name_len(s + 2)) == 0 || !known_placeholder(s + 2, n))
			return tq_err_set(err, TQ_EINVAL, "\"%s\": unknown placeholder "
					  "{?%.*s}", el, (int)strcspn(s + 2, "}"), s + 2);
		if (value_of(v, s + 2, n) == NULL)
			return 0;
		s += n + 3;
		if (*s == '\0')
			return 0; /* "{?x}" alone: nothing to add */
	}
	while (*s != '\0') {
		const char *brace = strchr(s, '{');
		const char *val;

		if (brace == NULL) {
			if (sb_add(&b, s, strlen(s)) < 0)
				goto oom;
			break;
		}
		if (sb_add(&b, s, (size_t)(brace - s)) < 0)
			goto oom;
		s = brace;
		if (s[1] == '{') { /* "{{": a literal brace */
			if (sb_add(&b, "{", 1) < 0)
				goto oom;
			s += 2;
			continue;
		}
		if ((n = name_len(s + 1)) == 0) { /* not a placeholder: "{}", JSON */
			if (sb_add(&b, "{", 1) < 0)
				goto oom;
			s++;
			continue;
		}
		if (!known_placeholder(s + 1, n)) {
			free(b.p);
			return tq_err_set(err, TQ_EINVAL, "\"%s\": unknown placeholder {%.*s} "
					  "(known: {prompt}, {prompt_file}, {mcp_config}, "
					  "{workdir}, {session_id}, {task_id}, {model})",
					  el, (int)n, s + 1);
		}
		if ((val = value_of(v, s + 1, n)) == NULL) {
			free(b.p);
			return 0; /* no value: the element is dropped */
		}
		if (sb_add(&b, val, strlen(val)) < 0)
			goto oom;
		s += n + 2;
	}
	if (b.p == NULL && sb_add(&b, "", 0) < 0)
		goto oom;
	*out = b.p;
	return 0;
oom:
	free(b.p);
	return tq_err_set(err, TQ_ENOMEM, "expand \"%.40s\": out of memory", el);
}

int tq_profile_expand(char *const *argv, size_t argc, const struct tq_placeholders *v,
		      char ***out, size_t *outc, struct tq_err *err)
{
	static const struct tq_placeholders none = { 0 };
	char **o = calloc(1, sizeof(*o));
	size_t n = 0;
	int rc;

	*out = NULL;
	*outc = 0;
	if (o == NULL)
		return tq_err_set(err, TQ_ENOMEM, "expand: out of memory");
	/* {session_id} comes from an agent's output and stands alone in argv
	 * ("--resume", "{session_id}"): one starting with '-' would be an option */
	if (v != NULL && v->session_id != NULL && v->session_id[0] == '-') {
		rc = tq_err_set(err, TQ_EINVAL, "{session_id} \"%.40s\" starts with '-'",
				v->session_id);
		goto fail;
	}
	for (size_t i = 0; i < argc; i++) {
		char *e;

		if ((rc = expand_one(argv[i], v != NULL ? v : &none, &e, err)) < 0)
			goto fail;
		if (e != NULL && (rc = tq_profile_argv_push(&o, &n, e)) < 0) {
			tq_err_set(err, rc, "expand: out of memory");
			goto fail;
		}
	}
	if (n == 0) {
		rc = tq_err_set(err, TQ_EINVAL, "the command template expands to nothing");
		goto fail;
	}
	*out = o;
	*outc = n;
	return 0;
fail:
	tq_profile_argv_free(o);
	return rc;
}

int tq_profile_check(char *const *argv, size_t argc, struct tq_err *err)
{
	for (size_t i = 0; i < argc; i++) {
		char *e;
		int rc = expand_one(argv[i], NULL, &e, err);

		free(e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int tq_profile_uses(const char *el, const char *name)
{
	size_t len = strlen(name);
	const char *s = el;

	if (s[0] == '{' && s[1] == '?') {
		size_t n = name_len(s + 2);

		if (n == len && memcmp(s + 2, name, len) == 0)
			return 1;
		s += n + 3;
	}
	while ((s = strchr(s, '{')) != NULL) {
		size_t n;

		if (s[1] == '{') {
			s += 2;
			continue;
		}
		n = name_len(s + 1);
		if (n == len && memcmp(s + 1, name, len) == 0)
			return 1;
		s++;
	}
	return 0;
}

int tq_profile_prompt_on_stdin(char *const *argv, size_t argc, const char *repl,
			       char ***out, size_t *outc, struct tq_err *err)
{
	char **o = calloc(1, sizeof(*o));
	size_t n = 0;

	*out = NULL;
	*outc = 0;
	if (o == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < argc; i++) {
		const char *e = argv[i];

		if (tq_profile_uses(e, "prompt")) {
			if (*repl == '\0')
				continue;
			e = repl;
		}
		if (tq_profile_argv_push(&o, &n, strdup(e)) < 0) {
			tq_profile_argv_free(o);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
	}
	*out = o;
	*outc = n;
	return 0;
}

/*
 * load.c - a rule set as tq_rules_load makes it (classify.h): the built-in
 * rules (rules.json, compiled in), then the user's config file over them
 * (same id replaces in place, a disabling entry removes, the others go
 * first), then the literal prefilter built over every pattern of a text
 * rule or retry hint.
 *
 * Invariants: what tq_rules_load returns is never modified afterwards
 * (tq_classify only reads it); a broken user file is an error naming it,
 * never a silent fallback (the caller decides to run on the built-in
 * rules, loudly); on failure *rp is NULL and nothing is leaked.
 */
#include "classify_int.h"

#include <limits.h>
#include <string.h>

#include "common/config.h"
#include "rules_json.h"

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
		tq_rule_free(R->r[k]);
		R->r[k] = NULL;
	}
	if ((all = calloc(R->n + u->n + 1, sizeof(*all))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "%s: out of memory", file);
	for (size_t i = 0; i < u->n; i++) {
		ssize_t k = find_rule(R->r, R->n, u->r[i]->id);

		if (k >= 0) {
			tq_rule_free(R->r[k]);
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
	const char **pat = NULL;
	unsigned char *served = NULL;
	int rc = TQ_ENOMEM;

	R->pat = calloc(R->n + 1, sizeof(*R->pat));
	pat = calloc(R->n + 1, sizeof(*pat));
	served = calloc(R->n + 1, sizeof(*served));
	if (R->pat == NULL || pat == NULL || served == NULL)
		goto out;
	for (size_t i = 0; i < R->n; i++) {
		struct rule *r = R->r[i];

		if (!r->has_re || (r->kind != K_PATTERN && r->kind != K_RETRY))
			continue;
		r->pidx = R->npat;
		pat[R->npat] = r->pattern;
		R->pat[R->npat++] = r;
	}
	rc = tq_prefilter_build(&R->pf, pat, R->npat, served);
	for (size_t k = 0; rc == 0 && k < R->npat; k++)
		R->pat[k]->prefilter = served[k];
out:
	free(pat);
	free(served);
	return rc < 0 ? tq_err_set(err, TQ_ENOMEM, "rules: out of memory") : 0;
}

void tq_rules_free(struct tq_rules *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		tq_rule_free(r->r[i]);
	free(r->r);
	free(r->pat);
	tq_prefilter_release(&r->pf);
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
	rc = tq_ruleset_parse("rules.json (built in)", tq_rules_json, sizeof(tq_rules_json) - 1,
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
	if (text != NULL && ((rc = tq_ruleset_parse(path, text, len, 0, &u, err)) < 0 ||
			     (rc = merge(R, &u, path, err)) < 0))
		goto out;
	rc = build_prefilter(R, err);
out:
	tq_ruleset_release(&b);
	tq_ruleset_release(&u);
	free(text);
	if (rc < 0) {
		tq_rules_free(R);
		return rc;
	}
	*rp = R;
	return 0;
}

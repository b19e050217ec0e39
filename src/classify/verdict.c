/*
 * verdict.c - tq_classify (classify.h): one attempt's evidence weighed
 * against a loaded rule set.
 *
 * Order of evidence: the worker's verdict (timeout, signal, ... : ids
 * "outcome.*"), then the stages "final" (json and text_from by default: an
 * agent's final answer), "text" (pattern by default) and "exit" (exit_code
 * by default). The first stage with a match decides. Within a stage every
 * rule is checked, and the match of the highest-priority category wins
 * (rate_limit > overload > network > auth > unknown; the enum's order);
 * within a category the first rule in list order gives the reason. A match
 * through text_from is reported as rule "FROM+PATTERN". A transient
 * verdict then gets the latest retry time the retry_after rules find
 * (capped at TQ_CLASSIFY_RETRY_MAX_MS).
 *
 * Not here: the store, the log, processes, the clock (now_ms comes in).
 * Invariants: never fails (missing memory skips evidence, said in the
 * trace); the result's strings are always terminated and harmless; the
 * rules are only read.
 */
#include "classify_int.h"

#include <ctype.h>
#include <math.h> /* macros only (isfinite): no libm */
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

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

		if (!(r->streams & v->bit) || (i = tq_sel_last(&r->sel, v)) < 0)
			continue;
		seen = 1;
		x = tq_jpath_get(v->obj[i].o, &r->test.path);
		tq_jval_str(x, val, sizeof(val));
		snprintf(field, sizeof(field), "%s%s%s=%s", lab, *lab ? "." : "", r->test.path.text,
			 val);
		if (!tq_jtest_match(&r->test, x)) {
			tq_xp_add(&c->xp, "  json %s: %s%s: no match", r->id,
				  s == 1 ? "stderr " : "", field);
			continue;
		}
		tq_xp_add(&c->xp, "  json %s: %s%s -> %s", r->id, s == 1 ? "stderr " : "", field,
			  tq_category_name(r->cat));
		if ((h = hit(hs, r->cat, r, NULL, v)) != NULL)
			tq_clean_copy(h->reason, sizeof(h->reason), field, strlen(field), NULL);
		return;
	}
	if (!seen) {
		char d[160];

		tq_sel_desc(&r->sel, d, sizeof(d));
		tq_xp_add(&c->xp, "  json %s: no object (%s)", r->id, d);
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
		tq_xp_add(&c->xp, "  exit %s: no exit code", r->id);
		return;
	}
	match = r->erange && e >= r->emin && e <= r->emax;
	for (size_t i = 0; i < r->ncodes; i++)
		match |= r->codes[i] == e;
	if (!match) {
		tq_xp_add(&c->xp, "  exit %s: exit code %lld: no match", r->id, (long long)e);
		return;
	}
	tq_xp_add(&c->xp, "  exit %s: exit code %lld -> %s", r->id, (long long)e,
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

		if (!(r->streams & v->bit) || !tq_view_match(c, v, r, &ls, &le, m, 1))
			continue;
		tq_reason_line(why, sizeof(why), v->text, ls, le, (size_t)m[0].rm_so);
		tq_xp_add(&c->xp, "  text %s: %s: \"%.200s\" -> %s", r->id, v->name, why,
			  tq_category_name(r->cat));
		if ((h = hit(hs, r->cat, r, NULL, v)) != NULL)
			memcpy(h->reason, why, sizeof(why));
		return;
	}
	tq_xp_add(&c->xp, "  text %s: no match%s", r->id,
		  r->prefilter ? "" : " (no literal to prefilter on: whole text searched)");
}

/* The string a text_from rule reads in view v, or NULL. */
static const char *from_text(const struct rule *r, const struct view *v)
{
	ssize_t i;
	const cJSON *x;

	if (!(r->streams & v->bit) || (i = tq_sel_last(&r->sel, v)) < 0)
		return NULL;
	x = tq_jpath_get(v->obj[i].o, &r->test.path);
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
		tq_clean_copy(shown, sizeof(shown), t, strlen(t), NULL);
		tq_xp_add(&c->xp, "  text_from %s: %s%s%s%s = \"%s\"", r->id,
			  s == 1 ? "stderr " : "", lab, *lab ? "." : "", r->test.path.text, shown);
		for (size_t k = 0; k < c->R->n; k++) {
			const struct rule *p = c->R->r[k];
			regmatch_t m[1];
			size_t ls, le;
			struct hit *h;

			if (p->kind != K_PATTERN || !(p->streams & v->bit) ||
			    !tq_rule_applies(p, c->in) ||
			    !tq_last_line(&p->re, t, strlen(t), &ls, &le, m, 1, &c->regex_bytes))
				continue;
			any = 1;
			tq_xp_add(&c->xp, "    text %s matches -> %s", p->id,
				  tq_category_name(p->cat));
			if ((h = hit(hs, p->cat, p, r, v)) != NULL)
				tq_reason_line(h->reason, sizeof(h->reason), t, ls, le,
					       (size_t)m[0].rm_so);
		}
		if (!any)
			tq_xp_add(&c->xp, "    no text rule matches it");
	}
	if (!seen) {
		char d[160];

		tq_sel_desc(&r->sel, d, sizeof(d));
		tq_xp_add(&c->xp, "  text_from %s: no string %s (%s)", r->id, r->test.path.text, d);
	}
}

/* Run one stage. Returns the winning category's hit, or NULL. */
static const struct hit *run_stage(struct cls *c, enum stage st, struct hits *hs)
{
	size_t skipped = 0;

	memset(hs, 0, sizeof(*hs));
	tq_xp_add(&c->xp, "stage %s:", tq_stage_names[st]);
	for (size_t i = 0; i < c->R->n; i++) {
		const struct rule *r = c->R->r[i];

		if (r->stage != st || r->kind == K_RETRY || r->kind == K_IGNORE)
			continue;
		if (!tq_rule_applies(r, c->in)) {
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
		tq_xp_add(&c->xp, "  (%zu rules for other programs or agents not checked)",
			  skipped);
	for (int k = TQ_CAT_RATE_LIMIT; k < TQ_CATEGORY_COUNT; k++)
		if (hs->have[k])
			return &hs->h[k];
	tq_xp_add(&c->xp, "  nothing matched");
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Retry hints: the latest time a provider asked us to wait for       */

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
		return tq_resets_parse(buf, &k) == 0 ? tq_resets_next(&k, c->now, note, nn) : 0;
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

	tq_clean_copy(shown, sizeof(shown), s, n, NULL);
	if (t <= c->now) {
		tq_xp_add(&c->xp, "  retry %s: %s\"%s\": %s%s", r->id, where, shown,
			  t == 0 ? "not a time" : "already passed", note);
		return;
	}
	tq_format_time(t, when, sizeof(when));
	tq_format_duration(t - c->now, in, sizeof(in));
	tq_xp_add(&c->xp, "  retry %s: %s\"%s\" -> %s (in %s)%s", r->id, where, shown, when, in,
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

		for (int v = 0; f->kind == K_TEXT_FROM && tq_rule_applies(f, c->in) && v < 2; v++) {
			const char *t = from_text(f, &c->v[v]);

			if (t != NULL && (r->streams & c->v[v].bit) &&
			    tq_last_line(&r->re, t, strlen(t), &ls, &le, m, (size_t)r->group + 1,
					 &c->regex_bytes) &&
			    group_text(t, m, r->group, &s, &n))
				hint_seen(c, r, "", s, n, best);
		}
	}
	/* ... and the text */
	for (int v = 0; v < 2; v++)
		if ((r->streams & c->v[v].bit) &&
		    tq_view_match(c, &c->v[v], r, &ls, &le, m, (size_t)r->group + 1) &&
		    group_text(c->v[v].text, m, r->group, &s, &n))
			hint_seen(c, r, v == 1 ? "stderr " : "", s, n, best);
}

static void retry_json(struct cls *c, const struct rule *r, int64_t *best)
{
	for (int v = 0; v < 2; v++) {
		ssize_t i;
		const cJSON *x;
		char num[40];

		if (!(r->streams & c->v[v].bit) || (i = tq_sel_last(&r->sel, &c->v[v])) < 0)
			continue;
		x = tq_jpath_get(c->v[v].obj[i].o, &r->test.path);
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

	tq_xp_add(&c->xp, "retry hints:");
	for (size_t i = 0; i < c->R->n; i++) {
		const struct rule *r = c->R->r[i];

		if (r->kind != K_RETRY || !tq_rule_applies(r, c->in))
			continue;
		if (r->has_sel)
			retry_json(c, r, &best);
		else
			retry_pattern(c, r, &best);
	}
	if (best == 0)
		tq_xp_add(&c->xp, "  none");
	if (best > c->now + TQ_CLASSIFY_RETRY_MAX_MS) {
		best = c->now + TQ_CLASSIFY_RETRY_MAX_MS;
		tq_xp_add(&c->xp, "  capped at %d days from now (TQ_CLASSIFY_RETRY_MAX_MS)",
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
		tq_xp_add(&c->xp, "step 1, the worker's verdict: succeeded; nothing to classify");
		return 1;
	}
	if (o == TQ_OUT_STALLED) {
		/* Stopped by --stall-timeout: the agent waited on something that
		 * did not answer. network, unless its output shows it was waiting
		 * out a rate limit or an overload, which the output decides (a
		 * rate limit then pauses the group until its retry time). */
		tq_xp_add(&c->xp, "step 1, the worker's verdict: stalled: network, unless the "
			  "output shows a rate_limit or an overload");
		return 0;
	}
	if ((o == TQ_OUT_FAILED || o == TQ_OUT_NONE) && in->signal == 0) {
		tq_xp_add(&c->xp, "step 1, the worker's verdict: failed: the output decides");
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
	tq_xp_add(&c->xp, "step 1, the worker's verdict: %s (%s): decides, whatever the output "
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

		if (f->kind != K_TEXT_FROM || !tq_rule_applies(f, c->in) ||
		    (t = from_text(f, h->v)) == NULL)
			continue;
		while (isspace((unsigned char)*t))
			t++;
		e = strcspn(t, "\n");
		if (e == 0)
			continue;
		memcpy(reason + len, ": ", 3);
		tq_clean_copy(reason + len + 2, n - len - 2, t, e, NULL);
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
	tq_xp_add(&c->xp, "  => %s (rule %s), the highest-priority match of this stage",
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
	tq_xp_add(&c.xp, "input: outcome %s, exit code %d, signal %d, program %s, agent %s",
		  in->outcome != TQ_OUT_NONE ? tq_outcome_name(in->outcome) : "(none)",
		  in->exit_code, in->signal, in->program ? in->program : "-",
		  in->agent ? in->agent : "-");
	if (verdict(&c, out))
		goto done;
	if (R == NULL || (hs = malloc(sizeof(*hs))) == NULL) {
		tq_xp_add(&c.xp, "%s: no rules checked",
			  R == NULL ? "no rules loaded" : "out of memory");
	} else {
		tq_view_load(&c, &c.v[0], in->out_tail, in->out_len);
		tq_view_load(&c, &c.v[1], in->err_tail, in->err_len);
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
		tq_xp_add(&c.xp, "stalled, and the output shows no rate_limit or overload: "
			  "network");
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
	tq_xp_last(&c.xp, "result: %s, %s, retry at %s, rule %s",
		   out->category != TQ_CAT_NONE ? tq_category_name(out->category) : "none",
		   out->transient ? "transient" : "not transient", out->retry_at ? when : "-",
		   out->rule);
	tq_xp_last(&c.xp, "reason: %.200s", out->reason);
	free(hs);
	tq_view_release(&c.v[0], R != NULL ? R->npat : 0);
	tq_view_release(&c.v[1], R != NULL ? R->npat : 0);
}

/*
 * classify.h - why an attempt did not succeed, and whether trying again can
 * help: every attempt that did not succeed gets a category, checked in this
 * priority order
 *
 *     rate_limit > overload > network > auth > unknown
 *
 * plus the reason text that decided it (the matching line, the JSON field),
 * the rule that matched, and a retry time when the provider gave one.
 *
 * Order of evidence (first that decides wins):
 *   1. the worker's own verdict: timed_out, killed, output_overflow,
 *      spawn_failed, and any death by signal decide first, whatever the
 *      output says (Claude Code can print a "success" result after SIGTERM);
 *      they get category unknown and are not transient (lost: transient only
 *      with --retry-lost, decided by the caller); stalled (stopped by
 *      --stall-timeout) is network and transient, unless the later steps
 *      find a rate_limit or an overload in its output, which then wins;
 *   2. an agent's final JSON result in the output: Claude Code's last
 *      {"type":"result"} line (decide on is_error, never on subtype alone),
 *      the last assistant line's "error" field and api_error_status; Gemini
 *      CLI's error JSON and exit codes (173 = 429, 247 = 503, 41 = auth);
 *      Codex's {"type":"turn.failed"};
 *   3. text rules over the last TQ_CLASSIFY_TAIL bytes of stderr and stdout
 *      (JSON lines that are the model's own words or tool output, such as
 *      Claude's "assistant" and "user" lines, are skipped: an agent that
 *      discusses ECONNRESET has not hit one), and Claude Code's api_retry
 *      lines (its own retries: history, not the final answer);
 *   4. exit code 75 (EX_TEMPFAIL): transient by convention (as overload:
 *      retried with backoff, without pausing the group);
 *   5. otherwise unknown.
 * Within one step every rule is checked and the match of the highest
 * priority category wins; within a category the first rule in list order
 * gives the reason.
 *
 * Rules are data: built-in defaults (rules.json, compiled in; its "_doc"
 * field is the schema's manual) for Claude Code, Gemini CLI, Codex,
 * OpenCode and generic HTTP/network errors, and a user config file
 * ($TASKQ_CONFIG, else $XDG_CONFIG_HOME/taskq/config.json, else
 * ~/.config/taskq/config.json) whose "rules" add to the defaults, replace
 * one (same "id"), or remove one ({"id": ..., "disabled": true}). Other
 * top-level keys of the config file are left to other modules.
 *
 * Nothing here touches the store or processes: the caller gathers the
 * evidence (tails of the log, the runner's verdict) and stores the result.
 */
#ifndef TQ_CLASSIFY_H
#define TQ_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

#define TQ_CLASSIFY_TAIL (64 * 1024)   /* bytes of each stream examined */
#define TQ_CLASSIFY_REASON_MAX 512
#define TQ_CLASSIFY_EXPLAIN_MAX 8192
#define TQ_CLASSIFY_CONFIG_MAX (1024 * 1024) /* bytes of a config file */
/* A provider's retry time further off than this is cut to it (a weekly
 * quota resets within 7 days; a garbled "retry-after" must not park a task
 * for years). */
#define TQ_CLASSIFY_RETRY_MAX_MS ((int64_t)8 * 24 * 3600 * 1000)

struct tq_rules; /* opaque: a loaded rule set */

/*
 * Load the built-in rules plus the user's config file. path: the config
 * file to read, NULL for the default location, or "" for the built-in
 * rules alone (what a worker falls back to, loudly, when the user's file is
 * broken: a typo in a config must not stop tasks from running). A missing
 * default file is fine; a missing file named here or by $TASKQ_CONFIG is
 * TQ_ENOTFOUND. Invalid JSON, an unknown key, a bad regex, an unknown
 * category, a duplicate id, or disabling an id no built-in rule has is
 * TQ_EINVAL with err naming the file, the rule and what is wrong:
 * `config.json: rule "my.net": pattern: bad pattern "(": Unmatched ( or \(`.
 * Regexes are compiled here, once. On success *rp owns the rules (free
 * with tq_rules_free; NULL is fine); on failure *rp is NULL.
 */
int tq_rules_load(struct tq_rules **rp, const char *path, struct tq_err *err);
void tq_rules_free(struct tq_rules *r);

/* The evidence about one finished attempt. */
struct tq_classify_input {
	enum tq_outcome outcome;    /* the runner's verdict (see above) */
	int exit_code;              /* -1: none */
	int signal;                 /* 0: none */
	const char *program;        /* base name of argv[0] ("claude"), for
				     * rules limited to one command; may be NULL */
	const char *agent;          /* the agent profile of `taskq ask`, or NULL */
	const char *out_tail;       /* last bytes of stdout (whole lines, each
				     * ending in '\n'), may contain any byte;
				     * only the last TQ_CLASSIFY_TAIL bytes
				     * (from a line start) are examined */
	size_t out_len;
	const char *err_tail;       /* likewise for stderr */
	size_t err_len;
	int64_t now_ms;             /* wall clock, to turn "resets at 3pm" and
				     * retry-after into an absolute time (taskq
				     * classify passes the attempt's end, so a
				     * re-classification gives the same time) */
};

struct tq_classification {
	enum tq_category category;  /* TQ_CAT_NONE when it succeeded */
	int transient;              /* 1: worth retrying (rate_limit, overload,
				     * network, EX_TEMPFAIL) */
	int64_t retry_at;           /* ms since the epoch the provider asked to
				     * wait for (retry-after, resets at ...,
				     * retry_delay_ms; the latest if several);
				     * 0: none given, or not transient. At most
				     * now + TQ_CLASSIFY_RETRY_MAX_MS */
	char rule[128];             /* id of the rule that decided:
				     * "outcome.<outcome>" when step 1 did
				     * (the worker's own verdict),
				     * "FROM+RULE" for a text rule over a JSON
				     * field (codex.turn_failed+text.network),
				     * "default" when nothing matched */
	char reason[TQ_CLASSIFY_REASON_MAX]; /* the line or field that decided,
				     * trimmed, valid UTF-8, with no control
				     * characters (safe to store and show) */
	/* The work done, counted in bytes rather than timed (the same on
	 * every machine; bench/classify times it): */
	size_t examined_bytes;      /* of the two tails (at most 2 x
				     * TQ_CLASSIFY_TAIL), each read once by
				     * the JSON pass and the literal prefilter */
	size_t regex_bytes;         /* handed to regexec by the text rules
				     * and retry hints, summed over its calls:
				     * the prefilter keeps this to candidate
				     * lines, not every pattern over every
				     * tail (a json rule's pattern sees one
				     * field, not counted) */
};

/*
 * Classify one attempt. Never fails: with no evidence the category is
 * unknown. If explain is not NULL, a human-readable trace of every check
 * made (in order, with what matched or why not) is written to it (at most n
 * bytes, always terminated): taskq classify --explain prints it.
 *
 * r may be NULL (then only step 1 and the default apply). Allocates, and
 * copes with failing to (that evidence is skipped). A "resets 3pm
 * (Area/City)" time is converted by setting TZ around mktime and restoring
 * it: not thread-safe (taskq's processes classify on one thread), and not
 * for use between fork and exec.
 */
void tq_classify(const struct tq_rules *r, const struct tq_classify_input *in,
		 struct tq_classification *out, char *explain, size_t n);

#endif

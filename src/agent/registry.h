/*
 * registry.h - the agent CLIs taskq knows by name (claude, gemini, codex,
 * opencode): one entry each, in registry.c. Every place whose code differs
 * by agent asks the registry, never compares a name itself: a profile's
 * "parser" is valid when it names an entry (or is "none"; profile.c); a
 * plain command is recognised as an agent run by its program's base name
 * (agent.c, runner.c); the result parser reads the entry's objects
 * (result.c); a stored session id is checked against the entry's form
 * before it goes into argv (agent.c, result.c); a run caps the CLI's own
 * retries, hides the user's MCP servers in an isolated workspace, and reads
 * the model its own config names, each through the entry (agent.c).
 *
 * What is data, not code, stays data, keyed by the same name: the profile
 * (profiles.json: command template, environment, timeouts), the marker
 * variables a task's environment loses (agent-env.json, ids "NAME.*"), the
 * classification rules limited to the agent ("program"/"agent" in
 * rules.json).
 *
 * Adding an agent CLI "foo":
 *  1. Its result: a reader of one JSON object of its stdout, in result.c
 *     beside the others (it fills struct tq_result_parser: the result text,
 *     error, session, cost, tokens, model), declared in agent_int.h as
 *     tq_result_foo; and the substrings that an object worth reading holds
 *     (foo_needles in registry.c; NULL: every object is parsed).
 *  2. Its session id form, when it has one taskq can check: a function
 *     saying why an id is not of it (result.c, beside
 *     tq_result_session_uuid); NULL: letters, digits and "-_.:".
 *  3. What a run of it needs, each optional (NULL: nothing), in agent.c or a
 *     file of its own under src/agent/ (declared in agent_int.h): capping
 *     its own retries (cap_retries), hiding the user's MCP servers when it
 *     runs in an isolated workspace (isolate), the model its own config
 *     names when its output does not (conf_model).
 *  4. One entry in the table in registry.c naming all of the above.
 *  5. Data: a profile "foo" in profiles.json ("parser": "foo", its command
 *     template, "stdin_prompt", its environment), its marker variables in
 *     agent-env.json, its failure rules in rules.json (`taskq classify`),
 *     and the files a workspace gives it (agent.c's ws_fill and reserved
 *     names, agent.h's comment) if it reads a project config.
 *  6. Tests: its outputs under tests/fixtures/agent-outputs (test_result
 *     reads every file there; tests/fuzz/seed.py seeds fuzz_result), a
 *     profile test (test_profile), and a fake CLI run through the worker
 *     (tests/integration/test_agent_harness.sh, test_ask_real_clis.sh
 *     when it can be installed pinned).
 *
 * Nothing here prints, exits or allocates; the table is constant.
 */
#ifndef TQ_REGISTRY_H
#define TQ_REGISTRY_H

#include <stddef.h>

struct cJSON;
struct tq_agent_run;
struct tq_env;
struct tq_err;
struct tq_queue;
struct tq_result_parser;
struct tq_task;

struct tq_agent_def {
	const char *name;          /* its program's base name, and the
				    * "parser" of its profile */
	/* Result: an object of its stdout is parsed only when it holds one of
	 * needles (NULL-terminated; NULL: every object), then read. */
	const char *const *needles;
	void (*read_obj)(struct tq_result_parser *p, const struct cJSON *o);
	/* Why id (len bytes, already checked not empty, not starting with '-',
	 * not too long) is not a session id of its form, or NULL if it is.
	 * NULL: letters, digits and "-_.:" (tq_result_session_check). */
	const char *(*session_bad)(const char *id, size_t len);
	/* Cap the CLI's own retries for one run of task t (taskq's retries
	 * are in charge): env is the run's environment, ar the run (its argv
	 * may be replaced). Errors say what failed. NULL: no setting. */
	int (*cap_retries)(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
			   struct tq_agent_run *ar, struct tq_err *err);
	/* In an isolated workspace (ar->workspace), after cap_retries: keep the
	 * user's MCP servers from the run. NULL: its project files in the
	 * workspace do it (ws_fill), or nothing can. */
	int (*isolate)(struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err);
	/* The model its own config names for a run of argv v (n elements) in
	 * cwd with env, malloc'd, or NULL. NULL: its output names the model. */
	char *(*conf_model)(char *const *v, size_t n, const struct tq_env *env, const char *cwd);
};

/* The entry named name, or NULL (also for NULL). Case-sensitive. */
const struct tq_agent_def *tq_registry_find(const char *name);

/* Entry i in the table's order, or NULL past the last. */
const struct tq_agent_def *tq_registry_at(size_t i);

/* The names, comma-separated in the table's order ("claude, gemini, ..."),
 * into buf (n bytes, always terminated), for messages. */
void tq_registry_names(char *buf, size_t n);

#endif

/*
 * registry.h - the agent CLIs taskq knows by name: one entry each, defined
 * in the agent's own file under src/agent (NAME.c), listed in registry.c's
 * table. Every place whose code differs by agent asks the registry, never
 * compares a name itself: a profile's "parser" is valid when it names an
 * entry (or is "none"; profile.c); a plain command is recognised as an
 * agent run by its program's base name (agent.c, runner.c); the result
 * parser reads the entry's objects (result.c); a stored session id is
 * checked against the entry's form before it goes into argv (agent.c,
 * result.c); an isolated workspace holds the files of every entry and
 * keeps their names from sources (workspace.c); a run caps the CLI's own
 * retries, hides the user's MCP servers in an isolated workspace, and
 * reads the model its own config names, each through the entry (agent.c).
 *
 * What is data, not code, stays data, keyed by the same name: the profile
 * (profiles.json: command template, environment, timeouts), the marker
 * variables a task's environment loses (agent-env.json, ids "NAME.*"), the
 * classification rules limited to the agent ("program"/"agent" in
 * rules.json).
 *
 * Adding an agent CLI "foo" (no other code changes, unless its reader
 * needs state of its own; tried with a fifth agent, the code was its file
 * and the two lines of step 2):
 *  1. src/agent/foo.c, holding everything that is foo's, and defining
 *     `const struct tq_agent_def tq_agent_foo` (below): its name; the reader
 *     of one JSON object of its stdout, which fills struct
 *     tq_result_parser (result_int.h: the result text, error, session,
 *     cost, tokens, model; a reader that needs state of its own beyond
 *     those fields adds it there), and the needles an object worth reading
 *     holds; its session id form; and, each optional, capping its own
 *     retries, hiding the user's MCP servers in an isolated workspace, the
 *     model its own config names, the files a workspace gives it and the
 *     names it takes there. The helpers it may use: result_int.h (reading
 *     an object), agent_int.h (a CLI's config read or overlaid, the run's
 *     private directory, the uuid session form). Copy the nearest agent's
 *     file: claude.c is the smallest.
 *  2. Its name in registry.c's AGENTS list (the table's order is the order
 *     of messages: "claude, gemini, ..."), and foo.c in
 *     src/agent/meson.build's files.
 *  3. Data: a profile "foo" in profiles.json ("parser": "foo", its command
 *     template, "stdin_prompt", its environment), its marker variables in
 *     agent-env.json, its failure rules in rules.json (`taskq classify`).
 *  4. Tests: its outputs under tests/fixtures/agent-outputs (test_result
 *     reads every file there; tests/fuzz/seed.py seeds fuzz_result), the
 *     entries counted and named in tests/unit/test_registry.c (its count,
 *     the names for messages, the parser message, the session forms), the
 *     built-in profile names and a test of its profile (test_profile), a
 *     fake CLI run through the worker (tests/integration/
 *     test_agent_harness.sh; test_ask_real_clis.sh when it can be
 *     installed pinned), and foo added to NAMES in
 *     tests/integration/test_agents_named_only_in_registry.sh.
 *  5. Docs that list the agents by name for the user: `taskq help ask`'s
 *     summary (src/cli/cmd_ask.c) and `help log` (cmd_log.c), the man page
 *     (contrib/taskq.1.scd: ask --agent, the result's nulls, the pipes),
 *     the completions (contrib/completions), README's agent section.
 * The guard of step 4 fails when an agent's name is an identifier or a string of
 * its own in any C file of src/ but its own file and registry.c's list
 * (profile.c's default agent excepted), or is written at all, comments
 * included, in another .c file of src/agent.
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

/* A file an isolated workspace gives an agent (its project settings:
 * where its MCP servers, its retries are set). */
struct tq_agent_file {
	const char *path;          /* "NAME", or "DIR/NAME" (DIR made 0700) */
	const char *text;          /* its whole content */
};

/*
 * An agent CLI's stream-input mode (issue 19, warm sessions): one process
 * of it takes one message after another on its stdin and answers each with
 * a turn on its stdout, so a session's next message needs no new process.
 * The process is started from the agent's expanded command (its profile's
 * template, with the session to resume) less its prompt (tq_agent_stream_
 * argv, stream.c): the arguments after "--" and an argument that is the
 * prompt itself go, args are added after the program. A turn ends when the
 * entry's reader has read its result object (tq_result_seen, result.h).
 */
struct tq_agent_stream {
	const char *const *args;   /* added after argv[0], NULL-terminated */
	/* The line (with its '\n', malloc'd; NULL: no memory) that gives the
	 * process one message, prompt (UTF-8). */
	char *(*message)(const char *prompt);
	/* The line that interrupts the turn running, or NULL when the CLI has
	 * none (the process is then ended, and the next message resumes);
	 * id names the request (malloc'd; NULL: no memory). */
	char *(*interrupt)(const char *id);
};

struct tq_agent_def {
	const char *name;          /* its program's base name, and the
				    * "parser" of its profile */
	/* Result: an object of its stdout is parsed only when it holds one of
	 * needles (NULL-terminated; NULL: every object), then read. In valid
	 * JSON a '"' inside a string is escaped, so a needle "\"result\"" can
	 * only be the string token "result" (a key or a value), never text
	 * inside a tool's output: huge lines are skipped after one scan. */
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
	 * workspace do it (ws_files, with its profile's flags), or nothing can. */
	int (*isolate)(struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err);
	/* The model its own config names for a run of argv v (n elements) in
	 * cwd with env, malloc'd, or NULL. NULL: its output names the model. */
	char *(*conf_model)(char *const *v, size_t n, const struct tq_env *env, const char *cwd);
	/* Files every isolated workspace holds for it, written when the
	 * workspace is made ({NULL} ends the list; NULL: none). Whatever agent
	 * the task runs: a profile of the user's may run any CLI there. */
	const struct tq_agent_file *ws_files;
	/* Names in a workspace a run of it may make later (isolate: a config
	 * home of its own), NULL-terminated; NULL: none. A source may take
	 * neither these nor the first component of a ws_files path. */
	const char *const *ws_names;
	/* Its stream-input mode, or NULL: it has none, and a session of it
	 * cannot be warm (submit refuses --warm, naming the agent). */
	const struct tq_agent_stream *stream;
};

/* The entry named name, or NULL (also for NULL). Case-sensitive. */
const struct tq_agent_def *tq_registry_find(const char *name);

/* Entry i in the table's order, or NULL past the last. */
const struct tq_agent_def *tq_registry_at(size_t i);

/* The names, comma-separated in the table's order ("claude, gemini, ..."),
 * into buf (n bytes, always terminated), for messages. */
void tq_registry_names(char *buf, size_t n);

#endif

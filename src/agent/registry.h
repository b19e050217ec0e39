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
 *     names it takes there; its stream-input mode for warm sessions
 *     (struct tq_agent_stream below: a protocol of its own, as claude's
 *     and codex's, or the Agent Client Protocol of acp.c, tuned, as
 *     gemini's and opencode's; without one, --warm is refused for it).
 *     The helpers it may use: result_int.h (reading an object),
 *     agent_int.h (a CLI's config read or overlaid, the run's private
 *     directory, the uuid session form), stream_int.h (a warm turn's
 *     lines, JSON-RPC, ACP). Copy the nearest agent's file: claude.c is
 *     the smallest.
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

/* An option of a CLI's one-shot command and what its stream-input command
 * does with it (struct tq_agent_stream's opts). */
struct tq_stream_opt {
	const char *name;          /* "-o", "--output-format" (also matches
				    * "--output-format=VALUE"), or a word
				    * ("exec", "resume") */
	int values;                /* elements it takes after it (0 or 1) */
	int keep;                  /* 1: into the stream command; 0: dropped */
};

/*
 * An agent CLI's stream-input mode (issue 19, warm sessions): one process
 * of it takes one message after another on its stdin and answers each with
 * a turn on its stdout, so a session's next message needs no new process.
 *
 * The command (tq_agent_stream_argv, stream.c): the program of the agent's
 * expanded one-shot command (its profile's template, with the session to
 * resume), then args, then the one-shot command's elements up to "--" but
 * for an element equal to the prompt, each kept or dropped as opts says
 * (an element opts does not name, and the values after it: kept when
 * keep_other, else dropped).
 *
 * A turn is spoken through the result parser of the turn
 * (tq_result_parser_stream, result.h), which these functions drive with
 * the helpers of stream_int.h: begin queues what opens it (on a process
 * started for it, whatever the protocol's handshake needs first: the
 * session to resume, the model; then the message), read reads each JSON
 * object of the process's stdout (the turn's result, usage and session,
 * as a one-shot run's reader does for its output; answers to the agent's
 * own requests are queued), and the turn ends when read has set the
 * result (tq_result_seen). interrupt queues what stops the turn running
 * and keeps the process, or returns -1 when it cannot now (the process is
 * then ended, and the next message resumes on a new one).
 */
struct tq_agent_stream {
	const char *const *args;   /* after argv[0], NULL-terminated */
	const struct tq_stream_opt *opts; /* {NULL}-ended; NULL: none */
	int keep_other;
	/* the needles an object of its stdout holds to be read (as the
	 * entry's needles: NULL every object) */
	const char *const *needles;
	void (*begin)(struct tq_result_parser *p);
	void (*read)(struct tq_result_parser *p, const struct cJSON *o);
	int (*interrupt)(struct tq_result_parser *p);
	/* The agent's own tuning of a shared protocol (stream_int.h says
	 * which protocol reads what); NULL: none. */
	const void *tune;
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

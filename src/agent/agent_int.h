/*
 * agent_int.h - what src/agent lends its own registry (registry.c): each
 * agent CLI's functions that the table names. Not for use outside
 * src/agent; everyone else asks the registry (registry.h).
 */
#ifndef TQ_AGENT_INT_H
#define TQ_AGENT_INT_H

#include <stddef.h>

struct cJSON;
struct tq_agent_run;
struct tq_env;
struct tq_err;
struct tq_queue;
struct tq_result_parser;
struct tq_task;

/* result.c: one JSON object of each CLI's stdout read into p. */
void tq_result_claude(struct tq_result_parser *p, const struct cJSON *o);
void tq_result_gemini(struct tq_result_parser *p, const struct cJSON *o);
void tq_result_codex(struct tq_result_parser *p, const struct cJSON *o);
void tq_result_opencode(struct tq_result_parser *p, const struct cJSON *o);

/* result.c: session id forms (registry.h's session_bad). */
const char *tq_result_session_uuid(const char *id, size_t len);     /* claude, gemini, codex */
const char *tq_result_session_opencode(const char *id, size_t len); /* ses_... */

/* agent.c: capping a CLI's own retries (registry.h's cap_retries). */
int tq_agent_cap_claude(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
			struct tq_agent_run *ar, struct tq_err *err);
int tq_agent_cap_gemini(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
			struct tq_agent_run *ar, struct tq_err *err);
int tq_agent_cap_codex(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		       struct tq_agent_run *ar, struct tq_err *err);

/* agent.c: codex's CODEX_HOME without the user's MCP servers (isolate). */
int tq_agent_isolate_codex(struct tq_env *env, struct tq_agent_run *ar, struct tq_err *err);

/* agent.c: the model a CLI's own config names (conf_model). */
char *tq_agent_model_codex(char *const *v, size_t n, const struct tq_env *env, const char *cwd);
char *tq_agent_model_opencode(char *const *v, size_t n, const struct tq_env *env,
			      const char *cwd);

#endif

/*
 * registry.c - the table of agent CLIs (registry.h). Each entry names the
 * functions that differ for that CLI; the functions live with their kind
 * (result.c reads outputs, agent.c prepares runs), declared in agent_int.h.
 *
 * Invariant: names are unique and none is "none" (a profile's parser that
 * means no parser).
 */
#include "registry.h"

#include <string.h>

#include <bsd/string.h>

#include "agent_int.h"

/*
 * Substrings one of which an object must hold to be worth parsing. In
 * valid JSON a '"' inside a string is escaped, so "\"result\"" can only be
 * the string token "result" (a key or a value), never text inside a tool's
 * output: the multi-MB tool result lines of a Claude run are skipped after
 * one scan. gemini has none: small lines, and the json document.
 */
static const char *const claude_needles[] = { "\"result\"", "\"init\"", NULL };
static const char *const codex_needles[] = {
	"\"thread.started\"", "\"agent_message\"", "\"turn.completed\"",
	"\"turn.failed\"", NULL,
};
static const char *const opencode_needles[] = {
	"\"step_start\"", "\"text\"", "\"step_finish\"", "\"error\"", NULL,
};

static const struct tq_agent_def agents[] = {
	{
		.name = "claude",
		.needles = claude_needles,
		.read_obj = tq_result_claude,
		.session_bad = tq_result_session_uuid,
		.cap_retries = tq_agent_cap_claude,
	},
	{
		.name = "gemini",
		.read_obj = tq_result_gemini,
		.session_bad = tq_result_session_uuid,
		.cap_retries = tq_agent_cap_gemini,
	},
	{
		.name = "codex",
		.needles = codex_needles,
		.read_obj = tq_result_codex,
		.session_bad = tq_result_session_uuid,
		.cap_retries = tq_agent_cap_codex,
		.isolate = tq_agent_isolate_codex,
		.conf_model = tq_agent_model_codex,
	},
	{
		.name = "opencode",
		.needles = opencode_needles,
		.read_obj = tq_result_opencode,
		.session_bad = tq_result_session_opencode,
		/* no setting for its own retries (5 of its own) */
		.conf_model = tq_agent_model_opencode,
	},
};

#define NAGENTS (sizeof(agents) / sizeof(agents[0]))

const struct tq_agent_def *tq_registry_find(const char *name)
{
	for (size_t i = 0; name != NULL && i < NAGENTS; i++)
		if (strcmp(name, agents[i].name) == 0)
			return &agents[i];
	return NULL;
}

const struct tq_agent_def *tq_registry_at(size_t i)
{
	return i < NAGENTS ? &agents[i] : NULL;
}

void tq_registry_names(char *buf, size_t n)
{
	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < NAGENTS; i++) {
		if (i > 0)
			strlcat(buf, ", ", n);
		strlcat(buf, agents[i].name, n);
	}
}

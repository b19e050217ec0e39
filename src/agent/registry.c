/*
 * registry.c - the table of agent CLIs (registry.h). Each entry is defined
 * in its agent's own file (claude.c: tq_agent_claude, ...), where the
 * functions it names live; this file only lists them.
 *
 * Invariant: names are unique and none is "none" (a profile's parser that
 * means no parser); test_registry checks it.
 */
#include "registry.h"

#include <string.h>

#include <bsd/string.h>

/* The agents, in the table's order (the order of messages): adding one is
 * its name here (registry.h says what else). */
#define AGENTS(X) X(claude) X(gemini) X(codex) X(opencode)

#define DECLARE(name) extern const struct tq_agent_def tq_agent_##name;
#define ENTRY(name) &tq_agent_##name,

AGENTS(DECLARE)

static const struct tq_agent_def *const agents[] = { AGENTS(ENTRY) };

#define NAGENTS (sizeof(agents) / sizeof(agents[0]))

const struct tq_agent_def *tq_registry_find(const char *name)
{
	for (size_t i = 0; name != NULL && i < NAGENTS; i++)
		if (strcmp(name, agents[i]->name) == 0)
			return agents[i];
	return NULL;
}

const struct tq_agent_def *tq_registry_at(size_t i)
{
	return i < NAGENTS ? agents[i] : NULL;
}

void tq_registry_names(char *buf, size_t n)
{
	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < NAGENTS; i++) {
		if (i > 0)
			strlcat(buf, ", ", n);
		strlcat(buf, agents[i]->name, n);
	}
}

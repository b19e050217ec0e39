/*
 * profile.c - agent profiles (profile.h). Placeholder: filled in by the
 * agent-profiles work (issue 7).
 */
#include "profile.h"

#include <stdlib.h>

#include "profiles_json.h"

struct tq_profiles {
	int unused;
};

int tq_profiles_load(struct tq_profiles **pp, struct tq_err *err)
{
	(void)tq_profiles_json;
	*pp = NULL;
	return tq_err_set(err, TQ_EINVAL, "agent profiles are not built yet");
}

void tq_profiles_free(struct tq_profiles *p)
{
	free(p);
}

const struct tq_profile *tq_profiles_find(const struct tq_profiles *p, const char *name)
{
	(void)p;
	(void)name;
	return NULL;
}

void tq_profiles_names(const struct tq_profiles *p, char *buf, size_t n)
{
	(void)p;
	if (n > 0)
		buf[0] = '\0';
}

int tq_profile_expand(char *const *argv, size_t argc, const struct tq_placeholders *v,
		      char ***out, size_t *outc, struct tq_err *err)
{
	(void)argv;
	(void)argc;
	(void)v;
	*out = NULL;
	*outc = 0;
	return tq_err_set(err, TQ_EINVAL, "agent profiles are not built yet");
}

void tq_profile_argv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

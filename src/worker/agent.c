/*
 * agent.c - agent tasks around their run (agent.h). Placeholder: filled in
 * by the agent-profiles work (issue 7).
 */
#include "agent.h"

#include <string.h>

int tq_agent_prepare(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		     struct tq_agent_run *ar, struct tq_err *err)
{
	(void)q;
	(void)env;
	ar->cwd = t->cwd;
	if (t->agent != NULL)
		return tq_err_set(err, TQ_EINVAL, "agent tasks are not supported yet");
	return 0;
}

void tq_agent_cleanup(struct tq_agent_run *ar)
{
	(void)ar;
}

int tq_workspace_sweep(struct tq_queue *q, const char *home, int *removed,
		       struct tq_err *err)
{
	(void)q;
	(void)home;
	(void)err;
	if (removed != NULL)
		*removed = 0;
	return 0;
}

/*
 * agent.h - what a worker does for an agent task (t->agent != NULL) around
 * its run: expand the stored command template, set up the isolated
 * workspace, and clean up after.
 */
#ifndef TQ_AGENT_H
#define TQ_AGENT_H

#include <limits.h>

#include "../common/env.h"
#include "../queue/queue.h"

struct tq_agent_run {
	char **argv;               /* the expanded command (owned), or NULL:
				    * not an agent task, run t->argv */
	size_t argc;
	const char *cwd;           /* where to run: workspace or t->cwd */
	char workspace[PATH_MAX];  /* "" when not isolated */
	char parser[32];           /* output parser name for result.h; "" none */
};

#define TQ_AGENT_RUN_INIT { .argv = NULL }

/*
 * Prepare task t (claimed, attempt started) to run: for an agent task,
 * resolve {session_id} from the task's session (the agent session of the
 * previous succeeded task with that key, tq_queue_session_get), create the
 * workspace when t->isolate (sources as symlinks, prompt.md, empty MCP
 * configs), expand the template, and adjust env. Not an agent task: only
 * ar->cwd = t->cwd. On error (a source gone, the workspace not creatable)
 * returns < 0 with err: the runner records spawn_failed.
 */
int tq_agent_prepare(struct tq_queue *q, const struct tq_task *t, struct tq_env *env,
		     struct tq_agent_run *ar, struct tq_err *err);

/* After the task ended, whatever the outcome: remove the workspace, free. */
void tq_agent_cleanup(struct tq_agent_run *ar);

/*
 * Remove workspaces under HOME/work whose task is finished or gone (never
 * one of a task that is running or waiting); the supervisor calls this at
 * start and now and then. *removed (may be NULL) counts them.
 */
int tq_workspace_sweep(struct tq_queue *q, const char *home, int *removed,
		       struct tq_err *err);

#endif

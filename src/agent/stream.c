/*
 * stream.c - an agent task run in its CLI's stream-input mode (issue 19,
 * warm sessions; registry.h, struct tq_agent_stream): the command that
 * starts the process, and the lines that give it a message or interrupt
 * its turn, each from the agent's registry entry.
 *
 * What it does not: start, hold or talk to the process (the supervisor's
 * worker/warm.c holds it, the worker's runner.c runs a turn on it).
 *
 * The command is the task's own, expanded by tq_agent_prepare (its model,
 * the session to resume, its MCP flags), so a warm process runs what a cold
 * run of the same message would, less the prompt and what the stream-input
 * mode does not take (the entry's opts): the prompt travels in the turn,
 * once per message.
 *
 * An isolated workspace (--isolate) is the process's working directory for
 * its whole life, not one message's, and so is the run's private directory
 * (an agent's overlaid config home, its environment names it):
 * tq_agent_stream_keep hands both to the process (their owner file names
 * the process, so the sweep removes them once the process is gone, and the
 * message's cleanup leaves them). A later message of the session, whose
 * own are made beside them, runs in the process's (the ones of the message
 * that started it).
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sys.h"

#include "agent_int.h"
#include "profile.h"
#include "registry.h"

const struct tq_agent_stream *tq_agent_stream_of(const struct tq_agent_run *ar)
{
	const struct tq_agent_def *def = tq_registry_find(ar->parser[0] ? ar->parser : NULL);

	return def != NULL ? def->stream : NULL;
}

/* Copy s into v, or fail with no memory. */
static int push(char ***v, size_t *n, const char *s, struct tq_err *err)
{
	char *c = strdup(s);

	if (c == NULL || tq_profile_argv_push(v, n, c) < 0) {
		free(c);
		return tq_err_set(err, TQ_ENOMEM, "stream command: out of memory");
	}
	return 0;
}

/* The entry of opts that element a is (its name, or "name=value"), or
 * NULL. */
static const struct tq_stream_opt *opt_of(const struct tq_agent_stream *st, const char *a)
{
	for (const struct tq_stream_opt *o = st->opts; o != NULL && o->name != NULL; o++) {
		size_t n = strlen(o->name);
		if (strncmp(a, o->name, n) == 0 && (a[n] == '\0' || (a[n] == '=' && a[0] == '-')))
			return o;
	}
	return NULL;
}

int tq_agent_stream_argv(const struct tq_agent_run *ar, const char *prompt, char ***out,
			 size_t *outc, struct tq_err *err)
{
	const struct tq_agent_stream *st = tq_agent_stream_of(ar);
	char **v = NULL;
	size_t n = 0;
	int rc = 0;

	*out = NULL;
	*outc = 0;
	if (st == NULL || ar->argv == NULL || ar->argc == 0)
		return tq_err_set(err, TQ_EINVAL, "agent \"%s\" has no stream-input mode",
				  ar->parser[0] ? ar->parser : "none");
	if ((rc = push(&v, &n, ar->argv[0], err)) < 0)
		goto out;
	for (size_t i = 0; st->args != NULL && st->args[i] != NULL && rc == 0; i++)
		rc = push(&v, &n, st->args[i], err);
	for (size_t i = 1; i < ar->argc && rc == 0; i++) {
		const struct tq_stream_opt *o = opt_of(st, ar->argv[i]);
		int keep = o != NULL ? o->keep : st->keep_other;
		size_t take = o != NULL && strchr(ar->argv[i], '=') == NULL ? (size_t)o->values : 0;

		if (strcmp(ar->argv[i], "--") == 0)
			break; /* the prompt, and whatever follows it */
		if (prompt != NULL && strcmp(ar->argv[i], prompt) == 0)
			continue;
		for (size_t k = 0; k <= take && i + k < ar->argc && rc == 0; k++)
			if (keep)
				rc = push(&v, &n, ar->argv[i + k], err);
		i += take;
	}
out:
	if (rc < 0) {
		tq_profile_argv_free(v);
		return rc;
	}
	*out = v;
	*outc = n;
	return 0;
}

/* Hand directory dir (a workspace, or a run's private one) to the process
 * named by owner: its owner file replaced. */
static int keep_dir(const char *dir, const char *owner, struct tq_err *err)
{
	int dfd, rc = 0;

	/* a new owner file beside the old, then renamed over it: the sweep
	 * never reads a half-written one */
	if ((dfd = tq_open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) < 0)
		return tq_err_sys(err, "workspace: open %s", dir);
	unlinkat(dfd, TQ_WORKSPACE_OWNER ".new", 0);
	if ((rc = tq_workspace_write(dfd, TQ_WORKSPACE_OWNER ".new", owner, err)) == 0 &&
	    renameat(dfd, TQ_WORKSPACE_OWNER ".new", dfd, TQ_WORKSPACE_OWNER) < 0) {
		rc = tq_err_sys(err, "workspace: rename its owner file in %s", dir);
		unlinkat(dfd, TQ_WORKSPACE_OWNER ".new", 0);
	}
	tq_close(dfd);
	return rc;
}

int tq_agent_stream_keep(struct tq_agent_run *ar, pid_t pid, int64_t start,
			 struct tq_err *err)
{
	char *owner = NULL;
	int rc = 0;

	if (ar->workspace[0] == '\0' && ar->aux[0] == '\0')
		return 0;
	if ((owner = tq_workspace_owner(ar->home, 0, 0, pid, start)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "workspace: out of memory");
	/* the process's now: cleanup leaves them */
	if (ar->workspace[0] != '\0' && (rc = keep_dir(ar->workspace, owner, err)) == 0)
		ar->workspace[0] = '\0';
	if (rc == 0 && ar->aux[0] != '\0' && (rc = keep_dir(ar->aux, owner, err)) == 0)
		ar->aux[0] = '\0';
	free(owner);
	return rc;
}

/*
 * onexit.c - `submit --on-exit CMD` (onexit.h): after a task's end is
 * recorded, its worker runs CMD with /bin/sh -c in the task's working
 * directory (/ when that is gone) and environment, plus TASKQ_ID,
 * TASKQ_STATE, TASKQ_EXIT_CODE and TASKQ_LOG.
 *
 * The hook is a child like a task: its own session and process group
 * (tq_spawn_start), stdin on /dev/null, its output read through pipes and
 * copied to the worker's log (the first ON_EXIT_LOG_LINES lines, escaped;
 * the rest counted and dropped). It is bounded: at its timeout (60 s, or
 * $TASKQ_ON_EXIT_TIMEOUT in the worker's environment) its group gets
 * SIGTERM, then SIGKILL ON_EXIT_KILL_GRACE_MS later (term.h, as a task's
 * timeout). It is reaped
 * when SIGCHLD arrives on the worker's signalfd (the event loop, loop.h,
 * waits on that, the pipes and the deadline), never by a blocking wait that
 * could outlast the timeout. When it has exited, whatever it left behind is
 * swept (tq_proc_sweep), as after a task.
 *
 * What it does not do: change the task. The task is recorded before the
 * hook starts; the hook's failure, timeout or absence is only logged. A
 * shutdown that arrives meanwhile is noted (tq_worker_on_signal) and cuts
 * the hook's time to the shutdown grace.
 */
#include "onexit.h"

#define LIBBSD_NETBSD_VIS
#include <bsd/vis.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/env.h"
#include "common/parse.h"
#include "common/sys.h"
#include "agent/scrub.h"
#include "proc/loop.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "proc/term.h"
#include "queue/logstore.h"

#define ON_EXIT_KILL_GRACE_MS 2000
#define ON_EXIT_DRAIN_MS 1000     /* after exit and sweep: wait this long for EOF */
#define ON_EXIT_LOG_LINES 20      /* lines of its output copied to the log */
#define ON_EXIT_LINE_MAX 400      /* bytes of one line copied (then "...") */
#define ON_EXIT_READ 4096

struct hook {
	struct worker *w;
	int64_t id;
	struct tq_child child;
	int status;
	int exited;
	struct tq_term term;        /* its timeout: TERM, then KILL */
	/* output, by line; one partial line per stream */
	char part[2][ON_EXIT_LINE_MAX + 1];
	size_t plen[2];
	int ptrunc[2];              /* the partial line was cut at the bound */
	int64_t lines, dropped;
};

static int64_t timeout_ms(struct worker *w)
{
	const char *v = getenv(TQ_ON_EXIT_TIMEOUT_VAR);
	struct tq_err err = TQ_ERR_INIT;
	int64_t ms;

	if (v == NULL || *v == '\0')
		return TQ_ON_EXIT_TIMEOUT_MS;
	if (tq_parse_duration(v, &ms, &err) < 0 || ms <= 0) {
		tq_worker_log(w, "$%s: %s; using %ds", TQ_ON_EXIT_TIMEOUT_VAR,
			      err.msg[0] ? err.msg : "expected more than 0",
			      TQ_ON_EXIT_TIMEOUT_MS / 1000);
		return TQ_ON_EXIT_TIMEOUT_MS;
	}
	return ms;
}

/* The task's environment (scrubbed again, as for the task) plus ours. */
static int build_env(struct hook *h, const struct tq_task *t, enum tq_state state,
		     int exit_code, struct tq_env *env, struct tq_err *err)
{
	char kv[PATH_MAX + 64], logp[PATH_MAX];
	int rc;

	if ((rc = tq_scrub_env(env, t->env, getenv(TQ_ENV_SCRUB_VAR), err)) < 0)
		return rc;
	if (tq_log_export(h->w->q, t->id, logp, sizeof(logp), NULL) < 0)
		logp[0] = '\0';
	snprintf(kv, sizeof(kv), "TASKQ_ID=%lld", (long long)t->id);
	if ((rc = tq_env_set(env, kv, err)) < 0)
		return rc;
	snprintf(kv, sizeof(kv), "TASKQ_STATE=%s", tq_state_name(state));
	if ((rc = tq_env_set(env, kv, err)) < 0)
		return rc;
	if (exit_code >= 0)
		snprintf(kv, sizeof(kv), "TASKQ_EXIT_CODE=%d", exit_code);
	else
		snprintf(kv, sizeof(kv), "TASKQ_EXIT_CODE=");
	if ((rc = tq_env_set(env, kv, err)) < 0)
		return rc;
	snprintf(kv, sizeof(kv), "TASKQ_LOG=%s", logp);
	return tq_env_set(env, kv, err);
}

/* Start /bin/sh -c CMD in cwd, or in / when cwd is no directory (any more). */
static int start(struct hook *h, const struct tq_task *t, char **envp, struct tq_err *err)
{
	char *argv[] = { "/bin/sh", "-c", t->on_exit, NULL };
	struct stat sb;

	h->child.argv = argv;
	h->child.envp = envp;
	h->child.in = TQ_SPAWN_STDIN_NULL;
	h->child.umask = t->umask; /* the files it makes: as the task's */
	h->child.cwd = t->cwd != NULL && stat(t->cwd, &sb) == 0 && S_ISDIR(sb.st_mode)
		       ? t->cwd : "/";
	return tq_spawn_start(&h->child, err);
}

/* Copy one whole (or cut) line to the worker's log, escaped. */
static void log_line(struct hook *h, int s)
{
	char esc[ON_EXIT_LINE_MAX * 4 + 1];

	if (h->lines++ >= ON_EXIT_LOG_LINES) {
		h->dropped++;
	} else {
		/* masked before it is escaped: escaping would hide a credential
		 * with a backslash or a tab in it from the mask in the log line */
		h->plen[s] = tq_secrets_mask(h->w->secrets, h->part[s], h->plen[s],
					     sizeof(h->part[s]));
		strnvisx(esc, sizeof(esc), h->part[s], h->plen[s],
			 VIS_CSTYLE | VIS_OCTAL | VIS_TAB | VIS_NL);
		tq_worker_log(h->w, "task %lld on-exit %s: %s%s", (long long)h->id,
			      s ? "stderr" : "stdout", esc, h->ptrunc[s] ? "..." : "");
	}
	h->plen[s] = 0;
	h->ptrunc[s] = 0;
}

static void take_bytes(struct hook *h, int s, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			log_line(h, s);
		} else if (h->plen[s] < ON_EXIT_LINE_MAX) {
			h->part[s][h->plen[s]++] = p[i];
		} else {
			h->ptrunc[s] = 1;
		}
	}
}

/* Read what waits on stream s; close it at EOF or on an error. */
static void pump(struct hook *h, int s)
{
	int *fd = s ? &h->child.err_fd : &h->child.out_fd;
	char buf[ON_EXIT_READ];
	ssize_t r = tq_read(*fd, buf, sizeof(buf));

	if (r > 0) {
		take_bytes(h, s, buf, (size_t)r);
		return;
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (h->plen[s] > 0)
		log_line(h, s);
	tq_close(*fd);
	*fd = -1;
}

static void on_stdout(void *arg, short revents)
{
	(void)revents;
	pump(arg, 0);
}

static void on_stderr(void *arg, short revents)
{
	(void)revents;
	pump(arg, 1);
}

/* Reaped by the loop at a SIGCHLD: the hook, or a stray of it that
 * exited (the rest are swept after the hook). */
static void on_child(pid_t pid, int status, void *arg)
{
	struct hook *h = arg;

	if (h->exited || pid != h->child.pid)
		return;
	h->status = status;
	h->exited = 1;
	tq_term_step(&h->term, TQ_TERM_EXITED, tq_mono_ms(), NULL);
}

/* A stop signal: note it, and shorten the hook's time. */
static void on_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct hook *h = arg;

	if (si->ssi_signo == SIGCHLD)
		return; /* reaped already (on_child) */
	tq_worker_on_signal(h->w, si);
	if (h->w->stopping)
		tq_term_due(&h->term, h->w->stop_at);
}

/* Its deadline passed: TERM to the group, then KILL (term.h). The group is
 * ours to signal: its leader is our child and not reaped yet. A shutdown's
 * grace that cut its time (tq_term_due) says the same as its timeout. */
static void on_deadline(struct hook *h, int64_t timeout, int64_t now)
{
	struct tq_err err = TQ_ERR_INIT;
	char buf[32];

	if (h->term.state == TQ_TERM_RUNNING) {
		tq_format_duration(timeout, buf, sizeof(buf));
		tq_worker_log(h->w, "task %lld on-exit: still running after %s; stopping it",
			      (long long)h->id, buf);
	}
	if (tq_term_step(&h->term, TQ_TERM_TICK, now, &err) < 0)
		tq_worker_log(h->w, "task %lld on-exit: %s", (long long)h->id, err.msg);
}

/* Until the hook has exited and its output is closed (or given up on).
 * Each turn (loop.h) reads its stdout, its stderr, then the signals. */
static void loop(struct hook *h, int64_t timeout)
{
	const struct tq_loop l = { .sigfd = h->w->sigfd, .on_child = on_child,
				   .on_signal = on_signal, .arg = h };
	const struct tq_loop_cb cb[2] = { { on_stdout, h }, { on_stderr, h } };
	struct tq_err err = TQ_ERR_INIT;
	int64_t drain_until = 0;

	for (;;) {
		struct pollfd p[2] = {
			{ h->child.out_fd, POLLIN, 0 },
			{ h->child.err_fd, POLLIN, 0 },
		};
		int64_t now = tq_mono_ms();

		if (h->exited && drain_until == 0) {
			size_t killed = 0;
			/* what it left behind (a `cmd &`) holds the pipes open */
			if (tq_proc_sweep(NULL, 0, &killed, &err) < 0)
				tq_worker_log(h->w, "task %lld on-exit: sweep: %s",
					      (long long)h->id, err.msg);
			else if (killed > 0)
				tq_worker_log(h->w, "task %lld on-exit: killed %zu leftover "
					      "process%s", (long long)h->id, killed,
					      killed == 1 ? "" : "es");
			drain_until = tq_mono_ms() + ON_EXIT_DRAIN_MS;
		}
		if (h->exited && ((h->child.out_fd < 0 && h->child.err_fd < 0) ||
				  now >= drain_until))
			return;
		if (!h->exited && now >= h->term.deadline)
			on_deadline(h, timeout, now);
		if (tq_loop_wait(&l, p, cb, 2, h->exited ? drain_until : h->term.deadline, &err) < 0)
			tq_worker_log(h->w, "on-exit: %s", err.msg);
	}
}

static void report(struct hook *h)
{
	char buf[64];

	if (h->dropped > 0)
		tq_worker_log(h->w, "task %lld on-exit: %lld more line%s of output not logged",
			      (long long)h->id, (long long)h->dropped,
			      h->dropped == 1 ? "" : "s");
	if (WIFEXITED(h->status) && WEXITSTATUS(h->status) == 0 && !h->term.timed_out)
		return;
	tq_proc_status_str(h->status, buf, sizeof(buf));
	tq_worker_log(h->w, "task %lld on-exit: failed (%s%s); the task stays as recorded",
		      (long long)h->id, buf, h->term.timed_out ? ", at its timeout" : "");
}

void tq_on_exit_run(struct worker *w, const struct tq_task *t, enum tq_state state,
		    int exit_code)
{
	struct hook h = { .w = w, .id = t->id, .child = TQ_CHILD_INIT };
	struct tq_env env = TQ_ENV_INIT;
	struct tq_err err = TQ_ERR_INIT;
	int64_t timeout;

	if (t->on_exit == NULL || t->on_exit[0] == '\0')
		return;
	timeout = timeout_ms(w);
	if (build_env(&h, t, state, exit_code, &env, &err) < 0 ||
	    start(&h, t, env.vars, &err) < 0) {
		tq_worker_log(w, "task %lld on-exit: not started: %s", (long long)t->id,
			      err.msg);
		tq_env_release(&env);
		return;
	}
	tq_env_release(&env);
	tq_term_init(&h.term, h.child.pid, tq_mono_ms(), timeout, ON_EXIT_KILL_GRACE_MS);
	if (w->stopping)
		tq_term_due(&h.term, w->stop_at);
	loop(&h, timeout); /* returns once the hook is reaped */
	h.child.pid = -1;
	report(&h);
	tq_spawn_release(&h.child);
}

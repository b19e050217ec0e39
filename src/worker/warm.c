/*
 * warm.c - the supervisor's warm agent processes (warm.h): started on a
 * worker's TAKE through the one exec site (proc/spawn.h: its own session
 * and process group, stdin and stdout/stderr pipes, every fd CLOEXEC), held
 * between turns, lent to one worker at a time with SCM_RIGHTS
 * (ipc/warmsock.h), ended by idle timeout, --max-warm, a stop, or when the
 * worker that holds it asks or dies.
 *
 * Invariants: a process is lent on at most one connection; only the
 * supervisor reaps it (it is our child), so its pid names it until
 * tq_warm_reaped, and the group signals of its ending (term.h) can never
 * reach a reused id; the supervisor keeps the write end of its stdin and
 * the read ends of its output while it is lent, so a worker's close never
 * ends it by accident; a worker waiting for its end (END) is answered only
 * once it is reaped, with its wait status.
 */
#include "warm.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/sys.h"
#include "queue/queue.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "proc/term.h"

enum warm_state { W_FREE = 0, W_IDLE, W_LENT, W_ENDING };

struct warm_proc {
	enum warm_state state;
	char key[TQ_WARM_KEY_MAX];
	pid_t pid;
	int64_t start;             /* its start time: (pid, start) names it */
	int in_fd, out_fd, err_fd, pidfd;
	int conn;                  /* LENT: the connection it is lent on */
	int64_t idle_since;        /* mono ms: when it was last given back */
	int64_t idle_ms;           /* its session's idle timeout */
	struct tq_term term;       /* ENDING: TERM, grace, KILL */
	int reply;                 /* ENDING: a connection waiting for STATUS */
	int dead;                  /* LENT, and reaped: status is its end */
	int status;
	int close_after;           /* LENT: `taskq sessions close` asked: end it
				    * when its turn gives it back */
	char why[96];              /* why it is ending, for the log */
	uint64_t fp[TQ_WARM_FP_N]; /* the fingerprint of the command it runs */
	char proto[TQ_WARM_STATE_MAX]; /* its protocol's state, as its last
				    * turn left it (DONE's payload), lent with it */
};

struct warm_conn {
	int fd;                    /* -1: free */
	int proc;                  /* the process lent on it, -1: none */
};

/* Out of descriptors (EMFILE) or memory at an accept: the backlog waits
 * this long rather than the loop spinning on a listening socket it cannot
 * empty. */
#define ACCEPT_PAUSE_MS 100

struct tq_warm {
	const char *home;
	int64_t paused_until;      /* mono ms: not accepting until then; 0: accepting */
	const char *node;          /* ours: the store records it with each one */
	struct tq_queue *q;
	int lfd;
	int max_warm;
	int stopping;
	int64_t stop_grace;
	void (*log)(const char *fmt, ...);
	struct warm_proc procs[TQ_WARM_PROCS_MAX];
	struct warm_conn conns[TQ_WARM_CONN_MAX];
	/* tq_warm_poll's entries after the listening socket: their
	 * connections (only those open: poll's count of fds is bounded by
	 * RLIMIT_NOFILE, and a supervisor out of fds must still poll) */
	int polled[TQ_WARM_CONN_MAX];
	char buf[TQ_WARM_MSG_MAX];
};

int tq_warm_open(struct tq_warm **wp, const char *home, const char *node,
		 struct tq_queue *q, int max_warm, void (*log)(const char *fmt, ...),
		 struct tq_err *err)
{
	struct tq_warm *w = calloc(1, sizeof(*w));
	int rc;

	*wp = NULL;
	if (w == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	w->home = home;
	w->node = node;
	w->q = q;
	w->log = log;
	w->max_warm = max_warm > 0 ? max_warm : TQ_WARM_DEFAULT_MAX;
	w->stop_grace = TQ_WARM_GRACE_MS;
	for (int i = 0; i < TQ_WARM_CONN_MAX; i++)
		w->conns[i] = (struct warm_conn){ .fd = -1, .proc = -1 };
	for (int i = 0; i < TQ_WARM_PROCS_MAX; i++)
		w->procs[i] = (struct warm_proc){ .in_fd = -1, .out_fd = -1, .err_fd = -1,
						  .pidfd = -1, .conn = -1, .reply = -1 };
	if ((rc = tq_warmsock_listen(home, &w->lfd, err)) < 0) {
		free(w);
		return rc;
	}
	*wp = w;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Ending                                                             */

/* The session's row says what runs (taskq sessions): the process, busy or
 * idle, forgotten once it is reaped. A store that refuses is said in the
 * log and otherwise ignored: the process is held all the same, and the
 * row is set right at its next change. */
static void row_set(struct tq_warm *w, const struct warm_proc *p)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_warm_set(w->q, p->key, w->node, p->pid, p->start, tq_now_ms(), &err) < 0)
		w->log("warm session %s: recording its agent: %s", p->key, err.msg);
}

static void row_idle(struct tq_warm *w, const struct warm_proc *p, int64_t since)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_warm_idle(w->q, p->key, p->pid, p->start, since, &err) < 0)
		w->log("warm session %s: %s", p->key, err.msg);
}

static void row_clear(struct tq_warm *w, const char *key, int pid, int64_t start)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_warm_clear(w->q, key, pid, start, NULL, &err) < 0)
		w->log("warm session %s: %s", key, err.msg);
}

static void close_pipes(struct warm_proc *p)
{
	tq_close(p->in_fd);
	tq_close(p->out_fd);
	tq_close(p->err_fd);
	p->in_fd = p->out_fd = p->err_fd = -1;
}

static void conn_close(struct tq_warm *w, int c)
{
	if (c < 0 || w->conns[c].fd < 0)
		return;
	tq_close(w->conns[c].fd);
	w->conns[c] = (struct warm_conn){ .fd = -1, .proc = -1 };
}

/* End process i: its stdin closed (the CLI's own clean exit), TERM to its
 * group, KILL after grace (tq_warm_tick). Its output pipes stay open until
 * it is reaped, so it never dies of SIGPIPE writing its last lines. */
static void end_proc(struct tq_warm *w, int i, int64_t grace, const char *why)
{
	struct warm_proc *p = &w->procs[i];
	struct tq_err err = TQ_ERR_INIT;
	int64_t now = tq_mono_ms();

	if (p->state == W_FREE || p->state == W_ENDING)
		return;
	if (p->state == W_LENT && p->conn >= 0)
		w->conns[p->conn].proc = -1;
	p->conn = -1;
	p->state = W_ENDING;
	strlcpy(p->why, why, sizeof(p->why));
	tq_close(p->in_fd);
	p->in_fd = -1;
	tq_term_init(&p->term, p->pid, now, 0, grace >= 0 ? grace : TQ_WARM_GRACE_MS);
	if (tq_term_step(&p->term, TQ_TERM_STOP, now, &err) < 0)
		w->log("warm session %s (pid %d): %s", p->key, (int)p->pid, err.msg);
	w->log("warm session %s: ending its agent (pid %d): %s", p->key, (int)p->pid, why);
}

static void answer_status(struct tq_warm *w, int c, int status)
{
	struct tq_warm_hdr h = { .op = TQ_WARM_STATUS, .status = status };

	if (c >= 0 && w->conns[c].fd >= 0)
		tq_warmsock_send(w->conns[c].fd, &h, NULL, 0, NULL, 0, NULL);
	conn_close(w, c);
}

static void proc_free(struct warm_proc *p)
{
	close_pipes(p);
	tq_close(p->pidfd);
	*p = (struct warm_proc){ .in_fd = -1, .out_fd = -1, .err_fd = -1, .pidfd = -1,
				 .conn = -1, .reply = -1 };
}

int tq_warm_reaped(struct tq_warm *w, pid_t pid, int status)
{
	char st[96];

	for (int i = 0; w != NULL && i < TQ_WARM_PROCS_MAX; i++) {
		struct warm_proc *p = &w->procs[i];
		if (p->state == W_FREE || p->pid != pid)
			continue;
		tq_proc_status_str(status, st, sizeof(st));
		row_clear(w, p->key, p->pid, p->start);
		if (p->state == W_ENDING)
			w->log("warm session %s: its agent (pid %d) ended (%s)", p->key,
			       (int)pid, st);
		else
			w->log("warm session %s: its agent (pid %d) died %s (%s); the session's "
			       "next message starts one that resumes", p->key, (int)pid,
			       p->state == W_LENT ? "during a turn" : "between messages", st);
		if (p->state == W_LENT) {
			/* its worker learns it on the pipes and asks (END): the
			 * status waits for that, or goes with the connection */
			p->dead = 1;
			p->status = status;
			p->pid = -1;
			close_pipes(p);
			tq_close(p->pidfd);
			p->pidfd = -1;
			return 1;
		}
		if (p->reply >= 0)
			answer_status(w, p->reply, status);
		proc_free(p);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Lending                                                            */

/* key's process that is not ending (at most one), or -1. One that ends
 * (idle timeout, --max-warm, died and not reaped yet) may still be there
 * beside a new one. */
static int find(const struct tq_warm *w, const char *key)
{
	for (int i = 0; i < TQ_WARM_PROCS_MAX; i++)
		if (w->procs[i].state != W_FREE && w->procs[i].state != W_ENDING &&
		    strcmp(w->procs[i].key, key) == 0)
			return i;
	return -1;
}

static int live(const struct tq_warm *w)
{
	int n = 0;

	for (int i = 0; i < TQ_WARM_PROCS_MAX; i++)
		n += w->procs[i].state == W_IDLE || w->procs[i].state == W_LENT;
	return n;
}

/* --max-warm: while more live processes than allowed, end the least
 * recently used idle one (none idle: they are all in turns, and the next
 * one given back is ended then). */
static void enforce_max(struct tq_warm *w, int room)
{
	while (live(w) + room > w->max_warm) {
		int lru = -1;
		for (int i = 0; i < TQ_WARM_PROCS_MAX; i++)
			if (w->procs[i].state == W_IDLE &&
			    (lru < 0 || w->procs[i].idle_since < w->procs[lru].idle_since))
				lru = i;
		if (lru < 0)
			return;
		end_proc(w, lru, -1, "--max-warm: the least recently used idle one");
	}
}

static void refuse(struct tq_warm *w, int c, const char *why)
{
	struct tq_warm_hdr h = { .op = TQ_WARM_REFUSE };

	tq_warmsock_send(w->conns[c].fd, &h, why, strlen(why) + 1, NULL, 0, NULL);
	conn_close(w, c);
}

/* The TAKE's payload: key, cwd, argv[argc], env[envc], each NUL-ended. */
static int split(char *pl, size_t len, uint32_t count, char **v)
{
	size_t off = 0;

	for (uint32_t i = 0; i < count; i++) {
		size_t l;
		if (off >= len)
			return -1;
		l = strnlen(pl + off, len - off);
		if (off + l >= len)
			return -1;
		v[i] = pl + off;
		off += l + 1;
	}
	v[count] = NULL;
	return 0;
}

static int start_proc(struct tq_warm *w, const char *key, char **argv, char **envp,
		      const char *cwd, int umask_v, const uint64_t *fp, struct tq_err *err)
{
	struct tq_child c = TQ_CHILD_INIT;
	int i, rc;

	for (i = 0; i < TQ_WARM_PROCS_MAX && w->procs[i].state != W_FREE; i++)
		;
	if (i == TQ_WARM_PROCS_MAX)
		return tq_err_set(err, TQ_ECAP, "%d warm agents are held already",
				  TQ_WARM_PROCS_MAX);
	c.argv = argv;
	c.envp = envp;
	c.cwd = cwd[0] ? cwd : NULL;
	c.umask = umask_v;
	c.in = TQ_SPAWN_STDIN_PIPE;
	/* an agent CLI loses what its pipe has not taken when it exits */
	c.pipe_size = TQ_SPAWN_AGENT_PIPE_SIZE;
	if ((rc = tq_spawn_start(&c, err)) < 0)
		return rc;
	struct warm_proc *p = &w->procs[i];
	*p = (struct warm_proc){ .state = W_IDLE, .pid = c.pid, .in_fd = c.in_fd,
				 .out_fd = c.out_fd, .err_fd = c.err_fd, .conn = -1,
				 .reply = -1, .idle_since = tq_mono_ms() };
	strlcpy(p->key, key, sizeof(p->key));
	memcpy(p->fp, fp, sizeof(p->fp));
	tq_proc_start_time(c.pid, &p->start, NULL);
	p->pidfd = (int)pidfd_open(c.pid, 0);
	/* the session's row names its live process: not one still ending */
	for (int k = 0; k < TQ_WARM_PROCS_MAX; k++)
		if (k != i && w->procs[k].state == W_ENDING && w->procs[k].pid > 0 &&
		    strcmp(w->procs[k].key, key) == 0)
			row_clear(w, key, w->procs[k].pid, w->procs[k].start);
	row_set(w, p);
	w->log("warm session %s: started its agent (pid %d): %s", key, (int)c.pid, argv[0]);
	return i;
}

static void lend(struct tq_warm *w, int c, int i, int fresh)
{
	struct warm_proc *p = &w->procs[i];
	struct tq_warm_hdr h = { .op = TQ_WARM_GIVE, .pid = p->pid, .start = p->start,
				 .status = fresh };
	int fds[TQ_WARM_FDS] = { p->in_fd, p->out_fd, p->err_fd, p->pidfd };
	struct tq_err err = TQ_ERR_INIT;

	if (tq_warmsock_send(w->conns[c].fd, &h, p->proto, strlen(p->proto) + 1, fds,
			     p->pidfd >= 0 ? 4 : 3, &err) < 0) {
		w->log("warm session %s: %s", p->key, err.msg);
		conn_close(w, c);
		return;
	}
	p->state = W_LENT;
	p->conn = c;
	w->conns[c].proc = i;
	if (!fresh)
		row_idle(w, p, 0);
}

/* Our process that row records (ending or not), or -1. */
static int ours(const struct tq_warm *w, const struct tq_session_row *r)
{
	for (int i = 0; i < TQ_WARM_PROCS_MAX; i++)
		if (w->procs[i].state != W_FREE && w->procs[i].pid == r->pid &&
		    w->procs[i].start == r->start && strcmp(w->procs[i].key, r->key) == 0)
			return i;
	return -1;
}

/*
 * A process the store records for a session on our node that is not one of
 * ours: a previous supervisor's, which died with it recorded (its stdin went
 * with it; an agent that stays up without it would never be used again).
 * Ended if it is still that process (pid and start time), the row cleared
 * either way. Another node's is that node's: 0, left alone.
 */
static int settle_foreign(struct tq_warm *w, const struct tq_session_row *r)
{
	if (r->node == NULL || strcmp(r->node, w->node) != 0)
		return 0;
	if (tq_proc_same(r->pid, r->start)) {
		tq_proc_kill_group(r->pid, SIGKILL, NULL);
		tq_proc_signal(r->pid, r->start, SIGKILL, NULL);
		w->log("warm session %s: ended the agent (pid %d) a previous supervisor left",
		       r->key, r->pid);
	}
	row_clear(w, r->key, r->pid, r->start);
	return 1;
}

/* Before starting key's process: what the store records for it. 0 to go
 * on (nothing, or a leftover of ours ended), or why not. */
static const char *recorded_elsewhere(struct tq_warm *w, const char *key, char *why, size_t n)
{
	struct tq_session_row *rows = NULL;
	size_t nrows = 0;
	const char *busy = NULL;

	if (tq_queue_warm_list(w->q, NULL, &rows, &nrows, NULL) < 0)
		return NULL; /* the store's answer decides nothing here */
	for (size_t j = 0; j < nrows; j++) {
		if (strcmp(rows[j].key, key) != 0 || ours(w, &rows[j]) >= 0)
			continue;
		if (!settle_foreign(w, &rows[j])) {
			snprintf(why, n, "busy: its agent runs on node %s (pid %d)",
				 rows[j].node ? rows[j].node : "?", rows[j].pid);
			busy = why;
		}
	}
	tq_session_row_list_free(rows, nrows);
	return busy;
}

void tq_warm_store_tick(struct tq_warm *w)
{
	struct tq_session_row *rows = NULL;
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0;

	if (w == NULL)
		return;
	if (tq_queue_warm_list(w->q, w->node, &rows, &n, &err) < 0) {
		w->log("warm sessions: %s", err.msg);
		return;
	}
	for (size_t j = 0; j < n; j++) {
		const struct tq_session_row *r = &rows[j];
		int64_t asked = 0;
		int i = ours(w, r);

		if (i < 0) {
			settle_foreign(w, r);
			continue;
		}
		if (r->close_requested_at == 0 || w->procs[i].state == W_ENDING ||
		    tq_queue_session_close_take(w->q, r->key, r->pid, r->start, &asked,
						&err) < 0 || asked == 0)
			continue;
		if (w->procs[i].state == W_IDLE)
			end_proc(w, i, -1, "taskq sessions close");
		else
			w->procs[i].close_after = 1;
	}
	tq_session_row_list_free(rows, n);
}

/* Whether p runs another command than the fingerprint fp names: 1 with
 * the parts that differ in why ("model, environment"), else 0. A part
 * either side does not know (0) matches. */
static int differs(const struct warm_proc *p, const uint64_t *fp, char *why, size_t n)
{
	static const char *const part[TQ_WARM_FP_N] = {
		[TQ_WARM_FP_MODEL] = "model", [TQ_WARM_FP_ARGS] = "agent command",
		[TQ_WARM_FP_ENV] = "environment", [TQ_WARM_FP_CWD] = "working directory",
	};
	int d = 0;

	why[0] = '\0';
	for (int k = 0; k < TQ_WARM_FP_N; k++) {
		if (p->fp[k] == 0 || fp[k] == 0 || p->fp[k] == fp[k])
			continue;
		if (d++)
			strlcat(why, ", ", n);
		strlcat(why, part[k], n);
	}
	return d > 0;
}

static void on_take(struct tq_warm *w, int c, const struct tq_warm_hdr *h, char *pl,
		    size_t len)
{
	struct tq_err err = TQ_ERR_INIT;
	char **v = NULL, why[TQ_NAME_MAX + 96];
	int i, fresh = 0;

	if (h->argc == 0 || h->argc > 65536 || h->envc > 65536 ||
	    (v = calloc((size_t)h->argc + h->envc + 4, sizeof(*v))) == NULL ||
	    split(pl, len, 2 + h->argc + h->envc, v) < 0 || v[0][0] == '\0') {
		free(v);
		refuse(w, c, "a bad request");
		return;
	}
	/* v: key, cwd, argv..., NULL-ended below, env... */
	char **argv = v + 2, **envp = v + 3 + h->argc;
	memmove(envp, v + 2 + h->argc, sizeof(*v) * h->envc);
	envp[h->envc] = NULL;
	argv[h->argc] = NULL;
	if ((i = find(w, v[0])) >= 0 && w->procs[i].state == W_LENT) {
		refuse(w, c, "busy: another message of the session holds its agent");
		free(v);
		return;
	}
	/* dead, its SIGCHLD not read yet: a new one, not a message lost */
	if (i >= 0 && !tq_proc_alive(w->procs[i].pid, w->procs[i].start)) {
		end_proc(w, i, -1, "it died between messages");
		i = -1;
	}
	/* the message runs another command (its --model, environment, ...):
	 * the process ends, and one of its command starts and resumes */
	if (i >= 0 && differs(&w->procs[i], h->fp, why, sizeof(why))) {
		w->log("warm session %s: the message's command differs (%s); starting it anew",
		       v[0], why);
		end_proc(w, i, -1, "the session's next message runs another command");
		i = -1;
	}
	if (i < 0 && w->stopping) {
		refuse(w, c, "busy: the supervisor is stopping");
		free(v);
		return;
	}
	if (i < 0 && recorded_elsewhere(w, v[0], why, sizeof(why)) != NULL) {
		refuse(w, c, why);
		free(v);
		return;
	}
	if (i < 0) {
		enforce_max(w, 1);
		if ((i = start_proc(w, v[0], argv, envp, v[1], h->umask, h->fp, &err)) < 0) {
			refuse(w, c, err.msg);
			free(v);
			return;
		}
		fresh = 1;
	}
	w->procs[i].idle_ms = h->idle_ms > 0 ? h->idle_ms : TQ_WARM_IDLE_DEFAULT_MS;
	free(v);
	lend(w, c, i, fresh);
}

/* Connection c is gone (closed, or garbage on it): a process lent on it
 * is ended (its worker died mid-turn: no process is left in a turn nobody
 * reads), a STATUS it waited for is not sent. */
static void drop_conn(struct tq_warm *w, int c)
{
	int i = w->conns[c].proc;

	for (int k = 0; k < TQ_WARM_PROCS_MAX; k++)
		if (w->procs[k].reply == c)
			w->procs[k].reply = -1;
	if (i >= 0 && w->procs[i].dead)
		proc_free(&w->procs[i]);
	else if (i >= 0 && w->procs[i].state == W_LENT)
		end_proc(w, i, -1, "the worker that ran its turn is gone");
	conn_close(w, c);
}

/* DONE: the turn ended, the process is idle again, in the state its
 * payload says (or, dead meanwhile, forgotten). */
static void on_done(struct tq_warm *w, int c, int i, const char *pl, size_t len)
{
	struct warm_proc *p = &w->procs[i];

	/* the payload is NUL-terminated within its length (warmsock.h) */
	strlcpy(p->proto, len > 0 ? pl : "", sizeof(p->proto));
	w->conns[c].proc = -1;
	conn_close(w, c);
	if (p->dead) {
		proc_free(p);
		return;
	}
	p->state = W_IDLE;
	p->conn = -1;
	p->idle_since = tq_mono_ms();
	row_idle(w, p, tq_now_ms());
	if (w->stopping)
		end_proc(w, i, w->stop_grace, "the supervisor is stopping");
	else if (p->close_after)
		end_proc(w, i, -1, "taskq sessions close");
	else
		enforce_max(w, 0);
}

/* END: end the process and answer its wait status once reaped. */
static void on_end(struct tq_warm *w, int c, int i, int64_t grace)
{
	struct warm_proc *p = &w->procs[i];

	w->conns[c].proc = -1;
	if (p->dead) {
		int st = p->status;
		proc_free(p);
		answer_status(w, c, st);
		return;
	}
	end_proc(w, i, grace, "its turn asked for it (killed, timed out, lease lost, or "
		 "its output closed)");
	p->reply = c;
}

/* One message on connection c. */
static void on_message(struct tq_warm *w, int c)
{
	struct tq_warm_hdr h;
	struct tq_err err = TQ_ERR_INIT;
	int fds[TQ_WARM_FDS], nfds = 0, i = w->conns[c].proc;
	size_t len = 0;
	int rc = tq_warmsock_recv(w->conns[c].fd, &h, w->buf, sizeof(w->buf), &len, fds,
				  &nfds, &err);

	for (int k = 0; k < nfds; k++)
		tq_close(fds[k]); /* a worker sends none */
	if (rc == TQ_EBUSY)
		return;
	if (rc < 0)
		w->log("warm socket: %s", err.msg);
	if (rc == 0 && h.op == TQ_WARM_TAKE && i < 0) {
		on_take(w, c, &h, w->buf, len);
		return;
	}
	if (rc == 0 && h.op == TQ_WARM_DONE && i >= 0) {
		on_done(w, c, i, w->buf, len);
		return;
	}
	if (rc == 0 && h.op == TQ_WARM_END && i >= 0) {
		on_end(w, c, i, h.grace_ms);
		return;
	}
	drop_conn(w, c);
}

size_t tq_warm_poll(struct tq_warm *w, struct pollfd *p)
{
	size_t n = 0;

	if (w == NULL)
		return 0;
	if (w->paused_until != 0 && tq_mono_ms() >= w->paused_until)
		w->paused_until = 0;
	p[n++] = (struct pollfd){ w->paused_until ? -1 : w->lfd, POLLIN, 0 };
	for (int c = 0; c < TQ_WARM_CONN_MAX; c++)
		if (w->conns[c].fd >= 0) {
			w->polled[n - 1] = c;
			p[n++] = (struct pollfd){ w->conns[c].fd, POLLIN, 0 };
		}
	return n;
}

void tq_warm_serve(struct tq_warm *w, const struct pollfd *p, size_t n)
{
	struct tq_err err = TQ_ERR_INIT;

	if (w == NULL || n == 0)
		return;
	for (size_t k = 1; k < n; k++) {
		int c = w->polled[k - 1];
		if (p[k].revents && w->conns[c].fd == p[k].fd)
			on_message(w, c);
	}
	if (!(p[0].revents & POLLIN))
		return;
	for (int c = 0; c < TQ_WARM_CONN_MAX; c++) {
		int fd = -1;
		if (w->conns[c].fd >= 0)
			continue;
		if (tq_warmsock_accept(w->lfd, &fd, &err) < 0) {
			/* EMFILE and the like: the connection waits in the
			 * backlog; its worker's wait is long enough */
			w->log("warm socket: %s; accepting again in %d ms", err.msg,
			       ACCEPT_PAUSE_MS);
			w->paused_until = tq_mono_ms() + ACCEPT_PAUSE_MS;
		}
		if (fd < 0)
			return;
		w->conns[c] = (struct warm_conn){ .fd = fd, .proc = -1 };
	}
}

/* ------------------------------------------------------------------ */
/* Time, stop                                                         */

void tq_warm_tick(struct tq_warm *w, int64_t now)
{
	struct tq_err err = TQ_ERR_INIT;

	for (int i = 0; w != NULL && i < TQ_WARM_PROCS_MAX; i++) {
		struct warm_proc *p = &w->procs[i];
		if (p->state == W_IDLE && now - p->idle_since >= p->idle_ms)
			end_proc(w, i, -1, "idle timeout");
		if (p->state == W_ENDING && p->pid > 0 &&
		    tq_term_step(&p->term, TQ_TERM_TICK, now, &err) < 0)
			w->log("warm session %s: %s", p->key, err.msg);
	}
}

int64_t tq_warm_deadline(const struct tq_warm *w)
{
	int64_t at = w != NULL && w->paused_until ? w->paused_until : INT64_MAX;

	for (int i = 0; w != NULL && i < TQ_WARM_PROCS_MAX; i++) {
		const struct warm_proc *p = &w->procs[i];
		if (p->state == W_IDLE && p->idle_since + p->idle_ms < at)
			at = p->idle_since + p->idle_ms;
		if (p->state == W_ENDING && p->pid > 0 && p->term.deadline < at)
			at = p->term.deadline;
	}
	return at;
}

size_t tq_warm_pids(const struct tq_warm *w, pid_t *pids)
{
	size_t n = 0;

	for (int i = 0; w != NULL && i < TQ_WARM_PROCS_MAX; i++)
		if (w->procs[i].state != W_FREE && w->procs[i].pid > 0)
			pids[n++] = w->procs[i].pid;
	return n;
}

int tq_warm_holds(const struct tq_warm *w, pid_t pid)
{
	for (int i = 0; w != NULL && pid > 0 && i < TQ_WARM_PROCS_MAX; i++)
		if (w->procs[i].state != W_FREE && w->procs[i].pid == pid)
			return 1;
	return 0;
}

void tq_warm_stop(struct tq_warm *w, int64_t grace_ms)
{
	if (w == NULL)
		return;
	w->stopping = 1;
	w->stop_grace = grace_ms >= 0 && grace_ms < TQ_WARM_GRACE_MS ? grace_ms :
			TQ_WARM_GRACE_MS;
	for (int i = 0; i < TQ_WARM_PROCS_MAX; i++)
		if (w->procs[i].state == W_IDLE)
			end_proc(w, i, w->stop_grace, "the supervisor is stopping");
}

int tq_warm_left(const struct tq_warm *w)
{
	int n = 0;

	for (int i = 0; w != NULL && i < TQ_WARM_PROCS_MAX; i++)
		n += w->procs[i].state != W_FREE && w->procs[i].pid > 0;
	return n;
}

void tq_warm_close(struct tq_warm *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < TQ_WARM_PROCS_MAX; i++) {
		struct warm_proc *p = &w->procs[i];
		if (p->state == W_FREE)
			continue;
		if (p->pid > 0)
			tq_proc_kill_group(p->pid, SIGKILL, NULL);
		close_pipes(p);
		tq_close(p->pidfd);
	}
	for (int c = 0; c < TQ_WARM_CONN_MAX; c++)
		conn_close(w, c);
	tq_close(w->lfd);
	tq_warmsock_unlink(w->home);
	free(w);
}

int tq_warm_sweep_leftovers(const char *home, size_t *killed, struct tq_err *err)
{
	char hm[PATH_MAX + 32];
	struct tq_marks m = { .task = TQ_WARM_MARK, .home = hm };
	int r = snprintf(hm, sizeof(hm), TQ_TASK_HOME_VAR "=%s", home);

	*killed = 0;
	if (r < 0 || (size_t)r >= sizeof(hm))
		return tq_err_set(err, TQ_EINVAL, "state directory path too long");
	return tq_proc_kill_marked(&m, killed, err);
}

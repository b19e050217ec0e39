/*
 * supervisor.c - keep N workers running, recover what dead workers left,
 * stop everything gracefully on a signal. See supervisor.h.
 *
 * Workers are this binary (`taskq worker`), started by the spawn
 * (proc/spawn.h), which execs it at once: the child uses nothing of the
 * parent's (its SQLite connection must never be used across a fork) but
 * reads its own pid and start time, which it carries in its environment as
 * its mark (TASKQ_WORKER_PROC, proc.h), so that recovery finds a task's
 * process that the worker's posix_spawn made but had not yet exec'd when
 * the worker died. The supervisor is a child subreaper, so when a worker
 * dies the orphans of its task are reparented here and swept.
 *
 * Workers left by a supervisor that was killed keep running their tasks and
 * recording them (they need no supervisor). A new supervisor adopts the ones
 * still alive (checked by pid and start time) and watches them through
 * pidfds, since they are not its children; it starts only the missing ones.
 *
 * A task whose process had ended but whose end its worker could not write
 * (endrec.h) is never recovered as lost: recovery writes the end from the
 * worker's end record, and each tick removes records of attempts that are
 * recorded already.
 *
 * It also holds the warm agents of warm sessions (issue 19, warm.h): their
 * processes are its children, lent to the worker of each message's turn
 * over HOME/warm.sock, and ended with its stop; a sweep of orphans spares
 * them (sweep_orphans).
 *
 * One loop (proc/loop.h): a signalfd (CHLD, TERM, INT, HUP), the adopted
 * workers' pidfds, the submit socket and the warm socket, until the next maintenance tick,
 * the next worker restart or a submit connection's deadline.
 */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bsd/libutil.h>
#include <bsd/stdlib.h>
#include <bsd/string.h>
#include <bsd/unistd.h>

#include "common/diag.h"
#include "common/parse.h"
#include "common/sys.h"
#include "queue/queue.h"
#include "agent/agent.h"
#include "endrec.h"
#include "ipc/doorbell.h"
#include "ipc/submitd.h"
#include "policy.h"
#include "proc/contain.h"
#include "proc/loop.h"
#include "proc/proc.h"
#include "queue/home.h"
#include "proc/spawn.h"
#include "statedir.h"
#include "warm.h"
#include "worker.h"

#define TICK_MS 1000                 /* maintenance: leases, restarts */
#define DRAIN_TICK_MS 200            /* drain: how often to look for the end */
#define HOUSEKEEP_MS (60 * 1000)     /* workspaces, retention */
#define RESTART_MIN_MS 500
#define RESTART_MAX_MS 60000
#define HEALTHY_MS 60000             /* a worker up this long resets backoff */
#define RECOVER_BATCH 64
#define TOKEN_KEEP_MS ((int64_t)24 * 3600 * 1000) /* submit tokens (queue.h) */
#define RECORD_BUSY_MS 1000          /* writing an end from its record: one try */
#define WARM_SWEEP_MS 2000           /* after a warm agent ends: orphans swept */
/* The longest a worker waits between two tries to reconnect to a store that
 * was away (queue/pg/db.c: 2 s and a quarter), with room: how much longer
 * than a lease another node's worker may take to renew after an outage. */
#define RECONNECT_GRACE_MS 5000
#define WAKE_RETRY_MIN_MS 1000       /* listening for other nodes failed: again */
#define WAKE_RETRY_MAX_MS 30000

extern char **environ;

struct slot {
	pid_t pid;                   /* 0: no worker in this slot */
	int64_t start_ticks;
	int pidfd;                   /* adopted workers only; else -1 */
	int64_t worker_id;           /* row in workers, once known */
	int64_t started;             /* mono ms */
	int64_t restart_at;          /* mono ms; 0: start now */
	int64_t backoff;
};

struct sup {
	const struct tq_serve_opts *o;
	struct tq_queue *q;
	struct tq_submitd *sd;       /* the submit socket; NULL: none */
	struct tq_warm *warm;        /* warm agent processes (warm.h); NULL: none */
	int64_t sweep_until;         /* mono ms: sweep orphans each tick until
				      * then (a warm agent's, reparented to us) */
	char home_mark[PATH_MAX + 32]; /* what tasks of this home carry (proc.h) */
	char node[TQ_NODE_MAX + 1];  /* this node (tq_node_self): recovery signals
				      * only the processes of its attempts */
	struct pidfh *pfh;
	int sigfd;
	struct slot slots[TQ_MAX_WORKERS];
	int stopping;
	int stop_signal;
	int64_t stop_grace;          /* -1: the workers' default */
	int64_t writable_since;      /* mono ms since the store has taken our
				      * writes (worker_alive); 0: it refused the
				      * last, or none was tried */
	int64_t *ran_by;             /* drain: every worker id seen */
	size_t nran_by, capran_by;
	struct tq_cgroup_base cgroup; /* what our workers' attempts get */
	int procs_fd;                /* HOME/procs: the attempts' records */
	struct tq_statedir home;     /* held open: gone or replaced? */
	struct tq_file_id pid_id;    /* our serve.pid, to remove only it */
	int home_lost;               /* stopped because home went */
	struct tq_wake *wake;        /* other nodes' changes (queue.h); NULL:
				      * none needed, or not open yet */
	int wake_wanted;             /* the store has other nodes to hear */
	int64_t wake_at;             /* mono ms: try to open it again then */
	int64_t wake_backoff;
	int64_t started_at;          /* ms since the epoch */
	int64_t beat_at;             /* mono ms of our row's last heartbeat */
	int64_t away_since;          /* mono ms the store went away (TQ_EOFFLINE:
				      * said once); 0: it is here */
};

static void slog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void slog(const char *fmt, ...)
{
	char who[64];
	va_list ap;

	snprintf(who, sizeof(who), "taskq supervisor (pid %d)", (int)getpid());
	va_start(ap, fmt);
	tq_diag(who, fmt, ap);
	va_end(ap);
}

static void sd_vlog(const char *who, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sd_vlog(const char *who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tq_diag_loose(who, fmt, ap);
	va_end(ap);
}

/* The submit socket's lines carry what clients sent (byte counts, pids):
 * their repeats fold with the numbers aside (diag.h), so a client looping
 * connect, garbage, close costs a line every 10 s, not a line a loop. */
static void sd_log(const char *msg)
{
	char who[64];

	snprintf(who, sizeof(who), "taskq supervisor (pid %d)", (int)getpid());
	sd_vlog(who, "%s", msg);
}

int tq_self_exe(char *buf, size_t n, struct tq_err *err)
{
	ssize_t r = readlink("/proc/self/exe", buf, n - 1);

	if (r < 0)
		return tq_err_sys(err, "readlink /proc/self/exe");
	if ((size_t)r >= n - 1)
		return tq_err_set(err, TQ_EINVAL, "path of the taskq binary is too long");
	buf[r] = '\0';
	return 0;
}

static int pidfile_path(const char *home, char *buf, size_t n)
{
	int r = snprintf(buf, n, "%s/serve.pid", home);

	return r < 0 || (size_t)r >= n ? -1 : 0;
}

int tq_supervisor_running(const char *home, pid_t *pid)
{
	char path[PATH_MAX], buf[32];
	int fd, held;
	ssize_t n;

	if (pid)
		*pid = 0;
	if (pidfile_path(home, path, sizeof(path)) < 0)
		return 0;
	if ((fd = tq_open(path, O_RDONLY | O_NOFOLLOW, 0)) < 0)
		return 0;
	/* A shared lock succeeds only when no supervisor holds the exclusive
	 * one; release it at once so we never block a starting supervisor. */
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	if (!held)
		flock(fd, LOCK_UN);
	if (held && pid && (n = tq_read_full(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		*pid = (pid_t)strtol(buf, NULL, 10);
	}
	tq_close(fd);
	return held;
}

/* ------------------------------------------------------------------ */
/* Workers                                                            */

/*
 * Start `taskq worker` in slot i: this binary, exec'd by the spawn (spawn.h)
 * with what a fork + exec gave it: our session and process group, our fds
 * 0-2 (the log) and any other we have without CLOEXEC, our environment,
 * the signals we ignore, an empty mask. The
 * child touches nothing of ours (not the SQLite connection) but reads its
 * own identity, to carry it in its environment as its mark (proc.h,
 * TQ_SPAWN_MARK_SELF).
 */
static int spawn_worker(struct sup *s, int i, struct tq_err *err)
{
	char slot[16], lease[32], grace[32], sup[16], lsize[32], lfiles[16];
	char *argv[] = { "taskq", "--home", (char *)s->o->home, "worker", "--slot", slot,
			 "--lease", lease, "--grace", grace, "--supervisor", sup,
			 NULL, NULL, NULL, NULL, NULL };
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err serr = TQ_ERR_INIT;
	int64_t log_size;
	int log_files;
	sigset_t none;

	snprintf(slot, sizeof(slot), "%d", i + 1);
	snprintf(lease, sizeof(lease), "%lldms", (long long)s->o->lease_ms);
	snprintf(grace, sizeof(grace), "%lldms", (long long)s->o->grace_ms);
	snprintf(sup, sizeof(sup), "%d", (int)getpid());
	/* our serve.log's bounds: the worker rotates it as we do (diag.h) */
	if (tq_diag_log_active(&log_size, &log_files)) {
		snprintf(lsize, sizeof(lsize), "%lld", (long long)log_size);
		snprintf(lfiles, sizeof(lfiles), "%d", log_files);
		argv[12] = "--log-size";
		argv[13] = lsize;
		argv[14] = "--log-files";
		argv[15] = lfiles;
	}
	sigemptyset(&none);
	c.argv = argv;
	c.envp = environ;
	c.in = TQ_SPAWN_STDIO_INHERIT;
	c.flags = TQ_SPAWN_KEEP_SESSION | TQ_SPAWN_MARK_SELF | TQ_SPAWN_KEEP_FDS;
	c.sigdefault = &none;
	c.exe = s->o->exe;
	if (tq_spawn_start(&c, &serr) < 0) /* errno: the step's */
		return tq_err_sys(err, "start worker %d (%s)", i + 1, s->o->exe);
	s->slots[i].pid = c.pid;
	s->slots[i].pidfd = -1;
	s->slots[i].worker_id = 0;
	s->slots[i].started = tq_mono_ms();
	tq_proc_start_time(c.pid, &s->slots[i].start_ticks, NULL);
	slog("started worker %d (pid %d)", i + 1, (int)c.pid);
	return 0;
}

static void note_ran_by(struct sup *s, int64_t id)
{
	for (size_t i = 0; i < s->nran_by; i++)
		if (s->ran_by[i] == id)
			return;
	if (s->nran_by == s->capran_by) {
		size_t ncap = s->capran_by ? s->capran_by * 2 : 16;
		int64_t *n = reallocarray(s->ran_by, ncap, sizeof(*n));
		if (n == NULL)
			return;
		s->ran_by = n;
		s->capran_by = ncap;
	}
	s->ran_by[s->nran_by++] = id;
}

/* Whether node (a worker's, an attempt's) is ours: its pids are processes
 * of this machine. "" is an attempt stored before nodes were recorded, when
 * taskq ran on one host: ours. */
/* A store call failed: the store away (TQ_EOFFLINE, a database server
 * restarting) is said once, until it is back; anything else each time. */
static void store_failed(struct sup *s, int rc, const char *what, const struct tq_err *err)
{
	if (rc != TQ_EOFFLINE) {
		slog("%s: %s", what, err->msg);
		return;
	}
	if (s->away_since != 0)
		return;
	s->away_since = tq_mono_ms();
	slog("%s: %s; recovery and housekeeping wait until it is back (workers keep "
	     "their tasks running)", what, err->msg);
}

static void store_back(struct sup *s)
{
	if (s->away_since == 0)
		return;
	slog("the store is back after %lld ms", (long long)(tq_mono_ms() - s->away_since));
	s->away_since = 0;
}

static int own_node(const struct sup *s, const char *node)
{
	return node[0] == '\0' || strcmp(node, s->node) == 0;
}

/* Match worker rows to our slots (workers register themselves). */
static void learn_worker_ids(struct sup *s)
{
	struct tq_worker_info *ws = NULL;
	size_t n = 0;

	if (tq_queue_workers(s->q, &ws, &n, NULL) < 0)
		return;
	for (size_t j = 0; j < n; j++)
		for (int i = 0; i < s->o->workers; i++)
			if (s->slots[i].pid == ws[j].pid && s->slots[i].worker_id == 0 &&
			    own_node(s, ws[j].node)) {
				s->slots[i].worker_id = ws[j].id;
				note_ran_by(s, ws[j].id);
			}
	free(ws);
}

static size_t live_pids(struct sup *s, pid_t *pids)
{
	size_t n = 0;

	for (int i = 0; i < s->o->workers; i++)
		if (s->slots[i].pid > 0)
			pids[n++] = s->slots[i].pid;
	return n;
}

/* Kill and reap every child that is neither a live worker nor a warm agent
 * (warm.h) nor in a session one of those leads: orphans reparented to us.
 * A warm agent's own children stay its own while it lives. */
static void sweep_orphans(struct sup *s)
{
	pid_t keep[TQ_MAX_WORKERS + TQ_WARM_PROCS_MAX];
	struct tq_err err = TQ_ERR_INIT;
	size_t n = live_pids(s, keep), killed = 0;

	n += tq_warm_pids(s->warm, keep + n);
	if (tq_proc_sweep(keep, n, &killed, &err) < 0)
		slog("sweep: %s", err.msg);
	else if (killed)
		slog("killed %zu leftover process%s", killed, killed == 1 ? "" : "es");
}

/*
 * An expired lease whose worker process is alive is not a dead worker but a
 * late one (the store was locked, the machine was suspended): killing its
 * task would lose good work, and fencing already keeps a late write from
 * doing harm. So leave it, unless the worker has not heartbeaten for
 * WEDGED_LEASES leases: then it is stuck, and it is killed, which recovers
 * its task through the dead-worker path. Returns 1 to skip the task.
 */
#define WEDGED_LEASES 3

static int worker_alive(struct sup *s, int64_t worker_id)
{
	struct tq_worker_info *ws = NULL;
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0;
	int alive = 0;
	char now[32];

	if (worker_id == 0)
		return 0;
	/* not known (the store went away since the leases were read): it
	 * may well be alive, and its task is not killed on a guess */
	if (tq_queue_workers(s->q, &ws, &n, NULL) < 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (ws[i].id != worker_id || !tq_proc_alive(ws[i].pid, ws[i].proc_start))
			continue;
		alive = 1;
		if (tq_now_ms() - ws[i].heartbeat_at <= WEDGED_LEASES * s->o->lease_ms)
			continue;
		/* No heartbeat may mean the store refuses writes (a full disk):
		 * then every worker is late, not stuck, and killing one would
		 * turn a healthy task into a lost one. Kill only when we can
		 * write ourselves, and have been able to for a whole lease: a
		 * worker that was only late renews a third of a lease after the
		 * store takes writes again, and our tick may well come first
		 * (it did, most times, with the default lease). */
		snprintf(now, sizeof(now), "%lld", (long long)tq_now_ms());
		if (tq_queue_meta_set(s->q, "supervisor_probe", now, &err) < 0) {
			s->writable_since = 0;
			slog("worker pid %d has not heartbeaten for %lld ms, but the "
			     "store refuses writes (%s): leaving it", ws[i].pid,
			     (long long)(tq_now_ms() - ws[i].heartbeat_at), err.msg);
			continue;
		}
		if (s->writable_since == 0)
			s->writable_since = tq_mono_ms();
		if (tq_mono_ms() - s->writable_since < s->o->lease_ms)
			continue;
		slog("worker pid %d has not heartbeaten for %lld ms; killing it",
		     ws[i].pid, (long long)(tq_now_ms() - ws[i].heartbeat_at));
		tq_proc_signal(ws[i].pid, ws[i].proc_start, SIGKILL, NULL);
	}
	free(ws);
	return alive;
}

/* A lost attempt is retried only with --retry-lost (a task that kills its
 * worker, say by exhausting memory, must not do so forever). */
static void lost_policy(struct sup *s, const struct tq_expired *e, struct tq_finish *f)
{
	struct tq_policy_input in = { .outcome = TQ_OUT_LOST, .retry_lost = e->retry_lost,
				      .max_retries = e->max_retries, .now_ms = tq_now_ms() };
	struct tq_policy_decision d;
	struct tq_attempt *a = NULL;
	struct tq_task t;
	size_t n = 0;

	if (!e->retry_lost || tq_queue_get(s->q, e->task_id, 0, &t, NULL) < 0)
		return;
	in.backoff_ms = t.backoff_ms;
	in.backoff_max_ms = t.backoff_max_ms;
	tq_task_release(&t);
	if (tq_queue_attempts(s->q, e->task_id, &a, &n, NULL) == 0)
		for (size_t i = 0; i < n; i++)
			in.counted += a[i].counted;
	tq_attempt_list_free(a, n);
	tq_policy_decide(&in, arc4random(), &d);
	f->next = d.next;
	f->retry_at = d.retry_at;
}

/*
 * The end of (task, attempt) from its end record (endrec.h), when its
 * worker kept one because the store would not take it: written as the
 * worker would have, fenced by task, attempt and worker, and the record
 * removed only once that is committed. Returns 1 when the attempt is dealt
 * with (written now, or already recorded), 0 when there is no record to
 * go by (none, or a damaged one, which is set aside and never trusted),
 * -1 when it must wait because the store refused the end (then the other
 * records wait for the next tick too), -2 when this record could not be
 * read (out of descriptors, an I/O error): the attempt is not touched, the
 * next tick tries again, and the other tasks are recovered meanwhile.
 */
static int end_from_record(struct sup *s, int64_t task, int attempt)
{
	const char *home = s->o->home;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_endrec rec;
	enum tq_state state = TQ_RUNNING;
	int rc = tq_endrec_read(home, task, attempt, &rec, &err);

	if (rc == TQ_ENOTFOUND)
		return 0;
	if (rc == TQ_ECORRUPT) {
		slog("task %lld: %s", (long long)task, err.msg);
		if (tq_endrec_set_aside(home, task, attempt, &err) < 0)
			slog("task %lld: %s", (long long)task, err.msg);
		return 0;
	}
	if (rc < 0) {
		slog("task %lld attempt %d: end record: %s", (long long)task, attempt, err.msg);
		return -2;
	}
	tq_queue_set_busy_timeout(s->q, RECORD_BUSY_MS);
	rc = tq_queue_finish(s->q, &rec.f, &state, &err);
	tq_queue_set_busy_timeout(s->q, TQ_BUSY_TIMEOUT_MS);
	if (rc < 0 && rc != TQ_ESTALE) {
		slog("task %lld attempt %d: its end (%s) is not written yet: %s",
		     (long long)task, attempt, tq_outcome_name(rec.f.outcome), err.msg);
		tq_endrec_release(&rec);
		return -1;
	}
	if (rc == 0) {
		slog("task %lld attempt %d: %s (exit code %d), written from its end record",
		     (long long)task, attempt, tq_outcome_name(rec.f.outcome),
		     rec.f.exit_code);
		/* a worker runs the task's on-exit hook, which this end left
		 * owed (tq_finish.on_exit_started), or its retry: wake one */
		tq_doorbell_ring(home);
	}
	tq_endrec_release(&rec);
	if (tq_endrec_remove(home, task, attempt, &err) < 0)
		slog("task %lld: %s", (long long)task, err.msg);
	return 1;
}

/*
 * End records whose attempt is recorded already (the worker or we wrote it
 * and stopped before removing the file) or whose task is gone: remove them.
 * A record of an attempt still running is left to its worker, or to
 * recover() once its lease expires or its worker dies.
 */
static void sweep_end_records(struct sup *s)
{
	const char *home = s->o->home;
	struct tq_endrec_id *ids = NULL;
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0;

	if (tq_endrec_list(home, RECOVER_BATCH, &ids, &n, &err) < 0) {
		slog("end records: %s", err.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct tq_task t;
		int rc = tq_queue_get(s->q, ids[i].task, 0, &t, NULL);
		int open = rc == 0 && t.state == TQ_RUNNING && t.attempt == ids[i].attempt;

		if (rc == 0)
			tq_task_release(&t);
		if (open || (rc < 0 && rc != TQ_ENOTFOUND))
			continue;
		/* what cannot be unlinked (a directory under a record's name)
		 * is set aside, so that it is not tried again every tick */
		if (tq_endrec_remove(home, ids[i].task, ids[i].attempt, &err) < 0 &&
		    tq_endrec_set_aside(home, ids[i].task, ids[i].attempt, NULL) < 0)
			slog("task %lld: %s", (long long)ids[i].task, err.msg);
		else
			slog("task %lld attempt %d: removed its end record (%s)",
			     (long long)ids[i].task, ids[i].attempt,
			     rc == TQ_ENOTFOUND ? "the task is gone" : "already recorded");
	}
	free(ids);
}

/* Record another node's expired attempt lost (retried by the task's
 * policy), acting on no process. */
static void recover_foreign(struct sup *s, const struct tq_expired *e, const char *why)
{
	struct tq_err err = TQ_ERR_INIT;
	char reason[256];
	struct tq_finish f = { .task_id = e->task_id, .attempt = e->attempt,
			       .worker_id = e->worker_id, .outcome = TQ_OUT_LOST,
			       .exit_code = -1, .reason = reason };

	/* After the store was away (our connection to it is new: a restart
	 * of the database) every node's workers renew their leases only as
	 * they get back to it, as we just did: another node's lease is judged
	 * once we have been back for a whole lease and the longest a worker
	 * waits between two tries to reconnect, never before. */
	if (tq_queue_connected_at(s->q) != 0 &&
	    tq_mono_ms() - tq_queue_connected_at(s->q) < s->o->lease_ms + RECONNECT_GRACE_MS)
		return;
	snprintf(reason, sizeof(reason), "%s (node %s)", why, e->node);
	lost_policy(s, e, &f);
	if (tq_queue_finish(s->q, &f, NULL, &err) < 0) {
		slog("task %lld: %s", (long long)e->task_id, err.msg);
		return;
	}
	slog("task %lld attempt %d: lost (%s on node %s; its processes are that "
	     "node's, not signalled here)", (long long)e->task_id, e->attempt, why, e->node);
	tq_doorbell_ring(s->o->home);
}

/* Kill what remains of tasks that ran under a worker that is gone, and
 * record their attempts as lost -- unless their process had ended and its
 * worker kept the end in a record: then the true end is written.
 * worker_id 0: tasks with expired leases. */
static int recover(struct sup *s, int64_t worker_id, const char *why)
{
	struct tq_expired *ex = NULL;
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0, killed = 0;
	int rc, refused = 0;

	rc = worker_id ? tq_queue_running_by(s->q, worker_id, RECOVER_BATCH, &ex, &n, &err)
		       : tq_queue_expired(s->q, tq_now_ms(), RECOVER_BATCH, &ex, &n, &err);
	if (rc < 0) {
		store_failed(s, rc, "recovery", &err);
		return rc;
	}
	store_back(s);
	for (size_t i = 0; i < n; i++) {
		/* Another node's attempt: its lease has passed, so it is lost,
		 * but its pids are that node's processes, never signalled here
		 * (that node kills its leftovers when it starts again). */
		if (!own_node(s, ex[i].node)) {
			recover_foreign(s, &ex[i], why);
			continue;
		}
		/* A live worker whose lease ran out is late, not dead; if its
		 * task has ended it is retrying the end itself. */
		if (worker_id == 0 && worker_alive(s, ex[i].worker_id))
			continue;
		/* Its worker is gone: what its cgroup or its recorded process
		 * tree holds is killed, wherever it went and whatever its
		 * environment (contain.h), whether the task ended (its end may
		 * be in a record, below) or is lost. */
		enum tq_contain_kind how = TQ_CONTAIN_NONE;
		if (tq_contain_recover(s->procs_fd, ex[i].task_id, ex[i].attempt, &how,
				       &killed, &err) < 0 && err.msg[0])
			slog("task %lld: %s", (long long)ex[i].task_id, err.msg);
		else if (killed > 0)
			slog("task %lld: killed %zu leftover process%s in its %s",
			     (long long)ex[i].task_id, killed, killed == 1 ? "" : "es",
			     how == TQ_CONTAIN_CGROUP ? "cgroup" : "recorded process tree");
		err = (struct tq_err)TQ_ERR_INIT;
		/* A task that ended and whose end is kept is never lost. Once
		 * the store refused one end in this pass, the others wait for
		 * the next tick: each try may wait RECORD_BUSY_MS, and the loop
		 * serves submits. */
		if (refused)
			continue;
		if ((rc = end_from_record(s, ex[i].task_id, ex[i].attempt)) < 0) {
			refused = rc == -1;
			continue;
		}
		if (rc > 0)
			continue;
		char reason[256];
		struct tq_finish f = { .task_id = ex[i].task_id, .attempt = ex[i].attempt,
				       .worker_id = ex[i].worker_id, .outcome = TQ_OUT_LOST,
				       .exit_code = -1, .reason = reason };
		/* Signal the task only if its pid still names the same process
		 * (start time checked); a reused pid is never hit. Not a warm
		 * session's agent, which its turn lent (warm.h): the warm
		 * socket saw its worker's connection close and ends it with
		 * the reason. Signalled here, and with the store's round trips
		 * in between (PostgreSQL), it was often reaped before that
		 * close was read: it ended without a word. */
		if (ex[i].pid > 0 && !tq_warm_holds(s->warm, ex[i].pid) &&
		    tq_proc_same(ex[i].pid, ex[i].proc_start)) {
			tq_proc_kill_group(ex[i].pgid, SIGKILL, NULL);
			tq_proc_signal(ex[i].pid, ex[i].proc_start, SIGKILL, NULL);
		}
		/* and whatever it left that is no longer in reach of its pid or
		 * our subreaping (reparented to init while no supervisor ran, or
		 * started before its worker recorded the pid) */
		char mark[48], wmark[64];
		struct tq_marks m = { .task = mark, .home = s->home_mark };
		snprintf(mark, sizeof(mark), TQ_TASK_MARK_VAR "=%lld", (long long)ex[i].task_id);
		/* and a child of the worker's posix_spawn not yet exec'd, which
		 * shows the worker's environment (proc.h) */
		if (ex[i].worker_pid > 0) {
			tq_proc_worker_mark(ex[i].worker_pid, ex[i].worker_start, wmark,
					    sizeof(wmark));
			m.worker = wmark;
			m.worker_pid = ex[i].worker_pid;
		}
		if (tq_proc_kill_marked(&m, &killed, NULL) > 0)
			slog("task %lld: killed %zu leftover process%s", (long long)ex[i].task_id,
			     killed, killed == 1 ? "" : "es");
		snprintf(reason, sizeof(reason), "%s", why);
		lost_policy(s, &ex[i], &f);
		if (tq_queue_finish(s->q, &f, NULL, &err) < 0) {
			slog("task %lld: %s", (long long)ex[i].task_id, err.msg);
		} else {
			slog("task %lld attempt %d: lost (%s)", (long long)ex[i].task_id,
			     ex[i].attempt, why);
			/* its on-exit hook (owed by a final end) or its retry */
			tq_doorbell_ring(s->o->home);
		}
	}
	free(ex);
	if (n == 0 && worker_id == 0)
		return 0;
	/* The dead worker's task processes were reparented to us: sweep every
	 * child that is not a live worker or a warm agent. */
	sweep_orphans(s);
	return 0;
}

static void worker_gone(struct sup *s, int i, const char *how)
{
	struct slot *sl = &s->slots[i];
	int64_t now = tq_mono_ms(), wid;
	char why[128];

	/* A worker that died before our first tick registered itself, but we
	 * have not matched its row yet: do it now, or its task would wait for
	 * its lease to expire. */
	if (sl->worker_id == 0)
		learn_worker_ids(s);
	wid = sl->worker_id;

	slog("worker %d (pid %d) %s", i + 1, (int)sl->pid, how);
	snprintf(why, sizeof(why), "worker %d (pid %d) %s", i + 1, (int)sl->pid, how);
	tq_close(sl->pidfd);
	sl->pidfd = -1;
	sl->pid = 0;
	if (wid) {
		recover(s, wid, why);
		tq_queue_worker_stop(s->q, wid, NULL);
	}
	if (now - sl->started >= HEALTHY_MS)
		sl->backoff = 0;
	sl->backoff = sl->backoff ? sl->backoff * 2 : RESTART_MIN_MS;
	if (sl->backoff > RESTART_MAX_MS)
		sl->backoff = RESTART_MAX_MS;
	sl->restart_at = now + sl->backoff;
}

static void on_reaped(pid_t pid, int status, void *arg)
{
	struct sup *s = arg;
	char how[96];

	/* a warm agent: what it started in sessions of their own (an agent's
	 * tool shell) is reparented to us as it goes; swept for a while */
	if (tq_warm_reaped(s->warm, pid, status)) {
		s->sweep_until = tq_mono_ms() + WARM_SWEEP_MS;
		sweep_orphans(s);
		return;
	}
	for (int i = 0; i < s->o->workers; i++) {
		if (s->slots[i].pid != pid)
			continue;
		if (s->stopping) {
			s->slots[i].pid = 0;
			return;
		}
		snprintf(how, sizeof(how), "ended: ");
		tq_proc_status_str(status, how + strlen(how), sizeof(how) - strlen(how));
		worker_gone(s, i, how);
		return;
	}
	/* Not a worker: an orphan of some task, already dead. */
}

/* Watch worker w from slot index i. -1 if it is gone (no pidfd). */
static int adopt_one(struct sup *s, int i, const struct tq_worker_info *w)
{
	int fd = (int)pidfd_open(w->pid, 0);

	if (fd < 0)
		return -1;
	s->slots[i] = (struct slot){ .pid = w->pid, .start_ticks = w->proc_start,
		.pidfd = fd, .worker_id = w->id, .started = tq_mono_ms() };
	note_ran_by(s, w->id);
	slog("adopted worker %d (pid %d, worker id %lld)", w->slot, w->pid, (long long)w->id);
	return 0;
}

/*
 * Adopt live workers a previous supervisor left; recover dead ones. Each
 * live worker goes back to its own slot: a worker is named by its slot, and
 * a slot refilled later starts "worker I+1", so one adopted into another
 * slot shared its name with a worker started after it (status showed two
 * "worker 1" once an adopted worker 2, kept in slot 1, had died). A worker
 * whose slot is beyond --workers takes a free slot (its number then is
 * still its own, and the one its slot's next worker gets is free); one
 * whose slot another live worker holds, or for which no slot is free, is
 * more than we want: it finishes its task and stops.
 */
static void adopt(struct sup *s)
{
	struct tq_worker_info *ws = NULL;
	size_t n = 0;

	if (tq_queue_workers(s->q, &ws, &n, NULL) < 0)
		return;
	for (size_t j = 0; j < n; j++) {
		int i = ws[j].slot - 1;
		if (own_node(s, ws[j].node) && i >= 0 && i < s->o->workers &&
		    s->slots[i].pid == 0 && ws[j].pid > 0 &&
		    tq_proc_alive(ws[j].pid, ws[j].proc_start))
			adopt_one(s, i, &ws[j]);
	}
	for (size_t j = 0; j < n; j++) {
		int free_i = -1, taken = 0;
		/* another node's worker: its pid is not a process here, and its
		 * node adopts or recovers it (its tasks' leases expire else) */
		if (!own_node(s, ws[j].node))
			continue;
		for (int i = 0; i < s->o->workers; i++) {
			taken |= s->slots[i].pid > 0 && s->slots[i].worker_id == ws[j].id;
			if (s->slots[i].pid == 0 && free_i < 0)
				free_i = i;
		}
		if (taken)
			continue;
		if (ws[j].pid <= 0 || !tq_proc_alive(ws[j].pid, ws[j].proc_start) ||
		    (ws[j].slot > s->o->workers && free_i >= 0 &&
		     adopt_one(s, free_i, &ws[j]) < 0)) {
			char why[128];
			snprintf(why, sizeof(why), "worker pid %d is gone", ws[j].pid);
			recover(s, ws[j].id, why);
			tq_queue_worker_stop(s->q, ws[j].id, NULL);
			continue;
		}
		if (ws[j].slot > s->o->workers && free_i >= 0)
			continue; /* adopted */
		slog("stopping extra worker %d (pid %d)", ws[j].slot, ws[j].pid);
		tq_proc_signal(ws[j].pid, ws[j].proc_start, SIGTERM, NULL);
	}
	free(ws);
}

static void restart_due(struct sup *s)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t now = tq_mono_ms();

	if (s->stopping)
		return;
	for (int i = 0; i < s->o->workers; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->pid > 0 || sl->restart_at > now)
			continue;
		if (spawn_worker(s, i, &err) < 0) {
			slog("%s", err.msg);
			sl->backoff = sl->backoff ? sl->backoff * 2 : RESTART_MIN_MS;
			if (sl->backoff > RESTART_MAX_MS)
				sl->backoff = RESTART_MAX_MS;
			sl->restart_at = now + sl->backoff;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Stopping                                                           */

/*
 * Signal the worker of sl, with v (the grace) when v is set, without a new
 * fd: our own child by its pid (not reaped yet, so the pid is still its
 * own: nothing to check), an adopted worker through the pidfd we hold for
 * it. A stop must reach the workers when the supervisor has no fd to spare
 * (EMFILE): signalling through tq_proc_signal, which opens a pidfd and
 * reads /proc, reached none of them then, and the supervisor waited for
 * ever for workers that went on taking tasks.
 */
static void signal_slot(const struct slot *sl, int sig, const union sigval *v)
{
	siginfo_t si;

	if (sl->pidfd < 0) {
		if (v != NULL)
			sigqueue(sl->pid, sig, *v);
		else
			kill(sl->pid, sig);
		return;
	}
	if (v == NULL) {
		pidfd_send_signal(sl->pidfd, sig, NULL, 0);
		return;
	}
	/* what sigqueue(3) sends */
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value = *v;
	pidfd_send_signal(sl->pidfd, sig, &si, 0);
}

static void signal_workers(struct sup *s, int sig)
{
	for (int i = 0; i < s->o->workers; i++) {
		struct slot *sl = &s->slots[i];
		/* Pass the grace on with the signal (shutdown --now). */
		union sigval v = { .sival_int = (int)s->stop_grace };

		if (sl->pid > 0)
			signal_slot(sl, sig, s->stop_grace >= 0 ? &v : NULL);
	}
}

static int workers_left(struct sup *s)
{
	int n = 0;

	for (int i = 0; i < s->o->workers; i++)
		n += s->slots[i].pid > 0;
	return n;
}

static void begin_stop(struct sup *s, const struct signalfd_siginfo *si)
{
	if (s->stopping)
		return;
	s->stopping = 1;
	s->stop_signal = (int)si->ssi_signo;
	s->stop_grace = -1;
	if (si->ssi_code == SI_QUEUE && si->ssi_int >= 0)
		s->stop_grace = si->ssi_int;
	slog("stopping (%s)%s", strsignal((int)si->ssi_signo),
	     s->stop_grace == 0 ? ", now" : "");
	/* No more submits through us: clients store their tasks themselves
	 * (for the next supervisor) instead of waiting on one that leaves. */
	tq_submitd_close(s->sd);
	s->sd = NULL;
	signal_workers(s, SIGTERM);
	/* the idle warm agents end now, as a group; a lent one once its
	 * worker's interrupted turn gives it back */
	tq_warm_stop(s->warm, s->stop_grace);
}

/*
 * The state directory was removed or replaced (rm -rf, then a submit made a
 * new one and started its own supervisor): nothing we run can be reached
 * any more, and our files are not ours to touch. Stop the workers and their
 * tasks now (their outcome goes to a database nobody can open).
 */
static void check_home(struct sup *s)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_statedir_check(&s->home, &err) == 0)
		return;
	slog("%s: stopping the workers and their tasks, and exiting", err.msg);
	s->home_lost = 1;
	s->stopping = 1;
	s->stop_grace = 0;
	tq_submitd_close(s->sd);
	s->sd = NULL;
	signal_workers(s, SIGTERM);
	tq_warm_stop(s->warm, 0);
}

/* ------------------------------------------------------------------ */
/* The loop                                                           */

/* A signal; at SIGCHLD the loop has reaped (on_reaped). */
static void on_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct sup *s = arg;

	if (si->ssi_signo == SIGTERM || si->ssi_signo == SIGINT)
		begin_stop(s, si);
}

static void check_adopted(struct sup *s, const struct pollfd *p, const int *slot_of,
			  int np)
{
	for (int k = 0; k < np; k++) {
		int i = slot_of[k];
		if (!p[k].revents || s->slots[i].pid <= 0)
			continue;
		if (s->stopping) {
			tq_close(s->slots[i].pidfd);
			s->slots[i].pidfd = -1;
			s->slots[i].pid = 0;
		} else {
			worker_gone(s, i, "ended");
		}
	}
}

/* The loop's deadline: a tick from now, a worker's restart, or at_most
 * (the submit socket's next deadline, mono ms), whichever comes first. */
static int64_t next_deadline(struct sup *s, int64_t at_most)
{
	int64_t at = tq_mono_ms() + (s->o->drain ? DRAIN_TICK_MS : TICK_MS);

	if (at_most < at)
		at = at_most;

	for (int i = 0; i < s->o->workers && !s->stopping; i++)
		if (s->slots[i].pid == 0 && s->slots[i].restart_at < at)
			at = s->slots[i].restart_at;
	if (tq_warm_deadline(s->warm) < at)
		at = tq_warm_deadline(s->warm);
	return at;
}

/* drain: done when nothing can run now, nothing runs, and no task that our
 * workers ran is still waiting (for a retry). */
static int drain_done(struct sup *s)
{
	int64_t counts[TQ_STATE_COUNT], ran = 0, failed = 0, pending = 0;
	int runnable = 0;

	learn_worker_ids(s);
	if (tq_queue_counts(s->q, counts, NULL) < 0 || counts[TQ_RUNNING] > 0)
		return 0;
	if (tq_queue_runnable(s->q, tq_now_ms(), &runnable, NULL) < 0 || runnable)
		return 0;
	/* an on-exit hook owed by an end recovery wrote: a worker runs it */
	if (tq_queue_on_exit_due(s->q, &runnable, NULL) < 0 || runnable)
		return 0;
	if (tq_queue_worker_results(s->q, s->ran_by, s->nran_by, &ran, &failed, &pending,
				    NULL) < 0)
		return 0;
	return pending == 0;
}

#define RETENTION_CHUNK 256        /* tasks removed per transaction */
#define RETENTION_BUDGET_MS 2000   /* per pass; the rest at the next one */

/* The retention in force: the flag (stored for later supervisors and for
 * status), else what was stored, else the default. */
static int64_t retention(struct sup *s)
{
	char *v = NULL, buf[32];
	int64_t ms = TQ_DEFAULT_RETENTION_MS;

	if (s->o->retention_ms >= 0) {
		snprintf(buf, sizeof(buf), "%lld", (long long)s->o->retention_ms);
		tq_queue_meta_set(s->q, TQ_META_RETENTION, buf, NULL);
		return s->o->retention_ms;
	}
	if (tq_queue_meta_get(s->q, TQ_META_RETENTION, &v, NULL) == 0 && v != NULL &&
	    tq_parse_int(v, 0, INT64_MAX, &ms, NULL) < 0)
		ms = TQ_DEFAULT_RETENTION_MS;
	free(v);
	return ms;
}

/* Remove finished tasks older than the retention, in short transactions
 * (workers claim in between), for at most RETENTION_BUDGET_MS a pass so
 * the loop stays responsive; a backlog is worked off over several passes. */
static void retention_sweep(struct sup *s)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t keep = retention(s), total = 0, got = 0, stop;
	char buf[32];

	if (keep <= 0)
		return;
	stop = tq_mono_ms() + RETENTION_BUDGET_MS;
	do {
		got = 0;
		if (tq_queue_clear_finished(s->q, tq_now_ms() - keep, RETENTION_CHUNK, &got,
					    &err) < 0) {
			slog("retention: %s", err.msg);
			if (got == 0)
				break;
		}
		total += got;
	} while (got == RETENTION_CHUNK && tq_mono_ms() < stop);
	if (total > 0) {
		tq_format_duration(keep, buf, sizeof(buf));
		slog("retention: removed %lld finished task%s older than %s", (long long)total,
		     total == 1 ? "" : "s", buf);
	}
}

/* Whether the attempt ran on this node, so that the processes its records
 * name are ours to kill (records of another node's attempts in a state
 * directory two nodes share are that node's). A store that cannot answer
 * says no: nothing is killed on a guess. */
static int attempt_ours(struct sup *s, int64_t task, int attempt)
{
	struct tq_attempt *as = NULL;
	size_t n = 0;
	int ours = 0;

	if (tq_queue_attempts(s->q, task, &as, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (as[i].attempt == attempt)
			ours = as[i].node == NULL || own_node(s, as[i].node);
	tq_attempt_list_free(as, n);
	return ours;
}

/* For the sweep of records and cgroups: does this attempt still run? A
 * store that cannot answer says yes: nothing is killed on a guess. */
static int attempt_live(int64_t task, int attempt, void *arg)
{
	struct sup *s = arg;
	struct tq_task t;
	int rc = tq_queue_get(s->q, task, 0, &t, NULL), live;

	if (rc == TQ_ENOTFOUND)
		return 0;
	if (rc < 0)
		return 1;
	live = t.state == TQ_RUNNING && t.attempt == attempt;
	tq_task_release(&t);
	return live || !attempt_ours(s, task, attempt);
}

/* Records and cgroups of attempts that ended without removing them (their
 * worker died between the two): what they still hold is killed. */
static void sweep_contained(struct sup *s)
{
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0, killed = 0;

	if (tq_contain_sweep(s->procs_fd, &s->cgroup, attempt_live, s, &n, &killed,
			     &err) < 0)
		slog("process records: %s", err.msg);
	if (n > 0)
		slog("removed %zu process record%s or cgroup%s of ended attempts%s", n,
		     n == 1 ? "" : "s", n == 1 ? "" : "s",
		     killed ? " (and killed what they held)" : "");
}

/*
 * Housekeeping, at start and then every HOUSEKEEP_MS: submit tokens old
 * enough that no client can still retry with them, workspaces a crash left
 * behind, records and cgroups of attempts that ended without removing them,
 * and retention of finished tasks.
 */
static void housekeep(struct sup *s)
{
	struct tq_err err = TQ_ERR_INIT;
	int n = 0;

	sweep_contained(s);

	if (tq_queue_prune_tokens(s->q, tq_now_ms() - TOKEN_KEEP_MS, NULL, &err) < 0)
		slog("submit tokens: %s", err.msg);
	if (tq_workspace_sweep(s->q, s->o->home, &n, &err) < 0)
		slog("workspace sweep: %s", err.msg);
	else if (n > 0)
		slog("removed %d workspace%s of finished tasks", n, n == 1 ? "" : "s");
	retention_sweep(s);
}

/*
 * Our node's row of the supervisors (queue.h): written at start and every
 * TQ_SUPERVISOR_BEAT_MS, so that status on any node sharing the store
 * lists us with a heartbeat (another node cannot look at our pid), and
 * marked stopped at the end. A write the store refuses is tried at the
 * next beat.
 */
static void supervisor_beat(struct sup *s)
{
	char desc[PATH_MAX + TQ_ERR_MAX];
	struct tq_supervisor_info me = { .pid = (int)getpid(), .started_at = s->started_at,
					 .workers = s->o->workers, .max_warm = s->o->max_warm,
					 .containment = desc };
	struct tq_err err = TQ_ERR_INIT;
	int rc;

	strlcpy(me.node, s->node, sizeof(me.node));
	tq_proc_start_time(getpid(), &me.proc_start, NULL);
	tq_contain_describe(&s->cgroup, desc, sizeof(desc));
	if ((rc = tq_queue_supervisor_beat(s->q, &me, &err)) < 0) {
		store_failed(s, rc, "supervisor heartbeat", &err);
		s->beat_at = tq_mono_ms() - TQ_SUPERVISOR_BEAT_MS + TICK_MS;
		return;
	}
	s->beat_at = tq_mono_ms();
}

/*
 * Other nodes' changes (issue 20; queue.h, tq_queue_wake_open): a task
 * submitted, retried or resumed on another node sharing the store is
 * announced to this handle, and each announcement rings this node's
 * doorbell, which wakes one idle worker at once instead of at its idle
 * beat. The supervisor listens for the node: one connection, one wake-up
 * an announcement. Opened at start, and again with a backoff when it broke
 * (the database restarted): announcements may have been missed meanwhile,
 * so the workers are woken once then. A SQLite store needs none.
 */
static void wake_open(struct sup *s, int again)
{
	struct tq_err err = TQ_ERR_INIT;

	if (tq_queue_wake_open(s->q, s->node, &s->wake, &err) < 0) {
		if (s->wake_backoff == 0)
			slog("%s; other nodes' tasks wake this node's workers at their idle "
			     "beat until it works again", err.msg);
		s->wake_wanted = 1;
		s->wake_backoff = s->wake_backoff ? s->wake_backoff * 2 : WAKE_RETRY_MIN_MS;
		if (s->wake_backoff > WAKE_RETRY_MAX_MS)
			s->wake_backoff = WAKE_RETRY_MAX_MS;
		s->wake_at = tq_mono_ms() + s->wake_backoff;
		return;
	}
	s->wake_wanted = s->wake != NULL;
	if (s->wake == NULL)
		return;
	if (s->wake_backoff > 0)
		slog("listening for other nodes' tasks again");
	s->wake_backoff = 0;
	if (again)
		tq_doorbell_ring(s->o->home);
}

/* The handle's descriptor was polled (revents): take what came, ring the
 * doorbell if another node announced something, and close a broken one. */
static void wake_serve(struct sup *s, short revents)
{
	struct tq_err err = TQ_ERR_INIT;
	int n;

	if (s->wake == NULL) {
		if (s->wake_wanted && !s->stopping && tq_mono_ms() >= s->wake_at)
			wake_open(s, 1);
		return;
	}
	if (revents == 0)
		return;
	if ((n = tq_queue_wake_take(s->wake, &err)) > 0) {
		tq_doorbell_ring(s->o->home);
	} else if (n < 0) {
		slog("%s; listening again in %d s", err.msg, WAKE_RETRY_MIN_MS / 1000);
		tq_queue_wake_close(s->wake);
		s->wake = NULL;
		s->wake_backoff = WAKE_RETRY_MIN_MS;
		s->wake_at = tq_mono_ms() + s->wake_backoff;
	}
}

_Static_assert(TQ_MAX_WORKERS + TQ_SUBMITD_POLL_MAX + TQ_WARM_POLL_MAX + 1 <= TQ_LOOP_FD_MAX,
	       "the supervisor's descriptors fit one wait of the event loop");

/*
 * Each turn (loop.h) reads the signals first: a SIGTERM that began the
 * stop closes the submit socket (begin_stop) before its connections are
 * served, and makes an adopted worker that ended in the same turn one to
 * forget rather than restart (check_adopted). The adopted workers' pidfds
 * and the socket are served after the wait, not by callbacks: the socket
 * is served every turn, ready or not, to close connections past their
 * deadline.
 */
static void loop(struct sup *s)
{
	const struct tq_loop l = { .sigfd = s->sigfd, .signals_first = 1,
				   .on_child = on_reaped, .on_signal = on_signal, .arg = s };
	int64_t next_tick = tq_mono_ms(), next_housekeep = tq_mono_ms();
	struct tq_err err = TQ_ERR_INIT;

	for (;;) {
		struct pollfd p[TQ_MAX_WORKERS + TQ_SUBMITD_POLL_MAX + TQ_WARM_POLL_MAX + 1];
		int slot_of[TQ_MAX_WORKERS], np = 0;
		int64_t sd_at = INT64_MAX;
		size_t nsd = 0, nw = 0, nk = 0;

		if (s->stopping && workers_left(s) == 0 && tq_warm_left(s->warm) == 0)
			break;
		for (int i = 0; i < s->o->workers; i++)
			if (s->slots[i].pidfd >= 0) {
				p[np] = (struct pollfd){ s->slots[i].pidfd, POLLIN, 0 };
				slot_of[np++] = i;
			}
		/* last, after the pidfds check_adopted walks: the submit
		 * socket and its connections, each under its own deadline */
		if (s->sd)
			nsd = tq_submitd_poll(s->sd, p + np, &sd_at);
		/* and the warm socket, its connections (warm.h) */
		nw = tq_warm_poll(s->warm, p + np + nsd);
		/* and other nodes' announcements */
		if (s->wake != NULL)
			p[np + nsd + nw + nk++] = (struct pollfd){ tq_queue_wake_fd(s->wake),
								   POLLIN, 0 };
		if (tq_loop_wait(&l, p, NULL, (size_t)np + nsd + nw + nk,
				 next_deadline(s, sd_at), &err) < 0)
			slog("%s", err.msg);
		check_adopted(s, p, slot_of, np);
		tq_warm_serve(s->warm, p + np + nsd, nw);
		wake_serve(s, nk ? p[np + nsd + nw].revents : 0);
		tq_warm_tick(s->warm, tq_mono_ms());
		/* s->sd is gone if a signal just began the stop; served even
		 * without events, to close connections past their deadline */
		if (s->sd)
			tq_submitd_serve(s->sd, p + np, nsd, sd_log);
		restart_due(s);
		if (tq_mono_ms() < next_tick)
			continue;
		next_tick = tq_mono_ms() + (s->o->drain ? DRAIN_TICK_MS : TICK_MS);
		tq_diag_tick(0);
		if (tq_mono_ms() < s->sweep_until)
			sweep_orphans(s);
		if (!s->stopping)
			check_home(s);
		/* the store away: what needs it waits for its next tick (each
		 * would fail, or wait, in turn) */
		if (!s->stopping && recover(s, 0, "lease expired") == TQ_EOFFLINE)
			continue;
		tq_warm_store_tick(s->warm);
		if (tq_mono_ms() - s->beat_at >= TQ_SUPERVISOR_BEAT_MS)
			supervisor_beat(s);
		if (!s->stopping)
			sweep_end_records(s);
		learn_worker_ids(s);
		if (!s->stopping && tq_mono_ms() >= next_housekeep) {
			housekeep(s);
			next_housekeep = tq_mono_ms() + HOUSEKEEP_MS;
		}
		if (s->o->drain && !s->stopping && drain_done(s)) {
			slog("drained: nothing left to run");
			s->stopping = 1;
			s->stop_grace = -1;
			signal_workers(s, SIGTERM);
			tq_warm_stop(s->warm, -1);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Starting                                                           */

/* The signals, blocked and read from a signalfd by the loop from here on;
 * SIGPIPE ignored (a submit client that hung up is an EPIPE). */
static int setup_signals(struct sup *s)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };

	signal(SIGPIPE, SIG_IGN);
	s->sigfd = tq_loop_sigfd_open(sigs, sizeof(sigs) / sizeof(sigs[0]), NULL, NULL);
	return s->sigfd < 0 ? -1 : 0;
}

/* One setting of the log: the flag's value (stored for later supervisors,
 * an autostarted one too), else the stored one, else 0 (the default). */
static int64_t log_setting(struct sup *s, const char *key, int64_t flag, int64_t lo,
			   int64_t hi)
{
	char *v = NULL, buf[32];
	int64_t n = 0;

	if (flag > 0) {
		snprintf(buf, sizeof(buf), "%lld", (long long)flag);
		tq_queue_meta_set(s->q, key, buf, NULL);
		return flag;
	}
	if (tq_queue_meta_get(s->q, key, &v, NULL) < 0 || v == NULL ||
	    tq_parse_int(v, lo, hi, &n, NULL) < 0)
		n = 0;
	free(v);
	return n;
}

/* The log's bounds: --log-size and --log-files, else what was stored. */
static void log_limits(struct sup *s)
{
	int64_t size = log_setting(s, TQ_META_LOG_SIZE, s->o->log_size, TQ_DIAG_LOG_SIZE_MIN,
				   TQ_DIAG_LOG_SIZE_MAX);
	int64_t files = log_setting(s, TQ_META_LOG_FILES, s->o->log_files, 1,
				    TQ_DIAG_LOG_FILES_MAX);

	tq_diag_log_limits(size, (int)files);
}

static void write_meta(struct sup *s)
{
	char v[64], desc[PATH_MAX + TQ_ERR_MAX];

	snprintf(v, sizeof(v), "%d", (int)getpid());
	tq_queue_meta_set(s->q, "supervisor_pid", v, NULL);
	snprintf(v, sizeof(v), "%lld", (long long)s->started_at);
	tq_queue_meta_set(s->q, "supervisor_started_at", v, NULL);
	snprintf(v, sizeof(v), "%d", s->o->workers);
	tq_queue_meta_set(s->q, "supervisor_workers", v, NULL);
	snprintf(v, sizeof(v), "%d", s->o->max_warm);
	tq_queue_meta_set(s->q, TQ_META_MAX_WARM, v, NULL);
	tq_contain_describe(&s->cgroup, desc, sizeof(desc));
	tq_queue_meta_set(s->q, TQ_META_CONTAINMENT, desc, NULL);
}

/*
 * Send the daemon's stdio to HOME/serve.log, which it owns from now on:
 * rotated by size before any line would pass it, by this process or by a
 * worker (they follow it across rotations), and checked every tick
 * (diag.h).
 * (It was rotated only here, at start, past 10 MB: a running supervisor's
 * log grew without bound, and a rotation moved the file under the workers
 * a previous supervisor left, who wrote on into serve.log.1.)
 */
static int open_log(const struct tq_serve_opts *o, struct tq_err *err)
{
	int fd;

	if (tq_diag_log_open(o->home, o->log_size > 0 ? o->log_size : TQ_DIAG_LOG_SIZE,
			     o->log_files > 0 ? o->log_files : TQ_DIAG_LOG_FILES, err) < 0)
		return -1;
	fd = tq_open("/dev/null", O_RDONLY, 0);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		tq_close(fd);
	}
	return 0;
}

static void release(struct sup *s)
{
	for (int i = 0; i < s->o->workers; i++)
		tq_close(s->slots[i].pidfd);
	tq_close(s->procs_fd);
	s->procs_fd = -1;
	tq_cgroup_base_release(&s->cgroup);
	free(s->ran_by);
	tq_submitd_close(s->sd);
	s->sd = NULL;
	tq_warm_close(s->warm);
	s->warm = NULL;
	tq_queue_wake_close(s->wake);
	s->wake = NULL;
	tq_queue_close(s->q);
	tq_close(s->sigfd);
}

static int exit_status(struct sup *s)
{
	int64_t ran = 0, failed = 0, pending = 0;
	struct tq_err err = TQ_ERR_INIT;

	if (s->home_lost)
		return 1;
	if (!s->o->drain)
		return s->stop_signal ? 128 + s->stop_signal : 0;
	learn_worker_ids(s);
	if (s->stop_signal)
		return 128 + s->stop_signal;
	if (tq_queue_worker_results(s->q, s->ran_by, s->nran_by, &ran, &failed, &pending,
				    &err) < 0) {
		slog("%s", err.msg);
		return 1;
	}
	slog("drain ran %lld task%s, %lld did not succeed", (long long)ran,
	     ran == 1 ? "" : "s", (long long)failed);
	return failed == 0 && pending == 0 ? 0 : 1;
}

/* Remove serve.pid only if it is still the one we made, in the directory we
 * hold: a supervisor started since in a new state directory of the same
 * path has its own, which must survive our exit. Then release the lock. */
static void remove_pidfile(struct sup *s)
{
	if (tq_statedir_remove_own(&s->home, "serve.pid", &s->pid_id) == 1)
		slog("serve.pid is another supervisor's now: left alone");
	pidfile_close(s->pfh);
	s->pfh = NULL;
	tq_statedir_close(&s->home);
}

static int lock(struct sup *s, const char *path)
{
	pid_t other = 0;

	s->pfh = pidfile_open(path, 0600, &other);
	if (s->pfh != NULL) {
		/* Workers must not inherit the locked descriptor: they outlive a
		 * killed supervisor, and the lock would then block its successor. */
		fcntl(pidfile_fileno(s->pfh), F_SETFD, FD_CLOEXEC);
		return 0;
	}
	if (errno == EEXIST) {
		if (s->o->drain) {
			fprintf(stderr, "taskq: drain: a supervisor is already running "
				"(pid %d); use taskq wait, or stop it first\n", (int)other);
			return 1;
		}
		fprintf(stderr, "taskq: serve: a supervisor is already running (pid %d)\n",
			(int)other);
		return 0;
	}
	fprintf(stderr, "taskq: serve: %s: %s\n", path, strerror(errno));
	return 1;
}

int tq_supervisor_main(const struct tq_serve_opts *o)
{
	struct sup s = { .o = o, .sigfd = -1, .stop_grace = -1, .procs_fd = -1,
			 .cgroup = { .fd = -1 }, .home = TQ_STATEDIR_INIT };
	struct tq_err err = TQ_ERR_INIT;
	char path[PATH_MAX];
	int ready = -1, rc;

	for (int i = 0; i < TQ_MAX_WORKERS; i++)
		s.slots[i].pidfd = -1;
	/* Open once in this process to report problems on the terminal; the
	 * daemon opens its own connection after the fork. */
	if (tq_node_self(s.node, sizeof(s.node), &err) < 0 ||
	    tq_queue_open(&s.q, o->home, TQ_OPEN_CHECK, &err) < 0) {
		fprintf(stderr, "taskq: serve: %s\n", err.msg);
		return 1;
	}
	if (tq_queue_notice(s.q) != NULL) /* permissions made private */
		fprintf(stderr, "taskq: serve: %s\n", tq_queue_notice(s.q));
	tq_queue_close(s.q);
	s.q = NULL;
	if (pidfile_path(o->home, path, sizeof(path)) < 0)
		return 1;
	/* Held open from before the lock: the directory whose serve.pid we
	 * lock is the one we watch (check_home) and remove files from. */
	if (tq_statedir_open(&s.home, o->home, &err) < 0) {
		fprintf(stderr, "taskq: serve: %s\n", err.msg);
		return 1;
	}
	if ((rc = lock(&s, path)) != 0 || s.pfh == NULL) {
		tq_statedir_close(&s.home);
		return rc;
	}
	tq_statedir_note_fd(pidfile_fileno(s.pfh), &s.pid_id);
	err = (struct tq_err)TQ_ERR_INIT;
	/* The daemon: its parent waits until it says it is up (or fails), so
	 * `taskq serve` returns with a working supervisor (spawn.h). The lock
	 * is held by the open file description both share, so it stays with
	 * the daemon when the parent exits. */
	if (!o->foreground && (tq_spawn_detach(&ready, &err) < 0 || open_log(o, &err) < 0)) {
		fprintf(stderr, "taskq: serve: cannot start the daemon: %s\n",
			err.msg[0] != '\0' ? err.msg : strerror(errno));
		remove_pidfile(&s);
		return 1;
	}
	pidfile_write(s.pfh);
	/* in the foreground, stderr may be serve.log all the same (a unit's
	 * redirection): then written as the daemon writes it */
	if (o->foreground)
		tq_diag_log_follow(o->home, o->log_size, o->log_files);
	tq_diag_fold_on();
	/* Each submit through the socket allocates and frees the request and
	 * SQLite's statement memory; with glibc's default trim threshold the
	 * freed top of the heap went back to the kernel and was faulted in
	 * again by the next submit (two brk calls a submit; measured: 236 us
	 * of the supervisor's time per submit, 180 us without). The heap is
	 * small; keep it, as the workers do. */
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	setproctitle("supervisor: %d workers", o->workers);
	if (setup_signals(&s) < 0 || tq_proc_set_subreaper(&err) < 0 ||
	    tq_queue_open(&s.q, o->home, 0, &err) < 0) {
		slog("cannot start: %s", err.msg[0] ? err.msg : strerror(errno));
		rc = 1;
		goto out;
	}
	snprintf(s.home_mark, sizeof(s.home_mark), TQ_TASK_HOME_VAR "=%s",
		 o->home);
	/* Our workers are in our cgroup, so what we find is what their
	 * attempts get (status shows it). */
	tq_cgroup_probe(&s.cgroup, o->home);
	if ((s.procs_fd = tq_contain_dir(o->home, &err)) < 0) {
		slog("%s; recovery has only the environment marks", err.msg);
		s.procs_fd = -1;
	}
	s.started_at = tq_now_ms();
	write_meta(&s);
	supervisor_beat(&s);
	log_limits(&s);
	{
		char desc[PATH_MAX + TQ_ERR_MAX];
		tq_contain_describe(&s.cgroup, desc, sizeof(desc));
		slog("started: %d worker%s, state directory %s; task processes contained "
		     "by %s", o->workers, o->workers == 1 ? "" : "s", o->home, desc);
	}
	adopt(&s);
	recover(&s, 0, "lease expired");
	sweep_end_records(&s);
	/* Warm agents (warm.h): what a dead supervisor left is ended first
	 * (its stdin went with it), then the socket workers borrow them by,
	 * before a worker starts: one that found no socket would run a warm
	 * message cold. */
	{
		size_t killed = 0;
		err = (struct tq_err)TQ_ERR_INIT;
		if (tq_warm_sweep_leftovers(o->home, &killed, &err) < 0)
			slog("warm agents left by a previous supervisor: %s", err.msg);
		else if (killed > 0)
			slog("ended %zu warm agent process%s a previous supervisor left", killed,
			     killed == 1 ? "" : "es");
		if (tq_warm_open(&s.warm, o->home, s.node, s.q, o->max_warm, slog, &err) < 0)
			slog("no warm socket (warm sessions run cold): %s", err.msg);
		tq_warm_store_tick(s.warm);
	}
	/* before the workers' first claims: a task another node submits
	 * after them wakes them */
	wake_open(&s, 0);
	restart_due(&s);
	/* Listen before saying we are up: a client that sees the supervisor
	 * running can submit through it at once. Without the socket clients
	 * store their tasks themselves, so a failure costs only speed. */
	if (!o->drain && tq_submitd_open(&s.sd, o->home, &err) < 0)
		slog("no submit socket: %s", err.msg);

	if (ready >= 0) {
		tq_write_all(ready, "R", 1);
		tq_close(ready);
		ready = -1;
	}
	loop(&s);
	/* The workers are gone: what their attempts left (a group that did
	 * not empty in time) is cleaned now, not by the next supervisor. */
	sweep_contained(&s);
	rc = exit_status(&s);
	tq_queue_meta_set(s.q, "supervisor_pid", NULL, NULL);
	tq_queue_supervisor_stop(s.q, s.node, (int)getpid(), NULL);
	tq_diag_tick(1); /* the counts of lines folded until now */
	slog("stopped");
out:
	tq_close(ready);
	release(&s);
	remove_pidfile(&s);
	return rc;
}

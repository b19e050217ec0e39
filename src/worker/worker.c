/*
 * worker.c - the worker process: claim, run, record, until told to stop.
 *
 * Order at start matters: signals are blocked and routed to a signalfd
 * before anything else, so no SIGCHLD or SIGTERM is lost between steps; the
 * worker becomes a child subreaper before its first task, so a task's
 * orphans are reparented here and can be swept; the database is opened in
 * this process (never inherited across fork).
 *
 * An idle worker waits in its event loop (proc/loop.h) on the doorbell and
 * the signalfd, until its next heartbeat or the next scheduled task's
 * time: no busy loop, ~0% CPU.
 */
#include "worker_int.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/unistd.h>

#include "common/diag.h"
#include "common/sys.h"
#include "endrec.h"
#include "ipc/doorbell.h"
#include "onexit.h"
#include "proc/contain.h"
#include "proc/loop.h"
#include "proc/proc.h"
#include "queue/home.h"

#define IDLE_BEAT_MS 10000     /* heartbeat while idle */
#define BUSY_RETRY_MS 200      /* the store was locked: try again soon */
#define ERROR_RETRY_MS 2000    /* any other store error */
#define HOOK_CHECK_MS 1000     /* a busy worker looks for owed hooks this often */
#define RESERVE_RETRY_MS 10000 /* no room held for an end record: try again */
#define HOME_CHECK_MS 1000     /* no supervisor: how often we look at the home */
#define AWAY_RETRY_MS 500      /* the store away: try again (the connection's
				* own backoff paces the connects) */
#define GIVE_BACK_MAX 16       /* tasks of lost claims given back in one look */

static void diag_line(const char *who, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void diag_line(const char *who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tq_diag(who, fmt, ap);
	va_end(ap);
}

void tq_worker_log(struct worker *w, const char *fmt, ...)
{
	char who[64], msg[TQ_ERR_MAX + 256];
	va_list ap;

	snprintf(who, sizeof(who), "taskq worker %d (pid %d)", w->o->slot, (int)w->pid);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A reason or a hook's line can quote the task's output, and with it
	 * a credential the task printed (secret.h). */
	tq_secrets_mask_str(w->secrets, msg, sizeof(msg));
	diag_line(who, "%s", msg);
}

void tq_worker_on_signal(struct worker *w, const struct signalfd_siginfo *si)
{
	switch (si->ssi_signo) {
	case SIGTERM:
	case SIGINT:
		if (!w->stopping) {
			int64_t grace = w->o->grace_ms;
			/* sigqueue(3) carries a grace override (shutdown --now). */
			if (si->ssi_code == SI_QUEUE && si->ssi_int >= 0)
				grace = si->ssi_int;
			w->stopping = 1;
			w->stop_signal = (int)si->ssi_signo;
			w->stop_at = tq_mono_ms() + grace;
		}
		break;
	case SIGUSR1:
		w->poked = 1;
		break;
	default:
		break;
	}
}

int tq_worker_supervised(struct worker *w)
{
	int64_t now = tq_mono_ms();

	/* Reparented (to init or a subreaper) once it died: our parent's pid
	 * is then another process's, never our supervisor's, for good. A
	 * getppid() a loop turn was 3.4 syscalls a task in a drain; once a
	 * second (the home check's pace) is enough to notice. */
	if (now >= w->parent_check_at) {
		w->supervised = w->o->supervisor_pid > 0 && getppid() == w->o->supervisor_pid;
		w->parent_check_at = w->supervised ? now + HOME_CHECK_MS : INT64_MAX;
	}
	return w->supervised;
}

/*
 * A supervisor watches its state directory and stops its workers when it
 * was removed or replaced (supervisor.c, check_home). A worker whose
 * supervisor is gone (killed: a drain killed by CI's timeout, a serve
 * SIGKILLed) or that none started is watched by nobody: it keeps its tasks
 * for a new supervisor to adopt, but once its directory went no supervisor
 * can ever adopt it there, and it idled for ever, an orphan holding a
 * deleted database. So it looks for itself, and stops as that check would
 * stop it: its running task too, without its grace (what it writes goes
 * where nobody can read it). With our supervisor alive, this is the
 * supervisor's to do (it stops us and does not start another).
 */
int tq_worker_check_home(struct worker *w)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t now = tq_mono_ms();

	if (w->stopping || now < w->home_check_at || tq_worker_supervised(w))
		return w->stopping;
	w->home_check_at = now + HOME_CHECK_MS;
	if (tq_statedir_check(&w->home, &err) == 0)
		return 0;
	tq_worker_log(w, "%s and no supervisor runs: stopping, and any task of ours with it",
		      err.msg);
	w->stopping = 1;
	w->home_lost = 1;
	w->stop_at = now;
	return 1;
}

/* The signals, blocked from here on and read from the worker's one
 * signalfd by each of its loops (idle, a task, a hook); SIGPIPE ignored: a
 * task that stops reading its stdin is an EPIPE to record (spawn.h). */
static int setup_signals(struct worker *w)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGUSR1, SIGHUP };

	signal(SIGPIPE, SIG_IGN);
	w->sigfd = tq_loop_sigfd_open(sigs, sizeof(sigs) / sizeof(sigs[0]), NULL, NULL);
	return w->sigfd < 0 ? -1 : 0;
}

struct idle {
	struct worker *w;
	int signals;              /* read in this wait */
};

static void idle_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct idle *i = arg;
	struct tq_err err = TQ_ERR_INIT;

	i->signals++;
	if (si->ssi_signo == SIGCHLD) {
		/* Nothing of ours runs: sweep anything reparented (the loop
		 * reaped what had exited; this kills what has not). */
		tq_proc_sweep(NULL, 0, NULL, &err);
		return;
	}
	tq_worker_on_signal(i->w, si);
}

/* While idle, for timeout ms: handle signals (reaping strays) and the
 * doorbell. Every idle worker polls the doorbell, so each byte
 * wakes them all; the one that reads it claims, and the others, finding it
 * gone, sleep on (to the same deadline) instead of each running a claim
 * that finds nothing. */
static void idle_events(struct worker *w, int timeout)
{
	int64_t until = tq_mono_ms() + timeout;
	struct idle i = { .w = w };
	const struct tq_loop l = { .sigfd = w->sigfd, .on_signal = idle_signal, .arg = &i };

	for (;;) {
		struct pollfd bell = { w->bellfd, POLLIN, 0 };
		int64_t at = until;

		/* no supervisor watches our home: we do (tq_worker_check_home) */
		if (!tq_worker_supervised(w) && w->home_check_at < at)
			at = w->home_check_at;
		if (tq_loop_wait(&l, &bell, NULL, 1, at, NULL) < 0)
			return;
		if (tq_worker_check_home(w))
			return;
		if (i.signals || (bell.revents && tq_doorbell_drain(w->bellfd) > 0))
			return;
		if (tq_mono_ms() >= until)
			return;
	}
}

static int idle_timeout(struct worker *w)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t at = 0, wait = IDLE_BEAT_MS;

	if (tq_queue_next_wakeup(w->q, &at, &err) == 0 && at > 0) {
		int64_t d = at - tq_now_ms();
		if (d < wait)
			wait = d < 0 ? 0 : d + 1;
	}
	return (int)wait;
}

int tq_worker_may_chain(struct worker *w)
{
	int64_t now = tq_mono_ms();

	if (w->stopping || w->has_next || now >= w->hook_check_at)
		return 0;
	return now < w->home_check_at || tq_worker_supervised(w);
}

/* A task claimed with the end of the one before and not started: a stop
 * came between. Given back as a claim the runner cannot start is (runner.c,
 * record_requeue): queued again, the attempt not counted. */
static void give_back(struct worker *w)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_finish f = { .task_id = w->next.id, .attempt = w->next.attempt,
			       .worker_id = w->id, .outcome = TQ_OUT_KILLED, .exit_code = -1,
			       .next = TQ_NEXT_REQUEUE, .retry_at = tq_now_ms(),
			       .reason = "the worker stopped before starting it" };

	if (tq_queue_finish(w->q, &f, NULL, &err) < 0)
		tq_worker_log(w, "task %lld: not given back (%s): its lease runs out",
			      (long long)w->next.id, err.msg);
	tq_task_release(&w->next);
	w->has_next = 0;
}

void tq_worker_beat(struct worker *w, int64_t task_id, int force)
{
	int64_t now = tq_mono_ms();

	if (!force && w->beat_at > 0 && now - w->beat_at < IDLE_BEAT_MS / 2)
		return;
	/* not written: the next one is */
	w->beat_at = tq_queue_worker_beat(w->q, w->id, task_id, NULL) == 0 ? now : 0;
}

int tq_worker_owed_hook(struct worker *w, int64_t task_id)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int any = 1, rc;

	if (task_id == 0) {
		w->hook_check_at = tq_mono_ms() + HOOK_CHECK_MS;
		/* a read first: nothing is owed almost always */
		if (tq_queue_on_exit_due(w->q, &any, &err) < 0 || !any)
			return 0;
	}
	if ((rc = tq_queue_on_exit_take(w->q, task_id, &t, &err)) < 0) {
		if (rc != TQ_ENOTFOUND)
			tq_worker_log(w, "on-exit hooks: %s", err.msg);
		return 0;
	}
	tq_worker_log(w, "task %lld: %s, its end written by recovery; running its on-exit "
		      "hook", (long long)t.id, tq_state_name(t.state));
	setproctitle("worker %d: on-exit hook of task %lld", w->o->slot, (long long)t.id);
	tq_on_exit_run(w, &t, t.state, t.exit_code);
	setproctitle("worker %d: idle", w->o->slot);
	tq_task_release(&t);
	return 1;
}

/*
 * Hold room for one end record (endrec.h), so that a task's end can be
 * kept when the disk is full -- which is when the store refuses it. Held
 * from the worker's start; taken again after a record used it up, when
 * there is room again. Without it, such an end lives only in this worker
 * until the store takes it. Said once, not every try.
 */
static void hold_reserve(struct worker *w)
{
	struct tq_err err = TQ_ERR_INIT;
	int64_t now = tq_mono_ms();

	if (w->reserve_fd >= 0 || now < w->reserve_at)
		return;
	if (tq_endrec_reserve(w->o->home, &w->reserve_fd, &err) == 0) {
		if (w->reserve_at > 0)
			tq_worker_log(w, "room for an end record is held again");
		w->reserve_at = 0;
		return;
	}
	if (w->reserve_at == 0)
		tq_worker_log(w, "no room held for an end record (%s): on a full disk a task's "
			      "end would live only in this worker until the store takes it",
			      err.msg);
	w->reserve_at = now + RESERVE_RETRY_MS;
}

/*
 * Claims lost with the store's connection: a claim whose commit was cut off
 * may have been done, leasing a task to this worker that it never got (it
 * would sit running under a live worker, whose recovery never comes). After
 * such a claim, or any new connection, the tasks the store says we run are
 * given back (queued again, the attempt not counted), but the one we hold
 * (w->next). 0, or the store's error: look again at the next step.
 */
static int give_back_lost(struct worker *w, struct tq_err *lerr)
{
	struct tq_expired *ex = NULL;
	struct tq_err err = TQ_ERR_INIT;
	int64_t at = tq_queue_connected_at(w->q);
	size_t n = 0;
	int rc;

	if (!w->lost_claims && at == w->connected_at)
		return 0;
	if ((rc = tq_queue_running_by(w->q, w->id, GIVE_BACK_MAX, &ex, &n, lerr)) < 0)
		return rc;
	w->lost_claims = 0;
	w->connected_at = tq_queue_connected_at(w->q);
	for (size_t i = 0; i < n; i++) {
		struct tq_finish f = { .task_id = ex[i].task_id, .attempt = ex[i].attempt,
				       .worker_id = w->id, .outcome = TQ_OUT_KILLED,
				       .exit_code = -1, .next = TQ_NEXT_REQUEUE,
				       .retry_at = tq_now_ms(),
				       .reason = "claimed by a commit whose answer the store's "
						 "connection lost; never started" };

		if (w->has_next && w->next.id == ex[i].task_id)
			continue;
		if (tq_queue_finish(w->q, &f, NULL, &err) < 0) {
			w->lost_claims = 1;
			tq_worker_log(w, "task %lld: %s", (long long)ex[i].task_id, err.msg);
			continue;
		}
		tq_worker_log(w, "task %lld: claimed by a commit whose answer was lost with the "
			      "store's connection; given back", (long long)ex[i].task_id);
		tq_doorbell_ring(w->o->home);
	}
	free(ex);
	return 0;
}

/* An idle worker's look at the store failed with rc: the store away is
 * said once, and looked at again soon; the other errors as always. */
static int store_failed(struct worker *w, int rc, const struct tq_err *err)
{
	if (rc != TQ_EOFFLINE) {
		tq_worker_log(w, "%s", err->msg);
		return rc;
	}
	if (w->away_since == 0) {
		w->away_since = tq_mono_ms();
		tq_worker_log(w, "%s; trying again until it is back", err->msg);
	}
	return rc;
}

static void store_back(struct worker *w)
{
	if (w->away_since == 0)
		return;
	tq_worker_log(w, "the store is back after %lld ms",
		      (long long)(tq_mono_ms() - w->away_since));
	w->away_since = 0;
}

/* One round: claim and run a task, or sleep until something may be ready.
 * An on-exit hook owed by an end no worker wrote goes first: when this
 * worker is idle, or once a HOOK_CHECK_MS while it is busy. */
static int step(struct worker *w)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_task t;
	int more = 0, rc;

	if (tq_worker_check_home(w))
		return 0;
	hold_reserve(w);
	if ((rc = give_back_lost(w, &err)) < 0) {
		store_failed(w, rc, &err);
		idle_events(w, rc == TQ_EOFFLINE ? AWAY_RETRY_MS : ERROR_RETRY_MS);
		return 0;
	}
	if (w->has_next) {
		/* claimed with the end of the task before (runner.c, try_end) */
		t = w->next;
		more = w->next_more;
		w->has_next = 0;
		rc = 0;
	} else {
		if (tq_mono_ms() >= w->hook_check_at && tq_worker_owed_hook(w, 0))
			return 0;
		rc = tq_queue_claim(w->q, w->id, w->o->lease_ms, &t, &more, &err);
	}

	/* cut off, maybe in its commit: the next step looks (give_back_lost) */
	if (rc == TQ_EOFFLINE)
		w->lost_claims = 1;
	if (rc == 0 || rc == TQ_ENOTFOUND)
		store_back(w);
	if (rc == 0) {
		/* More is waiting: wake the next idle worker, which claims and
		 * rings in turn, so a backlog (a resumed group, tasks a finished
		 * one unblocked) reaches every idle worker at once, not at its
		 * next timer. When nothing else was queued (one task submitted
		 * at a time) the others sleep on: waking them would only cost a
		 * claim that finds nothing. */
		if (more)
			tq_doorbell_ring_fd(w->bellfd);
		/* The claim wrote the task's lease, not our row: a worker
		 * draining short tasks beats once in half an idle beat. */
		tq_worker_beat(w, t.id, 0);
		rc = tq_runner_run(w, &t);
		tq_task_release(&t);
		tq_worker_beat(w, 0, 0);
		if (rc < 0)
			idle_events(w, ERROR_RETRY_MS);
		return 0;
	}
	if (rc == TQ_ENOTFOUND) {
		if (tq_worker_owed_hook(w, 0))
			return 0;
		tq_worker_beat(w, 0, 0);
		idle_events(w, idle_timeout(w));
		return 0;
	}
	store_failed(w, rc, &err);
	if (rc == TQ_ECORRUPT || rc == TQ_ENOTDB || rc == TQ_ENEWER)
		return rc; /* fatal: the supervisor's backoff will show it */
	idle_events(w, rc == TQ_EBUSY ? BUSY_RETRY_MS : rc == TQ_EOFFLINE ? AWAY_RETRY_MS :
		    ERROR_RETRY_MS);
	return 0;
}

static int start(struct worker *w, struct tq_err *err)
{
	char node[TQ_NODE_MAX + 1];
	int64_t ticks = 0;
	int rc;

	if (setup_signals(w) < 0)
		return tq_err_sys(err, "signals");
	if ((rc = tq_proc_set_subreaper(err)) < 0)
		return rc;
	if ((rc = tq_queue_open(&w->q, w->o->home, 0, err)) < 0)
		return rc;
	/* The directory the store is in, held: without it we only cannot
	 * tell that it went (tq_worker_check_home) */
	if (tq_statedir_open(&w->home, w->o->home, err) < 0)
		tq_worker_log(w, "%s", err->msg);
	snprintf(w->home_mark, sizeof(w->home_mark), TQ_TASK_HOME_VAR "=%s",
		 w->o->home);
	/* How each attempt's processes are known (contain.h); without the
	 * records' directory recovery still has the marks. */
	tq_cgroup_probe(&w->cgroup, w->o->home);
	if (tq_contain_file_open(&w->procs, w->o->home, err) < 0)
		tq_worker_log(w, "%s; tasks run without a process record", err->msg);
	if ((w->bellfd = tq_doorbell_open(w->o->home, err)) < 0)
		return w->bellfd;
	if (tq_rules_load(&w->rules, NULL, err) < 0) {
		/* A broken config must not stop tasks: built-in rules, loudly. */
		tq_worker_log(w, "%s; using the built-in classification rules only",
			      err->msg);
		if ((rc = tq_rules_load(&w->rules, "", err)) < 0)
			return rc;
	}
	tq_proc_start_time(getpid(), &ticks, NULL);
	if ((rc = tq_node_self(node, sizeof(node), err)) < 0)
		return rc;
	rc = tq_queue_worker_add(w->q, node, (int)getpid(), ticks, w->o->slot,
				 w->o->supervisor_pid, &w->id, err);
	w->connected_at = tq_queue_connected_at(w->q);
	return rc;
}

int tq_worker_main(const struct tq_worker_opts *o)
{
	struct worker w = { .o = o, .sigfd = -1, .bellfd = -1, .pid = getpid(),
			    .reserve_fd = -1, .procs = TQ_CONTAIN_FILE_INIT,
			    .cgroup = { .fd = -1 }, .home = TQ_STATEDIR_INIT };
	struct tq_err err = TQ_ERR_INIT;
	int status = 0;

	/* Each claim builds and frees a small SQLite sort; with glibc's default
	 * trim threshold the freed top of the heap goes back to the kernel and
	 * is faulted in again on the next claim (measured: a third of the claim
	 * time). A worker's heap is small; keep it. Setting the trim threshold
	 * also freezes glibc's mmap threshold at 128 KiB, so each task's log
	 * buffers (256 KiB of batch, 64 KiB lines) were mmapped and unmapped
	 * per task, each munmap a TLB flush on every CPU (measured: 2 a task,
	 * 70 us each here): raise it past them so they come from the heap. */
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	/* A file size limit (RLIMIT_FSIZE) must be an EFBIG from write(2),
	 * which says which log could not be written, not our death. Tasks get
	 * every signal's default back at spawn (spawn.c). */
	signal(SIGXFSZ, SIG_IGN);
	setproctitle("worker %d: starting", o->slot);
	if (start(&w, &err) < 0) {
		tq_worker_log(&w, "cannot start: %s", err.msg);
		status = 1;
		goto out;
	}
	tq_worker_log(&w, "started (worker id %lld)", (long long)w.id);
	setproctitle("worker %d: idle", o->slot);
	while (!w.stopping)
		if (step(&w) < 0) {
			status = 1;
			break;
		}
	if (w.has_next)
		give_back(&w);
	tq_queue_worker_stop(w.q, w.id, NULL);
	if (w.stop_signal)
		status = 128 + w.stop_signal;
	else if (w.home_lost)
		status = 1;
	tq_worker_log(&w, "stopped");
out:
	tq_queue_close(w.q);
	tq_rules_free(w.rules);
	tq_close(w.sigfd);
	tq_close(w.bellfd);
	tq_close(w.reserve_fd);
	tq_contain_file_close(&w.procs);
	tq_cgroup_base_release(&w.cgroup);
	tq_statedir_close(&w.home);
	return status;
}

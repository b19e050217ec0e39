/*
 * worker_int.h - what worker.c and runner.c share: the worker's state.
 */
#ifndef TQ_WORKER_INT_H
#define TQ_WORKER_INT_H

#include <limits.h>
#include <stdint.h>
#include <sys/signalfd.h>

#include "common/secret.h"
#include "queue/queue.h"
#include "classify/classify.h"
#include "proc/cgroup.h"
#include "proc/contain.h"
#include "statedir.h"
#include "worker.h"

struct worker {
	const struct tq_worker_opts *o;
	struct tq_queue *q;
	int64_t id;             /* row in workers: fences this worker's leases */
	int sigfd;              /* signalfd: CHLD, TERM, INT, USR1, HUP */
	int bellfd;             /* the doorbell, read and rung (O_RDWR) */
	pid_t pid;              /* ours, for the log lines */
	int stopping;           /* a stop signal arrived */
	int stop_signal;        /* which one, for the exit status */
	int64_t stop_at;        /* mono ms: the running task's grace ends */
	int poked;              /* SIGUSR1: look at the store now */
	struct tq_rules *rules; /* classification rules (classify.h) */
	char home_mark[PATH_MAX + 32]; /* "TASKQ_TASK_HOME=HOME", given to tasks */
	int64_t beat_at;        /* mono ms of our last heartbeat written (0: none) */
	/* the next task, claimed with the end of the one before
	 * (tq_queue_finish_claim), for step() to run; has_next 0: none */
	struct tq_task next;
	int has_next;
	int next_more;          /* its claim's *more */
	int64_t hook_check_at;  /* mono ms: look for owed on-exit hooks then */
	int reserve_fd;         /* room for one end record on a full disk
				 * (endrec.h); -1: none held */
	int64_t reserve_at;     /* mono ms: try to hold it again then */
	/* while a task runs: its secrets, masked in every line we log */
	const struct tq_secrets *secrets;
	struct tq_cgroup_base cgroup; /* where attempts get a cgroup (contain.h) */
	struct tq_contain_file procs; /* its record of each attempt's processes */
	struct tq_statedir home;      /* held open: gone or replaced? */
	int64_t home_check_at;        /* mono ms: look at it then (no supervisor) */
	int64_t parent_check_at;      /* mono ms: ask getppid() again then */
	int supervised;               /* its last answer (tq_worker_supervised) */
	int home_lost;                /* stopped because it went */
	/* the store away (TQ_EOFFLINE) */
	int64_t away_since;           /* mono ms an idle claim found it so
				       * (said once); 0: here */
	int64_t connected_at;         /* the store's connection we saw last */
	int lost_claims;              /* a claim may have been committed
				       * without our hearing: look (step) */
};

/* May the end of the task that ran take the next task with it
 * (tq_queue_finish_claim)? Yes when nothing step() does before a claim is
 * due: no stop, no look for owed hooks, no look at the state directory. */
int tq_worker_may_chain(struct worker *w);

/* Write our heartbeat and the task we run (0: none), at most once in half
 * an idle beat unless force: every doorbell wakes every idle worker, and
 * every claim starts a task, and a write per wake or per task would cost a
 * transaction (and the other connections' page caches) each. Which task a
 * worker runs is read from the leases (queue.h, tq_worker_info), so a
 * heartbeat is only "alive". */
void tq_worker_beat(struct worker *w, int64_t task_id, int force);

/* Run one --on-exit hook owed by a final end that no worker wrote itself
 * (queue.h, tq_queue_on_exit_take), of task_id or of any task (0), if one
 * is owed: taken in the store first, so it runs once. 1 when one ran.
 * Precondition: the worker has no other child. */
int tq_worker_owed_hook(struct worker *w, int64_t task_id);

/* Log a line to the worker's stderr (the supervisor's log), with the
 * running task's secrets masked (secret.h). */
void tq_worker_log(struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Handle one signalfd record (not SIGCHLD). */
void tq_worker_on_signal(struct worker *w, const struct signalfd_siginfo *si);

/* Does the supervisor that started us still run (we are its child)?
 * Asked of the kernel at most once a second (the loops ask it at every
 * turn); once no, always no. */
int tq_worker_supervised(struct worker *w);

/* Without a supervisor, look at the state directory (at most once a
 * second, worker.c): removed or replaced, the worker stops as a
 * supervisor's check would stop it, its running task's grace none. 1 when
 * the worker is stopping. */
int tq_worker_check_home(struct worker *w);

/* Run one claimed task until its end is written: by us, with retries while
 * the store refuses it, or by recovery from its end record (endrec.h). At
 * a shutdown the retries end with the grace and the record stays for the
 * supervisor. Returns 0. */
int tq_runner_run(struct worker *w, struct tq_task *t);

#endif

/*
 * runner.c - run one claimed task: spawn it in its own session, pump its
 * output into the log as it arrives, feed its stdin, renew the lease, honour
 * its timeout, kill requests and a shutdown, and when its main process has
 * exited (learnt from waitpid, never assumed), kill and reap every
 * descendant it left, then record the attempt, fenced by (task, attempt,
 * worker).
 *
 * Once the process has exited its outcome is never lost. When the store
 * does not take the end at the first try (locked past RECORD_BUSY_MS, a
 * full disk), the outcome goes to an end record (endrec.h) in the state
 * directory, durably, and the same loop goes on: it retries the end with
 * a backoff (RECORD_RETRY_MIN_MS doubling to RECORD_RETRY_MAX_MS, each a
 * deadline) and renews the lease, and the worker claims nothing new until
 * the end is written. Any write here can fail, the renewal included: when
 * the lease runs out meanwhile, the supervisor's recovery finds the record
 * and writes the true end (never `lost`), and our next try or renewal,
 * fenced out, sees that it was written. A stop signal ends the retries at
 * the shutdown grace; the record stays for the next supervisor.
 *
 * The store away (TQ_EOFFLINE: a PostgreSQL server restarting, a
 * connection it ended) is not the task's problem: it runs on. Its output is
 * kept by the log writer until the store is back (tq_log_away), up to
 * TQ_LOG_AWAY_MAX, past which its pipes are not read (it waits on them,
 * losing nothing, its stall clock stopped meanwhile: tq_stall_pause); the
 * renewal and the process's record are tried again every RENEW_RETRY_MS
 * (the connection's own backoff paces the connects); once the process has
 * ended, what the log kept is stored before the end is recorded (the
 * FLUSHING phase: state before log, as always), then the end as above,
 * through its record. Back, a lease taken over meanwhile fences us out as
 * any other: the task is killed, its output not the log's any more. An end
 * whose commit's answer was lost (done or not) is found done by its fence
 * (TQ_ESTALE with the same outcome): written by us, so the hook is ours.
 *
 * One event loop (proc/loop.h) owns all of it; every timer is an absolute
 * CLOCK_MONOTONIC deadline, the soonest of which is the loop's; signals
 * arrive on the worker's signalfd. The runner never blocks on a full pipe in either direction and
 * buffers at most one chunk of stdin, one partial line per stream and
 * LOG_HOLD bytes of complete lines not yet written to the log.
 *
 * Output order: each round reads the stdout and the stderr pipe once each
 * (one read drains a pipe: they hold TQ_SPAWN_PIPE_SIZE) and hands the
 * bytes to the log in that order, so a line can be placed after a later
 * line of the other stream only while it waits in its pipe. While only one
 * stream has spoken its pipe is widened (see pipe_width), so a flood on one
 * stream costs a wakeup per 64 KiB, not per 8 KiB. That is the guarantee
 * the README states under "Output order", and
 * tests/integration/test_log_order.sh checks.
 */
#include "worker_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/unistd.h>

#include "common/env.h"
#include "common/parse.h"
#include "common/secret.h"
#include "common/sys.h"
#include "queue/logstore.h"
#include "agent/agent.h"
#include "agent/profile.h"
#include "agent/registry.h"
#include "agent/result.h"
#include "agent/scrub.h"
#include "classify/classify.h"
#include "endrec.h"
#include "evidence.h"
#include "ipc/doorbell.h"
#include "onexit.h"
#include "policy.h"
#include "proc/contain.h"
#include "proc/loop.h"
#include "proc/proc.h"
#include "proc/spawn.h"
#include "proc/term.h"
#include "stall.h"
#include "warm.h"
#include "warmturn.h"

#define READ_CHUNK (64 * 1024)  /* one read: a pipe, unless the task grew it */
/* Complete lines held back from the log while output keeps coming (see
 * tq_log_hold), so a flood is written 64 KiB at a time and not a write(2)
 * per pipeful read: at most 64 KiB, what one default pipe held (a worker
 * that dies loses no more of its task's output than when the pipes held
 * it), and for at most 20 ms (`log --follow` and poll see a line that late
 * at worst; the poll timeout's log tick writes them). */
#define LOG_HOLD (64 * 1024)
#define LOG_HOLD_MS 20
/* The pipe of a stream that speaks alone (pipe_width): the kernel's default
 * size, read whole by one READ_CHUNK. */
#define PIPE_WIDE (64 * 1024)
#define DRAIN_AFTER_EXIT_MS 2000  /* wait for pipes to hit EOF after the sweep */
#define STDIN_CHUNKS 16
/* Recording the end: how long one try may wait for the lock (short, so the
 * end record is written soon and the loop stays responsive; the others'
 * transactions are far shorter), then the wait between tries. */
#define RECORD_BUSY_MS 2000
#define RECORD_RETRY_MIN_MS 250
#define RECORD_RETRY_MAX_MS 5000
/* Renewing the lease while the task runs: how long one try may wait for the
 * lock, then the wait before the next. Not the 10 s of other writes: the
 * loop that drains the task's pipes, delivers kills and runs its clocks
 * waits with it (a task writing into an 8 KiB pipe blocked for as long). */
#define RENEW_BUSY_MS 200
#define RENEW_RETRY_MS 250
/* The spawned process is recorded in the store (tq_queue_set_process) this
 * long after its spawn if it still runs; one that ended sooner is recorded
 * with its end, in the same statement: a transaction a task fewer for short
 * tasks (issue 21). Until then `show` has no pid for the attempt, and a
 * recovery goes by the attempt's cgroup or process record (contain.h),
 * written at the spawn, and the task's mark, as for a worker killed before
 * its record was written. */
#define PROCESS_RECORD_MS 50

enum run_phase {
	PHASE_LIVE,      /* the process runs, or its output is still open */
	PHASE_FLUSHING,  /* it has ended; what the log kept while the store
			  * was away is not stored yet */
	PHASE_RECORDING, /* it has ended; its end is not written yet */
	PHASE_DONE,      /* written (by us or from our record), or left */
};

struct run {
	struct worker *w;
	struct tq_task *t;
	struct tq_child child;
	struct tq_log *log;
	struct tq_term term;
	struct tq_stall stall;         /* --stall-timeout: the progress clock */
	struct tq_contain contain;     /* its processes, by cgroup or record */
	struct tq_agent_run agent;     /* an agent task's command and workspace */
	struct tq_result_parser *rp;   /* an agent task's result, from stdout */
	char *buf;                 /* READ_CHUNK bytes */
	int status;
	int exited;
	int64_t drain_until;       /* after exit: give up on open pipes then */
	int64_t next_renew;
	int64_t renew_busy_since;  /* renewals refused, locked, since (0: none) */
	/* the store away (TQ_EOFFLINE) */
	int64_t away_since;        /* mono ms it went (said once); 0: here */
	int64_t full_since;        /* mono ms the log kept all it may: the
				    * pipes are not read; 0: they are */
	int cut;                   /* a try at the end lost its connection */
	/* stdin */
	unsigned char *in_data;    /* bytes waiting to be written to the child */
	size_t in_len, in_off;
	int in_close_after;        /* close in_fd once in_data is written */
	int64_t in_seq;            /* last stdin chunk taken from the store */
	int in_broken;             /* EPIPE: the child stopped reading */
	/* why it ends, beyond the exit status */
	int overflow;
	int log_failed;
	int lease_lost;
	int kill_sig;              /* taskq kill, with this signal */
	int shutdown_stop;
	int stalled;               /* stopped by the stall clock */
	char stall_note[TQ_ERR_MAX];
	char note[TQ_ERR_MAX];     /* a stdin problem */
	char log_note[TQ_ERR_MAX]; /* the log write that failed */
	int log_errno;             /* and its errno */
	int64_t out_start;         /* output bytes in the log before this attempt */
	int64_t read_bytes;        /* output bytes read from the task's pipes */
	int64_t kept_bytes;        /* of those, stored in the log */
	int64_t log_line;          /* where this attempt's output begins */
	/* the process, not yet in the store: recorded at proc_record_at (mono
	 * ms; 0: not to be tried again), else with the end */
	int proc_pending;
	int proc_pid;
	int64_t proc_start, proc_offset, proc_record_at;
	/* output order: the widths of the pipes (pipe_width) */
	int wrote[2];              /* output was read from stdout, stderr */
	enum tq_stream wide;       /* the stream whose pipe is wide; ALL: none */
	int no_wide;               /* the kernel refused to widen: ask no more */
	/* the end */
	enum run_phase phase;
	int64_t ended_at;          /* wall ms when the process was reaped */
	struct tq_finish fin;      /* what is recorded */
	struct tq_result res;
	char reason[TQ_ERR_MAX];
	int kept;                  /* an end record holds fin */
	int tries;
	int64_t record_since;      /* mono ms of the first failed try */
	int64_t next_try;          /* mono ms */
	int64_t retry_wait;
	char last_error[TQ_ERR_MAX];
	struct tq_secrets secrets; /* the task's credentials, masked in what we write */
	/* a warm message (issue 19): its turn on the session's agent process,
	 * borrowed from the supervisor (warmturn.h); r->child holds its pipes
	 * but no pid of ours: it is never our child, never signalled here */
	int warm;
	struct tq_warm_turn wt;
	int warm_busy;             /* the session's process is in another turn */
	int turn_over;             /* its result line was read */
	int interrupted;           /* the interrupt line was written */
	int64_t end_at;            /* no result by then after it: END */
	int64_t in_hold;           /* mono ms: its protocol writes nothing
				    * before (0: no hold) */
};

/* Whether t is a message of a warm session (issue 19, ask --warm): its
 * turn runs on the session's kept agent process. */
static int warm_message(const struct tq_task *t)
{
	return t->warm && t->agent != NULL && t->session != NULL;
}

/* The session's idle timeout its message asks for (0: the default). */
static int64_t warm_idle_ms(const struct tq_task *t)
{
	return t->idle_timeout_ms;
}

/* The store went away: said once, until it is back. */
static void away(struct run *r, const struct tq_err *err)
{
	if (r->away_since != 0)
		return;
	r->away_since = tq_mono_ms();
	tq_worker_log(r->w, "task %lld: %s; the task goes on, its output kept until the "
		      "store is back", (long long)r->t->id, err->msg);
}

static void back(struct run *r)
{
	if (r->away_since == 0)
		return;
	tq_worker_log(r->w, "task %lld: the store is back after %lld ms", (long long)r->t->id,
		      (long long)(tq_mono_ms() - r->away_since));
	r->away_since = 0;
}

/* The log keeps all it may while the store is away: read no more. */
static int log_full(const struct run *r)
{
	return r->log != NULL && tq_log_away(r->log) >= TQ_LOG_AWAY_MAX;
}

static int64_t renew_every(const struct run *r)
{
	return r->w->o->lease_ms / 3 > 0 ? r->w->o->lease_ms / 3 : 1;
}

/* ------------------------------------------------------------------ */
/* Starting                                                           */

static int build_env(struct tq_task *t, struct tq_env *env, struct tq_err *err)
{
	/* Scrub again at spawn time: a task stored by an older taskq, or with
	 * TASKQ_SCRUB_ENV set on the worker, must not pass agent-session
	 * variables on. */
	return tq_scrub_env(env, t->env, getenv(TQ_ENV_SCRUB_VAR), err);
}

static int load_stdin_file(struct run *r, struct tq_err *err)
{
	void *data = NULL;
	size_t len = 0;
	int rc = tq_queue_stdin_file(r->w->q, r->t->id, &data, &len, err);

	if (rc < 0)
		return rc;
	r->in_data = data;
	r->in_len = len;
	r->in_off = 0;
	r->in_close_after = 1;
	return 0;
}

static const char *base_name(const char *p);

/* Which parser reads the task's final result from its output: the agent
 * profile's, or for a plain command that runs an agent CLI itself
 * (`taskq submit -- claude -p ...`) the one named for the program. */
static const char *result_parser(const struct run *r)
{
	const struct tq_agent_def *def;

	if (r->t->agent != NULL)
		return r->agent.parser[0] ? r->agent.parser : NULL;
	def = tq_registry_find(base_name(r->t->argv[0]));
	return def != NULL ? def->name : NULL;
}

/* Spawn the task in its containment (contain.h): a cgroup where the
 * machine delegates one, else a record of its process tree. */
static int spawn_contained(struct run *r, struct tq_err *err)
{
	struct tq_err note = TQ_ERR_INIT;
	int rc;

	if (tq_contain_begin(&r->contain, &r->w->cgroup, &r->w->procs, r->t->id,
			     r->t->attempt, &note) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, note.msg);
	r->child.cgroup_fd = tq_contain_cgroup_fd(&r->contain);
	rc = tq_spawn_start(&r->child, err);
	if (rc < 0 && r->child.join_failed) {
		tq_worker_log(r->w, "task %lld: %s; this worker's tasks run without a "
			      "cgroup from now on", (long long)r->t->id, err->msg);
		tq_contain_join_failed(&r->contain, &r->w->cgroup, err);
		r->child.cgroup_fd = -1;
		rc = tq_spawn_start(&r->child, err);
	}
	return rc;
}

/* 64-bit FNV-1a over s and its NUL (so "ab","c" and "a","bc" differ). */
static uint64_t fnv(uint64_t h, const char *s)
{
	const unsigned char *c = (const unsigned char *)(s != NULL ? s : "");

	do {
		h ^= *c;
		h *= UINT64_C(0x100000001b3);
	} while (*c++ != '\0');
	return h;
}

#define FNV_BASIS UINT64_C(0xcbf29ce484222325)

/* Whether var ("NAME=value") is one a shell changes on its own between
 * two commands typed in the same place: the previous directory after a cd,
 * the last command's path, the nesting depth (PWD is the cwd, its own
 * part). A message from a shell that moved about is the same command. */
static int shell_bookkeeping(const char *var)
{
	static const char *const names[] = { "_=", "OLDPWD=", "PWD=", "SHLVL=" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(var, names[i], strlen(names[i])) == 0)
			return 1;
	return 0;
}

/*
 * What a warm message's command is, by part (warmsock.h, enum tq_warm_fp),
 * for the supervisor to compare with the process it holds: taken from the
 * task as stored (its agent, model, command template, environment, cwd),
 * not from the expanded command, which holds what changes with every
 * message of one conversation (--resume ID once the session has one, the
 * task's id, its isolated workspace) and must not start a new process.
 * The prompt is left out (it travels in the message line).
 */
static void warm_fingerprint(const struct tq_task *t, uint64_t fp[TQ_WARM_FP_N])
{
	char num[32];

	fp[TQ_WARM_FP_MODEL] = fnv(FNV_BASIS, t->model);
	fp[TQ_WARM_FP_ARGS] = fnv(FNV_BASIS, t->agent);
	for (size_t i = 0; i < t->argc; i++)
		if (t->prompt == NULL || strcmp(t->argv[i], t->prompt) != 0)
			fp[TQ_WARM_FP_ARGS] = fnv(fp[TQ_WARM_FP_ARGS], t->argv[i]);
	snprintf(num, sizeof(num), "%d %d", t->isolate, t->umask);
	fp[TQ_WARM_FP_ARGS] = fnv(fp[TQ_WARM_FP_ARGS], num);
	fp[TQ_WARM_FP_ENV] = FNV_BASIS;
	for (size_t i = 0; i < t->envc; i++)
		if (!shell_bookkeeping(t->env[i]))
			fp[TQ_WARM_FP_ENV] = fnv(fp[TQ_WARM_FP_ENV], t->env[i]);
	fp[TQ_WARM_FP_CWD] = fnv(FNV_BASIS, t->cwd);
}

/* What the warm turn's protocol has to write, after what is queued
 * (tq_result_stream_input); held while it must wait (r->in_hold). */
static void warm_input(struct run *r)
{
	char *buf = NULL;
	size_t len = 0;
	int64_t at = 0;
	unsigned char *more;

	r->in_hold = 0;
	if (tq_result_stream_input(r->rp, &buf, &len, &at) <= 0) {
		if (at > 0) /* the wall clock's wait, on the loop's clock */
			r->in_hold = tq_mono_ms() + (at - tq_now_ms());
		return;
	}
	if (r->in_data == NULL) {
		r->in_data = (unsigned char *)buf;
		r->in_len = len;
		r->in_off = 0;
		return;
	}
	/* behind what is still queued, in order */
	if ((more = realloc(r->in_data, r->in_len + len)) == NULL) {
		free(buf);
		return;
	}
	memcpy(more + r->in_len, buf, len);
	r->in_data = more;
	r->in_len += len;
	free(buf);
}

/* The spawned process (pid, its start time, where its output begins in the
 * log: r->log_line), for the store: at PROCESS_RECORD_MS, or with the end. */
static void note_process(struct run *r, int pid, int64_t start, int64_t offset)
{
	r->proc_pending = 1;
	r->proc_pid = pid;
	r->proc_start = start;
	r->proc_offset = offset;
	r->proc_record_at = tq_mono_ms() + PROCESS_RECORD_MS;
}

/*
 * A warm message: borrow the session's agent process (started by the
 * supervisor from this task's command in its stream-input mode when none
 * is up, resuming the session's conversation) and queue what opens the
 * turn (the agent's protocol: on a new process its handshake, then the
 * message). Its pipes go in r->child; the process is the supervisor's
 * child, carrying the warm mark instead of this task's (warm.h): recovery
 * of this message must not end the session's process.
 */
static int start_warm(struct run *r, struct tq_env *env, struct tq_err *err)
{
	struct tq_warm_take k = { .home = r->w->o->home, .key = r->t->session,
				  .task = r->t->id, .attempt = r->t->attempt,
				  .cwd = r->agent.cwd != NULL ? r->agent.cwd : r->t->cwd,
				  .umask = r->t->umask, .idle_ms = warm_idle_ms(r->t) };
	struct tq_result_parser *rp;
	char **argv = NULL;
	int64_t off = 0, line_no = 0;
	size_t argc = 0;
	int rc;

	if (tq_agent_stream_of(&r->agent) == NULL || r->t->session == NULL)
		return tq_err_set(err, TQ_EINVAL, "agent \"%s\" has no stream-input mode: its "
				  "session cannot be warm", r->agent.parser[0] ? r->agent.parser :
				  "none");
	tq_env_unset(env, TQ_TASK_MARK_VAR);
	if ((rc = tq_env_set(env, TQ_WARM_MARK, err)) < 0 ||
	    (rc = tq_agent_stream_argv(&r->agent, r->t->prompt, &argv, &argc, err)) < 0)
		return rc;
	k.argv = argv;
	k.envp = env->vars;
	warm_fingerprint(r->t, k.fp);
	rc = tq_warm_turn_take(&r->wt, &k, err);
	tq_profile_argv_free(argv);
	if (rc == TQ_EBUSY)
		r->warm_busy = 1;
	if (rc < 0)
		return rc;
	/* its isolated workspace is its working directory from now on, for
	 * as long as it lives, not this message's (stream.c) */
	if (r->wt.fresh && tq_agent_stream_keep(&r->agent, r->wt.pid, r->wt.start, err) < 0)
		tq_worker_log(r->w, "task %lld: %s; its workspace goes with this message",
			      (long long)r->t->id, err->msg);
	*err = (struct tq_err)TQ_ERR_INIT;
	rp = tq_result_parser_stream(r->agent.parser, &(struct tq_stream_turn){
		.prompt = r->t->prompt != NULL ? r->t->prompt : "",
		.model = tq_agent_model_asked(r->t, &r->agent), .cwd = k.cwd,
		.resume = r->agent.session_id, .state = r->wt.state, .fresh = r->wt.fresh,
		.argv = r->agent.argv, .argc = r->agent.argc, .envp = env->vars,
		.task = r->t->id, .attempt = r->t->attempt });
	if (rp == NULL)
		return tq_err_set(err, TQ_ENOMEM, "warm turn: out of memory");
	tq_result_parser_free(r->rp);
	r->rp = rp;
	r->child.in_fd = r->wt.in_fd;
	r->child.out_fd = r->wt.out_fd;
	r->child.err_fd = r->wt.err_fd;
	r->wt.in_fd = r->wt.out_fd = r->wt.err_fd = -1; /* r->child's now */
	r->in_close_after = 0; /* the process lives on after the turn */
	warm_input(r);
	tq_log_position(r->log, &off, &line_no);
	r->log_line = line_no;
	r->out_start = tq_log_output_bytes(r->log);
	tq_worker_log(r->w, "task %lld: warm session %s, agent pid %d (%s)",
		      (long long)r->t->id, r->t->session, (int)r->wt.pid,
		      r->wt.fresh ? "started for it" : "kept from its last message");
	note_process(r, r->wt.pid, r->wt.start, off);
	return 0;
}

static int start(struct run *r, struct tq_err *err)
{
	struct tq_env env = TQ_ENV_INIT;
	int64_t start_ticks = 0, off = 0, line = 0;
	char mark[48];
	int rc;

	if ((rc = build_env(r->t, &env, err)) < 0)
		return rc;
	if ((rc = tq_agent_prepare(r->w->q, r->w->o->home, r->t, &env, &r->agent, err)) < 0) {
		tq_env_release(&env);
		return rc;
	}
	r->rp = tq_result_parser_new(result_parser(r));
	/* every process of the task carries its id: recovery finds what a
	 * lost task left behind by it (tq_proc_kill_marked) */
	snprintf(mark, sizeof(mark), TQ_TASK_MARK_VAR "=%lld", (long long)r->t->id);
	/* and never a worker's mark, which would make it that worker's */
	tq_env_unset(&env, TQ_WORKER_MARK_VAR);
	if ((rc = tq_env_set(&env, mark, err)) < 0 ||
	    (rc = tq_env_set(&env, r->w->home_mark, err)) < 0) {
		tq_env_release(&env);
		return rc;
	}
	if (r->warm) {
		rc = start_warm(r, &env, err);
		if (rc != TQ_ENOTFOUND || r->warm_busy) {
			tq_env_release(&env);
			return rc;
		}
		/* no supervisor holds warm agents (a worker run alone, or
		 * whose supervisor is gone): the message runs cold, resuming */
		tq_worker_log(r->w, "task %lld: %s; running it cold", (long long)r->t->id,
			      err->msg);
		*err = (struct tq_err)TQ_ERR_INIT;
		r->warm = 0;
		tq_env_unset(&env, TQ_TASK_MARK_VAR);
		if ((rc = tq_env_set(&env, mark, err)) < 0) {
			tq_env_release(&env);
			return rc;
		}
	}
	r->child.argv = r->agent.argv != NULL ? r->agent.argv : r->t->argv;
	r->child.envp = env.vars;
	r->child.cwd = r->agent.cwd != NULL ? r->agent.cwd : r->t->cwd;
	r->child.umask = r->t->umask; /* the submitter's; -1: ours (schema.sql) */
	/* an agent CLI loses what its pipe has not taken when it exits */
	r->child.pipe_size = r->rp != NULL && result_parser(r) != NULL ?
			     TQ_SPAWN_AGENT_PIPE_SIZE : 0;
	r->child.in = r->t->pty ? TQ_SPAWN_STDIN_PTY :
		      r->t->stdin_mode == TQ_STDIN_NULL ? TQ_SPAWN_STDIN_NULL :
		      TQ_SPAWN_STDIN_PIPE;
	if (r->t->stdin_mode == TQ_STDIN_FILE && (rc = load_stdin_file(r, err)) < 0) {
		tq_env_release(&env);
		return rc;
	}
	rc = spawn_contained(r, err);
	tq_env_release(&env);
	if (rc < 0)
		return rc;
	/* With a pty the master is both the output and the input. */
	if (r->t->pty && r->t->stdin_mode != TQ_STDIN_NULL)
		r->child.in_fd = fcntl(r->child.out_fd, F_DUPFD_CLOEXEC, 3);
	tq_proc_start_time(r->child.pid, &start_ticks, NULL);
	tq_contain_spawned(&r->contain, r->child.pid, start_ticks, tq_mono_ms());
	tq_log_position(r->log, &off, &line);
	r->log_line = line;
	r->out_start = tq_log_output_bytes(r->log);
	note_process(r, r->child.pid, start_ticks, off);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Output and input                                                   */

/* A warm turn ends without its process: ask the supervisor to end it
 * (TERM, grace, KILL to its group); its wait status comes back on the
 * socket (on_warm_sock). */
static void warm_end(struct run *r)
{
	if (r->wt.end_asked || r->exited)
		return;
	r->term.state = TQ_TERM_STOPPING;
	r->term.deadline = TQ_TERM_NEVER;
	if (tq_warm_turn_end(&r->wt, r->t->kill_grace_ms) < 0) {
		/* the supervisor is gone: ended here, through its pidfd */
		r->status = W_EXITCODE(0, SIGKILL);
		r->exited = 1;
		r->ended_at = tq_now_ms();
	}
}

/*
 * Stop a warm turn (a kill, the timeout, the stall clock, a cap, a
 * shutdown): what interrupts the turn in the agent's protocol, which ends
 * the turn and keeps the process (agent-clis.md 3.8, 4.1, 5.1), and a
 * bounded wait (the task's kill grace) for its result; without an answer
 * by then, or with SIGKILL (the lease is lost), or when the protocol
 * cannot interrupt now (a new process still in its handshake), the
 * process is ended.
 */
static void warm_stop(struct run *r, int sig)
{
	if (r->exited || r->turn_over || r->wt.end_asked)
		return;
	if (sig == SIGKILL || r->interrupted || r->child.in_fd < 0 ||
	    tq_result_interrupt(r->rp) < 0) {
		warm_end(r);
		return;
	}
	warm_input(r);
	r->interrupted = 1;
	r->term.state = TQ_TERM_STOPPING;
	r->term.deadline = TQ_TERM_NEVER;
	r->end_at = tq_mono_ms() + (r->t->kill_grace_ms > 0 ? r->t->kill_grace_ms : 1);
}

static void stop_task(struct run *r, int sig)
{
	struct tq_err err = TQ_ERR_INIT;

	if (r->warm) {
		warm_stop(r, sig);
		return;
	}
	if (r->exited || r->term.state != TQ_TERM_RUNNING)
		return;
	r->term.sig = sig;
	if (tq_term_step(&r->term, TQ_TERM_STOP, tq_mono_ms(), &err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
}

/*
 * The log could not take the task's output (a full disk, a file size
 * limit, an I/O error). The task is not stopped: its work may be what
 * matters (files it writes, an agent's result, read from its stdout all
 * the same), and a storage problem is not its failure. From here on its
 * output is read and dropped, so it never blocks on a full pipe; what
 * reached the log stays. The output cap still counts what it prints.
 * How it ends is said by describe(): outcome output_lost.
 */
static void on_log_error(struct run *r, int rc, const struct tq_err *err)
{
	if (rc == TQ_ECAP) {
		if (!r->overflow)
			stop_task(r, SIGTERM);
		r->overflow = 1;
		return;
	}
	if (!r->log_failed) {
		/* the failed call's errno (logstore.c keeps it), when the error
		 * came from one */
		r->log_errno = tq_err_from_errno(errno) == err->code ? errno : 0;
		snprintf(r->log_note, sizeof(r->log_note), "%s", err->msg);
		tq_worker_log(r->w, "task %lld: its output cannot be stored: %s; the task goes "
			      "on, its output from here on is dropped", (long long)r->t->id,
			      err->msg);
	}
	r->log_failed = 1;
}

/* Output read after the log failed is dropped, but counted against the
 * output cap as if it had been stored. */
static void count_dropped(struct run *r)
{
	int64_t cap = r->t->max_output;

	if (r->overflow || cap <= 0 || r->out_start + r->read_bytes <= cap)
		return;
	r->overflow = 1;
	stop_task(r, SIGTERM);
}

/*
 * Pipe widths. Both pipes start narrow (TQ_SPAWN_PIPE_SIZE), which bounds
 * how far a line can be placed from the order it was written in. While one
 * stream alone has spoken (or the other is closed) there is no order
 * across streams to keep, so its pipe is widened to PIPE_WIDE and a flood
 * on it (a build log, a dump) is read 64 KiB per wakeup, as with the
 * kernel's default pipes: capture then costs what it did. When the other
 * stream speaks, the wide pipe is narrowed again, and the other stream is
 * not read meanwhile; F_SETPIPE_SZ narrows a pipe only once it holds no
 * more than the new size, so the narrowing is tried right after each read
 * of it, and every round. Only that first read of the other stream (its
 * first TQ_SPAWN_PIPE_SIZE bytes at most, its pipe being narrow) can thus
 * be placed up to PIPE_WIDE bytes off; everything after it keeps the
 * narrow bound.
 */
static int stream_fd(const struct run *r, enum tq_stream s)
{
	return s == TQ_STREAM_STDOUT ? r->child.out_fd : r->child.err_fd;
}

static enum tq_stream other_stream(enum tq_stream s)
{
	return s == TQ_STREAM_STDOUT ? TQ_STREAM_STDERR : TQ_STREAM_STDOUT;
}

/* The other stream has spoken while r->wide is wide: it waits. */
static int narrowing(const struct run *r)
{
	enum tq_stream o = other_stream(r->wide);

	return r->wide != TQ_STREAM_ALL && r->wrote[o - 1] && stream_fd(r, o) >= 0;
}

/* What the loop polls for stream s: nothing while it waits for the other's
 * pipe to narrow. */
static int poll_fd(const struct run *r, enum tq_stream s)
{
	if (log_full(r))
		return -1; /* the store away: the task waits on its pipe */
	return narrowing(r) && r->wide != s ? -1 : stream_fd(r, s);
}

/* Widen or narrow stream s's pipe, after a read of it (or at the end of a
 * round, to finish a narrowing). */
static void pipe_width(struct run *r, enum tq_stream s)
{
	enum tq_stream o = other_stream(s);
	int fd = stream_fd(r, s);

	/* an agent CLI's pipes stay as large as they were made (start) */
	if (r->t->pty || fd < 0 || r->child.pipe_size > 0 || r->warm)
		return;
	if (r->wide == s) {
		/* EBUSY: it holds more than the narrow size; the next read
		 * empties it */
		if (narrowing(r) && fcntl(fd, F_SETPIPE_SZ, TQ_SPAWN_PIPE_SIZE) >= 0)
			r->wide = TQ_STREAM_ALL;
		return;
	}
	if (r->wide != TQ_STREAM_ALL || r->no_wide ||
	    (r->wrote[o - 1] && stream_fd(r, o) >= 0))
		return;
	if (fcntl(fd, F_SETPIPE_SZ, PIPE_WIDE) >= 0)
		r->wide = s;
	else
		r->no_wide = 1; /* the per-user pipe limit: stay narrow */
}

/* A warm turn's result line was read: the turn is over, the process
 * stays. Its "exit status" is the one a cold run of the CLI would have
 * had for that result (1 for an error, research 3.6), so the outcome,
 * classification and retries read as for a cold run. */
static void turn_over(struct run *r)
{
	struct tq_result res;

	tq_result_end(r->rp, &res);
	r->turn_over = 1;
	r->exited = 1;
	r->status = W_EXITCODE(res.is_error ? 1 : 0, 0);
	r->ended_at = tq_now_ms();
	r->term.state = TQ_TERM_DONE;
	r->term.deadline = TQ_TERM_NEVER;
}

/* Read once from one output fd: what its pipe holds. One read, not until
 * EAGAIN, so that the other stream is read before this one can refill
 * (output order, above). Returns 1 at EOF. Output past the cap or after a
 * log error is read and dropped, so the task never blocks on a full pipe. */
static int pump_out(struct run *r, int fd, enum tq_stream s)
{
	struct tq_err err = TQ_ERR_INIT;
	ssize_t n = tq_read(fd, r->buf, READ_CHUNK);
	size_t quiet = 0;
	int rc;

	if (n == 0 || (n < 0 && errno == EIO))
		return 1; /* EOF; EIO is a pty master's EOF */
	if (n < 0)
		return errno == EAGAIN ? 0 : 1;
	r->wrote[s - 1] = 1;
	pipe_width(r, s); /* before the pipe refills */
	tq_stall_feed(&r->stall, s == TQ_STREAM_STDERR, r->buf, (size_t)n, tq_mono_ms());
	/* a warm turn's start on a new process (its protocol's handshake, a
	 * resumed session's history) is not the turn's output: not logged */
	if (s == TQ_STREAM_STDOUT && r->warm && tq_result_quiet(r->rp))
		quiet = tq_result_feed_quiet(r->rp, r->buf, (size_t)n);
	if (s == TQ_STREAM_STDOUT && r->rp != NULL)
		tq_result_feed(r->rp, r->buf + quiet, (size_t)n - quiet);
	if (r->warm && !r->turn_over && !r->exited) {
		warm_input(r); /* its answers, the next step of its handshake */
		if (tq_result_seen(r->rp))
			turn_over(r);
	}
	r->read_bytes += n;
	if (r->log_failed)
		count_dropped(r);
	if (r->overflow || r->log_failed || quiet == (size_t)n)
		return 0;
	rc = tq_log_write(r->log, s, r->buf + quiet, (size_t)n - quiet, tq_mono_ms(), &err);
	if (rc < 0)
		on_log_error(r, rc, &err);
	return 0;
}

static void close_out(struct run *r, int *fd, enum tq_stream s)
{
	struct tq_err err = TQ_ERR_INIT;
	int rc;

	/* a warm process closes its output only when it ends: learn how
	 * from the supervisor, its parent */
	if (r->warm && !r->turn_over)
		warm_end(r);
	tq_close(*fd);
	*fd = -1;
	if (!r->log_failed && (rc = tq_log_end_stream(r->log, s, &err)) < 0)
		on_log_error(r, rc, &err);
}

static void close_in(struct run *r)
{
	if (r->child.in_fd >= 0)
		tq_close(r->child.in_fd);
	r->child.in_fd = -1;
	free(r->in_data);
	r->in_data = NULL;
	r->in_len = r->in_off = 0;
}

static void pump_in(struct run *r)
{
	while (r->in_off < r->in_len) {
		ssize_t n = tq_write(r->child.in_fd, r->in_data + r->in_off,
				     r->in_len - r->in_off);
		if (n < 0 && errno == EAGAIN)
			return; /* backpressure: poll tells us when to go on */
		if (n < 0) {
			/* EPIPE: the child exited or closed its stdin early.
			 * Recorded, never fatal. */
			r->in_broken = 1;
			snprintf(r->note, sizeof(r->note),
				 "stdin: %zu of %zu bytes delivered (%s)", r->in_off,
				 r->in_len, strerror(errno));
			close_in(r);
			return;
		}
		r->in_off += (size_t)n;
	}
	free(r->in_data);
	r->in_data = NULL;
	r->in_len = r->in_off = 0;
	if (r->in_close_after)
		close_in(r);
}

/* --stdin pipe: take the next stored chunks (written by `taskq write`). */
static void fetch_stdin(struct run *r)
{
	struct tq_stdin_chunk *c = NULL;
	struct tq_err err = TQ_ERR_INIT;
	size_t n = 0, total = 0, off = 0;
	int eof = 0;

	if (r->warm || r->t->stdin_mode != TQ_STDIN_PIPE || r->child.in_fd < 0 ||
	    r->in_data != NULL)
		return;
	if (tq_queue_stdin_pending(r->w->q, r->t->id, r->in_seq, STDIN_CHUNKS, &c, &n,
				   &err) < 0 || n == 0) {
		free(c);
		return;
	}
	for (size_t i = 0; i < n; i++)
		total += c[i].len;
	r->in_data = malloc(total ? total : 1);
	if (r->in_data != NULL) {
		for (size_t i = 0; i < n; i++) {
			memcpy(r->in_data + off, c[i].data, c[i].len);
			off += c[i].len;
			eof |= c[i].eof;
		}
		r->in_len = total;
		r->in_off = 0;
		r->in_close_after = eof;
		r->in_seq = c[n - 1].seq;
		/* Delivered means handed to this attempt; a chunk is not
		 * replayed into a later attempt's fresh process. */
		tq_queue_stdin_delivered(r->w->q, r->t->id, r->in_seq, &err);
	}
	tq_stdin_chunks_free(c, n);
	if (r->in_data != NULL && r->in_len == 0 && r->in_close_after)
		close_in(r);
}

/* ------------------------------------------------------------------ */
/* Timers and signals                                                 */

static void written_elsewhere(struct run *r);

/* The process noted at the spawn, into the store now (it still runs).
 * A short wait for the write lock, as a renewal's: while it waits the
 * worker neither reads the task's pipes nor sees it end, and an end seen
 * late is recorded late (the default 10 s would make finished_at the time
 * the lock went). Locked out, it tries again later; a task that ends
 * first carries its process in its end. */
static void record_process(struct run *r)
{
	struct tq_err err = TQ_ERR_INIT;
	int rc;

	tq_queue_set_busy_timeout(r->w->q, RENEW_BUSY_MS);
	rc = tq_queue_set_process(r->w->q, r->t->id, r->t->attempt, r->proc_pid,
				  r->proc_pid, r->proc_start, r->proc_offset, r->log_line,
				  &err);
	tq_queue_set_busy_timeout(r->w->q, TQ_BUSY_TIMEOUT_MS);
	r->proc_record_at = 0; /* once: if it failed, the end writes it */
	if (rc == 0)
		r->proc_pending = 0;
	if (rc == TQ_EBUSY)
		r->proc_record_at = tq_mono_ms() + RENEW_RETRY_MS;
	if (rc == TQ_EOFFLINE) {
		/* the store away: again, with the renewals, until it is back
		 * (a long task would have no pid in the store until its end) */
		away(r, &err);
		r->proc_record_at = tq_mono_ms() + RENEW_RETRY_MS;
	}
	if (rc == TQ_ESTALE) {
		/* someone recovered this task: no longer ours to run */
		tq_worker_log(r->w, "task %lld: %s; stopping it", (long long)r->t->id,
			      err.msg);
		r->lease_lost = 1;
		stop_task(r, SIGKILL);
	}
}

static void renew(struct run *r, int64_t now)
{
	struct tq_err err = TQ_ERR_INIT;
	int sig = 0, rc;

	if (r->phase != PHASE_RECORDING)
		tq_queue_set_busy_timeout(r->w->q, RENEW_BUSY_MS);
	rc = tq_queue_renew(r->w->q, r->t->id, r->t->attempt, r->w->id,
			    r->w->o->lease_ms, &sig, &err);
	if (rc == 0) /* the heartbeat, as short a wait */
		tq_worker_beat(r->w, r->t->id, 1);
	if (r->phase != PHASE_RECORDING)
		tq_queue_set_busy_timeout(r->w->q, TQ_BUSY_TIMEOUT_MS);
	r->next_renew = now + renew_every(r);
	if (rc == TQ_EOFFLINE) {
		/* the task goes on; the lease is renewed once the store is
		 * back, if nobody took it over meanwhile (then: ESTALE) */
		away(r, &err);
		r->next_renew = tq_mono_ms() + RENEW_RETRY_MS;
		return;
	}
	if (rc == 0)
		back(r);
	if (rc == TQ_EBUSY && r->phase != PHASE_RECORDING) {
		/* locked by another connection: try again soon, say so once */
		if (r->renew_busy_since == 0) {
			r->renew_busy_since = now;
			tq_worker_log(r->w, "task %lld: %s; trying again every %d ms",
				      (long long)r->t->id, err.msg, RENEW_RETRY_MS);
		}
		r->next_renew = tq_mono_ms() + RENEW_RETRY_MS;
		return;
	}
	if (r->renew_busy_since != 0 && rc == 0)
		tq_worker_log(r->w, "task %lld: lease renewed after %lld ms locked",
			      (long long)r->t->id,
			      (long long)(tq_mono_ms() - r->renew_busy_since));
	r->renew_busy_since = 0;
	if (rc == TQ_ESTALE && r->phase == PHASE_RECORDING) {
		/* the supervisor wrote our end from our record */
		written_elsewhere(r);
		return;
	}
	if (rc == TQ_ESTALE) {
		/* Someone recovered this task; it is no longer ours to run. */
		tq_worker_log(r->w, "task %lld: %s; stopping it", (long long)r->t->id,
			      err.msg);
		r->lease_lost = 1;
		stop_task(r, SIGKILL);
		return;
	}
	if (rc < 0) {
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
		return;
	}
	if (sig > 0 && r->kill_sig == 0) {
		r->kill_sig = sig;
		stop_task(r, sig);
	}
	fetch_stdin(r);
}

static void on_child(pid_t pid, int status, void *arg)
{
	struct run *r = arg;

	if (pid != r->child.pid)
		return; /* an orphan of the task reparented to us: reaped */
	r->status = status;
	r->exited = 1;
	r->ended_at = tq_now_ms();
	r->child.pid = -1;
}

static void after_exit(struct run *r, int64_t now)
{
	struct tq_err err = TQ_ERR_INIT;
	size_t killed = 0;

	tq_term_step(&r->term, TQ_TERM_EXITED, now, &err);
	/* Kill and reap whatever the task left behind: a setsid'd daemon, an
	 * agent's tool shell. Its cgroup first (all at once, however deep);
	 * then the sweep, which reaps them: the worker runs one task, so every
	 * child that remains belongs to this one. */
	if (tq_contain_kill(&r->contain, &err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
	if (tq_proc_sweep(NULL, 0, &killed, &err) < 0)
		tq_worker_log(r->w, "task %lld: sweep: %s", (long long)r->t->id, err.msg);
	else if (killed > 0)
		tq_worker_log(r->w, "task %lld: killed %zu leftover process%s",
			      (long long)r->t->id, killed, killed == 1 ? "" : "es");
	if (tq_contain_end(&r->contain, NULL, &err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
	r->drain_until = tq_mono_ms() + DRAIN_AFTER_EXIT_MS;
	close_in(r);
}

/* A signal, after the loop reaped at a SIGCHLD (on_child): the task's
 * exit is acted on once (the term machine is DONE after it). */
static void on_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct run *r = arg;

	if (si->ssi_signo == SIGCHLD) {
		if (!r->warm && r->exited && r->term.state != TQ_TERM_DONE)
			after_exit(r, tq_mono_ms());
		return;
	}
	tq_worker_on_signal(r->w, si);
	if (si->ssi_signo == SIGUSR1)
		r->next_renew = 0;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The loop's deadline: the soonest of every clock that runs. */
static int64_t loop_deadline(struct run *r, int64_t now)
{
	int64_t at = r->next_renew, next_log = -1;
	struct tq_err err = TQ_ERR_INIT;

	if (r->phase == PHASE_RECORDING) {
		at = min64(at, r->next_try);
		if (r->w->stopping)
			at = min64(at, r->w->stop_at);
		return at;
	}
	if (r->phase == PHASE_FLUSHING) {
		if (r->w->stopping)
			at = min64(at, r->w->stop_at);
		if (tq_log_tick(r->log, tq_mono_ms(), &next_log, &err) < 0)
			on_log_error(r, err.code, &err);
		return next_log >= 0 ? min64(at, now + next_log) : at;
	}
	if (!r->exited && r->term.deadline != TQ_TERM_NEVER)
		at = min64(at, r->term.deadline);
	if (!r->exited && r->proc_record_at != 0)
		at = min64(at, r->proc_record_at);
	if (!r->exited && r->interrupted && !r->wt.end_asked)
		at = min64(at, r->end_at);
	if (!r->exited && r->in_hold != 0)
		at = min64(at, r->in_hold);
	if (!r->exited && r->term.state == TQ_TERM_RUNNING)
		at = min64(at, r->stall.deadline);
	if (!r->exited && r->w->stopping && !r->shutdown_stop)
		at = min64(at, r->w->stop_at);
	/* no supervisor watches our home: we do (tq_worker_check_home) */
	if (!r->exited && !r->w->stopping && !tq_worker_supervised(r->w))
		at = min64(at, r->w->home_check_at);
	if (r->exited)
		at = min64(at, r->drain_until);
	else if (!r->warm)
		at = min64(at, tq_contain_deadline(&r->contain));
	if (!r->log_failed && tq_log_tick(r->log, tq_mono_ms(), &next_log, &err) < 0)
		on_log_error(r, err.code, &err);
	if (next_log >= 0)
		at = min64(at, now + next_log);
	return at;
}

static void recording_timers(struct run *r, int64_t now);

/* A warm turn's clocks: its --timeout (as term.h's TICK would, without a
 * signal: the interrupt), and the wait for the interrupted turn's result. */
static void warm_timers(struct run *r, int64_t now)
{
	if (r->exited)
		return;
	if (r->in_hold != 0 && now >= r->in_hold)
		warm_input(r);
	if (r->term.state == TQ_TERM_RUNNING && now >= r->term.deadline) {
		r->term.timed_out = 1;
		warm_stop(r, SIGTERM);
	}
	if (r->interrupted && !r->wt.end_asked && !r->turn_over && now >= r->end_at)
		warm_end(r);
}

/* The task's output not read while the log keeps all it may for a store
 * that is away: its stall clock stands still (so does the wait for open
 * pipes after its exit), from the first turn that saw it to the first that
 * does not. */
static void full_clock(struct run *r, int64_t now)
{
	if (log_full(r)) {
		if (r->full_since == 0) {
			r->full_since = now;
			tq_worker_log(r->w, "task %lld: %zu bytes of output kept for the store; "
				      "its output is read again once the store takes them",
				      (long long)r->t->id, tq_log_away(r->log));
		}
		if (r->exited)
			r->drain_until = now + DRAIN_AFTER_EXIT_MS;
	} else if (r->full_since != 0) {
		tq_stall_pause(&r->stall, now - r->full_since);
		r->full_since = 0;
	}
}

/* The task has ended; what its log kept for the store is stored before its
 * end is recorded. A stop's grace ends the wait: then close drops it, and
 * the attempt's outcome says so (output_lost). */
static void flushing_timers(struct run *r, int64_t now)
{
	if (r->w->stopping && now >= r->w->stop_at) {
		tq_worker_log(r->w, "task %lld: stopping with %zu bytes of its output not "
			      "stored (the store is away)", (long long)r->t->id,
			      tq_log_away(r->log));
		r->phase = PHASE_LIVE;
		return;
	}
	if (!r->lease_lost && now >= r->next_renew)
		renew(r, now);
}

static void on_timers(struct run *r, int64_t now)
{
	struct tq_err err = TQ_ERR_INIT;

	if (r->phase == PHASE_RECORDING) {
		recording_timers(r, now);
		return;
	}
	if (r->phase == PHASE_FLUSHING) {
		flushing_timers(r, now);
		return;
	}
	full_clock(r, now);
	if (!r->exited)
		tq_worker_check_home(r->w);
	if (!r->exited && r->w->stopping && !r->shutdown_stop && now >= r->w->stop_at) {
		r->shutdown_stop = 1;
		stop_task(r, SIGTERM);
	}
	if (r->warm)
		warm_timers(r, now);
	else if (!r->exited && tq_term_step(&r->term, TQ_TERM_TICK, now, &err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
	/* after the timeout's tick: of two clocks due together, --timeout,
	 * the hard bound, names the end */
	if (!r->exited && r->term.state == TQ_TERM_RUNNING && r->full_since == 0 &&
	    tq_stall_due(&r->stall, now)) {
		r->stalled = 1;
		tq_stall_describe(&r->stall, r->stall_note, sizeof(r->stall_note));
		stop_task(r, SIGTERM);
	}
	if (!r->exited && !r->warm && tq_contain_tick(&r->contain, now, &err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
	if (!r->exited && !r->lease_lost && r->proc_record_at != 0 && now >= r->proc_record_at)
		record_process(r);
	if (!r->lease_lost && now >= r->next_renew)
		renew(r, now);
}

static void on_stdout(void *arg, short revents)
{
	struct run *r = arg;

	(void)revents;
	if (pump_out(r, r->child.out_fd, TQ_STREAM_STDOUT))
		close_out(r, &r->child.out_fd, TQ_STREAM_STDOUT);
}

static void on_stderr(void *arg, short revents)
{
	struct run *r = arg;

	(void)revents;
	if (pump_out(r, r->child.err_fd, TQ_STREAM_STDERR))
		close_out(r, &r->child.err_fd, TQ_STREAM_STDERR);
}

static void on_stdin(void *arg, short revents)
{
	(void)revents;
	pump_in(arg);
}

/* The supervisor's STATUS after our END: the warm process's end. */
static void on_warm_sock(void *arg, short revents)
{
	struct run *r = arg;
	int status = 0;

	(void)revents;
	if (r->exited || tq_warm_turn_status(&r->wt, &status) == TQ_EBUSY)
		return;
	r->status = status;
	r->exited = 1;
	r->ended_at = tq_now_ms();
	r->term.state = TQ_TERM_DONE;
	r->drain_until = tq_mono_ms() + DRAIN_AFTER_EXIT_MS;
}

/* The loop: while the task lives, until its main process has exited and
 * both outputs are closed; while its end is being recorded, until it is
 * written (or left to recovery at a shutdown). Each turn (loop.h) reads
 * stdout, then stderr (their order is the output's: see the top of this
 * file), feeds stdin, and only then reads the signals, so output that came
 * before an exit is read before the exit is acted on. */
static void loop(struct run *r)
{
	const struct tq_loop l = { .sigfd = r->w->sigfd, .on_child = on_child,
				   .on_signal = on_signal, .arg = r };
	const struct tq_loop_cb cb[4] = { { on_stdout, r }, { on_stderr, r }, { on_stdin, r },
					  { on_warm_sock, r } };
	struct tq_err err = TQ_ERR_INIT;

	if (r->log != NULL)
		tq_log_hold(r->log, LOG_HOLD, LOG_HOLD_MS);
	for (;;) {
		struct pollfd p[4] = {
			{ poll_fd(r, TQ_STREAM_STDOUT), POLLIN, 0 },
			{ poll_fd(r, TQ_STREAM_STDERR), POLLIN, 0 },
			{ r->in_data ? r->child.in_fd : -1, POLLOUT, 0 },
			{ r->wt.end_asked && !r->exited ? r->wt.sock : -1, POLLIN, 0 },
		};
		int64_t now = tq_mono_ms();

		if (r->phase == PHASE_DONE)
			break;
		if (r->phase == PHASE_FLUSHING && (tq_log_away(r->log) == 0 || r->lease_lost))
			break;
		if (r->phase == PHASE_LIVE && r->exited && r->child.out_fd < 0 &&
		    r->child.err_fd < 0)
			break;
		/* a warm turn: over at its result (the process stays), or
		 * once the supervisor said how the process ended */
		if (r->phase == PHASE_LIVE && r->warm && r->exited)
			break;
		if (r->phase == PHASE_LIVE && r->exited && now >= r->drain_until) {
			tq_worker_log(r->w, "task %lld: output still open %d ms after exit; "
				      "closing it", (long long)r->t->id, DRAIN_AFTER_EXIT_MS);
			break;
		}
		if (tq_loop_wait(&l, p, cb, 4, loop_deadline(r, now), &err) < 0)
			tq_worker_log(r->w, "%s", err.msg);
		/* the end of a round: a narrowing the reads could not finish */
		if (narrowing(r))
			pipe_width(r, r->wide);
		on_timers(r, tq_mono_ms());
	}
	if (r->child.out_fd >= 0)
		close_out(r, &r->child.out_fd, TQ_STREAM_STDOUT);
	if (r->child.err_fd >= 0)
		close_out(r, &r->child.err_fd, TQ_STREAM_STDERR);
}

/* ------------------------------------------------------------------ */
/* Recording                                                          */

/* A reason for people; truncation is fine (its start says what happened). */
static void reasonf(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void reasonf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

/* What the log kept when it failed: "its output could not all be stored:
 * log write ...: No space left on device (ENOSPC); 4096 of its 10240 bytes
 * of output kept, the rest dropped". */
static void log_loss(const struct run *r, char *buf, size_t n)
{
	const char *name = r->log_errno ? strerrorname_np(r->log_errno) : NULL;

	reasonf(buf, n, TQ_OUTPUT_LOST_REASON ": %s%s%s%s; %lld of its %lld bytes of "
		"output kept, the rest dropped", r->log_note, name ? " (" : "",
		name ? name : "", name ? ")" : "", (long long)r->kept_bytes,
		(long long)r->read_bytes);
}

static void describe(struct run *r, struct tq_finish *f, char *reason, size_t n)
{
	char st[192], dur[32], loss[TQ_ERR_MAX] = "";

	tq_proc_status_str(r->status, st, sizeof(st));
	if (r->warm && r->turn_over && r->interrupted) {
		snprintf(st, sizeof(st), "its turn interrupted, its agent kept");
	} else if (r->warm && !r->turn_over) {
		char how[96];
		memcpy(how, st, sizeof(how));
		snprintf(st, sizeof(st), "its warm agent (pid %d) ended in the turn: %s",
			 (int)r->wt.pid, how);
	}
	f->exit_code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
	f->signal = WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0;
	f->next = TQ_NEXT_FINAL;
	if (r->shutdown_stop) {
		f->outcome = TQ_OUT_KILLED;
		f->next = TQ_NEXT_REQUEUE;
		reasonf(reason, n, "interrupted by shutdown (%s); requeued", st);
	} else if (r->term.timed_out) {
		tq_format_duration(r->t->timeout_ms, dur, sizeof(dur));
		f->outcome = TQ_OUT_TIMED_OUT;
		reasonf(reason, n, "timed out after %s (%s)", dur, st);
	} else if (r->kill_sig) {
		f->outcome = TQ_OUT_KILLED;
		reasonf(reason, n, "killed by taskq kill (%s)", st);
	} else if (r->stalled) {
		f->outcome = TQ_OUT_STALLED;
		reasonf(reason, n, "stalled: %s (%s)", r->stall_note, st);
	} else if (r->overflow) {
		tq_format_size(r->t->max_output, dur, sizeof(dur));
		f->outcome = TQ_OUT_OUTPUT_OVERFLOW;
		reasonf(reason, n, "output cap of %s reached (%s)", dur, st);
	} else if (r->log_failed) {
		/* Neither its failure nor a success: the process ended on its
		 * own (exit 0 as often as not), but its output is incomplete.
		 * A failed state (dependents needing success are canceled, wait
		 * does not exit 0), not retried: the store's problem does not go
		 * away by running the command again, and running it again would
		 * repeat whatever it did. The exit status stays its own. */
		f->outcome = TQ_OUT_OUTPUT_LOST;
		log_loss(r, loss, sizeof(loss));
		reasonf(reason, n, "%s; the command itself ended with %s", loss, st);
		loss[0] = '\0';
	} else if (WIFSIGNALED(r->status)) {
		f->outcome = TQ_OUT_SIGNALED;
		reasonf(reason, n, "%s", st);
	} else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) {
		f->outcome = TQ_OUT_SUCCEEDED;
		reasonf(reason, n, "%s", r->in_broken ? r->note : "");
	} else {
		f->outcome = TQ_OUT_FAILED;
		reasonf(reason, n, "%s%s%s", st, r->in_broken ? "; " : "",
			 r->in_broken ? r->note : "");
	}
	/* a timeout, a kill or a cap decided the outcome: the lost output
	 * is said all the same */
	if (r->log_failed && f->outcome != TQ_OUT_OUTPUT_LOST) {
		size_t used = strlen(reason);
		log_loss(r, loss, sizeof(loss));
		reasonf(reason + used, n - used, "%s%s", used ? "; " : "", loss);
	}
	f->reason = reason[0] ? reason : NULL;
}

/* ------------------------------------------------------------------ */
/* Classification and the retry policy                                */

static int counted_attempts(struct run *r)
{
	struct tq_attempt *a = NULL;
	size_t n = 0;
	int counted = 0;

	if (tq_queue_attempts(r->w->q, r->t->id, &a, &n, NULL) < 0)
		return r->t->attempt;
	for (size_t i = 0; i < n; i++)
		counted += a[i].counted;
	tq_attempt_list_free(a, n);
	return counted;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : p;
}

/*
 * An attempt that did not succeed: find its category and reason from the
 * evidence, then let the policy say whether it is retried, and when.
 * reason holds the runner's own reason on entry; the classifier's replaces
 * it when a rule (not only the runner's verdict) decided.
 */
static void classify_attempt(struct run *r, struct tq_finish *f, char *reason, size_t n)
{
	struct tq_classify_input in = { .outcome = f->outcome, .exit_code = f->exit_code,
		.signal = f->signal, .program = base_name(r->t->argv[0]),
		.agent = r->t->agent, .now_ms = tq_now_ms() };
	struct tq_policy_input pin = { .outcome = f->outcome,
		.max_retries = r->t->max_retries, .retry_lost = r->t->retry_lost,
		.backoff_ms = r->t->backoff_ms, .backoff_max_ms = r->t->backoff_max_ms };
	struct tq_policy_decision d;
	struct tq_classification c;
	struct tq_tails t = TQ_TAILS_INIT;

	/* output_lost: its reason is the worker's, and it is not retried */
	if (f->outcome == TQ_OUT_SUCCEEDED || f->outcome == TQ_OUT_OUTPUT_LOST ||
	    f->next == TQ_NEXT_REQUEUE)
		return;
	/* this attempt's lines only: a retried task's log holds them all */
	tq_tails_read(r->w->q, r->t->id, r->log_line, -1, &t, NULL);
	in.out_tail = t.buf[0] ? t.buf[0] : "";
	in.out_len = t.len[0];
	in.err_tail = t.buf[1] ? t.buf[1] : "";
	in.err_len = t.len[1];
	tq_classify(r->w->rules, &in, &c, NULL, 0);
	tq_tails_release(&t);
	f->category = c.category;
	/* a stall keeps its own reason (how long, the line it repeated) */
	if (c.reason[0] && strncmp(c.rule, "outcome.", 8) != 0 &&
	    f->outcome != TQ_OUT_STALLED)
		reasonf(reason, n, "%s", c.reason);
	f->reason = reason[0] ? reason : NULL;
	pin.category = c.category;
	pin.transient = c.transient;
	pin.provider_retry_at = c.retry_at;
	pin.counted = counted_attempts(r);
	/* the backoff counts from the attempt's end, as stored (ended_at),
	 * not from this moment, which reading the tails made later */
	pin.now_ms = r->ended_at > 0 ? r->ended_at : tq_now_ms();
	tq_policy_decide(&pin, arc4random(), &d);
	f->next = d.next;
	f->retry_at = d.retry_at;
	if (d.pause_group) {
		f->pause_group = r->t->group;
		f->pause_until = d.retry_at;
	}
}

/* ------------------------------------------------------------------ */
/* Recording the end                                                  */

/* The end is written: what follows it (the worker's row, the doorbell,
 * the log lines, the on-exit hook), and the end record goes. */
static void written(struct run *r, enum tq_state state)
{
	struct tq_finish *f = &r->fin;
	struct tq_err err = TQ_ERR_INIT;
	char then[TQ_NAME_MAX + 96] = "", at[32];

	r->phase = PHASE_DONE;
	/* Say when: a retry's time, and a rate limit's pause of the group
	 * (whose release starts with a probe), so the log explains why the
	 * group's other tasks wait. */
	if (f->next == TQ_NEXT_RETRY && f->retry_at > 0) {
		tq_format_time(f->retry_at, at, sizeof(at));
		snprintf(then, sizeof(then), " for %s", at);
	}
	if (f->pause_group != NULL && f->pause_until > 0) {
		size_t used = strlen(then);
		tq_format_time(f->pause_until, at, sizeof(at));
		snprintf(then + used, sizeof(then) - used, "; group %s paused until %s, "
			 "then one task probes", f->pause_group, at);
	}
	if (r->kept && tq_endrec_remove(r->w->o->home, r->t->id, r->t->attempt,
					&err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
	if (r->tries > 1)
		tq_worker_log(r->w, "task %lld attempt %d: end written at try %d, %lld ms "
			      "after the first failed", (long long)r->t->id, r->t->attempt,
			      r->tries, (long long)(tq_mono_ms() - r->record_since));
	/* A retry or a pause is a new time at which work appears: wake an idle
	 * worker so it sleeps until then, not until its old timeout (up to its
	 * idle heartbeat); its claim at that time wakes the others in turn. */
	if (f->next != TQ_NEXT_FINAL)
		tq_doorbell_ring_fd(r->w->bellfd);
	tq_worker_log(r->w, "task %lld attempt %d: %s%s%s%s%s%s", (long long)r->t->id,
		      r->t->attempt, tq_outcome_name(f->outcome),
		      f->category ? " (" : "", f->category ? tq_category_name(f->category) : "",
		      f->category ? ")" : "", f->next == TQ_NEXT_RETRY ? ", retry scheduled" :
		      f->next == TQ_NEXT_REQUEUE ? ", requeued" : "", then);
	if (f->reason)
		tq_worker_log(r->w, "task %lld attempt %d: reason: %s", (long long)r->t->id,
			      r->t->attempt, f->reason);
	if (tq_state_final(state))
		tq_on_exit_run(r->w, r->t, state, f->exit_code);
}

/*
 * Fenced out while our end was kept in a record: someone with the record
 * (the supervisor's recovery) wrote it, or, if the attempt holds another
 * outcome, a recovery that could not read it did. Either way the attempt
 * is recorded, so the record goes.
 */
static void written_elsewhere(struct run *r)
{
	struct tq_attempt *a = NULL;
	struct tq_err err = TQ_ERR_INIT;
	enum tq_outcome got = TQ_OUT_NONE;
	size_t n = 0;

	r->phase = PHASE_DONE;
	if (tq_queue_attempts(r->w->q, r->t->id, &a, &n, NULL) == 0)
		for (size_t i = 0; i < n; i++)
			if (a[i].attempt == r->t->attempt && a[i].ended_at > 0)
				got = a[i].outcome;
	tq_attempt_list_free(a, n);
	if (tq_endrec_remove(r->w->o->home, r->t->id, r->t->attempt, &err) < 0)
		tq_worker_log(r->w, "task %lld: %s", (long long)r->t->id, err.msg);
	r->kept = 0;
	if (got == r->fin.outcome && r->cut) {
		/* a try of ours was cut off in its commit, which was done: the
		 * end is ours (recovery writes from a record only when this
		 * worker is gone), and so its hook, unless it was left owed */
		struct tq_task t;
		enum tq_state state = TQ_RUNNING;

		if (tq_worker_owed_hook(r->w, r->t->id))
			return;
		if (tq_queue_get(r->w->q, r->t->id, 0, &t, NULL) == 0) {
			state = t.state;
			tq_task_release(&t);
		}
		tq_worker_log(r->w, "task %lld attempt %d: its end was written by a try whose "
			      "answer the store's connection lost", (long long)r->t->id,
			      r->t->attempt);
		written(r, state);
		return;
	}
	if (got != r->fin.outcome) {
		tq_worker_log(r->w, "task %lld attempt %d: recorded by someone else as %s; "
			      "its end (%s) was not written", (long long)r->t->id,
			      r->t->attempt, got ? tq_outcome_name(got) : "nothing",
			      tq_outcome_name(r->fin.outcome));
		return;
	}
	tq_worker_log(r->w, "task %lld attempt %d: %s, written by recovery from its end "
		      "record", (long long)r->t->id, r->t->attempt,
		      tq_outcome_name(r->fin.outcome));
	/* recovery's end left the hook owed: run it here unless another
	 * worker took it first (once, whoever runs it) */
	tq_worker_owed_hook(r->w, r->t->id);
}

/* Keep the end in a record, durably, before going on without the store. */
static void keep(struct run *r)
{
	struct tq_err err = TQ_ERR_INIT;
	int held = r->w->reserve_fd >= 0;

	/* on a full disk, into the room the worker holds for it */
	if (tq_endrec_keep(r->w->o->home, &r->fin, &r->w->reserve_fd, &err) < 0) {
		tq_worker_log(r->w, "task %lld attempt %d: ended (%s, exit code %d), and its "
			      "end could not be kept in a record either: %s; this worker "
			      "keeps it and retries", (long long)r->t->id, r->t->attempt,
			      tq_outcome_name(r->fin.outcome), r->fin.exit_code, err.msg);
		return;
	}
	r->kept = 1;
	tq_worker_log(r->w, "task %lld attempt %d: ended (%s); its end is kept in "
		      TQ_ENDREC_DIR "/%lld.%d%s until the store takes it", (long long)r->t->id,
		      r->t->attempt, tq_outcome_name(r->fin.outcome), (long long)r->t->id,
		      r->t->attempt, held && r->w->reserve_fd < 0 ?
		      " (the disk is full: in the room held for it)" : "");
}

/* One try at writing the end; on failure, keep it and set the next try. */
static void try_end(struct run *r)
{
	struct tq_err err = TQ_ERR_INIT;
	enum tq_state state = TQ_RUNNING;
	int rc;

	r->tries++;
	/* our own end: written() runs the hook at once (the record, which
	 * recovery may write from, never says so: its end leaves it owed) */
	r->fin.on_exit_started = r->t->on_exit != NULL;
	/* The first try of an end with no hook to run after it takes the
	 * worker's next task in its transaction, when nothing the worker does
	 * between tasks is due (tq_worker_may_chain): a commit a task fewer. */
	if (r->tries == 1 && r->t->on_exit == NULL && tq_worker_may_chain(r->w))
		rc = tq_queue_finish_claim(r->w->q, &r->fin, &state, r->w->o->lease_ms,
					   &r->w->next, &r->w->has_next, &r->w->next_more,
					   &err);
	else
		rc = tq_queue_finish(r->w->q, &r->fin, &state, &err);
	if (rc == 0) {
		written(r, state);
		return;
	}
	if (rc == TQ_ESTALE && r->kept) {
		written_elsewhere(r);
		return;
	}
	if (rc == TQ_EOFFLINE) {
		/* cut off, maybe in its commit: a later try's fence tells */
		r->cut = 1;
		away(r, &err);
	} else if (rc == 0) {
		back(r);
	}
	if (rc == TQ_ESTALE) {
		/* the lease was taken over before we could write anything */
		tq_worker_log(r->w, "task %lld: not recorded: %s", (long long)r->t->id,
			      err.msg);
		r->phase = PHASE_DONE;
		return;
	}
	if (r->tries == 1)
		r->record_since = tq_mono_ms();
	/* the store away is said once (away), not at each of its messages */
	if (r->tries == 1 || (rc != TQ_EOFFLINE && strcmp(err.msg, r->last_error) != 0))
		tq_worker_log(r->w, "task %lld: record: %s; retrying", (long long)r->t->id,
			      err.msg);
	snprintf(r->last_error, sizeof(r->last_error), "%s", err.msg);
	if (!r->kept)
		keep(r);
	r->retry_wait = r->retry_wait ? r->retry_wait * 2 : RECORD_RETRY_MIN_MS;
	if (r->retry_wait > RECORD_RETRY_MAX_MS)
		r->retry_wait = RECORD_RETRY_MAX_MS;
	/* the store away: as often as a renewal (the connection's backoff
	 * paces the connects), so the end is in soon after it is back */
	if (rc == TQ_EOFFLINE)
		r->retry_wait = RENEW_RETRY_MS;
	r->next_try = tq_mono_ms() + r->retry_wait;
}

/* The recording phase's timers: leave at a shutdown's grace, renew the
 * lease (itself a write that may fail: then the record covers us), try. */
static void recording_timers(struct run *r, int64_t now)
{
	if (r->w->stopping && now >= r->w->stop_at) {
		if (r->kept)
			tq_worker_log(r->w, "task %lld attempt %d: stopping with its end not "
				      "written; the supervisor writes it from " TQ_ENDREC_DIR
				      "/%lld.%d", (long long)r->t->id, r->t->attempt,
				      (long long)r->t->id, r->t->attempt);
		else
			tq_worker_log(r->w, "task %lld attempt %d: stopping with its end not "
				      "written nor kept: %s, exit code %d, signal %d",
				      (long long)r->t->id, r->t->attempt,
				      tq_outcome_name(r->fin.outcome), r->fin.exit_code,
				      r->fin.signal);
		r->phase = PHASE_DONE;
		return;
	}
	if (now >= r->next_renew)
		renew(r, now);
	if (r->phase == PHASE_RECORDING && tq_mono_ms() >= r->next_try) {
		if (!r->kept)
			keep(r); /* the record may be possible where the store is not */
		try_end(r);
	}
}

/*
 * Write r->fin as the end of the attempt. The first try at once; if the
 * store does not take it, the record keeps it and the loop retries until
 * it is written, or until a shutdown's grace ends.
 */
static void record(struct run *r)
{
	/* A reason can quote the task's output (the classifier's matching
	 * line), and with it a credential the task printed: it is stored, kept
	 * and logged masked (secret.h). */
	if (r->fin.reason != NULL) {
		if (r->fin.reason != r->reason)
			snprintf(r->reason, sizeof(r->reason), "%s", r->fin.reason);
		tq_secrets_mask_str(&r->secrets, r->reason, sizeof(r->reason));
		r->fin.reason = r->reason;
	}
	r->fin.task_id = r->t->id;
	r->fin.attempt = r->t->attempt;
	r->fin.worker_id = r->w->id;
	r->fin.ended_at = r->ended_at;
	if (r->proc_pending) { /* it ended before its record was due */
		r->fin.pid = r->fin.pgid = r->proc_pid;
		r->fin.proc_start = r->proc_start;
		r->fin.log_offset = r->proc_offset;
		r->fin.log_line = r->log_line;
	}
	/* what it stored in its log: none means the task may have no log file
	 * (the first output makes it: tq_log_exists) */
	r->fin.output_known = 1;
	r->fin.output_bytes = r->kept_bytes;
	r->phase = PHASE_RECORDING;
	/* a short wait per try: the record is written soon, and signals and
	 * the lease are seen between tries */
	tq_queue_set_busy_timeout(r->w->q, RECORD_BUSY_MS);
	try_end(r);
	if (r->phase == PHASE_RECORDING)
		loop(r);
	tq_queue_set_busy_timeout(r->w->q, TQ_BUSY_TIMEOUT_MS);
}

static void record_spawn_failure(struct run *r, const struct tq_err *why)
{
	r->fin = (struct tq_finish){ .outcome = TQ_OUT_SPAWN_FAILED, .exit_code = -1,
				     .next = TQ_NEXT_FINAL };
	snprintf(r->reason, sizeof(r->reason), "%s", why->msg);
	r->fin.reason = r->reason;
	record(r);
}

static void record_requeue(struct run *r, const struct tq_err *why)
{
	r->fin = (struct tq_finish){ .outcome = TQ_OUT_KILLED, .exit_code = -1,
				     .next = TQ_NEXT_REQUEUE, .retry_at = tq_now_ms() + 1000 };
	snprintf(r->reason, sizeof(r->reason), "%s", why->msg);
	r->fin.reason = r->reason;
	record(r);
}

int tq_runner_run(struct worker *w, struct tq_task *t)
{
	struct run r = { .w = w, .t = t, .child = TQ_CHILD_INIT,
			 .contain = TQ_CONTAIN_INIT };
	struct tq_err err = TQ_ERR_INIT;
	int rc;

	r.agent = (struct tq_agent_run)TQ_AGENT_RUN_INIT;
	r.wt = (struct tq_warm_turn)TQ_WARM_TURN_INIT;
	r.warm = warm_message(t);
	r.secrets = (struct tq_secrets)TQ_SECRETS_INIT;
	/* Out of memory keeps the values collected so far; URL credentials are
	 * masked by their shape whatever this holds. */
	if (tq_secrets_add_env(&r.secrets, t->env, t->envc, &err) < 0)
		tq_worker_log(w, "task %lld: %s; fewer values masked", (long long)t->id,
			      err.msg);
	w->secrets = &r.secrets;
	setproctitle("worker %d: task %lld %s", w->o->slot, (long long)t->id, t->name);
	if ((r.buf = malloc(READ_CHUNK)) == NULL) {
		tq_err_set(&err, TQ_ENOMEM, "out of memory");
		record_spawn_failure(&r, &err);
		goto out;
	}
	rc = tq_log_open(w->q, t->id, t->max_output, &r.log, &err);
	if (rc == TQ_EBUSY || rc == TQ_EOFFLINE) {
		/* A worker whose lease was taken over still writes this log: the
		 * task is not ours to start yet; or the store went away before
		 * it started. Give the attempt back. */
		record_requeue(&r, &err);
		goto out;
	}
	if (rc < 0 || (rc = start(&r, &err)) < 0) {
		/* the session's process is in another message's turn (a
		 * retry's race) or ending, or the store went away before the
		 * task started: the attempt is given back */
		if (r.warm_busy || rc == TQ_EOFFLINE)
			record_requeue(&r, &err);
		else
			record_spawn_failure(&r, &err);
		goto out;
	}
	tq_term_init(&r.term, r.child.pid, tq_mono_ms(), t->timeout_ms, t->kill_grace_ms);
	tq_stall_init(&r.stall, t->stall_timeout_ms, tq_mono_ms());
	r.next_renew = tq_mono_ms() + renew_every(&r);
	if (r.lease_lost)
		stop_task(&r, SIGKILL);
	fetch_stdin(&r);
	loop(&r);
	/* the turn is over and the process lives: give it back before the
	 * end is recorded, so the session's next message finds it idle */
	if (r.warm && r.turn_over) {
		close_in(&r);
		if (tq_warm_turn_done(&r.wt, tq_result_stream_state(r.rp)) < 0)
			tq_worker_log(w, "task %lld: the supervisor is gone: its warm agent "
				      "was ended", (long long)t->id);
	}
	/* what the log kept while the store was away goes in before the end */
	if (!r.lease_lost && tq_log_away(r.log) > 0) {
		r.phase = PHASE_FLUSHING;
		loop(&r);
		r.phase = PHASE_LIVE;
	}
	if (tq_log_relinked(r.log) > 0)
		tq_worker_log(w, "task %lld: its log was deleted while it ran (%d time%s);"
			      " started it again", (long long)t->id, tq_log_relinked(r.log),
			      tq_log_relinked(r.log) == 1 ? "" : "s");
	/* what the log holds of this attempt, before close writes any partial
	 * line (which a failed log has dropped) */
	r.kept_bytes = tq_log_output_bytes(r.log) - r.out_start;
	if (tq_log_close(r.log, &err) < 0 && !r.log_failed)
		on_log_error(&r, err.code, &err);
	r.log = NULL;
	if (r.lease_lost)
		goto out;
	describe(&r, &r.fin, r.reason, sizeof(r.reason));
	classify_attempt(&r, &r.fin, r.reason, sizeof(r.reason));
	r.fin.probe_passed = tq_policy_probe_passed(r.fin.outcome, r.fin.category);
	if (r.rp != NULL) {
		const char *note;
		size_t len;

		tq_result_end(r.rp, &r.res);
		/* codex and opencode print no model: the one asked for */
		if (r.res.has_result && r.res.model == NULL)
			r.res.model = tq_agent_model(t, &r.agent);
		/* a session id refused (16.9): the attempt's reason says so */
		if ((note = tq_result_note(r.rp)) != NULL &&
		    (len = strlen(r.reason)) + 3 < sizeof(r.reason)) {
			snprintf(r.reason + len, sizeof(r.reason) - len, "%s%s", len ? "; " : "",
				 note);
			r.fin.reason = r.reason;
		}
		r.fin.result = &r.res;
	}
	setproctitle("worker %d: recording task %lld", w->o->slot, (long long)t->id);
	record(&r);
out:
	tq_contain_end(&r.contain, NULL, NULL); /* a spawn that failed */
	tq_log_close(r.log, NULL);
	close_in(&r);
	tq_spawn_release(&r.child);
	tq_warm_turn_release(&r.wt);
	tq_agent_cleanup(&r.agent);
	tq_result_parser_free(r.rp);
	free(r.buf);
	w->secrets = NULL;
	tq_secrets_release(&r.secrets);
	setproctitle("worker %d: idle", w->o->slot);
	return 0;
}

/*
 * queue.h - the store: taskq's whole contract with its database.
 *
 * Everything that reads or writes task state goes through these functions;
 * no SQL exists outside src/queue, and no SQLite type appears here, so that a
 * second backend (PostgreSQL, FOR UPDATE SKIP LOCKED) can sit behind this
 * header unchanged: each function calls the operation of the backend that
 * made the handle (store.c, through its table in store.h; SQLite's is
 * sqlite/ops.c).
 *
 * A struct tq_queue is one connection. It is not fork-safe: open it after
 * fork, in the process that uses it, and never use it in a child.
 *
 * Errors: every function returns 0 or a negative TQ_E* code and fills err
 * (optional). TQ_EBUSY means the database stayed locked past the busy timeout;
 * TQ_ECORRUPT, TQ_ENOSPC, TQ_EREADONLY are what they say. Output structs
 * are caller-owned and must be released with their _release function even
 * after a failed call (they are left zeroed).
 */
#ifndef TQ_QUEUE_H
#define TQ_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* ------------------------------------------------------------------ */
/* Enumerations                                                       */

enum tq_state {
	TQ_QUEUED,    /* runnable now, subject to its group's limits */
	TQ_SCHEDULED, /* waiting for run_after (--delay, --at, retry backoff) */
	TQ_BLOCKED,   /* waiting for dependencies (--after, --session) */
	TQ_RUNNING,
	TQ_SUCCEEDED,
	TQ_FAILED,
	TQ_TIMED_OUT,
	TQ_KILLED,
	TQ_CANCELED,
	TQ_STATE_COUNT
};

enum tq_outcome {
	TQ_OUT_NONE,
	TQ_OUT_SUCCEEDED,
	TQ_OUT_FAILED,          /* exit status != 0 */
	TQ_OUT_SIGNALED,        /* died by a signal taskq did not send */
	TQ_OUT_TIMED_OUT,
	TQ_OUT_KILLED,          /* taskq kill / remove */
	TQ_OUT_OUTPUT_OVERFLOW, /* past --max-output */
	TQ_OUT_SPAWN_FAILED,    /* command not found, cwd gone, ... */
	TQ_OUT_LOST,            /* its worker died; lease expired */
	TQ_OUT_CANCELED,
	TQ_OUT_STALLED,         /* no new output for --stall-timeout; retried as
				 * network, and when out of retries the task
				 * ends timed_out */
	TQ_OUT_OUTPUT_LOST,     /* its output could not all be stored (a log
				 * write failed: a full disk, a file size
				 * limit); the reason says why and how much was
				 * kept; the exit status is the process's own */
	TQ_OUTCOME_COUNT
};

enum tq_category {
	TQ_CAT_NONE,
	TQ_CAT_RATE_LIMIT,
	TQ_CAT_OVERLOAD,
	TQ_CAT_NETWORK,
	TQ_CAT_AUTH,
	TQ_CAT_UNKNOWN,
	TQ_CATEGORY_COUNT
};

enum tq_stdin_mode {
	TQ_STDIN_NULL, /* /dev/null (the default: agent CLIs hang on a pipe) */
	TQ_STDIN_FILE, /* bytes stored at submit, written then closed */
	TQ_STDIN_PIPE  /* kept open; taskq write delivers data */
};

/* How the reason of an attempt whose output could not all be stored
 * begins (outcome output_lost, or after a timeout, kill or cap that decided
 * the outcome, after "; "): readers (log, poll) look for it. */
#define TQ_OUTPUT_LOST_REASON "its output could not all be stored"

/* Names as stored and shown ("queued", "timed_out", "rate_limit", "pipe"). */
const char *tq_state_name(enum tq_state s);
const char *tq_outcome_name(enum tq_outcome o);
const char *tq_category_name(enum tq_category c);
const char *tq_stdin_mode_name(enum tq_stdin_mode m);
/* Parse a name; 0 or TQ_EINVAL. */
int tq_state_parse(const char *s, enum tq_state *out);
int tq_outcome_parse(const char *s, enum tq_outcome *out);
int tq_category_parse(const char *s, enum tq_category *out);
/* 1 for succeeded, failed, timed_out, killed, canceled. */
int tq_state_final(enum tq_state s);

/* ------------------------------------------------------------------ */
/* Defaults and bounds                                                */

#define TQ_DEFAULT_TIMEOUT_MS (30 * 60 * 1000)
#define TQ_DEFAULT_KILL_GRACE_MS (5 * 1000)
#define TQ_DEFAULT_MAX_OUTPUT ((int64_t)50 * 1024 * 1024)
#define TQ_DEFAULT_RETRIES 3
#define TQ_DEFAULT_BACKOFF_MS (30 * 1000)
#define TQ_DEFAULT_BACKOFF_MAX_MS (30 * 60 * 1000)
/* A warm session's agent process with no message this long is ended
 * (ask --warm without --idle-timeout). */
#define TQ_DEFAULT_IDLE_TIMEOUT_MS (10 * 60 * 1000)
#define TQ_BUSY_TIMEOUT_MS 10000      /* how long a write waits for the lock */
#define TQ_NAME_MAX 128               /* task, group, batch, session names */
#define TQ_ARGV_MAX (16 * 1024 * 1024) /* bytes of argv; Linux allows 2 MiB per exec */
#define TQ_ENV_MAX (16 * 1024 * 1024)
#define TQ_STDIN_FILE_MAX ((int64_t)256 * 1024 * 1024)
#define TQ_LIST_DEFAULT_LIMIT 50
#define TQ_UMASK_MAX 0777             /* the bits umask(2) keeps */

/* ------------------------------------------------------------------ */
/* Opening                                                            */

struct tq_queue; /* opaque: one connection to a backend (queue/store.h) */

enum tq_open_flags {
	/* synchronous=FULL: every commit is fsynced before it returns. The CLI
	 * uses it so an acknowledged submit survives a power loss; workers use
	 * NORMAL (see README, "What a power loss can cost"). */
	TQ_OPEN_DURABLE = 1 << 0,
	/* Run PRAGMA quick_check and refuse a damaged database (TQ_ECORRUPT).
	 * Costs a full read of the database; the supervisor does it at start. */
	TQ_OPEN_CHECK = 1 << 1,
	/* Do not create the state directory or the database (TQ_ENOTFOUND). */
	TQ_OPEN_NOCREATE = 1 << 2,
	/* A long-lived connection (with TQ_OPEN_DURABLE: the supervisor's
	 * submit socket): SQLite's own autocheckpoint instead of the short-lived
	 * CLI's WAL policy (db.c, cli_wal_hook). */
	TQ_OPEN_LONG = 1 << 3,
	/* The caller calls tq_queue_tidy whenever a transaction's latency no
	 * longer matters (the submit socket, once its answers are sent): the
	 * backend may leave its housekeeping for then (SQLite: the WAL's
	 * checkpoint, which a commit that filled the WAL ran before it
	 * returned, the submit's answer waiting for it). */
	TQ_OPEN_TIDY = 1 << 4,
};


/*
 * Open the store where names, with the backend that takes that form
 * (queue/store.h): today a state directory's path, the SQLite backend; any
 * other form (a URL, "scheme://...", such as a PostgreSQL one) is refused
 * with TQ_EINVAL and one line naming it ("store \"postgresql://h/db\": no
 * backend for \"postgresql://\" ..."), and nothing is made.
 *
 * SQLite: open (and if needed create: directory 0700, database 0600, schema)
 * the database in the state directory where, made canonical as tq_home_resolve
 * does (queue/home.h; the caller keeps the path). Sets WAL, the busy timeout,
 * foreign keys, synchronous, journal_size_limit; migrates forward. A new
 * database is made whole under a temporary name and linked into place: an
 * open that fails leaves no taskq.db, -wal or -shm, nor a directory it made.
 *
 * Refuses with a one-line err: a state directory that is group- or
 * world-writable or owned by another user (TQ_EPERM), a database or logs/
 * that is a symbolic link (TQ_EPERM), a database owned by another user
 * (TQ_EPERM) or not writable (TQ_EREADONLY), a file that is not a database
 * (TQ_ENOTDB), a damaged one (TQ_ECORRUPT; always on a read error, and by
 * quick_check with TQ_OPEN_CHECK), a schema newer than this binary
 * (TQ_ENEWER). On success *qp owns the connection; on failure *qp is NULL.
 */
int tq_queue_open(struct tq_queue **qp, const char *where, unsigned flags,
		  struct tq_err *err);

/*
 * $TASKQ_DB: a database holding the store instead of the state directory's
 * SQLite file (a postgresql:// URL, or libpq's key=value string). When set,
 * tq_queue_open given a state directory opens it instead (TQ_EINVAL, one
 * line, when no backend takes it). The CLI sets it from --db or the config
 * file's "database"; the processes serve starts inherit it.
 */
#define TQ_DB_VAR "TASKQ_DB"

/* 1 when where names a database a backend takes (a postgresql:// or
 * postgres:// URL, libpq's key=value form), not a state directory. */
int tq_queue_is_database(const char *where);

/* The store's schema version (SQLite's user_version; PostgreSQL's
 * tq_schema row): what `taskq db migrate` reports after the open that
 * migrated it. */
int tq_queue_schema_version(struct tq_queue *q, int64_t *version, struct tq_err *err);

/* How long a write waits for the database lock before TQ_EBUSY (default
 * TQ_BUSY_TIMEOUT_MS). */
void tq_queue_set_busy_timeout(struct tq_queue *q, int64_t ms);

/* Close the connection (NULL is a no-op). Finalizes cached statements. */
void tq_queue_close(struct tq_queue *q);

/* The housekeeping a connection opened with TQ_OPEN_TIDY left for later,
 * if any is due (SQLite: a passive checkpoint of a WAL of 1000 frames or
 * more, which waits for nobody). A no-op elsewhere and for a backend with
 * none (PostgreSQL). */
void tq_queue_tidy(struct tq_queue *q);

/*
 * When the store's connection in use was made (CLOCK_MONOTONIC ms): for a
 * database server's store (PostgreSQL), the open's time, then the time a
 * lost connection was last made again (an outage: a restart of the server,
 * a connection it ended; calls fail with TQ_EOFFLINE meanwhile, and the next
 * call after the server is back reconnects). A long-lived process compares
 * it with what it saw last to learn that the store was away meanwhile:
 * what it wrote as the connection went may or may not have been done (a
 * claim's commit: its task leased to it, but never handed over). 0 for a
 * store that never loses a connection (SQLite).
 */
int64_t tq_queue_connected_at(const struct tq_queue *q);

/* What opening changed that the user should hear of, or NULL: a state
 * directory or database others could read (0755, 0644), which opening made
 * private (0700, 0600): "others could read your queue; made private: state
 * directory /x 0755 -> 0700, database /x/taskq.db 0644 -> 0600". One line,
 * said once: the next open finds them private. Owned by q. */
const char *tq_queue_notice(const struct tq_queue *q);


/* ------------------------------------------------------------------ */
/* Submitting                                                         */

struct tq_label {
	const char *key;
	const char *value;
};

/*
 * What to run and how. Pointers are borrowed for the call. argv holds argc
 * strings (argc >= 1); env holds envc "K=V" strings (the environment the task
 * runs with, already scrubbed by the caller). Strings are byte strings: any
 * byte but NUL is stored exactly.
 */
struct tq_task_spec {
	const char *name;           /* NULL: derived from argv (tq_derive_name) */
	char *const *argv;
	size_t argc;
	int shell;                  /* argv is {"/bin/sh", "-c", STRING} from --shell */
	const char *cwd;            /* absolute path */
	/* The cwd was asked for (--cwd), not just where the submitter was:
	 * a task of a --session whose directory (its first task's) differs
	 * is refused (TQ_EINVAL) instead of moved there. */
	int cwd_explicit;
	int umask;                  /* the submitter's umask, 0..0777; -1: not
				     * known (stored NULL: the worker's own) */
	char *const *env;
	size_t envc;
	const char *batch;          /* NULL: none */
	const char *group;          /* NULL: the program's name */
	const char *session;
	const char *unique_key;
	const struct tq_label *labels;
	size_t nlabels;
	int64_t priority;           /* higher first */
	int64_t run_after;          /* ms since the epoch; 0: now */
	int64_t timeout_ms;         /* 0: none */
	int64_t stall_timeout_ms;   /* no output this long: stalled; 0: off */
	int64_t kill_grace_ms;
	int64_t max_output;         /* bytes; 0: unlimited */
	int64_t max_retries;
	int retry_lost;
	int64_t backoff_ms;
	int64_t backoff_max_ms;
	enum tq_stdin_mode stdin_mode;
	const void *stdin_data;     /* TQ_STDIN_FILE: the bytes */
	size_t stdin_len;
	int pty;
	const char *on_exit;
	const int64_t *after;       /* ids this task waits for */
	size_t nafter;
	int after_any;              /* run after they end however they end */
	const char *agent;          /* agent tasks only */
	const char *model;
	const char *prompt;
	int isolate;
	const char *sources_json;
	/* --warm (issue 19): the message runs as a turn on its session's agent
	 * process, which the supervisor keeps up between messages and ends
	 * after idle_timeout_ms without one. Needs session and agent
	 * (TQ_EINVAL otherwise); idle_timeout_ms > 0 with warm, 0 without. */
	int warm;
	int64_t idle_timeout_ms;
	/* Submits through the supervisor (ipc/wire.h): a random id of this submit
	 * (at most 64 bytes). A token already stored names the task it made,
	 * which is returned as the id (existed stays 0: it is the same
	 * submit, not a --unique collision); a new one is stored with the
	 * task, in its transaction, so of a supervisor and a client falling
	 * back to the database exactly one stores the task. NULL: none. */
	const char *token;
};

#define TQ_TASK_SPEC_INIT {                                           \
	.umask = -1,                                                  \
	.timeout_ms = TQ_DEFAULT_TIMEOUT_MS,                          \
	.kill_grace_ms = TQ_DEFAULT_KILL_GRACE_MS,                    \
	.max_output = TQ_DEFAULT_MAX_OUTPUT,                          \
	.max_retries = TQ_DEFAULT_RETRIES,                            \
	.backoff_ms = TQ_DEFAULT_BACKOFF_MS,                          \
	.backoff_max_ms = TQ_DEFAULT_BACKOFF_MAX_MS,                  \
	.stdin_mode = TQ_STDIN_NULL,                                  \
}

/*
 * Derive a task name from argv: the program's base name, plus the first
 * argument when it is a plain word ("make all", "python3 train.py",
 * "claude -p ..." -> "claude"). Writes at most n-1 bytes; always terminates.
 */
void tq_derive_name(char *const *argv, size_t argc, int shell, char *buf, size_t n);

/*
 * Derive the default group: the program's base name ("claude", "make"),
 * or for a --shell task the first word of the script.
 */
void tq_derive_group(char *const *argv, size_t argc, int shell, char *buf, size_t n);

/*
 * Add one task. In one transaction: the task, its labels, dependencies,
 * stdin file and group row. The commit is durable when the queue was opened
 * with TQ_OPEN_DURABLE. *id receives the new id.
 *
 * With spec->unique_key, if an unfinished task (queued, scheduled, blocked or
 * running) holds the key, nothing is added: *id is that task's id and
 * *existed is set to 1 (existed may be NULL otherwise). Atomic under
 * concurrent submitters.
 *
 * A dependency id that does not exist is TQ_ENOTFOUND; an invalid spec
 * (empty argv, relative cwd, bad name) is TQ_EINVAL. Nothing is half-added.
 */
int tq_queue_submit(struct tq_queue *q, const struct tq_task_spec *spec,
		    int64_t *id, int *existed, struct tq_err *err);

/*
 * Whether the task just stored is worth waking idle workers for: 0 when it
 * waits in a paused group (queued or blocked there: a pause by hand lasts
 * until a resume, which wakes them, and a rate limit's ends at a time they
 * already wake at) or one held by its probe (the probe's worker claims
 * again when it ends), 1 otherwise and on any doubt. Every ring wakes every
 * idle worker, each of which then tries a claim; a script that goes on
 * submitting into a rate-limited group should not cost that per submit.
 */
int tq_queue_wants_worker(struct tq_queue *q, int64_t id);

/*
 * Forget submit tokens (tq_task_spec.token) stored before before_ms (ms
 * since the epoch); *n (may be NULL) gets how many. The supervisor runs it
 * in its housekeeping: a token only has to outlive its submit's retry.
 */
int tq_queue_prune_tokens(struct tq_queue *q, int64_t before_ms, int *n, struct tq_err *err);

/*
 * The first submit token stored (in byte order) that starts with prefix
 * (1 to 64 bytes), copied to buf (n bytes; TQ_EINVAL if it does not fit),
 * with the id of the task it made in *id; *id 0 and buf "" when there is
 * none. `submit --file --resume` asks it whether a run is known and which
 * line it stored under a line number.
 */
int tq_queue_token_first(struct tq_queue *q, const char *prefix, char *buf, size_t n,
			 int64_t *id, struct tq_err *err);

/*
 * Add n tasks in one transaction: all or nothing. ids[i] and existed[i]
 * (existed may be NULL) as for tq_queue_submit. On failure err names the
 * 0-based index of the spec that failed ("task 9998: ...") and nothing is
 * added.
 */
int tq_queue_submit_many(struct tq_queue *q, const struct tq_task_spec *specs,
			 size_t n, int64_t *ids, int *existed, struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Reading                                                            */

/*
 * A task as stored. Every pointer is owned by the struct and freed by
 * tq_task_release. Absent values: NULL strings, 0 times, exit_code -1,
 * signal 0.
 */
struct tq_task {
	int64_t id;
	enum tq_state state;
	char *name;
	char **argv;        /* argc strings, NULL-terminated */
	size_t argc;
	int shell;
	char *cwd;
	int umask;          /* 0..0777; -1: stored before schema 4 (the worker's) */
	char **env;         /* envc strings, NULL-terminated; only with TQ_GET_ENV */
	size_t envc;
	char *batch;
	char *group;
	char *session;
	char *unique_key;
	int64_t priority;
	int64_t run_after;
	int64_t created_at;
	int64_t timeout_ms;
	int64_t stall_timeout_ms;  /* 0: off */
	int64_t kill_grace_ms;
	int64_t max_output;
	int64_t max_retries;
	int retry_lost;
	int64_t backoff_ms;
	int64_t backoff_max_ms;
	enum tq_stdin_mode stdin_mode;
	int pty;
	char *on_exit;
	char *agent;
	char *model;
	char *prompt;
	int isolate;
	char *sources_json;
	int warm;                  /* --warm: a turn on its session's warm process */
	int64_t idle_timeout_ms;   /* the warm process's idle timeout; 0: not warm */
	int kill_signal;           /* 0: no kill asked for */
	int64_t kill_requested_at;
	int attempt;               /* attempts started so far */
	int64_t worker_id;
	int64_t lease_until;
	int64_t started_at;
	int64_t finished_at;
	int exit_code;             /* -1: none */
	int signal;                /* 0: none */
	enum tq_outcome outcome;
	enum tq_category category;
	char *reason;
	struct tq_label *labels;   /* only with TQ_GET_LABELS; strings owned */
	size_t nlabels;
	int64_t deps_left;         /* dependencies not ended yet (schema.sql) */
	int64_t *after;            /* only with TQ_GET_DEPS: ids waited for */
	int *after_any;            /* per dep: 1 if it needs only to end */
	size_t nafter;
	/* only from tq_queue_list: the agent cost summed over its attempts
	 * (has_cost 0 when no attempt reported one) */
	double cost_usd;
	int has_cost;
};

enum tq_get_flags {
	TQ_GET_ENV = 1 << 0,
	TQ_GET_LABELS = 1 << 1,
	TQ_GET_DEPS = 1 << 2,
	TQ_GET_ALL = TQ_GET_ENV | TQ_GET_LABELS | TQ_GET_DEPS,
};

/* Free what t owns and zero it. NULL or a zeroed struct is fine. */
void tq_task_release(struct tq_task *t);

/* Read one task. TQ_ENOTFOUND if there is no such id. */
int tq_queue_get(struct tq_queue *q, int64_t id, unsigned get_flags,
		 struct tq_task *t, struct tq_err *err);

struct tq_filter {
	unsigned states;           /* bit (1u << state); 0: every state */
	const char *name;          /* exact name, or NULL */
	const char *label_key;     /* with label_value: tasks with that label */
	const char *label_value;
	const char *batch;
	const char *group;
	enum tq_category category; /* TQ_CAT_NONE: any */
	int64_t limit;             /* 0: TQ_LIST_DEFAULT_LIMIT; -1: no limit */
	int64_t offset;
};

#define TQ_FILTER_INIT { .limit = 0 }

/*
 * Tasks matching f, newest first (highest id first). *tasks is an array of
 * *n tasks, without env, labels or deps; free with tq_task_list_free.
 */
int tq_queue_list(struct tq_queue *q, const struct tq_filter *f,
		  struct tq_task **tasks, size_t *n, struct tq_err *err);
void tq_task_list_free(struct tq_task *tasks, size_t n);

/* Number of tasks in each state (counts[TQ_STATE_COUNT]). */
int tq_queue_counts(struct tq_queue *q, int64_t *counts, struct tq_err *err);

/* One run of a task. Strings owned; free with tq_attempt_list_free. */
struct tq_attempt {
	int64_t task_id;
	int attempt;
	int64_t worker_id;
	int pid;
	int pgid;
	int64_t proc_start;
	int64_t started_at;
	int64_t ended_at;
	int exit_code;             /* -1: none */
	int signal;                /* 0: none */
	enum tq_outcome outcome;
	enum tq_category category;
	char *reason;
	int64_t retry_at;
	int counted;               /* 0: interrupted by a shutdown */
	int64_t log_offset;
	int64_t log_line;
	/* an agent's final result; has_result says whether there was one */
	int has_result;
	char *result;
	int is_error;
	char *subtype;
	char *agent_session;
	double cost_usd;
	int64_t duration_ms;
	int64_t num_turns;
	int64_t input_tokens;
	int64_t output_tokens;
	int64_t cache_read_tokens;
	int64_t cache_creation_tokens;
	char *model;
	char *node;             /* the node its worker ran on; NULL: not recorded
				 * (stored before schema 7) */
};

/* Every attempt of a task, oldest first. */
int tq_queue_attempts(struct tq_queue *q, int64_t id, struct tq_attempt **list,
		      size_t *n, struct tq_err *err);
void tq_attempt_list_free(struct tq_attempt *list, size_t n);

/* The bytes stored by --stdin-file. *data is malloc'd (caller frees). */
int tq_queue_stdin_file(struct tq_queue *q, int64_t id, void **data, size_t *len,
			struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Changing state from the CLI                                        */

/*
 * Cancel a task that has not started (queued, scheduled, blocked): state
 * canceled, outcome canceled, reason stored. TQ_ESTATE if it is running or
 * finished (*was tells which; may be NULL); TQ_ENOTFOUND if no such id.
 * Dependents that needed it to succeed are canceled too.
 */
int tq_queue_cancel(struct tq_queue *q, int64_t id, const char *reason,
		    enum tq_state *was, struct tq_err *err);

/*
 * Remove a task that is not running, with its attempts, labels, deps rows,
 * cursors and stdin (the caller removes its log file). TQ_ESTATE if running.
 */
int tq_queue_remove(struct tq_queue *q, int64_t id, struct tq_err *err);

/*
 * Run a finished task again as a new attempt (same id; its attempts are
 * kept and no longer count against its retries: a manual retry gives a fresh
 * budget). TQ_ESTATE unless it is succeeded, failed, timed_out, killed or
 * canceled. Dependents already canceled because it failed stay canceled.
 */
int tq_queue_retry(struct tq_queue *q, int64_t id, struct tq_err *err);

/* Retry every task in state failed or timed_out (of batch, if not NULL), in
 * one transaction. *n receives how many. */
int tq_queue_retry_failed(struct tq_queue *q, const char *batch, int64_t *n,
			  struct tq_err *err);

/*
 * Ask for a running task to be killed with sig: records kill_signal and the
 * time; the worker running it signals its process group and escalates to
 * SIGKILL after the kill grace. TQ_ESTATE if not running.
 */
int tq_queue_request_kill(struct tq_queue *q, int64_t id, int sig,
			  struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Workers: claim, lease, finish                                      */

/*
 * Claim the next runnable task for worker_id, in one BEGIN IMMEDIATE
 * transaction: scheduled tasks that are due become queued; then the head of
 * each group that is not paused and below its parallel limit is considered,
 * and the one with the highest priority (then lowest id) becomes running with
 * attempt + 1 and a lease until now + lease_ms; an attempts row is added.
 * The workers row is not written: which task a worker runs is read from the
 * leases (tq_worker_info.task_id), and its heartbeat is the worker's own
 * (tq_queue_worker_beat), so a claim writes only the task's pages.
 *
 * Returns 0 with t filled (TQ_GET_ENV included), or TQ_ENOTFOUND when nothing
 * is runnable. *more (may be NULL) is tq_queue_runnable's answer right after
 * the claim, in its transaction: a hint for waking another worker. Cost does
 * not grow with the number of queued or finished tasks.
 */
int tq_queue_claim(struct tq_queue *q, int64_t worker_id, int64_t lease_ms,
		   struct tq_task *t, int *more, struct tq_err *err);

/*
 * When the next scheduled task becomes due or the next group pause ends
 * (ms since the epoch), so an idle worker can sleep until then. 0: nothing
 * is waiting on time.
 */
int tq_queue_next_wakeup(struct tq_queue *q, int64_t *at, struct tq_err *err);

/*
 * Extend the lease of (id, attempt) held by worker_id to now + lease_ms.
 * TQ_ESTALE if the task is no longer running under that attempt and worker
 * (the lease was taken over). *kill_signal (may be NULL) receives a pending
 * kill request's signal, or 0.
 */
int tq_queue_renew(struct tq_queue *q, int64_t id, int attempt, int64_t worker_id,
		   int64_t lease_ms, int *kill_signal, struct tq_err *err);

/* Record the spawned process of (id, attempt): pid, process group, start
 * time (from /proc, for pid identity), and where its output begins in the
 * log. TQ_ESTALE if fenced out. */
int tq_queue_set_process(struct tq_queue *q, int64_t id, int attempt, int pid,
			 int pgid, int64_t proc_start, int64_t log_offset,
			 int64_t log_line, struct tq_err *err);

/* An agent's final result, stored on the attempt. */
struct tq_result {
	int has_result;
	const char *result;
	int is_error;
	const char *subtype;
	const char *agent_session;
	double cost_usd;
	int64_t duration_ms;
	int64_t num_turns;
	int64_t input_tokens;
	int64_t output_tokens;
	int64_t cache_read_tokens;
	int64_t cache_creation_tokens;
	const char *model;
};

enum tq_next {
	TQ_NEXT_FINAL,   /* the task ends in the state the outcome implies */
	TQ_NEXT_RETRY,   /* the attempt failed transiently: scheduled for retry_at */
	TQ_NEXT_REQUEUE  /* interrupted by a shutdown: queued again (scheduled
			  * when retry_at is set), the attempt not counted
			  * against its retries */
};

struct tq_finish {
	int64_t task_id;
	int attempt;
	int64_t worker_id;          /* 0: any (recovery of a lost task) */
	enum tq_outcome outcome;
	int exit_code;              /* -1: none */
	int signal;                 /* 0: none */
	enum tq_category category;
	const char *reason;
	enum tq_next next;
	int64_t retry_at;           /* RETRY, REQUEUE: not before (ms since the
				     * epoch); 0: at once */
	const char *pause_group;    /* with pause_until: pause this group (rate limit) */
	int64_t pause_until;
	int probe_passed;           /* the attempt ended without a rate limit
				     * (tq_policy_probe_passed): if it was its
				     * group's probe, the group is released */
	const struct tq_result *result; /* may be NULL */
	int64_t ended_at;           /* when its process ended (ms since the
				     * epoch): an end written late, from an
				     * end record, keeps its true time; 0: now */
	int on_exit_started;        /* 1: the writer runs the task's --on-exit
				     * hook itself, at once (a worker writing
				     * its own end); 0: a final end leaves the
				     * hook owed, for a worker to take
				     * (tq_queue_on_exit_take) */
	/* The attempt's process, as tq_queue_set_process would record it,
	 * written with the end when it was not recorded before (a task that
	 * ended within moments of its spawn: the attempt row is written once,
	 * one transaction a task fewer, issue 21); pid 0: nothing to write,
	 * the attempt keeps what it has. */
	int pid, pgid;
	int64_t proc_start;
	int64_t log_offset, log_line;
	/* With output_known, the output bytes the attempt stored in its log
	 * (attempts.output_bytes; 0: none, and a task whose attempts stored
	 * none has no log file: tq_log_exists). An end that does not know
	 * (recovery's) leaves it 0: NULL is stored, "not known". */
	int output_known;
	int64_t output_bytes;
};

/*
 * Record the end of (task_id, attempt), fenced: TQ_ESTALE if the task is not
 * running under that attempt (and worker, if worker_id != 0). In one
 * transaction: the attempt row, the task's state (succeeded for
 * TQ_OUT_SUCCEEDED; timed_out, killed, canceled for theirs; failed for the
 * rest; or scheduled/queued per next), the group pause, and dependents
 * (unblocked, or canceled when they needed this task to succeed).
 * *state (may be NULL) receives the task's new state.
 */
int tq_queue_finish(struct tq_queue *q, const struct tq_finish *f,
		    enum tq_state *state, struct tq_err *err);

/*
 * tq_queue_finish of f, then tq_queue_claim for f->worker_id with lease_ms,
 * in the same transaction: a worker that takes its next task right after
 * writing an end commits once, and the pages the two share (the tasks', the
 * running set, the counts, the attempts') are written once (issue 21). The
 * end is recorded when the next task is taken, never after. Returns what
 * tq_queue_finish returns (on an error nothing is written and nothing
 * claimed); on 0, *claimed is 1 with t filled (release it) and *more set as
 * tq_queue_claim sets it, or 0 when nothing was taken (nothing runnable, or
 * the claim failed: its part is undone, the end kept; the caller claims
 * again as usual). A backend may do the two one after the other.
 */
int tq_queue_finish_claim(struct tq_queue *q, const struct tq_finish *f,
			  enum tq_state *state, int64_t lease_ms, struct tq_task *t,
			  int *claimed, int *more, struct tq_err *err);

/*
 * --on-exit hooks owed by final ends that no worker wrote itself (an end
 * from an end record, a lost attempt: tq_finish.on_exit_started 0). Each is
 * run exactly once: tq_queue_on_exit_take marks it taken in the statement
 * that finds it, before the caller starts it, so two workers never both
 * run it and a hook that had started is never run again, also after a
 * crash (one that dies between the take and the start loses it).
 *
 * tq_queue_on_exit_due: *any 1 when some hook is owed (a read, cheap).
 * tq_queue_on_exit_take: take one owed hook -- of task_id, or of any task
 * when task_id is 0 -- and load its task into t (TQ_GET_ENV; release it);
 * TQ_ENOTFOUND when none is owed (taken by someone else, or never owed).
 */
int tq_queue_on_exit_due(struct tq_queue *q, int *any, struct tq_err *err);
int tq_queue_on_exit_take(struct tq_queue *q, int64_t task_id, struct tq_task *t,
			  struct tq_err *err);

/* A node's name: $TASKQ_NODE or the host name (queue/home.h tq_node_self);
 * what recovery compares to act only on its own node's processes. */
#define TQ_NODE_MAX 64

/* A running task whose lease has expired, for recovery. */
struct tq_expired {
	int64_t task_id;
	int attempt;
	int64_t worker_id;
	int pid;
	int pgid;
	int64_t proc_start;
	int retry_lost;
	int64_t max_retries;
	int worker_pid;         /* the worker's process (0: its row is gone) */
	int64_t worker_start;   /* with worker_pid: its identity */
	char node[TQ_NODE_MAX + 1]; /* the node the attempt ran on, whose pids
				     * these are ("": not recorded, an attempt
				     * stored before schema 7, taken as this
				     * node's): only that node signals them */
};

/* Running tasks whose lease ended before now_ms (at most max). *list is
 * malloc'd (caller frees). */
int tq_queue_expired(struct tq_queue *q, int64_t now_ms, size_t max,
		     struct tq_expired **list, size_t *n, struct tq_err *err);

/* Running tasks held by worker_id (its process died: recover them now,
 * without waiting for the lease). Same shape as tq_queue_expired. */
int tq_queue_running_by(struct tq_queue *q, int64_t worker_id, size_t max,
			struct tq_expired **list, size_t *n, struct tq_err *err);

/* *any = 1 if a task could start at `now` (ms since the epoch) if a worker
 * were free: a queued or due scheduled task in a group that is not paused (a
 * group's parallel limit may still hold it back). Costs an index probe per
 * group, not a scan of the queue. */
int tq_queue_runnable(struct tq_queue *q, int64_t now, int *any, struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Workers and the supervisor                                         */

struct tq_worker_info {
	int64_t id;
	char node[TQ_NODE_MAX + 1]; /* the node it runs on */
	int pid;
	int64_t proc_start;     /* with pid: the process's identity */
	int slot;
	int supervisor_pid;
	int64_t started_at;
	int64_t heartbeat_at;
	int64_t task_id;        /* the task running under its lease (the
				 * latest, should there be two); 0: none */
};

/* Add a worker row of node (its pid is that node's); *id is the worker id
 * used in leases and attempts, and the attempts it claims record node.
 * TQ_EINVAL: node empty or over TQ_NODE_MAX. */
int tq_queue_worker_add(struct tq_queue *q, const char *node, int pid, int64_t proc_start,
			int slot, int supervisor_pid, int64_t *id, struct tq_err *err);

/* Heartbeat: the worker is alive, and says it runs task_id (0: idle; kept
 * in its row for a reader of the database: tq_queue_workers reads a worker's
 * task from its lease). */
int tq_queue_worker_beat(struct tq_queue *q, int64_t id, int64_t task_id,
			 struct tq_err *err);

/* The worker stopped (its row is kept for history, marked stopped). */
int tq_queue_worker_stop(struct tq_queue *q, int64_t id, struct tq_err *err);

/* Workers not marked stopped, oldest first. *list is malloc'd. */
int tq_queue_workers(struct tq_queue *q, struct tq_worker_info **list, size_t *n,
		     struct tq_err *err);

/*
 * For taskq drain: of the tasks that workers ids[0..n) ran, how many there
 * were (*ran), how many are now in a final state other than succeeded
 * (*failed), and how many have not reached a final state (*pending: waiting
 * for a retry, or running).
 */
int tq_queue_worker_results(struct tq_queue *q, const int64_t *ids, size_t n,
			    int64_t *ran, int64_t *failed, int64_t *pending,
			    struct tq_err *err);

/* A node's supervisor as it last said (issue 20): one row a node, so that
 * status on any node sharing the store lists every node's. */
struct tq_supervisor_info {
	char node[TQ_NODE_MAX + 1];
	int pid;                /* with proc_start: its identity, on node */
	int64_t proc_start;
	int64_t started_at;     /* ms since the epoch */
	int64_t heartbeat_at;   /* its last word (ms since the epoch) */
	int workers;            /* its --workers */
	int max_warm;           /* its --max-warm */
	char *containment;      /* how its workers contain tasks (malloc'd; NULL:
				 * not said) */
	int64_t stopped_at;     /* it said it stopped then; 0: it has not */
};

/* The supervisor s->node says it runs (at its start, then at every beat):
 * its row replaced, heartbeat_at set to now and stopped_at cleared (s's
 * own heartbeat_at and stopped_at are not read). TQ_EINVAL: node empty or
 * over TQ_NODE_MAX. */
int tq_queue_supervisor_beat(struct tq_queue *q, const struct tq_supervisor_info *s,
			     struct tq_err *err);
/* The supervisor (node, pid) stopped: its row says when; a row a newer
 * supervisor of node wrote meanwhile is left alone. */
int tq_queue_supervisor_stop(struct tq_queue *q, const char *node, int pid,
			     struct tq_err *err);
/* Every node's supervisor row, stopped ones too, by node name; *list is
 * malloc'd (free with tq_supervisor_list_free). */
int tq_queue_supervisors(struct tq_queue *q, struct tq_supervisor_info **list, size_t *n,
			 struct tq_err *err);
void tq_supervisor_list_free(struct tq_supervisor_info *list, size_t n);

/*
 * Waking another node's idle workers (issue 20). A change that makes a task
 * runnable or due (a submit of a queued or scheduled task, a retry, a
 * resume, a group's limit set, a retry or requeue written by a finish, a
 * dependency ended that unblocked one, a probe that passed) is announced
 * by the store itself, in the change's transaction, to the wake handles of
 * every other node sharing it: a writer needs to do nothing more. Within
 * one node the doorbell (ipc/doorbell.h) does the same, rung by whoever
 * made the change; a wake handle only hears other nodes, so one change does
 * not wake a node twice.
 *
 * The supervisor holds one handle for its node and polls its descriptor
 * beside its own; when it is readable, tq_queue_wake_take says how many
 * announcements of other nodes arrived, and the supervisor rings its
 * node's doorbell, which wakes one idle worker (it claims, and rings on
 * while more is runnable). One listener per node, not per worker: each
 * announcement costs each node one wake-up, not one per idle worker.
 *
 * The SQLite backend is one node's store: every writer shares the node's
 * doorbell, and open gives *wp NULL (nothing to poll). PostgreSQL:
 * LISTEN on a connection of the handle's own, NOTIFY in the changes'
 * transactions, the writer's node as the payload.
 */
struct tq_wake; /* opaque */

/* Open node's handle for q's store: 0 with *wp set, or NULL when the
 * backend needs none; an error (*wp NULL) when it cannot listen (the
 * database unreachable): the caller tries again later. The handle owns
 * its descriptor (O_CLOEXEC). */
int tq_queue_wake_open(struct tq_queue *q, const char *node, struct tq_wake **wp,
		       struct tq_err *err);
/* The descriptor to poll for POLLIN. */
int tq_queue_wake_fd(const struct tq_wake *w);
/* Take what arrived, without waiting: how many announcements of other
 * nodes (>= 0), or a TQ_E* code when the handle is broken (its connection
 * lost: close it and open another; announcements may have been missed
 * meanwhile, so wake the node's workers once then). */
int tq_queue_wake_take(struct tq_wake *w, struct tq_err *err);
/* Close it and free it; NULL is a no-op. */
void tq_queue_wake_close(struct tq_wake *w);

/* Small named values (the supervisor's pid, start time, worker count). */
int tq_queue_meta_set(struct tq_queue *q, const char *key, const char *value,
		      struct tq_err *err);
/* *value is malloc'd, or NULL if the key is not set. */
int tq_queue_meta_get(struct tq_queue *q, const char *key, char **value,
		      struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Standard input of --stdin pipe tasks                               */

/*
 * Store data (and with eof, the end of input) for task id's stdin, to be
 * delivered by its worker. TQ_ESTATE if the task's stdin is not a pipe, or
 * it has finished, or its input was already ended.
 */
int tq_queue_stdin_write(struct tq_queue *q, int64_t id, const void *data, size_t len,
			 int eof, struct tq_err *err);

struct tq_stdin_chunk {
	int64_t seq;            /* increasing per chunk */
	void *data;             /* malloc'd */
	size_t len;
	int eof;
};

/* Undelivered chunks of task id with seq > after, oldest first, at most max.
 * Free with tq_stdin_chunks_free. */
int tq_queue_stdin_pending(struct tq_queue *q, int64_t id, int64_t after, size_t max,
			   struct tq_stdin_chunk **list, size_t *n, struct tq_err *err);
void tq_stdin_chunks_free(struct tq_stdin_chunk *list, size_t n);

/* Mark every chunk of task id up to seq delivered. */
int tq_queue_stdin_delivered(struct tq_queue *q, int64_t id, int64_t seq,
			     struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Groups                                                             */

struct tq_group {
	char *name;
	int64_t parallel;      /* 0: unlimited */
	int paused;
	int64_t paused_until;  /* ms; 0: none */
	char *pause_reason;
	int probe;             /* a rate limit paused it: once paused_until has
				* passed, one task (the probe) runs first and
				* the rest once it ended without a rate limit */
	int64_t probe_task;    /* the probe running now; 0: none yet */
	int64_t queued;
	int64_t scheduled;     /* queued for later: --delay/--at, a retry's wait */
	int64_t blocked;       /* waiting for --after tasks */
	int64_t running;
};

int tq_queue_groups(struct tq_queue *q, struct tq_group **list, size_t *n,
		    struct tq_err *err);

/* Pause a group by hand (its queued tasks wait; running ones go on; a group
 * no task has used yet is created paused), or lift every pause of it, by hand
 * or from a rate limit, probe included: every queued task may start (resume:
 * TQ_ENOTFOUND if the group does not exist). */
int tq_queue_group_pause(struct tq_queue *q, const char *name, struct tq_err *err);
int tq_queue_group_resume(struct tq_queue *q, const char *name, struct tq_err *err);
void tq_group_list_free(struct tq_group *list, size_t n);

/* ------------------------------------------------------------------ */
/* Poll cursors (cursors.c)                                           */

/*
 * How many lines of task id's log (the all-streams numbering of
 * logstore.h) reader has been shown by `taskq poll --as READER`; 0 for a
 * reader that never polled. *log_file (may be NULL) gets the log file those
 * lines were counted in (logstore.h's tq_log_file inode; 0: not known):
 * a log deleted while its task ran starts again in another file, numbered
 * from 1. reader is 1..TQ_NAME_MAX-1 bytes (TQ_EINVAL otherwise).
 * TQ_ENOTFOUND if there is no such task.
 */
int tq_queue_cursor_get(struct tq_queue *q, int64_t id, const char *reader,
			int64_t *line, uint64_t *log_file, struct tq_err *err);

/*
 * Move reader's cursor on task id from `from` to `to` lines, only if it
 * still is at `from` (compare and set, one statement): TQ_ESTALE when
 * another process polling under the same name moved it first (read it
 * again and retry), so no line is delivered twice to one reader name.
 * Readers with other names are never touched. The row is created on the
 * first move and removed with its task. log_file: the log file `to`
 * counts in (0: not known). TQ_ENOTFOUND if there is no such task;
 * TQ_EINVAL for a bad reader name or a negative line.
 */
int tq_queue_cursor_advance(struct tq_queue *q, int64_t id, const char *reader,
			    int64_t from, int64_t to, uint64_t log_file, struct tq_err *err);

/* ------------------------------------------------------------------ */
/* Agent results, sessions and statistics (stats.c)                   */

/*
 * The agent session to resume for session key: the agent_session of the
 * last succeeded attempt of a task with that key (sessions table), or
 * *agent_session NULL when there is none yet. *agent_session is malloc'd.
 */
int tq_queue_session_get(struct tq_queue *q, const char *key, char **agent_session,
			 struct tq_err *err);

/*
 * How a session advances (tq_queue_finish, in its transaction): when an
 * attempt of a task with a session key ends with the task succeeded and a
 * result that is not an error and names an agent session, the sessions row
 * of the key takes that agent session and the task as its last task --
 * unless a later task of the key already advanced it (a retried old link
 * does not move the session back). A failed, timed out or killed link, or
 * a success whose result is an error, leaves the session where it was.
 *
 * Durations likewise: duration_ms < 0, the agent reported none (Codex,
 * OpenCode), stored as NULL, read back as -1 on an attempt with a result.
 * Costs: a tq_result's cost_usd < 0 means the agent reported none (Gemini,
 * Codex); it is stored as NULL, and read back into tq_attempt.cost_usd as
 * -1 (an attempt without a result reads 0 and has_result 0).
 */

/* One task of a session, for `taskq session show`. */
struct tq_session_task {
	int64_t id;
	enum tq_state state;
	char *name;
	int attempt;
	char *agent_session;  /* reported by its last attempt that reported one */
	int64_t finished_at;  /* 0: not finished */
};

struct tq_session_info {
	char *key;
	char *agent_session;  /* the one to resume; NULL: none yet */
	int64_t last_task_id; /* the task that set it; 0: none */
	int64_t updated_at;   /* ms; 0: never */
	char *cwd;            /* the directory its tasks run in (its first
			       * task's); NULL: none yet */
	struct tq_session_task *tasks; /* in submit order */
	size_t ntasks;
};

/*
 * A session's tasks (oldest first) and its current agent session.
 * TQ_ENOTFOUND when no task has the key and it never advanced. s is
 * caller-owned; release it with tq_session_info_release, also after a
 * failed call.
 */
int tq_queue_session_show(struct tq_queue *q, const char *key,
			  struct tq_session_info *s, struct tq_err *err);
void tq_session_info_release(struct tq_session_info *s);

/* ------------------------------------------------------------------ */
/* Sessions and their warm processes (sessions.c; issue 19)           */

/*
 * A session's row: its agent session and directory, its warm agent process
 * when one is up, and what its tasks add up to.
 *
 * A warm process is named by its pid and start time together (proc.h's
 * start time; a bare pid may be another process by the time it is read)
 * on its node, and only that node's supervisor signals it. Every change
 * of a recorded process is fenced by that identity, so a supervisor that
 * lost track of one (it died, another adopted) cannot clear or mark the
 * process that replaced it.
 */
struct tq_session_row {
	char *key;
	char *agent;              /* the agent CLI of its tasks; NULL: not known
				   * (a session stored before schema 8) */
	char *agent_session;      /* the one to resume; NULL: none yet */
	char *cwd;                /* NULL: none yet */
	int64_t last_task_id;     /* the task that set agent_session; 0: none */
	int64_t updated_at;       /* ms agent_session last advanced; 0: never */
	/* the warm process; pid 0: none recorded (the fields below are 0/NULL) */
	int pid;
	int64_t start;            /* its start time: with pid, its identity */
	char *node;               /* the node it runs on */
	int64_t warm_at;          /* ms it was started */
	int64_t idle_since;       /* ms since no turn has run on it; 0: one runs */
	int64_t close_requested_at; /* ms `taskq sessions close` asked; 0: not */
	int64_t idle_timeout_ms;  /* of the session's latest warm task; 0: none */
	/* computed from its tasks and their attempts */
	int64_t messages;         /* tasks with the key */
	double cost_usd;          /* summed over their attempts that reported one */
	int has_cost;             /* 0: none did */
};

/*
 * Every session (key NULL), or the one of key, in key order; *list is an
 * array of *n rows (NULL and 0 when there are none: an unknown key is not
 * an error here), freed with tq_session_row_list_free. The list leaves out
 * a session with nothing left: no agent session, no warm process, no task
 * (its next task starts it afresh).
 */
int tq_queue_sessions(struct tq_queue *q, const char *key, struct tq_session_row **list,
		      size_t *n, struct tq_err *err);
void tq_session_row_list_free(struct tq_session_row *list, size_t n);

/*
 * Record key's warm process: pid and start (its identity), its node, now
 * (ms) as when it started; a turn is taken to run on it (idle_since NULL)
 * and any close request is cleared, being one for a process that is gone.
 * The row is made if the session has none. TQ_EEXIST (err names the
 * recorded process and its node) when another process is recorded: the
 * runtime clears it first (tq_queue_warm_clear) once it knows it is gone,
 * so two supervisors sharing a store cannot both keep one for a session.
 * Recording the same process again is a success.
 */
int tq_queue_warm_set(struct tq_queue *q, const char *key, const char *node, int pid,
		      int64_t start, int64_t now, struct tq_err *err);

/*
 * Forget key's warm process if it is still pid + start: the warm fields,
 * idle_since and any close request are cleared. *cleared (may be NULL) 1
 * if it was, 0 when no process or another one is recorded (not an error:
 * the caller's process is not the session's).
 */
int tq_queue_warm_clear(struct tq_queue *q, const char *key, int pid, int64_t start,
			int *cleared, struct tq_err *err);

/*
 * Mark key's warm process pid + start idle since `since` (ms), or busy (a
 * turn runs) with since 0. TQ_ESTALE when the row does not record that
 * process.
 */
int tq_queue_warm_idle(struct tq_queue *q, const char *key, int pid, int64_t start,
		       int64_t since, struct tq_err *err);

/*
 * The sessions with a warm process recorded on node (NULL: any node), in
 * key order, as tq_queue_sessions fills them but for messages and cost
 * (0): what a restarted supervisor adopts or ends, and each tick's close
 * requests (close_requested_at != 0). Free with tq_session_row_list_free.
 */
int tq_queue_warm_list(struct tq_queue *q, const char *node, struct tq_session_row **list,
		       size_t *n, struct tq_err *err);

/*
 * `taskq sessions close KEY`: store a close request (now, ms) on key's row
 * if it records a warm process; *row gets the row as it is after (pid 0:
 * no warm process, nothing stored). A request already pending keeps its
 * time. TQ_ENOTFOUND (one line naming the key) when there is no such
 * session. Release *row with tq_session_row_release, also after a failed
 * call.
 */
int tq_queue_session_close_request(struct tq_queue *q, const char *key, int64_t now,
				   struct tq_session_row *row, struct tq_err *err);
void tq_session_row_release(struct tq_session_row *row);

/*
 * Take key's pending close request for its warm process pid + start:
 * *requested_at the time it was stored (0: none) and the request cleared,
 * so it is acted on once. A request for another process than the one
 * named is left alone (*requested_at 0).
 */
int tq_queue_session_close_take(struct tq_queue *q, const char *key, int pid,
				int64_t start, int64_t *requested_at, struct tq_err *err);

/* Which attempts tq_queue_stats sums. */
struct tq_stats_filter {
	const char *batch;    /* NULL: any */
	const char *group;    /* NULL: any */
	int64_t since;        /* attempts started at or after (ms); 0: all */
};

#define TQ_STATS_FILTER_INIT { .batch = NULL }

/* Sums over a set of attempts. */
struct tq_stats_row {
	char *model;              /* per-model rows: the model (NULL: unnamed) */
	int64_t attempts;
	int64_t results;          /* attempts with an agent result */
	int64_t errors;           /* of those, is_error */
	double cost_usd;          /* over the attempts that reported a cost */
	int64_t costed;           /* how many did */
	int64_t input_tokens;
	int64_t output_tokens;
	int64_t cache_read_tokens;
	int64_t cache_creation_tokens;
	int64_t num_turns;
	int64_t runtime_ms;       /* wall time of ended attempts */
	int64_t agent_ms;         /* the agents' own duration_ms */
	int64_t timed;            /* how many attempts reported one */
};

struct tq_stats {
	int64_t tasks;                          /* distinct tasks */
	struct tq_stats_row total;              /* model NULL */
	int64_t outcomes[TQ_OUTCOME_COUNT];     /* [TQ_OUT_NONE]: not ended */
	int64_t categories[TQ_CATEGORY_COUNT];  /* [TQ_CAT_NONE]: none */
	struct tq_stats_row *models;            /* attempts with a result, by
						 * model, costliest first */
	size_t nmodels;
};

/*
 * Sum the attempts that f selects: counts by outcome and category, wall
 * time, and the agent results' cost, tokens, turns and duration, in total
 * and per model. With f->batch the read goes through the batch's index;
 * otherwise it scans and sorts the attempts (about a second of CPU for a
 * million). s is
 * caller-owned; release it with tq_stats_release, also after a failed call.
 */
int tq_queue_stats(struct tq_queue *q, const struct tq_stats_filter *f,
		   struct tq_stats *s, struct tq_err *err);
void tq_stats_release(struct tq_stats *s);

/* ------------------------------------------------------------------ */
/* Batches, group settings and retention (batch.c)                    */

/*
 * A batch (submit --batch NAME): its tasks counted by state, and totals.
 * name is owned; release with tq_batch_release / tq_batch_list_free.
 */
struct tq_batch {
	char *name;
	int64_t counts[TQ_STATE_COUNT];
	int64_t total;
	int64_t first_created;     /* ms: its first and last submit */
	int64_t last_created;
	int64_t first_started;     /* ms; 0: no task has started */
	int64_t last_finished;     /* ms; 0: no task has finished */
	double cost_usd;           /* sum of every attempt's cost_usd */
	int has_cost;              /* some attempt reported a cost */
};

/* 1 when no task of b is queued, scheduled (a retry's backoff included),
 * blocked or running. */
int tq_batch_done(const struct tq_batch *b);

void tq_batch_release(struct tq_batch *b);
void tq_batch_list_free(struct tq_batch *list, size_t n);

/*
 * Every batch, the one submitted to last first. Reads the tasks_batch
 * index and each batch's attempts, never the other tasks. *list is
 * malloc'd (an empty queue: NULL and 0).
 */
int tq_queue_batches(struct tq_queue *q, struct tq_batch **list, size_t *n,
		     struct tq_err *err);

/* One batch. TQ_ENOTFOUND when no task has that batch name. b is zeroed
 * first and owns its name after a success. */
int tq_queue_batch_get(struct tq_queue *q, const char *name, struct tq_batch *b,
		       struct tq_err *err);

/* How many tasks of batch name are not finished yet (queued, scheduled,
 * blocked, running): the cheap check `taskq wait --batch` polls with (no
 * cost, no times). 0 for a name no task has. */
int tq_queue_batch_open(struct tq_queue *q, const char *name, int64_t *open,
			struct tq_err *err);

/*
 * Set a group's parallel limit (0: unlimited within the worker count; at
 * most TQ_PARALLEL_MAX): the claim starts a task of the group only while
 * fewer than parallel of its tasks run. A group no task has used yet is
 * created with the limit. Running tasks are not touched when it drops.
 */
#define TQ_PARALLEL_MAX 100000
int tq_queue_group_set_parallel(struct tq_queue *q, const char *name, int64_t parallel,
				struct tq_err *err);

/*
 * Remove finished tasks (succeeded, failed, timed_out, killed, canceled)
 * whose finished_at is before `before` (ms since the epoch; INT64_MAX: every
 * finished task), oldest first, at most max of them in one transaction, with
 * their attempts, labels, dependency rows, cursors and stdin (cascades), then
 * their log files (tq_log_remove). *removed receives how many rows went;
 * call again while it equals max. A log file that cannot be removed (its row
 * is gone already) makes the call return its error with *removed still set;
 * the other logs are still removed.
 */
int tq_queue_clear_finished(struct tq_queue *q, int64_t before, size_t max,
			    int64_t *removed, struct tq_err *err);

/*
 * Remove task id's row as tq_queue_clear_finished does, only if it is
 * finished: TQ_ESTATE (err names its state) otherwise, *was (may be NULL)
 * receiving the state; TQ_ENOTFOUND if there is no such task. As with
 * tq_queue_remove, the caller then removes its log (tq_log_remove).
 */
int tq_queue_clear_task(struct tq_queue *q, int64_t id, enum tq_state *was,
			struct tq_err *err);

/* Retention: how long finished tasks are kept, in ms (0: forever). The
 * supervisor stores its setting under this meta key (decimal ms). */
#define TQ_META_RETENTION "retention_ms"
#define TQ_DEFAULT_RETENTION_MS ((int64_t)7 * 24 * 3600 * 1000)

#endif

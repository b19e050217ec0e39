/*
 * proc.h - process control for the runner and the supervisor: subreaper,
 * pid identity from /proc, group signals, the sweep of leftover
 * descendants, reaping, and exit statuses. The TERM -> grace -> KILL state
 * machine that uses the group signals is term.h.
 *
 * Nothing here sleeps to wait for an event: the caller's one ppoll loop owns
 * time (style rule 7), and these functions say what to do and when. The one
 * bounded wait is tq_proc_sweep's wait for SIGKILLed processes to die, which
 * the kernel finishes promptly for anything not stuck in the kernel.
 *
 * Preconditions for the caller (a worker or the supervisor):
 *   - it is a child subreaper (tq_proc_set_subreaper), so that orphans of its
 *     tasks are reparented to it and a sweep can find them;
 *   - SIGCHLD is not SIG_IGN and SA_NOCLDWAIT is not set: a child's pid then
 *     stays reserved until the caller reaps it, which is what makes signalling
 *     a child by pid safe;
 *   - it starts no children from another thread during a sweep.
 *
 * None of these functions is async-signal-safe (they format error messages)
 * except tq_proc_exit_code.
 */
#ifndef TQ_PROC_H
#define TQ_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

/* Largest /proc/PID/stat we accept (the real one is a few hundred bytes). */
#define TQ_PROC_STAT_MAX 4096
/* A sweep gives up after this many rounds of finding new children... */
#define TQ_PROC_SWEEP_ROUNDS 64
/* ...or when a SIGKILLed child has not died after this long. */
#define TQ_PROC_SWEEP_WAIT_MS 5000
/* At most this many children are handled per round; the rest next round. */
#define TQ_PROC_SWEEP_BATCH 4096

/*
 * Make the calling process a child subreaper (PR_SET_CHILD_SUBREAPER): an
 * orphaned descendant is reparented to it rather than to init. Inherited by
 * neither fork nor exec. Returns 0 or TQ_EIO/TQ_EPERM with err set.
 */
int tq_proc_set_subreaper(struct tq_err *err);

/* The fields of /proc/PID/stat taskq uses. */
struct tq_proc_stat {
	pid_t pid;
	char state;          /* R S D Z T ... */
	pid_t ppid;
	pid_t pgid;
	pid_t sid;
	int64_t start_time;  /* field 22: clock ticks after boot */
};

/*
 * Read /proc/PID/stat into *st. The comm field (2) may hold spaces and ')',
 * so fields are counted from the LAST ')'. A zombie still has a stat (and
 * its pid is still taken). Returns 0; TQ_ENOTFOUND when there is no such
 * process; TQ_ECORRUPT if the file does not parse; TQ_EIO otherwise.
 */
int tq_proc_stat(pid_t pid, struct tq_proc_stat *st, struct tq_err *err);

/*
 * The start time of pid (field 22 of /proc/PID/stat, in clock ticks after
 * boot). With the pid it names one process for the life of the system:
 * record both, and check them with tq_proc_same before signalling a pid read
 * back from the database. Returns as tq_proc_stat.
 */
int tq_proc_start_time(pid_t pid, int64_t *ticks, struct tq_err *err);

/*
 * 1 if pid is the process that had start_time (alive or a zombie), else 0:
 * it is gone, its pid was reused, or it could not be verified. A pid that
 * is not verified must never be signalled.
 */
int tq_proc_same(pid_t pid, int64_t start_time);

/*
 * 1 if pid is the process that had start_time and it has not ended: as
 * tq_proc_same, but a zombie (exited, not reaped yet) is dead. The question
 * "does this worker or owner still run" asks this; "may I signal this pid"
 * asks tq_proc_same (a zombie's pid is still taken, so still safe).
 */
int tq_proc_alive(pid_t pid, int64_t start_time);

/*
 * Send sig to pid only if it is the process that had start_time, without a
 * window for pid reuse: a pidfd is opened first and the signal goes through
 * it. Returns 0 if sent; TQ_ENOTFOUND if the process is gone or the pid now
 * names another process (nothing sent); TQ_EPERM / TQ_EIO with err set.
 */
int tq_proc_signal(pid_t pid, int64_t start_time, int sig, struct tq_err *err);

/*
 * kill(-pgid, sig). An empty group (ESRCH) is success: the goal is that no
 * member is left. Refuses (TQ_EINVAL) pgid <= 1 and the caller's own group,
 * which kill(2) would turn into "everything" or "ourselves". The caller
 * vouches for pgid: a task the caller has not reaped yet (its pgid cannot be
 * reused), or one checked with tq_proc_same. Returns 0 or a TQ_E* code.
 */
int tq_proc_kill_group(pid_t pgid, int sig, struct tq_err *err);

/*
 * Kill and reap every child of the calling process, except the pids in
 * keep[] and every process in a session one of them leads (a task leads its
 * own session, so keeping a running task's pid also spares its orphans that
 * stayed in its session). Repeats: a killed child's own children are then
 * reparented to us (we are a subreaper) and are found in the next round, so
 * that in the end no descendant is left. Each child is signalled through a
 * pidfd after checking it is still our child, and if it is in a session
 * other than ours, its whole process group is SIGKILLed too.
 *
 * Call it after reaping the task's main process (a main process not yet
 * reaped is killed and reaped here, and its status is lost). keep may be
 * NULL when nkeep is 0. *killed (if not NULL) gets the number of processes
 * SIGKILLed by pid. Returns 0 when no unkept child remains; TQ_EBUSY if
 * children kept appearing for TQ_PROC_SWEEP_ROUNDS rounds or one did not die
 * within TQ_PROC_SWEEP_WAIT_MS; TQ_ENOMEM, TQ_EIO with err set.
 *
 * Children are listed from /proc/self/task/TID/children when the kernel has
 * CONFIG_PROC_CHILDREN, else by scanning /proc/PID/stat for our pid as ppid;
 * not at all when waitid(2) says the caller has none (one system call: the
 * common case after a task).
 */
int tq_proc_sweep(const pid_t *keep, size_t nkeep, size_t *killed,
	struct tq_err *err);

/*
 * The marks by which recovery finds what a lost attempt left, wherever it
 * went (its leader may have exited and the rest been reparented to init
 * when the supervisor died with the worker; the worker may have died before
 * it recorded the task's pid). Marks name processes, not pids or group ids,
 * so a reused id is never hit.
 *   task, home: "TASKQ_TASK_ID=41" and "TASKQ_TASK_HOME=/state/dir", which
 *     the runner gives every process of a task (ids repeat across state
 *     directories, hence both);
 *   worker: "TASKQ_WORKER_PROC=PID.START", which the supervisor gives each
 *     worker it starts (tq_proc_worker_mark). A child of the worker's
 *     spawn shares the worker's memory until its exec, and shows the
 *     worker's environment, not the task's: a worker killed in that window
 *     leaves a child that no task mark finds and that becomes the task.
 */
#define TQ_TASK_MARK_VAR "TASKQ_TASK_ID"
#define TQ_TASK_HOME_VAR "TASKQ_TASK_HOME"
#define TQ_WORKER_MARK_VAR "TASKQ_WORKER_PROC"
struct tq_marks {
	const char *task;       /* with home; either NULL: not looked for */
	const char *home;
	const char *worker;     /* NULL: not looked for */
	pid_t worker_pid;       /* spared: the worker itself, never killed for
				 * its own mark (recovery's business is its
				 * task, and a live worker is not ours to kill) */
};

/* "TASKQ_WORKER_PROC=PID.START" for the process (pid, its start time),
 * truncated to n bytes as snprintf would. Async-signal-safe. */
void tq_proc_worker_mark(pid_t pid, int64_t start, char *buf, size_t n);

/*
 * The calling process's own mark, as tq_proc_worker_mark: its pid and its
 * start time read from /proc/self/stat (0 if that cannot be read, so the
 * mark names no process). Async-signal-safe: a spawned child makes its mark
 * this way before its exec (spawn.h, TQ_SPAWN_MARK_SELF).
 */
void tq_proc_self_mark(char *buf, size_t n);

/*
 * SIGKILL every process whose environment holds m's task and home entries
 * exactly, or its worker entry. Passes over /proc repeat while one finds
 * something (a killed process's last child may have been missed). Processes
 * whose environment cannot be read (another user's) are skipped. Returns
 * the number signalled (*killed may be NULL), or TQ_ENOMEM / TQ_EIO.
 */
int tq_proc_kill_marked(const struct tq_marks *m, size_t *killed, struct tq_err *err);

/*
 * A task's process tree, by identity. A worker lists its task's
 * descendants (tq_proc_descendants) and keeps the list where recovery finds
 * it when the worker and the supervisor die together (contain.h); recovery
 * kills what the list names (tq_proc_kill_tree), wherever those processes
 * went, and never a pid that was reused meanwhile.
 */
struct tq_proc_id {
	pid_t pid;
	int64_t start;           /* tq_proc_start_time: with pid, one process */
};

/* Most processes one listing or one tree kill handles (a fork bomb is cut
 * there: what is listed is handled, the rest is not). */
#define TQ_PROC_TREE_MAX 4096

/*
 * Every descendant of root (its children, theirs, ...; not root itself),
 * with start times, parents before their children. *ids is malloc'd (the
 * caller frees it; NULL with *n == 0 when there are none). A process that
 * exits while we look is left out; one that is forked meanwhile may be
 * missed (a snapshot). At most TQ_PROC_TREE_MAX, then *n stops growing.
 * Read through /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN), else one
 * scan of /proc/[0-9]*\/stat. Returns 0, TQ_ENOMEM or TQ_EIO with err set.
 */
int tq_proc_descendants(pid_t root, struct tq_proc_id **ids, size_t *n,
	struct tq_err *err);

/*
 * SIGKILL the processes ids names and every descendant they have now: each
 * is first stopped (SIGSTOP) and only then asked for its children, so none
 * can fork a child that escapes the count, and each signal goes through a
 * pidfd after its identity is checked (a pid now naming another process is
 * skipped). The processes need not be ours (after a crash they belong to
 * init). Does not wait for them to die. *killed (may be NULL) gets the
 * number SIGKILLed. Returns 0, TQ_ENOMEM or TQ_EIO with err set.
 */
int tq_proc_kill_tree(const struct tq_proc_id *ids, size_t n, size_t *killed,
	struct tq_err *err);

/*
 * Reap every child that has exited, without blocking: waitpid(-1, WNOHANG)
 * until it returns 0 or ECHILD, calling cb(pid, status, arg) for each. Call
 * it when SIGCHLD arrives. Returns the number reaped, or TQ_EIO with err set.
 */
int tq_proc_reap(void (*cb)(pid_t pid, int status, void *arg), void *arg,
	struct tq_err *err);

/*
 * A waitpid status the shell's way: the exit code, or 128 + N when killed
 * by signal N (137 for SIGKILL, 143 for SIGTERM); -1 for anything else.
 * Async-signal-safe.
 */
int tq_proc_exit_code(int status);

/*
 * A waitpid status for people: "exit 7", "signal 9 (SIGKILL)", "signal 11
 * (SIGSEGV, core dumped)". Truncated to n bytes (n >= 1). Returns buf.
 */
char *tq_proc_status_str(int status, char *buf, size_t n);

#endif

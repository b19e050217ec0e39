/*
 * spawn.h - start a process: the only place taskq forks or execs anything.
 *
 * A struct tq_child describes the child (argv, environment, cwd, how its
 * standard streams are wired); tq_spawn_start() starts it and fills in its
 * pid and the caller's ends of its standard streams. In the manner of git's
 * run-command.h this header is the manual: read the ownership rules below.
 * Its callers: a task and an --on-exit hook (the worker), a worker (the
 * supervisor), the supervisor's daemon (`taskq submit`'s autostart) and an
 * agent in the terminal (`taskq ask --interactive`); and tq_spawn_detach,
 * the daemon's own fork.
 *
 * What the child gets by default (a task's; each caller's differences are
 * flags, and listed at struct tq_child):
 *   - a new session and process group: pid == pgid == sid, so a group kill
 *     (tq_proc_kill_group) reaches it and whatever stays in its group;
 *   - exactly fds 0, 1 and 2 (every other descriptor is closed, CLOEXEC or
 *     not);
 *   - an empty signal mask and every signal at its default disposition, so a
 *     worker's blocked or ignored signals (SIGPIPE, SIGCHLD, ...) never leak
 *     (the child resets those the kernel lists as ignored or caught here,
 *     in /proc/self/status, at the spawn: not all 64, one system call each);
 *   - exactly the environment in envp, nothing of the caller's;
 *   - cwd as its working directory (when set);
 *   - umask as its file mode creation mask (when >= 0; else the caller's).
 *   - with cgroup_fd, membership of that cgroup from before its exec.
 * Whatever the flags, no handler of the caller's survives in the child (a
 * caught signal is at its default, as exec(2) would leave it), rlimits and
 * the scheduling are the caller's, and nothing runs in the child before its
 * exec but the steps it asks for.
 *
 * The child is cloned sharing our memory until its exec (CLONE_VM |
 * CLONE_VFORK, as glibc's posix_spawn does, at its cost; spawn.c says why
 * not posix_spawn itself). With cgroup_fd, by clone3(CLONE_INTO_CGROUP),
 * since glibc 2.36 has no wrapper for it. Where that cannot be had (not
 * x86-64, a kernel before 5.7) the child is cloned likewise and joins by
 * writing to its cgroup.procs before anything else, at the price of a
 * migration; a pty child (the fork path) joins the same way.
 *
 * Caller's preconditions:
 *   - fds 0-2 are open in the caller (tq_sanitize_stdfds), so no pipe created
 *     here can land on them; tq_spawn_start refuses with TQ_EINVAL otherwise;
 *   - SIGPIPE is ignored in the caller (the worker does this at start): a child
 *     that exits before reading its stdin makes a write to in_fd fail with
 *     EPIPE, which must be an error to record, not the worker's death;
 *   - SIGCHLD is not SIG_IGN (that would auto-reap children and let their pids
 *     be reused behind the caller's back; see proc.h).
 *
 * Exec failure is a spawn error, not an exit status: a command that does not
 * exist or is not executable, or a cwd that is gone, makes tq_spawn_start
 * return an error and start nothing. Nothing here reaps; the caller owns the
 * child and waits for it (tq_spawn_wait, or tq_proc_reap in an event loop).
 */
#ifndef TQ_SPAWN_H
#define TQ_SPAWN_H

#include <signal.h>
#include <sys/types.h>

#include "common/err.h"

/* PATH used to find argv[0] when the task's own environment has none. */
#define TQ_SPAWN_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/*
 * What the stdout and stderr pipes hold at most, in bytes (F_SETPIPE_SZ,
 * which rounds up to whole pages). The caller reads the two pipes in turn
 * and can order the lines of the two streams only as closely as what waits
 * unread in them: a line still in its pipe when a later line of the other
 * stream is read is placed after it. So this is the bound of the
 * output-order guarantee (README, "Output order"): the smaller the pipe, the
 * sooner a fast writer blocks and the closer the order, at a wakeup per
 * pipeful. Two 4 KiB pages, not one: with a one-page pipe every 4 KiB
 * write (what a program's full stdio buffer writes, and all a one-page pipe
 * takes at once) waits until the whole pipe has been read, and capture took
 * twice the CPU (1.55 s against 0.89 s for 256 MiB; 0.69 s with the default
 * 64 KiB).
 */
#define TQ_SPAWN_PIPE_SIZE 8192
/* The stack of a cloned child (in a cgroup, or making its mark), until its
 * exec: it makes a few system calls and reads its /proc/self/stat
 * (TQ_PROC_STAT_MAX; measured need: a few KiB; an ASan build needs more). */
#define TQ_SPAWN_CLONE_STACK (64 * 1024)
/* What is read of /proc/self/status for its SigIgn and SigCgt lines, which
 * come within its first 1.5 KiB on Linux 6.1. */
#define TQ_SPAWN_STATUS_MAX 4096
/* "TASKQ_WORKER_PROC=PID.START" (TQ_SPAWN_MARK_SELF): 18 + 7 + 1 + 20
 * bytes at most, and its NUL. */
#define TQ_SPAWN_MARK_MAX 64

/*
 * What an agent CLI's stdout and stderr pipes hold (tq_child.pipe_size):
 * Claude Code, Gemini CLI (node) and OpenCode (bun) write a pipe
 * asynchronously, and what the pipe did not take by the time they exit is
 * lost. The real claude 2.1.197 lost the result line of a 16 KiB answer
 * in 1 run of 3 with the 8 KiB pipes above, of a 64 KiB answer in 2 of 3.
 * 1 MiB is the most an unprivileged process may ask for by default
 * (/proc/sys/fs/pipe-max-size): an answer whose lines come to less is
 * kept whole; the order of the two streams matters little for an agent.
 */
#define TQ_SPAWN_AGENT_PIPE_SIZE (1024 * 1024)

/* Window size a --pty child sees (a 0x0 terminal confuses many programs). */
#define TQ_SPAWN_PTY_ROWS 24
#define TQ_SPAWN_PTY_COLS 80

/* How the child's standard streams are wired (stdin, and with it the two
 * others). */
enum tq_spawn_stdin {
	/* stdin is /dev/null; stdout and stderr are two pipes (the default). */
	TQ_SPAWN_STDIN_NULL = 0,
	/* stdin is a pipe whose write end the caller gets as in_fd; stdout and
	 * stderr are two pipes. Close in_fd to give the child EOF. */
	TQ_SPAWN_STDIN_PIPE,
	/* stdin, stdout and stderr are all the slave of a new pseudo-terminal,
	 * which is the child's controlling terminal; the caller gets the master
	 * as out_fd and both reads output from and writes input to it. */
	TQ_SPAWN_STDIN_PTY,
	/* fds 0, 1 and 2 are the caller's own (a worker writes to the
	 * supervisor's log; an agent in the terminal reads and writes it). */
	TQ_SPAWN_STDIO_INHERIT,
	/* all three are /dev/null, stdin read-only, stdout and stderr one
	 * write-only open shared by both (a daemon's first process). */
	TQ_SPAWN_STDIO_NULL,
};

enum tq_spawn_flags {
	/* Stay in the caller's session and process group (no setsid): a
	 * worker, which the supervisor's stop reaches with it; an agent in the
	 * terminal's foreground group, which ^C reaches. Not with a pty. */
	TQ_SPAWN_KEEP_SESSION = 1 << 0,
	/* The caller's signal mask, not an empty one. */
	TQ_SPAWN_KEEP_SIGMASK = 1 << 1,
	/*
	 * The child carries its own identity in its environment:
	 * "TASKQ_WORKER_PROC=PID.START" (tq_proc_self_mark), made in the child
	 * before its exec, in place of any such entry of envp. A worker is
	 * found by it (proc.h, struct tq_marks); its pid is known only once it
	 * is started. Started by the clone path (or the fork path with a pty).
	 */
	TQ_SPAWN_MARK_SELF = 1 << 2,
	/* Every descriptor of the caller's without FD_CLOEXEC stays open in
	 * the child, as across a fork + exec (a worker keeps what `taskq
	 * serve` was started with, as it always did); not only fds 0-2. */
	TQ_SPAWN_KEEP_FDS = 1 << 3,
};

struct tq_child {
	/* Inputs, borrowed: they must stay valid during tq_spawn_start only. */
	char *const *argv;         /* argv[0] is looked up as execvp does */
	const char *exe;           /* the program, looked up likewise, when it
				    * is not argv[0] (taskq itself, by its
				    * /proc/self/exe path); NULL: argv[0] */
	char *const *envp;         /* the whole environment; NULL means empty */
	const char *cwd;           /* NULL: the caller's working directory */
	enum tq_spawn_stdin in;
	int umask;                 /* 0..0777; -1: the caller's */
	/* A cgroup v2 group's directory, open (O_RDONLY | O_DIRECTORY): the
	 * child is started in that group (or joins it before it execs), so it
	 * never runs, and never forks, outside it (cgroup.h). Borrowed, like
	 * the rest. -1 for none; so is any fd 0-2 (the caller's stdio, never a
	 * cgroup), so a struct zeroed by an older caller asks for no group. */
	int cgroup_fd;
	int pipe_size;             /* stdout and stderr pipes' size; 0:
				    * TQ_SPAWN_PIPE_SIZE. A larger one the kernel
				    * refuses leaves its default (64 KiB) */
	unsigned flags;            /* enum tq_spawn_flags; 0: a task's */
	/* The signals set to their default disposition in the child; NULL:
	 * every one (a task's). With an empty set the child keeps what the
	 * caller ignores, as a fork + exec would (a worker, the daemon). */
	const sigset_t *sigdefault;

	/* Outputs, set by tq_spawn_start; -1 when not started or not used. */
	pid_t pid;                 /* also the child's pgid and sid */
	int in_fd;                 /* STDIN_PIPE: write end of the stdin pipe */
	int out_fd;                /* stdout's read end, or the pty master */
	int err_fd;                /* stderr's read end; -1 with a pty */
	int join_failed;           /* the start failed joining cgroup_fd's group */
};

#define TQ_CHILD_INIT { .exe = NULL, .in = TQ_SPAWN_STDIN_NULL, .umask = -1, .cgroup_fd = -1, \
	.pipe_size = 0, .flags = 0, .sigdefault = NULL, .pid = -1, .in_fd = -1, \
	.out_fd = -1, .err_fd = -1 }

/*
 * Start the child described by c. Its program (exe, else argv[0]) without
 * a '/' is searched in the PATH of envp (TQ_SPAWN_DEFAULT_PATH when envp
 * has none), never in the caller's PATH; relative PATH entries and a
 * relative program are taken relative to c->cwd, as the child itself would
 * see them.
 *
 * On success returns 0 with c->pid set and the child running (exec has
 * happened). The caller owns c->in_fd, c->out_fd and c->err_fd (whichever are
 * not -1): all are O_CLOEXEC | O_NONBLOCK; the stdout and stderr pipes hold
 * c->pipe_size or TQ_SPAWN_PIPE_SIZE bytes (rounded up to a page; the kernel's default,
 * 64 KiB, only if it refused to shrink them, which it does only out of
 * memory, and only for as long as the task does not resize them itself);
 * read out_fd and err_fd until EOF
 * (for a pty master, read(2) fails with EIO once the child side is closed:
 * treat EIO as EOF). Close them with tq_spawn_release. The caller must reap
 * c->pid.
 *
 * On failure returns a negative TQ_E* code with err naming the step and the
 * object, nothing is running, every descriptor made here is closed and the
 * outputs stay -1; errno is the failed step's (for a caller that words the
 * error its own way):
 *   TQ_ENOTFOUND  exec "nosuchcmd": No such file or directory
 *                 chdir "/gone": No such file or directory
 *   TQ_EPERM      exec "./notes.txt": Permission denied
 *   TQ_EINVAL     empty argv, fds 0-2 closed in the caller, or a pty
 *                 asked for with TQ_SPAWN_KEEP_SESSION
 *   any code      with c->join_failed set: joining cgroup_fd's group failed
 *                 ("spawn \"x\": join its cgroup: ..."); the caller may
 *                 start it again without one
 *   TQ_EIO        anything else (exec "x": Exec format error, pipe2: ...)
 *
 * Not thread-safe: the cloned child runs on one stack kept for every
 * spawn of the process (spawn.c); taskq's processes that spawn have one
 * thread. Not async-signal-safe.
 */
int tq_spawn_start(struct tq_child *c, struct tq_err *err);

/*
 * For tests: with on, a child with a cgroup_fd is cloned and joins its
 * group by writing to cgroup.procs (the path of architectures and kernels
 * without clone3's CLONE_INTO_CGROUP) even where clone3 can start it
 * there; off goes back to clone3 where it works.
 */
void tq_spawn_force_join(int on);

/*
 * Block until c->pid exits and reap it; *status gets the waitpid status (see
 * tq_proc_exit_code). For tests and simple callers; an event loop uses
 * tq_proc_reap instead. Returns 0, or TQ_EINVAL when there is no child, or
 * TQ_EIO with err set when waitpid fails. Sets c->pid to -1 once reaped.
 */
int tq_spawn_wait(struct tq_child *c, int *status, struct tq_err *err);

/*
 * Close every descriptor c still owns and set it to -1. Does not signal or
 * reap the child. Safe to call twice, and on a struct that never started.
 */
void tq_spawn_release(struct tq_child *c);

/*
 * Go into the background, as a daemon starts: fork; the parent waits until
 * the child writes the byte 'R' to *ready_fd (it is up) or closes it
 * without (it failed), and exits 0 or 1 (_exit: stdio is flushed before the
 * fork), so it never returns. The child leads a new session, has / as its
 * working directory (it holds no directory busy: an unmount) and returns 0
 * owning *ready_fd (CLOEXEC). Returns TQ_E* with err set when the fork, or
 * in the child setsid or chdir, failed (in the child: the parent then
 * exits 1 once the child closes *ready_fd or exits).
 */
int tq_spawn_detach(int *ready_fd, struct tq_err *err);

#endif

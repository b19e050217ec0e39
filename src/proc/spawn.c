/*
 * spawn.c - start a process (see spawn.h for the contract): every fork and
 * exec of taskq is here.
 *
 * Three paths, one entry point. Pipes and /dev/null: posix_spawn with
 * POSIX_SPAWN_SETSID | SETSIGMASK | SETSIGDEF and file actions (dup2 onto
 * 0-2, chdir, closefrom(3)), or fewer of them as the caller's flags say (a
 * worker, the daemon, an agent in the terminal keep the caller's session
 * and streams). The same in a cgroup, or for a child that carries its own
 * pid and start time in its environment (a worker's mark): posix_spawn
 * (glibc 2.36) can do neither, so a clone that shares our memory as
 * posix_spawn's does, into the group, and a child function that does what
 * those attributes and actions ask (spawn_clone). A pty: posix_spawn cannot
 * give the child a controlling terminal, so one fork path does what it does
 * by hand, with only async-signal-safe calls in the child and the child's
 * errno sent back over a CLOEXEC pipe. Beside them, tq_spawn_detach: the
 * daemon's fork of itself, which execs nothing.
 *
 * Why posix_spawn: glibc clones with CLONE_VM | CLONE_VFORK, so no page
 * tables are copied and the cost does not grow with the parent. Measured on
 * the 2-vCPU Debian 12 VM (glibc 2.36), start + waitpid of /bin/true, 1000
 * in a row, 6 rounds on a shared, noisy machine; best round / median:
 *                                     small parent      512 MB parent
 *   tq_spawn_start, pipes             582/s / 440/s     523/s / 212/s
 *   bare posix_spawn + SETSID         572/s / 530/s     534/s / 487/s
 *   fork + setsid + execve            451/s / 212/s      76/s /  60/s
 *   tq_spawn_start, pty (fork path)   372/s / 203/s     107/s /  61/s
 * (A posix_spawn with our pipes and file actions costs what a bare one
 * does; the medians differ by the noise.) So the fork path is for --pty only.
 *
 * Exec failure comes back as an error, never as exit status 127. glibc's
 * posix_spawn reports the errno of whichever child step failed, so a failed
 * chdir and a failed exec are both plain ENOENT; we tell them apart by
 * checking the cwd first (a clear message in the common case) and, if the
 * spawn still fails, checking it again to name the step that failed (the
 * errno itself is always the spawn's). The program (argv[0], or exe) is
 * resolved here, by taskq's one PATH search (search_path), against the
 * child's PATH rather than with posix_spawnp, which would search the
 * caller's.
 *
 * Invariant: on every return path, either the child runs and the caller owns
 * exactly the fds in struct tq_child, or nothing runs and no fd is left open.
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sys.h"
#include "proc.h"

/* The steps of a forked or cloned child, reported back with their errno
 * on failure. */
enum child_step {
	STEP_CGROUP,
	STEP_SETSID,
	STEP_SETCTTY,
	STEP_DUP2,
	STEP_CHDIR,
	STEP_CLOSE,
	STEP_EXEC,
};

struct child_report {
	int step;
	int err;
};

static int child_failed(const struct tq_child *c, struct child_report *rep,
	struct tq_err *err);

static char *const empty_env[] = { NULL };

/* Build "a/b" in out; an empty a (an empty PATH entry) means ".". */
static int join_path(char *out, size_t n, const char *a, size_t alen,
	const char *b)
{
	size_t blen = strlen(b);

	if (alen == 0) {
		a = ".";
		alen = 1;
	}
	if (alen + 1 + blen + 1 > n)
		return ENAMETOOLONG;
	memcpy(out, a, alen);
	out[alen] = '/';
	memcpy(out + alen + 1, b, blen + 1);
	return 0;
}

/* 0 if path could be a directory the child can chdir into, else an errno. */
static int check_cwd(const char *cwd)
{
	struct stat st;

	if (stat(cwd, &st) < 0)
		return errno;
	if (!S_ISDIR(st.st_mode))
		return ENOTDIR;
	if (faccessat(AT_FDCWD, cwd, X_OK, AT_EACCESS) < 0)
		return errno;
	return 0;
}

/*
 * 0 if execve(cand) could succeed from the child's cwd, else the errno
 * execve would give (EACCES for a directory or non-regular file).
 */
static int check_exec(const char *cand, const char *cwd)
{
	char buf[PATH_MAX];
	struct stat st;
	int e;

	if (cand[0] != '/' && cwd != NULL) {
		if ((e = join_path(buf, sizeof(buf), cwd, strlen(cwd), cand)))
			return e;
		cand = buf;
	}
	if (stat(cand, &st) < 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	if (faccessat(AT_FDCWD, cand, X_OK, AT_EACCESS) < 0)
		return errno;
	return 0;
}

static const char *env_path(char *const *envp)
{
	for (; *envp != NULL; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return TQ_SPAWN_DEFAULT_PATH;
}

/*
 * Search file in the task's PATH as execvp does: the first executable
 * candidate wins; if none, EACCES when some candidate was refused, else
 * ENOENT. out gets the path to pass to execve (relative paths stay relative:
 * the child resolves them after its chdir, as we checked them).
 */
static int search_path(const char *file, char *const *envp, const char *cwd,
	char *out, size_t n)
{
	const char *p = env_path(envp);
	int found_eacces = 0;

	for (;;) {
		size_t len = strcspn(p, ":");
		int e = join_path(out, n, p, len, file);

		if (e == 0)
			e = check_exec(out, cwd);
		if (e == 0)
			return 0;
		if (e == EACCES)
			found_eacces = 1;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	return found_eacces ? EACCES : ENOENT;
}

/* Report step failed on obj with errno e: `exec "x": No such file ...`. */
static int fail_on(struct tq_err *err, int e, const char *step, const char *obj)
{
	errno = e;
	return tq_err_sys(err, "%s \"%s\"", step, obj);
}

/* c's program: exe, else argv[0]. What errors name. */
static const char *prog(const struct tq_child *c)
{
	return c->exe != NULL ? c->exe : c->argv[0];
}

/* Resolve c's program into out (PATH_MAX bytes). */
static int resolve_exe(const struct tq_child *c, char *const *envp, char *out,
	size_t n, struct tq_err *err)
{
	const char *file = prog(c);
	int e;

	if (*file == '\0')
		return fail_on(err, ENOENT, "exec", file);
	if (strchr(file, '/') != NULL) {
		if (strlen(file) >= n)
			return fail_on(err, ENAMETOOLONG, "exec", file);
		memcpy(out, file, strlen(file) + 1);
		e = check_exec(out, c->cwd);
	} else {
		e = search_path(file, envp, c->cwd, out, n);
	}
	return e ? fail_on(err, e, "exec", file) : 0;
}

/*
 * posix_spawn failed with e: name the step. EAGAIN and ENOMEM come from
 * clone (no process or memory to spare); anything else from the child's
 * chdir if the cwd is (now) unusable, else from its execve.
 */
static int spawn_failed(const struct tq_child *c, int e, struct tq_err *err)
{
	if (e == EAGAIN || e == ENOMEM)
		return fail_on(err, e, "posix_spawn", prog(c));
	if (c->cwd != NULL && check_cwd(c->cwd) != 0)
		return fail_on(err, e, "chdir", c->cwd);
	return fail_on(err, e, "exec", prog(c));
}

/* Hand an fd over: return it and forget it here (cleanup skips -1). */
static int take_fd(int *fd)
{
	int f = *fd;

	*fd = -1;
	return f;
}

static void close_pair(int p[2])
{
	tq_close(p[0]);
	tq_close(p[1]);
	p[0] = p[1] = -1;
}

/*
 * A CLOEXEC pipe whose end `mine` (0 read, 1 write) is also O_NONBLOCK; the
 * other end, the child's, stays blocking (separate open file descriptions).
 */
static int open_pipe(int p[2], int mine, const char *what, struct tq_err *err)
{
	int fl;

	if (pipe2(p, O_CLOEXEC) < 0)
		return tq_err_sys(err, "pipe2 for %s", what);
	if (p[0] <= 2 || p[1] <= 2) {
		close_pair(p);
		return tq_err_set(err, TQ_EINVAL,
			"spawn: fds 0-2 must be open in the caller");
	}
	fl = fcntl(p[mine], F_GETFL);
	if (fl < 0 || fcntl(p[mine], F_SETFL, fl | O_NONBLOCK) < 0) {
		int rc = tq_err_sys(err, "fcntl O_NONBLOCK on %s pipe", what);
		close_pair(p);
		return rc;
	}
	return 0;
}

/*
 * Shrink an output pipe to TQ_SPAWN_PIPE_SIZE (see spawn.h for why), or
 * size it to size when not 0 (an agent CLI's: TQ_SPAWN_AGENT_PIPE_SIZE).
 * Before the child exists, so no byte is ever in a larger pipe. Shrinking
 * an empty pipe is always permitted (the pipe-max-size and per-user page
 * limits only refuse growth); if the kernel still refuses (out of memory,
 * or a growth past those limits), the task runs with the default pipe:
 * the order of its lines is then only as close as that allows, which is no
 * reason to refuse to run it.
 */
static void size_pipe(int fd, int size)
{
	(void)fcntl(fd, F_SETPIPE_SZ, size > 0 ? size : TQ_SPAWN_PIPE_SIZE);
}

/*
 * Attributes: a new session, an empty mask, every signal at its default
 * (a task's); or what c's flags and sigdefault keep of the caller's. glibc's
 * child resets a caught signal to its default whatever the set says (it
 * shares our memory until its exec), so an empty set leaves the child what
 * a fork + exec would.
 */
static int build_attr(posix_spawnattr_t *at, const struct tq_child *c)
{
	short flags = POSIX_SPAWN_SETSIGDEF;
	sigset_t none, all;
	int e;

	sigemptyset(&none);
	sigfillset(&all);
	if (!(c->flags & TQ_SPAWN_KEEP_SESSION))
		flags |= POSIX_SPAWN_SETSID;
	if (!(c->flags & TQ_SPAWN_KEEP_SIGMASK))
		flags |= POSIX_SPAWN_SETSIGMASK;
	if ((e = posix_spawnattr_setflags(at, flags)))
		return e;
	if ((e = posix_spawnattr_setsigmask(at, &none)))
		return e;
	return posix_spawnattr_setsigdefault(at, c->sigdefault ? c->sigdefault : &all);
}

/* Whether c's stdout and stderr are pipes to the caller (a task's). */
static int has_pipes(const struct tq_child *c)
{
	return c->in == TQ_SPAWN_STDIN_NULL || c->in == TQ_SPAWN_STDIN_PIPE;
}

/* File actions: the standard streams (stdin, the two pipes onto 1 and 2;
 * or /dev/null; or nothing, inherited), chdir, close the rest. */
static int build_actions(posix_spawn_file_actions_t *fa,
	const struct tq_child *c, int in_r, int out_w, int err_w)
{
	int e = 0;

	if (c->in == TQ_SPAWN_STDIO_NULL) {
		if ((e = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0)) ||
		    (e = posix_spawn_file_actions_addopen(fa, 1, "/dev/null", O_WRONLY, 0)) ||
		    (e = posix_spawn_file_actions_adddup2(fa, 1, 2)))
			return e;
	} else if (has_pipes(c)) {
		if (in_r >= 0)
			e = posix_spawn_file_actions_adddup2(fa, in_r, 0);
		else
			e = posix_spawn_file_actions_addopen(fa, 0, "/dev/null",
				O_RDONLY, 0);
		if (e || (e = posix_spawn_file_actions_adddup2(fa, out_w, 1)) ||
		    (e = posix_spawn_file_actions_adddup2(fa, err_w, 2)))
			return e;
	}
	if (c->cwd != NULL &&
	    (e = posix_spawn_file_actions_addchdir_np(fa, c->cwd)))
		return e;
	if (c->flags & TQ_SPAWN_KEEP_FDS)
		return 0;
	return posix_spawn_file_actions_addclosefrom_np(fa, 3);
}

/*
 * clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP) with a stack of our
 * own, calling fn(arg) on it in the child: the child is born in its group,
 * at no cost beyond posix_spawn's, where writing to the group's
 * cgroup.procs from the child (a migration) waits for an RCU grace period
 * (measured, 6 MB parent, spawn + wait of /bin/true, median of 30 rounds on
 * a loaded 2-core machine: posix_spawn 995-1394 us, with a group made and
 * removed 1332-1638 us, clone3 into it 1200-1494 us, clone and join
 * 2029-2691 us). glibc 2.36 has no wrapper (2.39's posix_spawn uses one
 * inside), and a child that starts on a new stack in a function cannot be
 * written in C: these few instructions are x86-64's. Returns the child's
 * pid, or -errno. Elsewhere, and on kernels without CLONE_INTO_CGROUP
 * (before 5.7), the child joins by the write (clone_child, plan->join).
 */
#if defined(__x86_64__)
#define HAVE_CLONE3_INTO 1
long tq_spawn_clone3(struct clone_args *args, size_t size, int (*fn)(void *), void *arg);
__asm__(
	".text\n"
	".globl tq_spawn_clone3\n"
	".hidden tq_spawn_clone3\n"
	".type tq_spawn_clone3, @function\n"
	"tq_spawn_clone3:\n"
	"	.cfi_startproc\n"
	"	mov %rdx, %r8\n"          /* fn and arg: the syscall keeps r8, r9 */
	"	mov %rcx, %r9\n"
	"	mov $435, %eax\n"         /* __NR_clone3 */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	.cfi_undefined %rip\n"    /* the child: nothing to unwind to */
	"	xor %ebp, %ebp\n"
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n"          /* __NR_exit: fn never returns, but */
	"	syscall\n"
	"	hlt\n"
	"1:	ret\n"                    /* the parent: the pid, or -errno */
	"	.cfi_endproc\n"
	".size tq_spawn_clone3, .-tq_spawn_clone3\n");

/* Set once clone3 said it cannot put a child into a cgroup. */
static atomic_int clone3_missing;
#endif

void tq_spawn_force_join(int on)
{
#ifdef HAVE_CLONE3_INTO
	atomic_store(&clone3_missing, on);
#else
	(void)on;
#endif
}

/* What a cloned child does, and where it says which step failed. */
struct clone_plan {
	const struct tq_child *c;
	const char *path;
	char *const *envp;
	int in_r, out_w, err_w;
	int join;                  /* not born in the group: join it first */
	char *mark;                /* TQ_SPAWN_MARK_SELF: made here; else NULL */
	size_t mark_size;
	sigset_t mask;             /* the child's mask at its exec */
	struct child_report rep;   /* rep.err != 0: the child failed */
};

/* In a child (async-signal-safe): fd onto to; an fd that already is to
 * loses its CLOEXEC instead (dup2 onto itself would keep it). */
static int child_dup(int fd, int to)
{
	if (fd == to)
		return fcntl(to, F_SETFD, 0);
	return dup2(fd, to);
}

/* In a child: the standard streams as build_actions wires them. */
static int child_stdio(const struct tq_child *c, int in_r, int out_w, int err_w)
{
	int fd;

	if (c->in == TQ_SPAWN_STDIO_INHERIT)
		return 0;
	if (c->in == TQ_SPAWN_STDIO_NULL)
		return (fd = tq_open("/dev/null", O_RDONLY, 0)) < 0 || child_dup(fd, 0) < 0 ||
		       (fd = tq_open("/dev/null", O_WRONLY, 0)) < 0 || child_dup(fd, 1) < 0 ||
		       dup2(1, 2) < 0 ? -1 : 0;
	if (in_r >= 0 ? dup2(in_r, 0) < 0
		      : ((fd = tq_open("/dev/null", O_RDONLY, 0)) < 0 || child_dup(fd, 0) < 0))
		return -1;
	return dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0 ? -1 : 0;
}

/*
 * In a child, every signal blocked: the dispositions build_attr asks for.
 * The signals of sigdefault (NULL: all) to their default, and any caught
 * one too: our handlers must never run in a child that shares our memory,
 * and exec would reset them anyway. SIGKILL, SIGSTOP and glibc's internal
 * signals refuse: harmless.
 */
static void child_signals(const sigset_t *sigdefault)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;

	for (int sig = 1; sig < NSIG; sig++)
		if (sigdefault == NULL || sigismember(sigdefault, sig) == 1 ||
		    (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN &&
		     old.sa_handler != SIG_DFL))
			sigaction(sig, &dfl, NULL);
}

/*
 * The cloned child: it shares our memory and runs on its own stack until
 * its exec, like posix_spawn's child, so only async-signal-safe calls and
 * no writes to memory but plan->rep and plan->mark. Every signal is
 * blocked on entry (the parent blocked them around the clone);
 * dispositions are reset before the mask is set. Does what build_attr and
 * build_actions ask of posix_spawn, and makes the mark. Never returns.
 */
static int clone_child(void *arg)
{
	struct clone_plan *p = arg;
	int fd;

	/* First, before anything can fork: into the task's group. */
	p->rep.step = STEP_CGROUP;
	if (p->join && ((fd = tq_openat(p->c->cgroup_fd, "cgroup.procs", O_WRONLY, 0)) < 0 ||
			tq_write_all(fd, "0", 1) < 0))
		goto fail;
	p->rep.step = STEP_SETSID;
	if (!(p->c->flags & TQ_SPAWN_KEEP_SESSION) && setsid() < 0)
		goto fail;
	p->rep.step = STEP_DUP2;
	if (child_stdio(p->c, p->in_r, p->out_w, p->err_w) < 0)
		goto fail;
	p->rep.step = STEP_CHDIR;
	if (p->c->cwd != NULL && chdir(p->c->cwd) < 0)
		goto fail;
	child_signals(p->c->sigdefault);
	if (p->mark != NULL)
		tq_proc_self_mark(p->mark, p->mark_size);
	/* Our memory is shared, our descriptor table is not: close, at once. */
	p->rep.step = STEP_CLOSE;
	if (!(p->c->flags & TQ_SPAWN_KEEP_FDS) && close_range(3, ~0U, 0) < 0)
		goto fail;
	sigprocmask(SIG_SETMASK, &p->mask, NULL);
	p->rep.step = STEP_EXEC;
	execve(p->path, p->c->argv, p->envp);
fail:
	p->rep.err = errno ? errno : EIO;
	_exit(127);
}

/*
 * Clone the child, into its group if it has one, on stack (size bytes).
 * Returns the pid; or -1 with errno set; or -2 with p->rep set when clone3
 * refused the group. p->join says whether the child will join its group
 * (the fallback) or was born there (clone3) or has none.
 */
static pid_t clone_into(struct clone_plan *p, char *stack, size_t size)
{
#ifdef HAVE_CLONE3_INTO
	if (p->c->cgroup_fd > 2 && !atomic_load(&clone3_missing)) {
		struct clone_args ca = {
			.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP,
			.exit_signal = SIGCHLD,
			.stack = (uint64_t)(uintptr_t)stack,
			.stack_size = size,
			.cgroup = (uint64_t)p->c->cgroup_fd,
		};
		long r;

		p->join = 0;
		r = tq_spawn_clone3(&ca, sizeof(ca), clone_child, p);
		if (r >= 0)
			return (pid_t)r;
		/* A kernel that does not know clone3 (ENOSYS), its cgroup field
		 * (E2BIG) or CLONE_INTO_CGROUP (EINVAL): the fallback, from now
		 * on. Anything else is the group's (EBADF, EOPNOTSUPP...). */
		if (r != -ENOSYS && r != -E2BIG && r != -EINVAL) {
			p->rep = (struct child_report){ STEP_CGROUP, (int)-r };
			errno = (int)-r;
			return -2;
		}
		atomic_store(&clone3_missing, 1);
	}
#endif
	p->join = p->c->cgroup_fd > 2;
	return clone(clone_child, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, p);
}

/*
 * Start the child in its cgroup, or one that makes its own mark: as
 * glibc's posix_spawn does, a clone that shares our memory until the child
 * execs (CLONE_VM | CLONE_VFORK), with our own child function
 * (clone_child). We resume once the child has exec'd or exited; a step
 * that failed is in plan.rep. The child's stack is mapped here with a
 * guard page below it, so an overflow faults instead of writing into our
 * memory.
 */
static int spawn_clone(struct tq_child *c, const char *path, char *const *envp,
	char *mark, int in_r, int out_w, int err_w, pid_t *pid, struct tq_err *err)
{
	struct clone_plan p = { .c = c, .path = path, .envp = envp, .in_r = in_r,
				.out_w = out_w, .err_w = err_w, .mark = mark,
				.mark_size = TQ_SPAWN_MARK_MAX };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	sigset_t all, old;
	char *stack;
	int e, st;

	stack = mmap(NULL, page + TQ_SPAWN_CLONE_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return tq_err_sys(err, "mmap a stack to start \"%s\"", prog(c));
	if (mprotect(stack, page, PROT_NONE) < 0) {
		e = tq_err_sys(err, "mprotect a stack guard to start \"%s\"", prog(c));
		munmap(stack, page + TQ_SPAWN_CLONE_STACK);
		return e;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (c->flags & TQ_SPAWN_KEEP_SIGMASK)
		p.mask = old;
	else
		sigemptyset(&p.mask);
	*pid = clone_into(&p, stack + page, TQ_SPAWN_CLONE_STACK);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, page + TQ_SPAWN_CLONE_STACK);
	if (*pid == -2) {
		*pid = -1;
		c->join_failed = 1;
		return child_failed(c, &p.rep, err);
	}
	if (*pid < 0) {
		errno = e;
		return e == EAGAIN || e == ENOMEM ? fail_on(err, e, "clone", prog(c))
						  : tq_err_sys(err, "clone for \"%s\"", prog(c));
	}
	if (p.rep.err == 0)
		return 0;
	tq_waitpid(*pid, &st, 0);
	*pid = -1;
	c->join_failed = p.rep.step == STEP_CGROUP;
	return child_failed(c, &p.rep, err);
}

/*
 * Every child but a pty's: stdin /dev/null or a pipe and stdout/stderr
 * pipes, or the three inherited or on /dev/null. posix_spawn; the clone
 * path for a child in a cgroup or one that makes its own mark (mark, not
 * NULL), which posix_spawn cannot do.
 */
static int spawn_std(struct tq_child *c, const char *path,
	char *const *envp, char *mark, struct tq_err *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int have_fa = 0, have_at = 0;
	pid_t pid;
	int rc, e;

	if (c->in == TQ_SPAWN_STDIN_PIPE &&
	    (rc = open_pipe(in, 1, "stdin", err)))
		goto out;
	if (has_pipes(c)) {
		if ((rc = open_pipe(out, 0, "stdout", err)) ||
		    (rc = open_pipe(er, 0, "stderr", err)))
			goto out;
		size_pipe(out[0], c->pipe_size);
		size_pipe(er[0], c->pipe_size);
	}
	if ((e = posix_spawnattr_init(&at)) == 0)
		have_at = 1;
	if (e == 0 && (e = posix_spawn_file_actions_init(&fa)) == 0)
		have_fa = 1;
	if (e == 0 && (e = build_attr(&at, c)) == 0)
		e = build_actions(&fa, c, in[0], out[1], er[1]);
	if (e) {
		errno = e;
		rc = tq_err_sys(err, "posix_spawn setup for \"%s\"", prog(c));
		goto out;
	}
	if (c->cgroup_fd > 2 || mark != NULL) {
		if ((rc = spawn_clone(c, path, envp, mark, in[0], out[1], er[1], &pid,
				      err)) < 0)
			goto out;
	} else if ((e = posix_spawn(&pid, path, &fa, &at, c->argv, envp))) {
		rc = spawn_failed(c, e, err);
		goto out;
	}
	c->pid = pid;
	c->in_fd = take_fd(&in[1]);
	c->out_fd = take_fd(&out[0]);
	c->err_fd = take_fd(&er[0]);
	rc = 0;
out:
	if (have_fa)
		posix_spawn_file_actions_destroy(&fa);
	if (have_at)
		posix_spawnattr_destroy(&at);
	close_pair(in);
	close_pair(out);
	close_pair(er);
	return rc;
}

/*
 * A new pty: master O_CLOEXEC | O_NONBLOCK, slave O_CLOEXEC, both opened
 * with CLOEXEC at creation (openpty(3) cannot do that, hence posix_openpt
 * and TIOCGPTPEER, which also avoids a lookup of the slave by name).
 */
static int open_pty(int *master, int *slave, struct tq_err *err)
{
	struct winsize ws = { .ws_row = TQ_SPAWN_PTY_ROWS,
		.ws_col = TQ_SPAWN_PTY_COLS };
	int m, s = -1, rc;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (m < 0)
		return tq_err_sys(err, "posix_openpt /dev/ptmx");
	if (unlockpt(m) < 0) {
		rc = tq_err_sys(err, "unlockpt /dev/ptmx");
		goto fail;
	}
	s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		rc = tq_err_sys(err, "ioctl TIOCGPTPEER");
		goto fail;
	}
	if (m <= 2 || s <= 2) {
		rc = tq_err_set(err, TQ_EINVAL,
			"spawn: fds 0-2 must be open in the caller");
		goto fail;
	}
	if (ioctl(s, TIOCSWINSZ, &ws) < 0) {
		rc = tq_err_sys(err, "ioctl TIOCSWINSZ");
		goto fail;
	}
	*master = m;
	*slave = s;
	return 0;
fail:
	tq_close(s);
	tq_close(m);
	return rc;
}

/*
 * In the forked child: only async-signal-safe calls from here on (the parent
 * may have other threads holding malloc or stdio locks). Every signal is
 * blocked on entry (the parent blocked them around fork, so none of the
 * parent's handlers can run in this copy); dispositions are reset before the
 * mask is emptied. Never returns.
 */
static void pty_child(const struct tq_child *c, const char *path,
	char *const *envp, char *mark, int slave, int report, const sigset_t *mask)
{
	struct child_report rep;
	int fd;

	/* First, before anything can fork: into the task's group. */
	rep.step = STEP_CGROUP;
	if (c->cgroup_fd > 2 && ((fd = tq_openat(c->cgroup_fd, "cgroup.procs", O_WRONLY, 0)) < 0 ||
				 tq_write_all(fd, "0", 1) < 0))
		goto fail;
	rep.step = STEP_SETSID;
	if (setsid() < 0)
		goto fail;
	rep.step = STEP_SETCTTY;
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		goto fail;
	rep.step = STEP_DUP2;
	if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
		goto fail;
	rep.step = STEP_CHDIR;
	if (c->cwd != NULL && chdir(c->cwd) < 0)
		goto fail;
	child_signals(c->sigdefault);
	if (mark != NULL) /* our own copy of the buffer, which envp points to */
		tq_proc_self_mark(mark, TQ_SPAWN_MARK_MAX);
	/* Mark, not close, fds >= 3: the report pipe must live until exec. */
	rep.step = STEP_CLOSE;
	if (!(c->flags & TQ_SPAWN_KEEP_FDS) && close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		goto fail;
	sigprocmask(SIG_SETMASK, mask, NULL);
	rep.step = STEP_EXEC;
	execve(path, c->argv, envp);
fail:
	rep.err = errno;
	tq_write_all(report, &rep, sizeof(rep));
	_exit(127);
}

/* The parent's view of a failed child: name its step. */
static int child_failed(const struct tq_child *c, struct child_report *rep,
	struct tq_err *err)
{
	static const char *const names[] = {
		[STEP_CGROUP] = "join its cgroup", [STEP_SETSID] = "setsid",
		[STEP_SETCTTY] = "ioctl TIOCSCTTY", [STEP_DUP2] = "dup2",
		[STEP_CLOSE] = "close_range",
	};

	if (rep->step == STEP_CHDIR)
		return fail_on(err, rep->err, "chdir", c->cwd);
	if (rep->step == STEP_EXEC)
		return fail_on(err, rep->err, "exec", prog(c));
	if (rep->step < STEP_CGROUP || rep->step > STEP_EXEC)
		return tq_err_set(err, TQ_EIO, "spawn \"%s\": bad report from child",
			prog(c));
	errno = rep->err;
	return tq_err_sys(err, "spawn \"%s\": %s in the child", prog(c),
		names[rep->step]);
}

/*
 * The fork path for a pty. Signals are blocked around fork so that no
 * handler of ours runs in the child before it resets them. The parent reads
 * the report pipe: EOF means exec succeeded (the pipe closed on exec), a
 * report means a step failed, and the child (which _exit(127)s) is reaped.
 */
static int spawn_pty(struct tq_child *c, const char *path, char *const *envp,
	char *mark, struct tq_err *err)
{
	int master = -1, slave = -1, report[2] = { -1, -1 };
	struct child_report rep;
	sigset_t all, none, old;
	ssize_t n;
	pid_t pid;
	int rc, st;

	if ((rc = open_pty(&master, &slave, err)))
		return rc;
	if (pipe2(report, O_CLOEXEC) < 0) {
		rc = tq_err_sys(err, "pipe2 for the exec report");
		goto out;
	}
	sigfillset(&all);
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		pty_child(c, path, envp, mark, slave, report[1],
			  c->flags & TQ_SPAWN_KEEP_SIGMASK ? &old : &none);
	if (pid < 0)
		rc = tq_err_sys(err, "fork for \"%s\"", prog(c));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		goto out;
	tq_close(report[1]);
	report[1] = -1;
	n = tq_read_full(report[0], &rep, sizeof(rep));
	if (n == 0) {
		c->pid = pid;
		c->out_fd = take_fd(&master);
		rc = 0;
		goto out;
	}
	if (n == (ssize_t)sizeof(rep)) {
		c->join_failed = rep.step == STEP_CGROUP;
		rc = child_failed(c, &rep, err);
	} else {
		if (n > 0)
			errno = EIO; /* a torn report */
		rc = tq_err_sys(err, "read exec report of \"%s\"", prog(c));
	}
	tq_waitpid(pid, &st, 0);
out:
	close_pair(report);
	tq_close(slave);
	tq_close(master);
	return rc;
}

/*
 * TQ_SPAWN_MARK_SELF: envp without its TASKQ_WORKER_PROC entries, plus
 * mark, which the child fills in before its exec. *out is malloc'd.
 */
static int mark_env(char *const *envp, char *mark, char ***out, struct tq_err *err)
{
	static const char var[] = TQ_WORKER_MARK_VAR "=";
	size_t n = 0, k = 0;
	char **v;

	while (envp[n] != NULL)
		n++;
	if ((v = reallocarray(NULL, n + 2, sizeof(*v))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "spawn: out of memory");
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], var, sizeof(var) - 1) != 0)
			v[k++] = envp[i];
	mark[0] = '\0';
	v[k++] = mark;
	v[k] = NULL;
	*out = v;
	return 0;
}

int tq_spawn_start(struct tq_child *c, struct tq_err *err)
{
	char path[PATH_MAX], mark[TQ_SPAWN_MARK_MAX], **marked = NULL;
	char *const *envp = c->envp ? c->envp : empty_env;
	char *want_mark = NULL;
	mode_t old;
	int rc, e;

	c->pid = -1;
	c->in_fd = c->out_fd = c->err_fd = -1;
	c->join_failed = 0;
	if (c->argv == NULL || c->argv[0] == NULL)
		return tq_err_set(err, TQ_EINVAL, "spawn: empty argv");
	if (c->in == TQ_SPAWN_STDIN_PTY && (c->flags & TQ_SPAWN_KEEP_SESSION))
		return tq_err_set(err, TQ_EINVAL,
			"spawn \"%s\": a terminal needs a session of its own", prog(c));
	/* The cwd first: a relative command is looked up inside it. */
	if (c->cwd != NULL && (e = check_cwd(c->cwd)))
		return fail_on(err, e, "chdir", c->cwd);
	if ((rc = resolve_exe(c, envp, path, sizeof(path), err)))
		return rc;
	if (c->flags & TQ_SPAWN_MARK_SELF) {
		if ((rc = mark_env(envp, mark, &marked, err)) < 0)
			return rc;
		envp = marked;
		want_mark = mark;
	}
	/*
	 * The umask: posix_spawn has no attribute for it, and a file action
	 * cannot set it. The child copies ours when it is cloned (posix_spawn
	 * clones without CLONE_FS, so it shares no fs struct with us; the pty
	 * path forks), so ours is set to it for the spawn and put back: two
	 * system calls, against the fork path (slower the larger the worker)
	 * or an exec shim. Safe because the caller has one thread (spawn.h).
	 */
	old = c->umask >= 0 ? umask((mode_t)(c->umask & 0777)) : 0;
	if (c->in == TQ_SPAWN_STDIN_PTY)
		rc = spawn_pty(c, path, envp, want_mark, err);
	else
		rc = spawn_std(c, path, envp, want_mark, err);
	if (c->umask >= 0)
		umask(old);
	e = errno;
	free(marked);
	errno = e;
	return rc;
}

int tq_spawn_wait(struct tq_child *c, int *status, struct tq_err *err)
{
	if (c->pid <= 0)
		return tq_err_set(err, TQ_EINVAL, "spawn wait: no child");
	if (tq_waitpid(c->pid, status, 0) < 0)
		return tq_err_sys(err, "waitpid %ld", (long)c->pid);
	c->pid = -1;
	return 0;
}

int tq_spawn_detach(int *ready_fd, struct tq_err *err)
{
	int fds[2];
	char c = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return tq_err_sys(err, "pipe2");
	/* what stdio holds is written once, by the parent, not twice */
	fflush(NULL);
	if ((pid = fork()) < 0) {
		int rc = tq_err_sys(err, "fork");
		close_pair(fds);
		return rc;
	}
	if (pid > 0) {
		tq_close(fds[1]);
		if (tq_read_full(fds[0], &c, 1) != 1)
			c = 0;
		_exit(c == 'R' ? 0 : 1);
	}
	tq_close(fds[0]);
	*ready_fd = fds[1];
	if (setsid() < 0)
		return tq_err_sys(err, "setsid");
	/* Hold no directory busy (an unmount); the caller's paths are absolute. */
	if (chdir("/") < 0)
		return tq_err_sys(err, "chdir /");
	return 0;
}

void tq_spawn_release(struct tq_child *c)
{
	tq_close(c->in_fd);
	tq_close(c->out_fd);
	tq_close(c->err_fd);
	c->in_fd = c->out_fd = c->err_fd = -1;
}

/*
 * spawn.c - start a process (see spawn.h for the contract): every fork and
 * exec of taskq is here.
 *
 * Two paths, one entry point. Pipes, /dev/null or the caller's streams: a
 * clone that shares our memory until the child execs (CLONE_VM |
 * CLONE_VFORK, as glibc's posix_spawn clones), into the task's cgroup when
 * it has one (clone3), with a child function of our own that does the
 * steps the caller asks for (spawn_clone, clone_child): the session, the
 * streams, the cwd, the signals, the mark, close_range(2), the exec. A pty:
 * a controlling terminal cannot be had without a fork of our own, so one
 * fork path does what it does by hand, with only async-signal-safe calls in
 * the child and the child's errno sent back over a CLOEXEC pipe. Beside
 * them, tq_spawn_detach: the daemon's fork of itself, which execs nothing.
 *
 * Why a clone with CLONE_VM | CLONE_VFORK: no page tables are copied and
 * the cost does not grow with the parent. Measured on the 2-vCPU Debian 12
 * VM (glibc 2.36), start + waitpid of /bin/true, 1000 in a row, 6 rounds
 * on a shared, noisy machine; best round / median:
 *                                     small parent      512 MB parent
 *   tq_spawn_start, pipes             582/s / 440/s     523/s / 212/s
 *   bare posix_spawn + SETSID         572/s / 530/s     534/s / 487/s
 *   fork + setsid + execve            451/s / 212/s      76/s /  60/s
 *   tq_spawn_start, pty (fork path)   372/s / 203/s     107/s /  61/s
 * (tq_spawn_start's pipes row was glibc's posix_spawn with our file
 * actions, which costs what a bare one does.) So the fork path is for
 * --pty only.
 *
 * Why not glibc's posix_spawn, which the clone path once was for a child
 * outside a cgroup: its child makes a system call for every signal, 64
 * rt_sigaction (SETSIGDEF with every signal; with a smaller set it asks
 * each one's disposition first: 122), whatever the parent's dispositions,
 * and each file action calls sysconf(_SC_OPEN_MAX), a getrlimit (7 a
 * task). Our child resets only the signals the parent ignores or catches,
 * which the kernel lists in /proc/self/status (SigIgn, SigCgt; read at
 * every spawn, so a disposition changed since is never missed): a worker's
 * two (SIGPIPE, SIGXFSZ). strace -f -c of a drain of 300 `true`, 2
 * workers, per task: rt_sigaction 62.4 -> 2.4, prlimit64 7.0 -> 0.
 *
 * Exec failure comes back as an error, never as exit status 127: the child
 * reports the step that failed and its errno in memory it shares with us
 * (struct clone_plan), or over a pipe on the fork path. The cwd is checked
 * here only when the program is not found (a relative one is looked up in
 * it), so that the message names the cwd; else the child's chdir does. The program
 * (argv[0], or exe) is resolved here, by taskq's one PATH search
 * (search_path), against the child's PATH rather than the caller's.
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
	if (pipe2(p, O_CLOEXEC) < 0)
		return tq_err_sys(err, "pipe2 for %s", what);
	if (p[0] <= 2 || p[1] <= 2) {
		close_pair(p);
		return tq_err_set(err, TQ_EINVAL,
			"spawn: fds 0-2 must be open in the caller");
	}
	/* A new pipe's end has no status flag to keep (F_SETFL changes only
	 * O_APPEND, O_ASYNC, O_DIRECT, O_NOATIME and O_NONBLOCK): no F_GETFL
	 * first. */
	if (fcntl(p[mine], F_SETFL, O_NONBLOCK) < 0) {
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

/* Whether c's stdout and stderr are pipes to the caller (a task's). */
static int has_pipes(const struct tq_child *c)
{
	return c->in == TQ_SPAWN_STDIN_NULL || c->in == TQ_SPAWN_STDIN_PIPE;
}

/* The bit of signal sig (1..64) in a mask as /proc's SigIgn and SigCgt
 * write it, and as struct clone_plan keeps it. */
#define SIG_BIT(sig) (UINT64_C(1) << ((sig) - 1))

/* "SigIgn:\t0000000000001000\n": the hex after name, or 0 when name is not
 * at line starts of buf or has no hex digits (*ok cleared). */
static uint64_t status_mask(const char *buf, const char *name, int *ok)
{
	const char *p = strstr(buf, name);
	uint64_t v = 0;
	int digits = 0;

	if (p == NULL || (p != buf && p[-1] != '\n')) {
		*ok = 0;
		return 0;
	}
	for (p += strlen(name); *p == '\t' || *p == ' '; p++)
		;
	for (; digits < 16; p++, digits++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
	}
	if (digits == 0)
		*ok = 0;
	return v;
}

/*
 * The signals whose disposition in this process is not the default, as
 * the kernel says in /proc/self/status: *ign those ignored, *cgt those
 * caught. Read at every spawn (three system calls), so a disposition set
 * since the last one, or inherited, is never missed. Where /proc cannot be
 * read, every signal (*cgt all ones): the child then resets all of them,
 * as it always did.
 */
static void nondefault_signals(uint64_t *ign, uint64_t *cgt)
{
	char buf[TQ_SPAWN_STATUS_MAX];
	ssize_t n = -1;
	int fd, ok = 1;

	if ((fd = tq_open("/proc/self/status", O_RDONLY, 0)) >= 0) {
		/* one read: /proc makes the file whole for it (its first
		 * lines are all we need: a shorter read is the fallback) */
		n = tq_read(fd, buf, sizeof(buf) - 1);
		tq_close(fd);
	}
	if (n > 0) {
		buf[n] = '\0';
		*ign = status_mask(buf, "SigIgn:", &ok);
		*cgt = status_mask(buf, "SigCgt:", &ok);
		if (ok)
			return;
	}
	*ign = 0;
	*cgt = ~UINT64_C(0);
}

/*
 * The signals the child must set to their default: those of sigdefault
 * (NULL: every one) that are not already at it here, and every caught one
 * (our handlers must never run in a child that shares our memory, and exec
 * would reset them anyway).
 */
static uint64_t signals_to_reset(const sigset_t *sigdefault)
{
	uint64_t ign, cgt, want = 0;

	nondefault_signals(&ign, &cgt);
	if (sigdefault == NULL)
		return ign | cgt;
	for (int sig = 1; sig <= 64 && sig < NSIG; sig++)
		if (sigismember(sigdefault, sig) == 1)
			want |= SIG_BIT(sig);
	return (want & ign) | cgt;
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
	uint64_t reset;            /* signals to set to their default (SIG_BIT) */
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

/* In a child: the standard streams as c->in asks (stdin, the two pipes
 * onto 1 and 2; or /dev/null; or nothing, inherited). */
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
 * In a child, every signal blocked: the signals of reset (signals_to_reset)
 * to their default; every other one is at it already. SIGKILL, SIGSTOP and
 * glibc's internal signals (32, 33) refuse: harmless.
 */
static void child_signals(uint64_t reset)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	for (int sig = 1; reset != 0 && sig <= 64 && sig < NSIG; sig++)
		if (reset & SIG_BIT(sig)) {
			sigaction(sig, &dfl, NULL);
			reset &= ~SIG_BIT(sig);
		}
}

/*
 * The cloned child: it shares our memory and runs on its own stack until
 * its exec, like posix_spawn's child, so only async-signal-safe calls and
 * no writes to memory but plan->rep and plan->mark. Every signal is
 * blocked on entry (the parent blocked them around the clone);
 * dispositions are reset before the mask is set. Does what c's fields and
 * flags ask, and makes the mark. Never returns.
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
	/* Ours: the clone has no CLONE_FS, so our umask stays the parent's. */
	if (p->c->umask >= 0)
		umask((mode_t)(p->c->umask & 0777));
	child_signals(p->reset);
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
 * that failed is in plan.rep. The child's stack is mapped with a guard
 * page below it, so an overflow faults instead of writing into our memory;
 * once, and kept for every later child (it is ours again when clone
 * returns): three system calls a spawn fewer (mmap, mprotect, munmap).
 */
static int spawn_clone(struct tq_child *c, const char *path, char *const *envp,
	char *mark, int in_r, int out_w, int err_w, pid_t *pid, struct tq_err *err)
{
	struct clone_plan p = { .c = c, .path = path, .envp = envp, .in_r = in_r,
				.out_w = out_w, .err_w = err_w, .mark = mark,
				.mark_size = TQ_SPAWN_MARK_MAX };
	static char *stack;        /* the guard page, then the stack */
	static size_t page;
	sigset_t all, old;
	int e, st;

	if (stack == NULL) {
		char *s;

		page = (size_t)sysconf(_SC_PAGESIZE);
		s = mmap(NULL, page + TQ_SPAWN_CLONE_STACK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (s == MAP_FAILED)
			return tq_err_sys(err, "mmap a stack to start \"%s\"", prog(c));
		if (mprotect(s, page, PROT_NONE) < 0) {
			e = tq_err_sys(err, "mprotect a stack guard to start \"%s\"", prog(c));
			munmap(s, page + TQ_SPAWN_CLONE_STACK);
			return e;
		}
		stack = s;
	}
	p.reset = signals_to_reset(c->sigdefault);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (c->flags & TQ_SPAWN_KEEP_SIGMASK)
		p.mask = old;
	else
		sigemptyset(&p.mask);
	*pid = clone_into(&p, stack + page, TQ_SPAWN_CLONE_STACK);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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
 * pipes, or the three inherited or on /dev/null; by the clone path.
 */
static int spawn_std(struct tq_child *c, const char *path,
	char *const *envp, char *mark, struct tq_err *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	pid_t pid = -1;
	int rc;

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
	if ((rc = spawn_clone(c, path, envp, mark, in[0], out[1], er[1], &pid, err)) < 0)
		goto out;
	c->pid = pid;
	c->in_fd = take_fd(&in[1]);
	c->out_fd = take_fd(&out[0]);
	c->err_fd = take_fd(&er[0]);
	rc = 0;
out:
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
	char *const *envp, char *mark, int slave, int report, const sigset_t *mask,
	uint64_t reset)
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
	if (c->umask >= 0)
		umask((mode_t)(c->umask & 0777));
	child_signals(reset);
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
	uint64_t reset;
	ssize_t n;
	pid_t pid;
	int rc, st;

	if ((rc = open_pty(&master, &slave, err)))
		return rc;
	if (pipe2(report, O_CLOEXEC) < 0) {
		rc = tq_err_sys(err, "pipe2 for the exec report");
		goto out;
	}
	reset = signals_to_reset(c->sigdefault);
	sigfillset(&all);
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		pty_child(c, path, envp, mark, slave, report[1],
			  c->flags & TQ_SPAWN_KEEP_SIGMASK ? &old : &none, reset);
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
	int rc, e;

	c->pid = -1;
	c->in_fd = c->out_fd = c->err_fd = -1;
	c->join_failed = 0;
	if (c->argv == NULL || c->argv[0] == NULL)
		return tq_err_set(err, TQ_EINVAL, "spawn: empty argv");
	if (c->in == TQ_SPAWN_STDIN_PTY && (c->flags & TQ_SPAWN_KEEP_SESSION))
		return tq_err_set(err, TQ_EINVAL,
			"spawn \"%s\": a terminal needs a session of its own", prog(c));
	/* A relative command is looked up inside the cwd, so a cwd that is
	 * not there is said first when the command is not found; when it is
	 * found, the child's chdir says so, with the same message (two
	 * system calls a task fewer: stat and access of the cwd). */
	if ((rc = resolve_exe(c, envp, path, sizeof(path), err))) {
		if (c->cwd != NULL && (e = check_cwd(c->cwd)))
			return fail_on(err, e, "chdir", c->cwd);
		return rc;
	}
	if (c->flags & TQ_SPAWN_MARK_SELF) {
		if ((rc = mark_env(envp, mark, &marked, err)) < 0)
			return rc;
		envp = marked;
		want_mark = mark;
	}
	if (c->in == TQ_SPAWN_STDIN_PTY)
		rc = spawn_pty(c, path, envp, want_mark, err);
	else
		rc = spawn_std(c, path, envp, want_mark, err);
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

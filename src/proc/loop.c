/*
 * loop.c - the event loop over a signalfd and descriptors (see loop.h).
 *
 * What it does not do: decide anything. Which descriptors, which deadline,
 * what a signal means and what follows a child's exit are the caller's; this
 * file owns the mechanics every loop repeated: the poll with an absolute
 * deadline, EINTR, the signalfd read until it is empty, and reaping every child
 * at SIGCHLD.
 *
 * Invariant: a turn never blocks anywhere but in its one poll.
 */
#include "loop.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/sys.h"
#include "proc.h"

int tq_loop_sigfd_open(const int *sigs, size_t n, sigset_t *old, struct tq_err *err)
{
	sigset_t set, was;
	int fd;

	sigemptyset(&set);
	for (size_t i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, &was) < 0)
		return tq_err_sys(err, "sigprocmask");
	if ((fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		int rc = tq_err_sys(err, "signalfd");
		sigprocmask(SIG_SETMASK, &was, NULL);
		return rc;
	}
	if (old != NULL)
		*old = was;
	return fd;
}

void tq_loop_sigfd_close(int fd, const sigset_t *old)
{
	tq_close(fd);
	if (old != NULL)
		sigprocmask(SIG_SETMASK, old, NULL);
}

int tq_loop_timeout(int64_t deadline, int64_t now)
{
	if (deadline == TQ_LOOP_NEVER)
		return -1;
	if (deadline <= now)
		return 0;
	return deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
}

/* Signals read from the signalfd in one read(2): a read returns every
 * record pending that fits, so one that returns fewer has emptied it,
 * and a turn takes no second read only to see EAGAIN (a system call a
 * task in a worker, after its SIGCHLD). */
#define SIGFD_BATCH 8

int tq_loop_signals(const struct tq_loop *l, struct tq_err *err)
{
	struct signalfd_siginfo si[SIGFD_BATCH];
	ssize_t got;
	int rc = 0, r;

	if (l->sigfd < 0)
		return 0;
	do {
		size_t n;

		if ((got = tq_read(l->sigfd, si, sizeof(si))) < 0)
			break;
		n = (size_t)got / sizeof(si[0]);
		for (size_t i = 0; i < n; i++) {
			/* one SIGCHLD may stand for several children: reap
			 * them all */
			if (si[i].ssi_signo == SIGCHLD &&
			    (r = tq_proc_reap(l->on_child, l->arg, err)) < 0) {
				tq_err_prefix(err, "reap");
				rc = r;
			}
			if (l->on_signal != NULL)
				l->on_signal(&si[i], l->arg);
		}
	} while (got == (ssize_t)sizeof(si));
	/* EAGAIN: read empty. A signalfd reads whole records or nothing. */
	if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && rc == 0)
		rc = tq_err_sys(err, "read signalfd");
	return rc;
}

/*
 * poll(2) of all n entries. poll refuses (EINVAL) more entries than
 * RLIMIT_NOFILE's soft limit, which can be lowered under a running process
 * below the descriptors it holds (prlimit): the supervisor then never read
 * its signals again, and a shutdown never ended. Then the set is polled in
 * slices the limit allows: each without waiting, and if none is ready the
 * first (the signalfd and the caller's first descriptors) for at most
 * SPLIT_WAIT_MS of the timeout, so that the others are looked at again
 * soon. Returns as poll does.
 */
#define SPLIT_WAIT_MS 100

static int poll_split(struct pollfd *all, size_t n, int timeout)
{
	struct rlimit rl;
	size_t lim;
	int ready = 0, r;

	if ((r = poll(all, (nfds_t)n, timeout)) >= 0 || errno != EINVAL)
		return r;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= n) {
		errno = EINVAL;
		return -1;
	}
	if ((lim = (size_t)rl.rlim_cur) == 0) { /* not even one: wait, blind */
		tq_sleep_ms(timeout < 0 || timeout > SPLIT_WAIT_MS ? SPLIT_WAIT_MS : timeout);
		return 0;
	}
	for (size_t off = 0; off < n; off += lim) {
		if ((r = poll(all + off, (nfds_t)(n - off < lim ? n - off : lim), 0)) < 0)
			return r;
		ready += r;
	}
	if (ready > 0 || timeout == 0)
		return ready;
	return poll(all, (nfds_t)lim, timeout < 0 || timeout > SPLIT_WAIT_MS ?
		    SPLIT_WAIT_MS : timeout);
}

/* The descriptors' callbacks, in their order. */
static void dispatch(const struct pollfd *p, const struct tq_loop_cb *cb, size_t n)
{
	for (size_t i = 0; cb != NULL && i < n; i++)
		if (p[i].revents != 0 && p[i].fd >= 0 && cb[i].fn != NULL)
			cb[i].fn(cb[i].arg, p[i].revents);
}

int tq_loop_wait(const struct tq_loop *l, struct pollfd *p, const struct tq_loop_cb *cb,
	size_t n, int64_t deadline, struct tq_err *err)
{
	struct pollfd all[1 + TQ_LOOP_FD_MAX];
	int sig_ready, rc = 0;

	if (n > TQ_LOOP_FD_MAX)
		return tq_err_set(err, TQ_EINVAL, "event loop: %zu descriptors (at most %d)",
				  n, TQ_LOOP_FD_MAX);
	/* the signalfd first in poll's set; -1 (none) is skipped by poll */
	all[0] = (struct pollfd){ .fd = l->sigfd, .events = POLLIN };
	for (size_t i = 0; i < n; i++) {
		all[1 + i] = p[i];
		all[1 + i].revents = 0;
	}
	if (poll_split(all, 1 + n, tq_loop_timeout(deadline, tq_mono_ms())) < 0) {
		for (size_t i = 0; i < n; i++)
			p[i].revents = 0;
		if (errno == EINTR) /* a turn with nothing ready */
			return 0;
		rc = tq_err_sys(err, "poll");
		tq_sleep_ms(TQ_LOOP_POLL_ERROR_MS);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		p[i].revents = all[1 + i].revents;
	sig_ready = all[0].revents != 0;
	if (sig_ready && l->signals_first)
		rc = tq_loop_signals(l, err);
	dispatch(p, cb, n);
	if (sig_ready && !l->signals_first)
		rc = tq_loop_signals(l, err);
	return rc;
}

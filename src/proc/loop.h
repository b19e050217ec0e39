/*
 * loop.h - the one event loop of a taskq process: its signals, read from a
 * signalfd; its children, reaped when SIGCHLD says one ended; its
 * descriptors, each with its callback; and its timers, one absolute
 * CLOCK_MONOTONIC deadline (tq_mono_ms) that the caller computes from all of
 * them. Nothing waits anywhere else: no sleep, no blocking read, no handler
 * that does work (style rules 7 and 9).
 *
 * A process blocks the signals it handles and opens their signalfd once,
 * first thing (tq_loop_sigfd_open: no signal is lost between two steps of
 * its start), and then turns the loop: a worker idle, running a task, or
 * running an --on-exit hook (each its own struct tq_loop on the worker's one
 * signalfd), the supervisor, `ask --interactive` waiting for its agent.
 * (`log --follow` and `submit --wait` wait on a signalfd of their own, in
 * src/cli/follow.c, which takes the first signal only: see there.)
 *
 * Every turn, the loop (tq_loop_wait):
 *   - polls the signalfd and the caller's descriptors until one is ready or
 *     the deadline passes (poll's EINTR is a turn where nothing was ready);
 *   - calls the callback of each descriptor that is ready, in the caller's
 *     order, and reads every signal waiting (tq_loop_signals): after the
 *     descriptors, or before them with signals_first;
 *   - at each SIGCHLD, reaps every child that has exited (waitpid(-1,
 *     WNOHANG) until none: one SIGCHLD may stand for several), calling
 *     on_child for each, and only then on_signal with the SIGCHLD, so the
 *     caller acts on what was reaped;
 *   - calls on_signal for every other signal, in the order read.
 * What the caller does between two turns (its timers, its own fds without
 * a callback) it does after tq_loop_wait returns.
 *
 * Preconditions: the caller's SIGCHLD is not SIG_IGN (proc.h); it has no
 * child that another part of it waits for by pid (the loop reaps every
 * child: a task's leftovers are reparented to the worker, which is their
 * subreaper, and reaped here too).
 */
#ifndef TQ_LOOP_H
#define TQ_LOOP_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include "common/err.h"

/* A deadline that never comes: poll without a timeout. */
#define TQ_LOOP_NEVER INT64_MAX
/* Descriptors one wait watches, the signalfd aside (the supervisor's are
 * the most: a pidfd a worker it adopted, and the submit socket and its
 * connections). */
#define TQ_LOOP_FD_MAX 512
/* After poll itself failed (ENOMEM: the only error a valid set can get;
 * more entries than RLIMIT_NOFILE allows are polled in slices: loop.c),
 * the wait returns that error this long later, so that a loop which goes
 * on does not spin. */
#define TQ_LOOP_POLL_ERROR_MS 10

struct tq_loop {
	int sigfd;               /* tq_loop_sigfd_open; -1: no signals */
	int signals_first;       /* read the signals before the fds' callbacks */
	/* Each child reaped at a SIGCHLD; NULL: reaped all the same. */
	void (*on_child)(pid_t pid, int status, void *arg);
	/* Each signal read, SIGCHLD too (after its reaping); NULL: none. */
	void (*on_signal)(const struct signalfd_siginfo *si, void *arg);
	void *arg;               /* for both */
};

#define TQ_LOOP_INIT { .sigfd = -1, .signals_first = 0, .on_child = NULL, \
	.on_signal = NULL, .arg = NULL }

/* What to call when a descriptor is ready: fn(arg, its revents). */
struct tq_loop_cb {
	void (*fn)(void *arg, short revents);
	void *arg;
};

/*
 * Block the n signals sigs (SIG_BLOCK, adding to the caller's mask, which
 * *old gets when old is not NULL) and open a signalfd for them, O_CLOEXEC
 * and O_NONBLOCK. Call it before the steps whose signals must not be lost
 * (a spawn, a claim). Returns the fd, or TQ_EIO with err set and the mask
 * as it was. Does not touch any disposition (the caller ignores SIGPIPE
 * itself, if it wants).
 */
int tq_loop_sigfd_open(const int *sigs, size_t n, sigset_t *old, struct tq_err *err);

/* Close fd (if >= 0) and, when old is not NULL, put the mask back to *old.
 * A signal still pending then is delivered: read the signalfd empty
 * first (tq_loop_signals) if it must not be. */
void tq_loop_sigfd_close(int fd, const sigset_t *old);

/*
 * Read every signal waiting on l->sigfd (none: at once), reaping at each
 * SIGCHLD and calling l's callbacks as the header says. Returns 0; or a
 * TQ_E* code with err set ("reap: waitpid -1: ...", "read signalfd: ...")
 * once everything that could be read was.
 */
int tq_loop_signals(const struct tq_loop *l, struct tq_err *err);

/*
 * One turn: wait until l's signalfd or one of the n descriptors of p is
 * ready (an entry with fd < 0 is skipped, as poll does) or the monotonic
 * clock reaches deadline (ms; TQ_LOOP_NEVER: no timeout; a deadline passed
 * polls without waiting). Then cb[i].fn for each ready p[i] (cb may be
 * NULL, and so may cb[i].fn: the caller reads p[i].revents itself after
 * the call) and the signals, in l's order. n <= TQ_LOOP_FD_MAX. Returns 0;
 * or a TQ_E* code with err set: poll failed ("poll: ...", after
 * TQ_LOOP_POLL_ERROR_MS, with every revents 0), or reading the signals did
 * (the callbacks have run).
 */
int tq_loop_wait(const struct tq_loop *l, struct pollfd *p, const struct tq_loop_cb *cb,
	size_t n, int64_t deadline, struct tq_err *err);

/* The poll(2) timeout that waits from now until deadline (both monotonic
 * ms): 0 if it has passed, -1 for TQ_LOOP_NEVER, capped at INT_MAX. */
int tq_loop_timeout(int64_t deadline, int64_t now);

#endif

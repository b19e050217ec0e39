/*
 * warmsock.h - the warm socket, HOME/warm.sock: how a worker borrows a
 * warm agent process (issue 19) from the supervisor that holds it, and
 * gives it back.
 *
 * A warm agent process (one session's agent CLI in its stream-input mode,
 * kept alive between messages) is the supervisor's child: it outlives the
 * turns that workers run on it. A worker that claims a warm message dials
 * this socket and sends TAKE (the session, the task, and what to start
 * when no process is up: argv, environment, cwd); the supervisor answers
 * GIVE with the process's stdin, stdout and stderr pipes and a pidfd
 * (SCM_RIGHTS, received O_CLOEXEC), or REFUSE with a reason. The worker
 * runs the turn on the pipes and ends it with DONE (the turn ended, the
 * process is idle again) or END (end the process: it died, a kill found no
 * answer in time, the lease is lost), which the supervisor answers with
 * STATUS, the process's wait status, once it has reaped it.
 *
 * The connection is the lease on the process: one connection, one turn. A
 * connection that closes without DONE (its worker died mid-turn) makes the
 * supervisor end the process, so no process is ever left in a turn nobody
 * reads; the session's next message starts a new one that resumes.
 *
 * SOCK_SEQPACKET: each message arrives whole or not at all, so the
 * supervisor never keeps a partial frame per connection. A message is a
 * header and a payload of NUL-terminated strings, at most TQ_WARM_MSG_MAX
 * bytes in all. Only the socket's owner (SO_PEERCRED, our uid) is served.
 * Nothing here prints; errors are TQ_E* codes with struct tq_err.
 */
#ifndef TQ_WARMSOCK_H
#define TQ_WARMSOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define TQ_WARM_SOCKET "warm.sock"
#define TQ_WARM_MAGIC 0x31575154u      /* "TQW1" */
/* The largest message: a TAKE's argv and environment. The socket's send
 * buffer is asked for this much (the kernel may give less: then a larger
 * message fails with EMSGSIZE, said as such). */
#define TQ_WARM_MSG_MAX (192 * 1024)
#define TQ_WARM_FDS 4                  /* stdin, stdout, stderr, pidfd */
#define TQ_WARM_KEY_MAX 256            /* a session key (TQ_NAME_MAX fits) */
/* A process's protocol state between turns (what the last turn on it
 * left: its conversation's id), NUL included: DONE's payload, GIVE's. */
#define TQ_WARM_STATE_MAX 256

/* A TAKE's fingerprint of the command it would start, by part: the
 * supervisor keeps the one of what it started, and ends an idle process
 * whose command differs from a message's (a 64-bit FNV-1a of each part's
 * bytes: compared, never trusted). Zero: unknown, matches anything. */
enum tq_warm_fp {
	TQ_WARM_FP_MODEL,  /* the task's --model */
	TQ_WARM_FP_ARGS,   /* the agent and its command (MCP flags, args) */
	TQ_WARM_FP_ENV,    /* its environment */
	TQ_WARM_FP_CWD,    /* its working directory */
	TQ_WARM_FP_N
};

enum tq_warm_op {
	TQ_WARM_TAKE = 1,  /* worker: lend me the session's process */
	TQ_WARM_GIVE,      /* supervisor: here it is (fds attached; payload:
			    * the state its last turn left, "" when new) */
	TQ_WARM_REFUSE,    /* supervisor: cannot (payload: why) */
	TQ_WARM_DONE,      /* worker: the turn ended, the process is idle
			    * (payload: the state the turn leaves it in) */
	TQ_WARM_END,       /* worker: end the process; answer STATUS */
	TQ_WARM_STATUS,    /* supervisor: it is reaped (status) */
};

struct tq_warm_hdr {
	uint32_t magic;
	uint32_t op;           /* enum tq_warm_op */
	int64_t task;          /* TAKE: the message's task and attempt */
	int32_t attempt;
	int32_t pid;           /* GIVE: the process; TAKE: the worker's pid */
	int64_t start;         /* GIVE: its start time (tq_proc_start_time) */
	int32_t status;        /* STATUS: wait status; GIVE: 1 when just started */
	int32_t umask;         /* TAKE: the process's umask, -1: the supervisor's */
	int64_t grace_ms;      /* END: TERM to KILL (ms), -1: the default */
	int64_t idle_ms;       /* TAKE: the session's idle timeout, 0: default */
	uint32_t argc;         /* TAKE: strings in the payload: key, cwd, then */
	uint32_t envc;         /* argc argv strings, then envc env strings */
	uint64_t fp[TQ_WARM_FP_N]; /* TAKE: the command's fingerprint */
};

/* Listen on HOME/warm.sock (non-blocking, CLOEXEC), replacing a stale
 * socket file (the caller holds the supervisor's lock). *fd on success. */
int tq_warmsock_listen(const char *home, int *fd, struct tq_err *err);

/* Remove HOME/warm.sock (the supervisor at its stop). */
void tq_warmsock_unlink(const char *home);

/* Accept one connection from lfd, non-blocking and CLOEXEC, if it is our
 * uid's: *fd, or -1 when none waits (or one from another uid was closed). */
int tq_warmsock_accept(int lfd, int *fd, struct tq_err *err);

/* Connect to HOME/warm.sock: a blocking CLOEXEC socket in *fd. TQ_ENOTFOUND
 * when no supervisor listens. */
int tq_warmsock_dial(const char *home, int *fd, struct tq_err *err);

/* Send one message: h (magic set here), len bytes of payload, nfds fds
 * (borrowed, still the caller's after). */
int tq_warmsock_send(int fd, struct tq_warm_hdr *h, const void *payload, size_t len,
		     const int *fds, int nfds, struct tq_err *err);

/*
 * Receive one message into h and payload (cap bytes; *len its length, the
 * payload NUL-terminated within cap), the fds attached into fds (up to
 * TQ_WARM_FDS, *nfds of them, owned by the caller, CLOEXEC). Returns 0, 1
 * at EOF (the peer closed), TQ_EBUSY when a non-blocking socket has
 * nothing yet, or an error (a bad magic, a truncated message: TQ_EINVAL).
 */
int tq_warmsock_recv(int fd, struct tq_warm_hdr *h, char *payload, size_t cap, size_t *len,
		     int *fds, int *nfds, struct tq_err *err);

#endif

/*
 * submitd.h - the supervisor's submit socket (protocol: queue/wire.h).
 *
 * `taskq serve` listens on HOME/submit.sock and stores the specs clients
 * send on a durable, long-lived connection of its own, then rings the
 * doorbell so an idle worker starts the task at once. The supervisor is
 * single-threaded: each connection is served to the end (read with a
 * deadline, store, answer) when poll says the socket is readable.
 */
#ifndef TQ_SUBMITD_H
#define TQ_SUBMITD_H

#include "../common/err.h"

struct tq_submitd;

/*
 * Open the store (TQ_OPEN_DURABLE | TQ_OPEN_LONG) and listen on
 * home/TQ_WIRE_SOCKET (a stale socket file left by a dead supervisor is
 * replaced: the caller holds the supervisor lock, so no live one owns it).
 * The listening socket is non-blocking and close-on-exec, mode 0600.
 * Returns 0, or a tq_err code (the supervisor runs on without it: clients
 * then store their tasks themselves).
 */
int tq_submitd_open(struct tq_submitd **sd, const char *home, struct tq_err *err);

/* The listening fd, to poll for POLLIN; -1 for a second after accept
 * failed for want of fds or memory (poll skips a negative fd, and the
 * unaccepted backlog would otherwise wake it at once, for ever). */
int tq_submitd_fd(const struct tq_submitd *sd);

/*
 * Accept every pending connection and serve each: check the peer's uid,
 * read the request (deadline 1 s), decode, tq_queue_submit, answer, close.
 * A request wrong in itself (it does not decode, or the store refuses the
 * spec: TQ_EINVAL, TQ_ENOTFOUND, TQ_ESTATE, TQ_EEXIST) is answered with the
 * error the client would have got storing it. The supervisor's own trouble
 * (the store busy, full, failing; out of memory) is not answered: the
 * client then stores the task itself with the same token, exactly once
 * even if our commit landed. Problems are logged through log (may be
 * NULL); nothing here can stop the supervisor. A client that connects and
 * sends nothing holds it for the read deadline (1 s) at most.
 */
void tq_submitd_serve(struct tq_submitd *sd, void (*log)(const char *msg));

/* Stop listening: close the socket, unlink its file, close the store. */
void tq_submitd_close(struct tq_submitd *sd);

#endif

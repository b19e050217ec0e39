/*
 * submitd.h - the supervisor's submit socket (protocol: wire.h).
 *
 * `taskq serve` listens on HOME/submit.sock and stores the specs clients
 * send on a durable, long-lived connection of its own, then rings the
 * doorbell so an idle worker starts the task at once. The supervisor is
 * single-threaded and never waits on one client: its poll loop polls the
 * listening socket and every open connection (tq_submitd_poll), and
 * tq_submitd_serve reads what arrived, each connection into its own
 * buffer under its own deadline, and stores a request once it is whole.
 */
#ifndef TQ_SUBMITD_H
#define TQ_SUBMITD_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

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

/* Connections served at once. Past the bound the listening socket is not
 * polled: new connections wait in its backlog (64) until one closes, which
 * its deadline bounds; the first time, and then once a minute at most, a
 * line says so. A client that waits past its own deadline (~1 s) stores
 * its task itself. */
#define TQ_SUBMITD_CONN_MAX 64
#define TQ_SUBMITD_POLL_MAX (1 + TQ_SUBMITD_CONN_MAX)
/* From accept to the whole request. A client writes its request right
 * after connecting (it encodes it first), so one that takes longer has
 * stopped (Ctrl-Z at the wrong moment) or is not a taskq client; it is
 * closed, and a real client then stores its task itself with its token. */
#define TQ_SUBMITD_REQUEST_MS 1000

/*
 * Fill p (room for TQ_SUBMITD_POLL_MAX entries) with what to poll: the
 * listening socket (unless at the bound, or paused for a second after
 * accept failed for want of fds or memory: the unaccepted backlog would
 * otherwise wake poll at once, for ever) and each open connection, all for
 * POLLIN. Lowers *deadline (mono ms) to the earliest connection deadline
 * or the end of the pause. Returns how many entries it filled (0..).
 */
size_t tq_submitd_poll(struct tq_submitd *sd, struct pollfd *p, int64_t *deadline);

/*
 * After poll(2) over the n entries tq_submitd_poll filled (p as poll left
 * it): read what each ready connection sent; store each request that is
 * whole; close each connection past its deadline; accept new connections
 * and read at once what they sent (usually the whole request), up to the
 * bound. Per connection: check the peer's uid, read the request, decode,
 * tq_queue_submit, answer, close.
 *
 * A request wrong in itself (it does not decode, or the store refuses the
 * spec: TQ_EINVAL, TQ_ENOTFOUND, TQ_ESTATE, TQ_EEXIST) is answered with the
 * error the client would have got storing it. The supervisor's own trouble
 * (the store busy, full, failing; out of memory) is not answered: the
 * client then stores the task itself with the same token, exactly once
 * even if our commit landed. Problems are logged through log (may be
 * NULL); nothing here can stop the supervisor, and nothing waits on a
 * client: every read and write is non-blocking.
 */
void tq_submitd_serve(struct tq_submitd *sd, const struct pollfd *p, size_t n,
		      void (*log)(const char *msg));

/* Stop listening: close the socket and every open connection (their
 * clients store their tasks themselves), unlink its file, close the
 * store. */
void tq_submitd_close(struct tq_submitd *sd);

#endif

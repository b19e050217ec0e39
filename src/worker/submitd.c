/*
 * submitd.c - the supervisor's submit socket (see submitd.h; the protocol
 * is queue/wire.h, whose functions do all the framing here).
 *
 * Each connection is served to the end, one at a time: peer uid, request
 * (read with a deadline), decode, store, answer, close. The answer is sent
 * only after the commit, so "OK" always means stored.
 *
 * What is answered and what is not: a request that is wrong in itself (it
 * does not decode, or the store refuses the spec: a bad --after id, an
 * invalid name) gets "ERR", the same error the client would get storing it
 * itself. Trouble of the supervisor's own (out of memory, the store busy,
 * full or failing) gets no answer: the client then stores the task itself
 * with the same token, which is exactly-once even when our commit landed
 * and only its report failed, and reports the store's error if it is real.
 *
 * Invariants: nothing here exits or blocks past a deadline; every
 * connection is closed and every buffer freed on every path; one serve()
 * call handles at most SERVE_MAX connections and starts none after
 * SERVE_BUDGET_MS, so the supervisor's other duties are not starved.
 */
#include "submitd.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/sys.h"
#include "../queue/queue.h"
#include "../queue/wire.h"
#include "doorbell.h"

#define LISTEN_BACKLOG 64
/* A client writes its whole request right after connecting (it encodes it
 * first), so a request that takes longer to arrive is from a client that
 * stopped (Ctrl-Z at the wrong moment) or is not ours to wait for: while we
 * read, the supervisor does nothing else. A client dropped here stores its
 * task itself, with the same token, so a slow one loses only time. */
#define READ_DEADLINE_MS 1000   /* to read a request */
#define IO_DEADLINE_MS 5000     /* to send an answer (a few bytes) */
#define SERVE_MAX 64            /* connections per tq_submitd_serve call */
#define SERVE_BUDGET_MS 1000    /* no new connection after this long in one call */
#define PAUSE_MS 1000           /* accept failed for want of fds or memory */

struct tq_submitd {
	char home[PATH_MAX];
	struct sockaddr_un addr;
	int fd;
	int bound;                  /* we created addr.sun_path: unlink it */
	int64_t paused_until;       /* mono ms; 0: accepting */
	struct tq_queue *q;
};

static void note(void (*log)(const char *msg), const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One line "submit socket: ..." through log; control bytes (a message may
 * quote a client's data) become spaces. */
static void note(void (*log)(const char *msg), const char *fmt, ...)
{
	char line[TQ_ERR_MAX + 128];
	int off;
	va_list ap;

	if (log == NULL)
		return;
	off = snprintf(line, sizeof(line), "submit socket: ");
	va_start(ap, fmt);
	vsnprintf(line + off, sizeof(line) - (size_t)off, fmt, ap);
	va_end(ap);
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	log(line);
}

/* Bind and listen on sd->addr, replacing a stale socket file. */
static int listen_on(struct tq_submitd *sd, struct tq_err *err)
{
	const char *path = sd->addr.sun_path;
	struct stat sb;
	mode_t old;
	int rc;

	/* A socket file here is stale: the caller holds the supervisor lock,
	 * so no live supervisor listens on it. Anything else is not ours to
	 * remove. */
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			return tq_err_set(err, TQ_EEXIST, "%s exists and is not a socket", path);
		if (unlink(path) < 0 && errno != ENOENT)
			return tq_err_sys(err, "unlink stale %s", path);
	} else if (errno != ENOENT) {
		return tq_err_sys(err, "lstat %s", path);
	}
	sd->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sd->fd < 0)
		return tq_err_sys(err, "socket");
	/* The file's mode comes from the umask at bind (fchmod on a socket
	 * does not reach its file): 0600 from the start, never wider even for
	 * a moment. The supervisor is single-threaded, so the process-wide
	 * umask is ours to borrow. */
	old = umask(0177);
	rc = bind(sd->fd, (const struct sockaddr *)&sd->addr, sizeof(sd->addr));
	umask(old);
	if (rc < 0)
		return tq_err_sys(err, "bind %s", path);
	sd->bound = 1;
	if (listen(sd->fd, LISTEN_BACKLOG) < 0)
		return tq_err_sys(err, "listen %s", path);
	return 0;
}

int tq_submitd_open(struct tq_submitd **sdp, const char *home, struct tq_err *err)
{
	struct tq_submitd *sd;
	int r, rc;

	*sdp = NULL;
	if ((sd = calloc(1, sizeof(*sd))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	sd->fd = -1;
	sd->addr.sun_family = AF_UNIX;
	r = snprintf(sd->addr.sun_path, sizeof(sd->addr.sun_path), "%s/%s", home,
		     TQ_WIRE_SOCKET);
	if (r < 0 || (size_t)r >= sizeof(sd->addr.sun_path)) {
		rc = tq_err_set(err, TQ_EINVAL, "%s/%s: path longer than a socket's %zu bytes",
				home, TQ_WIRE_SOCKET, sizeof(sd->addr.sun_path) - 1);
		goto fail;
	}
	if ((size_t)snprintf(sd->home, sizeof(sd->home), "%s", home) >= sizeof(sd->home)) {
		rc = tq_err_set(err, TQ_EINVAL, "state directory path is too long");
		goto fail;
	}
	/* The store first: a socket nobody can serve must not exist. */
	if ((rc = tq_queue_open(&sd->q, home, TQ_OPEN_DURABLE | TQ_OPEN_LONG, err)) < 0)
		goto fail;
	if ((rc = listen_on(sd, err)) < 0)
		goto fail;
	*sdp = sd;
	return 0;
fail:
	tq_submitd_close(sd);
	return rc;
}

int tq_submitd_fd(const struct tq_submitd *sd)
{
	/* -1 while accepting is paused: poll ignores a negative fd, and a
	 * backlog we cannot accept (EMFILE) would otherwise wake it forever. */
	if (sd->paused_until != 0 && tq_mono_ms() < sd->paused_until)
		return -1;
	return sd->fd;
}

/* Errors of the spec itself, which the client storing it directly would
 * get too: answered. Anything else is the supervisor's trouble. */
static int spec_error(int code)
{
	return code == TQ_EINVAL || code == TQ_ENOTFOUND || code == TQ_ESTATE ||
	       code == TQ_EEXIST;
}

static int peer_ok(int c, void (*log)(const char *msg))
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		note(log, "SO_PEERCRED: %s", strerror(errno));
		return 0;
	}
	if (cr.uid != geteuid()) {
		note(log, "refused a connection from uid %u (pid %d)", (unsigned)cr.uid,
		     (int)cr.pid);
		return 0;
	}
	return 1;
}

/* Serve one accepted connection c (the caller closes it). */
static void serve_one(struct tq_submitd *sd, int c, void (*log)(const char *msg))
{
	struct tq_wire_spec w = { .argv = NULL };
	struct tq_err err = TQ_ERR_INIT;
	uint8_t *payload = NULL;
	size_t len = 0;
	int64_t id = 0;
	int existed = 0, rc;

	if (!peer_ok(c, log))
		return;
	rc = tq_wire_read_frame(c, "TQS1", tq_mono_ms() + READ_DEADLINE_MS, &payload, &len,
				&err);
	if (rc < 0) {
		/* A bad frame is worth telling the client about; a timeout or
		 * a client that went away has no one to tell. */
		note(log, "request: %s", err.msg);
		if (rc == TQ_EINVAL)
			tq_wire_answer_err(c, &err, tq_mono_ms() + IO_DEADLINE_MS);
		goto out;
	}
	if ((rc = tq_wire_decode(payload, len, &w, &err)) < 0) {
		note(log, "bad request: %s", err.msg);
		if (rc == TQ_EINVAL)
			tq_wire_answer_err(c, &err, tq_mono_ms() + IO_DEADLINE_MS);
		goto out;
	}
	if ((rc = tq_queue_submit(sd->q, &w.spec, &id, &existed, &err)) < 0) {
		if (spec_error(rc))
			tq_wire_answer_err(c, &err, tq_mono_ms() + IO_DEADLINE_MS);
		else
			note(log, "submit: %s (the client stores it itself)", err.msg);
		goto out;
	}
	if (tq_wire_answer_ok(c, id, existed, tq_mono_ms() + IO_DEADLINE_MS) < 0)
		note(log, "task %lld stored, but its client did not take the answer",
		     (long long)id);
	/* A token already stored (the client's retry) rings once more for
	 * nothing: harmless, a worker just finds no new task. */
	if (!existed && tq_queue_wants_worker(sd->q, id))
		tq_doorbell_ring(sd->home);
out:
	tq_wire_free(&w);
	free(payload);
}

void tq_submitd_serve(struct tq_submitd *sd, void (*log)(const char *msg))
{
	int64_t stop = tq_mono_ms() + SERVE_BUDGET_MS;
	int c;

	if (sd == NULL || tq_submitd_fd(sd) < 0)
		return;
	sd->paused_until = 0;
	for (int n = 0; n < SERVE_MAX && tq_mono_ms() < stop; n++) {
		c = accept4(sd->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0) {
			switch (errno) {
			case EINTR:
			case ECONNABORTED:
			case EPROTO:
				continue;
			case EAGAIN:
#if EWOULDBLOCK != EAGAIN
			case EWOULDBLOCK:
#endif
				return;
			default:
				/* EMFILE, ENFILE, ENOBUFS, ENOMEM: the backlog
				 * waits; clients that give up store directly. */
				note(log, "accept: %s; not accepting for %d ms",
				     strerror(errno), PAUSE_MS);
				sd->paused_until = tq_mono_ms() + PAUSE_MS;
				return;
			}
		}
		serve_one(sd, c, log);
		tq_close(c);
	}
}

void tq_submitd_close(struct tq_submitd *sd)
{
	if (sd == NULL)
		return;
	/* Unlink first: from here on a client finds no socket and stores
	 * directly; one already in the backlog is reset by the close, and
	 * falls back too. */
	if (sd->bound)
		unlink(sd->addr.sun_path);
	tq_close(sd->fd);
	tq_queue_close(sd->q);
	free(sd);
}

/*
 * submitd.c - the supervisor's submit socket (see submitd.h; the protocol
 * is wire.h, whose functions do all the framing here).
 *
 * Connections are served side by side from the supervisor's one poll loop:
 * each accepted socket is non-blocking and has its own frame buffer
 * (tq_wire_frame) and its own absolute deadline, so a client that connects
 * and sends nothing, or one byte at a time, costs a slot and a little
 * memory until its deadline, and never the time of anyone else. A request
 * usually arrives whole with its connection: it is read and stored in the
 * same call that accepts it, with no poll round in between (the fast path
 * is what it was when connections were served one at a time).
 *
 * Per connection: peer uid (at accept), request, decode, store, answer,
 * close. The answer is sent only after the commit, so "OK" always means
 * stored; it is a few bytes on a fresh socket, sent without waiting (a
 * client not there to take it falls back with its token).
 *
 * What is answered and what is not: a request that is wrong in itself (it
 * does not decode, or the store refuses the spec: a bad --after id, an
 * invalid name) gets "ERR", the same error the client would get storing it
 * itself. Trouble of the supervisor's own (out of memory, the store busy,
 * full or failing) gets no answer: the client then stores the task itself
 * with the same token, which is exactly-once even when our commit landed
 * and only its report failed, and reports the store's error if it is real.
 *
 * Invariants: nothing here exits or blocks; every connection is closed and
 * every buffer freed on every path, at its deadline at the latest; at most
 * TQ_SUBMITD_CONN_MAX are open; one serve() call accepts at most SERVE_MAX
 * connections and none after SERVE_BUDGET_MS, so the supervisor's other
 * duties are not starved by a flood.
 */
#include "submitd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/sys.h"
#include "queue/queue.h"
#include "wire.h"
#include "doorbell.h"

#define LISTEN_BACKLOG 64
#define SERVE_MAX 64            /* connections accepted per tq_submitd_serve call */
#define SERVE_BUDGET_MS 1000    /* no new connection after this long in one call */
#define PAUSE_MS 1000           /* accept failed for want of fds or memory */
#define FULL_NOTE_MS (60 * 1000) /* "at the bound" said at most this often */
/* The largest request: a client sends a spec whose request is larger
 * straight to the database (wire.h), so a larger one is not a client's. */
#define REQUEST_MAX TQ_WIRE_SPEC_MAX

struct conn {
	int fd;                     /* -1: a free slot */
	int64_t deadline;           /* mono ms: the whole request by then */
	struct tq_wire_frame f;
};

struct tq_submitd {
	char home[PATH_MAX];
	struct sockaddr_un addr;
	int fd;
	int bound;                  /* we created addr.sun_path: unlink it */
	int dirfd;                  /* its directory, as it was when we bound */
	dev_t dev;                  /* what we created, to unlink only that */
	ino_t ino;
	int64_t paused_until;       /* mono ms; 0: accepting */
	int bellfd;                 /* the doorbell, held once rung; -1: not yet */
	struct tq_queue *q;
	struct conn conns[TQ_SUBMITD_CONN_MAX];
	int nconns;
	/* what tq_submitd_poll filled, entry by entry: a connection's slot,
	 * or -1 for the listening socket */
	int polled[TQ_SUBMITD_POLL_MAX];
	size_t npolled;
	int full;                   /* at the bound since the last serve */
	unsigned full_times;        /* reached the bound, since the last note */
	int64_t full_noted;         /* mono ms of that note; 0: never */
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
	if (lstat(path, &sb) == 0) {
		sd->dev = sb.st_dev;
		sd->ino = sb.st_ino;
	}
	sd->dirfd = tq_open(sd->home, O_RDONLY | O_DIRECTORY, 0);
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
	sd->bellfd = -1;
	for (int i = 0; i < TQ_SUBMITD_CONN_MAX; i++)
		sd->conns[i].fd = -1;
	sd->dirfd = -1;
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
	if ((rc = tq_queue_open(&sd->q, home, TQ_OPEN_DURABLE | TQ_OPEN_LONG | TQ_OPEN_TIDY,
				 err)) < 0)
		goto fail;
	if ((rc = listen_on(sd, err)) < 0)
		goto fail;
	*sdp = sd;
	return 0;
fail:
	tq_submitd_close(sd);
	return rc;
}

static int accepting(const struct tq_submitd *sd, int64_t now)
{
	return sd->fd >= 0 && sd->nconns < TQ_SUBMITD_CONN_MAX &&
	       (sd->paused_until == 0 || now >= sd->paused_until);
}

size_t tq_submitd_poll(struct tq_submitd *sd, struct pollfd *p, int64_t *deadline)
{
	int64_t now = tq_mono_ms();
	size_t n = 0;

	sd->npolled = 0;
	if (accepting(sd, now)) {
		p[n] = (struct pollfd){ .fd = sd->fd, .events = POLLIN };
		sd->polled[n++] = -1;
	} else if (sd->paused_until > now && sd->paused_until < *deadline) {
		*deadline = sd->paused_until;
	}
	/* (no connection open, the usual case: no walk over the slots) */
	for (int i = 0; sd->nconns > 0 && i < TQ_SUBMITD_CONN_MAX; i++) {
		const struct conn *c = &sd->conns[i];

		if (c->fd < 0)
			continue;
		p[n] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		sd->polled[n++] = i;
		if (c->deadline < *deadline)
			*deadline = c->deadline;
	}
	sd->npolled = n;
	return n;
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

/* Store the request that arrived whole on c, a frame of version, and
 * answer it in that version (wire.h, "Versions"). */
/* Wake an idle worker: through the doorbell held open (one write a
 * submit, not an open, a write and a close), or by its path where it
 * cannot be held. */
static void ring(struct tq_submitd *sd)
{
	if (sd->bellfd < 0)
		sd->bellfd = tq_doorbell_open(sd->home, NULL);
	if (sd->bellfd >= 0)
		tq_doorbell_ring_fd(sd->bellfd);
	else
		tq_doorbell_ring(sd->home);
}

static void store(struct tq_submitd *sd, int c, const uint8_t *payload, size_t len,
		  int version, void (*log)(const char *msg))
{
	struct tq_wire_spec w = { .argv = NULL };
	struct tq_err err = TQ_ERR_INIT;
	int64_t id = 0, now;
	int existed = 0, rc;

	if ((rc = tq_wire_decode(payload, len, version, &w, &err)) < 0) {
		note(log, "bad request: %s", err.msg);
		if (rc == TQ_EINVAL)
			tq_wire_answer_err(c, version, &err, tq_mono_ms());
		goto out;
	}
	rc = tq_queue_submit(sd->q, &w.spec, &id, &existed, &err);
	/* The answer is a few bytes on a socket that has sent us its request
	 * and is waiting: it goes at once or not at all (a deadline of now),
	 * so no client holds us here either. */
	now = tq_mono_ms();
	if (rc < 0) {
		if (spec_error(rc))
			tq_wire_answer_err(c, version, &err, now);
		else
			note(log, "submit: %s (the client stores it itself)", err.msg);
		goto out;
	}
	if (tq_wire_answer_ok(c, version, id, existed, now) < 0)
		note(log, "task %lld stored, but its client did not take the answer",
		     (long long)id);
	/* A token already stored (the client's retry) rings once more for
	 * nothing: harmless, a worker just finds no new task. */
	if (!existed && tq_queue_wants_worker(sd->q, id))
		ring(sd);
out:
	tq_wire_free(&w);
}

static void conn_close(struct tq_submitd *sd, struct conn *c)
{
	tq_close(c->fd);
	c->fd = -1;
	tq_wire_frame_release(&c->f);
	sd->nconns--;
}

/* Read what arrived on c; store the request once it is whole. */
static void conn_input(struct tq_submitd *sd, struct conn *c, void (*log)(const char *msg))
{
	struct tq_err err = TQ_ERR_INIT;
	int rc = tq_wire_frame_read(&c->f, c->fd, &err);

	if (rc == 0)
		return; /* more to come, by its deadline */
	if (rc > 0) {
		store(sd, c->fd, c->f.payload, c->f.len, c->f.version, log);
	} else {
		/* A bad frame is worth telling the client about (a newer
		 * one's, in a version it reads: it then stores the task
		 * itself); a client that went away has no one to tell. */
		note(log, "request: %s", err.msg);
		if (rc == TQ_EINVAL)
			tq_wire_answer_err(c->fd, c->f.version, &err, tq_mono_ms());
	}
	conn_close(sd, c);
}

/* Close the connections whose request did not arrive by their deadline.
 * Called on every wakeup of the supervisor's loop, a submit's included:
 * the walk over the slots must cost next to nothing (a struct tq_err
 * zeroed per slot, 64 x 516 bytes, was 6,200 instructions a submit, more
 * than everything else this file adds to one). */
static void expire(struct tq_submitd *sd, void (*log)(const char *msg))
{
	int64_t now;

	if (sd->nconns == 0)
		return;
	now = tq_mono_ms();
	for (int i = 0; i < TQ_SUBMITD_CONN_MAX; i++) {
		struct conn *c = &sd->conns[i];
		struct tq_err err;

		if (c->fd < 0 || c->deadline > now)
			continue;
		err = (struct tq_err)TQ_ERR_INIT;
		tq_wire_frame_timeout(&c->f, &err);
		note(log, "request: %s", err.msg);
		conn_close(sd, c);
	}
}

/* Take a newly accepted connection fd into a free slot (there is one) and
 * read at once: its request is usually there already. */
static void conn_open(struct tq_submitd *sd, int fd, void (*log)(const char *msg))
{
	struct conn *c = NULL;

	for (int i = 0; i < TQ_SUBMITD_CONN_MAX && c == NULL; i++)
		if (sd->conns[i].fd < 0)
			c = &sd->conns[i];
	c->fd = fd;
	c->deadline = tq_mono_ms() + TQ_SUBMITD_REQUEST_MS;
	tq_wire_frame_start(&c->f, TQ_WIRE_REQUEST, REQUEST_MAX);
	sd->nconns++;
	conn_input(sd, c, log);
}

/* Accept pending connections, up to the bound and the budget. */
static void accept_some(struct tq_submitd *sd, void (*log)(const char *msg))
{
	int64_t stop = tq_mono_ms() + SERVE_BUDGET_MS;
	int fd;

	sd->paused_until = 0;
	for (int n = 0; n < SERVE_MAX && sd->nconns < TQ_SUBMITD_CONN_MAX &&
			tq_mono_ms() < stop; n++) {
		fd = accept4(sd->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
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
		if (!peer_ok(fd, log)) {
			tq_close(fd);
			continue;
		}
		conn_open(sd, fd, log);
	}
}

/* At the bound: say so the first time, then once a minute at most (a
 * flood of connections must not become a flood of lines). */
static void note_bound(struct tq_submitd *sd, void (*log)(const char *msg))
{
	int64_t now = tq_mono_ms();

	if (sd->nconns < TQ_SUBMITD_CONN_MAX) {
		sd->full = 0;
		return;
	}
	if (sd->full)
		return;
	sd->full = 1;
	sd->full_times++;
	if (sd->full_noted != 0 && now - sd->full_noted < FULL_NOTE_MS)
		return;
	note(log, "%d connections open, the most served at once: new ones wait in the "
	     "backlog until one ends (within %d ms); reached %u time%s since the last "
	     "such line", TQ_SUBMITD_CONN_MAX, TQ_SUBMITD_REQUEST_MS, sd->full_times,
	     sd->full_times == 1 ? "" : "s");
	sd->full_noted = now;
	sd->full_times = 0;
}

void tq_submitd_serve(struct tq_submitd *sd, const struct pollfd *p, size_t n,
		      void (*log)(const char *msg))
{
	int listen_ready = 0;

	if (sd == NULL)
		return;
	/* Requests under way first: they came first. */
	for (size_t k = 0; k < n && k < sd->npolled; k++) {
		int i = sd->polled[k];

		if (p[k].revents == 0)
			continue;
		if (i < 0)
			listen_ready = 1;
		else if (sd->conns[i].fd == p[k].fd)
			conn_input(sd, &sd->conns[i], log);
	}
	sd->npolled = 0;
	expire(sd, log);
	if (listen_ready && sd->fd >= 0)
		accept_some(sd, log);
	note_bound(sd, log);
	/* every request served is answered: the store's housekeeping
	 * (TQ_OPEN_TIDY) delays no answer now */
	if (sd->nconns == 0)
		tq_queue_tidy(sd->q);
}

/* Remove the socket file if it is still the one we bound, from the
 * directory we bound it in: after our state directory was removed and made
 * again, its path names the socket of the supervisor that started there,
 * which must survive our exit; after it was renamed aside, ours is there. */
static void unlink_ours(const struct tq_submitd *sd)
{
	struct stat sb;

	if (sd->dirfd >= 0 &&
	    fstatat(sd->dirfd, TQ_WIRE_SOCKET, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    sb.st_dev == sd->dev && sb.st_ino == sd->ino)
		unlinkat(sd->dirfd, TQ_WIRE_SOCKET, 0);
}

void tq_submitd_close(struct tq_submitd *sd)
{
	if (sd == NULL)
		return;
	/* Unlink first: from here on a client finds no socket and stores
	 * directly; one already in the backlog is reset by the close, and
	 * falls back too. */
	if (sd->bound)
		unlink_ours(sd);
	tq_close(sd->dirfd);
	tq_close(sd->fd);
	tq_close(sd->bellfd);
	for (int i = 0; i < TQ_SUBMITD_CONN_MAX; i++)
		if (sd->conns[i].fd >= 0)
			conn_close(sd, &sd->conns[i]);
	tq_queue_close(sd->q);
	free(sd);
}

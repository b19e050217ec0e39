/*
 * warmsock.c - the warm socket's messages and fd passing (warmsock.h).
 *
 * What it does: bind, accept, dial HOME/warm.sock (SOCK_SEQPACKET), and
 * send or receive one message with its descriptors (SCM_RIGHTS; received
 * with MSG_CMSG_CLOEXEC, so no descriptor is ever open without CLOEXEC,
 * not even between the recvmsg and an fcntl). What it does not: hold
 * processes or decide anything (the supervisor's worker/warm.c does), nor
 * run a turn (the worker's runner.c).
 *
 * Invariant: a descriptor received is the caller's, also when the message
 * around it is refused (it is closed here then); a truncated message
 * (MSG_TRUNC, MSG_CTRUNC) is an error, its descriptors closed.
 */
#include "warmsock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/sys.h"

#define LISTEN_BACKLOG 128

static int sock_path(const char *home, struct sockaddr_un *a, struct tq_err *err)
{
	int r;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	r = snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", home, TQ_WARM_SOCKET);
	if (r < 0 || (size_t)r >= sizeof(a->sun_path))
		return tq_err_set(err, TQ_EINVAL, "%s/%s: path longer than a socket's %zu bytes",
				  home, TQ_WARM_SOCKET, sizeof(a->sun_path) - 1);
	return 0;
}

/* The send buffer a TAKE needs; the kernel caps it at wmem_max (twice). */
static void widen(int fd)
{
	int n = TQ_WARM_MSG_MAX;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n));
}

int tq_warmsock_listen(const char *home, int *fd, struct tq_err *err)
{
	struct sockaddr_un a;
	struct stat sb;
	mode_t old;
	int s, rc;

	*fd = -1;
	if ((rc = sock_path(home, &a, err)) < 0)
		return rc;
	/* a socket file here is stale: the caller holds the supervisor lock */
	if (lstat(a.sun_path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			return tq_err_set(err, TQ_EEXIST, "%s exists and is not a socket",
					  a.sun_path);
		if (unlink(a.sun_path) < 0 && errno != ENOENT)
			return tq_err_sys(err, "unlink stale %s", a.sun_path);
	} else if (errno != ENOENT) {
		return tq_err_sys(err, "lstat %s", a.sun_path);
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return tq_err_sys(err, "socket");
	/* 0600 from the bind on (the supervisor is single-threaded: the
	 * process-wide umask is ours to borrow) */
	old = umask(0177);
	rc = bind(s, (const struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (rc < 0 || listen(s, LISTEN_BACKLOG) < 0) {
		rc = tq_err_sys(err, "%s %s", rc < 0 ? "bind" : "listen", a.sun_path);
		tq_close(s);
		return rc;
	}
	widen(s);
	*fd = s;
	return 0;
}

void tq_warmsock_unlink(const char *home)
{
	struct sockaddr_un a;

	if (sock_path(home, &a, NULL) == 0)
		unlink(a.sun_path);
}

int tq_warmsock_accept(int lfd, int *fd, struct tq_err *err)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int c;

	*fd = -1;
	do
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	while (c < 0 && errno == EINTR);
	if (c < 0)
		return errno == EAGAIN || errno == ECONNABORTED ? 0 : tq_err_sys(err, "accept");
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != geteuid()) {
		tq_close(c);
		return 0;
	}
	widen(c);
	*fd = c;
	return 0;
}

int tq_warmsock_dial(const char *home, int *fd, struct tq_err *err)
{
	struct sockaddr_un a;
	int s, rc;

	*fd = -1;
	if ((rc = sock_path(home, &a, err)) < 0)
		return rc;
	if ((s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
		return tq_err_sys(err, "socket");
	widen(s);
	do
		rc = connect(s, (const struct sockaddr *)&a, sizeof(a));
	while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		int e = errno;
		tq_close(s);
		if (e == ENOENT || e == ECONNREFUSED)
			return tq_err_set(err, TQ_ENOTFOUND, "no supervisor holds warm agents "
					  "here (%s: %s)", a.sun_path, strerror(e));
		errno = e;
		return tq_err_sys(err, "connect %s", a.sun_path);
	}
	*fd = s;
	return 0;
}

int tq_warmsock_send(int fd, struct tq_warm_hdr *h, const void *payload, size_t len,
		     const int *fds, int nfds, struct tq_err *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * TQ_WARM_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = { { h, sizeof(*h) }, { (void *)payload, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len > 0 ? 2 : 1 };
	ssize_t n;

	if (nfds < 0 || nfds > TQ_WARM_FDS || sizeof(*h) + len > TQ_WARM_MSG_MAX)
		return tq_err_set(err, TQ_EINVAL, "warm socket: a message of %zu bytes and %d "
				  "descriptors is over its bounds (%d bytes, %d)",
				  sizeof(*h) + len, nfds, TQ_WARM_MSG_MAX, TQ_WARM_FDS);
	h->magic = TQ_WARM_MAGIC;
	if (nfds > 0) {
		struct cmsghdr *c;
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EMSGSIZE)
		return tq_err_set(err, TQ_EINVAL, "warm socket: a message of %zu bytes is more "
				  "than the socket takes", sizeof(*h) + len);
	if (n < 0)
		return tq_err_sys(err, "warm socket: send");
	return 0;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		tq_close(fds[i]);
}

int tq_warmsock_recv(int fd, struct tq_warm_hdr *h, char *payload, size_t cap, size_t *len,
		     int *fds, int *nfds, struct tq_err *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * TQ_WARM_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = { { h, sizeof(*h) }, { payload, cap > 0 ? cap - 1 : 0 } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = cap > 1 ? 2 : 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;
	int got = 0;

	*nfds = 0;
	if (len)
		*len = 0;
	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return TQ_EBUSY;
	if (n < 0 && errno == ECONNRESET)
		return 1;
	if (n < 0)
		return tq_err_sys(err, "warm socket: receive");
	for (c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof(int));
			if (got < TQ_WARM_FDS)
				fds[got++] = f;
			else
				tq_close(f);
		}
	}
	if (n == 0 && got == 0)
		return 1;
	if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(*h) ||
	    h->magic != TQ_WARM_MAGIC) {
		close_fds(fds, got);
		return tq_err_set(err, TQ_EINVAL, "warm socket: a message of %zd bytes %s", n,
				  (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ? "was cut short" :
				  "is not one of ours");
	}
	if (cap > 0) {
		size_t pl = (size_t)n - sizeof(*h);
		payload[pl] = '\0';
		if (len)
			*len = pl;
	}
	*nfds = got;
	return 0;
}

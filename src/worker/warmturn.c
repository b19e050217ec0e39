/*
 * warmturn.c - a warm message's turn, the worker's side of the warm socket
 * (warmturn.h; the supervisor's side is warm.c, the messages warmsock.h).
 *
 * What it does not: read or write the turn itself (runner.c does, in its
 * one event loop), decide outcomes, or ever signal a process by a bare pid:
 * when the supervisor is gone and the process must end here, it is
 * signalled through the pidfd the supervisor lent with it.
 */
#include "warmturn.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/sys.h"
#include "ipc/warmsock.h"

/* Ending the process here (no supervisor): TERM, this long, then KILL. */
#define ABANDON_GRACE_MS 2000

/* Wait until fd is readable or the deadline (mono ms) passes: 1, 0. */
static int wait_readable(int fd, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = deadline - tq_mono_ms();
		int n;

		if (left < 0)
			left = 0;
		n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return 0;
		if (n == 0 && tq_mono_ms() >= deadline)
			return 0;
	}
}

/* The payload of a TAKE: key, cwd, argv, env, each NUL-ended. */
static char *payload(const struct tq_warm_take *k, uint32_t *argc, uint32_t *envc,
		     size_t *len)
{
	size_t n = strlen(k->key) + 1 + strlen(k->cwd ? k->cwd : "") + 1, off = 0;
	char *p;

	*argc = *envc = 0;
	for (char *const *v = k->argv; *v; v++, (*argc)++)
		n += strlen(*v) + 1;
	for (char *const *v = k->envp; v && *v; v++, (*envc)++)
		n += strlen(*v) + 1;
	if ((p = malloc(n)) == NULL)
		return NULL;
#define PUT(s) do { size_t l_ = strlen(s) + 1; memcpy(p + off, (s), l_); off += l_; } while (0)
	PUT(k->key);
	PUT(k->cwd ? k->cwd : "");
	for (char *const *v = k->argv; *v; v++)
		PUT(*v);
	for (char *const *v = k->envp; v && *v; v++)
		PUT(*v);
#undef PUT
	*len = n;
	return p;
}

int tq_warm_turn_take(struct tq_warm_turn *t, const struct tq_warm_take *k,
		      struct tq_err *err)
{
	struct tq_warm_hdr h = { .op = TQ_WARM_TAKE, .task = k->task, .attempt = k->attempt,
				 .pid = (int32_t)getpid(), .umask = k->umask,
				 .idle_ms = k->idle_ms };
	char why[512 > TQ_WARM_STATE_MAX ? 512 : TQ_WARM_STATE_MAX];
	int fds[TQ_WARM_FDS], nfds = 0, rc;
	size_t len = 0;
	char *pl;

	*t = (struct tq_warm_turn)TQ_WARM_TURN_INIT;
	memcpy(h.fp, k->fp, sizeof(h.fp));
	if ((pl = payload(k, &h.argc, &h.envc, &len)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "warm turn: out of memory");
	rc = tq_warmsock_dial(k->home, &t->sock, err);
	if (rc == 0)
		rc = tq_warmsock_send(t->sock, &h, pl, len, NULL, 0, err);
	free(pl);
	if (rc < 0)
		goto fail;
	if (!wait_readable(t->sock, tq_mono_ms() + TQ_WARM_TAKE_MS)) {
		rc = tq_err_set(err, TQ_EIO, "warm session %s: the supervisor did not lend its "
				"agent within %d ms", k->key, TQ_WARM_TAKE_MS);
		goto fail;
	}
	rc = tq_warmsock_recv(t->sock, &h, why, sizeof(why), &len, fds, &nfds, err);
	if (rc == 1 || rc == TQ_EBUSY) {
		rc = tq_err_set(err, TQ_EIO, "warm session %s: the supervisor closed the warm "
				"socket", k->key);
		goto fail;
	}
	if (rc < 0)
		goto fail;
	if (h.op == TQ_WARM_REFUSE) {
		rc = strncmp(why, "busy", 4) == 0 ? TQ_EBUSY : TQ_EIO;
		tq_err_set(err, rc, "warm session %s: %s", k->key, why);
		goto fail;
	}
	if (h.op != TQ_WARM_GIVE || nfds < 3) {
		for (int i = 0; i < nfds; i++)
			tq_close(fds[i]);
		rc = tq_err_set(err, TQ_EIO, "warm session %s: an unexpected answer", k->key);
		goto fail;
	}
	t->in_fd = fds[0];
	t->out_fd = fds[1];
	t->err_fd = fds[2];
	t->pidfd = nfds > 3 ? fds[3] : -1;
	t->pid = h.pid;
	t->start = h.start;
	t->fresh = h.status == 1;
	strlcpy(t->state, len > 0 ? why : "", sizeof(t->state));
	return 0;
fail:
	tq_warm_turn_release(t);
	return rc;
}

/* No supervisor holds it any more: end it through its pidfd, whatever it
 * is doing (nobody would hold its stdin between turns). */
static void abandon(struct tq_warm_turn *t)
{
	if (t->pidfd < 0)
		return;
	tq_close(t->in_fd);
	t->in_fd = -1;
	pidfd_send_signal(t->pidfd, SIGTERM, NULL, 0);
	if (!wait_readable(t->pidfd, tq_mono_ms() + ABANDON_GRACE_MS))
		pidfd_send_signal(t->pidfd, SIGKILL, NULL, 0);
}

int tq_warm_turn_done(struct tq_warm_turn *t, const char *state)
{
	struct tq_warm_hdr h = { .op = TQ_WARM_DONE };
	char st[TQ_WARM_STATE_MAX];
	int rc = 0;

	strlcpy(st, state != NULL ? state : "", sizeof(st));
	if (t->sock < 0 || tq_warmsock_send(t->sock, &h, st, strlen(st) + 1, NULL, 0, NULL) < 0) {
		abandon(t);
		rc = TQ_EIO;
	}
	tq_warm_turn_release(t);
	return rc;
}

int tq_warm_turn_end(struct tq_warm_turn *t, int64_t grace_ms)
{
	struct tq_warm_hdr h = { .op = TQ_WARM_END, .grace_ms = grace_ms };

	t->end_asked = 1;
	if (t->sock < 0 || tq_warmsock_send(t->sock, &h, NULL, 0, NULL, 0, NULL) < 0) {
		abandon(t);
		return TQ_EIO;
	}
	return 0;
}

int tq_warm_turn_status(struct tq_warm_turn *t, int *status)
{
	struct tq_warm_hdr h;
	int fds[TQ_WARM_FDS], nfds = 0;
	int rc = t->sock >= 0 ? tq_warmsock_recv(t->sock, &h, NULL, 0, NULL, fds, &nfds, NULL) :
		 1;

	for (int i = 0; i < nfds; i++)
		tq_close(fds[i]);
	if (rc == TQ_EBUSY)
		return TQ_EBUSY;
	if (rc == 0 && h.op == TQ_WARM_STATUS) {
		*status = h.status;
		return 0;
	}
	abandon(t);
	*status = W_EXITCODE(0, SIGKILL);
	return TQ_EIO;
}

void tq_warm_turn_release(struct tq_warm_turn *t)
{
	tq_close(t->sock);
	tq_close(t->in_fd);
	tq_close(t->out_fd);
	tq_close(t->err_fd);
	tq_close(t->pidfd);
	*t = (struct tq_warm_turn)TQ_WARM_TURN_INIT;
}

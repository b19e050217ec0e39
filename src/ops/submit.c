/*
 * ops/submit.c - storing a task through the supervisor's socket or
 * directly, with the token that makes the two one (submit.h), the
 * doorbell, and the supervisor's autostart.
 *
 * Submit is on the benchmark's hot path (a bare exec plus one insert), so
 * this does only what the task needs, and nothing on the stack a page
 * wide: a page of stack more is a page fault more in every submit.
 */
#include "ops/submit.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

#include "common/parse.h"
#include "common/sys.h"
#include "ipc/doorbell.h"
#include "ipc/wire.h"
#include "ops/wait.h"
#include "proc/spawn.h"
#include "queue/home.h"
#include "worker/supervisor.h"

extern char **environ;

int tq_ops_submit_via(const char *v, enum tq_ops_via *via)
{
	*via = TQ_OPS_VIA_AUTO;
	if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
		return 0;
	if (strcmp(v, "supervisor") == 0)
		*via = TQ_OPS_VIA_SUPERVISOR;
	else if (strcmp(v, "direct") == 0)
		*via = TQ_OPS_VIA_DIRECT;
	else
		return TQ_EINVAL;
	return 0;
}

#define RETRY_PAUSE_MIN_MS 200
#define RETRY_PAUSE_MAX_MS 2000

int tq_ops_retry_ms(const char *v, int64_t *ms, struct tq_err *err)
{
	*ms = TQ_OPS_RETRY_MS;
	if (v == NULL || *v == '\0')
		return 0;
	if (tq_parse_duration(v, ms, err) < 0)
		return tq_err_set(err, TQ_EINVAL, TQ_OPS_RETRY_VAR "=\"%s\": expected a "
				  "duration such as 30s, 2m or 0", v);
	return 0;
}

void tq_ops_retry_start(struct tq_ops_retry *r, int64_t ms)
{
	r->started = tq_mono_ms();
	r->deadline = ms > 0 ? r->started + ms : r->started;
	r->pause = 0;
	r->offline = 0;
}

int tq_ops_retry_again(struct tq_ops_retry *r, int rc, struct tq_err *err)
{
	char took[32], m[TQ_ERR_MAX];
	int64_t now = tq_mono_ms(), pause;

	r->offline |= rc == TQ_EOFFLINE;
	if (rc != TQ_EOFFLINE && !(rc == TQ_EBUSY && r->offline))
		return 0;
	if (now >= r->deadline) {
		if (r->deadline > r->started && err != NULL) {
			tq_format_duration(now - r->started, took, sizeof(took));
			strlcpy(m, err->msg, sizeof(m));
			tq_err_set(err, rc, "%s; tried for %s (" TQ_OPS_RETRY_VAR ")", m, took);
		}
		return 0;
	}
	r->pause = r->pause ? r->pause * 2 : RETRY_PAUSE_MIN_MS;
	if (r->pause > RETRY_PAUSE_MAX_MS)
		r->pause = RETRY_PAUSE_MAX_MS;
	pause = r->pause + arc4random_uniform((uint32_t)(r->pause / 4 + 1));
	tq_ops_pause(r->deadline, pause);
	return 1;
}

int tq_ops_open(const char *home, unsigned flags, struct tq_ops_retry *r,
		struct tq_queue **q, struct tq_err *err)
{
	int rc;

	while ((rc = tq_queue_open(q, home, flags, err)) < 0) {
		*q = NULL;
		if (!tq_ops_retry_again(r, rc, err))
			return rc;
	}
	return 0;
}

/* A token for this submit (queue.h, tq_task_spec.token): a random one. */
static void draw_token(struct tq_ops_submit *o, struct tq_task_spec *spec)
{
	unsigned char raw[16];

	/* The token only has to be unique. getrandom(2) is one system call;
	 * libbsd's arc4random_buf seeds a generator first, maps two pages
	 * for it and faults them in, which a one-shot process pays in full
	 * (about 1 % of a submit here, where a page fault costs 10-15 us). */
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		arc4random_buf(raw, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < sizeof(o->token); i++)
		snprintf(o->token + 2 * i, 3, "%02x", raw[i]);
	spec->token = o->token;
}

/* --delay counts from the store, not from the parse. */
static void start_delay(const struct tq_ops_submit *o, struct tq_task_spec *spec)
{
	if (o->delay_ms > 0)
		spec->run_after = tq_now_ms() + o->delay_ms;
}

/*
 * Hand the task to the supervisor listening in o->home, if one does. The
 * state directory must pass the checks opening the database makes (a
 * directory that fails them gets its error from the direct path); the
 * supervisor must be ours (tq_wire_submit checks the peer's uid). Returns
 * an enum tq_wire_result (ipc/wire.h) or the supervisor's refusal (a
 * tq_err code, err set).
 */
static int via_socket(struct tq_ops_submit *o, struct tq_task_spec *spec,
		      struct tq_err *err)
{
	int rc;

	if (tq_home_check(o->home, err) < 0)
		return TQ_WIRE_NOT_SENT;
	draw_token(o, spec);
	start_delay(o, spec);
	rc = tq_wire_submit(o->home, spec, TQ_OPS_SUBMIT_TIMEOUT_MS, &o->id, &o->existed, err);
	if (rc == TQ_WIRE_NOT_SENT)
		spec->token = NULL; /* nothing sent: nothing to be exactly-once with */
	return rc;
}

/*
 * Into the store ourselves, with the token if one was sent. A store on a
 * server (tq_queue_connected_at) that cannot be reached is tried again
 * for o->retry_ms; each try carries a token (one of its own when none was
 * sent), so that a try whose commit was cut off with the connection, done
 * or not, and the next one store the task once.
 */
static int direct(struct tq_ops_submit *o, struct tq_task_spec *spec, struct tq_err *err)
{
	struct tq_ops_retry r;
	int rc, cut = 0;

	tq_ops_retry_start(&r, o->retry_ms);
	for (;;) {
		if (o->q == NULL &&
		    (rc = tq_ops_open(o->home, TQ_OPEN_DURABLE, &r, &o->q, err)) < 0) {
			o->failed_at = TQ_OPS_AT_OPEN;
			return rc;
		}
		if (spec->token == NULL && tq_queue_connected_at(o->q) != 0)
			draw_token(o, spec);
		start_delay(o, spec);
		if ((rc = tq_queue_submit(o->q, spec, &o->id, &o->existed, err)) == 0)
			return 0;
		cut |= rc == TQ_EOFFLINE;
		if (!tq_ops_retry_again(&r, rc, err)) {
			o->failed_at = TQ_OPS_AT_STORE;
			break;
		}
	}
	/* a try lost its connection once it had begun, maybe in its commit,
	 * and no later one could tell: say that it may be stored */
	if (cut && (rc == TQ_EOFFLINE || rc == TQ_EBUSY) && o->q != NULL) {
		char m[TQ_ERR_MAX];

		strlcpy(m, err->msg, sizeof(m));
		tq_err_set(err, rc, "%s; a try cut off in its commit may have stored it: "
			   "see taskq list once the store is back", m);
	}
	return rc;
}

int tq_ops_submit(struct tq_ops_submit *o, struct tq_task_spec *spec, struct tq_err *err)
{
	int rc;

	o->q = NULL;
	o->by_supervisor = o->fallback = 0;
	if (o->via == TQ_OPS_VIA_DIRECT)
		return direct(o, spec, err);
	rc = via_socket(o, spec, &o->why);
	if (rc == TQ_WIRE_STORED) {
		o->by_supervisor = 1;
		return 0;
	}
	if (rc < 0) { /* refused: as the store would have */
		*err = o->why;
		o->failed_at = TQ_OPS_AT_SOCKET;
		return rc;
	}
	if (o->via == TQ_OPS_VIA_SUPERVISOR) {
		o->failed_at = TQ_OPS_AT_SOCKET;
		return tq_err_set(err, TQ_EIO, "TASKQ_SUBMIT_VIA=supervisor: %s", o->why.msg);
	}
	/* UNREAD: it stored nothing (wire.h, "Versions"); GARBLED: it may
	 * have, and the same token keeps it once. Either way the front end
	 * says why the fast path is gone. */
	if (rc == TQ_WIRE_UNREAD)
		o->fallback = TQ_OPS_FALLBACK_UNREAD;
	else if (rc == TQ_WIRE_GARBLED)
		o->fallback = TQ_OPS_FALLBACK_GARBLED;
	return direct(o, spec, err);
}

int tq_ops_autostart(const char *home, struct tq_err *err)
{
	char *argv[] = { "taskq", "--home", (char *)home, "serve", NULL };
	struct tq_child c = TQ_CHILD_INIT;
	struct tq_err serr = TQ_ERR_INIT;
	char exe[PATH_MAX];
	sigset_t none;
	int status, rc;

	if (tq_supervisor_running(home, NULL))
		return 0;
	if ((rc = tq_self_exe(exe, sizeof(exe), err)) < 0)
		return rc;
	/* `taskq serve` with our environment, mask and session (it makes its
	 * own: tq_spawn_detach), and nothing of our streams: /dev/null. */
	sigemptyset(&none);
	c.argv = argv;
	c.exe = exe;
	c.envp = environ;
	c.in = TQ_SPAWN_STDIO_NULL;
	c.flags = TQ_SPAWN_KEEP_SESSION | TQ_SPAWN_KEEP_SIGMASK;
	c.sigdefault = &none;
	if (tq_spawn_start(&c, &serr) < 0) /* errno: the step's */
		return tq_err_sys(err, "start supervisor (%s)", exe);
	/* The daemon's parent exits as soon as the daemon is up. */
	if (tq_waitpid(c.pid, &status, 0) < 0)
		return tq_err_sys(err, "wait for supervisor");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return tq_err_set(err, TQ_EIO, "supervisor did not start (see %s/serve.log)",
				  home);
	return 0;
}

int tq_ops_started(const char *home, int ring, int autostart, struct tq_err *err)
{
	if (ring)
		tq_doorbell_ring(home);
	return autostart ? tq_ops_autostart(home, err) : 0;
}

int tq_ops_submit_started(const struct tq_ops_submit *o, int autostart,
			  struct tq_err *err)
{
	if (o->by_supervisor || o->existed || o->q == NULL)
		return 0;
	return tq_ops_started(o->home, tq_queue_wants_worker(o->q, o->id), autostart, err);
}

/*
 * ops/submit.h - storing a task, for any front end: through the running
 * supervisor's socket when one listens, else into the store directly, then
 * waking the idle workers and starting a supervisor if none runs.
 *
 *     struct tq_ops_submit o = TQ_OPS_SUBMIT_INIT;
 *     o.home = home;                       the resolved state directory
 *     o.via = ...;                         tq_ops_submit_via(TASKQ_SUBMIT_VIA)
 *     rc = tq_ops_submit(&o, &spec, &err); then say o.fallback's why, if any
 *     ... o.id, o.existed; o.q is open when stored directly ...
 *     tq_ops_submit_started(&o, autostart, &err)   ring, autostart
 *     tq_queue_close(o.q);
 *
 * The socket path (ipc/wire.h): a token is drawn first, so that a request
 * the supervisor commits after we gave up on it (no answer within
 * TQ_OPS_SUBMIT_TIMEOUT_MS, or an answer this taskq cannot read) and the
 * direct store that follows are one task (queue.h, tq_task_spec.token). A
 * supervisor that runs another version of taskq (TQ_WIRE_UNREAD, GARBLED)
 * is said in o.fallback and o.why; the task is stored directly all the
 * same. A refusal by the supervisor (a bad spec, as the store would have
 * refused it) is the submit's error.
 */
#ifndef TQ_OPS_SUBMIT_H
#define TQ_OPS_SUBMIT_H

#include <stdint.h>

#include "common/err.h"
#include "queue/queue.h"

/* The supervisor's answer, from connect: it stores a task in a few ms, so
 * one that has not answered in a second is stuck (a long housekeeping pass,
 * a locked store, clients holding every connection it serves) and the task
 * is stored directly. */
#define TQ_OPS_SUBMIT_TIMEOUT_MS 1000
/* How long a submit tries again while the store's server cannot be reached
 * (TQ_EOFFLINE: a PostgreSQL server restarting, stopped, a connection it
 * ended), unless TASKQ_DB_RETRY says (a duration; 0: no retry). Then it
 * fails, having stored nothing. */
#define TQ_OPS_RETRY_MS (30 * 1000)
#define TQ_OPS_RETRY_VAR "TASKQ_DB_RETRY"
#define TQ_OPS_TOKEN_MAX 40      /* 32 hex digits and a NUL, with room */

/* Where a submit goes (TASKQ_SUBMIT_VIA). */
enum tq_ops_via {
	TQ_OPS_VIA_AUTO,         /* the socket when a supervisor listens, else direct */
	TQ_OPS_VIA_SUPERVISOR,   /* the socket, or fail */
	TQ_OPS_VIA_DIRECT,       /* the store, never the socket */
};

/* Where tq_ops_submit failed (o.failed_at), for the front end's words. */
enum tq_ops_submit_stage {
	TQ_OPS_AT_SOCKET,        /* the supervisor refused the task, or
				  * VIA_SUPERVISOR found none to take it */
	TQ_OPS_AT_OPEN,          /* the store could not be opened */
	TQ_OPS_AT_STORE,         /* the store refused the task */
};

/* Why a submit left the socket for the store (o.fallback). */
enum tq_ops_fallback {
	TQ_OPS_FALLBACK_UNREAD = 1,  /* the supervisor could not read the
				      * request: it stored nothing */
	TQ_OPS_FALLBACK_GARBLED,     /* its answer could not be read: it may
				      * have stored it (the token keeps it once) */
};

struct tq_ops_submit {
	/* in */
	const char *home;        /* the state directory, resolved */
	enum tq_ops_via via;
	int64_t retry_ms;        /* the store unreachable: try again for this
				  * long (tq_ops_retry_ms); 0: fail at once */
	int64_t delay_ms;        /* > 0: spec->run_after = now + delay_ms at
				  * the store (--delay counts from the store:
				  * opening the store, or a supervisor's lost
				  * answer, took some of it) */
	/* out */
	struct tq_queue *q;      /* stored directly: the open store (durable),
				  * the caller's to close; else NULL */
	int64_t id;
	int existed;             /* a --unique key held: id is the holder's */
	int by_supervisor;       /* stored through the socket */
	int fallback;            /* 0, or enum tq_ops_fallback: a supervisor
				  * of another version; why says what */
	int failed_at;           /* enum tq_ops_submit_stage, on failure */
	struct tq_err why;
	char token[TQ_OPS_TOKEN_MAX];
};

#define TQ_OPS_SUBMIT_INIT { .via = TQ_OPS_VIA_AUTO, .retry_ms = TQ_OPS_RETRY_MS }

/*
 * Trying again while the store is unreachable, for any front end that
 * stores (a submit, an import's chunks): until a deadline, pausing 200 ms,
 * then twice as long each time up to 2 s, each with up to a quarter more at
 * random (clients that lost the server together do not all knock at once).
 *
 *     struct tq_ops_retry r;
 *     tq_ops_retry_start(&r, o.retry_ms);
 *     while ((rc = try(...)) < 0 && tq_ops_retry_again(&r, rc, &err))
 *             ;
 *
 * What is retried must be safe to do twice: a task's spec carries its
 * token (queue.h), so that a commit whose outcome was lost with the
 * connection stores it once.
 */
struct tq_ops_retry {
	int64_t started;         /* mono ms */
	int64_t deadline;        /* mono ms */
	int64_t pause;           /* the last pause, ms */
	int offline;             /* a try failed with TQ_EOFFLINE */
};

/* Start retrying for ms (0: no retry). */
void tq_ops_retry_start(struct tq_ops_retry *r, int64_t ms);

/*
 * After a try that failed with rc (err set): 1 after a pause when it is
 * worth another (rc TQ_EOFFLINE, or TQ_EBUSY once the store was away: a
 * lost commit's locks held until its server-side end) and the deadline
 * has not passed; else 0, err's message then saying how long it tried.
 */
int tq_ops_retry_again(struct tq_ops_retry *r, int rc, struct tq_err *err);

/* Open the store of home (tq_queue_open with flags), trying again as r
 * says while it cannot be reached: 0 and *q, or the open's error (err set,
 * saying how long it tried). */
int tq_ops_open(const char *home, unsigned flags, struct tq_ops_retry *r,
		struct tq_queue **q, struct tq_err *err);

/* TASKQ_DB_RETRY's value (NULL or "": TQ_OPS_RETRY_MS) into *ms: 0, or
 * TQ_EINVAL with err naming it. */
int tq_ops_retry_ms(const char *value, int64_t *ms, struct tq_err *err);

/* TASKQ_SUBMIT_VIA's value (NULL or "": auto) into *via: 0, or TQ_EINVAL. */
int tq_ops_submit_via(const char *value, enum tq_ops_via *via);

/*
 * Store spec (its token is set here, and borrowed from o until the call
 * returns) as o says, filling o's out fields. Returns 0, or the TQ_E* code
 * of the failure with err set and o->failed_at saying where (o->q may be
 * open after TQ_OPS_AT_STORE: close it).
 */
int tq_ops_submit(struct tq_ops_submit *o, struct tq_task_spec *spec, struct tq_err *err);

/*
 * The rest of a direct store (nothing when the supervisor stored it: it
 * rang, and it runs): ring the doorbell when the task just stored is
 * worth waking an idle worker for (tq_queue_wants_worker), then, when
 * autostart, start a supervisor unless one runs. Returns 0, or the
 * autostart's error (err set): the task is stored all the same.
 */
int tq_ops_submit_started(const struct tq_ops_submit *o, int autostart,
			  struct tq_err *err);

/*
 * Wake home's idle workers (ring: there is something they could start),
 * then, when autostart, start a supervisor unless one runs: what a submit
 * of many tasks does once. Returns as tq_ops_submit_started.
 */
int tq_ops_started(const char *home, int ring, int autostart, struct tq_err *err);

/*
 * Start a supervisor for home in the background unless one runs, by
 * executing this binary ("taskq --home HOME serve", /proc/self/exe) with
 * its standard streams on /dev/null (so a caller's $(...) never waits for
 * the daemon), our environment, signal mask and session (it makes its
 * own). Waits only for the daemon to be up. Returns 0 (also when one was
 * running) or a TQ_E* code with err set.
 */
int tq_ops_autostart(const char *home, struct tq_err *err);

#endif

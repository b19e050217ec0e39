/*
 * ops/sessions.h - ending a session's warm agent process (issue 19): what
 * `taskq sessions close KEY` does, for any front end.
 *
 * The request is stored on the session's row (tq_queue_session_close_
 * request), not sent to a process: the supervisor of the node the warm
 * process runs on finds it (tq_queue_warm_list, tq_queue_session_close_
 * take), ends the process (TERM, grace, KILL) and clears it
 * (tq_queue_warm_clear), so a close works the same from any node sharing
 * the store. Then the doorbell is rung (a shortcut for a listening
 * runtime; nothing depends on it) and the row is read until the process
 * it recorded is gone from it, or the deadline.
 */
#ifndef TQ_OPS_SESSIONS_H
#define TQ_OPS_SESSIONS_H

#include <stdint.h>

#include "common/err.h"
#include "queue/home.h"
#include "queue/queue.h"

/* How long `sessions close` waits for the process to be ended: its
 * supervisor's TERM, grace and KILL, with room on a loaded machine. */
#define TQ_OPS_CLOSE_WAIT_MS 30000

/* The first pause between two looks at the row, doubling to the second. */
#define TQ_OPS_CLOSE_POLL_MIN_MS 10
#define TQ_OPS_CLOSE_POLL_MAX_MS 200

enum tq_ops_close_outcome {
	TQ_OPS_CLOSE_NONE,     /* no warm process was recorded: nothing stored */
	TQ_OPS_CLOSE_ENDED,    /* the process recorded was ended and cleared */
	TQ_OPS_CLOSE_ASKED,    /* the request is stored; not waited for */
	TQ_OPS_CLOSE_PENDING,  /* stored, and the process still recorded at
				* the deadline */
};

struct tq_ops_close {
	enum tq_ops_close_outcome outcome;
	int pid;                        /* the warm process asked to end; 0: none */
	int64_t start;                  /* its start time (its identity with pid) */
	char node[TQ_NODE_MAX + 1];     /* its node */
	int64_t requested_at;           /* ms the request was stored (the first,
					 * when one was pending already) */
	int this_node;                  /* for PENDING: the process is this
					 * node's (tq_node_self) */
	int supervisor_here;            /* for PENDING on this node: whether a
					 * supervisor runs for home */
};

/*
 * Ask for key's warm process to be ended: the request stored, the
 * doorbell of home rung, then, unless deadline_ms is 0, the row read until
 * that process is no longer recorded (ENDED) or deadline_ms (tq_mono_ms
 * clock) passes (PENDING). *out says which and names the process. Returns
 * 0, or the store's TQ_E* (TQ_ENOTFOUND, one line naming the key, for an
 * unknown session).
 */
int tq_ops_session_close(struct tq_queue *q, const char *home, const char *key,
			 int64_t deadline_ms, struct tq_ops_close *out, struct tq_err *err);

#endif

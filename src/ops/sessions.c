/*
 * ops/sessions.c - `taskq sessions close`: the request on the row, the
 * doorbell, the wait (sessions.h).
 */
#include "sessions.h"

#include <bsd/string.h>
#include <string.h>

#include "common/sys.h"
#include "ipc/doorbell.h"
#include "ops/wait.h"
#include "worker/supervisor.h"

struct close_look {
	struct tq_queue *q;
	const char *key;
	int pid;
	int64_t start;
	struct tq_err *err;
};

/* Done when the row no longer records the process asked to end: cleared,
 * or another one since (that one was not asked to end). */
static int gone(void *arg)
{
	struct close_look *l = arg;
	struct tq_session_row *rows = NULL;
	size_t n = 0;
	int rc, done;

	if ((rc = tq_queue_sessions(l->q, l->key, &rows, &n, l->err)) < 0)
		return rc;
	done = n == 0 || rows[0].pid != l->pid || rows[0].start != l->start;
	tq_session_row_list_free(rows, n);
	return done;
}

int tq_ops_session_close(struct tq_queue *q, const char *home, const char *key,
			 int64_t deadline_ms, struct tq_ops_close *out, struct tq_err *err)
{
	static const struct tq_ops_pace pace = { TQ_OPS_CLOSE_POLL_MIN_MS,
						 TQ_OPS_CLOSE_POLL_MAX_MS, 0, 0 };
	struct tq_session_row row;
	struct close_look l = { q, key, 0, 0, err };
	char self[TQ_NODE_MAX + 1];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = tq_queue_session_close_request(q, key, tq_now_ms(), &row, err)) < 0) {
		tq_session_row_release(&row);
		return rc;
	}
	out->pid = row.pid;
	out->start = row.start;
	out->requested_at = row.close_requested_at;
	if (row.node != NULL)
		strlcpy(out->node, row.node, sizeof(out->node));
	tq_session_row_release(&row);
	if (out->pid == 0) {
		out->outcome = TQ_OPS_CLOSE_NONE;
		return 0;
	}
	tq_doorbell_ring(home);
	if (deadline_ms == 0) {
		out->outcome = TQ_OPS_CLOSE_ASKED;
		return 0;
	}
	l.pid = out->pid;
	l.start = out->start;
	if ((rc = tq_ops_wait(deadline_ms, &pace, gone, &l)) < 0)
		return rc;
	if (rc == 1) {
		out->outcome = TQ_OPS_CLOSE_ENDED;
		return 0;
	}
	out->outcome = TQ_OPS_CLOSE_PENDING;
	out->this_node = tq_node_self(self, sizeof(self), NULL) == 0 &&
			 strcmp(self, out->node) == 0;
	if (out->this_node)
		out->supervisor_here = tq_supervisor_running(home, NULL);
	return 0;
}

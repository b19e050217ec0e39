/*
 * wake.c - waking other nodes' idle workers (queue.h, tq_queue_wake_open):
 * NOTIFY in the transaction of a change that makes a task runnable or due
 * (tq_pg_wake, called by submit.c, claim.c and change.c), LISTEN on a
 * connection of the wake handle's own, whose socket the node's supervisor
 * polls.
 *
 * The channel is the store's: "tq_wake_" and the hash of its schema, as
 * the log writers' advisory locks are keyed (two stores in two schemas of
 * one database hear only their own). The payload is the writer's node
 * (tq_node_self at open), so that a node's handle passes over its own
 * node's changes, which its doorbell announced already. PostgreSQL folds
 * the same payload on the same channel within one transaction into one
 * notification, so a submit of many tasks is one wake per node, and their
 * workers pass the rest on (a claim that sees more rings the doorbell).
 *
 * The way the database-backed queues do it: river, Oban and
 * graphile-worker each LISTEN on one connection per process or pool and
 * turn a notification into a nudge of one local worker, rather than each
 * worker holding a connection of its own. Notifications are a shortcut:
 * one missed costs latency (the workers' own idle beat finds the task),
 * never a task.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

/* The channel's name, as an SQL expression: the same on every connection
 * to the store (current_schema is its schema: the URL's search_path). */
#define WAKE_CHANNEL "'tq_wake_' || to_hex(hashtext(current_schema()))"
#define WAKE_CHANNEL_MAX 32

int tq_pg_wake(struct tq_pg *q, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, q->node);
	return tq_pg_exec(q, "SELECT pg_notify(" WAKE_CHANNEL ", $1)", &p, NULL, err,
			  "wake other nodes");
}

struct tq_pg_wake {
	struct tq_wake base; /* first */
	PGconn *conn;        /* its own: LISTEN */
	char node[TQ_NODE_MAX + 1];
};

/* Run sql on the handle's connection; 0 or TQ_EIO with err naming what. */
static int wake_exec(struct tq_pg *q, PGconn *c, const char *sql, char *out, size_t n,
		     struct tq_err *err)
{
	PGresult *r = tq_pq->exec(c, sql);
	ExecStatusType st = r ? tq_pq->result_status(r) : PGRES_FATAL_ERROR;
	int rc = 0;

	if (st == PGRES_TUPLES_OK && out != NULL && tq_pq->ntuples(r) == 1)
		strlcpy(out, tq_pq->getvalue(r, 0, 0), n);
	else if (st != PGRES_COMMAND_OK)
		rc = tq_err_set(err, TQ_EIO, "listen for other nodes on %s: %s", q->shown,
				r ? tq_pq->result_error_message(r) : "no result");
	tq_pg_clear(r);
	return rc;
}

int tq_pg_wake_open(struct tq_queue *base, const char *node, struct tq_wake **wp,
		    struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	char channel[WAKE_CHANNEL_MAX] = "", sql[WAKE_CHANNEL_MAX + 16], why[256];
	struct tq_pg_wake *w;
	int rc;

	*wp = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	w->base.ops = &tq_pg_ops;
	strlcpy(w->node, node ? node : "", sizeof(w->node));
	/* taskq's connect: its timeout, and the server's last words (a
	 * restart's FATAL) kept off the supervisor's stderr */
	if (tq_pg_connect(q->url, 0, &w->conn, why, sizeof(why)) < 0) {
		rc = tq_err_set(err, TQ_EIO, "listen for other nodes: cannot connect to %s: %s",
				q->shown, why);
		goto fail;
	}
	if ((rc = wake_exec(q, w->conn, "SELECT " WAKE_CHANNEL, channel, sizeof(channel),
			    err)) < 0)
		goto fail;
	/* an identifier of our own making, checked all the same: it is put
	 * into SQL as it is (LISTEN takes no parameter) */
	if (strncmp(channel, "tq_wake_", 8) != 0 || channel[8] == '\0' ||
	    strspn(channel + 8, "0123456789abcdef") != strlen(channel + 8)) {
		rc = tq_err_set(err, TQ_EIO, "listen for other nodes: unexpected channel "
				"\"%s\"", channel);
		goto fail;
	}
	snprintf(sql, sizeof(sql), "LISTEN %s", channel);
	if ((rc = wake_exec(q, w->conn, sql, NULL, 0, err)) < 0)
		goto fail;
	*wp = &w->base;
	return 0;
fail:
	if (w->conn != NULL)
		tq_pq->finish(w->conn);
	free(w);
	return rc;
}

int tq_pg_wake_fd(const struct tq_wake *base)
{
	const struct tq_pg_wake *w = (const struct tq_pg_wake *)base;

	return tq_pq->socket(w->conn);
}

int tq_pg_wake_take(struct tq_wake *base, struct tq_err *err)
{
	struct tq_pg_wake *w = (struct tq_pg_wake *)base;
	PGnotify *n;
	int got = 0;

	if (tq_pq->consume_input(w->conn) == 0 || tq_pq->status(w->conn) != CONNECTION_OK)
		return tq_err_set(err, TQ_EIO, "listen for other nodes: the connection was "
				  "lost");
	while ((n = tq_pq->notifies(w->conn)) != NULL) {
		if (n->extra == NULL || strcmp(n->extra, w->node) != 0)
			got++;
		tq_pq->freemem(n);
	}
	return got;
}

void tq_pg_wake_close(struct tq_wake *base)
{
	struct tq_pg_wake *w = (struct tq_pg_wake *)base;

	if (w == NULL)
		return;
	tq_pq->finish(w->conn);
	free(w);
}

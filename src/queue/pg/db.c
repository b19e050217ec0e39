/*
 * db.c - the PostgreSQL backend's connection: open (libpq loaded, the
 * schema made or migrated under an advisory lock), statements with their
 * parameters, results, transactions, and the mapping of PostgreSQL's
 * errors to TQ_E* codes.
 *
 * Concurrency: every connection runs READ COMMITTED. What SQLite gets from
 * its one writer (BEGIN IMMEDIATE), this backend gets from row locks: a
 * claim locks the task it takes (FOR UPDATE SKIP LOCKED, so claimers on
 * every node pass each other) and the row of a group with a limit; a
 * finish locks its task's row first, so its fence and its writes see one
 * state. A deadlock or a serialization failure PostgreSQL reports is
 * TQ_EBUSY, as a lock wait past the busy timeout (lock_timeout) is: the
 * callers treat it as SQLite's busy database.
 *
 * Outages (a restart of the server, a stop, pg_terminate_backend): a lost
 * connection is TQ_EOFFLINE, and the next statement outside a transaction
 * makes a new one first (reconnect), waiting RECONNECT_MIN_MS, doubling to
 * RECONNECT_MAX_MS with jitter, between failed tries: a caller that calls
 * often (a worker's renewal) gets TQ_EOFFLINE at once between tries, never
 * a connect per call. A connection the server ended while it was idle is
 * found before a statement is sent (dead(): its socket is readable, at its
 * end), so that statement goes on a new connection instead of failing.
 * Nothing is sent twice here: a statement that was on the wire when the
 * connection went may or may not have been done (a COMMIT's outcome is
 * unknown), so it fails, and its caller, which knows what it was, finds
 * out (a submit's token, a log chunk's line numbers, a finish's fence).
 * The session's settings are made again on each new connection; session
 * advisory locks are not (a log writer takes its own again: log.c), and
 * nothing here prepares a named statement, so none is to be made again.
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

#include "common/parse.h"
#include "common/secret.h"
#include "common/sys.h"
#include "queue/home.h"
#include "pg_schema.h"

/* The schema version this binary writes (the version row of pg_schema.sql,
 * the number of the SQLite schema it mirrors). */
#define TQ_PG_SCHEMA_VERSION 12

/* A new connection after one was lost: the wait after a failed try, from
 * MIN doubling to MAX, each with up to a quarter more at random (nodes that
 * lost the server together do not all knock at once). */
#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 2000
/* How long one connect may take (libpq's connect_timeout, seconds), unless
 * the locator or PGCONNECT_TIMEOUT says: libpq's own default is to wait as
 * long as TCP does, and a worker reconnecting waits with its task's pipes
 * unread. */
#define CONNECT_TIMEOUT_S "3"

/* The advisory lock every migrator holds (two nodes starting at once): the
 * bytes 'tskq' and 'migr', as SQLite's application_id is 'tskq'. */
#define TQ_PG_MIGRATE_LOCK "1953721201, 1835624306"

/* Migrations, version N-1 -> N, each the twin of migrations/N.sql, written
 * to run again on a database set back by hand (IF NOT EXISTS). The schema
 * was first written at 7. */
static const struct {
	int64_t version;
	const char *sql;
} migrations[] = {
	{ 8, "ALTER TABLE tasks ADD COLUMN IF NOT EXISTS warm bigint NOT NULL DEFAULT 0;"
	     "ALTER TABLE tasks ADD COLUMN IF NOT EXISTS idle_timeout_ms bigint NOT NULL"
	     " DEFAULT 0;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS agent text;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS warm_pid bigint;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS warm_start bigint;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS warm_node text;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS warm_at bigint;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS idle_since bigint;"
	     "ALTER TABLE sessions ADD COLUMN IF NOT EXISTS close_requested_at bigint;"
	     "CREATE INDEX IF NOT EXISTS sessions_warm ON sessions(warm_node)"
	     " WHERE warm_pid IS NOT NULL" },
	{ 9, "DROP INDEX IF EXISTS tasks_lease" },
	{ 10, "CREATE TABLE IF NOT EXISTS supervisors (node text PRIMARY KEY, pid bigint"
	      " NOT NULL, proc_start bigint, started_at bigint NOT NULL, heartbeat_at bigint"
	      " NOT NULL, workers bigint NOT NULL, max_warm bigint NOT NULL DEFAULT 0,"
	      " containment text, stopped_at bigint)" },
	/* 11 is SQLite's own (migrations/011.sql: how SQLite stores the same
	 * columns); 12: what each attempt stored in its task's log, and the
	 * meta keys' index in byte order (PostgreSQL's own: submit tokens) */
	{ 12, "ALTER TABLE attempts ADD COLUMN IF NOT EXISTS output_bytes bigint;"
	      "CREATE INDEX IF NOT EXISTS meta_key_bytes ON meta (key COLLATE \"C\")" },
};

void tq_pg_i64(struct tq_pg_params *p, int64_t v)
{
	int i = p->n++;

	snprintf(p->num[i], sizeof(p->num[i]), "%" PRId64, v);
	p->v[i] = p->num[i];
	p->len[i] = 0;
	p->fmt[i] = 0;
}

void tq_pg_dbl(struct tq_pg_params *p, double v)
{
	int i = p->n++;

	snprintf(p->num[i], sizeof(p->num[i]), "%.17g", v);
	p->v[i] = p->num[i];
	p->len[i] = 0;
	p->fmt[i] = 0;
}

void tq_pg_txt(struct tq_pg_params *p, const char *s)
{
	int i = p->n++;

	p->v[i] = s;
	p->len[i] = 0;
	p->fmt[i] = 0;
}

void tq_pg_null(struct tq_pg_params *p)
{
	tq_pg_txt(p, NULL);
}

void tq_pg_opt(struct tq_pg_params *p, int64_t v, int64_t none)
{
	if (v == none)
		tq_pg_null(p);
	else
		tq_pg_i64(p, v);
}

void tq_pg_bin(struct tq_pg_params *p, const void *data, size_t len)
{
	int i = p->n++;

	p->v[i] = data ? data : "";
	p->len[i] = (int)len;
	p->fmt[i] = 1;
}

/* Map a failed result to a TQ_E* code by its SQLSTATE class. */
static int map_state(const char *state, ConnStatusType cs)
{
	/* the connection is gone (it went with the statement, or before);
	 * 08: connection exceptions; 57P01-03: the server shutting down,
	 * crashed, or not taking connections yet */
	if (cs == CONNECTION_BAD || (state != NULL && (strncmp(state, "08", 2) == 0 ||
	    strcmp(state, "57P01") == 0 || strcmp(state, "57P02") == 0 ||
	    strcmp(state, "57P03") == 0)))
		return TQ_EOFFLINE;
	if (state == NULL)
		return TQ_EIO;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
	    strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0)
		return TQ_EBUSY; /* serialization, deadlock, lock_timeout, canceled */
	if (strcmp(state, "23505") == 0)
		return TQ_EEXIST;
	if (strncmp(state, "23", 2) == 0 || strncmp(state, "22", 2) == 0)
		return TQ_EINVAL;
	if (strcmp(state, "53100") == 0)
		return TQ_ENOSPC;
	if (strncmp(state, "53", 2) == 0)
		return TQ_ENOMEM;
	if (strcmp(state, "42501") == 0)
		return TQ_EPERM;
	if (strcmp(state, "25006") == 0)
		return TQ_EREADONLY;
	if (strncmp(state, "XX", 2) == 0)
		return TQ_ECORRUPT;
	return TQ_EIO;
}

/* libpq's messages end in a newline; one line is wanted. */
static void one_line(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

static int result_error(struct tq_pg *q, PGresult *r, struct tq_err *err, const char *what)
{
	const char *state = r ? tq_pq->result_error_field(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? tq_pq->result_error_field(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char buf[512];
	int code = map_state(state, tq_pq->status(q->conn));

	strlcpy(buf, msg ? msg : tq_pq->error_message(q->conn), sizeof(buf));
	one_line(buf);
	tq_pg_clear(r);
	return tq_err_set(err, code, "%s: %s", what, buf);
}

/* Notices (CREATE ... IF NOT EXISTS, a migration's RAISE) are not for the
 * user: library code never prints. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* libpq's one-line message for a connection that failed, password hidden. */
static void conn_message(PGconn *c, char *buf, size_t n)
{
	strlcpy(buf, c != NULL ? tq_pq->error_message(c) : "out of memory", n);
	one_line(buf);
	tq_secret_mask_urls(buf, strlen(buf), n);
}

int tq_pg_connect(const char *url, int classify, PGconn **connp, char *why, size_t n)
{
	const char *keys[3], *vals[3];
	PGPing ping;
	PGconn *c;
	int k = 0;

	*connp = NULL;
	/* before dbname: what the locator says overrides it */
	if (getenv("PGCONNECT_TIMEOUT") == NULL) {
		keys[k] = "connect_timeout";
		vals[k++] = CONNECT_TIMEOUT_S;
	}
	keys[k] = "dbname";
	vals[k++] = url;
	keys[k] = NULL;
	vals[k] = NULL;
	/* no answer, or a server starting, stopping, recovering: an outage;
	 * one that answers refused us (password, database): not one. A
	 * server that answers the ping may have been starting at the connect
	 * (the database system is starting up): a second connect tells. */
	for (int tries = 0; tries < 2; tries++) {
		c = tq_pq->connectdb_params(keys, vals, 1);
		if (c != NULL && tq_pq->status(c) == CONNECTION_OK) {
			tq_pq->set_notice_processor(c, quiet, NULL);
			*connp = c;
			return 0;
		}
		conn_message(c, why, n);
		if (c == NULL)
			return TQ_ENOMEM;
		tq_pq->finish(c);
		if (!classify)
			return TQ_EOFFLINE;
		if (tries == 0 && (ping = tq_pq->ping_params(keys, vals, 1)) != PQPING_OK)
			return ping == PQPING_NO_ATTEMPT ? TQ_EIO : TQ_EOFFLINE;
	}
	return TQ_EIO;
}

static int session_setup(struct tq_pg *q, struct tq_err *err);
static void send_timeout(struct tq_pg *q);

/* The notices of a store's own connection: kept from the user as quiet()
 * does, but a FATAL or PANIC that arrives while no statement runs is the
 * server's last word before it closes the connection (a restart,
 * pg_terminate_backend): dead() takes it so. */
static void on_notice(void *arg, const char *message)
{
	struct tq_pg *q = arg;

	/* an immediate shutdown's backends say only a WARNING, "terminating
	 * connection because of unexpected SIGQUIT signal" */
	if (strncmp(message, "FATAL", 5) == 0 || strncmp(message, "PANIC", 5) == 0 ||
	    strstr(message, "terminating connection") != NULL)
		q->told = 1;
}

/*
 * Whether the connection is lost: known to libpq, or ended by the server
 * while idle (its socket then holds the server's last message and the end
 * of the stream: read here, which tells libpq, or the message alone, the
 * end not there yet: on_notice). Outside a transaction only: inside one
 * the statement must fail with it.
 */
static int dead(struct tq_pg *q)
{
	struct pollfd p = { .events = POLLIN };

	if (tq_pq->status(q->conn) == CONNECTION_BAD || q->told)
		return 1;
	if (q->in_txn || (p.fd = tq_pq->socket(q->conn)) < 0)
		return p.fd < 0;
	/* a few reads: the message and the end may come apart */
	for (int i = 0; i < 4 && poll(&p, 1, 0) > 0; i++)
		if (tq_pq->consume_input(q->conn) == 0 || q->told ||
		    tq_pq->status(q->conn) == CONNECTION_BAD)
			return 1;
	return 0; /* nothing (more) to read; EINTR: looked at next time */
}

/* A new connection for a lost one, at most once per backoff. 0, or
 * TQ_EOFFLINE with err set. */
static int reconnect(struct tq_pg *q, struct tq_err *err)
{
	int64_t now = tq_mono_ms(), wait;
	PGconn *c = NULL;
	char why[sizeof(q->down)];
	int rc;

	if (now < q->next_connect)
		return tq_err_set(err, TQ_EOFFLINE, "store %s is unreachable: %s", q->shown,
				  q->down);
	rc = tq_pg_connect(q->url, 0, &c, why, sizeof(why));
	if (rc == 0) {
		tq_pq->finish(q->conn);
		q->conn = c;
		q->told = 0;
		tq_pq->set_notice_processor(q->conn, on_notice, q);
		if ((rc = session_setup(q, NULL)) < 0)
			conn_message(q->conn, why, sizeof(why));
	}
	if (rc < 0) {
		strlcpy(q->down, why, sizeof(q->down));
		q->backoff = q->backoff ? q->backoff * 2 : RECONNECT_MIN_MS;
		if (q->backoff > RECONNECT_MAX_MS)
			q->backoff = RECONNECT_MAX_MS;
		wait = q->backoff + arc4random_uniform((uint32_t)(q->backoff / 4 + 1));
		q->next_connect = tq_mono_ms() + wait;
		return tq_err_set(err, TQ_EOFFLINE, "store %s is unreachable: %s", q->shown,
				  why);
	}
	q->backoff = 0;
	q->next_connect = 0;
	q->connected_at = tq_mono_ms();
	q->epoch++;
	return 0;
}

/* The connection, made again first if it was lost (outside a transaction;
 * inside one it fails: the transaction went with it). */
static int alive(struct tq_pg *q, struct tq_err *err, const char *what)
{
	if (!dead(q))
		return 0;
	if (q->in_txn || q->pinned > 0)
		return tq_err_set(err, TQ_EOFFLINE, "%s: the connection to store %s was lost",
				  what, q->shown);
	return reconnect(q, err);
}

int tq_pg_connected(struct tq_pg *q, struct tq_err *err)
{
	return alive(q, err, "connect");
}

PGresult *tq_pg_query(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
		      struct tq_err *err, const char *what)
{
	PGresult *r;
	ExecStatusType st;

	if (alive(q, err, what) < 0)
		return NULL;
	send_timeout(q);
	r = tq_pq->exec_params(q->conn, sql, p ? p->n : 0, NULL, p ? p->v : NULL,
			       p ? p->len : NULL, p ? p->fmt : NULL, 0);
	st = r ? tq_pq->result_status(r) : PGRES_FATAL_ERROR;
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return r;
	result_error(q, r, err, what);
	return NULL;
}

int tq_pg_exec(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
	       int64_t *changed, struct tq_err *err, const char *what)
{
	PGresult *r = tq_pg_query(q, sql, p, err, what);

	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (changed) {
		const char *n = tq_pq->cmd_tuples(r);
		*changed = n && *n ? strtoll(n, NULL, 10) : 0;
	}
	tq_pg_clear(r);
	return 0;
}

/* tq_pg_script without the lock timeout's change (send_timeout) first. */
static int run_script(struct tq_pg *q, const char *sql, struct tq_err *err, const char *what)
{
	PGresult *r;
	ExecStatusType st;
	int rc;

	if ((rc = alive(q, err, what)) < 0)
		return rc;
	r = tq_pq->exec(q->conn, sql);
	st = r ? tq_pq->result_status(r) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
		tq_pg_clear(r);
		return 0;
	}
	return result_error(q, r, err, what);
}

/*
 * lock_timeout, changed lazily. tq_pg_set_busy_timeout only notes what the
 * caller wants; the session is told with the next statement: in the same
 * round trip when that statement begins a transaction ("SET ...; BEGIN",
 * tq_pg_begin), else in one of its own just before. A worker sets a short
 * wait around a task's end and its renewals and the long one back after,
 * and each SET was a round trip of its own: two more a task on this
 * backend, whose cost is its round trips. A SET inside a transaction is
 * undone by its rollback, so one made there is not known to hold after one
 * (sent_timeout -1: told again).
 */
static void send_timeout(struct tq_pg *q)
{
	char sql[48];

	if (q->sent_timeout == q->busy_timeout)
		return;
	snprintf(sql, sizeof(sql), "SET lock_timeout = %" PRId64, q->busy_timeout);
	if (run_script(q, sql, NULL, "set the lock timeout") < 0) {
		q->sent_timeout = -1;
		return;
	}
	q->sent_timeout = q->busy_timeout;
	if (q->in_txn)
		q->timeout_in_txn = 1;
}

int tq_pg_script(struct tq_pg *q, const char *sql, struct tq_err *err, const char *what)
{
	send_timeout(q);
	return run_script(q, sql, err, what);
}

void tq_pg_clear(PGresult *r)
{
	if (r != NULL)
		tq_pq->clear(r);
}

int tq_pg_rows(const PGresult *r)
{
	return tq_pq->ntuples(r);
}

int tq_pg_isnull(const PGresult *r, int row, int col)
{
	return tq_pq->getisnull(r, row, col);
}

int64_t tq_pg_get_i64(const PGresult *r, int row, int col, int64_t none)
{
	if (tq_pq->getisnull(r, row, col))
		return none;
	return strtoll(tq_pq->getvalue(r, row, col), NULL, 10);
}

double tq_pg_get_dbl(const PGresult *r, int row, int col)
{
	if (tq_pq->getisnull(r, row, col))
		return 0;
	return strtod(tq_pq->getvalue(r, row, col), NULL);
}

const char *tq_pg_get_txt(const PGresult *r, int row, int col)
{
	return tq_pq->getisnull(r, row, col) ? NULL : tq_pq->getvalue(r, row, col);
}

int tq_pg_dup(const PGresult *r, int row, int col, char **out)
{
	const char *s = tq_pg_get_txt(r, row, col);

	*out = NULL;
	if (s == NULL)
		return 0;
	return (*out = strdup(s)) == NULL ? TQ_ENOMEM : 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "\x" and two hex digits a byte (s, n bytes) decoded into a malloc'd
 * buffer with a NUL after it. */
static int hex_decode(const char *s, size_t n, unsigned char **data, size_t *len)
{
	unsigned char *out;

	if (n < 2 || s[0] != '\\' || s[1] != 'x' || (n - 2) % 2 != 0)
		return TQ_ECORRUPT;
	if ((out = malloc((n - 2) / 2 + 1)) == NULL)
		return TQ_ENOMEM;
	for (size_t i = 2, j = 0; i < n; i += 2, j++) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0) {
			free(out);
			return TQ_ECORRUPT;
		}
		out[j] = (unsigned char)(hi << 4 | lo);
	}
	out[(n - 2) / 2] = '\0';
	*data = out;
	*len = (n - 2) / 2;
	return 0;
}

/* bytea in text results is "\x" and two hex digits a byte (bytea_output
 * hex, set at connect). */
int tq_pg_bytea(const PGresult *r, int row, int col, unsigned char **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	if (tq_pq->getisnull(r, row, col))
		return 0;
	return hex_decode(tq_pq->getvalue(r, row, col),
			  (size_t)tq_pq->getlength(r, row, col), data, len);
}

char *tq_pg_path_enc(const char *path)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(path);
	char *out;

	if (tq_utf8_valid(path))
		return strdup(path);
	if (n > (SIZE_MAX - 3) / 2 || (out = malloc(2 * n + 3)) == NULL)
		return NULL;
	out[0] = '\\';
	out[1] = 'x';
	for (size_t i = 0; i < n; i++) {
		out[2 + 2 * i] = hex[(unsigned char)path[i] >> 4];
		out[3 + 2 * i] = hex[(unsigned char)path[i] & 0xf];
	}
	out[2 * n + 2] = '\0';
	return out;
}

int tq_pg_path_dup(const PGresult *r, int row, int col, char **out)
{
	const char *s = tq_pg_get_txt(r, row, col);
	unsigned char *d;
	size_t len;
	int rc;

	*out = NULL;
	if (s == NULL || s[0] != '\\')
		return tq_pg_dup(r, row, col, out);
	if ((rc = hex_decode(s, strlen(s), &d, &len)) < 0)
		return rc;
	if (strlen((char *)d) != len) {  /* a NUL: no path */
		free(d);
		return TQ_ECORRUPT;
	}
	*out = (char *)d;
	return 0;
}

int tq_pg_begin(struct tq_pg *q, struct tq_err *err)
{
	char sql[64];
	int rc;

	if ((rc = alive(q, err, "begin transaction")) < 0)
		return rc;
	if (q->sent_timeout != q->busy_timeout) {
		/* one round trip: the SET joins the transaction (a multi-
		 * statement query's BEGIN takes what came before it in) */
		snprintf(sql, sizeof(sql), "SET lock_timeout = %" PRId64 "; BEGIN",
			 q->busy_timeout);
		if ((rc = run_script(q, sql, err, "begin transaction")) == 0) {
			q->sent_timeout = q->busy_timeout;
			q->timeout_in_txn = 1;
		}
	} else {
		rc = tq_pg_exec(q, "BEGIN", NULL, NULL, err, "begin transaction");
	}
	if (rc == 0)
		q->in_txn = 1;
	return rc;
}

/* The transaction is over: a SET it made holds if it committed. */
static void txn_over(struct tq_pg *q, int committed)
{
	if (q->timeout_in_txn && !committed)
		q->sent_timeout = -1;
	q->timeout_in_txn = 0;
	q->in_txn = 0;
}

int tq_pg_commit(struct tq_pg *q, struct tq_err *err)
{
	int rc = tq_pg_exec(q, "COMMIT", NULL, NULL, err, "commit");
	char m[TQ_ERR_MAX];

	/* lost on the way: done or not, nobody here can tell (the caller
	 * finds out: a submit by its token) */
	if (rc == TQ_EOFFLINE && err != NULL) {
		strlcpy(m, err->msg, sizeof(m));
		tq_err_set(err, rc, "%s (its outcome is unknown)", m);
	}
	txn_over(q, rc == 0);
	return rc;
}

void tq_pg_rollback(struct tq_pg *q)
{
	PGresult *r;

	if (tq_pq->transaction_status(q->conn) != PQTRANS_IDLE) {
		r = tq_pq->exec_params(q->conn, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0);
		tq_pg_clear(r);
	}
	txn_over(q, 0);
}


/* The locator as it may be shown: a URL's password masked
 * (common/secret.c), and a key=value string's password=... too. */
static void shown_of(const char *url, char *buf, size_t n)
{
	char *p;

	strlcpy(buf, url, n);
	tq_secret_mask_urls(buf, strlen(buf), n);
	if ((p = strstr(buf, "password=")) != NULL &&
	    (p == buf || p[-1] == ' ')) {
		size_t end = strcspn(p + 9, " ");
		memmove(p + 9 + 3, p + 9 + end, strlen(p + 9 + end) + 1);
		memcpy(p + 9, "***", 3);
	}
}

static int schema_version(struct tq_pg *q, int64_t *v, struct tq_err *err)
{
	PGresult *r = tq_pg_query(q, "SELECT to_regclass('tq_schema') IS NOT NULL", NULL,
				  err, "read schema version");

	*v = 0;
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (strcmp(tq_pg_get_txt(r, 0, 0), "t") != 0) {
		tq_pg_clear(r);
		return 0;
	}
	tq_pg_clear(r);
	if ((r = tq_pg_query(q, "SELECT max(version) FROM tq_schema", NULL, err,
			     "read schema version")) == NULL)
		return err ? err->code : TQ_EIO;
	*v = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

/*
 * Make the schema, or migrate it forward, under the advisory lock: a
 * second migrator waits, then finds the version it needs. Each step is its
 * own transaction with its version row, so a crash between steps leaves a
 * database one step further, never half of one.
 */
static int migrate(struct tq_pg *q, int64_t *version, struct tq_err *err)
{
	int64_t v = 0;
	int rc;

	if ((rc = tq_pg_exec(q, "SELECT pg_advisory_lock(" TQ_PG_MIGRATE_LOCK ")", NULL,
			     NULL, err, "take the migration lock")) < 0)
		return rc;
	if ((rc = schema_version(q, &v, err)) < 0)
		goto out;
	if (v > TQ_PG_SCHEMA_VERSION) {
		rc = tq_err_set(err, TQ_ENEWER, "store %s: schema version %" PRId64 " is "
				"newer than this taskq's %d: upgrade taskq", q->shown, v,
				TQ_PG_SCHEMA_VERSION);
		goto out;
	}
	if (v == 0) {
		if ((rc = tq_pg_begin(q, err)) < 0)
			goto out;
		if ((rc = tq_pg_script(q, tq_pg_schema_sql, err, "create schema")) < 0 ||
		    (rc = tq_pg_commit(q, err)) < 0) {
			tq_pg_rollback(q);
			goto out;
		}
		v = TQ_PG_SCHEMA_VERSION;
	}
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
		struct tq_pg_params p = { 0 };

		if (migrations[i].version <= v)
			continue;
		tq_pg_i64(&p, migrations[i].version);
		if ((rc = tq_pg_begin(q, err)) < 0)
			goto out;
		if ((rc = tq_pg_script(q, migrations[i].sql, err, "migrate")) < 0 ||
		    (rc = tq_pg_exec(q, "UPDATE tq_schema SET version = $1", &p, NULL, err,
				     "migrate")) < 0 ||
		    (rc = tq_pg_commit(q, err)) < 0) {
			tq_pg_rollback(q);
			goto out;
		}
		v = migrations[i].version;
	}
	rc = 0;
out:
	tq_pg_exec(q, "SELECT pg_advisory_unlock(" TQ_PG_MIGRATE_LOCK ")", NULL, NULL, NULL,
		   "release the migration lock");
	*version = v;
	return rc;
}

/* The session's settings: times and bytes as this backend reads them, and
 * the busy timeout as lock_timeout. */
static int session_setup(struct tq_pg *q, struct tq_err *err)
{
	char sql[160];
	int rc;

	snprintf(sql, sizeof(sql), "SET bytea_output = 'hex'; SET lock_timeout = %" PRId64
		 "; SET synchronous_commit = %s", q->busy_timeout,
		 (q->flags & TQ_OPEN_DURABLE) ? "on" : "off");
	q->timeout_in_txn = 0;
	if ((rc = run_script(q, sql, err, "set up the session")) < 0) {
		q->sent_timeout = -1;
		return rc;
	}
	q->sent_timeout = q->busy_timeout;
	return 0;
}

int tq_pg_open(struct tq_queue **qp, const char *url, unsigned flags, struct tq_err *err)
{
	struct tq_pg *q;
	int64_t v = 0;
	char msg[512];
	int rc;

	*qp = NULL;
	if ((rc = tq_pq_load(err)) < 0)
		return rc;
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	q->base.ops = &tq_pg_ops;
	q->flags = flags;
	q->busy_timeout = TQ_BUSY_TIMEOUT_MS;
	shown_of(url, q->shown, sizeof(q->shown));
	/* the node a wake names (wake.c): unknown, every node's handle takes
	 * it as another's, which costs a wake-up, never a task */
	if (tq_node_self(q->node, sizeof(q->node), NULL) < 0)
		q->node[0] = '\0';
	if ((q->url = strdup(url)) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = tq_pg_connect(url, 1, &q->conn, msg, sizeof(msg))) < 0) {
		rc = tq_err_set(err, rc, "store %s: cannot connect: %s", q->shown, msg);
		goto fail;
	}
	q->connected_at = tq_mono_ms();
	q->epoch = 1;
	tq_pq->set_notice_processor(q->conn, on_notice, q);
	if ((rc = session_setup(q, err)) < 0)
		goto fail;
	if ((rc = schema_version(q, &v, err)) < 0)
		goto fail;
	if (v == 0 && (flags & TQ_OPEN_NOCREATE)) {
		rc = tq_err_set(err, TQ_ENOTFOUND, "store %s: no taskq schema in this "
				"database", q->shown);
		goto fail;
	}
	if (v > TQ_PG_SCHEMA_VERSION) {
		rc = tq_err_set(err, TQ_ENEWER, "store %s: schema version %" PRId64 " is newer "
				"than this taskq's %d: upgrade taskq", q->shown, v,
				TQ_PG_SCHEMA_VERSION);
		goto fail;
	}
	if (v < TQ_PG_SCHEMA_VERSION && (rc = migrate(q, &v, err)) < 0)
		goto fail;
	*qp = &q->base;
	return 0;
fail:
	if (q->conn)
		tq_pq->finish(q->conn);
	free(q->url);
	free(q);
	return rc;
}

int tq_pg_schema_migrate(struct tq_queue *base, int64_t *version, struct tq_err *err)
{
	return migrate(tq_pg_of(base), version, err);
}

int tq_pg_schema_version(struct tq_queue *base, int64_t *version, struct tq_err *err)
{
	return schema_version(tq_pg_of(base), version, err);
}

/* Only lock_timeout changes (a worker shortens it around each task's end
 * record and its renewals, and restores it), and lazily: send_timeout. */
void tq_pg_set_busy_timeout(struct tq_queue *base, int64_t ms)
{
	/* told to the session with its next statement (send_timeout) */
	tq_pg_of(base)->busy_timeout = ms;
}

void tq_pg_close(struct tq_queue *base)
{
	struct tq_pg *q = tq_pg_of(base);

	if (q->export_path != NULL) {
		unlink(q->export_path);
		free(q->export_path);
	}
	tq_pq->finish(q->conn);
	free(q->url);
	free(q);
}

const char *tq_pg_notice(const struct tq_queue *base)
{
	(void)base;
	return NULL;
}

int64_t tq_pg_connected_at(const struct tq_queue *base)
{
	return ((const struct tq_pg *)base)->connected_at;
}

/* ------------------------------------------------------------------ */
/* meta                                                               */

int tq_pg_meta_set(struct tq_queue *base, const char *key, const char *value,
		   struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, key);
	tq_pg_txt(&p, value);
	return tq_pg_exec(tq_pg_of(base), "INSERT INTO meta(key, value) VALUES ($1, $2)"
			  " ON CONFLICT (key) DO UPDATE SET value = excluded.value", &p,
			  NULL, err, "set meta");
}

int tq_pg_meta_get(struct tq_queue *base, const char *key, char **value,
		   struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rc = 0;

	*value = NULL;
	tq_pg_txt(&p, key);
	if ((r = tq_pg_query(tq_pg_of(base), "SELECT value FROM meta WHERE key = $1", &p,
			     err, "read meta")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0 && tq_pg_dup(r, 0, 0, value) < 0)
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	tq_pg_clear(r);
	return rc;
}

/*
 * workers.c - the worker registry, each node's supervisor row, small meta
 * values, and the stdin chunks that `taskq write` leaves for a running
 * task's worker.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "common/sys.h"

int tq_sqlite_worker_add(struct tq_queue *base, const char *node, int pid, int64_t proc_start,
			 int slot, int supervisor_pid, int64_t *id, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;
	int rc;

	if (node == NULL || node[0] == '\0' || strlen(node) > TQ_NODE_MAX)
		return tq_err_set(err, TQ_EINVAL, "register worker: node name of 1 to %d bytes",
				  TQ_NODE_MAX);
	if ((st = tq_db_stmt(q, ST_WORKER_ADD, err)) == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int(st, 1, pid);
	sqlite3_bind_int64(st, 2, proc_start);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, slot);
	sqlite3_bind_int(st, 5, supervisor_pid);
	sqlite3_bind_int64(st, 6, tq_now_ms());
	if ((rc = tq_db_exec_st(q, st, err, "register worker")) < 0)
		return rc;
	*id = sqlite3_last_insert_rowid(q->db);
	/* its claims record the node without reading the row back */
	q->worker_id = *id;
	strlcpy(q->node, node, sizeof(q->node));
	return 0;
}

int tq_sqlite_worker_beat(struct tq_queue *base, int64_t id, int64_t task_id,
			 struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_WORKER_BEAT, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, tq_now_ms());
	tq_bind_opt_i64(st, 3, task_id, 0);
	return tq_db_exec_st(q, st, err, "worker heartbeat");
}

int tq_sqlite_worker_stop(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_WORKER_STOP, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, tq_now_ms());
	return tq_db_exec_st(q, st, err, "stop worker");
}

int tq_sqlite_workers(struct tq_queue *base, struct tq_worker_info **list, size_t *n,
		     struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_WORKERS, err);
	struct tq_worker_info *out = NULL;
	size_t cap = 0, count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct tq_worker_info *w;
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct tq_worker_info *nw = reallocarray(out, ncap, sizeof(*nw));
			if (nw == NULL) {
				tq_db_done(st);
				free(out);
				return tq_err_set(err, TQ_ENOMEM, "out of memory");
			}
			out = nw;
			cap = ncap;
		}
		w = &out[count++];
		w->id = sqlite3_column_int64(st, 0);
		w->pid = sqlite3_column_int(st, 1);
		w->proc_start = sqlite3_column_int64(st, 2);
		w->slot = sqlite3_column_int(st, 3);
		w->supervisor_pid = sqlite3_column_int(st, 4);
		w->started_at = sqlite3_column_int64(st, 5);
		w->heartbeat_at = sqlite3_column_int64(st, 6);
		w->task_id = sqlite3_column_int64(st, 7);
		w->node[0] = '\0';
		if (sqlite3_column_type(st, 8) == SQLITE_TEXT)
			strlcpy(w->node, (const char *)sqlite3_column_text(st, 8),
				sizeof(w->node));
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		free(out);
		return tq_db_error(q, rc, err, "read workers");
	}
	*list = out;
	*n = count;
	return 0;
}

int tq_sqlite_supervisor_beat(struct tq_queue *base, const struct tq_supervisor_info *s,
			      struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st;

	if (s->node[0] == '\0' || strlen(s->node) > TQ_NODE_MAX)
		return tq_err_set(err, TQ_EINVAL, "supervisor: node name of 1 to %d bytes",
				  TQ_NODE_MAX);
	if ((st = tq_db_stmt(q, ST_SUPERVISOR_BEAT, err)) == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_text(st, 1, s->node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, s->pid);
	sqlite3_bind_int64(st, 3, s->proc_start);
	sqlite3_bind_int64(st, 4, s->started_at);
	sqlite3_bind_int64(st, 5, tq_now_ms());
	sqlite3_bind_int(st, 6, s->workers);
	sqlite3_bind_int(st, 7, s->max_warm);
	if (s->containment != NULL)
		sqlite3_bind_text(st, 8, s->containment, -1, SQLITE_STATIC);
	return tq_db_exec_st(q, st, err, "supervisor heartbeat");
}

int tq_sqlite_supervisor_stop(struct tq_queue *base, const char *node, int pid,
			      struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_SUPERVISOR_STOP, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, pid);
	sqlite3_bind_int64(st, 3, tq_now_ms());
	return tq_db_exec_st(q, st, err, "supervisor stopped");
}

int tq_sqlite_supervisors(struct tq_queue *base, struct tq_supervisor_info **list,
			  size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_SUPERVISORS, err);
	struct tq_supervisor_info *out = NULL;
	size_t cap = 0, count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct tq_supervisor_info *v;

		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			struct tq_supervisor_info *nv = reallocarray(out, ncap, sizeof(*nv));

			if (nv == NULL) {
				rc = SQLITE_NOMEM;
				break;
			}
			out = nv;
			cap = ncap;
		}
		v = &out[count++];
		memset(v, 0, sizeof(*v));
		if (sqlite3_column_type(st, 0) == SQLITE_TEXT)
			strlcpy(v->node, (const char *)sqlite3_column_text(st, 0),
				sizeof(v->node));
		v->pid = sqlite3_column_int(st, 1);
		v->proc_start = sqlite3_column_int64(st, 2);
		v->started_at = sqlite3_column_int64(st, 3);
		v->heartbeat_at = sqlite3_column_int64(st, 4);
		v->workers = sqlite3_column_int(st, 5);
		v->max_warm = sqlite3_column_int(st, 6);
		v->stopped_at = sqlite3_column_int64(st, 8);
		if (sqlite3_column_type(st, 7) == SQLITE_TEXT &&
		    (v->containment = strdup((const char *)sqlite3_column_text(st, 7))) == NULL) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_supervisor_list_free(out, count);
		return rc == SQLITE_NOMEM ? tq_err_set(err, TQ_ENOMEM, "out of memory")
					  : tq_db_error(q, rc, err, "read supervisors");
	}
	*list = out;
	*n = count;
	return 0;
}

int tq_sqlite_worker_results(struct tq_queue *base, const int64_t *ids, size_t n,
			    int64_t *ran, int64_t *failed, int64_t *pending,
			    struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_WORKER_RESULTS, err);
	char *json = NULL;
	size_t len = 2;
	int rc;

	*ran = *failed = *pending = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	if ((json = malloc(n * 24 + 3)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	json[0] = '[';
	json[1] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(json + len - 1, 24, "%s%lld", i ? "," : "",
					(long long)ids[i]);
	json[len - 1] = ']';
	json[len] = '\0';
	sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ran = sqlite3_column_int64(st, 0);
		*failed = sqlite3_column_int64(st, 1);
		*pending = sqlite3_column_int64(st, 2);
	}
	tq_db_done(st);
	free(json);
	return rc == SQLITE_ROW ? 0 : tq_db_error(q, rc, err, "read drain results");
}

int tq_sqlite_meta_set(struct tq_queue *base, const char *key, const char *value,
		      struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_META_SET, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	tq_bind_text(st, 2, value);
	return tq_db_exec_st(q, st, err, "write meta");
}

int tq_sqlite_meta_get(struct tq_queue *base, const char *key, char **value,
		      struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_META_GET, err);
	int rc;

	*value = NULL;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && tq_col_strdup(st, 0, value) < 0) {
		tq_db_done(st);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	tq_db_done(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : tq_db_error(q, rc, err, "read meta");
}

/* ------------------------------------------------------------------ */

int tq_sqlite_stdin_write(struct tq_queue *base, int64_t id, const void *data, size_t len,
			 int eof, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct tq_task t;
	sqlite3_stmt *st;
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	if ((rc = tq_task_load(q, id, 0, &t, err)) < 0)
		goto fail;
	if (t.stdin_mode != TQ_STDIN_PIPE)
		rc = tq_err_set(err, TQ_ESTATE, "task %lld does not read its stdin from "
				"taskq write (submit it with --stdin pipe)", (long long)id);
	else if (tq_state_final(t.state))
		rc = tq_err_set(err, TQ_ESTATE, "task %lld has ended (%s)", (long long)id,
				tq_state_name(t.state));
	tq_task_release(&t);
	if (rc < 0)
		goto fail;
	st = tq_db_stmt(q, ST_STDIN_EOF_FIND, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	tq_db_done(st);
	if (rc == SQLITE_ROW) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld: its input was already ended "
				"(--eof)", (long long)id);
		goto fail;
	}
	st = tq_db_stmt(q, ST_STDIN_WRITE, err);
	if (st == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_blob64(st, 2, data ? data : "", len, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, eof != 0);
	sqlite3_bind_int64(st, 4, tq_now_ms());
	if ((rc = tq_db_exec_st(q, st, err, "store stdin data")) < 0 ||
	    (rc = tq_db_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_db_rollback(q);
	return rc;
}

int tq_sqlite_stdin_pending(struct tq_queue *base, int64_t id, int64_t after, size_t max,
			   struct tq_stdin_chunk **list, size_t *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_STDIN_PENDING, err);
	struct tq_stdin_chunk *out;
	size_t count = 0;
	int rc;

	*list = NULL;
	*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	if ((out = calloc(max ? max : 1, sizeof(*out))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, after);
	sqlite3_bind_int64(st, 3, (int64_t)max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && count < max) {
		struct tq_stdin_chunk *c = &out[count];
		size_t len = (size_t)sqlite3_column_bytes(st, 1);
		c->seq = sqlite3_column_int64(st, 0);
		c->eof = sqlite3_column_int(st, 2);
		c->len = len;
		if ((c->data = malloc(len ? len : 1)) == NULL) {
			tq_db_done(st);
			tq_stdin_chunks_free(out, count);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
		if (len)
			memcpy(c->data, sqlite3_column_blob(st, 1), len);
		count++;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		tq_stdin_chunks_free(out, count);
		return tq_db_error(q, rc, err, "read stdin data");
	}
	*list = out;
	*n = count;
	return 0;
}

int tq_sqlite_stdin_delivered(struct tq_queue *base, int64_t id, int64_t seq,
			     struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	sqlite3_stmt *st = tq_db_stmt(q, ST_STDIN_DELIVERED, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, seq);
	sqlite3_bind_int64(st, 3, tq_now_ms());
	return tq_db_exec_st(q, st, err, "mark stdin delivered");
}

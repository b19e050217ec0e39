/*
 * misc.c - the rest of the PostgreSQL store's reads and writes: workers
 * and their heartbeats, each node's supervisor row, --stdin pipe data, poll cursors, sessions,
 * statistics and batches. The SQLite backend's workers.c, cursors.c,
 * stats.c and batch.c, statement for statement.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "common/sys.h"

int tq_pg_worker_add(struct tq_queue *base, const char *node, int pid, int64_t proc_start,
		     int slot, int supervisor_pid, int64_t *id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	if (node == NULL || node[0] == '\0' || strlen(node) > TQ_NODE_MAX)
		return tq_err_set(err, TQ_EINVAL, "register worker: node name of 1 to %d bytes",
				  TQ_NODE_MAX);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, proc_start);
	tq_pg_txt(&p, node);
	tq_pg_i64(&p, slot);
	tq_pg_i64(&p, supervisor_pid);
	tq_pg_i64(&p, tq_now_ms());
	r = tq_pg_query(tq_pg_of(base), "INSERT INTO workers(pid, proc_start, host, slot,"
			" supervisor_pid, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5,"
			" $6, $6) RETURNING id", &p, err, "register worker");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	*id = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

int tq_pg_worker_beat(struct tq_queue *base, int64_t id, int64_t task_id,
		      struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, id);
	tq_pg_i64(&p, tq_now_ms());
	tq_pg_opt(&p, task_id, 0);
	return tq_pg_exec(tq_pg_of(base), "UPDATE workers SET heartbeat_at = $2, task_id = $3"
			  " WHERE id = $1", &p, NULL, err, "worker heartbeat");
}

int tq_pg_worker_stop(struct tq_queue *base, int64_t id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, id);
	tq_pg_i64(&p, tq_now_ms());
	return tq_pg_exec(tq_pg_of(base), "UPDATE workers SET stopped_at = $2, task_id = NULL"
			  " WHERE id = $1", &p, NULL, err, "stop worker");
}

int tq_pg_workers(struct tq_queue *base, struct tq_worker_info **list, size_t *n,
		  struct tq_err *err)
{
	struct tq_worker_info *out = NULL;
	PGresult *r;
	int rows;

	*list = NULL;
	*n = 0;
	/* a worker's task is the one running under its lease: the claim and
	 * the finish write the task's row, not the worker's */
	r = tq_pg_query(tq_pg_of(base), "SELECT w.id, w.pid, w.proc_start, w.slot,"
			" w.supervisor_pid, w.started_at, w.heartbeat_at, (SELECT max(t.id)"
			" FROM tasks t WHERE t.state = 'running' AND t.worker_id = w.id), w.host"
			" FROM workers w WHERE w.stopped_at IS NULL ORDER BY w.id", NULL, err,
			"read workers");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (out = calloc((size_t)rows, sizeof(*out))) == NULL) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	for (int i = 0; i < rows; i++) {
		struct tq_worker_info *w = &out[i];
		const char *node = tq_pg_get_txt(r, i, 8);

		w->id = tq_pg_get_i64(r, i, 0, 0);
		w->pid = (int)tq_pg_get_i64(r, i, 1, 0);
		w->proc_start = tq_pg_get_i64(r, i, 2, 0);
		w->slot = (int)tq_pg_get_i64(r, i, 3, 0);
		w->supervisor_pid = (int)tq_pg_get_i64(r, i, 4, 0);
		w->started_at = tq_pg_get_i64(r, i, 5, 0);
		w->heartbeat_at = tq_pg_get_i64(r, i, 6, 0);
		w->task_id = tq_pg_get_i64(r, i, 7, 0);
		if (node != NULL)
			strlcpy(w->node, node, sizeof(w->node));
	}
	tq_pg_clear(r);
	*list = out;
	*n = (size_t)rows;
	return 0;
}

int tq_pg_supervisor_beat(struct tq_queue *base, const struct tq_supervisor_info *s,
			  struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	if (s->node[0] == '\0' || strlen(s->node) > TQ_NODE_MAX)
		return tq_err_set(err, TQ_EINVAL, "supervisor: node name of 1 to %d bytes",
				  TQ_NODE_MAX);
	tq_pg_txt(&p, s->node);
	tq_pg_i64(&p, s->pid);
	tq_pg_i64(&p, s->proc_start);
	tq_pg_i64(&p, s->started_at);
	tq_pg_i64(&p, tq_now_ms());
	tq_pg_i64(&p, s->workers);
	tq_pg_i64(&p, s->max_warm);
	tq_pg_txt(&p, s->containment);
	return tq_pg_exec(tq_pg_of(base), "INSERT INTO supervisors(node, pid, proc_start,"
			  " started_at, heartbeat_at, workers, max_warm, containment, stopped_at)"
			  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL) ON CONFLICT (node) DO"
			  " UPDATE SET pid = excluded.pid, proc_start = excluded.proc_start,"
			  " started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,"
			  " workers = excluded.workers, max_warm = excluded.max_warm,"
			  " containment = excluded.containment, stopped_at = NULL", &p, NULL, err,
			  "supervisor heartbeat");
}

int tq_pg_supervisor_stop(struct tq_queue *base, const char *node, int pid,
			  struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, node);
	tq_pg_i64(&p, pid);
	tq_pg_i64(&p, tq_now_ms());
	return tq_pg_exec(tq_pg_of(base), "UPDATE supervisors SET stopped_at = $3"
			  " WHERE node = $1 AND pid = $2", &p, NULL, err, "supervisor stopped");
}

int tq_pg_supervisors(struct tq_queue *base, struct tq_supervisor_info **list, size_t *n,
		      struct tq_err *err)
{
	struct tq_supervisor_info *out = NULL;
	PGresult *r;
	int rows, rc = 0;

	*list = NULL;
	*n = 0;
	r = tq_pg_query(tq_pg_of(base), "SELECT node, pid, proc_start, started_at,"
			" heartbeat_at, workers, max_warm, containment, stopped_at"
			" FROM supervisors ORDER BY node", NULL, err, "read supervisors");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (out = calloc((size_t)rows, sizeof(*out))) == NULL) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	for (int i = 0; i < rows && rc == 0; i++) {
		struct tq_supervisor_info *v = &out[i];
		const char *node = tq_pg_get_txt(r, i, 0);

		if (node != NULL)
			strlcpy(v->node, node, sizeof(v->node));
		v->pid = (int)tq_pg_get_i64(r, i, 1, 0);
		v->proc_start = tq_pg_get_i64(r, i, 2, 0);
		v->started_at = tq_pg_get_i64(r, i, 3, 0);
		v->heartbeat_at = tq_pg_get_i64(r, i, 4, 0);
		v->workers = (int)tq_pg_get_i64(r, i, 5, 0);
		v->max_warm = (int)tq_pg_get_i64(r, i, 6, 0);
		v->stopped_at = tq_pg_get_i64(r, i, 8, 0);
		if (tq_pg_dup(r, i, 7, &v->containment) < 0)
			rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	tq_pg_clear(r);
	if (rc < 0) {
		tq_supervisor_list_free(out, (size_t)rows);
		return rc;
	}
	*list = out;
	*n = (size_t)rows;
	return 0;
}

int tq_pg_worker_results(struct tq_queue *base, const int64_t *ids, size_t n,
			 int64_t *ran, int64_t *failed, int64_t *pending, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	char *arr;
	size_t len = 0, cap = n * 21 + 3;
	PGresult *r;

	*ran = *failed = *pending = 0;
	if ((arr = malloc(cap)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	len += (size_t)snprintf(arr, cap, "{");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(arr + len, cap - len, "%s%" PRId64, i ? "," : "", ids[i]);
	snprintf(arr + len, cap - len, "}");
	tq_pg_txt(&p, arr);
	r = tq_pg_query(tq_pg_of(base), "SELECT count(DISTINCT a.task_id),"
			" count(DISTINCT CASE WHEN t.state IN"
			" ('failed','timed_out','killed','canceled') THEN a.task_id END),"
			" count(DISTINCT CASE WHEN t.state IN " TQ_PG_UNFINISHED
			" THEN a.task_id END) FROM attempts a JOIN tasks t ON t.id = a.task_id"
			" WHERE a.worker_id = ANY($1::bigint[])", &p, err, "read worker results");
	free(arr);
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	*ran = tq_pg_get_i64(r, 0, 0, 0);
	*failed = tq_pg_get_i64(r, 0, 1, 0);
	*pending = tq_pg_get_i64(r, 0, 2, 0);
	tq_pg_clear(r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* --stdin pipe                                                       */

int tq_pg_stdin_write(struct tq_queue *base, int64_t id, const void *data, size_t len,
		      int eof, struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	struct tq_task t;
	PGresult *r;
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	tq_pg_i64(&p, id);
	/* the task's row locked: two writers' --eof checks see each other */
	if ((rc = tq_pg_exec(q, "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", &p, NULL, err,
			     "store stdin data")) < 0 ||
	    (rc = tq_pg_task_load(q, id, 0, &t, err)) < 0)
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
	if ((r = tq_pg_query(q, "SELECT 1 FROM stdin_writes WHERE task_id = $1 AND eof = 1",
			     &p, err, "store stdin data")) == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto fail;
	}
	rc = tq_pg_rows(r) > 0;
	tq_pg_clear(r);
	if (rc) {
		rc = tq_err_set(err, TQ_ESTATE, "task %lld: its input was already ended "
				"(--eof)", (long long)id);
		goto fail;
	}
	tq_pg_bin(&p, data, len);
	tq_pg_i64(&p, eof != 0);
	tq_pg_i64(&p, tq_now_ms());
	if ((rc = tq_pg_exec(q, "INSERT INTO stdin_writes(task_id, data, eof, created_at)"
			     " VALUES ($1, $2, $3, $4)", &p, NULL, err,
			     "store stdin data")) < 0 ||
	    (rc = tq_pg_commit(q, err)) < 0)
		goto fail;
	return 0;
fail:
	tq_pg_rollback(q);
	return rc;
}

int tq_pg_stdin_pending(struct tq_queue *base, int64_t id, int64_t after, size_t max,
			struct tq_stdin_chunk **list, size_t *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct tq_stdin_chunk *out;
	size_t count = 0;
	PGresult *r;
	int rows;

	*list = NULL;
	*n = 0;
	tq_pg_i64(&p, id);
	tq_pg_i64(&p, after);
	tq_pg_i64(&p, (int64_t)max);
	r = tq_pg_query(tq_pg_of(base), "SELECT id, data, eof FROM stdin_writes WHERE"
			" task_id = $1 AND id > $2 AND delivered_at IS NULL ORDER BY id LIMIT $3",
			&p, err, "read stdin data");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if ((out = calloc(max ? max : 1, sizeof(*out))) == NULL) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	rows = tq_pg_rows(r);
	for (int i = 0; i < rows && count < max; i++) {
		struct tq_stdin_chunk *c = &out[count];
		unsigned char *d = NULL;

		c->seq = tq_pg_get_i64(r, i, 0, 0);
		c->eof = (int)tq_pg_get_i64(r, i, 2, 0);
		if (tq_pg_bytea(r, i, 1, &d, &c->len) < 0 || d == NULL) {
			free(d);
			tq_pg_clear(r);
			tq_stdin_chunks_free(out, count);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
		c->data = d;
		count++;
	}
	tq_pg_clear(r);
	*list = out;
	*n = count;
	return 0;
}

int tq_pg_stdin_delivered(struct tq_queue *base, int64_t id, int64_t seq,
			  struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_i64(&p, id);
	tq_pg_i64(&p, seq);
	tq_pg_i64(&p, tq_now_ms());
	return tq_pg_exec(tq_pg_of(base), "UPDATE stdin_writes SET delivered_at = $3"
			  " WHERE task_id = $1 AND id <= $2 AND delivered_at IS NULL", &p, NULL,
			  err, "mark stdin delivered");
}

/* ------------------------------------------------------------------ */
/* poll cursors                                                       */

static int check_reader(const char *reader, struct tq_err *err)
{
	if (reader == NULL || *reader == '\0')
		return tq_err_set(err, TQ_EINVAL, "poll cursor: empty reader name");
	if (strlen(reader) >= TQ_NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "poll cursor: reader name longer than %d bytes",
				  TQ_NAME_MAX - 1);
	return 0;
}

int tq_pg_cursor_get(struct tq_queue *base, int64_t id, const char *reader,
		     int64_t *line, uint64_t *log_file, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rc;

	*line = 0;
	if (log_file != NULL)
		*log_file = 0;
	if ((rc = check_reader(reader, err)) < 0)
		return rc;
	tq_pg_i64(&p, id);
	tq_pg_txt(&p, reader);
	r = tq_pg_query(tq_pg_of(base), "SELECT c.line, c.log_file FROM tasks t LEFT JOIN"
			" cursors c ON c.task_id = t.id AND c.reader = $2 WHERE t.id = $1", &p,
			err, "read poll cursor");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) == 0) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOTFOUND, "task %lld: no such task", (long long)id);
	}
	*line = tq_pg_get_i64(r, 0, 0, 0);
	if (log_file != NULL)
		*log_file = (uint64_t)tq_pg_get_i64(r, 0, 1, 0);
	tq_pg_clear(r);
	return 0;
}

int tq_pg_cursor_advance(struct tq_queue *base, int64_t id, const char *reader,
			 int64_t from, int64_t to, uint64_t log_file, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0, now_at = 0;
	int rc;

	if ((rc = check_reader(reader, err)) < 0)
		return rc;
	if (from < 0 || to < 0)
		return tq_err_set(err, TQ_EINVAL, "poll cursor: negative line");
	tq_pg_i64(&p, id);
	tq_pg_txt(&p, reader);
	tq_pg_i64(&p, from);
	tq_pg_i64(&p, to);
	tq_pg_i64(&p, tq_now_ms());
	tq_pg_opt(&p, (int64_t)log_file, 0);
	/* one statement, compare and set, as with SQLite: the row is made on
	 * the first move (rows only go with their task), else moved only where
	 * it still holds from */
	if ((rc = tq_pg_exec(tq_pg_of(base), "INSERT INTO cursors(task_id, reader, line,"
			     " updated_at, log_file) SELECT $1, $2, $4, $5, $6 WHERE EXISTS"
			     " (SELECT 1 FROM tasks WHERE id = $1) ON CONFLICT (task_id, reader)"
			     " DO UPDATE SET line = excluded.line, updated_at = excluded.updated_at,"
			     " log_file = excluded.log_file WHERE cursors.line = $3::bigint", &p,
			     &changed, err, "move poll cursor")) < 0)
		return rc;
	if (changed > 0)
		return 0;
	if ((rc = tq_pg_cursor_get(base, id, reader, &now_at, NULL, err)) < 0)
		return rc;
	return tq_err_set(err, TQ_ESTALE, "task %lld: reader %s's cursor moved from %lld to %lld "
			  "meanwhile", (long long)id, reader, (long long)from, (long long)now_at);
}

/* ------------------------------------------------------------------ */
/* sessions                                                           */

int tq_pg_session_get(struct tq_queue *base, const char *key, char **agent_session,
		      struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rc = 0;

	*agent_session = NULL;
	tq_pg_txt(&p, key);
	if ((r = tq_pg_query(tq_pg_of(base), "SELECT agent_session FROM sessions WHERE key = $1",
			     &p, err, "read session")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0 && tq_pg_dup(r, 0, 0, agent_session) < 0)
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	tq_pg_clear(r);
	return rc;
}

int tq_pg_session_show(struct tq_queue *base, const char *key, struct tq_session_info *s,
		       struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int found = 0, rows;

	memset(s, 0, sizeof(*s));
	if ((s->key = strdup(key)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	tq_pg_txt(&p, key);
	if ((r = tq_pg_query(q, "SELECT agent_session, last_task_id, updated_at, cwd"
			     " FROM sessions WHERE key = $1", &p, err, "read session")) == NULL)
		goto fail;
	if (tq_pg_rows(r) > 0) {
		found = 1;
		s->last_task_id = tq_pg_get_i64(r, 0, 1, 0);
		s->updated_at = tq_pg_get_i64(r, 0, 2, 0);
		if (tq_pg_dup(r, 0, 0, &s->agent_session) < 0 ||
		    tq_pg_path_dup(r, 0, 3, &s->cwd) == TQ_ENOMEM) {
			tq_pg_clear(r);
			goto nomem;
		}
	}
	tq_pg_clear(r);
	if ((r = tq_pg_query(q, "SELECT t.id, t.state, t.name, t.attempt,"
			     " (SELECT a.agent_session FROM attempts a WHERE a.task_id = t.id"
			     "  AND a.agent_session IS NOT NULL ORDER BY a.attempt DESC LIMIT 1),"
			     " t.finished_at FROM tasks t WHERE t.session = $1 ORDER BY t.id", &p,
			     err, "read session tasks")) == NULL)
		goto fail;
	rows = tq_pg_rows(r);
	if (rows > 0 && (s->tasks = calloc((size_t)rows, sizeof(*s->tasks))) == NULL) {
		tq_pg_clear(r);
		goto nomem;
	}
	for (int i = 0; i < rows; i++) {
		struct tq_session_task *t = &s->tasks[i];

		s->ntasks++;
		t->id = tq_pg_get_i64(r, i, 0, 0);
		if (tq_state_parse(tq_pg_get_txt(r, i, 1), &t->state) < 0)
			t->state = TQ_QUEUED;
		t->attempt = (int)tq_pg_get_i64(r, i, 3, 0);
		t->finished_at = tq_pg_get_i64(r, i, 5, 0);
		if (tq_pg_dup(r, i, 2, &t->name) < 0 || tq_pg_dup(r, i, 4, &t->agent_session) < 0) {
			tq_pg_clear(r);
			goto nomem;
		}
	}
	tq_pg_clear(r);
	if (!found && s->ntasks == 0) {
		tq_session_info_release(s);
		return tq_err_set(err, TQ_ENOTFOUND, "session \"%s\": no such session", key);
	}
	return 0;
nomem:
	tq_err_set(err, TQ_ENOMEM, "out of memory");
fail:
	tq_session_info_release(s);
	return err ? err->code : TQ_EIO;
}

/* ------------------------------------------------------------------ */
/* stats                                                              */

static void row_add(struct tq_stats_row *r, const PGresult *res, int i)
{
	r->attempts += tq_pg_get_i64(res, i, 3, 0);
	r->results += tq_pg_get_i64(res, i, 4, 0);
	r->errors += tq_pg_get_i64(res, i, 5, 0);
	r->cost_usd += tq_pg_get_dbl(res, i, 6);
	r->costed += tq_pg_get_i64(res, i, 7, 0);
	r->input_tokens += tq_pg_get_i64(res, i, 8, 0);
	r->output_tokens += tq_pg_get_i64(res, i, 9, 0);
	r->cache_read_tokens += tq_pg_get_i64(res, i, 10, 0);
	r->cache_creation_tokens += tq_pg_get_i64(res, i, 11, 0);
	r->num_turns += tq_pg_get_i64(res, i, 12, 0);
	r->runtime_ms += tq_pg_get_i64(res, i, 13, 0);
	r->agent_ms += tq_pg_get_i64(res, i, 14, 0);
	r->timed += tq_pg_get_i64(res, i, 15, 0);
}

static struct tq_stats_row *model_row(struct tq_stats *s, const char *m, size_t *cap)
{
	struct tq_stats_row *r;

	for (size_t i = 0; i < s->nmodels; i++) {
		const char *have = s->models[i].model;

		if ((m == NULL && have == NULL) || (m && have && strcmp(m, have) == 0))
			return &s->models[i];
	}
	if (s->nmodels == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4;
		struct tq_stats_row *nm = reallocarray(s->models, ncap, sizeof(*nm));

		if (nm == NULL)
			return NULL;
		s->models = nm;
		*cap = ncap;
	}
	r = &s->models[s->nmodels];
	memset(r, 0, sizeof(*r));
	if (m != NULL && (r->model = strdup(m)) == NULL)
		return NULL;
	s->nmodels++;
	return r;
}

static int cmp_cost(const void *a, const void *b)
{
	const struct tq_stats_row *x = a, *y = b;

	if (x->cost_usd != y->cost_usd)
		return x->cost_usd > y->cost_usd ? -1 : 1;
	return x->results > y->results ? -1 : x->results < y->results;
}

#define STATS_FROM \
	" FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE ($1::text IS NULL OR" \
	" t.batch = $1) AND ($2::text IS NULL OR t.grp = $2) AND a.started_at >= $3"

int tq_pg_stats(struct tq_queue *base, const struct tq_stats_filter *f, struct tq_stats *s,
		struct tq_err *err)
{
	struct tq_pg *q = tq_pg_of(base);
	struct tq_pg_params p = { 0 };
	size_t cap = 0;
	PGresult *r;

	memset(s, 0, sizeof(*s));
	tq_pg_txt(&p, f->batch);
	tq_pg_txt(&p, f->group);
	tq_pg_i64(&p, f->since > 0 ? f->since : INT64_MIN);
	r = tq_pg_query(q, "SELECT a.outcome, a.category, a.model, count(*), count(a.is_error),"
			" coalesce(sum(a.is_error), 0), coalesce(sum(a.cost_usd), 0),"
			" count(a.cost_usd), coalesce(sum(a.input_tokens), 0),"
			" coalesce(sum(a.output_tokens), 0), coalesce(sum(a.cache_read_tokens), 0),"
			" coalesce(sum(a.cache_creation_tokens), 0), coalesce(sum(a.num_turns), 0),"
			" coalesce(sum(CASE WHEN a.ended_at IS NOT NULL THEN a.ended_at -"
			" a.started_at END), 0), coalesce(sum(a.duration_ms), 0),"
			" count(a.duration_ms)" STATS_FROM " GROUP BY 1, 2, 3", &p, err,
			"read stats");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	for (int i = 0; i < tq_pg_rows(r); i++) {
		enum tq_outcome o = TQ_OUT_NONE;
		enum tq_category c = TQ_CAT_NONE;
		int64_t n = tq_pg_get_i64(r, i, 3, 0);
		struct tq_stats_row *m;

		if (tq_outcome_parse(tq_pg_get_txt(r, i, 0), &o) < 0)
			o = TQ_OUT_NONE;
		if (tq_category_parse(tq_pg_get_txt(r, i, 1), &c) < 0)
			c = TQ_CAT_NONE;
		s->outcomes[o] += n;
		s->categories[c] += n;
		row_add(&s->total, r, i);
		if (tq_pg_get_i64(r, i, 4, 0) == 0)
			continue;
		if ((m = model_row(s, tq_pg_get_txt(r, i, 2), &cap)) == NULL) {
			tq_pg_clear(r);
			tq_stats_release(s);
			return tq_err_set(err, TQ_ENOMEM, "stats: out of memory");
		}
		row_add(m, r, i);
	}
	tq_pg_clear(r);
	if (s->nmodels > 1)
		qsort(s->models, s->nmodels, sizeof(*s->models), cmp_cost);
	if ((r = tq_pg_query(q, "SELECT count(DISTINCT a.task_id)" STATS_FROM, &p, err,
			     "read stats")) == NULL) {
		tq_stats_release(s);
		return err ? err->code : TQ_EIO;
	}
	s->tasks = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* batches                                                            */

#define BATCH_SQL(WHERE)                                                       \
	"WITH b AS (SELECT batch,"                                             \
	" count(*) FILTER (WHERE state = 'queued'),"                           \
	" count(*) FILTER (WHERE state = 'scheduled'),"                        \
	" count(*) FILTER (WHERE state = 'blocked'),"                          \
	" count(*) FILTER (WHERE state = 'running'),"                          \
	" count(*) FILTER (WHERE state = 'succeeded'),"                        \
	" count(*) FILTER (WHERE state = 'failed'),"                           \
	" count(*) FILTER (WHERE state = 'timed_out'),"                        \
	" count(*) FILTER (WHERE state = 'killed'),"                           \
	" count(*) FILTER (WHERE state = 'canceled'), count(*) AS n,"          \
	" min(created_at), max(created_at), min(started_at), max(finished_at),"\
	" max(id) AS last_id FROM tasks WHERE " WHERE " GROUP BY batch),"      \
	" c AS (SELECT t.batch AS batch, coalesce(sum(a.cost_usd), 0) AS cost,"\
	" count(a.cost_usd) AS ncost FROM tasks t"                             \
	" JOIN attempts a ON a.task_id = t.id WHERE " WHERE " GROUP BY t.batch)"\
	" SELECT b.*, c.cost, c.ncost FROM b LEFT JOIN c ON c.batch = b.batch" \
	" ORDER BY b.last_id DESC"

enum { B_NAME = 0, B_COUNTS = 1, B_TOTAL = 1 + TQ_STATE_COUNT, B_FIRST_CREATED,
       B_LAST_CREATED, B_FIRST_STARTED, B_LAST_FINISHED, B_LAST_ID, B_COST, B_NCOST };

static int batch_from_row(const PGresult *r, int i, struct tq_batch *b)
{
	memset(b, 0, sizeof(*b));
	for (int k = 0; k < TQ_STATE_COUNT; k++)
		b->counts[k] = tq_pg_get_i64(r, i, B_COUNTS + k, 0);
	b->total = tq_pg_get_i64(r, i, B_TOTAL, 0);
	b->first_created = tq_pg_get_i64(r, i, B_FIRST_CREATED, 0);
	b->last_created = tq_pg_get_i64(r, i, B_LAST_CREATED, 0);
	b->first_started = tq_pg_get_i64(r, i, B_FIRST_STARTED, 0);
	b->last_finished = tq_pg_get_i64(r, i, B_LAST_FINISHED, 0);
	b->cost_usd = tq_pg_get_dbl(r, i, B_COST);
	b->has_cost = tq_pg_get_i64(r, i, B_NCOST, 0) > 0;
	return tq_pg_dup(r, i, B_NAME, &b->name);
}

int tq_pg_batches(struct tq_queue *base, struct tq_batch **list, size_t *n,
		  struct tq_err *err)
{
	struct tq_batch *out = NULL;
	PGresult *r;
	int rows;

	*list = NULL;
	*n = 0;
	if ((r = tq_pg_query(tq_pg_of(base), BATCH_SQL("batch IS NOT NULL"), NULL, err,
			     "read batches")) == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if (rows > 0 && (out = calloc((size_t)rows, sizeof(*out))) == NULL)
		goto nomem;
	for (int i = 0; i < rows; i++)
		if (batch_from_row(r, i, &out[i]) < 0) {
			tq_batch_list_free(out, (size_t)i + 1);
			goto nomem;
		}
	tq_pg_clear(r);
	*list = out;
	*n = (size_t)rows;
	return 0;
nomem:
	tq_pg_clear(r);
	return tq_err_set(err, TQ_ENOMEM, "read batches: out of memory");
}

int tq_pg_batch_get(struct tq_queue *base, const char *name, struct tq_batch *b,
		    struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rc = 0;

	memset(b, 0, sizeof(*b));
	tq_pg_txt(&p, name);
	if ((r = tq_pg_query(tq_pg_of(base), BATCH_SQL("batch = $1"), &p, err,
			     "read batch")) == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) == 0)
		rc = tq_err_set(err, TQ_ENOTFOUND, "batch %s: no such batch (no task has it)",
				name);
	else if (batch_from_row(r, 0, b) < 0) {
		tq_batch_release(b);
		rc = tq_err_set(err, TQ_ENOMEM, "read batch: out of memory");
	}
	tq_pg_clear(r);
	return rc;
}

int tq_pg_batch_open(struct tq_queue *base, const char *name, int64_t *open,
		     struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;

	*open = 0;
	tq_pg_txt(&p, name);
	if ((r = tq_pg_query(tq_pg_of(base), "SELECT count(*) FROM tasks WHERE batch = $1"
			     " AND state IN " TQ_PG_UNFINISHED, &p, err, "read batch")) == NULL)
		return err ? err->code : TQ_EIO;
	*open = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

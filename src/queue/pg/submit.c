/*
 * submit.c - adding tasks to the PostgreSQL store: the SQLite backend's
 * submit.c, statement for statement, in one transaction per call (or per
 * batch: all or nothing). What SQLite's single writer made atomic, locks
 * make atomic here: a transaction-scoped advisory lock on a --unique key, a
 * submit token and a session key serializes the submitters that name the
 * same one (a check and its insert see each other), and a dependency's row
 * is read FOR SHARE, so it cannot end between the check and the deps row
 * that its end's trigger must find.
 */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "common/sys.h"

#define TOKEN_MAX TQ_SUBMIT_TOKEN_MAX

/* The key's advisory lock, held until the transaction ends. */
static int lock_key(struct tq_pg *q, const char *kind, const char *key, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, kind);
	tq_pg_txt(&p, key);
	return tq_pg_exec(q, "SELECT pg_advisory_xact_lock(hashtext($1 || $2))", &p, NULL,
			  err, "lock key");
}

static int one_id(struct tq_pg *q, const char *sql, const struct tq_pg_params *p,
		  int64_t *id, struct tq_err *err, const char *what)
{
	PGresult *r = tq_pg_query(q, sql, p, err, what);

	*id = 0;
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0)
		*id = tq_pg_get_i64(r, 0, 0, 0);
	tq_pg_clear(r);
	return 0;
}

/* Tokens live in meta as "submit:TOKEN" -> "ID TIME_MS", as with SQLite. */
static int token_find(struct tq_pg *q, const char *token, int64_t *id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, token);
	return one_id(q, "SELECT split_part(value, ' ', 1)::bigint FROM meta"
		      " WHERE key = 'submit:' || $1", &p, id, err, "find submit token");
}

static int token_add(struct tq_pg *q, const char *token, int64_t id, int64_t now,
		     struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, token);
	tq_pg_i64(&p, id);
	tq_pg_i64(&p, now);
	return tq_pg_exec(q, "INSERT INTO meta(key, value) VALUES ('submit:' || $1,"
			  " $2::text || ' ' || $3::text)", &p, NULL, err, "store submit token");
}

int tq_pg_prune_tokens(struct tq_queue *base, int64_t before_ms, int *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t changed = 0;
	int rc;

	if (n)
		*n = 0;
	tq_pg_i64(&p, before_ms);
	rc = tq_pg_exec(tq_pg_of(base), "DELETE FROM meta WHERE key LIKE 'submit:%'"
			" AND split_part(value, ' ', 2)::bigint < $1", &p, &changed, err,
			"forget submit tokens");
	if (rc == 0 && n)
		*n = (int)changed;
	return rc;
}

int tq_pg_token_first(struct tq_queue *base, const char *prefix, char *buf, size_t n,
		      int64_t *id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	size_t len = strlen(prefix);
	char lo[TOKEN_MAX + 16], hi[TOKEN_MAX + 16];
	PGresult *r;
	int rc = 0;

	*id = 0;
	if (n > 0)
		buf[0] = '\0';
	if (len == 0 || len > TOKEN_MAX || (unsigned char)prefix[len - 1] == 0xff)
		return tq_err_set(err, TQ_EINVAL, "submit token prefix must be 1 to %d bytes",
				  TOKEN_MAX);
	/* byte order, as SQLite's: the C collation, whose index (meta_key_bytes)
	 * finds the first key at or after the prefix's without a scan of every
	 * token (an import's resume asks once a line). Keys with the prefix lie
	 * below the prefix with its last byte one higher: an upper bound, when
	 * that byte is ASCII (a byte above would not be text) */
	snprintf(lo, sizeof(lo), "submit:%s", prefix);
	tq_pg_txt(&p, lo);
	if ((unsigned char)prefix[len - 1] < 0x7f) {
		memcpy(hi, lo, sizeof(hi));
		hi[strlen(hi) - 1]++;
		tq_pg_txt(&p, hi);
	}
	r = tq_pg_query(tq_pg_of(base), p.n > 1 ?
			"SELECT substr(key, 8), split_part(value, ' ', 1)::bigint FROM meta"
			" WHERE key COLLATE \"C\" >= $1 AND key COLLATE \"C\" < $2"
			" ORDER BY key COLLATE \"C\" LIMIT 1" :
			"SELECT substr(key, 8), split_part(value, ' ', 1)::bigint FROM meta"
			" WHERE key COLLATE \"C\" >= $1 AND starts_with(key, $1)"
			" ORDER BY key COLLATE \"C\" LIMIT 1", &p, err, "find submit token");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0) {
		*id = tq_pg_get_i64(r, 0, 1, 0);
		if (strlcpy(buf, tq_pg_get_txt(r, 0, 0), n) >= n) {
			*id = 0;
			rc = tq_err_set(err, TQ_EINVAL, "submit token longer than %zu bytes",
					n ? n - 1 : 0);
		}
	}
	tq_pg_clear(r);
	return rc;
}

static uint64_t fnv1a(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

int tq_pg_strv_encode(char *const *v, size_t n, size_t max, char **blob, size_t *len)
{
	size_t total = 0;
	char *b, *p;

	for (size_t i = 0; i < n; i++) {
		total += strlen(v[i]) + 1;
		if (total > max)
			return TQ_EINVAL;
	}
	if ((b = malloc(total ? total : 1)) == NULL)
		return TQ_ENOMEM;
	p = b;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]) + 1;
		memcpy(p, v[i], l);
		p += l;
	}
	*blob = b;
	*len = total;
	return 0;
}

/* The environment's row, found or added by one statement. */
static int env_id(struct tq_pg *q, const struct tq_task_spec *s, int64_t *id,
		  struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	char *blob = NULL;
	size_t len;
	int rc;

	if ((rc = tq_pg_strv_encode(s->env, s->envc, TQ_ENV_MAX, &blob, &len)) < 0)
		return tq_err_set(err, rc, rc == TQ_ENOMEM ? "out of memory" :
				  "environment is larger than %d bytes", TQ_ENV_MAX);
	tq_pg_i64(&p, (int64_t)fnv1a(blob, len));
	tq_pg_bin(&p, blob, len);
	rc = one_id(q, "WITH f AS (SELECT id FROM envs WHERE hash = $1 AND data = $2 LIMIT 1),"
		    " i AS (INSERT INTO envs(hash, data) SELECT $1, $2 WHERE NOT EXISTS"
		    " (SELECT 1 FROM f) RETURNING id) SELECT id FROM f UNION ALL SELECT id FROM i",
		    &p, id, err, "store environment");
	free(blob);
	return rc;
}

int tq_pg_env_cached(struct tq_pg *q, const struct tq_task_spec *s, struct tq_pg_batch *bc,
		     int64_t *id, struct tq_err *err)
{
	int rc;

	if (bc->env_id > 0 && bc->env == s->env && bc->envc == s->envc) {
		*id = bc->env_id;
		return 0;
	}
	if ((rc = env_id(q, s, id, err)) < 0)
		return rc;
	bc->env = s->env;
	bc->envc = s->envc;
	bc->env_id = *id;
	return 0;
}

static int find_unique(struct tq_pg *q, const char *key, int64_t *id, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, key);
	return one_id(q, "SELECT id FROM tasks WHERE unique_key = $1 AND state IN "
		      TQ_PG_UNFINISHED, &p, id, err, "find unique key");
}

struct dep {
	int64_t id;
	int any;
};

struct dep_verdict {
	int open;
	int64_t failed;
	enum tq_state failed_state;
};

/* An int64 array literal ("{1,2,3}") of the deps' ids, malloc'd. */
static char *ids_literal(const struct dep *d, size_t n)
{
	char *s = malloc(n * 21 + 3), *p = s;

	if (s == NULL)
		return NULL;
	*p++ = '{';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%lld", i ? "," : "", (long long)d[i].id);
	*p++ = '}';
	*p = '\0';
	return s;
}

static int cmp_dep(const void *a, const void *b)
{
	const struct dep *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/*
 * The deps of d, sorted by id and each id once (a "success" dependency wins
 * over an "any" one for the same task, as the deps row's ON CONFLICT
 * does), into u (n room): one statement then checks them all and one adds
 * them all, where a statement each cost a round trip each (a task --after
 * 10,000 others took 18 s to submit). Their count.
 */
static size_t deps_unique(const struct dep *src, size_t n, struct dep *d)
{
	size_t k = 0;

	memcpy(d, src, n * sizeof(*d));
	qsort(d, n, sizeof(*d), cmp_dep);
	for (size_t i = 0; i < n; i++) {
		if (k > 0 && d[k - 1].id == d[i].id) {
			d[k - 1].any = d[k - 1].any && d[i].any;
			continue;
		}
		d[k++] = d[i];
	}
	return k;
}

struct dep_state {
	int64_t id;
	enum tq_state state;
};

static int cmp_state(const void *a, const void *b)
{
	const struct dep_state *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* The states of the m deps of u (sorted, unique), each row read FOR SHARE
 * (in id order: two submitters lock them in one order); then, in the
 * order given (d, n: as the SQLite backend reports them), what blocks the
 * task, or the first that failed it, or the first that does not exist. */
static int deps_check(struct tq_pg *q, const struct dep *d, size_t n, const struct dep *u,
		      size_t m, struct dep_verdict *v, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct dep_state *st = NULL;
	char *ids;
	PGresult *r;
	int rows, rc = 0;

	if (m == 0)
		return 0;
	if ((ids = ids_literal(u, m)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	tq_pg_txt(&p, ids);
	r = tq_pg_query(q, "SELECT id, state FROM tasks WHERE id = ANY($1::bigint[])"
			" ORDER BY id FOR SHARE", &p, err, "read dependency");
	free(ids);
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	rows = tq_pg_rows(r);
	if ((st = calloc(rows > 0 ? (size_t)rows : 1, sizeof(*st))) == NULL) {
		tq_pg_clear(r);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	for (int i = 0; i < rows; i++) {
		st[i].id = tq_pg_get_i64(r, i, 0, 0);
		st[i].state = TQ_QUEUED;
		tq_state_parse(tq_pg_get_txt(r, i, 1), &st[i].state);
	}
	tq_pg_clear(r);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct dep_state key = { .id = d[i].id }, *f;

		f = bsearch(&key, st, (size_t)rows, sizeof(*st), cmp_state);
		if (f == NULL)
			rc = tq_err_set(err, TQ_ENOTFOUND, "dependency %lld: no such task",
					(long long)d[i].id);
		else if (!tq_state_final(f->state))
			v->open = 1;
		else if (!d[i].any && f->state != TQ_SUCCEEDED && v->failed == 0) {
			v->failed = d[i].id;
			v->failed_state = f->state;
		}
	}
	free(st);
	return rc;
}

/* The directory of a --session's task: as SQLite's session_dir. */
static int session_dir(struct tq_pg *q, const struct tq_task_spec *s, char *buf,
		       size_t n, const char **cwd, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	char *dir = NULL;
	PGresult *r;
	int rc = 0;

	*cwd = s->cwd;
	tq_pg_txt(&p, s->session);
	r = tq_pg_query(q, "SELECT s.cwd FROM sessions s WHERE s.key = $1 AND s.cwd IS NOT NULL"
			" AND (s.agent_session IS NOT NULL OR EXISTS"
			"      (SELECT 1 FROM tasks t WHERE t.session = $1))", &p, err,
			"read session");
	if (r == NULL)
		return err ? err->code : TQ_EIO;
	if (tq_pg_rows(r) > 0 && !tq_pg_isnull(r, 0, 0)) {
		if ((rc = tq_pg_path_dup(r, 0, 0, &dir)) < 0) {
			tq_pg_clear(r);
			return tq_err_set(err, rc, "session %s: its directory: %s", s->session,
					  rc == TQ_ENOMEM ? "out of memory" : "not a path");
		}
		if (strcmp(dir, s->cwd) != 0 && s->cwd_explicit)
			rc = tq_err_set(err, TQ_EINVAL, "session %s runs in %s (its first "
					"task's directory), not in --cwd %s: drop --cwd, or "
					"use another session key", s->session, dir, s->cwd);
		else if (strlcpy(buf, dir, n) >= n)
			rc = tq_err_set(err, TQ_EINVAL, "session %s: its directory is "
					"longer than %zu bytes", s->session, n - 1);
		else
			*cwd = buf;
		free(dir);
		tq_pg_clear(r);
		return rc;
	}
	tq_pg_clear(r);
	if ((dir = tq_pg_path_enc(s->cwd)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	tq_pg_txt(&p, dir);
	tq_pg_txt(&p, s->agent);
	rc = tq_pg_exec(q, "INSERT INTO sessions(key, cwd, updated_at, agent) VALUES ($1, $2,"
			" 0, $3) ON CONFLICT (key) DO UPDATE SET cwd = excluded.cwd,"
			" agent = excluded.agent", &p, NULL, err, "store session directory");
	free(dir);
	return rc;
}

static int collect_deps(struct tq_pg *q, const struct tq_task_spec *s,
			struct dep **out, size_t *n, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	int64_t prev = 0;
	struct dep *d;
	int rc;

	*out = NULL;
	*n = 0;
	if (s->session != NULL) {
		tq_pg_txt(&p, s->session);
		if ((rc = one_id(q, "SELECT id FROM tasks WHERE session = $1 AND state IN "
				 TQ_PG_UNFINISHED " ORDER BY id DESC LIMIT 1", &p, &prev, err,
				 "read session")) < 0)
			return rc;
	}
	if (s->nafter == 0 && prev == 0)
		return 0;
	if ((d = calloc(s->nafter + 1, sizeof(*d))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nafter; i++) {
		d[i].id = s->after[i];
		d[i].any = s->after_any != 0;
	}
	*n = s->nafter;
	if (prev != 0) {
		d[*n].id = prev;
		d[*n].any = 1;
		(*n)++;
	}
	*out = d;
	return 0;
}

struct insert_ctx {
	const struct tq_task_spec *s;
	const char *cwd;
	enum tq_state state;
	int64_t env_id;
	int64_t now;
	const char *name;
	const char *group;
	const char *reason;
	const char *argv_blob;
	size_t argv_len;
};

static int insert_task(struct tq_pg *q, const struct insert_ctx *c, int64_t *id,
		       struct tq_err *err)
{
	const struct tq_task_spec *s = c->s;
	struct tq_pg_params p = { 0 };
	char *cwd;
	int rc;

	if ((cwd = tq_pg_path_enc(c->cwd)) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	tq_pg_txt(&p, tq_state_name(c->state));
	tq_pg_txt(&p, c->name);
	tq_pg_bin(&p, c->argv_blob, c->argv_len);
	tq_pg_i64(&p, s->shell != 0);
	tq_pg_txt(&p, cwd);
	tq_pg_i64(&p, c->env_id);
	tq_pg_txt(&p, s->batch);
	tq_pg_txt(&p, c->group);
	tq_pg_txt(&p, s->session);
	tq_pg_txt(&p, s->unique_key);
	tq_pg_i64(&p, s->priority);
	tq_pg_i64(&p, s->run_after);
	tq_pg_i64(&p, c->now);
	tq_pg_i64(&p, s->timeout_ms);
	tq_pg_i64(&p, s->kill_grace_ms);
	tq_pg_i64(&p, s->max_output);
	tq_pg_i64(&p, s->max_retries);
	tq_pg_i64(&p, s->retry_lost != 0);
	tq_pg_i64(&p, s->backoff_ms);
	tq_pg_i64(&p, s->backoff_max_ms);
	tq_pg_txt(&p, tq_stdin_mode_name(s->stdin_mode));
	tq_pg_i64(&p, s->pty != 0);
	tq_pg_txt(&p, s->on_exit);
	tq_pg_txt(&p, s->agent);
	tq_pg_txt(&p, s->model);
	tq_pg_txt(&p, s->prompt);
	tq_pg_i64(&p, s->isolate != 0);
	tq_pg_txt(&p, s->sources_json);
	if (c->state == TQ_CANCELED) {
		tq_pg_i64(&p, c->now);
		tq_pg_txt(&p, tq_outcome_name(TQ_OUT_CANCELED));
		tq_pg_txt(&p, c->reason);
	} else {
		tq_pg_null(&p);
		tq_pg_null(&p);
		tq_pg_null(&p);
	}
	tq_pg_opt(&p, s->umask, -1);
	tq_pg_i64(&p, s->stall_timeout_ms);
	tq_pg_i64(&p, s->warm != 0);
	tq_pg_i64(&p, s->idle_timeout_ms);
	rc = one_id(q, "INSERT INTO tasks(state, name, argv, shell, cwd, env_id, batch, grp,"
		    " session, unique_key, priority, run_after, created_at, timeout_ms,"
		    " kill_grace_ms, max_output, max_retries, retry_lost, backoff_ms,"
		    " backoff_max_ms, stdin_mode, pty, on_exit, agent, model, prompt, isolate,"
		    " sources, finished_at, outcome, reason, umask, stall_timeout_ms, warm,"
		    " idle_timeout_ms) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,"
		    "$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31,$32,"
		    "$33,$34,$35) RETURNING id",
		    &p, id, err, "add task");
	free(cwd);
	return rc;
}

static int insert_extras(struct tq_pg *q, const struct tq_task_spec *s, int64_t id,
			 const struct dep *deps, size_t ndeps, struct tq_err *err)
{
	int rc;

	for (size_t i = 0; i < s->nlabels; i++) {
		struct tq_pg_params p = { 0 };

		tq_pg_i64(&p, id);
		tq_pg_txt(&p, s->labels[i].key);
		tq_pg_txt(&p, s->labels[i].value);
		if ((rc = tq_pg_exec(q, "INSERT INTO labels(task_id, key, value) VALUES"
				     " ($1, $2, $3) ON CONFLICT (task_id, key) DO UPDATE"
				     " SET value = excluded.value", &p, NULL, err,
				     "add label")) < 0)
			return rc;
	}
	if (ndeps > 0) {
		struct tq_pg_params p = { 0 };
		char *ids = ids_literal(deps, ndeps), *any = malloc(2 * ndeps + 2);

		if (ids == NULL || any == NULL) {
			free(ids);
			free(any);
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		}
		any[0] = '{';
		for (size_t i = 0; i < ndeps; i++) {
			any[1 + 2 * i] = deps[i].any ? 't' : 'f';
			any[2 + 2 * i] = i + 1 < ndeps ? ',' : '}';
		}
		any[2 * ndeps + 1] = '\0';
		tq_pg_i64(&p, id);
		tq_pg_txt(&p, ids);
		tq_pg_txt(&p, any);
		/* deps_unique made each dep_id once: no row is hit twice */
		rc = tq_pg_exec(q, "INSERT INTO deps(task_id, dep_id, kind) SELECT $1, u.d,"
				" CASE WHEN u.a THEN 'any' ELSE 'success' END FROM"
				" unnest($2::bigint[], $3::boolean[]) AS u(d, a)"
				" ON CONFLICT (task_id, dep_id) DO UPDATE"
				" SET kind = CASE WHEN deps.kind = 'success' OR"
				" excluded.kind = 'success' THEN 'success' ELSE 'any' END",
				&p, NULL, err, "add dependency");
		free(ids);
		free(any);
		if (rc < 0)
			return rc;
	}
	if (s->stdin_mode == TQ_STDIN_FILE) {
		struct tq_pg_params p = { 0 };

		tq_pg_i64(&p, id);
		tq_pg_bin(&p, s->stdin_data, s->stdin_len);
		if ((rc = tq_pg_exec(q, "INSERT INTO stdin_files(task_id, data) VALUES ($1, $2)",
				     &p, NULL, err, "store stdin file")) < 0)
			return rc;
	}
	return 0;
}

static int add_group(struct tq_pg *q, const char *group, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };

	tq_pg_txt(&p, group);
	return tq_pg_exec(q, "INSERT INTO groups(name) VALUES ($1) ON CONFLICT DO NOTHING",
			  &p, NULL, err, "add group");
}

static int submit_one(struct tq_pg *q, const struct tq_task_spec *s, int64_t now,
		      struct tq_pg_batch *bc, int64_t *id, int *existed, struct tq_err *err)
{
	char name[TQ_NAME_MAX], group[TQ_NAME_MAX], reason[128];
	struct insert_ctx c = { .s = s, .cwd = s->cwd, .now = now, .state = TQ_QUEUED };
	struct dep_verdict v = { 0, 0, TQ_QUEUED };
	struct dep *deps = NULL, *udeps = NULL;
	char *argv_blob = NULL, *sdir = NULL;
	size_t ndeps = 0, nudeps = 0;
	int rc;

	if (existed)
		*existed = 0;
	if ((rc = tq_spec_check(s, err)) < 0)
		return rc;
	if (s->token != NULL) {
		if ((rc = lock_key(q, "submit:", s->token, err)) < 0 ||
		    (rc = token_find(q, s->token, id, err)) < 0)
			return rc;
		if (*id > 0)
			return 0;
	}
	if (s->unique_key != NULL) {
		if ((rc = lock_key(q, "unique:", s->unique_key, err)) < 0 ||
		    (rc = find_unique(q, s->unique_key, id, err)) < 0)
			return rc;
		if (*id > 0) {
			if (existed)
				*existed = 1;
			return 0;
		}
	}
	if ((rc = tq_pg_strv_encode(s->argv, s->argc, TQ_ARGV_MAX, &argv_blob, &c.argv_len)) < 0)
		return tq_err_set(err, rc, rc == TQ_ENOMEM ? "out of memory" :
				  "command line is longer than %d bytes", TQ_ARGV_MAX);
	c.argv_blob = argv_blob;
	if (s->session != NULL) {
		if ((sdir = malloc(PATH_MAX)) == NULL) {
			rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = lock_key(q, "session:", s->session, err)) < 0 ||
		    (rc = session_dir(q, s, sdir, PATH_MAX, &c.cwd, err)) < 0)
			goto out;
	}
	if ((rc = collect_deps(q, s, &deps, &ndeps, err)) < 0)
		goto out;
	if (ndeps > 0 && (udeps = calloc(ndeps, sizeof(*udeps))) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	nudeps = ndeps > 0 ? deps_unique(deps, ndeps, udeps) : 0;
	if ((rc = deps_check(q, deps, ndeps, udeps, nudeps, &v, err)) < 0)
		goto out;
	if (v.failed) {
		c.state = TQ_CANCELED;
		snprintf(reason, sizeof(reason), "dependency %lld ended %s",
			 (long long)v.failed, tq_state_name(v.failed_state));
		c.reason = reason;
	} else if (v.open) {
		c.state = TQ_BLOCKED;
	} else if (s->run_after > now) {
		c.state = TQ_SCHEDULED;
	}
	if (s->name == NULL)
		tq_derive_name(s->argv, s->argc, s->shell, name, sizeof(name));
	if (s->group == NULL)
		tq_derive_group(s->argv, s->argc, s->shell, group, sizeof(group));
	c.name = s->name ? s->name : name;
	c.group = s->group ? s->group : group;
	if ((rc = tq_pg_env_cached(q, s, bc, &c.env_id, err)) < 0)
		goto out;
	if (bc->group[0] == '\0' || strcmp(bc->group, c.group) != 0) {
		if ((rc = add_group(q, c.group, err)) < 0)
			goto out;
		strlcpy(bc->group, c.group, sizeof(bc->group));
	}
	if ((rc = insert_task(q, &c, id, err)) < 0 ||
	    (rc = insert_extras(q, s, *id, udeps, nudeps, err)) < 0 ||
	    (s->token != NULL && (rc = token_add(q, s->token, *id, now, err)) < 0))
		goto out;
	if (c.state == TQ_QUEUED || c.state == TQ_SCHEDULED)
		bc->wake = 1;
out:
	free(deps);
	free(udeps);
	free(argv_blob);
	free(sdir);
	return rc;
}

/*
 * The specs in order, in one transaction: each run of specs the bulk path
 * takes (bulk.c) in a few statements, the others one by one. A run the
 * database refused as a whole (a value it does not take: a byte sequence
 * that is not UTF-8) names no task: the call is made again one by one,
 * whose error names it.
 */
static int submit_specs(struct tq_pg *q, const struct tq_task_spec *specs, size_t n,
			int bulk, int64_t *ids, int *existed, struct tq_err *err)
{
	struct tq_pg_batch bc = { .env_id = 0 };
	int64_t now = tq_now_ms();
	size_t i = 0, j, bad = 0;
	int rc;

	if ((rc = tq_pg_begin(q, err)) < 0)
		return rc;
	while (i < n) {
		for (j = i; bulk && j < n && tq_pg_bulk_ok(&specs[j]); j++)
			;
		if (j > i) {
			rc = tq_pg_submit_bulk(q, specs + i, j - i, now, &bc, ids + i,
					       existed ? existed + i : NULL, &bad, err);
			if (rc < 0 && bad == j - i) {
				tq_pg_rollback(q);
				return rc == TQ_EINVAL ? submit_specs(q, specs, n, 0, ids,
						existed, err) : rc;
			}
			bad += i;
			i = j;
		} else {
			rc = submit_one(q, &specs[i], now, &bc, &ids[i],
					existed ? &existed[i] : NULL, err);
			bad = i++;
		}
		if (rc < 0) {
			tq_pg_rollback(q);
			if (n > 1)
				tq_err_prefix(err, "task %zu", bad);
			return rc;
		}
	}
	/* in the transaction: the other nodes hear of the tasks when they
	 * can claim them, and only if they were stored */
	if ((bc.wake && (rc = tq_pg_wake(q, err)) < 0) || (rc = tq_pg_commit(q, err)) < 0) {
		tq_pg_rollback(q);
		return rc;
	}
	return 0;
}

int tq_pg_submit_many(struct tq_queue *base, const struct tq_task_spec *specs,
		      size_t n, int64_t *ids, int *existed, struct tq_err *err)
{
	return submit_specs(tq_pg_of(base), specs, n, 1, ids, existed, err);
}

int tq_pg_submit(struct tq_queue *base, const struct tq_task_spec *spec,
		 int64_t *id, int *existed, struct tq_err *err)
{
	return tq_pg_submit_many(base, spec, 1, id, existed, err);
}

int tq_pg_wants_worker(struct tq_queue *base, int64_t id)
{
	struct tq_pg_params p = { 0 };
	PGresult *r;
	int rows;

	tq_pg_i64(&p, id);
	tq_pg_i64(&p, tq_now_ms());
	r = tq_pg_query(tq_pg_of(base), "SELECT 1 FROM tasks t JOIN groups g ON g.name = t.grp"
			" WHERE t.id = $1 AND t.state IN ('queued', 'blocked')"
			" AND (g.paused != 0 OR g.paused_until > $2 OR (g.probe != 0 AND EXISTS"
			" (SELECT 1 FROM tasks p WHERE p.id = g.probe_task AND p.state = 'running')))",
			&p, NULL, "wants worker");
	if (r == NULL)
		return 1;
	rows = tq_pg_rows(r);
	tq_pg_clear(r);
	return rows == 0;
}

/*
 * submit.c - adding tasks. One BEGIN IMMEDIATE transaction per call (or per
 * batch), so a --unique check and its insert are atomic under concurrent
 * submitters, and a batch is all or nothing.
 *
 * A new task starts queued, or scheduled (run_after in the future), or
 * blocked (a dependency has not ended), or canceled at once (a dependency it
 * needs to succeed has already failed).
 */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "common/sys.h"

#define TOKEN_MAX TQ_SUBMIT_TOKEN_MAX

/*
 * Submit tokens (tq_task_spec.token) live in meta as "submit:TOKEN" ->
 * "ID TIME_MS": no table of their own for a row that lives a day, and meta's
 * primary key makes the lookup and the pruning (a key range) cheap.
 */
static int token_find(struct tq_sqlite *q, const char *token, int64_t *id, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_TOKEN_FIND, err);
	int rc;

	*id = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, token);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "find submit token");
	return 0;
}

static int token_add(struct tq_sqlite *q, const char *token, int64_t id, int64_t now,
		     struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_TOKEN_ADD, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, token);
	sqlite3_bind_int64(st, 2, id);
	sqlite3_bind_int64(st, 3, now);
	return tq_db_exec_st(q, st, err, "store submit token");
}

int tq_sqlite_prune_tokens(struct tq_queue *base, int64_t before_ms, int *n, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	/* 'submit;' is the key just past every 'submit:...' (';' follows ':') */
	sqlite3_stmt *st = tq_db_stmt(q, ST_TOKEN_PRUNE, err);
	int rc;

	if (n)
		*n = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, before_ms);
	if ((rc = tq_db_exec_st(q, st, err, "forget submit tokens")) < 0)
		return rc;
	if (n)
		*n = sqlite3_changes(q->db);
	return 0;
}

int tq_sqlite_token_first(struct tq_queue *base, const char *prefix, char *buf, size_t n,
			 int64_t *id, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	/* the keys that start with prefix: from it to (not including) prefix
	 * with its last byte one higher, a range of meta's primary key */
	sqlite3_stmt *st = tq_db_stmt(q, ST_TOKEN_FIRST, err);
	size_t len = strlen(prefix);
	char hi[TOKEN_MAX + 1];
	int rc;

	*id = 0;
	if (n > 0)
		buf[0] = '\0';
	if (len == 0 || len > TOKEN_MAX || (unsigned char)prefix[len - 1] == 0xff)
		return tq_err_set(err, TQ_EINVAL, "submit token prefix must be 1 to %d bytes",
				  TOKEN_MAX);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	memcpy(hi, prefix, len + 1);
	hi[len - 1] = (char)((unsigned char)hi[len - 1] + 1);
	tq_bind_text(st, 1, prefix);
	tq_bind_text(st, 2, hi);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *tok = (const char *)sqlite3_column_text(st, 0);
		*id = sqlite3_column_int64(st, 1);
		if (tok == NULL || strlcpy(buf, tok, n) >= n) {
			tq_db_done(st);
			*id = 0;
			return tq_err_set(err, TQ_EINVAL, "submit token longer than %zu bytes",
					  n ? n - 1 : 0);
		}
	}
	tq_db_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "find submit token");
	return 0;
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

/* The id of an identical stored environment, or a new row's. */
static int env_id(struct tq_sqlite *q, const struct tq_task_spec *s, int64_t *id,
		  struct tq_err *err)
{
	sqlite3_stmt *st;
	char *blob = NULL;
	size_t len;
	int64_t h;
	int rc;

	if ((rc = tq_strv_encode(s->env, s->envc, TQ_ENV_MAX, &blob, &len)) < 0)
		return tq_err_set(err, rc, rc == TQ_ENOMEM ? "out of memory" :
				  "environment is larger than %d bytes", TQ_ENV_MAX);
	h = (int64_t)fnv1a(blob, len);
	st = tq_db_stmt(q, ST_ENV_FIND, err);
	if (st == NULL)
		goto fail;
	sqlite3_bind_int64(st, 1, h);
	sqlite3_bind_blob(st, 2, blob, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		tq_db_done(st);
		free(blob);
		return 0;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE) {
		tq_db_error(q, rc, err, "find environment");
		goto fail;
	}
	st = tq_db_stmt(q, ST_ENV_ADD, err);
	if (st == NULL)
		goto fail;
	sqlite3_bind_int64(st, 1, h);
	sqlite3_bind_blob(st, 2, blob, (int)len, SQLITE_STATIC);
	if (tq_db_exec_st(q, st, err, "store environment") < 0)
		goto fail;
	*id = sqlite3_last_insert_rowid(q->db);
	free(blob);
	return 0;
fail:
	free(blob);
	return err ? err->code : TQ_EIO;
}

/* The unfinished task holding key, if any: *id > 0. */
static int find_unique(struct tq_sqlite *q, const char *key, int64_t *id,
		       struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_UNIQUE_FIND, err);
	int rc;

	*id = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "find unique key");
	return 0;
}

struct dep {
	int64_t id;
	int any;
};

/* What the dependencies say about the new task's first state. */
struct dep_verdict {
	int open;             /* some dependency has not ended */
	int64_t failed;       /* a 'success' dependency that did not succeed */
	enum tq_state failed_state;
};

static int dep_check(struct tq_sqlite *q, const struct dep *d, struct dep_verdict *v,
		     struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_STATE_OF, err);
	enum tq_state s = TQ_QUEUED;
	int rc;

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	sqlite3_bind_int64(st, 1, d->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		tq_state_parse((const char *)sqlite3_column_text(st, 0), &s);
	tq_db_done(st);
	if (rc == SQLITE_DONE)
		return tq_err_set(err, TQ_ENOTFOUND, "dependency %lld: no such task",
				  (long long)d->id);
	if (rc != SQLITE_ROW)
		return tq_db_error(q, rc, err, "read dependency");
	if (!tq_state_final(s))
		v->open = 1;
	else if (!d->any && s != TQ_SUCCEEDED && v->failed == 0) {
		v->failed = d->id;
		v->failed_state = s;
	}
	return 0;
}

/* The latest unfinished task of a session: the new one runs after it. */
static int session_last(struct tq_sqlite *q, const char *session, int64_t *id,
			struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_LAST, err);
	int rc;

	*id = 0;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, session);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	tq_db_done(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "read session");
	return 0;
}

/*
 * The directory a task of a --session runs in: the session's, kept in its
 * row since its first task (an agent resumes a conversation only from the
 * directory it began in: Claude keeps them under ~/.claude/projects/<cwd>,
 * Gemini per project). A later task submitted from elsewhere is moved there;
 * one whose --cwd names another directory is refused (TQ_EINVAL), as a
 * contradiction the user must settle. The session's directory lasts while
 * it has an agent session to resume or tasks in the queue; a session with
 * neither takes its next task's directory (a key reused for new work after
 * retention cleared the old).
 *
 * *cwd is s->cwd or the session's directory (owned by the statement's
 * row, so copied into buf, of n bytes).
 */
static int session_dir(struct tq_sqlite *q, const struct tq_task_spec *s, char *buf,
		       size_t n, const char **cwd, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_SESSION_DIR, err);
	const char *dir;
	int rc;

	*cwd = s->cwd;
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, s->session);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && (dir = (const char *)sqlite3_column_text(st, 0)) != NULL) {
		if (strcmp(dir, s->cwd) != 0 && s->cwd_explicit)
			rc = tq_err_set(err, TQ_EINVAL, "session %s runs in %s (its first "
					"task's directory), not in --cwd %s: drop --cwd, or "
					"use another session key", s->session, dir, s->cwd);
		else if (strlcpy(buf, dir, n) >= n)
			rc = tq_err_set(err, TQ_EINVAL, "session %s: its directory is "
					"longer than %zu bytes", s->session, n - 1);
		else
			*cwd = buf;
		tq_db_done(st);
		return rc < 0 ? rc : 0;
	}
	tq_db_done(st);
	if (rc != SQLITE_DONE)
		return tq_db_error(q, rc, err, "read session");
	/* its first task (or the first since it had none): the directory */
	st = tq_db_stmt(q, ST_SESSION_SET_DIR, err);
	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, s->session);
	tq_bind_text(st, 2, s->cwd);
	tq_bind_text(st, 3, s->agent);
	return tq_db_exec_st(q, st, err, "store session directory");
}

struct insert_ctx {
	const struct tq_task_spec *s;
	const char *cwd;          /* s->cwd, or its session's */
	enum tq_state state;
	int64_t env_id;
	int64_t now;
	const char *name;
	const char *group;
	const char *reason;
	const char *argv_blob;
	size_t argv_len;
};

static int insert_task(struct tq_sqlite *q, const struct insert_ctx *c, int64_t *id,
		       struct tq_err *err)
{
	const struct tq_task_spec *s = c->s;
	sqlite3_stmt *st = tq_db_stmt(q, ST_TASK_ADD, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, tq_state_name(c->state));
	tq_bind_text(st, 2, c->name);
	sqlite3_bind_blob(st, 3, c->argv_blob, (int)c->argv_len, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, s->shell != 0);
	tq_bind_text(st, 5, c->cwd);
	sqlite3_bind_int64(st, 6, c->env_id);
	tq_bind_text(st, 7, s->batch);
	tq_bind_text(st, 8, c->group);
	tq_bind_text(st, 9, s->session);
	tq_bind_text(st, 10, s->unique_key);
	sqlite3_bind_int64(st, 11, s->priority);
	sqlite3_bind_int64(st, 12, s->run_after);
	sqlite3_bind_int64(st, 13, c->now);
	sqlite3_bind_int64(st, 14, s->timeout_ms);
	sqlite3_bind_int64(st, 15, s->kill_grace_ms);
	sqlite3_bind_int64(st, 16, s->max_output);
	sqlite3_bind_int64(st, 17, s->max_retries);
	sqlite3_bind_int(st, 18, s->retry_lost != 0);
	sqlite3_bind_int64(st, 19, s->backoff_ms);
	sqlite3_bind_int64(st, 20, s->backoff_max_ms);
	tq_bind_text(st, 21, tq_stdin_mode_name(s->stdin_mode));
	sqlite3_bind_int(st, 22, s->pty != 0);
	tq_bind_text(st, 23, s->on_exit);
	tq_bind_text(st, 24, s->agent);
	tq_bind_text(st, 25, s->model);
	tq_bind_text(st, 26, s->prompt);
	sqlite3_bind_int(st, 27, s->isolate != 0);
	tq_bind_text(st, 28, s->sources_json);
	if (c->state == TQ_CANCELED) {
		sqlite3_bind_int64(st, 29, c->now);
		tq_bind_text(st, 30, tq_outcome_name(TQ_OUT_CANCELED));
		tq_bind_text(st, 31, c->reason);
	}
	tq_bind_opt_i64(st, 32, s->umask, -1);
	sqlite3_bind_int64(st, 33, s->stall_timeout_ms);
	sqlite3_bind_int(st, 34, s->warm != 0);
	sqlite3_bind_int64(st, 35, s->idle_timeout_ms);
	if (tq_db_exec_st(q, st, err, "add task") < 0)
		return err ? err->code : TQ_EIO;
	*id = sqlite3_last_insert_rowid(q->db);
	return 0;
}

static int insert_extras(struct tq_sqlite *q, const struct tq_task_spec *s, int64_t id,
			 const struct dep *deps, size_t ndeps, struct tq_err *err)
{
	sqlite3_stmt *st;

	for (size_t i = 0; i < s->nlabels; i++) {
		st = tq_db_stmt(q, ST_LABEL_ADD, err);
		if (st == NULL)
			return err ? err->code : TQ_EIO;
		sqlite3_bind_int64(st, 1, id);
		tq_bind_text(st, 2, s->labels[i].key);
		tq_bind_text(st, 3, s->labels[i].value);
		if (tq_db_exec_st(q, st, err, "add label") < 0)
			return err ? err->code : TQ_EIO;
	}
	for (size_t i = 0; i < ndeps; i++) {
		st = tq_db_stmt(q, ST_DEP_ADD, err);
		if (st == NULL)
			return err ? err->code : TQ_EIO;
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, deps[i].id);
		tq_bind_text(st, 3, deps[i].any ? "any" : "success");
		if (tq_db_exec_st(q, st, err, "add dependency") < 0)
			return err ? err->code : TQ_EIO;
	}
	if (s->stdin_mode == TQ_STDIN_FILE) {
		st = tq_db_stmt(q, ST_STDIN_ADD, err);
		if (st == NULL)
			return err ? err->code : TQ_EIO;
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_blob64(st, 2, s->stdin_data ? s->stdin_data : "",
				    s->stdin_len, SQLITE_STATIC);
		if (tq_db_exec_st(q, st, err, "store stdin file") < 0)
			return err ? err->code : TQ_EIO;
	}
	return 0;
}

static int add_group(struct tq_sqlite *q, const char *group, struct tq_err *err)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_GROUP_ADD, err);

	if (st == NULL)
		return err ? err->code : TQ_EIO;
	tq_bind_text(st, 1, group);
	return tq_db_exec_st(q, st, err, "add group");
}

/* Gather --after and the session's previous task into one dependency list. */
static int collect_deps(struct tq_sqlite *q, const struct tq_task_spec *s,
			struct dep **out, size_t *n, struct tq_err *err)
{
	int64_t prev = 0;
	struct dep *d;
	int rc;

	*out = NULL;
	*n = 0;
	if (s->session != NULL && (rc = session_last(q, s->session, &prev, err)) < 0)
		return rc;
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

/*
 * What the previous task of one tq_queue_submit_many stored, so that a batch
 * whose tasks share one environment (the --file import: every line without
 * an env of its own points to the same array) encodes, hashes and looks it
 * up once instead of once per task, and its group row is added once. Valid
 * for one transaction only.
 */
struct batch_cache {
	char *const *env;        /* the spec's env array (same pointer and count:
				  * the same environment) */
	size_t envc;
	int64_t env_id;          /* 0: nothing cached */
	char group[TQ_NAME_MAX]; /* "" : nothing cached */
};

static int cached_env_id(struct tq_sqlite *q, const struct tq_task_spec *s,
			 struct batch_cache *bc, int64_t *id, struct tq_err *err)
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

static int cached_add_group(struct tq_sqlite *q, const char *group, struct batch_cache *bc,
			    struct tq_err *err)
{
	int rc;

	if (bc->group[0] != '\0' && strcmp(bc->group, group) == 0)
		return 0;
	if ((rc = add_group(q, group, err)) < 0)
		return rc;
	/* names are checked shorter than TQ_NAME_MAX; a longer one is not cached */
	if (strlen(group) < sizeof(bc->group))
		memcpy(bc->group, group, strlen(group) + 1);
	return 0;
}

/* Add one task inside the caller's transaction. */
static int submit_one(struct tq_sqlite *q, const struct tq_task_spec *s, int64_t now,
		      struct batch_cache *bc, int64_t *id, int *existed, struct tq_err *err)
{
	char name[TQ_NAME_MAX], group[TQ_NAME_MAX], reason[128];
	struct insert_ctx c = { .s = s, .cwd = s->cwd, .now = now, .state = TQ_QUEUED };
	char *sdir = NULL;
	struct dep_verdict v = { 0, 0, TQ_QUEUED };
	struct dep *deps = NULL;
	char *argv_blob = NULL;
	size_t ndeps = 0;
	int rc;

	if (existed)
		*existed = 0;
	if ((rc = tq_spec_check(s, err)) < 0)
		return rc;
	if (s->token != NULL) {
		/* this very submit, stored already (by the supervisor, whose
		 * answer the client did not get): the same task, once */
		if ((rc = token_find(q, s->token, id, err)) < 0)
			return rc;
		if (*id > 0)
			return 0;
	}
	if (s->unique_key != NULL) {
		if ((rc = find_unique(q, s->unique_key, id, err)) < 0)
			return rc;
		if (*id > 0) {
			if (existed)
				*existed = 1;
			return 0;
		}
	}
	if ((rc = tq_strv_encode(s->argv, s->argc, TQ_ARGV_MAX, &argv_blob, &c.argv_len)) < 0)
		return tq_err_set(err, rc, rc == TQ_ENOMEM ? "out of memory" :
				  "command line is longer than %d bytes", TQ_ARGV_MAX);
	c.argv_blob = argv_blob;
	if (s->session != NULL &&
	    ((sdir = malloc(PATH_MAX)) == NULL ||
	     (rc = session_dir(q, s, sdir, PATH_MAX, &c.cwd, err)) < 0)) {
		if (sdir == NULL)
			rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = collect_deps(q, s, &deps, &ndeps, err)) < 0)
		goto out;
	for (size_t i = 0; i < ndeps; i++)
		if ((rc = dep_check(q, &deps[i], &v, err)) < 0)
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
	if ((rc = cached_env_id(q, s, bc, &c.env_id, err)) < 0 ||
	    (rc = cached_add_group(q, c.group, bc, err)) < 0 ||
	    (rc = insert_task(q, &c, id, err)) < 0 ||
	    (rc = insert_extras(q, s, *id, deps, ndeps, err)) < 0 ||
	    (s->token != NULL && (rc = token_add(q, s->token, *id, now, err)) < 0))
		goto out;
out:
	free(deps);
	free(argv_blob);
	free(sdir);
	return rc;
}

/* tq_queue_wants_worker's question, in the caller's transaction or its own. */
static int wants_query(struct tq_sqlite *q, int64_t id)
{
	sqlite3_stmt *st = tq_db_stmt(q, ST_WANTS_WORKER, NULL);
	int rc;

	if (st == NULL)
		return 1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, tq_now_ms());
	rc = sqlite3_step(st);
	tq_db_done(st);
	return rc != SQLITE_ROW;
}

int tq_sqlite_submit_many(struct tq_queue *base, const struct tq_task_spec *specs,
			 size_t n, int64_t *ids, int *existed, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	struct batch_cache bc = { .env_id = 0 };
	int64_t now = tq_now_ms();
	int rc;

	if ((rc = tq_db_begin(q, err)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = submit_one(q, &specs[i], now, &bc, &ids[i],
				existed ? &existed[i] : NULL, err);
		if (rc < 0) {
			tq_db_rollback(q);
			if (n > 1)
				tq_err_prefix(err, "task %zu", i);
			return rc;
		}
	}
	/* The question a submitter asks next (ops/submit.c, ipc/submitd.c),
	 * answered from the pages this transaction has read already: no read
	 * transaction of its own (four lock calls) per submit. */
	if (n == 1) {
		q->wants = wants_query(q, ids[0]);
		q->wants_id = ids[0];
	}
	if ((rc = tq_db_commit(q, err)) < 0) {
		q->wants_id = 0;
		tq_db_rollback(q);
		return rc;
	}
	return 0;
}

int tq_sqlite_submit(struct tq_queue *base, const struct tq_task_spec *spec,
		    int64_t *id, int *existed, struct tq_err *err)
{
	struct tq_sqlite *q = tq_sqlite_of(base);
	int rc;

	/*
	 * A held --unique key first with a plain read, which takes no lock: the
	 * overlapping cron runs that --unique is for then do not queue behind
	 * each other (and behind the workers) for the write lock only to learn
	 * that there is nothing to add. A task that holds its key in the
	 * snapshot held it at that instant, so the answer is as atomic as the
	 * locked check; a key found free is checked again under the lock.
	 */
	if (spec->unique_key != NULL && tq_spec_check(spec, NULL) == 0) {
		if ((rc = find_unique(q, spec->unique_key, id, err)) < 0)
			return rc;
		if (*id > 0) {
			if (existed)
				*existed = 1;
			return 0;
		}
	}
	return tq_sqlite_submit_many(&q->base, spec, 1, id, existed, err);
}

int tq_sqlite_wants_worker(struct tq_queue *base, int64_t id)
{
	struct tq_sqlite *q = tq_sqlite_of(base);

	/* asked right after this connection stored it: answered then */
	if (id != 0 && id == q->wants_id) {
		q->wants_id = 0;
		return q->wants;
	}
	return wants_query(q, id);
}

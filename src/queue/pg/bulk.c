/*
 * bulk.c - many tasks in a few statements: the PostgreSQL store's path for
 * a run of specs that need no read of their own (no session, no
 * dependency, no stdin file; tq_pg_bulk_ok), in the caller's transaction.
 * submit.c's submit_one sends four to six statements a task, each a round
 * trip and a parse; a run here sends at most seven, whatever its length:
 *
 *   1. the advisory locks of its submit tokens and --unique keys (the
 *      same keys submit_one locks, taken in one order: two runs that share
 *      keys wait for each other instead of deadlocking);
 *   2. the tasks those tokens and keys name already, one row a spec (a
 *      statement of its own, after the locks: READ COMMITTED takes a
 *      snapshot per statement, and this one must see what the holders of
 *      the locks committed);
 *   3. the environment, once per run of specs sharing one (submit.c);
 *   4. the groups, 5. the tasks, 6. their labels, 7. their tokens: each
 *      one INSERT of unnest()ed arrays.
 *
 * What submit_one decides task by task is decided here in the same order,
 * in memory: a spec whose token was stored (before, or by an earlier spec
 * of this run) is that task again; one whose --unique key an unfinished
 * task holds (stored before, or added by an earlier spec) is that task,
 * existed; the rest are added, queued or scheduled. The ids of the tasks
 * added are drawn by their INSERT in the order of the specs (the SELECT's
 * ORDER BY, each row's identity drawn as it is inserted); sorted, the ids
 * RETURNING gives are the specs' in order.
 *
 * Values travel as array literals (struct arr): text quoted, bytea as hex.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

/* ------------------------------------------------------------------ */
/* array literals                                                     */

/* An array literal being built ("{a,b}"); oom sticks. */
struct arr {
	char *b;
	size_t len, cap;
	int n, oom;
};

static void arr_put(struct arr *a, const char *s, size_t n)
{
	if (a->oom)
		return;
	if (a->len + n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap : 256;
		char *b;

		while (a->len + n + 2 > cap)
			cap *= 2;
		if ((b = realloc(a->b, cap)) == NULL) {
			a->oom = 1;
			return;
		}
		a->b = b;
		a->cap = cap;
	}
	memcpy(a->b + a->len, s, n);
	a->len += n;
	a->b[a->len] = '\0';
}

static void arr_next(struct arr *a)
{
	arr_put(a, a->n++ ? "," : "{", 1);
}

static void arr_null(struct arr *a)
{
	arr_next(a);
	arr_put(a, "NULL", 4);
}

/* A text element, quoted: '"' and '\' escaped. NULL: SQL NULL. */
static void arr_txt(struct arr *a, const char *s)
{
	const char *run;

	if (s == NULL) {
		arr_null(a);
		return;
	}
	arr_next(a);
	arr_put(a, "\"", 1);
	for (run = s; *s; s++) {
		if (*s != '"' && *s != '\\')
			continue;
		arr_put(a, run, (size_t)(s - run));
		arr_put(a, "\\", 1);
		run = s;
	}
	arr_put(a, run, (size_t)(s - run));
	arr_put(a, "\"", 1);
}

static void arr_i64(struct arr *a, int64_t v)
{
	char num[24];

	arr_next(a);
	arr_put(a, num, (size_t)snprintf(num, sizeof(num), "%" PRId64, v));
}

/* v == none: NULL. */
static void arr_opt(struct arr *a, int64_t v, int64_t none)
{
	if (v == none)
		arr_null(a);
	else
		arr_i64(a, v);
}

/* Bytes as hex digits, for decode(x, 'hex'). */
static void arr_hex(struct arr *a, const void *data, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = data;
	char buf[256];
	size_t k = 0;

	arr_next(a);
	arr_put(a, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		buf[k++] = digits[p[i] >> 4];
		buf[k++] = digits[p[i] & 15];
		if (k == sizeof(buf)) {
			arr_put(a, buf, k);
			k = 0;
		}
	}
	arr_put(a, buf, k);
	arr_put(a, "\"", 1);
}

/* The literal, closed ("{}" when empty); NULL when out of memory. */
static const char *arr_end(struct arr *a)
{
	if (a->n == 0)
		arr_put(a, "{", 1);
	arr_put(a, "}", 1);
	return a->oom ? NULL : a->b;
}

static void arr_free(struct arr *a)
{
	free(a->b);
	memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------ */
/* keys decided in memory: the tokens and --unique keys of this run    */

/* An open-addressing map from a spec's string (not copied) to an id, or
 * to -(k + 1): the k-th task this run adds, whose id is not known yet. */
struct keymap {
	const char **keys;
	int64_t *vals;
	size_t cap;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static int keymap_init(struct keymap *m, size_t n)
{
	m->cap = 16;
	while (m->cap < 2 * n)
		m->cap *= 2;
	m->keys = calloc(m->cap, sizeof(*m->keys));
	m->vals = calloc(m->cap, sizeof(*m->vals));
	return m->keys && m->vals ? 0 : TQ_ENOMEM;
}

static void keymap_free(struct keymap *m)
{
	free(m->keys);
	free(m->vals);
}

/* The slot of key: its own, or the empty one it would take. */
static size_t keymap_slot(const struct keymap *m, const char *key)
{
	size_t i = (size_t)str_hash(key) & (m->cap - 1);

	while (m->keys[i] != NULL && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int64_t keymap_get(const struct keymap *m, const char *key)
{
	size_t i = keymap_slot(m, key);

	return m->keys[i] ? m->vals[i] : 0;
}

/* Never more keys than the n it was made for: one a spec at most. */
static void keymap_put(struct keymap *m, const char *key, int64_t v)
{
	size_t i = keymap_slot(m, key);

	m->keys[i] = key;
	m->vals[i] = v;
}

/* ------------------------------------------------------------------ */
/* the run                                                            */

int tq_pg_bulk_ok(const struct tq_task_spec *s)
{
	return s->session == NULL && s->nafter == 0 && s->stdin_mode != TQ_STDIN_FILE;
}

struct run {
	struct tq_pg *q;
	const struct tq_task_spec *specs;
	size_t n;
	int64_t now;
	int64_t *ids;            /* the caller's: > 0 decided, < 0 added */
	int *existed;            /* the caller's, may be NULL */
	size_t *add;             /* the specs added, in order */
	size_t nadd;
	int64_t *found;          /* per spec: [2i] its token's task, [2i+1]
				  * its key's, as stored before the run */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* "KIND:KEY" in a string of its own; NULL when out of memory. */
static char *key_of(const char *kind, const char *key)
{
	char *s = NULL;

	return asprintf(&s, "%s%s", kind, key) < 0 ? NULL : s;
}

/* 1. The keys' advisory locks, as submit.c's lock_key names them, in one
 * order (sorted: the same for every run). */
static int lock_keys(struct run *r, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct arr a = { 0 };
	char **keys;
	size_t nk = 0;
	int rc = 0;

	if ((keys = calloc(2 * r->n, sizeof(*keys))) == NULL)
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	for (size_t i = 0; i < r->n && rc == 0; i++) {
		const struct tq_task_spec *s = &r->specs[i];

		if (s->token != NULL && (keys[nk++] = key_of("submit:", s->token)) == NULL)
			rc = TQ_ENOMEM;
		if (rc == 0 && s->unique_key != NULL &&
		    (keys[nk++] = key_of("unique:", s->unique_key)) == NULL)
			rc = TQ_ENOMEM;
	}
	if (rc == 0) {
		qsort(keys, nk, sizeof(*keys), cmp_str);
		for (size_t i = 0; i < nk; i++)
			arr_txt(&a, keys[i]);
		if (arr_end(&a) == NULL)
			rc = TQ_ENOMEM;
	}
	if (rc == TQ_ENOMEM) {
		tq_err_set(err, rc, "out of memory");
	} else {
		tq_pg_txt(&p, a.b);
		rc = tq_pg_exec(r->q, "SELECT count(pg_advisory_xact_lock(hashtext(k)))"
				" FROM unnest($1::text[]) k", &p, NULL, err, "lock keys");
	}
	for (size_t i = 0; i < nk; i++)
		free(keys[i]);
	free(keys);
	arr_free(&a);
	return rc;
}

/* 2. What the tokens and keys name already, a row a spec. */
static int find_keys(struct run *r, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct arr tok = { 0 }, key = { 0 };
	PGresult *res = NULL;
	int rc = 0;

	for (size_t i = 0; i < r->n; i++) {
		arr_txt(&tok, r->specs[i].token);
		arr_txt(&key, r->specs[i].unique_key);
	}
	if (arr_end(&tok) == NULL || arr_end(&key) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	tq_pg_txt(&p, tok.b);
	tq_pg_txt(&p, key.b);
	res = tq_pg_query(r->q, "SELECT (SELECT split_part(m.value, ' ', 1)::bigint FROM meta m"
			  " WHERE m.key = 'submit:' || u.tok), (SELECT t.id FROM tasks t"
			  " WHERE t.unique_key = u.uk AND t.state IN " TQ_PG_UNFINISHED ")"
			  " FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(tok, uk, o)"
			  " ORDER BY u.o", &p, err, "find submit tokens and unique keys");
	if (res == NULL) {
		rc = err ? err->code : TQ_EIO;
		goto out;
	}
	if ((size_t)tq_pg_rows(res) != r->n) {
		rc = tq_err_set(err, TQ_EIO, "find submit tokens and unique keys: %d rows "
				"for %zu tasks", tq_pg_rows(res), r->n);
		goto out;
	}
	for (size_t i = 0; i < r->n; i++) {
		r->found[2 * i] = tq_pg_get_i64(res, (int)i, 0, 0);
		r->found[2 * i + 1] = tq_pg_get_i64(res, (int)i, 1, 0);
	}
out:
	tq_pg_clear(res);
	arr_free(&tok);
	arr_free(&key);
	return rc;
}

/* submit_one's order, in memory: which specs are tasks already, which are
 * added. */
static int decide(struct run *r)
{
	struct keymap toks = { 0 }, keys = { 0 };
	int rc;

	if ((rc = keymap_init(&toks, r->n)) < 0 || (rc = keymap_init(&keys, r->n)) < 0)
		goto out;
	for (size_t i = 0; i < r->n; i++) {
		const struct tq_task_spec *s = &r->specs[i];
		int64_t id;

		if (s->token != NULL &&
		    ((id = r->found[2 * i]) > 0 || (id = keymap_get(&toks, s->token)) != 0)) {
			r->ids[i] = id;
			continue;
		}
		if (s->unique_key != NULL &&
		    ((id = r->found[2 * i + 1]) > 0 ||
		     (id = keymap_get(&keys, s->unique_key)) != 0)) {
			r->ids[i] = id;
			if (r->existed)
				r->existed[i] = 1;
			continue;
		}
		r->ids[i] = -(int64_t)(r->nadd + 1);
		if (s->token != NULL)
			keymap_put(&toks, s->token, r->ids[i]);
		if (s->unique_key != NULL)
			keymap_put(&keys, s->unique_key, r->ids[i]);
		r->add[r->nadd++] = i;
	}
out:
	keymap_free(&toks);
	keymap_free(&keys);
	return rc;
}

/* 4. The groups of the tasks added, each once. */
static int add_groups(struct run *r, char (*grp)[TQ_NAME_MAX], struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct arr a = { 0 };
	int rc;

	for (size_t k = 0; k < r->nadd; k++)
		if (k == 0 || strcmp(grp[k], grp[k - 1]) != 0)
			arr_txt(&a, grp[k]);
	if (arr_end(&a) == NULL) {
		arr_free(&a);
		return tq_err_set(err, TQ_ENOMEM, "out of memory");
	}
	tq_pg_txt(&p, a.b);
	/* in one order, as the keys: two runs adding the same new groups */
	rc = tq_pg_exec(r->q, "INSERT INTO groups(name) SELECT DISTINCT g FROM unnest($1::text[]) g"
			" ORDER BY g ON CONFLICT DO NOTHING", &p, NULL, err, "add group");
	arr_free(&a);
	return rc;
}

/* The columns of a task added (TASK_COLS: the INSERT's, in order; the
 * arrays' types and the argv's decode in TASK_FROM). */
enum {
	C_STATE, C_NAME, C_ARGV, C_SHELL, C_CWD, C_ENV, C_BATCH, C_GRP, C_UNIQUE,
	C_PRIORITY, C_RUN_AFTER, C_TIMEOUT, C_GRACE, C_MAX_OUTPUT, C_MAX_RETRIES,
	C_RETRY_LOST, C_BACKOFF, C_BACKOFF_MAX, C_STDIN, C_PTY, C_ON_EXIT, C_AGENT,
	C_MODEL, C_PROMPT, C_ISOLATE, C_SOURCES, C_UMASK, C_STALL, C_WARM, C_IDLE,
	NCOLS
};

#define TASK_COLS \
	"state, name, argv, shell, cwd, env_id, batch, grp, unique_key, priority," \
	" run_after, timeout_ms, kill_grace_ms, max_output, max_retries, retry_lost," \
	" backoff_ms, backoff_max_ms, stdin_mode, pty, on_exit, agent, model, prompt," \
	" isolate, sources, umask, stall_timeout_ms, warm, idle_timeout_ms"
#define TASK_FROM \
	" FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]," \
	" $6::bigint[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[]," \
	" $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[]," \
	" $17::bigint[], $18::bigint[], $19::text[], $20::bigint[], $21::text[]," \
	" $22::text[], $23::text[], $24::text[], $25::bigint[], $26::text[]," \
	" $27::bigint[], $28::bigint[], $29::bigint[], $30::bigint[])" \
	" WITH ORDINALITY AS u(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13," \
	" c14, c15, c16, c17, c18, c19, c20, c21, c22, c23, c24, c25, c26, c27, c28, c29," \
	" c30, o)"

/* One spec's row into the column arrays. */
static void task_row(struct arr *c, const struct tq_task_spec *s, int64_t now,
		     const char *name, const char *grp, int64_t env_id,
		     const char *argv_blob, size_t argv_len)
{
	char *cwd;

	arr_txt(&c[C_STATE], tq_state_name(s->run_after > now ? TQ_SCHEDULED : TQ_QUEUED));
	arr_txt(&c[C_NAME], name);
	arr_hex(&c[C_ARGV], argv_blob, argv_len);
	arr_i64(&c[C_SHELL], s->shell != 0);
	if ((cwd = tq_pg_path_enc(s->cwd)) == NULL)
		c[C_CWD].oom = 1;
	arr_txt(&c[C_CWD], cwd);
	free(cwd);
	arr_i64(&c[C_ENV], env_id);
	arr_txt(&c[C_BATCH], s->batch);
	arr_txt(&c[C_GRP], grp);
	arr_txt(&c[C_UNIQUE], s->unique_key);
	arr_i64(&c[C_PRIORITY], s->priority);
	arr_i64(&c[C_RUN_AFTER], s->run_after);
	arr_i64(&c[C_TIMEOUT], s->timeout_ms);
	arr_i64(&c[C_GRACE], s->kill_grace_ms);
	arr_i64(&c[C_MAX_OUTPUT], s->max_output);
	arr_i64(&c[C_MAX_RETRIES], s->max_retries);
	arr_i64(&c[C_RETRY_LOST], s->retry_lost != 0);
	arr_i64(&c[C_BACKOFF], s->backoff_ms);
	arr_i64(&c[C_BACKOFF_MAX], s->backoff_max_ms);
	arr_txt(&c[C_STDIN], tq_stdin_mode_name(s->stdin_mode));
	arr_i64(&c[C_PTY], s->pty != 0);
	arr_txt(&c[C_ON_EXIT], s->on_exit);
	arr_txt(&c[C_AGENT], s->agent);
	arr_txt(&c[C_MODEL], s->model);
	arr_txt(&c[C_PROMPT], s->prompt);
	arr_i64(&c[C_ISOLATE], s->isolate != 0);
	arr_txt(&c[C_SOURCES], s->sources_json);
	arr_opt(&c[C_UMASK], s->umask, -1);
	arr_i64(&c[C_STALL], s->stall_timeout_ms);
	arr_i64(&c[C_WARM], s->warm != 0);
	arr_i64(&c[C_IDLE], s->idle_timeout_ms);
}

/* 5. The tasks added: their ids into added[], in the specs' order. */
static int add_tasks(struct run *r, struct arr *c, int64_t *added, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	PGresult *res;

	for (int i = 0; i < NCOLS; i++) {
		if (arr_end(&c[i]) == NULL)
			return tq_err_set(err, TQ_ENOMEM, "out of memory");
		tq_pg_txt(&p, c[i].b);
	}
	tq_pg_i64(&p, r->now);
	res = tq_pg_query(r->q, "INSERT INTO tasks(" TASK_COLS ", created_at) SELECT c1, c2,"
			  " decode(c3, 'hex'), c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14,"
			  " c15, c16, c17, c18, c19, c20, c21, c22, c23, c24, c25, c26, c27, c28,"
			  " c29, c30, $31" TASK_FROM " ORDER BY u.o RETURNING id", &p, err,
			  "add task");
	if (res == NULL)
		return err ? err->code : TQ_EIO;
	if ((size_t)tq_pg_rows(res) != r->nadd) {
		tq_pg_clear(res);
		return tq_err_set(err, TQ_EIO, "add task: %d rows for %zu tasks",
				  tq_pg_rows(res), r->nadd);
	}
	for (size_t k = 0; k < r->nadd; k++)
		added[k] = tq_pg_get_i64(res, (int)k, 0, 0);
	tq_pg_clear(res);
	qsort(added, r->nadd, sizeof(*added), cmp_i64);
	return 0;
}

/* 6. Their labels (a key given twice: the last value, as submit_one's
 * upsert leaves it). */
static int add_labels(struct run *r, const int64_t *added, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct arr t = { 0 }, k = { 0 }, v = { 0 };
	int rc;

	for (size_t j = 0; j < r->nadd; j++) {
		const struct tq_task_spec *s = &r->specs[r->add[j]];

		for (size_t i = 0; i < s->nlabels; i++) {
			arr_i64(&t, added[j]);
			arr_txt(&k, s->labels[i].key);
			arr_txt(&v, s->labels[i].value);
		}
	}
	if (t.n == 0)
		return 0;
	if (arr_end(&t) == NULL || arr_end(&k) == NULL || arr_end(&v) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	} else {
		tq_pg_txt(&p, t.b);
		tq_pg_txt(&p, k.b);
		tq_pg_txt(&p, v.b);
		rc = tq_pg_exec(r->q, "INSERT INTO labels(task_id, key, value) SELECT DISTINCT ON"
				" (u.t, u.k) u.t, u.k, u.v FROM unnest($1::bigint[], $2::text[],"
				" $3::text[]) WITH ORDINALITY AS u(t, k, v, o)"
				" ORDER BY u.t, u.k, u.o DESC", &p, NULL, err, "add label");
	}
	arr_free(&t);
	arr_free(&k);
	arr_free(&v);
	return rc;
}

/* 7. Their tokens, as submit.c's token_add writes one. */
static int add_tokens(struct run *r, const int64_t *added, struct tq_err *err)
{
	struct tq_pg_params p = { 0 };
	struct arr t = { 0 }, i = { 0 };
	int rc;

	for (size_t j = 0; j < r->nadd; j++) {
		const struct tq_task_spec *s = &r->specs[r->add[j]];

		if (s->token != NULL) {
			arr_txt(&t, s->token);
			arr_i64(&i, added[j]);
		}
	}
	if (t.n == 0)
		return 0;
	if (arr_end(&t) == NULL || arr_end(&i) == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
	} else {
		tq_pg_txt(&p, t.b);
		tq_pg_txt(&p, i.b);
		tq_pg_i64(&p, r->now);
		rc = tq_pg_exec(r->q, "INSERT INTO meta(key, value) SELECT 'submit:' || u.t,"
				" u.i::text || ' ' || $3::text FROM unnest($1::text[], $2::bigint[])"
				" AS u(t, i)", &p, NULL, err, "store submit token");
	}
	arr_free(&t);
	arr_free(&i);
	return rc;
}

/* Each added spec's row: checked, named, grouped, its environment found. */
static int rows(struct run *r, struct tq_pg_batch *bc, struct arr *c,
		char (*grp)[TQ_NAME_MAX], size_t *bad, struct tq_err *err)
{
	char name[TQ_NAME_MAX];
	int rc = 0;

	for (size_t k = 0; k < r->nadd && rc == 0; k++) {
		const struct tq_task_spec *s = &r->specs[r->add[k]];
		char *blob = NULL;
		size_t len = 0;
		int64_t env = 0;

		*bad = r->add[k];
		if ((rc = tq_pg_strv_encode(s->argv, s->argc, TQ_ARGV_MAX, &blob, &len)) < 0)
			return tq_err_set(err, rc, rc == TQ_ENOMEM ? "out of memory" :
					  "command line is longer than %d bytes", TQ_ARGV_MAX);
		if (s->name == NULL)
			tq_derive_name(s->argv, s->argc, s->shell, name, sizeof(name));
		if (s->group == NULL)
			tq_derive_group(s->argv, s->argc, s->shell, grp[k], TQ_NAME_MAX);
		else
			strlcpy(grp[k], s->group, TQ_NAME_MAX);
		if ((rc = tq_pg_env_cached(r->q, s, bc, &env, err)) == 0)
			task_row(c, s, r->now, s->name ? s->name : name, grp[k], env, blob, len);
		free(blob);
	}
	return rc;
}

int tq_pg_submit_bulk(struct tq_pg *q, const struct tq_task_spec *specs, size_t n,
		      int64_t now, struct tq_pg_batch *bc, int64_t *ids, int *existed,
		      size_t *bad, struct tq_err *err)
{
	struct run r = { .q = q, .specs = specs, .n = n, .now = now, .ids = ids,
			 .existed = existed };
	struct arr c[NCOLS];
	char (*grp)[TQ_NAME_MAX] = NULL;
	int64_t *added = NULL;
	int keyed = 0, rc;

	memset(c, 0, sizeof(c));
	*bad = 0;
	for (size_t i = 0; i < n; i++) {
		*bad = i;
		ids[i] = 0;
		if (existed)
			existed[i] = 0;
		if ((rc = tq_spec_check(&specs[i], err)) < 0)
			return rc;
		keyed |= specs[i].token != NULL || specs[i].unique_key != NULL;
	}
	r.add = reallocarray(NULL, n, sizeof(*r.add));
	r.found = calloc(n, 2 * sizeof(*r.found));
	added = reallocarray(NULL, n, sizeof(*added));
	grp = reallocarray(NULL, n, sizeof(*grp));
	if (r.add == NULL || r.found == NULL || added == NULL || grp == NULL) {
		rc = tq_err_set(err, TQ_ENOMEM, "out of memory");
		goto out;
	}
	*bad = n;
	if (keyed && ((rc = lock_keys(&r, err)) < 0 || (rc = find_keys(&r, err)) < 0))
		goto out;
	if ((rc = decide(&r)) < 0) {
		rc = tq_err_set(err, rc, "out of memory");
		goto out;
	}
	if (r.nadd == 0)
		goto out;
	if ((rc = rows(&r, bc, c, grp, bad, err)) < 0)
		goto out;
	*bad = n;
	if ((rc = add_groups(&r, grp, err)) < 0 || (rc = add_tasks(&r, c, added, err)) < 0 ||
	    (rc = add_labels(&r, added, err)) < 0 || (rc = add_tokens(&r, added, err)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0)
			ids[i] = added[-ids[i] - 1];
	bc->wake = 1; /* every task added is queued or scheduled */
out:
	for (int i = 0; i < NCOLS; i++)
		arr_free(&c[i]);
	free(r.add);
	free(r.found);
	free(added);
	free(grp);
	return rc;
}

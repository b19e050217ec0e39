/*
 * env.c - building a task's environment (see env.h).
 *
 * Invariant: e->vars is NULL or holds e->n owned strings followed by a NULL,
 * with e->cap >= e->n + 1 slots. Every change allocates what it needs before
 * it touches e, so a failure leaves e as it was.
 */
#include "env.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t tq_env_name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');

	return eq != NULL ? (size_t)(eq - entry) : strlen(entry);
}

int tq_env_looks_secret(const char *name)
{
	static const char *const words[] = { "KEY", "TOKEN", "SECRET", "PASSWORD" };
	size_t n = tq_env_name_len(name);

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t w = strlen(words[i]);
		for (size_t j = 0; j + w <= n; j++)
			if (strncasecmp(name + j, words[i], w) == 0)
				return 1;
	}
	return 0;
}

/* Make room for one more entry (plus the terminating NULL). */
static int reserve_one(struct tq_env *e, struct tq_err *err)
{
	size_t cap;
	char **v;

	if (e->n + 2 <= e->cap)
		return 0;
	cap = e->cap < 16 ? 16 : e->cap * 2;
	v = reallocarray(e->vars, cap, sizeof(*v));
	if (v == NULL)
		return tq_err_set(err, TQ_ENOMEM, "environment: out of memory");
	e->vars = v;
	e->cap = cap;
	e->vars[e->n] = NULL;
	return 0;
}

/* Append an owned string; on failure the string is not taken. */
static int push(struct tq_env *e, char *s, struct tq_err *err)
{
	int rc = reserve_one(e, err);

	if (rc < 0)
		return rc;
	e->vars[e->n++] = s;
	e->vars[e->n] = NULL;
	return 0;
}

int tq_env_copy(struct tq_env *e, char *const *src, tq_env_drop_fn *drop, void *arg,
		struct tq_err *err)
{
	int rc = reserve_one(e, err); /* so an empty result is still {NULL} */

	for (size_t i = 0; rc == 0 && src != NULL && src[i] != NULL; i++) {
		const char *eq = strchr(src[i], '=');
		char *copy;

		if (eq == NULL || (drop != NULL && drop(src[i], (size_t)(eq - src[i]), src, arg)))
			continue;
		copy = strdup(src[i]);
		if (copy == NULL)
			rc = tq_err_set(err, TQ_ENOMEM, "environment: out of memory");
		else if ((rc = push(e, copy, err)) < 0)
			free(copy);
	}
	if (rc < 0)
		tq_env_release(e);
	return rc;
}

/* Index of the first entry named name (length n) at or after from, or -1. */
static long find(const struct tq_env *e, const char *name, size_t n, size_t from)
{
	for (size_t i = from; i < e->n; i++)
		if (strncmp(e->vars[i], name, n) == 0 && e->vars[i][n] == '=')
			return (long)i;
	return -1;
}

/* Drop entry i, keeping order. */
static void drop(struct tq_env *e, size_t i)
{
	free(e->vars[i]);
	memmove(&e->vars[i], &e->vars[i + 1], (e->n - i) * sizeof(*e->vars));
	e->n--;
}

int tq_env_set(struct tq_env *e, const char *kv, struct tq_err *err)
{
	const char *eq = strchr(kv, '=');
	size_t n = eq != NULL ? (size_t)(eq - kv) : 0;
	long at;
	char *copy;
	int rc;

	if (n == 0)
		return tq_err_set(err, TQ_EINVAL,
				  "\"%s\": expected NAME=VALUE", kv);
	copy = strdup(kv);
	if (copy == NULL)
		return tq_err_set(err, TQ_ENOMEM, "environment: out of memory");
	at = find(e, kv, n, 0);
	if (at < 0) {
		if ((rc = push(e, copy, err)) < 0)
			free(copy);
		return rc;
	}
	free(e->vars[at]);
	e->vars[at] = copy;
	for (long d; (d = find(e, kv, n, (size_t)at + 1)) >= 0;)
		drop(e, (size_t)d);
	return 0;
}

size_t tq_env_unset(struct tq_env *e, const char *name)
{
	size_t n = strlen(name), removed = 0;

	for (long i; n > 0 && (i = find(e, name, n, 0)) >= 0; removed++)
		drop(e, (size_t)i);
	return removed;
}

const char *tq_env_get(const struct tq_env *e, const char *name)
{
	size_t n = strlen(name);
	long i = n > 0 ? find(e, name, n, 0) : -1;

	return i >= 0 ? e->vars[i] + n + 1 : NULL;
}

size_t tq_env_bytes(const struct tq_env *e)
{
	size_t total = 0;

	for (size_t i = 0; i < e->n; i++)
		total += strlen(e->vars[i]) + 1;
	return total;
}

void tq_env_release(struct tq_env *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->vars[i]);
	free(e->vars);
	e->vars = NULL;
	e->n = 0;
	e->cap = 0;
}

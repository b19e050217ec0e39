/*
 * secret.h - masking credentials in what taskq shows and writes: the
 * environment `show` prints, and the reasons and log lines (serve.log) a
 * worker writes about a task.
 *
 * What counts as a credential:
 *   - the value of a variable whose name looks secret (tq_env_looks_secret:
 *     KEY, TOKEN, SECRET, PASSWORD in any case);
 *   - in a URL ("scheme://..."), anywhere: the password of its userinfo
 *     (user:password@host -> user:***@host) and the value of each query
 *     parameter named in tq_secret_params (token=, key=, password=, sig=,
 *     ...), in any case;
 *   - the value of a variable holding such a URL: the URL, and its password
 *     and credential parameters on their own.
 * A user name without a password (ssh://git@host) is a name, and is shown.
 *
 * Inside free text (a reason, a log line) the values of a task's masked
 * variables are replaced wherever they appear, but only those of at least
 * TQ_SECRET_MIN_LEN bytes: see there. URL credentials are masked in any
 * text whatever their length (their place, not their value, says what they
 * are). Text is masked as bytes: a value the task printed encoded (base64,
 * URL-escaped) or cut across two lines is not recognised.
 *
 * Nothing here prints, exits or allocates except where it says so.
 */
#ifndef TQ_SECRET_H
#define TQ_SECRET_H

#include <stddef.h>

#include "err.h"

/* What a masked value or credential is replaced with. */
#define TQ_SECRET_MASK "***"

/*
 * The shortest value of a masked variable that is masked inside free text.
 * Shorter values are flags and switches far more often than credentials
 * (USE_API_KEY=1, GIT_TOKEN_AUTH=true, KEY_MODE=dev), and as text they are
 * everywhere: masking "1" or "on" would turn "exit code 1" into "exit code
 * ***" and "connection" into "c***nection", making every reason unreadable
 * to protect something a guesser finds in seconds anyway. Six is the length
 * of the shortest passwords services still accept, and longer than the
 * words such flags take (true, false, yes, off, dev, prod). Such a value is
 * still masked where its place says what it is: `show`'s environment, a URL's
 * password.
 */
#define TQ_SECRET_MIN_LEN 6

/* Query parameter names whose values are credentials, compared without
 * regard to case; NULL-terminated (static storage). */
extern const char *const tq_secret_params[];

/* 1 if name (n bytes) is one of tq_secret_params. */
int tq_secret_param(const char *name, size_t n);

/*
 * Mask the credentials of every URL in buf (len bytes, any bytes; cap the
 * room it has, cap > len): each password and credential parameter value
 * becomes TQ_SECRET_MASK. The text can grow by up to 2 bytes a credential
 * (a 1-byte password becomes 3); what does not fit in cap - 1 bytes is cut
 * off the end. buf[result] is set to NUL. Returns the new length.
 */
size_t tq_secret_mask_urls(char *buf, size_t len, size_t cap);

/* 1 if the variable "K=V" is masked: its name looks secret, or its value
 * holds a URL with a password or a credential parameter. */
int tq_secret_env_masked(const char *entry);

/*
 * How `show` prints the variable "K=V": "K=***" for a secret-looking name,
 * else with every URL's credentials masked, else as it is. Returns a
 * malloc'd string, NULL when out of memory.
 */
char *tq_secret_env_display(const char *entry);

/* The values one task's text is masked for: each with what replaces it. */
struct tq_secret_value {
	char *value;          /* owned */
	size_t len;
	char *mask;           /* owned: TQ_SECRET_MASK, or the masked URL */
};

struct tq_secrets {
	struct tq_secret_value *v; /* longest value first */
	size_t n, cap;
};

#define TQ_SECRETS_INIT { NULL, 0, 0 }

/*
 * Add the values to mask from a task's environment (n "K=V" entries): the
 * value of every masked variable (tq_secret_env_masked), a URL's masked
 * form standing in for the URL, and a URL's passwords and credential
 * parameter values on their own; each of at least TQ_SECRET_MIN_LEN bytes.
 * Returns 0 or TQ_ENOMEM (s keeps what it had and stays valid).
 */
int tq_secrets_add_env(struct tq_secrets *s, char *const *env, size_t n,
		       struct tq_err *err);

/*
 * Mask text in buf (len bytes, any bytes; cap > len the room it has) in
 * place: every occurrence of a value of s (longest first) by its mask, then
 * URL credentials (tq_secret_mask_urls). s may be NULL or empty (URLs
 * only). What does not fit in cap - 1 bytes is cut off the end; buf[result]
 * is set to NUL. Returns the new length. Allocates nothing.
 */
size_t tq_secrets_mask(const struct tq_secrets *s, char *buf, size_t len, size_t cap);

/* tq_secrets_mask for a NUL-terminated string in a buffer of cap bytes. */
void tq_secrets_mask_str(const struct tq_secrets *s, char *str, size_t cap);

/* Free what s owns and make it empty. NULL is fine. */
void tq_secrets_release(struct tq_secrets *s);

#endif

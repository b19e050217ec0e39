/*
 * spec.c - what every backend refuses in a task spec before it stores
 * anything (tq_spec_check, store.h): one set of rules and messages, so a
 * task refused on SQLite is refused the same way, with the same line, on
 * PostgreSQL. Each backend's submit calls it first; nothing here touches a
 * store.
 */
#include "queue/store.h"

#include <stdint.h>
#include <string.h>

#include "common/parse.h"

/* Text the store keeps as text (a PostgreSQL text column; SQLite stores
 * any byte, but both take the same): valid UTF-8, as cJSON and every
 * JSON reader need too. Bytes that are not (a path in Latin-1) belong in
 * argv, the environment or stdin, stored exactly; the working directory is
 * stored exactly too. */
static int check_text(const char *what, const char *s, struct tq_err *err)
{
	if (s != NULL && !tq_utf8_valid(s))
		return tq_err_set(err, TQ_EINVAL, "%s is not valid UTF-8", what);
	return 0;
}

/* A name-like field (name, batch, group, session, unique key, label key):
 * shorter than TQ_NAME_MAX, valid UTF-8, no control character. */
static int check_name(const char *what, const char *s, int required, struct tq_err *err)
{
	if (s == NULL)
		return required ? tq_err_set(err, TQ_EINVAL, "%s is required", what) : 0;
	if (*s == '\0')
		return tq_err_set(err, TQ_EINVAL, "%s is empty", what);
	if (strlen(s) >= TQ_NAME_MAX)
		return tq_err_set(err, TQ_EINVAL, "%s is longer than %d bytes", what,
				  TQ_NAME_MAX - 1);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return tq_err_set(err, TQ_EINVAL,
					  "%s contains a control character", what);
	return check_text(what, s, err);
}

int tq_spec_check(const struct tq_task_spec *s, struct tq_err *err)
{
	int rc;

	if (s->argc == 0 || s->argv == NULL || s->argv[0] == NULL || s->argv[0][0] == '\0')
		return tq_err_set(err, TQ_EINVAL, "no command given");
	if (s->cwd == NULL || s->cwd[0] != '/')
		return tq_err_set(err, TQ_EINVAL, "working directory must be an absolute path");
	if ((rc = check_name("name", s->name, 0, err)) < 0 ||
	    (rc = check_name("batch", s->batch, 0, err)) < 0 ||
	    (rc = check_name("group", s->group, 0, err)) < 0 ||
	    (rc = check_name("session", s->session, 0, err)) < 0 ||
	    (rc = check_name("unique key", s->unique_key, 0, err)) < 0)
		return rc;
	for (size_t i = 0; i < s->nlabels; i++) {
		if ((rc = check_name("label key", s->labels[i].key, 1, err)) < 0)
			return rc;
		if (s->labels[i].value == NULL)
			return tq_err_set(err, TQ_EINVAL, "label %s has no value",
					  s->labels[i].key);
		if ((rc = check_text("label value", s->labels[i].value, err)) < 0)
			return rc;
	}
	if ((rc = check_text("on-exit command", s->on_exit, err)) < 0 ||
	    (rc = check_text("agent", s->agent, err)) < 0 ||
	    (rc = check_text("model", s->model, err)) < 0 ||
	    (rc = check_text("prompt", s->prompt, err)) < 0 ||
	    (rc = check_text("sources", s->sources_json, err)) < 0 ||
	    (rc = check_text("submit token", s->token, err)) < 0)
		return rc;
	if (s->timeout_ms < 0 || s->kill_grace_ms < 0 || s->max_output < 0 ||
	    s->max_retries < 0 || s->backoff_ms < 0 || s->backoff_max_ms < 0 ||
	    s->stall_timeout_ms < 0)
		return tq_err_set(err, TQ_EINVAL, "negative limit");
	if (s->umask < -1 || s->umask > TQ_UMASK_MAX)
		return tq_err_set(err, TQ_EINVAL, "umask %d is not 0 to 0%o", s->umask,
				  TQ_UMASK_MAX);
	if (s->token != NULL &&
	    (s->token[0] == '\0' || strlen(s->token) > TQ_SUBMIT_TOKEN_MAX))
		return tq_err_set(err, TQ_EINVAL, "submit token must be 1 to %d bytes",
				  TQ_SUBMIT_TOKEN_MAX);
	if (s->warm && (s->session == NULL || s->agent == NULL))
		return tq_err_set(err, TQ_EINVAL, "a warm task needs a session and an agent");
	if (s->warm ? s->idle_timeout_ms <= 0 : s->idle_timeout_ms != 0)
		return tq_err_set(err, TQ_EINVAL, s->warm ? "a warm task needs an idle timeout" :
				  "an idle timeout is for a warm task");
	if (s->stdin_mode == TQ_STDIN_FILE && (int64_t)s->stdin_len > TQ_STDIN_FILE_MAX)
		return tq_err_set(err, TQ_EINVAL, "stdin file is larger than %lld bytes",
				  (long long)TQ_STDIN_FILE_MAX);
	return 0;
}

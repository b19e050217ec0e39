/*
 * err.c - filling struct tq_err. Messages are truncated at TQ_ERR_MAX - 1
 * bytes; that is the one place truncation is accepted, since a message is for
 * people and its start names the object.
 */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tq_err_from_errno(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return TQ_ENOSPC;
	case ENOMEM:
		return TQ_ENOMEM;
	case EACCES:
	case EPERM:
		return TQ_EPERM;
	case ENOENT:
		return TQ_ENOTFOUND;
	case EROFS:
		return TQ_EREADONLY;
	case EINVAL:
		return TQ_EINVAL;
	default:
		return TQ_EIO;
	}
}

int tq_err_set(struct tq_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int tq_err_sys(struct tq_err *err, const char *fmt, ...)
{
	int saved = errno;
	int code = tq_err_from_errno(saved);
	va_list ap;
	size_t n;

	if (err == NULL)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	if (n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(saved));
	errno = saved;
	return code;
}

int tq_err_prefix(struct tq_err *err, const char *fmt, ...)
{
	char head[TQ_ERR_MAX], tail[TQ_ERR_MAX];
	va_list ap;

	if (err == NULL)
		return TQ_EIO;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(tail, err->msg, sizeof(tail));
	/* Truncation is accepted: the start names the object. */
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", head, tail) < 0)
		err->msg[0] = '\0';
	return err->code;
}

const char *tq_err_name(int code)
{
	switch (code) {
	case TQ_OK: return "ok";
	case TQ_EINVAL: return "invalid";
	case TQ_ENOTFOUND: return "not found";
	case TQ_EBUSY: return "busy";
	case TQ_ECORRUPT: return "corrupt";
	case TQ_EIO: return "i/o error";
	case TQ_ENOSPC: return "no space";
	case TQ_ENOMEM: return "out of memory";
	case TQ_EPERM: return "permission denied";
	case TQ_ENEWER: return "newer schema";
	case TQ_ESTALE: return "stale";
	case TQ_ESTATE: return "wrong state";
	case TQ_EEXIST: return "exists";
	case TQ_ENOTDB: return "not a database";
	case TQ_EREADONLY: return "read-only";
	case TQ_ECAP: return "limit reached";
	case TQ_EOFFLINE: return "store unreachable";
	default: return "error";
	}
}

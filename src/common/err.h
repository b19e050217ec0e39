/*
 * err.h - the one error convention below the CLI.
 *
 * Functions return 0 on success or a negative TQ_E* code, and fill an optional
 * caller-owned struct tq_err whose bounded message names the object and the
 * failed call: "open logs/42.log: No space left on device". Library code never
 * prints or exits; only src/cli turns codes into exit statuses and messages.
 */
#ifndef TQ_ERR_H
#define TQ_ERR_H

#include <stddef.h>

#define TQ_ERR_MAX 512

enum tq_errcode {
	TQ_OK = 0,
	TQ_EINVAL = -1,    /* bad argument or input */
	TQ_ENOTFOUND = -2, /* no such task, group, file */
	TQ_EBUSY = -3,     /* database locked past the busy timeout */
	TQ_ECORRUPT = -4,  /* database or file damaged */
	TQ_EIO = -5,       /* any other I/O or system error */
	TQ_ENOSPC = -6,    /* disk full */
	TQ_ENOMEM = -7,    /* out of memory */
	TQ_EPERM = -8,     /* permission, ownership or mode refused */
	TQ_ENEWER = -9,    /* database schema newer than this binary */
	TQ_ESTALE = -10,   /* fenced: the lease or attempt moved on */
	TQ_ESTATE = -11,   /* the task is not in a state that allows this */
	TQ_EEXIST = -12,   /* already exists (e.g. a --unique key) */
	TQ_ENOTDB = -13,   /* the file is not a taskq/SQLite database */
	TQ_EREADONLY = -14,/* the database cannot be written */
	TQ_ECAP = -15,     /* a configured limit was reached (the output cap) */
	TQ_EOFFLINE = -16  /* the store's server cannot be reached, or the
			    * connection to it was lost: try again later (a
			    * database server's restart; never SQLite) */
};

struct tq_err {
	int code;
	char msg[TQ_ERR_MAX];
};

#define TQ_ERR_INIT { 0, { 0 } }

/* Set err (if not NULL) to code and a printf-style message; returns code. */
int tq_err_set(struct tq_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Like tq_err_set, for a failed system call: appends ": strerror(errno)" and
 * picks the code from errno (ENOSPC, EDQUOT -> TQ_ENOSPC; ENOMEM -> TQ_ENOMEM;
 * EACCES, EPERM -> TQ_EPERM; ENOENT -> TQ_ENOTFOUND; EROFS -> TQ_EREADONLY;
 * else TQ_EIO). errno is preserved. Returns the code.
 */
int tq_err_sys(struct tq_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Map an errno value to a TQ_E* code as tq_err_sys does. */
int tq_err_from_errno(int e);

/* A short stable name for a code ("not found", "busy", ...). */
const char *tq_err_name(int code);

/* Prefix err's message with "what: " (keeps the code); returns the code. */
int tq_err_prefix(struct tq_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

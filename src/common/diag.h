/*
 * diag.h - what the long-running processes (supervisor, workers) share:
 * timestamped diagnostic lines on stderr (their log), and their signals
 * routed to a signalfd.
 */
#ifndef TQ_DIAG_H
#define TQ_DIAG_H

#include <stdarg.h>
#include <stddef.h>

/* Print "YYYY-MM-DD HH:MM:SS WHO: MSG\n" to stderr. */
void tq_diag(const char *who, const char *fmt, va_list ap);

/*
 * Ignore SIGPIPE (a write to a closed pipe must be EPIPE, not our death),
 * block sigs[0..n) and return a signalfd (O_NONBLOCK | O_CLOEXEC) that
 * delivers them; -1 with errno set on failure. Call before starting any
 * child, so no signal is lost between steps.
 */
int tq_signalfd_open(const int *sigs, size_t n);

#endif
